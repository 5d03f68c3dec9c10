package ort

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
)

// RandomTensor returns a tensor of the given type and shape filled from a
// deterministic generator (SplitMix64) seeded with seed: the same arguments
// give the same bytes on every platform and Go version.
//
//   - float, double, float16, bfloat16: uniform in [-1, 1) on a grid every
//     value of which the type represents exactly (steps of 2^-23, 2^-52,
//     2^-10 and 2^-7).
//   - integer types: uniform in [0, 4), small and non-negative so that they
//     are valid as indices, axes or counts in most places; callers replace
//     inputs that need other values.
//   - bool: 0 or 1 with equal probability.
func RandomTensor(dtype string, shape []int64, seed uint64) (Tensor, error) {
	size, err := ElemSize(dtype)
	if err != nil {
		return Tensor{}, err
	}
	for i, d := range shape {
		if d < 0 {
			return Tensor{}, fmt.Errorf("shape %v: dim %d is negative", shape, i)
		}
	}
	n := NumElements(shape)
	if n > math.MaxInt32 {
		return Tensor{}, fmt.Errorf("shape %v: %d elements is too many", shape, n)
	}
	data := make([]byte, int(n)*size)
	rng := splitMix64{state: seed}
	le := binary.LittleEndian
	for i := 0; i < int(n); i++ {
		u := rng.next()
		b := data[i*size:]
		switch dtype {
		case "float":
			k := int64(u >> 40) // 24 bits
			le.PutUint32(b, math.Float32bits(float32(k-1<<23)/(1<<23)))
		case "double":
			k := int64(u >> 11) // 53 bits
			le.PutUint64(b, math.Float64bits(float64(k-1<<52)/(1<<52)))
		case "float16":
			k := int64(u >> 53) // 11 bits
			le.PutUint16(b, Float32ToHalf(float32(k-1<<10)/(1<<10)))
		case "bfloat16":
			k := int64(u >> 56) // 8 bits
			le.PutUint16(b, uint16(math.Float32bits(float32(k-1<<7)/(1<<7))>>16))
		case "bool":
			b[0] = byte(u >> 63)
		default: // integer types, little-endian, value in [0, 4)
			b[0] = byte(u >> 62)
		}
	}
	return Tensor{DType: dtype, Shape: append([]int64{}, shape...), Data: data}, nil
}

// inputSeed derives the seed of one named input from the run's seed, so that
// an input's values do not depend on the order or number of the others.
func inputSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	r := splitMix64{state: seed ^ h.Sum64()}
	return r.next()
}

// splitMix64 is Steele, Lea and Flood's SplitMix64 generator.
type splitMix64 struct{ state uint64 }

func (s *splitMix64) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float32ToHalf converts f to IEEE 754 binary16 bits, rounding to nearest
// even, with overflow to infinity and gradual underflow.
func Float32ToHalf(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23) & 0xff
	mant := bits & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // too large
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e <= 0 { // subnormal half (or zero)
		if e < -10 {
			return sign
		}
		m := mant | 0x800000 // implicit bit
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to infinity: correct
	}
	return sign | uint16(half)
}

// HalfToFloat32 converts IEEE 754 binary16 bits to float32 (exactly).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: mant × 2^-24
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
