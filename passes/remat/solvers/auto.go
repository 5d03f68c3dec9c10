package solvers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// AutoName is the name of the Auto solver.
const AutoName = "auto"

// Auto is the default solver: a portfolio. It runs every heuristic in
// order (checkpoint-all first), each Checked, and keeps the cheapest plan
// within the budget (ties go to the earlier solver). Then, when the MILP
// solver is built in and its library (COIN-OR CBC) is installed, it runs
// checkmate-milp with the time that is left, warm-started (MIP start)
// from that plan, and returns whichever plan is cheaper, with the MILP's
// lower bound and gap. A plan that already costs the least possible
// (every node computed once) is returned without the MILP.
//
// Time: when ctx has a deadline, each heuristic may use at most a share
// of the time left (half of it split among the heuristics still to run
// when the MILP will follow, all of it otherwise), so that one slow
// heuristic cannot starve the rest; a heuristic cut short returns its
// best plan so far.
//
// Auto is deterministic when no solver is cut short by the deadline: the
// solvers run one after the other, the MILP single-threaded, ties broken
// by order. It reports each solver's outcome through the remat.Trace in
// ctx (remat.WithTrace) and its progress through progress. When no plan
// fits the budget it returns a *remat.BudgetError with the smallest peak
// any solver reached and that plan.
var Auto = remat.Solver{
	Name: AutoName,
	Doc: "Portfolio (the default): run every heuristic, keep the cheapest plan that fits, " +
		"then run checkmate-milp warm-started from it with the time left when COIN-OR CBC is installed.",
	Exact: false,
	Solve: solveAuto,
}

// milpStage runs the exact MILP from a start plan (nil for none); nil when
// no MILP solver is built in. unavailable reports an error that means the
// solver's library is missing.
type milpStage struct {
	name        string
	maxNodes    int
	solve       func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error)
	unavailable func(error) bool
}

// portfolio is one run of Auto.
type portfolio struct {
	p        *remat.Problem
	start    time.Time
	progress func(remat.Progress)
	trace    *remat.Trace
	lastEl   float64

	best     *remat.Plan
	bestBy   string
	bestCost float64
	bestPeak int64
	bound    float64 // the best lower bound on the optimum known

	need     int64 // the smallest peak reached over the budget (0: none)
	needPlan *remat.Plan
	needBy   string
	proven   bool // some solver proved that no plan fits
	failures []string
}

func solveAuto(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := &portfolio{
		p: p, start: time.Now(), progress: progress, trace: remat.ContextTrace(ctx),
		bestCost: math.Inf(1), bound: p.LowerBoundSeconds(),
	}
	m := milp
	tooBig := m != nil && m.maxNodes > 0 && p.N() > m.maxNodes
	if tooBig {
		m = nil
	}
	for k, h := range heuristics {
		if ctx.Err() != nil {
			break
		}
		share := len(heuristics) - k
		if m != nil {
			share *= 2
		}
		hctx, cancel := shareOf(ctx, share)
		t0 := time.Now()
		plan, err := h.Solve(hctx, p, a.sub(h.Name))
		cancel()
		a.consider(h.Name, plan, err, time.Since(t0), hctx.Err() != nil)
		if a.optimal() {
			break // no other plan costs less (checkpoint-all fits, say)
		}
	}
	if tooBig {
		a.trace.ReportAttempt(remat.Attempt{Solver: milp.name, Status: "not-applicable", Gap: math.Inf(1),
			Note: fmt.Sprintf("not run: %d nodes is more than the %d the MILP is run on", p.N(), milp.maxNodes)})
	}
	switch {
	case m == nil:
	case a.optimal():
		a.trace.ReportAttempt(remat.Attempt{Solver: m.name, Status: "not-applicable", Gap: math.Inf(1),
			Note: "not run: the best plan is already optimal"})
		m = nil
	case ctx.Err() != nil:
		a.trace.ReportAttempt(remat.Attempt{Solver: m.name, Status: "timeout", Gap: math.Inf(1),
			Note: "not run: no time left"})
		m = nil
	}
	if m != nil {
		t0 := time.Now()
		plan, err := m.solve(ctx, p, a.best, a.sub(m.name))
		if err != nil && m.unavailable(err) {
			a.trace.ReportAttempt(remat.Attempt{Solver: m.name, Status: "unavailable", Gap: math.Inf(1),
				ElapsedSeconds: time.Since(t0).Seconds(), Note: err.Error()})
			a.report(m.name + ": unavailable")
		} else {
			a.consider(m.name, plan, err, time.Since(t0), ctx.Err() != nil)
		}
	}
	return a.result(ctx)
}

// shareOf returns ctx with a deadline at 1/n of the time left, when ctx
// has a deadline.
func shareOf(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok || n <= 1 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(d)/time.Duration(n))
}

// optimal reports whether the best plan is known to be optimal: it says
// so, or it costs no more than the lower bound.
func (a *portfolio) optimal() bool {
	return a.best != nil && (a.best.Optimal || !above(a.bestCost, a.bound))
}

// above reports whether x exceeds y beyond a relative 1e-9.
func above(x, y float64) bool {
	return x > y && x-y > 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
}

