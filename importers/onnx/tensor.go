package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
)

// dtypes maps ONNX TensorProto.DataType numbers onto the IR's element types.
// Types the IR lacks (FLOAT8E8M0, UINT2, INT2) map to ir.Undefined.
var dtypes = [...]ir.DType{
	onnxpb.TensorProto_FLOAT:          ir.Float32,
	onnxpb.TensorProto_UINT8:          ir.Uint8,
	onnxpb.TensorProto_INT8:           ir.Int8,
	onnxpb.TensorProto_UINT16:         ir.Uint16,
	onnxpb.TensorProto_INT16:          ir.Int16,
	onnxpb.TensorProto_INT32:          ir.Int32,
	onnxpb.TensorProto_INT64:          ir.Int64,
	onnxpb.TensorProto_STRING:         ir.String,
	onnxpb.TensorProto_BOOL:           ir.Bool,
	onnxpb.TensorProto_FLOAT16:        ir.Float16,
	onnxpb.TensorProto_DOUBLE:         ir.Float64,
	onnxpb.TensorProto_UINT32:         ir.Uint32,
	onnxpb.TensorProto_UINT64:         ir.Uint64,
	onnxpb.TensorProto_COMPLEX64:      ir.Complex64,
	onnxpb.TensorProto_COMPLEX128:     ir.Complex128,
	onnxpb.TensorProto_BFLOAT16:       ir.BFloat16,
	onnxpb.TensorProto_FLOAT8E4M3FN:   ir.Float8E4M3FN,
	onnxpb.TensorProto_FLOAT8E4M3FNUZ: ir.Float8E4M3FNUZ,
	onnxpb.TensorProto_FLOAT8E5M2:     ir.Float8E5M2,
	onnxpb.TensorProto_FLOAT8E5M2FNUZ: ir.Float8E5M2FNUZ,
	onnxpb.TensorProto_UINT4:          ir.Uint4,
	onnxpb.TensorProto_INT4:           ir.Int4,
	onnxpb.TensorProto_FLOAT4E2M1:     ir.Float4E2M1,
	onnxpb.TensorProto_FLOAT8E8M0:     ir.Undefined,
	onnxpb.TensorProto_UINT2:          ir.Undefined,
	onnxpb.TensorProto_INT2:           ir.Undefined,
}

// DType maps an ONNX data type number onto the IR's element type; ok is
// false for UNDEFINED, for numbers ONNX does not define, and for ONNX types
// the IR lacks.
func DType(onnxType int32) (dt ir.DType, ok bool) {
	if onnxType <= 0 || int(onnxType) >= len(dtypes) {
		return ir.Undefined, false
	}
	dt = dtypes[onnxType]
	return dt, dt != ir.Undefined
}

// dtypeName names an ONNX data type number for messages.
func dtypeName(onnxType int32) string {
	if name, ok := onnxpb.TensorProto_DataType_name[onnxType]; ok {
		return fmt.Sprintf("%s (%d)", name, onnxType)
	}
	return strconv.Itoa(int(onnxType))
}

// tensorCtx says where a tensor sits, for error messages.
type tensorCtx struct {
	pos  ir.Pos
	what string // "initializer", `attribute "value"`, …; "" when pos names the tensor
}

func (im *importer) tensorErr(c tensorCtx, name, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	switch {
	case c.what != "" && name != "" && name != c.pos.Value:
		msg = fmt.Sprintf("%s: tensor %q: %s", c.what, name, msg)
	case c.what != "":
		msg = c.what + ": " + msg
	}
	im.errorf(c.pos, "%s", msg)
}

