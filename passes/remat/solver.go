package remat

import (
	"context"
	"errors"
	"fmt"
)

// Solver is one way of choosing a plan. Each solver package exports its
// Solver value; the registry (passes/remat/solvers) lists them.
//
// Solve must be deterministic (fixed seeds, ties broken by node number),
// must not print, must not modify the Problem, and must honour ctx: when
// its deadline passes it returns the best plan found so far with
// Optimal = false and the Gap when known, or ctx's error when it has none.
// progress, which may be nil, receives reports as the search goes.
//
// A returned plan must pass Check. When no plan within the budget is
// found, Solve returns a *BudgetError with the smallest peak it reached,
// or ErrInfeasible when it proved that none exists and knows no smallest
// peak.
type Solver struct {
	Name string // lower-case and hyphenated ("checkpoint-all")
	Doc  string // first sentence: a one-line summary
	// Exact solvers return an optimal plan whenever one exists and they
	// are given the time: solvertest compares them with brute force.
	Exact bool
	// TargetAware solvers make their plans under Problem.Reuse (the
	// target runtime's allocator) when it is set; the remat pass lowers
	// the problem under plain liveness for the others.
	TargetAware bool
	Solve       func(ctx context.Context, p *Problem, progress func(Progress)) (*Plan, error)
}

// Progress is one report of a running solver.
type Progress struct {
	// Elapsed is the time since Solve began, in seconds.
	Elapsed float64
	// Incumbent is the cost of the best plan so far, in seconds (+Inf
	// when none); Bound is the best proven lower bound on the optimum.
	Incumbent, Bound float64
	// Gap is (Incumbent − Bound) / Incumbent, +Inf when unknown.
	Gap float64
	// Note says what the solver is doing, for a progress line.
	Note string
}

// ErrInfeasible reports that no plan fits the budget. A solver returns it
// (or a *BudgetError with Proven set, which matches it under errors.Is)
// only when it knows: a heuristic that found nothing returns a
// *BudgetError instead.
var ErrInfeasible = errors.New("remat: no plan fits the memory budget")

// ErrUnavailable is wrapped by the error of a solver whose backend is not
// installed (COIN-OR CBC/CLP for the MILP and LP solvers): a portfolio
// such as auto skips it, a caller tells the user what to install (the
// wrapped error says).
var ErrUnavailable = errors.New("remat: the solver's backend is not installed")

// BudgetError reports that the solver found no plan within the budget.
// NeedBytes is the smallest peak it reached: a budget of NeedBytes would
// have let it return a plan (Plan, when not nil).
type BudgetError struct {
	NeedBytes, HaveBytes int64
	// Plan, when not nil, is the plan that reaches NeedBytes: legal under
	// Evaluate, over the budget under Check.
	Plan *Plan
	// Proven reports that no plan at all fits HaveBytes (and, from an
	// exact solver, that NeedBytes is the least peak of any plan); then
	// errors.Is(err, ErrInfeasible) holds.
	Proven bool
}

func (e *BudgetError) Error() string {
	what := "the smallest peak found"
	if e.Proven {
		what = "the smallest peak possible"
	}
	return fmt.Sprintf("remat: no plan fits the budget of %d bytes: %s is %d bytes (%.1f%% of the budget)",
		e.HaveBytes, what, e.NeedBytes, 100*float64(e.NeedBytes)/float64(max(e.HaveBytes, 1)))
}

// Is makes a proven BudgetError match ErrInfeasible.
func (e *BudgetError) Is(target error) bool { return e.Proven && target == ErrInfeasible }
