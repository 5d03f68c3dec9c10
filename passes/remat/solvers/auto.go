package solvers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/lns"
)

// AutoName is the name of the Auto solver.
const AutoName = "auto"

// Auto is the default solver: pure Go, no external solver needed,
// deterministic, anytime, and using every core. It runs, in order:
//
//  1. every heuristic (checkpoint-all first), each Checked, keeping the
//     cheapest plan within the budget (ties go to the earlier solver);
//     a plan that costs the least possible (every node computed once)
//     ends the run;
//  2. the large-neighbourhood search of package lns from that plan and
//     from checkpoint-all, each repaired greedily: parallel seeded workers
//     in fixed-size rounds, stopping when a few rounds in a row find
//     nothing cheaper; when no plan is found within the budget it lowers
//     the peak as far as it can;
//  3. when COIN-OR CLP is installed and the problem has at most
//     boundMaxNodes nodes, Checkmate's LP relaxation (§5.1, one solve of
//     at most boundTimeLimit, rounded by Algorithm 2) for a lower bound
//     and the gap; its rounded plan competes too. (The search reports a
//     weaker combinatorial bound on every problem, see package lns.)
//  4. when COIN-OR CBC is installed and the problem has at most
//     exactMaxNodes nodes, checkmate-milp warm-started from the best
//     plan, for at most exactTimeLimit, for a proof of optimality.
//
// The MILP is kept only on small problems, where CBC proves optimality in
// seconds: elsewhere the search matches or beats what CBC finds in
// minutes, and the MILP would only spend the rest of the time limit. On
// synth's layered graphs at 90 % of the no-remat peak, wherever CBC proved
// optimality (40 to 100 nodes, 7 to 49 s) the search had found the same
// plan cost in under 2 s (layered 100/236: 0.95 % overhead, the MILP in
// 36 s); wherever CBC did not finish within 60 to 150 s (at 75 % to 80 %,
// or 60 nodes and 300 edges and more), the search's plan was as cheap or
// cheaper, often the only one found, and a 150 to 200 s MILP warm-started
// from it (100/236 at 80 %, 250/944 at 90 %) improved nothing.
//
// Time: when ctx has a deadline, the heuristics together may use at most
// a tenth of the time left (heuristicsShare), each an equal share of what
// is left of it, the search at most three quarters of what is left when
// the LP bound follows; every stage cut short returns its best plan so far, so Auto
// returns the best plan found when the deadline passes or ctx is
// cancelled (Ctrl-C).
//
// Auto is deterministic when no stage is cut short by the deadline (or by
// its own time limit, for the LP bound and the MILP): the
// stages run one after the other, the search's result depends only on its
// seed and rounds, the MILP runs single-threaded, and ties are broken by
// order. It reports each stage's outcome through the remat.Trace in ctx
// (remat.WithTrace) and its progress through progress. When no plan fits
// the budget it returns a *remat.BudgetError with the smallest peak any
// stage reached and that plan.
var Auto = remat.Solver{
	Name: AutoName,
	Doc: "Portfolio (the default): run every heuristic, improve the cheapest plan by large-neighbourhood search (lns), " +
		"bound it with Checkmate's LP relaxation when COIN-OR CLP is installed, and on small graphs run checkmate-milp from it.",
	Exact:       false,
	TargetAware: true,
	Solve:       solveAuto,
}

// exactMaxNodes bounds the problems on which Auto runs the MILP after the
// search, and exactTimeLimit its time (see Auto).
const (
	exactMaxNodes  = 30
	exactTimeLimit = 10 * time.Second
)

// heuristicsShare: the heuristics get 1/heuristicsShare of the time left.
// On graphs where none of them fits the budget, the greedy ones are the
// slowest and search longest (on MOCCASIN's 1000-node G4, chen-greedy and
// linearized-greedy take over a second of CPU each and find no plan at 90
// or 80 % of the peak), and every second they spend is one the search does
// not have.
const heuristicsShare = 10

