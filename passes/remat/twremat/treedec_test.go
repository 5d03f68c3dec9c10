package twremat

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// graphs are the problems the decomposition tests run on.
func graphs(t *testing.T) map[string]*remat.Problem {
	t.Helper()
	out := map[string]*remat.Problem{
		"chain-30":       solvertest.Chain(30),
		"linear-20":      solvertest.LinearNetwork(20),
		"kumar-figure-1": solvertest.KumarFigure1(),
	}
	for seed := range uint64(6) {
		out[fmt.Sprintf("random-%d", seed)] = solvertest.RandomDAG(seed, 40)
	}
	for _, c := range [][2]int{{100, 236}, {250, 944}} {
		p, err := synth.Layered(1, c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("layered-%d", c[0])] = p
	}
	for _, c := range solvertest.Corpus() {
		out["corpus-"+c.Name] = c.Problem
	}
	return out
}

// checkDecomposition checks the three properties of a tree decomposition
// (§2.2) and that T is a tree.
func checkDecomposition(t *testing.T, name string, deps [][]int32, d *decomposition) {
	t.Helper()
	n := len(deps)
	nb := len(d.bags)
	where := make([][]int32, n) // the bags holding each vertex
	for b, bag := range d.bags {
		if !slices.IsSorted(bag) {
			t.Fatalf("%s: bag %d is not sorted: %v", name, b, bag)
		}
		for _, v := range bag {
			where[v] = append(where[v], int32(b))
		}
	}
	for v := range n {
		if len(where[v]) == 0 {
			t.Errorf("%s: vertex %d is in no bag (property i)", name, v)
		}
	}
	for v, ds := range deps {
		for _, u := range ds {
			ok := false
			for _, b := range where[v] {
				if _, found := slices.BinarySearch(d.bags[b], u); found {
					ok = true
					break
				}
			}
			if !ok {
				t.Errorf("%s: no bag holds both ends of edge %d–%d (property ii)", name, u, v)
			}
		}
	}
	// T is a tree: nb−1 edges, connected.
	edges := 0
	for b, nbrs := range d.tree {
		for _, c := range nbrs {
			if !slices.Contains(d.tree[c], int32(b)) {
				t.Fatalf("%s: tree edge %d–%d is one-sided", name, b, c)
			}
			edges++
		}
	}
	if nb > 0 && edges/2 != nb-1 {
		t.Errorf("%s: T has %d edges for %d bags; a tree has %d", name, edges/2, nb, nb-1)
	}
	if nb > 0 && reach(d, 0, nil) != nb {
		t.Errorf("%s: T is not connected", name)
	}
	// Property iii: the bags holding v are connected in T.
	for v := range n {
		in := map[int32]bool{}
		for _, b := range where[v] {
			in[b] = true
		}
		if len(where[v]) > 0 && reach(d, where[v][0], in) != len(where[v]) {
			t.Errorf("%s: the bags holding vertex %d are not connected (property iii)", name, v)
		}
	}
}

// reach counts the bags reachable from b inside keep (all when nil).
func reach(d *decomposition, b int32, keep map[int32]bool) int {
	seen := map[int32]bool{b: true}
	queue := []int32{b}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, y := range d.tree[x] {
			if !seen[y] && (keep == nil || keep[y]) {
				seen[y] = true
				queue = append(queue, y)
			}
		}
	}
	return len(seen)
}

func TestDecompositionValid(t *testing.T) {
	for name, p := range graphs(t) {
		order, later, err := minFill(context.Background(), undirected(p.Deps))
		if err != nil {
			t.Fatal(err)
		}
		raw := fromOrder(order, later)
		checkDecomposition(t, name+" (elimination)", p.Deps, raw)
		d := raw.shrink()
		checkDecomposition(t, name+" (Lemma 1)", p.Deps, d)
		// Lemma 1: the same width and at most n bags; and, as its proof
		// says, no two adjacent bags of which one holds the other.
		if d.width() != raw.width() {
			t.Errorf("%s: shrinking changed the width from %d to %d", name, raw.width(), d.width())
		}
		if len(d.bags) > p.N() {
			t.Errorf("%s: %d bags for %d vertices after Lemma 1", name, len(d.bags), p.N())
		}
		for b, nbrs := range d.tree {
			for _, c := range nbrs {
				if subset(d.bags[b], d.bags[c]) {
					t.Errorf("%s: bag %d %v is inside its neighbour %d %v after Lemma 1", name, b, d.bags[b], c, d.bags[c])
				}
			}
		}
	}
}

// The widths min-fill reaches on graphs of known treewidth: a path and a
// tree 1, a cycle and Checkmate's linear training graph (a ladder) 2, a
// clique of k vertices k−1.
func TestMinFillKnownWidths(t *testing.T) {
	cycle := make([][]int32, 12)
	for i := 1; i < 12; i++ {
		cycle[i] = []int32{int32(i - 1)}
	}
	cycle[11] = []int32{0, 10}
	clique := make([][]int32, 7)
	for i := range clique {
		for j := range i {
			clique[i] = append(clique[i], int32(j))
		}
	}
	tree := make([][]int32, 31)
	for i := 1; i < 31; i++ {
		tree[i] = []int32{int32((i - 1) / 2)}
	}
	for _, c := range []struct {
		name  string
		deps  [][]int32
		width int
	}{
		{"path", solvertest.Chain(25).Deps, 1},
		{"binary tree", tree, 1},
		{"cycle", cycle, 2},
		{"linear network", solvertest.LinearNetwork(30).Deps, 2},
		{"clique", clique, 6},
	} {
		d, err := decompose(context.Background(), c.deps)
		if err != nil {
			t.Fatal(err)
		}
		if d.width() != c.width {
			t.Errorf("%s: width %d, want %d", c.name, d.width(), c.width)
		}
	}
}

