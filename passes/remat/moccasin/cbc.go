package moccasin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/remat-compile/remat/internal/cbc"
	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// Why this file: the models are solved with internal/cbc rather than
// milp.Solve, for two reasons.
//   - CBC's preprocessing must be off. Debian's CBC 2.10.8 crashes the
//     process inside CglPreProcess when preprocessing proves a model
//     infeasible while a cut callback (internal/cbc's Interrupt) is
//     installed, and when a solve with a MIP start stops on its time limit
//     (see passes/remat/checkmate's cbcdriver.go, which found both);
//     milp.Solve cannot switch it off.
//   - The solver reports every incumbent ("solutions over time"). CBC
//     2.10's C API has no incumbent callback, so a search runs as a
//     series of CBC solves, each stopping at its first new incumbent
//     (CBC's maxSolutions) and the next one starting from it (a MIP
//     start), until one proves optimality or time runs out.

// cbcOptions configure one CBC solve.
type cbcOptions struct {
	// limit is the wall-clock time limit; 0 means none.
	limit   time.Duration
	threads int
	// start is a MIP start: values of integer columns (the rest are
	// solved for by CBC).
	start map[milp.Var]float64
	// stopAt, when positive, stops the solve once CBC holds that many
	// solutions (a MIP start that CBC accepts counts as one).
	stopAt int
	// params are extra CBC parameters (name, value), for experiments.
	params [][2]string
	// logLevel > 0 makes CBC print its log (experiments only).
	logLevel int
	// tick, when not nil, is called every tickInterval while CBC runs,
	// on the caller's goroutine (CBC itself reports nothing meanwhile).
	tick func()
}

// tickInterval is the period of cbcOptions.tick.
const tickInterval = time.Second

// cbcResult is what one CBC solve found.
type cbcResult struct {
	// values is the best point, integers rounded and values clamped to
	// their bounds, checked against the model; nil without one.
	values []float64
	obj    float64 // objective at values (NaN without)
	// bound is CBC's proven bound on the optimum (−Inf when unknown, or
	// after an interrupt, which voids it).
	bound float64
	// optimal: CBC finished the search (values optimal, or none exists).
	optimal bool
	// infeasible: CBC proved that no point exists.
	infeasible bool
	// stopped: the solve ended on stopAt, the time limit or the context.
	onSolutions, onTime, onContext bool
}

// cbcFeasTol is the largest milp.Model.MaxViolation accepted in a point
// CBC returns (milp.Solve's tolerance).
const cbcFeasTol = 1e-5

// solveCBC runs CBC on m on a goroutine of its own and waits for it, for
// the context (a cancellation interrupts CBC; a deadline is CBC's own time
// limit, with an interrupt a little later in case CBC overruns it) and,
// after the context is done, for at most a second before it gives up on
// the solve (which then ends by itself and frees its model). The model
// must not change while a solve runs.
func solveCBC(ctx context.Context, m *milp.Model, o cbcOptions) (*cbcResult, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	lib, err := cbc.Load()
	if errors.Is(err, cbc.ErrNotInstalled) {
		return nil, fmt.Errorf("%w: %w", remat.ErrUnavailable, err)
	}
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		rem := time.Until(dl)
		if rem <= 0 {
			return &cbcResult{obj: math.NaN(), bound: math.Inf(-1), onContext: true}, nil
		}
		if o.limit == 0 || rem < o.limit {
			o.limit = rem
		}
	}
	if ctx.Err() != nil {
		return &cbcResult{obj: math.NaN(), bound: math.Inf(-1), onContext: true}, nil
	}
	prob, integers, _ := m.CBCProblem() // moccasin's models minimise
	it := &cbc.Interrupt{}
	type answer struct {
		r   *cbcResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := runCBC(lib, m, prob, integers, o, it)
		done <- answer{r, err}
	}()
	ctxDone := ctx.Done()
	var interrupt, giveUp, tick <-chan time.Time
	if o.tick != nil {
		tk := time.NewTicker(tickInterval)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-tick:
			o.tick()
		case a := <-done:
			if a.err == nil && ctx.Err() != nil && !a.r.optimal && !a.r.infeasible {
				a.r.onContext = true
			}
			return a.r, a.err
		case <-ctxDone:
			ctxDone = nil
			wait := time.Duration(0)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				wait = 200 * time.Millisecond // CBC's own time limit goes first
			}
			interrupt = time.After(wait)
			giveUp = time.After(time.Second)
		case <-interrupt:
			interrupt = nil
			it.Stop()
		case <-giveUp:
			return &cbcResult{obj: math.NaN(), bound: math.Inf(-1), onContext: true}, nil
		}
	}
}

// runCBC is one CBC solve, on the calling goroutine. Objectives are
// minimised.
func runCBC(lib *cbc.Lib, m *milp.Model, prob *cbc.Problem, integers []int, o cbcOptions, it *cbc.Interrupt) (*cbcResult, error) {
	mod, err := milp.NewCBCModel(lib, prob, integers, 1)
	if err != nil {
		return nil, err
	}
	defer mod.Free()
	mod.SetParameter("preprocess", "off")
	if o.limit > 0 {
		mod.SetMaximumSeconds(o.limit.Seconds())
	}
	mod.SetThreads(o.threads)
	for _, pv := range o.params {
		mod.SetParameter(pv[0], pv[1])
	}
	if o.logLevel > 0 {
		mod.SetLogLevel(o.logLevel)
	}
	if o.stopAt > 0 {
		mod.SetParameter("maxSolutions", strconv.Itoa(o.stopAt))
	}
	obj, _ := m.Objective()
	if len(o.start) > 0 {
		if err := mod.SetMIPStart(milp.StartColumns(o.start)); err != nil {
			return nil, err
		}
	}
	if err := mod.SetInterrupt(it); err != nil {
		return nil, err
	}
	if _, err := mod.Solve(); err != nil {
		return nil, err
	}
	r := &cbcResult{obj: math.NaN(), bound: math.Inf(-1)}
	fired := it.Fired()
	sec := mod.SecondaryStatus()
	switch {
	case fired || it.Stopped():
		r.onContext = true
	case mod.IsProvenOptimal():
		r.optimal = true
	case mod.IsProvenInfeasible() && !mod.HasSolution():
		r.optimal, r.infeasible = true, true
	case sec == cbc.SecondaryStoppedOnSols:
		r.onSolutions = true
	case mod.IsSecondsLimitReached() || sec == cbc.SecondaryStoppedOnTime:
		r.onTime = true
	case mod.Status() == cbc.StatusAbandoned:
		return nil, errors.New("moccasin: CBC abandoned the search (numerical difficulties)")
	}
	if !fired {
		if b := mod.BestPossibleObjValue(); !math.IsNaN(b) && !math.IsInf(b, 0) {
			r.bound = b + obj.Const
		}
	}
	if !mod.HasSolution() {
		return r, nil
	}
	worst := math.Inf(1)
	for _, x := range [][]float64{mod.BestSolution(), mod.ColSolution()} {
		if len(x) != m.NumVars() {
			continue
		}
		y := m.Round(x)
		if v := m.MaxViolation(y); v <= cbcFeasTol {
			r.values = y
			break
		} else {
			worst = math.Min(worst, v)
		}
	}
	if r.values == nil {
		return nil, fmt.Errorf("moccasin: CBC returned a point that violates the model by %g", worst)
	}
	r.obj = m.ObjectiveValue(r.values)
	if r.optimal && r.bound < r.obj {
		r.bound = math.Max(r.bound, r.obj)
	}
	return r, nil
}
