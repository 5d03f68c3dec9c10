package remat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/passes/memory"
)

// NoBudget is the BudgetBytes of a problem without a memory limit.
const NoBudget = math.MaxInt64

// Problem is the fixed-order rematerialization problem of Checkmate
// (Jain et al. 2020) §4.1: N nodes v_0 … v_{N−1} in a topological order
// (a node depends only on nodes before it), each yielding a value of
// Bytes[i] bytes (M_i) at a cost of Seconds[i] (C_i), to be evaluated
// under a memory budget at the least total cost (objective 1a). The
// schedule space is that of the frontier-advancing stages of §4.6.
//
// Every slice indexed by node has length N (Names may be nil). A Problem
// is read-only to solvers.
type Problem struct {
	// Deps[i] lists the nodes whose values node i reads (DEPS[i] of
	// eq. 4), sorted, without repeats, each less than i.
	Deps [][]int32
	// Seconds[i] is the cost C_i of computing node i once, in seconds,
	// from the cost model. Finite and non-negative.
	Seconds []float64
	// Bytes[i] is M_i, the bytes of node i's output: for a node with
	// several outputs, the sum of the present ones (see Parts).
	Bytes []int64
	// Recomputable[i] is false for nodes that must run exactly once:
	// random and stateful ops, control flow containing such ops, and ops
	// the op table does not know (ir.Node.Recomputable).
	Recomputable []bool
	// Outputs lists, sorted and without repeats, the nodes whose values
	// are graph outputs: they must be resident at the end of the last
	// stage.
	Outputs []int32
	// ConstBytes is the constant overhead of eq. (2) (M_input + M_param
	// when counted): added to the memory of every step.
	ConstBytes int64
	// BudgetBytes is M_budget, the bound on the memory of every step,
	// ConstBytes included. NoBudget means none.
	BudgetBytes int64
	// Names[i] names node i in reports and errors; nil or "" gives "#i".
	Names []string
	// Start, when not nil, is a hint: a plan of the same problem at
	// another budget (a budget sweep's previous, looser plan). The search
	// (lns, and auto through it) runs as it would without it, then
	// searches again from the hint repaired to the budget, and keeps the
	// cheaper plan (lns.Options.Start); the other solvers ignore it, as
	// does every solver when it is not a plan of this problem
	// (remat.Evaluate fails on it).
	Start *Plan

	// The optional multi-output refinement (see the package doc). When
	// Parts is nil every node has one output of Bytes[i] bytes.
	//
	// Parts[i], when it has two or more entries, lists the bytes of node
	// i's present outputs in output order; they sum to Bytes[i]. A nil or
	// one-entry Parts[i] is a single part of Bytes[i] bytes.
	Parts [][]int64
	// Reads[i], when not nil, lists (sorted by node, then index, without
	// repeats) the parts of its dependencies that node i reads; the nodes
	// it names are exactly Deps[i]. When Reads or Reads[i] is nil node i
	// reads every part of every dependency.
	Reads [][]Part
	// ReadOrder[i], when not nil, lists the parts node i reads (those of
	// ReadParts) in the order the node reads them: the order in which
	// the ones dying at its step die (see ReuseModel), which decides,
	// under Reuse, which freed buffer a later instance takes and, under
	// Arena, where its chunks lie. When ReadOrder or ReadOrder[i] is nil
	// the order is ReadParts'. The part of InPlace[i] comes first. Lower
	// gives the IR inputs' order, which is the order in which ONNX
	// Runtime's planner frees them.
	ReadOrder [][]Part
	// OutputParts, when not nil, lists (sorted, without repeats) the parts
	// that are graph outputs; the nodes it names are exactly Outputs. When
	// nil every part of every Outputs node is a graph output.
	OutputParts []Part
	// Reuse, when not nil, puts the plan under the buffer reuse of the
	// target runtime's allocator instead of plain liveness: ONNX Runtime's
	// allocation planner (passes/memory, Options.Reuse), which keeps a
	// freed buffer for a later value of the same layout. Reuse[i][k] is
	// the reuse key of part k of node i (one entry per part; parts with
	// the same key have the same bytes), -1 for a part that never takes a
	// freed buffer. See ReuseModel for the semantics. The memory of a plan
	// under Reuse is at least its liveness memory at every step, so every
	// liveness bound stays a bound.
	Reuse [][]int32
	// InPlace, when not nil (with Reuse only), lists for each node the
	// part its first part may be written over (Node −1: none): ONNX
	// Runtime's in-place write of a unary op (passes/memory,
	// Options.InPlace). The part is one the node reads, of the same bytes
	// and key; the write happens when that instance dies at the node's
	// step (see ReuseModel).
	InPlace []Part
	// View, when not nil (with Reuse only), lists for each node the part
	// its first part is a view of (Node −1: none): ONNX Runtime's
	// Reshape, Flatten, Squeeze, Unsqueeze and Identity, whose output
	// shares its input's buffer (passes/memory, Options.Aliasing). The
	// part is one the node reads, of the same bytes, or OutsideView: a
	// view of a graph input or parameter, which takes no bytes. A view's
	// instance gets no buffer of its own: it is placed in the buffer of
	// the instance it views, which stays allocated until every instance
	// placed in it has died (so a resident view keeps the bytes of the
	// part it views resident, even after that part is freed). The last
	// instance of a graph-output part is the exception: it gets a buffer
	// of its own (the runtime hands it to the caller). A node is not both
	// a view and an in-place write.
	View []Part
	// Workspace, when not nil, gives each node's transient kernel scratch
	// bytes (MONeT's c_i; ONNX Runtime's im2col buffer of a Conv), held
	// while the node runs: they add to the memory of its own step only.
	Workspace []int64
	// Arena, when not nil, counts the plan's memory as ONNX Runtime's BFC
	// arena hands it out (passes/memory, Options.Arena, with buffers
	// aligned to memory.ArenaAlign): the buffers' allocations and releases
	// are replayed in order, and each counts as the chunk it gets, which
	// can be larger than the request (a free chunk is split only when it
	// is at least twice the request). On the zoo U-Net's training graph
	// (64², batch 4) a plan of 2,511,172 bytes under Reuse takes 2,662,912
	// in the arena. The arena's memory is at least the buffers' at every
	// step, so Relaxed and Liveness drop it.
	Arena *Arena
}

