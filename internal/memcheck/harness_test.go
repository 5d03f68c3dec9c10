package memcheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
	ortt "github.com/remat-compile/remat/targets/ort"
)

// modelCase is one model to measure: how to build its graph (with static
// shapes inferred) and the inputs to run it with.
type modelCase struct {
	name string
	// build returns the graph with every shape inferred.
	build func() (*ir.Graph, error)
	// shapes gives the concrete shape of each graph input; fixed gives
	// inputs whose values matter (silero's sample rate).
	shapes map[string][]int64
	fixed  map[string]ort.Tensor
	// source is the model file of a real model ("" for zoo models).
	source string
	// tolerance, when not 0, replaces the package's tolerance.
	tolerance float64
}

// zooCases lists every zoo model at its Small configuration.
func zooCases() []modelCase {
	var cases []modelCase
	for _, m := range zoo.Models() {
		cases = append(cases, zooCase(m.Name))
	}
	return cases
}

// variantModels are the zoo models whose float16 and dynamically
// quantized variants (pipeline.BuildZoo's fp16 and dynquant) are measured:
// the convolutional ones. The transformers' and the LSTM's float16 variants
// run Softmax (and the LSTM) in forms targets/ort.Lower does not model.
var variantModels = []string{
	"vgg16", "vgg19", "mobilenet_v1", "mobilenet_v2", "resnet50", "resnet", "googlenet",
	"unet", "fcn8", "segnet",
}

// variantCases lists the fp16 and dynquant variants of variantModels at
// their Small configurations, and with size "default" also at their
// Default ones.
func variantCases(size string) []modelCase {
	var cases []modelCase
	for _, v := range zoo.Variants() {
		for _, name := range variantModels {
			spec := name + ":" + v
			if size != "" {
				spec = name + ":" + size + ":" + v
			}
			cases = append(cases, zooCase(spec))
		}
	}
	return cases
}

// zooCase builds the zoo model that spec (pipeline.BuildZoo) names, with
// static shapes.
func zooCase(spec string) modelCase {
	return modelCase{
		name: spec,
		build: func() (*ir.Graph, error) {
			g, err := pipeline.BuildZoo(spec)
			if err != nil {
				return nil, err
			}
			if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: "zoo:" + spec}); err != nil {
				return nil, err
			}
			return g, nil
		},
	}
}

// trainCases lists the training graphs (passes/autodiff, sum loss, every
// parameter trainable) of the zoo models at their Small configuration,
// except those autodiff has no gradient for (the LSTM).
func trainCases() []modelCase {
	var cases []modelCase
	for _, m := range zoo.Models() {
		build := func() (*ir.Graph, error) {
			g, err := m.Build(m.Small)
			if err != nil {
				return nil, err
			}
			if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: m.Name}); err != nil {
				return nil, err
			}
			if _, err := passes.Run(context.Background(), g, []*passes.Pass{autodiff.NewPass(autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}})}, passes.Options{File: m.Name}); err != nil {
				return nil, err
			}
			return g, nil
		}
		if _, err := build(); err != nil {
			continue
		}
		cases = append(cases, modelCase{name: m.Name + " (training)", build: build, tolerance: trainTolerance})
	}
	return cases
}

// manifestPath returns the real-model manifest: $REMAT_MODELS, else the
// copy scripts/setup.sh writes under the cache directory.
func manifestPath() (string, error) {
	if p := os.Getenv("REMAT_MODELS"); p != "" {
		return p, nil
	}
	dir := os.Getenv("REMAT_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("neither REMAT_MODELS nor HOME is set")
		}
		dir = filepath.Join(home, ".cache", "remat-compile")
	}
	p := filepath.Join(dir, "models", "MANIFEST.tsv")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("real-model manifest: %v (REMAT_MODELS is not set)", err)
	}
	return p, nil
}

