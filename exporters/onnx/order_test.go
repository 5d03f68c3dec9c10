package onnx_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	ortt "github.com/remat-compile/remat/targets/ort"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// randomDAG builds a random graph of elementwise nodes on [4] tensors with
// Constant nodes in between, several sinks, and repeated and unordered
// inputs; every value nothing reads is a graph output.
func randomDAG(seed uint64, n int) *ir.Graph {
	r := rand.New(rand.NewPCG(seed, 99))
	g := ir.NewGraph(fmt.Sprintf("dag%d", seed))
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	typ := ir.TensorOf(ir.Float32, 4)
	pool := []*ir.Value{g.AddInput("x", typ)}
	read := map[*ir.Value]bool{}
	pick := func() *ir.Value {
		// Mostly recent values, so that the graph is deep.
		k := len(pool) - 1 - int(r.ExpFloat64()*3)
		if k < 0 || r.IntN(5) == 0 {
			k = r.IntN(len(pool))
		}
		read[pool[k]] = true
		return pool[k]
	}
	for i := range n {
		var nd *ir.Node
		name := fmt.Sprintf("n%d", i)
		switch r.IntN(6) {
		case 0:
			nd = g.NewNode("Constant", "", nil, []string{name + "_out"})
			nd.SetAttr(ir.TensorAttr("value", ir.Float32Tensor([]int64{4}, 1, 2, 3, float32(i))))
		case 1, 2:
			nd = g.NewNode("Relu", "", []*ir.Value{pick()}, []string{name + "_out"})
		default:
			op := []string{"Add", "Mul", "Sub"}[r.IntN(3)]
			a := pick()
			b := a
			if r.IntN(6) > 0 {
				b = pick()
			}
			nd = g.NewNode(op, "", []*ir.Value{a, b}, []string{name + "_out"})
		}
		nd.Name = name
		nd.Outputs[0].Type = typ
		pool = append(pool, nd.Outputs[0])
	}
	for _, v := range pool[1:] {
		if !read[v] && v.Def.Op != "Constant" {
			g.AddOutput(v)
		}
	}
	return g
}

// TestORTOrderMatchesORT compares the simulated order with the order of
// ORT's kernel events at level "disabled" on random graphs.
func TestORTOrderMatchesORT(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	for seed := range uint64(25) {
		g := randomDAG(seed, 12+int(seed))
		path := filepath.Join(dir, g.Name+".onnx")
		if err := exporter.ExportFile(g, path, exporter.Options{}); err != nil {
			t.Fatal(err)
		}
		data := readFile(t, path)
		order, err := ortt.OrderOfModel(data)
		if err != nil {
			t.Fatal(err)
		}
		mp := Unmarshal(t, data)
		var sim []string
		for _, p := range order {
			sim = append(sim, mp.Graph.Node[p].GetName())
		}
		got := ortOrderOf(t, path, "disabled")
		if !slices.Equal(sim, got) {
			t.Errorf("%s: simulated %v\nORT ran     %v", g.Name, sim, got)
		}
	}
}

// ortOrderOf runs a model once with profiling and returns the node names
// in ORT's execution order.
func ortOrderOf(t *testing.T, path, level string) []string {
	t.Helper()
	inputs, err := ort.RandomInputs(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ort.Run(path, inputs, ort.MeasureOptions(level))
	if err != nil {
		t.Fatal(err)
	}
	return res.Profile.Names()
}

func TestORTOrderErrors(t *testing.T) {
	if _, err := ortt.OrderOfModel([]byte("not a model")); err == nil {
		t.Error("no error for bad bytes")
	}
	if _, err := ortt.OrderOfModel(nil); err == nil {
		t.Error("no error for a model without a graph")
	}
}

// TestSinksLast checks on a two-layer "backward pass", whose parameter
// gradients are sinks, that ORT's search runs the plan's order once the
// sinks are written last in reverse (Options.SinksLast) and not before, and
// that on random graphs the written node list stays topological.
func TestSinksLast(t *testing.T) {
	g := ir.NewGraph("backward")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	typ := ir.TensorOf(ir.Float32, 4)
	x := g.AddInput("x", typ)
	node := func(name, op string, in ...*ir.Value) *ir.Value {
		n := g.NewNode(op, "", in, []string{name})
		n.Name = name
		n.Outputs[0].Type = typ
		return n.Outputs[0]
	}
	d2 := node("d2", "Relu", x)   // the gradient arriving at layer 2
	gw2 := node("gw2", "Neg", d2) // layer 2's parameter gradient: a sink
	d1 := node("d1", "Relu", d2)  // the data gradient, one layer down
	gw1 := node("gw1", "Neg", d1) // layer 1's parameter gradient: a sink
	g.AddOutput(gw2)
	g.AddOutput(gw1)
	names := func(nodes []*ir.Node) []string {
		var out []string
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		return out
	}
	plan := names(g.Nodes)
	seq, err := ortSeq(g, exporter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(seq); slices.Equal(got, plan) {
		t.Fatalf("ORT runs the plan's order %v without SinksLast: the test no longer shows what SinksLast is for", got)
	}
	if seq, err = ortSeq(g, exporter.Options{SinksLast: true}); err != nil {
		t.Fatal(err)
	}
	if got := names(seq); !slices.Equal(got, plan) {
		t.Errorf("ORT's order with the sinks last: %v, want the plan's %v", got, plan)
	}
	for seed := range uint64(20) {
		g := randomDAG(seed, 40)
		data, err := exporter.Export(g, exporter.Options{SinksLast: true})
		if err != nil {
			t.Fatal(err)
		}
		var mp onnxpb.ModelProto
		if err := proto.Unmarshal(data, &mp); err != nil {
			t.Fatal(err)
		}
		if len(mp.Graph.Node) != len(g.Nodes) {
			t.Fatalf("seed %d: %d nodes written, want %d", seed, len(mp.Graph.Node), len(g.Nodes))
		}
		known := map[string]bool{"x": true}
		for _, np := range mp.Graph.Node {
			for _, in := range np.GetInput() {
				if !known[in] {
					t.Fatalf("seed %d: node %s reads %s before it is written", seed, np.GetName(), in)
				}
			}
			for _, o := range np.GetOutput() {
				known[o] = true
			}
		}
		if _, err := ortSeq(g, exporter.Options{SinksLast: true}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// ortSeq is targets/ort's simulation of the order in which ONNX Runtime
// runs the model that exporting g with opts writes.
func ortSeq(g *ir.Graph, opts exporter.Options) ([]*ir.Node, error) {
	r, err := ortt.Schedule(g, opts)
	if err != nil {
		return nil, err
	}
	return r.Seq, nil
}
