package irtext_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtest"
	"github.com/remat-compile/remat/ir/irtext"
)

// comparer checks that two graphs have the same structure: everything the
// IR models but Ext, node IDs, named values' IDs and the order of use lists.
type comparer struct {
	t  testing.TB
	vm map[*ir.Value]*ir.Value // values of a to values of b
}

func compareGraphs(t testing.TB, a, b *ir.Graph) {
	t.Helper()
	c := &comparer{t: t, vm: map[*ir.Value]*ir.Value{}}
	c.graph("graph "+a.Name, a, b)
}

func (c *comparer) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf(format, args...)
}

func (c *comparer) graph(path string, a, b *ir.Graph) {
	c.t.Helper()
	if a.Name != b.Name || a.Doc != b.Doc || !slices.Equal(a.Opsets, b.Opsets) {
		c.errorf("%s: name, doc or opsets differ: %q %q %v vs %q %q %v", path, a.Name, a.Doc, a.Opsets, b.Name, b.Doc, b.Opsets)
	}
	if len(a.Inputs) != len(b.Inputs) || len(a.Params) != len(b.Params) || len(a.Nodes) != len(b.Nodes) || len(a.Outputs) != len(b.Outputs) {
		c.errorf("%s: sizes differ: %d/%d/%d/%d inputs/params/nodes/outputs vs %d/%d/%d/%d", path,
			len(a.Inputs), len(a.Params), len(a.Nodes), len(a.Outputs), len(b.Inputs), len(b.Params), len(b.Nodes), len(b.Outputs))
		return
	}
	for i, v := range a.Inputs {
		c.define(fmt.Sprintf("%s input %d", path, i), v, b.Inputs[i], b)
	}
	for i, v := range a.Params {
		if w, ok := c.vm[v]; ok {
			if w != b.Params[i] {
				c.errorf("%s param %d: %s is not the same input as %s", path, i, v, b.Params[i])
			}
			continue
		}
		c.define(fmt.Sprintf("%s param %d", path, i), v, b.Params[i], b)
	}
	for i, n := range a.Nodes {
		c.node(fmt.Sprintf("%s node %d (%s)", path, i, n.OpName()), n, b.Nodes[i], b)
	}
	c.uses(path+" outputs", a.Outputs, b.Outputs)
}

func (c *comparer) define(path string, v, w *ir.Value, bg *ir.Graph) {
	c.t.Helper()
	if (v == nil) != (w == nil) {
		c.errorf("%s: %v vs %v", path, v, w)
		return
	}
	if v == nil {
		return
	}
	if _, dup := c.vm[v]; dup {
		c.errorf("%s: %s defined twice", path, v)
	}
	c.vm[v] = w
	if v.Name != w.Name || v.Doc != w.Doc || v.Name == "" && v.ID != w.ID {
		c.errorf("%s: value %s (doc %q) vs %s (doc %q)", path, v, v.Doc, w, w.Doc)
	}
	if !v.Type.Equal(w.Type) {
		c.errorf("%s: type %v vs %v", path, v.Type, w.Type)
	}
	if len(v.Uses) != len(w.Uses) {
		c.errorf("%s: %d uses vs %d", path, len(v.Uses), len(w.Uses))
	}
	if w.Graph != bg {
		c.errorf("%s: value records the wrong graph", path)
	}
	c.tensor(path+" data", v.Data, w.Data)
}

func (c *comparer) uses(path string, vs, ws []*ir.Value) {
	c.t.Helper()
	if len(vs) != len(ws) {
		c.errorf("%s: %d values vs %d", path, len(vs), len(ws))
		return
	}
	for i, v := range vs {
		if v == nil && ws[i] == nil {
			continue
		}
		if c.vm[v] != ws[i] || ws[i] == nil {
			c.errorf("%s %d: %s vs %s", path, i, v, ws[i])
		}
	}
}

