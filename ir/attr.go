package ir

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// AttrKind is the kind of an attribute value.
type AttrKind uint8

const (
	AttrUndefined AttrKind = iota
	AttrInt
	AttrFloat
	AttrString
	AttrTensor
	AttrGraph
	AttrInts
	AttrFloats
	AttrStrings
	AttrTensors
	AttrGraphs
	// AttrOther is an attribute whose value the IR does not model (a type,
	// a sparse tensor, a reference to a function attribute); the importer
	// keeps it in Ext for its exporter.
	AttrOther
)

var attrKindNames = [...]string{"undef", "int", "float", "string", "tensor", "graph", "ints", "floats", "strings", "tensors", "graphs", "other"}

func (k AttrKind) String() string {
	if int(k) < len(attrKindNames) {
		return attrKindNames[k]
	}
	return fmt.Sprintf("attrkind(%d)", uint8(k))
}

// Attr is one named attribute of a node. Only the field that Kind names is
// meaningful. Strings are bytes because formats allow any bytes there.
type Attr struct {
	Name    string
	Kind    AttrKind
	Int     int64
	Float   float32
	Str     []byte
	Ints    []int64
	Floats  []float32
	Strs    [][]byte
	Tensor  *Tensor
	Tensors []*Tensor
	Graph   *Graph
	Graphs  []*Graph
	Doc     string
	Ext     any
}

// Attr returns the attribute called name, or nil.
func (n *Node) Attr(name string) *Attr {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			return &n.Attrs[i]
		}
	}
	return nil
}

// SetAttr adds a or replaces the attribute of the same name. Graph-valued
// attributes get n as their Owner.
func (n *Node) SetAttr(a Attr) {
	if a.Graph != nil {
		a.Graph.Owner = n
	}
	for _, g := range a.Graphs {
		g.Owner = n
	}
	if old := n.Attr(a.Name); old != nil {
		*old = a
		return
	}
	n.Attrs = append(n.Attrs, a)
}

// DelAttr removes the attribute called name, if present.
func (n *Node) DelAttr(name string) {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			n.Attrs = append(n.Attrs[:i], n.Attrs[i+1:]...)
			return
		}
	}
}

// Clone returns a copy of a whose slices are its own and whose tensors
// are copied shallowly (their data is shared, read-only). Subgraphs are
// shared: a copy for another node must copy them itself.
func (a Attr) Clone() Attr {
	a.Str = slices.Clone(a.Str)
	a.Ints = slices.Clone(a.Ints)
	a.Floats = slices.Clone(a.Floats)
	if a.Strs != nil {
		strs := make([][]byte, len(a.Strs))
		for i, s := range a.Strs {
			strs[i] = slices.Clone(s)
		}
		a.Strs = strs
	}
	if a.Tensor != nil {
		t := *a.Tensor
		a.Tensor = &t
	}
	if a.Tensors != nil {
		ts := make([]*Tensor, len(a.Tensors))
		for i, t := range a.Tensors {
			if t != nil {
				c := *t
				ts[i] = &c
			}
		}
		a.Tensors = ts
	}
	a.Graphs = slices.Clone(a.Graphs)
	return a
}

// AttrInt returns the int attribute name, or def when absent.
func (n *Node) AttrInt(name string, def int64) int64 {
	if a := n.Attr(name); a != nil && a.Kind == AttrInt {
		return a.Int
	}
	return def
}

// AttrFloat returns the float attribute name, or def when absent.
func (n *Node) AttrFloat(name string, def float32) float32 {
	if a := n.Attr(name); a != nil && a.Kind == AttrFloat {
		return a.Float
	}
	return def
}

// AttrString returns the string attribute name, or def when absent.
func (n *Node) AttrString(name, def string) string {
	if a := n.Attr(name); a != nil && a.Kind == AttrString {
		return string(a.Str)
	}
	return def
}

// AttrInts returns the ints attribute name and whether it is present.
func (n *Node) AttrInts(name string) ([]int64, bool) {
	if a := n.Attr(name); a != nil && a.Kind == AttrInts {
		return a.Ints, true
	}
	return nil, false
}

// AttrFloats returns the floats attribute name and whether it is present.
func (n *Node) AttrFloats(name string) ([]float32, bool) {
	if a := n.Attr(name); a != nil && a.Kind == AttrFloats {
		return a.Floats, true
	}
	return nil, false
}

// IntAttr, FloatAttr, StringAttr, IntsAttr and FloatsAttr build attributes.
func IntAttr(name string, v int64) Attr     { return Attr{Name: name, Kind: AttrInt, Int: v} }
func FloatAttr(name string, v float32) Attr { return Attr{Name: name, Kind: AttrFloat, Float: v} }
func StringAttr(name, v string) Attr        { return Attr{Name: name, Kind: AttrString, Str: []byte(v)} }
func IntsAttr(name string, v ...int64) Attr { return Attr{Name: name, Kind: AttrInts, Ints: v} }
func FloatsAttr(name string, v ...float32) Attr {
	return Attr{Name: name, Kind: AttrFloats, Floats: v}
}
func TensorAttr(name string, t *Tensor) Attr { return Attr{Name: name, Kind: AttrTensor, Tensor: t} }
func GraphAttr(name string, g *Graph) Attr   { return Attr{Name: name, Kind: AttrGraph, Graph: g} }

