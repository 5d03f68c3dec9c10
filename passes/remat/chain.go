package remat

import "github.com/remat-compile/remat/ir"

// Chain is a recompute chain as an exporter holds it in place in the
// runtime's order: its Nodes (in order; In marks them) must run after
// After, and an exporter makes them do so by holding back the chain's
// entries, the nodes that read nothing the chain computes (ONNX: a
// zero-cost data dependency; GraphDef: a NoOp control gate). Forced marks
// the entries already held back.
type Chain struct {
	After  *ir.Node
	Nodes  []*ir.Node
	In     map[*ir.Node]bool
	Forced map[*ir.Node]bool
}

// NewChain returns the chain of nodes to run after after.
func NewChain(after *ir.Node, nodes ...*ir.Node) Chain {
	c := Chain{After: after, In: map[*ir.Node]bool{}, Forced: map[*ir.Node]bool{}}
	for _, n := range nodes {
		c.Add(n)
	}
	return c
}

// Add appends n to the chain.
func (c *Chain) Add(n *ir.Node) {
	c.Nodes = append(c.Nodes, n)
	c.In[n] = true
}

// Entries returns the chain's entry nodes that n depends on within the
// chain, in chain order: the nodes an exporter holds back to hold n back
// (n itself when it is an entry).
func (c *Chain) Entries(n *ir.Node) []*ir.Node {
	need := map[*ir.Node]bool{}
	var walk func(*ir.Node)
	walk = func(x *ir.Node) {
		if need[x] {
			return
		}
		need[x] = true
		for _, v := range x.AllInputs() {
			if v != nil && v.Def != nil && c.In[v.Def] {
				walk(v.Def)
			}
		}
	}
	walk(n)
	var out []*ir.Node
	for _, x := range c.Nodes {
		if need[x] && c.IsEntry(x) {
			out = append(out, x)
		}
	}
	return out
}

// IsEntry reports whether n reads nothing that the chain computes.
func (c *Chain) IsEntry(n *ir.Node) bool {
	for _, v := range n.AllInputs() {
		if v != nil && v.Def != nil && c.In[v.Def] {
			return false
		}
	}
	return true
}

// Early finds the first of chains with a node that the runtime would run
// before the chain's After, given each node's position in the runtime's
// order (rank; ok false for a node the runtime does not run, such as a
// constant it folds). It returns that chain's index, the node, and the
// entries the node depends on that are not held back yet; index −1 when
// every chain runs in place. Empty entries with an index mean that every
// entry is held back and the node still runs early: the exporter's
// forcing failed, an internal error.
func Early(chains []*Chain, rank func(*ir.Node) (int, bool)) (index int, early *ir.Node, entries []*ir.Node) {
	for i, c := range chains {
		if c.After == nil {
			continue
		}
		ra, ok := rank(c.After)
		if !ok {
			continue
		}
		for _, n := range c.Nodes {
			if rn, ok := rank(n); !ok || rn > ra {
				continue
			}
			var todo []*ir.Node
			for _, e := range c.Entries(n) {
				if !c.Forced[e] {
					todo = append(todo, e)
				}
			}
			return i, n, todo
		}
	}
	return -1, nil, nil
}
