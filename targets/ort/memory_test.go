package ort

import (
	"fmt"
	"slices"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// The tests below replay the small probe models whose ONNX Runtime 1.30
// measurements ort.go records: want is the profile's mem_bytes_in_use of
// each node less the bytes in use before the first node, which is During
// less the workspace.

// probe builds graphs of float32 values by hand: every node's output
// types are given, nothing is inferred.
type probe struct {
	g *ir.Graph
	s *ir.Value // a scalar parameter
}

func newProbe(inShape ...int64) (*probe, *ir.Value) {
	g := ir.NewGraph("probe")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, inShape...))
	s := g.AddParam("s", ir.TensorOf(ir.Float32), ir.Float32Tensor(nil, 1.01))
	return &probe{g: g, s: s}, x
}

func (p *probe) op(op string, out ir.TensorType, in ...*ir.Value) *ir.Value {
	n := p.g.NewNode(op, "", in, []string{fmt.Sprintf("v%d", len(p.g.Nodes))})
	n.Name = n.Outputs[0].Name
	n.Outputs[0].Type = out
	return n.Outputs[0]
}

func f32(dims ...int64) ir.TensorType { return ir.TensorOf(ir.Float32, dims...) }

// inUse returns During − Workspace per step under Memory().
func inUse(t *testing.T, g *ir.Graph) []int64 {
	t.Helper()
	r, err := memory.Simulate(g, g.Nodes, Memory())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(r.During))
	for i := range out {
		out[i] = r.During[i] - r.Workspace[i]
	}
	return out
}

const T = 262144 // f32[1,16,64,64]

