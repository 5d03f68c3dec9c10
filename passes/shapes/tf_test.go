package shapes

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// TensorFlow op cases. Integer constants are int32, as TensorFlow writes
// shapes, axes and paddings; type attributes are DataType names.

func c32(name string, vals ...int64) arg {
	return arg{name: name, typ: fmt.Sprintf("i32[%d]", len(vals)), ints: vals, isConst: true}
}

func c32s(name string, v int64) arg {
	return arg{name: name, typ: "i32[]", ints: []int64{v}, isConst: true}
}

// c32m is an int32 constant of the given shape.
func c32m(name string, shape string, vals ...int64) arg {
	return arg{name: name, typ: "i32[" + shape + "]", ints: vals, isConst: true}
}

func dtAttr(name, dt string) ir.Attr { return ir.StringAttr(name, dt) }
func battr(name string, b bool) ir.Attr {
	if b {
		return ir.IntAttr(name, 1)
	}
	return ir.IntAttr(name, 0)
}
func strsAttr(name string, v ...string) ir.Attr {
	a := ir.Attr{Name: name, Kind: ir.AttrStrings}
	for _, s := range v {
		a.Strs = append(a.Strs, []byte(s))
	}
	return a
}
func nhwc(pad string, strides ...int64) []ir.Attr {
	return attrs(sattr("padding", pad), ints("strides", strides...))
}

func int32Tensor(shape []int64, vals ...int64) *ir.Tensor {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(v)))
	}
	return &ir.Tensor{DType: ir.Int32, Shape: shape, Raw: raw}
}

type tfCase struct {
	name  string
	op    string
	in    []arg
	attrs []ir.Attr
	nout  int
	want  []string // output types, or "err:text"
}

