package graphdef_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	exp "github.com/remat-compile/remat/exporters/graphdef"
	imp "github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	tfjstarget "github.com/remat-compile/remat/targets/tfjs"
	"google.golang.org/protobuf/proto"
)

// TestBuiltGraph writes a graph built in code (the zoo's U-Net as a
// TensorFlow graph) as a .pb and as model.json, reads both back, and
// finds the same nodes, inputs, attributes and weights; the files are the
// same bytes every time.
func TestBuiltGraph(t *testing.T) {
	g, err := pipeline.BuildZoo("unet:tf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"u.pb", "model.json"} {
		path := filepath.Join(dir, name)
		if err := exp.ExportFile(g, path, exp.Options{}); err != nil {
			t.Fatal(err)
		}
		first, _ := os.ReadFile(path)
		if err := exp.ExportFile(g, path, exp.Options{}); err != nil {
			t.Fatal(err)
		}
		again, _ := os.ReadFile(path)
		if !bytes.Equal(first, again) {
			t.Errorf("%s: two exports differ", name)
		}
		if name == "u.pb" {
			protocDecode(t, path)
		}
		h, err := imp.ImportFile(path, imp.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(h.Nodes) != len(g.Nodes) || len(h.Params) != len(g.Params) || len(h.Inputs) != 1 || len(h.Outputs) != 1 {
			t.Fatalf("%s: read back %d nodes, %d params, %d inputs, %d outputs; wrote %d, %d, 1, 1", name, len(h.Nodes), len(h.Params), len(h.Inputs), len(h.Outputs), len(g.Nodes), len(g.Params))
		}
		byName := map[string]*ir.Node{}
		for _, n := range h.Nodes {
			byName[n.Name] = n
		}
		for _, n := range g.Nodes {
			m := byName[n.Name]
			if m == nil || m.Op != n.Op || len(m.Inputs) != len(n.Inputs) {
				t.Fatalf("%s: node %s (%s) read back as %v", name, n.Name, n.Op, m)
			}
			for j := range n.Inputs {
				if m.Inputs[j].Name != n.Inputs[j].Name && m.Inputs[j].Name != n.Inputs[j].Def.Name {
					t.Errorf("%s: node %s input %d reads %s, want %s", name, n.Name, j, m.Inputs[j].Name, n.Inputs[j].Name)
				}
			}
			for _, a := range n.Attrs {
				b := m.Attr(a.Name)
				if b == nil || b.Kind != a.Kind || !bytes.Equal(b.Str, a.Str) || b.Int != a.Int || !slices.Equal(b.Ints, a.Ints) {
					t.Errorf("%s: node %s attribute %s read back as %+v, wrote %+v", name, n.Name, a.Name, b, a)
				}
			}
		}
		params := map[string]*ir.Value{}
		for _, v := range h.Params {
			params[v.Name] = v
		}
		for _, v := range g.Params {
			w := params[v.Name]
			if w == nil || !bytes.Equal(w.Data.Raw, v.Data.Raw) || w.Data.DType != v.Data.DType {
				t.Errorf("%s: weight %s does not read back", name, v.Name)
			}
		}
	}
	// The attribute kinds a NodeDef needs.
	data, _ := os.ReadFile(filepath.Join(dir, "u.pb"))
	var gd tfpb.GraphDef
	if err := proto.Unmarshal(data, &gd); err != nil {
		t.Fatal(err)
	}
	for _, nd := range gd.Node {
		if nd.Op == "_FusedConv2D" {
			if _, ok := nd.Attr["T"].GetValue().(*tfpb.AttrValue_Type); !ok {
				t.Errorf("%s: T is %v, want a type", nd.Name, nd.Attr["T"])
			}
			if l := nd.Attr["fused_ops"].GetList(); len(l.GetS()) != 1 {
				t.Errorf("%s: fused_ops is %v, want list(string)", nd.Name, nd.Attr["fused_ops"])
			}
		}
		if nd.Op == "Placeholder" {
			if _, ok := nd.Attr["shape"].GetValue().(*tfpb.AttrValue_Shape); !ok {
				t.Errorf("Placeholder shape is %v, want a shape", nd.Attr["shape"])
			}
		}
	}
}

// TestErrors exports graphs no GraphDef holds: each gets an error that
// names the problem.
func TestErrors(t *testing.T) {
	onnx := ir.NewGraph("g")
	x := onnx.AddInput("x", ir.TensorOf(ir.Float32, 1))
	n := onnx.NewNode("Relu", "", []*ir.Value{x}, []string{"y"})
	n.Name = "relu"
	onnx.AddOutput(n.Outputs[0])

	dup := ir.NewGraph("g")
	x = dup.AddInput("x", ir.TensorOf(ir.Float32, 1))
	a := dup.NewNode("Relu", ir.TFDomain, []*ir.Value{x}, []string{"a"})
	a.Name = "x"
	dup.AddOutput(a.Outputs[0])

	colon := ir.NewGraph("g")
	x = colon.AddInput("x", ir.TensorOf(ir.Float32, 1))
	a = colon.NewNode("Relu", ir.TFDomain, []*ir.Value{x}, []string{"a"})
	a.Name = "a:1"
	colon.AddOutput(a.Outputs[0])

	for _, c := range []struct {
		name string
		g    *ir.Graph
		want string
	}{
		{"onnx op", onnx, "TensorFlow ops"},
		{"duplicate name", dup, "both named"},
		{"colon", colon, "cannot hold ':'"},
	} {
		_, err := exp.Export(c.g, exp.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// The input model is never overwritten.
	dir := t.TempDir()
	src := filepath.Join(dir, "model.json")
	g, err := pipeline.BuildZoo("unet:tf")
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportFile(g, src, exp.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportFile(g, src, exp.Options{Source: src}); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("exporting over the source: %v", err)
	}
}

func TestSafeControlSorted(t *testing.T) {
	for _, op := range []string{"Relu", "Conv2D", "AddV2", "Reshape", "Identity"} {
		if !exp.SafeControl(op) {
			t.Errorf("%s should take a control input safely", op)
		}
	}
	for _, op := range []string{"ConcatV2", "AddN", "Pack", "_FusedConv2D", "_FusedMatMul", "FusedDepthwiseConv2dNative", "Einsum", "Switch", "Merge"} {
		if exp.SafeControl(op) {
			t.Errorf("%s must not take a control input directly", op)
		}
	}
}

// gateGraph builds x → a = Relu(x) → b = Sigmoid(a) → c = Tanh(b), then
// e = AddN(c, a_rc1) with a's recomputation a_rc1 (a Relu, or with
// concat an AddN of x with itself, a variadic op) run after c: the plan's
// rewrite of a graph where a crosses b and c.
func gateGraph(variadic bool) (*ir.Graph, *remat.RewriteResult) {
	g := ir.NewGraph("gates")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 64))
	node := func(op, name string, in ...*ir.Value) *ir.Node {
		n := g.NewNode(op, ir.TFDomain, in, []string{name})
		n.Name = name
		n.Outputs[0].Type = ir.TensorOf(ir.Float32, 1, 64)
		n.SetAttr(ir.StringAttr("T", "DT_FLOAT"))
		if op == "AddN" {
			n.SetAttr(ir.IntAttr("N", int64(len(in))))
		}
		return n
	}
	op, ins := "Relu", []*ir.Value{x}
	if variadic {
		op, ins = "AddN", []*ir.Value{x, x}
	}
	a := node(op, "a", ins...)
	b := node("Sigmoid", "b", a.Outputs[0])
	c := node("Tanh", "c", b.Outputs[0])
	arc := node(op, "a_rc1", ins...)
	e := node("AddN", "e", c.Outputs[0], arc.Outputs[0])
	g.AddOutput(e.Outputs[0])
	_ = a
	return g, &remat.RewriteResult{Graph: g, Recomputes: []remat.Recompute{{Node: arc, Original: a, After: c, Before: e}}}
}

// TestGates writes a rewrite whose recomputation TensorFlow.js would run
// at once (its only input is the graph input), with TensorFlow.js's order
// model: the exporter gates it behind its "after" node, directly on a
// Relu, through an Identity on a variadic AddN; TensorFlow.js then runs it
// after that node, and computes what the ungated graph does.
func TestGates(t *testing.T) {
	dir := testmodels.RequireTFJS(t)
	for _, variadic := range []bool{false, true} {
		g, rw := gateGraph(variadic)
		w, err := exp.WrittenGraph(g, exp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		order, err := tfjstarget.Order(w)
		if err != nil {
			t.Fatal(err)
		}
		rank := map[string]int{}
		for r, p := range order {
			rank[w.Nodes[p].Name] = r
		}
		if rank["a_rc1"] > rank["c"] {
			t.Fatalf("variadic %v: the premise fails: tfjs runs a_rc1 after c without a gate (order %v)", variadic, order)
		}
		opts := exp.Options{Remat: rw, RuntimeOrder: tfjstarget.Order}
		w, err = exp.WrittenGraph(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var gated *exp.WrittenNode
		for i := range w.Nodes {
			names = append(names, w.Nodes[i].Name)
			if w.Nodes[i].Name == "a_rc1" {
				gated = &w.Nodes[i]
			}
		}
		if !slices.Contains(names, "c_gate") {
			t.Fatalf("variadic %v: no gate c_gate among %v", variadic, names)
		}
		if variadic {
			if slices.Contains(gated.Inputs, "^c_gate") || !slices.ContainsFunc(gated.Inputs, func(s string) bool { return strings.HasPrefix(s, "a_rc1_gate_in") }) {
				t.Errorf("the AddN a_rc1 reads %v: want an Identity carrying the gate, no control input", gated.Inputs)
			}
		} else if !slices.Contains(gated.Inputs, "^c_gate") {
			t.Errorf("the Relu a_rc1 reads %v: want ^c_gate", gated.Inputs)
		}
		tmp := t.TempDir()
		plain, gatedPath := filepath.Join(tmp, "plain.json"), filepath.Join(tmp, "gated.json")
		if err := exp.ExportFile(g, plain, exp.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportFile(g, gatedPath, opts); err != nil {
			t.Fatal(err)
		}
		// The metadata lists the recomputation and the gate.
		raw, _ := os.ReadFile(gatedPath)
		var mj struct {
			UDM map[string]exp.RematMetadata `json:"userDefinedMetadata"`
		}
		if err := json.Unmarshal(raw, &mj); err != nil {
			t.Fatal(err)
		}
		md := mj.UDM[exp.RematMetadataKey]
		if len(md.Recompute) != 1 || md.Recompute[0].After != "c" || len(md.Gated) != 1 {
			t.Errorf("metadata %+v: want a_rc1 after c, one gate", md)
		}
		in, _ := tfjs.SeededInputs([]tfjs.InputSpec{{Name: "x", DType: tfjs.Float32, Shape: []int64{1, 64}}}, 1)
		res, err := tfjs.RunAll(context.Background(), []tfjs.Options{{Dir: dir, Model: plain, Inputs: in, Order: true}, {Dir: dir, Model: gatedPath, Inputs: in, Order: true}})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Digests[0] != res[1].Digests[0] {
			t.Errorf("variadic %v: the gated graph computes another result", variadic)
		}
		if i, j := slices.Index(res[1].OrderedNodes, "a_rc1"), slices.Index(res[1].OrderedNodes, "c"); i < j {
			t.Errorf("variadic %v: tfjs ran a_rc1 at %d, before c at %d: %v", variadic, i, j, res[1].OrderedNodes)
		}
	}
}
