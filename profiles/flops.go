package profiles

import (
	"math"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// FLOP conventions. A multiply-add is two operations; +, −, ×, ÷, √,
// comparisons, selections and bit operations are one, whatever the element
// type.
const (
	// TranscendentalFLOPs is what one exp, log, tanh, erf, sin, pow… costs:
	// a vectorised polynomial approximation takes 10 to 20 instructions on
	// a CPU, while a GPU's special function units run about a quarter of
	// the FMA rate; 8 sits between the two.
	TranscendentalFLOPs = 8
	// sigmoidFLOPs is 1 / (1 + exp(−x)).
	sigmoidFLOPs = TranscendentalFLOPs + 2
	// NormFLOPs is per element of a normalization that computes its own
	// statistics (LayerNormalization, InstanceNormalization,
	// GroupNormalization, MeanVarianceNormalization, BatchNormalization in
	// training mode): mean 1, centre 1, square and sum 2, normalise 2,
	// scale and shift 2.
	NormFLOPs = 8
	// SoftmaxFLOPs is per element of Softmax and LogSoftmax: max,
	// subtract, exp, sum, divide.
	SoftmaxFLOPs = TranscendentalFLOPs + 4
	// requantFLOPs is per output element of the QLinear ops: scale, round,
	// add the zero point.
	requantFLOPs = 3
)

// opClass says how an op is costed.
type opClass uint8

const (
	classVector  opClass = iota // FLOPs at the vector rate
	classMatrix                 // FLOPs at the matrix-unit rate
	classMove                   // no FLOPs: bytes only
	classFree                   // no FLOPs, no bytes: the fixed overhead only
	classUnknown                // an op this package does not know: bytes only, datasheet
)

// work is what a node does: its FLOPs and memory traffic.
type work struct {
	flops         float64
	read, written int64
	class         opClass
	note          string
}

// sizes holds the static shapes and byte sizes of a node's values; nil
// shapes and -1 bytes mark absent optional inputs and outputs.
type sizes struct {
	n                 *ir.Node
	in, out           [][]int64
	inBytes, outBytes []int64
}

// nodeSizes reads the shapes of n's inputs and outputs, which must all be
// static tensors.
func nodeSizes(n *ir.Node) (*sizes, error) {
	s := &sizes{n: n, in: make([][]int64, len(n.Inputs)), out: make([][]int64, len(n.Outputs)),
		inBytes: make([]int64, len(n.Inputs)), outBytes: make([]int64, len(n.Outputs))}
	read := func(kind string, vs []*ir.Value, dims [][]int64, bytes []int64) error {
		for i, v := range vs {
			bytes[i] = -1
			if v == nil {
				continue
			}
			d, ok := v.Type.Dims()
			if !ok {
				return nodeErr(n, "%s %d %q has no static size (%s): infer shapes first, or bind its dimensions", kind, i, v.Name, v.Type)
			}
			b, ok := v.Type.Bytes()
			if !ok {
				return nodeErr(n, "%s %d %q: the size of %s is not known", kind, i, v.Name, v.Type)
			}
			if d == nil {
				d = []int64{}
			}
			dims[i], bytes[i] = d, b
		}
		return nil
	}
	if err := read("input", n.Inputs, s.in, s.inBytes); err != nil {
		return nil, err
	}
	if err := read("output", n.Outputs, s.out, s.outBytes); err != nil {
		return nil, err
	}
	return s, nil
}

func numel(dims []int64) float64 {
	if dims == nil {
		return 0
	}
	x := 1.0
	for _, d := range dims {
		x *= float64(d)
	}
	return x
}

func (s *sizes) has(i int) bool     { return i < len(s.in) && s.in[i] != nil }
func (s *sizes) inN(i int) float64  { return numel(s.inDims(i)) }
func (s *sizes) outN(i int) float64 { return numel(s.outDims(i)) }
func (s *sizes) numInputs() (k int) {
	for i := range s.in {
		if s.has(i) {
			k++
		}
	}
	return k
}

func (s *sizes) inDims(i int) []int64 {
	if i < len(s.in) {
		return s.in[i]
	}
	return nil
}

func (s *sizes) outDims(i int) []int64 {
	if i < len(s.out) {
		return s.out[i]
	}
	return nil
}

// need returns input i's shape, which must be present with at least
// minRank dimensions.
func (s *sizes) need(i, minRank int, what string) ([]int64, error) {
	d := s.inDims(i)
	if d == nil {
		return nil, nodeErr(s.n, "%s (input %d) is missing", what, i)
	}
	if len(d) < minRank {
		return nil, nodeErr(s.n, "%s (input %d) has rank %d, want at least %d", what, i, len(d), minRank)
	}
	return d, nil
}

// nodeWork computes the FLOPs and bytes of a node that is not control flow.
func nodeWork(n *ir.Node) (work, error) {
	s, err := nodeSizes(n)
	if err != nil {
		return work{}, err
	}
	w := work{class: classVector}
	if normDomain(n.Domain) != "" || ir.LookupOp(n.Domain, n.Op) == nil {
		w.class, w.note = classUnknown, "unknown op "+n.OpName()+": costed by its bytes alone"
	} else {
		w.flops, w.class, w.note, err = opFLOPs(s)
		if err != nil {
			return work{}, err
		}
	}
	if w.class == classFree {
		return w, nil
	}
	// Bytes: every distinct input read once, every output written once.
	// Gather and Slice read only the part of their data they return.
	seen := make(map[*ir.Value]bool, len(n.Inputs))
	for i, v := range n.Inputs {
		if v == nil || seen[v] {
			continue
		}
		seen[v] = true
		b := s.inBytes[i]
		if i == 0 && partialRead(n.Op) && w.class != classUnknown {
			b = min(b, s.outBytes[0])
		}
		w.read += b
	}
	for _, b := range s.outBytes {
		if b > 0 {
			w.written += b
		}
	}
	return w, nil
}

func partialRead(op string) bool {
	switch op {
	case "Gather", "GatherElements", "GatherND", "Slice":
		return true
	}
	return false
}

// opFLOPs is the FLOP count of a standard-domain op from its shapes.
func opFLOPs(s *sizes) (float64, opClass, string, error) {
	n := s.n
	info := n.Info()
	if info.Flags&(ir.Alias|ir.ShapeOnly) != 0 {
		// Views (Reshape, Squeeze, Flatten, Identity, …) hand out their
		// input's buffer; Shape and Size read no data.
		return 0, classFree, "", nil
	}
	y := s.outN(0)
	if f, ok := elementwiseFLOPs(n.Op, s.numInputs()); ok {
		return f * y, classVector, "", nil
	}
	switch n.Op {
	case "Constant", "SequenceEmpty", "SequenceLength", "Optional", "OptionalHasElement", "OptionalGetElement":
		return 0, classFree, "", nil

	// Matrix work.
	case "Conv", "ConvInteger", "QLinearConv":
		wi := 1
		if n.Op == "QLinearConv" {
			wi = 3
		}
		w, err := s.need(wi, 3, "weight")
		if err != nil {
			return 0, 0, "", err
		}
		// 2 · N·Cout·∏out_spatial · (Cin/group)·∏kernel
		f := 2 * y * numel(w[1:])
		switch {
		case n.Op == "Conv" && s.has(2), n.Op == "QLinearConv" && s.has(8):
			f += y // bias
		}
		if n.Op == "QLinearConv" {
			f += requantFLOPs * y
		}
		return f, classMatrix, "", nil
	case "ConvTranspose":
		w, err := s.need(1, 3, "weight")
		if err != nil {
			return 0, 0, "", err
		}
		// Each input element scatters into Cout/group · ∏kernel outputs.
		f := 2 * s.inN(0) * numel(w[1:])
		if s.has(2) {
			f += y
		}
		return f, classMatrix, "", nil
	case "Gemm":
		a, err := s.need(0, 2, "A")
		if err != nil {
			return 0, 0, "", err
		}
		k := a[1]
		if n.AttrInt("transA", 0) != 0 {
			k = a[0]
		}
		f := 2 * y * float64(k)
		if s.has(2) {
			f += y
		}
		return f, classMatrix, "", nil
	case "MatMul", "MatMulInteger", "QLinearMatMul":
		a, err := s.need(0, 1, "A")
		if err != nil {
			return 0, 0, "", err
		}
		// 2 · (broadcast batch · M · N) · K
		f := 2 * y * float64(a[len(a)-1])
		if n.Op == "QLinearMatMul" {
			f += requantFLOPs * y
		}
		return f, classMatrix, "", nil
	case "Einsum":
		f, note := einsumFLOPs(n.AttrString("equation", ""), s)
		return f, classMatrix, note, nil
	case "LSTM", "GRU", "RNN":
		f, err := rnnFLOPs(s)
		return f, classMatrix, "", err

	// Normalization and softmax.
	case "BatchNormalization":
		if n.AttrInt("training_mode", 0) != 0 || n.NumOutputs() > 1 {
			return NormFLOPs * y, classVector, "", nil
		}
		return 2 * y, classVector, "", nil // folded scale and shift
	case "LayerNormalization", "InstanceNormalization", "GroupNormalization", "MeanVarianceNormalization":
		return NormFLOPs * y, classVector, "", nil
	case "LpNormalization":
		return 3 * y, classVector, "", nil
	case "LRN":
		size := float64(n.AttrInt("size", 1))
		return (2*size + TranscendentalFLOPs + 3) * y, classVector, "", nil
	case "Softmax", "LogSoftmax":
		return SoftmaxFLOPs * y, classVector, "", nil
	case "Hardmax":
		return 2 * s.inN(0), classVector, "", nil

	// Reductions: per input element, plus a finishing step per output.
	case "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin", "CumSum":
		return s.inN(0), classVector, "", nil
	case "ReduceMean":
		return s.inN(0) + y, classVector, "", nil
	case "ReduceL1", "ReduceSumSquare":
		return 2 * s.inN(0), classVector, "", nil
	case "ReduceL2":
		return 2*s.inN(0) + y, classVector, "", nil
	case "ReduceLogSum":
		return s.inN(0) + TranscendentalFLOPs*y, classVector, "", nil
	case "ReduceLogSumExp":
		return (TranscendentalFLOPs+2)*s.inN(0) + TranscendentalFLOPs*y, classVector, "", nil
	case "TopK":
		k := 1.0
		if d := s.outDims(0); d != nil {
			axis := n.AttrInt("axis", -1)
			if axis < 0 {
				axis += int64(len(d))
			}
			if axis >= 0 && axis < int64(len(d)) {
				k = float64(d[axis])
			}
		}
		return s.inN(0) * math.Max(1, math.Log2(k+1)), classVector, "", nil
	case "Det":
		d, err := s.need(0, 2, "X")
		if err != nil {
			return 0, 0, "", err
		}
		m := float64(d[len(d)-1])
		return numel(d[:len(d)-2]) * 2 * m * m * m / 3, classVector, "", nil

	// Pooling: the kernel's elements per output element.
	case "MaxPool", "AveragePool":
		return y * kernelSize(n), classVector, "", nil
	case "LpPool":
		return 2 * y * kernelSize(n), classVector, "", nil
	case "GlobalAveragePool", "GlobalMaxPool":
		return s.inN(0), classVector, "", nil
	case "GlobalLpPool":
		return 2 * s.inN(0), classVector, "", nil
	case "MaxRoiPool":
		// Every pooled bin of every region takes the max over its share of
		// the feature map: about one region's worth of input per region.
		x := s.inDims(0)
		regions := 1.0
		if r := s.inDims(1); len(r) > 0 {
			regions = float64(r[0])
		}
		if len(x) > 0 && x[0] > 0 {
			return regions * s.inN(0) / float64(x[0]), classVector, "", nil
		}
		return y, classVector, "", nil
	case "RoiAlign":
		sr := float64(n.AttrInt("sampling_ratio", 0))
		if sr <= 0 {
			sr = 2 // adaptive: assume two samples a side
		}
		return y * sr * sr * 4, classVector, "", nil
	case "Resize", "Upsample":
		return y * interpolationFLOPs(n.AttrString("mode", "nearest"), resizedAxes(s)), classVector, "", nil
	case "GridSample":
		mode := n.AttrString("mode", "linear")
		if mode == "bilinear" {
			mode = "linear"
		} else if mode == "bicubic" {
			mode = "cubic"
		}
		return y * interpolationFLOPs(mode, max(len(s.outDims(0))-2, 1)), classVector, "", nil
	case "Col2Im":
		return s.inN(0), classVector, "", nil

	// Quantization.
	case "QuantizeLinear":
		return 3 * y, classVector, "", nil
	case "DequantizeLinear":
		return 2 * y, classVector, "", nil
	case "DynamicQuantizeLinear":
		return 2*s.inN(0) + 3*y, classVector, "", nil

	// Random numbers.
	case "Dropout":
		return 2 * y, classVector, "", nil
	case "RandomNormal", "RandomNormalLike":
		return (TranscendentalFLOPs + 2) * y, classVector, "", nil
	case "RandomUniform", "RandomUniformLike":
		return 2 * y, classVector, "", nil
	case "Bernoulli":
		return 3 * y, classVector, "", nil
	case "Multinomial":
		return s.inN(0) * float64(n.AttrInt("sample_size", 1)), classVector, "", nil

	// Data-dependent selection.
	case "NonZero", "Compress":
		return s.inN(0), classVector, "", nil
	case "Unique":
		x := s.inN(0)
		return x * math.Max(1, math.Log2(x)), classVector, "", nil
	case "NonMaxSuppression":
		boxes := 1.0
		if d := s.inDims(0); len(d) >= 2 {
			boxes = float64(d[1])
		}
		return s.inN(1) * boxes, classVector, "", nil // each score against each box, roughly

	case "ScatterElements", "ScatterND":
		if r := n.AttrString("reduction", "none"); r != "none" {
			return s.inN(2), classVector, "", nil
		}
		return 0, classMove, "", nil

	// Data movement: bytes only.
	case "Concat", "Split", "Slice", "Transpose", "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth",
		"Gather", "GatherElements", "GatherND", "Scatter", "OneHot", "Trilu", "ReverseSequence", "EyeLike",
		"ConstantOfShape", "Range", "CenterCropPad", "MaxUnpool",
		"SequenceConstruct", "SequenceAt", "SequenceInsert", "SequenceErase", "SplitToSequence", "ConcatFromSequence":
		return 0, classMove, "", nil
	}
	return 0, classUnknown, "op " + n.OpName() + " has no FLOP formula: costed by its bytes alone", nil
}

// elementwiseFLOPs is the FLOP count per output element of an elementwise
// op with k inputs.
func elementwiseFLOPs(op string, k int) (float64, bool) {
	const t = TranscendentalFLOPs
	switch op {
	case "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sqrt",
		"Relu", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "Not",
		"BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "IsNaN", "IsInf",
		"Cast", "CastLike", "Where":
		return 1, true
	case "Mod", "PRelu", "LeakyRelu", "ThresholdedRelu", "Clip":
		return 2, true
	case "Shrink", "Softsign":
		return 3, true
	case "HardSigmoid", "HardSwish":
		return 4, true
	case "Max", "Min", "Sum":
		return float64(max(k-1, 0)), true
	case "Mean":
		return float64(k), true
	case "Exp", "Log", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
		"Erf", "Tanh", "Pow":
		return t, true
	case "Sigmoid":
		return sigmoidFLOPs, true
	case "Elu":
		return t + 2, true
	case "Selu", "Celu":
		return t + 3, true
	case "Gelu":
		return t + 4, true // 0.5·x·(1 + erf(x/√2)), or the tanh form
	case "Softplus":
		return 2*t + 1, true // log(1 + exp(x))
	case "Mish":
		return 3*t + 2, true // x·tanh(softplus(x))
	}
	return 0, false
}

// kernelSize is the number of elements of a pooling window.
func kernelSize(n *ir.Node) float64 {
	k, ok := n.AttrInts("kernel_shape")
	if !ok {
		return 1
	}
	x := 1.0
	for _, d := range k {
		x *= float64(max(d, 1))
	}
	return x
}

// resizedAxes counts the axes whose size Resize changes.
func resizedAxes(s *sizes) int {
	x, y := s.inDims(0), s.outDims(0)
	if len(x) != len(y) {
		return max(len(y)-2, 1)
	}
	k := 0
	for i := range x {
		if x[i] != y[i] {
			k++
		}
	}
	return k
}

// interpolationFLOPs is the work per output element of an interpolation
// over d axes: a weighted sum of 2^d (linear) or 4^d (cubic) neighbours;
// nearest only computes an index.
func interpolationFLOPs(mode string, d int) float64 {
	switch strings.ToLower(mode) {
	case "linear", "bilinear", "trilinear":
		return 2 * math.Pow(2, float64(d))
	case "cubic", "bicubic":
		return 2 * math.Pow(4, float64(d))
	}
	return 1
}

// rnnFLOPs counts LSTM, GRU and RNN with their default activations: per
// time step and direction, the input and recurrent matrix products of
// every gate, the biases, and the gates' pointwise work.
func rnnFLOPs(s *sizes) (float64, error) {
	n := s.n
	x, err := s.need(0, 3, "X")
	if err != nil {
		return 0, err
	}
	w, err := s.need(1, 3, "W")
	if err != nil {
		return 0, err
	}
	r, err := s.need(2, 3, "R")
	if err != nil {
		return 0, err
	}
	seq, batch := float64(x[0]), float64(x[1])
	if n.AttrInt("layout", 0) != 0 {
		seq, batch = batch, seq
	}
	input, dirs := float64(w[2]), float64(w[0])
	hidden := float64(n.AttrInt("hidden_size", r[2]))
	var gates, pointwise float64
	const t = TranscendentalFLOPs
	switch n.Op {
	case "LSTM":
		// i, f, o sigmoids; g tanh; c = f·c + i·g; h = o·tanh(c)
		gates, pointwise = 4, 3*sigmoidFLOPs+t+3+t+1
		if s.has(7) {
			pointwise += 6 // peepholes on i, f, o
		}
	case "GRU":
		// z, r sigmoids; h̃ = tanh(… + r·(…)); h = (1 − z)·h̃ + z·h
		gates, pointwise = 3, 2*sigmoidFLOPs+t+2+4
	default: // RNN: h = tanh(x·W + h·R + b)
		gates, pointwise = 1, t+1
	}
	step := 2 * batch * gates * hidden * (input + hidden)
	if s.has(3) {
		step += 2 * batch * gates * hidden
	}
	step += batch * hidden * pointwise
	return seq * dirs * step, nil
}

// einsumFLOPs counts an Einsum as its naive loop nest: every point of the
// joint index space (every distinct subscript, and the broadcast ellipsis
// dimensions) costs one operation per operand (k − 1 multiplications and
// one addition). An equation it cannot read is counted as one FLOP per
// element read and written, with a note.
func einsumFLOPs(eq string, s *sizes) (float64, string) {
	fallback := func() (float64, string) {
		f := s.outN(0)
		for i := range s.in {
			f += s.inN(i)
		}
		return f, "Einsum equation " + `"` + eq + `"` + " not understood: one FLOP per element counted"
	}
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, _, _ := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if eq == "" || len(terms) != len(s.in) {
		return fallback()
	}
	size := map[rune]float64{}
	ellipsis := 1.0
	for i, term := range terms {
		dims := s.inDims(i)
		if dims == nil {
			return fallback()
		}
		before, after, hasEllipsis := strings.Cut(term, "...")
		letters := []rune(before + after)
		if strings.Contains(after, "...") || len(letters) > len(dims) || (!hasEllipsis && len(letters) != len(dims)) {
			return fallback()
		}
		nb := len([]rune(before))
		extra := len(dims) - len(letters) // dimensions the ellipsis covers
		e := 1.0
		for j := 0; j < extra; j++ {
			e *= float64(dims[nb+j])
		}
		ellipsis = math.Max(ellipsis, e)
		for j, c := range letters {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return fallback()
			}
			d := dims[j]
			if j >= nb {
				d = dims[j+extra]
			}
			size[c] = math.Max(size[c], float64(d))
		}
	}
	space := ellipsis
	for _, d := range size {
		space *= d
	}
	return float64(max(len(terms), 1)) * space, ""
}
