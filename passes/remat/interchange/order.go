package interchange

import (
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// NetworkxOrder returns the order in which networkx's topological_sort
// (networkx 2.6 and later: Kahn's algorithm by generations, the
// algorithm of its topological_generations) yields the nodes 0 … n−1 of a
// DiGraph built by adding the nodes in that order and then the edges, where
// succ[u] lists u's distinct successors in the order their first edge was
// added (the iteration order of networkx's adjacency dicts):
//
//   - the first generation is every node without predecessors, in node
//     order;
//   - each next generation lists, in the order it happens, every node
//     whose last remaining predecessor the previous generation removed,
//     walking that generation's nodes in order and each node's
//     successors in order;
//   - the order is the generations one after the other.
//
// When the graph has a cycle it returns nil and the nodes of one cycle,
// in edge order from its least node, which is repeated at the end.
func NetworkxOrder(n int, succ [][]int32) (order, cycle []int32) {
	indeg := make([]int32, n)
	for _, cs := range succ {
		for _, c := range cs {
			indeg[c]++
		}
	}
	var next []int32
	for v := range n {
		if indeg[v] == 0 {
			next = append(next, int32(v))
		}
	}
	order = make([]int32, 0, n)
	for len(next) > 0 {
		gen := next
		next = nil
		for _, u := range gen {
			order = append(order, u)
			for _, c := range succ[u] {
				if indeg[c]--; indeg[c] == 0 {
					next = append(next, c)
				}
			}
		}
	}
	if len(order) == n {
		return order, nil
	}
	return nil, findCycle(n, succ, indeg)
}

// findCycle returns a cycle among the nodes Kahn's algorithm could not
// order (indeg > 0): each of them has a predecessor among them, so
// walking predecessors from any of them must repeat a node.
func findCycle(n int, succ [][]int32, indeg []int32) []int32 {
	pred := make([]int32, n)
	for i := range pred {
		pred[i] = -1
	}
	start := int32(-1)
	for u, cs := range succ {
		if indeg[u] == 0 {
			continue
		}
		for _, c := range cs {
			if indeg[c] > 0 && pred[c] < 0 {
				pred[c] = int32(u)
			}
		}
		if start < 0 {
			start = int32(u)
		}
	}
	seen := make([]int32, n) // position+1 on the walk
	var walk []int32
	for v := start; v >= 0; v = pred[v] {
		if seen[v] > 0 {
			cyc := slices.Clone(walk[seen[v]-1:])
			slices.Reverse(cyc) // the walk went against the edges
			// Start at the earliest node, for a stable message.
			k := slices.Index(cyc, slices.Min(cyc))
			cyc = append(cyc[k:], cyc[:k]...)
			return append(cyc, cyc[0])
		}
		walk = append(walk, v)
		seen[v] = int32(len(walk))
	}
	return nil // unreachable: every unordered node has an unordered predecessor
}

// rawGraph is a graph as read, before it becomes a Problem: nodes in file
// order.
type rawGraph struct {
	names   []string
	seconds []float64
	bytes   []int64
	recomp  []bool
	pointer []bool    // TWRemat `pointer` nodes
	target  []bool    // TWRemat `target` nodes
	param   int64     // Σ param_cost
	succ    [][]int32 // distinct successors, in first-link order
	edges   int
}

func (g *rawGraph) n() int { return len(g.names) }

// addNode appends a node and returns its index.
func (g *rawGraph) addNode(name string, seconds float64, bytes int64, recomp bool) int32 {
	g.names = append(g.names, name)
	g.seconds = append(g.seconds, seconds)
	g.bytes = append(g.bytes, bytes)
	g.recomp = append(g.recomp, recomp)
	g.pointer = append(g.pointer, false)
	g.target = append(g.target, false)
	g.succ = append(g.succ, nil)
	return int32(len(g.names) - 1)
}

// addEdge records u → v unless it is already there (networkx's DiGraph
// keeps one edge per pair, in the order of its first addition).
func (g *rawGraph) addEdge(u, v int32, seen map[[2]int32]bool) {
	k := [2]int32{u, v}
	if seen[k] {
		return
	}
	seen[k] = true
	g.succ[u] = append(g.succ[u], v)
	g.edges++
}

// isTopological reports whether order puts every edge's source first.
func (g *rawGraph) isTopological(order []int32) (bool, [2]int32) {
	pos := make([]int32, g.n())
	for k, v := range order {
		pos[v] = int32(k)
	}
	for u, cs := range g.succ {
		for _, c := range cs {
			if pos[c] <= pos[u] {
				return false, [2]int32{int32(u), c}
			}
		}
	}
	return true, [2]int32{}
}

// problem builds the Problem with the nodes in order: outputs are the
// targets, the sinks or none, and ConstBytes the parameters or nothing,
// as semantics says. Every `pointer` node's readers also read what it
// reads (transitively), so the buffers a view aliases stay resident while
// the view is.
func (g *rawGraph) problem(order []int32, outputs outputRule, constParams bool) *remat.Problem {
	n := g.n()
	pos := make([]int32, n)
	for k, v := range order {
		pos[v] = int32(k)
	}
	pred := make([][]int32, n) // in positions
	for u, cs := range g.succ {
		for _, c := range cs {
			pred[c] = append(pred[c], pos[u])
		}
	}
	p := &remat.Problem{
		Deps:         make([][]int32, n),
		Seconds:      make([]float64, n),
		Bytes:        make([]int64, n),
		Recomputable: make([]bool, n),
		Names:        make([]string, n),
		BudgetBytes:  remat.NoBudget,
	}
	if constParams {
		p.ConstBytes = g.param
	}
	for k, v := range order {
		deps := slices.Clone(pred[v])
		// Readers of a pointer read through it: a pointer's deps (already
		// extended, since it comes earlier) are added to its reader's.
		for _, d := range pred[v] {
			if g.pointer[order[d]] {
				deps = append(deps, p.Deps[d]...)
			}
		}
		slices.Sort(deps)
		p.Deps[k] = slices.Compact(deps)
		p.Seconds[k] = g.seconds[v]
		p.Bytes[k] = g.bytes[v]
		p.Recomputable[k] = g.recomp[v]
		p.Names[k] = g.names[v]
		out := false
		switch outputs {
		case outputTargets:
			out = g.target[v]
		case outputSinks:
			out = len(g.succ[v]) == 0
		}
		if out {
			p.Outputs = append(p.Outputs, int32(k))
		}
	}
	return p
}

// outputRule says which nodes are graph outputs.
type outputRule uint8

const (
	outputNone outputRule = iota
	outputSinks
	outputTargets
)
