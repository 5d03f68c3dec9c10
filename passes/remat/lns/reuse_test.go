package lns

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// reuseOptima enumerates every frontier-advancing plan of p (every set of
// recomputations of every stage) and returns, for each budget, the least
// cost of those within it under remat.Evaluate, or +Inf.
func reuseOptima(t *testing.T, p *remat.Problem, budgets []int64) []float64 {
	t.Helper()
	n := p.N()
	type slot struct{ i, t int32 }
	var slots []slot
	for st := range n {
		for i := range st {
			if p.Recomputable[i] {
				slots = append(slots, slot{int32(i), int32(st)})
			}
		}
	}
	best := make([]float64, len(budgets))
	for k := range best {
		best[k] = math.Inf(1)
	}
	for mask := range uint64(1) << len(slots) {
		stages := make([][]int32, n)
		for k, s := range slots {
			if mask>>k&1 == 1 {
				stages[s.t] = append(stages[s.t], s.i)
			}
		}
		for st := range n {
			stages[st] = append(stages[st], int32(st))
		}
		res := evaluate(t, p, stages)
		for k, b := range budgets {
			if res.PeakBytes <= b && res.TotalSeconds < best[k] {
				best[k] = res.TotalSeconds
			}
		}
	}
	return best
}

// TestReuseOptimal solves small problems under remat.Problem.Reuse (random
// keys, so that freed buffers are often held for a later taker) at
// budgets between the least and the no-remat peak, and compares the plan
// with the exhaustive optimum under the same model: every plan passes
// remat.Check (so its peak under reuse is within the budget), none costs
// less than the optimum (which would mean a wrong evaluator), no budget
// without a plan gets one, and the search finds the optimum on at least
// nine budgets in ten.
func TestReuseOptimal(t *testing.T) {
	checked, worse, missed, seeds, maxN := 0, 0, 0, uint64(3), 6
	if testing.Short() {
		seeds, maxN = 1, 5
	}
	for _, c := range solvertest.Corpus() {
		if c.Problem.N() > maxN || c.Problem.N() < 3 {
			continue
		}
		for seed := range seeds {
			p := withReuse(c.Problem, rand.New(rand.NewPCG(seed, 99)))
			base, err := remat.EvaluateNoRemat(p)
			if err != nil {
				t.Fatal(err)
			}
			fracs := []float64{1, 0.9, 0.8, 0.7, 0.6}
			budgets := make([]int64, len(fracs))
			for k, f := range fracs {
				budgets[k] = int64(f * float64(base.PeakBytes))
			}
			optima := reuseOptima(t, p, budgets)
			for k, f := range fracs {
				q := *p
				q.BudgetBytes = budgets[k]
				want := optima[k]
				plan, err := Solver.Solve(context.Background(), &q, nil)
				name := fmt.Sprintf("%s/%d/%.0f%%", c.Name, seed, 100*f)
				switch {
				case math.IsInf(want, 1) && err == nil:
					t.Errorf("%s: a plan within %d bytes, but no plan is", name, q.BudgetBytes)
				case math.IsInf(want, 1):
				case err != nil:
					missed++
					t.Logf("%s: no plan, optimum %g: %v", name, want, err)
				default:
					res, err := remat.Check(&q, plan)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					checked++
					if res.TotalSeconds < want-1e-9*math.Max(1, want) {
						t.Errorf("%s: cost %g below the optimum %g", name, res.TotalSeconds, want)
					}
					if res.TotalSeconds > want+1e-9*math.Max(1, want) {
						worse++
						t.Logf("%s: cost %g, optimum under reuse %g", name, res.TotalSeconds, want)
					}
				}
			}
		}
	}
	t.Logf("%d plans checked (%d above the optimum), %d feasible budgets without a plan", checked, worse, missed)
	// Measured: 44 plans, all optimal, and 3 budgets missed, each where
	// the only plans that fit recompute a value so that an in-place write
	// finds it dying (the repair's cuts are ranked under liveness, which
	// does not see that).
	if worse+missed > (checked+missed)/10 {
		t.Errorf("%d of %d budgets above the optimum or missed; want at most a tenth", worse+missed, checked+missed)
	}
	if checked < 5*int(seeds) {
		t.Fatalf("only %d problems checked", checked)
	}
}

