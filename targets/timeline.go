package targets

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
)

// Timeliner is a target that can say, step by step, what its runtime
// holds while it runs a written graph: the simulation under Memory() in
// the runtime's order that its Original or Place predicted a peak from.
// Reports draw it as the memory timeline.
type Timeliner interface {
	// Timeline simulates g, written with w (rw lists the rewrite's
	// recomputations; nil for a graph without any), and returns the
	// result with the node each step runs. Its PeakBytes is the
	// Placement's that Original or Place returned for the same g and w.
	Timeline(g *ir.Graph, rw *remat.RewriteResult, w Writing) (*memory.Result, []*ir.Node, error)
}
