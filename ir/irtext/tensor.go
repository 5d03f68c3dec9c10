package irtext

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// inlineLimit is the most elements a tensor may have for its values to be
// printed one by one; larger tensors print as a splat when every element is
// the same, else as raw hex.
const inlineLimit = 16

// The NaN bit patterns that print as plain "nan"; every other NaN prints
// with its bits, as nan(0x7fa00000), so that payloads round-trip.
const (
	canonNaN16   = 0x7e00
	canonNaNBF16 = 0x7fc0
	canonNaN32   = 0x7fc00000
	canonNaN64   = 0x7ff8000000000000
)

type elemKind uint8

const (
	ekRaw    elemKind = iota // no element syntax: raw hex only
	ekFloat                  // f16, bf16, f32, f64
	ekInt                    // signed integers, i4 included
	ekUint                   // unsigned integers, u4 included
	ekBool                   // true, false
	ekString                 // quoted strings
)

func elemKindOf(dt ir.DType) elemKind {
	switch dt {
	case ir.Float16, ir.BFloat16, ir.Float32, ir.Float64:
		return ekFloat
	case ir.Int4, ir.Int8, ir.Int16, ir.Int32, ir.Int64:
		return ekInt
	case ir.Uint4, ir.Uint8, ir.Uint16, ir.Uint32, ir.Uint64:
		return ekUint
	case ir.Bool:
		return ekBool
	case ir.String:
		return ekString
	}
	return ekRaw
}

// getElem returns the bits of element i of raw data of type dt.
func getElem(raw []byte, dt ir.DType, i int) uint64 {
	switch dt.Bits() {
	case 4:
		return uint64(raw[i/2]>>(4*(i%2))) & 0xf
	case 8:
		return uint64(raw[i])
	case 16:
		return uint64(binary.LittleEndian.Uint16(raw[2*i:]))
	case 32:
		return uint64(binary.LittleEndian.Uint32(raw[4*i:]))
	case 64:
		return binary.LittleEndian.Uint64(raw[8*i:])
	}
	panic("irtext: getElem of " + dt.String())
}

// putElem stores bits as element i; for 4-bit types raw must start zeroed.
func putElem(raw []byte, dt ir.DType, i int, bits uint64) {
	switch dt.Bits() {
	case 4:
		raw[i/2] |= byte(bits&0xf) << (4 * (i % 2))
	case 8:
		raw[i] = byte(bits)
	case 16:
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(bits))
	case 32:
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(bits))
	case 64:
		binary.LittleEndian.PutUint64(raw[8*i:], bits)
	default:
		panic("irtext: putElem of " + dt.String())
	}
}

// formatElem writes element bits of type dt in the text form.
func formatElem(dt ir.DType, bits uint64) string {
	switch dt {
	case ir.Float32:
		return formatFloat(float64(math.Float32frombits(uint32(bits))), bits, canonNaN32, 32, 8)
	case ir.Float64:
		return formatFloat(math.Float64frombits(bits), bits, canonNaN64, 64, 16)
	case ir.Float16:
		return formatFloat(float64(ir.HalfToFloat32(uint16(bits))), bits, canonNaN16, 32, 4)
	case ir.BFloat16:
		return formatFloat(float64(math.Float32frombits(uint32(bits)<<16)), bits, canonNaNBF16, 32, 4)
	case ir.Int4:
		return strconv.FormatInt(int64(bits<<60)>>60, 10)
	case ir.Int8:
		return strconv.FormatInt(int64(int8(bits)), 10)
	case ir.Int16:
		return strconv.FormatInt(int64(int16(bits)), 10)
	case ir.Int32:
		return strconv.FormatInt(int64(int32(bits)), 10)
	case ir.Int64:
		return strconv.FormatInt(int64(bits), 10)
	case ir.Uint4, ir.Uint8, ir.Uint16, ir.Uint32, ir.Uint64:
		return strconv.FormatUint(bits, 10)
	case ir.Bool:
		return strconv.FormatBool(bits != 0)
	}
	panic("irtext: formatElem of " + dt.String())
}

// formatFloat is the shortest decimal that reads back as the same value at
// the given precision; infinities are inf and -inf; NaNs are nan, or
// nan(0x…) with their bits when they are not the canonical NaN.
func formatFloat(f float64, bits, canon uint64, prec, hexDigits int) string {
	switch {
	case math.IsNaN(f):
		if bits == canon {
			return "nan"
		}
		return fmt.Sprintf("nan(0x%0*x)", hexDigits, bits)
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, prec)
}

// formatAttrFloat is formatFloat for a float attribute: it always contains
// a '.', an exponent, or a letter, so that it does not read as an int.
func formatAttrFloat(f float32) string {
	s := formatFloat(float64(f), uint64(math.Float32bits(f)), canonNaN32, 32, 8)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'n' {
			return s
		}
	}
	return s + ".0"
}

// parseFloatElem converts a number token (or inf, nan) to the bits of an
// element of float type dt.
func parseFloatElem(dt ir.DType, text string) (uint64, error) {
	prec := 32
	if dt == ir.Float64 {
		prec = 64
	}
	f, err := strconv.ParseFloat(text, prec)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("%s is out of range for %v", text, dt)
		}
		return 0, fmt.Errorf("invalid %v value %s", dt, text)
	}
	var bits uint64
	switch dt {
	case ir.Float64:
		bits = math.Float64bits(f)
		if math.IsNaN(f) {
			bits = canonNaN64
		}
	case ir.Float32:
		bits = uint64(math.Float32bits(float32(f)))
		if math.IsNaN(f) {
			bits = canonNaN32
		}
	case ir.Float16:
		bits = uint64(float32ToHalf(float32(f)))
		if math.IsNaN(f) {
			bits = canonNaN16
		}
		if bits&0x7fff == 0x7c00 && !math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s is out of range for %v", text, dt)
		}
	case ir.BFloat16:
		bits = uint64(float32ToBFloat16(float32(f)))
		if math.IsNaN(f) {
			bits = canonNaNBF16
		}
		if bits&0x7fff == 0x7f80 && !math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s is out of range for %v", text, dt)
		}
	}
	return bits, nil
}

