// Package memory is remat-compile's one memory model: given a graph and an
// execution sequence of its nodes (repeats allowed), it computes the bytes
// in use before, during and after every step and the peak.
//
// # Definition
//
// A step runs one node. Running it places each present output in a buffer:
// a new one (its size rounded up to Options.AlignBytes), or, under the
// switches below, a buffer that already exists. The bytes in use while the
// step runs (During), its working set together with everything else held,
// are the bytes of every buffer allocated and not yet released, plus the
// node's transient workspace (Options.Workspace), which is counted in
// During only; After is the bytes in use once the step's releases are
// done.
//
// A value instance dies after the last step that reads it; an output that
// nothing reads dies at its own step. A value produced again later (a
// recomputation) is a new instance: readers read the most recent instance,
// and each instance dies after its own last reader. Graph outputs are kept
// to the end of the sequence and always get a buffer of their own, never a
// view or a reused one: the runtime hands them to the caller
// (Options.FreeOutputs makes them ordinary values instead). Graph inputs
// and parameters are never freed; they form a constant term that is
// counted only when Options.CountInputs / CountParams say so. With
// Options.ConstantsAsParams the outputs of Constant nodes are parameters
// too (ONNX Runtime turns Constant nodes into initializers when it loads a
// model, so they never run).
//
// Buffers, not values, hold bytes; a buffer is released when the last
// instance placed in it dies (but see Reuse). With Options.Aliasing, an op
// flagged ir.Alias (Reshape, Squeeze, Unsqueeze, Flatten, Identity) places
// its output in its first input's buffer (a view; no bytes when that input
// is a graph input or parameter). With Options.InPlace, an op flagged
// ir.InPlace (unary activations, Clip, Cast, Softmax, …) writes its output
// over its first input's buffer when that input instance dies at this step,
// no other live instance shares the buffer, the node reads it through one
// input slot only, and the input and output have the same element size and
// the same shape.
//
// With Options.Reuse the model follows ONNX Runtime's allocation planner
// (allocation_planner.cc, sequential execution, arena on, memory pattern
// off): a buffer whose instances have all died goes onto a free list
// instead of back to the allocator; a later output that gets no view or
// in-place buffer takes the most recently freed listed buffer that was
// first allocated for a value of the same element size and the same shape
// (scalars never do). The buffer is released only after the last step that
// reads any instance placed in it, and never if nothing reads them: so a
// buffer waiting on the free list for a later taker stays allocated in
// between, and an output nothing reads stays allocated to the end of the
// sequence unless a later output takes its buffer. Without Reuse every
// buffer is released right after its last instance dies.
//
// With Options.Arena the buffers' allocations and releases are replayed, in
// order, through a model of ONNX Runtime's BFC arena (arena.go): at each
// step its new buffers in output order, then its workspace, released at
// once, then the buffers released after the step. Each buffer, and the
// workspace, then counts as the chunk the arena hands out for it, which is
// a multiple of 256 bytes and can be larger than the request (a chunk is
// split only when it is at least twice the request). A node with subgraphs
// (If, Loop, Scan) runs them in the same arena, in their file order, in
// place of its workspace: an If the branch that peaks higher, a loop body
// once; the subgraph's outputs are the node's outputs.
//
// A target package owns its preset: targets/ort.Memory returns the
// switches, alignment, workspace and prepacked weights that predict ONNX
// Runtime 1.30's CPU arena, and its doc records the measurements behind
// each rule; targets/tfjs.Memory does the same for TensorFlow.js.
// internal/memcheck compares the model with ORT on every zoo model and the
// real models of the manifest.
//
// # Relation to the papers
//
// Checkmate (Jain et al. 2020) §4.4, eq. (2)–(3), tracks U_{t,k}, the memory
// in use after evaluating node k in stage t: U_{t,0} is the constant
// overhead plus the retained checkpoints, U_{t,k+1} adds the output of node
// k+1 and subtracts the values FREE_{t,i,k} freed after it. The budget
// constraint bounds U_{t,k} at the moment of computing, i.e. before the
// frees of step k, which is our During. MOCCASIN (Bartan et al. 2023)
// App. A.3 defines the peak of a sequence the same way, as the maximum over
// steps of the live sizes with the step's outputs included. Kumar et al.
// (2019) §2.1 count a node's inputs and outputs as live while it runs, which
// is also During. The zero Options is exactly that shared definition. ORT's preset
// keeps its structure (During = everything allocated and not yet released,
// including the step's outputs; releases after the step) and changes what
// is allocated and when it is released, because the model must predict
// what ONNX Runtime allocates: buffers instead of values (views and
// in-place reuse cost no new memory), graph outputs pinned to the end (the
// runtime hands them to the caller), buffers held on the planner's free
// list counted until their release (eq. 3's FREE comes later than the last
// use for them), sizes as the arena's chunks (eq. 2's output size becomes
// the chunk size), and a per-node workspace term (kernel scratch memory,
// MONeT's c_i, which Checkmate's eq. 2 lacks).
package memory

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// Options select the model's switches. The zero value is the plain
// liveness model of the papers; the targets' presets (targets/ort.Memory,
// targets/tfjs.Memory) set the switches that predict their allocators.
type Options struct {
	CountInputs bool // add graph inputs to every step's bytes
	CountParams bool // add parameters (initializers) to every step's bytes
	FreeOutputs bool // free graph outputs after their last reader instead of keeping them
	Aliasing    bool // Alias ops are views of their input
	InPlace     bool // InPlace ops reuse a dying input buffer of the same size
	// Reuse follows ONNX Runtime's allocation planner: dead buffers wait on
	// a free list for a later output of the same element size and shape,
	// and stay allocated until the last read of anything placed in them.
	Reuse bool
	// ReuseKey, when set, replaces Reuse's key (element size and static
	// shape, LayoutKey) for every output: outputs with the same key ≥ 0
	// may take each other's buffers, a negative key never takes one. A
	// model without IR shapes (remat's problems) states the planner's
	// keys this way.
	ReuseKey func(v *ir.Value) int64
	// Shapeless, when set, names the values that the runtime's planner
	// sees without a complete static shape (ONNX Runtime: no value_info,
	// and its shape inference cannot compute every dimension; see
	// exporters/onnx Options.HideShapes). The planner plans reuse and
	// in-place writes only by comparing static shapes, so under Reuse
	// such a value never takes a freed buffer and its own buffer, once
	// free, is taken by nothing (as with a negative ReuseKey), and under
	// InPlace it is never written over in place, nor written in place
	// over its input.
	Shapeless func(v *ir.Value) bool
	// InPlaceOp, when set, replaces the op table's ir.InPlace flag under
	// InPlace: whether node n may write its first output over its first
	// input (a model without an op table, remat's problems, states it).
	InPlaceOp func(n *ir.Node) bool
	// AliasOp, when set, replaces the op table's ir.Alias flag under
	// Aliasing: whether node n's first output is a view of its first
	// input (remat's problems state it: remat.Problem.View).
	AliasOp func(n *ir.Node) bool
	// ConstantsAsParams treats the outputs of Constant nodes as parameters:
	// Constant steps allocate nothing and their outputs are never freed
	// (counted under CountParams).
	ConstantsAsParams bool
	// AlignBytes rounds every buffer up to a multiple of it (0 or 1: none).
	AlignBytes int64
	// Workspace, when set, gives a node's transient scratch bytes while it
	// runs; they are counted in During only.
	Workspace func(n *ir.Node) int64
	// WorkspaceParts, when set, splits a node's workspace into the
	// separate allocations its kernel makes, in order (nil or empty: one
	// allocation of Workspace's bytes). Only Arena uses them: each part is
	// its own chunk, all held together while the node runs.
	WorkspaceParts func(n *ir.Node) []int64
	// WorkspaceFirst, when set, says which nodes' kernels allocate their
	// workspace before their outputs (ONNX Runtime's Where: its two
	// selections, then the output it merges them into); the others
	// allocate their outputs first. Only Arena uses it: the order decides
	// which free chunks each allocation gets.
	WorkspaceFirst func(n *ir.Node) bool
	// Arena replays the buffers' allocations and releases, in order,
	// through a model of ONNX Runtime's BFC arena (arena.go), and counts
	// each buffer, and each step's workspace, as the chunk the arena hands
	// out for it, which can be larger than the request.
	Arena bool
	// Holds, when set, lists values that stay allocated until right after
	// node n runs although n does not read them: what a runtime's extra
	// nodes read between n and the next step (an exporter's ordering
	// dependencies, exporters/onnx ORTRun). They extend lifetimes only:
	// no view, in-place write or workspace depends on them.
	Holds func(n *ir.Node) []*ir.Value
	// ValueBytes, when set, gives the bytes of a value (before
	// AlignBytes) instead of its type's: a runtime that stores an element
	// type in another (TensorFlow.js keeps int64 values as int32 and
	// float16 ones as float32) holds values of other sizes than their IR
	// types say. ok false means the size is unknown.
	ValueBytes func(v *ir.Value) (n int64, ok bool)
	// Prepacked gives, under Arena, the bytes a node's kernel copies its
	// constant weights into inside the arena when the session is created
	// (before the first step, in the root graph's node order, never
	// released). They shape where later chunks go but, like parameters, are
	// not counted. Nodes that return the same non-nil key share one
	// prepacked buffer, allocated for the first of them (ONNX Runtime
	// shares a prepacked weight among the kernels that read the same
	// initializer: three ConvTranspose nodes on one 32 KiB filter put
	// 32768 bytes in its arena, on three filters 98304).
	Prepacked func(n *ir.Node) (bytes int64, key any)
	// Preamble gives, under Arena, the arena requests that nodes outside
	// graph g make before its first step, after the prepacked weights, in
	// order (an exporter's helper nodes that read only graph inputs, which
	// the runtime runs first: exporters/onnx Options.HideShapes computes
	// the hidden inputs' shapes there). What they leave allocated stays so
	// to the end of the run and counts like an activation: it is part of
	// the runtime's bytes in use, and where it lies shapes where later
	// chunks go.
	Preamble func(g *ir.Graph) []ArenaRequest
	// Pattern, under Arena, simulates the sequence as a runtime with a
	// memory pattern runs it from a session's second run on (ONNX
	// Runtime's enable_mem_pattern, on by default): the first run traces
	// the allocations of every buffer but the kept graph outputs, Pattern
	// lays the traced allocations out in one block and returns its bytes,
	// and the later runs take that block from the arena before the first
	// step, as the first run left the arena, and place the traced buffers
	// in it. The kept outputs and the workspaces are allocated around it
	// as in the first run. The Result is the later runs' (the first run's
	// is Simulate without Pattern).
	Pattern func(trace []PatternAlloc) int64
}

