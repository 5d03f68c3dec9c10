package ort

import (
	"cmp"
	"slices"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

// ONNX Runtime's depth-first order runs a node only when the search
// reaches it from a reader, so a node that shrinks a large value (a 1×1
// convolution that reads a high-resolution feature map and writes a few
// channels, as the lateral branches of a feature pyramid do) can run long
// after its input was otherwise done with: the large value stays live
// across everything in between. An eager constraint runs such a node as
// soon as the last other reader of the value it frees has run: the node
// ORT would run next waits for it (an order constraint, exporters/onnx
// Options.Order). Across the span the live bytes drop by what the node
// frees less what it writes.

// minEagerGain is the least number of bytes an eager constraint must free
// across its span: smaller moves are not worth a dependency.
const minEagerGain = 64 << 10

// EagerConstraints returns the eager order constraints for g written with
// opts (see above): one per node n that frees more bytes than it writes
// (by at least minEagerGain) and that ORT runs more than one step after
// the point where every input of n is available and every other reader of
// the inputs n frees has run, largest gain first. The node ORT runs right
// after that point waits for n; one that cannot be held back
// (onnxexp.CanForceOrder), or that n depends on through the constraints
// before it, passes the wait on to the next. A convolution whose output
// an Add sums with another convolution's is not moved (sumFusionRisk).
// opts.Order, when set, is kept and extended. The constraints lower the
// live bytes; whether they lower the peak under ORT's arena is for the
// caller to measure (eagerOptions does).
func EagerConstraints(g *ir.Graph, opts onnxexp.Options) ([]remat.OrderConstraint, error) {
	r, err := Schedule(g, opts)
	if err != nil {
		return nil, err
	}
	seq := r.Seq
	pos := make(map[*ir.Node]int, len(seq))
	for i, n := range seq {
		pos[n] = i
	}
	cons := slices.Clone(opts.Order)
	held := map[*ir.Node]bool{} // nodes already made to wait
	for _, c := range cons {
		held[c.Node] = true
	}
	type move struct {
		n     *ir.Node
		at, i int
		gain  int64
	}
	var moves []move
	for i, n := range seq {
		if isConstant(n) || n.Graph != g {
			continue
		}
		var written int64
		for _, o := range n.Outputs {
			if o != nil {
				b, _ := o.Type.Bytes()
				written += b
			}
		}
		// ready: every input is available; free: every other reader of
		// an input whose last reader n is has run.
		ready, free := -1, -1
		var freed int64
		seen := map[*ir.Value]bool{}
		for _, v := range n.AllInputs() {
			if v == nil || seen[v] || v.Def == nil || isConstant(v.Def) {
				continue
			}
			seen[v] = true
			p, ok := pos[v.Def]
			if !ok {
				ready = len(seq) // an input of another graph: leave n alone
				break
			}
			ready = max(ready, p)
			last, other := -1, -1
			for _, u := range v.Uses {
				q, ok := pos[u.Node]
				if !ok {
					last = len(seq)
					break
				}
				last = max(last, q)
				if u.Node != n {
					other = max(other, q)
				}
			}
			if last == i && !slices.Contains(g.Outputs, v) && !aliased(v) {
				b, _ := v.Type.Bytes()
				freed += b
				free = max(free, other)
			}
		}
		at := max(ready, free)
		if ready >= len(seq) || freed-written < minEagerGain || at+1 >= i || sumFusionRisk(n) {
			continue
		}
		moves = append(moves, move{n, at, i, freed - written})
	}
	// The largest gains first; a move whose wait would close a cycle
	// with the constraints before it is left out.
	slices.SortStableFunc(moves, func(a, b move) int { return cmp.Compare(b.gain, a.gain) })
	for _, m := range moves {
		for j := m.at + 1; j < m.i; j++ {
			s := seq[j]
			if isConstant(s) || held[s] || !onnxexp.CanForceOrder(s) || dependsOn(m.n, s, cons) {
				continue
			}
			cons = append(cons, remat.OrderConstraint{Node: s, After: m.n})
			held[s] = true
			break
		}
	}
	return cons, nil
}

// dependsOn reports whether n needs s to have run first: through the
// values n reads, directly or through their producers, or through the
// order constraints cons (a node waits for its constraint's After).
func dependsOn(n, s *ir.Node, cons []remat.OrderConstraint) bool {
	waits := map[*ir.Node][]*ir.Node{}
	for _, c := range cons {
		waits[c.Node] = append(waits[c.Node], c.After)
	}
	seen := map[*ir.Node]bool{n: true}
	stack := []*ir.Node{n}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == s {
			return true
		}
		preds := waits[x]
		for _, v := range x.AllInputs() {
			if v != nil && v.Def != nil && v.Def.Graph == n.Graph {
				preds = append(preds, v.Def)
			}
		}
		for _, p := range preds {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false
}

// sumFusionRisk reports whether moving n could change ONNX Runtime's
// arithmetic at its higher optimization levels: n is a convolution whose
// output an Add also reads with another convolution's output. ORT fuses
// such an Add into one of the two convolutions (the other's output is
// summed into the fused convolution's accumulator), and which one depends
// can follow the order of the two in the graph ORT optimizes: in ONNX
// Runtime 1.30, moving one of them ahead of the other changed the sums in
// the last bit at level all (passes/tile TestEagerConstraintsInORT).
func sumFusionRisk(n *ir.Node) bool {
	if !convLike(n) {
		return false
	}
	for _, o := range n.Outputs {
		if o == nil {
			continue
		}
		for _, u := range o.Uses {
			if u.Node.Op != "Add" && u.Node.Op != "Sum" {
				continue
			}
			for _, v := range u.Node.Inputs {
				if v != nil && v != o && v.Def != nil && convLike(v.Def) {
					return true
				}
			}
		}
	}
	return false
}

func convLike(n *ir.Node) bool {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return false
	}
	switch n.Op {
	case "Conv", "ConvTranspose", "FusedConv":
		return true
	}
	return false
}

// aliased reports whether v is a view of another value (its producer
// writes no buffer of its own): freeing it frees nothing by itself.
func aliased(v *ir.Value) bool {
	info := v.Def.Info()
	return info != nil && info.Flags&ir.Alias != 0
}

// eagerOptions returns opts with those of g's eager constraints
// (EagerConstraints) added that lower its predicted peak: each in turn,
// largest gain first, kept when the peak with it and the ones kept before
// is lower than without it. The gain a constraint promises is in live
// bytes; under ORT's arena the moved frees and allocations can also land
// in other chunks (a freed buffer coalesced elsewhere, a large value in a
// fresh region), so each is measured. Order constraints need a rewrite to
// be written with: an empty one over g when opts has none.
//
// unforced is g's predicted peak with opts as given.
func eagerOptions(g *ir.Graph, opts onnxexp.Options) (out onnxexp.Options, unforced int64, err error) {
	unforced, err = Peak(g, opts)
	if err != nil || NeedsLowering(g) {
		return opts, unforced, err
	}
	best := unforced
	cons, err := EagerConstraints(g, opts)
	if err != nil {
		return opts, unforced, err
	}
	out = opts
	for _, c := range cons[len(opts.Order):] {
		try := out
		try.Order = append(slices.Clone(out.Order), c)
		if try.Remat == nil {
			try.Remat = &remat.RewriteResult{Graph: g}
		}
		peak, err := Peak(g, try)
		if err != nil {
			return opts, unforced, err
		}
		if peak < best {
			out, best = try, peak
		}
	}
	return out, unforced, nil
}

// PlaceTiled is Place for a graph written without a rewrite (a tiled
// graph), with the eager constraints that lower ORT's predicted peak
// (eagerOptions). Its UnforcedPeakBytes is the peak without them; there
// is no plan order (PlanOrderPeakBytes 0): g's own order is not one.
func (t Target) PlaceTiled(g *ir.Graph) (*targets.Placement, error) {
	opts, unforced, err := eagerOptions(g, sinksLast(g, t.exportOptions(nil)))
	if err != nil {
		return nil, err
	}
	pl, err := placement(g, opts, nil, true)
	if err != nil {
		return nil, err
	}
	pl.UnforcedPeakBytes = unforced
	return pl, nil
}
