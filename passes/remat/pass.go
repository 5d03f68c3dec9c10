package remat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/profiles"
)

// PassName is the name of the rematerialization pass.
const PassName = "remat"

// Options configure NewPass.
type Options struct {
	// Solver chooses the plan (required; the registry in
	// passes/remat/solvers has them all, its default is "auto").
	Solver Solver
	// Profile gives each node's compute time (Profile.Cost) and, for the
	// zero Budget, the memory capacity (required).
	Profile *profiles.Profile
	// Budget is the memory budget; see Budget.
	Budget Budget
	// TimeLimit bounds the solver (0: only the context given to
	// passes.Run bounds it). A solver that reaches it returns its best
	// plan so far.
	TimeLimit time.Duration
	// Progress, when not nil, receives the solver's progress reports.
	Progress func(Progress)
	// Memory says what the memory model counts (LowerOptions), and, with
	// Reuse, that the plan is made under ONNX Runtime's allocation
	// planner (by a TargetAware solver).
	Memory LowerOptions
	// Start is the problem's hint (Problem.Start): a plan of the same
	// graph at another budget, such as a sweep's previous plan.
	Start *Plan
	// Keep, when not nil, names the nodes the plan must not recompute:
	// the problem marks them not recomputable, as it does random and
	// stateful ops. A caller uses it to steer the plan away from
	// recomputations that its runtime would not turn into savings (see
	// cmd/remat-compile's ONNX Runtime refinement), a user to pin values.
	Keep func(*ir.Node) bool
	// Result, when not nil, is filled in by the pass: in full when it
	// succeeds, as far as it got when it fails (Problem is set as soon as
	// the problem is built, so that a caller can still write it out).
	Result *Result
}

// NewPass returns the rematerialization pass. It
//
//  1. lowers the graph into a Problem (Lower, with opts.Memory; without
//     its Reuse for a solver that is not TargetAware), each node costed
//     in seconds by opts.Profile;
//  2. computes the no-remat peak (checkpoint-all: every node once, each
//     value kept until its last use) and resolves the budget;
//  3. runs the solver within opts.TimeLimit, and Checks its plan (a plan
//     that fails Check is an internal error: a bug in the solver);
//  4. rewrites the graph with Rewrite: each recomputation becomes a
//     duplicated node, and the nodes follow the plan's order.
//
// When no plan fits the budget it returns an *InfeasibleBudgetError
// (wrapping the solver's *BudgetError) that says the smallest peak
// reached, by which solver, and, for a portfolio, by each. It fills in
// opts.Result as it goes.
func NewPass(opts Options) *passes.Pass {
	return &passes.Pass{
		Name: PassName,
		Doc:  "Rematerialization: choose which values to keep and which to recompute so that the graph runs within a memory budget, and duplicate the recomputed nodes.",
		Run: func(st *passes.State, g *ir.Graph) (bool, error) {
			return run(st, g, opts)
		},
	}
}

