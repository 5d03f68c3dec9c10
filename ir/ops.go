package ir

import "fmt"

// OpFlags are the facts about an operator that passes rely on. Remat
// legality comes only from them: Random and Stateful ops are never
// recomputed, and an op without an OpInfo is treated as stateful.
type OpFlags uint16

const (
	// Random ops draw random numbers: replaying them changes the result.
	Random OpFlags = 1 << iota
	// Stateful ops read or change state outside their inputs and outputs.
	Stateful
	// ControlFlow ops run subgraphs (If, Loop, Scan).
	ControlFlow
	// DataDependent ops have an output shape that depends on input values,
	// not only on input shapes (NonZero, Unique, …).
	DataDependent
	// Elementwise ops compute each output element from the input elements
	// at the same (broadcast) position. Runtimes may run them in place,
	// writing the output over an input buffer of the same size that has no
	// later use.
	Elementwise
	// ShapeOnly ops read only the shape of their first input, never its
	// data (Shape, Size).
	ShapeOnly
	// Alias ops return their first input's data unchanged under another
	// shape; runtimes hand out a view of the input buffer instead of a copy
	// (Reshape, Squeeze, Unsqueeze, Flatten, Identity).
	Alias
	// InPlace ops may write their output over their first input's buffer
	// when that input has no later reader and its shape and element size
	// match (measured for ONNX Runtime's CPU kernels: unary activations,
	// Clip, Shrink, Softmax, LogSoftmax, Cast between same-size types, and
	// Scatter and ScatterElements over their data input, not ScatterND;
	// see targets/ort/memory.go).
	InPlace
)

// Variadic marks an unbounded maximum arity.
const Variadic = -1

// OpInfo is the op table entry of one operator.
type OpInfo struct {
	Domain         string
	Name           string
	MinIn, MaxIn   int // MaxIn == Variadic means unbounded
	MinOut, MaxOut int
	Flags          OpFlags
}

// Recomputable reports whether a node of this op may be executed more than
// once with the same result.
func (o *OpInfo) Recomputable() bool {
	return o != nil && o.Flags&(Random|Stateful) == 0
}

// InputArity says how many inputs the op takes, for messages: "exactly
// 2", "1 to 3", "at least 1".
func (o *OpInfo) InputArity() string { return arityText(o.MinIn, o.MaxIn) }

// OutputArity says how many outputs the op produces, as InputArity.
func (o *OpInfo) OutputArity() string { return arityText(o.MinOut, o.MaxOut) }

