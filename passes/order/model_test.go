package order

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/shapes"
)

// randomDAG is zoo.RandomDAG with its shapes inferred.
func randomDAG(t testing.TB, n int, seed uint64) *ir.Graph {
	t.Helper()
	g := zoo.RandomDAG(n, seed)
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	return g
}

// randomOrder draws a topological order of g's nodes: at each step a
// ready node uniformly.
func randomOrder(g *ir.Graph, rng *rand.Rand) []*ir.Node {
	preds, succs := dependencies(g.Nodes)
	left := make([]int, len(g.Nodes))
	var ready []int32
	for i := range g.Nodes {
		left[i] = len(preds[i])
		if left[i] == 0 {
			ready = append(ready, int32(i))
		}
	}
	var seq []*ir.Node
	for len(ready) > 0 {
		k := rng.IntN(len(ready))
		v := ready[k]
		ready = append(ready[:k], ready[k+1:]...)
		seq = append(seq, g.Nodes[v])
		for _, u := range succs[v] {
			if left[u]--; left[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	return seq
}

// modelOptions are memory options whose downset objectives the tests
// cover: liveness, views and in-place writes, the ORT preset, and kept
// outputs freed.
func modelOptions() map[string]memory.Options {
	free := ort.Memory()
	free.FreeOutputs = true
	free.CountInputs = true
	return map[string]memory.Options{
		"liveness": {},
		"views":    {Aliasing: true, InPlace: true, AlignBytes: 64},
		"ort":      ort.Memory(),
		"ort-free": free,
	}
}

// TestStepMatchesSimulate checks the claim the exact search rests on: the
// bytes of a step computed from the set of nodes done before it equal
// memory.Simulate's During and After under the downset options, in any
// order.
func TestStepMatchesSimulate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, mem := range modelOptions() {
		down := Downset(mem)
		for seed := uint64(1); seed <= 30; seed++ {
			g := randomDAG(t, 5+int(seed)*3, seed)
			for k := 0; k < 5; k++ {
				seq := randomOrder(g, rng)
				r, err := memory.Simulate(g, seq, down)
				if err != nil {
					t.Fatal(err)
				}
				p := newProblem(g, down, r.ConstBytes)
				w := p.window(0, int32(len(p.nodes)), 0)
				words := make([]uint64, w.nwords)
				s := w.set(words)
				var live int64
				for i, nd := range seq {
					v := p.pos[nd]
					during, after := p.step(&s, v, live)
					if during+r.ConstBytes != r.During[i] || after+r.ConstBytes != r.After[i] {
						t.Fatalf("%s: %s step %d (%s %s): during %d after %d, Simulate %d and %d", name, g.Name, i, nd.Name, nd.Op,
							during+r.ConstBytes, after+r.ConstBytes, r.During[i], r.After[i])
					}
					s.add(v)
					live = after
				}
			}
		}
	}
}

// TestSequencePoints checks the blocked bitset count of ancestors and
// descendants against a search from every node, on graphs of more than 64
// nodes (several blocks).
func TestSequencePoints(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		for _, g := range []*ir.Graph{randomDAG(t, 20+int(seed)*17, seed), zoo.LargeGraph(150+int(seed), seed)} {
			p := newProblem(g, memory.Options{}, 0)
			ends := p.segments()
			m := len(p.nodes)
			reach := func(v int, adj [][]int32) int {
				seen := map[int32]bool{}
				stack := []int32{int32(v)}
				for len(stack) > 0 {
					u := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					for _, w := range adj[u] {
						if !seen[w] {
							seen[w] = true
							stack = append(stack, w)
						}
					}
				}
				return len(seen)
			}
			var want []int32
			for v := 0; v < m; v++ {
				if reach(v, p.preds)+reach(v, p.succs) == m-1 {
					want = append(want, int32(v+1))
				}
			}
			if len(want) == 0 || want[len(want)-1] != int32(m) {
				want = append(want, int32(m))
			}
			if !slices.Equal(ends, want) {
				t.Fatalf("%s: segment ends %v, want %v", g.Name, ends, want)
			}
			if len(ends) < 2 && g.Name[:5] == "large" {
				t.Errorf("%s: %d segments: the test exercises nothing", g.Name, len(ends))
			}
		}
	}
}
