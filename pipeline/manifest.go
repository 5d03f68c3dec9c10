package pipeline

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// ModelSpec is one model of a batch job (profiling, cost validation, the
// end-to-end tests): where it comes from and the inputs it runs with.
type ModelSpec struct {
	// Name is how tables and messages name the model: a manifest's name
	// column, a file's base name, or the "zoo:" spec.
	Name string
	// Source is what Load reads: a model file's path or "zoo:SPEC".
	Source string
	// InputShapes are the concrete input shapes of a manifest entry (a
	// scalar has an empty shape); nil for a model given otherwise, which
	// takes the caller's shape options (LoadOptions).
	InputShapes map[string][]int64
	// InputTypes are the element types a manifest declares for inputs
	// (x:1x192x192x3:int32, or the type of a fixed value). ONNX files
	// declare their inputs' types themselves; formats that do not (a
	// TensorFlow.js graph model's signature may omit them) take these.
	InputTypes map[string]ir.DType
	// InputValues are inputs filled with one fixed integer instead of
	// random values (sr:scalar:int64=16000: a sample rate, which steers
	// what the model computes).
	InputValues map[string]int64
}

// LoadOptions returns the options Load takes for s, given the options
// flags holds for models named on a command line: a manifest entry takes
// its own input shapes (flags' InputShapes, Dims and ValueTypes do not
// apply to it: the manifest fixes its inputs); a zoo model has built-in
// shapes (flags' shape options are dropped); any other model file takes
// flags as they are. RequireStatic, Check and Dump always come from flags.
func (s ModelSpec) LoadOptions(flags LoadOptions) LoadOptions {
	switch {
	case s.InputShapes != nil:
		flags.InputShapes = make(map[string][]ir.Dim, len(s.InputShapes))
		for name, dims := range s.InputShapes {
			d := make([]ir.Dim, len(dims))
			for i, n := range dims {
				d[i] = ir.D(n)
			}
			flags.InputShapes[name] = d
		}
		flags.Dims, flags.ValueTypes = nil, nil
	case strings.HasPrefix(s.Source, "zoo:"):
		flags.InputShapes, flags.Dims, flags.ValueTypes = nil, nil, nil
	}
	return flags
}

// ParseModelArgs expands the MODEL arguments of a batch command: model
// files, "zoo:" specs (ZooHelp) and "manifest:FILE.tsv" (ReadManifest),
// in order.
func ParseModelArgs(args []string) ([]ModelSpec, error) {
	var out []ModelSpec
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "zoo:"):
			out = append(out, ModelSpec{Name: a, Source: a})
		case strings.HasPrefix(a, "manifest:"):
			specs, err := ReadManifest(strings.TrimPrefix(a, "manifest:"))
			if err != nil {
				return nil, err
			}
			out = append(out, specs...)
		default:
			out = append(out, ModelSpec{Name: filepath.Base(a), Source: a})
		}
	}
	return out, nil
}

// ReadManifest reads a model manifest: the TSV that
// ../shared/models/fetch.sh (and fetch-tf.sh) write, with one header line
// and the columns name, path, sha256, source and inputs. The inputs column
// lists input specs separated by spaces: NAME:SHAPE (x:1x3x640x640), with
// an element type (input:1x192x192x3:int32), or with a fixed value
// (sr:scalar:int64=16000). Blank lines are skipped; a manifest that lists
// no model is an error.
func ReadManifest(path string) ([]ModelSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	var out []ModelSpec
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 || strings.TrimSpace(sc.Text()) == "" {
			continue // the header
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 5 {
			return nil, fmt.Errorf("%s:%d: %d columns, want 5 (name, path, sha256, source, inputs)", path, line, len(cols))
		}
		if cols[0] == "" || cols[1] == "" {
			return nil, fmt.Errorf("%s:%d: empty name or path: every model needs both", path, line)
		}
		s := ModelSpec{Name: cols[0], Source: cols[1], InputShapes: map[string][]int64{}, InputTypes: map[string]ir.DType{}, InputValues: map[string]int64{}}
		for _, in := range strings.Fields(cols[4]) {
			if err := s.addInput(in); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, line, err)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("manifest %s lists no models", path)
	}
	return out, nil
}

// manifestTypes are the element type names of a manifest's input specs
// (NumPy's, as ONNX Runtime and TensorFlow name them).
var manifestTypes = []struct {
	name string
	dt   ir.DType
}{
	{"float32", ir.Float32}, {"float64", ir.Float64}, {"float16", ir.Float16}, {"bfloat16", ir.BFloat16},
	{"int8", ir.Int8}, {"int16", ir.Int16}, {"int32", ir.Int32}, {"int64", ir.Int64},
	{"uint8", ir.Uint8}, {"uint16", ir.Uint16}, {"uint32", ir.Uint32}, {"uint64", ir.Uint64},
	{"bool", ir.Bool},
}

// manifestType looks up an element type name of an input spec.
func manifestType(name string) (ir.DType, bool) {
	for _, t := range manifestTypes {
		if t.name == name {
			return t.dt, true
		}
	}
	return ir.Undefined, false
}

// addInput parses one input spec: NAME:SHAPE, NAME:SHAPE:DTYPE or
// NAME:SHAPE:int64=VALUE.
func (s *ModelSpec) addInput(spec string) error {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
		return fmt.Errorf("input %q: want name:SHAPE, name:SHAPE:DTYPE or name:SHAPE:int64=VALUE", spec)
	}
	name := parts[0]
	if _, dup := s.InputShapes[name]; dup {
		return fmt.Errorf("input %q: %s is listed twice", spec, name)
	}
	dims := []int64{}
	if parts[1] != "scalar" {
		for _, d := range strings.Split(parts[1], "x") {
			n, err := strconv.ParseInt(d, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("input %q: bad dimension %q (want a size such as 224, or the shape scalar)", spec, d)
			}
			dims = append(dims, n)
		}
	}
	s.InputShapes[name] = dims
	if len(parts) < 3 {
		return nil
	}
	dt, val, hasVal := strings.Cut(parts[2], "=")
	if hasVal {
		v, err := strconv.ParseInt(val, 10, 64)
		if dt != "int64" || err != nil {
			return fmt.Errorf("input %q: only int64=VALUE fixed values are supported", spec)
		}
		s.InputTypes[name], s.InputValues[name] = ir.Int64, v
		return nil
	}
	t, ok := manifestType(dt)
	if !ok {
		var names []string
		for _, t := range manifestTypes {
			names = append(names, t.name)
		}
		return fmt.Errorf("input %q: unknown element type %q (want one of %s)", spec, dt, strings.Join(names, ", "))
	}
	s.InputTypes[name] = t
	return nil
}
