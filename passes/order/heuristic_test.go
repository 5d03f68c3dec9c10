package order

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// chains builds an input feeding k chains of l Neg nodes whose outputs
// have seeded random widths (4 to 64 channels of 16×16; the last 4),
// joined by a Concat, written breadth first.
func chains(k, l int, seed uint64) *ir.Graph {
	rng := rand.New(rand.NewPCG(seed, 9))
	g := ir.NewGraph(fmt.Sprintf("chains%dx%d", k, l))
	x := g.AddInput("x", f32(1, 16, 16, 16))
	var outs []*ir.Value
	levels := make([][]*ir.Node, l)
	for c := 0; c < k; c++ {
		v := x
		for i := 0; i < l; i++ {
			ch := int64(4) << rng.IntN(5)
			if i == l-1 {
				ch = 4
			}
			n := g.CreateNode("Neg", "", []*ir.Value{v}, []string{fmt.Sprintf("c%d.%d", c, i)})
			n.Outputs[0].Type = f32(1, ch, 16, 16)
			levels[i] = append(levels[i], n)
			v = n.Outputs[0]
		}
		outs = append(outs, v)
	}
	for _, lv := range levels {
		for _, n := range lv {
			g.Insert(len(g.Nodes), n)
		}
	}
	cat := g.NewNode("Concat", "", outs, []string{"y"})
	cat.Outputs[0].Type = f32(1, int64(4*k), 16, 16)
	g.AddOutput(cat.Outputs[0])
	return g
}

// TestHeuristicsOnChains measures the heuristics without the exact search
// against the exact optimum on parallel chains with hills, the shape of
// multi-branch heads: the heuristics alone stay within 5% on average, and
// Best with its defaults reaches the optimum.
func TestHeuristicsOnChains(t *testing.T) {
	var ratio float64
	n, missed := 0, 0
	for seed := uint64(1); seed <= 12; seed++ {
		for _, g := range []*ir.Graph{chains(5, 8, seed), chains(3, 12, seed)} {
			mem := memory.Options{}
			ex, err := Best(context.Background(), g, mem, Options{MaxEvals: -1, MaxStates: 2000000})
			if err != nil {
				t.Fatal(err)
			}
			if !ex.Optimal {
				t.Fatalf("%s: the exact search did not finish", g.Name)
			}
			h, err := Best(context.Background(), g, mem, Options{MaxEvals: -1, MaxStates: -1})
			if err != nil {
				t.Fatal(err)
			}
			d, err := Best(context.Background(), g, mem, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if h.Peak < ex.Peak || d.Peak < ex.Peak {
				t.Fatalf("%s: a heuristic beat the optimum", g.Name)
			}
			if d.Peak > ex.Peak {
				missed++
			}
			ratio += float64(h.Peak) / float64(ex.Peak)
			n++
		}
	}
	t.Logf("%d graphs: heuristics alone at %.3f× the optimum on average; defaults missed it on %d", n, ratio/float64(n), missed)
	if ratio/float64(n) > 1.05 || missed > 0 {
		t.Errorf("heuristics at %.3f× the optimum on average (want ≤ 1.05), defaults missed it on %d", ratio/float64(n), missed)
	}
}
