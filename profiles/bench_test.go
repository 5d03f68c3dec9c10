package profiles_test

import (
	"fmt"
	"testing"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/profiles"
)

// BenchmarkCost costs every node of a synthetic graph, as the
// rematerialization pass does when it builds its problem, with and without
// measured entries to look up.
func BenchmarkCost(b *testing.B) {
	for _, size := range []int{1000, 20000} {
		g := zoo.LargeGraph(size, 1)
		if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
			b.Fatal(err)
		}
		for _, measured := range []bool{false, true} {
			p, err := profiles.Load("v100-16gb")
			if err != nil {
				b.Fatal(err)
			}
			if measured {
				// Measure every tenth node (most share signatures).
				seen := map[string]bool{}
				for i, n := range g.Nodes {
					if i%10 != 0 {
						continue
					}
					m, err := profiles.NewMeasured(n)
					if err != nil {
						b.Fatal(err)
					}
					k := fmt.Sprint(m)
					if seen[k] {
						continue
					}
					seen[k] = true
					m.Seconds, m.Repeats = 1e-5, 1
					p.Measured = append(p.Measured, m)
				}
				if err := p.Validate(); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(fmt.Sprintf("nodes=%d/measured=%d", size, len(p.Measured)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, n := range g.Nodes {
						if _, err := p.Cost(n); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(g.Nodes)), "ns/node")
			})
		}
	}
}
