// Package targets says what a fitted graph is fitted for: the runtime that
// will run it. A target knows, and is the only place that knows, the order
// in which its runtime executes a written graph, how its allocator turns
// that order into bytes (a passes/memory preset), and how to force the
// plan's order on it through the file. The fitting pipeline (package
// pipeline) optimises and reports the target's memory, and labels every
// number with the target's name.
//
// The targets are targets/ort (ONNX Runtime 1.30 CPU), targets/liveness
// (the papers' textbook model: a value lives from its producer to its last
// reader, in the file's order) and, for TensorFlow graphs, targets/tfjs.
package targets

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
)

// Target is one runtime's model.
type Target interface {
	// Name is the target's -target name: "ort", "liveness", "tfjs".
	Name() string
	// Describe says in a line what the target models, for reports.
	Describe() string
	// Memory is the allocator preset: the options under which
	// memory.Simulate predicts the runtime's bytes.
	Memory() memory.Options
	// Original predicts the peak of g, before any fitting, in the
	// runtime: as the file is (ours false: the user's model, in its own
	// order) or as the pipeline writes it (ours true: a graph the pipeline
	// built, such as a training graph), with the writing that gives that
	// peak.
	Original(g *ir.Graph, ours bool) (*Placement, error)
	// Place chooses how to write g, rewritten by the remat pass (rw lists
	// its recomputations; nil when there are none), so that the runtime
	// follows the plan where that lowers its peak, and predicts the peak.
	Place(g *ir.Graph, rw *remat.RewriteResult) (*Placement, error)
}

// Placement is how a target writes a graph and what it predicts for it.
type Placement struct {
	// Writing is what the exporter of the model's format applies.
	Writing Writing
	// PeakBytes is the predicted peak of the written graph in the
	// runtime, under Memory() in the runtime's order.
	PeakBytes int64
	// PlanOrderPeakBytes is the peak under Memory() in the graph's own
	// (the plan's) order, and UnforcedPeakBytes in the runtime's order
	// without Writing.Order; both 0 when not computed.
	PlanOrderPeakBytes, UnforcedPeakBytes int64
	// DefaultPeakBytes is the predicted peak under the runtime's default
	// session settings where they differ from the measured ones (ONNX
	// Runtime: the memory pattern on, over a session's runs); 0 when the
	// target does not predict it.
	DefaultPeakBytes int64
}

// Writing is the format-neutral part of how a graph is written: the
// exporters of each format turn it into their own mechanisms (ONNX: fake
// data dependencies; GraphDef: NoOp control gates).
type Writing struct {
	// SinksLast writes the nodes whose outputs no node reads last, in
	// reverse order (see exporters/onnx Options.SinksLast).
	SinksLast bool
	// Order lists the extra order constraints: each node runs after
	// another.
	Order []remat.OrderConstraint
	// HideShapes hides the activations' shapes from the runtime's
	// allocation planner (ONNX: exporters/onnx Options.HideShapes).
	HideShapes bool
}

// Strings lists w's order constraints as "NODE after SOURCE".
func (w Writing) Strings() []string {
	var out []string
	for _, c := range w.Order {
		out = append(out, c.Node.Name+" after "+c.After.Name)
	}
	return out
}