// The incremental fill-in counts agree with a count from scratch after
// every elimination, and each step eliminates a vertex of least fill-in
// (ties: least degree, then least number).
func TestMinFillIncremental(t *testing.T) {
	for name, p := range graphs(t) {
		if p.N() > 120 {
			continue
		}
		adj := undirected(p.Deps)
		n := len(adj)
		e := &eliminator{adj: adj, fill: make([]int64, n), gone: make([]bool, n), mark: make([]uint32, n), seen: make([]uint32, n)}
		for v := range n {
			e.fill[v] = e.computeFill(int32(v))
		}
		for range n {
			best := int32(-1)
			for v := range int32(n) {
				if e.gone[v] {
					continue
				}
				if got := e.computeFill(v); got != e.fill[v] {
					t.Fatalf("%s: vertex %d: incremental fill-in %d, from scratch %d", name, v, e.fill[v], got)
				}
				if best < 0 || e.fill[v] < e.fill[best] || e.fill[v] == e.fill[best] && len(e.adj[v]) < len(e.adj[best]) {
					best = v
				}
			}
			e.eliminate(best)
		}
		// And minFill's heap picks the same order.
		order, _, err := minFill(context.Background(), undirected(p.Deps))
		if err != nil {
			t.Fatal(err)
		}
		ref := &eliminator{adj: undirected(p.Deps), fill: make([]int64, n), gone: make([]bool, n), mark: make([]uint32, n), seen: make([]uint32, n)}
		for v := range n {
			ref.fill[v] = ref.computeFill(int32(v))
		}
		for k, v := range order {
			for u := range int32(n) {
				if ref.gone[u] {
					continue
				}
				if ref.fill[u] < ref.fill[v] || ref.fill[u] == ref.fill[v] && (len(ref.adj[u]) < len(ref.adj[v]) || len(ref.adj[u]) == len(ref.adj[v]) && u < v) {
					t.Fatalf("%s: step %d eliminates %d (fill %d, degree %d), but %d has fill %d, degree %d", name, k, v, ref.fill[v], len(ref.adj[v]), u, ref.fill[u], len(ref.adj[u]))
				}
			}
			ref.eliminate(v)
		}
	}
}

// Lemma 3 and the hierarchy built on it: each component's parts have at
// most half its bags, so the depth is at most ⌊log₂ |X|⌋ + 1; every vertex
// is in exactly one separator; and no edge joins two parts of a component
// (the separator property Lemma 4's proof rests on: edges from a part go
// only into the part or into the separator).
func TestHierarchy(t *testing.T) {
	for name, p := range graphs(t) {
		pr, err := Prepare(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		h := pr.h
		for c, comp := range h.comps {
			for _, k := range comp.kids {
				if 2*h.comps[k].bags > comp.bags {
					t.Errorf("%s: component %d of %d bags has a part of %d", name, c, comp.bags, h.comps[k].bags)
				}
			}
		}
		if nb := pr.Bags(); nb > 0 && pr.Depth() > bits.Len(uint(nb)) {
			t.Errorf("%s: depth %d for %d bags; Lemma 3 gives at most %d", name, pr.Depth(), nb, bits.Len(uint(nb)))
		}
		count := make([]int, p.N())
		for c, comp := range h.comps {
			for _, x := range comp.sep {
				count[x]++
				if h.owner[x] != int32(c) {
					t.Errorf("%s: vertex %d is in the separator of %d but owned by %d", name, x, c, h.owner[x])
				}
			}
		}
		for x, k := range count {
			if k != 1 {
				t.Errorf("%s: vertex %d is in %d separators", name, x, k)
			}
		}
		for c := range h.comps {
			for v, ds := range p.Deps {
				for _, u := range ds {
					cv, cu := int32(c), int32(c)
					if !h.inside(cv, int32(v)) || !h.inside(cu, u) || h.owner[v] == int32(c) || h.owner[u] == int32(c) {
						continue
					}
					if kv, ku := h.kidOf(cv, int32(v)), h.kidOf(cu, u); kv != ku {
						t.Errorf("%s: edge %d–%d joins parts %d and %d of component %d", name, u, v, ku, kv, c)
					}
				}
			}
		}
	}
}

// The decomposition and hierarchy do not depend on anything but the
// problem.
func TestDecompositionDeterministic(t *testing.T) {
	p, err := synth.Layered(3, 250, 944)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Prepare(context.Background(), p)
	b, _ := Prepare(context.Background(), p)
	if !slices.EqualFunc(a.d.bags, b.d.bags, slices.Equal) || !slices.Equal(a.h.owner, b.h.owner) {
		t.Errorf("two decompositions of one problem differ")
	}
}
