package milp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/remat-compile/remat/internal/cbc"
)

// Status is the outcome of a solve.
type Status int8

// Statuses.
const (
	// NoSolution: the solver stopped (time limit, context) before it found
	// a feasible point, or could not finish.
	NoSolution Status = iota
	// Optimal: proven optimal, within Options.Gap when that is set.
	Optimal
	// Feasible: a feasible point, not proven optimal (the solver stopped
	// early); Bound and Gap say how far from optimal it may be.
	Feasible
	// Infeasible: proven to have no feasible point. With Options.Relax,
	// the relaxation has none.
	Infeasible
	// Unbounded: the objective is unbounded (for a MILP: its LP
	// relaxation is, so the MILP is unbounded or infeasible).
	Unbounded
)

func (s Status) String() string {
	switch s {
	case NoSolution:
		return "no solution"
	case Optimal:
		return "optimal"
	case Feasible:
		return "feasible"
	case Infeasible:
		return "infeasible"
	case Unbounded:
		return "unbounded"
	}
	return fmt.Sprintf("Status(%d)", int8(s))
}

// Limit says what stopped a solve before it finished.
type Limit int8

// Limits.
const (
	LimitNone    Limit = iota // ran to completion
	LimitTime                 // Options.TimeLimit
	LimitContext              // the context's deadline or cancellation
)

func (l Limit) String() string {
	switch l {
	case LimitTime:
		return "time limit"
	case LimitContext:
		return "context"
	}
	return "none"
}

// Options control [Solve]. The zero value solves to proven optimality with
// no time limit, single-threaded.
type Options struct {
	// TimeLimit bounds the solver's wall-clock time; 0 means none. The
	// context's deadline, if earlier, bounds it too.
	TimeLimit time.Duration
	// Gap is the relative gap |incumbent − bound| / |incumbent| at which
	// a MILP counts as solved; 0 means CBC's default (prove optimality).
	Gap float64
	// MIPStart is a starting point for a MILP: values for some variables.
	// CBC fixes the integer variables given, takes the integer variables
	// not given as 0, solves for the continuous ones, and keeps the result
	// as its first incumbent if it is feasible (an infeasible start is
	// dropped). Ignored for linear programs and with Relax.
	MIPStart map[Var]float64
	// Threads is the number of branch-and-bound threads; 0 or 1 runs CBC
	// single-threaded, which is deterministic.
	Threads int
	// Relax solves the LP relaxation (integrality dropped) with CLP.
	// Models without integer variables are always solved with CLP.
	Relax bool
	// Progress, if set, is called on Solve's goroutine (never on a solver
	// thread): every half second while the solver runs, with only Elapsed
	// known (CBC 2.10's C API reports no incumbent or bound during the
	// search without printing its log), and once at the end with Final
	// set and the result's objective, bound and gap.
	Progress func(Progress)
}

// Progress is a report on a running solve. Unknown values are NaN (Gap:
// +Inf).
type Progress struct {
	Elapsed   time.Duration
	Incumbent float64
	Bound     float64
	Gap       float64
	Final     bool
}

// Solution is the result of [Solve].
type Solution struct {
	Status Status
	// Values are the variables' values (indexed by Var) for Optimal and
	// Feasible, nil otherwise. Integer variables are rounded (except under
	// Options.Relax) and every value is clamped to its bounds; the point
	// has been checked against the model (see Model.MaxViolation, without
	// integrality under Relax) within 1e-5.
	Values []float64
	// Objective is the objective at Values, constant included; NaN
	// without Values.
	Objective float64
	// Bound is the best proven bound on the optimum: equal to Objective
	// (within tolerance) when Optimal, ±Inf when nothing is known (and
	// the infeasible side for Infeasible, the unbounded side for
	// Unbounded). After a context cancellation CBC's bound cannot be
	// trusted and is reported as unknown.
	Bound float64
	// Gap is |Objective − Bound| / max(|Objective|, 1e-10), or +Inf when
	// either is unknown.
	Gap float64
	// Limit says whether a time limit or the context cut the solve short.
	Limit Limit
	// Solver is "cbc", "clp" or "none" (a model without variables).
	Solver string
	// Nodes is the number of branch-and-bound nodes (CBC only).
	Nodes   int
	Elapsed time.Duration
}

// Value returns the value of v, or NaN without values or out of range.
func (s *Solution) Value(v Var) float64 {
	if s == nil || v < 0 || int(v) >= len(s.Values) {
		return math.NaN()
	}
	return s.Values[v]
}