// withArena scales p's bytes (from withReuse) to sizes whose arena chunks
// differ (hundreds of bytes to kilobytes, not multiples of the arena's
// granularity) and counts them in the arena, the workspace of one node in
// two split into two allocations.
func withArena(p *remat.Problem, rng *rand.Rand) *remat.Problem {
	q := *p
	scale := func(b int64) int64 { return b*100 + 1 }
	q.Bytes = make([]int64, p.N())
	if p.Parts != nil {
		q.Parts = make([][]int64, p.N())
	}
	for i := range p.N() {
		for k := range p.NumParts(i) {
			q.Bytes[i] += scale(p.PartBytes(i, k))
			if p.NumParts(i) >= 2 {
				q.Parts[i] = append(q.Parts[i], scale(p.PartBytes(i, k)))
			}
		}
	}
	q.Workspace = make([]int64, p.N())
	q.Arena = &remat.Arena{WorkspaceParts: make([][]int64, p.N())}
	for i, w := range p.Workspace {
		if w == 0 {
			continue
		}
		q.Workspace[i] = scale(w)
		if rng.IntN(2) == 0 {
			q.Arena.WorkspaceParts[i] = []int64{q.Workspace[i] / 3, q.Workspace[i] - q.Workspace[i]/3}
		}
	}
	if err := q.Validate(); err != nil {
		panic(err)
	}
	return &q
}

// arenaBudgets calls f with each corpus problem of at most maxN nodes,
// given the planner's reuse and an arena (seeded), at 95, 85 and 75% of
// its no-remat peak; name says which.
func arenaBudgets(t *testing.T, maxN int, f func(name string, q remat.Problem)) {
	t.Helper()
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
		for _, m := range []float64{0.95, 0.85, 0.75} {
			q := *p
			q.BudgetBytes = int64(m * float64(base.PeakBytes))
			f(fmt.Sprintf("%s/%.0f%%", c.Name, 100*m), q)
		}
	}
}

// TestArenaPlansFit solves problems whose memory is counted in the arena
// (remat.Problem.Arena) at budgets from the no-remat peak down: every plan
// passes remat.Check on the problem, arena included, and every budget
// error names the arena peak of the plan it carries. Some of the plans
// must need the searches past the first (the arena's chunks above the
// buffers' budget), or the test does not test solveArena.
func TestArenaPlansFit(t *testing.T) {
	plans, refused, wasted := 0, 0, 0
	maxN, want := 40, 10
	if testing.Short() {
		maxN, want = 16, 4
	}
	arenaBudgets(t, maxN, func(name string, q remat.Problem) {
		plan, err := New(Options{Patience: 2}).Solve(context.Background(), &q, nil)
		var be *remat.BudgetError
		switch {
		case errors.As(err, &be):
			refused++
			if be.Plan == nil {
				return
			}
			res, err := remat.Evaluate(&q, be.Plan)
			if err != nil || res.PeakBytes != be.NeedBytes || be.NeedBytes <= q.BudgetBytes {
				t.Errorf("%s: budget error needs %d bytes; its plan peaks at %d (%v), budget %d", name, be.NeedBytes, res.PeakBytes, err, q.BudgetBytes)
			}
			// At the peak it reached, with its plan as the hint, there
			// is a plan (a sweep's retry).
			r := q
			r.BudgetBytes, r.Start = be.NeedBytes, be.Plan
			if _, err := New(Options{Patience: 2}).Solve(context.Background(), &r, nil); err != nil {
				t.Errorf("%s: at the %d bytes it reached, with its plan as the hint: %v", name, be.NeedBytes, err)
			}
		case err != nil:
			t.Fatalf("%s: %v", name, err)
		default:
			if _, err := remat.Check(&q, plan); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			plans++
			own := q
			own.Arena = nil
			a, _ := remat.Evaluate(&q, plan)
			b, _ := remat.Evaluate(&own, plan)
			if a.PeakBytes > b.PeakBytes {
				wasted++
			}
		}
	})
	t.Logf("%d plans within the budget in the arena (%d with arena waste at the peak), %d budgets refused", plans, wasted, refused)
	if plans < want || wasted == 0 {
		t.Errorf("%d plans, %d with waste: the corpus does not exercise the arena", plans, wasted)
	}
}
