package measure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
)

// runOverhead calibrates the fixed cost that every single-node measurement
// includes once but a whole model pays once in all (the cost of one
// Session.Run, and of the sinks that read the node's outputs): the time
// of a chain of one tiny node less the per-node slope of chains of 1 and
// 9 such nodes (one-element Neg, read by a sink, as measureOne runs
// them).
func runOverhead(dir, level, clock string, warmup, repeat int) (time.Duration, error) {
	const long = 9
	var models []ort.TimedModel
	for _, k := range []int{1, long} {
		g := ir.NewGraph("chain")
		g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
		typ := ir.TensorOf(ir.Float32, 1)
		v := g.AddInput("x", typ)
		for i := range k {
			n := g.NewNode("Neg", "", []*ir.Value{v}, []string{fmt.Sprintf("y%d", i)})
			n.Name = fmt.Sprintf("neg%d", i)
			n.Outputs[0].Type = typ
			v = n.Outputs[0]
		}
		addSink(g, v)
		path := filepath.Join(dir, fmt.Sprintf("chain%d.onnx", k))
		if err := onnxexp.ExportFile(g, path, onnxexp.Options{}); err != nil {
			return 0, err
		}
		x, err := ort.NewTensor([]int64{1}, []float32{0.5})
		if err != nil {
			return 0, err
		}
		models = append(models, ort.TimedModel{Path: path, Inputs: map[string]ort.Tensor{"x": x}})
	}
	opts := ort.MeasureOptions(level)
	times, err := ort.TimeModels(models, opts, warmup+5, max(4*repeat, 100))
	if err != nil {
		return 0, fmt.Errorf("calibrating the run overhead: %w", err)
	}
	t1, tk := ort.Median(times[0].Times(clock)), ort.Median(times[1].Times(clock))
	slope := (tk - t1) / (long - 1)
	return max(0, min(t1-slope, t1)), nil
}

// measureSignatures measures every signature that can be measured.
func (p *profiler) measureSignatures(ctx context.Context) error {
	o, run := p.o, p.run
	todo := 0
	for _, e := range p.entries {
		if e.skip == "" {
			todo++
		}
	}
	captured := map[*ir.Value]ort.Tensor{}
	for _, pm := range p.models {
		c, err := captureValues(pm, p.entries, o.Level, p.dir)
		if err != nil {
			return err
		}
		for v, t := range c {
			captured[v] = t
		}
	}
	progress := func(pr Progress) {
		if o.Progress != nil {
			o.Progress(pr)
		}
	}
	opts := ort.MeasureOptions(o.Level)
	done := 0
	for k, e := range p.entries {
		if e.skip != "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		progress(Progress{Done: done, Total: todo, Op: e.m.Op, Shapes: e.m.Shapes})
		done++
		secs, skip, detail, err := p.measureOne(e, captured, opts, k)
		if err != nil {
			return err
		}
		if skip != "" {
			e.skip, e.detail = skip, detail
			continue
		}
		e.m.Seconds = sig4(max(secs-run.Overhead.Seconds(), minMeasuredSeconds))
		e.m.Repeats = o.Repeat
		run.Signatures++
	}
	progress(Progress{Done: done, Total: todo})
	return nil
}

// measureOne runs one signature's single-node model once to check it,
// then times it. A node ONNX Runtime cannot run alone, or that computes
// other output shapes than inferred, is skipped with a reason.
func (p *profiler) measureOne(e *sigEntry, captured map[*ir.Value]ort.Tensor, opts ort.Options, k int) (secs float64, skip, detail string, err error) {
	o, dir := p.o, p.dir
	g, inputs, _, err := singleNode(e, captured, o.Seed, false, false)
	if err != nil {
		return 0, "no values for its inputs", err.Error(), nil
	}
	path := filepath.Join(dir, fmt.Sprintf("node%05d.onnx", k))
	defer os.Remove(path)
	if err := onnxexp.ExportFile(g, path, onnxexp.Options{}); err != nil {
		return 0, "cannot be written as a model alone", err.Error(), nil
	}
	gs, sinkInputs, cold, err := singleNode(e, captured, o.Seed, true, true)
	evict := 0
	for _, l := range e.cold {
		evict = max(evict, o.Caches.evictFor(l))
	}
	if err != nil {
		return 0, "no values for its inputs", err.Error(), nil
	}
	sinkPath := filepath.Join(dir, fmt.Sprintf("node%05d.sink.onnx", k))
	defer os.Remove(sinkPath)
	if err := onnxexp.ExportFile(gs, sinkPath, onnxexp.Options{}); err != nil {
		return 0, "cannot be written as a model alone", err.Error(), nil
	}
	check := opts
	check.Profile = false
	res, err := ort.Run(path, inputs, check)
	if err != nil {
		return 0, "ONNX Runtime cannot run it alone", firstLine(err.Error()), nil
	}
	for i, v := range e.node.Outputs {
		if v == nil {
			continue
		}
		want, _ := v.Type.Dims()
		got, ok := res.Outputs[fmt.Sprintf("out%d", i)]
		if !ok || !slices.Equal(got.Shape, want) && !(len(want) == 0 && len(got.Shape) == 0) {
			return 0, "alone it computes other output shapes than inferred (its inputs' values matter)",
				fmt.Sprintf("%s output %d: %v, inferred %v", e.node, i, got.Shape, want), nil
		}
	}
	times, err := ort.TimeModels([]ort.TimedModel{{Path: sinkPath, Inputs: sinkInputs, ColdInputs: cold, EvictBytes: evict}}, opts, o.Warmup, o.Repeat)
	if err != nil {
		return 0, "ONNX Runtime cannot run it alone", firstLine(err.Error()), nil
	}
	return ort.Median(times[0].Times(o.Clock)).Seconds(), "", "", nil
}
