// Package autodiff builds a training graph by reverse-mode automatic
// differentiation on the IR: from a graph, a loss and the trainable
// parameters it appends the loss and the backward pass to the same graph,
// every gradient expressed in standard ONNX operators (no com.microsoft
// gradient kernels), so that ONNX Runtime's default CPU build runs it. A
// TensorFlow graph (every node in ir.TFDomain) gets its training graph in
// TensorFlow ops that TensorFlow.js's graph executor runs, by the same
// driver with the builder in its TensorFlow form and the rules of
// rules_tf.go.
//
// # What Build does
//
//  1. Infers static shapes (passes/shapes); every value on a
//     differentiable path must have one.
//  2. Puts the forward pass in training semantics: BatchNormalization uses
//     batch statistics, written out in primitive ops
//     (lowerBatchNorm), as are InstanceNormalization,
//     LayerNormalization and LRN; Dropout runs in training mode and its mask output
//     is kept for the backward pass.
//  3. Appends the loss (Options.Loss), a scalar named "loss".
//  4. Finds the active values: floating-point values that depend on a
//     trainable value through differentiable inputs and on which the loss
//     depends. Everything else (shape arithmetic, integer tensors, indices,
//     comparison masks, piecewise-constant ops such as Floor) is pruned. An
//     op on an active path without a gradient rule is a *NoGradientError
//     naming the op and the node.
//  5. Sweeps the nodes in reverse order. The gradient of each active value
//     is the Sum of its contributions (one per reading slot); each node's
//     rule (rules.go) turns the gradients of its outputs into
//     contributions to its inputs. Broadcasting inputs get their
//     contribution summed back to their own shape (builder.unbroadcast).
//  6. Makes the graph's outputs "loss" and one gradient per trainable
//     value, named <name>_grad (or, with Optimizer SGD, the updated values
//     <name>_new = <name> − LR·<name>_grad), removes the nodes no output
//     needs, and checks the result with ir.Verify and shape inference.
//
// Operators are emitted in the form of the graph's standard-domain opset;
// the opset is never raised. A rule that needs a newer opset than the
// graph's says so in its error.
//
// Random nodes keep the op table's Random flag (Dropout), so the remat pass
// never recomputes them: the backward pass reads the one mask the forward
// pass drew.
package autodiff

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/shapes"
)

// minOpset is the oldest standard opset Build accepts: the gradients use
// Where, ConstantOfShape and Sign (opset 9) and Expand (opset 8).
const minOpset = 9

// LossName is the name of the training graph's loss output.
const LossName = "loss"

// NewPass returns the pass that turns a graph into its training graph.
func NewPass(opts Options) *passes.Pass {
	return &passes.Pass{
		Name: "autodiff",
		Doc:  "Build the training graph: the loss and its gradients with respect to the trainable parameters, in standard ONNX ops (TensorFlow ops for a TensorFlow graph).",
		Run: func(st *passes.State, g *ir.Graph) (bool, error) {
			if opts.File == "" {
				opts.File = st.File
			}
			return true, Build(g, opts)
		},
	}
}

// NoGradientError reports operators on a differentiable path that have no
// gradient rule.
type NoGradientError struct {
	Nodes []ir.Pos
}

func (e *NoGradientError) Error() string {
	var lines []string
	for i, p := range e.Nodes {
		if i == ir.MaxErrors {
			lines = append(lines, fmt.Sprintf("and %d more", len(e.Nodes)-i))
			break
		}
		lines = append(lines, fmt.Sprintf("%s: no gradient for %s on a differentiable path", p, p.Op))
	}
	return strings.Join(lines, "\n")
}

// Build rewrites g, a root graph, into its training graph (see the package
// documentation). On error g may be partly changed.
func Build(g *ir.Graph, opts Options) error {
	d, loss, err := begin(g, opts, "Build", true)
	if err != nil {
		return err
	}
	if err := d.run(loss); err != nil {
		return err
	}
	if err := g.Sort(); err != nil {
		return &passes.InternalError{Pass: "autodiff", Err: err}
	}
	if err := ir.Verify(g); err != nil {
		return &passes.InternalError{Pass: "autodiff", Err: err}
	}
	if err := shapes.Infer(g, shapes.Options{File: opts.File}); err != nil {
		return &passes.InternalError{Pass: "autodiff", Err: fmt.Errorf("the training graph fails shape inference: %w", err)}
	}
	return nil
}

