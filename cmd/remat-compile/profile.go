package main

// The profile command: time every node of a model on this machine in ONNX
// Runtime, each node alone, and write a device profile (package profiles'
// format) holding the measured time of every node signature and a
// roofline fitted to them, so that the cost model (profiles.Profile.Cost)
// answers in seconds measured here rather than from a datasheet.
//
// # How a node is measured
//
// Each distinct signature (profiles.NewMeasured: op, attributes, compute
// element type, input shapes) is measured once, on the first node that
// has it, as a single-node model: the node with its attributes, its
// inputs as the model's graph inputs and its outputs as graph outputs.
// Parameters and the outputs of Constant nodes stay initializers, as in
// the model (kernels precompute from constant inputs: Conv prepacks its
// weights). Activation inputs get seeded random values of their inferred
// shapes (ort.RandomTensor), except the values that steer what a node
// does rather than what it computes on: integer and bool tensors and
// small ones (at most capturedMaxElems elements: Reshape's shape, Slice's
// bounds, Resize's scales). Those get the values the whole model
// computes, captured in one run of the model on the same seeded inputs.
// Nodes inside If, Loop and Scan bodies are measured the same way, but
// their steering values cannot be captured (a body's values are not
// graph outputs): Reshape, Expand, ConstantOfShape and Tile get shapes
// derived from their inferred outputs, others random small integers. A
// single-node run whose output shapes differ from the inferred ones is
// reported and skipped, never recorded.
//
// The session options are the verifier's (ort.MeasureOptions: one
// intra-op thread, sequential execution, the CPU arena on, the memory
// pattern off) at -level, without the profiler, which adds several
// microseconds to every kernel. Each single-node model runs -warmup
// times, then -repeat times; the entry is the median of those, less the
// fixed cost of one Session.Run (runOverhead, calibrated on chains of
// tiny nodes), so that the sum of the entries predicts a whole model's run
// rather than counting that fixed cost once per node. Three things make
// a node alone behave as it does inside its model:
//
//   - Outputs: an output that is not a graph output of the model is read
//     by a one-element Slice (addSink), so that ONNX Runtime allocates it
//     from its arena and frees it after use on every run, as inside the
//     model, rather than handing it to the caller (a fresh allocation,
//     page faults included, which is what graph outputs of the model do
//     pay, and so stay graph outputs).
//   - Caches: a node run again and again alone finds its inputs in the
//     caches; inside the model, the nodes that ran since an input was
//     last touched may have evicted it. Inputs that coldInputs finds out
//     of the L2 or the L3 by reuse distance (weights, activations saved
//     for the backward pass) are pushed out to that level before each
//     timed run (ort.TimedModel.ColdInputs), the rest stay warm.
//   - Clock: by default the CPU time of the thread that runs the session
//     (-clock cpu): on a shared machine other processes take the core for
//     milliseconds at a time, which the median of microsecond-long
//     single-node runs never sees but every run of a whole model does.
//     validate-cost times whole models with the same clock.
//
// Checkmate §4.10 builds its cost model the same way: the cost of each
// layer profiled on the target hardware with random inputs.

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/verify"
)

// clockHelp documents -clock of profile and validate-cost.
const clockHelp = "`clock` of the timings: cpu (the CPU time of the thread that runs the session, which with one intra-op thread runs every kernel: the time other processes take the core is left out; Linux only, else wall) or wall"

// defaultProfileBase is the datasheet section of a measured profile when
// no -base is given: the generic CPU of profiles/data/cpu-generic.yaml.
const defaultProfileBase = "cpu-generic"

// capturedMaxElems is the largest float tensor whose run-time value a
// single-node model gets from the whole model rather than at random.
const capturedMaxElems = 64

// Where a node finds its inputs inside its model (coldInputs): a node run
// again and again alone finds them all in the caches, but inside a model
// the nodes that ran since an input's last use may have pushed it out.
// The levels follow the caches of the machine the project measures on: a
// 2 MiB L2 per core and a 32 MiB L3 shared with the other cores (and, in
// a virtual machine, with other guests). Parameters below coldParamBytes
// (biases, normalization scales) count as warm: they are too small to
// matter.
const (
	l2Bytes        = 2 << 20
	l3Bytes        = 32 << 20
	coldParamBytes = 32 << 10
)

// The cache levels an input is read from.
const (
	inCache = iota // reuse distance below l2Bytes
	inL3           // below l3Bytes: out of the L2
	inDRAM         // l3Bytes or more: from main memory
)

// evictFor is how much the timing writes before a run to push inputs out
// to a level: twice the cache they must leave.
func evictFor(level int) int {
	switch level {
	case inL3:
		return 2 * l2Bytes
	case inDRAM:
		return 2 * l3Bytes
	}
	return 0
}

// minFitSeconds is the least measured time the roofline fit takes in:
// the fit minimises relative errors, and a node whose time is within the
// clocks' noise of the run overhead subtracted from it would weigh more
// than all the others together.
const minFitSeconds = 50e-9

// minMeasuredSeconds is the least time recorded for a node: the format
// wants a positive time, and a node whose median is within the run
// overhead costs next to nothing.
const minMeasuredSeconds = 1e-9

type profileOptions struct {
	load        loadFlags
	out         string
	repeat      int
	warmup      int
	base        string
	name        string
	seed        uint64
	level       string
	inputValues listFlag
	train       bool
	loss        string
	clock       string
}

