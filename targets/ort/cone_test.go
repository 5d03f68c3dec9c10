package ort

import (
	"slices"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
)

// TestConeOrder checks coneOrder's three rules on a graph whose cone (c1
// reads a parameter; c2 and c3 read c1's 256 KB, so they are wide) ORT
// runs out of the plan's order: c3 before c2, and both after n2.
func TestConeOrder(t *testing.T) {
	p, x := newProbe(1, 16, 64, 64)
	big := p.g.AddParam("w", f32(1, 16, 64, 64), ir.Float32Tensor([]int64{1, 16, 64, 64}, make([]float32, 16*64*64)...))
	n1 := p.op("Relu", f32(1, 16, 64, 64), x)
	c1 := p.op("Neg", f32(1, 16, 64, 64), big)
	c2 := p.op("Relu", f32(1, 16, 64, 64), c1)
	c3 := p.op("Sigmoid", f32(1, 16, 64, 64), c1)
	n2 := p.op("Add", f32(1, 16, 64, 64), n1, x)
	n3 := p.op("Add", f32(1, 16, 64, 64), n2, c2)
	n4 := p.op("Add", f32(1, 16, 64, 64), n3, c3)
	p.g.AddOutput(n4)
	node := func(v *ir.Value) *ir.Node { return v.Def }
	name := func(cs []remat.OrderConstraint) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Node.Name+" after "+c.After.Name)
		}
		return out
	}

	// In the plan's order ORT needs nothing.
	if got := coneOrder(p.g, slices.Clone(p.g.Nodes)); got != nil {
		t.Errorf("coneOrder in the plan's own order = %v, want none", name(got))
	}
	// ORT's order: n1 c1 n2 c3 c2 n3 n4. c3 waits for c2 (the wide node
	// the plan runs before it); n2 waits for c3 alone (c2 is now behind
	// c3) and then for n1, the node the plan runs before it, whose
	// dependency is written last.
	seq := []*ir.Node{node(n1), node(c1), node(n2), node(c3), node(c2), node(n3), node(n4)}
	want := []string{
		c3.Name + " after " + c2.Name,
		n2.Name + " after " + c3.Name,
		n2.Name + " after " + n1.Name,
	}
	if got := name(coneOrder(p.g, seq)); !slices.Equal(got, want) {
		t.Errorf("coneOrder = %q, want %q", got, want)
	}
	// A cone of small values (under minEagerGain) is left to ORT.
	q, y := newProbe(1, 4, 8, 8)
	small := q.g.AddParam("w", f32(1, 4, 8, 8), ir.Float32Tensor([]int64{1, 4, 8, 8}, make([]float32, 4*8*8)...))
	m1 := q.op("Relu", f32(1, 4, 8, 8), y)
	s1 := q.op("Neg", f32(1, 4, 8, 8), small)
	s2 := q.op("Relu", f32(1, 4, 8, 8), s1)
	m2 := q.op("Add", f32(1, 4, 8, 8), m1, y)
	m3 := q.op("Add", f32(1, 4, 8, 8), m2, s2)
	q.g.AddOutput(m3)
	if got := coneOrder(q.g, []*ir.Node{node(m1), node(s1), node(m2), node(s2), node(m3)}); got != nil {
		t.Errorf("coneOrder on a cone of small values = %v, want none", name(got))
	}
}
