package shapes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// arg is one input of an op case: a graph input of a type, a constant
// (initializer) of int64 or float32 values, or absent.
type arg struct {
	name    string
	typ     string
	ints    []int64
	floats  []float32
	isConst bool
	absent  bool
}

func in(name, typ string) arg { return arg{name: name, typ: typ} }

func ci(name string, vals ...int64) arg {
	return arg{name: name, typ: fmt.Sprintf("i64[%d]", len(vals)), ints: vals, isConst: true}
}

func cscalar(name string, v int64) arg {
	return arg{name: name, typ: "i64[]", ints: []int64{v}, isConst: true}
}

func cf(name string, vals ...float32) arg {
	return arg{name: name, typ: fmt.Sprintf("f32[%d]", len(vals)), floats: vals, isConst: true}
}

func absent() arg { return arg{absent: true} }

type opCase struct {
	name  string
	opset int64
	op    string
	in    []arg
	attrs []ir.Attr
	nout  int
	// want lists the output types; "err:text" expects an error containing
	// text instead.
	want []string
	// noPy says why python3-onnx 1.12 cannot check this case.
	noPy string
}

func ints(name string, v ...int64) ir.Attr     { return ir.IntsAttr(name, v...) }
func iattr(name string, v int64) ir.Attr       { return ir.IntAttr(name, v) }
func sattr(name, v string) ir.Attr             { return ir.StringAttr(name, v) }
func fattr(name string, v float32) ir.Attr     { return ir.FloatAttr(name, v) }
func floats(name string, v ...float32) ir.Attr { return ir.FloatsAttr(name, v...) }
func tattr(name string, t *ir.Tensor) ir.Attr  { return ir.TensorAttr(name, t) }
func args(a ...arg) []arg                      { return a }
func attrs(a ...ir.Attr) []ir.Attr             { return a }
func want(s ...string) []string                { return s }
func x4(typ string) []arg                      { return args(in("x", typ)) }
func unary(op, typ string, a ...ir.Attr) opCase {
	return opCase{name: op, opset: 17, op: op, in: x4(typ), attrs: a, want: want(typ)}
}

