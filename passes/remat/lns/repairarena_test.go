package lns

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// TestRepairArena: plans the search makes without the arena that the
// arena puts over the budget go to repairArena. What it returns never
// peaks higher in the arena than the plan it started from, reports its
// own arena peak, and, when that is within the budget, passes Check with
// the arena. Some of the corpus's plans must be repaired,
// or the test would check nothing.
func TestRepairArena(t *testing.T) {
	maxN := 40
	if testing.Short() {
		maxN = 16
	}
	over, repaired := 0, 0
	for _, c := range solvertest.Corpus() {
		if c.Problem.N() > maxN {
			continue
		}
		rng := rand.New(rand.NewPCG(7, 11))
		p := withArena(withReuse(c.Problem, rng), rng)
		base, err := remat.EvaluateNoRemat(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []float64{0.95, 0.85, 0.75} {
			q := *p
			q.BudgetBytes = int64(f * float64(base.PeakBytes))
			own := q
			own.Arena = nil
			plan, err := New(Options{Patience: 2}).Solve(context.Background(), &own, nil)
			var be *remat.BudgetError
			if errors.As(err, &be) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			start, err := remat.Evaluate(&q, plan)
			if err != nil {
				t.Fatal(err)
			}
			if start.PeakBytes <= q.BudgetBytes {
				continue
			}
			over++
			fixed, peak := repairArena(context.Background(), &q, plan)
			if fixed == nil {
				t.Errorf("%s at %.0f%%: no plan back", c.Name, 100*f)
				continue
			}
			res, err := remat.Evaluate(&q, fixed)
			switch {
			case err != nil:
				t.Errorf("%s at %.0f%%: %v", c.Name, 100*f, err)
			case res.PeakBytes != peak:
				t.Errorf("%s at %.0f%%: reports a peak of %d, evaluates to %d", c.Name, 100*f, peak, res.PeakBytes)
			case peak > start.PeakBytes:
				t.Errorf("%s at %.0f%%: repaired to %d from %d", c.Name, 100*f, peak, start.PeakBytes)
			case peak <= q.BudgetBytes:
				if _, err := remat.Check(&q, fixed); err != nil {
					t.Errorf("%s at %.0f%%: %v", c.Name, 100*f, err)
				}
				repaired++
			}
		}
	}
	t.Logf("%d plans over the budget in the arena, %d repaired", over, repaired)
	if repaired == 0 {
		t.Errorf("none of %d plans over the budget in the arena repaired", over)
	}
}
