package ir

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The tests below check each spatial rule against a brute-force definition
// of its op along one axis: a reference implementation of the op on a
// column of integer-valued numbers (the other axes have extent 1), run on
// the whole input and on the band's input rows with the band's pads; the
// band's output must equal the whole output's rows [OutLo, OutHi), and the
// rows the band reads must contain every input row that contributes to the
// asked rows.

// op1d is one op along the axis: its node (built with the rule's
// attributes), its reference, and the contributing input rows of an output
// row.
type op1d struct {
	name string
	// attrs are the node's attributes; the axis is 2 of a [1,1,H,1] tensor.
	op    string
	attrs []Attr
	// extra builds the node's other inputs (weights, scales…).
	extra func(g *Graph) []*Value
	// ref computes the op's output over in, with pads (begin, end) and
	// output padding along the axis.
	ref func(in []float64, pb, pe, opad int64) []float64
	// contrib lists the input rows output row o reads.
	contrib func(o, inSize int64) []int64
	out     func(inSize int64) int64
}

// mkNode builds a graph with one node of op o on an input of extent h.
func (o op1d) mkNode(t *testing.T, h int64) *Node {
	t.Helper()
	g := NewGraph(o.name)
	g.Opsets = []Opset{{"", 17}}
	x := g.AddInput("x", TensorOf(Float32, 1, 1, h, 1))
	ins := []*Value{x}
	if o.extra != nil {
		ins = append(ins, o.extra(g)...)
	}
	n := g.NewNode(o.op, "", ins, []string{"y"})
	for _, a := range o.attrs {
		n.SetAttr(a)
	}
	n.Outputs[0].Type = TensorOf(Float32, 1, 1, o.out(h), 1)
	g.AddOutput(n.Outputs[0])
	return n
}

func weights(g *Graph, k int64) []*Value {
	vals := make([]float32, k)
	for i := range vals {
		vals[i] = float32(i*i + 1)
	}
	return []*Value{g.AddParam("w", TensorOf(Float32, 1, 1, k, 1), Float32Tensor([]int64{1, 1, k, 1}, vals...))}
}

func wts(k int64) []float64 {
	w := make([]float64, k)
	for i := range w {
		w[i] = float64(i*i + 1)
	}
	return w
}

// windowOp is Conv or a pool with the given geometry along the axis.
func windowOp(op string, k, s, d, pb, pe int64, ceil bool, includePad bool) op1d {
	ext := (k-1)*d + 1
	count := func(length, pe int64) int64 { // length = input rows + begin pad
		span := length + pe - ext
		if span < 0 {
			return 0
		}
		if !ceil {
			return span/s + 1
		}
		c := (span+s-1)/s + 1
		if (c-1)*s >= length {
			c--
		}
		return c
	}
	o := op1d{
		name: fmt.Sprintf("%s k%d s%d d%d p%d/%d ceil%v incl%v", op, k, s, d, pb, pe, ceil, includePad),
		op:   op,
		attrs: []Attr{IntsAttr("kernel_shape", k, 1), IntsAttr("strides", s, 1), IntsAttr("dilations", d, 1),
			IntsAttr("pads", pb, 0, pe, 0)},
		out: func(h int64) int64 { return count(h+pb, pe) },
		contrib: func(o, h int64) []int64 {
			var r []int64
			for j := int64(0); j < k; j++ {
				if i := o*s - pb + j*d; i >= 0 && i < h {
					r = append(r, i)
				}
			}
			return r
		},
	}
	if op != "Conv" {
		if ceil {
			o.attrs = append(o.attrs, IntAttr("ceil_mode", 1))
		}
		if includePad {
			o.attrs = append(o.attrs, IntAttr("count_include_pad", 1))
		}
	} else {
		o.extra = func(g *Graph) []*Value { return weights(g, k) }
	}
	w := wts(k)
	o.ref = func(in []float64, pb, pe, _ int64) []float64 {
		h := int64(len(in))
		n := count(h+pb, pe)
		out := make([]float64, max(n, 0))
		for oo := range out {
			start := int64(oo)*s - pb
			var acc float64
			valid := 0
			switch op {
			case "MaxPool":
				acc = math.Inf(-1)
			}
			for j := int64(0); j < k; j++ {
				i := start + j*d
				if i < 0 || i >= h {
					continue
				}
				valid++
				switch op {
				case "Conv":
					acc += w[j] * in[i]
				case "MaxPool":
					acc = math.Max(acc, in[i])
				case "AveragePool":
					acc += in[i]
				}
			}
			if op == "AveragePool" {
				div := float64(valid)
				if includePad { // ONNX Runtime: the window clipped to the end padding
					div = float64(min(start+ext, h+pe) - start)
				}
				acc /= div
			}
			out[oo] = acc
		}
		return out
	}
	return o
}

