package lns

import (
	"context"
	"errors"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
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
	arenaBudgets(t, maxN, func(name string, q remat.Problem) {
		own := q
		own.Arena = nil
		plan, err := New(Options{Patience: 2}).Solve(context.Background(), &own, nil)
		var be *remat.BudgetError
		if errors.As(err, &be) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		start, err := remat.Evaluate(&q, plan)
		if err != nil {
			t.Fatal(err)
		}
		if start.PeakBytes <= q.BudgetBytes {
			return
		}
		over++
		fixed, peak := repairArena(context.Background(), &q, plan)
		if fixed == nil {
			t.Errorf("%s: no plan back", name)
			return
		}
		res, err := remat.Evaluate(&q, fixed)
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case res.PeakBytes != peak:
			t.Errorf("%s: reports a peak of %d, evaluates to %d", name, peak, res.PeakBytes)
		case peak > start.PeakBytes:
			t.Errorf("%s: repaired to %d from %d", name, peak, start.PeakBytes)
		case peak <= q.BudgetBytes:
			if _, err := remat.Check(&q, fixed); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			repaired++
		}
	})
	t.Logf("%d plans over the budget in the arena, %d repaired", over, repaired)
	if repaired == 0 {
		t.Errorf("none of %d plans over the budget in the arena repaired", over)
	}
}
