package shapes

import (
	"testing"

	"github.com/remat-compile/remat/ir"
)

// deepGraph builds blocks of 10 nodes each on x f32[N,16,32,32]:
// Conv → Relu → Add(skip) → Shape → Gather → Unsqueeze → Concat → Reshape
// (flatten to [N,-1]) → Shape(skip) → Reshape back.
func deepGraph(tb testing.TB, blocks int) (*ir.Graph, *ir.Value) {
	b := newBuilder(tb, 17)
	h := b.input("x", "f32[N,16,32,32]")
	w := b.g.AddParam("w", ir.TensorOf(ir.Float32, 16, 16, 3, 3), &ir.Tensor{DType: ir.Float32, Shape: []int64{16, 16, 3, 3}, Raw: make([]byte, 4*16*16*9)})
	zero := b.i64("zero", []int64{}, 0)
	axes := b.i64("axes", nil, 0)
	minus1 := b.i64("minus1", nil, -1)
	for range blocks {
		c := b.op("Conv", b.ins(h, w), ints("pads", 1, 1, 1, 1))
		r := b.op("Relu", b.ins(c))
		a := b.op("Add", b.ins(r, h))
		s := b.op("Shape", b.ins(a))
		n := b.op("Gather", b.ins(s, zero))
		u := b.op("Unsqueeze", b.ins(n, axes))
		cat := b.op("Concat", b.ins(u, minus1), iattr("axis", 0))
		f := b.op("Reshape", b.ins(a, cat))
		s2 := b.op("Shape", b.ins(h))
		h = b.op("Reshape", b.ins(f, s2))
	}
	b.g.AddOutput(h)
	return b.g, h
}

func TestDeepGraph(t *testing.T) {
	g, y := deepGraph(t, 1000)
	if len(g.Nodes) != 10000 {
		t.Fatalf("%d nodes", len(g.Nodes))
	}
	if err := Infer(g, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := y.Type.String(); got != "f32[N,16,32,32]" {
		t.Fatalf("output %s", got)
	}
	flat := g.Nodes[len(g.Nodes)-3].Outputs[0]
	if got := flat.Type.String(); got != "f32[N,16384]" {
		t.Fatalf("flattened %s", got)
	}
	if err := Infer(g, Options{Dims: map[string]int64{"N": 4}, RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkInfer10k(b *testing.B) {
	g, _ := deepGraph(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := Infer(g, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(g.Nodes)), "nodes")
}
