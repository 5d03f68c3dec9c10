package moccasin_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/synth"

	"github.com/remat-compile/remat/internal/cbc"
	"github.com/remat-compile/remat/passes/remat/moccasin"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

func requireCBC(t testing.TB) {
	t.Helper()
	if _, err := cbc.Load(); err != nil {
		if testing.Short() {
			t.Skipf("COIN-OR CBC/CLP unavailable: %v", err)
		}
		t.Fatal(err)
	}
}

// conformanceOptions are the suite's options: the corpus plus extra,
// or under -short the corpus's problems of up to 8 nodes.
func conformanceOptions(extra []solvertest.Case) solvertest.Options {
	if testing.Short() {
		return solvertest.Options{MaxNodes: 8}
	}
	return solvertest.Options{Timeout: 60 * time.Second, Cases: extra}
}

// TestConformance runs the suite on the paper's setting (C_v = 2, not
// exact: a plan may need a node three times) and on the uncapped model,
// which is exact and must agree with brute force at every budget, on the
// corpus and twelve more random DAGs of 8 to 12 nodes.
func TestConformance(t *testing.T) {
	requireCBC(t)
	var extra []solvertest.Case
	for seed := uint64(200); seed < 212; seed++ {
		n := 8 + int(seed)%5
		extra = append(extra, solvertest.Case{Name: fmt.Sprintf("extra-random-%d-n%d", seed, n), Problem: solvertest.RandomDAG(seed, n)})
	}
	t.Run("cap=2", func(t *testing.T) {
		if moccasin.Solver.Exact {
			t.Fatal("the capped solver is marked Exact")
		}
		solvertest.Run(t, moccasin.Solver, conformanceOptions(extra))
	})
	t.Run("uncapped", func(t *testing.T) {
		s := moccasin.New(moccasin.Options{MaxComputations: moccasin.NoCap})
		if !s.Exact {
			t.Fatal("the uncapped solver is not marked Exact")
		}
		solvertest.Run(t, s, conformanceOptions(extra))
	})
}

// instance is a problem at one budget.
type instance struct {
	name string
	p    *remat.Problem
}

func withBudget(p *remat.Problem, b int64) *remat.Problem {
	q := *p
	q.BudgetBytes = b
	return &q
}

// noRematPeak is the peak of the plan without rematerialization.
func noRematPeak(t testing.TB, p *remat.Problem) int64 {
	t.Helper()
	res, err := remat.EvaluateNoRemat(p)
	if err != nil {
		t.Fatal(err)
	}
	return res.PeakBytes
}

// smallInstances are seeded random DAGs (13 nodes) and small layered
// graphs (14 nodes, 26 edges) at
// 95 %, 85 %, 75 % and 65 % of their no-remat peak.
func smallInstances(t testing.TB) []instance {
	var out []instance
	var ps []instance
	for seed := range uint64(3) {
		ps = append(ps, instance{fmt.Sprint("random-", seed), solvertest.RandomDAG(seed+20, 13)})
		l, err := synth.Layered(seed, 14, 26)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, instance{fmt.Sprint("layered-", seed), l})
	}
	for _, in := range ps {
		peak := noRematPeak(t, in.p)
		for _, pct := range []int64{95, 85, 75, 65} {
			out = append(out, instance{fmt.Sprintf("%s@%d%%", in.name, pct), withBudget(in.p, peak*pct/100)})
		}
	}
	return out
}

func solveWith(t *testing.T, s remat.Solver, p *remat.Problem) (*remat.Plan, remat.CheckResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	pl, err := s.Solve(ctx, p, nil)
	if err != nil {
		return nil, remat.CheckResult{}, err
	}
	res, cerr := remat.Check(p, pl)
	if cerr != nil {
		t.Fatalf("%s: the plan fails Check: %v", s.Name, cerr)
	}
	return pl, res, nil
}

