package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
	"github.com/remat-compile/remat/passes/remat/synth"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

// GraphOptions say how LoadGraphs turns models into problems.
type GraphOptions struct {
	// Load reads model files and zoo models.
	Load pipeline.LoadOptions
	// Train, when set, benchmarks the models' training graphs.
	Train *autodiff.Options
	// Profile costs the models' nodes; required when a model is given.
	Profile *profiles.Profile
	// Semantics is the memory semantics of graphs read from other tools'
	// files (passes/remat/interchange).
	Semantics interchange.Semantics
}

// LoadGraphs turns GRAPH arguments into problems: a layered: spec
// (LayeredHelp; a seed range gives one graph per seed, of one family), a
// graph file of another tool (networkx node-link JSON as MOCCASIN and
// Checkmate publish them, or TWRemat text: passes/remat/interchange), or
// a model file or zoo: model, lowered with the profile's costs. A bad
// spec is a *pipeline.OptionError.
func LoadGraphs(ctx context.Context, args []string, o GraphOptions) ([]Graph, error) {
	var graphs []Graph
	for _, a := range args {
		if spec, ok := strings.CutPrefix(a, "layered:"); ok {
			specs, err := layeredSeeds(spec)
			if err != nil {
				return nil, err
			}
			for _, sp := range specs {
				p, err := parseLayered(sp)
				if err != nil {
					return nil, err
				}
				gr := Graph{Name: "layered:" + sp, Problem: p}
				if len(specs) > 1 {
					gr.Family = a
				}
				graphs = append(graphs, gr)
			}
			continue
		}
		if !strings.HasPrefix(a, "zoo:") {
			if data, err := os.ReadFile(a); err == nil && interchange.IsGraph(data) {
				ig, err := interchange.Read(data, a, interchange.Options{Semantics: o.Semantics})
				if err != nil {
					return nil, err
				}
				graphs = append(graphs, Graph{Name: filepath.Base(a), Problem: ig.Problem})
				continue
			}
		}
		if o.Profile == nil {
			return nil, fmt.Errorf("bench %s: a model needs a device profile for its costs", a)
		}
		m, err := pipeline.Load(ctx, a, o.Load)
		if err != nil {
			return nil, err
		}
		name := a
		if o.Train != nil {
			if err := m.Train(ctx, *o.Train); err != nil {
				return nil, err
			}
			name += " (training)"
		}
		p, _, _, err := remat.LowerCosted(m.Graph, o.Profile, remat.LowerOptions{})
		if err != nil {
			return nil, err
		}
		graphs = append(graphs, Graph{Name: name, Problem: p})
	}
	return graphs, nil
}

// optionErrorf is a bad GRAPH spec.
func optionErrorf(format string, args ...any) error {
	return &pipeline.OptionError{Msg: fmt.Sprintf(format, args...)}
}

// LayeredHelp describes the layered: graph spec.
const LayeredHelp = "layered:N:M[:SEED|:FIRST-LAST][:OPTION...] (a seed range gives one graph per seed and a table of means over them; OPTION = moccasin, layers=K, cost-decades=F, order=random|layers, sinks=free|outputs)"

// maxSeeds bounds a layered: seed range.
const maxSeeds = 1000

// layeredSeeds expands a seed range FIRST-LAST in the third field of a
// layered: spec into one spec per seed (the other fields kept as they
// are); any other spec is returned alone.
func layeredSeeds(spec string) ([]string, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 3 || !strings.Contains(parts[2], "-") || strings.Contains(parts[2], "=") {
		return []string{spec}, nil
	}
	a, b, _ := strings.Cut(parts[2], "-")
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || first > last {
		return nil, optionErrorf("layered:%s: bad seed range %q: want FIRST-LAST, two non-negative integers with FIRST <= LAST, such as 1-6", spec, parts[2])
	}
	if last-first >= maxSeeds {
		return nil, optionErrorf("layered:%s: the seed range %q holds %d seeds; at most %d are allowed", spec, parts[2], last-first+1, maxSeeds)
	}
	var out []string
	for seed := first; ; seed++ {
		parts[2] = strconv.FormatUint(seed, 10)
		out = append(out, strings.Join(parts, ":"))
		if seed == last {
			return out, nil
		}
	}
}

// parseLayered reads N:M[:SEED][:OPTION...]: the options of
// synth.LayeredOptions by name, and moccasin for
// synth.MoccasinCalibrated (options after it override it).
func parseLayered(spec string) (*remat.Problem, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 {
		return nil, optionErrorf("layered:%s: want %s, for example layered:100:236 or layered:1000:5875:moccasin", spec, LayeredHelp)
	}
	var nums [3]int
	nums[2] = 1
	var o synth.LayeredOptions
	for i, s := range parts {
		if i < 3 && !strings.Contains(s, "=") && s != "moccasin" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 {
				return nil, optionErrorf("layered:%s: %q is not a non-negative integer", spec, s)
			}
			nums[i] = v
			continue
		}
		if i < 2 {
			return nil, optionErrorf("layered:%s: want %s", spec, LayeredHelp)
		}
		key, val, _ := strings.Cut(s, "=")
		var bad bool
		switch key {
		case "moccasin":
			o = synth.MoccasinCalibrated
			bad = val != ""
		case "layers":
			v, err := strconv.Atoi(val)
			o.Layers, bad = v, err != nil || v < 2
		case "cost-decades":
			v, err := strconv.ParseFloat(val, 64)
			o.CostDecades, bad = v, err != nil || !(v >= 0 && v <= 6)
		case "order":
			o.RandomOrder, bad = val == "random", val != "random" && val != "layers"
		case "sinks":
			o.FreeSinks, bad = val == "free", val != "free" && val != "outputs"
		default:
			return nil, optionErrorf("layered:%s: unknown option %q; the options are moccasin, layers=K, cost-decades=F, order=random|layers and sinks=free|outputs", spec, s)
		}
		if bad {
			return nil, optionErrorf("layered:%s: bad option %q: layers takes an integer of at least 2, cost-decades a number from 0 to 6, order random or layers, sinks free or outputs, moccasin no value", spec, s)
		}
	}
	p, err := synth.LayeredWith(uint64(nums[2]), nums[0], nums[1], o)
	if err != nil {
		return nil, optionErrorf("layered:%s: %v", spec, err)
	}
	return p, nil
}