// ArenaRequest is one request of Options.Preamble: Bytes > 0 allocates
// that many bytes; otherwise it releases the allocation made by the
// request at index Free of the same list.
type ArenaRequest struct {
	Bytes int64
	Free  int
}

// PatternAlloc is one traced allocation of a run (Options.Pattern), in
// the order the run allocates: Bytes allocated at step From and released
// after step To. Buffer is its buffer's index in SimulateBuffers' list.
type PatternAlloc struct {
	Buffer   int
	Bytes    int64
	From, To int
}

// Result is the outcome of simulating one sequence.
type Result struct {
	// PeakBytes is the largest During; PeakStep the first step reaching it
	// (-1 for an empty sequence, whose peak is the constant term).
	PeakBytes int64
	PeakStep  int
	// ConstBytes is the constant term (inputs and parameters counted under
	// the options); it is included in every During and After entry.
	ConstBytes int64
	// PeakWorkspace is the workspace of the peak step, included in
	// PeakBytes.
	PeakWorkspace int64
	// During[i] is the bytes in use while step i runs; After[i] after its
	// frees. Workspace[i] is the part of During[i] that is step i's
	// workspace (under Arena its chunk, or what the step's subgraphs
	// added).
	During    []int64
	After     []int64
	Workspace []int64
	// AtPeak lists the buffers allocated at the peak, largest first (ties
	// by value ID), each as the value instances placed in it: the
	// instances live at the peak step (the first carries the buffer's
	// bytes, views and in-place results sharing it carry 0), or, for a
	// buffer held for reuse with no live instance, the last instance that
	// was placed in it. ConstBytes + PeakWorkspace + the sum of Bytes is
	// PeakBytes.
	AtPeak []Live
}