func (c *comparer) node(path string, n, m *ir.Node, bg *ir.Graph) {
	c.t.Helper()
	if n.Op != m.Op || n.Domain != m.Domain || n.Name != m.Name || n.Doc != m.Doc || m.Graph != bg {
		c.errorf("%s: node %q %q %q %q vs %q %q %q %q", path, n.Domain, n.Op, n.Name, n.Doc, m.Domain, m.Op, m.Name, m.Doc)
	}
	c.uses(path+" input", n.Inputs, m.Inputs)
	c.uses(path+" implicit", n.Implicit, m.Implicit)
	if len(n.Control) != len(m.Control) || len(n.ControlUses) != len(m.ControlUses) {
		c.errorf("%s: %d control inputs and %d control uses vs %d and %d", path, len(n.Control), len(n.ControlUses), len(m.Control), len(m.ControlUses))
	} else {
		for i, k := range n.Control {
			if j := slices.Index(n.Graph.Nodes, k); j < 0 || j >= len(bg.Nodes) || bg.Nodes[j] != m.Control[i] {
				c.errorf("%s: control input %d is node %d of the graph, not the same position", path, i, j)
			}
		}
	}
	if len(n.Attrs) != len(m.Attrs) {
		c.errorf("%s: %d attributes vs %d", path, len(n.Attrs), len(m.Attrs))
	} else {
		for i := range n.Attrs {
			c.attr(path+" attribute "+n.Attrs[i].Name, &n.Attrs[i], &m.Attrs[i], m)
		}
	}
	if len(n.Outputs) != len(m.Outputs) {
		c.errorf("%s: %d outputs vs %d", path, len(n.Outputs), len(m.Outputs))
		return
	}
	for i, v := range n.Outputs {
		c.define(fmt.Sprintf("%s output %d", path, i), v, m.Outputs[i], bg)
		if v != nil && (m.Outputs[i].Def != m || m.Outputs[i].Index != i) {
			c.errorf("%s output %d: wrong Def or Index", path, i)
		}
	}
}

func (c *comparer) attr(path string, a, b *ir.Attr, owner *ir.Node) {
	c.t.Helper()
	if a.Name != b.Name || a.Kind != b.Kind || a.Doc != b.Doc {
		c.errorf("%s: %q %v doc %q vs %q %v doc %q", path, a.Name, a.Kind, a.Doc, b.Name, b.Kind, b.Doc)
		return
	}
	same := true
	switch a.Kind {
	case ir.AttrInt:
		same = a.Int == b.Int
	case ir.AttrFloat:
		same = math.Float32bits(a.Float) == math.Float32bits(b.Float)
	case ir.AttrString:
		same = bytes.Equal(a.Str, b.Str)
	case ir.AttrInts:
		same = slices.Equal(a.Ints, b.Ints)
	case ir.AttrFloats:
		same = slices.EqualFunc(a.Floats, b.Floats, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
	case ir.AttrStrings:
		same = slices.EqualFunc(a.Strs, b.Strs, bytes.Equal)
	case ir.AttrTensor:
		c.tensor(path, a.Tensor, b.Tensor)
	case ir.AttrTensors:
		same = len(a.Tensors) == len(b.Tensors)
		for i := range min(len(a.Tensors), len(b.Tensors)) {
			c.tensor(fmt.Sprintf("%s tensor %d", path, i), a.Tensors[i], b.Tensors[i])
		}
	case ir.AttrGraph:
		c.subgraph(path, a.Graph, b.Graph, owner)
	case ir.AttrGraphs:
		same = len(a.Graphs) == len(b.Graphs)
		for i := range min(len(a.Graphs), len(b.Graphs)) {
			c.subgraph(fmt.Sprintf("%s graph %d", path, i), a.Graphs[i], b.Graphs[i], owner)
		}
	}
	if !same {
		c.errorf("%s: values differ: %+v vs %+v", path, *a, *b)
	}
}

func (c *comparer) subgraph(path string, a, b *ir.Graph, owner *ir.Node) {
	c.t.Helper()
	if b.Owner != owner || b.Parent != owner.Graph {
		c.errorf("%s: subgraph has the wrong owner or parent", path)
	}
	c.graph(path+" graph "+a.Name, a, b)
}

func (c *comparer) tensor(path string, a, b *ir.Tensor) {
	c.t.Helper()
	if (a == nil) != (b == nil) {
		c.errorf("%s: %v vs %v", path, a, b)
		return
	}
	if a == nil {
		return
	}
	if a.Name != b.Name || a.Doc != b.Doc || a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) ||
		!bytes.Equal(a.Raw, b.Raw) || !slices.EqualFunc(a.Strs, b.Strs, bytes.Equal) {
		c.errorf("%s: tensors differ:\n%+v\n%+v", path, *a, *b)
	}
}

