package arena

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/shapes"
)

// TestGreedyIsBeatenByTheSearch is an instance where placing the largest
// buffer first is not optimal, checked by hand. Sizes are in units of 64
// bytes, lifetimes are steps:
//
//	A: 2 units, steps 4–5     B: 1 unit, steps 2–5
//	C: 2 units, step 1        D: 1 unit, steps 0–2
//
// The live peak is 3 units (C+D at step 1, A+B at steps 4–5). Largest
// first (ties: longer-lived first) places A at 0, C at 0 (C meets neither
// A nor B), B at 2 (above A), and D, which meets C (bytes 0–2) and B
// (bytes 2–3), at 3: 4 units. Placing B at 2, A at 0, D at 0 and C at 1
// (C meets only D) needs 3 units, the live peak.
func TestGreedyIsBeatenByTheSearch(t *testing.T) {
	const u = 64
	items := []item{{2 * u, 4, 5}, {1 * u, 2, 5}, {2 * u, 1, 1}, {1 * u, 0, 2}}
	if lb, _ := livePeak(items, 6); lb != 3*u {
		t.Fatalf("live peak %d, want %d", lb, 3*u)
	}
	conf := conflicts(items)
	_, greedy := place(items, sortedOrder(items, orderings[0].less))
	if greedy != 4*u {
		t.Fatalf("greedy arena %d units, want 4", greedy/u)
	}
	// The branch and bound alone (no other orderings first) finds 3.
	offs, top, done := branchAndBound(items, conf, greedy, 3*u, 1000)
	if !done || top != 3*u || offs == nil {
		t.Fatalf("branch and bound: top %d units, finished %v", top/u, done)
	}
	sol := solve(items, Options{Rounds: -1}.withDefaults())
	if sol.arena != 3*u || sol.greedy != 4*u || !sol.optimal {
		t.Fatalf("solve: arena %d, greedy %d units, optimal %v; want 3, 4, true", sol.arena/u, sol.greedy/u, sol.optimal)
	}
	p := &Plan{Align: u, ArenaBytes: sol.arena, Steps: 6}
	for i, it := range items {
		p.Buffers = append(p.Buffers, Buffer{Kind: Activation, Values: []string{string(rune('A' + i))}, Offset: sol.offsets[i], Size: it.size, First: it.first, Last: it.last})
	}
	if err := Check(p); err != nil {
		t.Fatal(err)
	}
}

// randomOrder draws a topological order of g's nodes.
func randomOrder(g *ir.Graph, rng *rand.Rand) []*ir.Node {
	done := map[*ir.Value]bool{}
	left := append([]*ir.Node(nil), g.Nodes...)
	var seq []*ir.Node
	for len(left) > 0 {
		var ready []int
		for i, n := range left {
			ok := true
			for _, v := range n.AllInputs() {
				if v != nil && v.Def != nil && !done[v] {
					ok = false
				}
			}
			if ok {
				ready = append(ready, i)
			}
		}
		k := ready[rng.IntN(len(ready))]
		n := left[k]
		left = append(left[:k], left[k+1:]...)
		seq = append(seq, n)
		for _, o := range n.Outputs {
			if o != nil {
				done[o] = true
			}
		}
	}
	return seq
}

func memOptions() map[string]memory.Options {
	free := ort.Memory()
	free.FreeOutputs = true
	return map[string]memory.Options{"liveness": {}, "ort": ort.Memory(), "ort-free": free}
}

// TestRandomGraphs plans random DAGs in random orders: every plan passes
// the checker, the arena is at least the live peak, and the live peak is
// memory.Simulate's peak under the plan's lifetime options.
func TestRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	optimal, total := 0, 0
	for name, mem := range memOptions() {
		for seed := uint64(1); seed <= 40; seed++ {
			g := zoo.RandomDAG(4+int(seed)*5, seed)
			if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
				t.Fatal(err)
			}
			seq := randomOrder(g, rng)
			for _, align := range []int64{64, 256} {
				p, err := New(g, seq, mem, Options{Align: align})
				if err != nil {
					t.Fatal(err)
				}
				if err := Check(p); err != nil {
					t.Fatalf("%s %s: %v", name, g.Name, err)
				}
				lo := lifetimeOptions(mem)
				lo.AlignBytes = align
				r, err := memory.Simulate(g, seq, lo)
				if err != nil {
					t.Fatal(err)
				}
				if p.LivePeak != r.PeakBytes-r.ConstBytes || p.ArenaBytes < p.LivePeak || p.GreedyBytes < p.ArenaBytes {
					t.Errorf("%s %s align %d: live peak %d (Simulate %d), arena %d, greedy %d", name, g.Name, align, p.LivePeak, r.PeakBytes-r.ConstBytes, p.ArenaBytes, p.GreedyBytes)
				}
				total++
				if p.Optimal {
					optimal++
				}
			}
		}
	}
	t.Logf("%d plans, %d proved optimal", total, optimal)
}

