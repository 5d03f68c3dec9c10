package zoo

import (
	"fmt"
	"testing"
)

func BenchmarkLargeGraph(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			nodes := 0
			for i := 0; b.Loop(); i++ {
				nodes = len(LargeGraph(n, uint64(i)).Nodes)
			}
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}

func BenchmarkChain(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				Chain(n, uint64(i))
			}
		})
	}
}

// BenchmarkBuild builds paper-size models; the time is dominated by
// drawing the weights.
func BenchmarkBuild(b *testing.B) {
	for _, name := range []string{"resnet50", "transformer_encoder"} {
		m, _ := Lookup(name)
		b.Run(name, func(b *testing.B) {
			var bytes int64
			for b.Loop() {
				g, err := m.Build(m.Default)
				if err != nil {
					b.Fatal(err)
				}
				bytes = paramBytes(g)
			}
			b.SetBytes(bytes)
		})
	}
}
