package measure

import (
	"fmt"
	"slices"
	"testing"

	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/profiles"
)

// testCaches are the cache sizes the tests' reuse distances are written
// for: a 2 MiB L2 and a 32 MiB L3.
var testCaches = CacheSizes{L2Bytes: 2 << 20, L3Bytes: 32 << 20, Source: "test"}

// bigChain is x (4 MiB) → a = Relu(x) → b = Relu(a) → c = Add(a, b) →
// d = Add(c, bias) with a small bias, then eight more Relus of 4 MiB
// each, and e = Add(a, the last).
func bigChain(t *testing.T) (*ir.Graph, map[string]*ir.Node) {
	t.Helper()
	g := ir.NewGraph("chain")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	typ := ir.TensorOf(ir.Float32, 1024, 1024)
	x := g.AddInput("x", typ)
	bias := g.AddParam("bias", ir.TensorOf(ir.Float32, 1024), ir.Float32Tensor([]int64{1024}, make([]float32, 1024)...))
	nodes := map[string]*ir.Node{}
	add := func(name, op string, ins ...*ir.Value) *ir.Value {
		n := g.NewNode(op, "", ins, []string{name})
		n.Name = name
		nodes[name] = n
		return n.Outputs[0]
	}
	a := add("a", "Relu", x)
	b := add("b", "Relu", a)
	c := add("c", "Add", a, b)
	v := add("d", "Add", c, bias)
	for i := range 8 {
		v = add(fmt.Sprintf("r%d", i), "Relu", v)
	}
	g.AddOutput(add("e", "Add", a, v))
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	return g, nodes
}

func TestColdInputs(t *testing.T) {
	g, n := bigChain(t)
	cold := coldInputs(g, testCaches)
	for _, tc := range []struct {
		node string
		want []int
	}{
		{"a", []int{inDRAM}},           // the graph input: the model moves 52 MiB between runs
		{"b", []int{inCache}},          // a, just written
		{"c", []int{inL3, inCache}},    // a: b's 4 MiB written since; b: just written
		{"d", []int{inCache, inCache}}, // c just written; bias is 4 KiB, stays warm
		{"e", []int{inDRAM, inCache}},  // a: 44 MiB written since
	} {
		if got := cold[n[tc.node]]; !slices.Equal(got, tc.want) {
			t.Errorf("node %s: levels %v, want %v", tc.node, got, tc.want)
		}
	}
	// A view reads nothing: a Reshape of a far-away value is not cold.
	shape := g.AddParam("shape", ir.TensorOf(ir.Int64, 1), ir.Int64Tensor([]int64{1}, -1))
	rs := g.NewNode("Reshape", "", []*ir.Value{n["a"].Outputs[0], shape}, []string{"flat"})
	rs.Outputs[0].Type = ir.TensorOf(ir.Float32, 1024*1024)
	g.AddOutput(rs.Outputs[0])
	if got := coldInputs(g, testCaches)[rs]; !slices.Equal(got, []int{inCache, inCache}) {
		t.Errorf("Reshape at the end: levels %v, want all in cache", got)
	}
	c := testCaches
	if c.evictFor(inCache) != 0 || int64(c.evictFor(inL3)) < c.L2Bytes || int64(c.evictFor(inDRAM)) < c.L3Bytes {
		t.Errorf("evictFor: %d, %d, %d", c.evictFor(inCache), c.evictFor(inL3), c.evictFor(inDRAM))
	}
}

