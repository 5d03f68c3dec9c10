// Package pipeline is remat-compile's compile job as a library: Load a
// model (a file or a built-in zoo model) with its shapes inferred, Train
// (build its training graph by automatic differentiation), Fit it to a
// memory budget on a target runtime, and Export the rewritten model. The
// command remat-compile is a thin layer over it, and so is every other
// caller (verify's and the profiler's model preparation, bench, the
// tests):
//
//	m, err := pipeline.Load(ctx, "model.onnx", pipeline.LoadOptions{RequireStatic: true})
//	fit, err := m.Fit(ctx, pipeline.FitOptions{Budget: remat.BudgetFraction(0.7)})
//	err = m.Export("model.remat.onnx", fit, true)
//
// Library code here never prints and never exits; it returns errors of
// three kinds (DESIGN.md "Passes and errors"): bad input or options
// (positioned diagnostics, *OptionError), expected optimisation outcomes
// (*remat.InfeasibleBudgetError), and broken invariants (passes internal
// errors).
package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/remat-compile/remat/importers/graphdef"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/shapes"
)

// OptionError is a bad option value: something the caller named that the
// model or the library does not have, or a malformed setting. The command
// reports it as a usage error.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

func optionErrorf(format string, args ...any) error {
	return &OptionError{fmt.Sprintf(format, args...)}
}

// LoadOptions say how to read a model and infer its shapes.
type LoadOptions struct {
	// InputShapes sets the shapes of graph inputs by name (a dimension may
	// stay a symbol); Dims binds symbolic dimensions everywhere.
	InputShapes map[string][]ir.Dim
	Dims        map[string]int64
	// ValueTypes gives the types of values the file does not declare and
	// inference cannot derive (outputs of custom or data-dependent ops).
	ValueTypes map[string]ir.TensorType
	// RequireStatic makes a size that stays unknown an error listing every
	// unresolved value.
	RequireStatic bool
	// Check runs ir.Verify after every pass; Dump, when set, receives the
	// IR's text form after every pass.
	Check bool
	Dump  io.Writer
}

// Model is a loaded model: its graph and how it was made, so that it can
// be built afresh (Rebuild).
type Model struct {
	// Graph is the model's IR. Fit rewrites it in place.
	Graph *ir.Graph
	// Source is the path or the "zoo:" spec it was loaded from; Name the
	// file's base name or the spec, for messages.
	Source, Name string
	// Training is the autodiff options Train built the training graph
	// with; nil for an inference graph.
	Training *autodiff.Options

	opts LoadOptions
}

// Load reads a model file (ONNX, a TensorFlow GraphDef .pb or a
// TensorFlow.js model.json: importFile), or builds the zoo model a "zoo:"
// source names (ZooHelp), and infers every value's type.
func Load(ctx context.Context, source string, o LoadOptions) (*Model, error) {
	var g *ir.Graph
	var err error
	name := source
	if spec, ok := strings.CutPrefix(source, "zoo:"); ok {
		g, err = BuildZoo(spec)
	} else {
		g, err = importFile(source)
		name = filepath.Base(source)
		if name == "model.json" { // TensorFlow.js models are all model.json: name the directory too
			name = filepath.Join(filepath.Base(filepath.Dir(source)), name)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := checkOverrides(g, o.InputShapes, o.Dims); err != nil {
		return nil, err
	}
	m := &Model{Graph: g, Source: source, Name: name, opts: o}
	pass := shapes.NewPass(shapes.Options{
		InputShapes:   o.InputShapes,
		Dims:          o.Dims,
		OutputTypes:   o.ValueTypes,
		RequireStatic: o.RequireStatic,
		File:          name,
	})
	if _, err := passes.Run(ctx, g, []*passes.Pass{pass}, m.passOptions()); err != nil {
		return nil, err
	}
	return m, nil
}

// importFile reads a model file with the importer of its format: a binary
// TensorFlow GraphDef (a .pb file) or a TensorFlow.js graph model (a .json
// file such as model.json, or any file that holds a JSON object) through
// importers/graphdef, anything else as ONNX.
func importFile(path string) (*ir.Graph, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".pb":
		return graphdef.ImportFile(path, graphdef.Options{Format: graphdef.FormatGraphDef})
	case ".json":
		return graphdef.ImportFile(path, graphdef.Options{Format: graphdef.FormatTFJS})
	case ".onnx":
		return onnximp.ImportFile(path, onnximp.Options{})
	}
	if isJSON(path) {
		return graphdef.ImportFile(path, graphdef.Options{Format: graphdef.FormatTFJS})
	}
	return onnximp.ImportFile(path, onnximp.Options{})
}

// isJSON reports whether the file starts with a JSON object (after a byte
// order mark and white space). A file that cannot be read is not: the
// importer then reports why.
func isJSON(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	t := bytes.TrimLeft(bytes.TrimPrefix(head[:n], []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// passOptions are the pass driver's options for m's passes.
func (m *Model) passOptions() passes.Options {
	po := passes.Options{Verify: m.opts.Check, File: m.Name}
	if m.opts.Dump != nil {
		po.Dump, po.DumpFunc = m.opts.Dump, irtext.Print
	}
	return po
}

// Train replaces m's graph by its training graph (passes/autodiff): the
// forward pass, the loss and the backward pass. On an error the graph,
// which the pass may have left half built, is loaded again from m's
// source.
func (m *Model) Train(ctx context.Context, o autodiff.Options) error {
	if m.Training != nil {
		return fmt.Errorf("%s: Train: the graph is a training graph already", m.Name)
	}
	tf := m.IsTF()
	if _, err := passes.Run(ctx, m.Graph, []*passes.Pass{autodiff.NewPass(o)}, m.passOptions()); err != nil {
		if n, rerr := m.Rebuild(ctx); rerr == nil {
			m.Graph = n.Graph
		}
		if tf {
			return m.trainError(err)
		}
		return err
	}
	m.Training = &o
	return nil
}

// Rebuild loads m's source again and, for a training graph, builds the
// training graph again: a fresh copy of m as it was before any Fit, with
// no debug output.
func (m *Model) Rebuild(ctx context.Context) (*Model, error) {
	o := m.opts
	o.Dump = nil
	n, err := Load(ctx, m.Source, o)
	if err != nil {
		return nil, err
	}
	if m.Training != nil {
		if err := n.Train(ctx, *m.Training); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// checkOverrides rejects input shapes and dimensions that name nothing in
// the model: a typo must not be silently ignored.
func checkOverrides(g *ir.Graph, inputShapes map[string][]ir.Dim, dims map[string]int64) error {
	var names []string
	for _, v := range g.Inputs {
		names = append(names, v.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(inputShapes)) {
		if !slices.Contains(names, name) {
			return fmt.Errorf("-input-shape %s: the model has no input %q; its inputs are %s", name, name, strings.Join(names, ", "))
		}
	}
	syms := shapes.Symbols(g)
	for _, name := range slices.Sorted(maps.Keys(dims)) {
		if !slices.Contains(syms, name) {
			have := "none"
			if len(syms) > 0 {
				have = strings.Join(syms, ", ")
			}
			return fmt.Errorf("-dim %s: the model has no symbolic dimension %q; its symbols are: %s", name, name, have)
		}
	}
	return nil
}
