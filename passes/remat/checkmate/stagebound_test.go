package checkmate_test

import (
	"context"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat/checkmate"
)

// TestStageBound checks StageBound against the optimum on the corpus:
// between Σ C_i and the optimum at every budget, above Σ C_i somewhere,
// and never claiming infeasibility where a plan exists; and that a budget
// below a node's working set is reported infeasible.
func TestStageBound(t *testing.T) {
	requireCBC(t)
	ctx := context.Background()
	raised := 0
	for _, in := range corpusInstances(t, shortNodes()) {
		if in.p.Refined() {
			continue
		}
		b, infeasible, err := checkmate.StageBound(ctx, in.p, 30*time.Second, nil)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		sum := in.p.LowerBoundSeconds()
		switch {
		case infeasible:
			t.Errorf("%s: infeasible, but a plan of cost %v exists", in.name, in.opt)
		case b < sum-1e-9 || b > in.opt+1e-6*max(1, in.opt):
			t.Errorf("%s: bound %v outside [Σ C_i = %v, optimum %v]", in.name, b, sum, in.opt)
		case b > sum*(1+1e-6)+1e-9:
			raised++
		}
	}
	if raised == 0 {
		t.Error("the bound is Σ C_i on every instance")
	}
	t.Logf("the bound is above Σ C_i on %d instances", raised)

	p := layered(1, 6)
	var most int64
	for i := range p.N() {
		w := p.Bytes[i]
		for _, d := range p.Deps[i] {
			w += p.Bytes[d]
		}
		most = max(most, w)
	}
	_, infeasible, err := checkmate.StageBound(ctx, withBudget(p, p.ConstBytes+most-1), 30*time.Second, nil)
	if err != nil || !infeasible {
		t.Errorf("budget one byte below the largest working set: infeasible %v, error %v; want infeasible", infeasible, err)
	}
}

// TestStageCuts checks the cuts (S) on the corpus: the optimum of the
// model with them lies between the optimum without them and the problem's
// optimum, and is above the former somewhere; there StageBound's second
// round reaches it (the first round proves its optimum at once on these
// sizes).
func TestStageCuts(t *testing.T) {
	requireCBC(t)
	ctx := context.Background()
	raised, solved := 0, 0
	for _, in := range corpusInstances(t, shortNodes()) {
		if in.p.Refined() {
			continue
		}
		without, ok, err := checkmate.StageOptimum(ctx, in.p, false)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if !ok {
			continue
		}
		with, ok, err := checkmate.StageOptimum(ctx, in.p, true)
		if err != nil || !ok {
			t.Fatalf("%s: with the cuts: solved %v, error %v", in.name, ok, err)
		}
		solved++
		tol := 1e-6 * max(1, in.opt)
		switch {
		case with < without-tol || with > in.opt+tol:
			t.Errorf("%s: optimum with the cuts %v outside [%v without, the problem's optimum %v]", in.name, with, without, in.opt)
		case with > without+tol:
			raised++
			b, _, err := checkmate.StageBound(ctx, in.p, 30*time.Second, nil)
			if err != nil || b < with-tol {
				t.Errorf("%s: StageBound %v (error %v), below the optimum with the cuts %v", in.name, b, err, with)
			}
		}
	}
	// Under -short the instances (at most shortNodes nodes) are too small
	// for the cuts to matter: they raise nothing there.
	if raised == 0 && !testing.Short() {
		t.Errorf("the cuts raise the model's optimum on none of %d instances", solved)
	}
	t.Logf("the cuts raise the model's optimum on %d of %d instances", raised, solved)
}

