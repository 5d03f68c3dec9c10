package checkmate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/remat-compile/remat/internal/cbc"
	"github.com/remat-compile/remat/internal/milp"
)

// Why this file: the MILPs are solved with internal/cbc directly rather
// than with milp.Solve, because CBC 2.10.8 (Debian's libCbcSolver.so.3)
// crashes the process with a SIGSEGV inside its preprocessing (CglPreProcess)
// on two paths these models reach, and milp.Solve offers no way to switch
// preprocessing off:
//   - CglPreProcess::preProcessNonDefault, when preprocessing proves a
//     model infeasible while a cut callback is installed (milp.Solve
//     installs one, internal/cbc's Interrupt, whenever its context can be
//     done); a budget below the least peak does that;
//   - CglPreProcess::postProcess, when a solve with a MIP start stops on
//     its time limit (a 60-node problem with limits from 200 ms up; with
//     or without the cut callback).
//
// With "preprocess off" neither path exists. The price, measured on six
// 60-node random DAGs at 80 % of checkpoint-all's peak: CBC finds
// incumbents sooner but proves optimality up to about twice as slowly on
// the harder ones (and one that closed in 25 s no longer closes in 30 s).
// The rest follows
// milp.Solve: the model is copied column by column, the context's deadline
// becomes CBC's time limit, a cancellation stops CBC through the
// Interrupt, and the point CBC returns is checked against the model and
// its integers rounded. LPs (the relaxation) still go through milp.Solve
// and CLP, which have neither problem.

// errBadPoint is solveCBC's error when neither point CBC returns satisfies
// the model; the solution then comes with it, without a point and with
// CBC's bound, for a caller that needs only the bound.
var errBadPoint = errors.New("checkmate: CBC returned a point that violates the model")

// cbcFeasTol is the largest milp.Model.MaxViolation accepted from CBC, as
// in milp.Solve.
const cbcFeasTol = 1e-5

// solveCBC solves a MILP like milp.Solve(ctx, m, o) (TimeLimit, Gap,
// MIPStart, Threads) with CBC's preprocessing off, on its own goroutine;
// see the top of the file. The caller (solve) waits on it.
func solveCBC(ctx context.Context, m *milp.Model, o milp.Options) (*milp.Solution, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	lib, err := cbc.Load()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	prob, integers, sense := m.CBCProblem()
	obj, _ := m.Objective()
	objConst := obj.Const
	mod, err := milp.NewCBCModel(lib, prob, integers, sense)
	if err != nil {
		return nil, err
	}
	defer mod.Free()
	mod.SetParameter("preprocess", "off")
	if o.TimeLimit > 0 {
		mod.SetMaximumSeconds(o.TimeLimit.Seconds())
	}
	if o.Gap > 0 {
		mod.SetAllowableFractionGap(o.Gap)
	}
	mod.SetThreads(o.Threads)
	if len(o.MIPStart) > 0 {
		if err := mod.SetMIPStart(milp.StartColumns(o.MIPStart)); err != nil {
			return nil, err
		}
	}
	it := &cbc.Interrupt{}
	if err := mod.SetInterrupt(it); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	rc, err := mod.Solve()
	if err != nil {
		return nil, err
	}
	sol := &milp.Solution{Status: milp.NoSolution, Objective: math.NaN(), Bound: math.Inf(-1), Gap: math.Inf(1), Solver: "cbc"}
	if sense < 0 {
		sol.Bound = math.Inf(1)
	}
	defer func() { sol.Elapsed = time.Since(start) }()
	if rc == cbc.StatusNotStarted && it.Stopped() {
		sol.Limit = milp.LimitContext
		return sol, nil
	}
	sol.Nodes = mod.NodeCount()
	fired := it.Fired()
	timeHit := mod.IsSecondsLimitReached() || mod.SecondaryStatus() == cbc.SecondaryStoppedOnTime
	has := mod.HasSolution()
	bound := math.NaN()
	switch {
	case fired && has:
		sol.Status = milp.Feasible
	case fired:
	case has && mod.IsProvenOptimal():
		sol.Status, bound = milp.Optimal, mod.BestPossibleObjValue()
	case mod.IsContinuousUnbounded():
		sol.Status = milp.Unbounded
	case mod.IsProvenInfeasible():
		sol.Status, sol.Bound = milp.Infeasible, -sol.Bound
	case has:
		sol.Status, bound = milp.Feasible, mod.BestPossibleObjValue()
	default:
		if mod.Status() == cbc.StatusAbandoned {
			return nil, errors.New("checkmate: CBC abandoned the search (numerical difficulties)")
		}
		bound = mod.BestPossibleObjValue()
	}
	switch {
	case fired || it.Stopped() && sol.Status != milp.Optimal && sol.Status != milp.Infeasible:
		sol.Limit = milp.LimitContext
	case timeHit:
		sol.Limit = milp.LimitTime
	}
	if !math.IsNaN(bound) && !math.IsInf(bound, 0) {
		sol.Bound = bound + objConst
	}
	if sol.Status != milp.Optimal && sol.Status != milp.Feasible {
		return sol, nil
	}
	// The first candidate that satisfies the model, integers rounded and
	// values clamped to their bounds.
	worst := math.Inf(1)
	for _, x := range [][]float64{mod.ColSolution(), mod.BestSolution()} {
		if len(x) != m.NumVars() {
			continue
		}
		if v := m.MaxViolation(m.Round(x)); v <= cbcFeasTol {
			sol.Values = m.Round(x)
			break
		} else {
			worst = math.Min(worst, v)
		}
	}
	if sol.Values == nil {
		sol.Status = milp.NoSolution
		return sol, fmt.Errorf("%w by %g", errBadPoint, worst)
	}
	sol.Objective = m.ObjectiveValue(sol.Values)
	if sol.Status == milp.Optimal && math.IsInf(sol.Bound, 0) {
		sol.Bound = sol.Objective
	}
	sol.Gap = relGapAbs(sol.Objective, sol.Bound)
	return sol, nil
}

// relGapAbs is |obj − bound| / max(|obj|, 1e-10), +Inf when either is not
// finite, as milp.Solution.Gap.
func relGapAbs(obj, bound float64) float64 {
	if math.IsNaN(obj) || math.IsInf(obj, 0) || math.IsNaN(bound) || math.IsInf(bound, 0) {
		return math.Inf(1)
	}
	return math.Abs(obj-bound) / math.Max(math.Abs(obj), 1e-10)
}
