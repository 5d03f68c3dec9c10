package lns

import (
	"context"
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
		plan, err := remat.ScheduleStages(p, stages)
		if err != nil {
			t.Fatal(err)
		}
		res, err := remat.Evaluate(p, plan)
		if err != nil {
			t.Fatal(err)
		}
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
// remat.Check (so its peak under reuse is within the budget), and the
// search finds the optimum cost.
func TestReuseOptimal(t *testing.T) {
	checked, seeds, maxN := 0, uint64(3), 6
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
				t.Run(fmt.Sprintf("%s/%d/%.0f%%", c.Name, seed, 100*f), func(t *testing.T) {
					plan, err := Solver.Solve(context.Background(), &q, nil)
					if math.IsInf(want, 1) {
						if err == nil {
							t.Fatalf("a plan within %d bytes, but no plan is", q.BudgetBytes)
						}
						return
					}
					if err != nil {
						t.Fatalf("no plan, optimum %g: %v", want, err)
					}
					res, err := remat.Check(&q, plan)
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(res.TotalSeconds-want) > 1e-9*math.Max(1, want) {
						t.Errorf("cost %g, optimum under reuse %g", res.TotalSeconds, want)
					}
					checked++
				})
			}
		}
	}
	if checked < 5*int(seeds) {
		t.Fatalf("only %d problems checked", checked)
	}
}
