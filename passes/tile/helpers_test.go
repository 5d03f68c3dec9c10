package tile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// gb builds small NCHW test graphs with shapes inferred as it goes.
type gb struct {
	t   testing.TB
	g   *ir.Graph
	rng *rand.Rand
	k   int
}

func newGB(t testing.TB, seed uint64, opset int64) *gb {
	g := ir.NewGraph(fmt.Sprintf("g%d", seed))
	g.Opsets = []ir.Opset{{Domain: "", Version: opset}}
	return &gb{t: t, g: g, rng: rand.New(rand.NewPCG(seed, 7))}
}

func (b *gb) name(p string) string {
	b.k++
	return fmt.Sprintf("%s%d", p, b.k)
}

func (b *gb) input(dims ...int64) *ir.Value {
	return b.g.AddInput(b.name("x"), ir.TensorOf(ir.Float32, dims...))
}

// floats returns a float32 parameter of random values in [-1, 1).
func (b *gb) floats(dims ...int64) *ir.Value {
	t := ir.TensorOf(ir.Float32, dims...)
	n, _ := t.NumElements()
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(b.rng.Float64()*2 - 1)
	}
	return b.g.AddParam(b.name("w"), t, ir.Float32Tensor(dims, vals...))
}

func (b *gb) ints(vals ...int64) *ir.Value {
	return b.g.AddParam(b.name("c"), ir.TensorOf(ir.Int64, int64(len(vals))), ir.Int64Tensor([]int64{int64(len(vals))}, vals...))
}

// op adds a node and infers its output type.
func (b *gb) op(op string, ins []*ir.Value, attrs ...ir.Attr) *ir.Value {
	b.t.Helper()
	n := b.g.NewNode(op, "", ins, []string{b.name("v")})
	n.Name = b.name(op)
	for _, a := range attrs {
		n.SetAttr(a)
	}
	b.infer()
	return n.Outputs[0]
}

func (b *gb) infer() {
	b.t.Helper()
	if err := shapes.Infer(b.g, shapes.Options{RequireStatic: true}); err != nil {
		b.t.Fatalf("shapes: %v", err)
	}
}

func dims(v *ir.Value) []int64 {
	d, _ := v.Type.Dims()
	return d
}

// conv adds a Conv with random weights and bias.
func (b *gb) conv(x *ir.Value, cout, k, s, d int64, pads [4]int64, group int64) *ir.Value {
	cin := dims(x)[1]
	return b.op("Conv", []*ir.Value{x, b.floats(cout, cin/group, k, k), b.floats(cout)},
		ir.IntsAttr("kernel_shape", k, k), ir.IntsAttr("strides", s, s), ir.IntsAttr("dilations", d, d),
		ir.IntsAttr("pads", pads[:]...), ir.IntAttr("group", group))
}

// checkTypes checks that the types the rewrite gave every value are the
// ones shape inference derives.
func checkTypes(t *testing.T, g *ir.Graph) {
	t.Helper()
	if err := ir.Verify(g); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	saved := map[*ir.Value]ir.TensorType{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != nil {
				saved[o] = o.Type
				o.Type = ir.TensorType{}
			}
		}
	}
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatalf("shapes of the tiled graph: %v", err)
	}
	for v, want := range saved {
		if !v.Type.Equal(want) {
			t.Fatalf("value %s: the rewrite says %s, shape inference %s", v, want, v.Type)
		}
	}
}

var _ = math.Inf

func itoa(x int64) string { return fmt.Sprint(x) }

