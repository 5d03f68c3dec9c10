package twremat

// treedec.go builds the tree decomposition that Algorithm 1 divides on:
// a minimum fill-in elimination ordering of the undirected graph of the
// DAG (the heuristic Kumar et al. §4 name, their ref. [3]), its bags, and
// Lemma 1's shrinking to at most n bags.

import (
	"container/heap"
	"context"
	"slices"
)

// decomposition is a tree decomposition (X, T) of the undirected graph of
// a problem (§2.2): bags[b] lists the vertices of bag b, sorted, and
// tree[b] the bags adjacent to b in T, sorted. Every vertex lies in some
// bag, both ends of every edge lie together in some bag, and the bags
// holding any one vertex form a connected subtree of T.
type decomposition struct {
	bags [][]int32
	tree [][]int32
}

// width is the largest bag size minus one (§2.2), −1 for no bags.
func (d *decomposition) width() int {
	w := -1
	for _, b := range d.bags {
		w = max(w, len(b)-1)
	}
	return w
}

// undirected returns the undirected graph of the DAG: the neighbours of
// each vertex, sorted, without repeats (edge directions forgotten, §2.2).
func undirected(deps [][]int32) [][]int32 {
	n := len(deps)
	adj := make([][]int32, n)
	for v, ds := range deps {
		for _, u := range ds {
			adj[v] = append(adj[v], u)
			adj[u] = append(adj[u], int32(v))
		}
	}
	for v := range adj {
		slices.Sort(adj[v])
		adj[v] = slices.Compact(adj[v])
	}
	return adj
}

// eliminator runs the minimum fill-in heuristic: it repeatedly eliminates
// the vertex whose neighbours lack the fewest edges among themselves (the
// fill-in; ties go to the smaller degree, then the smaller vertex),
// joining those neighbours into a clique. The fill-in of every vertex is
// kept exact incrementally as edges are added and vertices removed, so a
// step costs time in the size of its neighbourhood, not of the graph.
type eliminator struct {
	adj   [][]int32 // current neighbours, sorted
	fill  []int64   // fill-in of each remaining vertex
	gone  []bool
	mark  []uint32 // mark[x] == stamp: x is in the set being tested
	stamp uint32
	// touched collects the vertices whose fill-in or degree changed in
	// the current step, to requeue them.
	touched []int32
	seen    []uint32
	seenAt  uint32
	queue   fillHeap
}

// newStamp starts a new marked set.
func (e *eliminator) newStamp() uint32 {
	e.stamp++
	if e.stamp == 0 { // wrapped: clear, so old marks cannot match
		clear(e.mark)
		e.stamp = 1
	}
	return e.stamp
}

func (e *eliminator) markAll(list []int32) uint32 {
	s := e.newStamp()
	for _, x := range list {
		e.mark[x] = s
	}
	return s
}

func (e *eliminator) touch(v int32) {
	if e.seen[v] != e.seenAt {
		e.seen[v] = e.seenAt
		e.touched = append(e.touched, v)
	}
}

// adjacent reports whether a and b are neighbours.
func (e *eliminator) adjacent(a, b int32) bool {
	_, ok := slices.BinarySearch(e.adj[a], b)
	return ok
}

// addEdge adds the fill edge {a, b} and updates the fill-in of a, b and
// their common neighbours.
func (e *eliminator) addEdge(a, b int32) {
	// Every common neighbour w had {a, b} as a missing pair in N(w).
	s := e.markAll(e.adj[b])
	var newA int64 // neighbours of a not adjacent to b: new missing pairs in N(a)
	for _, w := range e.adj[a] {
		if e.mark[w] == s {
			e.fill[w]--
			e.touch(w)
		} else {
			newA++
		}
	}
	s = e.markAll(e.adj[a])
	var newB int64
	for _, x := range e.adj[b] {
		if e.mark[x] != s {
			newB++
		}
	}
	e.fill[a] += newA
	e.fill[b] += newB
	e.adj[a] = insertSorted(e.adj[a], b)
	e.adj[b] = insertSorted(e.adj[b], a)
	e.touch(a)
	e.touch(b)
}

// eliminate removes v after making its neighbourhood a clique, and
// returns that neighbourhood (sorted).
func (e *eliminator) eliminate(v int32) []int32 {
	e.seenAt++
	e.touched = e.touched[:0]
	nb := slices.Clone(e.adj[v])
	for i, a := range nb {
		for _, b := range nb[i+1:] {
			if !e.adjacent(a, b) {
				e.addEdge(a, b)
			}
		}
	}
	// N(v) is a clique now: in N(u), for u a neighbour, the missing pairs
	// {v, x} are exactly those with x outside N[v].
	s := e.markAll(nb)
	for _, u := range nb {
		var lost int64
		for _, x := range e.adj[u] {
			if x != v && e.mark[x] != s {
				lost++
			}
		}
		e.fill[u] -= lost
		e.adj[u] = removeSorted(e.adj[u], v)
		e.touch(u)
	}
	e.adj[v] = nil
	e.gone[v] = true
	for _, w := range e.touched {
		if !e.gone[w] {
			heap.Push(&e.queue, fillEntry{e.fill[w], int32(len(e.adj[w])), w})
		}
	}
	return nb
}

// computeFill is the fill-in of v from scratch: the pairs of neighbours
// that are not adjacent.
func (e *eliminator) computeFill(v int32) int64 {
	nb := e.adj[v]
	s := e.markAll(nb)
	var inside int64 // twice the edges among the neighbours
	for _, u := range nb {
		for _, x := range e.adj[u] {
			if e.mark[x] == s {
				inside++
			}
		}
	}
	d := int64(len(nb))
	return d*(d-1)/2 - inside/2
}

