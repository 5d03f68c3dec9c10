package liveness

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

var _ targets.Timeliner = Target{}

// Timeline simulates g under liveness in its own order, as Place does.
func (t Target) Timeline(g *ir.Graph, _ *remat.RewriteResult, _ targets.Writing) (*memory.Result, []*ir.Node, error) {
	r, err := memory.Simulate(g, g.Nodes, t.Memory())
	if err != nil {
		return nil, nil, err
	}
	return r, g.Nodes, nil
}
