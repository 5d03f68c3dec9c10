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
		fixed, got := repairArena(context.Background(), &q, plan)
		peak := got.PeakBytes
		if fixed == nil {
			t.Errorf("%s: no plan back", name)
			return
		}
		res, err := remat.Evaluate(&q, fixed)
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case res.PeakBytes != peak || res.TotalSeconds != got.TotalSeconds:
			t.Errorf("%s: reports a peak of %d and %v s, evaluates to %d and %v s", name, peak, got.TotalSeconds, res.PeakBytes, res.TotalSeconds)
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

// TestCheaper: solveArena keeps the plan of lower cost, and of two that
// cost the same within a relative 1e-9, the one of lower peak.
func TestCheaper(t *testing.T) {
	for _, c := range []struct {
		a, b remat.CheckResult
		want bool
	}{
		{remat.CheckResult{TotalSeconds: 1, PeakBytes: 900}, remat.CheckResult{TotalSeconds: 2, PeakBytes: 100}, true},
		{remat.CheckResult{TotalSeconds: 2, PeakBytes: 100}, remat.CheckResult{TotalSeconds: 1, PeakBytes: 900}, false},
		{remat.CheckResult{TotalSeconds: 1 + 1e-12, PeakBytes: 100}, remat.CheckResult{TotalSeconds: 1, PeakBytes: 900}, true},
		{remat.CheckResult{TotalSeconds: 1, PeakBytes: 900}, remat.CheckResult{TotalSeconds: 1 + 1e-12, PeakBytes: 100}, false},
		{remat.CheckResult{TotalSeconds: 1, PeakBytes: 100}, remat.CheckResult{TotalSeconds: 1, PeakBytes: 100}, false},
	} {
		if got := cheaper(c.a, c.b); got != c.want {
			t.Errorf("cheaper(%v s %d B, %v s %d B) = %v, want %v", c.a.TotalSeconds, c.a.PeakBytes, c.b.TotalSeconds, c.b.PeakBytes, got, c.want)
		}
	}
}
