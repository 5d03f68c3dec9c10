package onnx_test

import (
	"path/filepath"
	"slices"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
)

// buildHide is a graph with each case of Options.HideShapes: a Conv and
// a Relu of the input (they lose the batch and spatial sizes), a Reshape
// of the input (it reads the input itself, its shape made dynamic), a
// tensor computed from parameters alone (folded by ORT, kept shaped) added
// to the Relu (through a hidden view: the broadcast would give the sum the
// folded tensor's sizes back), and a channel sum of the Relu (its size
// comes from the Conv's weights, which ORT knows).
func buildHide() *ir.Graph {
	b := newMB("hide")
	g := b.g
	x := g.AddInput("x", b.act)
	a := b.op("Conv", "conv", b.act, []*ir.Value{x, b.param("conv.weight", 16, 16, 1, 1), b.param("conv.bias", 16)}, "a", ir.IntsAttr("kernel_shape", 1, 1))
	r := b.op("Relu", "relu", b.act, []*ir.Value{a}, "r")
	flat := g.AddParam("flat", ir.TensorOf(ir.Int64, 3), ir.Int64Tensor([]int64{3}, 1, 16, 1024))
	f := b.op("Reshape", "reshape", ir.TensorOf(ir.Float32, 1, 16, 1024), []*ir.Value{x, flat}, "f")
	one := g.AddParam("one", ir.TensorOf(ir.Float32, 1), ir.Float32Tensor([]int64{1}, 0.5))
	shape := g.AddParam("shape", ir.TensorOf(ir.Int64, 4), ir.Int64Tensor([]int64{4}, actShape...))
	c := b.op("Expand", "expand", b.act, []*ir.Value{one, shape}, "c")
	s := b.add("add", r, c, "s")
	axes := g.AddParam("axes", ir.TensorOf(ir.Int64, 3), ir.Int64Tensor([]int64{3}, 0, 2, 3))
	m := b.op("ReduceSum", "sum", ir.TensorOf(ir.Float32, 16), []*ir.Value{r, axes}, "m", ir.IntAttr("keepdims", 0))
	g.AddOutput(s)
	g.AddOutput(m)
	g.AddOutput(f)
	return g
}

// TestHideShapes checks the rewrite Options.HideShapes makes, the
// Shapeless predicate on the same graph, the reference checker, and, in
// ONNX Runtime, that the outputs stay bitwise those of the plain export.
func TestHideShapes(t *testing.T) {
	g := buildHide()
	shapeless := exporter.Shapeless()
	want := map[string]bool{"a": true, "r": true, "f": true, "s": true, "c": false, "m": false}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if got := shapeless(o); got != want[o.Name] {
				t.Errorf("Shapeless(%s) = %v, want %v", o.Name, got, want[o.Name])
			}
		}
	}

	hidden, err := exporter.Export(g, exporter.Options{ValueInfo: true, HideShapes: true})
	if err != nil {
		t.Fatal(err)
	}
	mp := Unmarshal(t, hidden)
	node := func(name string) []string {
		for _, np := range mp.Graph.Node {
			if np.GetName() == name {
				return np.GetInput()
			}
		}
		t.Fatalf("no node %s", name)
		return nil
	}
	producer := func(tensor string) string {
		for _, np := range mp.Graph.Node {
			if slices.Contains(np.GetOutput(), tensor) {
				return np.GetOpType()
			}
		}
		return ""
	}
	if in := node("conv"); in[0] == "x" || producer(in[0]) != "Reshape" {
		t.Errorf("conv reads %q, want the input's hidden view", in[0])
	}
	if in := node("reshape"); in[0] != "x" || producer(in[1]) != "Concat" {
		t.Errorf("reshape reads %v, want x itself and a Concat for its shape", in)
	}
	if in := node("expand"); in[1] != "shape" {
		t.Errorf("expand reads %v: a node ORT folds must keep its shape", in)
	}
	if in := node("add"); in[1] == "c" || producer(in[1]) != "Reshape" {
		t.Errorf("add reads %v, want a hidden view of the folded c", in)
	}
	declared := map[string]bool{}
	for _, vi := range mp.Graph.ValueInfo {
		declared[vi.GetName()] = true
	}
	for name, hid := range want {
		if declared[name] == hid && !slices.Contains([]string{"s", "m", "f"}, name) {
			t.Errorf("value_info of %s: declared %v, shapeless %v", name, declared[name], hid)
		}
	}

	dir := t.TempDir()
	plainPath, hiddenPath := filepath.Join(dir, "plain.onnx"), filepath.Join(dir, "hidden.onnx")
	plain, err := exporter.Export(g, exporter.Options{ValueInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, plainPath, plain)
	writeFile(t, hiddenPath, hidden)
	runStrictChecker(t, []string{hiddenPath})

	testmodels.RequireORT(t)
	in, err := ort.RandomInputs(plainPath, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	requireSameOutputs(t, plainPath, hiddenPath, in, "with the shapes hidden")
}
