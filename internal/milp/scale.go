package milp

import (
	"math"
	"math/bits"
)

// Exact scaling of a model's coefficients. Byte counts reach 2^40 and
// more, costs span many decades; a MILP solver works best with
// coefficients of moderate size, and a model must stay exact. Memory is
// counted in units of g·2^s bytes: g, the greatest common divisor of the
// sizes, divides every size exactly, and dividing an integer below 2^53 by
// a power of two is exact in float64. Costs are counted in a power of two
// of seconds.

// MemoryScale returns the gcd g of the positive sizes (1 when there are
// none) and the smallest shift s for which the largest size / g, divided
// by 2^s, is below 2^maxBits.
func MemoryScale(sizes []int64, maxBits int) (gcd int64, shift uint) {
	for _, b := range sizes {
		if b > 0 {
			gcd = GCD(gcd, b)
		}
	}
	if gcd == 0 {
		gcd = 1
	}
	var largest int64
	for _, b := range sizes {
		largest = max(largest, b/gcd)
	}
	if l := bits.Len64(uint64(largest)); l > maxBits {
		shift = uint(l - maxBits)
	}
	return gcd, shift
}

// ObjectiveUnit returns the power of two nearest below the largest cost,
// 1 when every cost is 0.
func ObjectiveUnit(costs []float64) float64 {
	largest := 0.0
	for _, c := range costs {
		largest = max(largest, c)
	}
	if largest <= 0 {
		return 1
	}
	_, e := math.Frexp(largest)
	return math.Ldexp(1, e-1)
}

// GCD returns the greatest common divisor of a and b, non-negative
// integers (GCD(0, b) = b).
func GCD(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