func convTransposeOp(k, s, d, pb, pe, opad int64) op1d {
	ext := (k-1)*d + 1
	w := wts(k)
	return op1d{
		name: fmt.Sprintf("ConvTranspose k%d s%d d%d p%d/%d op%d", k, s, d, pb, pe, opad),
		op:   "ConvTranspose",
		attrs: []Attr{IntsAttr("strides", s, 1), IntsAttr("dilations", d, 1),
			IntsAttr("pads", pb, 0, pe, 0), IntsAttr("output_padding", opad, 0)},
		extra: func(g *Graph) []*Value { return weights(g, k) },
		out:   func(h int64) int64 { return (h-1)*s + ext + opad - pb - pe },
		contrib: func(o, h int64) []int64 {
			var r []int64
			for i := int64(0); i < h; i++ {
				for j := int64(0); j < k; j++ {
					if i*s-pb+j*d == o {
						r = append(r, i)
					}
				}
			}
			return r
		},
		ref: func(in []float64, pb, pe, opad int64) []float64 {
			h := int64(len(in))
			n := (h-1)*s + ext + opad - pb - pe
			out := make([]float64, max(n, 0))
			for i := range h {
				for j := range k {
					if o := i*s - pb + j*d; o >= 0 && o < n {
						out[o] += w[j] * in[i]
					}
				}
			}
			return out
		},
	}
}

func padOp(mode string, pb, pe int64) op1d {
	return op1d{
		name:  fmt.Sprintf("Pad %s %d/%d", mode, pb, pe),
		op:    "Pad",
		attrs: []Attr{StringAttr("mode", mode)},
		extra: func(g *Graph) []*Value {
			return []*Value{g.AddParam("pads", TensorOf(Int64, 8), Int64Tensor([]int64{8}, 0, 0, pb, 0, 0, 0, pe, 0))}
		},
		out: func(h int64) int64 { return h + pb + pe },
		contrib: func(o, h int64) []int64 {
			i := o - pb
			if mode == "edge" {
				i = min(max(i, 0), h-1)
			}
			if i < 0 || i >= h {
				return nil
			}
			return []int64{i}
		},
		ref: func(in []float64, pb, pe, _ int64) []float64 {
			h := int64(len(in))
			out := make([]float64, max(h+pb+pe, 0))
			for o := range out {
				i := int64(o) - pb
				switch {
				case mode == "edge":
					out[o] = in[min(max(i, 0), h-1)]
				case i >= 0 && i < h:
					out[o] = in[i]
				default:
					out[o] = -7 // the constant
				}
			}
			return out
		},
	}
}