// Live is one value instance that holds memory.
type Live struct {
	Value *ir.Value
	Bytes int64 // bytes of its buffer, the arena chunk under Arena (0 when it shares another instance's buffer)
	Step  int   // the step that produced it
}

// SizeError lists values whose size is unknown, so no byte count is possible.
type SizeError struct{ Values []*ir.Value }

func (e *SizeError) Error() string {
	names := make([]string, 0, len(e.Values))
	for i, v := range e.Values {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(e.Values)-10))
			break
		}
		desc := fmt.Sprintf("%q %s", v.String(), v.Type)
		if v.Def != nil {
			desc += fmt.Sprintf(" from node %q (%s)", v.Def.String(), v.Def.OpName())
		}
		names = append(names, desc)
	}
	return fmt.Sprintf("memory: %d values have unknown sizes (give static input shapes with -input-shape or -dim): %s", len(e.Values), joinComma(names))
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// FileOrder is the sequence of g's nodes as listed: one step per node.
func FileOrder(g *ir.Graph) []*ir.Node { return g.Nodes }

// Simulate runs the model over seq, a sequence of nodes of g (the root or a
// subgraph), repeats allowed. It fails when a step reads a value that no
// earlier step produced and that is not available from outside the
// sequence, or when a live value's size is unknown.
func Simulate(g *ir.Graph, seq []*ir.Node, opts Options) (*Result, error) {
	s := &sim{g: g, opts: opts, nv: g.NumValues()}
	if err := s.plan(seq); err != nil {
		return nil, err
	}
	res, _, err := s.run(seq)
	return res, err
}

// Buffer is one allocation of a simulated sequence: the value instances
// placed in it and the steps over which it is allocated.
type Buffer struct {
	// Bytes is the size of the allocation: the bytes of the value first
	// placed in it, rounded up to Options.AlignBytes (before the arena's
	// chunk rounding).
	Bytes int64
	// Values are the instances placed in it, in placement order: the one
	// that allocated it, then views, in-place results and, under Reuse,
	// later takers. The first carries Bytes, the others 0 (as in
	// Result.AtPeak).
	Values []Live
	// Intervals are the closed step intervals over which it is allocated,
	// in order: one, or under Reuse two when it is released after its last
	// read and a later taker allocates it again. To == len(seq) means it
	// stays allocated to the end of the sequence.
	Intervals []Interval
	// Kept reports a graph output's buffer, which the runtime hands to the
	// caller: allocated to the end of the sequence.
	Kept bool
}

// Interval is a closed interval of steps over which a buffer is allocated.
type Interval struct {
	From, To int
	// Held is the bytes the buffer holds over the interval: Bytes, or
	// under Options.Arena the arena chunk it got.
	Held int64
}

