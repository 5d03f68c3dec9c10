package shapes

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// Malformed graphs give input errors, never panics.
func TestMalformed(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *builder)
		want  string
	}{
		{"too few inputs", func(b *builder) { b.op("Conv", b.ins(b.input("x", "f32[1,3,8,8]"))) }, "has 1 inputs; Conv takes 2 to 3"},
		{"absent required input", func(b *builder) { b.op("Conv", b.ins(b.input("x", "f32[1,3,8,8]"), nil)) }, "missing required input 1 (W)"},
		{"too many outputs", func(b *builder) { b.node("Relu", b.ins(b.input("x", "f32[2]")), 2) }, "has 2 outputs; Relu produces exactly 1"},
		{"weight rank", func(b *builder) { b.op("Conv", b.ins(b.input("x", "f32[1,3,8,8]"), b.input("w", "f32[4,3,3]"))) }, "weight rank 3 does not match input rank 4"},
		{"input rank", func(b *builder) { b.op("Conv", b.ins(b.input("x", "f32[3,8]"), b.input("w", "f32[4,3]"))) }, "input rank 2; Conv needs at least 3"},
		{"strides length", func(b *builder) {
			b.op("Conv", b.ins(b.input("x", "f32[1,3,8,8]"), b.input("w", "f32[4,3,3,3]")), ints("strides", 2))
		}, "attribute strides has 1 values, want 2"},
		{"group 0", func(b *builder) {
			b.op("Conv", b.ins(b.input("x", "f32[1,3,8,8]"), b.input("w", "f32[4,3,3,3]")), iattr("group", 0))
		}, "attribute group is 0, want at least 1"},
		{"attribute of the wrong kind", func(b *builder) {
			b.op("Concat", b.ins(b.input("x", "f32[2]")), sattr("axis", "0"))
		}, "attribute axis is of kind string, want int"},
		{"Cast to a float", func(b *builder) { b.op("Cast", b.ins(b.input("x", "f32[2]")), fattr("to", 1)) }, "attribute to is of kind float, want int"},
		{"Gather on a scalar", func(b *builder) { b.op("Gather", b.ins(b.input("x", "f32[]"), b.input("i", "i64[]"))) }, "data must have rank at least 1"},
		{"Gather float indices", func(b *builder) { b.op("Gather", b.ins(b.input("x", "f32[3]"), b.input("i", "f32[]"))) }, "indices have element type f32"},
		{"Reshape with a 2-D shape", func(b *builder) {
			b.op("Reshape", b.ins(b.input("x", "f32[4]"), b.i64("s", []int64{2, 1}, 2, 2)))
		}, "input 1 must be 1-D"},
		{"Reshape copies a missing dimension", func(b *builder) {
			b.op("Reshape", b.ins(b.input("x", "f32[4]"), b.i64("s", nil, 2, 0)))
		}, "copies dimension 1, but the input has rank 1"},
		{"Transpose perm length", func(b *builder) { b.op("Transpose", b.ins(b.input("x", "f32[2,3]")), ints("perm", 0)) }, "perm [0] has 1 entries for an input of rank 2"},
		{"Slice lengths", func(b *builder) {
			b.op("Slice", b.ins(b.input("x", "f32[4,4]"), b.i64("s", nil, 0, 0), b.i64("e", nil, 1)))
		}, "starts has 2 values, ends 1"},
		{"Unsqueeze axis out of range", func(b *builder) {
			b.op("Unsqueeze", b.ins(b.input("x", "f32[2,3]"), b.i64("a", nil, 5)))
		}, "axis 5 is out of range for rank 3"},
		{"Concat of scalars", func(b *builder) { b.op("Concat", b.ins(b.input("x", "f32[]")), iattr("axis", 0)) }, "cannot concatenate scalars"},
		{"Constant with short data", func(b *builder) {
			b.op("Constant", nil, tattr("value", &ir.Tensor{DType: ir.Float32, Shape: []int64{4}, Raw: make([]byte, 8)}))
		}, "tensor data has 8 bytes"},
		{"If without branches", func(b *builder) { b.node("If", b.ins(b.input("c", "bool[]")), 1) }, "missing required graph attribute then_branch"},
		{"Loop without body", func(b *builder) { b.node("Loop", b.ins(nil, nil), 1) }, "missing required graph attribute body"},
		{"Einsum garbage", func(b *builder) { b.op("Einsum", b.ins(b.input("x", "f32[2]")), sattr("equation", "a1->a")) }, `cannot parse operand "a1"`},
		{"Einsum missing operand", func(b *builder) {
			b.op("Einsum", b.ins(b.input("x", "f32[2]"), b.input("y", "f32[2]")), sattr("equation", "a->a"))
		}, "has 1 operands, but the node has 2 inputs"},
		{"LSTM W rank", func(b *builder) {
			b.node("LSTM", b.ins(b.input("x", "f32[5,2,10]"), b.input("w", "f32[80,10]"), b.input("r", "f32[1,80,20]")), 3)
		}, "W has rank 2, want 3"},
		{"Resize scales and sizes", func(b *builder) {
			b.op("Resize", b.ins(b.input("x", "f32[1,1,4,4]"), nil, b.f32("sc", nil, 1, 1, 2, 2), b.i64("sz", nil, 1, 1, 8, 8)))
		}, "both scales and sizes are given"},
		{"Expand to a negative size", func(b *builder) { b.op("Expand", b.ins(b.input("x", "f32[1]"), b.i64("s", nil, -2))) }, "shape element 0 is negative"},
		{"ConstantOfShape negative", func(b *builder) { b.op("ConstantOfShape", b.ins(b.i64("s", nil, 2, -1))) }, "shape element 1 is negative"},
		{"MaxPool pads length", func(b *builder) {
			b.op("MaxPool", b.ins(b.input("x", "f32[1,1,4,4]")), ints("kernel_shape", 2, 2), ints("pads", 1, 1))
		}, "attribute pads has 2 values, want 4"},
		{"TopK with two values of K", func(b *builder) {
			b.node("TopK", b.ins(b.input("x", "f32[4]"), b.i64("k", nil, 1, 2)), 2)
		}, "K must have one element, has 2"},
		{"Range with a zero step", func(b *builder) {
			b.op("Range", b.ins(b.i64("a", []int64{}, 0), b.i64("b", []int64{}, 5), b.i64("c", []int64{}, 0)))
		}, "delta is 0"},
		{"Split outputs do not match split", func(b *builder) {
			b.node("Split", b.ins(b.input("x", "f32[6]"), b.i64("s", nil, 2, 2, 2)), 2)
		}, "split has 3 sizes, but the node has 2 outputs"},
		{"Where with a float condition", func(b *builder) {
			b.op("Where", b.ins(b.input("c", "f32[2]"), b.input("x", "f32[2]"), b.input("y", "f32[2]")))
		}, "condition has element type f32, want bool"},
		{"Gemm on vectors", func(b *builder) { b.op("Gemm", b.ins(b.input("a", "f32[3]"), b.input("b", "f32[3]"))) }, "inputs must be matrices"},
		{"node without an operator", func(b *builder) { b.node("", b.ins(b.input("x", "f32[2]")), 1) }, "unknown operator"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, 13)
			tc.build(b)
			err := Infer(b.g, Options{File: "bad.onnx"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Infer = %v, want an error containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "bad.onnx: node ") {
				t.Errorf("error %q is not positioned at a node", err)
			}
		})
	}
}

