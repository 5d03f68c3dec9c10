// Package liveness is the papers' target: a value is allocated when its
// producer runs and freed after its last reader, graph outputs stay live
// to the end, inputs and parameters are not counted (Checkmate eq. 2–3,
// MOCCASIN App. A.3, Kumar et al. §2.1), and the runtime runs the nodes
// in the file's order. It is the model the solvers' problems are built
// in, and the target for runtimes remat-compile has no model of.
package liveness

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

// Target is the liveness target. The zero value is ready to use.
type Target struct{}

var _ targets.Target = Target{}

// Name is "liveness".
func (Target) Name() string { return "liveness" }

// Describe says what the model is.
func (Target) Describe() string {
	return "liveness: activations allocated when computed and freed after their last use, in the file's order; inputs and parameters not counted"
}

// Memory is the zero memory.Options: liveness.
func (Target) Memory() memory.Options { return memory.Options{} }

// Original is g's liveness peak in its own order.
func (t Target) Original(g *ir.Graph, ours bool) (*targets.Placement, error) {
	return t.place(g)
}

// Place is g's liveness peak in its own order, which is the plan's: the
// runtime is assumed to follow the file, so nothing is forced.
func (t Target) Place(g *ir.Graph, rw *remat.RewriteResult) (*targets.Placement, error) {
	return t.place(g)
}

func (t Target) place(g *ir.Graph) (*targets.Placement, error) {
	r, err := memory.Simulate(g, g.Nodes, t.Memory())
	if err != nil {
		return nil, err
	}
	return &targets.Placement{PeakBytes: r.PeakBytes, PlanOrderPeakBytes: r.PeakBytes, UnforcedPeakBytes: r.PeakBytes}, nil
}
