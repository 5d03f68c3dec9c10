package remat

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// RewriteResult is what Rewrite did to a graph: the duplicated nodes it
// added, in plan order, each with where the plan runs it. (Go does not let
// the type share the function's name.)
type RewriteResult struct {
	// Graph is the rewritten graph.
	Graph *ir.Graph
	// Recomputes lists one entry per computation of a node beyond its
	// first, in plan order. Consecutive entries with the same After form
	// one recompute chain: the recomputations of one stage.
	Recomputes []Recompute
}

// Recompute is one duplicated node of a rewritten graph.
type Recompute struct {
	// Node is the duplicate, named "<original's name>_rc<k>" (its k-th
	// recomputation), with outputs "<original output name>_rc<k>".
	Node *ir.Node
	// Original is the node it duplicates (its first computation).
	Original *ir.Node
	// After is the node the plan runs right before the chain that Node
	// belongs to (the same for every node of the chain); nil when the
	// chain starts the sequence.
	After *ir.Node
	// Before is the first node, in plan order, that reads an output of
	// Node; nil when none does (an output the plan recomputes only to
	// return it, or a wasted recomputation).
	Before *ir.Node
}

// OrderConstraint asks the writer of a rewritten graph to make the
// runtime run Node only after After has run (After must not depend on
// Node). The targets choose them (targets/ort) and the exporters apply
// them in their format's way (exporters/onnx: a fake data dependency).
type OrderConstraint struct {
	Node, After *ir.Node
}

// Chains groups the recomputations into chains: maximal runs of
// consecutive entries with the same After, in plan order.
func (rw *RewriteResult) Chains() [][]Recompute {
	var out [][]Recompute
	for k, rc := range rw.Recomputes {
		if k == 0 || rw.Recomputes[k-1].After != rc.After {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], rc)
	}
	return out
}