const (
	progressInterval = 500 * time.Millisecond
	// cancelGrace is how long Solve waits, after the context is done, for
	// the solver to wind down and hand back its incumbent. CBC's interrupt
	// needs a cut round to act and CLP has none, so past this Solve returns
	// NoSolution and leaves the solver to finish on its own goroutine,
	// which frees the C model when it does.
	cancelGrace = time.Second
	// deadlineHeadStart is how long CBC gets to stop on a time limit equal
	// to the context deadline before it is interrupted.
	deadlineHeadStart = 200 * time.Millisecond
	// feasTol is the largest Model.MaxViolation accepted from a solver.
	feasTol = 1e-5
)

// Solve solves the model: MILPs with CBC, LPs (no integer variables, or
// Options.Relax) with CLP. The model is validated first and its data copied
// to the solver, so the model may be changed once Solve returns.
//
// The context bounds the solve: a deadline becomes the solver's time limit,
// and when the context is done CBC is interrupted (see cbc.Interrupt);
// either way Solve returns the best point found so far with Status
// Feasible, or NoSolution, and Limit set, and a nil error. If the solver
// has not stopped a second after the context is done, Solve returns
// NoSolution without waiting further.
//
// Errors are for bad input (a *ValidationError, bad options), a missing
// library (wrapping cbc.ErrNotInstalled) and solver failures.
func Solve(ctx context.Context, m *Model, opt Options) (*Solution, error) {
	start := time.Now()
	if m == nil {
		return nil, errors.New("milp: nil model")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := opt.check(m); err != nil {
		return nil, err
	}
	lp := opt.Relax || m.NumIntegers() == 0
	finish := func(s *Solution) *Solution {
		s.Elapsed = time.Since(start)
		if opt.Progress != nil {
			opt.Progress(Progress{Elapsed: s.Elapsed, Incumbent: s.Objective, Bound: s.Bound, Gap: s.Gap, Final: true})
		}
		return s
	}
	if len(m.vars) == 0 {
		return finish(m.solveEmpty()), nil
	}
	secs, fromCtx, expired := timeLimit(ctx, opt.TimeLimit)
	if expired || ctx.Err() != nil {
		return finish(m.unsolved(NoSolution, LimitContext)), nil
	}
	lib, err := cbc.Load()
	if err != nil {
		return nil, err
	}

	// Everything the solver goroutine needs is prepared here, so that it
	// never touches m: an abandoned solve may outlive this call.
	j := &job{c: m.compile(), secs: secs, gap: opt.Gap, threads: opt.Threads}
	if !lp {
		j.startCols, j.startVals = StartColumns(opt.MIPStart)
		if ctx.Done() != nil {
			j.it = &cbc.Interrupt{}
		}
	}
	done := make(chan raw, 1)
	go func() {
		if lp {
			done <- runCLP(lib, j)
		} else {
			done <- runCBC(lib, j)
		}
	}()

	var tick <-chan time.Time
	if opt.Progress != nil {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		tick = t.C
	}
	ctxDone, cancelled := ctx.Done(), false
	var grace, interrupt <-chan time.Time
	for {
		select {
		case r := <-done:
			s, err := m.interpret(r, cancelled, fromCtx, !opt.Relax)
			if err != nil {
				return nil, err
			}
			return finish(s), nil
		case <-ctxDone:
			ctxDone, cancelled = nil, true
			if j.it != nil {
				// When the deadline is the solver's own time limit, CBC is
				// stopping by itself with a sound bound; the interrupt would
				// void the bound, so it waits a little first.
				wait := time.Duration(0)
				if fromCtx && errors.Is(ctx.Err(), context.DeadlineExceeded) {
					wait = deadlineHeadStart
				}
				t := time.NewTimer(wait)
				defer t.Stop()
				interrupt = t.C
			}
			t := time.NewTimer(cancelGrace)
			defer t.Stop()
			grace = t.C
		case <-interrupt:
			interrupt = nil
			j.it.Stop()
		case <-grace:
			return finish(m.unsolved(NoSolution, LimitContext)), nil
		case <-tick:
			opt.Progress(Progress{Elapsed: time.Since(start), Incumbent: math.NaN(), Bound: math.NaN(), Gap: math.Inf(1)})
		}
	}
}

func (o *Options) check(m *Model) error {
	if o.TimeLimit < 0 {
		return fmt.Errorf("milp: negative time limit %v", o.TimeLimit)
	}
	if !(o.Gap >= 0) || math.IsInf(o.Gap, 0) {
		return fmt.Errorf("milp: gap %v is not a finite non-negative number", o.Gap)
	}
	if o.Threads < 0 {
		return fmt.Errorf("milp: negative thread count %d", o.Threads)
	}
	for v, x := range o.MIPStart {
		if !m.hasVar(v) {
			return fmt.Errorf("milp: MIP start names variable %d, not in the model (%d variables)", v, len(m.vars))
		}
		if !finite(x) {
			return fmt.Errorf("milp: MIP start value %v for variable %d %q is not finite", x, v, m.vars[v].name)
		}
	}
	return nil
}

// timeLimit combines the option and the context deadline into seconds
// (0: none), whether the deadline is the binding one, and whether it has
// already passed.
func timeLimit(ctx context.Context, tl time.Duration) (secs float64, fromCtx, expired bool) {
	if tl > 0 {
		secs = tl.Seconds()
	}
	if dl, ok := ctx.Deadline(); ok {
		rem := time.Until(dl)
		if rem <= 0 {
			return 0, true, true
		}
		if secs == 0 || rem.Seconds() < secs {
			secs, fromCtx = rem.Seconds(), true
		}
	}
	return secs, fromCtx, false
}

func sortTogether(cols []int, vals []float64) {
	idx := make([]int, len(cols))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cols[a] - cols[b] })
	c2, v2 := make([]int, len(cols)), make([]float64, len(vals))
	for k, i := range idx {
		c2[k], v2[k] = cols[i], vals[i]
	}
	copy(cols, c2)
	copy(vals, v2)
}