// Arena is what the arena replay of a plan needs besides its buffers
// (Problem.Arena).
type Arena struct {
	// Prepacked, when not nil, gives per node the bytes its kernel copies
	// its constant weights into when the session is created, once for the
	// node (its recomputations read the same weights and share the copy),
	// before the first step and never released (memory.Options.Prepacked:
	// ONNX Runtime's ConvTranspose filter; nodes that share a weight with an
	// earlier node have 0).
	Prepacked []int64
	// Preamble lists the arena requests made before the first step, after
	// the prepacked weights, by nodes outside the problem
	// (memory.Options.Preamble: the hidden inputs' shapes ONNX Runtime
	// computes first in a graph written with its shapes hidden).
	Preamble []memory.ArenaRequest
	// WorkspaceParts, when not nil, splits a node's Workspace into the
	// separate allocations its kernel makes, in order (nil or empty: one
	// allocation; memory.Options.WorkspaceParts).
	WorkspaceParts [][]int64
	// WorkspaceFirst, when not nil, marks the nodes whose kernels
	// allocate their workspace before their outputs
	// (memory.Options.WorkspaceFirst).
	WorkspaceFirst []bool
}

// Part is one output of a node: Index counts the node's present outputs.
type Part struct {
	Node, Index int32
}

// OutsideView is the Problem.View entry of a view of a value outside the
// problem: a graph input or parameter.
var OutsideView = Part{-2, 0}

// N is the number of nodes.
func (p *Problem) N() int { return len(p.Deps) }

// Name returns node i's name for messages: Names[i], or "#i".
func (p *Problem) Name(i int) string {
	if i >= 0 && i < len(p.Names) && p.Names[i] != "" {
		return p.Names[i]
	}
	return "#" + strconv.Itoa(i)
}

// NumParts is the number of outputs node i has in the memory model: 1
// unless Parts refines it.
func (p *Problem) NumParts(i int) int {
	if i < len(p.Parts) && len(p.Parts[i]) >= 2 {
		return len(p.Parts[i])
	}
	return 1
}

