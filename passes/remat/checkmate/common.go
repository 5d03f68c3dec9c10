package checkmate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/remat-compile/remat/internal/cbc"
	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// Options configure NewMILP and NewLP; each field says which solver reads
// it. The zero value solves to proven optimality without a time limit
// (MILP), and rounds each LP relaxation at ε = 0 deterministically (LP).
type Options struct {
	// TimeLimit bounds a Solve (both solvers), in addition to the
	// context's deadline; 0 means none.
	TimeLimit time.Duration
	// Start is a plan to start from (MILP): it is given to CBC as a MIP
	// start, and returned when CBC finds nothing cheaper in time. A start
	// that fails Check on the problem being solved is ignored.
	Start *remat.Plan
	// Gap is the relative optimality gap at which CBC stops (MILP); 0
	// proves optimality.
	Gap float64
	// Threads is the number of CBC threads (MILP); 0 or 1 is
	// single-threaded and deterministic.
	Threads int

	// Epsilon is the budget allowance ε of §5.3 (LP): the relaxation is
	// solved with the budget (1−ε)·M_budget and rounded, and the rounded
	// plan is checked against the real budget. Ignored with EpsilonSearch.
	Epsilon float64
	// EpsilonSearch searches ε over [0, 1) as App. D suggests (LP): a grid
	// swept upward (see NewLP) and a bisection below the smallest ε whose
	// rounding fits; the cheapest plan that fits wins.
	EpsilonSearch bool
	// Randomized adds randomized rounding (LP): besides the deterministic
	// S_{t,i} = 1[S*_{t,i} > 0.5] of Algorithm 2, Rounds samples with
	// S_{t,i} ~ Bernoulli(S*_{t,i}) (App. D), each completed by phase 2.
	Randomized bool
	// Seed seeds the randomized rounding; the same seed gives the same
	// plans.
	Seed uint64
	// Rounds is the number of randomized samples per LP solution (default
	// 32).
	Rounds int

	// Model configures the formulation (both solvers); its Epsilon and
	// MinimizePeak are set by the solvers.
	Model ModelOptions
}

func (o *Options) check() error {
	switch {
	case o.TimeLimit < 0:
		return fmt.Errorf("checkmate: negative time limit %v", o.TimeLimit)
	case !(o.Gap >= 0) || math.IsInf(o.Gap, 0):
		return fmt.Errorf("checkmate: gap %v; want a finite non-negative number", o.Gap)
	case o.Threads < 0:
		return fmt.Errorf("checkmate: negative thread count %d", o.Threads)
	case !(o.Epsilon >= 0 && o.Epsilon <= 1):
		return fmt.Errorf("checkmate: budget allowance ε = %v; want 0 ≤ ε ≤ 1", o.Epsilon)
	case o.Rounds < 0:
		return fmt.Errorf("checkmate: negative number of rounds %d", o.Rounds)
	}
	return nil
}

// reporter sends progress reports with the time since Solve began.
type reporter struct {
	start time.Time
	fn    func(remat.Progress)
}

func (r reporter) report(incumbent, bound float64, note string) {
	if r.fn == nil {
		return
	}
	r.fn(remat.Progress{
		Elapsed:   time.Since(r.start).Seconds(),
		Incumbent: incumbent,
		Bound:     bound,
		Gap:       relGap(incumbent, bound),
		Note:      note,
	})
}

// relGap is (incumbent − bound) / incumbent: +Inf when either is unknown,
// 0 for a zero incumbent or a bound at or above it.
func relGap(incumbent, bound float64) float64 {
	switch {
	case math.IsInf(incumbent, 0) || math.IsNaN(incumbent) || math.IsInf(bound, 0) || math.IsNaN(bound):
		return math.Inf(1)
	case incumbent <= 0 || bound >= incumbent:
		return 0
	}
	return (incumbent - bound) / incumbent
}

