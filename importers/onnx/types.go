package onnx

import (
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
)

// valueType converts a TypeProto into the IR's type. Element types the IR
// lacks become ir.Undefined (the declaration itself is kept in Ext, so
// nothing is lost); negative dimensions are errors.
func (im *importer) valueType(tp *onnxpb.TypeProto, pos ir.Pos, what string) ir.TensorType {
	switch v := tp.GetValue().(type) {
	case *onnxpb.TypeProto_TensorType:
		return im.tensorValueType(ir.KindTensor, v.TensorType.GetElemType(), v.TensorType.GetShape(), pos, what)
	case *onnxpb.TypeProto_SparseTensorType:
		return im.tensorValueType(ir.KindSparseTensor, v.SparseTensorType.GetElemType(), v.SparseTensorType.GetShape(), pos, what)
	case *onnxpb.TypeProto_SequenceType:
		t := im.elemType(v.SequenceType.GetElemType(), pos, what)
		t.Kind = ir.KindSequence
		return t
	case *onnxpb.TypeProto_OptionalType:
		t := im.elemType(v.OptionalType.GetElemType(), pos, what)
		t.Kind = ir.KindOptional
		return t
	case *onnxpb.TypeProto_MapType:
		return ir.TensorType{Kind: ir.KindMap, Unranked: true}
	case *onnxpb.TypeProto_OpaqueType:
		return ir.TensorType{Kind: ir.KindOpaque, Unranked: true}
	}
	return ir.TensorType{}
}

// elemType is the element tensor type of a sequence or optional, when it is
// a tensor; otherwise an unknown type.
func (im *importer) elemType(tp *onnxpb.TypeProto, pos ir.Pos, what string) ir.TensorType {
	if tt := tp.GetTensorType(); tt != nil {
		return im.tensorValueType(ir.KindTensor, tt.GetElemType(), tt.GetShape(), pos, what)
	}
	if tp != nil {
		im.valueType(tp, pos, what) // for its errors
	}
	return ir.TensorType{Unranked: true}
}

func (im *importer) tensorValueType(kind ir.TypeKind, elem int32, shape *onnxpb.TensorShapeProto, pos ir.Pos, what string) ir.TensorType {
	dt, _ := DType(elem)
	t := ir.TensorType{Kind: kind, DType: dt}
	if shape == nil {
		t.Unranked = true
		return t
	}
	t.Shape = make([]ir.Dim, len(shape.GetDim()))
	for i, d := range shape.GetDim() {
		switch v := d.GetValue().(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if v.DimValue < 0 {
				im.errorf(pos, "%s: dimension %d is negative (%d); use dim_param or leave it unset for an unknown size", what, i, v.DimValue)
				t.Shape[i] = ir.UnknownDim
				continue
			}
			t.Shape[i] = ir.D(v.DimValue)
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			if v.DimParam == "" {
				t.Shape[i] = ir.UnknownDim
			} else {
				t.Shape[i] = ir.SymDim(v.DimParam)
			}
		default:
			t.Shape[i] = ir.UnknownDim
		}
	}
	var static []int64
	for _, d := range t.Shape {
		if d.Known() {
			static = append(static, d.Size)
		}
	}
	if _, ok := ir.NumElements(static); !ok {
		im.errorf(pos, "%s: dimensions %v have more elements than can be stored", what, static)
	}
	return t
}
