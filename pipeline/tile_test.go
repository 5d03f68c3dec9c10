package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/tile"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/targets/ort"
)

// TestORTBlock: -ort-block reads 8 (the default) and 16 only, and the
// block reaches passes/tile's rules: ORT's channel-block check under
// 16 is ORTBlocks(16)'s.
func TestORTBlock(t *testing.T) {
	for in, want := range map[string]ORTBlock{"": 8, "8": 8, "16": 16} {
		if got, err := ParseORTBlock(in); err != nil || got != want {
			t.Errorf("ParseORTBlock(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"4", "32", "avx2", "-8"} {
		_, err := ParseORTBlock(in)
		var oe *OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), "want 8") {
			t.Errorf("ParseORTBlock(%q): %v; want an option error naming the choices", in, err)
		}
	}
	prof, err := profiles.Load("cpu-generic")
	if err != nil {
		t.Fatal(err)
	}
	g := ir.NewGraph("g")
	for block, want := range map[ORTBlock]string{0: tile.ORTBlocks(8).Name, 8: tile.ORTBlocks(8).Name, 16: tile.ORTBlocks(16).Name} {
		o := tileOptions(g, ort.Target{}, prof, 1, 0, block)
		if o.Runtime == nil || o.Runtime.Name != want {
			t.Errorf("block %d: runtime %+v, want %s", block, o.Runtime, want)
		}
	}
}