func TestSingleNode(t *testing.T) {
	g := ir.NewGraph("conv")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 8, 16, 16))
	w := g.AddParam("w", ir.TensorOf(ir.Float32, 64, 8, 3, 3), ir.Float32Tensor([]int64{64, 8, 3, 3}, make([]float32, 64*8*9)...))
	b := g.AddParam("b", ir.TensorOf(ir.Float32, 64), ir.Float32Tensor([]int64{64}, make([]float32, 64)...))
	conv := g.NewNode("Conv", "", []*ir.Value{x, w, b}, []string{"y"})
	conv.Name = "conv"
	conv.SetAttr(ir.IntsAttr("pads", 1, 1, 1, 1))
	relu := g.NewNode("Relu", "", []*ir.Value{conv.Outputs[0]}, []string{"z"})
	g.AddOutput(relu.Outputs[0])
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	m, err := profiles.NewMeasured(conv)
	if err != nil {
		t.Fatal(err)
	}
	xt, _ := ort.RandomTensor("float", []int64{1, 8, 16, 16}, 1)
	pm := &preparedModel{graph: g, inputs: map[string]ort.Tensor{"x": xt}}
	e := &sigEntry{key: measuredKey(m), m: m, node: conv, model: pm, cold: []int{inCache, inDRAM, inCache}}

	// Plain: the weights are initializers, the output a graph output.
	sg, inputs, cold, err := singleNode(e, nil, 1, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(sg.Inputs) != 1 || len(sg.Params) != 2 || len(cold) != 0 || len(sg.Outputs) != 1 || sg.Outputs[0].Def.Op != "Conv" {
		t.Errorf("plain: %d inputs, %d params, cold %v, outputs %v", len(sg.Inputs), len(sg.Params), cold, sg.Outputs)
	}
	if got := inputs["in0"]; !got.Equal(xt) {
		t.Errorf("the model's own input value was not passed on")
	}
	if pads, _ := sg.Nodes[0].AttrInts("pads"); !slices.Equal(pads, []int64{1, 1, 1, 1}) {
		t.Errorf("attributes not copied: pads %v", pads)
	}

	// Timed: the cold weight is a graph input listed as cold; the output
	// is read by a one-element Slice.
	sg, inputs, cold, err = singleNode(e, nil, 1, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cold, []string{"in1"}) || len(sg.Params) != 1+3 || inputs["in1"].NumElements() != 64*8*9 {
		t.Errorf("timed: cold %v, %d params (want the bias and the Slice's starts, ends, axes)", cold, len(sg.Params))
	}
	if len(sg.Outputs) != 1 || sg.Outputs[0].Def.Op != "Slice" || sg.Outputs[0].Type.String() != "f32[1,1,1,1]" {
		t.Errorf("timed output %v (%v), want a one-element Slice", sg.Outputs, sg.Outputs[0].Type)
	}
	if err := ir.Verify(sg); err != nil {
		t.Errorf("the single-node graph fails Verify: %v", err)
	}

	// The Relu writes the model's output: it stays a graph output, which
	// ONNX Runtime allocates afresh on every run, as in the model.
	mr, _ := profiles.NewMeasured(relu)
	er := &sigEntry{key: measuredKey(mr), m: mr, node: relu, model: pm, cold: []int{inCache}}
	sg, _, _, err = singleNode(er, nil, 1, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(sg.Outputs) != 1 || sg.Outputs[0].Def.Op != "Relu" {
		t.Errorf("the model's output became %v", sg.Outputs)
	}
}

func TestDerivedShape(t *testing.T) {
	g := ir.NewGraph("d")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 2, 3))
	s := g.AddInput("s", ir.TensorOf(ir.Int64, 2))
	tile := g.NewNode("Tile", "", []*ir.Value{x, s}, []string{"y"})
	tile.Outputs[0].Type = ir.TensorOf(ir.Float32, 4, 9)
	got, ok := derivedShape(tile, 1, []int64{2})
	vals, _ := got.Int64s()
	if !ok || !slices.Equal(vals, []int64{2, 3}) {
		t.Errorf("Tile repeats %v (%v), want [2 3]", vals, ok)
	}
	rs := g.NewNode("Reshape", "", []*ir.Value{x, s}, []string{"z"})
	rs.Outputs[0].Type = ir.TensorOf(ir.Float32, 3, 2)
	got, ok = derivedShape(rs, 1, []int64{2})
	vals, _ = got.Int64s()
	if !ok || !slices.Equal(vals, []int64{3, 2}) {
		t.Errorf("Reshape shape %v (%v), want [3 2]", vals, ok)
	}
	if _, ok := derivedShape(rs, 0, []int64{2, 3}); ok {
		t.Errorf("Reshape's data input got a derived value")
	}
}

func TestNoPlanReason(t *testing.T) {
	ie := &remat.InfeasibleBudgetError{
		BudgetError:      &remat.BudgetError{NeedBytes: 2048, HaveBytes: 1024},
		NoRematPeakBytes: 4096, FloorBytes: 2048, FloorNode: "conv3",
	}
	if got := noPlanReason(ie); got != "no plan: the smallest peak is 2.00 KiB > budget 1.00 KiB (node conv3 alone needs 2.00 KiB)" {
		t.Errorf("floor: %q", got)
	}
	ie.FloorBytes = 1500
	if got := noPlanReason(ie); got != "no plan: the smallest peak is 2.00 KiB > budget 1.00 KiB (50% of the no-remat peak)" {
		t.Errorf("no floor: %q", got)
	}
}