func arityText(lo, hi int) string {
	switch {
	case hi == Variadic:
		return fmt.Sprintf("at least %d", lo)
	case lo == hi:
		return fmt.Sprintf("exactly %d", lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// LookupOp returns the table entry of an operator, or nil when the IR does
// not know it (a custom or newer op, kept as an opaque node). The domains ""
// and "ai.onnx" are the same standard domain; TFDomain holds TensorFlow's
// ops (ops_tf.go).
func LookupOp(domain, name string) *OpInfo {
	if domain == "ai.onnx" {
		domain = ""
	}
	i, ok := opIndex[opKey{domain, name}]
	if !ok {
		return nil
	}
	return &allOps[i]
}

// Ops returns a copy of the whole op table, in table order: the ONNX
// domain, then TensorFlow's.
func Ops() []OpInfo { return append([]OpInfo(nil), allOps...) }

// Info returns n's op table entry, or nil.
func (n *Node) Info() *OpInfo { return LookupOp(n.Domain, n.Op) }

// Recomputable reports whether n may be executed more than once: its op is
// known, neither random nor stateful, and every node inside its subgraphs is
// recomputable too.
func (n *Node) Recomputable() bool {
	if !n.Info().Recomputable() {
		return false
	}
	for _, g := range n.Subgraphs() {
		for _, m := range g.Nodes {
			if !m.Recomputable() {
				return false
			}
		}
	}
	return true
}

type opKey struct{ domain, name string }

// allOps is the op table of every domain.
var allOps = append(append([]OpInfo(nil), opTable...), tfOpTable...)

var opIndex = func() map[opKey]int {
	m := make(map[opKey]int, len(allOps))
	for i, o := range allOps {
		m[opKey{o.Domain, o.Name}] = i
	}
	return m
}()

// Arity helpers for the table below.
const vv = Variadic

const (
	al = Alias
	ip = Elementwise | InPlace
	ew = Elementwise
	dd = DataDependent
	cf = ControlFlow
	rn = Random
)

// opTable lists the operators of the standard ONNX domain that the IR knows,
// with arities valid across opsets 7 to 21 (the widest range any of those
// opsets allows).
var opTable = []OpInfo{
	// Convolution, matrix products, normalisation, pooling.
	{"", "Conv", 2, 3, 1, 1, 0},
	{"", "ConvTranspose", 2, 3, 1, 1, 0},
	{"", "ConvInteger", 2, 4, 1, 1, 0},
	{"", "QLinearConv", 8, 9, 1, 1, 0},
	{"", "Gemm", 2, 3, 1, 1, 0},
	{"", "MatMul", 2, 2, 1, 1, 0},
	{"", "MatMulInteger", 2, 4, 1, 1, 0},
	{"", "QLinearMatMul", 8, 8, 1, 1, 0},
	{"", "Einsum", 1, vv, 1, 1, 0},
	{"", "BatchNormalization", 5, 5, 1, 5, 0},
	{"", "InstanceNormalization", 3, 3, 1, 1, 0},
	{"", "LayerNormalization", 2, 3, 1, 3, 0},
	{"", "GroupNormalization", 3, 3, 1, 1, 0},
	{"", "LRN", 1, 1, 1, 1, 0},
	{"", "MeanVarianceNormalization", 1, 1, 1, 1, 0},
	{"", "LpNormalization", 1, 1, 1, 1, 0},
	{"", "MaxPool", 1, 1, 1, 2, 0},
	{"", "AveragePool", 1, 1, 1, 1, 0},
	{"", "LpPool", 1, 1, 1, 1, 0},
	{"", "GlobalAveragePool", 1, 1, 1, 1, 0},
	{"", "GlobalMaxPool", 1, 1, 1, 1, 0},
	{"", "GlobalLpPool", 1, 1, 1, 1, 0},
	{"", "MaxUnpool", 2, 3, 1, 1, 0},
	{"", "MaxRoiPool", 2, 2, 1, 1, 0},
	{"", "RoiAlign", 3, 3, 1, 1, 0},
	{"", "GridSample", 2, 2, 1, 1, 0},
	{"", "Col2Im", 3, 3, 1, 1, 0},

	// Elementwise arithmetic and activations.
	{"", "Add", 2, 2, 1, 1, ew},
	{"", "Sub", 2, 2, 1, 1, ew},
	{"", "Mul", 2, 2, 1, 1, ew},
	{"", "Div", 2, 2, 1, 1, ew},
	{"", "Pow", 2, 2, 1, 1, ew},
	{"", "Mod", 2, 2, 1, 1, ew},
	{"", "BitShift", 2, 2, 1, 1, ew},
	{"", "BitwiseAnd", 2, 2, 1, 1, ew},
	{"", "BitwiseOr", 2, 2, 1, 1, ew},
	{"", "BitwiseXor", 2, 2, 1, 1, ew},
	{"", "BitwiseNot", 1, 1, 1, 1, ew},
	{"", "Max", 1, vv, 1, 1, ew},
	{"", "Min", 1, vv, 1, 1, ew},
	{"", "Sum", 1, vv, 1, 1, ew},
	{"", "Mean", 1, vv, 1, 1, ew},
	{"", "PRelu", 2, 2, 1, 1, ew},
	{"", "Where", 3, 3, 1, 1, ew},
	{"", "Clip", 1, 3, 1, 1, ip},
	{"", "Sqrt", 1, 1, 1, 1, ew},
	{"", "Exp", 1, 1, 1, 1, ew},
	{"", "Log", 1, 1, 1, 1, ew},
	{"", "Neg", 1, 1, 1, 1, ew},
	{"", "Abs", 1, 1, 1, 1, ew},
	{"", "Reciprocal", 1, 1, 1, 1, ew},
	{"", "Floor", 1, 1, 1, 1, ew},
	{"", "Ceil", 1, 1, 1, 1, ew},
	{"", "Round", 1, 1, 1, 1, ew},
	{"", "Sign", 1, 1, 1, 1, ew},
	{"", "Sin", 1, 1, 1, 1, ew},
	{"", "Cos", 1, 1, 1, 1, ew},
	{"", "Tan", 1, 1, 1, 1, ew},
	{"", "Asin", 1, 1, 1, 1, ew},
	{"", "Acos", 1, 1, 1, 1, ew},
	{"", "Atan", 1, 1, 1, 1, ew},
	{"", "Sinh", 1, 1, 1, 1, ew},
	{"", "Cosh", 1, 1, 1, 1, ew},
	{"", "Asinh", 1, 1, 1, 1, ew},
	{"", "Acosh", 1, 1, 1, 1, ew},
	{"", "Atanh", 1, 1, 1, 1, ew},
	{"", "Erf", 1, 1, 1, 1, ew},
	{"", "IsNaN", 1, 1, 1, 1, ew},
	{"", "IsInf", 1, 1, 1, 1, ew},
	{"", "Relu", 1, 1, 1, 1, ip},
	{"", "LeakyRelu", 1, 1, 1, 1, ip},
	{"", "Elu", 1, 1, 1, 1, ip},
	{"", "Selu", 1, 1, 1, 1, ip},
	{"", "Celu", 1, 1, 1, 1, ip},
	{"", "ThresholdedRelu", 1, 1, 1, 1, ip},
	{"", "Sigmoid", 1, 1, 1, 1, ip},
	{"", "HardSigmoid", 1, 1, 1, 1, ip},
	{"", "HardSwish", 1, 1, 1, 1, ew},
	{"", "Tanh", 1, 1, 1, 1, ip},
	{"", "Softplus", 1, 1, 1, 1, ip},
	{"", "Softsign", 1, 1, 1, 1, ip},
	{"", "Mish", 1, 1, 1, 1, ew},
	{"", "Gelu", 1, 1, 1, 1, ew},
	{"", "Shrink", 1, 1, 1, 1, ip},
	{"", "Equal", 2, 2, 1, 1, ew},
	{"", "Greater", 2, 2, 1, 1, ew},
	{"", "Less", 2, 2, 1, 1, ew},
	{"", "GreaterOrEqual", 2, 2, 1, 1, ew},
	{"", "LessOrEqual", 2, 2, 1, 1, ew},
	{"", "And", 2, 2, 1, 1, ew},
	{"", "Or", 2, 2, 1, 1, ew},
	{"", "Xor", 2, 2, 1, 1, ew},
	{"", "Not", 1, 1, 1, 1, ew},
	{"", "Cast", 1, 1, 1, 1, ip},
	{"", "CastLike", 2, 2, 1, 1, ew},
	{"", "Identity", 1, 1, 1, 1, al},
	{"", "QuantizeLinear", 2, 3, 1, 1, 0},
	{"", "DequantizeLinear", 2, 3, 1, 1, 0},
	{"", "DynamicQuantizeLinear", 1, 1, 3, 3, 0},

	// Softmax and reductions.
	{"", "Softmax", 1, 1, 1, 1, InPlace},
	{"", "LogSoftmax", 1, 1, 1, 1, InPlace},
	{"", "Hardmax", 1, 1, 1, 1, 0},
	{"", "ReduceMean", 1, 2, 1, 1, 0},
	{"", "ReduceSum", 1, 2, 1, 1, 0},
	{"", "ReduceMax", 1, 2, 1, 1, 0},
	{"", "ReduceMin", 1, 2, 1, 1, 0},
	{"", "ReduceProd", 1, 2, 1, 1, 0},
	{"", "ReduceL1", 1, 2, 1, 1, 0},
	{"", "ReduceL2", 1, 2, 1, 1, 0},
	{"", "ReduceLogSum", 1, 2, 1, 1, 0},
	{"", "ReduceLogSumExp", 1, 2, 1, 1, 0},
	{"", "ReduceSumSquare", 1, 2, 1, 1, 0},
	{"", "ArgMax", 1, 1, 1, 1, 0},
	{"", "ArgMin", 1, 1, 1, 1, 0},
	{"", "CumSum", 2, 2, 1, 1, 0},
	{"", "TopK", 1, 2, 2, 2, 0},

	// Data movement and shape manipulation.
	{"", "Concat", 1, vv, 1, 1, 0},
	{"", "Split", 1, 2, 1, vv, 0},
	{"", "Slice", 1, 5, 1, 1, 0},
	{"", "Reshape", 1, 2, 1, 1, al},
	{"", "Flatten", 1, 1, 1, 1, al},
	{"", "Transpose", 1, 1, 1, 1, 0},
	{"", "Squeeze", 1, 2, 1, 1, al},
	{"", "Unsqueeze", 1, 2, 1, 1, al},
	{"", "Expand", 2, 2, 1, 1, 0},
	{"", "Tile", 2, 3, 1, 1, 0},
	{"", "Pad", 1, 4, 1, 1, 0},
	{"", "Resize", 1, 4, 1, 1, 0},
	{"", "Upsample", 1, 2, 1, 1, 0},
	{"", "DepthToSpace", 1, 1, 1, 1, 0},
	{"", "SpaceToDepth", 1, 1, 1, 1, 0},
	{"", "Gather", 2, 2, 1, 1, 0},
	{"", "GatherElements", 2, 2, 1, 1, 0},
	{"", "GatherND", 2, 2, 1, 1, 0},
	{"", "Scatter", 3, 3, 1, 1, InPlace},
	{"", "ScatterElements", 3, 3, 1, 1, InPlace},
	{"", "ScatterND", 3, 3, 1, 1, 0},
	{"", "OneHot", 3, 3, 1, 1, 0},
	{"", "Trilu", 1, 2, 1, 1, 0},
	{"", "ReverseSequence", 2, 2, 1, 1, 0},
	{"", "EyeLike", 1, 1, 1, 1, 0},
	{"", "Shape", 1, 1, 1, 1, ShapeOnly},
	{"", "Size", 1, 1, 1, 1, ShapeOnly},
	{"", "Constant", 0, 0, 1, 1, 0},
	{"", "ConstantOfShape", 1, 1, 1, 1, 0},
	{"", "Range", 3, 3, 1, 1, 0},
	{"", "Det", 1, 1, 1, 1, 0},
	{"", "CenterCropPad", 2, 3, 1, 1, 0},

	// Data-dependent output shapes.
	{"", "NonZero", 1, 1, 1, 1, dd},
	{"", "Unique", 1, 1, 1, 4, dd},
	{"", "Compress", 2, 2, 1, 1, dd},
	{"", "NonMaxSuppression", 2, 5, 1, 1, dd},

	// Recurrent networks.
	{"", "LSTM", 3, 8, 0, 3, 0},
	{"", "GRU", 3, 6, 0, 2, 0},
	{"", "RNN", 3, 6, 0, 2, 0},

	// Control flow.
	{"", "If", 1, 1, 1, vv, cf},
	{"", "Loop", 2, vv, 1, vv, cf},
	{"", "Scan", 1, vv, 1, vv, cf},

	// Random number generation. Dropout is random in training mode.
	{"", "Dropout", 1, 3, 1, 2, rn},
	{"", "RandomNormal", 0, 0, 1, 1, rn},
	{"", "RandomUniform", 0, 0, 1, 1, rn},
	{"", "RandomNormalLike", 1, 1, 1, 1, rn},
	{"", "RandomUniformLike", 1, 1, 1, 1, rn},
	{"", "Multinomial", 1, 1, 1, 1, rn},
	{"", "Bernoulli", 1, 1, 1, 1, rn},

	// Sequences and optionals.
	{"", "SequenceConstruct", 1, vv, 1, 1, 0},
	{"", "SequenceEmpty", 0, 0, 1, 1, 0},
	{"", "SequenceAt", 2, 2, 1, 1, 0},
	{"", "SequenceInsert", 2, 3, 1, 1, 0},
	{"", "SequenceErase", 1, 2, 1, 1, 0},
	{"", "SequenceLength", 1, 1, 1, 1, 0},
	{"", "SplitToSequence", 1, 2, 1, 1, 0},
	{"", "ConcatFromSequence", 1, 1, 1, 1, 0},
	{"", "Optional", 0, 1, 1, 1, 0},
	{"", "OptionalHasElement", 0, 1, 1, 1, 0},
	{"", "OptionalGetElement", 1, 1, 1, 1, 0},
}