// Rewrite turns g, the graph that m was lowered from (in the node order
// it was lowered in), into the static graph that executes plan: g.Nodes
// becomes every computation of the plan in plan order (Mapping.Sequence),
// so that memory.Simulate(g, g.Nodes, opts.Memory()) gives the plan's
// memory exactly as Check computes it.
//
//   - The first computation of a node is the node itself; each later one
//     is a new node copying its op, domain, attributes, doc and Ext, named
//     "<name>_rc<k>" for its k-th recomputation, with outputs
//     "<output>_rc<k>" of the same types (k grows past names that are
//     taken). A node with subgraphs (If, Loop, Scan) cannot be duplicated:
//     Rewrite refuses such a plan, as it refuses to duplicate a node that
//     is not recomputable.
//   - Every node reads the copy of each input that is live at its step:
//     the output of the most recent computation of the producer before
//     it in the plan.
//   - Graph outputs are the copies live at the end of the plan. Their
//     names do not change: when the live copy of an output is a
//     duplicate, the duplicate's output takes the output's name and the
//     earlier instance takes the "_rc<k>" name instead, so the model's
//     interface stays the same (the duplicate node keeps its "_rc<k>"
//     name).
//   - Nodes that are not part of the problem (Constant nodes, which Lower
//     treats as parameters by default and which never run) keep their
//     place: each stays right before the node that followed it in the
//     original order, so Constants at the front stay at the front, and a
//     plan without recomputations (checkpoint-all's) leaves g unchanged.
//   - Nodes that the metadata of a rewritten model must name (originals,
//     and the nodes before and after each recompute chain) get a unique,
//     non-empty name if they lack one: their first output's name.
//
// Rewrite checks what it relies on — the plan computes every node, reads
// no value before computing it, and duplicates only recomputable nodes —
// but does not judge memory: run Check first. When the plan does not fit
// g it returns an error and leaves g unchanged. It verifies the result
// with ir.Verify.
func Rewrite(g *ir.Graph, m *Mapping, plan *Plan) (*RewriteResult, error) {
	if g == nil || m == nil || plan == nil {
		return nil, fmt.Errorf("remat: Rewrite: nil graph, mapping or plan")
	}
	if m.Graph != g {
		return nil, fmt.Errorf("remat: Rewrite: the mapping was lowered from graph %q, not from %q", graphLabel(m.Graph), graphLabel(g))
	}
	n := len(m.Nodes)
	if len(plan.R) != n {
		return nil, fmt.Errorf("remat: Rewrite: the plan has %d stages for the %d nodes of the problem", len(plan.R), n)
	}
	// The graph must still be the one Lower saw: every node of g is a
	// problem node or a node Lower left out (a Constant), and every
	// problem node is in g.
	inGraph := make([]bool, g.NumNodes())
	for _, nd := range g.Nodes {
		if int(nd.ID) < len(inGraph) {
			inGraph[nd.ID] = true
		}
		if m.Index(nd) < 0 && !isConstantNode(nd) {
			return nil, fmt.Errorf("remat: Rewrite: node %q (%s) is not in the problem: the graph changed after Lower", nd.String(), nd.OpName())
		}
	}
	for i, nd := range m.Nodes {
		if nd.Graph != g || !inGraph[nd.ID] || m.Index(nd) != i {
			return nil, fmt.Errorf("remat: Rewrite: problem node %d (%s) is no longer in the graph: the graph changed after Lower", i, nd.String())
		}
	}

	seq := plan.Sequence()
	times := make([]int, n)
	for _, i := range seq {
		if i < 0 || int(i) >= n {
			return nil, fmt.Errorf("remat: Rewrite: the plan computes node %d, which the problem does not have", i)
		}
		times[i]++
	}
	for i, c := range times {
		nd := m.Nodes[i]
		switch {
		case c == 0:
			return nil, fmt.Errorf("remat: Rewrite: the plan never computes node %q (%s)", nd.String(), nd.OpName())
		case c > 1 && !nd.Recomputable():
			return nil, fmt.Errorf("remat: Rewrite: the plan computes node %q (%s) %d times, but it is not recomputable (random, stateful or unknown op)", nd.String(), nd.OpName(), c)
		case c > 1 && len(nd.Subgraphs()) > 0:
			return nil, fmt.Errorf("remat: Rewrite: the plan computes node %q (%s) %d times, but duplicating nodes with subgraphs (control flow) is not supported", nd.String(), nd.OpName(), c)
		}
	}

	// Every read finds its value computed, and no subgraph captures a
	// value whose live copy is a duplicate; checked before anything
	// changes, so that an error leaves g as it was.
	fromProblem := func(v *ir.Value) bool {
		return v != nil && v.Def != nil && v.Def.Graph == g && m.Index(v.Def) >= 0
	}
	computed := make([]int, n)
	for s, i := range seq {
		nd := m.Nodes[i]
		for _, v := range nd.AllInputs() {
			if !fromProblem(v) {
				continue
			}
			switch c := computed[m.Index(v.Def)]; {
			case c == 0:
				return nil, fmt.Errorf("remat: Rewrite: step %d computes %q, which reads %q before the plan computes it", s, nd.String(), v.String())
			case c > 1 && slices.Contains(nd.Implicit, v):
				return nil, fmt.Errorf("remat: Rewrite: node %q (%s) reads %q inside its subgraphs, but the plan recomputes it before; rewiring values captured by subgraphs is not supported", nd.String(), nd.OpName(), v.String())
			}
		}
		computed[i]++
	}

	rw := &rewriter{g: g, nodeNames: map[string]int{}, valueNames: map[string]bool{}}
	rw.collectNames()
	// Name the nodes the result will refer to before deriving copies'
	// names from them.
	for i, c := range times {
		if c > 1 {
			rw.ensureName(m.Nodes[i])
		}
	}

	// The inputs each problem node had, before any rewiring.
	origIns := make([][]*ir.Value, n)
	for i, nd := range m.Nodes {
		origIns[i] = slices.Clone(nd.Inputs)
	}
	live := make([]*ir.Value, g.NumValues()) // original value ID → live instance
	resolve := func(step int, reader *ir.Node, v *ir.Value) (*ir.Value, error) {
		if !fromProblem(v) {
			return v, nil
		}
		w := live[v.ID]
		if w == nil {
			return nil, fmt.Errorf("remat: Rewrite: internal error: step %d computes %q, which reads %q before the plan computes it", step, reader.String(), v.String())
		}
		return w, nil
	}
	done := make([]int, n)
	newSeq := make([]*ir.Node, len(seq))
	isCopy := make([]bool, len(seq))
	for s, i := range seq {
		orig := m.Nodes[i]
		ins := make([]*ir.Value, len(origIns[i]))
		for j, v := range origIns[i] {
			w, err := resolve(s, orig, v)
			if err != nil {
				return nil, err
			}
			ins[j] = w
		}
		// Captured outer-scope values are read as they are (checked
		// above: their live copies are the originals).
		for _, v := range orig.Implicit {
			if w, err := resolve(s, orig, v); err != nil {
				return nil, err
			} else if w != v {
				return nil, fmt.Errorf("remat: Rewrite: internal error: node %q reads the duplicate %q inside its subgraphs", orig.String(), w.String())
			}
		}
		var nd *ir.Node
		if done[i] == 0 {
			nd = orig
			for j, w := range ins {
				if nd.Inputs[j] != w {
					nd.SetInput(j, w)
				}
			}
		} else {
			nd = rw.duplicate(orig, ins)
			isCopy[s] = true
		}
		done[i]++
		for j, o := range orig.Outputs {
			if o != nil {
				live[o.ID] = nd.Outputs[j]
			}
		}
		newSeq[s] = nd
	}

	// Graph outputs: the live instances, under the outputs' names.
	renamed := map[*ir.Value]*ir.Value{}
	for k, v := range g.Outputs {
		if !fromProblem(v) {
			continue
		}
		w := live[v.ID]
		if w == v {
			continue
		}
		if _, ok := renamed[v]; !ok {
			v.Name, w.Name = w.Name, v.Name
			renamed[v] = w
		}
		g.Outputs[k] = w
	}

	// Node order: the plan's, with each node outside the problem right
	// before the first computation of the problem node that followed it.
	anchored := make([][]*ir.Node, n)
	var pending, trailing []*ir.Node
	for _, nd := range g.Nodes {
		if i := m.Index(nd); i >= 0 {
			anchored[i] = append(anchored[i], pending...)
			pending = pending[:0]
			continue
		}
		pending = append(pending, nd)
	}
	trailing = pending
	nodes := make([]*ir.Node, 0, len(g.Nodes)+len(seq)-n)
	stepOf := make([]int32, g.NumNodes())
	for s, nd := range newSeq {
		if !isCopy[s] {
			nodes = append(nodes, anchored[seq[s]]...)
		}
		stepOf[nd.ID] = int32(len(nodes))
		nodes = append(nodes, nd)
	}
	nodes = append(nodes, trailing...)
	g.Nodes = nodes

	res := &RewriteResult{Graph: g}
	chainStart := 0
	for s, nd := range newSeq {
		if !isCopy[s] {
			chainStart = s + 1
			continue
		}
		rc := Recompute{Node: nd, Original: m.Nodes[seq[s]]}
		if chainStart > 0 {
			rc.After = newSeq[chainStart-1]
		}
		first := int32(-1)
		for _, o := range nd.Outputs {
			if o == nil {
				continue
			}
			for _, u := range o.Uses {
				if u.Node.Graph == g && (first < 0 || stepOf[u.Node.ID] < first) {
					first = stepOf[u.Node.ID]
					rc.Before = u.Node
				}
			}
		}
		res.Recomputes = append(res.Recomputes, rc)
	}
	for _, rc := range res.Recomputes {
		for _, nd := range []*ir.Node{rc.Original, rc.After, rc.Before} {
			if nd != nil {
				rw.ensureName(nd)
			}
		}
	}
	if err := ir.Verify(g); err != nil {
		return nil, fmt.Errorf("remat: Rewrite: internal error: the rewritten graph is not valid: %w", err)
	}
	return res, nil
}