// job is a solve's input, owned by the solver goroutine.
type job struct {
	c         *compiled
	secs      float64
	gap       float64
	threads   int
	startCols []int
	startVals []float64
	it        *cbc.Interrupt
}

// raw is what a solver goroutine hands back.
type raw struct {
	solver      string
	status      Status
	candidates  [][]float64 // points to try, best first
	bound       float64     // solver's bound without the objective constant; NaN if unknown
	nodes       int
	timeHit     bool
	interrupted bool
	err         error
}

func runCBC(lib *cbc.Lib, j *job) (r raw) {
	r.solver, r.bound = "cbc", math.NaN()
	mod, err := NewCBCModel(lib, &j.c.prob, j.c.integers, j.c.sense)
	if err != nil {
		r.err = err
		return r
	}
	defer mod.Free()
	if j.secs > 0 {
		mod.SetMaximumSeconds(j.secs)
	}
	if j.gap > 0 {
		mod.SetAllowableFractionGap(j.gap)
	}
	mod.SetThreads(j.threads)
	if r.err = mod.SetMIPStart(j.startCols, j.startVals); r.err != nil {
		return r
	}
	if j.it != nil {
		if r.err = mod.SetInterrupt(j.it); r.err != nil {
			return r
		}
	}
	began := time.Now()
	rc, err := mod.Solve()
	if err != nil {
		r.err = err
		return r
	}
	if rc == cbc.StatusNotStarted && j.it != nil && j.it.Stopped() {
		r.status, r.interrupted = NoSolution, true
		return r
	}
	r.nodes = mod.NodeCount()
	r.timeHit = mod.IsSecondsLimitReached() || mod.SecondaryStatus() == cbc.SecondaryStoppedOnTime
	// CBC 2.10 stopped by its time limit in preprocessing may set neither
	// flag and call the problem infeasible (measured with a 1 ms limit on
	// a loaded machine): a run that lasted the whole limit proves nothing.
	ranOut := j.secs > 0 && time.Since(began).Seconds() >= j.secs
	fired := j.it != nil && j.it.Fired()
	r.interrupted = fired
	has := mod.HasSolution()
	if has {
		r.candidates = [][]float64{mod.ColSolution(), mod.BestSolution()}
	}
	switch {
	case fired && has:
		r.status = Feasible // CBC's verdict and bound reflect the pruning
	case fired:
		r.status = NoSolution
	case has && mod.IsProvenOptimal():
		r.status, r.bound = Optimal, mod.BestPossibleObjValue()
	case mod.IsContinuousUnbounded():
		r.status = Unbounded
	case mod.IsProvenInfeasible() && !r.timeHit && !ranOut:
		// CBC 2.10 also flags a search its time limit stopped during
		// preprocessing as proven infeasible; only a finished search
		// proves it.
		r.status = Infeasible
	case has:
		r.status, r.bound = Feasible, mod.BestPossibleObjValue()
	default:
		r.status, r.bound = NoSolution, mod.BestPossibleObjValue()
		r.timeHit = r.timeHit || ranOut
		if mod.Status() == cbc.StatusAbandoned {
			r.err = errors.New("milp: CBC abandoned the search (numerical difficulties)")
		}
	}
	return r
}

