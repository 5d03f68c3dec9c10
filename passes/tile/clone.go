package tile

import (
	"slices"

	"github.com/remat-compile/remat/ir"
)

// cloneGraph returns a deep copy of the root graph g: the same inputs,
// parameters (their constant data shared, read-only), outputs and nodes in
// the same order, subgraphs included. Node i of the copy is node i of g,
// so a region given by positions in g.Nodes means the same nodes in the
// copy.
func cloneGraph(g *ir.Graph) *ir.Graph {
	c := ir.NewGraph(g.Name)
	c.Doc, c.Ext = g.Doc, g.Ext
	c.Opsets = slices.Clone(g.Opsets)
	vmap := map[*ir.Value]*ir.Value{}
	copyInto(g, c, vmap)
	return c
}

// copyInto copies the contents of src into dst, an empty graph of the same
// ID space depth, mapping every value of src (and of enclosing scopes,
// already in vmap) to its copy.
func copyInto(src, dst *ir.Graph, vmap map[*ir.Value]*ir.Value) {
	copyValue := func(from, to *ir.Value) {
		to.Doc, to.Ext = from.Doc, from.Ext
		vmap[from] = to
	}
	isParam := map[*ir.Value]bool{}
	for _, p := range src.Params {
		isParam[p] = true
		copyValue(p, dst.AddParam(p.Name, p.Type.Clone(), p.Data))
	}
	for _, in := range src.Inputs {
		if isParam[in] {
			dst.MarkInput(vmap[in])
			continue
		}
		copyValue(in, dst.AddInput(in.Name, in.Type.Clone()))
	}
	for _, n := range src.Nodes {
		ins := make([]*ir.Value, len(n.Inputs))
		for i, v := range n.Inputs {
			if v != nil {
				ins[i] = vmap[v]
			}
		}
		outs := make([]string, len(n.Outputs))
		for i, o := range n.Outputs {
			if o != nil {
				outs[i] = o.Name
				if outs[i] == "" {
					outs[i] = "_"
				}
			}
		}
		m := dst.NewNode(n.Op, n.Domain, ins, outs)
		m.Name, m.Doc, m.Ext = n.Name, n.Doc, n.Ext
		for i, o := range n.Outputs {
			if o == nil {
				continue
			}
			mo := m.Outputs[i]
			mo.Name, mo.Type = o.Name, o.Type.Clone()
			copyValue(o, mo)
		}
		m.Attrs = make([]ir.Attr, 0, len(n.Attrs))
		for _, a := range n.Attrs {
			m.SetAttr(copyAttr(a, dst, vmap))
		}
		for _, v := range n.Implicit {
			m.AddImplicit(vmap[v])
		}
	}
	for _, o := range src.Outputs {
		dst.AddOutput(vmap[o])
	}
}

// copyAttr copies an attribute (Attr.Clone), its subgraphs copied into
// dst's ID space.
func copyAttr(a ir.Attr, dst *ir.Graph, vmap map[*ir.Value]*ir.Value) ir.Attr {
	a = a.Clone()
	sub := func(sg *ir.Graph) *ir.Graph {
		c := dst.NewSubgraph(sg.Name)
		c.Doc, c.Ext = sg.Doc, sg.Ext
		copyInto(sg, c, vmap)
		return c
	}
	if a.Graph != nil {
		a.Graph = sub(a.Graph)
	}
	for i, sg := range a.Graphs {
		a.Graphs[i] = sub(sg)
	}
	return a
}