func graphLabel(g *ir.Graph) string {
	if g == nil {
		return "<nil>"
	}
	return g.Name
}

func isConstantNode(n *ir.Node) bool {
	return n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx")
}

type rewriter struct {
	g *ir.Graph
	// nodeNames counts the nodes of g of each name (the names a rewritten
	// model's metadata uses are those of g's own nodes); valueNames holds
	// every value name of g and its subgraphs.
	nodeNames  map[string]int
	valueNames map[string]bool
	// copies counts the duplicates made of each node, by node ID.
	copies map[ir.ID]int
}

func (rw *rewriter) collectNames() {
	rw.copies = map[ir.ID]int{}
	rw.g.Walk(func(sg *ir.Graph) {
		for _, v := range sg.Inputs {
			rw.valueNames[v.Name] = true
		}
		for _, v := range sg.Params {
			rw.valueNames[v.Name] = true
		}
		for _, nd := range sg.Nodes {
			if nd.Name != "" && sg == rw.g {
				rw.nodeNames[nd.Name]++
			}
			for _, o := range nd.Outputs {
				if o != nil {
					rw.valueNames[o.Name] = true
				}
			}
		}
	})
	delete(rw.valueNames, "")
}

// ensureName gives n a unique, non-empty name if it lacks one or shares it
// with another node.
func (rw *rewriter) ensureName(n *ir.Node) {
	if n.Name != "" && rw.nodeNames[n.Name] == 1 {
		return
	}
	base := n.Name
	if base == "" {
		for _, o := range n.Outputs {
			if o != nil && o.Name != "" {
				base = o.Name
				break
			}
		}
	}
	if base == "" {
		base = fmt.Sprintf("%s_%d", n.Op, n.ID)
	}
	name := base
	for k := 2; rw.nodeNames[name] > 0; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	if n.Name != "" {
		rw.nodeNames[n.Name]--
	}
	n.Name = name
	rw.nodeNames[name]++
}

