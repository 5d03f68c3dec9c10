// Package ir is remat-compile's typed graph IR: a dataflow graph of nodes
// that consume and produce SSA values, independent of any file format.
//
// A Graph holds its nodes in a valid topological order at all times. Nodes
// and values carry dense IDs, allocated by the root graph and shared by all of
// its subgraphs, so passes keep side tables as slices indexed by ID. Def and
// Uses links are kept exact by the mutation methods in this file; code
// outside the package must not assign Node.Inputs, Node.Outputs,
// Node.Implicit, Node.Control, Node.ControlUses, Value.Def or Value.Uses
// directly. Verify checks every invariant.
package ir

import (
	"fmt"
	"slices"
)

// ID is a dense identifier of a node or a value, unique within a root graph
// and its subgraphs.
type ID int32

// Graph is a dataflow graph: inputs, parameters (constant tensors such as
// weights), nodes in topological order, and outputs.
type Graph struct {
	Name string
	Doc  string

	// Inputs are the values the caller supplies at run time. A value may be
	// both an input and a parameter: an input with a default (ONNX models
	// before IR version 4 list initializers as inputs).
	Inputs []*Value
	// Params are values with constant data (Value.Data), such as weights.
	Params []*Value
	// Outputs are the graph's results. A value may appear more than once.
	Outputs []*Value
	// Nodes is always in a valid topological order.
	Nodes []*Node

	// Opsets are the operator set versions the graph's ops follow, by
	// domain ("" is the standard ONNX domain). Only a root graph has them;
	// subgraphs use their root's.
	Opsets []Opset

	// Parent is the enclosing graph of a subgraph and Owner the node whose
	// attribute holds it; both are nil for a root graph.
	Parent *Graph
	Owner  *Node

	// Ext holds format-specific data that an importer keeps so that the
	// matching exporter can write back what the IR does not model. Passes
	// ignore it.
	Ext any

	ids *idAlloc
}

// Opset is one operator set import: the version of a domain's operators.
type Opset struct {
	Domain  string
	Version int64
}

// Opset returns the version of domain imported by g's root graph, or 0 when
// the root does not import it. "ai.onnx" and "" are the same domain.
func (g *Graph) Opset(domain string) int64 {
	if domain == "ai.onnx" {
		domain = ""
	}
	for _, o := range g.Root().Opsets {
		d := o.Domain
		if d == "ai.onnx" {
			d = ""
		}
		if d == domain {
			return o.Version
		}
	}
	return 0
}

type idAlloc struct{ nodes, values ID }

// Node is one operation. Optional inputs and outputs that are absent are nil
// entries of Inputs and Outputs, so positions keep their meaning.
type Node struct {
	ID     ID
	Op     string // operator type, such as "Conv"
	Domain string // operator set domain; "" is the standard ONNX domain
	Name   string
	Doc    string

	Inputs  []*Value
	Outputs []*Value
	// Implicit lists values of enclosing scopes that the node's subgraphs
	// read (outer-scope captures). They are uses of this node: a captured
	// value must stay live until the node has run.
	Implicit []*Value
	// Control lists nodes of the same graph that must run before this one
	// although it reads none of their outputs: ordering edges that carry no
	// value (TensorFlow's control inputs, "^name"). ControlUses is the
	// reverse, the nodes whose Control lists this one. AddControl and
	// RemoveControl keep the two exact.
	Control     []*Node
	ControlUses []*Node
	Attrs       []Attr

	Graph *Graph // the graph whose Nodes holds this node
	Ext   any
}

// Value is an SSA value: produced by exactly one node (Def) or supplied as a
// graph input or parameter (Def == nil).
type Value struct {
	ID    ID
	Name  string
	Doc   string
	Type  TensorType
	Def   *Node // producer; nil for graph inputs and parameters
	Index int   // position in Def.Outputs
	Uses  []Use // every node input slot that reads the value
	// Data is the constant content of a parameter; nil for other values.
	Data *Tensor
	// Graph is the graph that defines the value (as input, parameter or
	// through Def).
	Graph *Graph
	Ext   any
}

// Use is one reading of a value: Node.Inputs[Index], or, when Index is at
// least len(Node.Inputs), Node.Implicit[Index-len(Node.Inputs)].
type Use struct {
	Node  *Node
	Index int
}

// NewGraph returns an empty root graph.
func NewGraph(name string) *Graph {
	return &Graph{Name: name, ids: &idAlloc{}}
}

// NewSubgraph returns an empty graph nested in g: it shares g's ID space and
// may read g's values. Attach it to a node with an Attr of kind AttrGraph;
// SetAttr sets its Owner.
func (g *Graph) NewSubgraph(name string) *Graph {
	return &Graph{Name: name, ids: g.ids, Parent: g}
}

// Root returns the outermost enclosing graph.
func (g *Graph) Root() *Graph {
	for g.Parent != nil {
		g = g.Parent
	}
	return g
}