// resizeOp is Resize by an integer factor, with the source coordinate
// computed in floating point as ONNX defines it (independently of the
// rule's integer arithmetic).
func resizeOp(f int64, mode, coord, nearest string) op1d {
	x := func(o int64) float64 {
		switch coord {
		case "asymmetric":
			return float64(o) / float64(f)
		case "tf_half_pixel_for_nn":
			return (float64(o) + 0.5) / float64(f)
		}
		return (float64(o)+0.5)/float64(f) - 0.5
	}
	round := func(v float64) int64 {
		fl := math.Floor(v)
		switch nearest {
		case "floor":
			return int64(fl)
		case "ceil":
			return int64(math.Ceil(v))
		case "round_prefer_ceil":
			if v-fl == 0.5 {
				return int64(fl) + 1
			}
		default:
			if v-fl == 0.5 {
				return int64(fl)
			}
		}
		return int64(math.Round(v))
	}
	clamp := func(i, h int64) int64 { return min(max(i, 0), h-1) }
	return op1d{
		name:  fmt.Sprintf("Resize ×%d %s %s %s", f, mode, coord, nearest),
		op:    "Resize",
		attrs: []Attr{StringAttr("mode", mode), StringAttr("coordinate_transformation_mode", coord), StringAttr("nearest_mode", nearest)},
		extra: func(g *Graph) []*Value {
			return []*Value{nil, g.AddParam("scales", TensorOf(Float32, 4), Float32Tensor([]int64{4}, 1, 1, float32(f), 1))}
		},
		out: func(h int64) int64 { return h * f },
		contrib: func(o, h int64) []int64 {
			if mode == "linear" {
				fl := int64(math.Floor(x(o)))
				return []int64{clamp(fl, h), clamp(fl+1, h)}
			}
			return []int64{clamp(round(x(o)), h)}
		},
		ref: func(in []float64, _, _, _ int64) []float64 {
			h := int64(len(in))
			out := make([]float64, h*f)
			for o := range out {
				xo := x(int64(o))
				if mode == "linear" {
					xo = min(max(xo, 0), float64(h-1))
					fl := math.Floor(xo)
					i0, i1 := clamp(int64(fl), h), clamp(int64(fl)+1, h)
					out[o] = in[i0]*(1-(xo-fl)) + in[i1]*(xo-fl)
					continue
				}
				out[o] = in[clamp(round(xo), h)]
			}
			return out
		},
	}
}

// sliceOp slices rows start:end:step (ONNX clamping; the extent is fixed
// by the test's input extent, so start and end are given for extent h).
func sliceOp(start, end, step int64) op1d {
	norm := func(v, h int64) int64 {
		if v < 0 {
			v += h
		}
		return min(max(v, 0), h)
	}
	count := func(h int64) int64 {
		s, e := norm(start, h), norm(end, h)
		if e <= s {
			return 0
		}
		return (e-s-1)/step + 1
	}
	return op1d{
		name: fmt.Sprintf("Slice %d:%d:%d", start, end, step), op: "Slice",
		extra: func(g *Graph) []*Value {
			p := func(name string, v int64) *Value {
				return g.AddParam(name, TensorOf(Int64, 1), Int64Tensor([]int64{1}, v))
			}
			return []*Value{p("st", start), p("en", end), p("ax", 2), p("sp", step)}
		},
		out:     count,
		contrib: func(o, h int64) []int64 { return []int64{norm(start, h) + o*step} },
		ref: func(in []float64, pb, pe, _ int64) []float64 {
			// As a window of one row: it starts at −pb and its last row is
			// h+pe−1.
			n := (int64(len(in))+pe+pb-1)/step + 1
			out := make([]float64, n)
			for o := range out {
				out[o] = in[-pb+int64(o)*step]
			}
			return out
		},
	}
}

func depthToSpaceOp(b int64) op1d {
	return op1d{
		name: fmt.Sprintf("DepthToSpace %d", b), op: "DepthToSpace",
		attrs:   []Attr{IntAttr("blocksize", b)},
		out:     func(h int64) int64 { return h * b },
		contrib: func(o, h int64) []int64 { return []int64{o / b} },
		ref: func(in []float64, _, _, _ int64) []float64 {
			out := make([]float64, int64(len(in))*b)
			for o := range out {
				out[o] = in[int64(o)/b]
			}
			return out
		},
	}
}