// PartBytes is the size of part k of node i.
func (p *Problem) PartBytes(i, k int) int64 {
	if i < len(p.Parts) && len(p.Parts[i]) >= 2 {
		return p.Parts[i][k]
	}
	return p.Bytes[i]
}

// ReadParts calls fn for every part that node i reads, in order.
func (p *Problem) ReadParts(i int, fn func(Part)) {
	if i < len(p.Reads) && p.Reads[i] != nil {
		for _, r := range p.Reads[i] {
			fn(r)
		}
		return
	}
	for _, d := range p.Deps[i] {
		for k := range p.NumParts(int(d)) {
			fn(Part{d, int32(k)})
		}
	}
}

// ReadPartsInOrder calls fn for each part node i reads, in the order it
// reads them (ReadOrder, or ReadParts').
func (p *Problem) ReadPartsInOrder(i int, fn func(Part)) {
	if i < len(p.ReadOrder) && p.ReadOrder[i] != nil {
		for _, r := range p.ReadOrder[i] {
			fn(r)
		}
		return
	}
	p.ReadParts(i, fn)
}

// OutputPartList returns the parts that are graph outputs, sorted.
func (p *Problem) OutputPartList() []Part {
	if p.OutputParts != nil {
		return p.OutputParts
	}
	var out []Part
	for _, o := range p.Outputs {
		for k := range p.NumParts(int(o)) {
			out = append(out, Part{o, int32(k)})
		}
	}
	return out
}

// ReuseModel documents the memory of a plan when Problem.Reuse is set,
// the model of ONNX Runtime's allocation planner (sequential execution,
// memory pattern off) that passes/memory implements for IR graphs.
//
// Every computation creates a new instance of each part, as under
// liveness, and places it in a buffer. When an instance dies (after its
// last reader; right after its own step when nothing reads it), its
// buffer goes onto its key's free list; a later instance of the same key
// takes the most recently freed buffer on the list instead of a new one
// (the outputs of a step in part order, before the step's deaths; the
// deaths of a step in the order its node reads them, then its unread
// outputs). A buffer is allocated from its first instance to the last
// step that reads any instance placed in it: so a freed buffer that a
// later instance takes stays allocated in between, one that nothing
// takes is released at its death. An instance nothing reads keeps its
// buffer to the end of the sequence unless a later instance takes it and
// is read (the planner plans no release for a buffer that nothing reads).
// The last instance of a graph-output part gets a buffer of its own and
// keeps it to the end; parts of key -1 never take a listed buffer. A node
// with an InPlace part whose instance dies at the node's step writes its
// first part into that instance's buffer instead (before it looks at the
// free list), which then passes to the new instance without a gap.
//
// A recomputation therefore saves memory only where no value of its
// layout takes its freed buffer across the peak: dropping a forward
// activation whose layout recurs only in the backward pass frees nothing
// under this model, while liveness counts it freed.
const ReuseModel = "reuse"

// Liveness returns p without Reuse: the same plans under plain liveness,
// whose memory is at most p's at every step without InPlace and View
// (with them, Relaxed is the relaxation).
func (p *Problem) Liveness() *Problem {
	if p.Reuse == nil {
		return p
	}
	q := *p
	q.Reuse, q.InPlace, q.View, q.Workspace, q.Arena = nil, nil, nil, nil, nil
	return &q
}

// Relaxed returns a problem without Reuse whose memory is at most p's at
// every step of every plan, so that what is proven on it (no plan fits
// the budget, a lower bound on the cost, a plan optimal on it that fits
// p) holds for p: p under plain liveness, which counts a freed buffer no
// longer than the planner holds it, without Workspace, and with the first
// part of every node that may write in place (InPlace) or is a view
// (View) counted as 0 bytes: liveness counts an in-place write and the
// part it overwrites twice at the writing step, where p counts one
// buffer, and a view's bytes are those of the buffer it views, which p
// holds at least as long as liveness holds the viewed part. Without Reuse
// it is p.
func (p *Problem) Relaxed() *Problem {
	if p.Reuse == nil {
		return p
	}
	q := p.Liveness()
	if p.InPlace == nil && p.View == nil {
		return q
	}
	q.Bytes = slices.Clone(p.Bytes)
	if p.Parts != nil {
		q.Parts = slices.Clone(p.Parts)
	}
	for i := range p.N() {
		if !p.SharesBuffer(i) {
			continue
		}
		b := p.PartBytes(i, 0)
		q.Bytes[i] -= b
		if p.NumParts(i) >= 2 {
			q.Parts[i] = slices.Clone(p.Parts[i])
			q.Parts[i][0] = 0
		}
	}
	return q
}

