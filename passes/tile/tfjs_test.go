package tile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// tfb builds small NHWC TensorFlow graphs (ir.TFDomain) with shapes
// inferred as it goes, with gb's names and weights.
type tfb struct{ *gb }

// i32 returns an int32 Const.
func (b tfb) i32(shape []int64, vals ...int64) *ir.Value {
	bl := &builder{g: b.g, names: map[string]bool{}, params: map[string]*ir.Value{}}
	v := bl.int32s(shape, vals...)
	v.Name = b.name("c")
	return v
}

// op adds a node of float type T with outs outputs (1 when 0) and infers
// its output types.
func (b tfb) op(op string, ins []*ir.Value, outs int, attrs ...ir.Attr) *ir.Value {
	b.t.Helper()
	name := b.name(op)
	names := []string{name}
	for i := 1; i < outs; i++ {
		names = append(names, fmt.Sprintf("%s:%d", name, i))
	}
	n := b.g.NewNode(op, ir.TFDomain, ins, names)
	n.Name = name
	n.SetAttr(ir.StringAttr("T", "DT_FLOAT"))
	for _, a := range attrs {
		n.SetAttr(a)
	}
	if err := shapes.Infer(b.g, shapes.Options{RequireStatic: true}); err != nil {
		b.t.Fatalf("shapes: %v", err)
	}
	return n.Outputs[0]
}

func nhwc(v *ir.Value) (h, w, c int64) {
	d := dims(v)
	return d[1], d[2], d[3]
}

// window returns a random convolution kernel extent for an input of
// extents h×w and the attributes: stride, dilation (1 when the stride is
// 2), padding, and the explicit pads for padding EXPLICIT.
func (b tfb) window(h, w int64) (k int64, attrs []ir.Attr) {
	k = []int64{1, 2, 3, 3, 5}[b.rng.IntN(5)]
	s, d := int64(1+b.rng.IntN(2)), int64(1)
	if s == 1 && b.rng.IntN(3) == 0 {
		d = 2
	}
	pad := []string{"SAME", "VALID", "EXPLICIT"}[b.rng.IntN(3)]
	if (k-1)*d+1 > min(h, w) {
		pad = "SAME"
	}
	ep := []int64{}
	if pad == "EXPLICIT" {
		ext := (k-1)*d + 1
		ep = []int64{0, 0, b.rng.Int64N(ext), b.rng.Int64N(ext), b.rng.Int64N(ext), b.rng.Int64N(ext), 0, 0}
	}
	return k, []ir.Attr{ir.IntsAttr("strides", 1, s, s, 1), ir.StringAttr("padding", pad), ir.StringAttr("data_format", "NHWC"),
		ir.IntsAttr("dilations", 1, d, d, 1), ir.IntsAttr("explicit_paddings", ep...)}
}

