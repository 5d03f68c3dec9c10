// Package twremat is TWRemat, the rematerialization algorithm of Kumar,
// Vee and Wang, "Efficient Rematerialization for Deep Networks" (NeurIPS
// 2019), §3–4: divide and conquer on the balanced separators of a tree
// decomposition of the computation graph, with the recursion cut-off
// TWRemat(k) of §4.3 as the knob between memory and schedule length.
//
// # The algorithm
//
//   - Tree decomposition (§2.2, §3): the undirected graph of the DAG (edge
//     directions forgotten) is eliminated in minimum fill-in order, the
//     heuristic the paper's implementation uses (§4, its ref. [3]): the
//     vertex whose neighbours lack the fewest edges among themselves goes
//     first (ties: the smaller degree, then the smaller node), its
//     neighbours are joined into a clique, and its bag is itself with those
//     neighbours; its parent bag is that of the neighbour eliminated next.
//     The fill-in counts are kept exact incrementally (treedec.go).
//   - Lemma 1 shrinks the decomposition to at most n bags, merging
//     adjacent bags one of which holds the other in one union-find pass
//     over the tree's edges.
//   - Lemma 3 picks a balanced separator bag X* of each (sub)decomposition
//     (the centroid of Jordan's Theorem 2), and Theorem 5's proof asks for
//     these to be memoized: the whole hierarchy of components, each with
//     its separator and the components left when it is removed, is built
//     once (hierarchy.go), at most ⌊log₂ |X|⌋ + 1 levels deep.
//   - Algorithm 1 (schedule.go), called with S the graph outputs: for each
//     node v of X* in topological order, compute v's inputs in each
//     component by a recursive call, then v; then compute the rest of S
//     component by component. TWRemat(k) (§4.3) makes every component of
//     fewer than k bags a base case, computed in topological order:
//     TWRemat(1) is Algorithm 1, and a k above the number of bags is the
//     plain schedule, every node once.
//
// The topological order is the problem's index order. Three choices the
// paper leaves open or that only remove computations: a call computes only
// the nodes of X* that S needs (Algorithm 1 computes all of X*; Lemma 4's
// proof uses only the needed ones, so the schedule stays valid and
// Theorem 5's bounds hold); the components are called in the order of the
// smallest node each is asked for; and a node that may not be recomputed
// (Problem.Recomputable) is computed once and then treated as resident, so
// that nothing needs it or its ancestors again.
//
// # From Algorithm 1's schedule to a plan
//
// Algorithm 1 emits a sequence σ of computations with repeats (§2.1). Our
// plans are Checkmate's frontier-advancing stages: stage t computes node t
// for the first time, with recomputations of earlier nodes, each at most
// once per stage, in increasing node order. σ becomes stages this way:
// the first computation of t in σ is stage t's; every recomputation goes
// to the stage of the next first computation after it (those between the
// first computations of t−1 and t belong to stage t; those after the last
// go to the last stage); a node computed twice inside one stage is
// computed once, its value kept in between; and a recomputation of a node
// numbered above the stage it would fall in is carried to the next stage
// that may hold it. remat.ScheduleStages then derives the least-memory S
// and FREE, and remat.Evaluate measures the plan: the reported peak is the
// memory model's, not Theorem 5's bound.
//
// When σ computes nodes for the first time in index order, the plan is σ
// with its repeats inside a stage merged. That holds on chains and on
// Checkmate's linear training graphs, but not in general: Algorithm 1
// computes the inputs of a separator node component by component, so a
// component's nodes may come before lower-numbered ones of another. The
// stages then run the first computations in index order, which keeps some
// values longer than σ does: on synth.Layered(1, 1000, 5875) at the first
// cut-off below the plain schedule, 406 of the 1000 first computations are
// out of order and the plan peaks 25% above σ's own M(σ)
// (TestTradeoffTable prints both).
//
// # What it is good for
//
// Theorem 5 bounds the memory by O((M_in + w·M_max)·log n) for a
// decomposition of width w. On graphs of small width that is a real
// saving: on Checkmate's linear training graph of L layers (width 2),
// Algorithm 1 peaks at log₂ L + 2 values against L + 2 for the plain
// schedule, with 4.3·n computations at L = 512 (n = 1025), within the
// n·log₂ n of recursive checkpointing on chains (§6); the first cut-off
// below the plain schedule already halves the peak for 1.5·n. On
// the random layered DAGs of package synth the min-fill width is large
// (149 on the 1000-node graph) and a single separator holds more bytes
// than the plain schedule's whole peak: every TWRemat(k) below the plain
// schedule peaks higher than it (2.3× there), so on such graphs the solver
// returns the plain schedule or reports a *remat.BudgetError.
//
// # Solvers
//
// Solver ("twremat") sweeps the cut-off from the least recomputation (the
// plain schedule) toward full recursion, through the values of k at which
// TWRemat(k) changes (the distinct component sizes; a geometric selection
// of them when there are more than 40), measures each plan, and returns
// the cheapest within the budget, or a *remat.BudgetError with the least
// peak it reached. It stops early when the plain schedule fits (no plan
// is cheaper), when ctx is done (returning the best plan so far), and at
// the first run whose σ exceeds Options.MaxLength computations, since σ
// only grows as the recursion deepens. New(k) is TWRemat(k) alone, for
// trade-off studies (§4.3, Figure 4); it is not budget-aware. Prepare and
// Prepared.Run expose one decomposition for many runs.
package twremat
