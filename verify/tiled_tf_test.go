package verify_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/verify"
)

// TestTiledRealTFModels fits the real TensorFlow.js models at 90% of
// their tfjs peak, below the single-node floor where rematerialization
// stops, so the fit tiles (passes/tile on NHWC graphs), and verifies each
// rewrite in TensorFlow.js (wasm): outputs bitwise identical, the measured
// peak the predicted one, the drop at least the acceptance bar. meet's
// peak is a channel ConcatV2 whose output a global AvgPool reads whole
// (its working set cannot be split exactly), so only the others must fit.
func TestTiledRealTFModels(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs the real TensorFlow.js models; skipped in -short mode")
	}
	models := testmodels.TFModels(t)
	dir := testmodels.RequireTFJS(t)
	ctx := context.Background()
	tmp := t.TempDir()
	fitted := 0
	for _, m := range models {
		pm := loadTF(ctx, t, dir, m)
		f, err := pm.Fit(ctx, pipeline.FitOptions{Budget: remat.BudgetFraction(0.9), TimeLimit: 10 * time.Second})
		var te *pipeline.TileError
		var ie *remat.InfeasibleBudgetError
		switch {
		case m.Name == "meet" && (errors.As(err, &te) || errors.As(err, &ie)):
			t.Logf("meet at 90%%: %v", err)
			continue
		case err != nil:
			t.Errorf("%s at 90%%: %v", m.Name, err)
			continue
		case f.Tiled == nil || len(f.Tiled.Regions) == 0:
			t.Errorf("%s at 90%%: fitted without tiling", m.Name)
			continue
		}
		r := exportAndVerifyTF(ctx, t, dir, filepath.Join(tmp, m.Name), m, pm, f)
		if r == nil {
			continue
		}
		fitted++
		t.Logf("%s at 90%%: %d region(s), +%.1f%% compute, peak %d → %d B measured (bitwise identical)", m.Name, len(f.Tiled.Regions), 100*(f.Tiled.CostAfter-f.Tiled.CostBefore)/f.Tiled.CostBefore, r.Orig.PeakBytes, r.Rematted.PeakBytes)
	}
	if fitted < len(models)-1 {
		t.Errorf("%d of %d models fitted at 90%% by tiling", fitted, len(models))
	}
}

// exportAndVerifyTF writes the fit f of pm into dir and verifies it
// against m in TensorFlow.js (wasm): outputs bitwise identical, every
// gate where the plan put it, the measured peak the predicted one and
// the drop at least the acceptance bar. It returns the result, or nil
// after reporting a failure.
func exportAndVerifyTF(ctx context.Context, t *testing.T, tfjsDir, dir string, m testmodels.TFModel, pm *pipeline.Model, f *pipeline.Fit) *verify.TFReport {
	t.Helper()
	out := filepath.Join(dir, "model.json")
	if err := pm.Export(out, f, false); err != nil {
		t.Fatal(err)
	}
	r, err := verify.RunTF(ctx, m.Path, out, verify.TFOptions{Dir: tfjsDir, Runs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK {
		t.Errorf("%s: verify failed: %v", m.Name, r.Failures)
		return nil
	}
	if r.Rematted.PeakBytes != f.Placement.PeakBytes || r.MeetsAcceptanceBar == nil || !*r.MeetsAcceptanceBar {
		t.Errorf("%s: measured peak %d B, predicted %d B; measured drop %d B of the predicted %v", m.Name, r.Rematted.PeakBytes, f.Placement.PeakBytes, r.ReductionBytes, r.PredictedReductionBytes)
		return nil
	}
	return r
}

// TestTiledSelfieAtTheSkips fits the selfie segmenter at 70% of its tfjs
// peak. Its last stage sums a full-resolution skip from the stem and the
// decoder's output, reads the sum whole in a global pool (squeeze and
// excite) and reads both again after it: at 3.00 MiB the pool's step
// holds three full-resolution values, above the 2.45 MiB budget, and no
// region tiled in TensorFlow.js's own order lowers it. The fit must
// recompute both skips band by band in the regions before and after the
// pool, choose them in the graph's own order and force that order with
// gates (tile.Result.Forced), and the written model must run within the
// budget in TensorFlow.js with bitwise identical outputs.
func TestTiledSelfieAtTheSkips(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs a real TensorFlow.js model; skipped in -short mode")
	}
	dir := testmodels.RequireTFJS(t)
	ctx := context.Background()
	for _, m := range testmodels.TFModels(t) {
		if m.Name != "selfie" {
			continue
		}
		pm := loadTF(ctx, t, dir, m)
		f, err := pm.Fit(ctx, pipeline.FitOptions{Budget: remat.BudgetFraction(0.7), TimeLimit: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if f.Tiled == nil || !f.Tiled.Forced {
			t.Fatalf("selfie at 70%%: tiled %+v, want regions chosen in the graph's own order", f.Tiled)
		}
		kept := 0
		for _, r := range f.Tiled.Regions {
			kept += len(r.Kept)
		}
		if kept < 2 {
			t.Errorf("selfie at 70%%: %d regions recompute %d skips, want the skips recomputed on both sides of the pool", len(f.Tiled.Regions), kept)
		}
		budget := int64(0.7 * float64(f.Original.PeakBytes))
		if f.Placement.PeakBytes > budget || len(f.Placement.Writing.Order) == 0 {
			t.Fatalf("selfie at 70%%: written peak %d B against the budget %d B, %d gates", f.Placement.PeakBytes, budget, len(f.Placement.Writing.Order))
		}
		r := exportAndVerifyTF(ctx, t, dir, t.TempDir(), m, pm, f)
		if r != nil {
			t.Logf("selfie at 70%%: %d region(s), +%.1f%% compute, %d gates, peak %d → %d B measured (bitwise identical)", len(f.Tiled.Regions),
				100*(f.Tiled.CostAfter-f.Tiled.CostBefore)/f.Tiled.CostBefore, len(f.Placement.Writing.Order), r.Orig.PeakBytes, r.Rematted.PeakBytes)
		}
		return
	}
	t.Fatal("the fetched models have no selfie")
}
