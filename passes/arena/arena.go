// Package arena plans a static offset for every activation of a graph in
// one arena: the bytes an edge runtime must reserve to run the graph in a
// given execution order, and where each buffer lives in them.
//
// # What is planned
//
// The buffers and their lifetimes come from the memory model
// (memory.SimulateBuffers) under the caller's options, with the parts of
// the options that model a runtime's own allocator switched off: planner
// reuse (Options.Reuse) and the BFC arena replay (Options.Arena) are what
// a static plan replaces, and alignment is the plan's own (Options.Align).
// What the options say about which values share a buffer is kept: a view
// (Options.Aliasing) lives in its input's buffer and an in-place result
// (Options.InPlace) in its input's, so they get one offset; a graph
// output is kept to the end of the run (unless Options.FreeOutputs); the
// values the exporter's helper nodes hold (Options.Holds) stay allocated
// as long. A buffer is live from the step that first writes it to the
// last step that reads anything placed in it (the step itself for an
// output nobody reads). Each step's kernel workspace (Options.Workspace)
// is a buffer of its own, live during that step only. Graph inputs and
// parameters are not planned: they are the caller's (the constant term of
// memory.Result is reported apart).
//
// The live-bytes peak is the largest sum, over the steps, of the sizes
// (aligned) of the buffers live at the step: no plan can be smaller. The
// arena is the largest end offset; fragmentation is arena/peak − 1.
//
// # How
//
// Offsets are chosen by greedy placement in the manner of TensorFlow Lite
// Micro's greedy memory planner: buffers taken largest first (then the
// longest-lived, then the earliest), each placed at the lowest aligned
// offset where it overlaps no already placed buffer whose lifetime
// intersects its own. The improving search then splits the buffers into
// clusters (buffers connected through intersecting lifetimes; clusters
// are planned independently, the arena is the largest) and, per cluster,
// tries other placement orders (longest-lived first, by first step, by
// size × lifetime, and moving the buffer that ends highest to the front,
// repeatedly), and on clusters of at most Options.ExactBuffers buffers a
// branch and bound over placement orders, keeping the smallest arena.
// Placing buffers at their lowest feasible offset in the order of their
// offsets in an optimal plan reproduces a plan at least as small (each
// buffer's lowest offset is at most its optimal one, by induction), so the
// branch and bound over orders is exact when it finishes; it stops early
// once a cluster's arena equals the cluster's live peak.
package arena