// consider takes one solver's outcome: a plan that passes Check and is
// cheaper than the best so far replaces it; a plan over the budget (from
// a *BudgetError) may be the closest to fitting.
func (a *portfolio) consider(name string, plan *remat.Plan, err error, elapsed time.Duration, cut bool) {
	at := remat.Attempt{Solver: name, Gap: math.Inf(1), ElapsedSeconds: elapsed.Seconds()}
	var be *remat.BudgetError
	switch {
	case err == nil && plan == nil:
		at.Status, at.Note = "failed", "returned neither a plan nor an error"
	case err == nil:
		res, cerr := remat.Check(a.p, plan)
		if cerr != nil {
			// A solver bug: leave its plan out rather than fail the run.
			at.Status, at.Note = "failed", "its plan fails Check: "+cerr.Error()
			break
		}
		at.Status, at.PeakBytes, at.CostSeconds = "fits", res.PeakBytes, res.TotalSeconds
		at.Optimal, at.LowerBound = plan.Optimal, plan.LowerBound
		at.Gap = gapOf(res.TotalSeconds, plan.LowerBound, plan.Optimal)
		if plan.LowerBound > a.bound && !above(plan.LowerBound, res.TotalSeconds) {
			a.bound = plan.LowerBound
		}
		if a.best == nil || above(a.bestCost, res.TotalSeconds) {
			a.best, a.bestBy, a.bestCost, a.bestPeak = plan, name, res.TotalSeconds, res.PeakBytes
		}
		if plan.Optimal && !above(res.TotalSeconds, a.bestCost) {
			a.best.Optimal = true
		}
	case errors.As(err, &be):
		at.Status, at.PeakBytes = "over-budget", be.NeedBytes
		at.Note = fmt.Sprintf("smallest peak %s, over the budget of %s", remat.FormatBytes(be.NeedBytes), remat.FormatBytes(a.p.BudgetBytes))
		if be.Proven {
			at.Status = "infeasible"
			a.proven = true
		}
		pl := be.Plan
		if pl != nil {
			if res, eerr := remat.Evaluate(a.p, pl); eerr != nil || res.PeakBytes != be.NeedBytes {
				pl = nil // not the plan it claims: keep the number, not the plan
			}
		}
		if be.NeedBytes > a.p.BudgetBytes && (a.need == 0 || be.NeedBytes < a.need) {
			a.need, a.needPlan, a.needBy = be.NeedBytes, pl, name
		}
	case errors.Is(err, remat.ErrInfeasible):
		at.Status, at.Note = "infeasible", err.Error()
		a.proven = true
	case cut && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		at.Status, at.Note = "timeout", "no plan within its time"
	default:
		at.Status, at.Note = "failed", err.Error()
		a.failures = append(a.failures, name+": "+err.Error())
	}
	a.trace.ReportAttempt(at)
	note := name + ": " + at.Status
	if at.Status == "fits" {
		note += fmt.Sprintf(", %s peak", remat.FormatBytes(at.PeakBytes))
	}
	a.report(note)
}

// gapOf is the relative gap of a plan costing cost with lower bound lb.
func gapOf(cost, lb float64, optimal bool) float64 {
	switch {
	case optimal || cost <= 0:
		return 0
	case lb <= 0 || math.IsInf(cost, 0):
		return math.Inf(1)
	}
	return max(0, (cost-lb)/cost)
}

// sub wraps a running solver's progress into the portfolio's: elapsed
// since Auto began, the best incumbent and bound of either.
func (a *portfolio) sub(name string) func(remat.Progress) {
	if a.progress == nil {
		return nil
	}
	return func(pr remat.Progress) {
		inc := a.bestCost
		if pr.Incumbent < inc && !math.IsNaN(pr.Incumbent) {
			inc = pr.Incumbent
		}
		bound := a.bound
		if pr.Bound > bound && !math.IsInf(pr.Bound, 0) && !math.IsNaN(pr.Bound) {
			bound = pr.Bound
		}
		a.emit(inc, bound, name+": "+pr.Note)
	}
}

func (a *portfolio) report(note string) {
	if a.progress != nil {
		a.emit(a.bestCost, a.bound, note)
	}
}

func (a *portfolio) emit(inc, bound float64, note string) {
	el := max(time.Since(a.start).Seconds(), a.lastEl)
	a.lastEl = el
	gap := math.Inf(1)
	if !math.IsInf(inc, 0) {
		gap = gapOf(inc, bound, false)
	}
	a.progress(remat.Progress{Elapsed: el, Incumbent: inc, Bound: bound, Gap: gap, Note: strings.TrimSuffix(note, ": ")})
}

// result returns the best plan, or the error that says how close the
// solvers came.
func (a *portfolio) result(ctx context.Context) (*remat.Plan, error) {
	if a.best != nil {
		plan := *a.best
		plan.Solver = AutoName
		plan.LowerBound = min(max(a.bound, plan.LowerBound), a.bestCost)
		plan.Optimal = a.optimal()
		plan.Gap = gapOf(a.bestCost, plan.LowerBound, plan.Optimal)
		if math.IsInf(plan.Gap, 0) {
			plan.Gap = 0 // unknown: Plan.Gap has no +Inf; LowerBound 0 says so
			plan.LowerBound = 0
		}
		a.trace.ReportChosen(a.bestBy)
		return &plan, nil
	}
	if a.need > 0 {
		return nil, &remat.BudgetError{
			NeedBytes: a.need, HaveBytes: a.p.BudgetBytes, Plan: a.needPlan,
			// A MILP may model the coarse problem (one allocation per
			// node), whose infeasibility says nothing of the exact one.
			Proven: a.proven && !a.p.Refined(),
		}
	}
	if a.proven {
		return nil, remat.ErrInfeasible
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("auto: no solver returned a plan: %s", strings.Join(a.failures, "; "))
}