// TestAgreesWithCheckmate: without a cap, MOCCASIN's model holds every
// frontier-advancing plan, so it reaches checkmate-milp's proven optimum
// (and both prove it) at every budget, and agrees on infeasibility; with
// C_v = 2 it is never better than that optimum (the cap only removes
// plans), and it says Optimal only when it is.
func TestAgreesWithCheckmate(t *testing.T) {
	requireCBC(t)
	uncapped := moccasin.New(moccasin.Options{MaxComputations: moccasin.NoCap})
	// checkmate-milp proves infeasibility at once but then searches for
	// the least peak, which this test does not need: a time limit keeps
	// that short (its optimality proofs here take seconds).
	cm := checkmate.NewMILP(checkmate.Options{TimeLimit: 60 * time.Second})
	for _, in := range smallInstances(t) {
		if testing.Short() && !strings.HasPrefix(in.name, "random") {
			continue
		}
		t.Run(in.name, func(t *testing.T) {
			t0 := time.Now()
			cmPlan, cmRes, cmErr := solveWith(t, cm, in.p)
			t1 := time.Now()
			mPlan, mRes, mErr := solveWith(t, uncapped, in.p)
			t2 := time.Now()
			cPlan, cRes, cErr := solveWith(t, moccasin.Solver, in.p)
			t.Logf("times: checkmate %v, uncapped %v, C_v = 2 %v; errors %v, %v, %v", t1.Sub(t0), t2.Sub(t1), time.Since(t2), cmErr, mErr, cErr)
			if cmErr != nil {
				if !errors.Is(cmErr, remat.ErrInfeasible) {
					t.Fatalf("checkmate-milp: %v", cmErr)
				}
				if !errors.Is(mErr, remat.ErrInfeasible) {
					t.Errorf("checkmate-milp proves the budget infeasible; uncapped moccasin returns %v", mErr)
				}
				if cErr == nil {
					t.Errorf("checkmate-milp proves the budget infeasible; moccasin (C_v = 2) returns a plan")
				}
				return
			}
			if !cmPlan.Optimal {
				t.Fatalf("checkmate-milp did not prove optimality (gap %v)", cmPlan.Gap)
			}
			if mErr != nil {
				t.Fatalf("uncapped moccasin: %v; checkmate-milp's optimum is %v", mErr, cmRes.TotalSeconds)
			}
			if !approxEq(mRes.TotalSeconds, cmRes.TotalSeconds) || !mPlan.Optimal {
				t.Errorf("uncapped moccasin: cost %v (optimal %v); checkmate-milp's optimum %v", mRes.TotalSeconds, mPlan.Optimal, cmRes.TotalSeconds)
			}
			if cErr != nil {
				var be *remat.BudgetError
				if !errors.As(cErr, &be) || be.Proven {
					t.Errorf("moccasin (C_v = 2) fails with %v where a plan exists", cErr)
				}
				return
			}
			if cRes.TotalSeconds < cmRes.TotalSeconds*(1-1e-9) {
				t.Errorf("moccasin (C_v = 2) costs %v, below the optimum %v", cRes.TotalSeconds, cmRes.TotalSeconds)
			}
			if cPlan.Optimal && !approxEq(cRes.TotalSeconds, cmRes.TotalSeconds) {
				t.Errorf("moccasin (C_v = 2) claims Optimal at %v; the optimum is %v", cRes.TotalSeconds, cmRes.TotalSeconds)
			}
			if cPlan.LowerBound > cmRes.TotalSeconds*(1+1e-9) {
				t.Errorf("moccasin (C_v = 2) LowerBound %v exceeds the optimum %v", cPlan.LowerBound, cmRes.TotalSeconds)
			}
			t.Logf("optimum %v; C_v = 2: %v", cmRes.TotalSeconds, cRes.TotalSeconds)
		})
	}
}