import (
	"errors"
	"fmt"
	"slices"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// Options configure a plan. The zero value selects the defaults.
type Options struct {
	// Align is the alignment of every offset and size in bytes (default
	// 64).
	Align int64
	// ExactBuffers is the largest cluster the branch and bound runs on
	// (default 12; negative: none).
	ExactBuffers int
	// MaxNodes bounds the branch and bound's search nodes per cluster
	// (default 200000).
	MaxNodes int
	// Rounds is the number of move-to-front rounds per cluster (default
	// 64; negative: none).
	Rounds int
}

func (o Options) withDefaults() Options {
	if o.Align <= 0 {
		o.Align = 64
	}
	if o.ExactBuffers == 0 {
		o.ExactBuffers = 12
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = 200000
	}
	if o.Rounds == 0 {
		o.Rounds = 64
	}
	return o
}

// Kind says what a planned buffer holds.
type Kind string

// The kinds of buffers.
const (
	Activation Kind = "activation" // values computed by the steps
	Output     Kind = "output"     // a graph output, kept to the end of the run
	Workspace  Kind = "workspace"  // a kernel's scratch memory while its step runs
)

// Buffer is one planned buffer.
type Buffer struct {
	Kind Kind
	// Values names the value instances placed in the buffer, in placement
	// order (a view or an in-place result after its input); empty for a
	// workspace.
	Values []string
	// Node names the node whose workspace it is.
	Node string
	// Offset and Size are aligned bytes; the buffer occupies [Offset,
	// Offset+Size).
	Offset, Size int64
	// First and Last are the steps over which it is live, both included.
	First, Last int
}

// Plan is a static arena plan.
type Plan struct {
	Graph string
	// Steps is the length of the execution order; Order names the node
	// each step runs.
	Steps int
	Order []string
	// Align is the plan's alignment.
	Align int64
	// ArenaBytes is the arena's size: the largest end offset.
	ArenaBytes int64
	// GreedyBytes is the arena of the greedy placement alone (largest
	// first), before the improving search.
	GreedyBytes int64
	// LivePeak is the largest sum of live buffer sizes over the steps, at
	// step PeakStep (-1 when nothing is planned); no plan is smaller.
	LivePeak int64
	PeakStep int
	// ConstBytes is the memory model's constant term under the options
	// (graph inputs and parameters it counts), which the arena does not
	// hold.
	ConstBytes int64
	// Optimal reports that no plan of these buffers is smaller: the arena
	// equals the live peak, or the branch and bound finished on every
	// cluster that needed it.
	Optimal bool
	// Method names the placement order that gave the arena of the
	// largest cluster.
	Method string
	// Buffers lists the planned buffers by first step, then offset.
	Buffers []Buffer
}

// Fragmentation is ArenaBytes / LivePeak − 1: the share of the arena the
// plan wastes over the least possible (0 for an empty plan).
func (p *Plan) Fragmentation() float64 {
	if p.LivePeak == 0 {
		return 0
	}
	return float64(p.ArenaBytes)/float64(p.LivePeak) - 1
}

// Options for the memory model of a plan: mem without the allocator's own
// reuse and arena replay, unaligned (sizes are the plan's to align).
func lifetimeOptions(mem memory.Options) memory.Options {
	mem.Reuse, mem.Arena, mem.AlignBytes = false, false, 1
	return mem
}

// New plans the activations of seq, an execution order of g's nodes (the
// root graph or a subgraph; repeats allowed), under mem. It fails when
// memory.Simulate does (a size unknown, a value read before it is made).
func New(g *ir.Graph, seq []*ir.Node, mem memory.Options, opts Options) (*Plan, error) {
	opts = opts.withDefaults()
	res, bufs, err := memory.SimulateBuffers(g, seq, lifetimeOptions(mem))
	if err != nil {
		return nil, fmt.Errorf("arena: %w", err)
	}
	n := len(seq)
	align := func(b int64) int64 { return (b + opts.Align - 1) / opts.Align * opts.Align }
	plan := &Plan{Graph: g.Name, Steps: n, Align: opts.Align, ConstBytes: res.ConstBytes, PeakStep: -1}
	for _, nd := range seq {
		plan.Order = append(plan.Order, nd.String())
	}
	for _, b := range bufs {
		if b.Bytes <= 0 || len(b.Intervals) == 0 {
			continue
		}
		pb := Buffer{Kind: Activation, Size: align(b.Bytes), First: b.Intervals[0].From, Last: b.Intervals[len(b.Intervals)-1].To}
		if b.Kept {
			pb.Kind = Output
		}
		pb.Last = min(pb.Last, n-1)
		for _, v := range b.Values {
			pb.Values = append(pb.Values, v.Value.String())
		}
		plan.Buffers = append(plan.Buffers, pb)
	}
	for i, w := range res.Workspace {
		if w > 0 {
			plan.Buffers = append(plan.Buffers, Buffer{Kind: Workspace, Node: seq[i].String(), Size: align(w), First: i, Last: i})
		}
	}
	items := make([]item, len(plan.Buffers))
	for i, b := range plan.Buffers {
		items[i] = item{size: b.Size, first: b.First, last: b.Last}
	}
	plan.LivePeak, plan.PeakStep = livePeak(items, n)
	sol := solve(items, opts)
	for i := range plan.Buffers {
		plan.Buffers[i].Offset = sol.offsets[i]
	}
	plan.ArenaBytes, plan.GreedyBytes, plan.Optimal, plan.Method = sol.arena, sol.greedy, sol.optimal || sol.arena == plan.LivePeak, sol.method
	slices.SortStableFunc(plan.Buffers, func(a, b Buffer) int {
		if a.First != b.First {
			return a.First - b.First
		}
		return int(a.Offset - b.Offset)
	})
	if err := Check(plan); err != nil {
		return nil, fmt.Errorf("arena: internal error: %w", err)
	}
	return plan, nil
}

// livePeak returns the largest sum of live sizes over steps 0..n-1 and the
// first step reaching it.
func livePeak(items []item, n int) (int64, int) {
	if n == 0 || len(items) == 0 {
		return 0, -1
	}
	delta := make([]int64, n+1)
	for _, it := range items {
		delta[it.first] += it.size
		delta[it.last+1] -= it.size
	}
	var cur, best int64
	step := -1
	for i := 0; i < n; i++ {
		cur += delta[i]
		if cur > best {
			best, step = cur, i
		}
	}
	return best, step
}

// Check verifies a plan: every offset and size is a multiple of the
// alignment, every buffer lies within the arena and has a valid lifetime,
// and no two buffers whose lifetimes intersect share a byte. It returns
// the first violations found (at most ten) as one error.
func Check(p *Plan) error {
	var errs []error
	report := func(format string, args ...any) {
		if len(errs) < 10 {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	if p.Align <= 0 {
		report("alignment %d is not positive", p.Align)
		return errors.Join(errs...)
	}
	for i, b := range p.Buffers {
		switch {
		case b.Offset%p.Align != 0 || b.Size%p.Align != 0:
			report("buffer %d (%s) at offset %d of %d bytes is not aligned to %d", i, b.label(), b.Offset, b.Size, p.Align)
		case b.Offset < 0 || b.Size <= 0 || b.Offset+b.Size > p.ArenaBytes:
			report("buffer %d (%s) at [%d, %d) is outside the arena of %d bytes", i, b.label(), b.Offset, b.Offset+b.Size, p.ArenaBytes)
		case b.First < 0 || b.Last < b.First || b.Last >= max(p.Steps, 1):
			report("buffer %d (%s) has lifetime [%d, %d] outside steps 0..%d", i, b.label(), b.First, b.Last, p.Steps-1)
		}
	}
	// Sweep over the buffers by first step, keeping those still live.
	idx := make([]int, len(p.Buffers))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return p.Buffers[a].First - p.Buffers[b].First })
	var active []int
	for _, i := range idx {
		b := &p.Buffers[i]
		active = slices.DeleteFunc(active, func(j int) bool { return p.Buffers[j].Last < b.First })
		for _, j := range active {
			o := &p.Buffers[j]
			if b.Offset < o.Offset+o.Size && o.Offset < b.Offset+b.Size {
				report("buffers %d (%s, steps %d–%d, bytes [%d, %d)) and %d (%s, steps %d–%d, bytes [%d, %d)) are live together and overlap",
					j, o.label(), o.First, o.Last, o.Offset, o.Offset+o.Size, i, b.label(), b.First, b.Last, b.Offset, b.Offset+b.Size)
			}
		}
		active = append(active, i)
	}
	return errors.Join(errs...)
}

func (b *Buffer) label() string {
	switch {
	case b.Kind == Workspace:
		return "workspace of " + b.Node
	case len(b.Values) > 0:
		return b.Values[0]
	}
	return string(b.Kind)
}
