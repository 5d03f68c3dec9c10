package shapes

import (
	"testing"

	"github.com/remat-compile/remat/ir"
)

// Shape subgraphs fold to static sizes without changing the graph.
func TestShapeSubgraphFolding(t *testing.T) {
	tests := []struct {
		name  string
		opset int64
		x     string
		build func(b *builder, x *ir.Value) *ir.Value
		want  string
	}{
		{"Shape→Gather→Unsqueeze→Concat→Reshape", 13, "f32[2,3,8,8]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			n := b.op("Gather", b.ins(s, b.i64("zero", []int64{}, 0)), iattr("axis", 0))
			u := b.op("Unsqueeze", b.ins(n, b.i64("ax", nil, 0)))
			shape := b.op("Concat", b.ins(u, b.i64("minus1", nil, -1)), iattr("axis", 0))
			return b.op("Reshape", b.ins(x, shape))
		}, "f32[2,192]"},
		{"the same with a symbolic batch", 13, "f32[batch,3,8,8]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			n := b.op("Gather", b.ins(s, b.i64("zero", []int64{}, 0)), iattr("axis", 0))
			u := b.op("Unsqueeze", b.ins(n, b.i64("ax", nil, 0)))
			shape := b.op("Concat", b.ins(u, b.i64("minus1", nil, -1)), iattr("axis", 0))
			return b.op("Reshape", b.ins(x, shape))
		}, "f32[batch,192]"},
		{"the same at opset 11 (Unsqueeze axes attribute)", 11, "f32[batch,3,8,8]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			n := b.op("Gather", b.ins(s, b.i64("zero", []int64{}, 0)))
			u := b.op("Unsqueeze", b.ins(n), ints("axes", 0))
			shape := b.op("Concat", b.ins(u, b.i64("minus1", nil, -1)), iattr("axis", 0))
			return b.op("Reshape", b.ins(x, shape))
		}, "f32[batch,192]"},
		{"Shape→Slice→Cast→Mul→Cast→Concat→Resize sizes", 13, "f32[1,3,8,10]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			hw := b.op("Slice", b.ins(s, b.i64("s2", nil, 2), b.i64("s4", nil, 4)))
			f := b.op("Cast", b.ins(hw), iattr("to", 1))
			m := b.op("Mul", b.ins(f, b.f32("two", nil, 2, 1.5)))
			i := b.op("Cast", b.ins(m), iattr("to", 7))
			nc := b.op("Slice", b.ins(s, b.i64("s0", nil, 0), b.i64("e2", nil, 2)))
			sizes := b.op("Concat", b.ins(nc, i), iattr("axis", 0))
			return b.op("Resize", b.ins(x, nil, nil, sizes))
		}, "f32[1,3,16,15]"},
		{"the same with a symbolic batch", 13, "f32[N,3,8,10]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			hw := b.op("Slice", b.ins(s, b.i64("s2", nil, 2), b.i64("s4", nil, 4)))
			f := b.op("Cast", b.ins(hw), iattr("to", 1))
			m := b.op("Mul", b.ins(f, b.f32("two", nil, 2, 2)))
			i := b.op("Cast", b.ins(m), iattr("to", 7))
			nc := b.op("Slice", b.ins(s, b.i64("s0", nil, 0), b.i64("e2", nil, 2)))
			sizes := b.op("Concat", b.ins(nc, i), iattr("axis", 0))
			return b.op("Resize", b.ins(x, nil, nil, sizes))
		}, "f32[N,3,16,20]"},
		{"Resize scales computed from a ratio of shapes", 13, "f32[1,3,8,8]", func(b *builder, x *ir.Value) *ir.Value {
			target := b.input("t", "f32[1,3,32,24]")
			num := b.op("Cast", b.ins(b.op("Shape", b.ins(target))), iattr("to", 1))
			den := b.op("Cast", b.ins(b.op("Shape", b.ins(x))), iattr("to", 1))
			scales := b.op("Div", b.ins(num, den))
			return b.op("Resize", b.ins(x, nil, scales))
		}, "f32[1,3,32,24]"},
		{"partial Shape: Gather of a known axis", 13, "f32[N,3,?,?]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			c := b.op("Gather", b.ins(s, b.i64("one", nil, 1)))
			shape := b.op("Concat", b.ins(c, b.i64("m1", nil, -1)), iattr("axis", 0))
			return b.op("Reshape", b.ins(b.input("y", "f32[12]"), shape))
		}, "f32[3,4]"},
		{"ReduceProd of a shape slice", 13, "f32[2,3,4]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			head := b.op("Slice", b.ins(s, b.i64("s0", nil, 0), b.i64("e1", nil, 1)))
			tail := b.op("Slice", b.ins(s, b.i64("s1", nil, 1), b.i64("e9", nil, 9)))
			p := b.op("ReduceProd", b.ins(tail), iattr("keepdims", 1))
			return b.op("Reshape", b.ins(x, b.op("Concat", b.ins(head, p), iattr("axis", 0))))
		}, "f32[2,12]"},
		{"Equal/Where on a shape constant feeding Expand", 13, "f32[3,1]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.i64("s", nil, -1, 4)
			eq := b.op("Equal", b.ins(s, b.i64("m1", []int64{}, -1)))
			ones := b.op("ConstantOfShape", b.ins(b.op("Shape", b.ins(s))), tattr("value", ir.Int64Tensor([]int64{1}, 1)))
			return b.op("Expand", b.ins(x, b.op("Where", b.ins(eq, ones, s))))
		}, "f32[3,4]"},
		{"Range over a symbolic length", 13, "f32[batch,seq]", func(b *builder, x *ir.Value) *ir.Value {
			n := b.op("Gather", b.ins(b.op("Shape", b.ins(x)), b.i64("one", []int64{}, 1)))
			return b.op("Range", b.ins(b.i64("zero", []int64{}, 0), n, b.i64("d", []int64{}, 1)))
		}, "i64[seq]"},
		{"Range over a known length feeds Gather", 13, "f32[6,5]", func(b *builder, x *ir.Value) *ir.Value {
			n := b.op("Gather", b.ins(b.op("Shape", b.ins(x)), b.i64("one", []int64{}, 1)))
			r := b.op("Range", b.ins(b.i64("zero", []int64{}, 0), n, b.i64("d", []int64{}, 2)))
			return b.op("Gather", b.ins(x, r), iattr("axis", 1))
		}, "f32[6,3]"},
		{"ConstantOfShape from Shape", 13, "f32[batch,7]", func(b *builder, x *ir.Value) *ir.Value {
			return b.op("ConstantOfShape", b.ins(b.op("Shape", b.ins(x))))
		}, "f32[batch,7]"},
		{"Tile repeats from Size and Div", 13, "f32[2,3]", func(b *builder, x *ir.Value) *ir.Value {
			sz := b.op("Size", b.ins(x))
			half := b.op("Div", b.ins(sz, b.i64("two", []int64{}, 2)))
			rep := b.op("Concat", b.ins(b.op("Unsqueeze", b.ins(half, b.i64("a0", nil, 0))), b.i64("one", nil, 1)), iattr("axis", 0))
			return b.op("Tile", b.ins(x, rep))
		}, "f32[6,3]"},
		{"Pad amounts from Sub", 13, "f32[3,5]", func(b *builder, x *ir.Value) *ir.Value {
			target := b.i64("target", nil, 4, 8)
			diff := b.op("Sub", b.ins(target, b.op("Shape", b.ins(x))))
			pads := b.op("Concat", b.ins(b.i64("z", nil, 0, 0), diff), iattr("axis", 0))
			return b.op("Pad", b.ins(x, pads))
		}, "f32[4,8]"},
		{"Slice bounds from Shape", 13, "f32[10,4]", func(b *builder, x *ir.Value) *ir.Value {
			n := b.op("Slice", b.ins(b.op("Shape", b.ins(x)), b.i64("s", nil, 0), b.i64("e", nil, 1)))
			end := b.op("Sub", b.ins(n, b.i64("three", nil, 3)))
			return b.op("Slice", b.ins(x, b.i64("one", nil, 1), end))
		}, "f32[6,4]"},
		{"Squeeze/Flatten/Identity/Transpose keep values", 13, "f32[4,6]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))                                                   // [4,6]
			t := b.op("Transpose", b.ins(b.op("Unsqueeze", b.ins(s, b.i64("a", nil, 0))))) // [[4],[6]]
			f := b.op("Flatten", b.ins(b.op("Identity", b.ins(t))), iattr("axis", 0))      // [[4,6]]
			v := b.op("Squeeze", b.ins(f, b.i64("a0", nil, 0)))                            // [4,6]
			rev := b.op("Gather", b.ins(v, b.i64("i", nil, 1, 0)))                         // [6,4]
			return b.op("Reshape", b.ins(x, rev))
		}, "f32[6,4]"},
		{"symbolic batch through Cast and Mul by 1.0", 13, "f32[N,3,8,10]", func(b *builder, x *ir.Value) *ir.Value {
			f := b.op("Cast", b.ins(b.op("Shape", b.ins(x))), iattr("to", 1))
			m := b.op("Mul", b.ins(f, b.f32("sc", nil, 1, 1, 2, 0.5)))
			sizes := b.op("Cast", b.ins(b.op("Floor", b.ins(m))), iattr("to", 7))
			return b.op("Resize", b.ins(x, nil, nil, sizes))
		}, "f32[N,3,16,5]"},
		{"symbolic arithmetic identities", 13, "f32[batch,seq,64]", func(b *builder, x *ir.Value) *ir.Value {
			s := b.op("Shape", b.ins(x))
			batch := b.op("Gather", b.ins(s, b.i64("i0", nil, 0)))
			seq := b.op("Gather", b.ins(s, b.i64("i1", nil, 1)))
			one := b.i64("one", nil, 1)
			zero := b.i64("zero0", nil, 0)
			a := b.op("Add", b.ins(b.op("Mul", b.ins(batch, one)), zero))                     // batch
			c := b.op("Div", b.ins(b.op("Sub", b.ins(seq, zero)), one))                       // seq
			d := b.op("Sub", b.ins(seq, seq))                                                 // 0, so d-1 below is -1
			e := b.op("Max", b.ins(b.op("Abs", b.ins(c)), c))                                 // seq
			same := b.op("Equal", b.ins(batch, a))                                            // true
			pick := b.op("Where", b.ins(same, b.i64("eight", nil, 8), b.i64("nine", nil, 9))) // 8
			shape := b.op("Concat", b.ins(a, e, pick, b.op("Add", b.ins(d, b.i64("m1", nil, -1)))), iattr("axis", 0))
			return b.op("Reshape", b.ins(x, shape))
		}, "f32[batch,seq,8,8]"},
		{"Clip folds", 13, "f32[10,4]", func(b *builder, x *ir.Value) *ir.Value {
			n := b.op("Clip", b.ins(b.i64("v", nil, 12, -3), b.i64("lo", []int64{}, 1), b.i64("hi", []int64{}, 10)))
			return b.op("ConstantOfShape", b.ins(n))
		}, "f32[10,1]"},
		{"If on a constant condition picks a branch value", 13, "f32[2,3]", func(b *builder, x *ir.Value) *ir.Value {
			return b.op("Reshape", b.ins(x, ifConst(b, true)))
		}, "f32[3,2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, tc.opset)
			x := b.input("x", tc.x)
			y := tc.build(b, x)
			b.g.AddOutput(y)
			nodes := len(b.g.Nodes)
			if err := Infer(b.g, Options{File: "m.onnx"}); err != nil {
				t.Fatal(err)
			}
			if got := y.Type.String(); got != tc.want {
				t.Fatalf("result type = %s, want %s", got, tc.want)
			}
			if len(b.g.Nodes) != nodes {
				t.Fatalf("Infer changed the graph: %d nodes, had %d", len(b.g.Nodes), nodes)
			}
			if err := ir.Verify(b.g); err != nil {
				t.Fatalf("graph no longer verifies: %v", err)
			}
		})
	}
}