func profileCmd() *command {
	return &command{
		name:  "profile",
		usage: "-o device.profile.yaml [-repeat N] [-warmup N] [-base NAME|file.yaml] [-name NAME] [-level disabled] [-train [-loss sum]] [-input-shape name=DIMS] [-input-value name=INT] [-seed S] MODEL...",
		short: "Time every node of models (MODEL = model.onnx, " + pipeline.ZooHelp + " or manifest:FILE.tsv) alone in ONNX Runtime on this machine and write a device profile: per-signature measured seconds and a roofline fitted to them.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &profileOptions{}
			o.load.register(fs)
			fs.StringVar(&o.out, "o", "", "output profile `file` (.yaml; required)")
			fs.IntVar(&o.repeat, "repeat", 25, "timed runs of each node, `N`; the median counts")
			fs.IntVar(&o.warmup, "warmup", 3, "untimed runs of each node before the timed ones, `N`")
			fs.StringVar(&o.base, "base", defaultProfileBase, "profile whose device (datasheet) section the output keeps, and whose measured entries it keeps where this run measures nothing: a built-in `name` ("+strings.Join(profiles.Builtins(), ", ")+") or a .yaml file")
			fs.StringVar(&o.name, "name", "", "device `name` of the written profile (default: the base's)")
			fs.Uint64Var(&o.seed, "seed", 1, "`seed` of the random inputs")
			fs.StringVar(&o.level, "level", "disabled", "ONNX Runtime graph optimization `level` of the sessions: disabled, basic, extended, layout or all")
			fs.Var(&o.inputValues, "input-value", "`name=INT`: fill a graph input with this value instead of random ones, e.g. a sample rate (repeatable)")
			fs.BoolVar(&o.train, "train", false, "profile the models' training graphs (passes/autodiff, as compile -train builds them) instead of their inference graphs")
			fs.StringVar(&o.loss, "loss", "sum", "with -train, the `loss` (as for compile)")
			fs.StringVar(&o.clock, "clock", ort.ClockCPU, clockHelp)
			return func(ctx context.Context, args []string, io *Streams) error {
				if len(args) == 0 {
					return usagef("profile needs at least one MODEL: a model file, zoo:NAME or manifest:FILE")
				}
				if o.out == "" {
					return usagef("profile needs -o device.profile.yaml")
				}
				return runProfile(ctx, o, args, io)
			}
		},
	}
}

// modelSpec is one model that profile or validate-cost runs.
type modelSpec struct {
	name string // how tables name it
	path string // the model file; "" for a zoo model
	zoo  string // the zoo spec after "zoo:"
	// shapes and values are the input shapes and fixed integer input
	// values of a manifest entry; nil for other models (the command's
	// -input-shape flags apply).
	shapes map[string][]int64
	values map[string]int64
}

// parseModelArgs expands the MODEL arguments: model files, zoo specs
// and manifests (the TSV that ../shared/models/fetch.sh writes: name,
// path, sha256, source, input specs such as x:1x3x640x640 or
// sr:scalar:int64=16000).
func parseModelArgs(args []string) ([]modelSpec, error) {
	var out []modelSpec
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "zoo:"):
			out = append(out, modelSpec{name: a, zoo: strings.TrimPrefix(a, "zoo:")})
		case strings.HasPrefix(a, "manifest:"):
			specs, err := readManifest(strings.TrimPrefix(a, "manifest:"))
			if err != nil {
				return nil, err
			}
			out = append(out, specs...)
		default:
			out = append(out, modelSpec{name: filepath.Base(a), path: a})
		}
	}
	return out, nil
}

