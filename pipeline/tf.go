package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/exporters/report"
	gdimp "github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
	"github.com/remat-compile/remat/targets/ort"
	"github.com/remat-compile/remat/targets/tfjs"
)

// TensorFlow graphs (GraphDef .pb, TensorFlow.js model.json, zoo:NAME:tf)
// go through the same pipeline as ONNX models, with the tfjs target by
// default and exporters/graphdef writing them back in their own formats.

// IsTF reports whether g is a TensorFlow graph: read from a GraphDef or a
// TensorFlow.js model, or built of TensorFlow ops (zoo:NAME:tf).
func IsTF(g *ir.Graph) bool {
	if _, ok := g.Ext.(*gdimp.ModelInfo); ok {
		return true
	}
	for _, n := range g.Nodes {
		if n.Domain != ir.TFDomain {
			return false
		}
	}
	return len(g.Nodes) > 0
}

// IsTF reports whether m's graph is a TensorFlow graph.
func (m *Model) IsTF() bool { return IsTF(m.Graph) }

// DefaultTarget is the target of m's format: tfjs for a TensorFlow graph,
// ort for an ONNX model.
func (m *Model) DefaultTarget() targets.Target {
	if m.IsTF() {
		return tfjs.Target{}
	}
	return ort.Target{}
}

// TargetFor returns the target a -target name selects for m: "" means
// DefaultTarget; a runtime that does not run m's format is an
// *OptionError naming the one that does.
func (m *Model) TargetFor(name string) (targets.Target, error) {
	if name == "" {
		return m.DefaultTarget(), nil
	}
	t, err := LookupTarget(name)
	if err != nil {
		return nil, err
	}
	return t, m.checkTarget(t)
}

// checkTarget refuses a runtime that does not run m's format.
func (m *Model) checkTarget(t targets.Target) error {
	switch {
	case m.IsTF() && t.Name() == "ort":
		return optionErrorf("target ort: %s is a TensorFlow graph, which ONNX Runtime does not run; use tfjs (the default for TensorFlow graphs) or liveness", m.Name)
	case !m.IsTF() && t.Name() == "tfjs":
		return optionErrorf("target tfjs: %s is an ONNX model, which TensorFlow.js does not run; use ort (the default for ONNX models) or liveness", m.Name)
	}
	return nil
}

// runtimeOrderer is a target whose runtime runs a graph in an order of its
// own that the file does not fix (targets/tfjs): the pipeline plans in
// that order.
type runtimeOrderer interface {
	RuntimeOrder(g *ir.Graph) ([]*ir.Node, error)
}

// runtimeSimulator is a target that simulates a graph as its runtime runs
// the written file (targets/tfjs).
type runtimeSimulator interface {
	SimulateWritten(g *ir.Graph) (*memory.Result, []*ir.Node, error)
}

// tfRuntime is a target that models the order of a TensorFlow runtime:
// the exporter checks the recompute chains against it
// (exporters/graphdef Options.RuntimeOrder).
type tfRuntime interface {
	TFOrder(w *gdexp.Written) ([]int, error)
}

// useRuntimeOrder sets g's order to the one t's runtime runs g in, when t
// has one of its own (the "file order" of a TensorFlow graph under tfjs).
func useRuntimeOrder(g *ir.Graph, t targets.Target) error {
	r, ok := t.(runtimeOrderer)
	if !ok {
		return nil
	}
	seq, err := r.RuntimeOrder(g)
	if err != nil {
		return err
	}
	if err := g.SetOrder(seq); err != nil {
		return fmt.Errorf("%s's order: %w", t.Name(), err)
	}
	return nil
}

// trainError adds to an autodiff error on a TensorFlow graph what it
// means for one: the training graph of a TensorFlow graph is written in
// the forward ops TensorFlow.js's graph executor runs (it has none of
// TensorFlow's backward ops), and an op on a differentiable path that
// has no such rule (passes/autodiff's *NoGradientError, which names each
// op and node) stops it. Other errors are returned as they are.
func (m *Model) trainError(err error) error {
	var ng *autodiff.NoGradientError
	if !errors.As(err, &ng) {
		return err
	}
	return fmt.Errorf("%s: -train on a TensorFlow graph: passes/autodiff writes a TensorFlow graph's gradients in forward ops TensorFlow.js runs and has no such gradient rule for these ops on a differentiable path (name trainable parameters that do not reach the loss through them with -trainable, or compile the model's ONNX form with -train):\n%w", m.Name, err)
}

// tfjsReport fills the report's tfjs fields for a TensorFlow runtime's
// target.
func (f *Fit) tfjsReport(r *report.Compile) {
	if _, ok := f.Target.(tfRuntime); !ok || f.TargetErr != nil || f.Placement == nil || f.Original == nil {
		return
	}
	r.TFJSBeforePeakBytes, r.TFJSAfterPeakBytes = f.Original.PeakBytes, f.Placement.PeakBytes
	r.TFJSPlanOrderPeakBytes = f.Placement.PlanOrderPeakBytes
	r.OrderConstraints = len(f.Placement.Writing.Order)
	r.OrderedNodes = f.Placement.Writing.Strings()
}

// checkOutputFormat refuses an output path whose extension names another
// format than m's: a TensorFlow graph is written as .pb or .json, an ONNX
// model as anything else (.onnx).
func (m *Model) checkOutputFormat(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	tfExt := ext == ".pb" || ext == ".json"
	switch {
	case m.IsTF() && !tfExt:
		return optionErrorf("%s: %s is a TensorFlow graph, written as a TensorFlow.js model.json (.json) or a binary GraphDef (.pb), not %q; remat-compile does not convert between TensorFlow and ONNX", path, m.Name, ext)
	case !m.IsTF() && tfExt:
		return optionErrorf("%s: %s is an ONNX model; remat-compile writes it as ONNX (.onnx), it does not convert between ONNX and TensorFlow", path, m.Name)
	}
	return nil
}

// exportTF writes m's TensorFlow graph to path: a TensorFlow.js model.json
// (".json") or a binary GraphDef (anything else), with f's rewrite forced
// into place for f's target.
func (m *Model) exportTF(path string, f *Fit) error {
	opts := gdexp.Options{}
	if !strings.HasPrefix(m.Source, "zoo:") {
		opts.Source = m.Source
	}
	if f != nil {
		res := f.Remat
		opts.Remat = f.Rewrite
		if opts.Remat == nil {
			// The metadata says the plan recomputes nothing (verify
			// checks the placement all the same).
			opts.Remat = &remat.RewriteResult{Graph: m.Graph}
		}
		opts.RematInfo = gdexp.RematInfo{
			Solver:             PlanSolver(res),
			BudgetBytes:        res.BudgetBytes,
			PredictedPeakBytes: res.AfterPeakBytes,
			OriginalPeakBytes:  res.BeforePeakBytes,
		}
		if r, ok := f.Target.(tfRuntime); ok {
			opts.RuntimeOrder = r.TFOrder
			if f.TargetErr == nil && f.Placement != nil && f.Original != nil {
				opts.RematInfo.TFJSPredictedPeakBytes = f.Placement.PeakBytes
				opts.RematInfo.TFJSOriginalPeakBytes = f.Original.PeakBytes
			}
		}
		if f.Placement != nil {
			opts.Order = f.Placement.Writing.Order
		}
	}
	return gdexp.ExportFile(m.Graph, path, opts)
}