// SimulateBuffers is Simulate that also returns every buffer the sequence
// allocates, in allocation order (the step, then the output slot): what
// passes/arena lays out. Views of graph inputs and parameters allocate
// nothing and are in no buffer; Constant steps under ConstantsAsParams
// allocate nothing either.
func SimulateBuffers(g *ir.Graph, seq []*ir.Node, opts Options) (*Result, []Buffer, error) {
	s := &sim{g: g, opts: opts, nv: g.NumValues()}
	if err := s.plan(seq); err != nil {
		return nil, nil, err
	}
	res, l, err := s.run(seq)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Buffer, len(l.bufs))
	for k := range l.bufs {
		bb := &l.bufs[k]
		b := Buffer{Bytes: bb.bytes, Kept: bb.pinned}
		for w, step := range bb.writes {
			inst := Live{Value: seq[step].Outputs[bb.slots[w]], Step: int(step)}
			if w == 0 {
				inst.Bytes = bb.bytes
			}
			b.Values = append(b.Values, inst)
		}
		for x, iv := range l.intervals[k] {
			if iv.from <= iv.to {
				b.Intervals = append(b.Intervals, Interval{From: int(iv.from), To: int(iv.to), Held: l.held[k][x]})
			}
		}
		out[k] = b
	}
	return res, out, nil
}

type sim struct {
	g    *ir.Graph
	opts Options
	nv   int

	// Instances: instance k is output slot j of step i, numbered by
	// instBase[i]+j; instStep[k] is i. lastUse[k] is the last step that
	// reads it (len(seq) for kept outputs, -1 when nothing reads it).
	instBase []int32
	instStep []int32
	lastUse  []int32
	// reads[i] lists, per input of step i (explicit then implicit), the
	// instance read, or -1 for a value from outside the sequence.
	reads [][]int32
	// holds[i] lists the instances that Options.Holds keeps alive through
	// step i.
	holds [][]int32
	sizes []int64 // aligned bytes per value ID, -1 unknown, -2 not computed
}

func (s *sim) bytesOf(v *ir.Value) int64 {
	if n := s.sizes[v.ID]; n != -2 {
		return n
	}
	var n int64
	var ok bool
	if s.opts.ValueBytes != nil {
		n, ok = s.opts.ValueBytes(v)
	} else {
		n, ok = v.Type.Bytes()
	}
	if !ok {
		n = -1
	} else if a := s.opts.AlignBytes; a > 1 {
		n = (n + a - 1) / a * a
	}
	s.sizes[v.ID] = n
	return n
}

// constNode reports whether n's outputs are parameters under the options.
func (s *sim) constNode(n *ir.Node) bool {
	return s.opts.ConstantsAsParams && n != nil && n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx")
}

// external reports whether v is available without any step producing it:
// a graph input or parameter, a Constant node's output under
// ConstantsAsParams, or a value of an enclosing graph.
func (s *sim) external(v *ir.Value) bool {
	return v.Def == nil || v.Def.Graph != s.g || s.constNode(v.Def)
}

func (s *sim) plan(seq []*ir.Node) error {
	s.sizes = make([]int64, s.nv)
	for i := range s.sizes {
		s.sizes[i] = -2
	}
	s.instBase = make([]int32, len(seq)+1)
	for i, n := range seq {
		s.instBase[i+1] = s.instBase[i] + int32(len(n.Outputs))
	}
	ninst := s.instBase[len(seq)]
	s.lastUse = make([]int32, ninst)
	s.instStep = make([]int32, ninst)
	for i := range s.lastUse {
		s.lastUse[i] = -1
	}
	cur := make([]int32, s.nv) // current instance of each value, -1 none
	for i := range cur {
		cur[i] = -1
	}
	s.reads = make([][]int32, len(seq))
	for i, n := range seq {
		if n.Graph != s.g {
			return fmt.Errorf("memory: step %d runs node %q of graph %q, not of %q", i, n.String(), n.Graph.Name, s.g.Name)
		}
		ins := n.AllInputs()
		r := make([]int32, len(ins))
		for k, v := range ins {
			r[k] = -1
			if v == nil || s.external(v) {
				continue
			}
			inst := cur[v.ID]
			if inst < 0 {
				return fmt.Errorf("memory: step %d (node %q) reads %q before any step produces it", i, n.String(), v.String())
			}
			r[k] = inst
			s.lastUse[inst] = int32(i)
		}
		s.reads[i] = r
		for j, o := range n.Outputs {
			s.instStep[s.instBase[i]+int32(j)] = int32(i)
			if o != nil && !s.constNode(n) {
				cur[o.ID] = s.instBase[i] + int32(j)
			}
		}
		if s.opts.Holds == nil {
			continue
		}
		if s.holds == nil {
			s.holds = make([][]int32, len(seq))
		}
		for _, v := range s.opts.Holds(n) {
			if v == nil || s.external(v) {
				continue
			}
			inst := cur[v.ID]
			if inst < 0 {
				return fmt.Errorf("memory: step %d (node %q) holds %q, which no step has produced", i, n.String(), v.String())
			}
			s.lastUse[inst] = int32(i)
			s.holds[i] = append(s.holds[i], inst)
		}
	}
	if !s.opts.FreeOutputs {
		for _, o := range s.g.Outputs {
			if !s.external(o) {
				if inst := cur[o.ID]; inst >= 0 {
					s.lastUse[inst] = int32(len(seq))
				}
			}
		}
	}
	var unknown []*ir.Value
	seen := make([]bool, s.nv)
	for _, n := range seq {
		if s.constNode(n) {
			continue
		}
		for _, o := range n.Outputs {
			if o != nil && !seen[o.ID] && s.bytesOf(o) < 0 {
				seen[o.ID] = true
				unknown = append(unknown, o)
			}
		}
	}
	if len(unknown) > 0 {
		return &SizeError{Values: unknown}
	}
	return nil
}