var tfCases = []tfCase{
	// Elementwise.
	{name: "AddV2 broadcast", op: "AddV2", in: args(in("x", "f32[2,1,3]"), in("y", "f32[4,1]")), want: want("f32[2,4,3]")},
	{name: "Equal gives bool", op: "Equal", in: args(in("x", "i32[3]"), in("y", "i32[]")), want: want("bool[3]")},
	{name: "Sub shapes do not broadcast", op: "Sub", in: args(in("x", "f32[2,3]"), in("y", "f32[4]")), want: want("err:do not broadcast")},
	{name: "Mul int32 and int64 by T", op: "Mul", in: args(in("x", "i32[2]"), in("y", "i64[2]")), attrs: attrs(dtAttr("T", "DT_INT64")), want: want("i64[2]")},
	{name: "Add float and int", op: "Add", in: args(in("x", "f32[2]"), in("y", "i32[2]")), want: want("err:has element type")},
	{name: "SquaredDifference", op: "SquaredDifference", in: args(in("x", "f32[1,48,48,17]"), in("y", "f32[1,1,1,17]")), want: want("f32[1,48,48,17]")},
	{name: "Relu6", op: "Relu6", in: x4("f32[1,8,8,3]"), want: want("f32[1,8,8,3]")},
	{name: "Sigmoid", op: "Sigmoid", in: x4("f32[2]"), want: want("f32[2]")},
	{name: "LogicalNot", op: "LogicalNot", in: x4("bool[2,2]"), want: want("bool[2,2]")},
	{name: "IsNan", op: "IsNan", in: x4("f32[3]"), want: want("bool[3]")},
	{name: "AddN", op: "AddN", in: args(in("a", "f32[2,3]"), in("b", "f32[2,3]"), in("c", "f32[2,3]")), want: want("f32[2,3]")},
	{name: "AddN shapes differ", op: "AddN", in: args(in("a", "f32[2,3]"), in("b", "f32[3]")), want: want("err:AddN needs equal shapes")},
	{name: "BiasAdd NHWC", op: "BiasAdd", in: args(in("x", "f32[1,4,4,8]"), in("b", "f32[8]")), want: want("f32[1,4,4,8]")},
	{name: "BiasAdd NCHW", op: "BiasAdd", in: args(in("x", "f32[1,8,4,5]"), in("b", "f32[8]")), attrs: attrs(sattr("data_format", "NCHW")), want: want("f32[1,8,4,5]")},
	{name: "BiasAdd wrong size", op: "BiasAdd", in: args(in("x", "f32[1,4,4,8]"), in("b", "f32[4]")), want: want("err:bias has shape [4]")},
	{name: "Prelu", op: "Prelu", in: args(in("x", "f32[1,4,4,8]"), in("a", "f32[8]")), want: want("f32[1,4,4,8]")},
	{name: "ClipByValue", op: "ClipByValue", in: args(in("x", "f32[2,3]"), in("lo", "f32[]"), in("hi", "f32[]")), want: want("f32[2,3]")},
	{name: "Select vector condition", op: "Select", in: args(in("c", "bool[2]"), in("t", "f32[2,3]"), in("e", "f32[2,3]")), want: want("f32[2,3]")},
	{name: "Select bad condition", op: "Select", in: args(in("c", "bool[3]"), in("t", "f32[2,3]"), in("e", "f32[2,3]")), want: want("err:vector condition")},
	{name: "SelectV2 broadcast", op: "SelectV2", in: args(in("c", "bool[3]"), in("t", "f32[2,1]"), in("e", "f32[]")), want: want("f32[2,3]")},
	{name: "Cast DstT", op: "Cast", in: x4("f32[2,3]"), attrs: attrs(dtAttr("SrcT", "DT_FLOAT"), dtAttr("DstT", "DT_INT64")), want: want("i64[2,3]")},
	{name: "Cast without DstT", op: "Cast", in: x4("f32[2]"), want: want("err:missing required attribute DstT")},
	{name: "Softmax", op: "Softmax", in: x4("f32[2,10]"), want: want("f32[2,10]")},
	{name: "Softmax scalar", op: "Softmax", in: x4("f32[]"), want: want("err:rank at least 1")},
	{name: "ZerosLike", op: "ZerosLike", in: x4("i32[3]"), want: want("i32[3]")},
	{name: "IdentityN", op: "IdentityN", nout: 2, in: args(in("a", "f32[2]"), in("b", "i32[]")), want: want("f32[2]", "i32[]")},
	{name: "EnsureShape refines", op: "EnsureShape", in: x4("f32[?,3]"), attrs: attrs(ints("shape", 4, -1)), want: want("f32[4,3]")},
	{name: "EnsureShape conflict", op: "EnsureShape", in: x4("f32[2,3]"), attrs: attrs(ints("shape", 4, 3)), want: want("err:the shape attribute says")},

	// Convolutions.
	{name: "Conv2D SAME stride 2", op: "Conv2D", in: args(in("x", "f32[1,15,15,3]"), in("w", "f32[3,3,3,8]")),
		attrs: nhwc("SAME", 1, 2, 2, 1), want: want("f32[1,8,8,8]")},
	{name: "Conv2D VALID", op: "Conv2D", in: args(in("x", "f32[1,10,12,3]"), in("w", "f32[3,5,3,4]")),
		attrs: nhwc("VALID", 1, 1, 1, 1), want: want("f32[1,8,8,4]")},
	{name: "Conv2D NCHW dilations", op: "Conv2D", in: args(in("x", "f32[2,3,17,17]"), in("w", "f32[3,3,3,6]")),
		attrs: attrs(sattr("padding", "VALID"), sattr("data_format", "NCHW"), ints("strides", 1, 1, 2, 2), ints("dilations", 1, 1, 2, 2)), want: want("f32[2,6,7,7]")},
	{name: "Conv2D EXPLICIT", op: "Conv2D", in: args(in("x", "f32[1,10,10,3]"), in("w", "f32[3,3,3,4]")),
		attrs: attrs(sattr("padding", "EXPLICIT"), ints("strides", 1, 1, 1, 1), ints("explicit_paddings", 0, 0, 1, 2, 0, 1, 0, 0)), want: want("f32[1,11,9,4]")},
	{name: "Conv2D EXPLICIT NCHW", op: "Conv2D", in: args(in("x", "f32[1,3,10,10]"), in("w", "f32[3,3,3,4]")),
		attrs: attrs(sattr("padding", "EXPLICIT"), sattr("data_format", "NCHW"), ints("strides", 1, 1, 2, 2), ints("explicit_paddings", 0, 0, 0, 0, 1, 1, 1, 1)), want: want("f32[1,4,5,5]")},
	{name: "Conv2D EXPLICIT without paddings", op: "Conv2D", in: args(in("x", "f32[1,10,10,3]"), in("w", "f32[3,3,3,4]")),
		attrs: attrs(sattr("padding", "EXPLICIT"), ints("strides", 1, 1, 1, 1)), want: want("err:explicit_paddings")},
	{name: "Conv2D symbolic batch", op: "Conv2D", in: args(in("x", "f32[N,H,W,3]"), in("w", "f32[3,3,3,8]")),
		attrs: nhwc("SAME", 1, 1, 1, 1), want: want("f32[N,H,W,8]")},
	{name: "Conv2D groups", op: "Conv2D", in: args(in("x", "f32[1,8,8,4]"), in("w", "f32[3,3,2,6]")), attrs: nhwc("VALID", 1, 1, 1, 1), want: want("f32[1,6,6,6]")},
	{name: "Conv2D channels", op: "Conv2D", in: args(in("x", "f32[1,8,8,5]"), in("w", "f32[3,3,2,6]")), attrs: nhwc("VALID", 1, 1, 1, 1), want: want("err:multiple of the filter's")},
	{name: "Conv2D stride on channels", op: "Conv2D", in: args(in("x", "f32[1,8,8,3]"), in("w", "f32[3,3,3,6]")), attrs: nhwc("VALID", 1, 1, 1, 2), want: want("err:the batch and channel entries must be 1")},
	{name: "Conv2D bad padding", op: "Conv2D", in: args(in("x", "f32[1,8,8,3]"), in("w", "f32[3,3,3,6]")), attrs: nhwc("FULL", 1, 1, 1, 1), want: want(`err:padding "FULL" is not supported`)},
	{name: "Conv2D bad data_format", op: "Conv2D", in: args(in("x", "f32[1,8,8,3]"), in("w", "f32[3,3,3,6]")),
		attrs: attrs(sattr("padding", "SAME"), sattr("data_format", "HWCN")), want: want(`err:data_format "HWCN"`)},
	{name: "Conv2D kernel larger than input", op: "Conv2D", in: args(in("x", "f32[1,2,2,3]"), in("w", "f32[3,3,3,6]")), attrs: nhwc("VALID", 1, 1, 1, 1), want: want("err:smaller than the kernel extent")},
	{name: "_FusedConv2D BiasAdd Relu", op: "_FusedConv2D", in: args(in("x", "f32[1,16,16,3]"), in("w", "f32[3,3,3,8]"), in("b", "f32[8]")),
		attrs: append(nhwc("SAME", 1, 2, 2, 1), strsAttr("fused_ops", "BiasAdd", "Relu"), iattr("num_args", 1)), want: want("f32[1,8,8,8]")},
	{name: "_FusedConv2D bias size", op: "_FusedConv2D", in: args(in("x", "f32[1,16,16,3]"), in("w", "f32[3,3,3,8]"), in("b", "f32[7]")),
		attrs: append(nhwc("SAME", 1, 1, 1, 1), strsAttr("fused_ops", "BiasAdd"), iattr("num_args", 1)), want: want("err:want [8] (the output channels)")},
	{name: "_FusedConv2D num_args", op: "_FusedConv2D", in: args(in("x", "f32[1,16,16,3]"), in("w", "f32[3,3,3,8]"), in("b", "f32[8]")),
		attrs: append(nhwc("SAME", 1, 1, 1, 1), strsAttr("fused_ops", "BiasAdd"), iattr("num_args", 2)), want: want("err:num_args is 2")},
	{name: "_FusedConv2D BiasAdd Add", op: "_FusedConv2D", in: args(in("x", "f32[1,8,8,3]"), in("w", "f32[1,1,3,8]"), in("b", "f32[8]"), in("s", "f32[1,8,8,8]")),
		attrs: append(nhwc("VALID", 1, 1, 1, 1), strsAttr("fused_ops", "BiasAdd", "Add"), iattr("num_args", 2)), want: want("f32[1,8,8,8]")},
	{name: "_FusedConv2D FusedBatchNorm", op: "_FusedConv2D",
		in:    args(in("x", "f32[1,8,8,3]"), in("w", "f32[1,1,3,8]"), in("s", "f32[8]"), in("o", "f32[8]"), in("m", "f32[8]"), in("v", "f32[8]")),
		attrs: append(nhwc("VALID", 1, 1, 1, 1), strsAttr("fused_ops", "FusedBatchNorm", "Relu"), iattr("num_args", 4)), want: want("f32[1,8,8,8]")},
	{name: "_FusedConv2D unknown fusion", op: "_FusedConv2D", in: args(in("x", "f32[1,8,8,3]"), in("w", "f32[1,1,3,8]"), in("b", "f32[8]")),
		attrs: append(nhwc("VALID", 1, 1, 1, 1), strsAttr("fused_ops", "Softmax"), iattr("num_args", 1)), want: want("err:is not a fusion TensorFlow runs")},
	{name: "Conv3D", op: "Conv3D", in: args(in("x", "f32[1,8,8,8,2]"), in("w", "f32[3,3,3,2,4]")), attrs: nhwc("VALID", 1, 1, 1, 1, 1), want: want("f32[1,6,6,6,4]")},
	{name: "Conv3D NCDHW SAME", op: "Conv3D", in: args(in("x", "f32[1,2,9,9,9]"), in("w", "f32[3,3,3,2,4]")),
		attrs: attrs(sattr("padding", "SAME"), sattr("data_format", "NCDHW"), ints("strides", 1, 1, 2, 2, 2)), want: want("f32[1,4,5,5,5]")},
	{name: "DepthwiseConv2dNative multiplier", op: "DepthwiseConv2dNative", in: args(in("x", "f32[1,16,16,8]"), in("w", "f32[3,3,8,2]")),
		attrs: nhwc("SAME", 1, 2, 2, 1), want: want("f32[1,8,8,16]")},
	{name: "DepthwiseConv2dNative NCHW", op: "DepthwiseConv2dNative", in: args(in("x", "f32[1,8,16,16]"), in("w", "f32[3,3,8,2]")),
		attrs: attrs(sattr("padding", "VALID"), sattr("data_format", "NCHW"), ints("strides", 1, 1, 1, 1), ints("dilations", 1, 1, 2, 2)), want: want("f32[1,16,12,12]")},
	{name: "DepthwiseConv2dNative channels", op: "DepthwiseConv2dNative", in: args(in("x", "f32[1,16,16,4]"), in("w", "f32[3,3,8,2]")),
		attrs: nhwc("SAME", 1, 1, 1, 1), want: want("err:the depthwise filter 8")},
	{name: "FusedDepthwiseConv2dNative", op: "FusedDepthwiseConv2dNative", in: args(in("x", "f32[1,16,16,8]"), in("w", "f32[3,3,8,1]"), in("b", "f32[8]")),
		attrs: append(nhwc("SAME", 1, 1, 1, 1), strsAttr("fused_ops", "BiasAdd", "Relu6"), iattr("num_args", 1)), want: want("f32[1,16,16,8]")},
	{name: "Conv2DBackpropInput", op: "Conv2DBackpropInput", in: args(c32("s", 1, 16, 16, 8), in("w", "f32[3,3,8,4]"), in("g", "f32[1,8,8,4]")),
		attrs: nhwc("SAME", 1, 2, 2, 1), want: want("f32[1,16,16,8]")},
	{name: "Conv2DBackpropInput VALID", op: "Conv2DBackpropInput", in: args(c32("s", 1, 17, 17, 8), in("w", "f32[3,3,8,4]"), in("g", "f32[1,8,8,4]")),
		attrs: nhwc("VALID", 1, 2, 2, 1), want: want("f32[1,17,17,8]")},
	{name: "Conv2DBackpropInput sizes disagree", op: "Conv2DBackpropInput", in: args(c32("s", 1, 16, 16, 8), in("w", "f32[3,3,8,4]"), in("g", "f32[1,7,7,4]")),
		attrs: nhwc("SAME", 1, 2, 2, 1), want: want("err:convolves to spatial sizes")},
	{name: "Conv2DBackpropInput unknown sizes", op: "Conv2DBackpropInput", in: args(in("s", "i32[4]"), in("w", "f32[3,3,8,4]"), in("g", "f32[1,8,8,4]")),
		attrs: nhwc("SAME", 1, 2, 2, 1), want: want("f32[1,?,?,8]")},
	{name: "Conv2DBackpropFilter", op: "Conv2DBackpropFilter", in: args(in("x", "f32[1,16,16,8]"), c32("s", 3, 3, 8, 4), in("g", "f32[1,8,8,4]")),
		attrs: nhwc("SAME", 1, 2, 2, 1), want: want("f32[3,3,8,4]")},
	{name: "Dilation2D", op: "Dilation2D", in: args(in("x", "f32[1,10,10,3]"), in("w", "f32[3,3,3]")),
		attrs: attrs(sattr("padding", "VALID"), ints("strides", 1, 1, 1, 1), ints("rates", 1, 2, 2, 1)), want: want("f32[1,6,6,3]")},

	// Pools.
	{name: "MaxPool SAME", op: "MaxPool", in: x4("f32[1,15,15,8]"), attrs: append(nhwc("SAME", 1, 2, 2, 1), ints("ksize", 1, 3, 3, 1)), want: want("f32[1,8,8,8]")},
	{name: "MaxPool VALID", op: "MaxPool", in: x4("f32[1,15,15,8]"), attrs: append(nhwc("VALID", 1, 2, 2, 1), ints("ksize", 1, 3, 3, 1)), want: want("f32[1,7,7,8]")},
	{name: "MaxPool NCHW", op: "MaxPool", in: x4("f32[1,8,15,15]"),
		attrs: attrs(sattr("padding", "VALID"), sattr("data_format", "NCHW"), ints("strides", 1, 1, 2, 2), ints("ksize", 1, 1, 3, 3)), want: want("f32[1,8,7,7]")},
	{name: "MaxPool EXPLICIT", op: "MaxPool", in: x4("f32[1,6,6,2]"),
		attrs: attrs(sattr("padding", "EXPLICIT"), ints("strides", 1, 2, 2, 1), ints("ksize", 1, 3, 3, 1), ints("explicit_paddings", 0, 0, 1, 1, 1, 1, 0, 0)), want: want("f32[1,3,3,2]")},
	{name: "MaxPool ksize on channels", op: "MaxPool", in: x4("f32[1,8,8,8]"), attrs: append(nhwc("VALID", 1, 1, 1, 1), ints("ksize", 1, 2, 2, 2)), want: want("err:ksize")},
	{name: "MaxPool without ksize", op: "MaxPool", in: x4("f32[1,8,8,8]"), attrs: nhwc("VALID", 1, 1, 1, 1), want: want("err:missing required attribute ksize")},
	{name: "AvgPool global", op: "AvgPool", in: x4("f32[1,36,64,16]"), attrs: append(nhwc("VALID", 1, 36, 64, 1), ints("ksize", 1, 36, 64, 1)), want: want("f32[1,1,1,16]")},
	{name: "MaxPool3D", op: "MaxPool3D", in: x4("f32[1,8,8,8,2]"), attrs: append(nhwc("VALID", 1, 2, 2, 2, 1), ints("ksize", 1, 2, 2, 2, 1)), want: want("f32[1,4,4,4,2]")},
	{name: "MaxPoolWithArgmax", op: "MaxPoolWithArgmax", nout: 2, in: x4("f32[1,8,8,2]"), attrs: append(nhwc("VALID", 1, 2, 2, 1), ints("ksize", 1, 2, 2, 1)),
		want: want("f32[1,4,4,2]", "i64[1,4,4,2]")},
	{name: "MaxPoolV2", op: "MaxPoolV2", in: args(in("x", "f32[1,8,8,2]"), c32("k", 1, 2, 2, 1), c32("s", 1, 2, 2, 1)), attrs: attrs(sattr("padding", "VALID")), want: want("f32[1,4,4,2]")},

	// Matrix products and normalisation.
	{name: "MatMul transpose_b", op: "MatMul", in: args(in("a", "f32[2,3]"), in("b", "f32[4,3]")), attrs: attrs(battr("transpose_b", true)), want: want("f32[2,4]")},
	{name: "MatMul transpose_a", op: "MatMul", in: args(in("a", "f32[3,2]"), in("b", "f32[3,4]")), attrs: attrs(battr("transpose_a", true)), want: want("f32[2,4]")},
	{name: "MatMul inner mismatch", op: "MatMul", in: args(in("a", "f32[2,3]"), in("b", "f32[4,3]")), want: want("err:inner dimensions differ")},
	{name: "MatMul rank", op: "MatMul", in: args(in("a", "f32[1,2,3]"), in("b", "f32[3,3]")), want: want("err:must be matrices")},
	{name: "_FusedMatMul", op: "_FusedMatMul", in: args(in("a", "f32[1,672]"), in("b", "f32[672,63]"), in("c", "f32[63]")),
		attrs: attrs(strsAttr("fused_ops", "BiasAdd"), iattr("num_args", 1)), want: want("f32[1,63]")},
	{name: "BatchMatMulV2 broadcast", op: "BatchMatMulV2", in: args(in("x", "f32[2,1,3,4]"), in("y", "f32[5,4,6]")), want: want("f32[2,5,3,6]")},
	{name: "BatchMatMulV2 adj", op: "BatchMatMulV2", in: args(in("x", "f32[2,4,3]"), in("y", "f32[2,6,4]")), attrs: attrs(battr("adj_x", true), battr("adj_y", true)), want: want("f32[2,3,6]")},
	{name: "BatchMatMul ranks", op: "BatchMatMul", in: args(in("x", "f32[2,1,3,4]"), in("y", "f32[5,4,6]")), want: want("err:the same rank")},
	{name: "BatchMatMulV3 Tout", op: "BatchMatMulV3", in: args(in("x", "i8[2,3,4]"), in("y", "i8[2,4,5]")), attrs: attrs(dtAttr("Tout", "DT_INT32")), want: want("i32[2,3,5]")},
	{name: "Einsum", op: "Einsum", in: args(in("a", "f32[2,3]"), in("b", "f32[3,5]")), attrs: attrs(sattr("equation", "ij,jk->ik")), want: want("f32[2,5]")},
	{name: "FusedBatchNormV3", op: "FusedBatchNormV3", nout: 6,
		in:   args(in("x", "f32[1,4,4,8]"), in("s", "f32[8]"), in("o", "f32[8]"), in("m", "f32[8]"), in("v", "f32[8]")),
		want: want("f32[1,4,4,8]", "f32[8]", "f32[8]", "f32[8]", "f32[8]", "f32[0]")},
	{name: "FusedBatchNorm NCHW", op: "FusedBatchNorm", nout: 5,
		in:    args(in("x", "f16[1,8,4,4]"), in("s", "f32[8]"), in("o", "f32[8]"), in("m", "f32[0]"), in("v", "f32[0]")),
		attrs: attrs(sattr("data_format", "NCHW")), want: want("f16[1,8,4,4]", "f32[8]", "f32[8]", "f32[8]", "f32[8]")},
	{name: "FusedBatchNorm channels", op: "FusedBatchNorm", nout: 5,
		in: args(in("x", "f32[1,4,4,8]"), in("s", "f32[4]"), in("o", "f32[8]"), in("m", "f32[8]"), in("v", "f32[8]")), want: want("err:want [8] (the channels)")},
	{name: "LRN", op: "LRN", in: x4("f32[1,4,4,8]"), want: want("f32[1,4,4,8]")},

	// Images.
	{name: "ResizeBilinear", op: "ResizeBilinear", in: args(in("x", "f32[1,36,64,3]"), c32("s", 72, 128)),
		attrs: attrs(battr("align_corners", false), battr("half_pixel_centers", true)), want: want("f32[1,72,128,3]")},
	{name: "ResizeBilinear of ints gives float32", op: "ResizeBilinear", in: args(in("x", "i32[1,4,4,3]"), c32("s", 8, 8)), want: want("f32[1,8,8,3]")},
	{name: "ResizeNearestNeighbor keeps the type", op: "ResizeNearestNeighbor", in: args(in("x", "i32[2,4,4,3]"), c32("s", 8, 6)),
		attrs: attrs(battr("align_corners", true)), want: want("i32[2,8,6,3]")},
	{name: "ResizeBilinear both alignments", op: "ResizeBilinear", in: args(in("x", "f32[1,4,4,3]"), c32("s", 8, 8)),
		attrs: attrs(battr("align_corners", true), battr("half_pixel_centers", true)), want: want("err:cannot both be true")},
	{name: "ResizeBilinear size length", op: "ResizeBilinear", in: args(in("x", "f32[1,4,4,3]"), c32("s", 8, 8, 8)), want: want("err:size has 3 elements")},
	{name: "ResizeBilinear unknown size", op: "ResizeBilinear", in: args(in("x", "f32[1,4,4,3]"), in("s", "i32[2]")), want: want("f32[1,?,?,3]")},
	{name: "CropAndResize", op: "CropAndResize", in: args(in("x", "f32[2,32,32,3]"), in("b", "f32[5,4]"), in("i", "i32[5]"), c32("s", 7, 9)), want: want("f32[5,7,9,3]")},
	{name: "DepthToSpace NHWC", op: "DepthToSpace", in: x4("f32[1,4,4,8]"), attrs: attrs(iattr("block_size", 2)), want: want("f32[1,8,8,2]")},
	{name: "DepthToSpace NCHW", op: "DepthToSpace", in: x4("f32[1,8,4,4]"), attrs: attrs(iattr("block_size", 2), sattr("data_format", "NCHW")), want: want("f32[1,2,8,8]")},
	{name: "SpaceToDepth", op: "SpaceToDepth", in: x4("f32[1,4,6,3]"), attrs: attrs(iattr("block_size", 2)), want: want("f32[1,2,3,12]")},
	{name: "SpaceToDepth indivisible", op: "SpaceToDepth", in: x4("f32[1,5,6,3]"), attrs: attrs(iattr("block_size", 2)), want: want("err:not divisible")},
	{name: "SpaceToBatchND", op: "SpaceToBatchND", in: args(in("x", "f32[1,4,4,3]"), c32("b", 2, 2), c32m("p", "2,2", 0, 0, 1, 1)), want: want("f32[4,2,3,3]")},
	{name: "BatchToSpaceND", op: "BatchToSpaceND", in: args(in("x", "f32[4,2,3,3]"), c32("b", 2, 2), c32m("c", "2,2", 0, 0, 1, 1)), want: want("f32[1,4,4,3]")},

	// Reductions.
	{name: "Mean", op: "Mean", in: args(in("x", "f32[1,7,7,32]"), c32("a", 1, 2)), want: want("f32[1,32]")},
	{name: "Mean keep_dims", op: "Mean", in: args(in("x", "f32[1,7,7,32]"), c32("a", 1, 2)), attrs: attrs(battr("keep_dims", true)), want: want("f32[1,1,1,32]")},
	{name: "Sum negative scalar index", op: "Sum", in: args(in("x", "f32[2,3,4]"), c32s("a", -1)), want: want("f32[2,3]")},
	{name: "Max no indices", op: "Max", in: args(in("x", "f32[2,3]"), c32("a")), want: want("f32[2,3]")},
	{name: "Sum index out of range", op: "Sum", in: args(in("x", "f32[2,3]"), c32("a", 2)), want: want("err:reduction index 2 is out of range")},
	{name: "Any", op: "Any", in: args(in("x", "bool[2,3]"), c32("a", 0)), want: want("bool[3]")},
	{name: "Mean unknown indices keep_dims", op: "Mean", in: args(in("x", "f32[2,3]"), in("a", "i32[1]")), attrs: attrs(battr("keep_dims", true)), want: want("f32[?,?]")},
	{name: "ArgMax", op: "ArgMax", in: args(in("x", "f32[1,48,48,17]"), c32s("d", 3)), want: want("i64[1,48,48]")},
	{name: "ArgMax output_type", op: "ArgMax", in: args(in("x", "f32[1,2304,17]"), c32s("d", 1)), attrs: attrs(dtAttr("output_type", "DT_INT32")), want: want("i32[1,17]")},
	{name: "TopKV2", op: "TopKV2", nout: 2, in: args(in("x", "f32[2,10]"), c32s("k", 3)), want: want("f32[2,3]", "i32[2,3]")},
	{name: "TopKV2 k too large", op: "TopKV2", nout: 2, in: args(in("x", "f32[2,10]"), c32s("k", 11)), want: want("err:k is 11")},

	// Shapes and data movement.
	{name: "Shape", op: "Shape", in: x4("f32[1,3,4,5]"), want: want("i32[4]")},
	{name: "Shape out_type", op: "Shape", in: x4("f32[batch,3]"), attrs: attrs(dtAttr("out_type", "DT_INT64")), want: want("i64[2]")},
	{name: "Shape bad out_type", op: "Shape", in: x4("f32[3]"), attrs: attrs(dtAttr("out_type", "DT_FLOAT")), want: want("err:want int32 or int64")},
	{name: "ShapeN", op: "ShapeN", nout: 2, in: args(in("a", "f32[1,2]"), in("b", "f32[3]")), want: want("i32[2]", "i32[1]")},
	{name: "Size", op: "Size", in: x4("f32[2,3]"), want: want("i32[]")},
	{name: "Rank", op: "Rank", in: x4("f32[2,3]"), want: want("i32[]")},
	{name: "Reshape -1", op: "Reshape", in: args(in("x", "f32[2,3,4]"), c32("s", -1, 4)), want: want("f32[6,4]")},
	{name: "Reshape 0 is a size (ONNX would copy the 2)", op: "Reshape", in: args(in("x", "f32[2,0]"), c32("s", 0, 7)), want: want("f32[0,7]")},
	{name: "Reshape element count", op: "Reshape", in: args(in("x", "f32[2,3,4]"), c32("s", 5, 5)), want: want("err:cannot reshape")},
	{name: "Reshape scalar shape", op: "Reshape", in: args(in("x", "f32[2,3,4]"), c32s("s", -1)), want: want("err:shape must be a vector")},
	{name: "Reshape two -1", op: "Reshape", in: args(in("x", "f32[2,3,4]"), c32("s", -1, -1)), want: want("err:more than one -1")},
	{name: "Reshape symbolic", op: "Reshape", in: args(in("x", "f32[batch,3,4]"), c32("s", -1, 12)), want: want("f32[batch,12]")},
	{name: "Squeeze squeeze_dims", op: "Squeeze", in: x4("f32[1,3,1]"), attrs: attrs(ints("squeeze_dims", 0)), want: want("f32[3,1]")},
	{name: "Squeeze all", op: "Squeeze", in: x4("f32[1,3,1]"), want: want("f32[3]")},
	{name: "Squeeze size 3", op: "Squeeze", in: x4("f32[1,3,1]"), attrs: attrs(ints("squeeze_dims", 1)), want: want("err:cannot squeeze axis 1 of size 3")},
	{name: "ExpandDims -1", op: "ExpandDims", in: args(in("x", "f32[2,3]"), c32s("d", -1)), want: want("f32[2,3,1]")},
	{name: "ExpandDims 0", op: "ExpandDims", in: args(in("x", "f32[2,3]"), c32("d", 0)), want: want("f32[1,2,3]")},
	{name: "ExpandDims out of range", op: "ExpandDims", in: args(in("x", "f32[2,3]"), c32s("d", 3)), want: want("err:dim 3 is out of range")},
	{name: "Transpose NHWC to NCHW", op: "Transpose", in: args(in("x", "f32[1,8,8,3]"), c32("p", 0, 3, 1, 2)), want: want("f32[1,3,8,8]")},
	{name: "Transpose bad perm", op: "Transpose", in: args(in("x", "f32[1,8,8,3]"), c32("p", 0, 3, 1, 1)), want: want("err:is repeated")},
	{name: "ConcatV2 axis last input", op: "ConcatV2", in: args(in("a", "f32[1,4,4,3]"), in("b", "f32[1,4,4,5]"), c32s("ax", -1)), want: want("f32[1,4,4,8]")},
	{name: "ConcatV2 mismatch", op: "ConcatV2", in: args(in("a", "f32[1,4,4,3]"), in("b", "f32[1,5,4,5]"), c32s("ax", 3)), want: want("err:dimension 1 must be 4")},
	{name: "ConcatV2 unknown axis", op: "ConcatV2", in: args(in("a", "f32[1,4]"), in("b", "f32[1,4]"), in("ax", "i32[]")), want: want("f32[?,?]")},
	{name: "Concat axis first input", op: "Concat", in: args(c32s("ax", 0), in("a", "f32[2,3]"), in("b", "f32[4,3]")), want: want("f32[6,3]")},
	{name: "Pack", op: "Pack", in: args(in("a", "f32[2,3]"), in("b", "f32[2,3]"), in("c", "f32[2,3]")), attrs: attrs(iattr("axis", 1)), want: want("f32[2,3,3]")},
	{name: "Pack axis -1", op: "Pack", in: args(in("a", "i32[]"), in("b", "i32[]")), attrs: attrs(iattr("axis", -1)), want: want("i32[2]")},
	{name: "Pack shapes differ", op: "Pack", in: args(in("a", "f32[2,3]"), in("b", "f32[2,4]")), want: want("err:Pack needs equal shapes")},
	{name: "Unpack", op: "Unpack", nout: 2, in: x4("f32[3,2,4]"), attrs: attrs(iattr("num", 2), iattr("axis", 1)), want: want("f32[3,4]", "f32[3,4]")},
	{name: "Unpack num", op: "Unpack", nout: 2, in: x4("f32[3,3,4]"), attrs: attrs(iattr("num", 2), iattr("axis", 1)), want: want("err:axis 1 has size 3, but num is 2")},
	{name: "Split", op: "Split", nout: 3, in: args(c32s("ax", 1), in("x", "f32[2,6]")), attrs: attrs(iattr("num_split", 3)), want: want("f32[2,2]", "f32[2,2]", "f32[2,2]")},
	{name: "Split uneven", op: "Split", nout: 4, in: args(c32s("ax", 1), in("x", "f32[2,6]")), attrs: attrs(iattr("num_split", 4)), want: want("err:does not split into 4 equal parts")},
	{name: "SplitV", op: "SplitV", nout: 3, in: args(in("x", "f32[2,6]"), c32("s", 1, -1, 2), c32s("ax", -1)), attrs: attrs(iattr("num_split", 3)),
		want: want("f32[2,1]", "f32[2,3]", "f32[2,2]")},
	{name: "Slice", op: "Slice", in: args(in("x", "f32[4,5,6]"), c32("b", 1, 0, 2), c32("s", 2, -1, 3)), want: want("f32[2,5,3]")},
	{name: "Slice out of range", op: "Slice", in: args(in("x", "f32[4,5,6]"), c32("b", 3, 0, 2), c32("s", 2, -1, 3)), want: want("err:exceed the input's shape")},
	{name: "Pad", op: "Pad", in: args(in("x", "f32[1,4,4,3]"), c32m("p", "4,2", 0, 0, 1, 2, 3, 4, 0, 0)), want: want("f32[1,7,11,3]")},
	{name: "PadV2", op: "PadV2", in: args(in("x", "f32[2,2]"), c32m("p", "2,2", 1, 1, 0, 0), in("v", "f32[]")), want: want("f32[4,2]")},
	{name: "Pad paddings shape", op: "Pad", in: args(in("x", "f32[1,4,4,3]"), c32m("p", "2,2", 0, 0, 1, 2)), want: want("err:want [4, 2]")},
	{name: "MirrorPad REFLECT", op: "MirrorPad", in: args(in("x", "f32[1,4,4,3]"), c32m("p", "4,2", 0, 0, 3, 3, 1, 1, 0, 0)), attrs: attrs(sattr("mode", "REFLECT")), want: want("f32[1,10,6,3]")},
	{name: "MirrorPad REFLECT too far", op: "MirrorPad", in: args(in("x", "f32[1,4,4,3]"), c32m("p", "4,2", 0, 0, 4, 0, 0, 0, 0, 0)), attrs: attrs(sattr("mode", "REFLECT")), want: want("err:too large")},
	{name: "MirrorPad SYMMETRIC", op: "MirrorPad", in: args(in("x", "f32[1,4,4,3]"), c32m("p", "4,2", 0, 0, 4, 0, 0, 0, 0, 0)), attrs: attrs(sattr("mode", "SYMMETRIC")), want: want("f32[1,8,4,3]")},
	{name: "ReverseV2", op: "ReverseV2", in: args(in("x", "f32[2,3]"), c32("a", -1)), want: want("f32[2,3]")},
	{name: "Reverse dims length", op: "Reverse", in: args(in("x", "f32[2,3]"), c32("a", 1)), want: want("err:dims has 1 entries")},
	{name: "Tile", op: "Tile", in: args(in("x", "f32[2,3]"), c32("m", 2, 1)), want: want("f32[4,3]")},
	{name: "GatherV2 axis 1", op: "GatherV2", in: args(in("p", "f32[5,4]"), in("i", "i32[2,3]"), c32s("ax", 1)), want: want("f32[5,2,3]")},
	{name: "GatherV2 batch_dims", op: "GatherV2", in: args(in("p", "f32[2,5,4]"), in("i", "i32[2,3]"), c32s("ax", 1)), attrs: attrs(iattr("batch_dims", 1)), want: want("f32[2,3,4]")},
	{name: "GatherV2 batch_dims -1", op: "GatherV2", in: args(in("p", "f32[2,5,4]"), in("i", "i32[2,3]"), c32s("ax", 1)), attrs: attrs(iattr("batch_dims", -1)), want: want("f32[2,3,4]")},
	{name: "GatherV2 batch_dims above axis", op: "GatherV2", in: args(in("p", "f32[2,5,4]"), in("i", "i32[2,3]"), c32s("ax", 0)), attrs: attrs(iattr("batch_dims", 1)),
		want: want("err:axis 0 must be at least batch_dims 1")},
	{name: "Gather", op: "Gather", in: args(in("p", "f32[5,4]"), in("i", "i32[3]")), want: want("f32[3,4]")},
	{name: "GatherNd", op: "GatherNd", in: args(in("p", "f32[4,5,6]"), in("i", "i32[2,2]")), want: want("f32[2,6]")},
	{name: "GatherNd movenet", op: "GatherNd", in: args(in("p", "f32[1,48,48,17,2]"), in("i", "i32[1,17,4]")), want: want("f32[1,17,2]")},
	{name: "ScatterNd", op: "ScatterNd", in: args(in("i", "i32[4,1]"), in("u", "f32[4]"), c32("s", 8)), want: want("f32[8]")},
	{name: "SparseToDense", op: "SparseToDense", in: args(in("i", "i32[3,2]"), c32("s", 4, 5), in("v", "f32[3]"), in("d", "f32[]")), want: want("f32[4,5]")},
	{name: "OneHot", op: "OneHot", in: args(in("i", "i32[3]"), c32s("d", 4), in("on", "f32[]"), in("off", "f32[]")), want: want("f32[3,4]")},
	{name: "OneHot axis 0", op: "OneHot", in: args(in("i", "i32[3]"), c32s("d", 4), in("on", "f32[]"), in("off", "f32[]")), attrs: attrs(iattr("axis", 0)), want: want("f32[4,3]")},
	{name: "Fill", op: "Fill", in: args(c32("d", 2, 3), in("v", "f32[]")), want: want("f32[2,3]")},
	{name: "Fill negative", op: "Fill", in: args(c32("d", 2, -3), in("v", "f32[]")), want: want("err:negative size")},
	{name: "Range", op: "Range", in: args(c32s("a", 0), c32s("b", 10), c32s("c", 3)), want: want("i32[4]")},
	{name: "LinSpace", op: "LinSpace", in: args(in("a", "f32[]"), in("b", "f32[]"), c32s("n", 5)), want: want("f32[5]")},
	{name: "BroadcastTo", op: "BroadcastTo", in: args(in("x", "f32[3]"), c32("s", 2, 3)), want: want("f32[2,3]")},
	{name: "BroadcastTo bad", op: "BroadcastTo", in: args(in("x", "f32[3]"), c32("s", 2, 4)), want: want("err:does not broadcast")},
	{name: "BroadcastArgs", op: "BroadcastArgs", in: args(c32("a", 2, 1), c32("b", 3)), want: want("i32[2]")},

	// Data-dependent sizes, control flow, random numbers.
	{name: "NonMaxSuppressionV5", op: "NonMaxSuppressionV5", nout: 3,
		in:   args(in("b", "f32[10,4]"), in("s", "f32[10]"), c32s("m", 5), in("iou", "f32[]"), in("st", "f32[]"), in("sg", "f32[]")),
		want: want("i32[dd:NonMaxSuppressionV5_1:nms]", "f32[dd:NonMaxSuppressionV5_1:nms]", "i32[]")},
	{name: "NonMaxSuppressionV4 padded", op: "NonMaxSuppressionV4", nout: 2,
		in:    args(in("b", "f32[10,4]"), in("s", "f32[10]"), c32s("m", 5), in("iou", "f32[]"), in("st", "f32[]")),
		attrs: attrs(battr("pad_to_max_output_size", true)), want: want("i32[5]", "i32[]")},
	{name: "Where", op: "Where", in: x4("bool[3,4]"), want: want("i64[dd:Where_1:where,2]")},
	{name: "Unique", op: "Unique", nout: 2, in: x4("f32[7]"), want: want("f32[dd:Unique_1:unique]", "i32[7]")},
	{name: "Switch", op: "Switch", nout: 2, in: args(in("x", "f32[2]"), in("p", "bool[]")), want: want("f32[2]", "f32[2]")},
	{name: "Merge", op: "Merge", nout: 2, in: args(in("a", "f32[2,3]"), in("b", "f32[2,4]")), want: want("f32[2,?]", "i32[]")},
	{name: "RandomUniform", op: "RandomUniform", in: args(c32("s", 2, 3)), attrs: attrs(dtAttr("dtype", "DT_FLOAT")), want: want("f32[2,3]")},
	{name: "RandomUniformInt", op: "RandomUniformInt", in: args(c32("s", 4), c32s("lo", 0), c32s("hi", 9)), want: want("i32[4]")},
	{name: "Multinomial", op: "Multinomial", in: args(in("l", "f32[2,10]"), c32s("n", 3)), want: want("i64[2,3]")},
}

