package ir

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// chain builds x -> Relu -> Conv(w) -> Add(relu) -> y.
func chain(t *testing.T) (*Graph, map[string]*Node) {
	t.Helper()
	g := NewGraph("chain")
	x := g.AddInput("x", TensorOf(Float32, 1, 3, 8, 8))
	w := g.AddParam("w", TensorOf(Float32, 3, 3, 1, 1), &Tensor{DType: Float32, Shape: []int64{3, 3, 1, 1}, Raw: make([]byte, 36)})
	relu := g.NewNode("Relu", "", []*Value{x}, []string{"r"})
	relu.Name = "relu"
	conv := g.NewNode("Conv", "", []*Value{relu.Outputs[0], w}, []string{"c"})
	conv.Name = "conv"
	add := g.NewNode("Add", "", []*Value{conv.Outputs[0], relu.Outputs[0]}, []string{"y"})
	add.Name = "add"
	g.AddOutput(add.Outputs[0])
	return g, map[string]*Node{"relu": relu, "conv": conv, "add": add}
}

func TestVerifyAcceptsWellFormedGraph(t *testing.T) {
	g, _ := chain(t)
	if err := Verify(g); err != nil {
		t.Fatalf("Verify = %v, want nil", err)
	}
}

func TestVerifyRejects(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(g *Graph, n map[string]*Node)
		want   string
	}{
		{"out of order", func(g *Graph, n map[string]*Node) { g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0] }, `node "conv" (Conv): input 0 "r" is not defined before the node`},
		{"stale use list", func(g *Graph, n map[string]*Node) { n["relu"].Outputs[0].Uses = nil }, `value "r": has 0 recorded uses, but 2 node input slots read it`},
		{"duplicate name", func(g *Graph, n map[string]*Node) { n["conv"].Outputs[0].Name = "r" }, `two producers`},
		{"bad arity", func(g *Graph, n map[string]*Node) { n["add"].SetInput(2, g.Inputs[0]) }, `node "add" (Add): has 3 inputs; Add takes exactly 2`},
		{"dangling", func(g *Graph, n map[string]*Node) {
			other := NewGraph("other").AddInput("q", TensorOf(Float32))
			n["add"].SetInput(1, other)
		}, `not defined before the node`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, n := chain(t)
			tt.break_(g, n)
			err := Verify(g)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSortRestoresOrderAndFindsCycles(t *testing.T) {
	g, n := chain(t)
	g.Nodes = []*Node{n["add"], n["conv"], n["relu"]}
	if err := g.Sort(); err != nil {
		t.Fatal(err)
	}
	if err := Verify(g); err != nil {
		t.Fatalf("after Sort: %v", err)
	}
	// A cycle: relu reads add's output.
	n["relu"].SetInput(0, n["add"].Outputs[0])
	err := g.Sort()
	var ce *CycleError
	if !errors.As(err, &ce) || len(ce.Nodes) != 3 {
		t.Fatalf("Sort = %v, want a CycleError over 3 nodes", err)
	}
}

func TestSetOrder(t *testing.T) {
	g, n := chain(t)
	// relu, conv, add is the only topological order; a second graph with
	// two independent nodes has two.
	for _, tt := range []struct {
		order []*Node
		want  string
	}{
		{[]*Node{n["relu"], n["add"], n["conv"]}, `node "add" reads "c" before its producer "conv" runs`},
		{[]*Node{n["relu"], n["conv"]}, "2 nodes for 3"},
		{[]*Node{n["relu"], n["conv"], n["conv"]}, `node "conv" appears twice`},
		{[]*Node{n["relu"], n["conv"], NewGraph("o").NewNode("Relu", "", nil, []string{"z"})}, "is not a node of the graph"},
	} {
		err := g.SetOrder(tt.order)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SetOrder = %v, want an error containing %q", err, tt.want)
		}
		if g.Nodes[0] != n["relu"] || g.Nodes[2] != n["add"] {
			t.Fatalf("a failed SetOrder changed the graph")
		}
	}
	h := NewGraph("pair")
	x := h.AddInput("x", TensorOf(Float32, 2))
	a := h.NewNode("Relu", "", []*Value{x}, []string{"a"})
	b := h.NewNode("Neg", "", []*Value{x}, []string{"b"})
	want := []*Node{b, a}
	if err := h.SetOrder(want); err != nil {
		t.Fatal(err)
	}
	want[0] = nil // SetOrder keeps its own copy
	if h.Nodes[0] != b || h.Nodes[1] != a {
		t.Fatalf("order %v, want b, a", h.Nodes)
	}
	if err := Verify(h); err != nil {
		t.Fatal(err)
	}
}

