// Package ort is the ONNX Runtime 1.30 CPU target: the order in which ONNX
// Runtime's sequential executor runs a written ONNX graph (Order,
// Schedule), the model of its allocator (Memory), and how remat-compile
// forces the plan's order on it through the file (Target.Place: the
// exporter's fake data dependencies, the written order of the sinks, and
// order constraints chosen by simulation).
//
// Every prediction is for the settings verify measures with (research
// note ort-execution.md, Q3): arena on, memory pattern off, one intra-op
// thread, sequential executor, level "disabled"; Placement's
// DefaultPeakBytes is for ORT's default options (the memory pattern on,
// DefaultMemory), which verify measures as well. A float16 graph is
// predicted as the graph ORT runs for it (Lower: float32 kernels behind
// inserted Casts).
package ort

import (
	"fmt"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

// Target is ONNX Runtime's target. The zero value is ready to use.
type Target struct {
	// HideShapes writes the graph with its activations' shapes hidden
	// from ORT's allocation planner (exporters/onnx Options.HideShapes),
	// and predicts it so (Memory: memory.Options.Shapeless): the planner
	// then keeps no freed buffer for a later value of the same shape, and
	// a recomputation frees what liveness says it frees.
	HideShapes bool
}

var _ targets.Target = Target{}

// Name is "ort".
func (Target) Name() string { return "ort" }

// Describe names the runtime and the settings the predictions are for.
func (t Target) Describe() string {
	s := "ONNX Runtime 1.30 CPU (arena on, memory pattern off, sequential, level disabled)"
	if t.HideShapes {
		s += ", activation shapes hidden from its planner"
	}
	return s
}

// Memory returns the model of ORT's allocator for the graphs t writes.
func (t Target) Memory() memory.Options { return memoryFor(t.exportOptions(nil)) }

// memoryFor is Memory() for a graph written with opts: with
// Options.HideShapes, the values it hides have no static shape for the
// planner.
func memoryFor(opts onnxexp.Options) memory.Options {
	mo := Memory()
	if opts.HideShapes {
		mo.Shapeless = onnxexp.Shapeless()
		mo.Preamble = hiddenHead
	}
	return mo
}

// hiddenHead is memory.Options.Preamble for a graph g written with its
// shapes hidden: the arena requests of the head that computes the hidden
// inputs' shapes (exporters/onnx HiddenShapeTensors), which ONNX Runtime
// runs before any node of g. Per input, Shape allocates a shape tensor,
// Concat a second one, and the planner releases the first after the
// Concat and the second after the input's hidden Reshape, each unless a
// later int64 tensor of its length takes its buffer (planner reuse: the
// buffer then stays allocated). A later head tensor takes the most
// recently freed buffer of its length; after the head, the body's Concat
// helpers do, one at a time (each dies at the node it precedes), so of
// each length whose tensors the body computes, the buffer freed last
// stays allocated to the end of the run, and the others are released.
//
// Measured (VGG19's training graph, 64², batch 4, fitted at 70% with the
// shapes hidden): the head's Shape and Concat take 256-byte chunks at
// offsets 0 and 256 of the first region, the first is released and the
// second stays; without that chunk the model put the peak 4.5% under
// ORT's, with it the prediction equals the measured peak (951,808 bytes).
func hiddenHead(g *ir.Graph) []memory.ArenaRequest {
	head, body := onnxexp.HiddenShapeTensors(g)
	if len(head) == 0 {
		return nil
	}
	// Replay the head's tensors through the planner's free lists: events
	// are allocations of new buffers (alloc), takes of freed ones, and
	// deaths.
	const (
		alloc = iota
		takeFreed
		dies
	)
	type event struct{ buf, kind int }
	var length []int // per buffer
	var events []event
	free := map[int][]int{} // length → freed buffers, most recent last
	take := func(n int) int {
		if fl := free[n]; len(fl) > 0 {
			b := fl[len(fl)-1]
			free[n] = fl[:len(fl)-1]
			events = append(events, event{b, takeFreed})
			return b
		}
		length = append(length, n)
		b := len(length) - 1
		events = append(events, event{b, alloc})
		return b
	}
	die := func(b int) {
		free[length[b]] = append(free[length[b]], b)
		events = append(events, event{b, dies})
	}
	for _, r := range head {
		shape := take(r)
		dyn := take(r)
		die(shape)
		die(dyn)
	}
	stays := map[int]bool{}
	for n, fl := range free {
		if body[n] && len(fl) > 0 {
			stays[fl[len(fl)-1]] = true
		}
	}
	// A buffer is released at the death of the last tensor in it, unless
	// it stays; a death that a later take follows releases nothing.
	last := map[int]int{}
	for i, e := range events {
		if e.kind == dies {
			last[e.buf] = i
		}
	}
	var reqs []memory.ArenaRequest
	at := make([]int, len(length)) // buffer → its allocation's index in reqs
	for i, e := range events {
		switch {
		case e.kind == alloc:
			at[e.buf] = len(reqs)
			reqs = append(reqs, memory.ArenaRequest{Bytes: 8 * int64(max(length[e.buf], 1))})
		case e.kind == dies && last[e.buf] == i && !stays[e.buf]:
			reqs = append(reqs, memory.ArenaRequest{Free: at[e.buf]})
		}
	}
	return reqs
}

// exportOptions are the options under which the pipeline writes a graph
// for ORT, before the target's choices: value_info for every intermediate
// (ONNX Runtime plans in-place writes and buffer reuse only for values of
// known static shape) but the ones it hides (HideShapes), and the
// rewrite's recomputations.
func (t Target) exportOptions(rw *remat.RewriteResult) onnxexp.Options {
	return onnxexp.Options{ValueInfo: true, HideShapes: t.HideShapes, Remat: rw, RuntimeOrder: Order}
}

// Original predicts g's peak in ORT as the file is (ours false: the
// user's own model, in its own order) or as the pipeline writes it (ours
// true: a graph the pipeline built, such as a training graph, written with
// its sinks last where that lowers the peak). Either way the shapes are
// shown (HideShapes is a choice of the fitted writing): the original is
// the model as the user has it.
func (Target) Original(g *ir.Graph, ours bool) (*targets.Placement, error) {
	opts := Target{}.exportOptions(nil)
	if ours {
		opts = sinksLast(g, opts)
	}
	return placement(g, opts, nil, true)
}

// placement predicts the export of g with opts: its peak, and with
// defaults its peak under ORT's default options (DefaultSessionPeak); ord,
// when not nil, is the order forcing that chose opts.Order.
func placement(g *ir.Graph, opts onnxexp.Options, ord *orderResult, defaults bool) (*targets.Placement, error) {
	pl := &targets.Placement{Writing: writing(opts)}
	if ord != nil {
		pl.PeakBytes, pl.PlanOrderPeakBytes, pl.UnforcedPeakBytes = ord.Peak, ord.PlanPeak, ord.UnforcedPeak
	} else {
		peak, err := Peak(g, opts)
		if err != nil {
			return nil, err
		}
		pl.PeakBytes = peak
	}
	if defaults {
		def, err := DefaultSessionPeak(g, opts)
		if err != nil {
			return nil, err
		}
		pl.DefaultPeakBytes = def
	}
	return pl, nil
}

// Place chooses the writing of the rewritten graph g: its sinks last
// where that lowers ORT's peak and, with a rewrite (rw not nil: the plan
// recomputes something or its order was chosen), the order constraints
// that bring ORT's order closer to the plan's where that lowers the
// predicted peak (forceOrder).
func (t Target) Place(g *ir.Graph, rw *remat.RewriteResult) (*targets.Placement, error) {
	return t.place(g, rw, true)
}

// place is Place, with the peak under ORT's default options when
// defaults is set.
func (t Target) place(g *ir.Graph, rw *remat.RewriteResult, defaults bool) (*targets.Placement, error) {
	opts := sinksLast(g, t.exportOptions(rw))
	if rw == nil {
		return placement(g, opts, nil, defaults)
	}
	ord, err := forceOrder(g, opts)
	if err != nil {
		return nil, err
	}
	opts.Order = ord.Constraints
	return placement(g, opts, ord, defaults)
}

// ONNXOrder is Order: the pipeline gives it to exporters/onnx as
// Options.RuntimeOrder when it writes a model for this target.
func (Target) ONNXOrder(nodes []onnxexp.WrittenNode) []int { return Order(nodes) }

// writing is the format-neutral part of opts.
func writing(opts onnxexp.Options) targets.Writing {
	return targets.Writing{SinksLast: opts.SinksLast, Order: opts.Order, HideShapes: opts.HideShapes}
}

// layoutKey is a value's element size and static shape, the key of ORT's
// buffer reuse ("" when it has none).
func layoutKey(v *ir.Value) string {
	dims, ok := v.Type.Dims()
	if !ok || len(dims) == 0 || v.Type.Kind != ir.KindTensor {
		return ""
	}
	return fmt.Sprint(v.Type.DType.Bits(), dims)
}

// RunOrder is the order in which ONNX Runtime runs g as the pipeline
// writes it (Schedule).
func (t Target) RunOrder(g *ir.Graph) ([]*ir.Node, error) {
	r, err := Schedule(g, t.exportOptions(nil))
	if err != nil {
		return nil, err
	}
	return r.Seq, nil
}
