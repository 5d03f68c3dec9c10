package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets/liveness"
)

// TestDetail checks the report's detail against the fit: the timelines'
// peaks are the peaks the fit reports under each model, the R matrix is
// the plan's, and a node pinned by -keep says so.
func TestDetail(t *testing.T) {
	ctx := context.Background()
	m, err := Load(ctx, "../testdata/models/unet_like.onnx", LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	fit, err := m.Fit(ctx, FitOptions{Budget: remat.BudgetFraction(0.7), Timelines: true, Keep: []string{"enc3_conv"}})
	if err != nil {
		t.Fatal(err)
	}
	r := fit.Report(m, "out.onnx", "70%")
	if err := fit.Detail(m, r); err != nil {
		t.Fatal(err)
	}
	if len(r.Timelines) != 2 {
		t.Fatalf("%d timelines, want liveness and ort", len(r.Timelines))
	}
	lv, tg := r.Timelines[0], r.Timelines[1]
	if lv.Model != "liveness" || lv.Original.PeakBytes != r.BeforePeakBytes || lv.Rewrite.PeakBytes != r.AfterPeakBytes || lv.BudgetBytes != r.BudgetBytes {
		t.Errorf("liveness timeline peaks %d → %d (budget %d), report %d → %d (budget %d)",
			lv.Original.PeakBytes, lv.Rewrite.PeakBytes, lv.BudgetBytes, r.BeforePeakBytes, r.AfterPeakBytes, r.BudgetBytes)
	}
	if len(lv.Rewrite.Nodes) != len(r.Nodes)+r.Recomputations || len(lv.Original.Nodes) != len(r.Nodes) {
		t.Errorf("liveness timeline has %d and %d steps for %d nodes and %d recomputations", len(lv.Original.Nodes), len(lv.Rewrite.Nodes), len(r.Nodes), r.Recomputations)
	}
	if tg.Model != "ort" || tg.Original.PeakBytes != fit.Original.PeakBytes || tg.Rewrite.PeakBytes != fit.Placement.PeakBytes || tg.BudgetBytes != 0 {
		t.Errorf("ort timeline peaks %d → %d, fit predicts %d → %d", tg.Original.PeakBytes, tg.Rewrite.PeakBytes, fit.Original.PeakBytes, fit.Placement.PeakBytes)
	}
	if len(r.PlanStages) != len(r.Nodes) {
		t.Fatalf("%d stages for %d nodes", len(r.PlanStages), len(r.Nodes))
	}
	computations := 0
	for st, row := range r.PlanStages {
		computations += len(row)
		if row[len(row)-1] != int32(st) {
			t.Errorf("stage %d computes %v: not its own node last", st, row)
		}
	}
	if computations != len(r.Nodes)+r.Recomputations {
		t.Errorf("R matrix has %d computations, want %d", computations, len(r.Nodes)+r.Recomputations)
	}
	for _, n := range r.Nodes {
		if n.Node == "enc3_conv" && !strings.HasSuffix(n.Why, "pinned by -keep") {
			t.Errorf("enc3_conv: Why = %q", n.Why)
		}
		if n.Decision == "recomputed" && !strings.Contains(n.Why, "whose peak is") {
			t.Errorf("%s: Why = %q does not name the peak it relieves", n.Node, n.Why)
		}
	}

	// Without Timelines, and for the liveness target, only the liveness
	// timeline is drawn.
	m2, _ := m.Rebuild(ctx)
	fit2, err := m2.Fit(ctx, FitOptions{Budget: remat.BudgetFraction(0.7), Target: liveness.Target{}, Timelines: true})
	if err != nil {
		t.Fatal(err)
	}
	r2 := fit2.Report(m2, "out.onnx", "70%")
	if err := fit2.Detail(m2, r2); err != nil || len(r2.Timelines) != 1 {
		t.Errorf("liveness target: %d timelines, %v", len(r2.Timelines), err)
	}
}