// randomTFGraph builds a random tileable NHWC graph: Conv2D, depthwise
// and fused convolutions (kernels 1–5, strides 1–2, dilation 2, SAME,
// VALID and EXPLICIT padding, fused BiasAdd with Relu or Relu6), MaxPool
// (SAME and VALID), AvgPool (VALID, SAME without padding), activations,
// BiasAdd, FusedBatchNormV3, per-channel Mul, residual AddV2 and channel
// ConcatV2 with earlier values, constant Pad, and ResizeBilinear and
// ResizeNearestNeighbor ×2 with and without half-pixel centers. One or
// two values are graph outputs.
func randomTFGraph(t testing.TB, seed uint64) *ir.Graph {
	g := ir.NewGraph(fmt.Sprintf("tf%d", seed))
	b := tfb{&gb{t: t, g: g, rng: rand.New(rand.NewPCG(seed, 13))}}
	h, w := int64(10+b.rng.IntN(15)), int64(10+b.rng.IntN(15))
	x := g.AddInput("input", ir.TensorOf(ir.Float32, 1, h, w, int64([]int{3, 4, 8}[b.rng.IntN(3)])))
	vals := []*ir.Value{x}
	steps := 4 + b.rng.IntN(6)
	for range steps {
		h, w, c := nhwc(x)
		switch r := b.rng.IntN(14); {
		case r < 3: // dense convolution
			k, attrs := b.window(h, w)
			cout := int64([]int{4, 8, 12}[b.rng.IntN(3)])
			ins := []*ir.Value{x, b.floats(k, k, c, cout)}
			op := "Conv2D"
			if b.rng.IntN(2) == 0 {
				op = "_FusedConv2D"
				ins = append(ins, b.floats(cout))
				fused := [][]string{{"BiasAdd"}, {"BiasAdd", "Relu"}, {"BiasAdd", "Relu6"}}[b.rng.IntN(3)]
				attrs = append(attrs, ir.IntAttr("num_args", 1), ir.Attr{Name: "fused_ops", Kind: ir.AttrStrings, Strs: bytesOf2(fused)})
			}
			x = b.op(op, ins, 1, attrs...)
		case r < 5: // depthwise convolution
			k, attrs := b.window(h, w)
			ins := []*ir.Value{x, b.floats(k, k, c, 1)}
			op := "DepthwiseConv2dNative"
			if b.rng.IntN(2) == 0 {
				op = "FusedDepthwiseConv2dNative"
				ins = append(ins, b.floats(c))
				attrs = append(attrs, ir.IntAttr("num_args", 1), ir.Attr{Name: "fused_ops", Kind: ir.AttrStrings, Strs: bytesOf2([]string{"BiasAdd", "Relu6"})})
			}
			x = b.op(op, ins, 1, attrs...)
		case r == 5: // pools
			k, st := int64(2+b.rng.IntN(2)), int64(1+b.rng.IntN(2))
			pad := []string{"SAME", "VALID"}[b.rng.IntN(2)]
			op := []string{"MaxPool", "AvgPool"}[b.rng.IntN(2)]
			if op == "AvgPool" && pad == "SAME" {
				k, st = 2, 2 // pads only along an odd extent
			}
			if k > min(h, w) {
				k, st = 1, 1
			}
			x = b.op(op, []*ir.Value{x}, 1, ir.IntsAttr("ksize", 1, k, k, 1), ir.IntsAttr("strides", 1, st, st, 1),
				ir.StringAttr("padding", pad), ir.StringAttr("data_format", "NHWC"))
		case r == 6:
			x = b.op([]string{"Relu", "Relu6", "Sigmoid", "Tanh", "Elu"}[b.rng.IntN(5)], []*ir.Value{x}, 1)
		case r == 7:
			if b.rng.IntN(2) == 0 {
				x = b.op("BiasAdd", []*ir.Value{x, b.floats(c)}, 1, ir.StringAttr("data_format", "NHWC"))
			} else {
				x = b.op("Mul", []*ir.Value{x, b.floats(c)}, 1)
			}
		case r == 8:
			scale, mean := b.floats(c), b.floats(c)
			variance := b.g.AddParam(b.name("var"), ir.TensorOf(ir.Float32, c), ir.Float32Tensor([]int64{c}, positive(b.gb, c)...))
			x = b.op("FusedBatchNormV3", []*ir.Value{x, scale, b.floats(c), mean, variance}, 6,
				ir.IntAttr("is_training", 0), ir.FloatAttr("epsilon", 0.001), ir.StringAttr("data_format", "NHWC"), ir.StringAttr("U", "DT_FLOAT"))
		case r == 9 || r == 10: // residual AddV2 or channel ConcatV2 with an earlier value
			var same, hw []*ir.Value
			for _, v := range vals[:len(vals)-1] {
				if dims(v)[1] == h && dims(v)[2] == w {
					hw = append(hw, v)
					if dims(v)[3] == c {
						same = append(same, v)
					}
				}
			}
			switch {
			case r == 9 && len(same) > 0:
				x = b.op("AddV2", []*ir.Value{x, same[b.rng.IntN(len(same))]}, 1)
			case len(hw) > 0:
				y := hw[b.rng.IntN(len(hw))]
				x = b.op("ConcatV2", []*ir.Value{y, x, b.i32(nil, []int64{3, -1}[b.rng.IntN(2)])}, 1, ir.IntAttr("N", 2), ir.StringAttr("Tidx", "DT_INT32"))
			default:
				x = b.op("Relu", []*ir.Value{x}, 1)
			}
		case r == 11:
			p := []int64{0, 0, b.rng.Int64N(3), b.rng.Int64N(3), b.rng.Int64N(3), b.rng.Int64N(3), 0, 0}
			x = b.op("Pad", []*ir.Value{x, b.i32([]int64{4, 2}, p...)}, 1, ir.StringAttr("Tpaddings", "DT_INT32"))
		default: // upsampling ×2
			if h*w > 400 {
				x = b.op("Relu6", []*ir.Value{x}, 1)
				break
			}
			op := []string{"ResizeBilinear", "ResizeNearestNeighbor"}[b.rng.IntN(2)]
			x = b.op(op, []*ir.Value{x, b.i32([]int64{2}, 2*h, 2*w)}, 1,
				ir.IntAttr("align_corners", 0), ir.IntAttr("half_pixel_centers", int64(b.rng.IntN(2))))
		}
		vals = append(vals, x)
	}
	g.AddOutput(x)
	if len(vals) > 3 && b.rng.IntN(3) == 0 {
		g.AddOutput(vals[1+b.rng.IntN(len(vals)-2)])
	}
	return g
}

func bytesOf2(s []string) [][]byte {
	out := make([][]byte, len(s))
	for i, x := range s {
		out[i] = []byte(x)
	}
	return out
}

// writeTFJS writes g as a TensorFlow.js model under dir and returns the
// model.json's path.
func writeTFJS(t *testing.T, g *ir.Graph, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "model.json")
	if err := gdexp.ExportFile(g, p, gdexp.Options{}); err != nil {
		t.Fatalf("export %s: %v", g.Name, err)
	}
	return p
}

