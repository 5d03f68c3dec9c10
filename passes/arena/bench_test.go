package arena

import (
	"fmt"
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// BenchmarkNew plans seeded graphs of growing size in their file order
// under ort.Memory(), and reports the arena against the live peak.
func BenchmarkNew(b *testing.B) {
	for _, gn := range []struct {
		name  string
		build func(n int) *ir.Graph
	}{
		{"large", func(n int) *ir.Graph { return zoo.LargeGraph(n, 1) }},
		{"random", func(n int) *ir.Graph { return zoo.RandomDAG(n, 1) }},
	} {
		for _, n := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", gn.name, n), func(b *testing.B) {
				g := gn.build(n)
				if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
					b.Fatal(err)
				}
				var p *Plan
				for b.Loop() {
					var err error
					if p, err = New(g, g.Nodes, ort.Memory(), Options{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(p.Buffers)), "buffers")
				b.ReportMetric(float64(p.ArenaBytes), "arena-bytes")
				b.ReportMetric(float64(p.LivePeak), "live-peak-bytes")
				b.ReportMetric(float64(p.GreedyBytes), "greedy-bytes")
			})
		}
	}
}