func (s *sim) constBytes() (int64, error) {
	var total int64
	var unknown []*ir.Value
	seen := make([]bool, s.nv)
	count := func(v *ir.Value) {
		if v == nil || seen[v.ID] {
			return
		}
		seen[v.ID] = true
		b := s.bytesOf(v)
		if b < 0 {
			unknown = append(unknown, v)
			return
		}
		total += b
	}
	if s.opts.CountInputs {
		for _, v := range s.g.Inputs {
			count(v)
		}
	}
	if s.opts.CountParams {
		for _, v := range s.g.Params {
			count(v)
		}
		for _, n := range s.g.Nodes {
			if s.constNode(n) {
				for _, o := range n.Outputs {
					count(o)
				}
			}
		}
	}
	if len(unknown) > 0 {
		return 0, &SizeError{Values: unknown}
	}
	return total, nil
}

// buffer is one allocation.
type buffer struct {
	bytes int64
	// key identifies the element size and shape of the value it was first
	// allocated for (-1: never reusable).
	key int32
	// refs counts the instances placed in it that have not died.
	refs int32
	// pinned buffers hold a kept graph output and never reach the free list.
	pinned bool
	// first and lastWrite are the first and last steps that placed an
	// instance in it; dead is the step at which refs last reached 0 (-1
	// while some instance lives); lastRead the last step reading any of
	// its instances (-1: none).
	first, lastWrite, dead, lastRead int32
	// writes lists the steps that placed instances in it, in order, and
	// slots the output slot each wrote.
	writes, slots []int32
}

func (s *sim) run(seq []*ir.Node) (*Result, *layout, error) {
	c, err := s.constBytes()
	if err != nil {
		return nil, nil, err
	}
	n := len(seq)
	res := &Result{ConstBytes: c, During: make([]int64, n), After: make([]int64, n), PeakStep: -1, PeakBytes: c}
	l := s.layout(seq)
	if s.opts.Arena {
		a := newBFCArena()
		if s.opts.Prepacked != nil {
			packed := map[any]bool{}
			for _, nd := range s.g.Nodes {
				p, key := s.opts.Prepacked(nd)
				if p <= 0 || key != nil && packed[key] {
					continue
				}
				if key != nil {
					packed[key] = true
				}
				a.alloc(p)
			}
		}
		base := a.inUse
		if s.opts.Preamble != nil {
			if err := preamble(a, s.opts.Preamble(s.g)); err != nil {
				return nil, nil, err
			}
		}
		if s.opts.Pattern != nil {
			s.pattern(a, seq, l)
		}
		s.replay(a, seq, l, false, false, func(i int, during, after int64) {
			res.During[i] = c + during - base
			res.After[i] = c + after - base
		})
	} else {
		during := make([]int64, n+2)
		after := make([]int64, n+2)
		for k := range l.bufs {
			for x, iv := range l.intervals[k] {
				if iv.from > iv.to {
					continue
				}
				b := l.held[k][x]
				during[iv.from] += b
				during[iv.to+1] -= b
				after[iv.from] += b
				after[iv.to] -= b
			}
		}
		var d, a int64
		for i := 0; i < n; i++ {
			d += during[i]
			a += after[i]
			res.During[i] = c + d + l.ws[i]
			res.After[i] = c + a
		}
	}
	for i := 0; i < n; i++ {
		if res.During[i] > res.PeakBytes || res.PeakStep < 0 {
			res.PeakBytes, res.PeakStep = res.During[i], i
		}
	}
	res.Workspace = l.ws
	if res.PeakStep >= 0 {
		res.PeakWorkspace = l.ws[res.PeakStep]
		res.AtPeak = s.atPeak(seq, int32(res.PeakStep), l)
	}
	return res, l, nil
}

// layout is where a sequence's value instances live: buffers and the step
// intervals over which each buffer is allocated.
type layout struct {
	bufs []buffer
	// buf is the buffer of each instance: -1 none, -2 a view of a value
	// from outside the sequence.
	buf []int32
	// intervals[k] are the one or two closed step intervals over which
	// buffer k is allocated (end len(seq): to the end of the sequence);
	// held[k][x] is the bytes it holds over interval x (the arena's chunk
	// under Arena).
	intervals [][2]span
	held      [][2]int64
	// ws is each step's workspace (under Arena, the chunk it got, or the
	// memory its subgraphs took).
	ws []int64
}

// span is a closed interval of steps over which a buffer is allocated,
// with the output slot whose placement allocated it; from > to is empty.
type span struct{ from, to, slot int32 }

