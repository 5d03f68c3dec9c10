// Package checkpointall is the baseline solver without rematerialization:
// Checkmate's "Checkpoint all (Ideal)" of Table 1 and §6.1, the default
// of deep learning frameworks. Every node is computed once, in the
// problem's order, and every value is kept until its last use.
package checkpointall

import (
	"context"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// Name is the solver's name.
const Name = "checkpoint-all"

// Solver computes each node exactly once (R = I, the least cost of any
// plan: Problem.LowerBoundSeconds) and keeps each value until its last
// reader (remat.Schedule's S and FREE). When that peaks over the budget it
// returns a *remat.BudgetError with the peak it reached and the plan; the
// error is not Proven, since rematerialization may still fit.
var Solver = remat.Solver{
	Name:  Name,
	Doc:   "No rematerialization: compute every node once and keep each value until its last use.",
	Exact: false,
	Solve: solve,
}

func solve(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stages := make([][]int32, p.N())
	for t := range stages {
		stages[t] = []int32{int32(t)}
	}
	plan, err := remat.ScheduleStages(p, stages)
	if err != nil {
		return nil, err
	}
	res, err := remat.Evaluate(p, plan)
	if err != nil {
		return nil, err
	}
	plan.Solver = Name
	plan.LowerBound = p.LowerBoundSeconds()
	if res.PeakBytes > p.BudgetBytes {
		return nil, &remat.BudgetError{NeedBytes: res.PeakBytes, HaveBytes: p.BudgetBytes, Plan: plan}
	}
	// No plan costs less than computing every node once.
	plan.Optimal, plan.Gap = true, 0
	if progress != nil {
		progress(remat.Progress{
			Elapsed:   time.Since(start).Seconds(),
			Incumbent: res.TotalSeconds,
			Bound:     plan.LowerBound,
			Note:      "checkpoint-all fits",
		})
	}
	return plan, nil
}
