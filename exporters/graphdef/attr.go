package graphdef

import (
	"fmt"
	"slices"
	"strings"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// An attribute read from a file carries its AttrValue (its Ext), which is
// written as it is. An attribute made in code is converted by its kind,
// the inverse of the importer's mapping where the IR's kinds say less
// than TensorFlow's:
//
//	AttrInt      b when the attribute is one of TensorFlow's bools (boolAttrs), else i
//	AttrFloat    f
//	AttrString   type when it is a DataType name ("DT_FLOAT"), else s
//	AttrInts     shape for shape attributes (shapeAttrs; -1 an unknown size), else list(int)
//	AttrFloats   list(float)
//	AttrStrings  list(type) when every element is a DataType name, else list(string)
//	AttrTensor   tensor (inline)
//	AttrTensors  list(tensor)

// boolAttrs are the attributes of the TensorFlow ops the project writes
// whose type is bool.
var boolAttrs = []string{
	"adj_x", "adj_y", "align_corners", "exclusive", "half_pixel_centers",
	"is_training", "keep_dims", "reverse", "transpose_a", "transpose_b",
	"use_cudnn_on_gpu", "validate_indices", "adjoint_a", "adjoint_b",
}

// shapeAttrs are the attributes whose type is shape.
var shapeAttrs = []string{"shape", "element_shape"}

// attrValue returns the AttrValue of a.
func attrValue(a *ir.Attr) (*tfpb.AttrValue, error) {
	if x, ok := a.Ext.(attrExt); ok && x.TFAttr() != nil {
		return proto.Clone(x.TFAttr()).(*tfpb.AttrValue), nil
	}
	switch a.Kind {
	case ir.AttrInt:
		if slices.Contains(boolAttrs, a.Name) {
			return &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: a.Int != 0}}, nil
		}
		return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: a.Int}}, nil
	case ir.AttrFloat:
		return &tfpb.AttrValue{Value: &tfpb.AttrValue_F{F: a.Float}}, nil
	case ir.AttrString:
		if dt, ok := dataTypeName(string(a.Str)); ok {
			return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: dt}}, nil
		}
		return &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: slices.Clone(a.Str)}}, nil
	case ir.AttrInts:
		if slices.Contains(shapeAttrs, a.Name) {
			sp := &tfpb.TensorShapeProto{}
			for _, d := range a.Ints {
				sp.Dim = append(sp.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
			}
			return &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: sp}}, nil
		}
		return list(&tfpb.AttrValue_ListValue{I: slices.Clone(a.Ints)}), nil
	case ir.AttrFloats:
		return list(&tfpb.AttrValue_ListValue{F: slices.Clone(a.Floats)}), nil
	case ir.AttrStrings:
		types := make([]tfpb.DataType, 0, len(a.Strs))
		for _, s := range a.Strs {
			if dt, ok := dataTypeName(string(s)); ok {
				types = append(types, dt)
			}
		}
		if len(types) == len(a.Strs) && len(types) > 0 {
			return list(&tfpb.AttrValue_ListValue{Type: types}), nil
		}
		l := &tfpb.AttrValue_ListValue{}
		for _, s := range a.Strs {
			l.S = append(l.S, slices.Clone(s))
		}
		return list(l), nil
	case ir.AttrTensor:
		tp, err := tensorProto(a.Tensor, true)
		if err != nil {
			return nil, err
		}
		return &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: tp}}, nil
	case ir.AttrTensors:
		l := &tfpb.AttrValue_ListValue{}
		for _, t := range a.Tensors {
			tp, err := tensorProto(t, true)
			if err != nil {
				return nil, err
			}
			l.Tensor = append(l.Tensor, tp)
		}
		return list(l), nil
	}
	return nil, fmt.Errorf("an attribute of kind %v has no TensorFlow form (it was not read from a TensorFlow file)", a.Kind)
}

func list(l *tfpb.AttrValue_ListValue) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: l}}
}

// dataTypeName returns the DataType a name such as "DT_FLOAT" names.
func dataTypeName(s string) (tfpb.DataType, bool) {
	if !strings.HasPrefix(s, "DT_") {
		return 0, false
	}
	v, ok := tfpb.DataType_value[s]
	return tfpb.DataType(v), ok
}

// dataType returns the DataType of an IR element type.
func dataType(dt ir.DType) (tfpb.DataType, error) {
	name := ir.TFDTypeName(dt)
	if d, ok := dataTypeName(name); ok {
		return d, nil
	}
	return 0, fmt.Errorf("element type %v has no TensorFlow DataType", dt)
}
