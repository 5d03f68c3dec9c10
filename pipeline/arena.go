package pipeline

import (
	"io"

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

// WriteArena plans m's activations (Arena, default options) and writes the
// plan as JSON (remat-arena/v1) to path, all or nothing.
func (m *Model) WriteArena(path string, t targets.Target) (*arena.Plan, error) {
	p, err := m.Arena(t, arena.Options{})
	if err != nil {
		return nil, err
	}
	data, err := p.JSON()
	if err != nil {
		return nil, err
	}
	return p, WriteFileAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}