var opCases = []opCase{
	// Convolutions.
	{name: "Conv default", opset: 17, op: "Conv", in: args(in("x", "f32[1,3,32,32]"), in("w", "f32[8,3,3,3]")), want: want("f32[1,8,30,30]")},
	{name: "Conv strides pads dilations group", opset: 17, op: "Conv", in: args(in("x", "f32[2,4,17,17]"), in("w", "f32[6,2,3,3]")),
		attrs: attrs(ints("strides", 2, 2), ints("pads", 1, 1, 1, 1), ints("dilations", 2, 2), iattr("group", 2)), want: want("f32[2,6,8,8]")},
	{name: "Conv asymmetric pads", opset: 17, op: "Conv", in: args(in("x", "f32[1,3,10,12]"), in("w", "f32[4,3,3,5]")),
		attrs: attrs(ints("pads", 0, 2, 1, 0), ints("strides", 1, 2)), want: want("f32[1,4,9,5]")},
	{name: "Conv SAME_UPPER", opset: 17, op: "Conv", in: args(in("x", "f32[1,3,15,15]"), in("w", "f32[4,3,3,3]")),
		attrs: attrs(sattr("auto_pad", "SAME_UPPER"), ints("strides", 2, 2)), want: want("f32[1,4,8,8]")},
	{name: "Conv symbolic keeps batch and same-size axes", opset: 17, op: "Conv", in: args(in("x", "f32[N,3,H,W]"), in("w", "f32[16,3,3,3]")),
		attrs: attrs(ints("pads", 1, 1, 1, 1)), want: want("f32[N,16,H,W]")},
	{name: "Conv 1-D VALID with bias", opset: 11, op: "Conv", in: args(in("x", "f32[1,2,10]"), in("w", "f32[5,2,4]"), in("b", "f32[5]")),
		attrs: attrs(sattr("auto_pad", "VALID")), want: want("f32[1,5,7]")},
	{name: "Conv kernel_shape attribute", opset: 17, op: "Conv", in: args(in("x", "f32[1,3,9,9]"), in("w", "f32[4,3,3,3]")),
		attrs: attrs(ints("kernel_shape", 3, 3), ints("strides", 3, 3)), want: want("f32[1,4,3,3]")},
	{name: "Conv channel mismatch", opset: 17, op: "Conv", in: args(in("x", "f32[1,64,8,8]"), in("w", "f32[32,32,3,3]")),
		want: want("err:input channels 64 do not match weight channels 32 × group 1")},
	{name: "Conv unknown auto_pad", opset: 17, op: "Conv", in: args(in("x", "f32[1,3,8,8]"), in("w", "f32[4,3,3,3]")),
		attrs: attrs(sattr("auto_pad", "SAME_MIDDLE")), want: want(`err:unsupported auto_pad "SAME_MIDDLE"`)},
	{name: "Conv kernel larger than input", opset: 17, op: "Conv", in: args(in("x", "f32[1,3,2,2]"), in("w", "f32[4,3,3,3]")),
		want: want("err:smaller than the kernel extent")},
	{name: "ConvTranspose stride", opset: 17, op: "ConvTranspose", in: args(in("x", "f32[1,4,5,5]"), in("w", "f32[4,2,3,3]")),
		attrs: attrs(ints("strides", 2, 2)), want: want("f32[1,2,11,11]")},
	{name: "ConvTranspose pads output_padding group", opset: 17, op: "ConvTranspose", in: args(in("x", "f32[1,4,5,5]"), in("w", "f32[4,3,3,3]")),
		attrs: attrs(ints("strides", 2, 2), ints("pads", 1, 1, 1, 1), ints("output_padding", 1, 1), iattr("group", 2)), want: want("f32[1,6,10,10]")},
	{name: "ConvTranspose output_shape", opset: 17, op: "ConvTranspose", in: args(in("x", "f32[1,4,5,5]"), in("w", "f32[4,2,3,3]")),
		attrs: attrs(ints("strides", 2, 2), ints("output_shape", 12, 12)), want: want("f32[1,2,12,12]")},
	{name: "ConvTranspose SAME_UPPER", opset: 17, op: "ConvTranspose", in: args(in("x", "f32[1,4,5,7]"), in("w", "f32[4,2,3,3]")),
		attrs: attrs(ints("strides", 2, 2), sattr("auto_pad", "SAME_UPPER")), want: want("f32[1,2,10,14]")},
	{name: "ConvTranspose dilations", opset: 17, op: "ConvTranspose", in: args(in("x", "f32[1,4,5,5]"), in("w", "f32[4,2,3,3]")),
		attrs: attrs(ints("dilations", 2, 2)), want: want("f32[1,2,9,9]")},
	{name: "ConvInteger", opset: 17, op: "ConvInteger", in: args(in("x", "u8[1,3,8,8]"), in("w", "u8[4,3,3,3]")),
		attrs: attrs(ints("pads", 1, 1, 1, 1)), want: want("i32[1,4,8,8]")},
	{name: "ConvInteger int8 weights, zero points, strided", opset: 17, op: "ConvInteger", in: args(in("x", "u8[1,3,8,8]"), in("w", "i8[4,3,3,3]"), in("xz", "u8[]"), in("wz", "i8[]")),
		attrs: attrs(ints("pads", 1, 1, 1, 1), ints("strides", 2, 2)), want: want("i32[1,4,4,4]")},
	{name: "QLinearConv", opset: 17, op: "QLinearConv", in: args(in("x", "u8[1,3,8,8]"), in("xs", "f32[]"), in("xz", "u8[]"),
		in("w", "u8[4,3,3,3]"), in("ws", "f32[]"), in("wz", "u8[]"), in("ys", "f32[]"), in("yz", "u8[]"), in("b", "i32[4]")),
		attrs: attrs(ints("strides", 2, 2)), want: want("u8[1,4,3,3]")},

	// Matrix products.
	{name: "Gemm", opset: 17, op: "Gemm", in: args(in("a", "f32[4,3]"), in("b", "f32[3,5]")), want: want("f32[4,5]")},
	{name: "Gemm transposed with C", opset: 17, op: "Gemm", in: args(in("a", "f32[3,4]"), in("b", "f32[5,3]"), in("c", "f32[5]")),
		attrs: attrs(iattr("transA", 1), iattr("transB", 1), fattr("alpha", 0.5)), want: want("f32[4,5]")},
	{name: "Gemm inner mismatch", opset: 17, op: "Gemm", in: args(in("a", "f32[4,3]"), in("b", "f32[2,5]")), want: want("err:inner dimensions differ")},
	{name: "MatMul batched", opset: 17, op: "MatMul", in: args(in("a", "f32[2,3,4]"), in("b", "f32[4,5]")), want: want("f32[2,3,5]")},
	{name: "MatMul 1-D left", opset: 17, op: "MatMul", in: args(in("a", "f32[4]"), in("b", "f32[2,4,5]")), want: want("f32[2,5]")},
	{name: "MatMul 1-D right", opset: 17, op: "MatMul", in: args(in("a", "f32[3,4]"), in("b", "f32[4]")), want: want("f32[3]")},
	{name: "MatMul 1-D both", opset: 17, op: "MatMul", in: args(in("a", "f32[4]"), in("b", "f32[4]")), want: want("f32[]")},
	{name: "MatMul broadcast batch", opset: 17, op: "MatMul", in: args(in("a", "f32[2,1,3,4]"), in("b", "f32[5,4,6]")), want: want("f32[2,5,3,6]")},
	{name: "MatMul symbolic", opset: 17, op: "MatMul", in: args(in("a", "f32[batch,seq,64]"), in("b", "f32[64,128]")), want: want("f32[batch,seq,128]")},
	{name: "MatMul inner mismatch", opset: 17, op: "MatMul", in: args(in("a", "f32[3,4]"), in("b", "f32[5,6]")), want: want("err:inner dimensions differ")},
	{name: "MatMulInteger", opset: 17, op: "MatMulInteger", in: args(in("a", "u8[2,3]"), in("b", "u8[3,4]")), want: want("i32[2,4]")},
	{name: "MatMulInteger int8 batched with zero points", opset: 17, op: "MatMulInteger", in: args(in("a", "u8[5,2,3]"), in("b", "i8[3,4]"), in("az", "u8[]"), in("bz", "i8[]")), want: want("i32[5,2,4]")},
	{name: "QLinearMatMul", opset: 17, op: "QLinearMatMul", in: args(in("a", "u8[2,3]"), in("as", "f32[]"), in("az", "u8[]"),
		in("b", "u8[3,4]"), in("bs", "f32[]"), in("bz", "u8[]"), in("ys", "f32[]"), in("yz", "u8[]")), want: want("u8[2,4]")},
	{name: "Einsum explicit", opset: 17, op: "Einsum", in: args(in("a", "f32[2,3,4]"), in("b", "f32[2,4,5]")),
		attrs: attrs(sattr("equation", "bij,bjk->bik")), want: want("f32[2,3,5]")},
	{name: "Einsum implicit output", opset: 17, op: "Einsum", in: args(in("a", "f32[3,4]"), in("b", "f32[4,5]")),
		attrs: attrs(sattr("equation", "ij,jk")), want: want("f32[3,5]")},
	{name: "Einsum ellipsis and diagonal", opset: 17, op: "Einsum", in: args(in("a", "f32[2,7,3,3]")),
		attrs: attrs(sattr("equation", "...ii->...i")), want: want("f32[2,7,3]")},
	{name: "Einsum bad rank", opset: 17, op: "Einsum", in: args(in("a", "f32[3,4,5]")), attrs: attrs(sattr("equation", "ij->i")),
		want: want("err:has 2 subscripts, but input 0 has rank 3")},

	// Elementwise.
	{name: "Add broadcast", opset: 17, op: "Add", in: args(in("a", "f32[2,3]"), in("b", "f32[3]")), want: want("f32[2,3]")},
	{name: "Add symbolic broadcast", opset: 17, op: "Add", in: args(in("a", "f32[batch,1,4]"), in("b", "f32[3,1]")), want: want("f32[batch,3,4]")},
	{name: "Add same symbols", opset: 17, op: "Add", in: args(in("a", "f32[batch,seq]"), in("b", "f32[batch,seq]")), want: want("f32[batch,seq]")},
	{name: "Add does not broadcast", opset: 17, op: "Add", in: args(in("a", "f32[2,3]"), in("b", "f32[4]")), want: want("err:do not broadcast")},
	{name: "Add mixed types", opset: 17, op: "Add", in: args(in("a", "f32[2]"), in("b", "f16[2]")), want: want("err:element type")},
	{name: "Sub", opset: 17, op: "Sub", in: args(in("a", "i64[4,1]"), in("b", "i64[1,5]")), want: want("i64[4,5]")},
	{name: "Mul", opset: 17, op: "Mul", in: args(in("a", "f16[1,3,1]"), in("b", "f16[2,1,6]")), want: want("f16[2,3,6]")},
	{name: "Div", opset: 17, op: "Div", in: args(in("a", "f32[5]"), in("b", "f32[]")), want: want("f32[5]")},
	{name: "Pow mixed types opset 12", opset: 13, op: "Pow", in: args(in("a", "f32[2,3]"), in("b", "i64[]")), want: want("f32[2,3]")},
	{name: "Pow mixed types opset 7", opset: 7, op: "Pow", in: args(in("a", "f32[2,3]"), in("b", "f16[]")), want: want("err:element type"), noPy: "onnx accepts it"},
	{name: "Mod fmod", opset: 17, op: "Mod", in: args(in("a", "f32[2,3]"), in("b", "f32[3]")), attrs: attrs(iattr("fmod", 1)), want: want("f32[2,3]")},
	{name: "Max variadic", opset: 17, op: "Max", in: args(in("a", "f32[2,1]"), in("b", "f32[3]"), in("c", "f32[1,1]")), want: want("f32[2,3]")},
	{name: "Min", opset: 17, op: "Min", in: args(in("a", "i32[4]"), in("b", "i32[4]")), want: want("i32[4]")},
	{name: "Sum", opset: 17, op: "Sum", in: args(in("a", "f32[2,3]")), want: want("f32[2,3]")},
	{name: "Mean", opset: 17, op: "Mean", in: args(in("a", "f32[2,3]"), in("b", "f32[2,1]")), want: want("f32[2,3]")},
	{name: "Equal", opset: 17, op: "Equal", in: args(in("a", "i64[3,1]"), in("b", "i64[4]")), want: want("bool[3,4]")},
	{name: "Greater", opset: 17, op: "Greater", in: args(in("a", "f32[3]"), in("b", "f32[]")), want: want("bool[3]")},
	{name: "Less", opset: 17, op: "Less", in: args(in("a", "f32[3]"), in("b", "f32[3]")), want: want("bool[3]")},
	{name: "GreaterOrEqual", opset: 17, op: "GreaterOrEqual", in: args(in("a", "f32[2,3]"), in("b", "f32[3]")), want: want("bool[2,3]")},
	{name: "LessOrEqual", opset: 17, op: "LessOrEqual", in: args(in("a", "i32[2,3]"), in("b", "i32[3]")), want: want("bool[2,3]")},
	{name: "And", opset: 17, op: "And", in: args(in("a", "bool[2,3]"), in("b", "bool[3]")), want: want("bool[2,3]")},
	{name: "Or", opset: 17, op: "Or", in: args(in("a", "bool[2]"), in("b", "bool[2]")), want: want("bool[2]")},
	{name: "Xor", opset: 17, op: "Xor", in: args(in("a", "bool[2]"), in("b", "bool[1]")), want: want("bool[2]")},
	{name: "Not", opset: 17, op: "Not", in: x4("bool[2,3]"), want: want("bool[2,3]")},
	{name: "IsNaN", opset: 17, op: "IsNaN", in: x4("f32[2,3]"), want: want("bool[2,3]")},
	{name: "IsInf", opset: 17, op: "IsInf", in: x4("f32[2,3]"), attrs: attrs(iattr("detect_negative", 0)), want: want("bool[2,3]")},
	{name: "Where", opset: 17, op: "Where", in: args(in("c", "bool[2,1]"), in("x", "f32[3]"), in("y", "f32[]")), want: want("f32[2,3]")},
	{name: "PRelu", opset: 17, op: "PRelu", in: args(in("x", "f32[1,3,4,4]"), in("s", "f32[3,1,1]")), want: want("f32[1,3,4,4]")},
	unary("Sqrt", "f32[2,3]"), unary("Exp", "f64[4]"), unary("Log", "f32[batch,3]"), unary("Neg", "i32[2]"),
	unary("Abs", "i64[2,2]"), unary("Reciprocal", "f16[3]"), unary("Relu", "f32[1,2,3]"),
	unary("LeakyRelu", "f32[2,3]", fattr("alpha", 0.2)), unary("Elu", "f32[2]", fattr("alpha", 0.5)),
	unary("Selu", "f32[2]", fattr("gamma", 1.1)), unary("Sigmoid", "f32[2,3]"),
	unary("HardSigmoid", "f32[2,3]", fattr("alpha", 0.3), fattr("beta", 0.4)), unary("HardSwish", "f32[2,3]"),
	unary("Tanh", "f32[2,3]"), unary("Erf", "f32[2,3]"), unary("Softplus", "f32[2,3]"), unary("Softsign", "f32[2,3]"),
	unary("Floor", "f32[2]"), unary("Ceil", "f32[2]"), unary("Round", "f32[2]"), unary("Sign", "f32[2]"),
	unary("Sin", "f32[2]"), unary("Cos", "f32[2]"), unary("Celu", "f32[2]", fattr("alpha", 2)),
	unary("ThresholdedRelu", "f32[2]"), unary("Shrink", "f32[2]", fattr("lambd", 1)),
	{name: "Mish", opset: 18, op: "Mish", in: x4("f32[2,3]"), want: want("f32[2,3]"), noPy: "opset 18"},
	{name: "Gelu", opset: 20, op: "Gelu", in: x4("f32[2,3]"), attrs: attrs(sattr("approximate", "tanh")), want: want("f32[2,3]"), noPy: "opset 20"},
	{name: "Clip attributes (opset 6)", opset: 6, op: "Clip", in: x4("f32[2,3]"), attrs: attrs(fattr("min", 0), fattr("max", 6)), want: want("f32[2,3]")},
	{name: "Clip inputs (opset 13)", opset: 13, op: "Clip", in: args(in("x", "f32[2,3]"), in("lo", "f32[]"), absent()), want: want("f32[2,3]")},
	{name: "Cast", opset: 17, op: "Cast", in: x4("f32[2,3]"), attrs: attrs(iattr("to", 7)), want: want("i64[2,3]")},
	{name: "Cast to float16", opset: 17, op: "Cast", in: x4("f32[2,3]"), attrs: attrs(iattr("to", 10)), want: want("f16[2,3]")},
	{name: "Cast-1 type name", opset: 1, op: "Cast", in: x4("f32[2,3]"), attrs: attrs(sattr("to", "FLOAT16")), want: want("f16[2,3]"), noPy: "onnx 1.12 has no Cast-1 inference"},
	{name: "Cast unknown type", opset: 17, op: "Cast", in: x4("f32[2,3]"), attrs: attrs(iattr("to", 99)), want: want("err:unknown element type 99")},
	{name: "CastLike", opset: 17, op: "CastLike", in: args(in("x", "f32[2,3]"), in("t", "f16[]")), want: want("f16[2,3]")},
	{name: "Identity", opset: 17, op: "Identity", in: x4("f32[batch,3]"), want: want("f32[batch,3]")},
	{name: "CumSum", opset: 17, op: "CumSum", in: args(in("x", "f32[2,3]"), cscalar("axis", 1)), attrs: attrs(iattr("reverse", 1)), want: want("f32[2,3]")},
	{name: "Trilu", opset: 17, op: "Trilu", in: args(in("x", "f32[2,3,3]")), attrs: attrs(iattr("upper", 0)), want: want("f32[2,3,3]")},
	{name: "BitShift", opset: 17, op: "BitShift", in: args(in("a", "u8[4]"), in("b", "u8[4]")), attrs: attrs(sattr("direction", "LEFT")), want: want("u8[4]")},

	// Normalisation.
	{name: "BatchNormalization inference (opset 15)", opset: 15, op: "BatchNormalization",
		in:   args(in("x", "f32[2,3,4,4]"), in("s", "f32[3]"), in("b", "f32[3]"), in("m", "f32[3]"), in("v", "f32[3]")),
		want: want("f32[2,3,4,4]")},
	{name: "BatchNormalization training (opset 15)", opset: 15, op: "BatchNormalization", nout: 3,
		in:    args(in("x", "f32[2,3,4,4]"), in("s", "f32[3]"), in("b", "f32[3]"), in("m", "f32[3]"), in("v", "f32[3]")),
		attrs: attrs(iattr("training_mode", 1), fattr("epsilon", 1e-3)), want: want("f32[2,3,4,4]", "f32[3]", "f32[3]")},
	{name: "BatchNormalization running stats in their own type (opset 14)", opset: 14, op: "BatchNormalization", nout: 3,
		in:    args(in("x", "f16[2,3,4]"), in("s", "f16[3]"), in("b", "f16[3]"), in("m", "f32[3]"), in("v", "f32[3]")),
		attrs: attrs(iattr("training_mode", 1)), want: want("f16[2,3,4]", "f32[3]", "f32[3]")},
	{name: "BatchNormalization five outputs (opset 9)", opset: 9, op: "BatchNormalization", nout: 5,
		in:   args(in("x", "f32[2,3,4]"), in("s", "f32[3]"), in("b", "f32[3]"), in("m", "f32[3]"), in("v", "f32[3]")),
		want: want("f32[2,3,4]", "f32[3]", "f32[3]", "f32[3]", "f32[3]")},
	{name: "BatchNormalization extra outputs without training (opset 14)", opset: 14, op: "BatchNormalization", nout: 3,
		in:   args(in("x", "f32[2,3,4,4]"), in("s", "f32[3]"), in("b", "f32[3]"), in("m", "f32[3]"), in("v", "f32[3]")),
		want: want("err:training_mode is 0")},
	{name: "BatchNormalization channel mismatch", opset: 15, op: "BatchNormalization",
		in:   args(in("x", "f32[2,3,4,4]"), in("s", "f32[4]"), in("b", "f32[3]"), in("m", "f32[3]"), in("v", "f32[3]")),
		want: want("err:scale has shape [4]")},
	{name: "InstanceNormalization", opset: 17, op: "InstanceNormalization", in: args(in("x", "f32[2,3,5]"), in("s", "f32[3]"), in("b", "f32[3]")),
		attrs: attrs(fattr("epsilon", 1e-3)), want: want("f32[2,3,5]")},
	{name: "LayerNormalization axis 1", opset: 17, op: "LayerNormalization", nout: 3, in: args(in("x", "f32[2,3,4]"), in("s", "f32[3,4]"), in("b", "f32[3,4]")),
		attrs: attrs(iattr("axis", 1)), want: want("f32[2,3,4]", "f32[2,1,1]", "f32[2,1,1]")},
	{name: "LayerNormalization statistics in the stash type", opset: 17, op: "LayerNormalization", nout: 3, in: args(in("x", "f16[2,3,4]"), in("s", "f16[4]")),
		want: want("f16[2,3,4]", "f32[2,3,1]", "f32[2,3,1]")},
	{name: "LayerNormalization default axis", opset: 17, op: "LayerNormalization", in: args(in("x", "f16[batch,seq,8]"), in("s", "f16[8]")),
		want: want("f16[batch,seq,8]")},
	{name: "GroupNormalization", opset: 18, op: "GroupNormalization", in: args(in("x", "f32[2,6,4]"), in("s", "f32[3]"), in("b", "f32[3]")),
		attrs: attrs(iattr("num_groups", 3)), want: want("f32[2,6,4]"), noPy: "opset 18"},
	{name: "GroupNormalization bad groups", opset: 18, op: "GroupNormalization", in: args(in("x", "f32[2,6,4]"), in("s", "f32[4]"), in("b", "f32[4]")),
		attrs: attrs(iattr("num_groups", 4)), want: want("err:not a multiple of num_groups 4")},
	{name: "LRN", opset: 17, op: "LRN", in: x4("f32[1,8,4,4]"), attrs: attrs(iattr("size", 3), fattr("alpha", 2e-4)), want: want("f32[1,8,4,4]")},

	// Pools.
	{name: "MaxPool stride 2", opset: 17, op: "MaxPool", in: x4("f32[1,3,32,32]"), attrs: attrs(ints("kernel_shape", 2, 2), ints("strides", 2, 2)), want: want("f32[1,3,16,16]")},
	{name: "MaxPool ceil_mode", opset: 17, op: "MaxPool", in: x4("f32[1,1,6,6]"), attrs: attrs(ints("kernel_shape", 3, 3), ints("strides", 2, 2), iattr("ceil_mode", 1)), want: want("f32[1,1,3,3]")},
	{name: "MaxPool ceil_mode drops a window starting in the padding", opset: 17, op: "MaxPool", in: x4("f32[1,1,4,4]"),
		attrs: attrs(ints("kernel_shape", 2, 2), ints("strides", 2, 2), ints("pads", 0, 0, 1, 1), iattr("ceil_mode", 1)), want: want("f32[1,1,2,2]"),
		noPy: "onnx 1.12 keeps the window that starts in the padding (3); the current spec and ONNX Runtime drop it"},
	{name: "MaxPool ceil_mode is ignored before opset 10", opset: 8, op: "MaxPool", in: x4("f32[1,1,6,6]"), attrs: attrs(ints("kernel_shape", 2, 2), ints("strides", 2, 2), iattr("ceil_mode", 1)),
		want: want("f32[1,1,3,3]"), noPy: "onnx rejects the attribute"},
	{name: "MaxPool dilations and Indices", opset: 17, op: "MaxPool", nout: 2, in: x4("f32[1,1,10,10]"), attrs: attrs(ints("kernel_shape", 3, 3), ints("dilations", 2, 2)),
		want: want("f32[1,1,6,6]", "i64[1,1,6,6]")},
	{name: "MaxPool SAME_LOWER", opset: 17, op: "MaxPool", in: x4("f32[1,2,7,7]"), attrs: attrs(ints("kernel_shape", 3, 3), ints("strides", 2, 2), sattr("auto_pad", "SAME_LOWER")), want: want("f32[1,2,4,4]")},
	{name: "MaxPool VALID", opset: 17, op: "MaxPool", in: x4("f32[1,2,7,7]"), attrs: attrs(ints("kernel_shape", 3, 3), ints("strides", 2, 2), sattr("auto_pad", "VALID")), want: want("f32[1,2,3,3]")},
	{name: "MaxPool symbolic", opset: 17, op: "MaxPool", in: x4("f32[N,8,H,W]"), attrs: attrs(ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1)), want: want("f32[N,8,H,W]")},
	{name: "MaxPool missing kernel_shape", opset: 17, op: "MaxPool", in: x4("f32[1,2,7,7]"), want: want("err:missing required attribute kernel_shape")},
	{name: "AveragePool pads count_include_pad", opset: 17, op: "AveragePool", in: x4("f32[1,3,7,9]"),
		attrs: attrs(ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1), ints("strides", 2, 2), iattr("count_include_pad", 1)), want: want("f32[1,3,4,5]")},
	{name: "AveragePool dilations (opset 19)", opset: 19, op: "AveragePool", in: x4("f32[1,3,10,10]"),
		attrs: attrs(ints("kernel_shape", 3, 3), ints("dilations", 2, 2)), want: want("f32[1,3,6,6]"), noPy: "opset 19"},
	{name: "AveragePool 1-D", opset: 11, op: "AveragePool", in: x4("f32[1,3,10]"), attrs: attrs(ints("kernel_shape", 4), iattr("ceil_mode", 1), ints("strides", 3)), want: want("f32[1,3,3]")},
	{name: "GlobalAveragePool", opset: 17, op: "GlobalAveragePool", in: x4("f32[batch,3,7,7]"), want: want("f32[batch,3,1,1]")},
	{name: "GlobalMaxPool", opset: 17, op: "GlobalMaxPool", in: x4("f32[2,3,7]"), want: want("f32[2,3,1]")},

	// Data movement.
	{name: "Concat", opset: 17, op: "Concat", in: args(in("a", "f32[2,3]"), in("b", "f32[2,5]")), attrs: attrs(iattr("axis", 1)), want: want("f32[2,8]")},
	{name: "Concat negative axis symbolic", opset: 17, op: "Concat", in: args(in("a", "f32[batch,3]"), in("b", "f32[batch,4]"), in("c", "f32[batch,1]")),
		attrs: attrs(iattr("axis", -1)), want: want("f32[batch,8]")},
	{name: "Concat mismatch", opset: 17, op: "Concat", in: args(in("a", "f32[2,3]"), in("b", "f32[4,5]")), attrs: attrs(iattr("axis", 1)), want: want("err:dimension 0 must be 2")},
	{name: "Concat no axis", opset: 17, op: "Concat", in: args(in("a", "f32[2,3]")), want: want("err:missing required attribute axis")},
	{name: "Split attribute (opset 11)", opset: 11, op: "Split", nout: 2, in: x4("f32[1,6,4]"), attrs: attrs(iattr("axis", 1), ints("split", 2, 4)), want: want("f32[1,2,4]", "f32[1,4,4]")},
	{name: "Split input (opset 13)", opset: 13, op: "Split", nout: 3, in: args(in("x", "f32[7,2]"), ci("split", 1, 2, 4)), want: want("f32[1,2]", "f32[2,2]", "f32[4,2]")},
	{name: "Split equal", opset: 13, op: "Split", nout: 3, in: x4("f32[2,9]"), attrs: attrs(iattr("axis", -1)), want: want("f32[2,3]", "f32[2,3]", "f32[2,3]")},
	{name: "Split num_outputs uneven (opset 18)", opset: 18, op: "Split", nout: 3, in: x4("f32[10]"), attrs: attrs(iattr("num_outputs", 3)),
		want: want("f32[4]", "f32[4]", "f32[2]"), noPy: "opset 18"},
	{name: "Split sizes do not add up", opset: 13, op: "Split", nout: 2, in: args(in("x", "f32[7]"), ci("split", 3, 3)), want: want("err:add up to 6")},
	{name: "Slice attributes (opset 9)", opset: 9, op: "Slice", in: x4("f32[20,10,5]"), attrs: attrs(ints("starts", 0, 1), ints("ends", 3, -1), ints("axes", 0, 1)), want: want("f32[3,8,5]")},
	{name: "Slice inputs with steps (opset 13)", opset: 13, op: "Slice", in: args(in("x", "f32[20,10,5]"), ci("s", -1, 0), ci("e", -1000, 9223372036854775807), ci("a", 1, 2), ci("st", -2, 2)),
		want: want("f32[20,5,3]")},
	{name: "Slice default axes", opset: 13, op: "Slice", in: args(in("x", "f32[8,8]"), ci("s", 2), ci("e", 6)), want: want("f32[4,8]")},
	{name: "Slice keeps a symbolic axis taken whole", opset: 13, op: "Slice", in: args(in("x", "f32[batch,10]"), ci("s", 0, 2), ci("e", 9223372036854775807, 4), ci("a", 0, 1)),
		want: want("f32[batch,2]")},
	{name: "Slice zero step", opset: 13, op: "Slice", in: args(in("x", "f32[8]"), ci("s", 0), ci("e", 4), ci("a", 0), ci("st", 0)), want: want("err:step on axis 0 is 0")},
	{name: "Reshape 0 and -1", opset: 13, op: "Reshape", in: args(in("x", "f32[2,3,4]"), ci("s", 0, -1)), want: want("f32[2,12]")},
	{name: "Reshape allowzero (opset 14)", opset: 14, op: "Reshape", in: args(in("x", "f32[0,3]"), ci("s", 3, 0)), attrs: attrs(iattr("allowzero", 1)), want: want("f32[3,0]")},
	{name: "Reshape attribute (opset 4)", opset: 4, op: "Reshape", in: x4("f32[2,3,4]"), attrs: attrs(ints("shape", 4, -1)), want: want("f32[4,6]"), noPy: "onnx has no inference for Reshape-1"},
	{name: "Reshape symbolic cancels", opset: 13, op: "Reshape", in: args(in("x", "f32[batch,3,4]"), ci("s", 0, -1)), want: want("f32[batch,12]")},
	{name: "Reshape element count mismatch", opset: 13, op: "Reshape", in: args(in("x", "f32[2,3]"), ci("s", 4, 2)), want: want("err:cannot reshape [2,3] (6 elements) into [4,2]")},
	{name: "Reshape two -1", opset: 13, op: "Reshape", in: args(in("x", "f32[2,3]"), ci("s", -1, -1)), want: want("err:more than one -1")},
	{name: "Flatten axis 2", opset: 13, op: "Flatten", in: x4("f32[2,3,4,5]"), attrs: attrs(iattr("axis", 2)), want: want("f32[6,20]")},
	{name: "Flatten negative axis (opset 11)", opset: 11, op: "Flatten", in: x4("f32[2,3,4,5]"), attrs: attrs(iattr("axis", -1)), want: want("f32[24,5]")},
	{name: "Flatten negative axis (opset 9)", opset: 9, op: "Flatten", in: x4("f32[2,3,4,5]"), attrs: attrs(iattr("axis", -1)), want: want("err:axis -1 is out of range"), noPy: "error case"},
	{name: "Flatten axis 0 symbolic", opset: 13, op: "Flatten", in: x4("f32[batch,3]"), attrs: attrs(iattr("axis", 0)), want: want("f32[1,?]")},
	{name: "Transpose default", opset: 17, op: "Transpose", in: x4("f32[2,3,4]"), want: want("f32[4,3,2]")},
	{name: "Transpose perm", opset: 17, op: "Transpose", in: x4("f32[N,3,H,W]"), attrs: attrs(ints("perm", 0, 2, 3, 1)), want: want("f32[N,H,W,3]")},
	{name: "Transpose bad perm", opset: 17, op: "Transpose", in: x4("f32[2,3]"), attrs: attrs(ints("perm", 0, 0)), want: want("err:repeated")},
	{name: "Squeeze attribute (opset 11)", opset: 11, op: "Squeeze", in: x4("f32[1,3,1,4]"), attrs: attrs(ints("axes", 0, -2)), want: want("f32[3,4]")},
	{name: "Squeeze input (opset 13)", opset: 13, op: "Squeeze", in: args(in("x", "f32[1,3,1,4]"), ci("axes", 2)), want: want("f32[1,3,4]")},
	{name: "Squeeze all ones", opset: 13, op: "Squeeze", in: x4("f32[1,3,1,4]"), want: want("f32[3,4]")},
	{name: "Squeeze non-1 axis", opset: 13, op: "Squeeze", in: args(in("x", "f32[1,3]"), ci("axes", 1)), want: want("err:cannot squeeze axis 1 of size 3")},
	{name: "Unsqueeze attribute (opset 11)", opset: 11, op: "Unsqueeze", in: x4("f32[3,4]"), attrs: attrs(ints("axes", 0, 3)), want: want("f32[1,3,4,1]")},
	{name: "Unsqueeze input negative (opset 13)", opset: 13, op: "Unsqueeze", in: args(in("x", "f32[3,4]"), ci("axes", -1, 1)), want: want("f32[3,1,4,1]")},
	{name: "Expand", opset: 17, op: "Expand", in: args(in("x", "f32[3,1]"), ci("s", 2, 1, 6)), want: want("f32[2,3,6]")},
	{name: "Expand does not broadcast", opset: 17, op: "Expand", in: args(in("x", "f32[3,2]"), ci("s", 4, 5)), want: want("err:does not broadcast")},
	{name: "Tile", opset: 17, op: "Tile", in: args(in("x", "f32[2,3]"), ci("r", 2, 2)), want: want("f32[4,6]")},
	{name: "Pad attribute (opset 2)", opset: 10, op: "Pad", in: x4("f32[1,3,4,4]"), attrs: attrs(ints("pads", 0, 0, 1, 2, 0, 0, 1, 2), sattr("mode", "reflect")), want: want("f32[1,3,6,8]")},
	{name: "Pad input (opset 13)", opset: 13, op: "Pad", in: args(in("x", "f32[3,4]"), ci("p", 1, 0, 2, -1), absent()), want: want("f32[6,3]")},
	{name: "Pad axes (opset 18)", opset: 18, op: "Pad", in: args(in("x", "f32[2,3,4]"), ci("p", 1, 1), absent(), ci("axes", -1)), want: want("f32[2,3,6]"), noPy: "opset 18"},
	{name: "Pad unknown mode", opset: 13, op: "Pad", in: args(in("x", "f32[3,4]"), ci("p", 1, 0, 2, 0)), attrs: attrs(sattr("mode", "mirror")), want: want(`err:unsupported mode "mirror"`)},
	{name: "Resize scales (opset 10)", opset: 10, op: "Resize", in: args(in("x", "f32[1,3,10,10]"), cf("s", 1, 1, 2, 1.5)), want: want("f32[1,3,20,15]")},
	{name: "Resize sizes (opset 11)", opset: 11, op: "Resize", in: args(in("x", "f32[1,3,10,10]"), cf("roi"), cf("scales"), ci("sizes", 1, 3, 7, 9)), want: want("f32[1,3,7,9]")},
	{name: "Resize scales, no roi (opset 13)", opset: 13, op: "Resize", in: args(in("x", "f32[N,3,10,10]"), absent(), cf("s", 1, 1, 0.5, 0.5)), attrs: attrs(sattr("mode", "linear")), want: want("f32[N,3,5,5]")},
	{name: "Resize axes and keep_aspect_ratio_policy (opset 18)", opset: 18, op: "Resize", in: args(in("x", "f32[1,3,10,20]"), absent(), absent(), ci("sizes", 5, 5)),
		attrs: attrs(ints("axes", 2, 3), sattr("keep_aspect_ratio_policy", "not_larger")), want: want("f32[1,3,3,5]"), noPy: "opset 18"},
	{name: "Resize unknown mode", opset: 13, op: "Resize", in: args(in("x", "f32[1,3,10,10]"), absent(), cf("s", 1, 1, 2, 2)), attrs: attrs(sattr("mode", "area")), want: want(`err:unsupported mode "area"`)},
	{name: "Upsample attribute (opset 7)", opset: 7, op: "Upsample", in: x4("f32[1,3,4,5]"), attrs: attrs(floats("scales", 1, 1, 2, 3)), want: want("f32[1,3,8,15]")},
	{name: "Upsample input (opset 9)", opset: 9, op: "Upsample", in: args(in("x", "f32[1,3,4,5]"), cf("s", 1, 1, 2, 2)), want: want("f32[1,3,8,10]")},
	{name: "DepthToSpace CRD", opset: 13, op: "DepthToSpace", in: x4("f32[1,8,3,4]"), attrs: attrs(iattr("blocksize", 2), sattr("mode", "CRD")), want: want("f32[1,2,6,8]")},
	{name: "SpaceToDepth", opset: 13, op: "SpaceToDepth", in: x4("f32[1,2,6,8]"), attrs: attrs(iattr("blocksize", 2)), want: want("f32[1,8,3,4]")},
	{name: "SpaceToDepth not divisible", opset: 13, op: "SpaceToDepth", in: x4("f32[1,2,5,8]"), attrs: attrs(iattr("blocksize", 2)), want: want("err:not a multiple of blocksize 2")},
	{name: "Softmax axis default (opset 11)", opset: 11, op: "Softmax", in: x4("f32[2,3,4]"), want: want("f32[2,3,4]")},
	{name: "Softmax axis (opset 13)", opset: 13, op: "Softmax", in: x4("f32[2,3,4]"), attrs: attrs(iattr("axis", 1)), want: want("f32[2,3,4]")},
	{name: "Softmax bad axis", opset: 13, op: "Softmax", in: x4("f32[2,3,4]"), attrs: attrs(iattr("axis", 3)), want: want("err:axis 3 is out of range for rank 3")},
	{name: "LogSoftmax", opset: 13, op: "LogSoftmax", in: x4("f32[2,3]"), want: want("f32[2,3]")},
	{name: "Hardmax", opset: 13, op: "Hardmax", in: x4("f32[2,3]"), attrs: attrs(iattr("axis", 0)), want: want("f32[2,3]")},

	// Reductions.
	{name: "ReduceMean axes attribute keepdims 0 (opset 13)", opset: 13, op: "ReduceMean", in: x4("f32[2,3,4]"), attrs: attrs(ints("axes", 1), iattr("keepdims", 0)), want: want("f32[2,4]")},
	{name: "ReduceMean axes input (opset 18)", opset: 18, op: "ReduceMean", in: args(in("x", "f32[2,3,4]"), ci("axes", -1)), want: want("f32[2,3,1]"), noPy: "opset 18"},
	{name: "ReduceSum axes attribute (opset 11)", opset: 11, op: "ReduceSum", in: x4("f32[2,3,4]"), attrs: attrs(ints("axes", 0, 2)), want: want("f32[1,3,1]")},
	{name: "ReduceSum axes input (opset 13)", opset: 13, op: "ReduceSum", in: args(in("x", "f32[2,3,4]"), ci("axes", 0, 2)), attrs: attrs(iattr("keepdims", 0)), want: want("f32[3]")},
	{name: "ReduceSum noop_with_empty_axes", opset: 13, op: "ReduceSum", in: x4("f32[2,3,4]"), attrs: attrs(iattr("noop_with_empty_axes", 1)), want: want("f32[2,3,4]")},
	{name: "ReduceMax all axes", opset: 13, op: "ReduceMax", in: x4("f32[2,3,4]"), want: want("f32[1,1,1]")},
	{name: "ReduceMin all axes no keepdims", opset: 13, op: "ReduceMin", in: x4("f32[2,3,4]"), attrs: attrs(iattr("keepdims", 0)), want: want("f32[]")},
	{name: "ReduceProd", opset: 13, op: "ReduceProd", in: x4("i64[2,3]"), attrs: attrs(ints("axes", 1)), want: want("i64[2,1]")},
	{name: "ReduceL2 negative axis", opset: 13, op: "ReduceL2", in: x4("f32[2,3,4]"), attrs: attrs(ints("axes", -1), iattr("keepdims", 0)), want: want("f32[2,3]")},
	{name: "ReduceL1", opset: 13, op: "ReduceL1", in: x4("f32[2,3,4]"), attrs: attrs(ints("axes", 0)), want: want("f32[1,3,4]")},
	{name: "ReduceLogSumExp", opset: 13, op: "ReduceLogSumExp", in: x4("f32[2,3]"), attrs: attrs(ints("axes", 1)), want: want("f32[2,1]")},
	{name: "ArgMax", opset: 13, op: "ArgMax", in: x4("f32[2,3,4]"), attrs: attrs(iattr("axis", 1), iattr("keepdims", 0)), want: want("i64[2,4]")},
	{name: "ArgMin default", opset: 13, op: "ArgMin", in: x4("f32[2,3,4]"), want: want("i64[1,3,4]")},
	{name: "TopK attribute (opset 9)", opset: 9, op: "TopK", nout: 2, in: x4("f32[3,10]"), attrs: attrs(iattr("k", 4)), want: want("f32[3,4]", "i64[3,4]")},
	{name: "TopK input (opset 11)", opset: 11, op: "TopK", nout: 2, in: args(in("x", "f32[3,10]"), ci("k", 2)), attrs: attrs(iattr("axis", 0)), want: want("f32[2,10]", "i64[2,10]")},
	{name: "TopK k too large", opset: 11, op: "TopK", nout: 2, in: args(in("x", "f32[3,10]"), ci("k", 11)), want: want("err:K 11 is larger than axis 1 of size 10")},

	// Gather and scatter.
	{name: "Gather axis 1", opset: 13, op: "Gather", in: args(in("x", "f32[5,6,7]"), in("i", "i64[2,3]")), attrs: attrs(iattr("axis", 1)), want: want("f32[5,2,3,7]")},
	{name: "Gather scalar index", opset: 13, op: "Gather", in: args(in("x", "f32[5,6]"), cscalar("i", 2)), want: want("f32[6]")},
	{name: "Gather index out of range", opset: 13, op: "Gather", in: args(in("x", "f32[5,6]"), cscalar("i", 5)), want: want("err:index 5 is out of range")},
	{name: "GatherElements", opset: 13, op: "GatherElements", in: args(in("x", "f32[3,4]"), in("i", "i64[3,2]")), attrs: attrs(iattr("axis", 1)), want: want("f32[3,2]")},
	{name: "GatherND", opset: 13, op: "GatherND", in: args(in("x", "f32[2,3,4]"), in("i", "i64[5,2]")), want: want("f32[5,4]")},
	{name: "GatherND batch_dims", opset: 13, op: "GatherND", in: args(in("x", "f32[2,3,4]"), in("i", "i64[2,5,1]")), attrs: attrs(iattr("batch_dims", 1)), want: want("f32[2,5,4]")},
	{name: "ScatterElements", opset: 16, op: "ScatterElements", in: args(in("x", "f32[3,4]"), in("i", "i64[1,2]"), in("u", "f32[1,2]")), attrs: attrs(sattr("reduction", "add")), want: want("f32[3,4]")},
	{name: "ScatterND", opset: 13, op: "ScatterND", in: args(in("x", "f32[4,4]"), in("i", "i64[2,1]"), in("u", "f32[2,4]")), want: want("f32[4,4]")},

	// Attributes that became inputs, used at the wrong opset.
	{name: "Squeeze axes attribute at opset 13", opset: 13, op: "Squeeze", in: x4("f32[1,3]"), attrs: attrs(ints("axes", 0)),
		want: want("err:attribute axes is not valid at opset 13: from opset 13 it is an input")},
	{name: "Unsqueeze axes input at opset 11", opset: 11, op: "Unsqueeze", in: args(in("x", "f32[3]"), ci("axes", 0)),
		want: want("err:has input 1, which Unsqueeze takes only from opset 13 (at opset 11 it is an attribute)")},
	{name: "ReduceMean axes attribute at opset 18", opset: 18, op: "ReduceMean", in: x4("f32[2,3]"), attrs: attrs(ints("axes", 0)),
		want: want("err:attribute axes is not valid at opset 18")},
	{name: "ReduceSum axes input at opset 11", opset: 11, op: "ReduceSum", in: args(in("x", "f32[2,3]"), ci("axes", 0)),
		want: want("err:which ReduceSum takes only from opset 13")},
	{name: "Slice attributes at opset 10", opset: 10, op: "Slice", in: args(in("x", "f32[4]"), ci("s", 0), ci("e", 2)), attrs: attrs(ints("starts", 0)),
		want: want("err:attribute starts is not valid at opset 10")},
	{name: "Clip min input at opset 6", opset: 6, op: "Clip", in: args(in("x", "f32[4]"), in("lo", "f32[]")), want: want("err:which Clip takes only from opset 11")},
	{name: "TopK k attribute at opset 10", opset: 10, op: "TopK", nout: 2, in: args(in("x", "f32[4]"), ci("k", 2)), attrs: attrs(iattr("k", 2)),
		want: want("err:attribute k is not valid at opset 10")},
	{name: "Pad pads attribute at opset 11", opset: 11, op: "Pad", in: args(in("x", "f32[4]"), ci("p", 1, 1)), attrs: attrs(ints("pads", 1, 1)),
		want: want("err:attribute pads is not valid at opset 11")},
	{name: "Reshape shape input at opset 4", opset: 4, op: "Reshape", in: args(in("x", "f32[4]"), ci("s", 2, 2)),
		want: want("err:which Reshape takes only from opset 5")},
	{name: "Split split attribute at opset 13", opset: 13, op: "Split", nout: 2, in: x4("f32[4]"), attrs: attrs(ints("split", 2, 2)),
		want: want("err:attribute split is not valid at opset 13")},
	{name: "Dropout ratio attribute at opset 12", opset: 12, op: "Dropout", in: x4("f32[4]"), attrs: attrs(fattr("ratio", 0.5)),
		want: want("err:attribute ratio is not valid at opset 12")},

	// Shapes and constants.
	{name: "Shape", opset: 13, op: "Shape", in: x4("f32[batch,3,4]"), want: want("i64[3]")},
	{name: "Shape start end (opset 15)", opset: 15, op: "Shape", in: x4("f32[2,3,4,5]"), attrs: attrs(iattr("start", 1), iattr("end", -1)), want: want("i64[2]")},
	{name: "Size", opset: 13, op: "Size", in: x4("f32[2,3]"), want: want("i64[]")},
	{name: "Constant tensor", opset: 13, op: "Constant", attrs: attrs(tattr("value", ir.Float32Tensor([]int64{2, 2}, 1, 2, 3, 4))), want: want("f32[2,2]")},
	{name: "Constant value_ints", opset: 13, op: "Constant", attrs: attrs(ints("value_ints", 1, 2, 3)), want: want("i64[3]")},
	{name: "Constant value_float", opset: 13, op: "Constant", attrs: attrs(fattr("value_float", 2)), want: want("f32[]")},
	{name: "Constant value_floats", opset: 13, op: "Constant", attrs: attrs(floats("value_floats", 1, 2)), want: want("f32[2]")},
	{name: "Constant value_int", opset: 13, op: "Constant", attrs: attrs(iattr("value_int", 4)), want: want("i64[]")},
	{name: "Constant value_string", opset: 13, op: "Constant", attrs: attrs(sattr("value_string", "hi")), want: want("string[]")},
	{name: "Constant value_strings", opset: 13, op: "Constant", attrs: attrs(ir.Attr{Name: "value_strings", Kind: ir.AttrStrings, Strs: [][]byte{[]byte("a"), []byte("b"), []byte("c")}}), want: want("string[3]")},
	{name: "Constant two values", opset: 13, op: "Constant", attrs: attrs(fattr("value_float", 2), iattr("value_int", 2)), want: want("err:exactly one value attribute")},
	{name: "ConstantOfShape", opset: 13, op: "ConstantOfShape", in: args(ci("s", 2, 3)), attrs: attrs(tattr("value", ir.Int64Tensor([]int64{1}, 7))), want: want("i64[2,3]")},
	{name: "ConstantOfShape default", opset: 13, op: "ConstantOfShape", in: args(ci("s", 4)), want: want("f32[4]")},
	{name: "Range", opset: 13, op: "Range", in: args(cscalar("a", 0), cscalar("b", 10), cscalar("c", 3)), want: want("i64[4]")},
	{name: "Range negative delta", opset: 13, op: "Range", in: args(cscalar("a", 10), cscalar("b", 4), cscalar("c", -2)), want: want("i64[3]")},
	{name: "OneHot", opset: 11, op: "OneHot", in: args(in("i", "i64[2,3]"), cscalar("d", 5), in("v", "f32[2]")), want: want("f32[2,3,5]")},
	{name: "OneHot axis 0", opset: 11, op: "OneHot", in: args(in("i", "i64[2,3]"), cscalar("d", 5), in("v", "f32[2]")), attrs: attrs(iattr("axis", 0)), want: want("f32[5,2,3]")},
	{name: "EyeLike dtype", opset: 13, op: "EyeLike", in: x4("f32[3,4]"), attrs: attrs(iattr("dtype", 7)), want: want("i64[3,4]")},
	{name: "Dropout (opset 12)", opset: 12, op: "Dropout", nout: 2, in: args(in("x", "f32[2,3]"), absent(), absent()), want: want("f32[2,3]", "bool[2,3]")},
	{name: "Dropout mask type (opset 7)", opset: 7, op: "Dropout", nout: 2, in: x4("f32[2,3]"), attrs: attrs(fattr("ratio", 0.3)), want: want("f32[2,3]", "f32[2,3]")},
	{name: "NonZero", opset: 13, op: "NonZero", in: x4("f32[2,3]"), want: want("i64[2,dd:NonZero_1:1]")},
	{name: "Compress flattened", opset: 13, op: "Compress", in: args(in("x", "f32[3,4]"), in("c", "bool[5]")), want: want("f32[dd:Compress_1:n]")},
	{name: "Unique", opset: 13, op: "Unique", nout: 4, in: x4("f32[2,3]"),
		want: want("f32[dd:Unique_1:n]", "i64[dd:Unique_1:n]", "i64[6]", "i64[dd:Unique_1:n]")},
	{name: "Unique axis", opset: 13, op: "Unique", nout: 4, in: x4("f32[2,3]"), attrs: attrs(iattr("axis", 1), iattr("sorted", 0)),
		want: want("f32[2,dd:Unique_1:n]", "i64[dd:Unique_1:n]", "i64[3]", "i64[dd:Unique_1:n]")},
	{name: "Compress axis", opset: 13, op: "Compress", in: args(in("x", "f32[3,4]"), in("c", "bool[3]")), attrs: attrs(iattr("axis", 0)), want: want("f32[dd:Compress_1:n,4]")},

	// Quantisation.
	{name: "QuantizeLinear default uint8", opset: 13, op: "QuantizeLinear", in: args(in("x", "f32[2,3]"), in("s", "f32[]")), want: want("u8[2,3]")},
	{name: "QuantizeLinear int8 zero point", opset: 13, op: "QuantizeLinear", in: args(in("x", "f32[2,3]"), in("s", "f32[3]"), in("z", "i8[3]")), attrs: attrs(iattr("axis", 1)), want: want("i8[2,3]")},
	{name: "DequantizeLinear (opset 13)", opset: 13, op: "DequantizeLinear", in: args(in("x", "u8[2,3]"), in("s", "f32[]"), in("z", "u8[]")), want: want("f32[2,3]")},
	{name: "DequantizeLinear scale type (opset 19)", opset: 19, op: "DequantizeLinear", in: args(in("x", "i8[2,3]"), in("s", "f16[]")), want: want("f16[2,3]"), noPy: "opset 19"},
	{name: "DynamicQuantizeLinear", opset: 13, op: "DynamicQuantizeLinear", nout: 3, in: x4("f32[2,3]"), want: want("u8[2,3]", "f32[]", "u8[]")},

	// Recurrent networks.
	{name: "LSTM", opset: 13, op: "LSTM", nout: 3, in: args(in("x", "f32[5,2,10]"), in("w", "f32[1,80,10]"), in("r", "f32[1,80,20]")),
		attrs: attrs(iattr("hidden_size", 20)), want: want("f32[5,1,2,20]", "f32[1,2,20]", "f32[1,2,20]")},
	{name: "LSTM bidirectional without hidden_size", opset: 13, op: "LSTM", nout: 3, in: args(in("x", "f32[seq,4,10]"), in("w", "f32[2,32,10]"), in("r", "f32[2,32,8]")),
		attrs: attrs(sattr("direction", "bidirectional")), want: want("f32[seq,2,4,8]", "f32[2,4,8]", "f32[2,4,8]")},
	{name: "LSTM layout 1 (opset 14)", opset: 14, op: "LSTM", nout: 3, in: args(in("x", "f32[4,5,10]"), in("w", "f32[1,80,10]"), in("r", "f32[1,80,20]")),
		attrs: attrs(iattr("hidden_size", 20), iattr("layout", 1)), want: want("f32[4,5,1,20]", "f32[4,1,20]", "f32[4,1,20]")},
	{name: "GRU", opset: 13, op: "GRU", nout: 2, in: args(in("x", "f32[5,2,10]"), in("w", "f32[1,48,10]"), in("r", "f32[1,48,16]")),
		attrs: attrs(iattr("hidden_size", 16), iattr("linear_before_reset", 1)), want: want("f32[5,1,2,16]", "f32[1,2,16]")},
	{name: "RNN reverse", opset: 13, op: "RNN", nout: 2, in: args(in("x", "f32[5,2,10]"), in("w", "f32[1,16,10]"), in("r", "f32[1,16,16]")),
		attrs: attrs(iattr("hidden_size", 16), sattr("direction", "reverse")), want: want("f32[5,1,2,16]", "f32[1,2,16]")},
	{name: "LSTM bad direction", opset: 13, op: "LSTM", nout: 3, in: args(in("x", "f32[5,2,10]"), in("w", "f32[1,80,10]"), in("r", "f32[1,80,20]")),
		attrs: attrs(sattr("direction", "sideways")), want: want(`err:unsupported direction "sideways"`)},

	// Less common ops from the op table.
	{name: "ReverseSequence", opset: 13, op: "ReverseSequence", in: args(in("x", "f32[4,3]"), in("l", "i64[3]")), attrs: attrs(iattr("batch_axis", 1), iattr("time_axis", 0)), want: want("f32[4,3]")},
	{name: "MeanVarianceNormalization", opset: 13, op: "MeanVarianceNormalization", in: x4("f32[2,3,4,4]"), want: want("f32[2,3,4,4]")},
	{name: "Det", opset: 13, op: "Det", in: x4("f32[2,3,3]"), want: want("f32[2]")},
	{name: "RoiAlign", opset: 16, op: "RoiAlign", in: args(in("x", "f32[1,8,16,16]"), in("r", "f32[5,4]"), in("b", "i64[5]")),
		attrs: attrs(iattr("output_height", 7), iattr("output_width", 6)), want: want("f32[5,8,7,6]")},
	{name: "GridSample", opset: 16, op: "GridSample", in: args(in("x", "f32[2,3,8,8]"), in("g", "f32[2,5,6,2]")), want: want("f32[2,3,5,6]")},
	{name: "MaxUnpool", opset: 11, op: "MaxUnpool", in: args(in("x", "f32[1,1,2,2]"), in("i", "i64[1,1,2,2]")), attrs: attrs(ints("kernel_shape", 2, 2), ints("strides", 2, 2)), want: want("f32[1,1,4,4]")},
	{name: "RandomNormal", opset: 13, op: "RandomNormal", attrs: attrs(ints("shape", 2, 3), iattr("dtype", 11)), want: want("f64[2,3]")},
	{name: "RandomUniformLike", opset: 13, op: "RandomUniformLike", in: x4("f32[2,3]"), want: want("f32[2,3]")},
	{name: "Bernoulli", opset: 15, op: "Bernoulli", in: x4("f32[2,3]"), attrs: attrs(iattr("dtype", 9)), want: want("bool[2,3]")},
	{name: "Multinomial", opset: 13, op: "Multinomial", in: x4("f32[4,10]"), attrs: attrs(iattr("sample_size", 3)), want: want("i32[4,3]")},
}