// checkpointAll is the plan without rematerialization (R = I) and what
// Evaluate measures of it: it costs LowerBoundSeconds, the least cost of
// any plan, so when it fits it is optimal.
func checkpointAll(p *remat.Problem) (*remat.Plan, remat.CheckResult, error) {
	stages := make([][]int32, p.N())
	for t := range stages {
		stages[t] = []int32{int32(t)}
	}
	plan, err := remat.ScheduleStages(p, stages)
	if err != nil {
		return nil, remat.CheckResult{}, err
	}
	res, err := remat.Evaluate(p, plan)
	return plan, res, err
}

// canonical returns a plan equivalent to pl with spurious computations
// dropped and S, FREE and the ops rederived by remat.Schedule, or pl itself
// when that fails.
func canonical(p *remat.Problem, pl *remat.Plan) *remat.Plan {
	stages := make([][]int32, p.N())
	for t, row := range pl.R {
		for i := row.Next(0); i >= 0 && i <= t; i = row.Next(i + 1) {
			stages[t] = append(stages[t], int32(i))
		}
	}
	remat.DropSpurious(p, stages)
	if c, err := remat.ScheduleStages(p, stages); err == nil {
		if _, err := remat.Check(p, c); err == nil {
			return c
		}
	}
	cp := *pl
	return &cp
}

// finish labels a plan that passed Check: Optimal when proven (or when it
// costs the least any plan can), LowerBound clamped to [Σ C_i, cost], and
// the gap.
func finish(p *remat.Problem, pl *remat.Plan, name string, cost, lowerBound float64, proven bool) *remat.Plan {
	sum := p.LowerBoundSeconds()
	lb := max(sum, lowerBound)
	if proven || cost <= sum*(1+1e-12) || lb >= cost {
		pl.Optimal, pl.LowerBound, pl.Gap = true, cost, 0
	} else {
		pl.Optimal, pl.LowerBound, pl.Gap = false, lb, relGap(cost, lb)
	}
	pl.Solver = name
	return pl
}

// solvedBound converts a MILP or LP bound (objective units) into seconds,
// less a relative 1e-9 for the solver's tolerances; NaN and infinities
// give −Inf (no bound).
func solvedBound(f *Formulation, bound float64) float64 {
	if math.IsNaN(bound) || math.IsInf(bound, 0) {
		return math.Inf(-1)
	}
	s := f.Seconds(bound)
	return s - 1e-9*math.Max(1, math.Abs(s))
}

// deadlineErr returns the context's error when it is done, else a
// generic error saying what stopped.
func deadlineErr(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("checkmate: %s: time limit reached without a plan", what)
}

// isOverBudget reports whether err is a Check failure for the budget only.
func isOverBudget(err error) bool {
	var ce *remat.CheckError
	if !errors.As(err, &ce) {
		return false
	}
	for _, v := range ce.Violations {
		if v.Kind != remat.OverBudget {
			return false
		}
	}
	return ce.More == 0
}

// budgetError builds the error for a problem where no plan fitting the
// budget was found: the least peak reached by a plan (from the
// peak-minimising MILP when it ran, else checkpoint-all), with that plan.
func budgetError(p *remat.Problem, plan *remat.Plan, peak int64, proven bool) error {
	return &remat.BudgetError{NeedBytes: peak, HaveBytes: p.BudgetBytes, Plan: plan, Proven: proven}
}

// minPeak solves the MILP with ModelOptions.MinimizePeak within the
// context and limit, starting from checkpoint-all, and returns the plan
// with the least peak found (Evaluate's, on p) — checkpoint-all when the
// solve finds nothing better — and whether the solver proved it least.
// above is a peak (in bytes, constant overhead included) that every plan
// of the coarse model is known to exceed: a budget proven infeasible.
func minPeak(ctx context.Context, p *remat.Problem, opts Options, limit time.Duration, ca *remat.Plan, caPeak, above int64) (*remat.Plan, int64, bool) {
	best, bestPeak, proven := ca, caPeak, false
	f, err := BuildMILP(p, milpModel(opts, true))
	if err != nil {
		return best, bestPeak, false
	}
	// Every plan's U exceeds above − M_const bytes somewhere: P, in units
	// of PeakUnit bytes, is at least the next whole unit.
	if lo, _ := f.Model.Bounds(f.Peak); above >= p.ConstBytes {
		f.Model.SetBounds(f.Peak, max(lo, math.Floor(float64(above-p.ConstBytes)/f.PeakUnit)+1), milp.Inf)
	}
	mo2 := milp.Options{TimeLimit: limit, Threads: opts.Threads}
	if x, err := f.Point(ca); err == nil && f.Feasible(x) {
		mo2.MIPStart, _ = f.Start(ca)
	}
	sol, err := solve(ctx, f.Model, mo2, nil)
	if err != nil || sol.Values == nil {
		return best, bestPeak, false
	}
	pl, err := f.Plan(sol.Values)
	if err != nil {
		return best, bestPeak, false
	}
	res, err := remat.Evaluate(p, pl)
	if err != nil {
		return best, bestPeak, false
	}
	if res.PeakBytes <= bestPeak {
		best, bestPeak = pl, res.PeakBytes
		proven = sol.Status == milp.Optimal && !p.Refined()
	}
	return best, bestPeak, proven
}

