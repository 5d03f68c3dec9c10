package twremat

import "slices"

// hierarchy.go fixes the recursion of Algorithm 1 in advance: the
// balanced separator of every sub-decomposition it will recurse into
// (Lemma 3), memoized as Theorem 5's proof asks, so that the many calls on
// one component find its separator once.

// component is one tree decomposition (X', T') that Algorithm 1 recurses
// into: a connected set of bags of the shrunk decomposition, with the
// vertices of every enclosing separator removed from them.
type component struct {
	// bags is |X'|, the number of bags; TWRemat(k) stops recursing below
	// k bags (§4.3). Bags emptied by the removal of enclosing separators
	// still count, as they do in Algorithm 1's copy of (X, T).
	bags int32
	// sep lists the vertices of the balanced separator X* that no
	// enclosing separator holds, sorted (the problem's index order is a
	// topological order).
	sep []int32
	// kids are the components of (X', T') without X*, in preorder.
	kids []int32
	// last is the preorder number of the last component inside this one:
	// the components inside c are c … last.
	last int32
}

// hierarchy is the tree of components, in preorder (component 0 is the
// whole decomposition), and for each vertex the component whose
// separator holds it.
type hierarchy struct {
	comps []component
	owner []int32
}

// inside reports whether vertex x belongs to component c's vertex set V'
// (the vertices of its bags not removed by an enclosing separator): x is
// removed by the separator of owner[x], which lies inside c.
func (h *hierarchy) inside(c, x int32) bool {
	o := h.owner[x]
	return c <= o && o <= h.comps[c].last
}

// kidOf returns the child of c whose vertex set holds x, which must lie
// inside c but not in c's separator.
func (h *hierarchy) kidOf(c, x int32) int32 {
	o := h.owner[x]
	kids := h.comps[c].kids
	lo, hi := 0, len(kids)-1 // the last kid starting at or before o
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if kids[mid] <= o {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return kids[lo]
}

// hierarchyBuilder holds the scratch space of buildHierarchy.
type hierarchyBuilder struct {
	d      *decomposition
	h      *hierarchy
	mark   []uint32 // mark[b] == stamp: bag b is in the current component
	stamp  uint32
	parent []int32
	size   []int32
}

// buildHierarchy computes the balanced separators of every component
// Algorithm 1 can reach, from the whole decomposition down to single
// bags. Lemma 3 halves the bags at each level, so the depth is at most
// ⌊log₂ |X|⌋ + 1 (Theorem 5's O(log n) levels, with Lemma 1's |X| ≤ n).
func buildHierarchy(d *decomposition, n int) *hierarchy {
	h := &hierarchy{owner: make([]int32, n)}
	for i := range h.owner {
		h.owner[i] = -1
	}
	if len(d.bags) == 0 {
		return h
	}
	b := &hierarchyBuilder{
		d: d, h: h,
		mark:   make([]uint32, len(d.bags)),
		parent: make([]int32, len(d.bags)),
		size:   make([]int32, len(d.bags)),
	}
	all := make([]int32, len(d.bags))
	for i := range all {
		all[i] = int32(i)
	}
	b.build(all)
	return h
}

func (b *hierarchyBuilder) build(bags []int32) int32 {
	h := b.h
	c := int32(len(h.comps))
	h.comps = append(h.comps, component{bags: int32(len(bags))})
	sep, kids := b.split(bags)
	var own []int32
	for _, x := range b.d.bags[sep] {
		if h.owner[x] < 0 {
			h.owner[x] = c
			own = append(own, x)
		}
	}
	h.comps[c].sep = own
	for _, k := range kids {
		h.comps[c].kids = append(h.comps[c].kids, b.build(k))
	}
	h.comps[c].last = int32(len(h.comps) - 1)
	return c
}

func (b *hierarchyBuilder) newStamp() uint32 {
	b.stamp++
	if b.stamp == 0 { // wrapped: clear, so old marks cannot match
		clear(b.mark)
		b.stamp = 1
	}
	return b.stamp
}

// split finds a balanced separator of the connected bags (Lemma 3: the
// centroid of Jordan's Theorem 2, the first in breadth-first order from
// the first bag whose removal leaves no part of more than half the bags)
// and returns it with the parts that removing it leaves, each sorted, in
// the order of the separator's neighbours.
func (b *hierarchyBuilder) split(bags []int32) (int32, [][]int32) {
	s := b.newStamp()
	for _, x := range bags {
		b.mark[x] = s
	}
	tree := b.d.tree
	// Breadth-first order, parents and subtree sizes.
	order := []int32{bags[0]}
	b.parent[bags[0]] = -1
	for q := 0; q < len(order); q++ {
		x := order[q]
		for _, y := range tree[x] {
			if b.mark[y] == s && y != b.parent[x] {
				b.parent[y] = x
				order = append(order, y)
			}
		}
	}
	for _, x := range order {
		b.size[x] = 1
	}
	for q := len(order) - 1; q > 0; q-- {
		x := order[q]
		b.size[b.parent[x]] += b.size[x]
	}
	total := int32(len(order))
	sep := order[0]
	for _, x := range order {
		worst := total - b.size[x]
		for _, y := range tree[x] {
			if b.mark[y] == s && y != b.parent[x] {
				worst = max(worst, b.size[y])
			}
		}
		if 2*worst <= total {
			sep = x
			break
		}
	}
	// The parts: what each neighbour of the separator reaches without it.
	done := b.newStamp()
	b.mark[sep] = done
	var parts [][]int32
	for _, y := range tree[sep] {
		if b.mark[y] != s {
			continue
		}
		part := []int32{y}
		b.mark[y] = done
		for q := 0; q < len(part); q++ {
			for _, z := range tree[part[q]] {
				if b.mark[z] == s {
					b.mark[z] = done
					part = append(part, z)
				}
			}
		}
		slices.Sort(part)
		parts = append(parts, part)
	}
	return sep, parts
}