// NumNodes is one more than the largest node ID allocated in g's ID space:
// the length of a side table indexed by node ID.
func (g *Graph) NumNodes() int { return int(g.ids.nodes) }

// NumValues is the length of a side table indexed by value ID.
func (g *Graph) NumValues() int { return int(g.ids.values) }

func (g *Graph) newValue(name string, t TensorType) *Value {
	v := &Value{ID: g.ids.values, Name: name, Type: t, Graph: g}
	g.ids.values++
	return v
}

// AddInput appends a run-time input.
func (g *Graph) AddInput(name string, t TensorType) *Value {
	v := g.newValue(name, t)
	g.Inputs = append(g.Inputs, v)
	return v
}

// AddParam appends a parameter with constant data.
func (g *Graph) AddParam(name string, t TensorType, data *Tensor) *Value {
	v := g.newValue(name, t)
	v.Data = data
	g.Params = append(g.Params, v)
	return v
}

// MarkInput also lists an existing parameter as an input (an input with a
// default value).
func (g *Graph) MarkInput(v *Value) { g.Inputs = append(g.Inputs, v) }

// AddOutput appends v to the graph outputs.
func (g *Graph) AddOutput(v *Value) { g.Outputs = append(g.Outputs, v) }

// NewNode creates a node with the given inputs (nil for an absent optional
// input) and one output value per name ("" for an absent optional output),
// and appends it to g.Nodes. Output types start undefined; set Value.Type.
func (g *Graph) NewNode(op, domain string, inputs []*Value, outputs []string) *Node {
	n := g.CreateNode(op, domain, inputs, outputs)
	g.Nodes = append(g.Nodes, n)
	return n
}

// CreateNode is NewNode without placing the node in g.Nodes; place it with
// Insert before anything else reads it.
func (g *Graph) CreateNode(op, domain string, inputs []*Value, outputs []string) *Node {
	n := &Node{ID: g.ids.nodes, Op: op, Domain: domain, Graph: g}
	g.ids.nodes++
	n.Inputs = make([]*Value, len(inputs))
	for i, v := range inputs {
		n.SetInput(i, v)
	}
	n.Outputs = make([]*Value, len(outputs))
	for i, name := range outputs {
		if name == "" {
			continue
		}
		v := g.newValue(name, TensorType{})
		v.Def, v.Index = n, i
		n.Outputs[i] = v
	}
	return n
}

// Insert places n, created by CreateNode, at position i of g.Nodes.
func (g *Graph) Insert(i int, n *Node) {
	if n.Graph != g {
		panic("ir: Insert of a node of another graph")
	}
	g.Nodes = slices.Insert(g.Nodes, i, n)
}

// SetOutput gives n an output value at position i (creating it, or
// renaming the existing one) and returns it.
func (n *Node) SetOutput(i int, name string) *Value {
	for len(n.Outputs) <= i {
		n.Outputs = append(n.Outputs, nil)
	}
	if v := n.Outputs[i]; v != nil {
		v.Name = name
		return v
	}
	v := n.Graph.newValue(name, TensorType{})
	v.Def, v.Index = n, i
	n.Outputs[i] = v
	return v
}

// SetInput makes slot i of n read v (nil: absent), keeping Uses exact. The
// slot may be one past the end, which appends an input.
func (n *Node) SetInput(i int, v *Value) {
	if i == len(n.Inputs) {
		n.Inputs = append(n.Inputs, nil)
		n.shiftImplicitUses(len(n.Inputs)-1, +1)
	}
	if old := n.Inputs[i]; old != nil {
		old.removeUse(n, i)
	}
	n.Inputs[i] = v
	if v != nil {
		v.Uses = append(v.Uses, Use{n, i})
	}
}

// AddImplicit records that n's subgraphs read v, a value of an enclosing
// scope. Adding a value twice is a no-op.
func (n *Node) AddImplicit(v *Value) {
	if slices.Contains(n.Implicit, v) {
		return
	}
	n.Implicit = append(n.Implicit, v)
	v.Uses = append(v.Uses, Use{n, len(n.Inputs) + len(n.Implicit) - 1})
}

// shiftImplicitUses renumbers the Use records of implicit inputs when the
// number of explicit inputs changes.
func (n *Node) shiftImplicitUses(from, delta int) {
	for k, v := range n.Implicit {
		old := from + k
		for j := range v.Uses {
			if v.Uses[j].Node == n && v.Uses[j].Index == old {
				v.Uses[j].Index = old + delta
				break
			}
		}
	}
}

// AddControl makes n run after m (a control input: an ordering edge without
// a value), keeping m.ControlUses exact. m must be a node of n's graph that
// comes before n in its Nodes. Adding an edge twice is a no-op.
func (n *Node) AddControl(m *Node) {
	if m == nil {
		panic(fmt.Sprintf("ir: AddControl(nil) on node %s", n))
	}
	if slices.Contains(n.Control, m) {
		return
	}
	n.Control = append(n.Control, m)
	m.ControlUses = append(m.ControlUses, n)
}

