package moccasin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// Name is the solver's name.
const Name = "moccasin"

// Options configure New. The zero value is the paper's setting: C_v = 2,
// one CBC thread, both phases, no time limit beyond the context's.
type Options struct {
	// MaxComputations is C_v (§2): the most computations of any node,
	// the first included. 0 means the paper's default, 2; NoCap means no
	// limit, which makes the solver exact (Solver.Exact).
	MaxComputations int
	// Threads is the number of CBC threads; 0 or 1 is single-threaded and
	// deterministic.
	Threads int
	// TimeLimit bounds a Solve in addition to the context's deadline; 0
	// means none.
	TimeLimit time.Duration
	// Start is a plan to start phase 2 from (a MIP start), instead of
	// phase 1's. It is used when it passes Check and the model can
	// represent it (at most C_v computations of each node).
	Start *remat.Plan
	// Phase1 chooses how phase 1 (§2.4) finds a memory-feasible plan.
	Phase1 Phase1
}

// Phase1 is a way of finding phase 2's first plan (§2.4).
type Phase1 uint8

const (
	// Phase1Greedy runs the greedy of greedy.go; when its plan does not
	// fit the budget, phase 2 starts without a plan (CBC's own heuristics
	// then look for the first one, guided by the cost).
	Phase1Greedy Phase1 = iota
	// Phase1MILP is the paper's phase 1: the MILP of eq. (12)–(13),
	// minimising max(peak, budget), solved by CBC until it finds a plan
	// within the budget or proves the least peak above it.
	Phase1MILP
)

func (o *Options) check() error {
	switch {
	case o.MaxComputations < 0 && o.MaxComputations != NoCap:
		return fmt.Errorf("moccasin: MaxComputations %d; want a positive cap, 0 (the default, 2) or NoCap", o.MaxComputations)
	case o.Threads < 0:
		return fmt.Errorf("moccasin: negative thread count %d", o.Threads)
	case o.TimeLimit < 0:
		return fmt.Errorf("moccasin: negative time limit %v", o.TimeLimit)
	case o.Phase1 > Phase1MILP:
		return fmt.Errorf("moccasin: unknown phase-1 method %d", o.Phase1)
	}
	return nil
}

// Solver is MOCCASIN with the paper's C_v = 2 (New(Options{})). It is not
// exact: a plan that needs a node computed three times is outside its
// model; New(Options{MaxComputations: NoCap}) is.
var Solver = New(Options{})

// New returns the MOCCASIN solver with the given options.
//
// Solve returns, in this order of checks:
//   - checkpoint-all, Optimal, when it fits (no plan costs less);
//   - a proven *remat.BudgetError when the working set of some single step
//     exceeds the budget, with the least peak that the greedy and then the
//     phase-1 MILP (eq. 12–13) reach in the time there is;
//   - otherwise the best plan of phase 2 (the MILP of eq. 1–8 on stages,
//     solved with CBC from phase 1's plan, or Options.Start), each
//     incumbent reported to progress as it is found. Optimal is claimed
//     when CBC proves optimality and C_v limits no node (or the plan costs
//     Problem.LowerBoundSeconds); LowerBound is CBC's bound then, and
//     otherwise Problem.LowerBoundSeconds (a bound under the cap is not a
//     bound on the problem). On the deadline the best plan so far is
//     returned, or without one the context's error.
//   - When CBC proves that no plan within the cap fits (phase 2, or the
//     phase-1 MILP with Phase1MILP), a *remat.BudgetError with the least
//     peak the phase-1 MILP finds in the time left and its plan; Proven
//     when C_v limits no node. When time runs out without a plan or a
//     proof, the context's error; when the model is too big to build for
//     the time there is (see modelTooBig) and the greedy does not fit, a
//     *remat.BudgetError with the greedy's peak, not Proven.
func New(opts Options) remat.Solver {
	exact := opts.MaxComputations == NoCap
	doc := "MOCCASIN (Bartan et al. 2023): retention intervals with at most C_v = 2 computations per node, as a MILP on Checkmate's stages, solved with CBC in two phases."
	if opts.MaxComputations != 0 {
		doc = fmt.Sprintf("MOCCASIN (Bartan et al. 2023) with C_v = %s: retention intervals as a MILP on Checkmate's stages, solved with CBC in two phases.", capText(opts.MaxComputations))
	}
	return remat.Solver{
		Name:  Name,
		Doc:   doc,
		Exact: exact,
		Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
			return solve(ctx, p, progress, opts)
		},
	}
}

