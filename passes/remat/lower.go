package remat

import (
	"fmt"
	"math"
	"slices"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// LowerOptions configure Lower. The zero value is the usual setting:
// inputs and parameters not counted, Constant nodes treated as parameters.
type LowerOptions struct {
	// CountInputs and CountParams add the bytes of graph inputs and of
	// parameters (initializers, and Constant outputs unless ConstantNodes)
	// to ConstBytes, the constant overhead of Checkmate eq. (2).
	CountInputs, CountParams bool
	// ConstantNodes lowers Constant nodes as ordinary problem nodes. By
	// default they are parameters, not problem nodes: ONNX Runtime turns
	// Constant nodes into initializers when it loads a model, so they never
	// run, their values are resident throughout, and recomputing one could
	// save nothing (memory.Options.ConstantsAsParams).
	ConstantNodes bool
	// Reuse lowers the problem under ONNX Runtime's allocation planner
	// (Problem.Reuse and Problem.InPlace; memory.Options.Reuse and
	// InPlace): each part keyed by its value's element size and static
	// shape (memory.LayoutKey), and the in-place writes of the op table's
	// ir.InPlace ops, so that plans are made, checked and bounded under
	// the buffer reuse the runtime really does.
	Reuse bool
	// Shapeless, with Reuse, names the values the runtime's planner sees
	// without a static shape (memory.Options.Shapeless): their parts get
	// reuse key -1 and are never written in place.
	Shapeless func(v *ir.Value) bool
	// Aliasing, with Reuse, lowers the views of the op table's ir.Alias
	// ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) as views
	// (Problem.View; memory.Options.Aliasing): their output shares the
	// buffer of their first input, as in ONNX Runtime, instead of taking
	// one of its own.
	Aliasing bool
	// Workspace, when set, gives each node's kernel scratch bytes
	// (Problem.Workspace; the target's memory.Options.Workspace).
	Workspace func(n *ir.Node) int64
	// Arena lowers the problem under the target's BFC arena
	// (Problem.Arena; memory.Options.Arena), with each node's prepacked
	// weights, the requests before the first step and workspace
	// allocations from Prepacked, Preamble, WorkspaceParts and
	// WorkspaceFirst when set (the target's memory.Options fields of
	// the same names).
	Arena          bool
	Prepacked      func(n *ir.Node) (bytes int64, key any)
	Preamble       func(g *ir.Graph) []memory.ArenaRequest
	WorkspaceParts func(n *ir.Node) []int64
	WorkspaceFirst func(n *ir.Node) bool
}

// Memory returns the memory.Options under which passes/memory.Simulate
// computes, on the IR graph, the same bytes as Check on the lowered
// problem (with Mapping.Sequence as the sequence).
func (o LowerOptions) Memory() memory.Options {
	mo := memory.Options{CountInputs: o.CountInputs, CountParams: o.CountParams, ConstantsAsParams: !o.ConstantNodes, Reuse: o.Reuse, InPlace: o.Reuse, Aliasing: o.Reuse && o.Aliasing, Shapeless: o.Shapeless, Workspace: o.Workspace}
	if o.Arena {
		mo.Arena, mo.AlignBytes, mo.Prepacked, mo.Preamble, mo.WorkspaceParts, mo.WorkspaceFirst = true, memory.ArenaAlign, o.Prepacked, o.Preamble, o.WorkspaceParts, o.WorkspaceFirst
	}
	return mo
}

// Mapping relates the nodes of a lowered problem to the IR nodes they came
// from.
type Mapping struct {
	Graph *ir.Graph
	// Nodes[i] is the IR node of problem node i.
	Nodes []*ir.Node
	// Outputs[i] lists the present outputs of Nodes[i], in output order:
	// Outputs[i][k] is part k of problem node i.
	Outputs [][]*ir.Value
	index   []int32 // IR node ID → problem node, −1 when not lowered
}

// Index returns the problem node of an IR node, or −1 when it has none (a
// node of another graph, or a Constant lowered as a parameter).
func (m *Mapping) Index(n *ir.Node) int {
	if n == nil || n.Graph != m.Graph || int(n.ID) >= len(m.index) {
		return -1
	}
	return int(m.index[n.ID])
}

// Sequence returns the IR nodes that plan computes, in order, repeats
// included: the order the exporter writes and memory.Simulate runs. It
// leaves out Constant nodes lowered as parameters, which do not run.
func (m *Mapping) Sequence(plan *Plan) []*ir.Node {
	seq := plan.Sequence()
	out := make([]*ir.Node, len(seq))
	for k, i := range seq {
		out[k] = m.Nodes[i]
	}
	return out
}

// Lower builds the rematerialization problem of g (the root graph or a
// subgraph) in its node order, with one problem node per IR node that
// runs. cost gives each node's compute time in seconds (the profile's
// cost model). The budget is NoBudget; the caller sets it.
//
//   - Bytes is the sum of the node's present outputs; a node with two or
//     more present outputs also gets Parts, and its readers Reads, so that
//     the memory model frees each output after its own last reader (see
//     the package doc).
//   - Dependencies are the producers, in g, of the node's inputs and of
//     the outer-scope values its subgraphs capture; graph inputs,
//     parameters, Constant outputs (unless ConstantNodes) and values of
//     enclosing graphs are available throughout and are not dependencies.
//   - Recomputable is ir.Node.Recomputable (false for random and stateful
//     ops, control flow containing them, and ops the op table does not
//     know), and false for constant-foldable nodes (ConstantFoldable):
//     their value depends on parameters alone, so from level "basic" up
//     ONNX Runtime's ConstantFolding replaces the node by an initializer
//     when it loads the model. A recomputation of such a node cannot
//     save anything there: the original no longer runs (its value is a
//     resident initializer, which the memory model does not count), and
//     the copy, which the exporter ties to the schedule with a fake data
//     dependency so that it is no longer constant, runs as an extra node
//     holding an extra buffer. At level "disabled" the node runs once, as
//     an activation, exactly as the memory model counts it; keeping it
//     out of the plan's recomputations is therefore faithful at every
//     level, whereas lowering its output as a parameter would
//     under-count level "disabled" and make Lower disagree with
//     memory.Simulate (LowerOptions.Memory).
//   - Outputs are the nodes that produce graph outputs.
//
// A value whose size is unknown makes Lower fail with a *memory.SizeError
// that lists them all.
func Lower(g *ir.Graph, cost func(*ir.Node) float64, opts LowerOptions) (*Problem, *Mapping, error) {
	if cost == nil {
		return nil, nil, fmt.Errorf("remat: Lower: no cost function")
	}
	m := &Mapping{Graph: g, index: make([]int32, g.NumNodes())}
	for i := range m.index {
		m.index[i] = -1
	}
	isParamConst := func(n *ir.Node) bool {
		return !opts.ConstantNodes && n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx")
	}
	foldable := ConstantFoldable(g)
	for _, n := range g.Nodes {
		if isParamConst(n) {
			continue
		}
		m.index[n.ID] = int32(len(m.Nodes))
		m.Nodes = append(m.Nodes, n)
	}
	N := len(m.Nodes)
	p := &Problem{
		Deps:         make([][]int32, N),
		Seconds:      make([]float64, N),
		Bytes:        make([]int64, N),
		Recomputable: make([]bool, N),
		Names:        make([]string, N),
		BudgetBytes:  NoBudget,
	}
	m.Outputs = make([][]*ir.Value, N)

	var unknown []*ir.Value
	seen := make([]bool, g.NumValues())
	size := func(v *ir.Value) int64 {
		b, ok := v.Type.Bytes()
		if !ok {
			if !seen[v.ID] {
				seen[v.ID] = true
				unknown = append(unknown, v)
			}
			return 0
		}
		return b
	}
	// part[v.ID] is the part index of a value produced by a problem node.
	part := make([]int32, g.NumValues())
	multi := false
	keys := memory.LayoutKeys{}
	if opts.Reuse {
		p.Reuse = make([][]int32, N)
	}
	for i, n := range m.Nodes {
		var parts []int64
		for _, o := range n.Outputs {
			if o == nil {
				continue
			}
			part[o.ID] = int32(len(parts))
			b := size(o)
			parts = append(parts, b)
			if opts.Reuse {
				key := int32(-1)
				if opts.Shapeless == nil || !opts.Shapeless(o) {
					key = keys.ID(o)
				}
				p.Reuse[i] = append(p.Reuse[i], key)
			}
			m.Outputs[i] = append(m.Outputs[i], o)
			p.Bytes[i] += b
		}
		if len(parts) >= 2 {
			if p.Parts == nil {
				p.Parts = make([][]int64, N)
			}
			p.Parts[i] = parts
			multi = true
		}
		c := cost(n)
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return nil, nil, fmt.Errorf("remat: Lower: the cost model gives node %q (%s) a cost of %v seconds", n.String(), n.OpName(), c)
		}
		p.Seconds[i] = c
		p.Recomputable[i] = n.Recomputable() && !foldable[n]
		p.Names[i] = n.String()
	}
	// producer returns the problem node and part of v, or ok = false when
	// v is available without running anything in g.
	producer := func(v *ir.Value) (Part, bool) {
		if v == nil || v.Def == nil || v.Def.Graph != g {
			return Part{}, false
		}
		i := m.index[v.Def.ID]
		if i < 0 {
			return Part{}, false
		}
		return Part{i, part[v.ID]}, true
	}
	reads := make([][]Part, N)
	for i, n := range m.Nodes {
		var rs []Part
		for _, v := range n.AllInputs() {
			if r, ok := producer(v); ok {
				if int(r.Node) >= i {
					return nil, nil, fmt.Errorf("remat: Lower: node %q reads %q, which node %q produces later: the graph's node order is not topological", n.String(), v.String(), v.Def.String())
				}
				rs = append(rs, r)
			}
		}
		if opts.Reuse && len(rs) > 1 {
			// The order the node reads them, first occurrences.
			order := make([]Part, 0, len(rs))
			for _, r := range rs {
				if !slices.Contains(order, r) {
					order = append(order, r)
				}
			}
			if !slices.IsSortedFunc(order, cmpPart) {
				if p.ReadOrder == nil {
					p.ReadOrder = make([][]Part, N)
				}
				p.ReadOrder[i] = order
			}
		}
		rs = sortParts(rs)
		for k, r := range rs {
			if k == 0 || rs[k-1].Node != r.Node {
				p.Deps[i] = append(p.Deps[i], r.Node)
			}
		}
		reads[i] = rs
	}
	if opts.Reuse {
		p.InPlace = inPlaceParts(m, producer, opts.Shapeless)
		if opts.Aliasing {
			p.View = viewParts(m, producer, size)
		}
	}
	if opts.Workspace != nil {
		p.Workspace = make([]int64, N)
		for i, n := range m.Nodes {
			p.Workspace[i] = opts.Workspace(n)
		}
	}
	if opts.Arena {
		p.Arena = &Arena{}
		if opts.Preamble != nil {
			p.Arena.Preamble = opts.Preamble(g)
		}
		if opts.Prepacked != nil {
			// One buffer per key, for the first node that has it (its
			// other nodes and every recomputation share it).
			p.Arena.Prepacked = make([]int64, N)
			packed := map[any]bool{}
			for i, n := range m.Nodes {
				b, key := opts.Prepacked(n)
				if key != nil {
					if packed[key] {
						continue
					}
					packed[key] = true
				}
				p.Arena.Prepacked[i] = b
			}
		}
		if opts.WorkspaceParts != nil {
			p.Arena.WorkspaceParts = make([][]int64, N)
			for i, n := range m.Nodes {
				p.Arena.WorkspaceParts[i] = opts.WorkspaceParts(n)
			}
		}
		if opts.WorkspaceFirst != nil {
			p.Arena.WorkspaceFirst = make([]bool, N)
			for i, n := range m.Nodes {
				p.Arena.WorkspaceFirst[i] = opts.WorkspaceFirst(n)
			}
		}
	}
	var outParts []Part
	for _, v := range g.Outputs {
		if r, ok := producer(v); ok {
			outParts = append(outParts, r)
		}
	}
	outParts = sortParts(outParts)
	for k, r := range outParts {
		if k == 0 || outParts[k-1].Node != r.Node {
			p.Outputs = append(p.Outputs, r.Node)
		}
	}
	if multi {
		// Record which parts each node reads and which parts are outputs;
		// only the lists that involve a multi-part node differ from the
		// default (every part).
		p.Reads = make([][]Part, N)
		for i, rs := range reads {
			for _, r := range rs {
				if p.NumParts(int(r.Node)) > 1 {
					p.Reads[i] = rs
					if p.Reads[i] == nil {
						p.Reads[i] = []Part{}
					}
					break
				}
			}
		}
		for _, o := range p.Outputs {
			if p.NumParts(int(o)) > 1 {
				p.OutputParts = outParts
				break
			}
		}
	}

	var cb int64
	countConst := func(v *ir.Value) {
		if v != nil && !seen[v.ID] {
			b := size(v)
			seen[v.ID] = true
			if opts.Arena {
				b = memory.ArenaRound(b)
			}
			cb += b
		}
	}
	if opts.CountInputs {
		for _, v := range g.Inputs {
			countConst(v)
		}
	}
	if opts.CountParams {
		for _, v := range g.Params {
			countConst(v)
		}
		if !opts.ConstantNodes {
			for _, n := range g.Nodes {
				if isParamConst(n) {
					for _, o := range n.Outputs {
						countConst(o)
					}
				}
			}
		}
	}
	if len(unknown) > 0 {
		return nil, nil, &memory.SizeError{Values: unknown}
	}
	p.ConstBytes = cb
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("remat: Lower: internal error: %w", err)
	}
	return p, m, nil
}