// minFill eliminates every vertex of the graph adj (which it takes over)
// in minimum fill-in order and returns the order and, for each vertex,
// its neighbours when it was eliminated (its later neighbours in the
// chordal completion). It stops with ctx's error when ctx is done.
func minFill(ctx context.Context, adj [][]int32) (order []int32, later [][]int32, err error) {
	n := len(adj)
	e := &eliminator{
		adj:  adj,
		fill: make([]int64, n),
		gone: make([]bool, n),
		mark: make([]uint32, n),
		seen: make([]uint32, n),
	}
	for v := range n {
		e.fill[v] = e.computeFill(int32(v))
		e.queue = append(e.queue, fillEntry{e.fill[v], int32(len(adj[v])), int32(v)})
	}
	heap.Init(&e.queue)
	later = make([][]int32, n)
	for len(order) < n {
		top := heap.Pop(&e.queue).(fillEntry)
		v := top.v
		if e.gone[v] || top.fill != e.fill[v] || top.deg != int32(len(e.adj[v])) {
			continue // stale: the vertex was requeued with its new key
		}
		order = append(order, v)
		later[v] = e.eliminate(v)
		if len(order)&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
	}
	return order, later, nil
}

// fillEntry is a queued key of the elimination order.
type fillEntry struct {
	fill int64
	deg  int32
	v    int32
}

type fillHeap []fillEntry

func (h fillHeap) Len() int { return len(h) }
func (h fillHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.fill != b.fill {
		return a.fill < b.fill
	}
	if a.deg != b.deg {
		return a.deg < b.deg
	}
	return a.v < b.v
}
func (h fillHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fillHeap) Push(x any)   { *h = append(*h, x.(fillEntry)) }
func (h *fillHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func insertSorted(s []int32, x int32) []int32 {
	i, found := slices.BinarySearch(s, x)
	if found {
		return s
	}
	return slices.Insert(s, i, x)
}

func removeSorted(s []int32, x int32) []int32 {
	if i, found := slices.BinarySearch(s, x); found {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// fromOrder is the tree decomposition of an elimination order: vertex v's
// bag is v with its neighbours at elimination, and its parent bag that of
// the neighbour eliminated first after v. Vertices eliminated with no
// neighbours (one per connected component) are roots; the roots are
// joined into one tree under the first, which keeps the decomposition
// valid since bags of different components share no vertex. Bag b is the
// bag of vertex b.
func fromOrder(order []int32, later [][]int32) *decomposition {
	n := len(order)
	pos := make([]int32, n)
	for k, v := range order {
		pos[v] = int32(k)
	}
	d := &decomposition{bags: make([][]int32, n), tree: make([][]int32, n)}
	root := int32(-1)
	for _, v := range order {
		bag := append([]int32{v}, later[v]...)
		slices.Sort(bag)
		d.bags[v] = bag
		parent := int32(-1)
		for _, w := range later[v] {
			if parent < 0 || pos[w] < pos[parent] {
				parent = w
			}
		}
		if parent < 0 {
			if root < 0 {
				root = v
				continue
			}
			parent = root
		}
		d.tree[v] = append(d.tree[v], parent)
		d.tree[parent] = append(d.tree[parent], v)
	}
	for b := range d.tree {
		slices.Sort(d.tree[b])
	}
	return d
}

// subset reports whether sorted a is a subset of sorted b.
func subset(a, b []int32) bool {
	if len(a) > len(b) {
		return false
	}
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
		j++
	}
	return true
}

// shrink is Lemma 1: it merges every pair of adjacent bags one of which
// contains the other, in a single pass over the edges of T with a
// union-find over the bags (a pair that cannot be merged when its edge is
// visited never can be, by the proof of Lemma 1). The result has the same
// width and at most n bags. The merged bags are numbered in the order of
// the original bag that represents each (deterministic).
func (d *decomposition) shrink() *decomposition {
	nb := len(d.bags)
	uf := make([]int32, nb)
	for i := range uf {
		uf[i] = int32(i)
	}
	find := func(x int32) int32 {
		for uf[x] != x {
			uf[x] = uf[uf[x]]
			x = uf[x]
		}
		return x
	}
	bag := slices.Clone(d.bags) // the bag of each union-find root
	for a := range nb {
		for _, b := range d.tree[a] {
			if b < int32(a) {
				continue // each edge once
			}
			ra, rb := find(int32(a)), find(b)
			if ra == rb {
				continue
			}
			switch {
			case subset(bag[ra], bag[rb]):
				uf[ra] = rb
			case subset(bag[rb], bag[ra]):
				uf[rb] = ra
			}
		}
	}
	id := make([]int32, nb) // new number of each root
	out := &decomposition{}
	for a := range nb {
		if r := find(int32(a)); r == int32(a) {
			id[a] = int32(len(out.bags))
			out.bags = append(out.bags, bag[a])
		}
	}
	out.tree = make([][]int32, len(out.bags))
	for a := range nb {
		for _, b := range d.tree[a] {
			ra, rb := id[find(int32(a))], id[find(b)]
			if ra != rb {
				out.tree[ra] = append(out.tree[ra], rb)
			}
		}
	}
	for b := range out.tree {
		slices.Sort(out.tree[b])
		out.tree[b] = slices.Compact(out.tree[b])
	}
	return out
}

// decompose is the tree decomposition Algorithm 1 starts from: minimum
// fill-in elimination on the undirected graph of deps, shrunk by Lemma 1.
func decompose(ctx context.Context, deps [][]int32) (*decomposition, error) {
	order, later, err := minFill(ctx, undirected(deps))
	if err != nil {
		return nil, err
	}
	return fromOrder(order, later).shrink(), nil
}