// begin is what Build and Forward share: on a root graph (with the
// standard opset 21 when it imports none, and, when checkOpset, at least
// minOpset), infer shapes, put the forward pass in training semantics and
// append the loss.
func begin(g *ir.Graph, opts Options, what string, checkOpset bool) (*differ, *ir.Value, error) {
	if g == nil || g.Parent != nil {
		return nil, nil, fmt.Errorf("autodiff: %s needs a root graph", what)
	}
	tf := isTF(g)
	opset := g.Opset("")
	if opset == 0 && !tf {
		opset = 21
		g.Opsets = append(g.Opsets, ir.Opset{Domain: "", Version: opset})
	}
	if checkOpset && !tf && opset < minOpset {
		return nil, nil, ir.ErrorList{ir.Errorf(ir.Pos{File: opts.File}, "autodiff needs the standard opset %d or later (Where, Expand, ConstantOfShape); the graph imports opset %d", minOpset, opset)}.Err()
	}
	if err := shapes.Infer(g, shapes.Options{File: opts.File}); err != nil {
		return nil, nil, err
	}
	d := &differ{g: g, b: newBuilder(g, opset), opts: opts, file: opts.File}
	d.b.tf = tf
	d.own = ownParams(g)
	if err := d.prepare(); err != nil {
		return nil, nil, err
	}
	if err := g.Sort(); err != nil {
		return nil, nil, err
	}
	loss, err := d.addLoss()
	if err != nil {
		return nil, nil, err
	}
	return d, loss, nil
}

// Forward rewrites g into the graph of the loss alone: the same forward
// pass in training semantics and the same loss as Build, with "loss" the
// only output. Gradient checks compare Build's gradients with finite
// differences of this graph.
func Forward(g *ir.Graph, opts Options) error {
	_, loss, err := begin(g, opts, "Forward", false)
	if err != nil {
		return err
	}
	g.Outputs = []*ir.Value{loss}
	removeDead(g)
	if err := g.Sort(); err != nil {
		return err
	}
	return ir.Verify(g)
}

type differ struct {
	g    *ir.Graph
	b    *builder
	opts Options
	file string
	errs ir.ErrorList
	// own holds the parameters the model came with, taken before prepare
	// adds constants of its own (the normalizations' epsilons, shapes):
	// "all" trainable means the model's parameters, never those.
	own map[*ir.Value]bool
}

// ownParams returns the graph's parameters as they are now.
func ownParams(g *ir.Graph) map[*ir.Value]bool {
	own := make(map[*ir.Value]bool, len(g.Params))
	for _, v := range g.Params {
		own[v] = true
	}
	return own
}

func (d *differ) errorf(n *ir.Node, format string, args ...any) *ir.Error {
	return ir.Errorf(ir.NodePos(d.file, n), format, args...)
}

// prepare puts the forward pass into training semantics (package doc, step
// 2).
func (d *differ) prepare() error {
	var errs ir.ErrorList
	for _, n := range slices.Clone(d.g.Nodes) {
		var err error
		if n.Domain == ir.TFDomain {
			switch n.Op {
			case "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3":
				err = d.lowerFusedBatchNormTF(n)
			case "Conv2D", "_FusedConv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative", "_FusedDepthwiseConv2dNative":
				err = d.lowerStridedDilatedTF(n)
			}
		} else if n.Domain == "" || n.Domain == "ai.onnx" {
			switch n.Op {
			case "BatchNormalization":
				err = d.lowerBatchNorm(n)
			case "InstanceNormalization":
				err = d.lowerInstanceNorm(n)
			case "LayerNormalization":
				err = d.lowerLayerNorm(n)
			case "LRN":
				err = d.lowerLRN(n)
			case "Dropout":
				err = d.prepareDropout(n)
			}
		}
		if err != nil {
			var e *ir.Error
			if errors.As(err, &e) {
				errs = append(errs, e)
			} else {
				return err
			}
		}
	}
	return errs.Err()
}