func TestORTReuseHoldsFreedBuffer(t *testing.T) {
	// a = x·s; p = MaxPool(a) (a dies); q, q2 = p·s, q·s; r = Resize(q2),
	// the shape of a, takes a's buffer, which stays allocated from MaxPool
	// to Resize; q2 takes p's.
	p, x := newProbe(1, 16, 64, 64)
	a := p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	pool := p.op("MaxPool", f32(1, 16, 32, 32), a)
	q := p.op("Mul", f32(1, 16, 32, 32), pool, p.s)
	q2 := p.op("Mul", f32(1, 16, 32, 32), q, p.s)
	r := p.op("Resize", f32(1, 16, 64, 64), q2)
	p.g.AddOutput(p.op("Mul", f32(1, 16, 64, 64), r, p.s))
	if got, want := inUse(t, p.g), []int64{T, T + T/4, T + T/2, T + T/2, T + T/4, 2 * T}; !slices.Equal(got, want) {
		t.Errorf("in use %v, want %v (measured)", got, want)
	}
	// Without Reuse a is released after MaxPool.
	o := Memory()
	o.Reuse = false
	res, err := memory.Simulate(p.g, p.g.Nodes, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.After[1] != T/4 {
		t.Errorf("without Reuse %d bytes after MaxPool, want %d", res.After[1], T/4)
	}
}

func TestORTReuseNeedsSameShape(t *testing.T) {
	// A Concat output f32[1,64,32,32] has a's bytes but not its shape: it
	// gets a new buffer, and a is released after MaxPool.
	p, x := newProbe(1, 16, 64, 64)
	a := p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	pool := p.op("MaxPool", f32(1, 16, 32, 32), a)
	q := p.op("Mul", f32(1, 16, 32, 32), pool, p.s)
	c := p.op("Concat", f32(1, 64, 32, 32), q, q, q, q)
	p.g.AddOutput(p.op("Mul", f32(1, 64, 32, 32), c, p.s))
	if got, want := inUse(t, p.g), []int64{T, T + T/4, T / 2, T + T/4, 2 * T}; !slices.Equal(got, want) {
		t.Errorf("in use %v, want %v (measured)", got, want)
	}
}

func TestORTUnreadOutputStaysAllocated(t *testing.T) {
	// Split's second half is never read and no later output has its
	// shape: it stays allocated to the end.
	p, x := newProbe(1, 16, 64, 64)
	a := p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	split := p.g.NewNode("Split", "", []*ir.Value{a}, []string{"b1", "b2"})
	split.Name = "split"
	split.Outputs[0].Type, split.Outputs[1].Type = f32(1, 8, 64, 64), f32(1, 8, 64, 64)
	c := p.op("MaxPool", f32(1, 8, 32, 32), split.Outputs[0])
	c2 := p.op("Mul", f32(1, 8, 32, 32), c, p.s)
	c3 := p.op("Mul", f32(1, 8, 32, 32), c2, p.s)
	p.g.AddOutput(p.op("Mul", f32(1, 8, 32, 32), c3, p.s))
	if got, want := inUse(t, p.g), []int64{T, 2 * T, T + T/8, T/2 + T/4, T/2 + T/4, T/2 + T/4}; !slices.Equal(got, want) {
		t.Errorf("in use %v, want %v (measured)", got, want)
	}
}

func TestORTGraphOutputIsNeverAView(t *testing.T) {
	p, x := newProbe(1, 16, 64, 64)
	a := p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	p.g.AddOutput(p.op("Reshape", f32(1, 16, 4096), a))
	if got, want := inUse(t, p.g), []int64{T, 2 * T}; !slices.Equal(got, want) {
		t.Errorf("in use %v, want %v (measured)", got, want)
	}
	// An in-place op writing a graph output gets its own buffer too.
	p, x = newProbe(1, 16, 64, 64)
	a = p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	p.g.AddOutput(p.op("Relu", f32(1, 16, 64, 64), a))
	if got, want := inUse(t, p.g), []int64{T, 2 * T}; !slices.Equal(got, want) {
		t.Errorf("Relu into a graph output: in use %v, want %v (measured)", got, want)
	}
}

func TestORTInPlaceNeedsSameElementSize(t *testing.T) {
	// Cast f32→i64 cannot overwrite its input; the 512 KiB request lands
	// in the 768 KiB free rest of the first 1 MiB region, which is less
	// than twice the request, so the whole chunk is counted (BFC). The
	// cast back to f32 takes a's freed buffer.
	p, x := newProbe(1, 16, 64, 64)
	a := p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	b := p.op("Cast", ir.TensorOf(ir.Int64, 1, 16, 64, 64), a)
	c := p.op("Cast", f32(1, 16, 64, 64), b)
	p.g.AddOutput(p.op("Mul", f32(1, 16, 64, 64), c, p.s))
	if got, want := inUse(t, p.g), []int64{T, 4 * T, 4 * T, 2 * T}; !slices.Equal(got, want) {
		t.Errorf("in use %v, want %v (measured)", got, want)
	}
	// f32→i32 has the same element size: in place.
	p, x = newProbe(1, 16, 64, 64)
	a = p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	b = p.op("Cast", ir.TensorOf(ir.Int32, 1, 16, 64, 64), a)
	c = p.op("Cast", f32(1, 16, 64, 64), b)
	p.g.AddOutput(p.op("Mul", f32(1, 16, 64, 64), c, p.s))
	if got, want := inUse(t, p.g), []int64{T, T, T, 2 * T}; !slices.Equal(got, want) {
		t.Errorf("f32→i32: in use %v, want %v (measured)", got, want)
	}
	// f32→f16 is a new T/2 (ORT keeps both user Casts: the first loses
	// precision); f16→f32 takes a's freed buffer (same element size and
	// shape), and the f16 copy is released after it.
	p, x = newProbe(1, 16, 64, 64)
	a = p.op("Mul", f32(1, 16, 64, 64), x, p.s)
	b = p.op("Cast", ir.TensorOf(ir.Float16, 1, 16, 64, 64), a)
	c = p.op("Cast", f32(1, 16, 64, 64), b)
	p.g.AddOutput(p.op("Mul", f32(1, 16, 64, 64), c, p.s))
	if got, want := inUse(t, p.g), []int64{T, T + T/2, T + T/2, 2 * T}; !slices.Equal(got, want) {
		t.Errorf("f32→f16→f32: in use %v, want %v (measured)", got, want)
	}
}

func TestORTArenaRounding(t *testing.T) {
	// Three outputs of n floats: each is one arena chunk of at least 256
	// bytes, a multiple of 256.
	for _, tt := range []struct{ n, chunk int64 }{{1, 256}, {64, 256}, {65, 512}, {1000, 4096}} {
		p, x := newProbe(tt.n)
		a := p.op("Mul", f32(tt.n), x, p.s)
		b := p.op("Mul", f32(tt.n), a, p.s)
		p.g.AddOutput(p.op("Add", f32(tt.n), a, b))
		if got, want := inUse(t, p.g), []int64{tt.chunk, 2 * tt.chunk, 3 * tt.chunk}; !slices.Equal(got, want) {
			t.Errorf("%d floats: in use %v, want %v (measured)", tt.n, got, want)
		}
	}
}

func TestORTConstantsAreParameters(t *testing.T) {
	p, x := newProbe(1, 16, 64, 64)
	k := p.g.NewNode("Constant", "", nil, []string{"k"})
	k.Outputs[0].Type = f32(1, 16, 64, 64)
	p.g.AddOutput(p.op("Add", f32(1, 16, 64, 64), x, k.Outputs[0]))
	r, err := memory.Simulate(p.g, p.g.Nodes, Memory())
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakBytes != T || r.During[0] != 0 {
		t.Errorf("during %v, peak %d; want the Constant step to allocate nothing and a peak of %d", r.During, r.PeakBytes, T)
	}
	// Its output is not an activation: a sequence without the Constant
	// node is fine.
	if _, err := memory.Simulate(p.g, p.g.Nodes[1:], Memory()); err != nil {
		t.Error(err)
	}
	if r, _ := memory.Simulate(p.g, p.g.Nodes, memory.Options{ConstantsAsParams: true, CountParams: true}); r.ConstBytes != T+4 {
		t.Errorf("CountParams: const %d, want %d (the Constant and s)", r.ConstBytes, T+4)
	}
}

func TestWorkspace(t *testing.T) {
	conv := func(op string, x, w, y []int64, attrs ...ir.Attr) *ir.Node {
		g := ir.NewGraph("ws")
		xv := g.AddInput("x", f32(x...))
		wv := g.AddParam("w", f32(w...), nil)
		n := g.NewNode(op, "", []*ir.Value{xv, wv}, []string{"y"})
		n.Outputs[0].Type = f32(y...)
		for _, a := range attrs {
			n.SetAttr(a)
		}
		return n
	}
	pads1 := ir.IntsAttr("pads", 1, 1, 1, 1)
	// convInt is a ConvInteger of uint8 data and int8 weights into int32.
	convInt := func(x, w, y []int64, attrs ...ir.Attr) *ir.Node {
		n := conv("ConvInteger", x, w, y, attrs...)
		n.Inputs[0].Type.DType, n.Inputs[1].Type.DType, n.Outputs[0].Type.DType = ir.Uint8, ir.Int8, ir.Int32
		return n
	}
	lstm := func(seq, batch, input, hidden int64, dir string, bias bool, outs ...string) *ir.Node {
		g := ir.NewGraph("lstm")
		dirs := int64(1)
		if dir == "bidirectional" {
			dirs = 2
		}
		in := []*ir.Value{
			g.AddInput("x", f32(seq, batch, input)),
			g.AddParam("W", f32(dirs, 4*hidden, input), nil),
			g.AddParam("R", f32(dirs, 4*hidden, hidden), nil),
		}
		if bias {
			in = append(in, g.AddParam("B", f32(dirs, 8*hidden), nil))
		}
		n := g.NewNode("LSTM", "", in, outs)
		n.SetAttr(ir.IntAttr("hidden_size", hidden))
		n.SetAttr(ir.StringAttr("direction", dir))
		return n
	}
	for _, tt := range []struct {
		name string
		n    *ir.Node
		want int64
	}{
		{"conv 3x3", conv("Conv", []int64{1, 16, 64, 64}, []int64{16, 16, 3, 3}, []int64{1, 16, 64, 64}, pads1), 65536},
		{"conv 1x1", conv("Conv", []int64{1, 16, 64, 64}, []int64{16, 16, 1, 1}, []int64{1, 16, 64, 64}), 0},
		{"conv 1x1 stride 2", conv("Conv", []int64{1, 16, 64, 64}, []int64{16, 16, 1, 1}, []int64{1, 16, 32, 32}, ir.IntsAttr("strides", 2, 2)), 65536},
		{"conv 1x1 padded", conv("Conv", []int64{1, 16, 32, 32}, []int64{16, 16, 1, 1}, []int64{1, 16, 34, 34}, pads1), 65536},
		{"depthwise", conv("Conv", []int64{1, 16, 64, 64}, []int64{16, 1, 3, 3}, []int64{1, 16, 64, 64}, pads1, ir.IntAttr("group", 16)), 65536},
		{"conv 1-D", conv("Conv", []int64{1, 16, 4096}, []int64{16, 16, 3}, []int64{1, 16, 4096}, ir.IntsAttr("pads", 1, 1)), 65536},
		{"filters > output", conv("Conv", []int64{1, 64, 4, 4}, []int64{128, 64, 3, 3}, []int64{1, 128, 4, 4}, pads1), 36864},
		{"filters > output, 4 groups", conv("Conv", []int64{1, 64, 4, 4}, []int64{128, 16, 3, 3}, []int64{1, 128, 4, 4}, pads1, ir.IntAttr("group", 4)), 9216},
		{"kernel spans the width", conv("Conv", []int64{1, 1, 32, 32}, []int64{8, 1, 3, 32}, []int64{1, 8, 30, 1}), 0},
		{"conv transpose 2x2/2", conv("ConvTranspose", []int64{1, 16, 64, 64}, []int64{16, 8, 2, 2}, []int64{1, 8, 128, 128}, ir.IntsAttr("strides", 2, 2)), 524288},
		{"conv transpose 4x4/2", conv("ConvTranspose", []int64{1, 16, 64, 64}, []int64{16, 8, 4, 4}, []int64{1, 8, 128, 128}, ir.IntsAttr("strides", 2, 2), ir.IntsAttr("pads", 1, 1, 1, 1)), 2097152},
		{"lstm", lstm(20, 1, 16, 32, "forward", true, "Y", "Yh", "Yc"), 12800},
		{"lstm big", lstm(64, 2, 64, 128, "forward", true, "Y", "Yh", "Yc"), 268544},
		{"lstm Y only", lstm(20, 3, 16, 32, "forward", true, "Y"), 35072},
		{"lstm no bias", lstm(20, 3, 16, 32, "forward", false, "Y"), 34048},
		{"lstm reverse", lstm(20, 3, 16, 32, "reverse", true, "Y"), 46592},
		{"lstm bidirectional", lstm(20, 3, 16, 32, "bidirectional", true, "Y"), 81152},
		{"conv integer 3x3", convInt([]int64{1, 16, 64, 64}, []int64{16, 16, 3, 3}, []int64{1, 16, 64, 64}, pads1), 589824},
		{"conv integer strided", convInt([]int64{1, 16, 64, 64}, []int64{32, 16, 3, 3}, []int64{1, 32, 32, 32}, pads1, ir.IntsAttr("strides", 2, 2)), 147456},
		{"conv integer filters > output", convInt([]int64{1, 64, 4, 4}, []int64{128, 64, 3, 3}, []int64{1, 128, 4, 4}, pads1), 9216},
		{"conv integer depthwise", convInt([]int64{1, 16, 64, 64}, []int64{16, 1, 3, 3}, []int64{1, 16, 64, 64}, pads1, ir.IntAttr("group", 16)), 36864},
		{"conv integer 4 groups", convInt([]int64{1, 16, 64, 64}, []int64{16, 4, 3, 3}, []int64{1, 16, 64, 64}, pads1, ir.IntAttr("group", 4)), 147456},
		{"conv integer 1-D", convInt([]int64{1, 16, 4096}, []int64{16, 16, 3}, []int64{1, 16, 4096}, ir.IntsAttr("pads", 1, 1)), 196608},
		{"conv integer 5x5 batch 2", convInt([]int64{2, 8, 32, 32}, []int64{16, 8, 5, 5}, []int64{2, 16, 32, 32}, ir.IntsAttr("pads", 2, 2, 2, 2)), 204800},
		{"conv integer 1x1 stride 2", convInt([]int64{1, 16, 64, 64}, []int64{16, 16, 1, 1}, []int64{1, 16, 32, 32}, ir.IntsAttr("strides", 2, 2)), 16384},
		{"conv integer 1x1 padded", convInt([]int64{1, 16, 32, 32}, []int64{16, 16, 1, 1}, []int64{1, 16, 34, 34}, pads1), 18688},
		{"conv integer 1x1", convInt([]int64{1, 16, 64, 64}, []int64{16, 16, 1, 1}, []int64{1, 16, 64, 64}), 0},
		{"matmul integer", func() *ir.Node {
			n := conv("MatMulInteger", []int64{256, 512}, []int64{512, 384}, []int64{256, 384})
			n.Inputs[0].Type.DType, n.Inputs[1].Type.DType, n.Outputs[0].Type.DType = ir.Uint8, ir.Int8, ir.Int32
			return n
		}(), 0},
		{"dynamic quantize linear", func() *ir.Node {
			g := ir.NewGraph("dql")
			n := g.NewNode("DynamicQuantizeLinear", "", []*ir.Value{g.AddInput("x", f32(1, 16, 64, 64))}, []string{"q", "s", "z"})
			n.Outputs[0].Type, n.Outputs[1].Type, n.Outputs[2].Type = ir.TensorOf(ir.Uint8, 1, 16, 64, 64), f32(), ir.TensorOf(ir.Uint8)
			return n
		}(), 0},
		{"where", func() *ir.Node {
			g := ir.NewGraph("where")
			n := g.NewNode("Where", "", []*ir.Value{g.AddInput("c", ir.TensorOf(ir.Bool, 4, 2, 64, 64)), g.AddInput("x", f32(4, 2, 64, 64)), g.AddInput("y", f32())}, []string{"o"})
			n.Outputs[0].Type = f32(4, 2, 64, 64)
			return n
		}(), 262144},
		{"sum of two", variadic("Sum", 2), 0},
		{"sum of three", variadic("Sum", 3), 262144},
		{"sum of five", variadic("Sum", 5), 262144},
		{"max of three", variadic("Max", 3), 262144},
		{"min of three", variadic("Min", 3), 262144},
		{"mean of three", variadic("Mean", 3), 262144},
		{"lrn", func() *ir.Node {
			n := conv("LRN", []int64{1, 16, 32, 32}, []int64{1}, []int64{1, 16, 32, 32})
			n.SetAttr(ir.IntAttr("size", 5))
			return n
		}(), 147456},
	} {
		if got := Workspace(tt.n); got != tt.want {
			t.Errorf("%s: Workspace = %d, want %d (measured)", tt.name, got, tt.want)
		}
	}
}

// variadic is op over k inputs of f32[1,16,64,64], the second one
// f32[1,16,1,1] (broadcast), as measured.
func variadic(op string, k int) *ir.Node {
	g := ir.NewGraph(op)
	var ins []*ir.Value
	for i := range k {
		shape := f32(1, 16, 64, 64)
		if i == 1 {
			shape = f32(1, 16, 1, 1)
		}
		ins = append(ins, g.AddInput(fmt.Sprint("x", i), shape))
	}
	n := g.NewNode(op, "", ins, []string{"o"})
	n.Outputs[0].Type = f32(1, 16, 64, 64)
	return n
}

func TestORTLRNWorkspaceIsTwoAllocations(t *testing.T) {
	// LRN of a graph input f32[1,192,56,56] (2408448 bytes) into the graph
	// output: the output takes a new 4 MiB region whole; the scale
	// (2408448) another 4 MiB chunk, the padded squares (192+4 channels:
	// 2458624) exactly their bytes. One request of both (4867072) would
	// have taken an 8 MiB chunk.
	g := ir.NewGraph("lrn")
	x := g.AddInput("x", f32(1, 192, 56, 56))
	n := g.NewNode("LRN", "", []*ir.Value{x}, []string{"y"})
	n.Outputs[0].Type = f32(1, 192, 56, 56)
	n.SetAttr(ir.IntAttr("size", 5))
	g.AddOutput(n.Outputs[0])
	r, err := memory.Simulate(g, g.Nodes, Memory())
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakBytes != 10847232 || r.Workspace[0] != 6652928 {
		t.Errorf("peak %d, workspace %d; want 10847232, 6652928 (measured)", r.PeakBytes, r.Workspace[0])
	}
}

func TestORTDynamicQuantization(t *testing.T) {
	// quantize_dynamic's form of a 3×3 16→16 convolution, in the order ORT
	// ran it: a = x·s; DynamicQuantizeLinear(a) gives a uint8 T/4 and two
	// scalar chunks; the scales' product; ConvInteger writes int32 into a's
	// freed buffer (same element size and shape) with its 589824-byte uint8
	// im2col buffer, which takes the 720128 bytes left of the first 1 MiB
	// region as one chunk; the Cast to float32 runs in place; the scaled
	// output and the graph output are new buffers.
	g := ir.NewGraph("dq")
	x := g.AddInput("x", f32(1, 16, 64, 64))
	s := g.AddParam("s", f32(), ir.Float32Tensor(nil, 1.01))
	ws := g.AddParam("w_scale", f32(), ir.Float32Tensor(nil, 0.01))
	w := g.AddParam("w_q", ir.TensorOf(ir.Int8, 16, 16, 3, 3), nil)
	wz := g.AddParam("w_zp", ir.TensorOf(ir.Int8), nil)
	p := &probe{g: g, s: s}
	a := p.op("Mul", f32(1, 16, 64, 64), x, s)
	dql := g.NewNode("DynamicQuantizeLinear", "", []*ir.Value{a}, []string{"a_q", "a_s", "a_z"})
	dql.Outputs[0].Type = ir.TensorOf(ir.Uint8, 1, 16, 64, 64)
	dql.Outputs[1].Type, dql.Outputs[2].Type = f32(), ir.TensorOf(ir.Uint8)
	sc := p.op("Mul", f32(), dql.Outputs[1], ws)
	ci := p.op("ConvInteger", ir.TensorOf(ir.Int32, 1, 16, 64, 64), dql.Outputs[0], w, dql.Outputs[2], wz)
	ci.Def.SetAttr(ir.IntsAttr("pads", 1, 1, 1, 1))
	cf := p.op("Cast", f32(1, 16, 64, 64), ci)
	y := p.op("Mul", f32(1, 16, 64, 64), cf, sc)
	p.g.AddOutput(p.op("Mul", f32(1, 16, 64, 64), y, s))
	if got, want := inUse(t, g), []int64{T, T + T/4 + 512, T + T/4 + 768, T + T/4 + 512, T + 256, 2*T + 256, 2*T + T/4 + 768}; !slices.Equal(got, want) {
		t.Errorf("in use %v, want %v (measured)", got, want)
	}
	r, err := memory.Simulate(g, g.Nodes, Memory())
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakBytes != 1048320 || r.PeakStep != 3 || r.Workspace[3] != 720128 {
		t.Errorf("peak %d at step %d (workspace %d), want 1048320 at the ConvInteger (workspace chunk 720128) (measured)", r.PeakBytes, r.PeakStep, r.Workspace[3])
	}
}

func TestORTSubgraphRunsInTheArena(t *testing.T) {
	// y = If(c) { then: t = x·s; out = t·s } else { out = x·s }: while
	// the If runs, its output and the then branch's t are allocated.
	g := ir.NewGraph("if")
	x := g.AddInput("x", f32(1, 16, 64, 64))
	cond := g.AddInput("c", ir.TensorOf(ir.Bool))
	s := g.AddParam("s", ir.TensorOf(ir.Float32), ir.Float32Tensor(nil, 1.01))
	then := g.NewSubgraph("then")
	tv := then.NewNode("Mul", "", []*ir.Value{x, s}, []string{"t"})
	tv.Outputs[0].Type = f32(1, 16, 64, 64)
	to := then.NewNode("Mul", "", []*ir.Value{tv.Outputs[0], s}, []string{"out_then"})
	to.Outputs[0].Type = f32(1, 16, 64, 64)
	then.AddOutput(to.Outputs[0])
	els := g.NewSubgraph("else")
	eo := els.NewNode("Mul", "", []*ir.Value{x, s}, []string{"out_else"})
	eo.Outputs[0].Type = f32(1, 16, 64, 64)
	els.AddOutput(eo.Outputs[0])
	n := g.NewNode("If", "", []*ir.Value{cond}, []string{"y"})
	n.Outputs[0].Type = f32(1, 16, 64, 64)
	n.SetAttr(ir.GraphAttr("then_branch", then))
	n.SetAttr(ir.GraphAttr("else_branch", els))
	n.AddImplicit(x)
	n.AddImplicit(s)
	g.AddOutput(n.Outputs[0])
	r, err := memory.Simulate(g, g.Nodes, Memory())
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakBytes != 2*T || r.Workspace[0] != T || r.After[0] != T {
		t.Errorf("peak %d, workspace %v, after %v; want %d, [%d], [%d]", r.PeakBytes, r.Workspace, r.After, 2*T, T, T)
	}
	// Without the arena replay the estimate is the same.
	o := Memory()
	o.Arena = false
	if r, _ := memory.Simulate(g, g.Nodes, o); r.PeakBytes != 2*T {
		t.Errorf("without Arena: peak %d, want %d", r.PeakBytes, 2*T)
	}
}

func TestORTScatterElementsInPlace(t *testing.T) {
	// a = x·s; u = a·s; z = ConstantOfShape([16384]) takes a's freed
	// buffer; ScatterElements(z, idx, u) writes over z (0 new bytes),
	// then u dies; y = s·ScatterElements is a new graph output. Measured
	// as the probe [16384] model, nodes in this order. ScatterND over the
	// same z took a new buffer (not InPlace).
	const n, b = 16384, 4 * 16384
	p, x := newProbe(n)
	a := p.op("Mul", f32(n), x, p.s)
	u := p.op("Mul", f32(n), a, p.s)
	shp := p.g.AddParam("shp", ir.TensorOf(ir.Int64, 1), ir.Int64Tensor([]int64{1}, n))
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(i)
	}
	ix := p.g.AddParam("idx", ir.TensorOf(ir.Int64, n), ir.Int64Tensor([]int64{n}, idx...))
	z := p.op("ConstantOfShape", f32(n), shp)
	sc := p.op("ScatterElements", f32(n), z, ix, u)
	p.g.AddOutput(p.op("Mul", f32(n), sc, p.s))
	if got, want := inUse(t, p.g), []int64{b, 2 * b, 2 * b, 2 * b, 2 * b}; !slices.Equal(got, want) {
		t.Errorf("in use %v, want %v (measured)", got, want)
	}
}

