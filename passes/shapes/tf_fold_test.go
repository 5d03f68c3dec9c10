package shapes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// tfBuilder adds TensorFlow nodes to a builder's graph.
type tfBuilder struct {
	*builder
	consts int
}

func newTFBuilder(t testing.TB) *tfBuilder { return &tfBuilder{builder: newBuilder(t, 0)} }

// node adds op with nout outputs (named NAME, NAME:1, …).
func (b *tfBuilder) node(op, name string, ins []*ir.Value, nout int, attrs ...ir.Attr) *ir.Node {
	outs := []string{name}
	for i := 1; i < nout; i++ {
		outs = append(outs, fmt.Sprintf("%s:%d", name, i))
	}
	n := b.g.NewNode(op, ir.TFDomain, ins, outs)
	n.Name = name
	for _, a := range attrs {
		n.SetAttr(a)
	}
	return n
}

func (b *tfBuilder) op(op, name string, ins []*ir.Value, attrs ...ir.Attr) *ir.Value {
	return b.node(op, name, ins, 1, attrs...).Outputs[0]
}

// i32 adds an int32 constant of the given shape (nil: a vector).
func (b *tfBuilder) i32(shape []int64, vals ...int64) *ir.Value {
	if shape == nil {
		shape = []int64{int64(len(vals))}
	}
	b.consts++
	return b.g.AddParam(fmt.Sprintf("c%d", b.consts), ir.TensorOf(ir.Int32, shape...), int32Tensor(shape, vals...))
}

func (b *tfBuilder) scalar(v int64) *ir.Value { return b.i32([]int64{}, v) }

// slice1 is x[k] of a shape vector (StridedSlice with shrink_axis_mask 1).
func (b *tfBuilder) slice1(name string, x *ir.Value, k int64) *ir.Value {
	return b.op("StridedSlice", name, b.ins(x, b.i32(nil, k), b.i32(nil, k+1), b.i32(nil, 1)), iattr("shrink_axis_mask", 1))
}