// ConstantFoldable returns the nodes of g whose every input (and every
// outer-scope value their subgraphs read) is a parameter (an initializer),
// the output of a Constant node, or the output of another such node: the
// nodes ONNX Runtime's ConstantFolding evaluates once when it loads the
// model, from optimization level "basic" up, and replaces by initializers
// (research note ort-execution.md; measured on the zoo's
// transformer_encoder, whose position-embedding Gather of two initializers
// is gone from the optimized graph at "basic"). Constant nodes themselves
// are not listed: Lower makes them parameters, or, under
// LowerOptions.ConstantNodes, ordinary nodes on purpose. Graph inputs and values of enclosing graphs are not constant. Nodes
// whose op is not recomputable (random, stateful) are never included:
// ORT does not fold them and their value is not a function of the
// parameters. g's nodes must be in topological order; a node read before
// its producer counts as not constant.
func ConstantFoldable(g *ir.Graph) map[*ir.Node]bool {
	params := make(map[*ir.Value]bool, len(g.Params))
	for _, v := range g.Params {
		params[v] = true
	}
	out := map[*ir.Node]bool{}
	constant := func(v *ir.Value) bool {
		switch {
		case v == nil:
			return true // an omitted optional input
		case v.Def == nil:
			return params[v] || v.IsConst() && v.Graph == g
		case v.Def.Graph != g:
			return false
		case isConstantNode(v.Def):
			return true
		}
		return out[v.Def]
	}
	for _, n := range g.Nodes {
		if isConstantNode(n) || !n.Recomputable() {
			continue
		}
		all := true
		for _, v := range n.AllInputs() {
			if !constant(v) {
				all = false
				break
			}
		}
		if all {
			out[n] = true
		}
	}
	return out
}