// randomGraph builds a random tileable NCHW graph: a chain of convs
// (kernels 1–5, strides 1–2, dilations 1–2, asymmetric pads, depthwise or
// dense), pools (max and average, ceil mode, count_include_pad),
// activations, BatchNormalization, per-channel Mul, residual Adds and
// channel Concats of earlier values, nearest Resize ×2 and ConvTranspose
// upsampling. One or two values are graph outputs.
func randomGraph(t testing.TB, seed uint64) *ir.Graph {
	b := newGB(t, seed, 17)
	rng := b.rng
	cur := b.input(1, 1+rng.Int64N(3), 12+rng.Int64N(29), 6+rng.Int64N(12))
	var earlier []*ir.Value
	steps := 3 + rng.IntN(7)
	for range steps {
		d := dims(cur)
		c, h, w := d[1], d[2], d[3]
		earlier = append(earlier, cur)
		kind := rng.IntN(14)
		if h > 48 || w > 48 {
			kind = 0 // shrink big images with a strided conv
		}
		switch kind {
		case 0, 1, 2:
			k, s, dil := 1+rng.Int64N(5), 1+rng.Int64N(2), 1+rng.Int64N(2)
			if h > 48 || w > 48 {
				k, s, dil = 3, 2, 1
			}
			ext := (k-1)*dil + 1
			var pads [4]int64
			for i := range pads {
				pads[i] = rng.Int64N(ext)
			}
			if h+pads[0]+pads[2] < ext+1 || w+pads[1]+pads[3] < ext {
				continue
			}
			cout, group := []int64{1, 2, 3, 4, 8, 16, 32}[rng.IntN(7)], int64(1)
			if rng.IntN(3) == 0 {
				cout, group = c, c
			}
			cur = b.conv(cur, cout, k, s, dil, pads, group)
		case 3, 4:
			k, s := 2+rng.Int64N(2), 1+rng.Int64N(2)
			var pads [4]int64
			for i := range pads {
				pads[i] = rng.Int64N(k/2 + 1)
			}
			if h+pads[0]+pads[2] < k+1 || w+pads[1]+pads[3] < k {
				continue
			}
			attrs := []ir.Attr{ir.IntsAttr("kernel_shape", k, k), ir.IntsAttr("strides", s, s), ir.IntsAttr("pads", pads[:]...),
				ir.IntAttr("ceil_mode", rng.Int64N(2))}
			op := "MaxPool"
			if kind == 4 {
				op = "AveragePool"
				attrs = append(attrs, ir.IntAttr("count_include_pad", rng.Int64N(2)))
			}
			cur = b.op(op, []*ir.Value{cur}, attrs...)
		case 5, 6:
			switch rng.IntN(6) {
			case 0:
				cur = b.op("Relu", []*ir.Value{cur})
			case 1:
				cur = b.op("Sigmoid", []*ir.Value{cur})
			case 2:
				cur = b.op("LeakyRelu", []*ir.Value{cur}, ir.FloatAttr("alpha", 0.1))
			case 3:
				cur = b.op("Tanh", []*ir.Value{cur})
			case 4:
				cur = b.op("HardSigmoid", []*ir.Value{cur})
			default:
				lo := b.g.AddParam(b.name("lo"), ir.TensorOf(ir.Float32), ir.Float32Tensor(nil, 0))
				hi := b.g.AddParam(b.name("hi"), ir.TensorOf(ir.Float32), ir.Float32Tensor(nil, 0.5))
				cur = b.op("Clip", []*ir.Value{cur, lo, hi})
			}
		case 7:
			v := b.floats(c)
			v.Data = ir.Float32Tensor([]int64{c}, positive(b, c)...)
			cur = b.op("BatchNormalization", []*ir.Value{cur, b.floats(c), b.floats(c), b.floats(c), v}, ir.FloatAttr("epsilon", 1e-3))
		case 8:
			var same []*ir.Value
			for _, e := range earlier[:len(earlier)-1] {
				if fmt.Sprint(dims(e)) == fmt.Sprint(d) {
					same = append(same, e)
				}
			}
			if len(same) == 0 {
				cur = b.op("Mul", []*ir.Value{cur, b.floats(1, c, 1, 1)})
				continue
			}
			cur = b.op("Add", []*ir.Value{cur, same[rng.IntN(len(same))]})
		case 9:
			var same []*ir.Value
			for _, e := range earlier[:len(earlier)-1] {
				if ed := dims(e); ed[2] == h && ed[3] == w {
					same = append(same, e)
				}
			}
			if len(same) == 0 {
				continue
			}
			cur = b.op("Concat", []*ir.Value{same[rng.IntN(len(same))], cur}, ir.IntAttr("axis", 1))
		case 10:
			if h > 24 || w > 24 {
				continue
			}
			modes := [][2]string{{"asymmetric", "floor"}, {"half_pixel", "round_prefer_floor"}, {"half_pixel", "round_prefer_ceil"},
				{"pytorch_half_pixel", "floor"}, {"asymmetric", "round_prefer_ceil"}, {"tf_half_pixel_for_nn", "ceil"}}
			m := modes[rng.IntN(len(modes))]
			scales := b.g.AddParam(b.name("scales"), ir.TensorOf(ir.Float32, 4), ir.Float32Tensor([]int64{4}, 1, 1, 2, 2))
			cur = b.op("Resize", []*ir.Value{cur, nil, scales}, ir.StringAttr("mode", "nearest"),
				ir.StringAttr("coordinate_transformation_mode", m[0]), ir.StringAttr("nearest_mode", m[1]))
		case 12, 13:
			// A residual block: conv (3×3 or 5×5, same size) → BN → Add
			// of the block's input → Relu, the Add fused into the conv
			// by ONNX Runtime's layout optimizer.
			k := 3 + 2*rng.Int64N(2)
			y := b.conv(cur, c, k, 1, 1, [4]int64{k / 2, k / 2, k / 2, k / 2}, 1)
			if rng.IntN(2) == 0 {
				// An inverted-residual tail: Relu, then a 1×1 projection.
				y = b.conv(b.op("Relu", []*ir.Value{y}), c, 1, 1, 1, [4]int64{}, 1)
			}
			if rng.IntN(2) == 0 {
				v := b.floats(c)
				v.Data = ir.Float32Tensor([]int64{c}, positive(b, c)...)
				y = b.op("BatchNormalization", []*ir.Value{y, b.floats(c), b.floats(c), b.floats(c), v})
			}
			cur = b.op("Relu", []*ir.Value{b.op("Add", []*ir.Value{y, cur})})
		case 11:
			if h > 24 || w > 24 {
				continue
			}
			k := 2 + rng.Int64N(2)
			cout := 1 + rng.Int64N(3)
			p := rng.Int64N(k - 1)
			cur = b.op("ConvTranspose", []*ir.Value{cur, b.floats(c, cout, k, k), b.floats(cout)},
				ir.IntsAttr("strides", 2, 2), ir.IntsAttr("pads", p, 0, 0, p))
		}
	}
	b.g.AddOutput(cur)
	if len(earlier) > 2 && rng.IntN(3) == 0 {
		e := earlier[1+rng.IntN(len(earlier)-1)]
		if e != cur && e.Def != nil {
			b.g.AddOutput(e)
		}
	}
	return b.g
}

