package ir

import (
	"strconv"
	"strings"
)

// Dim is one dimension of a shape: a known size, a named symbol (a dynamic
// dimension such as "batch"), or unknown (Size < 0 and no symbol).
type Dim struct {
	Size int64  // the size when known; -1 when symbolic or unknown
	Sym  string // the symbol's name for a named dynamic dimension
}

// D returns a dimension of known size n.
func D(n int64) Dim { return Dim{Size: n} }

// SymDim returns a named dynamic dimension.
func SymDim(name string) Dim { return Dim{Size: -1, Sym: name} }

// UnknownDim is a dimension about which nothing is known.
var UnknownDim = Dim{Size: -1}

// Known reports whether the dimension has a concrete size.
func (d Dim) Known() bool { return d.Sym == "" && d.Size >= 0 }

func (d Dim) String() string {
	switch {
	case d.Known():
		return strconv.FormatInt(d.Size, 10)
	case d.Sym != "":
		return d.Sym
	}
	return "?"
}

// TypeKind says what a value holds. Nearly every value is a tensor; the other
// kinds exist so that importers can represent every value of a real model.
type TypeKind uint8

const (
	KindTensor TypeKind = iota
	KindSequence
	KindOptional
	KindMap
	KindSparseTensor
	KindOpaque
)

var kindNames = [...]string{"tensor", "seq", "opt", "map", "sparse", "opaque"}

func (k TypeKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// TensorType is the type of a value: an element type and a shape. For
// sequences and optionals, DType and Shape describe the element tensor when
// known. A scalar has Ranked true (the default) and an empty Shape; a value of
// unknown rank has Unranked set.
type TensorType struct {
	Kind     TypeKind
	DType    DType
	Shape    []Dim
	Unranked bool
}

// TensorOf returns the tensor type of element type dt with the given static
// dimensions.
func TensorOf(dt DType, dims ...int64) TensorType {
	s := make([]Dim, len(dims))
	for i, n := range dims {
		s[i] = D(n)
	}
	return TensorType{DType: dt, Shape: s}
}

// Rank is the number of dimensions, or -1 when unknown.
func (t TensorType) Rank() int {
	if t.Unranked {
		return -1
	}
	return len(t.Shape)
}

// Static reports whether t is a tensor of known rank whose every dimension
// has a known size.
func (t TensorType) Static() bool {
	if t.Kind != KindTensor || t.Unranked {
		return false
	}
	for _, d := range t.Shape {
		if !d.Known() {
			return false
		}
	}
	return true
}

// Dims returns the sizes of a static shape; ok is false if any is unknown.
func (t TensorType) Dims() (dims []int64, ok bool) {
	if !t.Static() {
		return nil, false
	}
	dims = make([]int64, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = d.Size
	}
	return dims, true
}

// NumElements is the product of the dimensions of a static shape; ok is false
// when the shape is not static or the product overflows.
func (t TensorType) NumElements() (n int64, ok bool) {
	if !t.Static() {
		return 0, false
	}
	return numElements(t.Shape)
}

// NumElements is the number of elements of a tensor with dimensions dims
// (1 for a scalar); ok is false when a dimension is negative or the product
// overflows.
func NumElements(dims []int64) (n int64, ok bool) {
	for _, d := range dims {
		if d == 0 {
			return 0, true
		}
	}
	n = 1
	for _, d := range dims {
		if d < 0 || n > (1<<62)/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

func numElements(shape []Dim) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d.Size == 0 {
			return 0, true
		}
	}
	for _, d := range shape {
		if d.Size < 0 || (d.Size > 0 && n > (1<<62)/d.Size) {
			return 0, false
		}
		n *= d.Size
	}
	return n, true
}

// Bytes is the exact storage size of a value of this type: elements times the
// element size, with sub-byte types packed as ONNX packs them. ok is false
// when the size is unknown: a non-tensor kind, a dynamic dimension, a
// variable-size element type, or overflow.
func (t TensorType) Bytes() (n int64, ok bool) {
	elems, ok := t.NumElements()
	if !ok {
		return 0, false
	}
	return t.DType.StorageBytes(elems)
}

// Equal reports whether two types are identical, symbols included.
func (t TensorType) Equal(u TensorType) bool {
	if t.Kind != u.Kind || t.DType != u.DType || t.Unranked != u.Unranked || len(t.Shape) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != u.Shape[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of t that shares no memory with it.
func (t TensorType) Clone() TensorType {
	t.Shape = append([]Dim(nil), t.Shape...)
	return t
}

// String prints the type in the text form: f32[1,3,224,224], i64[], f32[?],
// seq<f32[?,4]>, f32[*] for unknown rank.
func (t TensorType) String() string {
	var b strings.Builder
	if t.Kind != KindTensor {
		b.WriteString(t.Kind.String())
		b.WriteByte('<')
	}
	b.WriteString(t.DType.String())
	if t.Unranked {
		b.WriteString("[*]")
	} else {
		b.WriteByte('[')
		for i, d := range t.Shape {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(d.String())
		}
		b.WriteByte(']')
	}
	if t.Kind != KindTensor {
		b.WriteByte('>')
	}
	return b.String()
}