// buildCase makes the one-node graph of an op case.
func buildCase(t testing.TB, tc opCase) (*ir.Graph, *ir.Node) {
	b := newBuilder(t, tc.opset)
	var ins []*ir.Value
	for _, a := range tc.in {
		switch {
		case a.absent:
			ins = append(ins, nil)
		case a.isConst && a.floats != nil || a.isConst && strings.HasPrefix(a.typ, "f32"):
			tt := parseType(t, a.typ)
			dims, _ := tt.Dims()
			ins = append(ins, b.f32(a.name, dims, a.floats...))
		case a.isConst:
			tt := parseType(t, a.typ)
			dims, _ := tt.Dims()
			ins = append(ins, b.i64(a.name, dims, a.ints...))
		default:
			ins = append(ins, b.input(a.name, a.typ))
		}
	}
	nout := max(tc.nout, 1)
	n := b.node(tc.op, ins, nout, tc.attrs...)
	n.Name = tc.op + "_1"
	for _, o := range n.Outputs {
		b.g.AddOutput(o)
	}
	return b.g, n
}

func TestOps(t *testing.T) {
	for _, tc := range opCases {
		t.Run(tc.name, func(t *testing.T) {
			g, n := buildCase(t, tc)
			err := Infer(g, Options{File: "model.onnx"})
			if len(tc.want) == 1 && strings.HasPrefix(tc.want[0], "err:") {
				msg := strings.TrimPrefix(tc.want[0], "err:")
				if err == nil || !strings.Contains(err.Error(), msg) {
					t.Fatalf("Infer = %v, want an error containing %q", err, msg)
				}
				if !strings.HasPrefix(err.Error(), fmt.Sprintf("model.onnx: node %q (%s): ", n.Name, tc.op)) {
					t.Errorf("error %q is not positioned at the node", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Infer: %v", err)
			}
			got := typeStrings(n.Outputs)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("outputs = %v, want %v", got, tc.want)
			}
		})
	}
}