// layout places every output of seq in a buffer and computes the buffers'
// lifetimes.
func (s *sim) layout(seq []*ir.Node) *layout {
	n := len(seq)
	l := &layout{buf: make([]int32, len(s.lastUse)), ws: make([]int64, n)}
	for i := range l.buf {
		l.buf[i] = -1
	}
	buf := l.buf
	keys := LayoutKeys{}
	free := map[int32][]int32{} // reuse key → free buffers, most recently freed last

	newBuffer := func(v *ir.Value, step int32, pinned bool) int32 {
		key := int32(-1)
		if s.opts.Reuse && !pinned {
			key = s.reuseKey(v, keys)
		}
		l.bufs = append(l.bufs, buffer{bytes: s.bytesOf(v), key: key, pinned: pinned, first: step, dead: -1, lastRead: -1})
		return int32(len(l.bufs) - 1)
	}
	place := func(inst, b int32, step int32) {
		buf[inst] = b
		bb := &l.bufs[b]
		bb.refs++
		bb.dead = -1
		bb.lastWrite = step
		bb.writes = append(bb.writes, step)
		bb.slots = append(bb.slots, inst-s.instBase[step])
	}
	die := func(inst int32, step int32) {
		b := buf[inst]
		if b < 0 {
			return
		}
		bb := &l.bufs[b]
		bb.refs--
		if bb.refs == 0 {
			bb.dead = step
			if s.opts.Reuse && bb.key >= 0 {
				free[bb.key] = append(free[bb.key], b)
			}
		}
	}

	for i, nd := range seq {
		step := int32(i)
		if s.constNode(nd) {
			continue // a parameter: it does not run
		}
		if s.opts.Workspace != nil {
			l.ws[i] = s.opts.Workspace(nd)
		}
		base := s.instBase[i]
		info := nd.Info()
		for j, o := range nd.Outputs {
			if o == nil {
				continue
			}
			inst := base + int32(j)
			kept := s.lastUse[inst] == int32(n)
			if !kept && j == 0 && len(s.reads[i]) > 0 && (info != nil || s.opts.InPlaceOp != nil || s.opts.AliasOp != nil) {
				in := s.reads[i][0]
				var flags ir.OpFlags
				if info != nil {
					flags = info.Flags
				}
				inPlace := flags&ir.InPlace != 0
				if s.opts.InPlaceOp != nil {
					inPlace = s.opts.InPlaceOp(nd)
				}
				alias := s.opts.Aliasing && flags&ir.Alias != 0
				if s.opts.AliasOp != nil {
					alias = s.opts.Aliasing && s.opts.AliasOp(nd)
				}
				switch {
				case alias && in >= 0 && buf[in] >= 0:
					place(inst, buf[in], step)
					continue
				case alias && in >= 0:
					buf[inst] = buf[in] // a view of a view of an outside value
					continue
				case alias && in < 0 && nd.AllInputs()[0] != nil:
					// A view of an input or parameter: no new memory,
					// and nothing to free later.
					buf[inst] = -2
					continue
				case s.opts.InPlace && inPlace && in >= 0 && buf[in] >= 0 &&
					s.lastUse[in] == step && l.bufs[buf[in]].refs == 1 && !s.readsTwice(i, in) && !s.held(i, in) &&
					SameLayout(nd.AllInputs()[0], o) && !s.shapeless(nd.AllInputs()[0]) && !s.shapeless(o):
					place(inst, buf[in], step)
					continue
				}
			}
			if s.opts.Reuse && !kept {
				if key := s.reuseKey(o, keys); key >= 0 {
					if fl := free[key]; len(fl) > 0 {
						b := fl[len(fl)-1]
						free[key] = fl[:len(fl)-1]
						place(inst, b, step)
						continue
					}
				}
			}
			place(inst, newBuffer(o, step, kept), step)
		}
		// Reads, then deaths: inputs whose last reader is this step,
		// outputs nobody reads.
		var held []int32
		if s.holds != nil {
			held = s.holds[i]
		}
		for _, in := range slices.Concat(s.reads[i], held) {
			if in >= 0 && buf[in] >= 0 {
				l.bufs[buf[in]].lastRead = step
			}
		}
		for k, in := range s.reads[i] {
			if in >= 0 && s.lastUse[in] == step && !slices.Contains(s.reads[i][:k], in) {
				die(in, step)
			}
		}
		for j, o := range nd.Outputs {
			if o != nil && s.lastUse[base+int32(j)] < 0 {
				die(base+int32(j), step)
			}
		}
		for k, in := range held {
			if s.lastUse[in] == step && !slices.Contains(s.reads[i], in) && !slices.Contains(held[:k], in) {
				die(in, step)
			}
		}
	}

	l.intervals = make([][2]span, len(l.bufs))
	l.held = make([][2]int64, len(l.bufs))
	for k := range l.bufs {
		bb := &l.bufs[k]
		iv := [2]span{{bb.first, bb.first, bb.slots[0]}, {1, 0, 0}}
		switch {
		case bb.pinned || bb.dead < 0:
			iv[0].to = int32(n)
		case !s.opts.Reuse:
			iv[0].to = bb.dead
		case bb.lastRead < 0:
			// Nothing ever reads it: the planner plans no release.
			iv[0].to = int32(n)
		case bb.lastRead >= bb.lastWrite:
			iv[0].to = bb.lastRead
		default:
			// Released after its last read; a later taker allocates it
			// again, and nothing releases it after that.
			iv[0].to = bb.lastRead
			for w, step := range bb.writes {
				if step > bb.lastRead {
					iv[1] = span{step, int32(n), bb.slots[w]}
					break
				}
			}
		}
		l.intervals[k] = iv
		l.held[k] = [2]int64{bb.bytes, bb.bytes}
	}
	return l
}

