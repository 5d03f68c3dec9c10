package graphdef

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
)

// tensorProto encodes t: its dtype and shape and, when inline is set, its
// elements (tensor_content, the packed little-endian bytes; string_val
// for strings).
func tensorProto(t *ir.Tensor, inline bool) (*tfpb.TensorProto, error) {
	if t == nil {
		return nil, fmt.Errorf("no tensor")
	}
	dt, err := dataType(t.DType)
	if err != nil {
		return nil, err
	}
	if t.DType == ir.Int4 || t.DType == ir.Uint4 {
		return nil, fmt.Errorf("%v tensors cannot be written (TensorFlow stores them one element a byte, the IR packs two)", t.DType)
	}
	tp := &tfpb.TensorProto{Dtype: dt, TensorShape: &tfpb.TensorShapeProto{}}
	for _, d := range t.Shape {
		tp.TensorShape.Dim = append(tp.TensorShape.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
	}
	if !inline {
		return tp, nil
	}
	if t.DType == ir.String {
		tp.StringVal = t.Strs
		return tp, nil
	}
	tp.TensorContent = t.Raw
	return tp, nil
}

// shapeProto is the TensorShapeProto of a value's type: unknown rank for
// an unranked type, -1 for an unknown size.
func shapeProto(t ir.TensorType) *tfpb.TensorShapeProto {
	if t.Unranked {
		return &tfpb.TensorShapeProto{UnknownRank: true}
	}
	sp := &tfpb.TensorShapeProto{}
	for _, d := range t.Shape {
		dim := &tfpb.TensorShapeProto_Dim{Size: d.Size}
		if !d.Known() {
			dim.Size, dim.Name = -1, d.Sym
		}
		sp.Dim = append(sp.Dim, dim)
	}
	return sp
}

// hasInline reports whether a TensorProto holds its elements.
func hasInline(tp *tfpb.TensorProto) bool {
	return len(tp.GetTensorContent()) > 0 || len(tp.HalfVal) > 0 || len(tp.FloatVal) > 0 ||
		len(tp.DoubleVal) > 0 || len(tp.IntVal) > 0 || len(tp.StringVal) > 0 ||
		len(tp.ScomplexVal) > 0 || len(tp.Int64Val) > 0 || len(tp.BoolVal) > 0 ||
		len(tp.DcomplexVal) > 0 || len(tp.ResourceHandleVal) > 0 || len(tp.VariantVal) > 0 ||
		len(tp.Uint32Val) > 0 || len(tp.Uint64Val) > 0 || len(tp.Float8Val) > 0
}

// stripTensor returns tp without its elements: its dtype, shape and
// version, as a TensorFlow.js Const carries them.
func stripTensor(tp *tfpb.TensorProto) *tfpb.TensorProto {
	return &tfpb.TensorProto{Dtype: tp.Dtype, TensorShape: tp.TensorShape, VersionNumber: tp.VersionNumber}
}

// widen converts the integer tensor t to the integer type dt (int32 to
// int64: TensorFlow.js keeps int64 Consts as int32; the NodeDef says
// int64). Other conversions are an error.
func widen(t *ir.Tensor, dt ir.DType) (*ir.Tensor, error) {
	if t.DType != ir.Int32 || dt != ir.Int64 {
		return nil, fmt.Errorf("its value is %v, its NodeDef's dtype %v; only int32 values widen to an int64 Const", t.DType, dt)
	}
	n := len(t.Raw) / 4
	raw := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(int64(int32(binary.LittleEndian.Uint32(t.Raw[4*i:])))))
	}
	return &ir.Tensor{Name: t.Name, DType: ir.Int64, Shape: slices.Clone(t.Shape), Raw: raw}, nil
}

// tfjsDType is the element type TensorFlow.js keeps a tensor of type dt
// in: float32 for every float type, int32 for every integer type, bool,
// string and complex64 as they are.
func tfjsDType(dt ir.DType) ir.DType {
	switch dt {
	case ir.Bool, ir.String, ir.Complex64, ir.Float32, ir.Int32:
		return dt
	case ir.Float16, ir.BFloat16, ir.Float64:
		return ir.Float32
	case ir.Int8, ir.Int16, ir.Int64, ir.Uint8, ir.Uint16, ir.Uint32, ir.Uint64:
		return ir.Int32
	}
	return ir.Undefined
}

// manifestDType names a TensorFlow.js element type in a weights manifest.
func manifestDType(dt ir.DType) string {
	switch dt {
	case ir.Float32:
		return "float32"
	case ir.Int32:
		return "int32"
	case ir.Bool:
		return "bool"
	case ir.String:
		return "string"
	case ir.Complex64:
		return "complex64"
	}
	return ""
}

// weightBytes encodes t as a TensorFlow.js weight: its manifest dtype and
// the bytes stored in the shards (strings: a 4-byte little-endian length
// before each). Values are converted to the type TensorFlow.js computes
// with (tfjsDType); an integer that int32 cannot hold is an error.
func weightBytes(t *ir.Tensor) (string, []byte, error) {
	to := tfjsDType(t.DType)
	name := manifestDType(to)
	if name == "" {
		return "", nil, fmt.Errorf("TensorFlow.js has no type for %v values", t.DType)
	}
	if t.DType == ir.String {
		var b []byte
		for _, s := range t.Strs {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
		return name, b, nil
	}
	if to == t.DType {
		return name, t.Raw, nil
	}
	n := int(t.NumElements())
	out := make([]byte, 4*n)
	le := binary.LittleEndian
	for i := range n {
		switch t.DType {
		case ir.Float16:
			le.PutUint32(out[4*i:], math.Float32bits(ir.HalfToFloat32(le.Uint16(t.Raw[2*i:]))))
		case ir.BFloat16:
			le.PutUint32(out[4*i:], uint32(le.Uint16(t.Raw[2*i:]))<<16)
		case ir.Float64:
			le.PutUint32(out[4*i:], math.Float32bits(float32(math.Float64frombits(le.Uint64(t.Raw[8*i:])))))
		default:
			var v int64
			switch t.DType {
			case ir.Int8:
				v = int64(int8(t.Raw[i]))
			case ir.Uint8:
				v = int64(t.Raw[i])
			case ir.Int16:
				v = int64(int16(le.Uint16(t.Raw[2*i:])))
			case ir.Uint16:
				v = int64(le.Uint16(t.Raw[2*i:]))
			case ir.Uint32:
				v = int64(le.Uint32(t.Raw[4*i:]))
			case ir.Int64, ir.Uint64:
				v = int64(le.Uint64(t.Raw[8*i:]))
				if t.DType == ir.Uint64 && v < 0 {
					v = math.MaxInt64
				}
			}
			if v < math.MinInt32 || v > math.MaxInt32 {
				return "", nil, fmt.Errorf("element %d (%d) does not fit the int32 that TensorFlow.js keeps %v values in", i, v, t.DType)
			}
			le.PutUint32(out[4*i:], uint32(int32(v)))
		}
	}
	return name, out, nil
}