// SharesBuffer reports whether node i's first part may be placed in the
// buffer of a part it reads or of an outside value instead of one of its
// own: an in-place write (InPlace) or a view (View).
func (p *Problem) SharesBuffer(i int) bool {
	return p.InPlace != nil && p.InPlace[i].Node >= 0 || p.View != nil && p.View[i].Node != -1
}

// Refined reports whether the problem uses the multi-output refinement.
func (p *Problem) Refined() bool {
	return p.Parts != nil || p.Reads != nil || p.OutputParts != nil
}

// Coarse returns a copy of p without the multi-output refinement: every
// node one allocation of Bytes[i] that lives until the last read of any of
// its outputs. It is what a solver that ignores Parts optimises.
func (p *Problem) Coarse() *Problem {
	q := *p
	q.Parts, q.Reads, q.ReadOrder, q.OutputParts, q.Reuse, q.InPlace, q.View, q.Workspace, q.Arena = nil, nil, nil, nil, nil, nil, nil, nil, nil
	return &q
}

// MaxBytes bounds the bytes of a problem (ConstBytes and every node's
// bytes together, Problem.Validate): the memory model replays plans as IR
// values, whose sizes ir.DType.StorageBytes holds up to 2^62 bits.
const MaxBytes = 1 << 59

// LowerBoundSeconds is the sum of all compute costs: every plan computes
// every node at least once (8a), so no plan costs less.
func (p *Problem) LowerBoundSeconds() float64 {
	s := 0.0
	for _, c := range p.Seconds {
		s += c
	}
	return s
}

