package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
)

// TestCompileInputShapeOverride: -input-shape may change a statically
// declared input size (the zoo U-Net is declared 1×3×32×32; batch 2
// here). The written model declares the new shape, so that its
// declarations agree with the inferred value_info: onnx.checker accepts it
// and ONNX Runtime runs it, with the output's batch 2.
func TestCompileInputShapeOverride(t *testing.T) {
	out := filepath.Join(t.TempDir(), "u2.onnx")
	if code, stdout, stderr := run(t, unetModel, "-input-shape", "input=2x3x32x32", "-o", out, "-budget", "100%"); code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	onnxChecker(t, out)
	if _, err := ort.Version(); err != nil && testing.Short() {
		t.Skipf("ONNX Runtime unavailable: %v", err)
	}
	testmodels.RequireORT(t)
	in, err := ort.RandomInputs(out, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := in["input"].Shape; !slices.Equal(got, []int64{2, 3, 32, 32}) {
		t.Errorf("declared input shape %v, want [2 3 32 32]", got)
	}
	res, err := ort.Run(out, in, ort.MeasureOptions("disabled"))
	if err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	for _, name := range res.OutputNames {
		if s := res.Outputs[name].Shape; len(s) == 0 || s[0] != 2 {
			t.Errorf("output %s has shape %v, want batch 2", name, s)
		}
	}
}