// Tensor is constant tensor data: weights, attribute tensors, folded
// constants. Raw holds the elements little-endian, sub-byte types packed two
// to a byte (low nibble first), Bool as one byte each; String tensors use
// Strs instead.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Raw   []byte
	Strs  [][]byte
	Doc   string
	// Ext keeps format-specific encoding details (which typed field the
	// data came from, external storage) so that an exporter can write the
	// tensor back as it was read.
	Ext any
}

// NumElements is the product of Shape (1 for a scalar).
func (t *Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Type is the tensor type of t.
func (t *Tensor) Type() TensorType { return TensorOf(t.DType, t.Shape...) }

// CheckSize reports an error when len(Raw) does not match the shape and type.
func (t *Tensor) CheckSize() error {
	if t.DType == String {
		if int64(len(t.Strs)) != t.NumElements() {
			return fmt.Errorf("string tensor has %d elements, shape %v needs %d", len(t.Strs), t.Shape, t.NumElements())
		}
		return nil
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("negative dimension %d in shape %v", d, t.Shape)
		}
	}
	want, ok := t.Type().Bytes()
	if !ok {
		return fmt.Errorf("size of %v%v is not representable", t.DType, t.Shape)
	}
	if int64(len(t.Raw)) != want {
		return fmt.Errorf("tensor data has %d bytes, %v%v needs %d", len(t.Raw), t.DType, t.Shape, want)
	}
	return nil
}

// Int64s decodes the elements of an integer or bool tensor as int64. It
// reports false for other element types or a size mismatch.
func (t *Tensor) Int64s() ([]int64, bool) {
	if t.CheckSize() != nil {
		return nil, false
	}
	n := int(t.NumElements())
	out := make([]int64, n)
	r := t.Raw
	for i := range n {
		switch t.DType {
		case Int64:
			out[i] = int64(binary.LittleEndian.Uint64(r[8*i:]))
		case Uint64:
			out[i] = int64(binary.LittleEndian.Uint64(r[8*i:]))
		case Int32:
			out[i] = int64(int32(binary.LittleEndian.Uint32(r[4*i:])))
		case Uint32:
			out[i] = int64(binary.LittleEndian.Uint32(r[4*i:]))
		case Int16:
			out[i] = int64(int16(binary.LittleEndian.Uint16(r[2*i:])))
		case Uint16:
			out[i] = int64(binary.LittleEndian.Uint16(r[2*i:]))
		case Int8:
			out[i] = int64(int8(r[i]))
		case Uint8, Bool:
			out[i] = int64(r[i])
		default:
			return nil, false
		}
	}
	return out, true
}

// Float64s decodes the elements of a float32, float64, float16 or bfloat16
// tensor, or of an integer tensor, as float64.
func (t *Tensor) Float64s() ([]float64, bool) {
	if t.CheckSize() != nil {
		return nil, false
	}
	n := int(t.NumElements())
	out := make([]float64, n)
	r := t.Raw
	switch t.DType {
	case Float32:
		for i := range n {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(r[4*i:])))
		}
	case Float64:
		for i := range n {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(r[8*i:]))
		}
	case Float16:
		for i := range n {
			out[i] = float64(HalfToFloat32(binary.LittleEndian.Uint16(r[2*i:])))
		}
	case BFloat16:
		for i := range n {
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2*i:])) << 16))
		}
	default:
		ints, ok := t.Int64s()
		if !ok {
			return nil, false
		}
		for i, v := range ints {
			out[i] = float64(v)
		}
	}
	return out, true
}

// HalfToFloat32 converts IEEE 754 binary16 bits to float32.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		frac &= 0x3ff
		return math.Float32frombits(sign | e<<23 | frac<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// Float32ToHalf converts f to the nearest IEEE 754 binary16 value (ties to
// even), as numpy's float16 conversion does: magnitudes beyond the largest
// half (65504) round to infinity, those below the smallest subnormal
// (2^-24) to a signed zero; NaN stays NaN.
func Float32ToHalf(f float32) uint16 {
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	a := math.Abs(float64(f))
	switch {
	case math.IsNaN(a):
		return sign | 0x7e00
	case math.IsInf(a, 0):
		return sign | 0x7c00
	}
	// a = frac · 2^exp with frac in [0.5, 1): a normal half keeps 11
	// significant bits, so its unit in the last place is 2^(exp-11), and a
	// subnormal one has the fixed unit 2^-24.
	_, exp := math.Frexp(a)
	unit := exp - 11
	if unit < -24 {
		unit = -24
	}
	q := math.RoundToEven(math.Ldexp(a, -unit)) // integer multiple of the unit
	if q >= 2048 {                              // rounding carried into the next binade
		q /= 2
		unit++
	}
	if q < 1024 { // subnormal (or zero): the unit is 2^-24
		return sign | uint16(q)
	}
	e := unit + 10 + 15 // biased exponent of q·2^unit, q in [1024, 2048)
	if e >= 31 {
		return sign | 0x7c00
	}
	return sign | uint16(e)<<10 | uint16(q-1024)
}

// Int64Tensor builds an int64 tensor of the given shape.
func Int64Tensor(shape []int64, vals ...int64) *Tensor {
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return &Tensor{DType: Int64, Shape: shape, Raw: raw}
}

// Float32Tensor builds a float32 tensor of the given shape.
func Float32Tensor(shape []int64, vals ...float32) *Tensor {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &Tensor{DType: Float32, Shape: shape, Raw: raw}
}
