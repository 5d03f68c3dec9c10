package lns

import (
	"context"
	"errors"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

// viewProblem lowers the zoo VGG16's training graph (small configuration)
// with views and the arena, as compile -target ort plans it (without
// workspaces): its Flatten and the Reshape of its gradient are views.
func viewProblem(t *testing.T) *remat.Problem {
	t.Helper()
	_, probs := ZooTraining(t, 1<<20, remat.LowerOptions{Reuse: true, Aliasing: true, Arena: true}, "vgg16")
	if len(probs) != 1 {
		t.Fatalf("%d problems for vgg16", len(probs))
	}
	p := probs[0]
	views := 0
	for _, v := range p.View {
		if v.Node >= 0 {
			views++
		}
	}
	if views == 0 {
		t.Fatal("no views in VGG16's training graph")
	}
	return p
}

// TestSolveViews: with views, a budget of 90% gives a plan that
// passes Check on the problem itself, and a budget far below what any
// plan reaches gives the least plan found, whose peak descend lowers (or
// leaves) and reports as it evaluates.
func TestSolveViews(t *testing.T) {
	p := viewProblem(t)
	base, err := remat.EvaluateNoRemat(p)
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.BudgetBytes = base.PeakBytes * 90 / 100
	plan, err := New(Options{Patience: 2}).Solve(context.Background(), &q, nil)
	if err != nil {
		t.Fatalf("at 90%%: %v", err)
	}
	if _, err := remat.Check(&q, plan); err != nil {
		t.Fatal(err)
	}

	q.BudgetBytes = base.PeakBytes * 30 / 100
	peak := func(o Options) int64 {
		_, err := New(o).Solve(context.Background(), &q, nil)
		var be *remat.BudgetError
		if !errors.As(err, &be) || be.Plan == nil {
			t.Fatalf("at 30%%: %v, want a *remat.BudgetError with a plan", err)
		}
		if be.NeedBytes <= q.BudgetBytes {
			t.Fatalf("at 30%%: a BudgetError whose plan fits, %d of %d bytes", be.NeedBytes, q.BudgetBytes)
		}
		res, err := remat.Evaluate(&q, be.Plan)
		if err != nil || res.PeakBytes != be.NeedBytes {
			t.Fatalf("at 30%%: NeedBytes %d, the plan evaluates to %d (%v)", be.NeedBytes, res.PeakBytes, err)
		}
		return be.NeedBytes
	}
	without := peak(Options{Patience: 2, noDescent: true})
	with := peak(Options{Patience: 2})
	t.Logf("least peak at 30%% of %d: %d without descend, %d with", base.PeakBytes, without, with)
	if with > without {
		t.Errorf("descend raised the least peak from %d to %d", without, with)
	}
}
