package moccasin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/remat-compile/remat/internal/cbc"
	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// randomStages draws a frontier-advancing schedule: each stage t computes t
// and, with probability prob each, earlier recomputable nodes; spurious
// recomputations are dropped.
func randomStages(r *rand.Rand, p *remat.Problem, prob float64) [][]int32 {
	n := p.N()
	stages := make([][]int32, n)
	for t := range n {
		for v := range t {
			if p.Recomputable[v] && r.Float64() < prob {
				stages[t] = append(stages[t], int32(v))
			}
		}
		stages[t] = append(stages[t], int32(t))
	}
	remat.DropSpurious(p, stages)
	return stages
}

// modelProblems are the problems the model tests run on: the conformance
// corpus (multi-output parts, outputs, zero sizes, non-recomputable nodes)
// and seeded random DAGs.
func modelProblems() []solvertest.Case {
	cs := solvertest.Corpus()
	for seed := range uint64(6) {
		cs = append(cs, solvertest.Case{Name: fmt.Sprint("random-", seed), Problem: solvertest.RandomDAG(100+seed, 10+int(seed))})
	}
	return cs
}

func withBudget(p *remat.Problem, b int64) *remat.Problem {
	q := *p
	q.BudgetBytes = b
	return &q
}

// TestPointIsExact is the exactness argument of the package documentation
// checked on random plans: the point Point builds from a plan satisfies
// every row of the model at a budget of exactly the plan's peak under
// Check, the model's levels peak at exactly that (PeakBytes), one unit less
// makes the same point infeasible, the phase-1 model's P is that peak, and
// Plan reads the same plan back.
func TestPointIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, c := range modelProblems() {
		t.Run(c.Name, func(t *testing.T) {
			p := c.Problem
			for trial := range 12 {
				stages := randomStages(r, p, []float64{0, 0.1, 0.3, 0.6}[trial%4])
				plan, err := remat.ScheduleStages(p, stages)
				if err != nil {
					t.Fatal(err)
				}
				res, err := remat.Evaluate(p, plan)
				if err != nil {
					t.Fatal(err)
				}
				q := withBudget(p, res.PeakBytes)
				f, err := Build(q, ModelOptions{MaxComputations: NoCap})
				if err != nil {
					t.Fatal(err)
				}
				x, err := f.Point(plan)
				if err != nil {
					t.Fatalf("trial %d: Point: %v", trial, err)
				}
				if v := f.Model.MaxViolation(x); v > 1e-9 {
					t.Fatalf("trial %d: the plan's point violates the model at a budget of its peak %d by %g\nstages %v", trial, res.PeakBytes, v, stages)
				}
				if got := f.PeakBytes(x); got != res.PeakBytes {
					t.Fatalf("trial %d: the model's levels peak at %d bytes, Check measures %d\nstages %v", trial, got, res.PeakBytes, stages)
				}
				if got, want := f.Seconds(f.Model.ObjectiveValue(x)), res.TotalSeconds; !close(got, want) {
					t.Fatalf("trial %d: objective %v seconds, Check's cost %v", trial, got, want)
				}
				back, err := f.Plan(x)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(back.Sequence(), plan.Sequence()) {
					t.Fatalf("trial %d: Plan read back %v, not %v", trial, back.Sequence(), plan.Sequence())
				}
				if res.PeakBytes > p.ConstBytes && f.gcd > 0 {
					tight := withBudget(p, res.PeakBytes-f.gcd)
					g, err := Build(tight, ModelOptions{MaxComputations: NoCap})
					if err != nil {
						t.Fatal(err)
					}
					y, err := g.Point(plan)
					if err != nil {
						t.Fatal(err)
					}
					if g.Model.MaxViolation(y) <= 1e-9 {
						t.Fatalf("trial %d: the plan's point fits a budget of %d bytes, below its peak %d", trial, tight.BudgetBytes, res.PeakBytes)
					}
				}
				h, err := Build(withBudget(p, 0), ModelOptions{MaxComputations: NoCap, MinimizePeak: true})
				if err != nil {
					t.Fatal(err)
				}
				z, err := h.Point(plan)
				if err != nil {
					t.Fatal(err)
				}
				if v := h.Model.MaxViolation(z); v > 1e-9 {
					t.Fatalf("trial %d: phase-1 point violates the model by %g", trial, v)
				}
				if got := h.PeakBytes(z); got != res.PeakBytes {
					t.Fatalf("trial %d: phase-1 levels peak at %d, Check %d", trial, got, res.PeakBytes)
				}
			}
		})
	}
}

func close(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, a, b)
}

// TestLevelsAreSound is the other half of exactness: with the interval
// starts R fixed to a random plan's, the least peak the phase-1 model
// allows over all its continuous variables (retention, chains, levels;
// solved as an LP with CLP) is the peak Check measures, never less. So no
// feasible point of the model undercounts the memory of the plan it
// decodes to.
func TestLevelsAreSound(t *testing.T) {
	requireCBC(t)
	r := rand.New(rand.NewPCG(3, 5))
	for _, c := range modelProblems() {
		t.Run(c.Name, func(t *testing.T) {
			p := c.Problem
			for trial := range 6 {
				stages := randomStages(r, p, []float64{0, 0.15, 0.4}[trial%3])
				plan, err := remat.ScheduleStages(p, stages)
				if err != nil {
					t.Fatal(err)
				}
				res, err := remat.Evaluate(p, plan)
				if err != nil {
					t.Fatal(err)
				}
				f, err := Build(withBudget(p, 0), ModelOptions{MaxComputations: NoCap, MinimizePeak: true})
				if err != nil {
					t.Fatal(err)
				}
				x, err := f.Point(plan)
				if err != nil {
					t.Fatal(err)
				}
				for tt := range f.R {
					for _, rv := range f.R[tt] {
						if rv != NoVar {
							f.Model.SetBounds(rv, x[rv], x[rv])
						}
					}
				}
				f.Model.SetBounds(f.Peak, f.constLevel, milp.Inf) // the rows bound P, not the step bound
				sol, err := milp.Solve(context.Background(), f.Model, milp.Options{Relax: true})
				if err != nil {
					t.Fatal(err)
				}
				if sol.Status != milp.Optimal {
					t.Fatalf("trial %d: LP status %v", trial, sol.Status)
				}
				got := f.PeakBytes(sol.Values)
				if got != res.PeakBytes {
					t.Fatalf("trial %d: with R fixed, the model's least peak is %d bytes; Check measures %d\nstages %v", trial, got, res.PeakBytes, stages)
				}
			}
		})
	}
}

// requireCBC fails the test with cbc.Load's error (it names the Debian
// packages to install) when the COIN-OR libraries are missing; under
// -short it skips instead.
func requireCBC(t testing.TB) {
	t.Helper()
	if _, err := cbc.Load(); err != nil {
		if testing.Short() {
			t.Skipf("COIN-OR CBC/CLP unavailable: %v", err)
		}
		t.Fatal(err)
	}
}
