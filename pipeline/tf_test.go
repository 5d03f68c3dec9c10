package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
	"github.com/remat-compile/remat/targets/liveness"
	"github.com/remat-compile/remat/targets/ort"
	"github.com/remat-compile/remat/targets/tfjs"
)

// TestCheckTargetRefusesPeakAboveBudget: a tfjs or ONNX Runtime fit
// whose predicted peak of the written rewrite is below the original's but
// above the budget is refused (its bytes are the budget's own), with a
// message that says so (tfjs whichever solver planned it, ONNX Runtime
// when the solver planned under its model); at or under the budget, or
// with nothing recomputed, it stands; the liveness target's peak is the
// plan's.
func TestCheckTargetRefusesPeakAboveBudget(t *testing.T) {
	fit := func(tg targets.Target, peak int64, recomputations int) *Fit {
		return &Fit{
			Target: tg, Original: &targets.Placement{PeakBytes: 200 << 10}, Placement: &targets.Placement{PeakBytes: peak},
			Remat:         &remat.Result{BudgetBytes: 140 << 10, Recomputations: recomputations},
			targetPlanned: true,
		}
	}
	notPlanned := func(f *Fit) *Fit { f.targetPlanned = false; return f }
	if err := notPlanned(fit(tfjs.Target{}, 160<<10, 3)).checkTarget(); !errors.As(err, new(*TargetError)) {
		t.Errorf("tfjs, 160 KiB against a 140 KiB budget, planned under liveness: %v; want a refusal", err)
	}
	err := fit(tfjs.Target{}, 160<<10, 3).checkTarget()
	var te *TargetError
	if !errors.As(err, &te) || !te.OverBudget {
		t.Fatalf("tfjs, 160 KiB against a 140 KiB budget: %v; want a *TargetError with OverBudget", err)
	}
	if want := "the plan fits the budget of 140 KiB under the solver's memory model, but the tfjs target's order of the written model peaks at 160 KiB, above the budget (the original's: 200 KiB)"; !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal says %q; want %q", err, want)
	}
	te.Reach = &Reach{Probes: 2, FromBytes: 140 << 10, NoRematPeakBytes: 200 << 10, PeakBytes: 150 << 10, BudgetBytes: 150 << 10, Budget: "150KiB"}
	if want := "; the smallest peak the tfjs target reached at a looser budget is 150 KiB, at 150 KiB"; !strings.Contains(te.Error(), want) {
		t.Errorf("the refusal with a search says %q; want %q", te, want)
	}
	for _, tt := range []struct {
		name string
		f    *Fit
	}{
		{"tfjs at the budget", fit(tfjs.Target{}, 140<<10, 3)},
		{"tfjs, nothing recomputed", fit(tfjs.Target{}, 160<<10, 0)},
		{"liveness above the budget, below the original", fit(liveness.Target{}, 160<<10, 3)},
		{"ort above the budget, below the original, planned under liveness", notPlanned(fit(ort.Target{}, 160<<10, 3))},
	} {
		if err := tt.f.checkTarget(); err != nil {
			t.Errorf("%s: %v; want no refusal", tt.name, err)
		}
	}
	if err := fit(ort.Target{HideShapes: true}, 160<<10, 3).checkTarget(); !errors.As(err, &te) || !te.OverBudget || !strings.Contains(err.Error(), "the ort target's order of the written model peaks at 160 KiB, above the budget") {
		t.Errorf("ort, 160 KiB against a 140 KiB budget: %v; want the refusal that it is above the budget", err)
	}
	if err := fit(tfjs.Target{}, 200<<10, 3).checkTarget(); !errors.As(err, &te) || te.OverBudget || !strings.Contains(err.Error(), "does not lower the peak on the tfjs target") {
		t.Errorf("tfjs at the original's peak: %v; want the refusal that it does not lower the peak", err)
	}
}