// RemoveControl deletes the control edge from m to n, if there is one.
func (n *Node) RemoveControl(m *Node) {
	i := slices.Index(n.Control, m)
	if i < 0 {
		return
	}
	n.Control = slices.Delete(n.Control, i, i+1)
	j := slices.Index(m.ControlUses, n)
	if j < 0 {
		panic(fmt.Sprintf("ir: node %s lists control input %s, which does not list it among its control uses", n, m))
	}
	m.ControlUses = slices.Delete(m.ControlUses, j, j+1)
}

func (v *Value) removeUse(n *Node, i int) {
	for j, u := range v.Uses {
		if u.Node == n && u.Index == i {
			v.Uses = slices.Delete(v.Uses, j, j+1)
			return
		}
	}
	panic(fmt.Sprintf("ir: value %s has no use by node %s slot %d", v, n, i))
}

// ReplaceUses makes every node that reads v read w instead, and replaces v
// by w among the graph outputs of v's graph.
func (v *Value) ReplaceUses(w *Value) {
	if v == w {
		return
	}
	for len(v.Uses) > 0 {
		u := v.Uses[len(v.Uses)-1]
		if u.Index < len(u.Node.Inputs) {
			u.Node.SetInput(u.Index, w)
			continue
		}
		k := u.Index - len(u.Node.Inputs)
		v.Uses = v.Uses[:len(v.Uses)-1]
		u.Node.Implicit[k] = w
		w.Uses = append(w.Uses, u)
	}
	for i, o := range v.Graph.Outputs {
		if o == v {
			v.Graph.Outputs[i] = w
		}
	}
}

// RemoveNode deletes n from its graph. Its outputs must have no uses left
// and no node may list n as a control input; its inputs lose their uses by
// n, and its control inputs their control uses.
func (g *Graph) RemoveNode(n *Node) {
	for _, o := range n.Outputs {
		if o != nil && len(o.Uses) > 0 {
			panic(fmt.Sprintf("ir: RemoveNode(%s): output %s still has %d uses", n, o, len(o.Uses)))
		}
	}
	if len(n.ControlUses) > 0 {
		panic(fmt.Sprintf("ir: RemoveNode(%s): %d nodes still list it as a control input (first %s); RemoveControl them first", n, len(n.ControlUses), n.ControlUses[0]))
	}
	for len(n.Control) > 0 {
		n.RemoveControl(n.Control[len(n.Control)-1])
	}
	for i, v := range n.Inputs {
		if v != nil {
			v.removeUse(n, i)
		}
	}
	for k, v := range n.Implicit {
		v.removeUse(n, len(n.Inputs)+k)
	}
	n.Inputs, n.Implicit = nil, nil
	i := slices.Index(g.Nodes, n)
	if i < 0 {
		panic(fmt.Sprintf("ir: RemoveNode(%s): not in graph %q", n, g.Name))
	}
	g.Nodes = slices.Delete(g.Nodes, i, i+1)
}

// IsConst reports whether v is a parameter with data.
func (v *Value) IsConst() bool { return v.Data != nil }

// Subgraphs returns the graphs held by n's attributes, in attribute order.
func (n *Node) Subgraphs() []*Graph {
	var gs []*Graph
	for i := range n.Attrs {
		a := &n.Attrs[i]
		if a.Graph != nil {
			gs = append(gs, a.Graph)
		}
		gs = append(gs, a.Graphs...)
	}
	return gs
}

// NumOutputs counts the outputs that are present.
func (n *Node) NumOutputs() int {
	c := 0
	for _, o := range n.Outputs {
		if o != nil {
			c++
		}
	}
	return c
}

// String is the short form of a value: its name, or v<ID> when unnamed.
func (v *Value) String() string {
	if v == nil {
		return "<nil>"
	}
	if v.Name != "" {
		return v.Name
	}
	return fmt.Sprintf("v%d", v.ID)
}

// String is the short form of a node: its name, or n<ID> when unnamed.
func (n *Node) String() string {
	if n == nil {
		return "<nil>"
	}
	if n.Name != "" {
		return n.Name
	}
	return fmt.Sprintf("n%d", n.ID)
}

// OpName is the operator with its domain when not the standard one
// ("com.microsoft.FusedConv").
func (n *Node) OpName() string {
	if n.Domain == "" || n.Domain == "ai.onnx" {
		return n.Op
	}
	return n.Domain + "." + n.Op
}

// Walk calls fn for g and every graph nested in it, depth first, parents
// before children.
func (g *Graph) Walk(fn func(*Graph)) {
	fn(g)
	for _, n := range g.Nodes {
		for _, sg := range n.Subgraphs() {
			sg.Walk(fn)
		}
	}
}

// Capture records that graph g reads v, a value of an enclosing graph: v
// becomes an implicit input of the owner of g and of every owner between g
// and the graph that defines v, so the outer schedulers keep v live.
func (g *Graph) Capture(v *Value) {
	for s := g; s != nil && s != v.Graph && s.Owner != nil; s = s.Parent {
		s.Owner.AddImplicit(v)
	}
}