// Structural damage the IR's Verify would report does not crash Infer.
func TestMalformedStructure(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *builder)
	}{
		{"nil node", func(b *builder) { b.g.Nodes = append(b.g.Nodes, nil) }},
		{"value from another graph's ID space", func(b *builder) {
			other := ir.NewGraph("other")
			for range 50 {
				other.AddInput("pad", ir.TensorOf(ir.Float32))
			}
			v := other.AddInput("far", ir.TensorOf(ir.Int64, 2))
			b.op("Reshape", b.ins(b.input("x", "f32[4]"), v))
		}},
		{"parameter with short data", func(b *builder) {
			s := b.g.AddParam("s", ir.TensorOf(ir.Int64, 2), &ir.Tensor{DType: ir.Int64, Shape: []int64{2}, Raw: make([]byte, 3)})
			b.op("Reshape", b.ins(b.input("x", "f32[4]"), s))
		}},
		{"parameter with a negative dimension", func(b *builder) {
			s := b.g.AddParam("s", ir.TensorOf(ir.Int64), &ir.Tensor{DType: ir.Int64, Shape: []int64{-1}})
			b.op("Reshape", b.ins(b.input("x", "f32[4]"), s))
		}},
		{"If containing itself", func(b *builder) {
			n := b.node("If", b.ins(b.input("c", "bool[]")), 1)
			n.Attrs = append(n.Attrs, ir.GraphAttr("then_branch", b.g), ir.GraphAttr("else_branch", b.g))
		}},
		{"sequence where a tensor belongs", func(b *builder) {
			s := b.op("SequenceEmpty", nil)
			b.op("Conv", b.ins(s, s))
			b.op("Add", b.ins(s, b.input("y", "f32[2]")))
		}},
		{"unranked everything", func(b *builder) {
			x := b.input("x", "f32[*]")
			for _, op := range []string{"Conv", "MatMul", "Gemm", "Concat", "Reshape", "Slice", "Gather", "Expand", "Tile", "Resize", "Einsum"} {
				n := b.node(op, b.ins(x, x, x), 1)
				if op == "Einsum" {
					n.SetAttr(sattr("equation", "ab,bc,cd->ad"))
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, 13)
			tc.build(b)
			_ = Infer(b.g, Options{RequireStatic: true}) // must return
		})
	}
}

