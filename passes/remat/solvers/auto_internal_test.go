package solvers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/lns"
	"github.com/remat-compile/remat/passes/remat/solvertest"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// withMILP runs f with the MILP stage of Auto replaced, and neither the
// search nor the LP bound (whose bounds can prove a plan optimal and skip
// the MILP).
func withMILP(t *testing.T, m *milpStage, f func()) {
	t.Helper()
	withStages(t, nil, nil, m, f)
}

// searchNoBound is the search stage with the plan's bound dropped, so
// that only the bound stage's counts.
var searchNoBound = &searchStage{
	name: "lns",
	solve: func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
		pl, err := lns.New(lns.Options{Start: start}).Solve(ctx, p, nil)
		if pl != nil {
			pl.LowerBound, pl.Gap, pl.Optimal = 0, 0, false
		}
		return pl, err
	},
}

// withStages runs f with Auto's search, bound and MILP stages replaced
// (nil: not run).
func withStages(t *testing.T, s *searchStage, b *boundStage, m *milpStage, f func()) {
	t.Helper()
	savedS, savedB, savedM := search, bound, milp
	search, bound, milp = s, b, m
	defer func() { search, bound, milp = savedS, savedB, savedM }()
	f()
}

// solveTraced runs Auto and returns its plan, error and attempts.
func solveTraced(ctx context.Context, p *remat.Problem) (*remat.Plan, []remat.Attempt, string, error) {
	var attempts []remat.Attempt
	chosen := ""
	ctx = remat.WithTrace(ctx, &remat.Trace{
		Attempt: func(a remat.Attempt) { attempts = append(attempts, a) },
		Chosen:  func(s string) { chosen = s },
	})
	plan, err := Auto.Solve(ctx, p, nil)
	return plan, attempts, chosen, err
}

// tight is Checkmate's 8-layer linear network with a budget between its
// least peak and checkpoint-all's, where the heuristics have work to do.
func tight() *remat.Problem {
	p := solvertest.LinearNetwork(8)
	p.BudgetBytes = 6
	return p
}

// TestAutoWithoutCBC checks that a missing CBC library leaves Auto with
// the heuristics' plan and an "unavailable" attempt.
func TestAutoWithoutCBC(t *testing.T) {
	missing := &milpStage{
		name: "checkmate-milp",
		solve: func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
			return nil, fmt.Errorf("checkmate: %w: %w", remat.ErrUnavailable, errors.New("cbc: COIN-OR CBC/CLP libraries not found: install Debian package coinor-libcbc3"))
		},
		unavailable: cbcMissing,
	}
	withMILP(t, missing, func() {
		p := tight()
		plan, attempts, chosen, err := solveTraced(context.Background(), p)
		if err != nil {
			t.Fatalf("Solve = %v; want the heuristics' plan", err)
		}
		if _, err := remat.Check(p, plan); err != nil {
			t.Fatal(err)
		}
		last := attempts[len(attempts)-1]
		if last.Solver != "checkmate-milp" || last.Status != "unavailable" || chosen == "checkmate-milp" || chosen == "" {
			t.Errorf("last attempt %+v, chosen %q; want the MILP unavailable and a heuristic chosen", last, chosen)
		}
	})
}

// TestAutoMILPStart checks that the MILP gets the best heuristic plan as
// its start and its time limit from the context.
func TestAutoMILPStart(t *testing.T) {
	var got *remat.Plan
	var deadline bool
	spy := &milpStage{
		name: "checkmate-milp",
		solve: func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
			got = start
			_, deadline = ctx.Deadline()
			return nil, ctx.Err()
		},
		unavailable: cbcMissing,
	}
	withMILP(t, spy, func() {
		p := tight()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		plan, _, chosen, err := solveTraced(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || !deadline {
			t.Fatalf("MILP start %v, deadline %v; want the best heuristic plan and the deadline", got, deadline)
		}
		startRes, err := remat.Check(p, got)
		if err != nil {
			t.Fatalf("the start fails Check: %v", err)
		}
		res, _ := remat.Check(p, plan)
		if res.TotalSeconds != startRes.TotalSeconds || chosen == "" {
			t.Errorf("plan costs %v, the start %v, chosen %q; want the start returned", res.TotalSeconds, startRes.TotalSeconds, chosen)
		}
	})
}

