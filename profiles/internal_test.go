package profiles

import (
	"testing"

	"github.com/remat-compile/remat/ir"
)

// TestEveryOpHasAFormula checks that every operator of the IR's op table
// in the ONNX domain is costed by a formula, not by the unknown-op
// fallback. Ops of other domains (TensorFlow's) never reach opFLOPs: they
// are costed by the fallback until they get formulas of their own.
func TestEveryOpHasAFormula(t *testing.T) {
	for _, o := range ir.Ops() {
		if o.Domain != "" {
			continue
		}
		n := &ir.Node{Op: o.Name, Domain: o.Domain}
		if isControlFlow(n) {
			continue
		}
		s := &sizes{n: n}
		_, class, note, err := opFLOPs(s)
		if err == nil && class == classUnknown {
			t.Errorf("%s: %s", o.Name, note)
		}
	}
}

func TestPeakFallback(t *testing.T) {
	d := &Device{
		PeakFLOPs:       map[ir.DType]float64{ir.Float32: 1, ir.Int8: 4, ir.Float16: 2},
		PeakMatrixFLOPs: map[ir.DType]float64{ir.Float16: 8},
	}
	for _, tt := range []struct {
		dt     ir.DType
		matrix bool
		want   float64
	}{
		{ir.Float32, false, 1},
		{ir.Float32, true, 1}, // no f32 matrix rate: the vector rate
		{ir.Float16, false, 2},
		{ir.Float16, true, 8},
		{ir.Uint8, true, 4},    // u8 → i8
		{ir.Int4, false, 4},    // i4 → i8
		{ir.BFloat16, true, 1}, // not listed: f32
		{ir.Int64, false, 1},   // not listed: f32
		{ir.Float64, true, 1},  // not listed: f32
		{ir.Float8E4M3FN, false, 1},
	} {
		if got := d.peak(tt.dt, tt.matrix); got != tt.want {
			t.Errorf("peak(%s, matrix=%v) = %g, want %g", tt.dt, tt.matrix, got, tt.want)
		}
	}
}
