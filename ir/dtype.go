package ir

import "fmt"

// DType is the element type of a tensor. The numbering is the IR's own;
// importers and exporters map their formats' enums onto it.
type DType uint8

const (
	Undefined DType = iota
	Float32
	Float64
	Float16
	BFloat16
	Float8E4M3FN
	Float8E4M3FNUZ
	Float8E5M2
	Float8E5M2FNUZ
	Float4E2M1
	Int4
	Int8
	Int16
	Int32
	Int64
	Uint4
	Uint8
	Uint16
	Uint32
	Uint64
	Bool
	String
	Complex64
	Complex128
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name  string // short name used by the text form
	bits  int    // storage bits per element; 0 means variable (String) or unknown
	float bool
	sign  bool
}{
	Undefined:      {"undef", 0, false, false},
	Float32:        {"f32", 32, true, true},
	Float64:        {"f64", 64, true, true},
	Float16:        {"f16", 16, true, true},
	BFloat16:       {"bf16", 16, true, true},
	Float8E4M3FN:   {"f8e4m3fn", 8, true, true},
	Float8E4M3FNUZ: {"f8e4m3fnuz", 8, true, true},
	Float8E5M2:     {"f8e5m2", 8, true, true},
	Float8E5M2FNUZ: {"f8e5m2fnuz", 8, true, true},
	Float4E2M1:     {"f4e2m1", 4, true, true},
	Int4:           {"i4", 4, false, true},
	Int8:           {"i8", 8, false, true},
	Int16:          {"i16", 16, false, true},
	Int32:          {"i32", 32, false, true},
	Int64:          {"i64", 64, false, true},
	Uint4:          {"u4", 4, false, false},
	Uint8:          {"u8", 8, false, false},
	Uint16:         {"u16", 16, false, false},
	Uint32:         {"u32", 32, false, false},
	Uint64:         {"u64", 64, false, false},
	Bool:           {"bool", 8, false, false},
	String:         {"string", 0, false, false},
	Complex64:      {"c64", 64, true, true},
	Complex128:     {"c128", 128, true, true},
}

// String returns the short name of the type ("f32", "i64", …).
func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfo[d].name
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Bits is the storage size of one element in bits: 4 for the packed 4-bit
// types, 0 for String and Undefined, whose size is not fixed.
func (d DType) Bits() int {
	if d < numDTypes {
		return dtypeInfo[d].bits
	}
	return 0
}

// IsFloat reports whether d is a floating-point (or complex) type.
func (d DType) IsFloat() bool { return d < numDTypes && dtypeInfo[d].float }

// IsInt reports whether d is an integer type (Bool excluded).
func (d DType) IsInt() bool {
	return d < numDTypes && d != Bool && d != String && d != Undefined && !dtypeInfo[d].float
}

// Valid reports whether d is a known element type other than Undefined.
func (d DType) Valid() bool { return d > Undefined && d < numDTypes }

// ParseDType is the inverse of DType.String.
func ParseDType(s string) (DType, bool) {
	for d := DType(0); d < numDTypes; d++ {
		if dtypeInfo[d].name == s {
			return d, true
		}
	}
	return Undefined, false
}

// StorageBytes is the exact number of bytes n elements of type d occupy,
// with 4-bit types packed two to a byte (rounded up), as ONNX stores them.
// It reports false when the size is not fixed (String, Undefined) or
// overflows int64.
func (d DType) StorageBytes(n int64) (int64, bool) {
	bits := int64(d.Bits())
	if bits == 0 || n < 0 {
		return 0, false
	}
	if n > (1<<62)/bits {
		return 0, false
	}
	return (n*bits + 7) / 8, true
}
