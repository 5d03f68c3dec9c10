package solvers

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// withMILP runs f with the MILP stage of Auto replaced.
func withMILP(t *testing.T, m *milpStage, f func()) {
	t.Helper()
	saved := milp
	milp = m
	defer func() { milp = saved }()
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
			return nil, fmt.Errorf("cbc: %w", errors.New("COIN-OR CBC/CLP libraries not found: install Debian package coinor-libcbc3"))
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
	withMILP(t, spy, func() {
		p := solvertest.LinearNetwork(8)
		p.BudgetBytes = remat.NoBudget
		plan, attempts, chosen, err := solveTraced(context.Background(), p)
		if err != nil || !plan.Optimal || plan.Gap != 0 || called || chosen != "checkpoint-all" {
			t.Errorf("err %v, optimal %v, gap %v, MILP called %v, chosen %q; want checkpoint-all, optimal, no MILP", err, plan != nil && plan.Optimal, plan.Gap, called, chosen)
		}
		if len(attempts) != 2 || attempts[1].Status != "not-applicable" {
			t.Errorf("attempts %+v; want checkpoint-all and the MILP not run", attempts)
		}
	})
}