// replay runs the layout's allocations and releases through the arena a:
// at each step the step's new buffers in output order, then its workspace
// (or its subgraphs), released at once, then the buffers whose last
// interval ends at the step. It reports each step's bytes in use at its
// height and after its releases, and returns the largest. A nested replay
// (a subgraph) allocates no kept outputs, which are the owning node's
// outputs; with end set, as for a subgraph, everything still held is
// released at the end.
func (s *sim) replay(a *bfcArena, seq []*ir.Node, l *layout, nested, end bool, step func(i int, during, after int64)) int64 {
	n := len(seq)
	type event struct{ buf, x, slot int32 }
	allocs := make([][]event, n+1)
	frees := make([][]event, n+1)
	for k := range l.bufs {
		for x, iv := range l.intervals[k] {
			if iv.from > iv.to || l.bufs[k].bytes <= 0 || (nested && l.bufs[k].pinned) {
				l.held[k][x] = 0
				continue
			}
			allocs[iv.from] = append(allocs[iv.from], event{int32(k), int32(x), iv.slot})
			frees[iv.to] = append(frees[iv.to], event{int32(k), int32(x), 0})
		}
	}
	chunks := make([][2]int32, len(l.bufs))
	var most int64
	for i := 0; i < n; i++ {
		evs := allocs[i]
		slices.SortStableFunc(evs, func(x, y event) int { return int(x.slot - y.slot) })
		allocOutputs := func() {
			for _, e := range evs {
				h := a.alloc(l.bufs[e.buf].bytes)
				chunks[e.buf][e.x] = h
				l.held[e.buf][e.x] = a.chunks[h].size
			}
		}
		subs := seq[i].Subgraphs()
		first := len(subs) == 0 && l.ws[i] > 0 && s.opts.WorkspaceFirst != nil && s.opts.WorkspaceFirst(seq[i])
		if !first {
			allocOutputs()
		}
		during := a.inUse
		if len(subs) > 0 {
			// The subgraph runs inside the node, in the same arena.
			after, peak := s.nestedReplay(a, subs)
			*a = *after
			l.ws[i] = peak - during
			during = peak
		} else if l.ws[i] > 0 {
			parts := []int64{l.ws[i]}
			if s.opts.WorkspaceParts != nil {
				if p := s.opts.WorkspaceParts(seq[i]); len(p) > 0 {
					parts = p
				}
			}
			hs := make([]int32, len(parts))
			l.ws[i] = 0
			for k, p := range parts {
				hs[k] = a.alloc(p)
				l.ws[i] += a.chunks[hs[k]].size
			}
			if first {
				allocOutputs()
			}
			during = a.inUse
			for k := len(hs) - 1; k >= 0; k-- {
				a.release(hs[k])
			}
		}
		most = max(most, during)
		for _, e := range frees[i] {
			a.release(chunks[e.buf][e.x])
		}
		if step != nil {
			step(i, during, a.inUse)
		}
	}
	if end {
		for _, e := range frees[n] {
			a.release(chunks[e.buf][e.x])
		}
	}
	return most
}

// pattern turns the arena a (as the session created it) into the arena
// of a later run under Options.Pattern: it replays the first run, which
// releases everything at its end (the caller frees the outputs it was
// handed), traces its allocations of buffers that are not kept outputs,
// and allocates the block Pattern lays them out in. The traced buffers
// then hold nothing of their own: replay skips them (bytes 0), and the
// block's chunk stays in use.
func (s *sim) pattern(a *bfcArena, seq []*ir.Node, l *layout) {
	first := s.layoutCopy(l)
	s.replay(a, seq, first, false, true, nil)
	type traced struct {
		PatternAlloc
		slot int32
	}
	var ts []traced
	for k := range l.bufs {
		if l.bufs[k].pinned || l.bufs[k].bytes <= 0 {
			continue
		}
		for _, iv := range l.intervals[k] {
			if iv.from <= iv.to {
				ts = append(ts, traced{PatternAlloc{Buffer: k, Bytes: l.bufs[k].bytes, From: int(iv.from), To: int(iv.to)}, iv.slot})
			}
		}
	}
	// The run's order: by allocation step, then output slot, as replay
	// allocates.
	slices.SortStableFunc(ts, func(x, y traced) int {
		if x.From != y.From {
			return x.From - y.From
		}
		return int(x.slot - y.slot)
	})
	trace := make([]PatternAlloc, len(ts))
	for i, t := range ts {
		trace[i] = t.PatternAlloc
	}
	if block := s.opts.Pattern(trace); block > 0 {
		a.alloc(block)
	}
	for k := range l.bufs {
		if !l.bufs[k].pinned {
			l.bufs[k].bytes = 0
		}
	}
}

// layoutCopy returns a copy of l that replay may change (its held bytes
// and workspaces) without changing l.
func (s *sim) layoutCopy(l *layout) *layout {
	c := *l
	c.held = slices.Clone(l.held)
	c.ws = slices.Clone(l.ws)
	return &c
}

