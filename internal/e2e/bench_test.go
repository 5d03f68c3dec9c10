package e2e

import (
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/shapes"
)

// BenchmarkImportInfer measures what every command does first: decode an
// ONNX file of a synthetic Conv/Relu/Add/Concat/Reshape graph and infer
// every shape (target: under 1 s for 10k nodes on the project's 2-core
// machine), then the memory model over the file order.
func BenchmarkImportInfer(b *testing.B) {
	for _, size := range []int{10000, 20000} {
		g := zoo.LargeGraph(size, 1)
		if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
			b.Fatal(err)
		}
		data, err := onnxexp.Export(g, onnxexp.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(itoaSize(size)+"/import+infer", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				g, err := onnximp.Import(data, onnximp.Options{File: "large.onnx"})
				if err != nil {
					b.Fatal(err)
				}
				if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size), "nodes")
		})
		b.Run(itoaSize(size)+"/memory-ort", func(b *testing.B) {
			var peak int64
			for b.Loop() {
				r, err := memory.Simulate(g, g.Nodes, ort.Memory())
				if err != nil {
					b.Fatal(err)
				}
				peak = r.PeakBytes
			}
			b.ReportMetric(float64(peak), "peak-bytes")
		})
	}
}

func itoaSize(n int) string {
	switch n {
	case 10000:
		return "10k"
	case 20000:
		return "20k"
	}
	return "n"
}