// tensor decodes a TensorProto into an ir.Tensor. It reports false after
// recording an error.
func (im *importer) tensor(tp *onnxpb.TensorProto, c tensorCtx) (*ir.Tensor, bool) {
	name := tp.GetName()
	fail := func(format string, args ...any) (*ir.Tensor, bool) {
		im.tensorErr(c, name, format, args...)
		return nil, false
	}
	if tp.DataType == nil || tp.GetDataType() == int32(onnxpb.TensorProto_UNDEFINED) {
		return fail("data type is UNDEFINED; set data_type")
	}
	dt, ok := DType(tp.GetDataType())
	if !ok {
		return fail("unsupported data type %s", dtypeName(tp.GetDataType()))
	}
	shape := tp.GetDims()
	for _, d := range shape {
		if d < 0 {
			return fail("negative dimension %d in dims %v", d, shape)
		}
	}
	n, ok := ir.NumElements(shape)
	if ok && dt != ir.String {
		_, ok = dt.StorageBytes(n)
	}
	if !ok {
		return fail("dims %v have more elements than can be stored", shape)
	}
	if tp.Segment != nil {
		return fail("segmented tensors (segment begin/end) are not supported; store the whole tensor")
	}
	t := &ir.Tensor{Name: name, DType: dt, Shape: shape, Doc: tp.GetDocString()}
	info := &TensorInfo{DType: dt, MetadataProps: propsOf(tp.GetMetadataProps()), Unknown: unknownOf(tp)}
	t.Ext = info

	// Exactly one place holds the elements.
	var present []Encoding
	if tp.RawData != nil {
		present = append(present, EncRaw)
	}
	if len(tp.FloatData) > 0 {
		present = append(present, EncFloat)
	}
	if len(tp.Int32Data) > 0 {
		present = append(present, EncInt32)
	}
	if len(tp.Int64Data) > 0 {
		present = append(present, EncInt64)
	}
	if len(tp.DoubleData) > 0 {
		present = append(present, EncDouble)
	}
	if len(tp.Uint64Data) > 0 {
		present = append(present, EncUint64)
	}
	if len(tp.StringData) > 0 {
		present = append(present, EncString)
	}
	if loc := tp.GetDataLocation(); loc != onnxpb.TensorProto_DEFAULT && loc != onnxpb.TensorProto_EXTERNAL {
		return fail("unknown data_location %d; use DEFAULT (0) or EXTERNAL (1)", loc)
	}
	external := tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL
	if external {
		present = append(present, EncExternal)
	} else if len(tp.ExternalData) > 0 {
		return fail("has external_data entries but data_location is not EXTERNAL; set data_location to EXTERNAL or drop the entries")
	}
	if len(present) > 1 {
		return fail("holds its data in both %v and %v; a tensor stores its elements in exactly one place", present[0], present[1])
	}
	enc := EncRaw
	if len(present) == 1 {
		enc = present[0]
	} else if dt == ir.String {
		enc = EncString
	}
	info.Encoding = enc

	if dt == ir.String {
		switch enc {
		case EncString:
		case EncRaw:
			return fail("STRING tensor stores its data in raw_data; strings go in string_data")
		default:
			return fail("STRING tensor stores its data in %v; strings go in string_data", enc)
		}
		if int64(len(tp.StringData)) != n {
			return fail("string_data has %d elements, %v needs %d", len(tp.StringData), tensorType(dt, shape), n)
		}
		t.Strs = tp.StringData
		if t.Strs == nil {
			t.Strs = [][]byte{}
		}
		return t, true
	}
	want, _ := dt.StorageBytes(n)

	switch enc {
	case EncRaw:
		if int64(len(tp.RawData)) != want {
			return fail("raw_data has %d bytes, %v needs %d", len(tp.RawData), tensorType(dt, shape), want)
		}
		t.Raw = tp.RawData
		if t.Raw == nil {
			t.Raw = []byte{}
		}
		return t, true
	case EncExternal:
		raw, ext, ok := im.external(tp, tensorType(dt, shape), want, c)
		if !ok {
			return nil, false
		}
		t.Raw = raw
		info.External = ext
		if ext.Checksum != "" {
			info.Sum = tensorSum(t)
		}
		return t, true
	}

	// A typed field: check that it is the field ONNX puts this type in, and
	// that it holds the right number of values.
	count := n // values the field must hold
	field := typedField(dt)
	switch dt {
	case ir.Complex64, ir.Complex128:
		count = 2 * n // real and imaginary parts interleaved
	case ir.Int4, ir.Uint4, ir.Float4E2M1:
		count = (n + 1) / 2 // two elements packed into each value
	}
	if enc != field {
		return fail("%v tensor stores its data in %v; ONNX puts %v elements in %v or raw_data", dt, enc, dt, field)
	}
	// The buffer is allocated only once the field's length has matched
	// the shape: a tiny file must not make the importer allocate what a
	// huge declared shape needs.
	var raw []byte
	switch enc {
	case EncFloat:
		if int64(len(tp.FloatData)) != count {
			return fail("float_data has %d values, %v needs %d", len(tp.FloatData), tensorType(dt, shape), count)
		}
		raw = make([]byte, want)
		for i, f := range tp.FloatData {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
		}
		info.FloatData = tp.FloatData
	case EncDouble:
		if int64(len(tp.DoubleData)) != count {
			return fail("double_data has %d values, %v needs %d", len(tp.DoubleData), tensorType(dt, shape), count)
		}
		raw = make([]byte, want)
		for i, f := range tp.DoubleData {
			binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(f))
		}
		info.DoubleData = tp.DoubleData
	case EncInt64:
		if int64(len(tp.Int64Data)) != count {
			return fail("int64_data has %d values, %v needs %d", len(tp.Int64Data), tensorType(dt, shape), count)
		}
		raw = make([]byte, want)
		for i, v := range tp.Int64Data {
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
		}
		info.Int64Data = tp.Int64Data
	case EncUint64:
		if int64(len(tp.Uint64Data)) != count {
			return fail("uint64_data has %d values, %v needs %d", len(tp.Uint64Data), tensorType(dt, shape), count)
		}
		raw = make([]byte, want)
		for i, v := range tp.Uint64Data {
			if dt == ir.Uint32 {
				binary.LittleEndian.PutUint32(raw[4*i:], uint32(v))
			} else {
				binary.LittleEndian.PutUint64(raw[8*i:], v)
			}
		}
		info.Uint64Data = tp.Uint64Data
	case EncInt32:
		if int64(len(tp.Int32Data)) != count {
			return fail("int32_data has %d values, %v needs %d", len(tp.Int32Data), tensorType(dt, shape), count)
		}
		raw = make([]byte, want)
		// Every type narrower than 32 bits keeps one element per value in
		// the low bits (float16/bfloat16/float8 as bit patterns); the 4-bit
		// types keep one packed byte (two elements, the first in the low
		// nibble) per value.
		for i, v := range tp.Int32Data {
			switch dt.Bits() {
			case 32:
				binary.LittleEndian.PutUint32(raw[4*i:], uint32(v))
			case 16:
				binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
			default: // 8 bits, and 4-bit pairs
				b := byte(v)
				if dt == ir.Bool && v != 0 {
					b = 1
				}
				raw[i] = b
			}
		}
		info.Int32Data = tp.Int32Data
	}
	t.Raw = raw
	info.Sum = tensorSum(t)
	return t, true
}

