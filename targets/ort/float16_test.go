package ort

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
)

// The tests below replay the float16 probe models whose ONNX Runtime 1.30
// profiles float16.go's rules come from (level disabled, arena on, memory
// pattern off; T = [1,16,64,64]): the nodes ORT ran, in its order, with
// their node_index and mem_bytes_in_use less the bytes in use before the
// first node, and the peak. Each model is what onnxconverter-common's
// converter writes with keep_io_types: a Cast of the float32 input to
// float16, float16 weights, a Cast of the float16 result to the float32
// output.

// f16probe builds a float16 graph with explicit types.
type f16probe struct {
	g    *ir.Graph
	half func(name string, dims ...int64) *ir.Value
}

func newF16Probe(x ...int64) (*f16probe, *ir.Value) {
	g := ir.NewGraph("f16")
	g.Opsets = []ir.Opset{{Version: 17}}
	in := g.AddInput("x", ir.TensorOf(ir.Float32, x...))
	p := &f16probe{g: g}
	p.half = func(name string, dims ...int64) *ir.Value {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		return g.AddParam(name, ir.TensorOf(ir.Float16, dims...), &ir.Tensor{Name: name, DType: ir.Float16, Shape: dims, Raw: make([]byte, 2*n)})
	}
	return p, p.op("Cast", "in_cast", ir.TensorOf(ir.Float16, x...), []ir.Attr{ir.IntAttr("to", onnxFloat16)}, in)
}

func (p *f16probe) op(op, name string, t ir.TensorType, attrs []ir.Attr, in ...*ir.Value) *ir.Value {
	n := p.g.NewNode(op, "", in, []string{name + ".out"})
	n.Name = name
	n.Attrs = attrs
	n.Outputs[0].Type = t
	return n.Outputs[0]
}

// conv is a 3×3 16→16 "same" Conv with float16 weights and bias.
func (p *f16probe) conv(name string, x *ir.Value, cin int64, out ...int64) *ir.Value {
	return p.op("Conv", name, ir.TensorOf(ir.Float16, out...), []ir.Attr{ir.IntsAttr("pads", 1, 1, 1, 1)},
		x, p.half(name+".w", 16, cin, 3, 3), p.half(name+".b", 16))
}

// output casts v to the float32 graph output.
func (p *f16probe) output(v *ir.Value) {
	t := v.Type.Clone()
	t.DType = ir.Float32
	p.g.AddOutput(p.op("Cast", "out_cast", t, []ir.Attr{ir.IntAttr("to", onnxFloat)}, v))
}

// ran is one profile event: node name, node_index, bytes in use.
type ran struct {
	name  string
	index int
	inUse int64
}