func capText(c int) string {
	if c == NoCap {
		return "unlimited"
	}
	return fmt.Sprint(c)
}

// reporter sends progress reports, Elapsed never decreasing.
type reporter struct {
	start time.Time
	fn    func(remat.Progress)
	last  float64
}

func (r *reporter) report(incumbent, bound float64, note string) {
	if r.fn == nil {
		return
	}
	el := math.Max(time.Since(r.start).Seconds(), r.last)
	r.last = el
	r.fn(remat.Progress{Elapsed: el, Incumbent: incumbent, Bound: bound, Gap: relGap(incumbent, bound), Note: note})
}

// relGap is (incumbent − bound) / incumbent, +Inf when either is unknown,
// 0 for a bound at or above the incumbent.
func relGap(incumbent, bound float64) float64 {
	switch {
	case math.IsInf(incumbent, 0) || math.IsNaN(incumbent) || math.IsInf(bound, 0) || math.IsNaN(bound):
		return math.Inf(1)
	case incumbent <= 0 || bound >= incumbent:
		return 0
	}
	return (incumbent - bound) / incumbent
}

// state is one Solve.
type state struct {
	p    *remat.Problem
	opts Options
	rep  *reporter
	capC int
	lb   float64 // Problem.LowerBoundSeconds

	best     *remat.Plan
	bestCost float64
	// bound is the best valid lower bound on the problem's optimum.
	bound float64
	// capBinding: C_v limits some node (from the phase-2 model).
	capBinding bool
}

func solve(ctx context.Context, p *remat.Problem, progress func(remat.Progress), opts Options) (*remat.Plan, error) {
	rep := &reporter{start: time.Now(), fn: progress}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.TimeLimit)
		defer cancel()
	}
	mo := ModelOptions{MaxComputations: opts.MaxComputations}
	st := &state{p: p, opts: opts, rep: rep, capC: mo.capFor(p.N()), lb: p.LowerBoundSeconds(), bestCost: math.Inf(1)}
	st.bound = st.lb

	// Checkpoint-all costs the least any plan can.
	s := newSim(p)
	ca := identity(p.N())
	s.run(ca)
	if s.peak <= p.BudgetBytes {
		pl, err := remat.ScheduleStages(p, ca)
		if err != nil {
			return nil, err
		}
		rep.report(st.lb, st.lb, "checkpoint-all fits")
		return st.finish(pl, st.lb, true), nil
	}
	caPeak := s.peak
	if p.Floor().Bytes > p.BudgetBytes {
		stages, peak := st.leastPeak(ctx, ca, caPeak)
		return nil, st.budgetError(stages, peak, true)
	}

	// Phase 1: a memory-feasible plan (§2.4), or the start.
	var startStages [][]int32
	if opts.Start != nil {
		if res, err := remat.Check(p, opts.Start); err == nil {
			if stages, err := stagesFromPlan(p, opts.Start, st.capC); err == nil {
				startStages = stages
				st.offer(stages, "start plan")
			} else {
				rep.report(math.Inf(1), st.bound, fmt.Sprintf("start plan (cost %v) not used: %v", res.TotalSeconds, err))
			}
		}
	}
	// least and leastPeak are the plan with the least peak seen, for a
	// BudgetError.
	least, leastPeak := ca, caPeak
	milpDone := false // the phase-1 MILP has run
	if startStages == nil {
		if opts.Phase1 == Phase1MILP {
			stages, peak, proven, err := st.phase1MILP(ctx, nil)
			if err != nil {
				return nil, err
			}
			milpDone = true
			if stages != nil && peak <= p.BudgetBytes {
				startStages = stages
				st.offer(stages, "phase 1: MILP (eq. 12–13)")
			} else if stages != nil {
				// CBC's phase-1 optimum (or best) is over the budget.
				return nil, st.budgetError(stages, peak, proven)
			}
		} else {
			stages, peak := greedy(ctx, p, st.capC)
			if peak <= p.BudgetBytes {
				startStages = stages
				st.offer(stages, "phase 1: greedy")
			} else {
				rep.report(math.Inf(1), st.bound, fmt.Sprintf("phase 1: the greedy reaches a peak of %d bytes, over the budget; phase 2 starts without a plan", peak))
				if peak < leastPeak {
					least, leastPeak = stages, peak
				}
			}
		}
	}

	// Phase 2: the MILP of eq. (1)–(8) from the start.
	infeasible := false
	if ctx.Err() == nil {
		var err error
		if infeasible, err = st.phase2(ctx, startStages); err != nil {
			return nil, err
		}
	}
	if st.best != nil {
		return st.finish(st.best, st.bestCost, false), nil
	}
	if infeasible {
		// CBC proved that no plan within the cap fits: the least peak
		// from the phase-1 MILP (eq. 12–13) in the time left.
		proven := false
		if !milpDone {
			stages, peak, pr, err := st.phase1MILP(ctx, least)
			if err != nil {
				return nil, err
			}
			if stages != nil && peak < leastPeak {
				least, leastPeak = stages, peak
			}
			proven = pr
		}
		return nil, st.budgetError(least, leastPeak, proven || !st.capBinding)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, st.budgetError(least, leastPeak, false)
}