// TestCheckRejects: the checker finds overlapping live buffers, bad
// alignment, buffers outside the arena and bad lifetimes.
func TestCheckRejects(t *testing.T) {
	good := func() *Plan {
		return &Plan{Align: 64, ArenaBytes: 256, Steps: 4, Buffers: []Buffer{
			{Kind: Activation, Values: []string{"a"}, Offset: 0, Size: 128, First: 0, Last: 2},
			{Kind: Activation, Values: []string{"b"}, Offset: 128, Size: 128, First: 1, Last: 3},
			{Kind: Workspace, Node: "n", Offset: 0, Size: 128, First: 3, Last: 3},
		}}
	}
	if err := Check(good()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		break_ func(p *Plan)
		want   string
	}{
		{"overlap", func(p *Plan) { p.Buffers[1].Offset = 64 }, "are live together and overlap"},
		{"workspace overlap", func(p *Plan) { p.Buffers[2].Offset = 128 }, "workspace of n"},
		{"misaligned", func(p *Plan) { p.Buffers[0].Size = 100 }, "not aligned"},
		{"outside", func(p *Plan) { p.ArenaBytes = 192 }, "outside the arena"},
		{"lifetime", func(p *Plan) { p.Buffers[0].Last = 9 }, "outside steps"},
	} {
		p := good()
		tt.break_(p)
		if err := Check(p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestJSON: the same plan gives the same bytes, and the form reads back.
func TestJSON(t *testing.T) {
	var outs [][]byte
	for k := 0; k < 2; k++ {
		g := zoo.RandomDAG(60, 7)
		if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
			t.Fatal(err)
		}
		p, err := New(g, g.Nodes, ort.Memory(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.JSON()
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("two plans of the same graph differ")
	}
	if !bytes.HasPrefix(outs[0], []byte("{\n  \"format\": \"remat-arena/v1\",\n  \"graph\": \"random60\",")) || !bytes.HasSuffix(outs[0], []byte("}\n")) {
		t.Fatalf("unexpected form:\n%s", outs[0][:200])
	}
	p, err := Parse(outs[0])
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.JSON()
	if err != nil || !bytes.Equal(again, outs[0]) {
		t.Fatalf("read back and written again differs (%v)", err)
	}
	for _, bad := range []string{
		strings.Replace(string(outs[0]), "remat-arena/v1", "remat-arena/v2", 1),
		strings.Replace(string(outs[0]), `"offset": 0,`, `"offset": 1,`, 1),
		strings.Replace(string(outs[0]), `"graph"`, `"grph"`, 1),
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse accepted a bad plan")
		}
	}
}

// bestByOffsets is the least arena of items (sizes in units of u) by
// trying every assignment of offsets: independent of the placement rule.
func bestByOffsets(items []item, u int64) int64 {
	var total int64
	for _, it := range items {
		total += it.size / u
	}
	best := total
	offs := make([]int64, len(items))
	var rec func(i int, top int64)
	rec = func(i int, top int64) {
		if top >= best {
			return
		}
		if i == len(items) {
			best = top
			return
		}
		for o := int64(0); o+items[i].size/u <= total; o++ {
			ok := true
			for j := 0; j < i; j++ {
				if items[i].meets(items[j]) && o < offs[j]+items[j].size/u && offs[j] < o+items[i].size/u {
					ok = false
					break
				}
			}
			if ok {
				offs[i] = o
				rec(i+1, max(top, o+items[i].size/u))
			}
		}
	}
	rec(0, 0)
	return best * u
}

// TestSearchIsExact: on random small instances every solution is a valid
// placement, never above the greedy one, and, when it claims optimality,
// equal to the least arena found by trying every offset.
func TestSearchIsExact(t *testing.T) {
	const u = 64
	rng := rand.New(rand.NewPCG(1, 1))
	beaten, proved := 0, 0
	for trial := 0; trial < 3000; trial++ {
		n := 2 + rng.IntN(4)
		var items []item
		for i := 0; i < n; i++ {
			f := rng.IntN(6)
			items = append(items, item{int64(1+rng.IntN(4)) * u, f, f + rng.IntN(3)})
		}
		opt := bestByOffsets(items, u)
		for k, opts := range []Options{{Rounds: -1, ExactBuffers: -1}, {ExactBuffers: -1}, {Rounds: -1}, {}} {
			sol := solve(items, opts.withDefaults())
			p := &Plan{Align: u, ArenaBytes: sol.arena, Steps: 9}
			for i, it := range items {
				p.Buffers = append(p.Buffers, Buffer{Kind: Activation, Offset: sol.offsets[i], Size: it.size, First: it.first, Last: it.last})
			}
			if err := Check(p); err != nil {
				t.Fatalf("%v %v: %v", opts, items, err)
			}
			if sol.arena < opt || sol.arena > sol.greedy || (sol.optimal && sol.arena != opt) {
				t.Fatalf("%+v %v: arena %d greedy %d optimal %v, least %d", opts, items, sol.arena, sol.greedy, sol.optimal, opt)
			}
			if opts.ExactBuffers == 0 && !sol.optimal {
				t.Fatalf("%v: the branch and bound did not finish on %d buffers", items, n)
			}
			if k == 3 {
				proved++
				if sol.greedy > opt {
					beaten++
				}
			}
		}
	}
	t.Logf("%d instances, all proved optimal; the greedy placement was above the optimum on %d", proved, beaten)
}