// roundTrip prints g, parses the text, compares the structure and checks
// that the parsed graph prints the same text.
func roundTrip(t *testing.T, g *ir.Graph) *ir.Graph {
	t.Helper()
	if err := ir.Verify(g); err != nil {
		t.Fatalf("the test's graph does not verify: %v", err)
	}
	var b strings.Builder
	if err := irtext.Print(&b, g); err != nil {
		t.Fatalf("Print: %v", err)
	}
	text := b.String()
	g2, err := irtext.Parse("printed", text)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	compareGraphs(t, g, g2)
	if got := irtext.Format(g2); got != text {
		t.Errorf("printed again:\n%s", irtest.Diff(text, got))
	}
	return g2
}

// TestRoundTripAPI builds a graph with the ir API, using what text written
// by hand rarely does (sparse IDs, awkward names and bits, captures listed
// by an inner owner only), and checks that it survives print and parse.
func TestRoundTripAPI(t *testing.T) {
	g := ir.NewGraph("root graph")
	g.Doc = "built with the API"
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}, {Domain: "ai.onnx", Version: 18}, {Domain: "com.microsoft", Version: 1}, {Domain: "weird domain", Version: 2}}
	x := g.AddInput("x", ir.TensorType{DType: ir.Float32, Shape: []ir.Dim{ir.SymDim("batch"), ir.D(3)}})
	x.Doc = "the input"
	anon := g.AddInput("", ir.TensorOf(ir.Float32, 3))
	looksAnon := g.AddInput("v1", ir.TensorOf(ir.Float32, 3)) // named "v1", while anon has ID 1
	kw := g.AddInput("input", ir.TensorType{Kind: ir.KindSequence, DType: ir.Int64, Unranked: true})
	odd := g.AddInput("wé:0", ir.TensorType{DType: ir.Bool, Shape: []ir.Dim{ir.UnknownDim, {Size: -1, Sym: "?"}, {Size: -1, Sym: "12"}}})
	cond := g.AddInput("cond", ir.TensorOf(ir.Bool))

	half := &ir.Tensor{DType: ir.Float16, Shape: []int64{3}, Raw: []byte{0x00, 0x3c, 0x01, 0x7e, 0x01, 0x00}}
	p1 := g.AddParam("p1", half.Type(), half)
	both := g.AddParam("both", ir.TensorType{DType: ir.Float32, Shape: []ir.Dim{ir.UnknownDim}}, &ir.Tensor{Name: "both_t", DType: ir.Float32, Shape: []int64{1}, Raw: []byte{1, 2, 3, 4}, Doc: "t"})
	g.MarkInput(both)
	unnamedParam := g.AddParam("", ir.TensorOf(ir.Int64, 2), ir.Int64Tensor([]int64{2}, -1, math.MaxInt64))

	// A node that is removed again leaves holes in the ID space.
	dead := g.NewNode("Relu", "", []*ir.Value{x}, []string{"dead"})
	g.RemoveNode(dead)

	conv := g.NewNode("Conv", "ai.onnx", []*ir.Value{x, p1, nil}, []string{""})
	out := conv.SetOutput(0, "")
	out.Type = ir.TensorOf(ir.Float32, 1, 2)
	conv.Name, conv.Doc = "conv \"1\"", "doc\nwith newline"
	conv.SetAttr(ir.IntsAttr("strides", 2, 2))
	conv.SetAttr(ir.FloatAttr("nan_payload", math.Float32frombits(0x7fa00001)))
	conv.SetAttr(ir.FloatAttr("neg_zero", float32(math.Copysign(0, -1))))
	conv.SetAttr(ir.FloatsAttr("fs", float32(math.Inf(-1)), 1e-45, math.MaxFloat32))
	conv.SetAttr(ir.Attr{Name: "bytes", Kind: ir.AttrString, Str: []byte{0xff, 0, '"'}, Doc: "binary"})
	conv.SetAttr(ir.Attr{Name: "tdoc", Kind: ir.AttrTensor, Tensor: ir.Float32Tensor(nil, 1), Doc: "attr doc, no tensor doc"})
	conv.SetAttr(ir.Attr{Name: "strs", Kind: ir.AttrStrings, Strs: [][]byte{{}, []byte("a b")}})
	conv.SetAttr(ir.Attr{Name: "ts", Kind: ir.AttrTensors, Tensors: []*ir.Tensor{{DType: ir.String, Shape: []int64{1}, Strs: [][]byte{[]byte("s")}}, {DType: ir.Float8E5M2, Shape: []int64{2}, Raw: []byte{1, 2}}}})
	conv.SetAttr(ir.Attr{Name: "u", Kind: ir.AttrUndefined})
	conv.SetAttr(ir.Attr{Name: "o", Kind: ir.AttrOther})
	conv.SetAttr(ir.Attr{Name: "empty_graphs", Kind: ir.AttrGraphs})
	conv.SetAttr(ir.Attr{Name: "empty_floats", Kind: ir.AttrFloats})

	custom := g.NewNode("op.with.dots", "my domain", []*ir.Value{anon, nil, looksAnon}, []string{"", "second", ""})
	custom.SetOutput(0, "") // unnamed; output 2 stays absent
	custom.Outputs[1].Doc = "second output"
	g.NewNode("Print", "custom", []*ir.Value{kw, odd, unnamedParam}, nil)

	// If whose then-branch holds a Loop reading x: only the inner owner
	// (the Loop) lists x, which Verify accepts; nothing may be added.
	ifn := g.NewNode("If", "", []*ir.Value{cond}, []string{"y"})
	then := g.NewSubgraph("then")
	els := g.NewSubgraph("")
	ifn.SetAttr(ir.GraphAttr("then_branch", then))
	ifn.SetAttr(ir.GraphAttr("else_branch", els))
	loop := then.NewNode("Loop", "", []*ir.Value{nil, nil, out}, []string{"acc_out"})
	then.Capture(out)
	loop.AddImplicit(x)
	body := then.NewSubgraph("body")
	loop.SetAttr(ir.GraphAttr("body", body))
	body.AddInput("i", ir.TensorOf(ir.Int64))
	keep := body.AddInput("keep", ir.TensorOf(ir.Bool))
	acc := body.AddInput("", ir.TensorOf(ir.Float32, 1, 2))
	add := body.NewNode("Add", "", []*ir.Value{acc, x}, []string{"sum"})
	body.AddOutput(keep)
	body.AddOutput(add.Outputs[0])
	then.AddOutput(loop.Outputs[0])
	neg := els.NewNode("Neg", "", []*ir.Value{both}, []string{""})
	neg.SetOutput(0, "")
	els.Capture(both)
	els.AddOutput(neg.Outputs[0])

	g.AddOutput(ifn.Outputs[0])
	g.AddOutput(custom.Outputs[1])
	g.AddOutput(ifn.Outputs[0])

	g2 := roundTrip(t, g)
	if got := g2.Nodes[1].Outputs[0].ID; got != custom.Outputs[0].ID {
		t.Errorf("unnamed value ID = %d, want %d", got, custom.Outputs[0].ID)
	}
	if got := g2.Nodes[3].Implicit; len(got) != 2 || got[0].Name != "" || got[1].Name != "both" {
		t.Errorf("If has implicit inputs %v after the round trip, want [v%d both] (x is listed by the Loop only)", got, out.ID)
	}
	t.Logf("printed:\n%s", irtext.Format(g2))
}