// checkRule checks o's rule on every band of every input extent up to 11.
func checkRule(t *testing.T, o op1d) {
	t.Helper()
	for h := int64(1); h <= 11; h++ {
		outSize := o.out(h)
		if outSize <= 0 {
			continue
		}
		n := o.mkNode(t, h)
		if o.op == "DepthToSpace" {
			// DepthToSpace moves channels into space: give it b² channels.
			b := n.AttrInt("blocksize", 1)
			n.Inputs[0].Type = TensorOf(Float32, 1, b*b, h, h)
			n.Outputs[0].Type = TensorOf(Float32, 1, 1, h*b, h*b)
		}
		r, err := Spatial(n, 2)
		if err != nil && strings.Contains(err.Error(), "ceil_mode drops a last window") {
			continue // not local (see Spatial); TestSpatialRejects checks the case
		}
		if err != nil {
			t.Fatalf("%s, extent %d: Spatial: %v", o.name, h, err)
		}
		if r.InSize != h || r.OutSize != outSize {
			t.Fatalf("%s: rule extents %d → %d, want %d → %d", o.name, r.InSize, r.OutSize, h, outSize)
		}
		in := make([]float64, h)
		for i := range in {
			in[i] = float64((i*7)%11 - 5)
		}
		full := o.ref(in, r.PadBegin, r.PadEnd, r.OutputPadding)
		if int64(len(full)) != outSize {
			t.Fatalf("%s: reference gives %d rows, want %d", o.name, len(full), outSize)
		}
		for a := int64(0); a < outSize; a++ {
			for b := a + 1; b <= outSize; b++ {
				bd, err := r.Band(a, b)
				if err != nil {
					if o.op == "Pad" {
						continue // a band inside the padding reads nothing
					}
					t.Fatalf("%s, extent %d: Band(%d,%d): %v", o.name, h, a, b, err)
				}
				for oo := a; oo < b; oo++ {
					for _, i := range o.contrib(oo, h) {
						if i < bd.Lo || i >= bd.Hi {
							t.Fatalf("%s, extent %d: Band(%d,%d) reads [%d,%d), but row %d reads input row %d", o.name, h, a, b, bd.Lo, bd.Hi, oo, i)
						}
					}
				}
				got := o.ref(in[bd.Lo:bd.Hi], bd.PadBegin, bd.PadEnd, bd.OutputPadding)
				if int64(len(got)) != bd.OutHi-bd.OutLo {
					t.Fatalf("%s, extent %d: Band(%d,%d) = %+v produces %d rows, want %d", o.name, h, a, b, bd, len(got), bd.OutHi-bd.OutLo)
				}
				for j, v := range got {
					if oo := bd.OutLo + int64(j); r.Kind == SpatialUpsample && (oo < a || oo >= b) {
						continue // an upsampling band is exact on the rows asked for only
					}
					if w := full[bd.OutLo+int64(j)]; v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
						t.Fatalf("%s, extent %d: Band(%d,%d) = %+v: row %d is %v, the whole op's %v", o.name, h, a, b, bd, bd.OutLo+int64(j), v, w)
					}
				}
			}
		}
	}
}

