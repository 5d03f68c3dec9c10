// The ap solvers: implements Checkmate's (Jain et al. 2020) generalization of
// Chen et al.'s (2016) checkpointing heuristics to DAGs through
// articulation points, the baselines "AP √n" and "AP greedy" of Table 1,
// §6.1 and App. B.1:
//
//   - The candidates for checkpoints are the articulation points (cut
//     vertices) of the undirected forward graph: the nodes whose removal
//     disconnects it, found by Hopcroft and Tarjan's depth-first search in
//     O(V+E). They include the inputs and outputs of residual blocks but
//     no node inside a block; on a chain, every node but the two ends.
//   - APSqrtN keeps every ⌊√c⌋-th of the c candidates (Chen's √n rule);
//     APGreedy closes a segment at the first candidate where its bytes exceed
//     b, for every b that gives a different set, and returns the cheapest
//     plan within the memory budget (Chen's greedy rule, with Checkmate's
//     search over b).
//   - R is then completed from the chosen checkpoints by Algorithm 2's
//     repairs (§5.2), "solving for R to restore correctness" (App. B.1),
//     and remat.ScheduleStages derives S and FREE from R.
//
// The forward graph is the forward part of a training graph (the nodes up
// to the loss, as the shared shape analysis in keep.go decides) or the
// whole of an inference graph. What "recompute a segment" means on either
// kind is written down in segment.go: on a training graph the backward
// pass recomputes each segment once, just before it first needs it; on an
// inference graph a value is kept past its segment only when it is a
// checkpoint, and a later reader recomputes it from the nearest kept
// values just before use. Nodes that may not be recomputed, and graph
// outputs, are always checkpoints.
//
// Graphs with few articulation points (a U-Net, whose long skips join the
// encoder to the decoder) get few candidates and long segments; the
// linearized package's solvers do better there (App. B.2).

package heuristic

import (
	"context"

	"github.com/remat-compile/remat/passes/remat"
)

// The solvers' names.
const (
	apSqrtNName  = "ap-sqrtn"
	apGreedyName = "ap-greedy"
)

// APSqrtN is Chen et al.'s √n rule on articulation points.
var APSqrtN = remat.Solver{
	Name:  apSqrtNName,
	Doc:   "Chen et al.'s √n checkpointing on the articulation points of the forward graph (Checkmate App. B.1), R completed by Algorithm 2's repairs.",
	Solve: apSolveSqrtN,
}

// APGreedy is Chen et al.'s greedy rule on articulation points, searching
// the segment budget b.
var APGreedy = remat.Solver{
	Name:  apGreedyName,
	Doc:   "Chen et al.'s greedy checkpointing on the articulation points of the forward graph (Checkmate App. B.1), searching the segment budget b for the cheapest plan within the budget.",
	Solve: apSolveGreedy,
}

const apWhat = "articulation points"

func apSolveSqrtN(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sh := analyze(p)
	return sqrtNPlan(ctx, p, sh, apCandidates(p, sh), newTracker(p, apSqrtNName, progress), apWhat)
}

func apSolveGreedy(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sh := analyze(p)
	return greedyPlan(ctx, p, sh, apCandidates(p, sh), newTracker(p, apGreedyName, progress), apWhat)
}

func apCandidates(p *remat.Problem, sh *shape) []int32 {
	ap := articulationPoints(p, sh.fwdEnd)
	return sh.candidates(func(v int) bool { return ap[v] })
}

// articulationPoints marks the cut vertices of the undirected graph of
// nodes 0 … last and the edges among them (Hopcroft and Tarjan 1973: a
// depth-first search, iterative so that long chains cannot exhaust the
// stack; the root is a cut vertex when it has two or more children, any
// other vertex u when some child's subtree reaches nothing above u).
// Neighbours are visited in increasing order, so the result is
// deterministic.
func articulationPoints(p *remat.Problem, last int) []bool {
	n := last + 1
	// Neighbours in CSR form: the dependencies of v (all before v) then
	// its readers (all after v), so each list is increasing.
	deg := make([]int32, n+1)
	for v := range n {
		for _, d := range p.Deps[v] {
			deg[d+1]++
			deg[v+1]++
		}
	}
	for v := range n {
		deg[v+1] += deg[v]
	}
	nb := make([]int32, deg[n])
	fill := make([]int32, n)
	copy(fill, deg[:n])
	for v := range n {
		for _, d := range p.Deps[v] {
			nb[fill[v]] = d
			fill[v]++
		}
	}
	for v := range n {
		for _, d := range p.Deps[v] {
			nb[fill[d]] = int32(v)
			fill[d]++
		}
	}
	ap := make([]bool, len(p.Deps))
	disc := make([]int32, n)
	low := make([]int32, n)
	parent := make([]int32, n)
	next := make([]int32, n) // the next neighbour index of each vertex on the stack
	for v := range disc {
		disc[v] = -1
	}
	var stack []int32
	timer := int32(0)
	for root := range int32(n) {
		if disc[root] >= 0 {
			continue
		}
		disc[root], low[root], parent[root], next[root] = timer, timer, -1, deg[root]
		timer++
		stack = append(stack[:0], root)
		children := 0
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			if next[v] < deg[v+1] {
				w := nb[next[v]]
				next[v]++
				switch {
				case disc[w] < 0:
					disc[w], low[w], parent[w], next[w] = timer, timer, v, deg[w]
					timer++
					stack = append(stack, w)
					if v == root {
						children++
					}
				case w != parent[v]:
					low[v] = min(low[v], disc[w])
				}
				continue
			}
			stack = stack[:len(stack)-1]
			if u := parent[v]; u >= 0 {
				low[u] = min(low[u], low[v])
				if u != root && low[v] >= disc[u] {
					ap[u] = true
				}
			}
		}
		ap[root] = children >= 2
	}
	return ap
}
