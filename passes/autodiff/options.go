package autodiff

import (
	"fmt"
	"strconv"
	"strings"
)

// LossKind selects the scalar the training graph differentiates.
type LossKind uint8

const (
	// LossSum is the sum of every element of the output.
	LossSum LossKind = iota
	// LossMean is the mean of every element of the output.
	LossMean
	// LossMSE is mean((output - target)²) over every element; the target is
	// the graph input Loss.Input, added with the output's type when the graph
	// has no input of that name.
	LossMSE
	// LossSoftmaxXent is the softmax cross-entropy of logits [N, C, d…]
	// against integer class labels [N, d…] (the graph input Loss.Input,
	// added as int64 when absent), averaged over N·d…:
	// −mean(Σ_c onehot(label)_c · LogSoftmax(logits, axis 1)_c). In a
	// TensorFlow graph the classes are the last axis ([N, d…, C], as
	// TensorFlow lays logits out) and the labels int32.
	LossSoftmaxXent
)

var lossNames = [...]string{"sum", "mean", "mse", "softmax-xent"}

func (k LossKind) String() string {
	if int(k) < len(lossNames) {
		return lossNames[k]
	}
	return "loss(" + strconv.Itoa(int(k)) + ")"
}

// Loss says which scalar the training graph computes.
type Loss struct {
	Kind LossKind
	// Input names the target (mse) or label (softmax-xent) graph input.
	Input string
	// Output names the graph output the loss is computed from; "" means the
	// first graph output.
	Output string
}

func (l Loss) String() string {
	s := l.Kind.String()
	if l.Kind == LossMSE || l.Kind == LossSoftmaxXent {
		s += ":" + l.Input
	}
	if l.Output != "" {
		s += ":" + l.Output
	}
	return s
}

// OptimizerKind selects what the training graph returns besides the loss.
type OptimizerKind uint8

const (
	// NoOptimizer returns one gradient per trainable parameter, named
	// <param>_grad.
	NoOptimizer OptimizerKind = iota
	// SGD returns the updated parameters p − LR·∂loss/∂p instead, named
	// <param>_new.
	SGD
)

// Optimizer is the update rule applied to the gradients.
type Optimizer struct {
	Kind OptimizerKind
	LR   float64
}

// Options configure Build.
type Options struct {
	Loss Loss
	// Trainable names the values to differentiate with respect to:
	// parameters (initializers) or floating-point graph inputs. Empty means
	// every floating-point parameter through which the loss depends
	// differentiably ("all").
	Trainable []string
	Optimizer Optimizer
	// KeepDropoutMode leaves each Dropout in the mode the file gives it.
	// By default Build switches every Dropout to training mode (opset 12 and
	// up, where the mode is an input), since the training graph trains.
	KeepDropoutMode bool
	// File names the input in error positions.
	File string
}

// ParseLoss parses the -loss flag:
//
//	sum[:OUTPUT] | mean[:OUTPUT] | mse:TARGET_INPUT[:OUTPUT] | softmax-xent:LABEL_INPUT[:OUTPUT]
func ParseLoss(s string) (Loss, error) {
	parts := strings.Split(s, ":")
	var l Loss
	switch parts[0] {
	case "sum", "mean":
		l.Kind = LossSum
		if parts[0] == "mean" {
			l.Kind = LossMean
		}
		if len(parts) > 2 {
			return Loss{}, fmt.Errorf("loss %q: want %s[:OUTPUT]", s, parts[0])
		}
		if len(parts) == 2 {
			if parts[1] == "" {
				return Loss{}, fmt.Errorf("loss %q: empty output name", s)
			}
			l.Output = parts[1]
		}
	case "mse", "softmax-xent":
		l.Kind = LossMSE
		what := "TARGET_INPUT"
		if parts[0] == "softmax-xent" {
			l.Kind, what = LossSoftmaxXent, "LABEL_INPUT"
		}
		if len(parts) < 2 || len(parts) > 3 || parts[1] == "" || (len(parts) == 3 && parts[2] == "") {
			return Loss{}, fmt.Errorf("loss %q: want %s:%s[:OUTPUT]", s, parts[0], what)
		}
		l.Input = parts[1]
		if len(parts) == 3 {
			l.Output = parts[2]
		}
	default:
		return Loss{}, fmt.Errorf("unknown loss %q: want sum, mean, mse:TARGET_INPUT or softmax-xent:LABEL_INPUT, each optionally followed by :OUTPUT", s)
	}
	return l, nil
}

// ParseTrainable parses the -trainable flag: "all" (or "") is every
// floating-point parameter on a differentiable path, else a comma-separated
// list of names.
func ParseTrainable(s string) ([]string, error) {
	if s == "" || s == "all" {
		return nil, nil
	}
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("trainable %q: empty name", s)
		}
		if seen[n] {
			return nil, fmt.Errorf("trainable %q: %q listed twice", s, n)
		}
		seen[n] = true
		names = append(names, n)
	}
	return names, nil
}

// ParseOptimizer parses the -optimizer flag: "" or "none" (gradients), or
// "sgd:LR" with a positive learning rate.
func ParseOptimizer(s string) (Optimizer, error) {
	if s == "" || s == "none" {
		return Optimizer{}, nil
	}
	name, lr, ok := strings.Cut(s, ":")
	if name != "sgd" || !ok {
		return Optimizer{}, fmt.Errorf("unknown optimizer %q: want none or sgd:LR", s)
	}
	v, err := strconv.ParseFloat(lr, 64)
	if err != nil || !(v > 0) || v > 1e300 {
		return Optimizer{}, fmt.Errorf("optimizer %q: learning rate must be a positive number", s)
	}
	return Optimizer{Kind: SGD, LR: v}, nil
}