func run(st *passes.State, g *ir.Graph, opts Options) (bool, error) {
	if opts.Solver.Solve == nil {
		return false, errors.New("remat: no solver")
	}
	if opts.Profile == nil {
		return false, errors.New("remat: no device profile: the cost model needs one")
	}
	res := opts.Result
	if res == nil {
		res = &Result{}
	}
	*res = Result{Solver: opts.Solver.Name, Profile: opts.Profile.Device.Name, Budget: opts.Budget, Gap: math.Inf(1)}

	// 1. Lower, costing each node once: under the target's allocator
	// (LowerOptions.Reuse) only for a solver that plans under it.
	lo := opts.Memory
	if !opts.Solver.TargetAware {
		lo.Reuse, lo.Aliasing, lo.Workspace, lo.Arena, lo.Prepacked, lo.Preamble, lo.WorkspaceParts, lo.WorkspaceFirst = false, false, nil, false, nil, nil, nil, nil
	}
	p, m, sources, err := LowerCosted(g, opts.Profile, lo)
	if err != nil {
		return false, err
	}
	res.CostSources = map[string]int{}
	pinned := make([]bool, p.N())
	for i, n := range m.Nodes {
		res.CostSources[sources[n.ID]]++
		if opts.Keep != nil && opts.Keep(n) && p.Recomputable[i] {
			p.Recomputable[i] = false
			pinned[i] = true
		}
	}

	// 2. The no-remat peak and the budget.
	baseRes, err := EvaluateNoRemat(p)
	if err != nil {
		return false, &passes.InternalError{Pass: PassName, Err: err}
	}
	res.BeforePeakBytes = baseRes.PeakBytes
	res.BaseSeconds = baseRes.TotalSeconds
	if fl := p.Floor(); fl.Node >= 0 {
		res.FloorBytes, res.FloorNode, res.FloorWorkspace = fl.Bytes, p.Name(fl.Node), fl.Workspace
	}
	if rf := p.ReuseFloor(); rf.Bytes > res.FloorBytes {
		res.ReuseFloorBytes, res.ReuseFloorNode = rf.Bytes, p.Name(rf.Node)
	}
	budget, err := opts.Budget.Resolve(baseRes.PeakBytes, opts.Profile.MemoryBytes(), UncountedResident(g, lo))
	if err != nil {
		return false, err
	}
	p.BudgetBytes = budget
	p.Start = opts.Start
	res.BudgetBytes = budget
	res.Problem, res.Mapping = p, m

	// 3. Solve and check.
	ctx := st.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.TimeLimit)
		defer cancel()
	}
	chosen := ""
	ctx = WithTrace(ctx, &Trace{
		Attempt: func(a Attempt) { res.Attempts = append(res.Attempts, a) },
		Chosen:  func(s string) { chosen = s },
	})
	start := time.Now()
	plan, err := opts.Solver.Solve(ctx, p, opts.Progress)
	res.SolveSeconds = time.Since(start).Seconds()
	if err != nil {
		return false, solveError(opts, res, err)
	}
	if plan == nil {
		return false, &passes.InternalError{Pass: PassName, Err: fmt.Errorf("solver %s returned neither a plan nor an error", opts.Solver.Name)}
	}
	check, err := Check(p, plan)
	if err != nil {
		return false, &passes.InternalError{Pass: PassName, Err: fmt.Errorf("solver %s returned a plan that fails Check: %w", opts.Solver.Name, err)}
	}
	res.PlanSolver = opts.Solver.Name
	if chosen != "" {
		res.PlanSolver = chosen
	}
	res.Plan, res.Check = plan, check
	res.AfterPeakBytes = check.PeakBytes
	res.PlanSeconds = check.TotalSeconds
	res.OverheadSeconds = max(check.TotalSeconds-res.BaseSeconds, 0)
	if res.BaseSeconds > 0 {
		res.OverheadPercent = 100 * res.OverheadSeconds / res.BaseSeconds
	}
	res.Optimal, res.LowerBoundSeconds = plan.Optimal, plan.LowerBound
	switch {
	case plan.Optimal:
		res.Gap = 0
	case plan.LowerBound > 0 && !math.IsNaN(plan.Gap):
		res.Gap = plan.Gap
	}
	res.Recomputations = check.Recomputations
	res.Decisions = decisions(p, m, plan, check, sources, pinned, ConstantFoldable(g))
	for _, d := range res.Decisions {
		if d.Recomputed() {
			res.RecomputedNodes++
		}
	}

	// 4. Rewrite the graph.
	rw, err := Rewrite(g, m, plan)
	if err != nil {
		return false, &passes.InternalError{Pass: PassName, Err: fmt.Errorf("rewriting the checked plan of %s: %w", res.PlanSolver, err)}
	}
	res.Rewrite = rw
	return check.Recomputations > 0, nil
}

// LowerCosted lowers g (Lower) with every node's seconds from prof's cost
// model, and returns with the problem the cost source of each node, by
// node ID (profiles.Cost.Source). Nodes with subgraphs (If, Loop, Scan)
// are not recomputable: Rewrite cannot duplicate them.
func LowerCosted(g *ir.Graph, prof *profiles.Profile, mo LowerOptions) (*Problem, *Mapping, []string, error) {
	sources := make([]string, g.NumNodes())
	var costErr error
	cost := func(n *ir.Node) float64 {
		c, err := prof.Cost(n)
		if err != nil {
			if costErr == nil {
				costErr = err
			}
			return 0
		}
		sources[n.ID] = c.Source
		return c.Seconds
	}
	p, m, err := Lower(g, cost, mo)
	if err != nil {
		return nil, nil, nil, err // unknown sizes (a *memory.SizeError listing them all) first
	}
	if costErr != nil {
		return nil, nil, nil, fmt.Errorf("remat: cost model %s: %w", prof.Device.Name, costErr)
	}
	for i, n := range m.Nodes {
		if len(n.Subgraphs()) > 0 {
			p.Recomputable[i] = false
		}
	}
	return p, m, sources, nil
}