// chooser supplies the decisions of a random graph.
type chooser interface{ Intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) Intn(n int) int { return c.r.IntN(n) }

// byteChooser reads decisions from fuzz input; zeros when it runs out.
type byteChooser struct{ b []byte }

func (c *byteChooser) Intn(n int) int {
	if len(c.b) == 0 || n <= 1 {
		return 0
	}
	v := int(c.b[0]) % n
	c.b = c.b[1:]
	return v
}

var (
	fuzzDTypes = []ir.DType{ir.Float32, ir.Int64, ir.Bool, ir.Uint8, ir.Float16, ir.Int32}
	fuzzDims   = []ir.Dim{ir.D(0), ir.D(1), ir.D(2), ir.D(3), ir.D(7), ir.SymDim("n"), ir.UnknownDim}
	fuzzInts   = []int64{-5, -2, -1, 0, 1, 2, 3, 4, 9, 1 << 40}
	fuzzStrs   = []string{"", "NOTSET", "SAME_UPPER", "VALID", "bidirectional", "linear", "CRD", "constant", "i,i->", "ab,bc->ac", "...i->i", "LEFT", "x",
		"NHWC", "NCHW", "NDHWC", "NCW", "SAME", "EXPLICIT", "DT_FLOAT", "DT_INT64", "DT_INT32", "DT_BOOL", "REFLECT", "SYMMETRIC"}
	fuzzAttrs = []string{"axis", "axes", "perm", "kernel_shape", "strides", "pads", "dilations", "group", "split", "starts", "ends",
		"to", "blocksize", "keepdims", "equation", "direction", "mode", "hidden_size", "value", "auto_pad", "ceil_mode", "output_shape",
		"output_padding", "num_outputs", "allowzero", "batch_dims", "k", "shape", "dtype", "start", "end", "num_scan_inputs", "layout",
		"training_mode", "noop_with_empty_axes", "scales", "sizes", "num_groups", "size", "value_ints", "value_float", "then_branch",
		"else_branch", "body", "scan_input_axes", "scan_output_axes", "transA", "transB", "stash_type", "pooled_shape",
		// TensorFlow's.
		"data_format", "padding", "ksize", "explicit_paddings", "num_args", "T", "DstT", "out_type", "keep_dims", "squeeze_dims",
		"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask", "num", "num_split", "block_size",
		"transpose_a", "adj_x", "align_corners", "half_pixel_centers", "output_type", "pad_to_max_output_size", "Tout", "rates"}
)

func pick[T any](c chooser, xs []T) T { return xs[c.Intn(len(xs))] }

