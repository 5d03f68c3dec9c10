package checkmate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// MILPName is the name of the MILP solver.
const MILPName = "checkmate-milp"

// MILP solves the MILP (9) of Checkmate §4 to optimality with CBC, with
// no time limit beyond the context's and no MIP start. NewMILP configures
// one (a time limit, a start plan, a gap, threads).
var MILP = NewMILP(Options{})

// NewMILP returns the MILP solver with the given options (TimeLimit,
// Start, Gap, Threads, Model).
//
// Solve returns, in this order of checks:
//   - checkpoint-all, Optimal, when it fits (no plan costs less);
//   - a *remat.BudgetError when even the working set of a single step
//     exceeds the budget, with the least peak the peak-minimising MILP
//     found; Proven when it proved that peak the least or reached that
//     working set;
//   - otherwise CBC's solution of (9) (per-factor FREE rows unless
//     opts.Model says otherwise; CBC's preprocessing off, see
//     cbcdriver.go), started from opts.Start when that plan passes Check,
//     decoded (Formulation.Plan) and checked; or the start, when it is
//     cheaper than what CBC found in time. Optimal is set when CBC proved
//     optimality; otherwise LowerBound is CBC's bound and Gap the
//     relative gap. On the context's deadline or opts.TimeLimit the best
//     plan so far is returned the same way, or without one the context's
//     error (a *remat.BudgetError with checkpoint-all's peak, not Proven,
//     when only TimeLimit passed).
//   - When CBC proves (9) infeasible, a *remat.BudgetError whose NeedBytes
//     is the least peak found by a second MILP minimising the peak (within
//     the time left), with that plan; Proven only when that MILP proved it
//     the least and the problem has no multi-output refinement (the model
//     is the coarse problem's).
//
// Progress reports come every half second while CBC runs (CBC's C API
// reports nothing during the search, so they carry the start's cost and
// the best bound known before the search) and once at the end.
func NewMILP(opts Options) remat.Solver {
	return remat.Solver{
		Name:  MILPName,
		Doc:   "Checkmate's optimal MILP (Jain et al. 2020, §4, eq. 9) on frontier-advancing stages, solved with CBC.",
		Exact: true,
		Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
			return solveMILP(ctx, p, progress, opts)
		},
	}
}

// milpModel is the formulation the MILP solver builds: opts.Model with
// the per-factor FREE rows unless another form is asked for (measured:
// CBC mostly proves optimality faster with them; see FreePerFactor).
func milpModel(opts Options, minimizePeak bool) ModelOptions {
	mo := opts.Model
	mo.Epsilon, mo.MinimizePeak = 0, minimizePeak
	if mo.Free == FreeAuto {
		mo.Free = FreePerFactor
	}
	return mo
}

// precheck is what both solvers check before building a model: the
// context is live, the options and the problem are valid.
func precheck(ctx context.Context, p *remat.Problem, opts Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := opts.check(); err != nil {
		return err
	}
	return p.Validate()
}

