package ir

import (
	"fmt"
	"slices"
)

// Verify checks the invariants of g and all its subgraphs: IDs unique and
// within the allocator's range; Def, Index and Graph links; use lists exact;
// every input defined before its reader (in the reader's graph or an
// enclosing one), which also rules out cycles; implicit inputs declared for
// every outer-scope value a subgraph reads; no two values of one name in
// one scope (a subgraph may not shadow an outer name, but sibling
// subgraphs may reuse one); control inputs that are nodes of the same graph
// listed earlier in its Nodes (which rules out cycles through them), each
// once, with ControlUses their exact reverse; arities within the op table's
// bounds. It returns an ErrorList naming the
// offending nodes and values, or nil.
func Verify(g *Graph) error {
	vr := &verifier{
		root:      g.Root(),
		nodeSeen:  make([]bool, g.NumNodes()),
		valueSeen: make([]bool, g.NumValues()),
		defined:   make([]*Value, g.NumValues()),
		names:     map[string]*Value{},
		uses:      map[*Value][]Use{},
		ctrlUses:  map[*Node][]*Node{},
	}
	vr.graph(g)
	vr.checkUses()
	vr.checkControlUses()
	return vr.errs.Err()
}

type verifier struct {
	root      *Graph
	errs      ErrorList
	nodeSeen  []bool
	valueSeen []bool
	defined   []*Value // defined[id] is the value available under that ID at this point of the walk
	names     map[string]*Value
	uses      map[*Value][]Use // uses found by walking, compared to Value.Uses
	values    []*Value         // every value in definition order
	nodes     []*Node          // every node in walk order
	ctrlUses  map[*Node][]*Node
}

func (vr *verifier) nodeErr(n *Node, format string, args ...any) {
	vr.errs = append(vr.errs, Errorf(NodePos("", n), format, args...))
}

func (vr *verifier) valueErr(v *Value, format string, args ...any) {
	vr.errs = append(vr.errs, Errorf(Pos{Value: v.String()}, format, args...))
}

// define records v as available, checking its ID and name.
func (vr *verifier) define(v *Value, g *Graph) {
	if v.ID < 0 || int(v.ID) >= len(vr.valueSeen) {
		vr.valueErr(v, "ID %d is outside the graph's ID range [0,%d)", v.ID, len(vr.valueSeen))
		return
	}
	if vr.valueSeen[v.ID] {
		if vr.defined[v.ID] == v && v.Def == nil && (slices.Contains(g.Inputs, v) && slices.Contains(g.Params, v)) {
			return // an input with a default: listed twice on purpose
		}
		vr.valueErr(v, "defined twice (ID %d)", v.ID)
		return
	}
	vr.valueSeen[v.ID] = true
	vr.defined[v.ID] = v
	vr.values = append(vr.values, v)
	if v.Graph != g {
		vr.valueErr(v, "records graph %q but is defined in graph %q", graphName(v.Graph), g.Name)
	}
	if v.Name != "" {
		if w, ok := vr.names[v.Name]; ok && w != v {
			what := "graph input or parameter"
			if v.Def != nil {
				what = fmt.Sprintf("node %q (%s)", v.Def.String(), v.Def.OpName())
			}
			prev := "graph input or parameter"
			if w.Def != nil {
				prev = fmt.Sprintf("node %q (%s)", w.Def.String(), w.Def.OpName())
			}
			vr.valueErr(v, "two producers: %s and %s both define this name", prev, what)
		}
		vr.names[v.Name] = v
	}
}

func graphName(g *Graph) string {
	if g == nil {
		return "<nil>"
	}
	return g.Name
}

func (vr *verifier) graph(g *Graph) {
	if g.ids != vr.root.ids {
		vr.errs.Add(Pos{}, "graph %q does not share its root's ID space", g.Name)
		return
	}
	for _, v := range g.Inputs {
		vr.define(v, g)
	}
	for _, v := range g.Params {
		if v.Data == nil {
			vr.valueErr(v, "parameter has no data")
		}
		if !slices.Contains(g.Inputs, v) {
			vr.define(v, g)
		}
		if v.Def != nil {
			vr.valueErr(v, "graph input or parameter has a producer %q", v.Def.String())
		}
	}
	var local []*Value // values defined in g, out of scope again when g is done
	for _, n := range g.Nodes {
		vr.node(g, n)
		for _, o := range n.Outputs {
			if o != nil {
				local = append(local, o)
			}
		}
	}
	for i, o := range g.Outputs {
		if o == nil {
			vr.errs.Add(Pos{}, "graph %q: output %d is nil", g.Name, i)
			continue
		}
		if !vr.available(o) {
			vr.valueErr(o, "graph %q lists it as an output but does not define it", g.Name)
		}
	}
	// Values of g go out of scope when g ends (matters for subgraphs):
	// sibling subgraphs, such as the two branches of an If, may reuse names.
	for _, v := range slices.Concat(g.Inputs, g.Params, local) {
		if v.ID >= 0 && int(v.ID) < len(vr.defined) && vr.defined[v.ID] == v {
			vr.defined[v.ID] = nil
		}
		if v.Name != "" && vr.names[v.Name] == v {
			delete(vr.names, v.Name)
		}
	}
}