// typedField is the typed TensorProto field ONNX stores dt's elements in.
func typedField(dt ir.DType) Encoding {
	switch dt {
	case ir.Float32, ir.Complex64:
		return EncFloat
	case ir.Float64, ir.Complex128:
		return EncDouble
	case ir.Int64:
		return EncInt64
	case ir.Uint32, ir.Uint64:
		return EncUint64
	case ir.String:
		return EncString
	}
	return EncInt32
}

func tensorType(dt ir.DType, shape []int64) ir.TensorType { return ir.TensorOf(dt, shape...) }

// external loads the bytes of an external tensor. Locations are relative to
// Options.BaseDir and must stay inside it, symlinks included.
func (im *importer) external(tp *onnxpb.TensorProto, typ ir.TensorType, want int64, c tensorCtx) ([]byte, *ExternalData, bool) {
	name := tp.GetName()
	fail := func(format string, args ...any) ([]byte, *ExternalData, bool) {
		im.tensorErr(c, name, "external data: "+format, args...)
		return nil, nil, false
	}
	ext := &ExternalData{Offset: 0, Length: -1, Entries: propsOf(tp.GetExternalData())}
	seen := map[string]bool{}
	for _, e := range ext.Entries {
		if seen[e.Key] {
			return fail("key %q is given twice", e.Key)
		}
		seen[e.Key] = true
		var err error
		switch e.Key {
		case "location":
			ext.Location = e.Value
		case "offset":
			ext.Offset, err = strconv.ParseInt(e.Value, 10, 64)
			if err != nil || ext.Offset < 0 {
				return fail("offset %q is not a non-negative integer", e.Value)
			}
		case "length":
			ext.Length, err = strconv.ParseInt(e.Value, 10, 64)
			if err != nil || ext.Length < 0 {
				return fail("length %q is not a non-negative integer", e.Value)
			}
		case "checksum":
			ext.Checksum = e.Value
		}
	}
	loc := ext.Location
	switch {
	case loc == "":
		return fail("no location entry; external_data must name the file that holds the tensor")
	case filepath.IsAbs(loc) || strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, `\`) || filepath.VolumeName(loc) != "":
		return fail("location %q is an absolute path; external data must be a path relative to the model's directory", loc)
	case !filepath.IsLocal(loc) || strings.Contains(loc, `\..`) || strings.HasPrefix(loc, `..\`):
		return fail("location %q leaves the model's directory; external data must lie in the model's directory or below it", loc)
	case strings.ContainsRune(loc, 0):
		return fail("location %q contains a NUL byte", loc)
	}
	if im.opts.BaseDir == "" {
		return fail("location %q is relative to the model's directory, which is unknown; use ImportFile or set Options.BaseDir", loc)
	}
	f, path, err := im.openExternal(loc)
	if err != nil {
		return fail("%v", err)
	}
	ext.Path = path
	st, err := f.Stat()
	if err != nil {
		return fail("%v", err)
	}
	size := st.Size()
	if ext.Offset > size {
		return fail("offset %d is past the end of %q (%d bytes); the file is truncated or the offset is wrong", ext.Offset, loc, size)
	}
	length := ext.Length
	if length < 0 {
		length = size - ext.Offset
	}
	if length > size-ext.Offset {
		return fail("offset %d + length %d is past the end of %q (%d bytes); the file is truncated or the entries are wrong", ext.Offset, length, loc, size)
	}
	if length != want {
		return fail("%q holds %d bytes for this tensor, %v needs %d", loc, length, typ, want)
	}
	raw := make([]byte, length)
	if _, err := f.ReadAt(raw, ext.Offset); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
		return fail("reading %q: %v", loc, err)
	}
	return raw, ext, true
}

// openExternal opens loc below BaseDir, refusing symlinks that lead outside
// it. Files are opened once per import and closed by Import.
func (im *importer) openExternal(loc string) (*os.File, string, error) {
	if f, ok := im.files[loc]; ok {
		return f.f, f.path, f.err
	}
	f, path, err := im.openExternalFile(loc)
	if im.files == nil {
		im.files = map[string]openFile{}
	}
	im.files[loc] = openFile{f, path, err}
	return f, path, err
}

type openFile struct {
	f    *os.File
	path string
	err  error
}

func (im *importer) openExternalFile(loc string) (*os.File, string, error) {
	base, err := filepath.Abs(im.opts.BaseDir)
	if err != nil {
		return nil, "", err
	}
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return nil, "", fmt.Errorf("model directory %q: %v", im.opts.BaseDir, err)
	}
	path := filepath.Join(base, loc)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("file %q does not exist in %q; copy the data file next to the model", loc, im.opts.BaseDir)
		}
		return nil, "", err
	}
	if rel, err := filepath.Rel(realBase, real); err != nil || !filepath.IsLocal(rel) {
		return nil, "", fmt.Errorf("location %q is a symlink that resolves outside the model's directory (to %q); external data must lie in the model's directory", loc, real)
	}
	// Open through an os.Root so that a symlink swapped in after the check
	// cannot lead outside the directory either.
	root, err := os.OpenRoot(realBase)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	rel, _ := filepath.Rel(realBase, real)
	f, err := root.Open(rel)
	if err != nil {
		return nil, "", err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, "", fmt.Errorf("location %q is not a regular file", loc)
	}
	return f, real, nil
}

// sparse decodes a sparse initializer into a dense tensor named name.
func (im *importer) sparse(sp *onnxpb.SparseTensorProto, c tensorCtx) (*ir.Tensor, bool) {
	vp, ip := sp.GetValues(), sp.GetIndices()
	name := vp.GetName()
	fail := func(format string, args ...any) (*ir.Tensor, bool) {
		im.tensorErr(c, name, "sparse tensor: "+format, args...)
		return nil, false
	}
	if vp == nil || ip == nil {
		return fail("needs both values and indices")
	}
	dims := sp.GetDims()
	for _, d := range dims {
		if d < 0 {
			return fail("negative dimension %d in dims %v", d, dims)
		}
	}
	n, ok := ir.NumElements(dims)
	if !ok {
		return fail("dims %v have more elements than can be stored", dims)
	}
	values, ok := im.tensor(vp, tensorCtx{c.pos, joinWhat(c.what, "sparse values")})
	if !ok {
		return nil, false
	}
	indices, ok := im.tensor(ip, tensorCtx{c.pos, joinWhat(c.what, "sparse indices")})
	if !ok {
		return nil, false
	}
	if len(values.Shape) != 1 {
		return fail("values must be one-dimensional, have dims %v", values.Shape)
	}
	nnz := values.Shape[0]
	idx, ok := indices.Int64s()
	if !ok {
		return fail("indices must be an integer tensor, are %v", indices.DType)
	}
	rank := int64(len(dims))
	switch {
	case len(indices.Shape) == 1 && indices.Shape[0] == nnz:
	case len(indices.Shape) == 2 && indices.Shape[0] == nnz && indices.Shape[1] == rank:
	default:
		return fail("indices have dims %v; want [%d] or [%d,%d]", indices.Shape, nnz, nnz, rank)
	}
	dt := values.DType
	t := &ir.Tensor{Name: name, DType: dt, Shape: dims, Doc: vp.GetDocString()}
	var want int64
	if dt == ir.String {
		want = n * 16 // an estimate for the limit below
	} else {
		want, _ = dt.StorageBytes(n)
	}
	if limit := im.opts.maxSparseBytes(); want > limit {
		return fail("dense form needs %d bytes, more than the %d-byte limit (Options.MaxSparseBytes)", want, limit)
	}
	if dt == ir.String {
		t.Strs = make([][]byte, n)
		for i := range t.Strs {
			t.Strs[i] = []byte{}
		}
	} else {
		t.Raw = make([]byte, want)
	}
	bits := int64(dt.Bits())
	for k := range nnz {
		var lin int64
		if len(indices.Shape) == 1 {
			lin = idx[k]
			if lin < 0 || lin >= n {
				return fail("linear index %d of value %d is outside [0,%d)", lin, k, n)
			}
		} else {
			for j := range rank {
				x := idx[k*rank+j]
				if x < 0 || x >= dims[j] {
					return fail("index %d of value %d is outside [0,%d) on axis %d", x, k, dims[j], j)
				}
				lin = lin*dims[j] + x
			}
		}
		switch {
		case dt == ir.String:
			t.Strs[lin] = values.Strs[k]
		case bits == 4:
			nib := values.Raw[k/2] >> (4 * (k % 2)) & 0xf
			shift := 4 * (lin % 2)
			t.Raw[lin/2] = t.Raw[lin/2]&^(0xf<<shift) | nib<<shift
		default:
			sz := bits / 8
			copy(t.Raw[lin*sz:(lin+1)*sz], values.Raw[k*sz:(k+1)*sz])
		}
	}
	info := &TensorInfo{
		DType:    dt,
		Encoding: EncRaw,
		Sparse:   &SparseInfo{Values: values, Indices: indices, Dims: dims},
	}
	info.Sum = tensorSum(t)
	t.Ext = info
	return t, true
}

func joinWhat(what, more string) string {
	if what == "" {
		return more
	}
	return what + ": " + more
}