// TestTFShapeArithmetic checks that the integer computations real graphs
// make on shapes (Shape, StridedSlice, Mul, Pack, ConcatV2, GatherV2, Prod,
// Fill, Range, Cast, Size, Rank) fold, so that the sizes they feed
// (Reshape with -1, Conv2DBackpropInput's input_sizes, Fill's dims) are
// static, and that a symbolic batch flows through them.
func TestTFShapeArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch string
		dims  map[string]int64
		want  map[string]string
	}{
		{"static", "2", nil, map[string]string{
			"deconv": "f32[2,12,16,4]", "flat": "f32[2,144]", "fill": "f32[144]", "range": "i32[144]",
			"merged": "f32[2,6,24]", "gathered": "f32[3,6]", "cast": "f32[4]", "rank3": "f32[4,4,4,4]",
			"size": "i32[]", "sized": "f32[288]", "unpacked": "f32[6,8]", "rev": "f32[3,8,6,2]",
		}},
		{"symbolic batch", "N", nil, map[string]string{
			"deconv": "f32[N,12,16,4]", "flat": "f32[N,144]", "fill": "f32[144]", "range": "i32[144]",
			"merged": "f32[N,6,24]", "gathered": "f32[3,6]", "cast": "f32[4]", "rank3": "f32[4,4,4,4]",
			"size": "i32[]", "sized": "f32[?]", "unpacked": "f32[6,8]", "rev": "f32[3,8,6,N]",
		}},
		{"symbolic batch bound", "N", map[string]int64{"N": 3}, map[string]string{
			"deconv": "f32[3,12,16,4]", "sized": "f32[432]", "unpacked": "f32[6,8]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTFBuilder(t)
			x := b.input("x", "f32["+tc.batch+",6,8,3]")
			s := b.op("Shape", "shape", b.ins(x))
			n := b.slice1("n", s, 0)
			h := b.slice1("h", s, 1)
			w := b.slice1("w", s, 2)
			h2 := b.op("Mul", "h2", b.ins(h, b.scalar(2)))
			w2 := b.op("Mul", "w2", b.ins(w, b.scalar(2)))
			sizes := b.op("Pack", "sizes", b.ins(n, h2, w2, b.scalar(4)), iattr("axis", 0))
			filter := b.g.AddInput("filter", parseType(t, "f32[3,3,4,3]"))
			b.op("Conv2DBackpropInput", "deconv", b.ins(sizes, filter, x), sattr("padding", "SAME"), ints("strides", 1, 2, 2, 1))
			flatShape := b.op("Pack", "flatshape", b.ins(n, b.scalar(-1)))
			b.op("Reshape", "flat", b.ins(x, flatShape))
			tail := b.op("StridedSlice", "tail", b.ins(s, b.i32(nil, 1), b.i32(nil, 0), b.i32(nil, 1)), iattr("end_mask", 1))
			prod := b.op("Prod", "prod", b.ins(tail, b.i32(nil, 0)))
			zero := b.g.AddParam("zero", ir.TensorOf(ir.Float32), ir.Float32Tensor([]int64{}, 0))
			b.op("Fill", "fill", b.ins(b.op("ExpandDims", "prodvec", b.ins(prod, b.scalar(0))), zero))
			b.op("Range", "range", b.ins(b.scalar(0), prod, b.scalar(1)))
			head := b.op("StridedSlice", "head", b.ins(s, b.i32(nil, 0), b.i32(nil, 2), b.i32(nil, 1)))
			merged := b.op("ConcatV2", "mergedshape", b.ins(head, b.i32(nil, -1), b.scalar(0)))
			b.op("Reshape", "merged", b.ins(x, merged))
			g31 := b.op("GatherV2", "g31", b.ins(s, b.i32(nil, 3, 1), b.scalar(0)))
			b.op("Fill", "gathered", b.ins(g31, zero))
			b.op("Cast", "cast", b.ins(s), dtAttr("DstT", "DT_FLOAT"))
			rank := b.op("Rank", "rank", b.ins(x))
			b.op("Fill", "rank3", b.ins(b.op("Fill", "rankvec", b.ins(b.i32(nil, 4), rank)), zero))
			size := b.op("Size", "size", b.ins(x))
			b.op("Fill", "sized", b.ins(b.op("Reshape", "sizevec", b.ins(size, b.i32(nil, 1))), zero))
			un := b.node("Unpack", "unpack", b.ins(s), 4, iattr("num", 4))
			b.op("Fill", "unpacked", b.ins(b.op("Pack", "hw", b.ins(un.Outputs[1], un.Outputs[2])), zero))
			rev := b.op("ReverseV2", "revshape", b.ins(s, b.i32(nil, 0)))
			b.op("Reshape", "rev", b.ins(x, rev))
			if err := ir.Verify(b.g); err != nil {
				t.Fatal(err)
			}
			if err := Infer(b.g, Options{Dims: tc.dims}); err != nil {
				t.Fatal(err)
			}
			byName := map[string]*ir.Value{}
			for _, n := range b.g.Nodes {
				byName[n.Name] = n.Outputs[0]
			}
			for name, want := range tc.want {
				if got := byName[name].Type.String(); got != want {
					t.Errorf("%s: %s, want %s", name, got, want)
				}
			}
		})
	}
}

