package graphdef

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
)

// dtypeOf maps a TensorFlow DataType onto the IR's element type. It fails
// for numbers TensorFlow does not define and for types the IR lacks.
func dtypeOf(d tfpb.DataType) (ir.DType, error) {
	name, ok := tfpb.DataType_name[int32(d)]
	switch {
	case d == tfpb.DataType_DT_INVALID:
		return ir.Undefined, fmt.Errorf("dtype is DT_INVALID (unset)")
	case !ok:
		return ir.Undefined, fmt.Errorf("unknown dtype %d (not a TensorFlow DataType)", int32(d))
	}
	dt, ok := ir.TFDType(name)
	if !ok {
		return ir.Undefined, fmt.Errorf("dtype %s has no IR element type", name)
	}
	return dt, nil
}

// checkDType reports an error for a DataType number TensorFlow does not
// define; a defined type the IR lacks is fine where only its name is kept.
func checkDType(d tfpb.DataType) error {
	if _, ok := tfpb.DataType_name[int32(d)]; !ok {
		return fmt.Errorf("unknown dtype %d (not a TensorFlow DataType)", int32(d))
	}
	return nil
}

// constShape returns the dims of a fully known shape (a constant's): no
// unknown rank, no negative dimension, a representable element count.
func constShape(sp *tfpb.TensorShapeProto) ([]int64, int64, error) {
	if sp.GetUnknownRank() {
		return nil, 0, fmt.Errorf("shape has unknown rank; a constant's shape must be known")
	}
	dims := make([]int64, len(sp.GetDim()))
	for i, d := range sp.GetDim() {
		if d.GetSize() < 0 {
			return nil, 0, fmt.Errorf("negative dimension %d in shape %v; a constant's dimensions must be known", d.GetSize(), shapeString(sp))
		}
		dims[i] = d.GetSize()
	}
	n, ok := ir.NumElements(dims)
	if !ok {
		return nil, 0, fmt.Errorf("shape %v has more elements than can be stored", dims)
	}
	return dims, n, nil
}

func shapeString(sp *tfpb.TensorShapeProto) string {
	if sp.GetUnknownRank() {
		return "[*]"
	}
	s := "["
	for i, d := range sp.GetDim() {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(d.GetSize())
	}
	return s + "]"
}

// typedFieldName names the TensorProto field TensorFlow keeps dt's elements
// in when they are not in tensor_content.
func typedFieldName(dt ir.DType) string {
	switch dt {
	case ir.Float32:
		return "float_val"
	case ir.Float64:
		return "double_val"
	case ir.Int32, ir.Int16, ir.Int8, ir.Uint8, ir.Uint16:
		return "int_val"
	case ir.Int64:
		return "int64_val"
	case ir.Bool:
		return "bool_val"
	case ir.Float16, ir.BFloat16:
		return "half_val"
	case ir.Complex64:
		return "scomplex_val"
	case ir.Complex128:
		return "dcomplex_val"
	case ir.String:
		return "string_val"
	case ir.Uint32:
		return "uint32_val"
	case ir.Uint64:
		return "uint64_val"
	case ir.Float8E5M2, ir.Float8E4M3FN, ir.Float8E4M3FNUZ, ir.Float8E5M2FNUZ:
		return "float8_val"
	}
	return ""
}

// typedCounts lists the typed fields of tp that hold values, with the
// number of values each holds.
func typedCounts(tp *tfpb.TensorProto) []struct {
	field string
	n     int
} {
	all := []struct {
		field string
		n     int
	}{
		{"half_val", len(tp.HalfVal)}, {"float_val", len(tp.FloatVal)}, {"double_val", len(tp.DoubleVal)},
		{"int_val", len(tp.IntVal)}, {"string_val", len(tp.StringVal)}, {"scomplex_val", len(tp.ScomplexVal)},
		{"int64_val", len(tp.Int64Val)}, {"bool_val", len(tp.BoolVal)}, {"dcomplex_val", len(tp.DcomplexVal)},
		{"resource_handle_val", len(tp.ResourceHandleVal)}, {"variant_val", len(tp.VariantVal)},
		{"uint32_val", len(tp.Uint32Val)}, {"uint64_val", len(tp.Uint64Val)}, {"float8_val", len(tp.Float8Val)},
	}
	var out []struct {
		field string
		n     int
	}
	for _, c := range all {
		if c.n > 0 {
			out = append(out, c)
		}
	}
	return out
}