// addLoss appends the loss nodes (Options.Loss) and returns the loss.
func (d *differ) addLoss() (*ir.Value, error) {
	g, b, l := d.g, d.b, d.opts.Loss
	pos := ir.Pos{File: d.file}
	if len(g.Outputs) == 0 {
		return nil, ir.ErrorList{ir.Errorf(pos, "the graph has no outputs to compute a loss from")}.Err()
	}
	out := g.Outputs[0]
	if l.Output != "" {
		out = nil
		for _, o := range g.Outputs {
			if o.Name == l.Output {
				out = o
			}
		}
		if out == nil {
			return nil, ir.ErrorList{ir.Errorf(pos, "loss %s: the graph has no output %q", l, l.Output)}.Err()
		}
	}
	if !out.Type.DType.IsFloat() || !out.Type.Static() {
		return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: d.file, Value: out.Name}, "loss %s: output %q must be a floating-point tensor of static shape, not %v", l, out.Name, out.Type)}.Err()
	}
	if b.names[LossName] {
		return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: d.file, Value: LossName}, "the graph already has a value named %q, the name of the training graph's loss output", LossName)}.Err()
	}
	dt := out.Type.DType
	dims := dimsOf(out)
	var loss *ir.Value
	switch l.Kind {
	case LossSum:
		loss = b.reduceAll("ReduceSum", out)
	case LossMean:
		loss = b.reduceAll("ReduceMean", out)
	case LossMSE:
		target, err := d.lossInput(l, out.Type)
		if err != nil {
			return nil, err
		}
		diff := b.sub(out, target)
		loss = b.reduceAll("ReduceMean", b.mul(diff, diff))
	case LossSoftmaxXent:
		if b.tf {
			var err error
			if loss, err = d.softmaxXentTF(l, out); err != nil {
				return nil, err
			}
			break
		}
		if len(dims) < 2 {
			return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: d.file, Value: out.Name}, "loss %s: logits %q must have rank 2 or more ([N, C, …]), not %v", l, out.Name, out.Type)}.Err()
		}
		labelDims := append([]int64{dims[0]}, dims[2:]...)
		label, err := d.lossInput(l, tensorType(ir.Int64, labelDims))
		if err != nil {
			return nil, err
		}
		logp := d.logSoftmaxAxis1(out)
		// onehot[n, c, …] = (label[n, …] == c)
		classes := make([]int64, dims[1])
		for i := range classes {
			classes[i] = int64(i)
		}
		cshape := make([]int64, len(dims))
		for i := range cshape {
			cshape[i] = 1
		}
		cshape[1] = dims[1]
		cls := b.constant(ir.Int64Tensor(cshape, classes...))
		lab := b.reshape(b.cast(label, ir.Int64), append([]int64{dims[0], 1}, dims[2:]...))
		onehot := b.cast(b.compare("Equal", lab, cls), dt)
		total := b.reduceAll("ReduceSum", b.mul(onehot, logp))
		loss = b.scale(total, -1/float64(prod(labelDims)))
	default:
		return nil, fmt.Errorf("autodiff: unknown loss kind %v", l.Kind)
	}
	if loss == out || loss.Def == nil || loss.Graph != g || slices.Contains(g.Inputs, loss) {
		loss = b.identity(loss, LossName)
	} else {
		b.rename(loss, LossName)
	}
	return loss, nil
}

// logSoftmaxAxis1 is LogSoftmax over axis 1 of x, in the opset's form.
// Before opset 13 LogSoftmax normalises over all axes from axis on, so for
// rank > 2 the class axis is moved last and back.
func (d *differ) logSoftmaxAxis1(x *ir.Value) *ir.Value {
	b := d.b
	r := len(dimsOf(x))
	if r == 2 || b.opset >= 13 {
		return b.unary("LogSoftmax", x, ir.IntAttr("axis", 1))
	}
	perm := []int64{0}
	for i := 2; i < r; i++ {
		perm = append(perm, int64(i))
	}
	perm = append(perm, 1)
	inv := make([]int64, r)
	for i, p := range perm {
		inv[p] = int64(i)
	}
	t := b.transpose(x, perm)
	return b.transpose(b.unary("LogSoftmax", t, ir.IntAttr("axis", int64(r-1))), inv)
}

// lossInput returns the graph input named l.Input, adding it with type t
// when the graph has none.
func (d *differ) lossInput(l Loss, t ir.TensorType) (*ir.Value, error) {
	for _, in := range d.g.Inputs {
		if in.Name != l.Input {
			continue
		}
		ok := in.Type.Static() && slices.Equal(dimsOf(in), dimsOf(&ir.Value{Type: t}))
		if t.DType.IsFloat() {
			ok = ok && in.Type.DType == t.DType
		} else {
			ok = ok && in.Type.DType.IsInt()
		}
		if !ok {
			return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: d.file, Value: in.Name}, "loss %s: input %q has type %v, want %v", l, in.Name, in.Type, t)}.Err()
		}
		return in, nil
	}
	if d.b.names[l.Input] {
		return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: d.file, Value: l.Input}, "loss %s: %q names a value that is not a graph input", l, l.Input)}.Err()
	}
	d.b.names[l.Input] = true
	return d.g.AddInput(l.Input, t.Clone()), nil
}