// allDTypes lists every element type, Undefined included.
func allDTypes() []ir.DType {
	var ds []ir.DType
	for d := ir.DType(0); !strings.HasPrefix(d.String(), "dtype("); d++ {
		ds = append(ds, d)
	}
	return ds
}

// TestTensorData round-trips random data of every element type and size,
// which exercises NaN payloads, subnormals, signed zeros, bool bytes other
// than 0 and 1, and 4-bit padding nibbles.
func TestTensorData(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := ir.NewGraph("data")
	k := 0
	for _, dt := range allDTypes() {
		for _, n := range []int64{0, 1, 2, 3, 7, 16, 17, 40} {
			for variant := range 3 {
				tn := &ir.Tensor{DType: dt, Shape: []int64{n}}
				switch {
				case dt == ir.String:
					for range n {
						s := make([]byte, r.IntN(4))
						for i := range s {
							s[i] = byte(r.Uint32())
						}
						if variant == 1 {
							s = []byte("same")
						}
						tn.Strs = append(tn.Strs, s)
					}
				default:
					size, ok := dt.StorageBytes(n)
					if !ok {
						size = n
					}
					tn.Raw = make([]byte, size)
					for i := range tn.Raw {
						switch variant {
						case 0:
							tn.Raw[i] = byte(r.Uint32())
						case 1:
							tn.Raw[i] = 0x11 // all elements equal (nibbles too)
						default:
							tn.Raw[i] = byte(r.IntN(2)) // bools that print as elements
						}
					}
				}
				g.AddParam(fmt.Sprintf("p%d", k), tn.Type(), tn)
				k++
			}
		}
	}
	roundTrip(t, g)
}

