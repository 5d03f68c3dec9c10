package shapes

import (
	"math"
	"testing"

	"github.com/remat-compile/remat/ir"
)

func TestBinElem(t *testing.T) {
	i := func(v int64) elem { return elem{i: v} }
	f := func(v float64) elem { return elem{f: v} }
	s := func(name string) elem { return elem{sym: name} }
	tests := []struct {
		op   string
		dt   ir.DType
		fmod bool
		a, b elem
		want elem
		ok   bool
	}{
		{"Div", ir.Int64, false, i(-7), i(2), i(-3), true}, // truncates toward zero
		{"Div", ir.Int64, false, i(7), i(0), elem{}, false},
		{"Div", ir.Int64, false, i(math.MinInt64), i(-1), elem{}, false},
		{"Mod", ir.Int64, false, i(-7), i(3), i(2), true}, // sign of the divisor
		{"Mod", ir.Int64, false, i(7), i(-3), i(-2), true},
		{"Mod", ir.Int64, true, i(-7), i(3), i(-1), true}, // fmod: sign of the dividend
		{"Add", ir.Int32, false, i(math.MaxInt32), i(1), i(math.MinInt32), true},
		{"Mul", ir.Uint8, false, i(16), i(17), i(16), true},
		{"Pow", ir.Int64, false, i(3), i(4), i(81), true},
		{"Pow", ir.Int64, false, i(3), i(-1), elem{}, false},
		{"Less", ir.Uint64, false, i(-1), i(1), i(0), true}, // -1 is the largest uint64
		{"Less", ir.Int64, false, i(-1), i(1), i(1), true},
		{"Equal", ir.Float32, false, f(math.NaN()), f(math.NaN()), i(0), true},
		{"Div", ir.Float32, false, f(1), f(3), f(float64(float32(1.0 / 3))), true},
		{"And", ir.Bool, false, i(1), i(0), i(0), true},
		{"Xor", ir.Bool, false, i(1), i(0), i(1), true},
		{"Mul", ir.Int64, false, s("n"), i(1), s("n"), true},
		{"Mul", ir.Int64, false, s("n"), i(0), i(0), true},
		{"Mul", ir.Int64, false, s("n"), i(2), unknownElem, true},
		{"Add", ir.Float32, false, f(0), s("n"), s("n"), true},
		{"Sub", ir.Int64, false, s("n"), s("n"), i(0), true},
		{"Sub", ir.Int64, false, s("n"), s("m"), unknownElem, true},
		{"Equal", ir.Int64, false, s("n"), s("n"), i(1), true},
		{"Equal", ir.Int64, false, s("n"), i(3), unknownElem, true},
		{"Less", ir.Int64, false, unknownElem, unknownElem, unknownElem, true},
	}
	for _, tc := range tests {
		got, ok := binElem(tc.op, tc.dt, tc.fmod, tc.a, tc.b)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s %s(%v, %v) = %v, %v; want %v, %v", tc.dt, tc.op, tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCastElem(t *testing.T) {
	tests := []struct {
		from, to ir.DType
		in, want elem
		ok       bool
	}{
		{ir.Float32, ir.Int64, elem{f: -2.7}, elem{i: -2}, true},
		{ir.Float32, ir.Int64, elem{f: math.NaN()}, elem{}, false},
		{ir.Int64, ir.Int32, elem{i: 1 << 32}, elem{i: 0}, true},
		{ir.Int64, ir.Uint8, elem{i: -1}, elem{i: 255}, true},
		{ir.Int64, ir.Bool, elem{i: 5}, elem{i: 1}, true},
		{ir.Float64, ir.Float32, elem{f: 0.1}, elem{f: float64(float32(0.1))}, true},
		{ir.Uint64, ir.Float64, elem{i: -1}, elem{f: 18446744073709551615}, true},
		{ir.Int64, ir.Float32, elem{sym: "n"}, elem{sym: "n"}, true},
		{ir.Int64, ir.Bool, elem{sym: "n"}, unknownElem, true},
	}
	for _, tc := range tests {
		got, ok := castElem(tc.from, tc.to, tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("cast %s→%s of %v = %v, %v; want %v, %v", tc.from, tc.to, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestUnElem(t *testing.T) {
	tests := []struct {
		op       string
		dt       ir.DType
		in, want elem
	}{
		{"Round", ir.Float32, elem{f: 2.5}, elem{f: 2}}, // half to even
		{"Round", ir.Float32, elem{f: -0.5}, elem{f: math.Copysign(0, -1)}},
		{"Neg", ir.Int8, elem{i: -128}, elem{i: -128}},
		{"Abs", ir.Int64, elem{i: -4}, elem{i: 4}},
		{"Not", ir.Bool, elem{i: 0}, elem{i: 1}},
		{"Floor", ir.Float32, elem{sym: "n"}, elem{sym: "n"}},
		{"Neg", ir.Int64, elem{sym: "n"}, unknownElem},
	}
	for _, tc := range tests {
		got, ok := unElem(tc.op, tc.dt, tc.in)
		if !ok || got != tc.want {
			t.Errorf("%s %s(%v) = %v, %v; want %v", tc.dt, tc.op, tc.in, got, ok, tc.want)
		}
	}
}

// Large weights are never decoded; small ones are.
func TestConstTableSizeCap(t *testing.T) {
	big := make([]int64, maxConstElems+1)
	if fromTensor(ir.Int64Tensor([]int64{int64(len(big))}, big...)) != nil {
		t.Fatal("a tensor over the cap was decoded")
	}
	if c := fromTensor(ir.Int64Tensor([]int64{2}, 4, 5)); c == nil || c.e[1].i != 5 {
		t.Fatal("a small tensor was not decoded")
	}
	if fromTensor(&ir.Tensor{DType: ir.String, Shape: []int64{1}, Strs: [][]byte{[]byte("a")}}) != nil {
		t.Fatal("a string tensor was decoded")
	}
}