// checkNaNBits checks that bits, written as nan(bits), are a NaN of type dt.
func checkNaNBits(dt ir.DType, bits uint64) error {
	var ok bool
	switch dt {
	case ir.Float64:
		ok = math.IsNaN(math.Float64frombits(bits))
	case ir.Float32:
		ok = bits <= math.MaxUint32 && math.IsNaN(float64(math.Float32frombits(uint32(bits))))
	case ir.Float16:
		ok = bits <= math.MaxUint16 && bits&0x7c00 == 0x7c00 && bits&0x3ff != 0
	case ir.BFloat16:
		ok = bits <= math.MaxUint16 && bits&0x7f80 == 0x7f80 && bits&0x7f != 0
	}
	if !ok {
		return fmt.Errorf("%#x is not the bit pattern of a %v NaN", bits, dt)
	}
	return nil
}

// parseIntElem converts a number token to the bits of an element of integer
// type dt.
func parseIntElem(dt ir.DType, text string) (uint64, error) {
	bad := func(err error) error {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return fmt.Errorf("%s is out of range for %v", text, dt)
		}
		return fmt.Errorf("invalid %v value %s", dt, text)
	}
	if elemKindOf(dt) == ekUint {
		bits := dt.Bits()
		if bits == 4 {
			bits = 8
		}
		u, err := strconv.ParseUint(text, 10, bits)
		if err != nil {
			return 0, bad(err)
		}
		if dt == ir.Uint4 && u > 15 {
			return 0, fmt.Errorf("%s is out of range for %v", text, dt)
		}
		return u, nil
	}
	bits := dt.Bits()
	if bits == 4 {
		bits = 8
	}
	n, err := strconv.ParseInt(text, 10, bits)
	if err != nil {
		return 0, bad(err)
	}
	if dt == ir.Int4 && (n < -8 || n > 7) {
		return 0, fmt.Errorf("%s is out of range for %v", text, dt)
	}
	if dt.Bits() < 64 {
		return uint64(n) & (1<<dt.Bits() - 1), nil
	}
	return uint64(n), nil
}

// float32ToHalf rounds f to the nearest IEEE 754 binary16 value, ties to
// even; it is exact for every value HalfToFloat32 returns.
func float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		m := uint16(mant >> 13)
		if m == 0 {
			m = 0x200
		}
		return sign | 0x7c00 | m
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if exp == 0 { // f32 subnormals are far below the half range
			return sign
		}
		s := uint(14 - e) // right shift of the 24-bit significand
		if s > 25 {
			return sign
		}
		m := mant | 0x800000
		q, r, half := m>>s, m&(1<<s-1), uint32(1)<<(s-1)
		if r > half || r == half && q&1 == 1 {
			q++
		}
		return sign | uint16(q)
	}
	h := uint32(e)<<10 | mant>>13
	if r := mant & 0x1fff; r > 0x1000 || r == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent, up to infinity: both correct
	}
	return sign | uint16(h)
}

// float32ToBFloat16 rounds f to the nearest bfloat16 value, ties to even.
func float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if math.IsNaN(float64(f)) {
		h := uint16(b >> 16)
		if h&0x7f == 0 {
			h |= 0x40
		}
		return h
	}
	q, r := b>>16, b&0xffff
	if r > 0x8000 || r == 0x8000 && q&1 == 1 {
		q++
	}
	return uint16(q)
}

// dataForm is how a tensor's data prints.
type dataForm uint8

const (
	formRaw dataForm = iota
	formElems
	formSplat
)

// tensorForm reports how t's data prints, and for elements how many.
func tensorForm(t *ir.Tensor) (dataForm, int) {
	k := elemKindOf(t.DType)
	if k == ekRaw || t.CheckSize() != nil {
		if k == ekString {
			return formElems, len(t.Strs) // parses back only if the count is right
		}
		return formRaw, 0
	}
	n := int(t.NumElements())
	if k == ekString {
		if n > inlineLimit && allSame(t.Strs) {
			return formSplat, n
		}
		return formElems, n
	}
	switch {
	case k == ekBool:
		for _, c := range t.Raw {
			if c > 1 {
				return formRaw, 0
			}
		}
	case t.DType.Bits() == 4 && n%2 == 1:
		if t.Raw[n/2]>>4 != 0 {
			return formRaw, 0 // the padding nibble carries data
		}
	}
	if n <= inlineLimit {
		return formElems, n
	}
	first := getElem(t.Raw, t.DType, 0)
	if t.DType.Bits() >= 8 {
		size := t.DType.Bits() / 8
		for i := size; i < len(t.Raw); i += size {
			if !bytes.Equal(t.Raw[i:i+size], t.Raw[:size]) {
				return formRaw, 0
			}
		}
	} else {
		for i := 1; i < n; i++ {
			if getElem(t.Raw, t.DType, i) != first {
				return formRaw, 0
			}
		}
	}
	return formSplat, n
}

func allSame(s [][]byte) bool {
	for _, x := range s[1:] {
		if !bytes.Equal(x, s[0]) {
			return false
		}
	}
	return true
}
