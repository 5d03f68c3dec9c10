// Package tfjs is the TensorFlow.js 4.22 target (wasm and cpu backends):
// the order in which TensorFlow.js's graph executor runs a written
// TensorFlow graph (Order, Schedule), the model of the bytes tf.profile
// measures (Memory), and how remat-compile forces a plan's order on it
// through the file (Target.Place: exporters/graphdef's NoOp gates, only
// where TensorFlow.js's own order would run a recomputation too early).
//
// # What the memory model predicts
//
// tf.profile's peakBytes, less the bytes allocated before the call (the
// weights and the feeds): the largest count of the engine's bytes sampled
// after each kernel. The engine counts every live tensor's bytes, per
// tensor, not per buffer (tfjs-core engine.ts trackTensor), so a view
// (Reshape, or Identity on the cpu backend, which shares its input's data)
// counts as much as a copy (Identity on wasm): the count, and so the
// model, is the same on both backends, and Memory has no views and no
// in-place writes. A value takes its element count times the size of the
// type tfjs keeps it in (4 bytes for every float and integer type, which
// tfjs stores as float32 and int32; 1 for bool). The executor disposes a
// node's outputs right after the last node that reads it, by data or
// control input, has run (getNodeLiveUntilMap), so a control consumer
// holds a value as a data one does (memory.Options.Holds); the weights,
// the feeds and the outputs of the nodes whose outputs are requested are
// never disposed during the call. The intermediate tensors of the ops
// that tfjs-core composes from several kernels count while the op runs
// (Workspace); temporaries inside one kernel are invisible to the engine,
// and a gate's NoOp output (a 4-byte scalar) is not counted.
package tfjs

