package pipeline

import (
	"github.com/remat-compile/remat/passes/arena"
	"github.com/remat-compile/remat/targets"
)

// Arena plans every activation of m's graph, in its order (after Fit: the
// plan's), at a static offset in one arena (passes/arena), with the
// target's memory model deciding which values share a buffer (views,
// in-place writes). It is the memory an edge runtime that follows the
// file's order must reserve; a nil target means ort.
func (m *Model) Arena(t targets.Target, o arena.Options) (*arena.Plan, error) {
	if t == nil {
		t = Targets()[0]
	}
	p, err := arena.New(m.Graph, m.Graph.Nodes, t.Memory(), o)
	if err != nil {
		return nil, err
	}
	if err := arena.Check(p); err != nil {
		return nil, err
	}
	return p, nil
}