// nestedReplay replays each subgraph (file order) on a copy of a and
// returns the copy and the peak of the subgraph that peaked highest (an
// If runs one branch; which one depends on data).
func (s *sim) nestedReplay(a *bfcArena, subs []*ir.Graph) (*bfcArena, int64) {
	best, peak := a.clone(), a.inUse
	for _, sg := range subs {
		sub := &sim{g: sg, opts: s.opts, nv: s.nv}
		sub.opts.FreeOutputs = false
		if sub.plan(sg.Nodes) != nil {
			continue
		}
		c := a.clone()
		if p := sub.replay(c, sg.Nodes, sub.layout(sg.Nodes), true, true, nil); p > peak {
			best, peak = c, p
		}
	}
	return best, peak
}

// reuseKey numbers the reuse key of v (Options.ReuseKey, else LayoutKey);
// -1 when v may take no listed buffer.
func (s *sim) reuseKey(v *ir.Value, keys LayoutKeys) int32 {
	if s.shapeless(v) {
		return -1
	}
	if s.opts.ReuseKey == nil {
		return keys.ID(v)
	}
	c := s.opts.ReuseKey(v)
	if c < 0 {
		return -1
	}
	return keys.number(strconv.FormatInt(c, 10))
}

// shapeless reports Options.Shapeless for v (false when it is not set).
func (s *sim) shapeless(v *ir.Value) bool {
	return s.opts.Shapeless != nil && s.opts.Shapeless(v)
}

// LayoutKeys numbers the layouts of values (LayoutKey) in the order they
// are first seen.
type LayoutKeys map[string]int32

// ID returns the number of v's layout; -1 when v takes no freed buffer.
func (m LayoutKeys) ID(v *ir.Value) int32 {
	k, ok := LayoutKey(v)
	if !ok {
		return -1
	}
	return m.number(k)
}

func (m LayoutKeys) number(k string) int32 {
	id, ok := m[k]
	if !ok {
		id = int32(len(m))
		m[k] = id
	}
	return id
}

// LayoutKey is ONNX Runtime's allocation planner's condition for reusing
// a freed buffer (Options.Reuse): two values share a key when they have
// the same element size and the same static shape. ok is false for a value
// that never takes a freed buffer: not a tensor, a shape not static, or a
// scalar.
func LayoutKey(v *ir.Value) (key string, ok bool) {
	dims, ok := v.Type.Dims()
	if !ok || len(dims) == 0 || v.Type.Kind != ir.KindTensor {
		return "", false
	}
	return fmt.Sprint(v.Type.DType.Bits(), dims), true
}

// SameLayout reports whether in and out have the same element size and the
// same static shape (the planner's condition for writing in place).
func SameLayout(in, out *ir.Value) bool {
	if in == nil || in.Type.DType.Bits() != out.Type.DType.Bits() {
		return false
	}
	a, ok1 := in.Type.Dims()
	b, ok2 := out.Type.Dims()
	return ok1 && ok2 && slices.Equal(a, b)
}

// held reports whether Options.Holds keeps instance in alive through step
// i: something after the step still reads it, so the step cannot write
// over it.
func (s *sim) held(i int, in int32) bool {
	return s.holds != nil && slices.Contains(s.holds[i], in)
}

// readsTwice reports whether step i reads instance in through more than one
// input slot (then it cannot be overwritten in place).
func (s *sim) readsTwice(i int, in int32) bool {
	c := 0
	for _, r := range s.reads[i] {
		if r == in {
			c++
		}
	}
	return c > 1
}

func (s *sim) atPeak(seq []*ir.Node, p int32, l *layout) []Live {
	buf := l.buf
	bytesAt := func(b int32) int64 {
		for x, iv := range l.intervals[b] {
			if iv.from <= p && p <= iv.to {
				return l.held[b][x]
			}
		}
		return -1
	}
	covers := func(b int32) bool { return bytesAt(b) >= 0 }
	type group struct {
		bytes int64
		insts []int32
	}
	groups := map[int32]*group{}
	var order []int32
	lastPlaced := map[int32]int32{}
	for k := int32(0); k < s.instBase[p+1]; k++ {
		b := buf[k]
		if b < 0 || !covers(b) {
			continue
		}
		lastPlaced[b] = k
		death := s.lastUse[k]
		if death < 0 {
			death = s.instStep[k]
		}
		if death < p {
			continue
		}
		g, ok := groups[b]
		if !ok {
			g = &group{bytes: bytesAt(b)}
			groups[b] = g
			order = append(order, b)
		}
		g.insts = append(g.insts, k)
	}
	for b, k := range lastPlaced {
		if _, ok := groups[b]; !ok {
			groups[b] = &group{bytes: bytesAt(b), insts: []int32{k}}
			order = append(order, b)
		}
	}
	slices.Sort(order)
	value := func(k int32) *ir.Value {
		st := s.instStep[k]
		return seq[st].Outputs[k-s.instBase[st]]
	}
	slices.SortStableFunc(order, func(x, y int32) int {
		gx, gy := groups[x], groups[y]
		if gx.bytes != gy.bytes {
			if gx.bytes > gy.bytes {
				return -1
			}
			return 1
		}
		return int(value(gx.insts[0]).ID - value(gy.insts[0]).ID)
	})
	var out []Live
	for _, b := range order {
		for j, k := range groups[b].insts {
			l := Live{Value: value(k), Step: int(s.instStep[k])}
			if j == 0 {
				l.Bytes = groups[b].bytes
			}
			out = append(out, l)
		}
	}
	return out
}
