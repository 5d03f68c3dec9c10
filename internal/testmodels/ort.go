package testmodels

import (
	"testing"

	"github.com/remat-compile/remat/internal/ort"
)

// RequireORT stops a test that needs ONNX Runtime when ORT cannot be
// loaded: it skips under -short and fails otherwise, so that a full run
// never passes having checked nothing.
func RequireORT(t testing.TB) {
	t.Helper()
	if _, err := ort.Version(); err != nil {
		if testing.Short() {
			t.Skipf("ONNX Runtime unavailable (%v); skipped in -short mode", err)
		}
		t.Fatalf("ONNX Runtime unavailable (run scripts/setup.sh, or use -short to skip the ORT tests): %v", err)
	}
}
