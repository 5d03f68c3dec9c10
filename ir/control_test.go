package ir

import (
	"errors"
	"strings"
	"testing"
)

// gated builds x -> a = Relu(x); gate = NoOp() after a; b = Neg(x) after
// gate; y = Add(a, b).
func gated(t *testing.T) (*Graph, map[string]*Node) {
	t.Helper()
	g := NewGraph("gated")
	x := g.AddInput("x", TensorOf(Float32, 4))
	a := g.NewNode("Relu", "tf", []*Value{x}, []string{"a"})
	a.Name = "a"
	gate := g.NewNode("NoOp", "tf", nil, nil)
	gate.Name = "gate"
	gate.AddControl(a)
	b := g.NewNode("Neg", "tf", []*Value{x}, []string{"b"})
	b.Name = "b"
	b.AddControl(gate)
	y := g.NewNode("AddV2", "tf", []*Value{a.Outputs[0], b.Outputs[0]}, []string{"y"})
	y.Name = "y"
	g.AddOutput(y.Outputs[0])
	return g, map[string]*Node{"a": a, "gate": gate, "b": b, "y": y}
}

func TestControlLinks(t *testing.T) {
	g, n := gated(t)
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	if len(n["a"].ControlUses) != 1 || n["a"].ControlUses[0] != n["gate"] {
		t.Fatalf("a.ControlUses = %v, want [gate]", n["a"].ControlUses)
	}
	n["b"].AddControl(n["gate"]) // twice: a no-op
	if len(n["b"].Control) != 1 || len(n["gate"].ControlUses) != 1 {
		t.Fatalf("adding an edge twice changed the lists: %v %v", n["b"].Control, n["gate"].ControlUses)
	}
	n["b"].RemoveControl(n["gate"])
	if len(n["b"].Control) != 0 || len(n["gate"].ControlUses) != 0 {
		t.Fatalf("after RemoveControl: %v %v", n["b"].Control, n["gate"].ControlUses)
	}
	n["b"].RemoveControl(n["gate"]) // absent: a no-op
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	// The gate has no more control uses: it can go, taking its own edge
	// from a with it.
	g.RemoveNode(n["gate"])
	if len(n["a"].ControlUses) != 0 {
		t.Fatalf("removing the gate left a.ControlUses = %v", n["a"].ControlUses)
	}
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveNodeWithControlUsesPanics(t *testing.T) {
	g, n := gated(t)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "control input") {
			t.Fatalf("RemoveNode of a control source: recover() = %v, want a panic naming the control use", r)
		}
	}()
	g.RemoveNode(n["gate"])
}

func TestVerifyRejectsBadControl(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(g *Graph, n map[string]*Node)
		want   string
	}{
		{"out of order", func(g *Graph, n map[string]*Node) {
			g.Nodes[1], g.Nodes[2] = g.Nodes[2], g.Nodes[1] // b before gate
		}, `node "b" (tf.Neg): control input "gate" does not come before the node`},
		{"cycle", func(g *Graph, n map[string]*Node) { n["a"].AddControl(n["b"]) }, `control input "b" does not come before`},
		{"self", func(g *Graph, n map[string]*Node) { n["a"].AddControl(n["a"]) }, `lists itself as a control input`},
		{"nil", func(g *Graph, n map[string]*Node) { n["b"].Control = append(n["b"].Control, nil) }, `control input 1 is nil`},
		{"duplicate", func(g *Graph, n map[string]*Node) { n["b"].Control = append(n["b"].Control, n["gate"]) }, `lists control input "gate" twice`},
		{"stale control uses", func(g *Graph, n map[string]*Node) { n["gate"].ControlUses = nil }, `has 0 recorded control uses, but 1 nodes list it`},
		{"wrong control use", func(g *Graph, n map[string]*Node) { n["gate"].ControlUses[0] = n["y"] }, `records a control use by node "y"`},
		{"other graph", func(g *Graph, n map[string]*Node) {
			sub := g.NewSubgraph("sub")
			m := sub.NewNode("NoOp", "tf", nil, nil)
			m.Name = "inner"
			n["y"].AddControl(m)
		}, `control input "inner" is a node of graph "sub"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, n := gated(t)
			tt.break_(g, n)
			err := Verify(g)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSortFollowsControl(t *testing.T) {
	g, n := gated(t)
	// Reverse the order: only the edges (data and control) can restore it.
	g.Nodes = []*Node{n["y"], n["b"], n["gate"], n["a"]}
	if err := g.Sort(); err != nil {
		t.Fatal(err)
	}
	if err := Verify(g); err != nil {
		t.Fatalf("after Sort: %v", err)
	}
	pos := map[*Node]int{}
	for i, m := range g.Nodes {
		pos[m] = i
	}
	if !(pos[n["a"]] < pos[n["gate"]] && pos[n["gate"]] < pos[n["b"]]) {
		t.Fatalf("order %v does not follow a -> gate -> b", g.Nodes)
	}
	// A cycle made only of control edges.
	n["a"].AddControl(n["b"])
	var ce *CycleError
	if err := g.Sort(); !errors.As(err, &ce) || len(ce.Nodes) != 4 {
		t.Fatalf("Sort = %v, want a CycleError over the 4 nodes", err)
	}
}

func TestSetOrderFollowsControl(t *testing.T) {
	g, n := gated(t)
	err := g.SetOrder([]*Node{n["a"], n["b"], n["gate"], n["y"]})
	if err == nil || !strings.Contains(err.Error(), `node "b" runs before its control input "gate"`) {
		t.Fatalf("SetOrder = %v, want the control edge gate -> b named", err)
	}
	if err := g.SetOrder([]*Node{n["a"], n["gate"], n["b"], n["y"]}); err != nil {
		t.Fatal(err)
	}
}
