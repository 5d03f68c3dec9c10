package remat

import "slices"

// Unviewed returns p without View, for a search whose evaluator follows
// buffers but not views (lns searches it, and judges its plans on p):
//
//   - the first part of each view has 0 bytes and no reuse key;
//   - every node that reads a view also reads the part whose buffer the
//     view shares (through views of views, the first part that is not a
//     view), right after the view in its read order, so that the part
//     stays resident, and its bytes counted, until the view's last
//     reader, as the view keeps its buffer allocated in p;
//   - an in-place write over a view is dropped (the view has no bytes to
//     write over);
//   - a view of a graph input or parameter (OutsideView) takes no bytes
//     and reads nothing more;
//   - a view that is a graph-output part stays an ordinary part with its
//     bytes: its last instance has a buffer of its own.
//
// Its plans are plans of p (it only adds reads). A plan's memory on it is
// p's, up to the order of the buffers' releases within a step, except
// where the plan frees a viewed part while a view of it stays resident
// and computes the part again: p then holds both buffers, the result
// one. Without View it is p.
func (p *Problem) Unviewed() *Problem {
	if p.View == nil {
		return p
	}
	n := p.N()
	q := *p
	q.View = nil
	isOut := map[Part]bool{}
	for _, r := range p.OutputPartList() {
		isOut[r] = true
	}
	// base[i] is the part whose buffer node i's first part shares, Node
	// −1 when it has a buffer of its own or is an outside view.
	base := make([]Part, n)
	viewed := false
	for i := range n {
		base[i] = Part{-1, -1}
		v := p.View[i]
		if v.Node == -1 || isOut[Part{int32(i), 0}] {
			continue
		}
		if !viewed {
			viewed = true
			q.Bytes = slices.Clone(p.Bytes)
			if p.Parts != nil {
				q.Parts = slices.Clone(p.Parts)
			}
			q.Reuse = slices.Clone(p.Reuse)
		}
		q.Bytes[i] -= p.PartBytes(i, 0)
		if p.NumParts(i) >= 2 {
			q.Parts[i] = slices.Clone(p.Parts[i])
			q.Parts[i][0] = 0
		}
		q.Reuse[i] = slices.Clone(p.Reuse[i])
		q.Reuse[i][0] = -1
		if v == OutsideView {
			continue
		}
		base[i] = v
		if v.Index == 0 && base[v.Node].Node >= 0 {
			base[i] = base[v.Node]
		}
	}
	if !viewed {
		return &q
	}
	refined := p.Parts != nil
	q.Deps = slices.Clone(p.Deps)
	if refined {
		q.Reads = make([][]Part, n)
		if p.Reads != nil {
			copy(q.Reads, p.Reads)
		}
	}
	if p.InPlace != nil {
		q.InPlace = slices.Clone(p.InPlace)
	}
	ownOrder := false // q.ReadOrder is a copy of p's
	for i := range n {
		var order, extra []Part
		p.ReadPartsInOrder(i, func(r Part) {
			order = append(order, r)
			if r.Index == 0 && base[r.Node].Node >= 0 {
				b := base[r.Node]
				order = append(order, b)
				extra = append(extra, b)
			}
		})
		if extra == nil {
			continue
		}
		if q.InPlace != nil && q.InPlace[i].Node >= 0 && base[q.InPlace[i].Node].Node >= 0 && q.InPlace[i].Index == 0 {
			q.InPlace[i] = Part{-1, -1}
		}
		// Repeats out, first occurrences kept.
		seen := map[Part]bool{}
		order = slices.DeleteFunc(order, func(r Part) bool {
			if seen[r] {
				return true
			}
			seen[r] = true
			return false
		})
		reads := sortParts(slices.Clone(order))
		deps := make([]int32, 0, len(reads))
		for _, r := range reads {
			if len(deps) == 0 || deps[len(deps)-1] != r.Node {
				deps = append(deps, r.Node)
			}
		}
		q.Deps[i] = deps
		if refined {
			q.Reads[i] = reads
		}
		switch {
		case p.Reuse != nil && !slices.Equal(order, reads):
			if !ownOrder {
				q.ReadOrder, ownOrder = make([][]Part, n), true
				copy(q.ReadOrder, p.ReadOrder)
			}
			q.ReadOrder[i] = order
		case q.ReadOrder != nil && q.ReadOrder[i] != nil:
			if !ownOrder {
				q.ReadOrder, ownOrder = slices.Clone(p.ReadOrder), true
			}
			q.ReadOrder[i] = nil
		}
	}
	return &q
}
