package solvertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

// The suite passes its own reference.
func TestBruteForceConformance(t *testing.T) {
	opts := Options{}
	if testing.Short() {
		opts.MaxNodes = 8 // the brute force is exponential in the nodes
	}
	Run(t, BruteForceSolver, opts)
}

// identityPlan is checkpoint-all, plus a recomputation of node t−1 in
// every stage t when wasteful is set.
func identityPlan(p *remat.Problem, wasteful bool) *remat.Plan {
	stages := make([][]int32, p.N())
	for t := range stages {
		if wasteful && t > 0 && p.Recomputable[t-1] {
			stages[t] = append(stages[t], int32(t-1))
		}
		stages[t] = append(stages[t], int32(t))
	}
	plan, err := remat.ScheduleStages(p, stages)
	if err != nil {
		panic(err)
	}
	return plan
}

// broken are solvers with one defect each, and what the suite must say.
var broken = map[string]struct {
	solver remat.Solver
	want   string
}{
	"over-budget": {remat.Solver{Name: "over-budget", Doc: "Ignores the budget.", Solve: func(_ context.Context, p *remat.Problem, _ func(remat.Progress)) (*remat.Plan, error) {
		plan := identityPlan(p, false)
		plan.Solver = "over-budget"
		return plan, nil
	}}, "the plan fails Check"},
	"suboptimal-exact": {remat.Solver{Name: "suboptimal-exact", Doc: "Claims to be exact.", Exact: true, Solve: func(_ context.Context, p *remat.Problem, _ func(remat.Progress)) (*remat.Plan, error) {
		plan := identityPlan(p, true)
		plan.Solver = "suboptimal-exact"
		if res, err := remat.Check(p, plan); err != nil {
			return nil, &remat.BudgetError{NeedBytes: res.PeakBytes, HaveBytes: p.BudgetBytes}
		}
		return plan, nil
	}}, "exact solver: cost"},
	"false-optimal": {remat.Solver{Name: "false-optimal", Doc: "Claims optimality.", Solve: func(_ context.Context, p *remat.Problem, _ func(remat.Progress)) (*remat.Plan, error) {
		plan := identityPlan(p, true)
		plan.Solver, plan.Optimal = "false-optimal", true
		if res, err := remat.Check(p, plan); err != nil {
			return nil, &remat.BudgetError{NeedBytes: res.PeakBytes, HaveBytes: p.BudgetBytes}
		}
		return plan, nil
	}}, "claims Optimal"},
	"gives-up": {remat.Solver{Name: "gives-up", Doc: "Always infeasible.", Solve: func(context.Context, *remat.Problem, func(remat.Progress)) (*remat.Plan, error) {
		return nil, remat.ErrInfeasible
	}}, "ErrInfeasible, but brute force finds a plan"},
}

// TestBrokenSolverHelper runs the suite on the broken solver named by
// $SOLVERTEST_BROKEN; TestSuiteCatchesBrokenSolvers runs it in a
// subprocess and expects it to fail.
func TestBrokenSolverHelper(t *testing.T) {
	name := os.Getenv("SOLVERTEST_BROKEN")
	if name == "" {
		t.Skip("helper for TestSuiteCatchesBrokenSolvers")
	}
	Run(t, broken[name].solver, Options{MaxNodes: 6})
}

func TestSuiteCatchesBrokenSolvers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	for name, b := range broken {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestBrokenSolverHelper$")
			cmd.Env = append(os.Environ(), "SOLVERTEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a solver that is %s", name)
			}
			if !strings.Contains(string(out), b.want) {
				t.Errorf("the suite's output lacks %q:\n%s", b.want, tail(string(out), 2000))
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