// identity is checkpoint-all's stage lists.
func identity(n int) [][]int32 {
	s := make([][]int32, n)
	for i := range s {
		s[i] = []int32{int32(i)}
	}
	return s
}

// stagesFromPlan lists a plan's computations by stage, spurious ones
// dropped, checking the cap.
func stagesFromPlan(p *remat.Problem, pl *remat.Plan, capC int) ([][]int32, error) {
	if len(pl.R) != p.N() {
		return nil, fmt.Errorf("the plan has %d stages for %d nodes", len(pl.R), p.N())
	}
	stages := make([][]int32, p.N())
	for t, row := range pl.R {
		for v := row.Next(0); v >= 0 && v <= t; v = row.Next(v + 1) {
			stages[t] = append(stages[t], int32(v))
		}
	}
	remat.DropSpurious(p, stages)
	for v, c := range counts(p.N(), stages) {
		if c > capC {
			return nil, fmt.Errorf("it computes node %s (%d) %d times, more than C_v = %d", p.Name(v), v, c, capC)
		}
	}
	return stages, nil
}

// offer records a plan (stage lists) if it passes Check and is cheaper
// than the best so far, and reports it.
func (st *state) offer(stages [][]int32, note string) bool {
	pl, err := remat.ScheduleStages(st.p, stages)
	if err != nil {
		return false
	}
	res, err := remat.Check(st.p, pl)
	if err != nil || res.TotalSeconds >= st.bestCost {
		return false
	}
	st.best, st.bestCost = pl, res.TotalSeconds
	st.rep.report(st.bestCost, math.Min(st.bound, st.bestCost), note)
	return true
}

// finish labels a plan that passed Check.
func (st *state) finish(pl *remat.Plan, cost float64, proven bool) *remat.Plan {
	lb := math.Max(st.lb, st.bound)
	if proven || cost <= st.lb*(1+1e-12) || lb >= cost {
		pl.Optimal, pl.LowerBound, pl.Gap = true, cost, 0
	} else {
		pl.Optimal, pl.LowerBound, pl.Gap = false, lb, relGap(cost, lb)
	}
	pl.Solver = Name
	return pl
}

func (st *state) budgetError(stages [][]int32, peak int64, proven bool) error {
	be := &remat.BudgetError{NeedBytes: peak, HaveBytes: st.p.BudgetBytes, Proven: proven}
	if stages != nil {
		if pl, err := remat.ScheduleStages(st.p, stages); err == nil {
			if res, err := remat.Evaluate(st.p, pl); err == nil && res.PeakBytes == peak {
				be.Plan = pl
			}
		}
	}
	return be
}

// leastPeak is used when no plan can fit (a single step's working set is
// over the budget): the least peak the phase-1 MILP reaches in the time
// there is, or the greedy's, or checkpoint-all's.
func (st *state) leastPeak(ctx context.Context, ca [][]int32, caPeak int64) ([][]int32, int64) {
	best, bestPeak := ca, caPeak
	// The greedy removes overflow over the largest working set of a step,
	// a lower bound on every peak.
	q := *st.p
	q.BudgetBytes = st.p.Floor().Bytes
	if g, peak := greedy(ctx, &q, st.capC); peak < bestPeak {
		best, bestPeak = g, peak
	}
	if stages, peak, _, err := st.phase1MILP(ctx, best); err == nil && stages != nil && peak < bestPeak {
		best, bestPeak = stages, peak
	}
	return best, bestPeak
}

