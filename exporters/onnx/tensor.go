package onnx

import (
	"fmt"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// onnxTypes maps the IR's element types onto ONNX TensorProto.DataType.
var onnxTypes = map[ir.DType]onnxpb.TensorProto_DataType{
	ir.Float32:        onnxpb.TensorProto_FLOAT,
	ir.Float64:        onnxpb.TensorProto_DOUBLE,
	ir.Float16:        onnxpb.TensorProto_FLOAT16,
	ir.BFloat16:       onnxpb.TensorProto_BFLOAT16,
	ir.Float8E4M3FN:   onnxpb.TensorProto_FLOAT8E4M3FN,
	ir.Float8E4M3FNUZ: onnxpb.TensorProto_FLOAT8E4M3FNUZ,
	ir.Float8E5M2:     onnxpb.TensorProto_FLOAT8E5M2,
	ir.Float8E5M2FNUZ: onnxpb.TensorProto_FLOAT8E5M2FNUZ,
	ir.Float4E2M1:     onnxpb.TensorProto_FLOAT4E2M1,
	ir.Int4:           onnxpb.TensorProto_INT4,
	ir.Int8:           onnxpb.TensorProto_INT8,
	ir.Int16:          onnxpb.TensorProto_INT16,
	ir.Int32:          onnxpb.TensorProto_INT32,
	ir.Int64:          onnxpb.TensorProto_INT64,
	ir.Uint4:          onnxpb.TensorProto_UINT4,
	ir.Uint8:          onnxpb.TensorProto_UINT8,
	ir.Uint16:         onnxpb.TensorProto_UINT16,
	ir.Uint32:         onnxpb.TensorProto_UINT32,
	ir.Uint64:         onnxpb.TensorProto_UINT64,
	ir.Bool:           onnxpb.TensorProto_BOOL,
	ir.String:         onnxpb.TensorProto_STRING,
	ir.Complex64:      onnxpb.TensorProto_COMPLEX64,
	ir.Complex128:     onnxpb.TensorProto_COMPLEX128,
}

// DataType maps an IR element type onto the ONNX data type number; ok is
// false for ir.Undefined and unknown types.
func DataType(dt ir.DType) (onnxType int32, ok bool) {
	t, ok := onnxTypes[dt]
	return int32(t), ok
}

// tensor encodes t under the given name. Tensors with an importer's Ext come
// back in their original encoding while unchanged; others use raw_data
// (string_data for strings). External tensors are queued for ExportFile
// unless the export inlines.
func (ex *exporter) tensor(t *ir.Tensor, name string) (*onnxpb.TensorProto, error) {
	dt, ok := DataType(t.DType)
	if !ok {
		return nil, fmt.Errorf("onnx export: tensor %q has element type %v, which ONNX cannot express", name, t.DType)
	}
	if err := t.CheckSize(); err != nil {
		return nil, fmt.Errorf("onnx export: tensor %q: %v", name, err)
	}
	tp := &onnxpb.TensorProto{}
	source := ""
	if te, ok := t.Ext.(tensorExt); ok {
		tp = te.ONNXTensor(t)
		source = te.ONNXExternalSource()
	}
	tp.Dims = t.Shape
	tp.DataType = proto.Int32(dt)
	tp.Name = nil
	if name != "" {
		tp.Name = proto.String(name)
	}
	tp.DocString = nil
	if t.Doc != "" {
		tp.DocString = proto.String(t.Doc)
	}
	typed := len(tp.FloatData) > 0 || len(tp.Int32Data) > 0 || len(tp.Int64Data) > 0 || len(tp.DoubleData) > 0 || len(tp.Uint64Data) > 0
	switch {
	case t.DType == ir.String:
		tp.FloatData, tp.Int32Data, tp.Int64Data, tp.DoubleData, tp.Uint64Data = nil, nil, nil, nil, nil
		tp.DataLocation, tp.ExternalData = nil, nil
		tp.StringData = t.Strs
	case typed:
		tp.DataLocation, tp.ExternalData = nil, nil
	case tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL && !ex.opts.Inline:
		ex.ext = append(ex.ext, &extTensor{tp: tp, raw: t.Raw, source: source})
	default:
		tp.DataLocation, tp.ExternalData = nil, nil
		tp.RawData = t.Raw
		if tp.RawData == nil {
			tp.RawData = []byte{}
		}
	}
	return tp, nil
}

// typeProto builds the TypeProto of t. orig, the type the source declared,
// lends its denotations when the rank still matches, and stands in for map
// and opaque types, which the IR does not spell out. It returns nil when t
// has no element type: ONNX has no way to say "a tensor of unknown element
// type" (runtimes reject elem_type 0), so such a value is declared without
// a type.
func typeProto(t ir.TensorType, orig *onnxpb.TypeProto) *onnxpb.TypeProto {
	switch t.Kind {
	case ir.KindMap:
		if orig.GetMapType() != nil {
			return orig
		}
		return nil
	case ir.KindOpaque:
		if orig.GetOpaqueType() != nil {
			return orig
		}
		return &onnxpb.TypeProto{Value: &onnxpb.TypeProto_OpaqueType{OpaqueType: &onnxpb.TypeProto_Opaque{}}}
	}
	if t.DType == ir.Undefined {
		return nil
	}
	var origShape *onnxpb.TensorShapeProto
	switch {
	case orig.GetTensorType() != nil:
		origShape = orig.GetTensorType().GetShape()
	case orig.GetSparseTensorType() != nil:
		origShape = orig.GetSparseTensorType().GetShape()
	}
	var elem *int32
	if dt, ok := DataType(t.DType); ok {
		elem = proto.Int32(dt)
	}
	var shape *onnxpb.TensorShapeProto
	if !t.Unranked {
		shape = &onnxpb.TensorShapeProto{Dim: make([]*onnxpb.TensorShapeProto_Dimension, len(t.Shape))}
		for i, d := range t.Shape {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch {
			case d.Known():
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d.Size}
			case d.Sym != "":
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.Sym}
			}
			if origShape != nil && len(origShape.GetDim()) == len(t.Shape) {
				dim.Denotation = origShape.GetDim()[i].Denotation
			}
			shape.Dim[i] = dim
		}
	}
	tensor := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: elem, Shape: shape}}}
	var out *onnxpb.TypeProto
	switch t.Kind {
	case ir.KindSparseTensor:
		out = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SparseTensorType{SparseTensorType: &onnxpb.TypeProto_SparseTensor{ElemType: elem, Shape: shape}}}
	case ir.KindSequence, ir.KindOptional:
		if t.Kind == ir.KindSequence {
			out = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{ElemType: tensor}}}
		} else {
			out = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_OptionalType{OptionalType: &onnxpb.TypeProto_Optional{ElemType: tensor}}}
		}
	default:
		out = tensor
	}
	if orig != nil && orig.Denotation != nil {
		out.Denotation = proto.String(orig.GetDenotation())
	}
	return out
}
