package measure

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/verify"
)

// The graph kinds: a model's inference graph, or its training graph
// (passes/autodiff).
const (
	KindInference = "inference"
	KindTraining  = "training"
)

// optionErrorf returns a bad option as the pipeline reports it (the
// command turns a *pipeline.OptionError into a usage error).
func optionErrorf(format string, args ...any) error {
	return &pipeline.OptionError{Msg: fmt.Sprintf(format, args...)}
}

// checkSession checks the session options that Profile and ValidateCost
// share, "" standing for the defaults ("disabled", ort.ClockCPU).
func checkSession(level, clock *string) error {
	if *level == "" {
		*level = "disabled"
	}
	if *clock == "" {
		*clock = ort.ClockCPU
	}
	if !slices.Contains(verify.LevelNames(), *level) {
		return optionErrorf("-level %q: want one of %s", *level, strings.Join(verify.LevelNames(), ", "))
	}
	if *clock != ort.ClockCPU && *clock != ort.ClockWall {
		return optionErrorf("-clock %q: want cpu or wall", *clock)
	}
	return nil
}

// preparedModel is a model ready to run: its graph with static shapes
// (the training graph for kind "training"), the same graph exported to
// file, and seeded inputs for every graph input.
type preparedModel struct {
	spec   pipeline.ModelSpec
	kind   string // KindInference or KindTraining
	model  *pipeline.Model
	graph  *ir.Graph
	file   string
	inputs map[string]ort.Tensor
}

// prepareModel loads a model (its inference graph, or its training graph
// when train is set), exports it to dir, and draws its inputs. lo holds
// the caller's options for model files (spec.LoadOptions says which
// apply); values fill inputs of models whose spec fixes none.
func prepareModel(ctx context.Context, spec pipeline.ModelSpec, lo pipeline.LoadOptions, train *autodiff.Options, seed uint64, values map[string]int64, dir string) (*preparedModel, error) {
	lo = spec.LoadOptions(lo)
	lo.RequireStatic = true
	m, err := pipeline.Load(ctx, spec.Source, lo)
	if err != nil {
		return nil, err
	}
	if m.IsTF() {
		return nil, fmt.Errorf("%s: a TensorFlow graph cannot be profiled: profile times each node alone in ONNX Runtime and fits the cost model to ONNX ops, and has no TensorFlow.js path (remat-compile verify measures a TensorFlow graph's run and kernel times in TensorFlow.js)", spec.Name)
	}
	pm := &preparedModel{spec: spec, kind: KindInference, model: m}
	if train != nil {
		if err := m.Train(ctx, *train); err != nil {
			return nil, &noTrainingGraphError{spec.Name, err}
		}
		pm.kind = KindTraining
	}
	g := m.Graph
	pm.graph = g
	pm.file = filepath.Join(dir, fmt.Sprintf("%s.%s.onnx", safeName(spec.Name), pm.kind))
	if err := onnxexp.ExportFile(g, pm.file, onnxexp.Options{ValueInfo: true}); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	vals := values
	if spec.InputValues != nil {
		vals = spec.InputValues
	}
	// The file may declare dynamic input shapes (the exporter keeps the
	// source's declarations): give the inferred ones.
	inShapes := map[string][]int64{}
	for _, v := range g.Inputs {
		if v.Data == nil {
			if dims, ok := v.Type.Dims(); ok {
				inShapes[v.Name] = dims
			}
		}
	}
	if pm.inputs, err = ort.RandomInputs(pm.file, seed, inShapes); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		t, ok := pm.inputs[name]
		if !ok {
			return nil, fmt.Errorf("-input-value %s: %s has no input %q", name, spec.Name, name)
		}
		if pm.inputs[name], err = ort.Filled(t.DType, t.Shape, vals[name]); err != nil {
			return nil, fmt.Errorf("-input-value %s: %w", name, err)
		}
	}
	return pm, nil
}

// noTrainingGraphError says that autodiff cannot build a model's
// training graph (an op without a gradient): Profile and ValidateCost go
// on with the other models.
type noTrainingGraphError struct {
	model string
	err   error
}

func (e *noTrainingGraphError) Error() string {
	return fmt.Sprintf("%s: no training graph: %s", e.model, firstLine(strings.TrimPrefix(e.err.Error(), e.model+": ")))
}

func (e *noTrainingGraphError) Unwrap() error { return e.err }

// safeName turns a model name into a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// firstLine is an error message's first line, at most 200 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}