func solveMILP(ctx context.Context, p *remat.Problem, progress func(remat.Progress), opts Options) (*remat.Plan, error) {
	rep := reporter{start: time.Now(), fn: progress}
	if err := precheck(ctx, p, opts); err != nil {
		return nil, err
	}
	remaining := func() time.Duration {
		if opts.TimeLimit == 0 {
			return 0
		}
		return max(opts.TimeLimit-time.Since(rep.start), time.Millisecond)
	}
	sum := p.LowerBoundSeconds()
	ca, caRes, err := checkpointAll(p)
	if err != nil {
		return nil, err
	}
	if caRes.PeakBytes <= p.BudgetBytes {
		rep.report(caRes.TotalSeconds, sum, "checkpoint-all fits")
		return finish(p, ca, MILPName, caRes.TotalSeconds, sum, true), nil
	}
	if p.Floor().Bytes > p.BudgetBytes {
		pl, peak, least := minPeak(ctx, p, opts, remaining(), ca, caRes.PeakBytes, p.BudgetBytes)
		return nil, budgetError(p, pl, peak, least || peak == p.Floor().Bytes)
	}

	// The start, canonicalised, if it passes Check.
	var start *remat.Plan
	startCost := math.Inf(1)
	if opts.Start != nil {
		if res, err := remat.Check(p, opts.Start); err == nil {
			start = canonical(p, opts.Start)
			if res2, err := remat.Check(p, start); err == nil {
				startCost = res2.TotalSeconds
			} else {
				startCost = res.TotalSeconds
			}
		}
	}

	f, err := BuildMILP(p, milpModel(opts, false))
	if err != nil {
		return nil, err
	}
	bound := sum // the best bound known, in seconds
	note := fmt.Sprintf("cbc: %d variables, %d constraints", f.Model.NumVars(), f.Model.NumConstrs())
	var mipStart map[milp.Var]float64
	if start != nil {
		if x, err := f.Point(start); err == nil && f.Feasible(x) {
			mipStart, _ = f.Start(start)
			note += ", MIP start"
		} else {
			note += ", MIP start outside the coarse model"
		}
	}
	rep.report(startCost, bound, note)

	var (
		best     *remat.Plan
		bestCost = math.Inf(1)
		proven   bool // CBC proved best optimal for (9) at the real budget
		status   milp.Status
	)
	limit := float64(p.BudgetBytes)
	for attempt := 0; attempt < 3; attempt++ {
		sol, err := solve(ctx, f.Model, milp.Options{
			TimeLimit: remaining(),
			Gap:       opts.Gap,
			MIPStart:  mipStart,
			Threads:   opts.Threads,
		}, func(mp milp.Progress) {
			inc, b := math.Min(startCost, bestCost), bound
			if !math.IsNaN(mp.Incumbent) {
				inc = math.Min(inc, f.Seconds(mp.Incumbent))
			}
			if !p.Refined() {
				b = math.Max(b, solvedBound(f, mp.Bound))
			}
			what := "cbc: branch and bound"
			if mp.Final {
				what = "cbc: done"
			}
			rep.report(inc, math.Min(b, inc), what)
		})
		if err != nil {
			return nil, err
		}
		if attempt == 0 {
			status = sol.Status
		}
		if attempt == 0 && !p.Refined() {
			bound = math.Max(bound, solvedBound(f, sol.Bound))
		}
		if sol.Values == nil {
			break
		}
		pl, err := f.Plan(sol.Values)
		if err != nil {
			return nil, fmt.Errorf("checkmate: internal error: decoding CBC's solution: %w", err)
		}
		res, err := remat.Check(p, pl)
		if err == nil {
			best, bestCost = pl, res.TotalSeconds
			proven = attempt == 0 && sol.Status == milp.Optimal && sol.Limit == milp.LimitNone &&
				(opts.Gap == 0 || sol.Gap <= 1e-9) && !p.Refined()
			break
		}
		if !isOverBudget(err) {
			return nil, fmt.Errorf("checkmate: internal error: the plan decoded from CBC's solution fails Check: %w", err)
		}
		// The solver's tolerances let the rounded point exceed the budget:
		// tighten the limit by the excess and solve again.
		limit -= float64(res.PeakBytes - p.BudgetBytes)
		f.SetLimit(limit)
		mipStart = nil
		if ctx.Err() != nil {
			break
		}
	}

	if start != nil && startCost < bestCost {
		best, bestCost, proven = start, startCost, false
	}
	if best != nil {
		pl := finish(p, best, MILPName, bestCost, bound, proven)
		rep.report(bestCost, pl.LowerBound, fmt.Sprintf("done: optimal %v", pl.Optimal))
		return pl, nil
	}
	if status == milp.Infeasible {
		pl, peak, least := minPeak(ctx, p, opts, remaining(), ca, caRes.PeakBytes, p.BudgetBytes)
		if peak <= p.BudgetBytes { // a refined problem: the coarse model was too strict
			res, err := remat.Check(p, pl)
			if err == nil {
				return finish(p, pl, MILPName, res.TotalSeconds, sum, false), nil
			}
		}
		// Proven claims that peak is the least of any plan: only when the
		// peak-minimising MILP proved it (not when it ran out of time,
		// leaving checkpoint-all's peak or a better one it found).
		return nil, budgetError(p, pl, peak, least)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if status == milp.NoSolution {
		// The time limit passed without a plan: report checkpoint-all's
		// peak, the least known.
		return nil, budgetError(p, ca, caRes.PeakBytes, false)
	}
	return nil, fmt.Errorf("checkmate: internal error: CBC ended with status %v", status)
}
