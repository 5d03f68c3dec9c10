package shapes

import (
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// branch builds a subgraph of n whose single output is op applied to v (an
// outer value), or v itself when op is "".
func branch(t testing.TB, n *ir.Node, name, op string, v *ir.Value, attrs ...ir.Attr) *ir.Graph {
	sg := n.Graph.NewSubgraph(name)
	n.SetAttr(ir.GraphAttr(name, sg)) // sets the owner, which Capture needs
	sg.Capture(v)
	if op == "" {
		op = "Identity"
	}
	m := sg.NewNode(op, "", []*ir.Value{v}, []string{n.String() + "_" + name + "_out"})
	m.Name = name + "_" + op
	for _, a := range attrs {
		m.SetAttr(a)
	}
	sg.AddOutput(m.Outputs[0])
	return sg
}

func TestIf(t *testing.T) {
	tests := []struct {
		name       string
		thenT      string
		elseT      string
		elseOp     string
		elseAttrs  []ir.Attr
		want       string
		wantErr    string
		skipBranch string
	}{
		{name: "equal branches", thenT: "f32[2,3]", elseT: "f32[2,3]", elseOp: "Neg", want: "f32[2,3]"},
		{name: "different sizes", thenT: "f32[2,3]", elseT: "f32[2,4]", want: "f32[2,?]"},
		{name: "same symbol", thenT: "f32[batch,3]", elseT: "f32[batch,5]", want: "f32[batch,?]"},
		{name: "different ranks", thenT: "f32[2,3]", elseT: "f32[6]", want: "f32[*]"},
		{name: "different element types", thenT: "f32[2,3]", elseT: "i64[2,3]", wantErr: "output 0 is f32 in then_branch but i64 in else_branch"},
		{name: "inference inside the branch", thenT: "f32[2,3]", elseT: "f32[3,2]", elseOp: "Transpose", want: "f32[2,3]"},
		// A run that took a branch that cannot be typed would fail, so the
		// other branch is the one that runs.
		{name: "a branch that cannot be typed is dead", thenT: "f32[2,3]", elseT: "f32[2,5]", elseOp: "Softmax", elseAttrs: []ir.Attr{iattr("axis", 5)}, want: "f32[2,3]"},
		{name: "missing branch", thenT: "f32[2,3]", skipBranch: "else_branch", wantErr: "missing required graph attribute else_branch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, 13)
			cond := b.input("cond", "bool[]")
			x := b.input("a", tc.thenT)
			n := b.node("If", b.ins(cond), 1)
			branch(t, n, "then_branch", "", x)
			if tc.skipBranch == "" {
				y := b.input("b", tc.elseT)
				branch(t, n, "else_branch", tc.elseOp, y, tc.elseAttrs...)
			}
			err := Infer(b.g, Options{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Infer = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := n.Outputs[0].Type.String(); got != tc.want {
				t.Fatalf("If output = %s, want %s", got, tc.want)
			}
		})
	}
}

// When neither branch can be typed, the errors of both are reported.
func TestIfBothBranchesFail(t *testing.T) {
	b := newBuilder(t, 13)
	x := b.input("x", "f32[2,3]")
	n := b.node("If", b.ins(b.input("cond", "bool[]")), 1)
	branch(t, n, "then_branch", "Softmax", x, iattr("axis", 4))
	branch(t, n, "else_branch", "Softmax", x, iattr("axis", 5))
	err := Infer(b.g, Options{})
	if err == nil || !strings.Contains(err.Error(), "axis 4 is out of range") || !strings.Contains(err.Error(), "axis 5 is out of range") {
		t.Fatalf("Infer = %v, want the errors of both branches", err)
	}
}

// The values of a branch that cannot run are not required to be static.
func TestRequireStaticSkipsUntypableBranch(t *testing.T) {
	b := newBuilder(t, 13)
	x := b.input("x", "f32[2,3]")
	n := b.node("If", b.ins(b.input("cond", "bool[]")), 1)
	branch(t, n, "then_branch", "Relu", x)
	els := b.g.NewSubgraph("else_branch")
	n.SetAttr(ir.GraphAttr("else_branch", els))
	els.Capture(x)
	nz := els.NewNode("NonZero", "", []*ir.Value{x}, []string{"nz"})
	bad := els.NewNode("Softmax", "", []*ir.Value{nz.Outputs[0]}, []string{"bad"})
	bad.SetAttr(iattr("axis", 9))
	els.AddOutput(bad.Outputs[0])
	if err := Infer(b.g, Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	if got := n.Outputs[0].Type.String(); got != "f32[2,3]" {
		t.Fatalf("If output = %s", got)
	}
}

// With a constant condition only the taken branch counts: errors in the
// other are dropped.
func TestIfConstantConditionIgnoresDeadBranch(t *testing.T) {
	for _, cond := range []bool{true, false} {
		b := newBuilder(t, 13)
		raw := byte(0)
		if cond {
			raw = 1
		}
		c := b.g.AddParam("c", ir.TensorOf(ir.Bool), &ir.Tensor{DType: ir.Bool, Shape: []int64{}, Raw: []byte{raw}})
		good := b.input("good", "f32[2,3]")
		bad := b.input("bad", "f32[2,3]")
		n := b.node("If", b.ins(c), 1)
		live, dead := "then_branch", "else_branch"
		if !cond {
			live, dead = dead, live
		}
		branch(t, n, live, "Relu", good)
		branch(t, n, dead, "Softmax", bad, iattr("axis", 7)) // would be an error
		if err := Infer(b.g, Options{RequireStatic: true}); err != nil {
			t.Fatalf("cond %v: %v", cond, err)
		}
		if got := n.Outputs[0].Type.String(); got != "f32[2,3]" {
			t.Fatalf("cond %v: %s", cond, got)
		}
	}
}

// A given input value selects the branch, as a sample-rate input does.
func TestInputValuesSelectBranch(t *testing.T) {
	build := func() (*ir.Graph, *ir.Node) {
		b := newBuilder(t, 13)
		sr := b.input("sr", "i64[]")
		x := b.input("x", "f32[1,?]")
		cond := b.op("Equal", b.ins(sr, b.i64("k16", []int64{}, 16000)))
		n := b.node("If", b.ins(cond), 1)
		branch(t, n, "then_branch", "Relu", x)
		branch(t, n, "else_branch", "Transpose", x)
		return b.g, n
	}
	sr := func(v int64) map[string]*ir.Tensor { return map[string]*ir.Tensor{"sr": ir.Int64Tensor([]int64{}, v)} }
	shape := map[string][]ir.Dim{"x": staticDims(1, 512)}
	for _, tc := range []struct {
		vals    map[string]*ir.Tensor
		want    string
		wantErr string
	}{
		{sr(16000), "f32[1,512]", ""},
		{sr(8000), "f32[512,1]", ""},
		{nil, "f32[?,?]", ""},
		{map[string]*ir.Tensor{"sr": ir.Float32Tensor([]int64{}, 1)}, "", `value "sr": the given input value is f32[], but the input is i64[]`},
		{map[string]*ir.Tensor{"rate": ir.Int64Tensor([]int64{}, 1)}, "", `input value given for "rate"`},
	} {
		g, n := build()
		err := Infer(g, Options{InputShapes: shape, InputValues: tc.vals})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Infer = %v, want an error containing %q", err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Outputs[0].Type.String(); got != tc.want {
			t.Errorf("values %v: If output = %s, want %s", tc.vals, got, tc.want)
		}
	}
}

// If nodes nested inside If branches, reading values two levels out.
func TestNestedIf(t *testing.T) {
	b := newBuilder(t, 13)
	cond := b.input("cond", "bool[]")
	x := b.input("x", "f32[batch,4]")
	outer := b.node("If", b.ins(cond), 1)
	thenG := outer.Graph.NewSubgraph("then_branch")
	outer.SetAttr(ir.GraphAttr("then_branch", thenG))
	thenG.Capture(cond)
	inner := thenG.NewNode("If", "", []*ir.Value{cond}, []string{"inner_out"})
	inner.Name = "inner"
	branch(t, inner, "then_branch", "Relu", x)
	branch(t, inner, "else_branch", "Sigmoid", x)
	thenG.AddOutput(inner.Outputs[0])
	branch(t, outer, "else_branch", "Tanh", x)
	if err := ir.Verify(b.g); err != nil {
		t.Fatalf("test graph: %v", err)
	}
	if err := Infer(b.g, Options{Dims: map[string]int64{"batch": 3}}); err != nil {
		t.Fatal(err)
	}
	if got := outer.Outputs[0].Type.String(); got != "f32[3,4]" {
		t.Fatalf("got %s", got)
	}
}

// loop builds a Loop node: inputs M, cond and carried initial values; the
// body is made by fill from its inputs (iter, cond, carried…) and returns
// its outputs (cond, carried…, scans…).
func loop(t testing.TB, b *builder, m, cond *ir.Value, init []*ir.Value, nout int, fill func(sg *ir.Graph, in []*ir.Value) []*ir.Value) *ir.Node {
	n := b.node("Loop", append([]*ir.Value{m, cond}, init...), nout)
	sg := b.g.NewSubgraph("body")
	n.SetAttr(ir.GraphAttr("body", sg))
	var ins []*ir.Value
	ins = append(ins, sg.AddInput("iter", ir.TensorType{}), sg.AddInput("cond_in", ir.TensorType{}))
	for i := range init {
		ins = append(ins, sg.AddInput("carried"+string(rune('0'+i)), ir.TensorType{}))
	}
	for _, o := range fill(sg, ins) {
		sg.AddOutput(o)
	}
	return n
}

func TestLoop(t *testing.T) {
	t.Run("fixed trip count", func(t *testing.T) {
		b := newBuilder(t, 13)
		x := b.input("x", "f32[2,3]")
		a0 := b.input("a0", "f32[2,3]")
		n := loop(t, b, b.i64("M", []int64{}, 5), nil, []*ir.Value{a0}, 2, func(sg *ir.Graph, in []*ir.Value) []*ir.Value {
			sg.Capture(x)
			c := sg.NewNode("Identity", "", []*ir.Value{in[1]}, []string{"c_out"}).Outputs[0]
			a := sg.NewNode("Add", "", []*ir.Value{in[2], x}, []string{"a_next"}).Outputs[0]
			s := sg.NewNode("Relu", "", []*ir.Value{a}, []string{"scan"}).Outputs[0]
			return []*ir.Value{c, a, s}
		})
		if err := ir.Verify(b.g); err != nil {
			t.Fatalf("test graph: %v", err)
		}
		if err := Infer(b.g, Options{RequireStatic: true}); err != nil {
			t.Fatal(err)
		}
		body := n.Attr("body").Graph
		got := strings.Join(append(typeStrings(n.Outputs), typeStrings(body.Inputs)...), " ")
		if got != "f32[2,3] f32[5,2,3] i64[] bool[] f32[2,3]" {
			t.Fatalf("outputs and body inputs = %s", got)
		}
	})
	t.Run("constant true condition passed through", func(t *testing.T) {
		b := newBuilder(t, 13)
		a0 := b.input("a0", "f32[3]")
		cond := b.g.AddParam("t", ir.TensorOf(ir.Bool), &ir.Tensor{DType: ir.Bool, Shape: []int64{}, Raw: []byte{1}})
		n := loop(t, b, b.i64("M", []int64{}, 4), cond, []*ir.Value{a0}, 2, func(sg *ir.Graph, in []*ir.Value) []*ir.Value {
			s := sg.NewNode("Neg", "", []*ir.Value{in[2]}, []string{"scan"}).Outputs[0]
			return []*ir.Value{in[1], in[2], s}
		})
		if err := Infer(b.g, Options{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(typeStrings(n.Outputs), " "); got != "f32[3] f32[4,3]" {
			t.Fatalf("outputs = %s", got)
		}
	})
	t.Run("growing carried value and a data-dependent trip count", func(t *testing.T) {
		b := newBuilder(t, 13)
		row := b.input("row", "f32[1,3]")
		cond := b.input("keep_going", "bool[]")
		n := loop(t, b, nil, cond, []*ir.Value{row}, 2, func(sg *ir.Graph, in []*ir.Value) []*ir.Value {
			sg.Capture(row)
			cat := sg.NewNode("Concat", "", []*ir.Value{in[2], row}, []string{"grown"})
			cat.SetAttr(iattr("axis", 0))
			s := sg.NewNode("Shape", "", []*ir.Value{cat.Outputs[0]}, []string{"sh"}).Outputs[0]
			c := sg.NewNode("Identity", "", []*ir.Value{in[1]}, []string{"c_out"}).Outputs[0]
			return []*ir.Value{c, cat.Outputs[0], s}
		})
		if err := Infer(b.g, Options{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(typeStrings(n.Outputs), " "); got != "f32[?,3] i64[dd:Loop_1:trip,2]" {
			t.Fatalf("outputs = %s", got)
		}
	})
	t.Run("body with the wrong inputs", func(t *testing.T) {
		b := newBuilder(t, 13)
		a0 := b.input("a0", "f32[3]")
		n := b.node("Loop", b.ins(nil, nil, a0), 1)
		sg := b.g.NewSubgraph("body")
		i := sg.AddInput("i", ir.TensorType{})
		sg.AddOutput(i)
		n.SetAttr(ir.GraphAttr("body", sg))
		err := Infer(b.g, Options{})
		if err == nil || !strings.Contains(err.Error(), "body has 1 inputs, want 3") {
			t.Fatalf("Infer = %v", err)
		}
	})
}

func TestScan(t *testing.T) {
	tests := []struct {
		name            string
		xs              string
		inAxes, outAxes []int64
		want            string
	}{
		{"default axes", "f32[7,4]", nil, nil, "f32[4] f32[7,4]"},
		{"scan_output_axes", "f32[7,4]", nil, []int64{1}, "f32[4] f32[4,7]"},
		{"scan_input_axes", "f32[4,seq]", []int64{-1}, nil, "f32[4] f32[seq,4]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, 13)
			s0 := b.input("s0", "f32[4]")
			xs := b.input("xs", tc.xs)
			n := b.node("Scan", b.ins(s0, xs), 2, iattr("num_scan_inputs", 1))
			if tc.inAxes != nil {
				n.SetAttr(ints("scan_input_axes", tc.inAxes...))
			}
			if tc.outAxes != nil {
				n.SetAttr(ints("scan_output_axes", tc.outAxes...))
			}
			sg := b.g.NewSubgraph("body")
			s := sg.AddInput("s", ir.TensorType{})
			x := sg.AddInput("x", ir.TensorType{})
			s2 := sg.NewNode("Add", "", []*ir.Value{s, x}, []string{"s2"}).Outputs[0]
			y := sg.NewNode("Mul", "", []*ir.Value{x, x}, []string{"y"}).Outputs[0]
			sg.AddOutput(s2)
			sg.AddOutput(y)
			n.SetAttr(ir.GraphAttr("body", sg))
			if err := Infer(b.g, Options{}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(typeStrings(n.Outputs), " "); got != tc.want {
				t.Fatalf("outputs = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSequences(t *testing.T) {
	b := newBuilder(t, 13)
	a := b.input("a", "f32[2,3]")
	c := b.input("c", "f32[2,5]")
	seq := b.op("SequenceConstruct", b.ins(a, c))
	at := b.op("SequenceAt", b.ins(seq, b.i64("i", []int64{}, 0)))
	n := b.op("SequenceLength", b.ins(seq))
	cat := b.op("ConcatFromSequence", b.ins(seq), iattr("axis", 1))
	split := b.op("SplitToSequence", b.ins(a), iattr("axis", 1))
	if err := Infer(b.g, Options{}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(typeStrings([]*ir.Value{seq, at, n, cat, split}), " ")
	if got != "seq<f32[2,?]> f32[2,?] i64[] f32[2,?] seq<f32[2,1]>" {
		t.Fatalf("got %s", got)
	}
}
