package onnx_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
)

// needORT skips the test under -short when ONNX Runtime cannot be loaded
// and fails it otherwise.
func needORT(t *testing.T) {
	t.Helper()
	if _, err := ort.Version(); err != nil {
		if testing.Short() {
			t.Skipf("ONNX Runtime unavailable: %v", err)
		}
		t.Fatalf("ONNX Runtime unavailable (set REMAT_ORT_LIB or run scripts/setup.sh; -short skips): %v", err)
	}
}

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
	needORT(t)
	dir := t.TempDir()
	for seed := range uint64(25) {
		g := randomDAG(seed, 12+int(seed))
		path := filepath.Join(dir, g.Name+".onnx")
		if err := exporter.ExportFile(g, path, exporter.Options{}); err != nil {
			t.Fatal(err)
		}
		data := readFile(t, path)
		order, err := exporter.ORTOrder(data)
		if err != nil {
			t.Fatal(err)
		}
		mp := unmarshal(t, data)
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
	if _, err := exporter.ORTOrder([]byte("not a model")); err == nil {
		t.Error("no error for bad bytes")
	}
	if _, err := exporter.ORTOrder(nil); err == nil {
		t.Error("no error for a model without a graph")
	}
}