// TestTFStridedSlice folds StridedSlice on a constant under each mask, the
// values checked through a Reshape whose shape the slice gives; and
// ResolveStridedSlice resolves the same spec to the same elements (or
// the same error).
func TestTFStridedSlice(t *testing.T) {
	for _, tc := range []struct {
		name               string
		x                  []int64 // a constant vector's values, sliced
		xshape             []int64
		begin, end, stride []int64
		masks              [5]int64 // begin, end, ellipsis, new_axis, shrink
		want               string   // the sliced value's type; "err:…"
		vals               []int64  // its values (a Fill's shape)
	}{
		{name: "range with stride", x: []int64{1, 2, 3, 4, 5, 6, 7}, begin: []int64{1}, end: []int64{-1}, stride: []int64{2}, want: "i32[3]", vals: []int64{2, 4, 6}},
		{name: "negative stride", x: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, begin: []int64{8}, end: []int64{2}, stride: []int64{-3}, want: "i32[2]", vals: []int64{9, 6}},
		{name: "reverse by masks", x: []int64{1, 2, 3}, begin: []int64{0}, end: []int64{0}, stride: []int64{-1}, masks: [5]int64{1, 1, 0, 0, 0}, want: "i32[3]", vals: []int64{3, 2, 1}},
		{name: "clamped", x: []int64{1, 2, 3}, begin: []int64{-10}, end: []int64{100}, stride: []int64{1}, want: "i32[3]", vals: []int64{1, 2, 3}},
		{name: "empty", x: []int64{1, 2, 3}, begin: []int64{2}, end: []int64{1}, stride: []int64{1}, want: "i32[0]"},
		{name: "shrink negative index", x: []int64{1, 2, 3, 4, 5, 6}, xshape: []int64{2, 3}, begin: []int64{0, -1}, end: []int64{0, 0}, stride: []int64{1, 1},
			masks: [5]int64{1, 1, 0, 0, 2}, want: "i32[2]", vals: []int64{3, 6}},
		{name: "ellipsis new axis", x: []int64{1, 2, 3, 4, 5, 6}, xshape: []int64{2, 3}, begin: []int64{0, 0, 1}, end: []int64{0, 0, 3}, stride: []int64{1, 1, 1},
			masks: [5]int64{0, 0, 1, 2, 0}, want: "i32[2,1,2]", vals: []int64{2, 3, 5, 6}},
		{name: "new axis first then implicit ellipsis", x: []int64{1, 2, 3, 4, 5, 6}, xshape: []int64{2, 3}, begin: []int64{0}, end: []int64{0}, stride: []int64{1},
			masks: [5]int64{0, 0, 0, 1, 0}, want: "i32[1,2,3]", vals: []int64{1, 2, 3, 4, 5, 6}},
		{name: "new axis wins over shrink", x: []int64{1, 2, 3}, begin: []int64{0, 1}, end: []int64{0, 2}, stride: []int64{1, 1},
			masks: [5]int64{0, 0, 0, 1, 3}, want: "i32[1]", vals: []int64{2}},
		{name: "shrink out of range", x: []int64{1, 2, 3}, begin: []int64{3}, end: []int64{4}, stride: []int64{1}, masks: [5]int64{0, 0, 0, 0, 1}, want: "err:index 3 is out of range for axis 0 of size 3"},
		{name: "zero stride", x: []int64{1, 2, 3}, begin: []int64{0}, end: []int64{1}, stride: []int64{0}, want: "err:has a 0 at entry 0"},
		{name: "two ellipses", x: []int64{1, 2, 3}, begin: []int64{0, 0}, end: []int64{0, 0}, stride: []int64{1, 1}, masks: [5]int64{0, 0, 3, 0, 0}, want: "err:more than one bit"},
		{name: "too many entries", x: []int64{1, 2, 3}, begin: []int64{0, 0}, end: []int64{1, 1}, stride: []int64{1, 1}, want: "err:indexes 2 axes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTFBuilder(t)
			x := b.i32(tc.xshape, tc.x...)
			var attrs []ir.Attr
			for k, name := range []string{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"} {
				if tc.masks[k] != 0 {
					attrs = append(attrs, iattr(name, tc.masks[k]))
				}
			}
			sl := b.op("StridedSlice", "slice", b.ins(x, b.i32(nil, tc.begin...), b.i32(nil, tc.end...), b.i32(nil, tc.stride...)), attrs...)
			flat := b.op("Reshape", "flat", b.ins(sl, b.i32(nil, -1)))
			zero := b.g.AddParam("zero", ir.TensorOf(ir.Float32), ir.Float32Tensor([]int64{}, 0))
			filled := b.op("Fill", "filled", b.ins(flat, zero))
			xshape := tc.xshape
			if xshape == nil {
				xshape = []int64{int64(len(tc.x))}
			}
			axes, rerr := ResolveStridedSlice(sl.Def, xshape)
			err := Infer(b.g, Options{})
			if msg, ok := strings.CutPrefix(tc.want, "err:"); ok {
				if err == nil || !strings.Contains(err.Error(), msg) {
					t.Fatalf("Infer = %v, want an error containing %q", err, msg)
				}
				if rerr == nil || !strings.Contains(rerr.Error(), msg) {
					t.Fatalf("ResolveStridedSlice = %v, want an error containing %q", rerr, msg)
				}
				return
			}
			if rerr != nil {
				t.Fatalf("ResolveStridedSlice: %v", rerr)
			}
			var got []int64
			var walk func(a int, off int64)
			walk = func(a int, off int64) {
				if a == len(axes) {
					got = append(got, tc.x[off])
					return
				}
				stride := int64(1)
				for _, d := range xshape[a+1:] {
					stride *= d
				}
				for k := range axes[a].Count {
					walk(a+1, off+(axes[a].Start+k*axes[a].Stride)*stride)
				}
			}
			walk(0, 0)
			if !slices.Equal(got, tc.vals) {
				t.Fatalf("ResolveStridedSlice %+v reads %v, want %v", axes, got, tc.vals)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sl.Type.String(); got != tc.want {
				t.Fatalf("slice: %s, want %s", got, tc.want)
			}
			want := fmt.Sprint(tc.vals) // an empty shape: a scalar
			if got := strings.ReplaceAll(filled.Type.String(), ",", " "); got != "f32"+want {
				t.Fatalf("the slice's values as a shape: %s, want f32%s", filled.Type, want)
			}
		})
	}
}