func checkLowered(t *testing.T, g *ir.Graph, want []ran, peak int64) {
	t.Helper()
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	if !NeedsLowering(g) {
		t.Fatal("NeedsLowering = false")
	}
	lw, err := Lower(g)
	if err != nil {
		t.Fatal(err)
	}
	r, err := memory.Simulate(lw.Graph, lw.Graph.Nodes, Memory())
	if err != nil {
		t.Fatal(err)
	}
	var got []ran
	for i, n := range lw.Graph.Nodes {
		got = append(got, ran{n.Name, lw.Index[i], r.During[i] - r.Workspace[i]})
	}
	if !slices.Equal(got, want) {
		t.Errorf("lowered run (node, index, bytes in use)\n got %v\nwant %v (measured)", got, want)
	}
	if r.PeakBytes != peak {
		t.Errorf("peak %d, want %d (measured)", r.PeakBytes, peak)
	}
	// The graph as written, without the lowering, predicts far less: the
	// float16 activations ORT runs in float32 and the float32 weight copies
	// are missing.
	run, err := Schedule(g, Target{}.exportOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := memory.Simulate(g, run.Seq, Memory()); err != nil || raw.PeakBytes >= peak {
		t.Errorf("unlowered peak %v (%v), want below %d", raw.PeakBytes, err, peak)
	}
}

func TestLowerConvChain(t *testing.T) {
	// Three float16 Conv+Relu: ORT runs them in float32; the input Cast and
	// the Cast ORT puts after it cancel; every weight's float32 copy is
	// made first (the Casts have the highest indices, so ORT's depth-first
	// order enters them first at every node); the output Cast copies the
	// float32 result.
	p, x := newF16Probe(1, 16, 64, 64)
	for i := range 3 {
		c := p.conv(fmt.Sprintf("conv%d", i), x, 16, 1, 16, 64, 64)
		x = p.op("Relu", fmt.Sprintf("relu%d", i), c.Type, nil, c)
	}
	p.output(x)
	checkLowered(t, p.g, []ran{
		{"InsertedPrecisionFreeCast_conv2.b", 22, 256}, {"InsertedPrecisionFreeCast_conv2.w", 21, 9472},
		{"InsertedPrecisionFreeCast_conv1.b", 16, 9728}, {"InsertedPrecisionFreeCast_conv1.w", 15, 18944},
		{"InsertedPrecisionFreeCast_conv0.b", 10, 19200}, {"InsertedPrecisionFreeCast_conv0.w", 9, 28416},
		{"conv0", 1, 290560}, {"relu0", 2, 281088}, {"conv1", 3, 543232}, {"relu1", 4, 533760},
		{"conv2", 5, 533760}, {"relu2", 6, 262144}, {"out_cast", 7, 524288},
	}, 608768)
}

func TestLowerIsolatedClip(t *testing.T) {
	// Clip has a float16 kernel, but between two float32 convolutions it is
	// isolated (its float16 min and max are initializers, not edges) and
	// runs in float32 too; the Casts of min and max are shared by both
	// Clips.
	p, x := newF16Probe(1, 16, 64, 64)
	lo, hi := p.half("mn"), p.half("mx")
	for i := range 3 {
		x = p.conv(fmt.Sprintf("conv%d", i), x, 16, 1, 16, 64, 64)
		if i < 2 {
			x = p.op("Clip", fmt.Sprintf("clip%d", i), x.Type, nil, x, lo, hi)
		}
	}
	p.output(x)
	checkLowered(t, p.g, []ran{
		{"InsertedPrecisionFreeCast_conv2.b", 23, 256}, {"InsertedPrecisionFreeCast_conv2.w", 22, 9472},
		{"InsertedPrecisionFreeCast_mx", 13, 9728}, {"InsertedPrecisionFreeCast_mn", 12, 9984},
		{"InsertedPrecisionFreeCast_conv1.b", 17, 10240}, {"InsertedPrecisionFreeCast_conv1.w", 16, 19456},
		{"InsertedPrecisionFreeCast_conv0.b", 9, 19712}, {"InsertedPrecisionFreeCast_conv0.w", 8, 28928},
		{"conv0", 1, 291072}, {"clip0", 2, 281600}, {"conv1", 3, 543744}, {"clip1", 4, 534272},
		{"conv2", 5, 533760}, {"out_cast", 6, 524288},
	}, 609280)
}

func TestLowerSliceBeforeOutput(t *testing.T) {
	// A Slice whose reader is the output Cast (which has a float16 kernel)
	// is not isolated: it runs in float16, and the convolution's float32
	// result is cast to float16 for it (a T/2 more).
	p, x := newF16Probe(1, 16, 64, 64)
	c := p.conv("conv0", x, 16, 1, 16, 64, 64)
	i64 := func(name string, v ...int64) *ir.Value {
		return p.g.AddParam(name, ir.TensorOf(ir.Int64, int64(len(v))), ir.Int64Tensor([]int64{int64(len(v))}, v...))
	}
	s := p.op("Slice", "slice", ir.TensorOf(ir.Float16, 1, 16, 62, 62), nil, c, i64("st", 1, 1), i64("en", 63, 63), i64("ax", 2, 3))
	p.output(s)
	checkLowered(t, p.g, []ran{
		{"InsertedPrecisionFreeCast_conv0.b", 6, 256}, {"InsertedPrecisionFreeCast_conv0.w", 5, 9472},
		{"conv0", 1, 271616}, {"InsertedPrecisionFreeCast_conv0.out", 7, 393216},
		{"slice", 2, 254208}, {"out_cast", 3, 369152},
	}, 393216)
}

func TestLowerIsolatedConcat(t *testing.T) {
	// A Concat of two float32 results read by a convolution runs in
	// float32 (only its first input's producer is checked).
	p, x := newF16Probe(1, 16, 64, 64)
	c := p.conv("conv0", x, 16, 1, 16, 64, 64)
	r := p.op("Relu", "relu0", c.Type, nil, c)
	cat := p.op("Concat", "cat", ir.TensorOf(ir.Float16, 1, 32, 64, 64), []ir.Attr{ir.IntAttr("axis", 1)}, c, r)
	p.output(p.conv("conv1", cat, 32, 1, 16, 64, 64))
	checkLowered(t, p.g, []ran{
		{"InsertedPrecisionFreeCast_conv1.b", 16, 256}, {"InsertedPrecisionFreeCast_conv1.w", 15, 18688},
		{"InsertedPrecisionFreeCast_conv0.b", 8, 18944}, {"InsertedPrecisionFreeCast_conv0.w", 7, 28160},
		{"conv0", 1, 290304}, {"relu0", 2, 542976}, {"cat", 3, 1067264}, {"conv1", 4, 805120},
		{"out_cast", 5, 552448},
	}, 1067264)
}

func TestLowerResizeIsland(t *testing.T) {
	// The converter keeps Resize in float32 (its op block list) with Casts
	// around it; ORT's Casts after the first convolution and before the
	// second cancel them, and the float32 island vanishes.
	p, x := newF16Probe(1, 16, 32, 32)
	c := p.conv("conv0", x, 16, 1, 16, 32, 32)
	cf := p.op("Cast", "resize_input_cast0", ir.TensorOf(ir.Float32, 1, 16, 32, 32), []ir.Attr{ir.IntAttr("to", onnxFloat)}, c)
	sc := p.g.AddParam("sc", ir.TensorOf(ir.Float32, 4), ir.Float32Tensor([]int64{4}, 1, 1, 2, 2))
	r := p.op("Resize", "resize", ir.TensorOf(ir.Float32, 1, 16, 64, 64), []ir.Attr{ir.StringAttr("mode", "nearest")}, cf, nil, sc)
	r16 := p.op("Cast", "resize_output_cast0", ir.TensorOf(ir.Float16, 1, 16, 64, 64), []ir.Attr{ir.IntAttr("to", onnxFloat16)}, r)
	p.output(p.conv("conv1", r16, 16, 1, 16, 64, 64))
	checkLowered(t, p.g, []ran{
		{"InsertedPrecisionFreeCast_conv1.b", 13, 256}, {"InsertedPrecisionFreeCast_conv1.w", 12, 9472},
		{"InsertedPrecisionFreeCast_conv0.b", 9, 9728}, {"InsertedPrecisionFreeCast_conv0.w", 8, 18944},
		{"conv0", 1, 84480}, {"resize", 3, 337152}, {"conv1", 5, 533760}, {"out_cast", 6, 608768},
	}, 608768)
}

func TestLowerRefusesFunctionBodies(t *testing.T) {
	p, x := newF16Probe(1, 4, 8, 8)
	p.output(p.op("Softmax", "sm", x.Type, nil, x))
	if _, err := Lower(p.g); err == nil {
		t.Error("Lower of a float16 Softmax: no error")
	}
}

func TestNeedsLowering(t *testing.T) {
	// A float32 graph, and float16 values read only by ops with float16
	// kernels, run as written.
	g := ir.NewGraph("f32")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 2, 3))
	n := g.NewNode("Relu", "", []*ir.Value{x}, []string{"y"})
	n.Outputs[0].Type = x.Type
	g.AddOutput(n.Outputs[0])
	if NeedsLowering(g) {
		t.Error("float32 graph: NeedsLowering = true")
	}
	p, h := newF16Probe(2, 3)
	p.output(p.op("Transpose", "tr", ir.TensorOf(ir.Float16, 3, 2), nil, h))
	if NeedsLowering(p.g) {
		t.Error("float16 Transpose: NeedsLowering = true")
	}
}

func TestTargetPredictsFloat16Graphs(t *testing.T) {
	// The target's predictions for a float16 graph are those of the
	// lowered graph; with order dependencies the prediction is refused.
	p, x := newF16Probe(1, 16, 64, 64)
	var convs, relus []*ir.Node
	for i := range 3 {
		c := p.conv(fmt.Sprintf("conv%d", i), x, 16, 1, 16, 64, 64)
		x = p.op("Relu", fmt.Sprintf("relu%d", i), c.Type, nil, c)
		convs, relus = append(convs, c.Def), append(relus, x.Def)
	}
	p.output(x)
	pl, err := Target{}.Original(p.g, false)
	if err != nil {
		t.Fatal(err)
	}
	if pl.PeakBytes != 608768 {
		t.Errorf("Original: peak %d, want 608768 (measured)", pl.PeakBytes)
	}
	opts := Target{}.exportOptions(nil)
	opts.Remat = &remat.RewriteResult{}
	opts.Order = []remat.OrderConstraint{{Node: convs[2], After: relus[0]}}
	if _, _, err := Simulate(p.g, opts); err == nil || !strings.Contains(err.Error(), "float16") {
		t.Errorf("Simulate with an order dependency: %v, want an error about float16 graphs", err)
	}
}