// sortParts sorts a part list and removes repeats.
func sortParts(rs []Part) []Part {
	slices.SortFunc(rs, cmpPart)
	return slices.Compact(rs)
}

func cmpPart(a, b Part) int {
	if a.Node != b.Node {
		return int(a.Node - b.Node)
	}
	return int(a.Index - b.Index)
}

// inPlaceParts lists, per problem node, the part its first output may be
// written over in place under memory.Options.InPlace (Part{−1, −1}: none):
// an ir.InPlace op whose first input, read through that slot only, is a
// problem node's output of the same layout, neither of them shapeless.
func inPlaceParts(m *Mapping, producer func(*ir.Value) (Part, bool), shapeless func(*ir.Value) bool) []Part {
	out := make([]Part, len(m.Nodes))
	for i, n := range m.Nodes {
		out[i] = Part{-1, -1}
		in, o, flagged := firstInOut(n, ir.InPlace)
		if !flagged {
			continue
		}
		r, ok := producer(in)
		if shapeless != nil && (shapeless(in) || shapeless(o)) {
			continue
		}
		if ok && !slices.Contains(n.AllInputs()[1:], in) && memory.SameLayout(in, o) {
			out[i] = r
		}
	}
	return out
}

// viewParts lists, per problem node, the part its first output is a view
// of (Problem.View; Part{−1, −1}: none): an ir.Alias op's first output is
// a view of its first input, a problem node's output of the same bytes or
// a value outside the problem (OutsideView).
func viewParts(m *Mapping, producer func(*ir.Value) (Part, bool), size func(*ir.Value) int64) []Part {
	out := make([]Part, len(m.Nodes))
	for i, n := range m.Nodes {
		out[i] = Part{-1, -1}
		in, o, flagged := firstInOut(n, ir.Alias)
		if !flagged {
			continue
		}
		r, ok := producer(in)
		switch {
		case !ok:
			out[i] = OutsideView
		case size(in) == size(o):
			out[i] = r
		}
	}
	return out
}

// firstInOut returns the first input and the first output of n when its
// op carries flag and both are present: the pair an in-place write or a
// view relates.
func firstInOut(n *ir.Node, flag ir.OpFlags) (in, out *ir.Value, ok bool) {
	info, ins := n.Info(), n.AllInputs()
	if info == nil || info.Flags&flag == 0 || len(n.Outputs) == 0 || n.Outputs[0] == nil || len(ins) == 0 || ins[0] == nil {
		return nil, nil, false
	}
	return ins[0], n.Outputs[0], true
}
