package order

import (
	"context"
	"fmt"
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// BenchmarkBest orders seeded graphs of growing size under ort.Memory():
// random branching DAGs (zoo.RandomDAG, one wide segment: the beam and the
// exact search's budget), the spine-and-skips zoo.LargeGraph (many
// segments), and stacks of the inception modules of TestInception. It
// reports the chosen order's peak against the file order's.
func BenchmarkBest(b *testing.B) {
	type gen struct {
		name  string
		build func(n int) *ir.Graph
		sizes []int
	}
	for _, gn := range []gen{
		{"random", func(n int) *ir.Graph { return zoo.RandomDAG(n, 1) }, []int{100, 1000, 5000}},
		{"large", func(n int) *ir.Graph { return zoo.LargeGraph(n, 1) }, []int{1000, 5000, 20000}},
		{"inception", func(n int) *ir.Graph { return inception(b, n/13, 16, 32) }, []int{130, 1300, 5200}},
	} {
		for _, n := range gn.sizes {
			b.Run(fmt.Sprintf("%s/%d", gn.name, n), func(b *testing.B) {
				g := gn.build(n)
				if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
					b.Fatal(err)
				}
				var r *Result
				for b.Loop() {
					var err error
					if r, err = Best(context.Background(), g, ort.Memory(), Options{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(g.Nodes)), "nodes")
				b.ReportMetric(float64(r.Peak), "peak-bytes")
				b.ReportMetric(float64(r.FilePeak), "file-peak-bytes")
				b.ReportMetric(float64(r.States), "states")
			})
		}
	}
}