// TestStageStart checks the incumbent that StageBound gives CBC: an
// optimal plan of each corpus instance makes a point of the model without
// the cuts within its rows and bounds, whose cost is
// at least the model's optimum and at most the plan's.
func TestStageStart(t *testing.T) {
	requireCBC(t)
	ctx := context.Background()
	checked := 0
	for _, in := range corpusInstances(t, shortNodes()) {
		if in.p.Refined() {
			continue
		}
		viol, cost, applies, ok := checkmate.StageStart(in.p, in.plan)
		if !applies {
			continue
		}
		if !ok {
			t.Errorf("%s: the optimal plan gives no point of the model", in.name)
			continue
		}
		checked++
		opt, solved, err := checkmate.StageOptimum(ctx, in.p, false)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		tol := 1e-6 * max(1, in.opt)
		switch {
		case viol > 1e-6:
			t.Errorf("%s: the optimal plan's point violates the model by %g", in.name, viol)
		case cost > in.opt+tol || (solved && cost < opt-tol):
			t.Errorf("%s: the point costs %v, outside [the model's optimum %v, the plan's cost %v]", in.name, cost, opt, in.opt)
		}
	}
	if checked == 0 {
		t.Error("the model applies to no instance")
	}
	t.Logf("%d instances checked", checked)
}

// TestCascadeCuts checks the cascade cuts (C_k) on the corpus: the point
// of each instance's optimal plan satisfies every one of them, and the
// relaxation with the cuts lies between the relaxation without them and
// the model's integer optimum, above the former somewhere.
func TestCascadeCuts(t *testing.T) {
	requireCBC(t)
	ctx := context.Background()
	checked, raised := 0, 0
	for _, in := range corpusInstances(t, shortNodes()) {
		if in.p.Refined() {
			continue
		}
		viol, cuts, applies, ok := checkmate.StageCascadeViolation(in.p, in.plan)
		if !applies {
			continue
		}
		if !ok {
			t.Errorf("%s: the optimal plan gives no point of the model", in.name)
			continue
		}
		if viol > 1e-6 {
			t.Errorf("%s: the optimal plan's point violates the model with its %d cascade cuts by %g", in.name, cuts, viol)
		}
		without, with, ok, err := checkmate.StageCascadeLP(ctx, in.p)
		if err != nil || !ok {
			t.Fatalf("%s: relaxation solved %v, error %v", in.name, ok, err)
		}
		opt, solved, err := checkmate.StageOptimum(ctx, in.p, false)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		checked++
		tol := 1e-6 * max(1, in.opt)
		switch {
		case with < without-tol || (solved && with > opt+tol) || with > in.opt+tol:
			t.Errorf("%s: relaxation with the cuts %v outside [%v without, the model's optimum %v (solved %v), the optimum %v]", in.name, with, without, opt, solved, in.opt)
		case with > without+tol:
			raised++
		}
	}
	if checked == 0 {
		t.Error("the model applies to no instance")
	}
	// Under -short the instances (at most shortNodes nodes) are too small
	// for the cuts to matter: they raise nothing there.
	if raised == 0 && !testing.Short() {
		t.Errorf("the cuts raise the relaxation on none of %d instances", checked)
	}
	t.Logf("the cuts raise the relaxation on %d of %d instances", raised, checked)
}

// TestStageSpans checks the bound of the spans that StageBound falls
// back to on large models: between Σ C_i and the optimum on the corpus,
// and above Σ C_i somewhere.
func TestStageSpans(t *testing.T) {
	requireCBC(t)
	ctx := context.Background()
	checked, raised := 0, 0
	for _, in := range corpusInstances(t, shortNodes()) {
		if in.p.Refined() {
			continue
		}
		b, ok, err := checkmate.StageSpansBound(ctx, in.p, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if !ok {
			continue
		}
		checked++
		sum := in.p.LowerBoundSeconds()
		switch {
		case b < sum-1e-9 || b > in.opt+1e-6*max(1, in.opt):
			t.Errorf("%s: spans' bound %v outside [Σ C_i = %v, optimum %v]", in.name, b, sum, in.opt)
		case b > sum*(1+1e-6)+1e-9:
			raised++
		}
	}
	if checked == 0 || raised == 0 {
		t.Errorf("the spans' bound is above Σ C_i on %d of %d instances", raised, checked)
	}
	t.Logf("the spans' bound is above Σ C_i on %d of %d instances", raised, checked)
}