// ifConst builds an If on a constant condition whose branches give the
// shape [3,2] (then) or [2,3] (else).
func ifConst(b *builder, cond bool) *ir.Value {
	c := int64(0)
	if cond {
		c = 1
	}
	cv := b.g.AddParam("cond", ir.TensorOf(ir.Bool), &ir.Tensor{DType: ir.Bool, Shape: []int64{}, Raw: []byte{byte(c)}})
	n := b.node("If", b.ins(cv), 1)
	for _, br := range []struct {
		name string
		vals []int64
	}{{"then_branch", []int64{3, 2}}, {"else_branch", []int64{2, 3}}} {
		sg := b.g.NewSubgraph(br.name)
		k := sg.NewNode("Constant", "", nil, []string{br.name + "_shape"})
		k.SetAttr(ints("value_ints", br.vals...))
		sg.AddOutput(k.Outputs[0])
		n.SetAttr(ir.GraphAttr(br.name, sg))
	}
	return n.Outputs[0]
}

// Folding sees the value of Shape only as far as the shape is known.
func TestPartialShapeStaysUnknown(t *testing.T) {
	b := newBuilder(t, 13)
	x := b.input("x", "f32[N,3,?,?]")
	s := b.op("Shape", b.ins(x))
	h := b.op("Gather", b.ins(s, b.i64("two", nil, 2)))
	shape := b.op("Concat", b.ins(h, b.i64("m1", nil, -1)), iattr("axis", 0))
	y := b.op("Reshape", b.ins(b.input("y", "f32[12]"), shape))
	if err := Infer(b.g, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := y.Type.String(); got != "f32[?,?]" {
		t.Fatalf("got %s, want f32[?,?]", got)
	}
}
