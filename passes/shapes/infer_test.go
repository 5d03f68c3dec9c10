package shapes

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// classifier builds x → Conv → Relu → GlobalAveragePool → Flatten → Gemm.
func classifier(t testing.TB, x string) (*builder, *ir.Value, *ir.Value) {
	b := newBuilder(t, 17)
	in := b.input("x", x)
	w := b.input("w", "f32[16,3,3,3]")
	c := b.op("Conv", b.ins(in, w), ints("pads", 1, 1, 1, 1), ints("strides", 2, 2))
	r := b.op("Relu", b.ins(c))
	p := b.op("GlobalAveragePool", b.ins(r))
	f := b.op("Flatten", b.ins(p))
	y := b.op("Gemm", b.ins(f, b.input("fc", "f32[10,16]")), iattr("transB", 1))
	b.g.AddOutput(y)
	return b, c, y
}

func TestSymbolicDimsAndBinding(t *testing.T) {
	tests := []struct {
		name             string
		x                string
		opts             Options
		wantIn, wantConv string
		wantY            string
	}{
		{"symbols propagate", "f32[batch,3,H,W]", Options{}, "f32[batch,3,H,W]", "f32[batch,16,?,?]", "f32[batch,10]"},
		{"-dim binds everywhere", "f32[batch,3,H,W]", Options{Dims: map[string]int64{"batch": 8, "H": 32, "W": 31}},
			"f32[8,3,32,31]", "f32[8,16,16,16]", "f32[8,10]"},
		{"-input-shape replaces the shape", "f32[batch,3,224,224]", Options{InputShapes: map[string][]ir.Dim{"x": staticDims(2, 3, 64, 64)}},
			"f32[2,3,64,64]", "f32[2,16,32,32]", "f32[2,10]"},
		{"-input-shape with a symbol, bound by -dim", "f32[1,3,224,224]",
			Options{InputShapes: map[string][]ir.Dim{"x": {ir.SymDim("n"), ir.D(3), ir.D(8), ir.D(8)}}, Dims: map[string]int64{"n": 4}},
			"f32[4,3,8,8]", "f32[4,16,4,4]", "f32[4,10]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, conv, y := classifier(t, tc.x)
			if err := Infer(b.g, tc.opts); err != nil {
				t.Fatal(err)
			}
			got := []string{b.g.Inputs[0].Type.String(), conv.Type.String(), y.Type.String()}
			want := []string{tc.wantIn, tc.wantConv, tc.wantY}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("x, conv, y = %v, want %v", got, want)
			}
		})
	}
}

func TestSymbols(t *testing.T) {
	b, conv, _ := classifier(t, "f32[batch,3,H,W]")
	conv.Type = parseType(t, "f32[batch,16,oh,ow]")
	if got := strings.Join(Symbols(b.g), " "); got != "H W batch oh ow" {
		t.Fatalf("Symbols = %q", got)
	}
}

func TestOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"unknown input", Options{InputShapes: map[string][]ir.Dim{"image": staticDims(1)}}, `input shape given for "image", but the graph has no input of that name (inputs: "x", "w", "fc")`},
		{"negative dim", Options{Dims: map[string]int64{"batch": -1}}, `dimension "batch" bound to a negative size -1`},
		{"unused override", Options{OutputTypes: map[string]ir.TensorType{"nothing": ir.TensorOf(ir.Float32)}}, `output type given for "nothing"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _, _ := classifier(t, "f32[batch,3,8,8]")
			tc.opts.File = "m.onnx"
			err := Infer(b.g, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Infer = %v, want an error containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "m.onnx: ") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestRequireStatic(t *testing.T) {
	// Infer writes the types it infers, which a later run reads as declared
	// ones; each run here starts from a fresh graph.
	build := func() (*ir.Graph, *ir.Value) {
		b := newBuilder(t, 13)
		x := b.input("x", "f32[batch,4]")
		r := b.op("Relu", b.ins(x))
		nz := b.op("NonZero", b.ins(r))
		b.g.AddOutput(nz)
		return b.g, nz
	}
	g, _ := build()
	err := Infer(g, Options{File: "m.onnx", RequireStatic: true})
	var el ir.ErrorList
	if !errors.As(err, &el) || len(el) != 1 {
		t.Fatalf("Infer = %v, want one error", err)
	}
	for _, want := range []string{
		"m.onnx: 3 values have no static shape",
		`"x" f32[batch,4] (graph input)`,
		`"Relu_1_out0" f32[batch,4] (node "Relu_1" (Relu))`,
		`"NonZero_2_out0" i64[2,dd:NonZero_2:1] (node "NonZero_2" (NonZero))`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}

	// Binding the batch leaves the data-dependent size.
	g, _ = build()
	err = Infer(g, Options{RequireStatic: true, Dims: map[string]int64{"batch": 2}})
	if err == nil || !strings.Contains(err.Error(), "1 value has no static shape") || strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("Infer = %v, want only the NonZero output listed", err)
	}
	// The data-dependent symbol can be bound like any other, or overridden.
	g, nz := build()
	if err := Infer(g, Options{RequireStatic: true, Dims: map[string]int64{"batch": 2, "dd:NonZero_2:1": 5}}); err != nil {
		t.Fatalf("with the data-dependent size bound: %v", err)
	}
	if got := nz.Type.String(); got != "i64[2,5]" {
		t.Fatalf("NonZero = %s, want i64[2,5]", got)
	}
	g, nz = build()
	if err := Infer(g, Options{RequireStatic: true, Dims: map[string]int64{"batch": 2},
		OutputTypes: map[string]ir.TensorType{nz.Name: ir.TensorOf(ir.Int64, 2, 7)}}); err != nil {
		t.Fatalf("with an override: %v", err)
	}
	if got := nz.Type.String(); got != "i64[2,7]" {
		t.Fatalf("NonZero = %s, want i64[2,7]", got)
	}
	// An override that contradicts inference is an error.
	g, nz = build()
	err = Infer(g, Options{OutputTypes: map[string]ir.TensorType{nz.Name: ir.TensorOf(ir.Int64, 3, 7)}})
	if err == nil || !strings.Contains(err.Error(), "but the output type override gives i64[3,7]") {
		t.Fatalf("contradicting override: %v", err)
	}
}

func TestRequireStaticCapsTheList(t *testing.T) {
	b := newBuilder(t, 13)
	v := b.input("x", "f32[n]")
	for range 30 {
		v = b.op("Relu", b.ins(v))
	}
	err := Infer(b.g, Options{RequireStatic: true})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "31 values have no static shape") || !strings.Contains(msg, "and 11 more") {
		t.Fatalf("error %q: want 31 values, 20 of them listed", msg)
	}
	if c := strings.Count(msg, "(node "); c != 19 {
		t.Fatalf("error lists %d nodes, want 19 (plus the input)", c)
	}
}

// Values in a branch that never runs do not count.
func TestRequireStaticSkipsDeadBranches(t *testing.T) {
	b := newBuilder(t, 13)
	y := ifConst(b, true)
	n := y.Def
	els := n.Attr("else_branch").Graph
	q := els.AddInput("unused", parseType(t, "f32[?]")) // malformed but harmless: an If branch with an input
	_ = q
	b.g.AddOutput(y)
	if err := Infer(b.g, Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
}

func TestDeclaredTypes(t *testing.T) {
	tests := []struct {
		name    string
		decl    string // declared type of the Conv output
		opts    Options
		want    string
		wantErr string
	}{
		{"agreeing value_info", "f32[1,8,6,6]", Options{}, "f32[1,8,6,6]", ""},
		{"symbolic value_info", "f32[n,8,h,w]", Options{}, "f32[1,8,6,6]", ""},
		{"conflicting shape", "f32[1,8,3,3]", Options{}, "", `m.onnx: node "Conv_1" (Conv): output "Conv_1_out0" has inferred type f32[1,8,6,6], but the model declares f32[1,8,3,3]`},
		{"conflicting rank", "f32[8,36]", Options{}, "", "but the model declares f32[8,36]"},
		{"conflicting element type", "f16[1,8,6,6]", Options{}, "", "but the model declares f16[1,8,6,6]"},
		{"stale value_info after -input-shape", "f32[1,8,6,6]", Options{InputShapes: map[string][]ir.Dim{"x": staticDims(2, 3, 10, 10)}}, "f32[2,8,8,8]", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, 17)
			x := b.input("x", "f32[1,3,8,8]")
			y := b.op("Conv", b.ins(x, b.input("w", "f32[8,3,3,3]")))
			y.Type = parseType(t, tc.decl)
			tc.opts.File = "m.onnx"
			err := Infer(b.g, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Infer = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := y.Type.String(); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// Declared sizes fill in what inference cannot know.
func TestDeclaredTypesRefineUnknownSizes(t *testing.T) {
	b := newBuilder(t, 13)
	x := b.input("x", "f32[4,4]")
	nz := b.op("NonZero", b.ins(x))
	nz.Type = parseType(t, "i64[2,nnz]")
	tr := b.op("Transpose", b.ins(nz))
	if err := Infer(b.g, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := tr.Type.String(); got != "i64[nnz,2]" {
		t.Fatalf("got %s, want i64[nnz,2]", got)
	}
}

func TestUnknownOps(t *testing.T) {
	tests := []struct {
		name    string
		decl    string
		over    map[string]ir.TensorType
		want    string
		wantErr string
	}{
		{"no type anywhere", "", nil, "", `node "custom" (com.example.Fancy): unknown operator: cannot infer the type of "fancy_out"; declare it in the model's value_info or pass an output type override`},
		{"value_info", "f32[2,5]", nil, "f32[2,5]", ""},
		{"override", "", map[string]ir.TensorType{"fancy_out": ir.TensorOf(ir.Float32, 3, 5)}, "f32[3,5]", ""},
		{"override refines value_info", "f32[?,5]", map[string]ir.TensorType{"fancy_out": ir.TensorOf(ir.Float32, 3, 5)}, "f32[3,5]", ""},
		{"value_info refines override", "f32[3,s]", map[string]ir.TensorType{"fancy_out": parseType(t, "f32[?,5]")}, "f32[3,5]", ""},
		{"override contradicts value_info", "f32[2,5]", map[string]ir.TensorType{"fancy_out": ir.TensorOf(ir.Float32, 3, 5)}, "", `output "fancy_out" has inferred type f32[3,5], but the model declares f32[2,5]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := ir.NewGraph("g")
			g.Opsets = []ir.Opset{{Domain: "", Version: 17}, {Domain: "com.example", Version: 1}}
			x := g.AddInput("x", ir.TensorOf(ir.Float32, 2, 5))
			n := g.NewNode("Fancy", "com.example", []*ir.Value{x}, []string{"fancy_out"})
			n.Name = "custom"
			if tc.decl != "" {
				n.Outputs[0].Type = parseType(t, tc.decl)
			}
			r := g.NewNode("Relu", "", []*ir.Value{n.Outputs[0]}, []string{"r"})
			err := Infer(g, Options{OutputTypes: tc.over})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Infer = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Outputs[0].Type.String(); got != tc.want {
				t.Fatalf("downstream Relu = %s, want %s", got, tc.want)
			}
		})
	}
}

// A known op whose form the pass does not model falls back the same way.
func TestUnsupportedForm(t *testing.T) {
	g := ir.NewGraph("g")
	g.Opsets = []ir.Opset{{Domain: "", Version: 13}}
	n := g.NewNode("Constant", "", nil, []string{"c"})
	n.SetAttr(ir.Attr{Name: "sparse_value", Kind: ir.AttrOther})
	err := Infer(g, Options{})
	if err == nil || !strings.Contains(err.Error(), "shape inference for Constant at opset 13 is not supported (sparse_value)") {
		t.Fatalf("Infer = %v", err)
	}
	n.Outputs[0].Type = ir.TensorOf(ir.Float32, 3)
	if err := Infer(g, Options{}); err != nil || n.Outputs[0].Type.String() != "f32[3]" {
		t.Fatalf("with value_info: %v, %s", err, n.Outputs[0].Type)
	}
}

// A pipeline may run inference again with the same options: the types a
// run wrote read as declared ones in the next, and agree.
func TestInferIsRepeatable(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "f32[batch,10]"},
		{Options{Dims: map[string]int64{"batch": 2}}, "f32[2,10]"},
		{Options{InputShapes: map[string][]ir.Dim{"x": {ir.SymDim("n"), ir.D(3), ir.D(4), ir.D(4)}}, Dims: map[string]int64{"n": 5}}, "f32[5,10]"},
	} {
		b, _, y := classifier(t, "f32[batch,3,8,8]")
		for i := range 3 {
			if err := Infer(b.g, tc.opts); err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			if got := y.Type.String(); got != tc.want {
				t.Fatalf("run %d: %s, want %s", i, got, tc.want)
			}
		}
	}
}

func TestErrorsAreSortedAndCapped(t *testing.T) {
	b := newBuilder(t, 13)
	x := b.input("x", "f32[2,3]")
	for range 15 {
		b.op("Add", b.ins(x, b.input(fmt.Sprintf("bad%d", b.n), "f32[4]")))
	}
	err := Infer(b.g, Options{File: "m.onnx"})
	var el ir.ErrorList
	if !errors.As(err, &el) || len(el) != 15 {
		t.Fatalf("Infer = %v, want 15 errors", err)
	}
	if !strings.Contains(err.Error(), "too many errors (5 more)") {
		t.Fatalf("error list is not capped: %v", err)
	}
}

// TestOtherDomainsAreNotInferredWithONNXRules checks that a TensorFlow op
// that shares its name with an ONNX op (Cast: DstT, not to) is not given
// the ONNX op's result type: TensorFlow's rule wants DstT, so its output
// stays unknown, with an error naming the op.
func TestOtherDomainsAreNotInferredWithONNXRules(t *testing.T) {
	g := ir.NewGraph("tf")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 2, 3))
	n := g.NewNode("Cast", ir.TFDomain, []*ir.Value{x}, []string{"y"})
	n.SetAttr(ir.IntAttr("to", 7)) // an ONNX attribute that must be ignored here
	g.AddOutput(n.Outputs[0])
	err := Infer(g, Options{})
	if err == nil || !strings.Contains(err.Error(), "Cast") {
		t.Fatalf("Infer = %v, want an error naming Cast", err)
	}
	if y := n.Outputs[0].Type; y.DType != ir.Undefined {
		t.Errorf("tf.Cast output = %v, want an unknown type", y)
	}
}
