package autodiff

import (
	"encoding/binary"
	"slices"

	"github.com/remat-compile/remat/ir"
)

// The builder's TensorFlow form: with builder.tf set, add writes each
// operator as the TensorFlow op of the same meaning (tfForm), and the
// methods whose operands differ between the formats (reshape, transpose,
// reduce, cast, slice, pad, concat, expand, zeros, sum) write the
// TensorFlow form themselves: shapes, permutations, axes and paddings as
// int32 constant inputs, element types as the T attributes TensorFlow
// names. Every op written is one TensorFlow.js 4.22's graph executor runs.

// tfNames maps the ONNX names the rules use to TensorFlow's.
var tfNames = map[string]string{
	"Add":            "AddV2",
	"Div":            "RealDiv",
	"GreaterOrEqual": "GreaterEqual",
	"LessOrEqual":    "LessEqual",
	"And":            "LogicalAnd",
	"Or":             "LogicalOr",
	"Not":            "LogicalNot",
	"Where":          "SelectV2",
}

// tfForm returns the TensorFlow op and attributes for an op the builder
// was asked for: the name translated, ONNX-only attributes dropped, and
// the element type attribute T added where the op has one.
func tfForm(op string, ins []*ir.Value, attrs []ir.Attr) (string, []ir.Attr) {
	if t, ok := tfNames[op]; ok {
		op = t
	}
	switch op {
	case "LogSoftmax", "Softmax":
		// TensorFlow normalises over the last axis; the callers use it.
		attrs = slices.DeleteFunc(slices.Clone(attrs), func(a ir.Attr) bool { return a.Name == "axis" })
	case "MatMul":
		if !hasAttr(attrs, "transpose_a") {
			attrs = append(attrs, ir.IntAttr("transpose_a", 0), ir.IntAttr("transpose_b", 0))
		}
	}
	switch op {
	case "Cast", "LogicalAnd", "LogicalOr", "LogicalNot":
		return op, attrs
	}
	if !hasAttr(attrs, "T") && len(ins) > 0 {
		src := ins[0]
		if (op == "SelectV2" || op == "Fill") && len(ins) > 1 {
			src = ins[1]
		}
		attrs = append(attrs, tfType("T", src.Type.DType))
	}
	return op, attrs
}

func hasAttr(attrs []ir.Attr, name string) bool {
	return slices.ContainsFunc(attrs, func(a ir.Attr) bool { return a.Name == name })
}

// tfType is a TensorFlow type attribute (T, DstT, Tidx, …).
func tfType(name string, dt ir.DType) ir.Attr { return ir.StringAttr(name, ir.TFDTypeName(dt)) }

// int32Tensor is an int32 tensor of the given shape.
func int32Tensor(shape []int64, vals ...int64) *ir.Tensor {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(v)))
	}
	return &ir.Tensor{DType: ir.Int32, Shape: slices.Clone(shape), Raw: raw}
}

// tfPad pads x with zeros to type t (pads in ONNX order, all begins then
// all ends; negative entries crop): a Slice for the crops, then a Pad.
func (b *builder) tfPad(x *ir.Value, pads []int64, t ir.TensorType) *ir.Value {
	dims := dimsOf(x)
	r := len(dims)
	var cropAxes, starts, ends []int64
	for i := range r {
		if pads[i] < 0 || pads[i+r] < 0 {
			cropAxes = append(cropAxes, int64(i))
			starts = append(starts, max(-pads[i], 0))
			ends = append(ends, dims[i]-max(-pads[i+r], 0))
		}
	}
	if cropAxes != nil {
		x = b.slice(x, starts, ends, cropAxes)
	}
	pv := make([]int64, 2*r)
	zero := true
	for i := range r {
		pv[2*i], pv[2*i+1] = max(pads[i], 0), max(pads[i+r], 0)
		zero = zero && pv[2*i] == 0 && pv[2*i+1] == 0
	}
	if zero {
		return x
	}
	return b.add("Pad", t, []*ir.Value{x, b.constant(int32Tensor([]int64{int64(r), 2}, pv...))}, tfType("Tpaddings", ir.Int32))
}

// stridedSliceTF is x[begin : end : strides] on every axis (a
// StridedSlice without masks) of type t.
func (b *builder) stridedSliceTF(x *ir.Value, begin, end, strides []int64, t ir.TensorType) *ir.Value {
	return b.add("StridedSlice", t, []*ir.Value{x, b.ints(begin...), b.ints(end...), b.ints(strides...)},
		tfType("Index", ir.Int32), ir.IntAttr("begin_mask", 0), ir.IntAttr("end_mask", 0),
		ir.IntAttr("ellipsis_mask", 0), ir.IntAttr("new_axis_mask", 0), ir.IntAttr("shrink_axis_mask", 0))
}