// decodeTensor turns a TensorProto into an ir.Tensor named name, with
// TensorFlow's semantics: the elements are tensor_content when it is set,
// else the typed field of the dtype, whose last value repeats to fill the
// shape (no values at all means zeros). maxBytes bounds the decoded size.
func decodeTensor(name string, tp *tfpb.TensorProto, maxBytes int64) (*ir.Tensor, error) {
	dt, err := dtypeOf(tp.GetDtype())
	if err != nil {
		return nil, err
	}
	shape, n, err := constShape(tp.GetTensorShape())
	if err != nil {
		return nil, err
	}
	typ := ir.TensorOf(dt, shape...)
	if dt == ir.Int4 || dt == ir.Uint4 {
		return nil, fmt.Errorf("%v constants are not supported (TensorFlow stores them one element a byte, the IR packs two)", typ)
	}
	t := &ir.Tensor{Name: name, DType: dt, Shape: shape}
	field := typedFieldName(dt)
	var k int // values present in the typed field
	for _, c := range typedCounts(tp) {
		if c.field != field {
			return nil, fmt.Errorf("%v tensor has %d values in %s; TensorFlow keeps %v elements in %s or tensor_content", typ, c.n, c.field, dt, field)
		}
		k = c.n
	}
	if dt == ir.Complex64 || dt == ir.Complex128 {
		if k%2 != 0 {
			return nil, fmt.Errorf("%s has %d values; complex elements take two (real, imaginary)", field, k)
		}
		k /= 2
	}
	if dt == ir.String {
		if len(tp.TensorContent) > 0 {
			return nil, fmt.Errorf("string tensor in tensor_content is not supported; use string_val")
		}
		if n > maxBytes {
			return nil, fmt.Errorf("%v has more elements than the limit of %d", typ, maxBytes)
		}
		if int64(k) > n {
			return nil, fmt.Errorf("string_val has %d values, %v holds %d", k, typ, n)
		}
		t.Strs = make([][]byte, n)
		for i := range t.Strs {
			switch {
			case i < k:
				t.Strs[i] = tp.StringVal[i]
			case k > 0:
				t.Strs[i] = tp.StringVal[k-1]
			default:
				t.Strs[i] = []byte{}
			}
		}
		return t, nil
	}
	want, ok := dt.StorageBytes(n)
	if !ok || want > maxBytes {
		return nil, fmt.Errorf("%v takes more than the limit of %d bytes", typ, maxBytes)
	}
	if len(tp.TensorContent) > 0 {
		if int64(len(tp.TensorContent)) != want {
			return nil, fmt.Errorf("tensor_content has %d bytes, %v needs %d", len(tp.TensorContent), typ, want)
		}
		t.Raw = slices.Clone(tp.TensorContent)
		return t, nil
	}
	if int64(k) > n {
		return nil, fmt.Errorf("%s has %d values, %v holds %d", field, k, typ, n)
	}
	size := int64(dt.Bits() / 8)
	raw := make([]byte, want)
	for i := range int64(k) {
		putElem(raw[i*size:(i+1)*size], dt, tp, int(i))
	}
	// Repeat the last value to fill the shape: raw[start:filled] is always
	// whole copies of it, so doubling that run keeps elements aligned.
	if k > 0 && int64(k) < n {
		start := (int64(k) - 1) * size
		for filled := start + size; filled < want; {
			filled += int64(copy(raw[filled:], raw[start:filled]))
		}
	}
	t.Raw = raw
	return t, nil
}

// putElem writes value i of tp's typed field of dt into b, little-endian.
func putElem(b []byte, dt ir.DType, tp *tfpb.TensorProto, i int) {
	le := binary.LittleEndian
	switch dt {
	case ir.Float32:
		le.PutUint32(b, math.Float32bits(tp.FloatVal[i]))
	case ir.Float64:
		le.PutUint64(b, math.Float64bits(tp.DoubleVal[i]))
	case ir.Int32:
		le.PutUint32(b, uint32(tp.IntVal[i]))
	case ir.Int16, ir.Uint16:
		le.PutUint16(b, uint16(tp.IntVal[i]))
	case ir.Int8, ir.Uint8:
		b[0] = byte(tp.IntVal[i])
	case ir.Int64:
		le.PutUint64(b, uint64(tp.Int64Val[i]))
	case ir.Bool:
		if tp.BoolVal[i] {
			b[0] = 1
		}
	case ir.Float16, ir.BFloat16:
		le.PutUint16(b, uint16(tp.HalfVal[i]))
	case ir.Complex64:
		le.PutUint32(b, math.Float32bits(tp.ScomplexVal[2*i]))
		le.PutUint32(b[4:], math.Float32bits(tp.ScomplexVal[2*i+1]))
	case ir.Complex128:
		le.PutUint64(b, math.Float64bits(tp.DcomplexVal[2*i]))
		le.PutUint64(b[8:], math.Float64bits(tp.DcomplexVal[2*i+1]))
	case ir.Uint32:
		le.PutUint32(b, tp.Uint32Val[i])
	case ir.Uint64:
		le.PutUint64(b, tp.Uint64Val[i])
	default: // the 8-bit floats
		b[0] = tp.Float8Val[i]
	}
}