// boundMaxNodes bounds the problems on which Auto solves the LP
// relaxation for a lower bound: past it the relaxation, with O(n·|E|)
// variables, takes longer than the search (on the layered graphs of
// synth, about 1 s at 100 nodes and 236 edges, 40 s at 250 and 944).
const boundMaxNodes = 120

// boundTimeLimit bounds the LP stage.
const boundTimeLimit = 10 * time.Second

// milpStage runs the exact MILP from a start plan (nil for none); nil when
// no MILP solver is built in. unavailable reports an error that means the
// solver's library is missing.
type milpStage struct {
	name        string
	maxNodes    int
	solve       func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error)
	unavailable func(error) bool
}

// searchStage is the local search Auto runs from the best heuristic plan.
type searchStage struct {
	name  string
	solve func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error)
}

// search is Auto's search stage: lns with its default options.
var search = &searchStage{
	name: lns.Name,
	solve: func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
		return lns.New(lns.Options{Start: start}).Solve(ctx, p, progress)
	},
}

// boundStage computes a lower bound (a plan's LowerBound); unavailable
// reports an error that means the solver's library is missing.
type boundStage struct {
	name        string
	maxNodes    int
	solve       func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error)
	unavailable func(error) bool
}

// bound is Auto's bound stage: checkmate-lp with one relaxation (the
// tighter per-factor FREE rows, ε = 0) and its deterministic rounding.
// Its LowerBound is the relaxation's optimum when the rounding fits the
// budget (the solver reports no bound otherwise).
var bound = &boundStage{
	name:     checkmate.LPName,
	maxNodes: boundMaxNodes,
	solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
		opts := checkmate.Options{Model: checkmate.ModelOptions{Free: checkmate.FreePerFactor}}
		return checkmate.NewLP(opts).Solve(ctx, p, progress)
	},
	unavailable: cbcMissing,
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
	// The heuristics together get at most a tenth of the time left; each
	// an equal share of what is left of that.
	gctx, gcancel := fractionOf(ctx, 1, heuristicsShare)
	defer gcancel()
	for k, h := range heuristics {
		if gctx.Err() != nil {
			break
		}
		hctx, cancel := shareOf(gctx, len(heuristics)-k)
		t0 := time.Now()
		plan, err := h.Solve(hctx, p, a.sub(h.Name))
		cancel()
		a.consider(h.Name, plan, err, time.Since(t0), hctx.Err() != nil)
		if a.optimal() {
			break // no other plan costs less (checkpoint-all fits, say)
		}
	}
	lp := bound
	if lp != nil && lp.maxNodes > 0 && p.N() > lp.maxNodes {
		a.notRun(lp.name, fmt.Sprintf("not run: %d nodes is more than the %d the LP bound is computed for", p.N(), lp.maxNodes))
		lp = nil
	}
	m := milp
	if m != nil && (m.maxNodes > 0 && p.N() > m.maxNodes || p.N() > exactMaxNodes) {
		limit := exactMaxNodes
		if m.maxNodes > 0 {
			limit = min(limit, m.maxNodes)
		}
		a.notRun(m.name, fmt.Sprintf("not run: %d nodes is more than the %d the MILP is run on", p.N(), limit))
		m = nil
	}
	if search != nil && !a.skip(ctx, search.name) {
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if lp != nil {
			sctx, cancel = fractionOf(ctx, 3, 4)
		}
		t0 := time.Now()
		plan, err := search.solve(sctx, p, a.best, a.sub(search.name))
		cancel()
		a.consider(search.name, plan, err, time.Since(t0), sctx.Err() != nil)
	}
	if lp != nil && !a.skip(ctx, lp.name) {
		t0 := time.Now()
		lctx, cancel := context.WithTimeout(ctx, boundTimeLimit)
		// The relaxation's optimum arrives as the progress reports' Bound
		// (a proven lower bound, remat.Progress), also when its rounding
		// does not fit the budget and the solver returns no plan.
		lb := math.Inf(-1)
		sub := a.sub(lp.name)
		plan, err := lp.solve(lctx, p.Relaxed(), func(pr remat.Progress) {
			if !math.IsNaN(pr.Bound) && !math.IsInf(pr.Bound, 0) {
				lb = max(lb, pr.Bound)
			}
			if sub != nil {
				sub(pr)
			}
		})
		cut := lctx.Err() != nil
		cancel()
		plan, err = a.unrelax(plan, err)
		if err != nil && lp.unavailable != nil && lp.unavailable(err) {
			a.unavailable(lp.name, err, time.Since(t0))
		} else {
			a.consider(lp.name, plan, err, time.Since(t0), cut)
			if lb > a.bound && (a.best == nil || !above(lb, a.bestCost)) {
				a.bound = lb
			}
		}
	}
	if m != nil && !a.skip(ctx, m.name) {
		t0 := time.Now()
		mctx, cancel := context.WithTimeout(ctx, exactTimeLimit)
		plan, err := m.solve(mctx, p.Relaxed(), a.best, a.sub(m.name))
		cut := mctx.Err() != nil
		cancel()
		plan, err = a.unrelax(plan, err)
		if err != nil && m.unavailable != nil && m.unavailable(err) {
			a.unavailable(m.name, err, time.Since(t0))
		} else {
			a.consider(m.name, plan, err, time.Since(t0), cut)
		}
	}
	return a.result(ctx)
}