func TestWhereSelections(t *testing.T) {
	// The selections are the condition broadcast with X and with Y: with
	// a [1,2,1,1] condition, X [4,2,64,64] and a scalar Y, 131072 and 8
	// bytes, allocated before the output; an empty Where has none.
	g := ir.NewGraph("w")
	cond := g.AddInput("c", ir.TensorOf(ir.Bool, 1, 2, 1, 1))
	x := g.AddInput("x", f32(4, 2, 64, 64))
	y := g.AddParam("y", ir.TensorOf(ir.Float32), ir.Float32Tensor(nil, 0))
	w := g.NewNode("Where", "", []*ir.Value{cond, x, y}, []string{"w"})
	w.Outputs[0].Type = f32(4, 2, 64, 64)
	if got, want := WorkspaceParts(w), []int64{131072, 8}; !slices.Equal(got, want) {
		t.Errorf("WorkspaceParts = %v, want %v", got, want)
	}
	if got, want := Workspace(w), int64(131072+256); got != want {
		t.Errorf("Workspace = %d, want %d", got, want)
	}
	if !WorkspaceFirst(w) {
		t.Error("WorkspaceFirst(Where) = false")
	}
	e := g.AddInput("e", f32(0, 2))
	ec := g.AddInput("ec", ir.TensorOf(ir.Bool, 0, 2))
	we := g.NewNode("Where", "", []*ir.Value{ec, e, y}, []string{"we"})
	we.Outputs[0].Type = f32(0, 2)
	if got := WorkspaceParts(we); got != nil {
		t.Errorf("empty Where: WorkspaceParts = %v, want none", got)
	}
	if got := Workspace(we); got != 0 {
		t.Errorf("empty Where: Workspace = %d, want 0", got)
	}
}