// phase1MILP solves the phase-1 model (eq. 12–13): min max(P, budget). It
// returns the plan found with its peak (Check's), whether the optimum was
// proven over the budget for the whole problem (CBC finished and C_v binds
// no node), and an error for a broken model or solver. from is
// a start when it fits the cap.
func (st *state) phase1MILP(ctx context.Context, from [][]int32) ([][]int32, int64, bool, error) {
	if why := modelTooBig(ctx, st.p); why != "" {
		st.rep.report(math.Inf(1), st.bound, "phase 1: MILP skipped: "+why)
		return nil, 0, false, nil
	}
	f, err := Build(st.p, ModelOptions{MaxComputations: st.opts.MaxComputations, MinimizePeak: true})
	if err != nil {
		return nil, 0, false, err
	}
	o := cbcOptions{threads: st.opts.Threads, tick: func() {
		st.rep.report(st.bestCost, math.Min(st.bound, st.bestCost), "phase 1: cbc running")
	}}
	if from != nil {
		if pl, err := remat.ScheduleStages(st.p, from); err == nil {
			if start, err := f.Start(pl); err == nil {
				o.start = start
			}
		}
	}
	st.rep.report(math.Inf(1), st.bound, fmt.Sprintf("phase 1: MILP of %s", f.Stats))
	r, err := solveCBC(ctx, f.Model, o)
	if err != nil {
		return nil, 0, false, err
	}
	if r.values == nil {
		return nil, 0, r.infeasible && !f.CapBinding, nil
	}
	pl, err := f.Plan(r.values)
	if err != nil {
		return nil, 0, false, fmt.Errorf("moccasin: internal error: decoding the phase-1 solution: %w", err)
	}
	res, err := remat.Evaluate(st.p, pl)
	if err != nil {
		return nil, 0, false, fmt.Errorf("moccasin: internal error: the phase-1 plan is illegal: %w", err)
	}
	stages := pl.Stages()
	proven := r.optimal && !f.CapBinding && res.PeakBytes > st.p.BudgetBytes
	return stages, res.PeakBytes, proven, nil
}

// The solver builds a model only when it is small enough to be of use:
// at most maxChain chain variables (the largest part of the model; see
// chainEstimate) in any case, which bounds its memory to a few gigabytes,
// and at most chainPerSecond per second left before the deadline. CBC
// cannot be stopped while it solves the root LP, which takes it about 30
// CPU seconds for the 10^5 chain variables of a 250-node, 944-edge graph,
// and grows faster than the model; a solve abandoned at the deadline goes
// on in the background until that LP ends.
const (
	maxChain       = 3_000_000
	chainPerSecond = 2000
)

// modelTooBig reports why the model of p is not worth building with the
// time ctx leaves, or "".
func modelTooBig(ctx context.Context, p *remat.Problem) string {
	e := chainEstimate(p)
	if e > maxChain {
		return fmt.Sprintf("about %d chain variables, more than %d", e, maxChain)
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl).Seconds(); float64(e) > chainPerSecond*left {
			return fmt.Sprintf("about %d chain variables, too many for the %.0f s left (CBC's root LP alone would not end in time)", e, left)
		}
	}
	return ""
}

// chainEstimate is an upper bound on the chain variables of the model of
// p: one per read edge (q, u) and stage t ≥ u.
func chainEstimate(p *remat.Problem) int {
	n, e := p.N(), 0
	for u := range n {
		p.ReadParts(u, func(remat.Part) { e += n - u })
	}
	return e
}

// maxRounds bounds the CBC solves of phase 2 that stop at a new incumbent
// to report it; the last round runs to the end.
const maxRounds = 24

