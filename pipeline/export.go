package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/targets"
)

// onnxRuntime is a target that models the order of an ONNX runtime: the
// exporter checks the recompute chains against it (exporters/onnx
// Options.RuntimeOrder).
type onnxRuntime interface {
	ONNXOrder(nodes []onnxexp.WrittenNode) []int
}

// Export writes m's graph to path in its format (ONNX; a TensorFlow graph
// as a TensorFlow.js model.json when path ends in ".json", else as a
// binary GraphDef, see exportTF): with f, the fitted
// graph as f's placement says (order forcing, the plan in the metadata,
// value_info for every intermediate); with a nil f, the graph as it is,
// with value_info for every intermediate when valueInfo is set (f == nil
// only). The file is written through a temporary file renamed into place,
// and never over the source.
func (m *Model) Export(path string, f *Fit, valueInfo bool) error {
	if SamePath(path, m.Source) {
		return fmt.Errorf("refusing to overwrite the input model %s: write the output to another path", m.Source)
	}
	if err := m.checkOutputFormat(path); err != nil {
		return err
	}
	if m.IsTF() {
		return m.exportTF(path, f)
	}
	return onnxexp.ExportFile(m.Graph, path, m.exportOptions(f, valueInfo))
}

// exportOptions are the exporter's options for writing m after f.
func (m *Model) exportOptions(f *Fit, valueInfo bool) onnxexp.Options {
	opts := onnxexp.Options{ValueInfo: valueInfo, Source: m.Source}
	if f == nil {
		return opts
	}
	res := f.Remat
	opts.ValueInfo = true
	// The rewrite carries the plan into the metadata even when nothing is
	// recomputed (verify checks the placement of an empty list); Placement
	// decides the forcing.
	opts.Remat = f.Rewrite
	if opts.Remat == nil {
		opts.Remat = res.Rewrite
	}
	opts.RematInfo = onnxexp.RematInfo{
		Solver:             PlanSolver(res),
		BudgetBytes:        res.BudgetBytes,
		PredictedPeakBytes: res.AfterPeakBytes,
		OriginalPeakBytes:  res.BeforePeakBytes,
	}
	if r, ok := f.Target.(onnxRuntime); ok {
		opts.RuntimeOrder = r.ONNXOrder
		if f.Placement != nil && f.Placement.PeakBytes > 0 {
			opts.RematInfo.ORTPredictedPeakBytes = f.Placement.PeakBytes
			opts.RematInfo.ORTDefaultPredictedPeakBytes = f.Placement.DefaultPeakBytes
			if f.Original != nil {
				opts.RematInfo.ORTOriginalPeakBytes = f.Original.PeakBytes
				opts.RematInfo.ORTDefaultOriginalPeakBytes = f.Original.DefaultPeakBytes
			}
		}
	}
	if f.Placement != nil {
		w := f.Placement.Writing
		opts.SinksLast, opts.Order, opts.HideShapes = w.SinksLast, w.Order, w.HideShapes
		if opts.Remat == nil && len(opts.Order) > 0 {
			// Order constraints without recomputations (ORT's eager
			// constraints): written over an empty rewrite.
			opts.Remat = &remat.RewriteResult{Graph: m.Graph}
		}
	}
	return opts
}

// PlanSolver names the solver of the plan: "checkmate-milp", or "auto
// (checkmate-milp)" when a portfolio chose it.
func PlanSolver(res *remat.Result) string {
	if res.PlanSolver == "" || res.PlanSolver == res.Solver {
		return res.Solver
	}
	return res.Solver + " (" + res.PlanSolver + ")"
}

// Writing returns f's placement's writing (the zero Writing when there is
// none).
func (f *Fit) Writing() targets.Writing {
	if f == nil || f.Placement == nil {
		return targets.Writing{}
	}
	return f.Placement.Writing
}

// SamePath reports whether a and b name the same file (an output path
// that would overwrite an input). A "zoo:" source names no file.
func SamePath(a, b string) bool { return onnxexp.SamePath(a, b) }

// WriteFileAtomic writes a file through a temporary file in its directory
// renamed into place: never a partial file.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, write)
}

// MILPFormat returns the format of a MILP file by its extension: "lp" for
// .lp, "mps" for .mps; another extension is an *OptionError.
func MILPFormat(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".lp":
		return "lp", nil
	case ".mps":
		return "mps", nil
	}
	return "", optionErrorf("-emit-milp %q: want a file ending in .lp or .mps", path)
}

// WriteMILP writes the fit's remat problem as Checkmate's MILP
// (checkmate.WriteModel) to path, in the format its extension names
// (MILPFormat), all or nothing. It needs only the problem, so it works
// after a failed fit too: that is how a user takes an infeasible or slow
// problem to another solver.
func (f *Fit) WriteMILP(path string) error {
	format, err := MILPFormat(path)
	if err != nil {
		return err
	}
	if f == nil || f.Remat == nil || f.Remat.Problem == nil {
		return fmt.Errorf("-emit-milp: no remat problem was built")
	}
	return WriteFileAtomic(path, func(w io.Writer) error { return checkmate.WriteModel(w, f.Remat.Problem, format) })
}
