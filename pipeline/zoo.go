package pipeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/internal/zoo/tfgraph"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// ZooHelp documents the "zoo:" source syntax Load accepts in place of a
// model file.
const ZooHelp = "zoo:NAME[:small|default][:batch=N][:res=N][:width=F][:depth=N][:classes=N][:seed=N][:fp16|:dynquant][:tf]"

// BuildZoo builds the zoo model that spec (without the "zoo:" prefix)
// names: NAME, then options applied left to right to its Small
// configuration (small and default select a whole configuration; the
// other keys set one field of it; fp16 and dynquant convert the model as
// onnxconverter-common's float16 converter, with float32 inputs and outputs
// and its default op block list, and onnxruntime's quantize_dynamic write
// it: zoo.Convert); "tf" builds it as a TensorFlow graph
// (internal/zoo/tfgraph: NHWC, TensorFlow ops, the same weights), which
// the convolutional networks have. A bad spec is an *OptionError.
func BuildZoo(spec string) (*ir.Graph, error) {
	parts := strings.Split(spec, ":")
	m, ok := zoo.Lookup(parts[0])
	if !ok {
		var names []string
		for _, m := range zoo.Models() {
			names = append(names, m.Name)
		}
		return nil, optionErrorf("zoo:%s: unknown model; the zoo has %s", parts[0], strings.Join(names, ", "))
	}
	cfg := m.Small
	variant := ""
	asTF := false
	for _, p := range parts[1:] {
		key, val, hasVal := strings.Cut(p, "=")
		bad := func(want string) error {
			return optionErrorf("zoo:%s: %q: want %s (%s)", spec, p, want, ZooHelp)
		}
		positive := func(max int) (int, error) {
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > max {
				return 0, bad(fmt.Sprintf("%s=N with 1 ≤ N ≤ %d", key, max))
			}
			return n, nil
		}
		var err error
		switch {
		case p == "small":
			cfg = m.Small
		case p == "default":
			cfg = m.Default
		case slices.Contains(zoo.Variants(), p):
			variant = p
		case p == "tf":
			asTF = true
		case !hasVal:
			return nil, bad("small, default, fp16, dynquant, tf or KEY=VALUE")
		case key == "batch":
			cfg.Batch, err = positive(1 << 16)
		case key == "res":
			cfg.Resolution, err = positive(1 << 16)
		case key == "depth":
			cfg.Depth, err = positive(1 << 10)
		case key == "classes":
			cfg.Classes, err = positive(1 << 24)
		case key == "width":
			w, perr := strconv.ParseFloat(val, 64)
			if perr != nil || !(w > 0) || w > 64 {
				return nil, bad("width=F with 0 < F ≤ 64")
			}
			cfg.Width = w
		case key == "seed":
			s, perr := strconv.ParseUint(val, 10, 64)
			if perr != nil {
				return nil, bad("seed=N with N a non-negative integer")
			}
			cfg.Seed = s
		default:
			return nil, bad("one of batch, res, width, depth, classes, seed")
		}
		if err != nil {
			return nil, err
		}
	}
	g, err := m.Build(cfg)
	if err != nil {
		return nil, fmt.Errorf("zoo:%s: %w", spec, err)
	}
	if variant != "" {
		if err := shapes.Infer(g, shapes.Options{File: "zoo:" + spec}); err != nil {
			return nil, err
		}
		if err := zoo.Convert(g, variant); err != nil {
			return nil, fmt.Errorf("zoo:%s: %w", spec, err)
		}
	}
	if asTF {
		if variant != "" {
			return nil, optionErrorf("zoo:%s: %s and tf do not combine: the TensorFlow graph is float32", spec, variant)
		}
		if g, err = tfgraph.Convert(g); err != nil {
			return nil, optionErrorf("zoo:%s: %v", spec, err)
		}
	}
	return g, nil
}
