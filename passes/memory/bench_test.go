package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// residualChain builds n nodes: a chain of Relu/Add/Reshape blocks with
// random skip connections reaching back up to 50 nodes.
func residualChain(n int, seed uint64) *ir.Graph {
	rng := rand.New(rand.NewPCG(seed, 1))
	g := ir.NewGraph("chain")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 64, 32, 32))
	shape := g.AddParam("shape", ir.TensorOf(ir.Int64, 4), ir.Int64Tensor([]int64{4}, 1, 64, 32, 32))
	vals := []*ir.Value{x}
	for i := range n {
		prev := vals[len(vals)-1]
		var node *ir.Node
		switch i % 3 {
		case 0:
			node = g.NewNode("Relu", "", []*ir.Value{prev}, []string{fmt.Sprintf("v%d", i)})
		case 1:
			skip := vals[max(0, len(vals)-1-rng.IntN(50))]
			node = g.NewNode("Add", "", []*ir.Value{prev, skip}, []string{fmt.Sprintf("v%d", i)})
		case 2:
			node = g.NewNode("Reshape", "", []*ir.Value{prev, shape}, []string{fmt.Sprintf("v%d", i)})
		}
		node.Outputs[0].Type = ir.TensorOf(ir.Float32, 1, 64, 32, 32)
		vals = append(vals, node.Outputs[0])
	}
	g.AddOutput(vals[len(vals)-1])
	return g
}

// BenchmarkSimulate20k runs the memory model over a 20,000-step sequence
// (target: under 20 ms per run on the project's 2-core machine).
func BenchmarkSimulate20k(b *testing.B) {
	g := residualChain(20000, 1)
	for _, cfg := range []struct {
		name string
		opts Options
	}{{"plain", Options{}}, {"arena", arenaOptions()}} {
		b.Run(cfg.name, func(b *testing.B) {
			var peak int64
			for b.Loop() {
				r, err := Simulate(g, g.Nodes, cfg.opts)
				if err != nil {
					b.Fatal(err)
				}
				peak = r.PeakBytes
			}
			b.ReportMetric(float64(peak), "peak-bytes")
			b.ReportMetric(float64(len(g.Nodes)), "steps")
		})
	}
}
