package ort

import (
	"fmt"
	"math"
	"slices"
)

// Filled returns a tensor of the given type and shape whose every element
// is v (a fixed input value such as a sample rate).
func Filled(dtype string, shape []int64, v int64) (Tensor, error) {
	n := NumElements(shape)
	switch dtype {
	case "float":
		return NewTensor(shape, repeat(float32(v), n))
	case "double":
		return NewTensor(shape, repeat(float64(v), n))
	case "float16":
		h := Float32ToHalf(float32(v))
		t := Tensor{DType: dtype, Shape: slices.Clone(shape), Data: make([]byte, 2*n)}
		for i := range n {
			t.Data[2*i], t.Data[2*i+1] = byte(h), byte(h>>8)
		}
		return t, nil
	case "bfloat16":
		b := uint16(math.Float32bits(float32(v)) >> 16)
		t := Tensor{DType: dtype, Shape: slices.Clone(shape), Data: make([]byte, 2*n)}
		for i := range n {
			t.Data[2*i], t.Data[2*i+1] = byte(b), byte(b>>8)
		}
		return t, nil
	case "bool":
		return NewTensor(shape, repeat(v != 0, n))
	case "int8":
		return fillInt[int8](shape, v, n)
	case "uint8":
		return fillInt[uint8](shape, v, n)
	case "int16":
		return fillInt[int16](shape, v, n)
	case "uint16":
		return fillInt[uint16](shape, v, n)
	case "int32":
		return fillInt[int32](shape, v, n)
	case "uint32":
		return fillInt[uint32](shape, v, n)
	case "int64":
		return NewTensor(shape, repeat(v, n))
	case "uint64":
		if v < 0 {
			return Tensor{}, fmt.Errorf("%d does not fit uint64", v)
		}
		return NewTensor(shape, repeat(uint64(v), n))
	}
	return Tensor{}, fmt.Errorf("inputs of type %s cannot be filled", dtype)
}

type smallInt interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32
}

func fillInt[T smallInt](shape []int64, v, n int64) (Tensor, error) {
	x := T(v)
	if int64(x) != v {
		return Tensor{}, fmt.Errorf("%d does not fit %T", v, x)
	}
	return NewTensor(shape, repeat(x, n))
}

func repeat[T any](x T, n int64) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}