import (
	"fmt"
	"slices"
	"strings"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

// Backend is a TensorFlow.js backend: "wasm" (the default) or "cpu".
type Backend string

// The backends.
const (
	WASM Backend = "wasm"
	CPU  Backend = "cpu"
)

// Target is TensorFlow.js's target. The zero value is the wasm backend.
type Target struct {
	// Backend is the backend the predictions are for ("" means WASM).
	// tf.profile counts the same bytes on both (see the package doc).
	Backend Backend
}

var _ targets.Target = Target{}

// Name is "tfjs".
func (Target) Name() string { return "tfjs" }

// Describe names the runtime and what is predicted.
func (t Target) Describe() string {
	b := t.Backend
	if b == "" {
		b = WASM
	}
	return fmt.Sprintf("TensorFlow.js 4.22 (%s backend; tf.profile's peak less weights and feeds, execute() order)", b)
}

// Memory returns the model of the bytes tf.profile counts: liveness with
// tfjs's element sizes, control consumers holding values.
func (Target) Memory() memory.Options { return Memory() }

// Memory is the model of the bytes TensorFlow.js's engine counts (see the
// package doc), for any order of a graph's nodes; Schedule adds what the
// written file holds besides (gates, Consts with control inputs, outputs
// of requested nodes).
func Memory() memory.Options {
	return memory.Options{ValueBytes: Bytes, Holds: controlHolds, Workspace: Workspace}
}

// Workspace is the bytes of the tensors an op of TensorFlow.js 4.22 holds
// besides its outputs when the engine samples its last kernel: the ops
// that tfjs-core composes from several kernels, whose intermediate
// tensors the engine counts until the op returns (tfjs-core ops/*.ts):
//
//	FusedBatchNorm*  the kernel's result before the reshape that returns it
//	                 (and x reshaped to 4-D, for x of rank below 4)
//	_FusedMatMul     a and b reshaped to 3-D, and the kernel's result before its reshape
//	AvgPool          the kernel's result before the cast that returns it
//	                 (and x reshaped to 4-D, for a 3-D x)
//	Pack             tfjs-converter squeezes the first input to compare shapes,
//	                 and squeezes and reshapes each input of another shape
//	Select, SelectV2 where() broadcasts all three operands to the output's
//	                 shape first (broadcastTo: a Tile, or a clone where the
//	                 shape is the output's already), each a tensor the engine
//	                 counts, in its own element type
//
// Every other op the models use runs one kernel (measured: the test
// compares every node's workspace with the profile's kernels).
func Workspace(n *ir.Node) int64 {
	if n.Domain != ir.TFDomain {
		return 0
	}
	size := func(v *ir.Value) int64 {
		if v == nil {
			return 0
		}
		b, _ := Bytes(v)
		return b
	}
	switch n.Op {
	case "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3":
		ws := size(n.Outputs[0])
		if r := n.Inputs[0].Type.Rank(); r >= 0 && r < 4 {
			ws += size(n.Inputs[0])
		}
		return ws
	case "_FusedMatMul":
		return size(n.Inputs[0]) + size(n.Inputs[1]) + size(n.Outputs[0])
	case "AvgPool":
		ws := size(n.Outputs[0])
		if n.Inputs[0].Type.Rank() == 3 {
			ws += size(n.Inputs[0])
		}
		return ws
	case "Select", "SelectV2":
		var ws int64
		for _, v := range n.Inputs {
			b, _ := Bytes(&ir.Value{Type: ir.TensorType{DType: v.Type.DType, Shape: n.Outputs[0].Type.Shape}})
			ws += b
		}
		return ws
	case "Pack":
		ws := size(n.Inputs[0])
		for _, v := range n.Inputs[1:] {
			if !v.Type.Equal(n.Inputs[0].Type) {
				ws += 2 * size(v)
			}
		}
		return ws
	}
	return 0
}

// Bytes is the size of v as TensorFlow.js keeps it: its element count
// times 4 for float and integer types (tfjs computes in float32 and
// int32), 1 for bool, 8 for complex64; unknown for strings and unknown
// shapes or types. The outputs of FusedBatchNorm* after y take nothing:
// TensorFlow.js does not compute them.
func Bytes(v *ir.Value) (int64, bool) {
	if d := v.Def; d != nil && v.Index > 0 && strings.HasPrefix(d.Op, "FusedBatchNorm") && d.Domain == ir.TFDomain {
		return 0, true // tfjs computes y alone, not the batch statistics
	}
	n, ok := v.Type.NumElements()
	if !ok {
		return 0, false
	}
	switch dt := v.Type.DType; {
	case dt == ir.Bool:
		return n, true
	case dt == ir.Complex64:
		return 8 * n, true
	case dt == ir.String || dt == ir.Undefined:
		return 0, false
	case dt.IsFloat() || dt.IsInt():
		return 4 * n, true
	}
	return 0, false
}

// controlHolds keeps the outputs of n's control inputs until n has run.
func controlHolds(n *ir.Node) []*ir.Value {
	var out []*ir.Value
	for _, c := range n.Control {
		for _, o := range c.Outputs {
			if o != nil {
				out = append(out, o)
			}
		}
	}
	return out
}

// exportOptions are the exporter's options for writing g for TensorFlow.js
// (with the rewrite rw, nil for none) before the target's order
// constraints.
func exportOptions(rw *remat.RewriteResult) gdexp.Options {
	return gdexp.Options{Format: gdexp.FormatTFJS, Remat: rw, RuntimeOrder: Order}
}

// Run is the order in which TensorFlow.js runs a written graph, in terms
// of the graph's nodes, with what the written file holds besides.
type Run struct {
	// Seq is the graph's nodes that TensorFlow.js runs, in its order.
	Seq []*ir.Node
	// Holds maps a node of Seq to values that stay allocated until it
	// has run although it does not read them (control inputs, and what the
	// exporter's gates and the Consts with control inputs that run after
	// it and before the next node of Seq read; outputs of requested nodes
	// held to the end).
	Holds map[*ir.Node][]*ir.Value
	// Workspace maps a node to the bytes of the Identity copies the
	// exporter put in front of it to carry a gate.
	Workspace map[*ir.Node]int64
	// Written is the graph as written and Order its run order (positions
	// in Written.Nodes).
	Written *gdexp.Written
	Order   []int
}

// Schedule simulates TensorFlow.js's order of the graph that
// exporters/graphdef writes for g with opts (opts.RuntimeOrder is set to
// Order).
func Schedule(g *ir.Graph, opts gdexp.Options) (*Run, error) {
	opts.RuntimeOrder = Order
	w, err := gdexp.WrittenGraph(g, opts)
	if err != nil {
		return nil, err
	}
	order, err := Order(w)
	if err != nil {
		return nil, err
	}
	r := &Run{Holds: map[*ir.Node][]*ir.Value{}, Workspace: map[*ir.Node]int64{}, Written: w, Order: order}
	byName := make(map[string]int, len(w.Nodes))
	for i, n := range w.Nodes {
		byName[n.Name] = i
	}
	hold := func(at *ir.Node, vs ...*ir.Value) {
		for _, v := range vs {
			if v != nil && !slices.Contains(r.Holds[at], v) {
				r.Holds[at] = append(r.Holds[at], v)
			}
		}
	}
	var prev *ir.Node // the last node of g run
	for _, p := range order {
		wn := &w.Nodes[p]
		if wn.Node != nil {
			r.Seq = append(r.Seq, wn.Node)
			prev = wn.Node
			hold(prev, controlHolds(prev)...)
			continue
		}
		if prev == nil {
			continue
		}
		// A gate, an Identity or a Const: it reads its inputs where it
		// runs, after prev.
		for _, in := range wn.Inputs {
			src := w.Nodes[byName[nodeName(in)]]
			if src.Node != nil {
				hold(prev, src.Node.Outputs...)
			}
		}
		if wn.Helper == "identity" {
			// Its copy lives until the node it feeds, which runs right
			// after it: counted as that node's workspace.
			if b, ok := identityBytes(w, byName, wn); ok {
				for _, c := range w.Nodes {
					if c.Node != nil && slices.ContainsFunc(c.Inputs, func(s string) bool { return nodeName(s) == wn.Name }) {
						r.Workspace[c.Node] += b
					}
				}
			}
		}
	}
	// The outputs of a requested node are never disposed, all of them.
	if len(r.Seq) > 0 {
		last := r.Seq[len(r.Seq)-1]
		for _, o := range g.Outputs {
			if o.Def != nil {
				hold(last, o.Def.Outputs...)
			}
		}
	}
	return r, nil
}

// identityBytes is the size of the copy an exporter's Identity makes.
func identityBytes(w *gdexp.Written, byName map[string]int, id *gdexp.WrittenNode) (int64, bool) {
	if len(id.Inputs) == 0 {
		return 0, false
	}
	ref := id.Inputs[0]
	src := w.Nodes[byName[nodeName(ref)]]
	switch {
	case src.Value != nil:
		return Bytes(src.Value)
	case src.Node != nil:
		k := 0
		if i := len(nodeName(ref)); i < len(ref) {
			fmt.Sscanf(ref[i+1:], "%d", &k)
		}
		if k < len(src.Node.Outputs) && src.Node.Outputs[k] != nil {
			return Bytes(src.Node.Outputs[k])
		}
	}
	return 0, false
}

// Simulate simulates g under Memory() in the order TensorFlow.js runs the
// model that exporting g with opts writes, with what the written file
// holds (Run), and returns the result and the run.
func Simulate(g *ir.Graph, opts gdexp.Options) (*memory.Result, *Run, error) {
	run, err := Schedule(g, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := simulateRun(g, run)
	return res, run, err
}

func simulateRun(g *ir.Graph, run *Run) (*memory.Result, error) {
	mo := Memory()
	mo.Holds = func(n *ir.Node) []*ir.Value { return run.Holds[n] }
	mo.Workspace = func(n *ir.Node) int64 { return Workspace(n) + run.Workspace[n] }
	return memory.Simulate(g, run.Seq, mo)
}

// RuntimeOrder returns g's nodes in the order TensorFlow.js runs g as it
// is written (no rewrite), followed by the nodes it does not run (they
// compute nothing a requested output needs), in g's order: the "file
// order" of a TensorFlow graph under this target, which the pipeline
// plans in.
func (Target) RuntimeOrder(g *ir.Graph) ([]*ir.Node, error) {
	run, err := Schedule(g, exportOptions(nil))
	if err != nil {
		return nil, err
	}
	seq := slices.Clone(run.Seq)
	in := make(map[*ir.Node]bool, len(seq))
	for _, n := range seq {
		in[n] = true
	}
	for _, n := range g.Nodes {
		if !in[n] {
			seq = append(seq, n)
		}
	}
	return seq, nil
}

// SimulateWritten simulates g under Memory() as TensorFlow.js runs it as
// written (no rewrite): the result and the sequence it refers to.
func (Target) SimulateWritten(g *ir.Graph) (*memory.Result, []*ir.Node, error) {
	res, run, err := Simulate(g, exportOptions(nil))
	if err != nil {
		return nil, nil, err
	}
	return res, run.Seq, nil
}

// Original predicts g's peak in TensorFlow.js as written, without a
// rewrite (ours does not matter: a TensorFlow graph is written in its own
// order either way).
func (t Target) Original(g *ir.Graph, ours bool) (*targets.Placement, error) {
	res, _, err := Simulate(g, exportOptions(nil))
	if err != nil {
		return nil, err
	}
	return &targets.Placement{PeakBytes: res.PeakBytes}, nil
}

// Place chooses how to write the rewritten graph g (rw lists its
// recomputations, nil for none) for TensorFlow.js and predicts its peak:
// the exporter gates each recompute chain that TensorFlow.js's order would
// run before the node the plan runs it after, and, where TensorFlow.js's
// order of the other nodes still loses the plan's savings (its peak in
// that order exceeds the peak in the plan's), order constraints chosen by
// simulation (targets.ForceOrder) hold the nodes it runs too early behind
// their plan predecessors, or behind the node of those the plan runs
// before them that TensorFlow.js runs last (ForceOptions.Latest: its
// stack dives past a node the plan runs earlier), with gates too.
func (t Target) Place(g *ir.Graph, rw *remat.RewriteResult) (*targets.Placement, error) {
	opts := exportOptions(rw)
	plan, err := memory.Simulate(g, g.Nodes, Memory())
	if err != nil {
		return nil, err
	}
	simulate := func(cons []remat.OrderConstraint) (*memory.Result, []*ir.Node, error) {
		o := opts
		o.Order = cons
		res, run, err := Simulate(g, o)
		if err != nil {
			return nil, nil, err
		}
		return res, run.Seq, nil
	}
	res, _, err := simulate(nil)
	if err != nil {
		return nil, err
	}
	unforced := res.PeakBytes
	pl := &targets.Placement{PeakBytes: unforced, PlanOrderPeakBytes: plan.PeakBytes, UnforcedPeakBytes: unforced}
	if rw == nil || unforced <= plan.PeakBytes {
		return pl, nil
	}
	r, err := targets.ForceOrder(g, plan.PeakBytes, targets.ForceOptions{
		Simulate: simulate,
		CanForce: canGate,
		IsSource: hasOutput,
		// Kahn over a LIFO stack dives into the latest readied node: a
		// node can run after its plan predecessor and still before a
		// node the plan runs earlier.
		Latest: true,
		// The model predicts tf.profile to the byte, but every gate is a
		// node more: keep constraints that gain 0.2% of the peak.
		MinGain: max(unforced/500, 1),
	})
	if err != nil {
		return nil, err
	}
	pl.Writing.Order, pl.PeakBytes = r.Constraints, r.Peak
	return pl, nil
}

// PlaceTiled is Place for a graph written without a rewrite (a tiled
// graph): g's own order is the plan's, and where TensorFlow.js's order of
// the written graph loses that order's peak (its stack runs a band's
// Slice of a feed at the start and holds it), order constraints chosen
// by simulation hold the nodes it runs too early, as Place does for a
// rewrite's.
func (t Target) PlaceTiled(g *ir.Graph) (*targets.Placement, error) {
	return t.Place(g, &remat.RewriteResult{Graph: g})
}

// canGate reports whether the exporter can hold n back with a gate: a
// control input on an op that takes one safely, or an Identity on one of
// its inputs.
func canGate(n *ir.Node) bool {
	return gdexp.SafeControl(n.Op) || len(n.Inputs) > 0
}

// hasOutput reports whether a node has an output for a gate to wait for
// (the gate waits for the node itself: any node with outputs that runs).
func hasOutput(n *ir.Node) bool {
	for _, o := range n.Outputs {
		if o != nil {
			return true
		}
	}
	return false
}

// TFOrder is Order: the pipeline gives it to exporters/graphdef as
// Options.RuntimeOrder when it writes a model for this target.
func (Target) TFOrder(w *gdexp.Written) ([]int, error) { return Order(w) }