// randomGraph builds one node of a random op over random inputs and
// attributes, some of them deliberately wrong.
func randomGraph(c chooser, ops []ir.OpInfo) *ir.Graph {
	g := ir.NewGraph("fuzz")
	g.Opsets = []ir.Opset{{Domain: "", Version: int64(1 + c.Intn(22))}}
	info := pick(c, ops)
	maxIn := info.MaxIn
	if maxIn == ir.Variadic || maxIn > info.MinIn+4 {
		maxIn = info.MinIn + 4
	}
	nin := info.MinIn + c.Intn(maxIn-info.MinIn+1)
	if c.Intn(10) == 0 {
		nin = c.Intn(nin + 2)
	}
	var ins []*ir.Value
	for i := range nin {
		switch c.Intn(6) {
		case 0:
			ins = append(ins, nil)
		case 1, 2:
			vals := make([]int64, c.Intn(5))
			for k := range vals {
				vals[k] = pick(c, fuzzInts)
			}
			shape := []int64{int64(len(vals))}
			if len(vals) == 1 && c.Intn(2) == 0 {
				shape = []int64{}
			}
			ins = append(ins, g.AddParam(fmt.Sprintf("c%d", i), ir.TensorOf(ir.Int64, shape...), ir.Int64Tensor(shape, vals...)))
		default:
			t := ir.TensorType{DType: pick(c, fuzzDTypes)}
			if c.Intn(8) == 0 {
				t.Unranked = true
			} else {
				r := c.Intn(5)
				t.Shape = make([]ir.Dim, r)
				for k := range t.Shape {
					t.Shape[k] = pick(c, fuzzDims)
				}
			}
			ins = append(ins, g.AddInput(fmt.Sprintf("x%d", i), t))
		}
	}
	maxOut := info.MaxOut
	if maxOut == ir.Variadic || maxOut > info.MinOut+3 {
		maxOut = info.MinOut + 3
	}
	nout := info.MinOut + c.Intn(maxOut-info.MinOut+1)
	outs := make([]string, nout)
	for i := range outs {
		outs[i] = fmt.Sprintf("y%d", i)
		if c.Intn(6) == 0 {
			outs[i] = ""
		}
	}
	n := g.NewNode(info.Name, info.Domain, ins, outs)
	for range c.Intn(6) {
		name := pick(c, fuzzAttrs)
		switch c.Intn(7) {
		case 0:
			n.SetAttr(ir.IntAttr(name, pick(c, fuzzInts)))
		case 1:
			vs := make([]int64, c.Intn(6))
			for k := range vs {
				vs[k] = pick(c, fuzzInts)
			}
			n.SetAttr(ir.IntsAttr(name, vs...))
		case 2:
			n.SetAttr(ir.StringAttr(name, pick(c, fuzzStrs)))
		case 3:
			n.SetAttr(ir.FloatsAttr(name, float32(pick(c, fuzzInts)), 0.5))
		case 4:
			n.SetAttr(ir.FloatAttr(name, float32(pick(c, fuzzInts))))
		case 5:
			vals := []int64{pick(c, fuzzInts)}
			n.SetAttr(ir.TensorAttr(name, ir.Int64Tensor([]int64{1}, vals...)))
		case 6:
			sg := g.NewSubgraph(name)
			for range c.Intn(4) {
				sg.AddInput("s", ir.TensorType{DType: pick(c, fuzzDTypes), Unranked: c.Intn(2) == 0})
			}
			if len(sg.Inputs) > 0 {
				m := sg.NewNode("Identity", "", []*ir.Value{sg.Inputs[len(sg.Inputs)-1]}, []string{"o"})
				sg.AddOutput(m.Outputs[0])
				for range c.Intn(3) {
					sg.AddOutput(sg.Inputs[0])
				}
			}
			n.SetAttr(ir.GraphAttr(name, sg))
		}
	}
	return g
}

func inferNoPanic(t *testing.T, g *ir.Graph, what string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			n := g.Nodes[0]
			t.Fatalf("%s: Infer panicked on %s (opset %d, inputs %v, attrs %d): %v", what, n.Op, g.Opset(""), typeStrings(n.Inputs), len(n.Attrs), r)
		}
	}()
	_ = Infer(g, Options{RequireStatic: true})
}

// Every op of the op table, at random opsets, over random inputs and
// attributes: Infer returns.
func TestRandomNodesDoNotPanic(t *testing.T) {
	ops := ir.Ops()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		g := randomGraph(randChooser{r}, ops)
		inferNoPanic(t, g, fmt.Sprintf("graph %d", i))
	}
}

// The TensorFlow ops alone, with TensorFlow's attributes among the random
// ones.
func TestRandomTFNodesDoNotPanic(t *testing.T) {
	var ops []ir.OpInfo
	for _, op := range ir.Ops() {
		if op.Domain == ir.TFDomain {
			ops = append(ops, op)
		}
	}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		g := randomGraph(randChooser{r}, ops)
		inferNoPanic(t, g, fmt.Sprintf("graph %d", i))
	}
}

func FuzzInfer(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 2, 5, 7, 9, 0, 1, 4, 4, 4, 2})
	f.Add([]byte("Conv Reshape Slice Einsum Loop If"))
	ops := ir.Ops()
	f.Fuzz(func(t *testing.T, data []byte) {
		g := randomGraph(&byteChooser{data}, ops)
		inferNoPanic(t, g, "fuzz input")
	})
}