func approxEq(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestBudgetErrors: a budget below the working set of one step is
// infeasible for every plan (proven, whatever the cap); a budget between
// that and the least peak is proven infeasible by the uncapped solver,
// whose NeedBytes is then the least peak (checked against brute force),
// and reported, not proven, under the cap; either way the error's plan
// peaks at NeedBytes.
func TestBudgetErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CBC for seconds; skipped in -short mode")
	}
	requireCBC(t)
	uncapped := moccasin.New(moccasin.Options{MaxComputations: moccasin.NoCap})
	for _, c := range []struct {
		name string
		p    *remat.Problem
	}{
		{"linear-8", solvertest.LinearNetwork(8)},
		{"kumar-figure-1", solvertest.KumarFigure1()},
		{"random-12", solvertest.RandomDAG(5, 12)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := solvertest.BruteForce(withBudget(c.p, 0))
			var lbe *remat.BudgetError
			if err == nil || !errors.As(err, &lbe) {
				t.Fatalf("brute force at budget 0: %v", err)
			}
			minPeak := lbe.NeedBytes
			step := c.p.Floor().Bytes
			for _, b := range []int64{step - 1, minPeak - 1} {
				if b < step-1 || b >= minPeak {
					continue
				}
				p := withBudget(c.p, b)
				for _, s := range []remat.Solver{uncapped, moccasin.Solver} {
					_, err := s.Solve(context.Background(), p, nil)
					var be *remat.BudgetError
					if !errors.As(err, &be) {
						t.Fatalf("%s at budget %d (least peak %d): error %v, want a *remat.BudgetError", s.Doc, b, minPeak, err)
					}
					if be.HaveBytes != b || be.NeedBytes < minPeak {
						t.Errorf("budget %d: HaveBytes %d, NeedBytes %d (least peak %d)", b, be.HaveBytes, be.NeedBytes, minPeak)
					}
					wantProven := b < step || s.Exact
					if be.Proven != wantProven || errors.Is(err, remat.ErrInfeasible) != wantProven {
						t.Errorf("%s at budget %d (step bound %d): Proven %v, want %v", s.Doc, b, step, be.Proven, wantProven)
					}
					if s.Exact && be.NeedBytes != minPeak {
						t.Errorf("uncapped at budget %d: NeedBytes %d, but the least peak is %d", b, be.NeedBytes, minPeak)
					}
					if be.Plan == nil {
						t.Errorf("budget %d: no plan in the error", b)
					} else if res, err := remat.Evaluate(p, be.Plan); err != nil || res.PeakBytes != be.NeedBytes {
						t.Errorf("budget %d: the error's plan peaks at %d (%v), not NeedBytes %d", b, res.PeakBytes, err, be.NeedBytes)
					}
				}
			}
		})
	}
}

// TestSolutionsOverTime: the progress callback gets every incumbent as it
// is found, with non-increasing costs, valid bounds and gaps, and the last
// incumbent reported is the plan returned. The instance (a 40-node
// layered graph at 80 %, uncapped) is one where phase 2 improves on
// phase 1's plan, so there are at least two.
func TestSolutionsOverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CBC for seconds; skipped in -short mode")
	}
	requireCBC(t)
	p, err := synth.Layered(3, 40, 90)
	if err != nil {
		t.Fatal(err)
	}
	p = withBudget(p, noRematPeak(t, p)*80/100)
	var reports []remat.Progress
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := moccasin.New(moccasin.Options{MaxComputations: moccasin.NoCap})
	pl, err := s.Solve(ctx, p, func(pr remat.Progress) { reports = append(reports, pr) })
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Check(p, pl)
	if err != nil {
		t.Fatal(err)
	}
	var incumbents []remat.Progress
	last := math.Inf(1)
	for _, r := range reports {
		if math.IsInf(r.Incumbent, 1) {
			continue
		}
		if r.Incumbent > last*(1+1e-12) {
			t.Errorf("incumbent rose from %v to %v (%s)", last, r.Incumbent, r.Note)
		}
		if r.Incumbent < last*(1-1e-12) {
			incumbents = append(incumbents, r)
		}
		last = r.Incumbent
		if r.Bound > r.Incumbent*(1+1e-12) || r.Gap < 0 || r.Bound < 0 {
			t.Errorf("report %+v: bound above the incumbent or a negative gap", r)
		}
	}
	if len(incumbents) == 0 || !approxEq(last, res.TotalSeconds) {
		t.Fatalf("the last reported incumbent is %v; the plan costs %v", last, res.TotalSeconds)
	}
	for _, r := range incumbents {
		t.Logf("%7.2fs  incumbent %.4f  bound %.4f  gap %.2f%%  %s", r.Elapsed, r.Incumbent, r.Bound, 100*r.Gap, r.Note)
	}
	if len(incumbents) < 2 {
		t.Errorf("%d incumbents reported; phase 2 improves on phase 1 here", len(incumbents))
	}
}

