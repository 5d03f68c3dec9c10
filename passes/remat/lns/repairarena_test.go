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

// TestWalkArena: the least plans of budgets no search fits go to
// walkArena. What it returns never peaks higher in the arena than the
// plan it started from, reports its own evaluation, passes Check at the
// larger of its peak and the budget, and is the same plan on a second
// walk with the same seed. Some walks must lower the peak, or the walk
// does nothing the descent did not.
func TestWalkArena(t *testing.T) {
	maxN := 40
	if testing.Short() {
		maxN = 16
	}
	refused, lowered := 0, 0
	arenaBudgets(t, maxN, func(name string, q remat.Problem) {
		_, err := New(Options{Patience: 2, noDescent: true}).Solve(context.Background(), &q, nil)
		var be *remat.BudgetError
		if !errors.As(err, &be) || be.Plan == nil || be.Proven {
			return
		}
		refused++
		start, err := remat.Evaluate(&q, be.Plan)
		if err != nil {
			t.Fatal(err)
		}
		pl, got := walkArena(context.Background(), &q, be.Plan, 1)
		if pl == nil {
			t.Errorf("%s: no plan back", name)
			return
		}
		res, err := remat.Evaluate(&q, pl)
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
			return
		case res.PeakBytes != got.PeakBytes || res.TotalSeconds != got.TotalSeconds:
			t.Errorf("%s: reports a peak of %d and %v s, evaluates to %d and %v s", name, got.PeakBytes, got.TotalSeconds, res.PeakBytes, res.TotalSeconds)
		case res.PeakBytes > start.PeakBytes:
			t.Errorf("%s: walked to %d from %d", name, res.PeakBytes, start.PeakBytes)
		}
		r := q
		r.BudgetBytes = max(res.PeakBytes, q.BudgetBytes)
		if _, err := remat.Check(&r, pl); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, again := walkArena(context.Background(), &q, be.Plan, 1); again.PeakBytes != got.PeakBytes || again.TotalSeconds != got.TotalSeconds {
			t.Errorf("%s: a second walk reaches %d and %v s, the first %d and %v s", name, again.PeakBytes, again.TotalSeconds, got.PeakBytes, got.TotalSeconds)
		}
		if res.PeakBytes < start.PeakBytes {
			lowered++
		}
	})
	t.Logf("%d budgets refused, %d least peaks lowered by the walk", refused, lowered)
	if lowered == 0 {
		t.Errorf("the walk lowered none of the %d least peaks", refused)
	}
}
