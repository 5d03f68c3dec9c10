package order

import (
	"cmp"
	"container/heap"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// segments splits the scheduled nodes at their sequence points: nodes
// that every other node precedes or follows (each is an ancestor or a
// descendant). Every topological order runs the sequence points in file
// order and, between two of them, exactly the nodes that lie between them
// in the file, so the downset objective splits: each segment can be
// ordered on its own. It returns the end positions (exclusive) of the
// segments, in order; the last is len(p.nodes).
func (p *problem) segments() []int32 {
	m := int32(len(p.nodes))
	anc := make([]int32, m)  // ancestor counts
	desc := make([]int32, m) // descendant counts
	word := make([]uint64, m)
	// count adds, for each node, the positions of [lo, hi) that reach it
	// along adj (preds: its ancestors there; succs: its descendants),
	// visiting the nodes so that adj's ends come first.
	count := func(adj [][]int32, lo, hi int32, forward bool, out []int32) {
		clear(word)
		visit := func(v int32) {
			var w uint64
			for _, u := range adj[v] {
				w |= word[u]
				if u >= lo && u < hi {
					w |= 1 << (u - lo)
				}
			}
			word[v] = w
			out[v] += int32(bits.OnesCount64(w))
		}
		if forward {
			for v := lo; v < m; v++ {
				visit(v)
			}
		} else {
			for v := hi - 1; v >= 0; v-- {
				visit(v)
			}
		}
	}
	for lo := int32(0); lo < m; lo += 64 {
		hi := min(lo+64, m)
		count(p.preds, lo, hi, true, anc)
		count(p.succs, lo, hi, false, desc)
	}
	var ends []int32
	p.seqPoint = make([]bool, m)
	for v := int32(0); v < m; v++ {
		if anc[v] == v && desc[v] == m-1-v {
			p.seqPoint[v] = true
			ends = append(ends, v+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != m {
		ends = append(ends, m)
	}
	return ends
}

// window is one segment being ordered: positions [lo, hi), everything
// before lo done, live bytes allocated when it starts.
type window struct {
	p      *problem
	lo, hi int32
	live   int64
	nwords int
	zob    []uint64 // Zobrist keys of the positions
}

func (p *problem) window(lo, hi int32, live int64) *window {
	w := &window{p: p, lo: lo, hi: hi, live: live, nwords: int(hi-lo+63) / 64}
	rng := rand.New(rand.NewPCG(uint64(lo), uint64(hi)))
	w.zob = make([]uint64, hi-lo)
	for i := range w.zob {
		w.zob[i] = rng.Uint64()
	}
	return w
}

func (w *window) set(words []uint64) set { return set{base: w.lo, limit: w.hi, words: words} }

// ready returns the window's nodes not in s whose dependencies are all
// done, in file order.
func (w *window) ready(s *set, out []int32) []int32 {
	out = out[:0]
	for v := w.lo; v < w.hi; v++ {
		if !s.has(v) && w.p.depsDone(s, v) {
			out = append(out, v)
		}
	}
	return out
}

// depsDone reports whether every dependency of v is in s.
func (p *problem) depsDone(s *set, v int32) bool {
	for _, u := range p.preds[v] {
		if !s.has(u) {
			return false
		}
	}
	return true
}

// outcome is an order of one window and its peak under the downset
// objective (without the constant term).
type outcome struct {
	seq   []int32
	peak  int64
	live  int64 // bytes allocated after the window
	exact bool  // no order of the window has a lower peak
	// states is the number of search states the window used.
	states int
}

// beamState is one state of the beam search.
type beamState struct {
	words      []uint64
	hash       uint64
	ready      []int32
	peak, live int64
	trail      int32 // index into the trail of (parent, node) steps
}

// beam orders the window by a beam search over downsets: from each of
// the width best states of a depth (fewest bytes allocated, then least
// peak so far, then discovery order), every ready node is tried; states
// that reach the same downset keep the better path. Width 1 is the greedy
// list scheduler that runs the ready node that leaves the fewest bytes
// allocated. With no state ever cut, the result is exact. (Ranking by
// the bytes left rather than by the peak so far keeps states that have
// climbed a hill and come down, which the peak would rank last: on random
// branching graphs it came closer to the optimum.)
func (w *window) beam(width int) outcome {
	p := w.p
	type step struct{ parent, node int32 }
	var trail []step
	root := beamState{words: make([]uint64, w.nwords), live: w.live, trail: -1}
	rs := w.set(root.words)
	root.ready = w.ready(&rs, nil)
	layer := []beamState{root}
	cut := false
	states := 1
	n := int(w.hi - w.lo)
	for depth := 0; depth < n; depth++ {
		var next []beamState
		index := map[uint64][]int32{}
		for _, st := range layer {
			s := w.set(st.words)
			for _, v := range st.ready {
				during, after := p.step(&s, v, st.live)
				peak := max(st.peak, during)
				h := st.hash ^ w.zob[v-w.lo]
				dup := int32(-1)
				for _, k := range index[h] {
					if sameAfterAdd(next[k].words, st.words, v-w.lo) {
						dup = k
						break
					}
				}
				if dup >= 0 {
					if peak < next[dup].peak {
						trail = append(trail, step{st.trail, v})
						next[dup].peak = peak
						next[dup].trail = int32(len(trail) - 1)
					}
					continue
				}
				words := slices.Clone(st.words)
				i := v - w.lo
				words[i>>6] |= 1 << (i & 63)
				trail = append(trail, step{st.trail, v})
				next = append(next, beamState{words: words, hash: h, peak: peak, live: after, trail: int32(len(trail) - 1), ready: nil})
				index[h] = append(index[h], int32(len(next)-1))
				// Ready list of the child: the parent's without v, plus
				// v's successors whose dependencies are now done.
				c := &next[len(next)-1]
				cs := w.set(c.words)
				c.ready = make([]int32, 0, len(st.ready)+len(p.succs[v]))
				for _, u := range st.ready {
					if u != v {
						c.ready = append(c.ready, u)
					}
				}
				for _, u := range p.succs[v] {
					if u < w.hi && !cs.has(u) && !slices.Contains(c.ready, u) && p.depsDone(&cs, u) {
						c.ready = append(c.ready, u)
					}
				}
				slices.Sort(c.ready)
			}
		}
		states += len(next)
		if len(next) > width {
			cut = true
			idx := make([]int, len(next))
			for i := range idx {
				idx[i] = i
			}
			slices.SortStableFunc(idx, func(a, b int) int {
				x, y := &next[a], &next[b]
				switch {
				case x.live != y.live:
					return cmp.Compare(x.live, y.live)
				case x.peak != y.peak:
					return cmp.Compare(x.peak, y.peak)
				}
				return 0
			})
			kept := make([]beamState, width)
			for i := range kept {
				kept[i] = next[idx[i]]
			}
			next = kept
		}
		layer = next
	}
	best := layer[0]
	for _, st := range layer[1:] {
		if st.peak < best.peak {
			best = st
		}
	}
	seq := make([]int32, n)
	for k, i := best.trail, n-1; k >= 0; k, i = trail[k].parent, i-1 {
		seq[i] = trail[k].node
	}
	return outcome{seq: seq, peak: best.peak, live: best.live, exact: !cut, states: states}
}

// sameAfterAdd reports whether words equals parent with bit i added.
func sameAfterAdd(words, parent []uint64, i int32) bool {
	for k := range words {
		x := parent[k]
		if int32(k) == i>>6 {
			x |= 1 << (i & 63)
		}
		if words[k] != x {
			return false
		}
	}
	return true
}

// exactState is one downset of the best-first search.
type exactState struct {
	off        int32 // words at [off, off+nwords) of the search's store
	hash       uint64
	parent     int32
	node       int32
	depth      int32
	peak, live int64
	closed     bool
}

type exactQueue struct {
	st  []exactState
	idx []int32
	// key of each entry when pushed (lazy deletion: stale entries, whose
	// peak no longer matches, are skipped).
	peak []int64
}

func (q *exactQueue) Len() int { return len(q.idx) }
func (q *exactQueue) Less(i, j int) bool {
	a, b := &q.st[q.idx[i]], &q.st[q.idx[j]]
	if q.peak[i] != q.peak[j] {
		return q.peak[i] < q.peak[j]
	}
	if a.depth != b.depth {
		return a.depth > b.depth
	}
	if a.live != b.live {
		return a.live < b.live
	}
	return q.idx[i] < q.idx[j]
}
func (q *exactQueue) Swap(i, j int) {
	q.idx[i], q.idx[j] = q.idx[j], q.idx[i]
	q.peak[i], q.peak[j] = q.peak[j], q.peak[i]
}
func (q *exactQueue) Push(x any) {
	e := x.([2]int64)
	q.idx = append(q.idx, int32(e[0]))
	q.peak = append(q.peak, e[1])
}
func (q *exactQueue) Pop() any {
	n := len(q.idx) - 1
	e := [2]int64{int64(q.idx[n]), q.peak[n]}
	q.idx, q.peak = q.idx[:n], q.peak[:n]
	return e
}

// exact searches the downsets of the window best first (the least peak
// so far first, then the deepest, then the fewest bytes allocated): the
// first complete downset it takes is a minimum-peak order, since a path's
// peak never falls as it grows (the bottleneck form of Dijkstra's
// algorithm). Each downset keeps only its least-peak path (a path to the
// same downset with a higher peak is dominated: what can follow depends
// only on the downset). Steps whose peak would reach ub are cut, so the
// search only looks for orders strictly better than a known one: when it
// runs out of states to expand, no such order exists. It gives up
// (ok=false) after maxStates states.
func (w *window) exact(ub int64, maxStates int) (out outcome, ok bool) {
	p := w.p
	n := int32(w.hi - w.lo)
	q := &exactQueue{}
	var store []uint64
	index := map[uint64][]int32{}
	add := func(words []uint64, hash uint64, parent, node, depth int32, peak, live int64) {
		off := int32(len(store))
		store = append(store, words...)
		q.st = append(q.st, exactState{off: off, hash: hash, parent: parent, node: node, depth: depth, peak: peak, live: live})
		k := int32(len(q.st) - 1)
		index[hash] = append(index[hash], k)
		heap.Push(q, [2]int64{int64(k), peak})
	}
	add(make([]uint64, w.nwords), 0, -1, -1, 0, 0, w.live)
	var ready []int32
	child := make([]uint64, w.nwords)
	for q.Len() > 0 {
		e := heap.Pop(q).([2]int64)
		k := int32(e[0])
		st := q.st[k]
		if st.closed || st.peak != e[1] {
			continue
		}
		q.st[k].closed = true
		if st.depth == n {
			seq := make([]int32, n)
			for j, i := k, n-1; q.st[j].node >= 0; j, i = q.st[j].parent, i-1 {
				seq[i] = q.st[j].node
			}
			return outcome{seq: seq, peak: st.peak, live: st.live, exact: true, states: len(q.st)}, true
		}
		words := store[st.off : st.off+int32(w.nwords)]
		s := w.set(words)
		ready = w.ready(&s, ready)
		for _, v := range ready {
			during, after := p.step(&s, v, st.live)
			peak := max(st.peak, during)
			if peak >= ub {
				continue
			}
			copy(child, words)
			i := v - w.lo
			child[i>>6] |= 1 << (i & 63)
			h := st.hash ^ w.zob[i]
			found := int32(-1)
			for _, j := range index[h] {
				if slices.Equal(store[q.st[j].off:q.st[j].off+int32(w.nwords)], child) {
					found = j
					break
				}
			}
			if found >= 0 {
				c := &q.st[found]
				if !c.closed && peak < c.peak {
					c.peak, c.parent, c.node = peak, k, v
					heap.Push(q, [2]int64{int64(found), peak})
				}
				continue
			}
			if len(q.st) >= maxStates {
				return outcome{states: len(q.st)}, false
			}
			add(child, h, k, v, st.depth+1, peak, after)
			// add may grow store: words must be re-sliced.
			words = store[st.off : st.off+int32(w.nwords)]
			s = w.set(words)
		}
	}
	// Nothing below ub: the caller's order is optimal.
	return outcome{exact: true, states: len(q.st)}, true
}

// isSequencePoint reports whether the node at position v precedes or
// follows every other node.
func (p *problem) isSequencePoint(v int32) bool {
	if p.seqPoint == nil {
		p.segments()
	}
	return p.seqPoint[v]
}

// components returns the weakly connected components of the nodes at
// positions [lo, hi) (edges among them only), each in file order, ordered
// by their first node.
func (p *problem) components(lo, hi int32) [][]int32 {
	parent := make([]int32, hi-lo)
	for i := range parent {
		parent[i] = int32(i)
	}
	var find func(int32) int32
	find = func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for v := lo; v < hi; v++ {
		for _, u := range p.preds[v] {
			if u >= lo && u < hi {
				a, b := find(u-lo), find(v-lo)
				if a != b {
					parent[max(a, b)] = min(a, b)
				}
			}
		}
	}
	index := map[int32]int{}
	var out [][]int32
	for v := lo; v < hi; v++ {
		r := find(v - lo)
		k, ok := index[r]
		if !ok {
			k = len(out)
			index[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], v)
	}
	return out
}

// floor is a lower bound on the peak of any order of the window: each
// node's step holds its workspace, its new outputs (an output that may be
// written in place excepted) and the buffers of everything it reads.
func (w *window) floor() int64 {
	p := w.p
	var most int64
	for v := w.lo; v < w.hi; v++ {
		b := p.ws[v]
		for k, o := range p.outs[v] {
			if !p.vview[o] && !(k == 0 && p.inplace[v] >= 0) {
				b += p.vbytes[o]
			}
		}
		var buf [8]int32
		seen := buf[:0]
		for _, x := range p.ins[v] {
			if c := p.vclass[x]; c >= 0 && !slices.Contains(seen, c) {
				seen = append(seen, c)
				b += p.cbytes[c]
			}
		}
		most = max(most, b)
	}
	return most
}

// segmentsFirst orders the window by runs along chains, in the manner of
// Liu's algorithm for trees (1987), which Kayaaslan et al. (2018) extend
// to series-parallel graphs: from the current set, each ready node starts
// a run that follows the node's only successor as long as that successor
// becomes ready; the run is cut where the bytes allocated after a step
// are lowest (its valley; the highest step before it is its hill). The
// run with the largest hill minus valley goes first, all of it; then the
// runs are formed again. Runs that free memory early and climb late wait
// for runs whose high point is best passed while little else is held.
func (w *window) segmentsFirst() outcome {
	p := w.p
	n := int(w.hi - w.lo)
	words := make([]uint64, w.nwords)
	s := w.set(words)
	live, peak := w.live, int64(0)
	seq := make([]int32, 0, n)
	var ready []int32
	type run struct {
		nodes      []int32
		hill, vall int64
		after      int64
	}
	for len(seq) < n {
		ready = w.ready(&s, ready)
		var best run
		found := false
		for _, v := range ready {
			var r run
			cur, l := v, live
			hill := int64(0)
			bestAfter, bestLen := int64(-1), 0
			var added []int32
			for {
				during, after := p.step(&s, cur, l)
				s.add(cur)
				added = append(added, cur)
				hill = max(hill, during)
				l = after
				if bestAfter < 0 || after < bestAfter {
					bestAfter, bestLen = after, len(added)
					r.hill = hill
				}
				if len(p.succs[cur]) != 1 {
					break
				}
				next := p.succs[cur][0]
				if next >= w.hi || s.has(next) || !p.depsDone(&s, next) {
					break
				}
				cur = next
			}
			for _, u := range added {
				i := u - w.lo
				words[i>>6] &^= 1 << (i & 63)
			}
			r.nodes = added[:bestLen]
			r.vall, r.after = bestAfter, bestAfter
			if !found || r.hill-r.vall > best.hill-best.vall {
				best, found = r, true
			}
		}
		for _, u := range best.nodes {
			during, after := p.step(&s, u, live)
			peak = max(peak, during)
			live = after
			s.add(u)
			seq = append(seq, u)
		}
	}
	return outcome{seq: seq, peak: peak, live: live}
}