// run builds the backward pass from loss and sets the graph outputs.
func (d *differ) run(loss *ir.Value) error {
	g, b := d.g, d.b
	nv := g.NumValues()
	fwd := slices.Clone(g.Nodes)

	// Trainable values.
	var trainable []*ir.Value
	isTrainable := make([]bool, nv)
	if len(d.opts.Trainable) > 0 {
		byName := map[string]*ir.Value{}
		for _, v := range g.Params {
			byName[v.Name] = v
		}
		for _, v := range g.Inputs {
			byName[v.Name] = v
		}
		var errs ir.ErrorList
		for _, name := range d.opts.Trainable {
			v, ok := byName[name]
			switch {
			case !ok:
				errs.Add(ir.Pos{File: d.file, Value: name}, "trainable %q is not a parameter or graph input", name)
			case !v.Type.DType.IsFloat():
				errs.Add(ir.Pos{File: d.file, Value: name}, "trainable %q has type %v; only floating-point values have gradients", name, v.Type)
			default:
				trainable = append(trainable, v)
				isTrainable[v.ID] = true
			}
		}
		if err := errs.Err(); err != nil {
			return err
		}
	} else {
		for _, v := range g.Params {
			if v.Type.DType.IsFloat() && v.Type.Kind == ir.KindTensor && d.own[v] {
				trainable = append(trainable, v)
				isTrainable[v.ID] = true
			}
		}
	}

	// Varied: depends on a trainable value through differentiable slots.
	varied := make([]bool, nv)
	copy(varied, isTrainable)
	for _, n := range fwd {
		r := ruleFor(n)
		if cutsGradient(n) {
			continue
		}
		any := false
		for i, v := range n.Inputs {
			if v != nil && varied[v.ID] && (r == nil || r.flows(i)) {
				any = true
			}
		}
		for _, v := range n.Implicit {
			if varied[v.ID] {
				any = true
			}
		}
		if !any {
			continue
		}
		for _, o := range n.Outputs {
			if o != nil && o.Type.DType.IsFloat() && o.Type.Kind == ir.KindTensor {
				varied[o.ID] = true
			}
		}
	}
	// Useful: the loss depends on it through differentiable slots.
	useful := make([]bool, nv)
	useful[loss.ID] = true
	for i := len(fwd) - 1; i >= 0; i-- {
		n := fwd[i]
		if cutsGradient(n) {
			continue
		}
		any := false
		for _, o := range n.Outputs {
			if o != nil && useful[o.ID] && varied[o.ID] {
				any = true
			}
		}
		if !any {
			continue
		}
		r := ruleFor(n)
		for j, v := range n.Inputs {
			if v != nil && (r == nil || r.flows(j)) {
				useful[v.ID] = true
			}
		}
		for _, v := range n.Implicit {
			useful[v.ID] = true
		}
	}
	active := func(v *ir.Value) bool { return v != nil && varied[v.ID] && useful[v.ID] }

	if len(d.opts.Trainable) == 0 {
		trainable = slices.DeleteFunc(trainable, func(v *ir.Value) bool { return !active(v) })
		if len(trainable) == 0 {
			return ir.ErrorList{ir.Errorf(ir.Pos{File: d.file}, "no floating-point parameter reaches the loss through differentiable ops; name the trainable values")}.Err()
		}
	} else {
		var errs ir.ErrorList
		for _, v := range trainable {
			if !active(v) {
				errs.Add(ir.Pos{File: d.file, Value: v.Name}, "trainable %q does not reach the loss through differentiable ops", v.Name)
			}
		}
		if err := errs.Err(); err != nil {
			return err
		}
	}
	outName := func(v *ir.Value) string {
		if d.opts.Optimizer.Kind == SGD {
			return v.Name + "_new"
		}
		return v.Name + "_grad"
	}
	{
		var errs ir.ErrorList
		for _, v := range trainable {
			if b.names[outName(v)] {
				errs.Add(ir.Pos{File: d.file, Value: outName(v)}, "the graph already has a value named %q, the name of an output of the training graph", outName(v))
			}
		}
		if err := errs.Err(); err != nil {
			return err
		}
		for _, v := range trainable {
			b.names[outName(v)] = true // reserved
		}
	}

	// Nodes on the active path need a rule.
	var missing []ir.Pos
	for _, n := range fwd {
		needs := false
		for _, o := range n.Outputs {
			if active(o) {
				needs = true
			}
		}
		if !needs {
			continue
		}
		r := ruleFor(n)
		if r == nil {
			missing = append(missing, ir.NodePos(d.file, n))
			continue
		}
		for _, v := range n.Implicit {
			if active(v) {
				missing = append(missing, ir.NodePos(d.file, n))
				break
			}
		}
	}
	if len(missing) > 0 {
		return &NoGradientError{Nodes: missing}
	}

	// The reverse sweep.
	contrib := make([][]*ir.Value, nv)
	grad := func(v *ir.Value) *ir.Value {
		cs := contrib[v.ID]
		if len(cs) == 0 {
			return nil
		}
		s := b.sum(cs)
		if len(cs) > 1 {
			b.rename(s, v.Name+"_grad")
		}
		contrib[v.ID] = []*ir.Value{s}
		return s
	}
	contrib[loss.ID] = []*ir.Value{b.scalar(loss.Type.DType, 1)}
	var errs ir.ErrorList
	for i := len(fwd) - 1; i >= 0; i-- {
		n := fwd[i]
		c := &gctx{d: d, b: b, n: n, dy: make([]*ir.Value, len(n.Outputs)), need: make([]bool, len(n.Inputs)), dx: make([]*ir.Value, len(n.Inputs))}
		anyOut := false
		for j, o := range n.Outputs {
			if active(o) {
				c.dy[j] = grad(o)
				anyOut = anyOut || c.dy[j] != nil
			}
		}
		if !anyOut {
			continue
		}
		r := ruleFor(n)
		anyIn := false
		for j, v := range n.Inputs {
			c.need[j] = active(v) && r.flows(j)
			anyIn = anyIn || c.need[j]
		}
		if !anyIn {
			continue
		}
		if err := r.grad(c); err != nil {
			var e *ir.Error
			if errors.As(err, &e) {
				errs = append(errs, e)
				continue
			}
			return err
		}
		for j, v := range n.Inputs {
			if !c.need[j] || c.dx[j] == nil {
				continue
			}
			dx := c.dx[j]
			if dx.Type.DType != v.Type.DType || !slices.Equal(dimsOf(dx), dimsOf(v)) {
				return &passes.InternalError{Pass: "autodiff", Err: fmt.Errorf("gradient rule of %s gives input %d (%s, %v) a gradient of type %v", n.OpName(), j, v, v.Type, dx.Type)}
			}
			contrib[v.ID] = append(contrib[v.ID], dx)
		}
	}
	if err := errs.Err(); err != nil {
		return err
	}

	// Outputs. A gradient made by the backward pass takes the output's
	// name; a forward value or a constant keeps its own and is copied.
	isFwd := make([]bool, g.NumNodes())
	for _, n := range fwd {
		isFwd[n.ID] = true
	}
	outs := []*ir.Value{loss}
	for _, v := range trainable {
		gv := grad(v)
		if gv == nil {
			return &passes.InternalError{Pass: "autodiff", Err: fmt.Errorf("trainable %s is active but got no gradient", v)}
		}
		if d.opts.Optimizer.Kind == SGD {
			upd := b.sub(v, b.scale(gv, d.opts.Optimizer.LR))
			delete(b.names, outName(v))
			b.rename(upd, outName(v))
			outs = append(outs, upd)
			continue
		}
		delete(b.names, outName(v))
		if gv.Def != nil && (int(gv.Def.ID) >= len(isFwd) || !isFwd[gv.Def.ID]) && !slices.Contains(outs, gv) {
			b.rename(gv, outName(v))
		} else {
			gv = b.identity(gv, outName(v))
		}
		outs = append(outs, gv)
	}
	g.Outputs = outs
	removeDead(g)
	return nil
}

// removeDead deletes the nodes whose outputs nothing reads and that are not
// graph outputs, and parameters (not inputs) that nothing reads.
func removeDead(g *ir.Graph) {
	live := make([]bool, g.NumValues())
	for _, o := range g.Outputs {
		live[o.ID] = true
	}
	keep := make([]bool, len(g.Nodes))
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		for _, o := range n.Outputs {
			if o != nil && live[o.ID] {
				keep[i] = true
			}
		}
		if !keep[i] {
			continue
		}
		for _, v := range n.AllInputs() {
			if v != nil {
				live[v.ID] = true
			}
		}
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if keep[i] {
			continue
		}
		// Optional outputs that nobody reads are dropped with the node.
		for _, o := range n.Outputs {
			if o != nil && len(o.Uses) > 0 {
				panic(fmt.Sprintf("autodiff: dead node %s has a live output %s", n, o))
			}
		}
		g.RemoveNode(n)
	}
	g.Params = slices.DeleteFunc(g.Params, func(v *ir.Value) bool {
		return len(v.Uses) == 0 && !slices.Contains(g.Inputs, v) && !slices.Contains(g.Outputs, v)
	})
}
