package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/pipeline"
)

// NodeMemory is what ORT's profile says of one kernel's memory (arena on,
// memory pattern off), less the bytes the arena held before the first
// kernel.
type NodeMemory struct {
	// Node is the kernel's node name (the event name).
	Node string `json:"node"`
	// InUseBytes is mem_bytes_in_use once the kernel has run: its outputs
	// allocated, its scratch memory released (passes/memory's During less
	// the step's workspace).
	InUseBytes int64 `json:"in_use_bytes"`
	// PeakBytes is mem_in_use_peak: the running peak of the run so far.
	PeakBytes int64 `json:"peak_bytes"`
}

// nodeMemory lists the profile's kernels with their memory less baseline.
func nodeMemory(p *ort.Profile, baseline int64) []NodeMemory {
	out := make([]NodeMemory, len(p.Nodes))
	for i, e := range p.Nodes {
		out[i] = NodeMemory{Node: e.Name, InUseBytes: e.MemBytesInUse - baseline, PeakBytes: e.MemInUsePeak - baseline}
	}
	return out
}

// Fitted verifies a fit that compile wrote to rematPath: it rebuilds m's
// original graph (m is the fitted model, f its fit), writes it as the
// target predicted it (pipeline.Model.ExportOriginal) to a temporary file
// removed afterwards, and runs Run on the two files with each kernel's
// memory recorded (Options.NodeMemory). The levels always include
// "disabled", at which ORT runs the written nodes one kernel each, so
// that the measured memory lines up with the target's timeline
// (Report.Measured). Graph inputs get their inferred static shapes unless
// o.InputShapes gives them.
func Fitted(ctx context.Context, m *pipeline.Model, f *pipeline.Fit, rematPath string, o Options) (*Report, error) {
	orig, path, cleanup, err := writeOriginal(ctx, m, f, "original.onnx")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if o.Levels == nil {
		o.Levels = []string{"disabled", "all"}
	}
	if !slices.Contains(o.Levels, "disabled") {
		o.Levels = append([]string{"disabled"}, o.Levels...)
	}
	o.NodeMemory = true
	o.InputShapes = staticInputShapes(orig, o.InputShapes)
	r, err := Run(ctx, path, rematPath, o)
	if err != nil {
		return nil, err
	}
	r.Original = m.Source + " (as remat-compile writes it, value_info added)"
	return r, nil
}

// writeOriginal rebuilds m's original graph (m is the fitted model, f its
// fit) and writes it as the target predicted it
// (pipeline.Model.ExportOriginal) to a file called name in a temporary
// directory, which cleanup removes.
func writeOriginal(ctx context.Context, m *pipeline.Model, f *pipeline.Fit, name string) (*pipeline.Model, string, func(), error) {
	orig, err := m.Rebuild(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	dir, err := os.MkdirTemp("", "remat-verify-")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, name)
	if err := orig.ExportOriginal(path, f); err != nil {
		cleanup()
		return nil, "", nil, fmt.Errorf("verify: writing the original model: %w", err)
	}
	return orig, path, cleanup, nil
}

// staticInputShapes returns shapes with the inferred static shape of every
// graph input of m that it does not give.
func staticInputShapes(m *pipeline.Model, shapes map[string][]int64) map[string][]int64 {
	if shapes == nil {
		shapes = map[string][]int64{}
	}
	for _, v := range m.Graph.Inputs {
		if _, ok := shapes[v.Name]; ok {
			continue
		}
		if dims, ok := v.Type.Dims(); ok {
			shapes[v.Name] = dims
		}
	}
	return shapes
}

// Measured returns the report's measured memory at level for the HTML
// report (package report's Measured), nil when r has no per-node
// memory at that level.
func (r *Report) Measured(level string) *report.Measured {
	for _, lr := range r.Levels {
		if lr.Level != level || len(lr.Orig.Nodes) == 0 || len(lr.Rematted.Nodes) == 0 {
			continue
		}
		equal := true
		for _, o := range lr.Outputs {
			equal = equal && o.Equal
		}
		return &report.Measured{
			Runtime: "ONNX Runtime " + r.ORTVersion, Level: level,
			Settings: fmt.Sprintf("%d intra-op thread, sequential, arena on, memory pattern off, profiling on", r.Threads),
			Source:   report.SourceMeasured,
			Original: measuredSeries(lr.Orig), Rewrite: measuredSeries(lr.Rematted),
			OutputsEqual: equal, OK: r.OK,
		}
	}
	return nil
}

func measuredSeries(m Measure) report.MeasuredSeries {
	s := report.MeasuredSeries{PeakBytes: m.PeakBytes}
	var best int64 = -1
	for _, n := range m.Nodes {
		s.Nodes = append(s.Nodes, n.Node)
		s.InUseBytes = append(s.InUseBytes, n.InUseBytes)
		if n.PeakBytes > best {
			best, s.PeakNode = n.PeakBytes, n.Node
		}
	}
	return s
}
