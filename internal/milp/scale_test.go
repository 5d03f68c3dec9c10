package milp

import "testing"

func TestMemoryScale(t *testing.T) {
	for _, tt := range []struct {
		sizes   []int64
		maxBits int
		gcd     int64
		shift   uint
	}{
		{nil, 11, 1, 0},
		{[]int64{0, 0}, 11, 1, 0},
		{[]int64{256, 1024, 0, 768}, 11, 256, 0},         // 4 = 2^2 fits in 11 bits
		{[]int64{1 << 20, 3 << 20}, 1, 1 << 20, 1},       // 3 needs 2 bits: one shift
		{[]int64{6, 10 << 30, 14}, 11, 2, uint(33 - 11)}, // 5·2^30 is 33 bits
	} {
		g, s := MemoryScale(tt.sizes, tt.maxBits)
		if g != tt.gcd || s != tt.shift {
			t.Errorf("MemoryScale(%v, %d) = %d, %d; want %d, %d", tt.sizes, tt.maxBits, g, s, tt.gcd, tt.shift)
		}
	}
	if u := ObjectiveUnit([]float64{0.3, 1.7e-3, 0}); u != 0.25 {
		t.Errorf("ObjectiveUnit = %v, want 0.25", u)
	}
	if u := ObjectiveUnit([]float64{0, 0}); u != 1 {
		t.Errorf("ObjectiveUnit of zero costs = %v, want 1", u)
	}
	if g := GCD(0, 12); g != 12 {
		t.Errorf("GCD(0, 12) = %d", g)
	}
}
