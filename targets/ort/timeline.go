package ort

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

var _ targets.Timeliner = Target{}

// Timeline simulates g as the pipeline writes it with w (and rw's
// recomputations) under Memory(), in the order ONNX Runtime runs the
// written model (Simulate): the steps whose largest During is the
// Placement's peak. Constant nodes, which ONNX Runtime turns into
// initializers when it loads the model, run no kernel and are left out
// (such a step allocates nothing, so the peak stays).
func (t Target) Timeline(g *ir.Graph, rw *remat.RewriteResult, w targets.Writing) (*memory.Result, []*ir.Node, error) {
	opts := t.exportOptions(rw)
	opts.SinksLast, opts.Order, opts.HideShapes = w.SinksLast, w.Order, w.HideShapes
	if opts.Remat == nil && len(opts.Order) > 0 {
		opts.Remat = &remat.RewriteResult{Graph: g} // eager constraints (Place)
	}
	sim, seq, err := Simulate(g, opts)
	if err != nil {
		return nil, nil, err
	}
	out := *sim
	out.During, out.After, out.Workspace = nil, nil, nil
	var steps []*ir.Node
	out.PeakStep = -1
	for i, n := range seq {
		if isConstant(n) {
			continue
		}
		if i == sim.PeakStep {
			out.PeakStep = len(steps)
		}
		steps = append(steps, n)
		out.During = append(out.During, sim.During[i])
		out.After = append(out.After, sim.After[i])
		out.Workspace = append(out.Workspace, sim.Workspace[i])
	}
	return &out, steps, nil
}
