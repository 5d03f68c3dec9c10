package remat

import "github.com/remat-compile/remat/ir"

// ChainEntries returns the entry nodes of a recompute chain that n
// depends on within the chain, in chain order: nodes of the chain (nodes,
// in order; in marks them) that read nothing the chain computes, which an
// exporter holds back to hold n back (n itself when it is an entry).
func ChainEntries(nodes []*ir.Node, in map[*ir.Node]bool, n *ir.Node) []*ir.Node {
	need := map[*ir.Node]bool{}
	var walk func(*ir.Node)
	walk = func(x *ir.Node) {
		if need[x] {
			return
		}
		need[x] = true
		for _, v := range x.AllInputs() {
			if v != nil && v.Def != nil && in[v.Def] {
				walk(v.Def)
			}
		}
	}
	walk(n)
	var out []*ir.Node
	for _, x := range nodes {
		if need[x] && IsChainEntry(in, x) {
			out = append(out, x)
		}
	}
	return out
}

// IsChainEntry reports whether n reads nothing that the chain whose nodes
// in marks computes.
func IsChainEntry(in map[*ir.Node]bool, n *ir.Node) bool {
	for _, v := range n.AllInputs() {
		if v != nil && v.Def != nil && in[v.Def] {
			return false
		}
	}
	return true
}