// TestTiledBitwiseInTFJS is the property test of the rewrite on
// TensorFlow graphs: random NHWC graphs (randomTFGraph), tiled whole or in
// part into 2 to 4 bands along the rows or the columns, a third of them
// into grids (each band split again along the other axis), give outputs
// bitwise identical to the untiled graph in TensorFlow.js 4.22 on the wasm
// backend, and on the cpu backend for a quarter of them.
func TestTiledBitwiseInTFJS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs TensorFlow.js; skipped in -short mode")
	}
	dir := testmodels.RequireTFJS(t)
	const graphs = 120
	tmp := t.TempDir()
	var jobs []tfjs.Options
	var what []string
	grids, tiledCount := 0, 0
	for seed := uint64(1); seed <= graphs; seed++ {
		g := randomTFGraph(t, seed)
		tiled := cloneGraph(g)
		rng := rand.New(rand.NewPCG(seed, 17))
		nodes := tiled.Nodes
		if rng.IntN(2) == 0 && len(nodes) > 2 {
			i := rng.IntN(len(nodes) - 1)
			nodes = nodes[i : i+2+rng.IntN(len(nodes)-i-1)]
		}
		axis, bands := 1+rng.IntN(2), 2+rng.IntN(3)
		for _, n := range nodes {
			bands = max(2, min(bands, int(dims(n.Outputs[0])[axis])))
		}
		tl, err := Apply(tiled, Region{Nodes: nodes, Axis: axis}, Split{Bands: bands, Distinct: rng.IntN(2) == 0})
		if err != nil {
			t.Logf("seed %d: not tiled: %v", seed, err)
			continue
		}
		desc := fmt.Sprintf("seed %d (%d of %d nodes, %d bands along axis %d, %d nodes added", seed, len(nodes), len(g.Nodes), bands, axis, len(tl.Added))
		if seed%3 == 0 {
			// Each band again along the other axis: a grid.
			q := 0
			for _, band := range tl.BandNodes {
				if _, err := Apply(tiled, Region{Nodes: band, Axis: 3 - axis}, Split{Bands: 2}); err == nil {
					q++
				}
			}
			desc += fmt.Sprintf(", %d of them split in 2 along axis %d", q, 3-axis)
			grids += min(q, 1)
		}
		desc += ")"
		tiledCount++
		checkTypes(t, tiled)
		po := writeTFJS(t, g, filepath.Join(tmp, fmt.Sprint(seed, "o")))
		pt := writeTFJS(t, tiled, filepath.Join(tmp, fmt.Sprint(seed, "t")))
		in, err := tfjs.SeededInputs([]tfjs.InputSpec{{Name: "input", DType: tfjs.Float32, Shape: dims(g.Inputs[0])}}, seed)
		if err != nil {
			t.Fatal(err)
		}
		backends := []tfjs.Backend{tfjs.WASM}
		if seed%4 == 0 {
			backends = append(backends, tfjs.CPU)
		}
		for _, be := range backends {
			jobs = append(jobs, tfjs.Options{Dir: dir, Model: po, Inputs: in, Backend: be}, tfjs.Options{Dir: dir, Model: pt, Inputs: in, Backend: be})
			what = append(what, desc+" on "+string(be))
		}
	}
	if tiledCount < graphs*3/4 {
		t.Fatalf("only %d of %d random graphs were tiled", tiledCount, graphs)
	}
	if grids < graphs/6 {
		t.Fatalf("only %d grids", grids)
	}
	res, err := tfjs.RunAll(context.Background(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, desc := range what {
		ro, rt := res[2*i], res[2*i+1]
		if len(ro.Outputs) != len(rt.Outputs) {
			t.Fatalf("%s: %d outputs, tiled %d", desc, len(ro.Outputs), len(rt.Outputs))
		}
		for j, o := range ro.Outputs {
			if rt.Outputs[j].Name != o.Name {
				t.Fatalf("%s: output %d is %s, tiled %s", desc, j, o.Name, rt.Outputs[j].Name)
			}
			if !tfjs.Equal(o.Tensor, rt.Outputs[j].Tensor) {
				t.Errorf("%s: output %s differs: %s", desc, o.Name, describeTFJSDiff(o.Tensor, rt.Outputs[j].Tensor))
			}
		}
	}
	if !t.Failed() {
		t.Logf("%d tiled random TensorFlow graphs (%d grids), %d runs, bitwise identical to the untiled ones", tiledCount, grids, len(what))
	}
}

// describeTFJSDiff says how two float32 outputs differ.
func describeTFJSDiff(a, b tfjs.Tensor) string {
	if fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) {
		return fmt.Sprintf("shapes %v and %v", a.Shape, b.Shape)
	}
	x, y := a.Float32s(), b.Float32s()
	n, first := 0, -1
	for i := range x {
		if x[i] != y[i] {
			n++
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return "no element differs (NaN or bits)"
	}
	return fmt.Sprintf("%d of %d elements, first at %d (%v vs %v)", n, len(x), first, x[first], y[first])
}
