package solvers

import (
	"context"
	"errors"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/checkpointall"
	"github.com/remat-compile/remat/passes/remat/heuristic"
	"github.com/remat-compile/remat/passes/remat/lns"
	"github.com/remat-compile/remat/passes/remat/moccasin"
	"github.com/remat-compile/remat/passes/remat/twremat"
)

// heuristics are the solvers Auto runs first, in this order; a tie in
// cost goes to the earlier one.
var heuristics = []remat.Solver{
	checkpointall.Solver,
	heuristic.ChenSqrtN,
	heuristic.ChenGreedy,
	heuristic.Revolve,
	heuristic.APSqrtN,
	heuristic.APGreedy,
	heuristic.LinearizedSqrtN,
	heuristic.LinearizedGreedy,
}

// searches lists the large-neighbourhood search, which Auto runs after the
// heuristics from the best of their plans (auto.go).
var searches = []remat.Solver{
	lns.Solver,
}

// kumar lists the solvers of Kumar et al. (2019), after the heuristics in
// All: their GreedyRemat baseline and TWRemat. Auto does not run them: on
// the high-treewidth graphs of the benchmarks TWRemat's separators hold more
// than the plain schedule's peak (twremat's doc), and GreedyRemat walks the
// stages once, as the heuristics before it do.
var kumar = []remat.Solver{
	heuristic.XLAGreedy,
	twremat.Solver,
}

// exact lists the solvers that prove optimality or bound it, after the
// heuristics in All: Checkmate's MILP and LP, and MOCCASIN's retention
// intervals (exact without its recomputation cap), all on COIN-OR.
var exact = []remat.Solver{
	checkmate.MILP,
	checkmate.LP,
	moccasin.Solver,
}

// milp is the exact stage of Auto: checkmate-milp, single-threaded (CBC is
// deterministic then), from the best heuristic plan.
var milp = &milpStage{
	name: checkmate.MILPName,
	// The model has O(n·|E|) variables: past this many nodes building it
	// takes longer than the default time limit leaves, and CBC's root LP
	// alone would not finish.
	maxNodes: milpMaxNodes,
	solve: func(ctx context.Context, p *remat.Problem, start *remat.Plan, progress func(remat.Progress)) (*remat.Plan, error) {
		return checkmate.NewMILP(checkmate.Options{Start: start, Threads: 1}).Solve(ctx, p, progress)
	},
	unavailable: cbcMissing,
}

// milpMaxNodes is the MILP stage's own bound on the problems it is run on:
// past it building the model alone outlasts useful time limits. Auto runs
// it only on far smaller problems (exactMaxNodes in auto.go), where the
// search has not already found what CBC would.
const milpMaxNodes = 400

// cbcMissing reports whether err says that the solver's backend (COIN-OR
// CBC/CLP) is not installed.
func cbcMissing(err error) bool { return errors.Is(err, remat.ErrUnavailable) }