func (vr *verifier) available(v *Value) bool {
	return v.ID >= 0 && int(v.ID) < len(vr.defined) && vr.defined[v.ID] == v
}

func (vr *verifier) node(g *Graph, n *Node) {
	if n.ID < 0 || int(n.ID) >= len(vr.nodeSeen) {
		vr.nodeErr(n, "ID %d is outside the graph's ID range [0,%d)", n.ID, len(vr.nodeSeen))
		return
	}
	if vr.nodeSeen[n.ID] {
		vr.nodeErr(n, "appears twice (ID %d)", n.ID)
		return
	}
	vr.nodeSeen[n.ID] = true
	vr.nodes = append(vr.nodes, n)
	if n.Graph != g {
		vr.nodeErr(n, "records graph %q but is listed in graph %q", graphName(n.Graph), g.Name)
	}
	if n.Op == "" {
		vr.nodeErr(n, "has no operator type")
	}
	for i, v := range n.Inputs {
		if v == nil {
			continue
		}
		vr.uses[v] = append(vr.uses[v], Use{n, i})
		if !vr.available(v) {
			vr.nodeErr(n, "input %d %q is not defined before the node (dangling input, a cycle, or nodes out of order)", i, v.String())
		} else if v.Graph != g && !slices.Contains(vr.implicitChain(g), v) {
			vr.nodeErr(n, "reads %q of enclosing graph %q, but the subgraph's owner does not list it as an implicit input", v.String(), graphName(v.Graph))
		}
	}
	for k, v := range n.Implicit {
		vr.uses[v] = append(vr.uses[v], Use{n, len(n.Inputs) + k})
		if !vr.available(v) {
			vr.nodeErr(n, "implicit input %q is not defined before the node", v.String())
		}
	}
	for k, c := range n.Control {
		switch {
		case c == nil:
			vr.nodeErr(n, "control input %d is nil", k)
			continue
		case c == n:
			vr.nodeErr(n, "lists itself as a control input (a cycle)")
		case c.Graph != g:
			vr.nodeErr(n, "control input %q is a node of graph %q; control edges stay within one graph", c.String(), graphName(c.Graph))
		case c.ID < 0 || int(c.ID) >= len(vr.nodeSeen) || !vr.nodeSeen[c.ID]:
			vr.nodeErr(n, "control input %q does not come before the node (a cycle through control inputs, nodes out of order, or a node not in the graph)", c.String())
		}
		if slices.Index(n.Control, c) != k {
			vr.nodeErr(n, "lists control input %q twice", c.String())
			continue
		}
		vr.ctrlUses[c] = append(vr.ctrlUses[c], n)
	}
	if info := n.Info(); info != nil {
		in := len(n.Inputs)
		if in < info.MinIn || (info.MaxIn != Variadic && in > info.MaxIn) {
			vr.nodeErr(n, "has %d inputs; %s takes %s", in, n.Op, info.InputArity())
		}
		out := len(n.Outputs)
		if out < info.MinOut || (info.MaxOut != Variadic && out > info.MaxOut) {
			vr.nodeErr(n, "has %d outputs; %s produces %s", out, n.Op, info.OutputArity())
		}
	}
	for _, sg := range n.Subgraphs() {
		if sg.Parent != g {
			vr.nodeErr(n, "subgraph %q has parent %q, want %q", sg.Name, graphName(sg.Parent), g.Name)
		}
		if sg.Owner != n {
			vr.nodeErr(n, "subgraph %q records another owner", sg.Name)
		}
		vr.graph(sg)
	}
	for i, o := range n.Outputs {
		if o == nil {
			continue
		}
		if o.Def != n || o.Index != i {
			vr.nodeErr(n, "output %d %q records producer %q index %d", i, o.String(), o.Def.String(), o.Index)
		}
		vr.define(o, g)
	}
}

// implicitChain collects the implicit inputs of g's owner and of every
// enclosing owner: the outer values g may read.
func (vr *verifier) implicitChain(g *Graph) []*Value {
	var vs []*Value
	for ; g != nil && g.Owner != nil; g = g.Parent {
		vs = append(vs, g.Owner.Implicit...)
	}
	return vs
}

// checkUses compares every value's Uses with the uses found by the walk.
func (vr *verifier) checkUses() {
	for _, v := range vr.values {
		want := vr.uses[v]
		if len(want) != len(v.Uses) {
			vr.valueErr(v, "has %d recorded uses, but %d node input slots read it", len(v.Uses), len(want))
			continue
		}
		for _, u := range v.Uses {
			if !slices.Contains(want, u) {
				vr.valueErr(v, "records a use by node %q slot %d that does not read it", u.Node.String(), u.Index)
				break
			}
		}
	}
}

// checkControlUses compares every node's ControlUses with the nodes found
// listing it as a control input.
func (vr *verifier) checkControlUses() {
	for _, n := range vr.nodes {
		want := vr.ctrlUses[n]
		if len(want) != len(n.ControlUses) {
			vr.nodeErr(n, "has %d recorded control uses, but %d nodes list it as a control input", len(n.ControlUses), len(want))
			continue
		}
		for _, u := range n.ControlUses {
			if !slices.Contains(want, u) {
				vr.nodeErr(n, "records a control use by node %q, which does not list it as a control input", u.String())
				break
			}
		}
	}
}
