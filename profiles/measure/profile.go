package measure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

// DefaultBase is the profile whose datasheet section a measured profile
// keeps when ProfileOptions.Base is nil: the generic CPU of
// profiles/data/cpu-generic.yaml.
const DefaultBase = "cpu-generic"

// DefaultRepeat is the number of timed runs of each node when
// ProfileOptions.Repeat is 0.
const DefaultRepeat = 25

// capturedMaxElems is the largest float tensor whose run-time value a
// single-node model gets from the whole model rather than at random.
const capturedMaxElems = 64

// coldParamBytes is the size below which a parameter (a bias, a
// normalization scale) counts as warm in coldInputs: too small to matter.
const coldParamBytes = 32 << 10

// The cache levels an input is read from (coldInputs).
const (
	inCache = iota // reuse distance below the L2's size
	inL3           // below the L3's: out of the L2
	inDRAM         // the L3's size or more: from main memory
)

// evictFor is how much the timing writes before a run to push inputs out
// to a level: twice the cache they must leave.
func (c CacheSizes) evictFor(level int) int {
	switch level {
	case inL3:
		return int(2 * c.L2Bytes)
	case inDRAM:
		return int(2 * c.L3Bytes)
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

// ProfileOptions configure Profile. The zero value measures inference
// graphs at level "disabled" with the CPU clock, DefaultRepeat timed runs
// and no warm-up, against DefaultBase and the machine's caches.
type ProfileOptions struct {
	// Load holds the options for model files named without a manifest
	// (shapes, dimensions, value types, debugging); ModelSpec.LoadOptions
	// says which apply to which model.
	Load pipeline.LoadOptions
	// InputValues fill graph inputs with one integer instead of random
	// values (a sample rate), for models whose spec fixes none.
	InputValues map[string]int64
	// Train, when not nil, makes Profile measure the models' training
	// graphs (passes/autodiff) instead of their inference graphs.
	Train *autodiff.Options
	// Base is the profile whose device (datasheet) section the result
	// keeps, and whose measured entries it keeps where this run measures
	// nothing; nil means DefaultBase. Name, when set, renames the device.
	Base *profiles.Profile
	Name string
	// Repeat is the number of timed runs of each node (the median
	// counts), 0 meaning DefaultRepeat; Warmup the untimed runs before.
	Repeat, Warmup int
	// Seed seeds the random inputs.
	Seed uint64
	// Level is ONNX Runtime's graph optimization level (verify.LevelNames;
	// "" is "disabled"); Clock the clock of the timings (ort.ClockCPU, the
	// default, or ort.ClockWall).
	Level, Clock string
	// Caches, when its sizes are set, replaces the machine's cache sizes
	// (MachineCaches).
	Caches CacheSizes
	// Progress, when not nil, is called before each signature is measured
	// and once when all are.
	Progress func(Progress)
}

// Progress reports Profile's measuring: Done of Total signatures, and the
// one measured next (its op and input shapes; empty in the last report).
type Progress struct {
	Done, Total int
	Op          string
	Shapes      [][]int64
}

// ProfileRun is what Profile measured: the profile and what a summary of
// the run shows.
type ProfileRun struct {
	// Profile is the measured profile: the base's device, the entries
	// measured now and the base's other entries, and the roofline fitted
	// to the entries measured now.
	Profile *profiles.Profile
	// Models are the models measured; LeftOut says which were left out
	// and why (no training graph).
	Models  []ModelSummary
	LeftOut []string
	// Nodes counts the nodes seen (subgraph bodies, Constant and control
	// flow included); MeasuredNodes those whose signature was measured,
	// Signatures the signatures measured.
	Nodes, MeasuredNodes, Signatures int
	// Skipped groups the nodes not measured by reason, most nodes first.
	Skipped []SkipCount
	// Overhead is the fixed cost of one run subtracted from every entry.
	Overhead time.Duration
	// Fit is the roofline fit; nil when nothing measured could be fitted.
	Fit *profiles.FitResult
	// BaseKept counts the base's measured entries kept, BaseReplaced
	// those this run measured again.
	BaseKept, BaseReplaced int
	// Caches are the cache sizes the cold inputs were evicted past.
	Caches CacheSizes
	// The run's settings, defaults applied, and ONNX Runtime's version.
	Level, Clock   string
	Repeat, Warmup int
	ORTVersion     string
}

// ModelSummary is one measured model.
type ModelSummary struct {
	Name  string
	Kind  string // KindInference or KindTraining
	Nodes int    // root-graph nodes
}

// SkipCount is one reason nodes were not measured.
type SkipCount struct {
	Reason  string `json:"reason"`
	Nodes   int    `json:"nodes"`
	Example string `json:"example,omitempty"`
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

// profiler is one Profile call's state.
type profiler struct {
	o       ProfileOptions
	dir     string
	models  []*preparedModel
	entries []*sigEntry
	run     *ProfileRun
}

// Profile times every node of the models alone in ONNX Runtime on this
// machine (see the package doc) and returns the measured profile with a
// summary of the run. A model without a training graph (o.Train) is left
// out; no model left to measure is an error.
func Profile(ctx context.Context, models []pipeline.ModelSpec, o ProfileOptions) (*ProfileRun, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if len(models) == 0 {
		return nil, optionErrorf("profile needs at least one model")
	}
	run := &ProfileRun{Caches: o.Caches, Level: o.Level, Clock: o.Clock, Repeat: o.Repeat, Warmup: o.Warmup}
	version, err := ort.Version()
	if err != nil {
		return nil, fmt.Errorf("profile needs ONNX Runtime: %w", err)
	}
	run.ORTVersion = version
	dir, err := os.MkdirTemp("", "remat-profile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	p := &profiler{o: o, dir: dir, run: run}
	byKey := map[string]*sigEntry{}
	for _, spec := range models {
		pm, err := prepareModel(ctx, spec, o.Load, o.Train, o.Seed, o.InputValues, dir)
		var nt *noTrainingGraphError
		if errors.As(err, &nt) {
			run.LeftOut = append(run.LeftOut, nt.Error())
			continue
		}
		if err != nil {
			return nil, err
		}
		p.models = append(p.models, pm)
		run.Models = append(run.Models, ModelSummary{Name: spec.Name, Kind: pm.kind, Nodes: len(pm.graph.Nodes)})
		run.Nodes += p.collectSignatures(pm, byKey)
	}
	if len(p.models) == 0 {
		return nil, fmt.Errorf("profile: no model to measure: %s", strings.Join(run.LeftOut, "; "))
	}
	if run.Overhead, err = runOverhead(dir, o.Level, o.Clock, o.Warmup, o.Repeat); err != nil {
		return nil, err
	}
	if err := p.measureSignatures(ctx); err != nil {
		return nil, err
	}
	if run.Profile, err = p.buildProfile(); err != nil {
		return nil, err
	}
	run.Skipped = skipSummary(p.entries)
	for _, e := range p.entries {
		if e.skip == "" {
			run.MeasuredNodes += e.nodes
		}
	}
	return run, nil
}

// defaults checks o and fills in its defaults.
func (o *ProfileOptions) defaults() error {
	if o.Repeat == 0 {
		o.Repeat = DefaultRepeat
	}
	if o.Repeat < 0 {
		return optionErrorf("-repeat %d: want at least 1", o.Repeat)
	}
	if o.Warmup < 0 {
		return optionErrorf("-warmup %d: want 0 or more", o.Warmup)
	}
	if err := checkSession(&o.Level, &o.Clock); err != nil {
		return err
	}
	if o.Caches.L2Bytes == 0 && o.Caches.L3Bytes == 0 {
		o.Caches = MachineCaches()
	} else if o.Caches.Source == "" {
		o.Caches.Source = "given"
	}
	if err := o.Caches.check(); err != nil {
		return err
	}
	if o.Base == nil {
		var err error
		if o.Base, err = profiles.Load(DefaultBase); err != nil {
			return err
		}
	}
	return nil
}

// collectSignatures adds the signatures of pm's nodes (root graph and
// subgraph bodies) to byKey and p.entries, and returns how many nodes it
// saw.
func (p *profiler) collectSignatures(pm *preparedModel, byKey map[string]*sigEntry) int {
	plain := &profiles.Profile{Format: profiles.FormatV1, Device: p.o.Base.Device}
	cold := coldInputs(pm.graph, p.o.Caches)
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
			p.entries = append(p.entries, e)
		}
	}
	walk(pm.graph)
	return seen
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
func coldInputs(g *ir.Graph, caches CacheSizes) map[*ir.Node][]int {
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
		case distance >= caches.L3Bytes:
			return inDRAM
		case distance >= caches.L2Bytes:
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

// sig4 rounds x to four significant digits: the clocks do not resolve
// more, and the file stays readable.
func sig4(x float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// buildProfile assembles the measured profile: the base's device, the
// entries measured now and the base's other entries, and the roofline
// fitted to the entries measured now.
func (p *profiler) buildProfile() (*profiles.Profile, error) {
	o, run, base := p.o, p.run, p.o.Base
	prof := &profiles.Profile{Format: profiles.FormatV1, Device: base.Device}
	if o.Name != "" {
		prof.Device.Name = o.Name
	}
	fresh := map[string]bool{}
	var samples []profiles.FitSample
	for _, e := range p.entries {
		if e.skip != "" {
			continue
		}
		fresh[e.key] = true
		prof.Measured = append(prof.Measured, e.m)
		if e.work.Source != "" && e.m.Seconds >= minFitSeconds {
			samples = append(samples, profiles.FitSample{Seconds: e.m.Seconds, FLOPs: e.work.FLOPs, Bytes: float64(e.work.Bytes())})
		}
	}
	for _, m := range base.Measured {
		if fresh[measuredKey(m)] {
			run.BaseReplaced++
			continue
		}
		run.BaseKept++
		prof.Measured = append(prof.Measured, m)
	}
	slices.SortFunc(prof.Measured, func(a, b profiles.Measured) int { return cmp.Compare(measuredKey(a), measuredKey(b)) })
	switch {
	case len(samples) > 0:
		fit, err := profiles.Fit(samples, &base.Device)
		if err != nil {
			return nil, err
		}
		run.Fit = fit
		f := fit.Fitted
		f.FLOPsPerSecond, f.BytesPerSecond, f.OverheadSeconds = sig4(f.FLOPsPerSecond), sig4(f.BytesPerSecond), sig4(f.OverheadSeconds)
		f.Source = fmt.Sprintf("remat-compile profile: ONNX Runtime %s CPU, level %s, 1 intra-op thread, arena on, memory pattern off; "+
			"median of %d runs after %d warm-ups less a %.3g µs run overhead; cold inputs evicted past an L2 of %s and an L3 of %s; "+
			"t = overhead + max(FLOPs/flops_per_second, bytes/bytes_per_second) "+
			"fitted to %d signatures by relative least squares (median |error| %.0f%%)",
			run.ORTVersion, o.Level, o.Repeat, o.Warmup, run.Overhead.Seconds()*1e6,
			remat.FormatBytes(o.Caches.L2Bytes), remat.FormatBytes(o.Caches.L3Bytes), len(samples), 100*fit.MedianRelError)
		if len(fit.Fallback) > 0 {
			f.Source += "; datasheet " + strings.Join(fit.Fallback, " and ") + " (no measured node determined it)"
		}
		prof.Fitted = &f
	case base.Fitted != nil:
		prof.Fitted = base.Fitted
	}
	if err := prof.Validate(); err != nil {
		return nil, fmt.Errorf("profile: internal error: %w", err)
	}
	return prof, nil
}

// skipSummary groups the unmeasured nodes by reason, most nodes first.
func skipSummary(entries []*sigEntry) []SkipCount {
	byReason := map[string]*SkipCount{}
	for _, e := range entries {
		if e.skip == "" {
			continue
		}
		s, ok := byReason[e.skip]
		if !ok {
			s = &SkipCount{Reason: e.skip, Example: e.detail}
			if s.Example == "" {
				s.Example = e.node.String()
			}
			byReason[e.skip] = s
		}
		s.Nodes += e.nodes
	}
	var out []SkipCount
	for _, k := range slices.Sorted(maps.Keys(byReason)) {
		out = append(out, *byReason[k])
	}
	slices.SortStableFunc(out, func(a, b SkipCount) int { return cmp.Compare(b.Nodes, a.Nodes) })
	return out
}
