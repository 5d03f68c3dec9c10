package remat

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// The memory of a plan is computed by passes/memory itself, so that there
// is one definition of memory in the project. A Problem has no IR, so
// shadow builds a stand-in graph with the same dataflow and sizes: one node
// per problem node, one output per part, a u8 tensor of exactly the part's
// bytes; inputs are the parts the node reads; graph outputs are the output
// parts. Its ops are of a domain the op table does not know, which the
// memory.Options used here never consult: the model is pure liveness,
// Checkmate's eq. (2)–(3) with the frees of Algorithm 1 hoisted to the
// last use, or, with Problem.Reuse, that plus the allocation planner's
// buffer reuse (ReuseModel), the shadow's values keyed by Problem.Reuse,
// the in-place writes of Problem.InPlace and the views of Problem.View
// stated through the options' hooks (InPlaceOp, AliasOp), and with
// Problem.Arena the chunks of the arena replay.
type shadow struct {
	g     *ir.Graph
	nodes []*ir.Node
	// part maps a shadow value ID to the part it stands for, index a
	// shadow node ID to its problem node.
	part  []Part
	index []int32
	// prepacked gives the stand-ins of the arena's prepacked weights
	// (Arena.Prepacked) their bytes, by shadow node ID.
	prepacked map[ir.ID]int64
}

const shadowDomain = "remat.shadow"

func newShadow(p *Problem, seq []int32) *shadow {
	n := p.N()
	s := &shadow{g: ir.NewGraph("remat-problem"), nodes: make([]*ir.Node, n)}
	s.g.Opsets = []ir.Opset{{Domain: shadowDomain, Version: 1}}
	if p.Arena != nil && p.Arena.Prepacked != nil {
		// The arena's prepacked weights, one per node at its first
		// computation in sequence order, as the rewritten graph (Rewrite:
		// its nodes in plan order) has them (its recomputations share
		// the weights): nodes that never run, each standing for one.
		first := make([]bool, n)
		for _, i := range seq {
			if first[i] {
				continue
			}
			first[i] = true
			if b := p.Arena.Prepacked[i]; b > 0 {
				if s.prepacked == nil {
					s.prepacked = map[ir.ID]int64{}
				}
				s.prepacked[s.g.NewNode("Prepack", shadowDomain, nil, nil).ID] = b
			}
		}
	}
	for i := range n {
		// The part it may write over in place or is a view of first
		// (memory.Options.InPlace and Aliasing look at the first input),
		// then the others in the order it reads them. A view of an
		// outside value reads a graph input of the shadow, which takes
		// no bytes.
		var ins []*ir.Value
		ip := Part{-1, -1}
		switch {
		case p.InPlace != nil && p.InPlace[i].Node >= 0:
			ip = p.InPlace[i]
		case p.View != nil && p.View[i] == OutsideView:
			ins = append(ins, s.g.AddInput("outside", ir.TensorOf(ir.Uint8, p.PartBytes(i, 0))))
		case p.View != nil && p.View[i].Node >= 0:
			ip = p.View[i]
		}
		if ip.Node >= 0 {
			ins = append(ins, s.nodes[ip.Node].Outputs[ip.Index])
		}
		p.ReadPartsInOrder(i, func(r Part) {
			if r != ip {
				ins = append(ins, s.nodes[r.Node].Outputs[r.Index])
			}
		})
		np := p.NumParts(i)
		names := make([]string, np)
		for k := range names {
			names[k] = "v"
		}
		nd := s.g.NewNode("Node", shadowDomain, ins, names)
		nd.Name = p.Name(i)
		for int(nd.ID) >= len(s.index) {
			s.index = append(s.index, -1)
		}
		s.index[nd.ID] = int32(i)
		for k, o := range nd.Outputs {
			o.Type = ir.TensorOf(ir.Uint8, p.PartBytes(i, k))
			for int(o.ID) >= len(s.part) {
				s.part = append(s.part, Part{-1, -1})
			}
			s.part[o.ID] = Part{int32(i), int32(k)}
		}
		s.nodes[i] = nd
	}
	for _, r := range p.OutputPartList() {
		s.g.AddOutput(s.nodes[r.Node].Outputs[r.Index])
	}
	return s
}

// simulate runs the memory model over a compute sequence of p. Its
// PeakBytes, During and After include p.ConstBytes.
func simulate(p *Problem, seq []int32) (*memory.Result, *shadow, error) {
	s := newShadow(p, seq)
	nodes := make([]*ir.Node, len(seq))
	for k, i := range seq {
		nodes[k] = s.nodes[i]
	}
	var opts memory.Options
	if p.Reuse != nil {
		opts.Reuse = true
		opts.ReuseKey = func(v *ir.Value) int64 {
			if int(v.ID) >= len(s.part) || s.part[v.ID].Node < 0 {
				return -1
			}
			r := s.part[v.ID]
			return int64(p.Reuse[r.Node][r.Index])
		}
		if p.InPlace != nil {
			opts.InPlace = true
			opts.InPlaceOp = func(n *ir.Node) bool {
				i := s.index[n.ID]
				return p.InPlace[i].Node >= 0
			}
		}
		if p.View != nil {
			opts.Aliasing = true
			opts.AliasOp = func(n *ir.Node) bool {
				i := s.index[n.ID]
				return i >= 0 && p.View[i].Node != -1
			}
		}
	}
	if p.Workspace != nil {
		opts.Workspace = func(n *ir.Node) int64 { return p.Workspace[s.index[n.ID]] }
	}
	if a := p.Arena; a != nil {
		opts.Arena, opts.AlignBytes = true, memory.ArenaAlign
		if a.Prepacked != nil {
			opts.Prepacked = func(n *ir.Node) (int64, any) { return s.prepacked[n.ID], nil }
		}
		if a.Preamble != nil {
			opts.Preamble = func(*ir.Graph) []memory.ArenaRequest { return a.Preamble }
		}
		if a.WorkspaceParts != nil {
			opts.WorkspaceParts = func(n *ir.Node) []int64 {
				if i := s.index[n.ID]; i >= 0 {
					return a.WorkspaceParts[i]
				}
				return nil
			}
		}
		if a.WorkspaceFirst != nil {
			opts.WorkspaceFirst = func(n *ir.Node) bool {
				i := s.index[n.ID]
				return i >= 0 && a.WorkspaceFirst[i]
			}
		}
	}
	res, err := memory.Simulate(s.g, nodes, opts)
	if err != nil {
		return nil, nil, err
	}
	res.PeakBytes += p.ConstBytes
	res.ConstBytes += p.ConstBytes
	for k := range res.During {
		res.During[k] += p.ConstBytes
		res.After[k] += p.ConstBytes
	}
	return res, s, nil
}
