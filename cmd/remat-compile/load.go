package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/shapes"
)

// loadOptions say how to read a model and which passes to run on it.
type loadOptions struct {
	shapes        shapeFlags
	requireStatic bool
}

// loadModel imports a model file, or builds the zoo model a "zoo:" path
// names (zooSpecHelp), and infers its shapes.
func loadModel(ctx context.Context, path string, lo *loadOptions, errOut io.Writer) (*ir.Graph, *passes.State, error) {
	inputShapes, dims, err := lo.shapes.parse()
	if err != nil {
		return nil, nil, err
	}
	valueTypes, err := lo.shapes.types()
	if err != nil {
		return nil, nil, err
	}
	check, dump, err := lo.shapes.debugFlags()
	if err != nil {
		return nil, nil, err
	}
	var g *ir.Graph
	file := path
	if spec, ok := strings.CutPrefix(path, "zoo:"); ok {
		g, err = buildZoo(spec)
	} else {
		g, err = onnximp.ImportFile(path, onnximp.Options{})
		file = filepath.Base(path)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := checkOverrides(g, inputShapes, dims); err != nil {
		return nil, nil, err
	}
	pipeline := []*passes.Pass{shapes.NewPass(shapes.Options{
		InputShapes:   inputShapes,
		Dims:          dims,
		OutputTypes:   valueTypes,
		RequireStatic: lo.requireStatic,
		File:          file,
	})}
	popts := passes.Options{Verify: check, File: file}
	if dump && errOut != nil {
		popts.Dump, popts.DumpFunc = errOut, irtext.Print
	}
	st, err := passes.Run(ctx, g, pipeline, popts)
	if err != nil {
		return nil, st, err
	}
	return g, st, nil
}

// checkOverrides rejects -input-shape and -dim flags that name nothing in
// the model: a typo must not be silently ignored.
func checkOverrides(g *ir.Graph, inputShapes map[string][]ir.Dim, dims map[string]int64) error {
	var names []string
	for _, v := range g.Inputs {
		names = append(names, v.Name)
	}
	for _, name := range sortedKeys(inputShapes) {
		if !slices.Contains(names, name) {
			return fmt.Errorf("-input-shape %s: the model has no input %q; its inputs are %s", name, name, strings.Join(names, ", "))
		}
	}
	syms := shapes.Symbols(g)
	for _, name := range sortedKeys(dims) {
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