// readManifest reads a model manifest (tab-separated, one header line).
func readManifest(path string) ([]modelSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	var out []modelSpec
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 || strings.TrimSpace(sc.Text()) == "" {
			continue // the header
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 5 {
			return nil, fmt.Errorf("%s:%d: %d columns, want 5 (name, path, sha256, source, inputs)", path, line, len(cols))
		}
		s := modelSpec{name: cols[0], path: cols[1], shapes: map[string][]int64{}, values: map[string]int64{}}
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

// addInput parses name:1x3x640x640 or name:scalar:int64=16000.
func (s *modelSpec) addInput(spec string) error {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
		return fmt.Errorf("input %q: want name:SHAPE or name:SHAPE:int64=VALUE", spec)
	}
	dims := []int64{}
	if parts[1] != "scalar" {
		for _, d := range strings.Split(parts[1], "x") {
			n, err := strconv.ParseInt(d, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("input %q: bad dimension %q", spec, d)
			}
			dims = append(dims, n)
		}
	}
	s.shapes[parts[0]] = dims
	if len(parts) == 3 {
		dt, val, ok := strings.Cut(parts[2], "=")
		v, err := strconv.ParseInt(val, 10, 64)
		if !ok || dt != "int64" || err != nil {
			return fmt.Errorf("input %q: only int64=VALUE fixed values are supported", spec)
		}
		s.values[parts[0]] = v
	}
	return nil
}

// preparedModel is a model ready to run: its graph with static shapes
// (the training graph for kind "training"), the same graph exported to
// file, and seeded inputs for every graph input.
type preparedModel struct {
	spec   modelSpec
	kind   string // "inference" or "training"
	model  *pipeline.Model
	graph  *ir.Graph
	file   string
	inputs map[string]ort.Tensor
}

// prepareModel loads a model (inference graph, or training graph when
// train is set), exports it to dir, and draws its inputs. lo carries the
// command's -input-shape and -dim flags, which apply to model files
// outside manifests.
func prepareModel(ctx context.Context, spec modelSpec, lo pipeline.LoadOptions, train *autodiff.Options, seed uint64, values map[string]int64, dir string, errOut io.Writer) (*preparedModel, error) {
	path := spec.path
	switch {
	case spec.zoo != "":
		path, lo = "zoo:"+spec.zoo, pipeline.LoadOptions{}
	case spec.shapes != nil:
		lo = pipeline.LoadOptions{InputShapes: map[string][]ir.Dim{}}
		for name, dims := range spec.shapes {
			for _, d := range dims {
				lo.InputShapes[name] = append(lo.InputShapes[name], ir.D(d))
			}
			if lo.InputShapes[name] == nil {
				lo.InputShapes[name] = []ir.Dim{}
			}
		}
	}
	lo.RequireStatic = true
	m, err := pipeline.Load(ctx, path, lo)
	if err != nil {
		return nil, err
	}
	pm := &preparedModel{spec: spec, kind: "inference", model: m}
	if train != nil {
		if err := m.Train(ctx, *train); err != nil {
			return nil, &noTrainingGraphError{spec.name, err}
		}
		pm.kind = "training"
	}
	g := m.Graph
	pm.graph = g
	pm.file = filepath.Join(dir, fmt.Sprintf("%s.%s.onnx", safeName(spec.name), pm.kind))
	if err := onnxexp.ExportFile(g, pm.file, onnxexp.Options{ValueInfo: true}); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	vals := values
	if spec.values != nil {
		vals = spec.values
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
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	for _, name := range sortedKeys(vals) {
		t, ok := pm.inputs[name]
		if !ok {
			return nil, fmt.Errorf("-input-value %s: %s has no input %q", name, spec.name, name)
		}
		if pm.inputs[name], err = ort.Filled(t.DType, t.Shape, vals[name]); err != nil {
			return nil, fmt.Errorf("-input-value %s: %w", name, err)
		}
	}
	return pm, nil
}

// noTrainingGraphError says that autodiff cannot build a model's
// training graph (an op without a gradient): profile and validate-cost
// go on with the other models.
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

// sigEntry is one node signature of the profiled models.
type sigEntry struct {
	key   string
	m     profiles.Measured
	node  *ir.Node // the first node with the signature
	model *preparedModel
	nodes int // nodes with this signature
	work  profiles.Cost
	// cold[i] is the cache level input slot i of node is read from in
	// its model (coldInputs): inCache, inL3 or inDRAM.
	cold []int
	// skip is why it was not measured ("" when it was); detail an
	// example message.
	skip, detail string
}

// skipCount is one reason nodes were not measured.
type skipCount struct {
	Reason  string `json:"reason"`
	Nodes   int    `json:"nodes"`
	Example string `json:"example,omitempty"`
}

// profileRun is what runProfile measured, for the summary.
type profileRun struct {
	models      []*preparedModel
	nodes       int // nodes seen (Constant and control flow included)
	entries     []*sigEntry
	measured    int // signatures measured
	skipped     []skipCount
	overhead    time.Duration // the run overhead subtracted
	fit         *profiles.FitResult
	baseKept    int      // measured entries kept from the base
	baseReplace int      // base entries this run measured again
	noTrain     []string // models left out: no training graph
}

func runProfile(ctx context.Context, o *profileOptions, args []string, st *Streams) error {
	if o.repeat < 1 {
		return usagef("-repeat %d: want at least 1", o.repeat)
	}
	if o.warmup < 0 {
		return usagef("-warmup %d: want 0 or more", o.warmup)
	}
	if !slices.Contains(verify.LevelNames(), o.level) {
		return usagef("-level %q: want one of %s", o.level, strings.Join(verify.LevelNames(), ", "))
	}
	if o.clock != ort.ClockCPU && o.clock != ort.ClockWall {
		return usagef("-clock %q: want cpu or wall", o.clock)
	}
	if ext := strings.ToLower(filepath.Ext(o.out)); ext != ".yaml" && ext != ".yml" {
		return usagef("-o %q: a profile file must end in .yaml or .yml (that is how -profile tells a file from a built-in name)", o.out)
	}
	values, err := parseInputValues(o.inputValues)
	if err != nil {
		return err
	}
	var train *autodiff.Options
	if o.train {
		loss, err := autodiff.ParseLoss(o.loss)
		if err != nil {
			return usagef("-loss %q: %v", o.loss, err)
		}
		train = &autodiff.Options{Loss: loss}
	} else if o.loss != "sum" {
		return usagef("-loss applies to training graphs: add -train")
	}
	specs, err := parseModelArgs(args)
	if err != nil {
		return err
	}
	lo, err := o.load.options(st, true)
	if err != nil {
		return err
	}
	for _, s := range specs {
		if s.path != "" && onnxexp.SamePath(o.out, s.path) {
			return fmt.Errorf("refusing to overwrite the input model %s: write the profile to another path", s.path)
		}
	}
	base, err := profiles.Load(o.base)
	if err != nil {
		return err
	}
	version, err := ort.Version()
	if err != nil {
		return fmt.Errorf("profile needs ONNX Runtime: %w", err)
	}
	dir, err := os.MkdirTemp("", "remat-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	run := &profileRun{}
	byKey := map[string]*sigEntry{}
	for _, spec := range specs {
		pm, err := prepareModel(ctx, spec, lo, train, o.seed, values, dir, st.Err)
		var nt *noTrainingGraphError
		if errors.As(err, &nt) {
			run.noTrain = append(run.noTrain, nt.Error())
			continue
		}
		if err != nil {
			return err
		}
		run.models = append(run.models, pm)
		n, err := collectSignatures(pm, base, byKey, &run.entries)
		if err != nil {
			return err
		}
		run.nodes += n
	}
	if len(run.models) == 0 {
		return fmt.Errorf("profile: no model to measure: %s", strings.Join(run.noTrain, "; "))
	}
	overhead, err := runOverhead(dir, o.level, o.clock, o.warmup, o.repeat)
	if err != nil {
		return err
	}
	run.overhead = overhead
	if err := measureSignatures(ctx, run, o, dir, st); err != nil {
		return err
	}

	prof, err := buildMeasuredProfile(run, base, o, version)
	if err != nil {
		return err
	}
	data, err := prof.Marshal()
	if err != nil {
		return fmt.Errorf("profile: internal error: the measured profile does not validate: %w", err)
	}
	if err := atomicfile.Write(o.out, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return err
	}
	return printProfile(st.Out, o, run, prof)
}

// collectSignatures adds the signatures of pm's nodes (root graph and
// subgraph bodies) to byKey and list, and returns how many nodes it saw.
func collectSignatures(pm *preparedModel, base *profiles.Profile, byKey map[string]*sigEntry, list *[]*sigEntry) (int, error) {
	plain := &profiles.Profile{Format: profiles.FormatV1, Device: base.Device}
	cold := coldInputs(pm.graph)
	seen := 0
	var walk func(g *ir.Graph)
	walk = func(g *ir.Graph) {
		for _, n := range g.Nodes {
			seen++
			for _, sg := range n.Subgraphs() {
				walk(sg)
			}
			e := &sigEntry{node: n, model: pm, nodes: 1, cold: cold[n]}
			switch reason := unmeasurable(n); {
			case reason != "":
				e.skip, e.key = reason, "skip\x00"+reason
			default:
				m, err := profiles.NewMeasured(n)
				if err != nil {
					e.skip, e.detail = "inputs without a static shape (a branch that never runs?)", err.Error()
					e.key = "skip\x00" + e.skip
					break
				}
				e.m, e.key = m, measuredKey(m)
				if c, err := plain.Cost(n); err == nil {
					e.work = c
				}
			}
			if prev, ok := byKey[e.key]; ok {
				prev.nodes++
				continue
			}
			byKey[e.key] = e
			*list = append(*list, e)
		}
	}
	walk(pm.graph)
	return seen, nil
}

// coldInputs says, for every node of g's root graph, where it finds each
// of its inputs (inCache, inL3, inDRAM), by reuse distance in g's order
// (the order ONNX Runtime runs at level "disabled"): the bytes that the
// nodes running between the input's last touch and the read move (the
// outputs they write and the parameters they read), against the L2 and
// L3 sizes. An activation was last touched when its producer ran; a
// parameter or graph input a run earlier, so its distance is the whole
// model's traffic. Views (ops the op table marks ir.Alias) read nothing
// and find everything in the caches.
func coldInputs(g *ir.Graph) map[*ir.Node][]int {
	pos := map[*ir.Node]int{}
	// prefix[i] is the traffic before node i: the bytes of the outputs
	// written and of the parameters read.
	prefix := make([]int64, len(g.Nodes)+1)
	for i, n := range g.Nodes {
		pos[n] = i
		var b int64
		for _, v := range n.Outputs {
			if v != nil {
				if x, ok := v.Type.Bytes(); ok {
					b += x
				}
			}
		}
		for _, v := range n.Inputs {
			if v != nil && v.Data != nil {
				if x, ok := v.Type.Bytes(); ok {
					b += x
				}
			}
		}
		prefix[i+1] = prefix[i] + b
	}
	level := func(distance int64) int {
		switch {
		case distance >= l3Bytes:
			return inDRAM
		case distance >= l2Bytes:
			return inL3
		}
		return inCache
	}
	total := prefix[len(g.Nodes)]
	out := make(map[*ir.Node][]int, len(g.Nodes))
	for i, n := range g.Nodes {
		c := make([]int, len(n.Inputs))
		if info := n.Info(); info != nil && info.Flags&ir.Alias != 0 {
			// A view (Reshape, Squeeze, Identity…) reads no data: inside
			// the model its output shares its input's buffer.
			out[n] = c
			continue
		}
		for k, v := range n.Inputs {
			switch {
			case v == nil:
			case v.Def == nil || v.Def.Op == "Constant":
				if size, _ := v.Type.Bytes(); v.Data == nil || size >= coldParamBytes {
					c[k] = level(total)
				}
			default:
				if j, ok := pos[v.Def]; ok {
					c[k] = level(prefix[i] - prefix[j+1])
				}
			}
		}
		out[n] = c
	}
	return out
}

// unmeasurable says why node n cannot be measured alone, "" when it can.
func unmeasurable(n *ir.Node) string {
	std := n.Domain == "" || n.Domain == "ai.onnx"
	switch {
	case std && n.Op == "Constant":
		return "Constant: ONNX Runtime turns it into an initializer when it loads the model, nothing runs"
	case len(n.Subgraphs()) > 0:
		return n.Op + ": control flow, its body nodes are measured one by one"
	}
	for _, v := range slices.Concat(n.Inputs, n.Outputs) {
		if v == nil {
			continue
		}
		if v.Type.Kind != ir.KindTensor {
			return "sequence or optional values (ONNX Runtime's Go binding passes tensors only)"
		}
		if !v.Type.DType.Valid() {
			return "untyped values (in a branch that shape inference proved dead)"
		}
		if _, ok := ortTypeName(v.Type.DType); !ok {
			return "element types the ONNX Runtime binding cannot pass (" + v.Type.DType.String() + ")"
		}
		if _, ok := v.Type.Dims(); !ok {
			return "values without a static shape (a branch that never runs?)"
		}
	}
	return ""
}

// measuredKey is the signature key of m: the fields that identify it.
func measuredKey(m profiles.Measured) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00", m.Op, m.Domain, m.Attrs, m.DType)
	for i, s := range m.Shapes {
		if i > 0 {
			b.WriteByte(';')
		}
		if s == nil {
			b.WriteByte('-')
			continue
		}
		fmt.Fprint(&b, s)
	}
	return b.String()
}

// ortTypeName is the ONNX Runtime binding's name of an element type.
func ortTypeName(dt ir.DType) (string, bool) {
	code, ok := onnxexp.DataType(dt)
	if !ok {
		return "", false
	}
	name := ort.DTypeName(code)
	_, ok = ort.DTypeCode(name)
	return name, ok
}

// captureValues runs pm once with the steering values that its measured
// nodes read from the root graph (integer, bool and small tensors that
// nodes compute, Constant outputs) added as graph outputs, and returns
// them by value.
func captureValues(pm *preparedModel, entries []*sigEntry, level, dir string) (map[*ir.Value]ort.Tensor, error) {
	g := pm.graph
	isOut := map[*ir.Value]bool{}
	for _, v := range g.Outputs {
		isOut[v] = true
	}
	var extra []*ir.Value
	for _, e := range entries {
		if e.skip != "" || e.model != pm {
			continue
		}
		for _, v := range e.node.Inputs {
			// Root-graph values only (a body node may read one from the
			// outer scope): a body's own values cannot be outputs.
			if v == nil || v.Def == nil || v.Graph != g || isOut[v] || !steering(v) {
				continue
			}
			isOut[v] = true
			extra = append(extra, v)
		}
	}
	out := map[*ir.Value]ort.Tensor{}
	if len(extra) == 0 {
		return out, nil
	}
	saved := g.Outputs
	g.Outputs = append(slices.Clip(g.Outputs), extra...)
	path := filepath.Join(dir, "capture.onnx")
	err := onnxexp.ExportFile(g, path, onnxexp.Options{})
	g.Outputs = saved
	if err != nil {
		return nil, fmt.Errorf("%s: exporting the model with its steering values as outputs: %w", pm.spec.name, err)
	}
	res, err := ort.Run(path, pm.inputs, ort.Options{Level: level, Threads: 1, Arena: true})
	if err != nil {
		return nil, fmt.Errorf("%s: running the model to capture its steering values: %w", pm.spec.name, err)
	}
	for _, v := range extra {
		if t, ok := res.Outputs[v.Name]; ok {
			out[v] = t
		}
	}
	return out, nil
}

// steering reports whether v's value, rather than only its shape, may
// change what a node reading it does.
func steering(v *ir.Value) bool {
	if v.Def != nil && v.Def.Op == "Constant" {
		return true
	}
	if !v.Type.DType.IsFloat() {
		return true
	}
	dims, ok := v.Type.Dims()
	return ok && ort.NumElements(dims) <= capturedMaxElems
}

// singleNode builds the single-node model of e's node: its graph and the
// values of its graph inputs. With sink, every output of rank one or more
// is read by a sink (addSink) instead of being a graph output, except
// the outputs that are graph outputs of the model: ONNX Runtime
// allocates those afresh on every run of the model, and so of the
// single-node model. With
// withCold, the inputs e.cold marks are listed by name for the timing to
// keep out of the caches (ort.TimedModel.ColdInputs); parameters among
// them become graph inputs, whose data is then ours.
func singleNode(e *sigEntry, captured map[*ir.Value]ort.Tensor, seed uint64, sink, withCold bool) (*ir.Graph, map[string]ort.Tensor, []string, error) {
	n := e.node
	root := n.Graph.Root()
	g := ir.NewGraph("profile_" + n.Op)
	g.Opsets = slices.Clone(root.Opsets)
	inputs := map[string]ort.Tensor{}
	var cold []string
	vals := map[*ir.Value]*ir.Value{}
	ins := make([]*ir.Value, len(n.Inputs))
	for i, v := range n.Inputs {
		if v == nil {
			continue
		}
		if w, ok := vals[v]; ok {
			ins[i] = w
			continue
		}
		name := fmt.Sprintf("in%d", i)
		var w *ir.Value
		data, isConst := constantData(v, captured)
		isCold := withCold && i < len(e.cold) && e.cold[i] > inCache
		switch {
		case isConst && isCold:
			// A weight read cold: a graph input, so that its data is
			// ours to keep out of the caches (ort.TimedModel.ColdInputs).
			t, err := tensorFromIR(data)
			if err != nil {
				return nil, nil, nil, err
			}
			w = g.AddInput(name, v.Type)
			inputs[name] = t
			cold = append(cold, name)
		case isConst:
			w = g.AddParam(name, v.Type, data)
		default:
			t, err := inputValue(e, i, captured, seed)
			if err != nil {
				return nil, nil, nil, err
			}
			w = g.AddInput(name, v.Type)
			inputs[name] = t
			if isCold {
				cold = append(cold, name)
			}
		}
		vals[v], ins[i] = w, w
	}
	outs := make([]string, len(n.Outputs))
	for i, v := range n.Outputs {
		if v != nil {
			outs[i] = fmt.Sprintf("out%d", i)
		}
	}
	m := g.NewNode(n.Op, n.Domain, ins, outs)
	m.Name = "node"
	m.Attrs = slices.Clone(n.Attrs)
	for i, v := range n.Outputs {
		if v == nil {
			continue
		}
		m.Outputs[i].Type = v.Type
		if sink && !slices.Contains(root.Outputs, v) {
			addSink(g, m.Outputs[i])
		} else {
			g.AddOutput(m.Outputs[i])
		}
	}
	if len(g.Inputs) == 0 {
		// ONNX Runtime's binding needs a graph input: a node of
		// initializers alone takes its first one as an input instead.
		for i, v := range ins {
			if v != nil && v.Data != nil {
				t, err := tensorFromIR(v.Data)
				if err != nil {
					return nil, nil, nil, err
				}
				w := g.AddInput(v.Name+"_in", v.Type)
				m.SetInput(i, w)
				for j := i + 1; j < len(ins); j++ {
					if ins[j] == v {
						m.SetInput(j, w)
					}
				}
				g.Params = slices.DeleteFunc(g.Params, func(p *ir.Value) bool { return p == v })
				inputs[w.Name] = t
				break
			}
		}
	}
	return g, inputs, cold, nil
}

// addSink makes v an intermediate value, as a node's output is inside a
// model: ONNX Runtime then allocates it from its arena on every run and
// frees it after its last reader, as it does in the model, instead of
// handing it to the caller as a graph output (a fresh allocation, often
// page faults, on every run). The reader is a Slice of v's first element
// along every axis, whose one-element output is the graph output: it
// depends on v's data, so no optimizer folds it away, and it costs next
// to nothing (the run overhead that runOverhead calibrates includes one).
// An empty or rank-0 v stays a graph output.
func addSink(g *ir.Graph, v *ir.Value) {
	dims, _ := v.Type.Dims()
	if len(dims) == 0 || ort.NumElements(dims) == 0 {
		g.AddOutput(v)
		return
	}
	r := len(dims)
	zeros, ones, axes := make([]int64, r), make([]int64, r), make([]int64, r)
	out := make([]ir.Dim, r)
	for k := range r {
		ones[k], axes[k], out[k] = 1, int64(k), ir.D(1)
	}
	var sl *ir.Node
	if g.Opset("") >= 10 {
		vec := func(name string, xs []int64) *ir.Value {
			return g.AddParam(v.Name+"_"+name, ir.TensorOf(ir.Int64, int64(r)), ir.Int64Tensor([]int64{int64(r)}, xs...))
		}
		sl = g.NewNode("Slice", "", []*ir.Value{v, vec("starts", zeros), vec("ends", ones), vec("axes", axes)}, []string{v.Name + "_sink"})
	} else {
		sl = g.NewNode("Slice", "", []*ir.Value{v}, []string{v.Name + "_sink"})
		sl.Attrs = []ir.Attr{ir.IntsAttr("starts", zeros...), ir.IntsAttr("ends", ones...), ir.IntsAttr("axes", axes...)}
	}
	sl.Name = v.Name + "_sink"
	sl.Outputs[0].Type = ir.TensorType{DType: v.Type.DType, Shape: out}
	g.AddOutput(sl.Outputs[0])
}

// constantData is the data of an input that the model holds as a
// constant: a parameter, or a Constant node's output (its tensor
// attribute, or the value captured from the model).
func constantData(v *ir.Value, captured map[*ir.Value]ort.Tensor) (*ir.Tensor, bool) {
	if v.Data != nil {
		return v.Data, true
	}
	if v.Def == nil || v.Def.Op != "Constant" {
		return nil, false
	}
	if a := v.Def.Attr("value"); a != nil && a.Kind == ir.AttrTensor && a.Tensor != nil {
		return a.Tensor, true
	}
	if t, ok := captured[v]; ok {
		return &ir.Tensor{DType: v.Type.DType, Shape: slices.Clone(t.Shape), Raw: t.Data}, true
	}
	return nil, false
}

// tensorFromIR converts constant data to a tensor the binding passes.
func tensorFromIR(t *ir.Tensor) (ort.Tensor, error) {
	name, ok := ortTypeName(t.DType)
	if !ok {
		return ort.Tensor{}, fmt.Errorf("element type %s is not supported", t.DType)
	}
	out := ort.Tensor{DType: name, Shape: slices.Clone(t.Shape), Data: t.Raw}
	if out.Shape == nil {
		out.Shape = []int64{}
	}
	return out, out.Validate()
}

// inputValue is the value of input slot i of e's node: the model's own
// graph input, the captured value, a shape derived from the node's
// outputs, or seeded random values.
func inputValue(e *sigEntry, i int, captured map[*ir.Value]ort.Tensor, seed uint64) (ort.Tensor, error) {
	n := e.node
	v := n.Inputs[i]
	if t, ok := captured[v]; ok {
		return t, nil
	}
	if v.Def == nil && v.Graph == e.model.graph {
		if t, ok := e.model.inputs[v.Name]; ok {
			return t, nil
		}
	}
	dims, _ := v.Type.Dims()
	if t, ok := derivedShape(n, i, dims); ok {
		return t, nil
	}
	name, _ := ortTypeName(v.Type.DType)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d", e.key, i)
	return ort.RandomTensor(name, dims, seed^h.Sum64())
}

// derivedShape gives the shape inputs of Reshape, Expand,
// ConstantOfShape and Tile from the node's inferred output shape, for
// nodes whose inputs cannot be captured (inside subgraph bodies).
func derivedShape(n *ir.Node, i int, dims []int64) (ort.Tensor, bool) {
	if n.Domain != "" && n.Domain != "ai.onnx" || len(n.Outputs) == 0 || n.Outputs[0] == nil || n.Inputs[i].Type.DType != ir.Int64 {
		return ort.Tensor{}, false
	}
	out, ok := n.Outputs[0].Type.Dims()
	if !ok {
		return ort.Tensor{}, false
	}
	var vals []int64
	switch {
	case (n.Op == "Reshape" || n.Op == "Expand") && i == 1, n.Op == "ConstantOfShape" && i == 0:
		vals = slices.Clone(out)
	case n.Op == "Tile" && i == 1:
		in, ok := n.Inputs[0].Type.Dims()
		if !ok || len(in) != len(out) {
			return ort.Tensor{}, false
		}
		for k := range in {
			if in[k] == 0 {
				vals = append(vals, 1)
			} else {
				vals = append(vals, out[k]/in[k])
			}
		}
	default:
		return ort.Tensor{}, false
	}
	if vals == nil {
		vals = []int64{}
	}
	if int64(len(vals)) != ort.NumElements(dims) {
		return ort.Tensor{}, false
	}
	t, err := ort.NewTensor(dims, vals)
	return t, err == nil
}

// runOverhead calibrates the fixed cost that every single-node measurement
// includes once but a whole model pays once in all (the cost of one
// Session.Run, and of the sinks that read the node's outputs): the time
// of a chain of one tiny node less the per-node slope of chains of 1 and
// 9 such nodes (one-element Neg, read by a sink, as measureOne runs
// them).
func runOverhead(dir, level, clock string, warmup, repeat int) (time.Duration, error) {
	const long = 9
	var models []ort.TimedModel
	for _, k := range []int{1, long} {
		g := ir.NewGraph("chain")
		g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
		typ := ir.TensorOf(ir.Float32, 1)
		v := g.AddInput("x", typ)
		for i := range k {
			n := g.NewNode("Neg", "", []*ir.Value{v}, []string{fmt.Sprintf("y%d", i)})
			n.Name = fmt.Sprintf("neg%d", i)
			n.Outputs[0].Type = typ
			v = n.Outputs[0]
		}
		addSink(g, v)
		path := filepath.Join(dir, fmt.Sprintf("chain%d.onnx", k))
		if err := onnxexp.ExportFile(g, path, onnxexp.Options{}); err != nil {
			return 0, err
		}
		x, err := ort.NewTensor([]int64{1}, []float32{0.5})
		if err != nil {
			return 0, err
		}
		models = append(models, ort.TimedModel{Path: path, Inputs: map[string]ort.Tensor{"x": x}})
	}
	opts := ort.MeasureOptions(level)
	times, err := ort.TimeModels(models, opts, warmup+5, max(4*repeat, 100))
	if err != nil {
		return 0, fmt.Errorf("calibrating the run overhead: %w", err)
	}
	t1, tk := ort.Median(times[0].Times(clock)), ort.Median(times[1].Times(clock))
	slope := (tk - t1) / (long - 1)
	return max(0, min(t1-slope, t1)), nil
}

// measureSignatures measures every signature that can be measured.
func measureSignatures(ctx context.Context, run *profileRun, o *profileOptions, dir string, st *Streams) error {
	todo := 0
	for _, e := range run.entries {
		if e.skip == "" {
			todo++
		}
	}
	captured := map[*ir.Value]ort.Tensor{}
	for _, pm := range run.models {
		c, err := captureValues(pm, run.entries, o.level, dir)
		if err != nil {
			return err
		}
		for v, t := range c {
			captured[v] = t
		}
	}
	bar := newProgressBar(st, "profile", todo)
	defer bar.done()
	opts := ort.MeasureOptions(o.level)
	done := 0
	for k, e := range run.entries {
		if e.skip != "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		bar.update(done, fmt.Sprintf("%s %s", e.m.Op, shapeSummary(e.m.Shapes)))
		done++
		secs, skip, detail, err := measureOne(e, captured, o, opts, dir, k)
		if err != nil {
			return err
		}
		if skip != "" {
			e.skip, e.detail = skip, detail
			continue
		}
		e.m.Seconds = sig4(max(secs-run.overhead.Seconds(), minMeasuredSeconds))
		e.m.Repeats = o.repeat
		run.measured++
	}
	bar.update(done, "")
	return nil
}

// measureOne runs one signature's single-node model once to check it,
// then times it. A node ONNX Runtime cannot run alone, or that computes
// other output shapes than inferred, is skipped with a reason.
func measureOne(e *sigEntry, captured map[*ir.Value]ort.Tensor, o *profileOptions, opts ort.Options, dir string, k int) (secs float64, skip, detail string, err error) {
	g, inputs, _, err := singleNode(e, captured, o.seed, false, false)
	if err != nil {
		return 0, "no values for its inputs", err.Error(), nil
	}
	path := filepath.Join(dir, fmt.Sprintf("node%05d.onnx", k))
	defer os.Remove(path)
	if err := onnxexp.ExportFile(g, path, onnxexp.Options{}); err != nil {
		return 0, "cannot be written as a model alone", err.Error(), nil
	}
	gs, sinkInputs, cold, err := singleNode(e, captured, o.seed, true, true)
	evict := 0
	for _, l := range e.cold {
		evict = max(evict, evictFor(l))
	}
	if err != nil {
		return 0, "no values for its inputs", err.Error(), nil
	}
	sinkPath := filepath.Join(dir, fmt.Sprintf("node%05d.sink.onnx", k))
	defer os.Remove(sinkPath)
	if err := onnxexp.ExportFile(gs, sinkPath, onnxexp.Options{}); err != nil {
		return 0, "cannot be written as a model alone", err.Error(), nil
	}
	check := opts
	check.Profile = false
	res, err := ort.Run(path, inputs, check)
	if err != nil {
		return 0, "ONNX Runtime cannot run it alone", firstLine(err.Error()), nil
	}
	for i, v := range e.node.Outputs {
		if v == nil {
			continue
		}
		want, _ := v.Type.Dims()
		got, ok := res.Outputs[fmt.Sprintf("out%d", i)]
		if !ok || !slices.Equal(got.Shape, want) && !(len(want) == 0 && len(got.Shape) == 0) {
			return 0, "alone it computes other output shapes than inferred (its inputs' values matter)",
				fmt.Sprintf("%s output %d: %v, inferred %v", e.node, i, got.Shape, want), nil
		}
	}
	times, err := ort.TimeModels([]ort.TimedModel{{Path: sinkPath, Inputs: sinkInputs, ColdInputs: cold, EvictBytes: evict}}, opts, o.warmup, o.repeat)
	if err != nil {
		return 0, "ONNX Runtime cannot run it alone", firstLine(err.Error()), nil
	}
	return ort.Median(times[0].Times(o.clock)).Seconds(), "", "", nil
}

// sig4 rounds x to four significant digits: the clocks do not resolve
// more, and the file stays readable.
func sig4(x float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	if err != nil {
		return x
	}
	return r
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// shapeSummary writes input shapes as [1,3,224,224] [64,3,7,7].
func shapeSummary(shapes [][]int64) string {
	var parts []string
	for _, s := range shapes {
		if s == nil {
			parts = append(parts, "-")
			continue
		}
		parts = append(parts, verify.FormatShape(s))
	}
	return strings.Join(parts, " ")
}

// buildMeasuredProfile assembles the written profile: the base's device,
// the entries measured now and the base's other entries, and the
// roofline fitted to the entries measured now.
func buildMeasuredProfile(run *profileRun, base *profiles.Profile, o *profileOptions, version string) (*profiles.Profile, error) {
	p := &profiles.Profile{Format: profiles.FormatV1, Device: base.Device}
	if o.name != "" {
		p.Device.Name = o.name
	}
	fresh := map[string]bool{}
	var samples []profiles.FitSample
	for _, e := range run.entries {
		if e.skip != "" {
			continue
		}
		fresh[e.key] = true
		p.Measured = append(p.Measured, e.m)
		if e.work.Source != "" && e.m.Seconds >= minFitSeconds {
			samples = append(samples, profiles.FitSample{Seconds: e.m.Seconds, FLOPs: e.work.FLOPs, Bytes: float64(e.work.Bytes())})
		}
	}
	for _, m := range base.Measured {
		if fresh[measuredKey(m)] {
			run.baseReplace++
			continue
		}
		run.baseKept++
		p.Measured = append(p.Measured, m)
	}
	slices.SortFunc(p.Measured, func(a, b profiles.Measured) int { return cmp.Compare(measuredKey(a), measuredKey(b)) })
	switch {
	case len(samples) > 0:
		fit, err := profiles.Fit(samples, &base.Device)
		if err != nil {
			return nil, err
		}
		run.fit = fit
		f := fit.Fitted
		f.FLOPsPerSecond, f.BytesPerSecond, f.OverheadSeconds = sig4(f.FLOPsPerSecond), sig4(f.BytesPerSecond), sig4(f.OverheadSeconds)
		f.Source = fmt.Sprintf("remat-compile profile: ONNX Runtime %s CPU, level %s, 1 intra-op thread, arena on, memory pattern off; "+
			"median of %d runs after %d warm-ups less a %.3g µs run overhead; t = overhead + max(FLOPs/flops_per_second, bytes/bytes_per_second) "+
			"fitted to %d signatures by relative least squares (median |error| %.0f%%)",
			version, o.level, o.repeat, o.warmup, run.overhead.Seconds()*1e6, len(samples), 100*fit.MedianRelError)
		if len(fit.Fallback) > 0 {
			f.Source += "; datasheet " + strings.Join(fit.Fallback, " and ") + " (no measured node determined it)"
		}
		p.Fitted = &f
	case base.Fitted != nil:
		p.Fitted = base.Fitted
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile: internal error: %w", err)
	}
	return p, nil
}

// skipSummary groups the unmeasured nodes by reason, most nodes first.
func skipSummary(entries []*sigEntry) []skipCount {
	byReason := map[string]*skipCount{}
	for _, e := range entries {
		if e.skip == "" {
			continue
		}
		s, ok := byReason[e.skip]
		if !ok {
			s = &skipCount{Reason: e.skip, Example: e.detail}
			if s.Example == "" {
				s.Example = e.node.String()
			}
			byReason[e.skip] = s
		}
		s.Nodes += e.nodes
	}
	var out []skipCount
	for _, k := range sortedKeys(byReason) {
		out = append(out, *byReason[k])
	}
	slices.SortStableFunc(out, func(a, b skipCount) int { return cmp.Compare(b.Nodes, a.Nodes) })
	return out
}

func printProfile(w io.Writer, o *profileOptions, run *profileRun, p *profiles.Profile) error {
	measuredNodes := 0
	for _, e := range run.entries {
		if e.skip == "" {
			measuredNodes += e.nodes
		}
	}
	fmt.Fprintf(w, "profile: wrote %s (device %s, %d measured entries)\n", o.out, p.Device.Name, len(p.Measured))
	for _, pm := range run.models {
		fmt.Fprintf(w, "model: %s (%s graph, %d nodes)\n", pm.spec.name, pm.kind, len(pm.graph.Nodes))
	}
	for _, s := range run.noTrain {
		fmt.Fprintf(w, "left out: %s\n", s)
	}
	fmt.Fprintf(w, "measured: %d signatures covering %d of %d nodes (subgraph bodies included), ONNX Runtime level %s, median of %d runs after %d warm-ups, less a run overhead of %s\n",
		run.measured, measuredNodes, run.nodes, o.level, o.repeat, o.warmup, formatSeconds(run.overhead.Seconds()))
	run.skipped = skipSummary(run.entries)
	if len(run.skipped) > 0 {
		fmt.Fprintf(w, "not measured:\n")
		for _, s := range run.skipped {
			fmt.Fprintf(w, "  %4d nodes: %s (e.g. %s)\n", s.Nodes, s.Reason, s.Example)
		}
	}
	if run.baseKept+run.baseReplace > 0 {
		fmt.Fprintf(w, "base: %d measured entries of %s kept, %d measured again\n", run.baseKept, o.base, run.baseReplace)
	}
	if f := run.fit; f != nil {
		fmt.Fprintf(w, "fitted roofline: %s FLOP/s, %s B/s, %s per node (%d compute-bound, %d memory-bound signatures; |error| median %.0f%%, rms %.0f%%)\n",
			siRate(f.Fitted.FLOPsPerSecond), siRate(f.Fitted.BytesPerSecond), formatSeconds(f.Fitted.OverheadSeconds),
			f.ComputeBound, f.MemoryBound, 100*f.MedianRelError, 100*f.RMSRelError)
		if len(f.Fallback) > 0 {
			fmt.Fprintf(w, "  no measured node determined %s: the datasheet's is kept\n", strings.Join(f.Fallback, " and "))
		}
	}
	return nil
}

// siRate writes a rate with an SI prefix: 12.3G.
func siRate(x float64) string {
	for _, u := range []struct {
		f float64
		p string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if x >= u.f {
			return fmt.Sprintf("%.3g%s", x/u.f, u.p)
		}
	}
	return fmt.Sprintf("%.3g", x)
}

// progressBar draws "label [#####.....] 12/40 note" on stderr, rewritten
// in place, only when stderr is a terminal.
type progressBar struct {
	w     io.Writer
	on    bool
	label string
	total int
	last  time.Time
	drawn bool
}

func newProgressBar(st *Streams, label string, total int) *progressBar {
	return &progressBar{w: st.Err, on: st.ErrTTY && total > 0, label: label, total: total}
}

func (b *progressBar) update(done int, note string) {
	if !b.on {
		return
	}
	now := time.Now()
	if b.drawn && done < b.total && now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last, b.drawn = now, true
	const width = 30
	fill := width * done / b.total
	line := fmt.Sprintf("%s [%s%s] %d/%d %s", b.label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, b.total, note)
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	fmt.Fprintf(b.w, "\r\033[K%s", line)
}

func (b *progressBar) done() {
	if b.on && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
	b.drawn = false
}
