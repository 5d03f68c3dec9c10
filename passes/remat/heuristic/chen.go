// Package heuristic holds the classic checkpointing baselines of Checkmate
// (Jain et al. 2020) §6.1 and App. B, as remat.Solvers: Chen et al.'s √n
// and greedy rules (chen-sqrtn, chen-greedy), their generalizations to DAGs
// on articulation points (ap-sqrtn, ap-greedy) and on the linearized graph
// (linearized-sqrtn, linearized-greedy), and Griewank and Walther's
// binomial checkpointing (griewank-logn). They share one engine (keep.go,
// segment.go) that completes checkpoint choices into legal plans. The
// package also holds Kumar et al.'s (2019) GreedyRemat baseline, XLA's
// rematerialization heuristic (xla-greedy, xlagreedy.go), which walks the
// stages and evicts values instead.
//
// The chen solvers implement the checkpointing heuristics of Chen et al.
// (2016), "Training Deep Nets with Sublinear Memory Cost", as the
// baselines "Chen et al. √n" and "Chen et al. greedy" of Checkmate (Jain
// et al. 2020) Table 1 and §6.1:
//
//   - ChenSqrtN (§4.1 of Chen et al.): cut the forward pass into ⌊√n⌋-node
//     segments, keep only the segment boundaries, and recompute each
//     segment once, from the boundary before it, when the backward pass
//     reaches it: O(√n) memory for at most one extra forward pass.
//   - ChenGreedy (§4.2): close a segment wherever its bytes exceed a budget b,
//     for each b that gives a different segmentation (Checkmate's "search
//     over parameter b"), and return the cheapest plan within the memory
//     budget.
//
// Both are defined on linear graphs: a chain, or a training chain (a
// forward chain and its loss, then a backward chain in which each node
// also reads forward activations, as solvertest.LinearNetwork and
// Checkmate §4.6). There the methods are exactly the papers'. On any other
// graph they run on its linearized form, the topological order treated as
// a chain (Checkmate App. B.2), rather than fail: every registered solver
// answers every problem (the conformance suite, solvertest, requires a
// plan or a budget error). They then coincide with the linearized
// package's solvers, as they do on linear graphs ("all proposed
// generalizations exactly reproduce the original heuristics on linear
// networks", §6.1); the progress notes say which case applies. On graphs
// that articulation points cut into blocks (residual networks), ap-* keeps
// recomputation inside the blocks (App. B.1).
//
// What "recompute a segment" means on training and on inference graphs,
// and how checkpoints become a plan (Algorithm 2's repairs, §5.2), is
// written down in segment.go and keep.go. In short: on a training graph the
// backward pass recomputes each segment once, just before it first needs
// it, and keeps the recomputed values until their last reader; on
// an inference graph a value is kept past its segment only when it is a
// checkpoint, and a later reader recomputes it from the nearest kept
// values just before use. An inference chain has no later readers, so both
// solvers return its plan without recomputation. Nodes that may not be
// recomputed, and graph outputs, are always checkpoints.
package heuristic

import (
	"context"

	"github.com/remat-compile/remat/passes/remat"
)

// The solvers' names.
const (
	chenSqrtNName  = "chen-sqrtn"
	chenGreedyName = "chen-greedy"
)

// ChenSqrtN is Chen et al.'s √n checkpointing.
var ChenSqrtN = remat.Solver{
	Name:  chenSqrtNName,
	Doc:   "Chen et al. (2016) √n checkpointing: keep every ⌊√n⌋-th forward node, recompute each segment once during the backward pass (linear graphs; others via their topological order).",
	Solve: chenSolveSqrtN,
}

// ChenGreedy is Chen et al.'s greedy checkpointing with a search over the
// segment budget b.
var ChenGreedy = remat.Solver{
	Name:  chenGreedyName,
	Doc:   "Chen et al. (2016) greedy checkpointing: segments closed where their bytes exceed b, searching b for the cheapest plan within the budget (linear graphs; others via their topological order).",
	Solve: chenSolveGreedy,
}

func chenSolveSqrtN(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	sh, what, err := prepare(p)
	if err != nil {
		return nil, err
	}
	return sqrtNPlan(ctx, p, sh, chenForward(sh), newTracker(p, chenSqrtNName, progress), what)
}

func chenSolveGreedy(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	sh, what, err := prepare(p)
	if err != nil {
		return nil, err
	}
	return greedyPlan(ctx, p, sh, chenForward(sh), newTracker(p, chenGreedyName, progress), what)
}

func prepare(p *remat.Problem) (*shape, string, error) {
	if err := p.Validate(); err != nil {
		return nil, "", err
	}
	sh := analyze(p)
	what := "forward nodes"
	if !sh.linear {
		what = "forward nodes in topological order (not a linear graph: the linearized form, Checkmate App. B.2)"
	}
	return sh, what, nil
}

// forward lists every forward node as a candidate: on a chain each node is
// a possible segment boundary.
func chenForward(sh *shape) []int32 {
	return sh.candidates(func(int) bool { return true })
}
