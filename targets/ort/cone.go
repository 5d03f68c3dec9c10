package ort

import (
	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
)

// A training graph's loss gradient starts from a constant (a sum loss's
// seed of ones), so its first backward nodes read parameters alone: the
// constant cone. ONNX Runtime folds the cone into initializers from level
// "basic" up; at level "disabled" it runs it where its depth-first search
// first reaches each node, and an order constraint cannot hold a cone node
// back without stopping the folding (onnxexp.CanForceOrder). On FCN8's
// training graph the cone holds two 324 KB values (the seed padded to the
// upscore layer's size, and its transpose) and a 4 KB data gradient that
// reads the first: ORT ran a recompute chain before the cone and the data
// gradient after it, so both large values and the chain's outputs were
// live together, 29 to 146 KB above the plan's peak (session 14's
// measurements in the closing note).
//
// coneOrder pulls the cone's wide nodes (those that read a cone value of
// at least minEagerGain bytes) into the plan's place with dependencies
// that leave the cone foldable:
//
//   - each node outside the cone that the plan runs after a wide node and
//     ORT runs before it waits for it (not for a wide node that another
//     it waits for depends on), and then for the node the plan runs just
//     before it. That last dependency is written last, so its helper
//     nodes get the highest index: ORT's search, which enters a node's
//     highest-index input first, finishes the forward pass before it
//     enters the cone. In the other order it entered the cone first and
//     ran it ahead of the forward pass (FCN8: 1,215,232 B);
//   - a wide node that ORT runs before the wide node the plan runs just
//     before it waits for that one. A dependency between cone nodes keeps
//     them foldable. A dependency of a cone node on a node outside it does
//     not: on FCN8 it moved the whole cone into the plan's order, but ORT
//     then ran the cone at level "all" too, and the parameter gradients
//     were no longer bitwise identical there.
//
// The rules look at ORT's order without constraints; what ORT does with
// them is for forceOrder to simulate, and it keeps them only where they
// lower the predicted peak. On FCN8's 930 KiB plan they take the written
// model from 1,039,872 B to 967,168 B (measured 967,168, outputs bitwise
// identical at levels disabled and all), against the plan's 951,808.

// coneOrder returns the order constraints above for g in plan order,
// given seq, the order ORT runs g in without them; nil when ORT runs every
// wide node no later than the plan needs it.
func coneOrder(g *ir.Graph, seq []*ir.Node) []remat.OrderConstraint {
	cone := remat.ConstantFoldable(g)
	pos := make(map[*ir.Node]int, len(seq))
	for i, n := range seq {
		pos[n] = i
	}
	inCone := func(n *ir.Node) bool { return n != nil && cone[n] && !isConstant(n) }
	producers := func(n *ir.Node) []*ir.Node {
		var out []*ir.Node
		for _, v := range n.AllInputs() {
			if v != nil && v.Def != nil && v.Def.Graph == g {
				out = append(out, v.Def)
			}
		}
		return out
	}
	wide := map[*ir.Node]bool{}
	for _, n := range g.Nodes {
		if !inCone(n) {
			continue
		}
		for _, v := range n.AllInputs() {
			if v == nil || !inCone(v.Def) {
				continue
			}
			if b, ok := v.Type.Bytes(); ok && b >= minEagerGain {
				wide[n] = true
			}
		}
	}
	if len(wide) == 0 {
		return nil
	}
	// after[n]: the wide nodes n runs after in any order (its ancestors,
	// and those its constraints add).
	after := map[*ir.Node]map[*ir.Node]bool{}
	var pulls []remat.OrderConstraint
	var seen []*ir.Node // the wide nodes so far, in plan order
	var last *ir.Node   // the last node so far that ORT runs
	for _, n := range g.Nodes {
		a := map[*ir.Node]bool{}
		for _, p := range producers(n) {
			for w := range after[p] {
				a[w] = true
			}
			if wide[p] {
				a[p] = true
			}
		}
		after[n] = a
		_, runs := pos[n]
		switch {
		case isConstant(n) || !runs:
		case inCone(n):
			if !wide[n] {
				break
			}
			if k := len(seen); k > 0 && !a[seen[k-1]] && pos[n] < pos[seen[k-1]] && onnxexp.CanWait(n) {
				pulls = append(pulls, remat.OrderConstraint{Node: n, After: seen[k-1]})
				a[seen[k-1]] = true
			}
			seen = append(seen, n)
		default:
			prev := last
			last = n
			if !onnxexp.CanForceOrder(n) {
				break
			}
			// The wide nodes ORT runs after n, less those another of
			// them depends on.
			var late []*ir.Node
			inner := map[*ir.Node]bool{}
			for _, w := range seen {
				if !a[w] && pos[w] > pos[n] {
					late = append(late, w)
					for x := range after[w] {
						inner[x] = true
					}
				}
			}
			k := len(pulls)
			for _, w := range late {
				if !inner[w] {
					pulls = append(pulls, remat.OrderConstraint{Node: n, After: w})
				}
				a[w] = true
			}
			if len(pulls) > k && prev != nil {
				// Last, so that its helpers get the highest index and
				// ORT's search finishes prev's ancestors (the forward
				// pass) before it enters the cone: the node before n.
				pulls = append(pulls, remat.OrderConstraint{Node: n, After: prev})
			}
		}
	}
	if len(pulls) == 0 {
		return nil
	}
	return pulls
}