// TestTFOpaque: ops the pass has no rule for take their types from
// _output_shapes (the declared shape) with the element type of the node's
// T attribute, or from an override; otherwise inference fails with an
// error naming the op and the node.
func TestTFOpaque(t *testing.T) {
	build := func(op string, declared string, attrs ...ir.Attr) (*ir.Graph, *ir.Value) {
		b := newTFBuilder(t)
		x := b.input("x", "f32[2,3]")
		y := b.op(op, "custom", b.ins(x), attrs...)
		if declared != "" {
			y.Type = parseType(t, declared)
		}
		b.g.AddOutput(y)
		return b.g, y
	}
	declared := func(s string) string { return s } // readability

	g, y := build("MyCustomOp", declared("f32[4,5]"), dtAttr("T", "DT_HALF"))
	y.Type.DType = ir.Undefined // _output_shapes: a shape without a type
	if err := Infer(g, Options{RequireStatic: true}); err != nil || y.Type.String() != "f16[4,5]" {
		t.Errorf("_output_shapes and T: %s, %v; want f16[4,5]", y.Type, err)
	}

	g, y = build("MyCustomOp", declared("f32[4,5]"))
	y.Type.DType = ir.Undefined
	err := Infer(g, Options{File: "m.pb"})
	if err == nil || !strings.Contains(err.Error(), `m.pb: node "custom" (tf.MyCustomOp): unknown TensorFlow op MyCustomOp: cannot infer the type of "custom"`) {
		t.Errorf("_output_shapes without T: %v", err)
	}

	g, y = build("MyCustomOp", "")
	err = Infer(g, Options{File: "m.pb"})
	if err == nil || !strings.Contains(err.Error(), `node "custom" (tf.MyCustomOp): unknown TensorFlow op MyCustomOp: cannot infer the type of "custom"; give it with an output type override (-value-type NAME=TYPE)`) {
		t.Errorf("nothing declared: %v", err)
	}

	g, y = build("MyCustomOp", "")
	if err := Infer(g, Options{OutputTypes: map[string]ir.TensorType{"custom": parseType(t, "i32[7]")}}); err != nil || y.Type.String() != "i32[7]" {
		t.Errorf("override: %s, %v; want i32[7]", y.Type, err)
	}

	g, _ = build("ReadVariableOp", "")
	err = Infer(g, Options{})
	if err == nil || !strings.Contains(err.Error(), "TensorFlow op ReadVariableOp has no shape inference rule: cannot infer the type") {
		t.Errorf("known op without a rule: %v", err)
	}
}

// TestTFDomainRules: a TensorFlow node never gets an ONNX rule of the same
// name, nor an ONNX node a TensorFlow one.
func TestTFDomainRules(t *testing.T) {
	b := newTFBuilder(t)
	x := b.input("x", "f32[2,0]")
	tf := b.op("Reshape", "tf", b.ins(x, b.i32(nil, 0, 7)))
	onnx := b.builder.op("Reshape", b.ins(x, b.i64("s", nil, 0, 7)))
	err := Infer(b.g, Options{})
	if tf.Type.String() != "f32[0,7]" {
		t.Errorf("TensorFlow Reshape: %s, want f32[0,7] (0 is a size)", tf.Type)
	}
	if err == nil || !strings.Contains(err.Error(), "cannot reshape [2,0]") || onnx.Type.Static() {
		t.Errorf("ONNX Reshape copies the 2 and fails: %s, %v", onnx.Type, err)
	}
}