// cancelGrace is how long solve waits for CBC or CLP to return after the
// context is done before it gives up on the solve.
const cancelGrace = time.Second

// progressInterval is the period of solve's heartbeats.
const progressInterval = 500 * time.Millisecond

// solve solves a model on its own goroutine and waits for it or for the
// context: MILPs with solveCBC (CBC with preprocessing off, see
// cbcdriver.go), LPs and relaxations with milp.Solve (CLP). The context's
// deadline becomes the solver's time limit, which stops CBC with its
// incumbent and a sound bound; a cancellation interrupts CBC (its bound is
// then unknown). CLP cannot be interrupted: when the context is done and
// the solver has not returned within cancelGrace, solve returns
// NoSolution and leaves the solve to end at its time limit on its own
// goroutine. onProgress, when not nil, gets heartbeats every
// progressInterval (CBC's C API reports nothing during the search) and a
// final report, always on the caller's goroutine and never after solve
// returns.
func solve(ctx context.Context, m *milp.Model, o milp.Options, onProgress func(milp.Progress)) (*milp.Solution, error) {
	begin := time.Now()
	none := &milp.Solution{Status: milp.NoSolution, Objective: math.NaN(), Bound: math.Inf(-1), Gap: math.Inf(1), Limit: milp.LimitContext, Solver: "none"}
	if ctx.Err() != nil {
		return none, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		rem := time.Until(dl)
		if rem <= 0 {
			return none, nil
		}
		if o.TimeLimit == 0 || rem < o.TimeLimit {
			o.TimeLimit = rem
		}
	}
	o.Progress = nil
	mip := !o.Relax && m.NumIntegers() > 0
	type result struct {
		sol *milp.Solution
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if mip {
			// A deadline is CBC's time limit already; the interrupt only
			// serves a cancellation, or a time limit CBC overruns.
			solveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			stop := context.AfterFunc(ctx, func() {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					time.AfterFunc(200*time.Millisecond, cancel)
				} else {
					cancel()
				}
			})
			r.sol, r.err = solveCBC(solveCtx, m, o)
			stop()
			cancel()
		} else {
			r.sol, r.err = milp.Solve(context.Background(), m, o)
		}
		if errors.Is(r.err, cbc.ErrNotInstalled) {
			r.err = fmt.Errorf("%w: %w", remat.ErrUnavailable, r.err)
		}
		done <- r
	}()
	var tick <-chan time.Time
	if onProgress != nil {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		tick = t.C
	}
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case r := <-done:
			if r.err == nil && onProgress != nil {
				onProgress(milp.Progress{Elapsed: time.Since(begin), Incumbent: r.sol.Objective, Bound: r.sol.Bound, Gap: r.sol.Gap, Final: true})
			}
			if r.err == nil && ctx.Err() != nil && r.sol.Status != milp.Optimal && r.sol.Status != milp.Infeasible {
				r.sol.Limit = milp.LimitContext
			}
			return r.sol, r.err
		case <-tick:
			onProgress(milp.Progress{Elapsed: time.Since(begin), Incumbent: math.NaN(), Bound: math.NaN(), Gap: math.Inf(1)})
		case <-ctxDone:
			ctxDone = nil
			t := time.NewTimer(cancelGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return none, nil
		}
	}
}