// realCases reads the manifest of ../shared/models (pipeline.ReadManifest):
// each model loads as the pipeline loads it, with the manifest's input
// shapes, and runs with its fixed input values.
func realCases(manifest string) ([]modelCase, error) {
	specs, err := pipeline.ReadManifest(manifest)
	if err != nil {
		return nil, err
	}
	var cases []modelCase
	for _, s := range specs {
		c := modelCase{name: s.Name, shapes: s.InputShapes, fixed: map[string]ort.Tensor{}, source: s.Source}
		for name, v := range s.InputValues {
			if c.fixed[name], err = ort.Filled("int64", s.InputShapes[name], v); err != nil {
				return nil, fmt.Errorf("%s: input %s: %w", s.Name, name, err)
			}
		}
		lo := s.LoadOptions(pipeline.LoadOptions{RequireStatic: true})
		c.build = func() (*ir.Graph, error) {
			m, err := pipeline.Load(context.Background(), s.Source, lo)
			if err != nil {
				return nil, err
			}
			return m.Graph, nil
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// realVariants lists the float16 and dynamically quantized variants of
// the real models that are measured (zoo.Float16 with float32 inputs and
// outputs and the default op block list, zoo.QuantizeDynamic). Not
// measured: the float16 variants of ppocrv4_rec and ppocr_mobile_v2_cls
// (Softmax) and oww_embedding (LeakyRelu), which ORT runs as their float16
// function bodies (targets/ort.Lower does not model that); the dynamically
// quantized ppocrv4_rec and ppocr_mobile_v2_cls, which import opset 9
// (quantize_dynamic rewrites such a model's opset import to 11 without
// converting its ops, which breaks their Clip nodes; zoo.QuantizeDynamic
// refuses it); and both variants of silero_vad_v5, whose nodes are inside
// an If (the conversions handle no subgraphs).
var realVariants = map[string][]string{
	"ppocrv4_det":   {"fp16", "dynquant"},
	"oww_embedding": {"dynquant"},
}

// realVariantCases lists the variants of the real models (realVariants)
// among cases.
func realVariantCases(real []modelCase) []modelCase {
	var out []modelCase
	for _, c := range real {
		for _, v := range realVariants[c.name] {
			load := c.build
			vc := c
			vc.name, vc.source = c.name+":"+v, ""
			vc.build = func() (*ir.Graph, error) {
				g, err := load()
				if err != nil {
					return nil, err
				}
				if err := zoo.Convert(g, v); err != nil {
					return nil, err
				}
				return g, ir.Verify(g)
			}
			out = append(out, vc)
		}
	}
	return out
}

// measurement is one model run in ORT, mapped onto the IR.
type measurement struct {
	g    *ir.Graph
	path string
	// seq is the root-graph nodes in the order ORT ran them; events[i] is
	// the profile event of seq[i].
	seq    []*ir.Node
	events []ort.NodeEvent
	// nested[i] lists the events ORT recorded inside seq[i] (the nodes of
	// an If or Loop body).
	nested [][]ort.NodeEvent
	// baseline is the arena's bytes in use before the first kernel ran:
	// small initializers and prepacked weights, allocated at session
	// creation. peak is the largest mem_in_use_peak of the run.
	baseline, peak int64
	// defaultPeak is the arena's peak over two runs of a session under
	// ORT's default options (the memory pattern on: the second run takes
	// one block for the activations), less that session's baseline; -1
	// when not measured.
	defaultPeak int64
	// note says how the measurement departs from the plan, if it does.
	note string
	// lowered is the graph ORT ran in place of a float16 graph
	// (targets/ort.Lower; nil when ORT runs the graph as written); g is
	// then lowered.Graph and src the graph as written.
	lowered *ortt.Lowered
	src     *ir.Graph
}

// measureCase builds and exports one case, runs the exported file in ORT
// and maps ORT's profile onto the graph's nodes.
//
// valueInfo exports a value_info entry for every value: ORT then plans with
// the static shapes passes/shapes inferred, which is what the model
// assumes. Without value_info the exporter writes back the source's own
// declarations (for the real models, symbolic input dimensions), and ORT
// plans with what its own shape inference derives.
//
// If ORT rejects the exported file, the file exported without value_info
// is tried, then, for a real model, its source file (the importer keeps the
// nodes' order and names, so the profile maps onto the same graph); the
// note says which and why. Those failures belong to the exporter or to
// shape inference, not to the memory model.
func measureCase(c modelCase, valueInfo bool) (*measurement, error) {
	g, err := c.build()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	dir, err := os.MkdirTemp("", "remat-memcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	shp := c.shapes
	if shp == nil {
		shp = map[string][]int64{}
		for _, in := range g.Inputs {
			if d, ok := in.Type.Dims(); ok {
				shp[in.Name] = d
			}
		}
	}
	type candidate struct {
		path, what string
		vi         bool
	}
	var cands []candidate
	for _, vi := range []bool{valueInfo, false} {
		if len(cands) > 0 && !vi && !cands[0].vi {
			break
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-vi%v.onnx", c.name, vi))
		if err := onnxexp.ExportFile(g, path, onnxexp.Options{Source: c.source, ValueInfo: vi}); err != nil {
			return nil, fmt.Errorf("%s: export: %w", c.name, err)
		}
		what := "the exported file"
		if vi {
			what += " with value_info"
		}
		cands = append(cands, candidate{path, what, vi})
	}
	if c.source != "" {
		cands = append(cands, candidate{c.source, "the source file", false})
	}
	var failures []string
	for _, cand := range cands {
		res, err := runORT(cand.path, shp, c.fixed)
		if err != nil {
			msg := err.Error()
			if i := strings.LastIndex(msg, "failed:"); i >= 0 {
				msg = strings.TrimSpace(msg[i+len("failed:"):])
			}
			failures = append(failures, fmt.Sprintf("ORT rejects %s (%s)", cand.what, msg))
			continue
		}
		m := &measurement{g: g, path: cand.path, defaultPeak: -1}
		if valueInfo {
			if m.defaultPeak, err = defaultPeak(cand.path, shp, c.fixed); err != nil {
				return nil, fmt.Errorf("%s: under ORT's default options: %w", c.name, err)
			}
		}
		if ortt.NeedsLowering(g) {
			if m.lowered, err = ortt.Lower(g); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			m.g, m.src = m.lowered.Graph, g
		}
		if len(failures) > 0 {
			m.note = "measured on " + cand.what + ": " + strings.Join(failures, "; ")
		}
		if err := m.mapProfile(res.Profile); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%s: %s", c.name, strings.Join(failures, "; "))
}

// defaultPeak is the peak of a session running the model file twice under
// ORT's default options (ort.SessionPeak, level disabled).
func defaultPeak(path string, shapes map[string][]int64, fixed map[string]ort.Tensor) (int64, error) {
	inputs, err := inputsFor(path, shapes, fixed)
	if err != nil {
		return 0, err
	}
	return ort.SessionPeak(path, inputs, ort.DefaultOptions("disabled"))
}

// runORT runs a model file once with seeded random inputs (and the fixed
// ones) under ort.MeasureOptions("disabled").
func runORT(path string, shapes map[string][]int64, fixed map[string]ort.Tensor) (*ort.Result, error) {
	inputs, err := inputsFor(path, shapes, fixed)
	if err != nil {
		return nil, err
	}
	return ort.Run(path, inputs, ort.MeasureOptions("disabled"))
}

// inputsFor returns seeded random inputs of the given shapes for a model
// file, with the fixed ones in place of theirs.
func inputsFor(path string, shapes map[string][]int64, fixed map[string]ort.Tensor) (map[string]ort.Tensor, error) {
	inputs, err := ort.RandomInputs(path, 1, shapes)
	if err != nil {
		return nil, err
	}
	for k, v := range fixed {
		inputs[k] = v
	}
	return inputs, nil
}

// ortName is the name ORT's profiler gives a node: its own name, or
// "<OpType>_<index>" for an unnamed node.
func ortName(n *ir.Node, index int) string {
	if n.Name != "" {
		return n.Name
	}
	return fmt.Sprintf("%s_%d", n.Op, index)
}

// mapProfile maps the first run's events onto the root graph's nodes.
//
// ORT turns Constant nodes into initializers when it loads a model, before
// it numbers the nodes, so a node's index in ORT's graph (the profile's
// node_index at level "disabled") is its position among the root graph's
// nodes that are not Constant. Events that start inside another event's
// time span are kernels of a subgraph (If, Loop) run by that node; they are
// kept apart as nested events.
//
// For a lowered graph the index of each node is the one ORT gave it
// (targets/ort.Lowered.Index): the source's nodes keep theirs, the Casts
// ORT inserted come after them.
func (m *measurement) mapProfile(p *ort.Profile) error {
	var byIndex []*ir.Node
	if m.lowered != nil {
		for i, n := range m.g.Nodes {
			k := m.lowered.Index[i]
			if k < 0 {
				continue
			}
			for len(byIndex) <= k {
				byIndex = append(byIndex, nil)
			}
			byIndex[k] = n
		}
	} else {
		for _, n := range m.g.Nodes {
			if n.Op == "Constant" && n.Domain == "" {
				continue
			}
			byIndex = append(byIndex, n)
		}
	}
	seen := make(map[*ir.Node]bool)
	var openEnd int64 = -1
	for _, e := range p.Nodes {
		if len(m.seq) > 0 && e.TsUS < openEnd {
			last := len(m.seq) - 1
			m.nested[last] = append(m.nested[last], e)
			continue
		}
		if e.NodeIndex < 0 || e.NodeIndex >= len(byIndex) || byIndex[e.NodeIndex] == nil {
			return fmt.Errorf("profile event %q (%s) has node_index %d, which no node of the graph has (%d indices)", e.Name, e.OpType, e.NodeIndex, len(byIndex))
		}
		n := byIndex[e.NodeIndex]
		if want := ortName(n, e.NodeIndex); e.Name != want || e.OpType != n.Op {
			return fmt.Errorf("profile event %q (%s, node_index %d) does not match node %q (%s)", e.Name, e.OpType, e.NodeIndex, want, n.Op)
		}
		if seen[n] {
			return fmt.Errorf("node %q ran twice in the first run", n.String())
		}
		seen[n] = true
		m.seq = append(m.seq, n)
		m.events = append(m.events, e)
		m.nested = append(m.nested, nil)
		openEnd = e.TsUS + e.DurUS
	}
	byIndex = slices.DeleteFunc(byIndex, func(n *ir.Node) bool { return n == nil })
	if len(m.seq) != len(byIndex) {
		var missing []string
		for _, n := range byIndex {
			if !seen[n] {
				missing = append(missing, n.String())
			}
		}
		return fmt.Errorf("%d of %d nodes have no profile event: %v", len(missing), len(byIndex), missing)
	}
	if len(m.events) == 0 {
		return fmt.Errorf("the profile has no kernel events")
	}
	first := m.events[0]
	m.baseline = first.MemBytesInUse - first.MemInUseDelta
	for _, e := range p.Nodes {
		m.peak = max(m.peak, e.MemInUsePeak)
	}
	return nil
}

// fullSeq is seq with the root graph's Constant nodes, which ORT never
// runs (it loads them as initializers), each placed right before its first
// reader: a valid order for models that run Constant nodes as steps (the
// plain liveness model); under ortt.Memory() they allocate nothing.
func (m *measurement) fullSeq() []*ir.Node {
	var consts []*ir.Node
	for _, n := range m.g.Nodes {
		if n.Op == "Constant" && n.Domain == "" {
			consts = append(consts, n)
		}
	}
	if len(consts) == 0 {
		return m.seq
	}
	pos := make(map[*ir.Node]int, len(m.seq))
	for i, n := range m.seq {
		pos[n] = i
	}
	before := make([][]*ir.Node, len(m.seq)+1)
	for _, c := range consts {
		first := len(m.seq)
		for _, o := range c.Outputs {
			if o == nil {
				continue
			}
			for _, u := range o.Uses {
				if p, ok := pos[u.Node]; ok && p < first {
					first = p
				}
			}
		}
		before[first] = append(before[first], c)
	}
	var out []*ir.Node
	for i := range before {
		out = append(out, before[i]...)
		if i < len(m.seq) {
			out = append(out, m.seq[i])
		}
	}
	return out
}

// unlowered predicts the peak of a lowered measurement's graph as written,
// in the order ORT would run it without lowering (targets/ort.Schedule):
// the memory model without targets/ort.Lower. It is the prediction for
// graphs ORT runs as written.
func (m *measurement) unlowered() (int64, error) {
	if m.lowered == nil {
		r, err := m.predict(ortt.Memory())
		if err != nil {
			return 0, err
		}
		return r.PeakBytes, nil
	}
	run, err := ortt.Schedule(m.src, onnxexp.Options{ValueInfo: true})
	if err != nil {
		return 0, err
	}
	r, err := memory.Simulate(m.src, run.Seq, ortt.Memory())
	if err != nil {
		return 0, err
	}
	return r.PeakBytes, nil
}

// predict runs the memory model over the order ORT ran; Constant nodes are
// steps unless the options make them parameters.
func (m *measurement) predict(opts memory.Options) (*memory.Result, error) {
	if opts.ConstantsAsParams {
		return memory.Simulate(m.g, m.seq, opts)
	}
	return memory.Simulate(m.g, m.fullSeq(), opts)
}