// buildTFCase makes the one-node TensorFlow graph of a case.
func buildTFCase(t testing.TB, tc tfCase) (*ir.Graph, *ir.Node) {
	b := newBuilder(t, 0)
	var ins []*ir.Value
	for _, a := range tc.in {
		switch {
		case a.isConst && strings.HasPrefix(a.typ, "i32"):
			dims, _ := parseType(t, a.typ).Dims()
			ins = append(ins, b.g.AddParam(a.name, ir.TensorOf(ir.Int32, dims...), int32Tensor(dims, a.ints...)))
		case a.isConst:
			t.Fatalf("%s: only int32 constants in TensorFlow cases", tc.name)
		default:
			ins = append(ins, b.input(a.name, a.typ))
		}
	}
	name := tc.op + "_1"
	outs := []string{name}
	for i := 1; i < tc.nout; i++ {
		outs = append(outs, fmt.Sprintf("%s:%d", name, i))
	}
	n := b.g.NewNode(tc.op, ir.TFDomain, ins, outs)
	n.Name = name
	for _, a := range tc.attrs {
		n.SetAttr(a)
	}
	for _, o := range n.Outputs {
		b.g.AddOutput(o)
	}
	return b.g, n
}

func TestTFOps(t *testing.T) {
	for _, tc := range tfCases {
		t.Run(tc.name, func(t *testing.T) {
			g, n := buildTFCase(t, tc)
			if err := ir.Verify(g); err != nil {
				t.Fatal(err)
			}
			err := Infer(g, Options{File: "model.json"})
			if len(tc.want) == 1 && strings.HasPrefix(tc.want[0], "err:") {
				msg := strings.TrimPrefix(tc.want[0], "err:")
				if err == nil || !strings.Contains(err.Error(), msg) {
					t.Fatalf("Infer = %v, want an error containing %q", err, msg)
				}
				if !strings.HasPrefix(err.Error(), fmt.Sprintf("model.json: node %q (tf.%s): ", n.Name, tc.op)) {
					t.Errorf("error %q is not positioned at the node", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Infer: %v", err)
			}
			if got := strings.Join(typeStrings(n.Outputs), " "); got != strings.Join(tc.want, " ") {
				t.Fatalf("outputs = %v, want %v", got, tc.want)
			}
		})
	}
}