// TestHiddenHead: the head of an export with hidden shapes computes each
// hidden input's Shape and its Concat with the empty tensor (int64
// tensors of the input's rank); the planner keeps the buffer freed last
// when the body's Concat helpers compute tensors of that length (a
// Reshape to the input's rank), and releases the rest. Measured on VGG19's
// training graph (64², batch 4, fitted at 70%): ORT holds 256 bytes from
// the head on, at offset 256 of the first region.
func TestHiddenHead(t *testing.T) {
	build := func(inputs int, to ...int64) *ir.Graph {
		p, x := newProbe(1, 16, 64, 64)
		in := []*ir.Value{x}
		for range inputs - 1 {
			in = append(in, p.g.AddInput(fmt.Sprintf("x%d", len(in)), f32(1, 16, 64, 64)))
		}
		sum := in[0]
		for _, v := range in[1:] {
			sum = p.op("Add", f32(1, 16, 64, 64), sum, v)
		}
		a := p.op("Relu", f32(1, 16, 64, 64), sum)
		shape := p.g.AddParam("shape", ir.TensorOf(ir.Int64, int64(len(to))), ir.Int64Tensor([]int64{int64(len(to))}, to...))
		p.g.AddOutput(p.op("Reshape", f32(to...), a, shape))
		return p.g
	}
	reqs := func(g *ir.Graph) []memory.ArenaRequest {
		return memoryFor(onnxexp.Options{HideShapes: true}).Preamble(g)
	}
	shape := memory.ArenaRequest{Bytes: 32}
	for _, c := range []struct {
		name string
		g    *ir.Graph
		want []memory.ArenaRequest
	}{
		{"reshape to rank 4: the Concat's buffer stays", build(1, 1, 16, 4096, 1), []memory.ArenaRequest{shape, shape, {Free: 0}}},
		{"reshape to rank 2: both released", build(1, 16, 4096), []memory.ArenaRequest{shape, shape, {Free: 0}, {Free: 1}}},
		{"two inputs: the second input's tensors take the first's buffers", build(2, 1, 16, 4096, 1), []memory.ArenaRequest{shape, shape, {Free: 1}}},
	} {
		if got := reqs(c.g); !slices.Equal(got, c.want) {
			t.Errorf("%s: preamble %v, want %v", c.name, got, c.want)
		}
	}
	if got := Memory().Preamble; got != nil {
		t.Errorf("shapes shown: a preamble is set")
	}
}