func TestSpatialRulesMatchBruteForce(t *testing.T) {
	var ops []op1d
	for k := int64(1); k <= 5; k++ {
		for s := int64(1); s <= 3; s++ {
			for d := int64(1); d <= 2; d++ {
				ext := (k-1)*d + 1
				// Pads: none, half the extent, the extent less one.
				pads := []int64{0}
				if ext > 2 {
					pads = append(pads, ext/2)
				}
				if ext > 1 {
					pads = append(pads, ext-1)
				}
				for _, pb := range pads {
					for _, pe := range pads {
						ops = append(ops, windowOp("Conv", k, s, d, pb, pe, false, false))
						for _, ceil := range []bool{false, true} {
							ops = append(ops, windowOp("MaxPool", k, s, d, pb, pe, ceil, false))
							if d == 1 {
								ops = append(ops, windowOp("AveragePool", k, s, 1, pb, pe, ceil, false),
									windowOp("AveragePool", k, s, 1, pb, pe, ceil, true))
							}
						}
					}
				}
				for _, pb := range pads {
					for _, pe := range pads {
						for opad := int64(0); opad < s; opad++ {
							if ext >= s {
								ops = append(ops, convTransposeOp(k, s, d, pb, pe, opad))
							}
						}
					}
				}
			}
		}
	}
	for _, mode := range []string{"constant", "edge"} {
		for pb := int64(-2); pb <= 3; pb++ {
			for pe := int64(-2); pe <= 3; pe++ {
				if mode == "edge" && (pb < 0 || pe < 0) {
					continue
				}
				ops = append(ops, padOp(mode, pb, pe))
			}
		}
	}
	for _, st := range [][3]int64{{0, 100, 1}, {1, 100, 1}, {2, -1, 1}, {0, 100, 2}, {1, -2, 3}, {-5, 100, 1}} {
		ops = append(ops, sliceOp(st[0], st[1], st[2]))
	}
	for f := int64(1); f <= 4; f++ {
		for _, coord := range []string{"half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn"} {
			for _, nm := range []string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"} {
				ops = append(ops, resizeOp(f, "nearest", coord, nm))
			}
			if f != 3 && coord != "tf_half_pixel_for_nn" {
				ops = append(ops, resizeOp(f, "linear", coord, ""))
			}
		}
		ops = append(ops, depthToSpaceOp(f))
	}
	for _, o := range ops {
		checkRule(t, o)
	}
	t.Logf("checked %d op configurations on every band of extents 1 to 11", len(ops))
}

// TestSpatialPointInputs checks which inputs of pointwise ops are banded
// and which are read whole.
func TestSpatialPointInputs(t *testing.T) {
	g := NewGraph("p")
	g.Opsets = []Opset{{"", 17}}
	x := g.AddInput("x", TensorOf(Float32, 1, 4, 6, 5))
	c := g.AddInput("c", TensorOf(Float32, 4, 1, 1))
	s := g.AddInput("s", TensorOf(Float32))
	hw := g.AddInput("hw", TensorOf(Float32, 6, 5))
	mk := func(op string, ins []*Value, attrs ...Attr) *Node {
		n := g.NewNode(op, "", ins, []string{"y" + fmt.Sprint(len(g.Nodes))})
		for _, a := range attrs {
			n.SetAttr(a)
		}
		n.Outputs[0].Type = TensorOf(Float32, 1, 4, 6, 5)
		return n
	}
	tests := []struct {
		n    *Node
		want []SpatialInput
	}{
		{mk("Add", []*Value{x, c}), []SpatialInput{{0, 2}}},
		{mk("Mul", []*Value{s, x}), []SpatialInput{{1, 2}}},
		{mk("Add", []*Value{x, hw}), []SpatialInput{{0, 2}, {1, 0}}},
		{mk("Where", []*Value{x, c, x}), []SpatialInput{{0, 2}, {2, 2}}},
		{mk("Concat", []*Value{x, x}, IntAttr("axis", 1)), []SpatialInput{{0, 2}, {1, 2}}},
		{mk("Clip", []*Value{x, s, s}), []SpatialInput{{0, 2}}},
		{mk("Softmax", []*Value{x}, IntAttr("axis", 1)), []SpatialInput{{0, 2}}},
	}
	for _, tt := range tests {
		r, err := Spatial(tt.n, 2)
		if err != nil {
			t.Errorf("%s: %v", tt.n.Op, err)
			continue
		}
		if fmt.Sprint(r.Inputs) != fmt.Sprint(tt.want) {
			t.Errorf("%s: banded inputs %v, want %v", tt.n.Op, r.Inputs, tt.want)
		}
	}
}