// phase2 runs the MILP of eq. (1)–(8) from start (nil: none) as a series
// of CBC solves, each stopping at its first incumbent better than its
// start (reported at once) and the next starting from it, until one
// finishes or the time is up. It reports whether CBC proved that no plan
// within the cap fits the budget.
func (st *state) phase2(ctx context.Context, start [][]int32) (bool, error) {
	if why := modelTooBig(ctx, st.p); why != "" {
		st.rep.report(st.bestCost, math.Min(st.bound, st.bestCost), "phase 2: MILP skipped: "+why)
		return false, nil
	}
	f, err := Build(st.p, ModelOptions{MaxComputations: st.opts.MaxComputations})
	if err != nil {
		return false, err
	}
	st.capBinding = f.CapBinding
	st.rep.report(st.bestCost, math.Min(st.bound, st.bestCost), fmt.Sprintf("phase 2: MILP of %s", f.Stats))
	var startX map[milp.Var]float64
	if start != nil {
		if pl, err := remat.ScheduleStages(st.p, start); err == nil {
			startX, _ = f.Start(pl)
		}
	}
	tightened := false
	for round := 0; ; round++ {
		o := cbcOptions{threads: st.opts.Threads, start: startX, tick: func() {
			st.rep.report(st.bestCost, math.Min(st.bound, st.bestCost), "phase 2: cbc running")
		}}
		if round < maxRounds {
			// A start CBC accepts is its first solution.
			o.stopAt = 1
			if startX != nil {
				o.stopAt = 2
			}
		}
		r, err := solveCBC(ctx, f.Model, o)
		if err != nil {
			return false, err
		}
		if r.infeasible {
			if st.best == nil && !tightened {
				st.rep.report(math.Inf(1), st.bound, "phase 2: CBC proves that no plan with at most C_v computations per node fits")
				return true, nil
			}
			return false, nil
		}
		if !f.CapBinding && !tightened && !math.IsInf(r.bound, 0) && !r.onContext {
			st.bound = math.Max(st.bound, solvedBound(f, r.bound))
		}
		capNote := ""
		if f.CapBinding && !math.IsInf(r.bound, 0) {
			capNote = fmt.Sprintf(" (bound %.6g s within C_v = %d)", solvedBound(f, r.bound), f.Cap)
		}
		if r.values != nil {
			pl, err := f.Plan(r.values)
			if err != nil {
				return false, fmt.Errorf("moccasin: internal error: decoding CBC's solution: %w", err)
			}
			res, cerr := remat.Check(st.p, pl)
			switch {
			case cerr == nil:
				if res.TotalSeconds < st.bestCost {
					st.best, st.bestCost = pl, res.TotalSeconds
				}
				if pl2, err := f.Start(pl); err == nil {
					startX = pl2
				}
				what := "phase 2: cbc incumbent"
				if r.optimal {
					what = "phase 2: cbc optimal"
				}
				st.rep.report(st.bestCost, math.Min(st.bound, st.bestCost), what+capNote)
			case isOverBudget(cerr) && !tightened:
				// CBC's tolerances let the rounded point exceed the budget:
				// solve once more with the budget lowered by the excess.
				tightened = true
				q := *st.p
				q.BudgetBytes -= res.PeakBytes - st.p.BudgetBytes
				if f, err = Build(&q, ModelOptions{MaxComputations: st.opts.MaxComputations}); err != nil {
					return false, err
				}
				if st.best != nil {
					startX, _ = f.Start(st.best)
				}
				continue
			default:
				return false, fmt.Errorf("moccasin: internal error: the plan decoded from CBC's solution fails Check: %w", cerr)
			}
		}
		if r.optimal && st.best != nil && !f.CapBinding && !tightened {
			st.bound = math.Max(st.bound, st.bestCost)
		}
		if !r.onSolutions || ctx.Err() != nil {
			if r.optimal || r.onTime || r.onContext {
				st.rep.report(st.bestCost, math.Min(st.bound, st.bestCost), "phase 2: done"+capNote)
			}
			return false, nil
		}
	}
}

// solvedBound converts a bound of the phase-2 objective into seconds, less
// a relative 1e-9 for CBC's tolerances.
func solvedBound(f *Formulation, bound float64) float64 {
	s := f.Seconds(bound)
	return s - 1e-9*math.Max(1, math.Abs(s))
}

// isOverBudget reports whether err is a Check failure for the budget only.
func isOverBudget(err error) bool {
	var ce *remat.CheckError
	if !errors.As(err, &ce) || ce.More > 0 {
		return false
	}
	for _, v := range ce.Violations {
		if v.Kind != remat.OverBudget {
			return false
		}
	}
	return true
}
