package order

import (
	"math/bits"
	"slices"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// problem is a graph's nodes as a scheduling problem under the downset
// objective (see the package doc): dense node and value indices,
// dependencies, and the buffer classes of the memory model.
type problem struct {
	g *ir.Graph
	// pre are the nodes that allocate nothing under the options (Constant
	// nodes under ConstantsAsParams); they run first, in file order, and
	// are not scheduled.
	pre []*ir.Node
	// nodes are the scheduled nodes in file order; pos is the index of a
	// node by ID (-1 for nodes that are not scheduled).
	nodes []*ir.Node
	pos   map[*ir.Node]int32
	// preds and succs are the dependencies among scheduled nodes: data
	// (explicit and implicit inputs) and the file order among nodes that
	// are not recomputable (random, stateful or unknown ops keep their
	// relative order).
	preds, succs [][]int32
	// ws is each node's workspace under the options.
	ws []int64
	// ins are the distinct values each node reads (value indices; values
	// from outside the scheduled nodes are left out), outs the values it
	// writes.
	ins, outs [][]int32
	// inplace[v] is the value index of node v's first input when v may
	// write its first output over it (every condition of the memory model
	// that does not depend on the order holds), else -1.
	inplace []int32

	// Values produced by scheduled nodes.
	vbytes []int64   // aligned bytes
	vdef   []int32   // producing node
	vcons  [][]int32 // distinct reading nodes
	vkept  []bool    // a graph output held to the end
	vview  []bool    // a view: placed in its input's class, allocates nothing
	vclass []int32   // buffer class, -1 a view of a value from outside

	// Buffer classes: a value that gets its own buffer and the views of it
	// (transitively). A class is allocated while any member that has been
	// produced still has a reader to come or is kept.
	cbytes   []int64
	cmembers [][]int32

	// seqPoint marks the sequence points (segments sets it).
	seqPoint []bool

	constBytes int64 // inputs and parameters counted by the options
	preWS      int64 // the largest workspace among pre nodes
}

// newProblem builds the problem of g's nodes under opts. It assumes every
// size is known (Best checks with memory.Simulate first).
func newProblem(g *ir.Graph, opts memory.Options, constBytes int64) *problem {
	p := &problem{g: g, pos: make(map[*ir.Node]int32, len(g.Nodes)), constBytes: constBytes}
	isConst := func(n *ir.Node) bool {
		return opts.ConstantsAsParams && n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx")
	}
	for _, n := range g.Nodes {
		if isConst(n) {
			p.pre = append(p.pre, n)
			if opts.Workspace != nil {
				p.preWS = max(p.preWS, opts.Workspace(n))
			}
			continue
		}
		p.pos[n] = int32(len(p.nodes))
		p.nodes = append(p.nodes, n)
	}
	m := len(p.nodes)
	p.ws = make([]int64, m)
	p.ins = make([][]int32, m)
	p.outs = make([][]int32, m)
	p.inplace = make([]int32, m)

	val := map[*ir.Value]int32{}
	kept := map[*ir.Value]bool{}
	if !opts.FreeOutputs {
		for _, o := range g.Outputs {
			kept[o] = true
		}
	}
	for i, n := range p.nodes {
		for _, o := range n.Outputs {
			if o == nil {
				continue
			}
			id := int32(len(p.vbytes))
			val[o] = id
			b, _ := o.Type.Bytes()
			if a := opts.AlignBytes; a > 1 {
				b = (b + a - 1) / a * a
			}
			p.vbytes = append(p.vbytes, b)
			p.vdef = append(p.vdef, int32(i))
			p.vkept = append(p.vkept, kept[o])
			p.outs[i] = append(p.outs[i], id)
		}
	}
	nv := len(p.vbytes)
	p.vcons = make([][]int32, nv)
	p.vview = make([]bool, nv)
	p.vclass = make([]int32, nv)

	p.preds, p.succs = dependencies(p.nodes)
	for i, n := range p.nodes {
		vi := int32(i)
		if opts.Workspace != nil {
			p.ws[i] = opts.Workspace(n)
		}
		all := n.AllInputs()
		for _, v := range all {
			id, ok := val[v]
			if !ok || slices.Contains(p.ins[i], id) {
				continue
			}
			p.ins[i] = append(p.ins[i], id)
			p.vcons[id] = append(p.vcons[id], vi)
		}

		// Buffer classes and in-place candidates, as memory.Simulate
		// decides them (memory.go, layout): only output 0 of an Alias or
		// InPlace op, never a kept output.
		info := n.Info()
		p.inplace[i] = -1
		for j, o := range n.Outputs {
			if o == nil {
				continue
			}
			id := val[o]
			p.vclass[id] = int32(len(p.cbytes))
			isView := false
			if j == 0 && !p.vkept[id] && len(all) > 0 && info != nil && all[0] != nil {
				in, produced := val[all[0]]
				switch {
				case opts.Aliasing && info.Flags&ir.Alias != 0:
					isView = true
					p.vview[id] = true
					p.vclass[id] = -1
					if produced {
						p.vclass[id] = p.vclass[in]
					}
				case opts.InPlace && info.Flags&ir.InPlace != 0 && produced && p.vclass[in] >= 0 &&
					!p.vkept[in] && countOf(all, all[0]) == 1 && memory.SameLayout(all[0], o):
					p.inplace[i] = in
				}
			}
			if isView {
				if c := p.vclass[id]; c >= 0 {
					p.cmembers[c] = append(p.cmembers[c], id)
				}
				continue
			}
			p.cbytes = append(p.cbytes, p.vbytes[id])
			p.cmembers = append(p.cmembers, []int32{id})
		}
	}
	return p
}

func countOf(vs []*ir.Value, v *ir.Value) int {
	c := 0
	for _, x := range vs {
		if x == v {
			c++
		}
	}
	return c
}

// set is a set of scheduled nodes as a bitset over a window of positions
// [base, base+64·len(words)): nodes before base count as done, nodes after
// the window as not done.
type set struct {
	base  int32
	limit int32 // first position after the window
	words []uint64
}

func (s *set) has(v int32) bool {
	if v < s.base {
		return true
	}
	if v >= s.limit {
		return false
	}
	i := v - s.base
	return s.words[i>>6]&(1<<(i&63)) != 0
}

func (s *set) add(v int32) {
	i := v - s.base
	s.words[i>>6] |= 1 << (i & 63)
}

func (s *set) count() int {
	c := 0
	for _, w := range s.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// memberLive reports whether value m holds its class's buffer once the
// nodes of s are done: it has been produced and is kept or has a reader
// still to run.
func (p *problem) memberLive(s *set, m int32) bool {
	if !s.has(p.vdef[m]) {
		return false
	}
	if p.vkept[m] {
		return true
	}
	for _, c := range p.vcons[m] {
		if !s.has(c) {
			return true
		}
	}
	return false
}

// classLive reports whether class c is allocated once the nodes of s are
// done.
func (p *problem) classLive(s *set, c int32) bool {
	for _, m := range p.cmembers[c] {
		if p.memberLive(s, m) {
			return true
		}
	}
	return false
}

// step returns the bytes in use while node v runs after the nodes of s
// (live is the bytes allocated once s is done, without the constant term)
// and once its releases are done: memory.Simulate's During and After of
// that step without planner reuse, arena and holds. s must not contain v;
// it is left unchanged.
func (p *problem) step(s *set, v int32, live int64) (during, after int64) {
	// In place: the input dies here (every other reader done) and is the
	// only live member of its class.
	inPlace := false
	if x := p.inplace[v]; x >= 0 {
		inPlace = true
		for _, c := range p.vcons[x] {
			if c != v && !s.has(c) {
				inPlace = false
				break
			}
		}
		if inPlace {
			for _, m := range p.cmembers[p.vclass[x]] {
				if m != x && p.memberLive(s, m) {
					inPlace = false
					break
				}
			}
		}
	}
	during, after = live+p.ws[v], live
	for k, o := range p.outs[v] {
		if p.vview[o] {
			continue
		}
		if !(inPlace && k == 0) {
			during += p.vbytes[o]
		}
		if p.vkept[o] || len(p.vcons[o]) > 0 {
			after += p.vbytes[o]
		}
	}
	// Classes of the inputs that die with this step. v is counted as done
	// by adding it to s for the check and removing it after.
	i := v - s.base
	in := v >= s.base && v < s.limit
	if in {
		s.words[i>>6] |= 1 << (i & 63)
	}
	var buf [8]int32
	checked := buf[:0]
	for _, x := range p.ins[v] {
		c := p.vclass[x]
		if c < 0 || slices.Contains(checked, c) {
			continue
		}
		checked = append(checked, c)
		if !p.classLive(s, c) {
			after -= p.cbytes[c]
		}
	}
	if in {
		s.words[i>>6] &^= 1 << (i & 63)
	}
	return during, after
}

// dependencies returns the predecessors and successors, by index, of each
// of nodes (one graph's nodes in a topological order): the producers among
// nodes of its inputs, explicit and implicit (what its subgraphs capture),
// and, for a node that is not recomputable (a random, stateful or unknown
// op), the previous such node, so that those keep their relative order.
func dependencies(nodes []*ir.Node) (preds, succs [][]int32) {
	idx := make(map[*ir.Node]int32, len(nodes))
	for i, n := range nodes {
		idx[n] = int32(i)
	}
	preds = make([][]int32, len(nodes))
	succs = make([][]int32, len(nodes))
	add := func(from, to int32) {
		if !slices.Contains(preds[to], from) {
			preds[to] = append(preds[to], from)
			succs[from] = append(succs[from], to)
		}
	}
	fixed := int32(-1)
	for i, n := range nodes {
		for _, v := range n.AllInputs() {
			if v == nil || v.Def == nil {
				continue
			}
			if j, ok := idx[v.Def]; ok {
				add(j, int32(i))
			}
		}
		if !n.Recomputable() {
			if fixed >= 0 {
				add(fixed, int32(i))
			}
			fixed = int32(i)
		}
	}
	return preds, succs
}