// TestSpatialRejects checks that ops reading whole tensors, and attributes
// that tie an op to the image size, are not local, with a reason.
func TestSpatialRejects(t *testing.T) {
	type tc struct {
		name string
		op   string
		in   []int64
		out  []int64
		ins  func(g *Graph) []*Value
		attr []Attr
		want string
	}
	scales := func(f float32) func(g *Graph) []*Value {
		return func(g *Graph) []*Value {
			return []*Value{nil, g.AddParam("sc", TensorOf(Float32, 4), Float32Tensor([]int64{4}, 1, 1, f, f))}
		}
	}
	tests := []tc{
		{"global pool", "GlobalAveragePool", []int64{1, 2, 8, 8}, []int64{1, 2, 1, 1}, nil, nil, "no spatial rule"},
		{"reduce", "ReduceMean", []int64{1, 2, 8, 8}, []int64{1, 2, 1, 1}, nil, nil, "no spatial rule"},
		{"reshape", "Reshape", []int64{1, 2, 8, 8}, []int64{1, 2, 64, 1}, nil, nil, "no spatial rule"},
		{"instance norm", "InstanceNormalization", []int64{1, 2, 8, 8}, []int64{1, 2, 8, 8}, nil, nil, "no spatial rule"},
		{"concat along H", "Concat", []int64{1, 2, 4, 8}, []int64{1, 2, 4, 8}, nil, []Attr{IntAttr("axis", 2)}, "concatenates along axis 2"},
		{"softmax along H", "Softmax", []int64{1, 2, 8, 8}, []int64{1, 2, 8, 8}, nil, []Attr{IntAttr("axis", 2)}, "normalises along axis 2"},
		{"reflect pad", "Pad", []int64{1, 2, 8, 8}, []int64{1, 2, 10, 8}, func(g *Graph) []*Value {
			return []*Value{g.AddParam("p", TensorOf(Int64, 8), Int64Tensor([]int64{8}, 0, 0, 1, 0, 0, 0, 1, 0))}
		}, []Attr{StringAttr("mode", "reflect")}, "reflect"},
		{"align corners", "Resize", []int64{1, 2, 8, 8}, []int64{1, 2, 16, 16}, scales(2), []Attr{StringAttr("coordinate_transformation_mode", "align_corners")}, "align_corners"},
		{"downscale", "Resize", []int64{1, 2, 8, 8}, []int64{1, 2, 4, 4}, scales(0.5), nil, "not an integer upscaling"},
		{"linear ×3", "Resize", []int64{1, 2, 8, 8}, []int64{1, 2, 24, 24}, scales(3), []Attr{StringAttr("mode", "linear")}, "not a power of two"},
		{"cubic", "Resize", []int64{1, 2, 8, 8}, []int64{1, 2, 16, 16}, scales(2), []Attr{StringAttr("mode", "cubic")}, "mode \"cubic\""},
		{"BN training", "BatchNormalization", []int64{1, 2, 8, 8}, []int64{1, 2, 8, 8}, nil, []Attr{IntAttr("training_mode", 1)}, "training mode"},
		{"ceil drop", "MaxPool", []int64{1, 2, 5, 8}, []int64{1, 2, 3, 4}, nil, []Attr{IntsAttr("kernel_shape", 2, 2), IntsAttr("strides", 2, 2),
			IntsAttr("pads", 1, 0, 1, 0), IntAttr("ceil_mode", 1)}, "ceil_mode drops"},
		{"dynamic quantize", "DynamicQuantizeLinear", []int64{1, 2, 8, 8}, []int64{1, 2, 8, 8}, nil, nil, "no spatial rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGraph("r")
			g.Opsets = []Opset{{"", 17}}
			ins := []*Value{g.AddInput("x", TensorOf(Float32, tt.in...))}
			if tt.ins != nil {
				ins = append(ins, tt.ins(g)...)
			}
			n := g.NewNode(tt.op, "", ins, []string{"y"})
			for _, a := range tt.attr {
				n.SetAttr(a)
			}
			n.Outputs[0].Type = TensorOf(Float32, tt.out...)
			_, err := Spatial(n, 2)
			if !errors.Is(err, ErrNotSpatial) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Spatial = %v, want ErrNotSpatial saying %q", err, tt.want)
			}
		})
	}
	// MaxPool's indices are positions in the whole tensor: local only
	// while nothing reads them.
	g := NewGraph("mp")
	x := g.AddInput("x", TensorOf(Float32, 1, 2, 8, 8))
	mp := g.NewNode("MaxPool", "", []*Value{x}, []string{"y", "idx"})
	mp.SetAttr(IntsAttr("kernel_shape", 2, 2))
	mp.SetAttr(IntsAttr("strides", 2, 2))
	mp.Outputs[0].Type = TensorOf(Float32, 1, 2, 4, 4)
	mp.Outputs[1].Type = TensorOf(Int64, 1, 2, 4, 4)
	if _, err := Spatial(mp, 2); err != nil {
		t.Fatalf("MaxPool with unread indices: %v", err)
	}
	g.AddOutput(mp.Outputs[1])
	if _, err := Spatial(mp, 2); !errors.Is(err, ErrNotSpatial) {
		t.Fatalf("MaxPool with read indices: %v, want ErrNotSpatial", err)
	}
}