// TestExample parses the example in the package documentation's style.
func TestExample(t *testing.T) {
	g := irtest.MustParse(t, `
graph g {
  input x:f32[N,4]
  input c:bool[]
  param w = f32[4]{1, 2, 3, 4}
  y:f32[N,4] = Mul(x, w)
  z:f32[N,4] = If(c) {then_branch=graph then {
    t = Neg(y)
    return t
  }, else_branch=graph else {
    return y
  }}
  return z
}`)
	if n := len(g.Nodes[1].Implicit); n != 1 {
		t.Errorf("If captures %d values, want 1", n)
	}
	irtest.Equal(t, g, roundTrip(t, g))
}

// FuzzParse checks that Parse never panics and that whatever it accepts
// verifies, prints, and parses back to the same text and structure.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("graph g {\n  input x:f32[2]\n  y = Relu(x) {a=nan(0x7fa00000), b=[1,2.5]}\n  return y\n}\n")
	f.Add("graph g {\n  input x:f32[2]\n  NoOp() name=\"a\"\n  NoOp() name=\"a\"\n  y = Relu(x) after(a, 1) name=\"a\"\n  return y\n}\n")
	f.Fuzz(func(t *testing.T, src string) {
		g, err := irtext.ParseSmall("fuzz", src)
		if err != nil {
			if _, ok := err.(*irtext.Error); !ok {
				t.Fatalf("Parse error is %T, not *irtext.Error: %v", err, err)
			}
			return
		}
		if err := ir.Verify(g); err != nil {
			t.Fatalf("Verify: %v", err)
		}
		var b strings.Builder
		if err := irtext.Print(&b, g); err != nil {
			t.Fatalf("Print of a parsed graph: %v", err)
		}
		text := b.String()
		g2, err := irtext.Parse("printed", text)
		if err != nil {
			t.Fatalf("Parse of the printed text: %v\n%s", err, text)
		}
		if text2 := irtext.Format(g2); text2 != text {
			t.Fatalf("printed text changes on a second round trip:\n%s", irtest.Diff(text, text2))
		}
		compareGraphs(t, g, g2)
	})
}

// TestPrintUnrepresentable checks that Print reports what the text form
// cannot hold, and still writes the whole graph.
func TestPrintUnrepresentable(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *ir.Graph)
		want  string
	}{
		{"invalid dtype", func(g *ir.Graph) { g.AddInput("x", ir.TensorType{DType: 200}) }, "invalid element type 200"},
		{"invalid kind", func(g *ir.Graph) { g.AddInput("x", ir.TensorType{Kind: 9, DType: ir.Float32}) }, "invalid type kind 9"},
		{"inconsistent dim", func(g *ir.Graph) {
			g.AddInput("x", ir.TensorType{DType: ir.Float32, Shape: []ir.Dim{{Size: 4, Sym: "N"}}})
		}, `symbolic dimension "N" with size 4`},
		{"param without data", func(g *ir.Graph) { g.AddParam("w", ir.TensorOf(ir.Float32), nil) }, "parameter w has no data"},
		{"nil tensor attr", func(g *ir.Graph) {
			g.NewNode("Foo", "x", nil, nil).SetAttr(ir.Attr{Name: "t", Kind: ir.AttrTensor})
		}, "nil tensor in an attribute"},
		{"nil graph attr", func(g *ir.Graph) {
			g.NewNode("Foo", "x", nil, nil).SetAttr(ir.Attr{Name: "g", Kind: ir.AttrGraph})
		}, "nil graph in an attribute"},
		{"invalid attr kind", func(g *ir.Graph) {
			g.NewNode("Foo", "x", nil, nil).SetAttr(ir.Attr{Name: "a", Kind: 99})
		}, `attribute "a" has invalid kind 99`},
		{"string count", func(g *ir.Graph) {
			g.AddParam("s", ir.TensorOf(ir.String, 2), &ir.Tensor{DType: ir.String, Shape: []int64{2}, Strs: [][]byte{{'a'}}})
		}, `string tensor "" has 1 elements, shape [2] needs 2`},
		{"nil output", func(g *ir.Graph) { g.AddOutput(nil) }, `graph "g" has a nil output`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ir.NewGraph("g")
			tt.build(g)
			var b strings.Builder
			err := irtext.Print(&b, g)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Print error = %v, want one containing %q", err, tt.want)
			}
			if !strings.HasSuffix(b.String(), "}\n") {
				t.Errorf("Print stopped early:\n%s", b.String())
			}
		})
	}
}
