package irtext

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// TestHalfElems round-trips every f16 and bf16 bit pattern through the
// element text.
func TestHalfElems(t *testing.T) {
	for _, dt := range []ir.DType{ir.Float16, ir.BFloat16} {
		for h := range uint64(1 << 16) {
			s := formatElem(dt, h)
			var got uint64
			var err error
			if len(s) > 4 && s[:4] == "nan(" {
				got = h // the parser reads the bits; checkNaNBits must accept them
				err = checkNaNBits(dt, h)
			} else {
				got, err = parseFloatElem(dt, s)
			}
			if err != nil || got != h {
				t.Fatalf("%v %#04x prints as %q, which reads back as %#04x, %v", dt, h, s, got, err)
			}
		}
	}
}

// TestFloat32ToHalf compares the rounding with the nearest half found by
// search, ties to even, on random and boundary float32 values.
func TestFloat32ToHalf(t *testing.T) {
	val := func(h uint16) float64 { // value of a non-negative half; 0x7c00 counts as 65536 for rounding
		if h == 0x7c00 {
			return 65536
		}
		return float64(ir.HalfToFloat32(h))
	}
	ref := func(f float32) uint16 {
		sign := uint16(0)
		x := float64(f)
		if math.Signbit(x) {
			sign, x = 0x8000, -x
		}
		lo, hi := uint16(0), uint16(0x7c00) // largest h with val(h) <= x
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if val(mid) <= x {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		if lo == 0x7c00 {
			return sign | lo
		}
		d0, d1 := x-val(lo), val(lo+1)-x
		if d1 < d0 || d1 == d0 && lo&1 == 1 {
			lo++
		}
		return sign | lo
	}
	r := rand.New(rand.NewPCG(3, 4))
	cases := []float32{0, 65504, 65519.996, 65520, 65536, 1e-8, 2.9802322e-08, 2.9802326e-08, 5.9604645e-08, 6.1035156e-05, 6.1032e-05, 1 + 1.0/2048, 1 + 3.0/2048, float32(math.Inf(1)), 1e-45}
	for range 200000 {
		cases = append(cases, math.Float32frombits(r.Uint32()&0x7fffffff|0x30000000&r.Uint32()))
		cases = append(cases, float32(r.NormFloat64()*1000))
	}
	for _, f := range cases {
		if math.IsNaN(float64(f)) {
			continue
		}
		for _, f := range []float32{f, -f} {
			if got, want := float32ToHalf(f), ref(f); got != want {
				t.Fatalf("float32ToHalf(%v) = %#04x, want %#04x", f, got, want)
			}
		}
	}
}

func TestFloat32Elems(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			bits := r.Uint64()
			if dt == ir.Float32 {
				bits &= math.MaxUint32
			}
			s := formatElem(dt, bits)
			if len(s) > 4 && s[:4] == "nan(" {
				if err := checkNaNBits(dt, bits); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := parseFloatElem(dt, s)
			if err != nil || got != bits {
				t.Fatalf("%v %#x prints as %q, which reads back as %#x, %v", dt, bits, s, got, err)
			}
		}
	}
}

func TestAttrFloat(t *testing.T) {
	for _, tt := range []struct {
		f    float32
		want string
	}{
		{1, "1.0"}, {-2, "-2.0"}, {0.5, "0.5"}, {1e6, "1e+06"}, {float32(math.Copysign(0, -1)), "-0.0"},
		{float32(math.Inf(1)), "inf"}, {float32(math.NaN()), "nan"}, {math.Float32frombits(0xffc00000), "nan(0xffc00000)"},
	} {
		if got := formatAttrFloat(tt.f); got != tt.want {
			t.Errorf("formatAttrFloat(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}
