// The linearized solvers: implements Checkmate's (Jain et al. 2020)
// generalization of Chen et al.'s (2016) checkpointing heuristics to DAGs
// through the topological order, the baselines "Linearized √n" and
// "Linearized greedy" of Table 1, §6.1 and App. B.2:
//
//   - The forward graph G_fwd = (V_fwd, E_fwd) is treated as the linear
//     graph G_lin = (V_fwd, E_lin) with E_lin = {(v1, v2), (v2, v3), …}
//     along the problem's topological order; every forward node is a
//     candidate checkpoint.
//   - LinearizedSqrtN keeps every ⌊√n⌋-th forward node (Chen's √n rule); LinearizedGreedy
//     closes a segment at the first node where its bytes exceed b, for every
//     b that gives a different set, and returns the cheapest plan within
//     the memory budget (Chen's greedy rule, with Checkmate's search over
//     b).
//   - G_lin "does not properly encode data dependencies" (App. B.2), so R
//     is completed from the chosen checkpoints by Algorithm 2's repairs
//     (§5.2), which recompute whatever a recomputation reads back to kept
//     values, and remat.ScheduleStages derives S and FREE from R.
//
// The forward graph is the forward part of a training graph (the nodes up
// to the loss, as the shared shape analysis in keep.go decides) or the
// whole of an inference graph. What "recompute a segment" means on either
// kind is written down in segment.go: on a training graph the backward
// pass recomputes each segment once, just before it first needs it; on an
// inference graph a value is kept past its segment only when it is a
// checkpoint, and a later reader — here, any edge that crosses a segment
// boundary — recomputes it from the nearest kept values just before use.
// Nodes that may not be recomputed, and graph outputs, are always
// checkpoints.
//
// On a linear graph these solvers are Chen et al.'s methods exactly, the
// same plans as package chen's ("all proposed generalizations exactly
// reproduce the original heuristics on linear networks", §6.1).

package heuristic

import (
	"context"

	"github.com/remat-compile/remat/passes/remat"
)

// The solvers' names.
const (
	linSqrtNName  = "linearized-sqrtn"
	linGreedyName = "linearized-greedy"
)

// LinearizedSqrtN is Chen et al.'s √n rule on the topological order.
var LinearizedSqrtN = remat.Solver{
	Name:  linSqrtNName,
	Doc:   "Chen et al.'s √n checkpointing on the topological order treated as a chain (Checkmate App. B.2), R completed by Algorithm 2's repairs.",
	Solve: linSolveSqrtN,
}

// LinearizedGreedy is Chen et al.'s greedy rule on the topological order, searching
// the segment budget b.
var LinearizedGreedy = remat.Solver{
	Name:  linGreedyName,
	Doc:   "Chen et al.'s greedy checkpointing on the topological order treated as a chain (Checkmate App. B.2), searching the segment budget b for the cheapest plan within the budget.",
	Solve: linSolveGreedy,
}

const linWhat = "forward nodes in topological order"

func linSolveSqrtN(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sh := analyze(p)
	return sqrtNPlan(ctx, p, sh, linForward(sh), newTracker(p, linSqrtNName, progress), linWhat)
}

func linSolveGreedy(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sh := analyze(p)
	return greedyPlan(ctx, p, sh, linForward(sh), newTracker(p, linGreedyName, progress), linWhat)
}

// forward lists every forward node as a candidate.
func linForward(sh *shape) []int32 {
	return sh.candidates(func(int) bool { return true })
}
