package pipeline

import (
	"fmt"
	"slices"
	"strings"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

// fitDetail is what Fit records for Detail while it runs.
type fitDetail struct {
	// original is the target's timeline of the graph before the fit
	// (FitOptions.Timelines), nil when not recorded; originalErr says why
	// the target could not simulate it.
	original    *report.Series
	originalErr error
}

// record keeps, before the fit rewrites m's graph, what Detail needs of
// it.
func (d *fitDetail) record(m *Model, f *Fit, o FitOptions) {
	tl, ok := o.Target.(targets.Timeliner)
	if !o.Timelines || !ok || f.TargetErr != nil || f.Original == nil {
		return
	}
	sim, seq, err := tl.Timeline(m.Graph, nil, f.Original.Writing)
	if err != nil {
		d.originalErr = err
		return
	}
	s := series(sim, seq)
	d.original = &s
}

// series is a simulation's steps as a report series.
func series(sim *memory.Result, seq []*ir.Node) report.Series {
	names := make([]string, len(seq))
	for k, n := range seq {
		names[k] = n.String()
	}
	return report.NewSeries(names, slices.Clone(sim.During))
}

// Detail adds to r, the report of f (Fit.Report), what the HTML report
// draws beyond its numbers:
//
//   - the memory timelines of the original graph and of the rewrite, step
//     by step: under the solver's liveness model in the plan's order (the
//     model the budget bounds; from the problem, Checkmate eq. 2–3), and,
//     when Fit ran with FitOptions.Timelines and the target can simulate
//     its runtime (targets.Timeliner), under the target's model in the
//     order its runtime runs the written models (the liveness target's
//     own timeline would repeat the first and is left out);
//   - the plan's R matrix (report.Compile.PlanStages);
//   - for the nodes Options.Keep pinned, that -keep pinned them.
//
// m is the model f fitted (its graph is the rewrite).
func (f *Fit) Detail(m *Model, r *report.Compile) error {
	res := f.Remat
	if res == nil || res.Problem == nil || res.Plan == nil {
		return fmt.Errorf("%s: Detail: the fit has no plan", m.Name)
	}
	base, err := remat.EvaluateNoRemat(res.Problem)
	if err != nil {
		return err
	}
	p := res.Problem
	orig := make([]string, p.N())
	for i := range orig {
		orig[i] = p.Name(i)
	}
	var rw []string
	for _, i := range res.Plan.Sequence() {
		rw = append(rw, p.Name(int(i)))
	}
	r.Timelines = append(r.Timelines[:0], report.Timeline{
		Model: report.ModelLiveness, Description: r.MemoryModel, Source: report.SourcePredicted,
		BudgetBytes: res.BudgetBytes,
		Original:    report.NewSeries(orig, slices.Clone(base.During)),
		Rewrite:     report.NewSeries(rw, slices.Clone(res.Check.During)),
	})
	if tl, ok := f.Target.(targets.Timeliner); ok && f.detail.original != nil && f.Placement != nil && f.Target.Name() != report.ModelLiveness {
		sim, seq, err := tl.Timeline(m.Graph, f.Rewrite, f.Placement.Writing)
		if err != nil {
			return fmt.Errorf("%s: the target's timeline of the rewrite: %w", m.Name, err)
		}
		r.Timelines = append(r.Timelines, report.Timeline{
			Model: f.Target.Name(), Description: f.Target.Describe(), Source: report.SourcePredicted,
			Original: *f.detail.original, Rewrite: series(sim, seq),
		})
	}
	r.PlanStages = make([][]int32, len(res.Plan.R))
	for t, row := range res.Plan.R {
		for _, i := range row.Elems() {
			r.PlanStages[t] = append(r.PlanStages[t], int32(i))
		}
	}
	for i := range r.Nodes {
		if n := &r.Nodes[i]; strings.HasSuffix(n.Why, remat.WhyPinned) {
			n.Why = strings.TrimSuffix(n.Why, remat.WhyPinned) + "pinned by -keep"
		}
	}
	return nil
}

// ExportOriginal writes m's graph, which must be unfitted (a Rebuild of
// the model f fitted), as f's target predicted it before the fit
// (Fit.Original): with value_info for every intermediate and the
// original's writing (a training graph's sinks last where that lowers
// the peak). verify measures the rewrite against this file, so that the
// measured original is the graph the prediction is for.
func (m *Model) ExportOriginal(path string, f *Fit) error {
	if SamePath(path, m.Source) {
		return fmt.Errorf("refusing to overwrite the input model %s: write the output to another path", m.Source)
	}
	if m.IsTF() {
		return m.exportTF(path, nil)
	}
	opts := m.exportOptions(nil, true)
	if r, ok := f.Target.(onnxRuntime); ok {
		opts.RuntimeOrder = r.ONNXOrder
	}
	if f.Original != nil {
		opts.SinksLast, opts.Order = f.Original.Writing.SinksLast, f.Original.Writing.Order
	}
	return onnxexp.ExportFile(m.Graph, path, opts)
}
