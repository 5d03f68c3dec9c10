package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
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

// TestFitReportsLateOutputs fits the small zoo SegNet to 88% of ONNX
// Runtime's peak with at most 50% extra compute for tiling, which
// recomputation and tiling alone miss: the fit
// moves the first pool's indices next to the decoder's unpool, and the
// report names the moved output, its copies and their decision.
func TestFitReportsLateOutputs(t *testing.T) {
	ctx := context.Background()
	m, err := Load(ctx, "zoo:segnet", LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Fit(ctx, FitOptions{Budget: remat.BudgetFraction(0.88), Target: ort.Target{}, TileMaxExtra: 0.5, ORTShapes: ORTShapesShown})
	if err != nil {
		t.Fatal(err)
	}
	if f.Tiled == nil || len(f.Tiled.Late) == 0 {
		t.Fatalf("tiled %+v: want the first pool's indices moved", f.Tiled)
	}
	r := f.Report(m, "out.onnx", "88%")
	if r.Tiling == nil || len(r.Tiling.Late) != len(f.Tiled.Late) {
		t.Fatalf("report tiling %+v: want the moved outputs", r.Tiling)
	}
	l := r.Tiling.Late[0]
	if l.Node != "enc1.pool" || l.Output != "enc1.pool.indices" || l.Copies < 2 || l.LastCopy != "enc1.pool_late" || l.ExtraPercent <= 0 {
		t.Errorf("late %+v: want enc1.pool's indices recomputed by copies ending in enc1.pool_late", l)
	}
	decided := false
	for _, n := range r.Nodes {
		if n.Node == "enc1.pool_late" {
			decided = n.Decision == "late" && strings.Contains(n.Why, "enc1.pool.indices")
		}
	}
	if !decided {
		t.Error("the copy of enc1.pool is not reported as late, with the output it recomputes")
	}
}

// TestFitReportsPooledGroups: fitting the squeeze-excitation test model to
// 42% of its ONNX Runtime peak tiles its convolution, which the global
// pool still reads whole, and computes it in channel groups for the
// pool; the report names it in the region's pooled_in_groups.
func TestFitReportsPooledGroups(t *testing.T) {
	ctx := context.Background()
	path, err := testmodels.WriteSE(t.TempDir(), "se")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(ctx, path, LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Fit(ctx, FitOptions{Budget: remat.BudgetFraction(0.42), Target: ort.Target{}})
	if err != nil {
		t.Fatal(err)
	}
	r := f.Report(m, "out.onnx", "42%")
	var pooled []string
	if r.Tiling != nil {
		for _, g := range r.Tiling.Regions {
			pooled = append(pooled, g.PooledInGroups...)
		}
	}
	if !slices.Equal(pooled, []string{"c"}) {
		t.Fatalf("tiling %+v: want the convolution output c pooled in channel groups", r.Tiling)
	}
}