func runCLP(lib *cbc.Lib, j *job) (r raw) {
	r.solver, r.bound = "clp", math.NaN()
	mod, err := lib.NewClpModel()
	if err != nil {
		r.err = err
		return r
	}
	defer mod.Free()
	if r.err = mod.LoadProblem(&j.c.prob); r.err != nil {
		return r
	}
	mod.SetObjSense(j.c.sense)
	if j.secs > 0 {
		mod.SetMaximumSeconds(j.secs)
	}
	if _, r.err = mod.InitialSolve(); r.err != nil {
		return r
	}
	switch mod.Status() {
	case cbc.ClpOptimal:
		r.status, r.bound = Optimal, mod.ObjectiveValue()
		r.candidates = [][]float64{mod.ColSolution()}
	case cbc.ClpPrimalInfeasible:
		r.status = Infeasible
	case cbc.ClpDualInfeasible:
		r.status = Unbounded
	case cbc.ClpStopped:
		r.timeHit = true
		r.status = NoSolution
		if mod.PrimalFeasible() {
			r.status = Feasible
			r.candidates = [][]float64{mod.ColSolution()}
		}
	case cbc.ClpErrors:
		r.err = errors.New("milp: CLP stopped on numerical errors")
	default:
		r.status = NoSolution
	}
	return r
}

// interpret turns a solver's raw result into a Solution on the caller's
// goroutine: it picks the first candidate point that satisfies the model,
// polishes it, and fills in objective, bound, gap and limit.
func (m *Model) interpret(r raw, cancelled, fromCtx, integrality bool) (*Solution, error) {
	if r.err != nil {
		return nil, r.err
	}
	s := m.unsolved(r.status, LimitNone)
	s.Solver, s.Nodes = r.solver, r.nodes
	if r.status == Optimal || r.status == Feasible {
		var x []float64
		worst := math.Inf(1)
		for _, c := range r.candidates {
			if v := m.maxViolation(c, integrality); v <= feasTol {
				x = c
				break
			} else if v < worst {
				worst = v
			}
		}
		if x == nil {
			return nil, fmt.Errorf("milp: %s returned a point that violates the model by %g", r.solver, worst)
		}
		s.Values = m.polish(x, integrality)
		s.Objective = m.ObjectiveValue(s.Values)
		switch {
		case finite(r.bound):
			s.Bound = r.bound + m.obj.Const
		case r.status == Optimal:
			s.Bound = s.Objective
		}
		s.Gap = relGap(s.Objective, s.Bound)
	} else if r.status == NoSolution && finite(r.bound) {
		s.Bound = r.bound + m.obj.Const
	}
	switch {
	case r.interrupted || cancelled && (r.status == Feasible || r.status == NoSolution):
		s.Limit = LimitContext
	case r.timeHit && fromCtx:
		s.Limit = LimitContext
	case r.timeHit:
		s.Limit = LimitTime
	}
	return s, nil
}

// unsolved returns a Solution without a point: bound and gap as nothing
// is known, except for the infinite bounds of Infeasible and Unbounded.
func (m *Model) unsolved(st Status, lim Limit) *Solution {
	worst := math.Inf(-1) // the weakest bound: -Inf when minimising
	if m.dir == Maximize {
		worst = math.Inf(1)
	}
	s := &Solution{Status: st, Limit: lim, Objective: math.NaN(), Bound: worst, Gap: math.Inf(1), Solver: "none"}
	if st == Infeasible {
		s.Bound = -worst
	}
	return s
}

// solveEmpty solves a model without variables: feasible iff every
// constraint holds at 0.
func (m *Model) solveEmpty() *Solution {
	for _, r := range m.rows {
		if r.lo > 0 || r.hi < 0 {
			return m.unsolved(Infeasible, LimitNone)
		}
	}
	return &Solution{Status: Optimal, Values: []float64{}, Objective: m.obj.Const, Bound: m.obj.Const, Gap: 0, Solver: "none"}
}

// polish returns a copy of x with every value clamped to its bounds and,
// if integrality holds, integer values rounded.
func (m *Model) polish(x []float64, integrality bool) []float64 {
	y := slices.Clone(x)
	for j, v := range m.vars {
		if v.integer && integrality {
			y[j] = math.Round(y[j])
		}
		y[j] = math.Min(math.Max(y[j], v.lo), v.hi)
		if y[j] == 0 {
			y[j] = 0 // no -0
		}
	}
	return y
}

func relGap(obj, bound float64) float64 {
	if !finite(obj) || !finite(bound) {
		return math.Inf(1)
	}
	d := math.Abs(obj - bound)
	if d == 0 {
		return 0
	}
	return d / math.Max(math.Abs(obj), 1e-10)
}

// StartColumns lays a MIP start out as CBC takes it: the columns in
// increasing order and their values.
func StartColumns(start map[Var]float64) (cols []int, vals []float64) {
	for v, x := range start {
		cols = append(cols, int(v))
		vals = append(vals, x)
	}
	sortTogether(cols, vals)
	return cols, vals
}