// positive returns n random values in [0.5, 1.5).
func positive(b *gb, n int64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(0.5 + b.rng.Float64())
	}
	return v
}

// randomSplit picks the whole graph or a contiguous run of its nodes
// (made a union of whole fusion groups), rows or columns, and 2 to 4 bands
// (fewer when the region's outputs are short); grid says whether to tile
// each band again along the other axis.
func randomSplit(g *ir.Graph, seed uint64) (r Region, s Split, grid bool) {
	rng := rand.New(rand.NewPCG(seed, 11))
	nodes := g.Nodes
	if rng.IntN(2) == 0 && len(nodes) > 2 {
		i := rng.IntN(len(nodes) - 1)
		j := i + 1 + rng.IntN(len(nodes)-i-1)
		nodes = nodes[i : j+1]
	}
	// Whole fusion groups only (see fusion.go).
	set := map[*ir.Node]bool{}
	for _, n := range nodes {
		set[n] = true
	}
	nodes = closeRegion(g, set, FusionGroups(g), func(*ir.Node) bool { return true })
	axis := 2 + rng.IntN(2)
	bands := 2 + rng.IntN(3)
	for _, n := range nodes {
		if d, ok := n.Outputs[0].Type.Dims(); ok && int(d[axis]) < bands {
			bands = max(2, int(d[axis]))
		}
	}
	return Region{Nodes: nodes, Axis: axis}, Split{Bands: bands}, rng.IntN(3) == 0
}