// TestAutoSkipsMILPWhenOptimal checks that a plan that costs the least
// possible ends the search.
func TestAutoSkipsMILPWhenOptimal(t *testing.T) {
	called := false
	spy := &milpStage{
		name: "checkmate-milp",
		solve: func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
			called = true
			return nil, errors.New("not expected")
		},
		unavailable: cbcMissing,
	}
	withStages(t, search, nil, spy, func() {
		p := solvertest.LinearNetwork(8)
		p.BudgetBytes = remat.NoBudget
		plan, attempts, chosen, err := solveTraced(context.Background(), p)
		if err != nil || !plan.Optimal || plan.Gap != 0 || called || chosen != "checkpoint-all" {
			t.Errorf("err %v, optimal %v, gap %v, MILP called %v, chosen %q; want checkpoint-all, optimal, no MILP", err, plan != nil && plan.Optimal, plan.Gap, called, chosen)
		}
		if len(attempts) != 3 || attempts[1].Solver != "lns" || attempts[2].Solver != "checkmate-milp" ||
			attempts[1].Status != "not-applicable" || attempts[2].Status != "not-applicable" {
			t.Errorf("attempts %+v; want checkpoint-all, then the search and the MILP not run", attempts)
		}
	})
}

// TestAutoSearchStart checks that the search starts from the cheapest
// heuristic plan within the budget, gets the context's deadline, and that
// a cheaper plan from it is returned with the search named as chosen.
func TestAutoSearchStart(t *testing.T) {
	var start *remat.Plan
	var deadline bool
	spy := &searchStage{
		name: "lns",
		solve: func(ctx context.Context, p *remat.Problem, s *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
			start = s
			_, deadline = ctx.Deadline()
			return lns.Solver.Solve(ctx, p, progress)
		},
	}
	withStages(t, spy, nil, nil, func() {
		p := tight()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		plan, attempts, chosen, err := solveTraced(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if start == nil || !deadline {
			t.Fatalf("search start %v, deadline %v; want the best heuristic plan and the deadline", start, deadline)
		}
		startRes, err := remat.Check(p, start)
		if err != nil {
			t.Fatalf("the start fails Check: %v", err)
		}
		// The start is the cheapest heuristic plan that fits.
		for _, a := range attempts {
			if a.Solver != "lns" && a.Status == "fits" && a.CostSeconds < startRes.TotalSeconds {
				t.Errorf("%s fits at cost %v, cheaper than the search's start %v", a.Solver, a.CostSeconds, startRes.TotalSeconds)
			}
		}
		res, err := remat.Check(p, plan)
		if err != nil {
			t.Fatal(err)
		}
		if res.TotalSeconds > startRes.TotalSeconds {
			t.Errorf("Auto returned cost %v, more than the start's %v", res.TotalSeconds, startRes.TotalSeconds)
		}
		if res.TotalSeconds < startRes.TotalSeconds && chosen != "lns" {
			t.Errorf("chosen %q for a plan cheaper than every heuristic's; want lns", chosen)
		}
	})
}

// TestAutoBoundStage checks that the bound stage's LowerBound, or the
// Bound it reports as progress when it returns no plan, becomes Auto's
// and gives its gap, and that a bound equal to the cost makes the plan
// optimal and skips the MILP.
func TestAutoBoundStage(t *testing.T) {
	p := tight()
	ref, err := searchNoBound.solve(context.Background(), p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	refRes, err := remat.Check(p, ref)
	if err != nil {
		t.Fatal(err)
	}
	weak := p.LowerBoundSeconds() + 0.25*(refRes.TotalSeconds-p.LowerBoundSeconds())
	for _, tt := range []struct {
		name     string
		lb       float64 // the bound stage's LowerBound
		optimal  bool
		progress bool // reported only as a progress Bound, with no plan
	}{
		{"weak bound", weak, false, false},
		{"tight bound", refRes.TotalSeconds, true, false},
		{"bound in progress, no plan", weak, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := &boundStage{
				name: "checkmate-lp",
				solve: func(ctx context.Context, q *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
					if tt.progress {
						// The relaxation solved, its rounding over the budget.
						progress(remat.Progress{Incumbent: math.Inf(1), Bound: tt.lb, Gap: math.Inf(1)})
						return nil, &remat.BudgetError{NeedBytes: q.BudgetBytes + 1, HaveBytes: q.BudgetBytes}
					}
					pl := *ref // a plan that fits, carrying the bound
					pl.Solver, pl.LowerBound, pl.Optimal = "checkmate-lp", tt.lb, false
					pl.Gap = (refRes.TotalSeconds - tt.lb) / refRes.TotalSeconds
					return &pl, nil
				},
			}
			milpCalled := false
			m := &milpStage{
				name: "checkmate-milp",
				solve: func(ctx context.Context, q *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
					milpCalled = true
					return nil, ctx.Err()
				},
				unavailable: cbcMissing,
			}
			withStages(t, searchNoBound, fake, m, func() {
				plan, _, _, err := solveTraced(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				res, err := remat.Check(p, plan)
				if err != nil {
					t.Fatal(err)
				}
				if !approxEq(plan.LowerBound, tt.lb) {
					t.Errorf("LowerBound %v, want the bound stage's %v", plan.LowerBound, tt.lb)
				}
				wantGap := (res.TotalSeconds - tt.lb) / res.TotalSeconds
				if plan.Optimal != tt.optimal || !approxEq(plan.Gap, max(0, wantGap)) && !tt.optimal {
					t.Errorf("Optimal %v, Gap %v; want %v and %v", plan.Optimal, plan.Gap, tt.optimal, wantGap)
				}
				if milpCalled == tt.optimal {
					t.Errorf("MILP called %v with the plan optimal %v; want it run only when not proven optimal", milpCalled, tt.optimal)
				}
			})
		})
	}
}

func approxEq(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestAutoExactStagesOnlySmall checks that the LP bound and the MILP are
// not run on problems larger than their limits, and say why.
func TestAutoExactStagesOnlySmall(t *testing.T) {
	called := map[string]bool{}
	b := &boundStage{name: "checkmate-lp", maxNodes: boundMaxNodes,
		solve: func(ctx context.Context, q *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
			called["checkmate-lp"] = true
			return nil, errors.New("not expected")
		}}
	m := &milpStage{name: "checkmate-milp",
		solve: func(ctx context.Context, q *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
			called["checkmate-milp"] = true
			return nil, errors.New("not expected")
		}, unavailable: cbcMissing}
	p, err := synth.Layered(1, boundMaxNodes+10, 3*(boundMaxNodes+10))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := remat.EvaluateNoRemat(p)
	p.BudgetBytes = res.PeakBytes * 95 / 100
	withStages(t, search, b, m, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, attempts, _, _ := solveTraced(ctx, p)
		if len(called) > 0 {
			t.Errorf("called %v on %d nodes", called, p.N())
		}
		for _, name := range []string{"checkmate-lp", "checkmate-milp"} {
			found := false
			for _, a := range attempts {
				if a.Solver == name && a.Status == "not-applicable" && strings.Contains(a.Note, "nodes is more than") {
					found = true
				}
			}
			if !found {
				t.Errorf("no not-applicable attempt for %s: %+v", name, attempts)
			}
		}
	})
}

// TestAutoNeverWorseThanCheckpointAll checks, on layered graphs at budgets
// where checkpoint-all fits, that Auto returns a plan costing what
// checkpoint-all costs (the least of any plan), proven optimal.
func TestAutoNeverWorseThanCheckpointAll(t *testing.T) {
	for _, nm := range [][2]int{{30, 60}, {100, 236}} {
		p, err := synth.Layered(2, nm[0], nm[1])
		if err != nil {
			t.Fatal(err)
		}
		res, _ := remat.EvaluateNoRemat(p)
		for _, budget := range []int64{res.PeakBytes, res.PeakBytes + 1, remat.NoBudget} {
			q := *p
			q.BudgetBytes = budget
			plan, err := Auto.Solve(context.Background(), &q, nil)
			if err != nil {
				t.Fatalf("%v at %d: %v", nm, budget, err)
			}
			got, err := remat.Check(&q, plan)
			if err != nil {
				t.Fatal(err)
			}
			if got.TotalSeconds > res.TotalSeconds || !plan.Optimal {
				t.Errorf("%v at %d: cost %v (optimal %v), checkpoint-all %v", nm, budget, got.TotalSeconds, plan.Optimal, res.TotalSeconds)
			}
		}
	}
}
