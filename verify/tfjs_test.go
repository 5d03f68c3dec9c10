package verify_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	gdimp "github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/verify"
)

// loadTF imports a real TensorFlow.js model with the types tfjs gives
// its values on seeded inputs (the model's own shapes are partly
// unknown), as a pipeline model.
func loadTF(ctx context.Context, t *testing.T, dir string, m testmodels.TFModel) *pipeline.Model {
	t.Helper()
	g, err := gdimp.ImportFile(m.Path, gdimp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := tfjs.SeededInputs(m.Inputs, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tfjs.Run(ctx, tfjs.Options{Dir: dir, Model: m.Path, Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	testmodels.TypesFromTFJS(g, res)
	return &pipeline.Model{Graph: g, Name: m.Name, Source: m.Path}
}

// TestRunTFSelfie fits the real selfie segmentation model at 95% of its
// peak for the tfjs target (the lowest budget remat reaches on it: its
// peak sits near one node's working set), writes it as model.json and as a
// .pb, and verifies both in TensorFlow.js: outputs bitwise equal, every
// recomputation where the plan put it (model.json), the measured drop at
// least 80% of the predicted one.
func TestRunTFSelfie(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs selfie in TensorFlow.js; skipped in -short mode")
	}
	var m testmodels.TFModel
	for _, x := range testmodels.TFModels(t) {
		if x.Name == "selfie" {
			m = x
		}
	}
	if m.Path == "" {
		t.Fatal("the manifest has no selfie model")
	}
	dir := testmodels.RequireTFJS(t)
	ctx := context.Background()
	pm := loadTF(ctx, t, dir, m)
	f, err := pm.Fit(ctx, pipeline.FitOptions{Budget: remat.BudgetFraction(0.95), TimeLimit: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if f.Target.Name() != "tfjs" || f.Rewrite == nil || len(f.Rewrite.Recomputes) == 0 {
		t.Fatalf("target %s, rewrite %v: want a tfjs plan that recomputes something", f.Target.Name(), f.Rewrite)
	}
	tmp := t.TempDir()
	out := filepath.Join(tmp, "model.json")
	if err := pm.Export(out, f, false); err != nil {
		t.Fatal(err)
	}
	r, err := verify.RunTF(ctx, m.Path, out, verify.TFOptions{Dir: dir, Runs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || !r.PlacementChecked || len(r.Recompute) != len(f.Rewrite.Recomputes) {
		t.Fatalf("verify: ok %v, placement checked %v, %d recomputations checked of %d; failures %v", r.OK, r.PlacementChecked, len(r.Recompute), len(f.Rewrite.Recomputes), r.Failures)
	}
	if r.MeetsAcceptanceBar == nil || !*r.MeetsAcceptanceBar || r.PredictedBy != "tfjs" {
		t.Errorf("measured drop %d B, predicted (%s) %v: want at least %.0f%%", r.ReductionBytes, r.PredictedBy, r.PredictedReductionBytes, 100*verify.AcceptanceBar)
	}
	t.Logf("selfie at 95%%: %d recomputations, peak %d → %d B measured, predicted drop %d B, run time %+.1f%%", len(r.Recompute), r.Orig.PeakBytes, r.Rematted.PeakBytes, *r.PredictedReductionBytes, r.RunTimeChangePercent)

	pb := filepath.Join(tmp, "selfie.pb")
	if err := pm.Export(pb, f, false); err != nil {
		t.Fatal(err)
	}
	r, err = verify.RunTF(ctx, m.Path, pb, verify.TFOptions{Dir: dir, Runs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.PlacementChecked || r.ReductionBytes <= 0 {
		t.Errorf(".pb: ok %v, placement checked %v (a .pb has no metadata), reduction %d B; failures %v", r.OK, r.PlacementChecked, r.ReductionBytes, r.Failures)
	}
}