// TestStart: a start plan replaces phase 1; the result is never worse, and
// a start that computes a node more often than C_v is ignored, not fatal.
func TestStart(t *testing.T) {
	requireCBC(t)
	p := withBudget(solvertest.LinearNetwork(6), 4)
	opt, err := solvertest.BruteForce(p)
	if err != nil {
		t.Fatal(err)
	}
	optCost := opt.Cost(p)
	var notes []string
	s := moccasin.New(moccasin.Options{MaxComputations: moccasin.NoCap, Start: opt})
	pl, err := s.Solve(context.Background(), p, func(pr remat.Progress) { notes = append(notes, pr.Note) })
	if err != nil {
		t.Fatal(err)
	}
	if res, err := remat.Check(p, pl); err != nil || !approxEq(res.TotalSeconds, optCost) || !pl.Optimal {
		t.Fatalf("from the optimal start: cost %v (optimal %v, %v); optimum %v", res.TotalSeconds, pl.Optimal, err, optCost)
	}
	if !slices.Contains(notes, "start plan") {
		t.Errorf("the start was not used: notes %q", notes)
	}
	counts := make([]int, p.N())
	for _, v := range opt.Sequence() {
		counts[v]++
	}
	if slices.Max(counts) <= 2 {
		t.Fatalf("the optimal plan computes no node three times; the test needs one that does")
	}
	{
		notes = nil
		s := moccasin.New(moccasin.Options{Start: opt})
		if _, err := s.Solve(context.Background(), p, func(pr remat.Progress) { notes = append(notes, pr.Note) }); err != nil {
			var be *remat.BudgetError
			if !errors.As(err, &be) || be.Proven {
				t.Fatalf("C_v = 2 with a start over the cap: %v", err)
			}
		}
		if slices.Contains(notes, "start plan") {
			t.Errorf("a start computing a node %d times was used under C_v = 2", slices.Max(counts))
		}
	}
}

// TestPhase1Methods: the greedy and the paper's phase-1 MILP each lead
// phase 2 to the same (proven) optimum on small problems.
func TestPhase1Methods(t *testing.T) {
	requireCBC(t)
	for _, in := range smallInstances(t)[:8] {
		var costs []float64
		for _, ph := range []moccasin.Phase1{moccasin.Phase1Greedy, moccasin.Phase1MILP} {
			s := moccasin.New(moccasin.Options{MaxComputations: moccasin.NoCap, Phase1: ph})
			pl, res, err := solveWith(t, s, in.p)
			if err != nil {
				if !errors.Is(err, remat.ErrInfeasible) {
					t.Fatalf("%s, phase 1 %d: %v", in.name, ph, err)
				}
				costs = append(costs, math.Inf(1))
				continue
			}
			if !pl.Optimal {
				t.Errorf("%s, phase 1 %d: not proven optimal", in.name, ph)
			}
			costs = append(costs, res.TotalSeconds)
		}
		for _, c := range costs[1:] {
			if !(math.IsInf(c, 1) && math.IsInf(costs[0], 1)) && !approxEq(c, costs[0]) {
				t.Errorf("%s: costs %v differ by phase-1 method", in.name, costs)
			}
		}
	}
}
