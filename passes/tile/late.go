package tile

import (
	"slices"

	"github.com/remat-compile/remat/ir"
)

// A late output is a second output of a node that only readers far down
// the graph take, and that is not spatially local: MaxPool's argmax
// indices, which a SegNet-style decoder's MaxUnpool reads at the mirror
// stage. While the node produces it, the node cannot be tiled (the
// indices are positions in the whole image) and the indices are live
// across the whole bottleneck; and under ONNX Runtime's planner the
// node's whole-image input holds its buffer until the decoder's first
// value of the same shape takes it, so both sit in the peak.
//
// lateOutput rewrites g so that node n no longer produces its output k
// (n is then spatially local and can join a region) and a recomputation
// produces it next to its readers: a copy of n, and copies of every node
// between n's input and the values that are live at the first reader
// anyway (graph inputs, parameters, and values that the first reader or
// a node after it reads), in graph order. The copies are placed right
// after the last producer of the values they read, so that ONNX Runtime,
// which runs the producers of a node with the highest position first
// (research/ort-execution.md, Q1), reaches them only from the readers:
// late, after the rest of the readers' inputs. The recomputation is the
// whole-tensor rematerialization of the papers (Checkmate §4) of a value
// the remat pass cannot drop: it is one output of a node whose other
// output is needed early.
//
// It returns the copies; nil and false, leaving g unchanged, when n's
// output k is not a late output (a graph output, or read by no node) or
// the recomputation would replay a random or stateful op or a node with
// subgraphs.
func lateOutput(g *ir.Graph, n *ir.Node, k int) ([]*ir.Node, bool) {
	if k == 0 || k >= len(n.Outputs) || n.Outputs[k] == nil || len(n.Outputs[k].Uses) == 0 || isOutput(g, n.Outputs[k]) {
		return nil, false
	}
	pos := make(map[*ir.Node]int, len(g.Nodes))
	for i, m := range g.Nodes {
		pos[m] = i
	}
	o := n.Outputs[k]
	first := len(g.Nodes)
	for _, u := range o.Uses {
		first = min(first, pos[u.Node])
	}
	// The chain: n and the nodes between n's inputs and values live at
	// the first reader anyway.
	chain := map[*ir.Node]bool{}
	var visit func(m *ir.Node)
	visit = func(m *ir.Node) {
		if chain[m] {
			return
		}
		chain[m] = true
		for _, v := range m.Inputs {
			if v != nil && v.Def != nil && !liveAt(g, v, pos, first) {
				visit(v.Def)
			}
		}
	}
	visit(n)
	for m := range chain {
		if len(m.Subgraphs()) > 0 || !replayable(m) {
			return nil, false
		}
	}
	order := make([]*ir.Node, 0, len(chain))
	for m := range chain {
		order = append(order, m)
	}
	slices.SortFunc(order, func(a, b *ir.Node) int { return pos[a] - pos[b] })

	// Node and value names are separate namespaces (SegNet's nodes are
	// named as their outputs).
	nodeNames, valueNames := newBuilder(g, ""), newBuilder(g, "")
	vmap := map[*ir.Value]*ir.Value{}
	var copies []*ir.Node
	at := 0 // the position after the last producer of a value read from outside the chain
	for _, m := range order {
		ins := make([]*ir.Value, len(m.Inputs))
		for i, v := range m.Inputs {
			if v == nil {
				continue
			}
			if c, ok := vmap[v]; ok {
				ins[i] = c
				continue
			}
			ins[i] = v
			if v.Def != nil {
				at = max(at, pos[v.Def]+1)
			}
		}
		outs := make([]string, len(m.Outputs))
		for i, v := range m.Outputs {
			if v != nil {
				outs[i] = valueNames.unique(v.Name + "_late")
			}
		}
		c := g.CreateNode(m.Op, m.Domain, ins, outs)
		c.Name = nodeNames.unique(m.Name + "_late")
		for _, a := range m.Attrs {
			c.SetAttr(a.Clone())
		}
		for i, v := range m.Outputs {
			if v != nil {
				c.Outputs[i].Type = v.Type.Clone()
				vmap[v] = c.Outputs[i]
			}
		}
		copies = append(copies, c)
	}
	for i, c := range copies {
		g.Insert(at+i, c)
	}
	o.ReplaceUses(vmap[o])
	n.Outputs[k] = nil
	for len(n.Outputs) > 1 && n.Outputs[len(n.Outputs)-1] == nil {
		n.Outputs = n.Outputs[:len(n.Outputs)-1]
	}
	return copies, true
}

// lateCand is a late output of a graph: output out of the node at
// position pos of its Nodes, named for the report.
type lateCand struct {
	pos, out     int
	node, output string
}

// lateCandidates lists g's late outputs in graph order: the outputs after
// the first of a node of a spatially local op (MaxPool's indices) that
// nodes read and that are not graph outputs, whose node's recomputation
// lateOutput can replay.
func lateCandidates(g *ir.Graph) []lateCand {
	var cs []lateCand
	for i, n := range g.Nodes {
		if !ir.SpatialOp(n.Domain, n.Op) || !replayable(n) || len(n.Subgraphs()) > 0 {
			continue
		}
		for k := 1; k < len(n.Outputs); k++ {
			if o := n.Outputs[k]; o != nil && len(o.Uses) > 0 && !isOutput(g, o) {
				cs = append(cs, lateCand{pos: i, out: k, node: n.Name, output: o.Name})
			}
		}
	}
	return cs
}

// moveLate applies lateOutput to g for each of cs (positions in g.Nodes
// before any move) and returns the copies of each; false when one is not
// a late output any more.
func moveLate(g *ir.Graph, cs []lateCand) ([][]*ir.Node, bool) {
	nodes := slices.Clone(g.Nodes)
	var all [][]*ir.Node
	for _, c := range cs {
		copies, ok := lateOutput(g, nodes[c.pos], c.out)
		if !ok {
			return nil, false
		}
		all = append(all, copies)
	}
	return all, true
}

// liveAt reports whether v is live at position first of g.Nodes anyway:
// a graph input or parameter, a graph output, or read by the node there
// or a later one.
func liveAt(g *ir.Graph, v *ir.Value, pos map[*ir.Node]int, first int) bool {
	if v.Def == nil || isOutput(g, v) {
		return true
	}
	for _, u := range v.Uses {
		if pos[u.Node] >= first {
			return true
		}
	}
	return false
}

// replayable reports whether running a copy of n gives its outputs again:
// not a random or stateful op.
func replayable(n *ir.Node) bool {
	info := ir.LookupOp(n.Domain, n.Op)
	return info != nil && info.Flags&(ir.Random|ir.Stateful) == 0
}

func isOutput(g *ir.Graph, v *ir.Value) bool { return slices.Contains(g.Outputs, v) }