func TestMutationKeepsUsesExact(t *testing.T) {
	g, n := chain(t)
	r := n["relu"].Outputs[0]
	x := g.Inputs[0]
	r.ReplaceUses(x)
	if len(r.Uses) != 0 || len(x.Uses) != 3 {
		t.Fatalf("after ReplaceUses: %d uses of r, %d of x; want 0 and 3", len(r.Uses), len(x.Uses))
	}
	g.RemoveNode(n["relu"])
	if len(x.Uses) != 2 {
		t.Fatalf("after RemoveNode: %d uses of x, want 2", len(x.Uses))
	}
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
}

func TestSubgraphCaptures(t *testing.T) {
	g := NewGraph("main")
	c := g.AddInput("c", TensorOf(Bool))
	a := g.AddInput("a", TensorOf(Float32, 4))
	ifn := g.NewNode("If", "", []*Value{c}, []string{"y"})
	then := g.NewSubgraph("then")
	els := g.NewSubgraph("else")
	ifn.SetAttr(GraphAttr("then_branch", then))
	ifn.SetAttr(GraphAttr("else_branch", els))
	neg := then.NewNode("Neg", "", []*Value{a}, []string{"na"})
	then.Capture(a)
	then.AddOutput(neg.Outputs[0])
	id := els.NewNode("Identity", "", []*Value{a}, []string{"na"}) // siblings may reuse a name
	els.Capture(a)
	els.AddOutput(id.Outputs[0])
	g.AddOutput(ifn.Outputs[0])
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	if len(ifn.Implicit) != 1 || len(a.Uses) != 3 {
		t.Fatalf("implicit %v, uses of a %d; want [a] and 3", ifn.Implicit, len(a.Uses))
	}
	// A subgraph may not shadow an outer name.
	neg.Outputs[0].Name = "a"
	if err := Verify(g); err == nil || !strings.Contains(err.Error(), "two producers") {
		t.Fatalf("Verify = %v, want a shadowing error", err)
	}
	neg.Outputs[0].Name = "na"
	// Dropping the capture must be caught.
	ifn.Implicit = nil
	a.Uses = a.Uses[:2]
	if err := Verify(g); err == nil || !strings.Contains(err.Error(), "implicit input") {
		t.Fatalf("Verify = %v, want a missing-capture error", err)
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		t    TensorType
		want int64
		ok   bool
	}{
		{TensorOf(Float32, 1, 3, 224, 224), 602112, true},
		{TensorOf(Int4, 3), 2, true},
		{TensorOf(Float4E2M1, 4, 5), 10, true},
		{TensorOf(BFloat16, 7), 14, true},
		{TensorOf(Bool, 5), 5, true},
		{TensorOf(Float64), 8, true},
		{TensorOf(Float32, 0, 5), 0, true},
		{TensorType{DType: Float32, Shape: []Dim{SymDim("batch"), D(3)}}, 0, false},
		{TensorOf(String, 3), 0, false},
		{TensorOf(Float32, 1<<40, 1<<40), 0, false},
	}
	for _, tt := range tests {
		got, ok := tt.t.Bytes()
		if got != tt.want || ok != tt.ok {
			t.Errorf("%v.Bytes() = %d, %v; want %d, %v", tt.t, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFloat32ToHalf(t *testing.T) {
	// Every half that is not NaN converts to float32 and back exactly.
	for h := 0; h <= 0xffff; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue
		}
		if got := Float32ToHalf(HalfToFloat32(uint16(h))); got != uint16(h) {
			t.Fatalf("Float32ToHalf(HalfToFloat32(%#x)) = %#x", h, got)
		}
	}
	for _, tt := range []struct {
		f    float32
		want uint16
	}{
		{1 + 1.0/2048, 0x3c00},           // a tie rounds to the even 1.0
		{1 + 3.0/2048, 0x3c02},           // and here up to the even 1+2/1024
		{65519, 0x7bff},                  // below the midpoint to infinity
		{65520, 0x7c00},                  // the midpoint rounds to infinity
		{1e-8, 0x0000},                   // below half the smallest subnormal
		{-3e-8, 0x8001},                  // above half of it: the smallest subnormal
		{6.1035156e-05 * 0.9999, 0x0400}, // rounds up to the smallest normal
		{float32(math.Inf(-1)), 0xfc00},
	} {
		if got := Float32ToHalf(tt.f); got != tt.want {
			t.Errorf("Float32ToHalf(%v) = %#x, want %#x", tt.f, got, tt.want)
		}
	}
	if got := Float32ToHalf(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("Float32ToHalf(NaN) = %#x, not a NaN", got)
	}
}

func TestHalfToFloat32(t *testing.T) {
	for _, tt := range []struct {
		h    uint16
		want float32
	}{{0x3c00, 1}, {0xc000, -2}, {0x0001, 5.9604645e-08}, {0x7bff, 65504}, {0x3555, 0.33325195}} {
		if got := HalfToFloat32(tt.h); got != tt.want {
			t.Errorf("HalfToFloat32(%#x) = %v, want %v", tt.h, got, tt.want)
		}
	}
}
