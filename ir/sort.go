package ir

import (
	"container/heap"
	"fmt"
	"strings"
)

// CycleError reports that a graph's nodes cannot be ordered.
type CycleError struct {
	Graph string
	Nodes []*Node // the nodes that lie on or behind a cycle, in file order
}

func (e *CycleError) Error() string {
	var names []string
	for i, n := range e.Nodes {
		if i == MaxErrors {
			names = append(names, fmt.Sprintf("and %d more", len(e.Nodes)-i))
			break
		}
		names = append(names, fmt.Sprintf("%q (%s)", n.String(), n.OpName()))
	}
	return fmt.Sprintf("graph %q has a cycle: nodes %s depend on each other", e.Graph, strings.Join(names, ", "))
}

// Sort puts g.Nodes in topological order, data and control edges alike,
// keeping the current relative order wherever the dependencies allow (among ready nodes, the one that came
// first goes first). Subgraphs are sorted too. A cycle is a *CycleError.
func (g *Graph) Sort() error {
	if err := g.sortOne(); err != nil {
		return err
	}
	for _, n := range g.Nodes {
		for _, sg := range n.Subgraphs() {
			if err := sg.Sort(); err != nil {
				return err
			}
		}
	}
	return nil
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (g *Graph) sortOne() error {
	pos := make(map[*Node]int, len(g.Nodes)) // position in the current order
	for i, n := range g.Nodes {
		pos[n] = i
	}
	// Only producers that are nodes of g order g's nodes: values of
	// enclosing scopes are available before g runs at all. Control inputs
	// are predecessors like producers.
	indeg := make([]int, len(g.Nodes))
	succ := make([][]int, len(g.Nodes))
	for i, n := range g.Nodes {
		seen := map[int]bool{}
		for _, v := range n.AllInputs() {
			if v == nil || v.Def == nil {
				continue
			}
			j, ok := pos[v.Def]
			if !ok || seen[j] {
				continue
			}
			seen[j] = true
			indeg[i]++
			succ[j] = append(succ[j], i)
		}
		for _, c := range n.Control {
			j, ok := pos[c]
			if !ok || seen[j] {
				continue
			}
			seen[j] = true
			indeg[i]++
			succ[j] = append(succ[j], i)
		}
	}
	h := &intHeap{}
	for i := range g.Nodes {
		if indeg[i] == 0 {
			*h = append(*h, i)
		}
	}
	heap.Init(h)
	order := make([]*Node, 0, len(g.Nodes))
	for h.Len() > 0 {
		i := heap.Pop(h).(int)
		order = append(order, g.Nodes[i])
		for _, j := range succ[i] {
			indeg[j]--
			if indeg[j] == 0 {
				heap.Push(h, j)
			}
		}
	}
	if len(order) < len(g.Nodes) {
		var stuck []*Node
		for i, n := range g.Nodes {
			if indeg[i] > 0 {
				stuck = append(stuck, n)
			}
		}
		return &CycleError{Graph: g.Name, Nodes: stuck}
	}
	g.Nodes = order
	return nil
}

// AllInputs returns the node's explicit inputs followed by its implicit
// (outer-scope) ones: every value that must be available when it runs. The
// result must not be modified.
func (n *Node) AllInputs() []*Value {
	if len(n.Implicit) == 0 {
		return n.Inputs
	}
	return append(append([]*Value(nil), n.Inputs...), n.Implicit...)
}

// SetOrder replaces g.Nodes by nodes, which must hold each node of g
// exactly once, in a topological order (every node after the producers of
// its inputs, implicit ones included, and after its control inputs). It
// fails, leaving g unchanged, when they do not.
func (g *Graph) SetOrder(nodes []*Node) error {
	if len(nodes) != len(g.Nodes) {
		return fmt.Errorf("graph %q: SetOrder: %d nodes for %d", g.Name, len(nodes), len(g.Nodes))
	}
	pos := make(map[*Node]int, len(nodes))
	for _, n := range g.Nodes {
		pos[n] = -1
	}
	for i, n := range nodes {
		p, ok := pos[n]
		switch {
		case !ok:
			return fmt.Errorf("graph %q: SetOrder: node %q is not a node of the graph", g.Name, n.String())
		case p >= 0:
			return fmt.Errorf("graph %q: SetOrder: node %q appears twice", g.Name, n.String())
		}
		pos[n] = i
	}
	for i, n := range nodes {
		for _, v := range n.AllInputs() {
			if v == nil || v.Def == nil {
				continue
			}
			if p, ok := pos[v.Def]; ok && p >= i {
				return fmt.Errorf("graph %q: SetOrder: node %q reads %q before its producer %q runs", g.Name, n.String(), v.String(), v.Def.String())
			}
		}
		for _, c := range n.Control {
			if p, ok := pos[c]; ok && p >= i {
				return fmt.Errorf("graph %q: SetOrder: node %q runs before its control input %q", g.Name, n.String(), c.String())
			}
		}
	}
	g.Nodes = append(g.Nodes[:0:0], nodes...)
	return nil
}