// Validate checks the problem's invariants and returns every violation
// found (up to 20), joined.
func (p *Problem) Validate() error {
	var errs []error
	add := func(format string, args ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf("remat: problem: "+format, args...))
		}
	}
	n := len(p.Deps)
	if len(p.Seconds) != n || len(p.Bytes) != n || len(p.Recomputable) != n {
		add("Deps, Seconds, Bytes and Recomputable have lengths %d, %d, %d and %d; want all equal",
			n, len(p.Seconds), len(p.Bytes), len(p.Recomputable))
		return errors.Join(errs...)
	}
	if p.Names != nil && len(p.Names) != n {
		add("Names has %d entries for %d nodes", len(p.Names), n)
	}
	if n > math.MaxInt32 {
		add("%d nodes is more than the int32 node numbers hold", n)
		return errors.Join(errs...)
	}
	if p.ConstBytes < 0 {
		add("ConstBytes %d is negative", p.ConstBytes)
	}
	if p.BudgetBytes < 0 {
		add("BudgetBytes %d is negative", p.BudgetBytes)
	}
	total := max(p.ConstBytes, 0)
	for i := range n {
		for k, d := range p.Deps[i] {
			switch {
			case d < 0 || int(d) >= i:
				add("node %s (%d) depends on node %d, which is not before it in the order", p.Name(i), i, d)
			case k > 0 && d <= p.Deps[i][k-1]:
				add("Deps[%d] is not sorted without repeats: %v", i, p.Deps[i])
			}
		}
		if c := p.Seconds[i]; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			add("node %s (%d) costs %v seconds; want a finite, non-negative cost", p.Name(i), i, c)
		}
		if b := p.Bytes[i]; b < 0 {
			add("node %s (%d) has %d bytes", p.Name(i), i, b)
		} else if total > MaxBytes-b {
			add("the bytes of all nodes and ConstBytes exceed %d (2^59), the most the memory model represents", int64(MaxBytes))
		} else {
			total += b
		}
	}
	for k, o := range p.Outputs {
		switch {
		case o < 0 || int(o) >= n:
			add("output %d is not a node", o)
		case k > 0 && o <= p.Outputs[k-1]:
			add("Outputs is not sorted without repeats: %v", p.Outputs)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	p.validateParts(add)
	return errors.Join(errs...)
}

func (p *Problem) validateParts(add func(string, ...any)) {
	n := len(p.Deps)
	if p.Parts != nil {
		if len(p.Parts) != n {
			add("Parts has %d entries for %d nodes", len(p.Parts), n)
			return
		}
		for i, ps := range p.Parts {
			if len(ps) < 2 {
				continue
			}
			var sum int64
			for _, b := range ps {
				if b < 0 {
					add("node %s (%d) has a part of %d bytes", p.Name(i), i, b)
				}
				sum += b
			}
			if sum != p.Bytes[i] {
				add("the parts of node %s (%d) sum to %d bytes, not Bytes %d", p.Name(i), i, sum, p.Bytes[i])
			}
		}
	}
	validPart := func(r Part) bool {
		return r.Node >= 0 && int(r.Node) < n && r.Index >= 0 && int(r.Index) < p.NumParts(int(r.Node))
	}
	less := func(a, b Part) bool { return a.Node < b.Node || a.Node == b.Node && a.Index < b.Index }
	// nodesOf checks that a sorted part list names exactly the nodes want.
	nodesOf := func(what string, list []Part, want []int32) {
		var nodes []int32
		for k, r := range list {
			if !validPart(r) {
				add("%s names part %d of node %d, which does not exist", what, r.Index, r.Node)
				return
			}
			if k > 0 && !less(list[k-1], r) {
				add("%s is not sorted without repeats", what)
				return
			}
			if len(nodes) == 0 || nodes[len(nodes)-1] != r.Node {
				nodes = append(nodes, r.Node)
			}
		}
		if !slices.Equal(nodes, want) && !(len(nodes) == 0 && len(want) == 0) {
			add("%s names nodes %v; want exactly %v", what, nodes, want)
		}
	}
	if p.Reads != nil {
		if len(p.Reads) != n {
			add("Reads has %d entries for %d nodes", len(p.Reads), n)
			return
		}
		for i, rs := range p.Reads {
			if rs != nil {
				nodesOf(fmt.Sprintf("Reads[%d]", i), rs, p.Deps[i])
			}
		}
	}
	if p.OutputParts != nil {
		nodesOf("OutputParts", p.OutputParts, p.Outputs)
	}
	if p.ReadOrder != nil {
		if len(p.ReadOrder) != n {
			add("ReadOrder has %d entries for %d nodes", len(p.ReadOrder), n)
			return
		}
		for i, rs := range p.ReadOrder {
			if rs == nil {
				continue
			}
			var want []Part
			p.ReadParts(i, func(r Part) { want = append(want, r) })
			if got := sortParts(slices.Clone(rs)); !slices.Equal(got, want) || len(got) != len(rs) {
				add("ReadOrder[%d] %v is not an order of the parts node %d reads, %v", i, rs, i, want)
			}
			if len(p.InPlace) == n && p.InPlace[i].Node >= 0 && len(rs) > 0 && rs[0] != p.InPlace[i] {
				add("ReadOrder[%d] %v does not start with the part node %d writes over in place, %v", i, rs, i, p.InPlace[i])
			}
			if len(p.View) == n && p.View[i].Node >= 0 && len(rs) > 0 && rs[0] != p.View[i] {
				add("ReadOrder[%d] %v does not start with the part node %d is a view of, %v", i, rs, i, p.View[i])
			}
		}
	}
	switch {
	case p.Reuse != nil:
		p.validateReuse(add)
	case p.InPlace != nil:
		add("InPlace is set without Reuse")
	case p.View != nil:
		add("View is set without Reuse")
	}
	if p.Arena != nil {
		p.validateArena(add)
	}
	if p.Workspace != nil {
		p.validateBytes(add, "Workspace", p.Workspace)
	}
}

// validateBytes checks a list of bytes per node: one entry per node, none
// negative.
func (p *Problem) validateBytes(add func(string, ...any), what string, bytes []int64) {
	if len(bytes) != p.N() {
		add("%s has %d entries for %d nodes", what, len(bytes), p.N())
	}
	for i, b := range bytes {
		if b < 0 {
			add("%s of node %s (%d) is %d bytes", what, p.Name(i), i, b)
		}
	}
}

func (p *Problem) validateArena(add func(string, ...any)) {
	a, n := p.Arena, p.N()
	if a.Prepacked != nil {
		p.validateBytes(add, "Arena.Prepacked", a.Prepacked)
	}
	if err := memory.CheckPreamble(a.Preamble); err != nil {
		add("Arena.Preamble: %v", err)
	}
	if a.WorkspaceParts != nil {
		if len(a.WorkspaceParts) != n {
			add("Arena.WorkspaceParts has %d entries for %d nodes", len(a.WorkspaceParts), n)
		}
		for i, ps := range a.WorkspaceParts {
			for _, b := range ps {
				if b <= 0 {
					add("node %s (%d) has a workspace part of %d bytes", p.Name(i), i, b)
				}
			}
		}
	}
	if a.WorkspaceFirst != nil && len(a.WorkspaceFirst) != n {
		add("Arena.WorkspaceFirst has %d entries for %d nodes", len(a.WorkspaceFirst), n)
	}
}

func (p *Problem) validateReuse(add func(string, ...any)) {
	if len(p.Reuse) != len(p.Deps) {
		add("Reuse has %d entries for %d nodes", len(p.Reuse), len(p.Deps))
		return
	}
	keyBytes := map[int32]int64{}
	for i, ks := range p.Reuse {
		if len(ks) != p.NumParts(i) {
			add("Reuse[%d] has %d keys for the %d part(s) of node %s", i, len(ks), p.NumParts(i), p.Name(i))
			continue
		}
		for k, key := range ks {
			if key < -1 {
				add("Reuse[%d][%d] is %d; want a key ≥ 0, or -1 for none", i, k, key)
				continue
			}
			if key < 0 {
				continue
			}
			b := p.PartBytes(i, k)
			if have, ok := keyBytes[key]; ok && have != b {
				add("reuse key %d has parts of %d and %d bytes (part %d of node %s); parts of one key must have the same bytes", key, have, b, k, p.Name(i))
			}
			keyBytes[key] = b
		}
	}
	p.validateView(add)
	if p.InPlace == nil {
		return
	}
	if len(p.InPlace) != len(p.Deps) {
		add("InPlace has %d entries for %d nodes", len(p.InPlace), len(p.Deps))
		return
	}
	for i, r := range p.InPlace {
		if r.Node < 0 {
			continue
		}
		switch {
		case !p.readsPart(i, r):
			add("InPlace[%d] names part %d of node %d, which node %s does not read", i, r.Index, r.Node, p.Name(i))
		case p.PartBytes(int(r.Node), int(r.Index)) != p.PartBytes(i, 0) || p.Reuse[r.Node][r.Index] != p.Reuse[i][0]:
			add("node %s writes in place over part %d of node %s, of other bytes or another reuse key", p.Name(i), r.Index, p.Name(int(r.Node)))
		}
	}
}

func (p *Problem) validateView(add func(string, ...any)) {
	if p.View == nil {
		return
	}
	if len(p.View) != len(p.Deps) {
		add("View has %d entries for %d nodes", len(p.View), len(p.Deps))
		return
	}
	for i, r := range p.View {
		switch {
		case r.Node == -1 || r == OutsideView:
			continue
		case p.InPlace != nil && len(p.InPlace) == len(p.Deps) && p.InPlace[i].Node >= 0:
			add("node %s is both a view and an in-place write", p.Name(i))
			continue
		}
		switch {
		case !p.readsPart(i, r):
			add("View[%d] names part %d of node %d, which node %s does not read", i, r.Index, r.Node, p.Name(i))
		case p.PartBytes(int(r.Node), int(r.Index)) != p.PartBytes(i, 0):
			add("node %s is a view of part %d of node %s, of other bytes", p.Name(i), r.Index, p.Name(int(r.Node)))
		}
	}
}

// readsPart reports whether node i reads part r.
func (p *Problem) readsPart(i int, r Part) bool {
	reads := false
	p.ReadParts(i, func(q Part) { reads = reads || q == r })
	return reads
}