// unrelax turns the outcome of a stage run on the problem's relaxation
// (remat.Problem.Relaxed; the LP bound and the MILP, which model plain
// liveness) into one for the problem itself: a plan over the budget under
// the problem's own model becomes a *remat.BudgetError with that peak,
// and a BudgetError's smallest peak is its plan's under the problem's
// model, proven only when the relaxation's proof says exactly that. A
// proof that no plan fits (remat.ErrInfeasible) holds as it is: the
// relaxation's memory is at most the problem's.
func (a *portfolio) unrelax(plan *remat.Plan, err error) (*remat.Plan, error) {
	if a.p.Relaxed() == a.p {
		return plan, err
	}
	var be *remat.BudgetError
	switch {
	case err == nil && plan != nil:
		res, eerr := remat.Evaluate(a.p, plan)
		if eerr == nil && res.PeakBytes > a.p.BudgetBytes {
			return nil, &remat.BudgetError{NeedBytes: res.PeakBytes, HaveBytes: a.p.BudgetBytes, Plan: plan}
		}
	case errors.As(err, &be) && be.Plan != nil:
		res, eerr := remat.Evaluate(a.p, be.Plan)
		if eerr != nil {
			return nil, err
		}
		c := *be
		c.Proven = be.Proven && res.PeakBytes == be.NeedBytes
		c.NeedBytes = res.PeakBytes
		return nil, &c
	case errors.As(err, &be):
		c := *be
		c.Proven = false // a peak of the relaxation, not reached by a plan
		return nil, &c
	}
	return plan, err
}

// skip reports (and traces) why a later stage does not run: the best plan
// is already optimal, or no time is left.
func (a *portfolio) skip(ctx context.Context, name string) bool {
	switch {
	case a.optimal():
		a.notRun(name, "not run: the best plan is already optimal")
	case ctx.Err() != nil:
		a.trace.ReportAttempt(remat.Attempt{Solver: name, Status: "timeout", Gap: math.Inf(1), Note: "not run: no time left"})
	default:
		return false
	}
	return true
}

func (a *portfolio) notRun(name, note string) {
	a.trace.ReportAttempt(remat.Attempt{Solver: name, Status: "not-applicable", Gap: math.Inf(1), Note: note})
}

func (a *portfolio) unavailable(name string, err error, elapsed time.Duration) {
	a.trace.ReportAttempt(remat.Attempt{Solver: name, Status: "unavailable", Gap: math.Inf(1),
		ElapsedSeconds: elapsed.Seconds(), Note: err.Error()})
	a.report(name + ": unavailable")
}

// fractionOf returns ctx with a deadline at num/den of the time left, when
// ctx has a deadline.
func fractionOf(ctx context.Context, num, den int) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(d)*time.Duration(num)/time.Duration(den))
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