// duplicate makes the next copy of orig reading ins (not yet placed in
// g.Nodes).
func (rw *rewriter) duplicate(orig *ir.Node, ins []*ir.Value) *ir.Node {
	k := rw.copies[orig.ID] + 1
	suffix := func(k int) string { return "_rc" + strconv.Itoa(k) }
	for ; ; k++ {
		free := rw.nodeNames[orig.Name+suffix(k)] == 0
		for _, o := range orig.Outputs {
			if o != nil && o.Name != "" && rw.valueNames[o.Name+suffix(k)] {
				free = false
			}
		}
		if free {
			break
		}
	}
	rw.copies[orig.ID] = k
	outs := make([]string, len(orig.Outputs))
	for j, o := range orig.Outputs {
		switch {
		case o == nil:
		case o.Name == "":
			// An unnamed value stays unnamed (the exporter names it); the
			// placeholder only marks the output as present.
			outs[j] = "_"
		default:
			outs[j] = o.Name + suffix(k)
			rw.valueNames[outs[j]] = true
		}
	}
	c := rw.g.CreateNode(orig.Op, orig.Domain, ins, outs)
	c.Name = orig.Name + suffix(k)
	rw.nodeNames[c.Name]++
	c.Doc = orig.Doc
	c.Ext = orig.Ext
	c.Attrs = make([]ir.Attr, len(orig.Attrs))
	for a := range orig.Attrs {
		c.Attrs[a] = orig.Attrs[a].Clone()
	}
	for j, o := range orig.Outputs {
		if o == nil {
			continue
		}
		co := c.Outputs[j]
		if o.Name == "" {
			co.Name = ""
		}
		co.Type = o.Type.Clone()
		co.Doc = o.Doc
	}
	return c
}
