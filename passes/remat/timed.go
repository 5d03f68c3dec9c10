package remat

import (
	"context"
	"errors"
	"math"
	"time"
)

// Timed is one solve measured as the benchmarks measure it (remat-compile
// bench, the solver packages' benchmarks): the plan checked against the
// problem's budget, the seconds the solver ran, and the seconds to its best
// plan.
type Timed struct {
	// Plan is the solver's plan and Err its error, as Solve returned them.
	Plan *Plan
	Err  error
	// Check is what Check measured of Plan; CheckErr is set when the plan
	// fails Check (a solver bug: solvers must return checked plans).
	Check    CheckResult
	CheckErr error
	// TimedOut reports that the limit passed before Solve returned.
	TimedOut bool
	// Total is the seconds Solve ran; ToBest the seconds until a progress
	// report first showed the cost of the returned plan (Total when the
	// solver reported none).
	Total, ToBest float64
	// LastNote is the note of the solver's last progress report.
	LastNote string
}

// SolveTimed runs s on p under the time limit and checks its plan;
// observe, when not nil, also sees every progress report.
func SolveTimed(ctx context.Context, s Solver, p *Problem, limit time.Duration, observe func(Progress)) Timed {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	best, bestAt := math.Inf(1), 0.0
	var t Timed
	progress := func(pr Progress) {
		if pr.Incumbent < best {
			best, bestAt = pr.Incumbent, pr.Elapsed
		}
		t.LastNote = pr.Note
		if observe != nil {
			observe(pr)
		}
	}
	start := time.Now()
	t.Plan, t.Err = s.Solve(ctx, p, progress)
	t.Total = time.Since(start).Seconds()
	t.TimedOut = ctx.Err() != nil
	t.ToBest = t.Total
	if t.Err != nil || t.Plan == nil {
		return t
	}
	if t.Check, t.CheckErr = Check(p, t.Plan); t.CheckErr != nil {
		return t
	}
	if !math.IsInf(best, 1) && best <= t.Check.TotalSeconds*(1+1e-9) {
		t.ToBest = bestAt
	}
	return t
}

// Status classifies the run as a benchmark table lists it: "optimal" or
// "feasible" for a checked plan; "over-budget" when the solver's least
// peak is above the budget (a BudgetError) and "infeasible" when the
// budget is proved unreachable; "timeout" with no plan within the limit;
// "error" otherwise (a plan failing Check is a solver bug), with a note.
func (t *Timed) Status() (status, note string) {
	var be *BudgetError
	switch err := t.Err; {
	case err == nil && t.Plan != nil:
		if t.CheckErr != nil {
			return "error", "the plan fails Check (a solver bug): " + t.CheckErr.Error()
		}
		if t.Plan.Optimal {
			return "optimal", ""
		}
		return "feasible", ""
	case errors.As(err, &be):
		if be.Proven {
			return "infeasible", ""
		}
		return "over-budget", ""
	case errors.Is(err, ErrInfeasible):
		return "infeasible", ""
	case t.TimedOut:
		return "timeout", "no plan within the time limit"
	case err == nil:
		return "error", "the solver returned neither a plan nor an error"
	}
	return "error", t.Err.Error()
}