// TestSpatialRandomConvGeometry checks random Conv geometries with
// auto_pad on a 2-D image: the rule's pads agree with ONNX's SAME rule and
// every band reads what a brute-force enumeration says.
func TestSpatialRandomConvGeometry(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		k, s, d := rng.Int64N(5)+1, rng.Int64N(2)+1, rng.Int64N(2)+1
		h := rng.Int64N(20) + 1
		mode := []string{"SAME_UPPER", "SAME_LOWER", "VALID"}[rng.IntN(3)]
		ext := (k-1)*d + 1
		var out int64
		switch mode {
		case "VALID":
			if h < ext {
				continue
			}
			out = (h-ext)/s + 1
		default:
			out = (h + s - 1) / s
		}
		g := NewGraph("c")
		x := g.AddInput("x", TensorOf(Float32, 1, 1, h, 3))
		w := g.AddParam("w", TensorOf(Float32, 1, 1, k, 1), Float32Tensor([]int64{1, 1, k, 1}, make([]float32, k)...))
		n := g.NewNode("Conv", "", []*Value{x, w}, []string{"y"})
		n.SetAttr(StringAttr("auto_pad", mode))
		n.SetAttr(IntsAttr("strides", s, 1))
		n.SetAttr(IntsAttr("dilations", d, 1))
		n.Outputs[0].Type = TensorOf(Float32, 1, 1, out, 3)
		r, err := Spatial(n, 2)
		if err != nil {
			t.Fatalf("k%d s%d d%d h%d %s: %v", k, s, d, h, mode, err)
		}
		total := r.PadBegin + r.PadEnd
		if mode != "VALID" && total != max(0, (out-1)*s+ext-h) {
			t.Fatalf("%s: pads %d+%d, want a total of %d", mode, r.PadBegin, r.PadEnd, max(0, (out-1)*s+ext-h))
		}
		c := windowOp("Conv", k, s, d, r.PadBegin, r.PadEnd, false, false)
		for a := range out {
			b := a + 1 + rng.Int64N(out-a)
			bd, err := r.Band(a, b)
			if err != nil {
				t.Fatal(err)
			}
			for o := a; o < b; o++ {
				for _, i := range c.contrib(o, h) {
					if i < bd.Lo || i >= bd.Hi {
						t.Fatalf("band [%d,%d) reads [%d,%d), misses row %d", a, b, bd.Lo, bd.Hi, i)
					}
				}
			}
		}
	}
}
