package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// metadataKey is the metadata_props key of the exporter's plan, and
// metadataVersion the only version of it this verify reads; the format is
// exporters/onnx's RematMetadata.
const (
	metadataKey     = onnxexp.RematMetadataKey
	metadataVersion = onnxexp.RematMetadataVersion
)

// fusionHops bounds how far from its fused partner a node absorbed by an
// ORT fusion may be (Conv+BatchNormalization+Relu is two edges).
const fusionHops = 2

// AcceptanceBar is the project's acceptance bar for measured drop /
// predicted drop, reported (not enforced) by verify.
const AcceptanceBar = 0.80

// LevelNames returns ONNX Runtime's optimization levels, as
// ort.Options.Level spells them.
func LevelNames() []string { return []string{"disabled", "basic", "extended", "layout", "all"} }

// Report is the JSON form of verify's output. Field names carry their
// units.
type Report struct {
	Original   string `json:"original"`
	Remat      string `json:"remat"`
	ORTVersion string `json:"ort_version"`
	// Runs is the number of timed runs per model and level, after one
	// warm-up run (the profiled one).
	Runs       int    `json:"runs"`
	Seed       uint64 `json:"seed"`
	Threads    int    `json:"threads"`
	Arena      bool   `json:"arena"`
	MemPattern bool   `json:"mem_pattern"`
	// Metadata is the remat model's plan, nil when it has none.
	Metadata *onnxexp.RematMetadata `json:"metadata"`
	// PlacementChecked says whether the recompute placement was checked;
	// PlacementNote says why not.
	PlacementChecked bool           `json:"placement_checked"`
	PlacementNote    string         `json:"placement_note,omitempty"`
	Levels           []*LevelReport `json:"levels"`
	OK               bool           `json:"ok"`
	Failures         []string       `json:"failures"`
}

// LevelReport is the verification at one optimization level.
type LevelReport struct {
	Level    string         `json:"level"`
	Outputs  []OutputReport `json:"outputs"`
	Orig     Measure        `json:"original_model"`
	Rematted Measure        `json:"remat_model"`
	// ReductionBytes is the original's peak minus the remat's (negative if
	// the remat model uses more).
	ReductionBytes   int64   `json:"reduction_bytes"`
	ReductionPercent float64 `json:"reduction_percent"`
	// The predicted reduction, from the metadata, when it has both peaks:
	// under the model of ORT's allocator when the metadata has it
	// (PredictedBy "ort"), else the solver's liveness model ("liveness").
	PredictedBy             string `json:"predicted_by,omitempty"`
	PredictedReductionBytes *int64 `json:"predicted_reduction_bytes,omitempty"`
	// LivenessReductionBytes is the liveness model's predicted reduction,
	// the solver's, when the metadata has it.
	LivenessReductionBytes    *int64   `json:"liveness_predicted_reduction_bytes,omitempty"`
	PredictedReductionPercent *float64 `json:"predicted_reduction_percent,omitempty"`
	// MeasuredOverPredictedPercent is 100 × measured drop / predicted drop
	// (the acceptance bar is 80%), when the predicted drop is positive.
	MeasuredOverPredictedPercent *float64 `json:"measured_over_predicted_drop_percent,omitempty"`
	MeetsAcceptanceBar           *bool    `json:"meets_acceptance_bar,omitempty"`
	// DefaultReductionBytes is the original's DefaultPeakBytes minus the
	// remat's; PredictedDefaultReductionBytes the drop the metadata
	// predicts under ORT's default options, when it has both peaks.
	DefaultReductionBytes          int64             `json:"default_reduction_bytes"`
	DefaultReductionPercent        float64           `json:"default_reduction_percent"`
	PredictedDefaultReductionBytes *int64            `json:"predicted_default_reduction_bytes,omitempty"`
	RunTimeChangePercent           float64           `json:"run_time_change_percent"`
	Recompute                      []PlacementReport `json:"recompute"`
	OK                             bool              `json:"ok"`
	Failures                       []string          `json:"failures"`
}

// Measure is what ORT measured for one model at one level.
type Measure struct {
	// PeakBytes is the activation peak: ArenaPeakBytes - BaselineBytes.
	PeakBytes int64 `json:"peak_bytes"`
	// ArenaPeakBytes is the largest mem_in_use_peak of the first run.
	ArenaPeakBytes int64 `json:"arena_peak_bytes"`
	// BaselineBytes is what the arena held before the first kernel ran.
	BaselineBytes int64 `json:"baseline_bytes"`
	Kernels       int   `json:"kernels"`
	// MedianRunTimeMS is the median of RunTimesMS, the timed runs (the
	// warm-up run excluded), with the profiler on.
	MedianRunTimeMS float64   `json:"median_run_time_ms"`
	RunTimesMS      []float64 `json:"run_times_ms"`
	// Nodes is the memory after each kernel of the first run, in the
	// order ORT ran them (Options.NodeMemory; empty otherwise).
	Nodes []NodeMemory `json:"nodes,omitempty"`
	// DefaultPeakBytes is the activation peak under ORT's default session
	// options (arena on, memory pattern on): the arena's peak over two
	// runs of one session, the second taking the pattern's block, less
	// what it held before the first kernel (ort.SessionPeak).
	DefaultPeakBytes int64 `json:"default_peak_bytes"`
}

// OutputReport compares one graph output.
type OutputReport struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Equal bool    `json:"equal"`
	// DifferingElements counts elements whose bits differ.
	DifferingElements int64 `json:"differing_elements"`
	Elements          int64 `json:"elements"`
	// MaxAbsDiff and MaxRelDiff (|a-b| / max(|a|,|b|)) are over the
	// elements finite in both outputs.
	MaxAbsDiff float64 `json:"max_abs_diff"`
	MaxRelDiff float64 `json:"max_rel_diff"`
	// Note explains a difference the numbers do not (shape, type, NaN).
	Note string `json:"note,omitempty"`
}

// PlacementReport is where one recompute node ran.
type PlacementReport struct {
	Node string `json:"node"`
	// Event is the profile event the node ran as, Position its index in
	// ORT's execution order (-1: absent), Match how it was matched.
	Event          string `json:"event"`
	Position       int    `json:"position"`
	Match          string `json:"match"`
	Original       string `json:"original"`
	OriginalEvent  string `json:"original_event"`
	After          string `json:"after"`
	AfterEvent     string `json:"after_event"`
	AfterPosition  int    `json:"after_position"`
	Before         string `json:"before"`
	BeforeEvent    string `json:"before_event"`
	BeforePosition int    `json:"before_position"`
	OK             bool   `json:"ok"`
	Problem        string `json:"problem,omitempty"`
}

// Options configure Run.
type Options struct {
	// Levels are the ORT optimization levels to verify at (LevelNames);
	// nil means disabled and all.
	Levels []string
	// Runs is the number of timed runs of each model per level, after one
	// profiled warm-up run; 0 means 5.
	Runs int
	// Seed seeds the random inputs.
	Seed uint64
	// InputShapes gives the shapes of inputs with dynamic dimensions;
	// InputValues fills inputs with a fixed integer instead of random
	// values (a sample rate).
	InputShapes map[string][]int64
	InputValues map[string]int64
	// NodeMemory records each kernel's memory in Measure.Nodes.
	NodeMemory bool
}

// Run runs the original model and its rematerialized rewrite in ONNX
// Runtime at each level on the same seeded inputs and checks them (see
// the package doc). A check that fails is in Report.Failures (OK false),
// not an error; errors are models that cannot be loaded or run, bad
// options, and a missing ONNX Runtime.
func Run(ctx context.Context, origPath, rematPath string, o Options) (*Report, error) {
	if o.Levels == nil {
		o.Levels = []string{"disabled", "all"}
	}
	for _, l := range o.Levels {
		if !slices.Contains(LevelNames(), l) {
			return nil, fmt.Errorf("verify: unknown level %q (want %s)", l, strings.Join(LevelNames(), ", "))
		}
	}
	if o.Runs == 0 {
		o.Runs = 5
	}
	if o.Runs < 1 {
		return nil, fmt.Errorf("verify: %d runs: want at least 1", o.Runs)
	}
	for _, p := range []string{origPath, rematPath} {
		if err := checkModelFile(p); err != nil {
			return nil, err
		}
	}
	version, err := ort.Version()
	if err != nil {
		return nil, fmt.Errorf("verify needs ONNX Runtime: %w", err)
	}
	origIn, origOut, err := ort.ModelIO(origPath)
	if err != nil {
		return nil, fmt.Errorf("verify: ONNX Runtime cannot load the original model: %w", err)
	}
	rematIn, rematOut, err := ort.ModelIO(rematPath)
	if err != nil {
		return nil, fmt.Errorf("verify: ONNX Runtime cannot load the remat model: %w", err)
	}
	if err := sameIO(origPath, rematPath, origIn, origOut, rematIn, rematOut); err != nil {
		return nil, err
	}
	inputs, err := verifyInputs(origPath, origIn, o.Seed, o.InputShapes, o.InputValues)
	if err != nil {
		return nil, err
	}

	r := &Report{
		Original: origPath, Remat: rematPath, ORTVersion: version,
		Runs: o.Runs, Seed: o.Seed, Threads: 1, Arena: true, MemPattern: false,
		Failures: []string{},
	}
	plan, planErr := readPlan(rematPath)
	switch {
	case planErr != nil:
		r.Failures = append(r.Failures, planErr.Error())
		r.PlacementNote = "placement check skipped: " + planErr.Error()
	case plan == nil:
		r.PlacementNote = fmt.Sprintf("placement check skipped: %s has no remat-compile metadata (metadata_props key %q); only outputs and peaks were checked", filepath.Base(rematPath), metadataKey)
	default:
		r.Metadata = plan.md
		r.PlacementChecked = true
	}

	for _, level := range o.Levels {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lr, err := verifyLevel(level, origPath, rematPath, inputs, o.Runs, plan, o.NodeMemory)
		if err != nil {
			return nil, err
		}
		r.Levels = append(r.Levels, lr)
		for _, f := range lr.Failures {
			r.Failures = append(r.Failures, "level "+level+": "+f)
		}
	}
	r.OK = len(r.Failures) == 0
	return r, nil
}

func checkModelFile(p string) error {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("verify: %s: no such file", p)
	case err != nil:
		return fmt.Errorf("verify: %w", err)
	case st.IsDir():
		return fmt.Errorf("verify: %s is a directory, not a model file", p)
	}
	return nil
}

// sameIO checks that the two models have the same graph inputs (names,
// types and declared shapes) and outputs (names, types and compatible
// shapes): verify feeds both the same inputs and compares the outputs.
func sameIO(origPath, rematPath string, origIn, origOut, rematIn, rematOut []ort.ValueInfo) error {
	var diffs []string
	compare := func(what string, a, b []ort.ValueInfo, exact bool) {
		bm := map[string]ort.ValueInfo{}
		for _, v := range b {
			bm[v.Name] = v
		}
		am := map[string]bool{}
		for _, v := range a {
			am[v.Name] = true
			w, ok := bm[v.Name]
			switch {
			case !ok:
				diffs = append(diffs, fmt.Sprintf("%s %q is missing from the remat model", what, v.Name))
			case v.DType != w.DType:
				diffs = append(diffs, fmt.Sprintf("%s %q is %s in the original and %s in the remat model", what, v.Name, v.DType, w.DType))
			case !shapesCompatible(v.Shape, w.Shape, exact):
				diffs = append(diffs, fmt.Sprintf("%s %q has shape %s in the original and %s in the remat model", what, v.Name, FormatShape(v.Shape), FormatShape(w.Shape)))
			}
		}
		for _, v := range b {
			if !am[v.Name] {
				diffs = append(diffs, fmt.Sprintf("the remat model has an extra %s %q", what, v.Name))
			}
		}
	}
	compare("input", origIn, rematIn, true)
	compare("output", origOut, rematOut, false)
	if len(diffs) > 0 {
		return fmt.Errorf("verify: %s and %s have different inputs or outputs:\n  %s", origPath, rematPath, strings.Join(diffs, "\n  "))
	}
	return nil
}

// shapesCompatible compares declared shapes (-1: dynamic). Exactly: equal.
// Otherwise: same rank, equal where both are known.
func shapesCompatible(a, b []int64, exact bool) bool {
	if exact {
		return slices.Equal(a, b)
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] >= 0 && b[i] >= 0 && a[i] != b[i] {
			return false
		}
	}
	return true
}

// FormatShape prints a declared shape, "?" for a dynamic dimension:
// [1,3,?,?].
func FormatShape(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		if d < 0 {
			parts[i] = "?"
		} else {
			parts[i] = strconv.FormatInt(d, 10)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// verifyInputs makes the seeded random inputs and applies -input-value.
func verifyInputs(path string, infos []ort.ValueInfo, seed uint64, shapes map[string][]int64, values map[string]int64) (map[string]ort.Tensor, error) {
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	for _, m := range []map[string]bool{keysOf(shapes), keysOf(values)} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(names, name) {
				return nil, fmt.Errorf("verify: %s has no input %q; its inputs are %s", filepath.Base(path), name, strings.Join(names, ", "))
			}
		}
	}
	inputs, err := ort.RandomInputs(path, seed, shapes)
	if err != nil {
		return nil, fmt.Errorf("verify: %w (give the shapes of inputs with dynamic dimensions with -input-shape)", err)
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		t, err := ort.Filled(inputs[name].DType, inputs[name].Shape, values[name])
		if err != nil {
			return nil, fmt.Errorf("verify: -input-value %s: %w", name, err)
		}
		inputs[name] = t
	}
	return inputs, nil
}

func keysOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// metadataPlan is the remat model's metadata with its root graph, to match names.
type metadataPlan struct {
	md *onnxexp.RematMetadata
	g  *ir.Graph
}

// readPlan imports the remat model and reads its metadata. It returns nil,
// nil for a model without the key.
func readPlan(path string) (*metadataPlan, error) {
	g, err := onnximp.ImportFile(path, onnximp.Options{})
	if err != nil {
		// ORT loaded the model but the importer did not: without the
		// metadata that only costs the placement check.
		if has, perr := hasMetadataKey(path); perr == nil && !has {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot match the remat-compile metadata of %s to its nodes: %v", filepath.Base(path), err)
	}
	mi, _ := g.Ext.(*onnximp.ModelInfo)
	if mi == nil {
		return nil, nil
	}
	var value string
	found := false
	for _, p := range mi.MetadataProps {
		if p.Key == metadataKey {
			value, found = p.Value, true
		}
	}
	if !found {
		return nil, nil
	}
	md := &onnxexp.RematMetadata{}
	dec := json.NewDecoder(strings.NewReader(value))
	if err := dec.Decode(md); err != nil {
		return nil, fmt.Errorf("%s: metadata %q is not valid JSON of the remat-compile format: %v", filepath.Base(path), metadataKey, err)
	}
	if md.Version != metadataVersion {
		return nil, fmt.Errorf("%s: metadata %q has version %d; this remat-compile reads version %d", filepath.Base(path), metadataKey, md.Version, metadataVersion)
	}
	return &metadataPlan{md: md, g: g}, nil
}

// hasMetadataKey reads only the model proto of path to tell whether it
// has the metadata key.
func hasMetadataKey(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &mp); err != nil {
		return false, err
	}
	for _, p := range mp.GetMetadataProps() {
		if p.GetKey() == metadataKey {
			return true, nil
		}
	}
	return false, nil
}

// verifyLevel runs both models at one level and checks them.
func verifyLevel(level, origPath, rematPath string, inputs map[string]ort.Tensor, runs int, p *metadataPlan, nodeMemory bool) (*LevelReport, error) {
	// One warm-up run more than asked: the profile is the first run's
	// (the arena statistics are running values), the run time the median
	// of the others.
	opts := ort.MeasureOptions(level)
	opts.Runs = runs + 1
	lr := &LevelReport{Level: level, Failures: []string{}, Recompute: []PlacementReport{}}
	orig, err := ort.Run(origPath, inputs, opts)
	if err != nil {
		return nil, fmt.Errorf("verify: running the original model at level %s: %w", level, err)
	}
	ropts := opts
	ropts.OptimizedModel = p != nil // to trace the recomputations through ORT's optimizers
	rw, err := ort.Run(rematPath, inputs, ropts)
	if err != nil {
		return nil, fmt.Errorf("verify: running the remat model at level %s: %w", level, err)
	}
	for _, name := range orig.OutputNames {
		or := compareOutputs(name, orig.Outputs[name], rw.Outputs[name])
		if !or.Equal {
			lr.Failures = append(lr.Failures, fmt.Sprintf("output %q differs: %s", name, DescribeDiff(or)))
		}
		lr.Outputs = append(lr.Outputs, or)
	}
	if lr.Orig, err = measure(orig, nodeMemory); err != nil {
		return nil, fmt.Errorf("verify: the original model at level %s: %w", level, err)
	}
	if lr.Rematted, err = measure(rw, nodeMemory); err != nil {
		return nil, fmt.Errorf("verify: the remat model at level %s: %w", level, err)
	}
	// The same models under ORT's default options, where the memory
	// pattern changes what the arena holds from the second run on.
	dopts := ort.DefaultOptions(level)
	if lr.Orig.DefaultPeakBytes, err = ort.SessionPeak(origPath, inputs, dopts); err != nil {
		return nil, fmt.Errorf("verify: the original model under ORT's default options at level %s: %w", level, err)
	}
	if lr.Rematted.DefaultPeakBytes, err = ort.SessionPeak(rematPath, inputs, dopts); err != nil {
		return nil, fmt.Errorf("verify: the remat model under ORT's default options at level %s: %w", level, err)
	}
	lr.DefaultReductionBytes = lr.Orig.DefaultPeakBytes - lr.Rematted.DefaultPeakBytes
	lr.DefaultReductionPercent = percent(lr.DefaultReductionBytes, lr.Orig.DefaultPeakBytes)
	lr.ReductionBytes = lr.Orig.PeakBytes - lr.Rematted.PeakBytes
	lr.ReductionPercent = percent(lr.ReductionBytes, lr.Orig.PeakBytes)
	if lr.Orig.MedianRunTimeMS > 0 {
		lr.RunTimeChangePercent = round(100*(lr.Rematted.MedianRunTimeMS/lr.Orig.MedianRunTimeMS-1), 2)
	}
	if p != nil {
		md := p.md
		var orig, pred int64
		// The bar is on the prediction for ORT's allocator when the model
		// carries one (compile writes it): that is the model of what
		// verify measures. The liveness prediction, the solver's, is
		// reported beside it.
		orig, pred, lr.PredictedBy = md.ORTOriginalPeakBytes, md.ORTPredictedPeakBytes, "ort"
		if orig <= 0 || pred <= 0 {
			orig, pred, lr.PredictedBy = md.OriginalPeakBytes, md.PredictedPeakBytes, "liveness"
		}
		if md.OriginalPeakBytes > 0 && md.PredictedPeakBytes > 0 {
			drop := md.OriginalPeakBytes - md.PredictedPeakBytes
			lr.LivenessReductionBytes = &drop
		}
		if md.ORTDefaultOriginalPeakBytes > 0 && md.ORTDefaultPredictedPeakBytes > 0 {
			drop := md.ORTDefaultOriginalPeakBytes - md.ORTDefaultPredictedPeakBytes
			lr.PredictedDefaultReductionBytes = &drop
		}
		if orig > 0 && pred > 0 {
			drop := orig - pred
			pct := percent(drop, orig)
			lr.PredictedReductionBytes, lr.PredictedReductionPercent = &drop, &pct
			if drop > 0 {
				ratio := round(100*float64(lr.ReductionBytes)/float64(drop), 2)
				meets := ratio >= 100*AcceptanceBar
				lr.MeasuredOverPredictedPercent, lr.MeetsAcceptanceBar = &ratio, &meets
			}
		} else {
			lr.PredictedBy = ""
		}
		var og *optGraph
		if og, err = parseOptGraph(rw.OptimizedModel, rw.Profile); err != nil {
			lr.Failures = append(lr.Failures, fmt.Sprintf("cannot trace the recomputations: %v", err))
		}
		lr.Recompute = checkPlacement(p, rw.Profile, og)
		for _, pr := range lr.Recompute {
			if !pr.OK {
				lr.Failures = append(lr.Failures, fmt.Sprintf("recompute node %q: %s", pr.Node, pr.Problem))
			}
		}
	}
	lr.OK = len(lr.Failures) == 0
	return lr, nil
}

// measure reads the activation peak from the first run's profile and the
// run times, and with nodes the memory after each kernel.
func measure(res *ort.Result, nodes bool) (Measure, error) {
	var m Measure
	p := res.Profile
	if p == nil || len(p.Nodes) == 0 {
		return m, errors.New("ORT's profile has no kernel events")
	}
	first := p.Nodes[0]
	m.BaselineBytes = first.MemBytesInUse - first.MemInUseDelta
	m.ArenaPeakBytes = p.PeakBytes()
	m.PeakBytes = m.ArenaPeakBytes - m.BaselineBytes
	m.Kernels = len(p.Nodes)
	if nodes {
		m.Nodes = nodeMemory(p, m.BaselineBytes)
	}
	times := slices.Clone(res.RunTimes)
	if len(times) > 1 {
		times = times[1:] // the warm-up run
	}
	for _, t := range times {
		m.RunTimesMS = append(m.RunTimesMS, ms(t))
	}
	slices.Sort(times)
	if n := len(times); n > 0 {
		med := times[n/2]
		if n%2 == 0 {
			med = (times[n/2-1] + times[n/2]) / 2
		}
		m.MedianRunTimeMS = ms(med)
	}
	return m, nil
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 4) }

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func percent(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return round(100*float64(part)/float64(whole), 2)
}

// compareOutputs compares one output of the two models bitwise.
func compareOutputs(name string, a, b ort.Tensor) OutputReport {
	r := OutputReport{Name: name, DType: a.DType, Shape: a.Shape, Elements: a.NumElements()}
	if r.Shape == nil {
		r.Shape = []int64{}
	}
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) {
		r.Note = fmt.Sprintf("the original gives %s%s, the remat model %s%s", a.DType, FormatShape(a.Shape), b.DType, FormatShape(b.Shape))
		r.DifferingElements = r.Elements
		return r
	}
	if bytes.Equal(a.Data, b.Data) {
		r.Equal = true
		return r
	}
	size, _ := ort.ElemSize(a.DType)
	af, err1 := a.Float64s()
	bf, err2 := b.Float64s()
	if err1 != nil || err2 != nil || size == 0 {
		r.Note = "the bytes differ"
		r.DifferingElements = r.Elements
		return r
	}
	nonFinite := 0
	for i := range af {
		if bytes.Equal(a.Data[i*size:(i+1)*size], b.Data[i*size:(i+1)*size]) {
			continue
		}
		r.DifferingElements++
		x, y := af[i], bf[i]
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			nonFinite++
			continue
		}
		d := math.Abs(x - y)
		r.MaxAbsDiff = max(r.MaxAbsDiff, d)
		if m := max(math.Abs(x), math.Abs(y)); m > 0 {
			r.MaxRelDiff = max(r.MaxRelDiff, d/m)
		}
	}
	if nonFinite > 0 {
		r.Note = fmt.Sprintf("%d differing elements are NaN or infinite in one of the outputs", nonFinite)
	}
	return r
}

// DescribeDiff says in a line how two outputs differ.
func DescribeDiff(o OutputReport) string {
	s := fmt.Sprintf("%d of %d elements differ, max abs diff %.3g, max rel diff %.3g", o.DifferingElements, o.Elements, o.MaxAbsDiff, o.MaxRelDiff)
	if o.Note != "" {
		s += " (" + o.Note + ")"
	}
	return s
}

// eventMatch maps a remat model's root-graph nodes onto the events of one
// profile (see the package comment, "Matching profile events to nodes").
type eventMatch struct {
	events []ort.NodeEvent
	// direct lists the events matched to each node, in execution order;
	// byOutput says the match was by output tensor name (rule 2), and
	// which.
	direct   map[*ir.Node][]int
	byOutput map[*ir.Node]string
	outputs  map[*ir.Value]bool
	// fileNodes is the number of root-graph nodes ORT numbers from the
	// file: all but Constant nodes.
	fileNodes int
}

func matchEvents(g *ir.Graph, prof *ort.Profile) *eventMatch {
	m := &eventMatch{direct: map[*ir.Node][]int{}, byOutput: map[*ir.Node]string{}, outputs: map[*ir.Value]bool{}}
	if prof != nil {
		m.events = prof.Nodes
	}
	byName := map[string]*ir.Node{}
	byTensor := map[string]*ir.Node{}
	for _, n := range g.Nodes {
		if !(n.Op == "Constant" && n.Domain == "") {
			m.fileNodes++
		}
		if n.Name != "" {
			if _, dup := byName[n.Name]; !dup {
				byName[n.Name] = n
			}
		}
		for _, v := range n.Outputs {
			if v != nil && v.Name != "" {
				byTensor[v.Name] = n
			}
		}
	}
	for _, v := range g.Outputs {
		m.outputs[v] = true
	}
	for i, e := range m.events {
		if n := byName[e.Name]; n != nil {
			m.direct[n] = append(m.direct[n], i)
			continue
		}
		// Rule 2: the longest output tensor name T with name == T or
		// name starting with T + "_".
		cand := e.Name
		for {
			if n := byTensor[cand]; n != nil {
				m.direct[n] = append(m.direct[n], i)
				if _, ok := m.byOutput[n]; !ok {
					m.byOutput[n] = cand
				}
				break
			}
			k := strings.LastIndexByte(cand, '_')
			if k <= 0 {
				break
			}
			cand = cand[:k]
		}
	}
	return m
}

// location is where a node ran: the events first..last (indices into
// eventMatch.events) and how it was matched.
type location struct {
	first, last int
	how         string
	// events lists every event of the location when it was traced
	// through the optimized graph (tracer), nil otherwise.
	events []int
}

// overlaps reports whether l and o share an event: the same kernel
// computes both.
func (l location) overlaps(o location) bool {
	if l.events == nil || o.events == nil {
		return l.first == o.first
	}
	for _, i := range l.events {
		if slices.Contains(o.events, i) {
			return true
		}
	}
	return false
}

func (l location) event(m *eventMatch) string { return m.events[l.first].Name }

// locate finds where node n ran; ok is false if it did not.
func (m *eventMatch) locate(n *ir.Node) (location, bool) {
	if ev := m.direct[n]; len(ev) > 0 {
		how := "by name"
		if t, ok := m.byOutput[n]; ok {
			how = fmt.Sprintf("by output %q", t)
		}
		return location{first: ev[0], last: ev[len(ev)-1], how: how}, true
	}
	// Fused: a node matched by name upstream (the fused node keeps its
	// first node's name) or by output downstream (it is named after its
	// last output), through at most fusionHops exclusive edges. A kernel
	// ORT created or changed (changedEvent) beats one it left alone
	// (ConvBNFusion, which folds BatchNormalization into the Conv in
	// place, is the one fusion that leaves its kernel unchanged); then the
	// nearer one wins, then downstream.
	type item struct {
		n    *ir.Node
		hops int
	}
	type candidate struct {
		w       *ir.Node
		changed bool
		hops    int
	}
	var best *candidate
	for _, upstream := range []bool{false, true} {
		seen := map[*ir.Node]bool{n: true}
		queue := []item{{n, 0}}
		for len(queue) > 0 {
			it := queue[0]
			queue = queue[1:]
			if it.hops == fusionHops {
				continue
			}
			for _, w := range m.fusionNeighbours(it.n, upstream) {
				if seen[w] {
					continue
				}
				seen[w] = true
				ev := m.direct[w]
				if len(ev) == 0 {
					queue = append(queue, item{w, it.hops + 1})
					continue
				}
				if _, viaOutput := m.byOutput[w]; viaOutput == upstream {
					continue // a separate kernel
				}
				c := &candidate{w, m.changedEvent(w, ev[0]), it.hops + 1}
				if best == nil || c.changed && !best.changed || c.changed == best.changed && c.hops < best.hops {
					best = c
				}
			}
		}
	}
	if best == nil {
		return location{}, false
	}
	ev := m.direct[best.w]
	return location{first: ev[0], last: ev[len(ev)-1], how: fmt.Sprintf("fused into %q (with %s)", m.events[ev[0]].Name, best.w.Name)}, true
}

// changedEvent reports whether event i, matched to node n, is a kernel ORT
// created or changed: its op differs from n's, or its node_index is past
// the nodes of the file (ORT numbers the nodes it creates after its own;
// Constant nodes become initializers and get no index).
func (m *eventMatch) changedEvent(n *ir.Node, i int) bool {
	e := m.events[i]
	return e.OpType != n.Op || e.NodeIndex >= m.fileNodes
}

// fusionNeighbours returns n's producers (upstream) or consumers
// (downstream) joined to n by an edge that one node alone reads: the edges
// an ORT fusion may remove.
func (m *eventMatch) fusionNeighbours(n *ir.Node, upstream bool) []*ir.Node {
	var out []*ir.Node
	if upstream {
		for _, v := range n.Inputs {
			if v != nil && v.Def != nil && m.soleReader(v) == n {
				out = append(out, v.Def)
			}
		}
		return out
	}
	for _, v := range n.Outputs {
		if v == nil {
			continue
		}
		if r := m.soleReader(v); r != nil && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// soleReader returns the one node reading v, or nil if v is a graph output
// or has no or several readers.
func (m *eventMatch) soleReader(v *ir.Value) *ir.Node {
	if m.outputs[v] || len(v.Uses) == 0 {
		return nil
	}
	r := v.Uses[0].Node
	for _, u := range v.Uses[1:] {
		if u.Node != r {
			return nil
		}
	}
	return r
}

// NotRun is the event of an "after" or "before" node absent from the
// profile; that side of the placement is not checked.
const NotRun = "(not in the profile: not checked)"

// checkPlacement checks every recompute entry against the remat model's
// first-run profile.
//
// With og, the graph ORT ran, nodes are located by tracing (optGraph);
// without it, by matching names (eventMatch), a heuristic.
func checkPlacement(p *metadataPlan, prof *ort.Profile, og *optGraph) []PlacementReport {
	m := matchEvents(p.g, prof)
	var tr *tracer
	if og != nil {
		tr = newTracer(p.g, og)
	}
	// locate finds where node x, a copy of original (nil: none), ran;
	// why says why it was not found.
	locate := func(x, original *ir.Node) (location, bool, string) {
		if tr != nil {
			return tr.locate(x, original)
		}
		l, ok := m.locate(x)
		return l, ok, "an optimizer (CSE) merged it away or removed it"
	}
	nodes := map[string]*ir.Node{}
	count := map[string]int{}
	for _, n := range p.g.Nodes {
		if n.Name != "" {
			count[n.Name]++
			if _, dup := nodes[n.Name]; !dup {
				nodes[n.Name] = n
			}
		}
	}
	out := []PlacementReport{}
	for _, e := range p.md.Recompute {
		pr := PlacementReport{Node: e.Node, Original: e.Original, After: e.After, Before: e.Before,
			Position: -1, AfterPosition: -1, BeforePosition: -1}
		var problems []string
		for _, name := range []string{e.Node, e.Original, e.After, e.Before} {
			if count[name] > 1 {
				problems = append(problems, fmt.Sprintf("the remat model has %d nodes named %q; the names the metadata uses must be unique", count[name], name))
			}
		}
		n := nodes[e.Node]
		if e.Node == "" || n == nil {
			problems = append(problems, fmt.Sprintf("the metadata names node %q, which the remat model does not have", e.Node))
		} else {
			for _, t := range e.Outputs {
				if !slices.ContainsFunc(n.Outputs, func(v *ir.Value) bool { return v != nil && v.Name == t }) {
					problems = append(problems, fmt.Sprintf("the metadata lists output %q, which the node does not produce", t))
				}
			}
		}
		var loc location
		present := false
		if n != nil {
			var why string
			if loc, present, why = locate(n, nodes[e.Original]); present {
				pr.Event, pr.Position, pr.Match = loc.event(m), loc.first, loc.how
			} else if tr != nil {
				problems = append(problems, "cannot be verified: no node of the graph ORT ran is known to compute its value: "+why)
			} else {
				problems = append(problems, "missing from ORT's profile: "+why)
			}
		}
		// The original must still run, at another event: CSE may keep
		// either copy.
		if e.Original != "" {
			if on := nodes[e.Original]; on == nil {
				problems = append(problems, fmt.Sprintf("the metadata names original %q, which the remat model does not have", e.Original))
			} else if ol, ok, why := locate(on, nil); !ok {
				if present && tr != nil {
					problems = append(problems, fmt.Sprintf("its original %q no longer runs: ORT merged the two copies (CSE) or folded the original into a constant (%s)", e.Original, why))
				} else if present {
					problems = append(problems, fmt.Sprintf("its original %q no longer runs: ORT merged the two copies (CSE)", e.Original))
				}
			} else {
				pr.OriginalEvent = ol.event(m)
				if present && (ol.first == loc.first || tr != nil && ol.overlaps(loc)) {
					problems = append(problems, fmt.Sprintf("it runs as the same kernel %q as its original %q: ORT merged the two copies", pr.OriginalEvent, e.Original))
				}
			}
		}
		var sideWhy string
		side := func(name string) (location, bool) {
			if name == "" {
				return location{}, false
			}
			sn := nodes[name]
			if sn == nil {
				problems = append(problems, fmt.Sprintf("the metadata names node %q, which the remat model does not have", name))
				return location{}, false
			}
			l, ok, why := locate(sn, nil)
			sideWhy = why
			return l, ok
		}
		// The recompute must start after the "after" node's last kernel
		// and end before the "before" node's first one; sharing a fused
		// kernel with either is fine.
		if al, ok := side(e.After); ok {
			pr.AfterEvent, pr.AfterPosition = m.events[al.last].Name, al.last
			if present && loc.first < al.last && !(tr != nil && loc.overlaps(al)) {
				problems = append(problems, fmt.Sprintf("ran at position %d (%q), before its \"after\" node %q at position %d (%q): ORT hoisted the recomputation", loc.first, pr.Event, e.After, al.last, pr.AfterEvent))
			}
		} else if e.After != "" && nodes[e.After] != nil {
			pr.AfterEvent = NotRun
			if tr != nil && present {
				// Without the "after" node's kernel nothing shows that the
				// recomputation ran late: never pass that silently.
				problems = append(problems, fmt.Sprintf("cannot be verified: its \"after\" node %q is not in the graph ORT ran (%s), so nothing shows that the recomputation ran after it", e.After, sideWhy))
			}
		}
		if bl, ok := side(e.Before); ok {
			pr.BeforeEvent, pr.BeforePosition = m.events[bl.first].Name, bl.first
			if present && loc.last > bl.first && !(tr != nil && loc.overlaps(bl)) {
				problems = append(problems, fmt.Sprintf("ran at position %d (%q), after its \"before\" node %q at position %d (%q)", loc.last, m.events[loc.last].Name, e.Before, bl.first, pr.BeforeEvent))
			}
		} else if e.Before != "" && nodes[e.Before] != nil {
			pr.BeforeEvent = NotRun
		}
		pr.OK = len(problems) == 0
		pr.Problem = strings.Join(problems, "; ")
		out = append(out, pr)
	}
	return out
}

// Tracing recomputations through ORT's optimizers.
//
// Matching profile events by name (eventMatch) is a heuristic: ORT's
// transformer fusions (MatMulAddFusion, MatMulScaleFusion,
// SkipLayerNormalization, Gelu, Attention, ...) replace nodes by nodes
// with generated names ("<matmul>/MatMulAddFusion", "SkipLayerNormalization_token_61"),
// constant folding removes nodes, and CSE merges them. So verify has ORT
// write the graph it actually runs (ort.Options.OptimizedModel): its nodes
// are exactly the ones the profile's events name, and every tensor an
// optimizer kept keeps its name. A node x of the remat model is then
// located as follows.
//
//  1. If an output tensor of x is in the optimized graph, the node that
//     produces it there computes x's value, with the nodes upstream of it
//     that read only tensors ORT created (its region, below).
//  2. Otherwise x was fused away with its output internal to the fused
//     node. verify follows x's readers downstream (through tensors that
//     vanished too, at most traceHops nodes) to the first tensors T that
//     survive, and for each takes the region of the optimized graph that
//     computes T from surviving tensors: T's producer and, upstream, every
//     node reached through tensors ORT created (names the remat model does
//     not have). The region computes x's value when it reads every
//     surviving tensor x's value depends on (through vanished ones) and
//     does not read the output of x's original: a fused node that reads
//     the original's output instead (CSE merged x into it) does not
//     compute x. A value that depends on parameters alone cannot be
//     traced this way.
//
// A node located neither way is reported as unverifiable, never passed.
// Its location is every event of its region: it ran no earlier than the
// first and no later than the last.

// traceHops bounds the downstream search for a surviving tensor.
const traceHops = 4

// optGraph is the graph ORT ran, with its nodes' profile events.
type optGraph struct {
	names    []string
	ops      []string
	inputs   [][]string
	outputs  [][]string
	producer map[string]int   // tensor → producing node
	events   map[string][]int // node name → indices into the profile's events
	dup      map[string]bool  // node names used twice
	// alias maps the output of an NCHWc node "T_nchwc" to T where only
	// the NCHWc form of T is left.
	alias map[string]string
}

const nchwcSuffix = "_nchwc"

// parseOptGraph reads the optimized model ORT wrote; nil, nil when there
// is none.
func parseOptGraph(data []byte, prof *ort.Profile) (*optGraph, error) {
	if data == nil {
		return nil, nil
	}
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &mp); err != nil || mp.Graph == nil {
		return nil, fmt.Errorf("the optimized model ORT wrote does not parse (%v)", err)
	}
	og := &optGraph{producer: map[string]int{}, events: map[string][]int{}, dup: map[string]bool{}, alias: map[string]string{}}
	seen := map[string]bool{}
	nchwc := map[string]int{}
	for i, np := range mp.Graph.Node {
		name := np.GetName()
		if seen[name] {
			og.dup[name] = true
		}
		seen[name] = true
		og.names = append(og.names, name)
		og.ops = append(og.ops, np.GetOpType())
		og.inputs = append(og.inputs, np.GetInput())
		og.outputs = append(og.outputs, np.GetOutput())
		for _, o := range np.GetOutput() {
			if o != "" {
				og.producer[o] = i
			}
		}
		if base, ok := strings.CutSuffix(name, nchwcSuffix); ok && len(np.GetOutput()) == 1 {
			nchwc[base] = i
		}
	}
	// ORT's NCHWc transformer computes a tensor T in its blocked layout
	// with a node named "T_nchwc" whose output it names "reorder_token_N",
	// and converts back to T only where a reader needs T: the same value,
	// so that output stands for T when T itself is gone.
	for base, i := range nchwc {
		if _, ok := og.producer[base]; !ok {
			og.producer[base] = i
		}
		og.alias[mp.Graph.Node[i].GetOutput()[0]] = base
	}
	if prof != nil {
		for i, e := range prof.Nodes {
			og.events[e.Name] = append(og.events[e.Name], i)
		}
	}
	return og, nil
}

// tracer locates the remat model's nodes in the optimized graph.
type tracer struct {
	g  *ir.Graph
	og *optGraph
	// tensors holds every tensor name of the remat model's root graph.
	tensors map[string]bool
	params  map[*ir.Value]bool
}

func newTracer(g *ir.Graph, og *optGraph) *tracer {
	t := &tracer{g: g, og: og, tensors: map[string]bool{}, params: map[*ir.Value]bool{}}
	for _, v := range g.Inputs {
		t.tensors[v.Name] = true
	}
	for _, v := range g.Params {
		t.tensors[v.Name] = true
		t.params[v] = true
	}
	byName := map[string]*ir.Node{}
	for _, n := range g.Nodes {
		if n.Name != "" {
			byName[n.Name] = n
		}
		for _, o := range n.Outputs {
			if o != nil {
				t.tensors[o.Name] = true
			}
		}
	}
	// A node ORT kept under its name (an Add between NCHWc nodes) may
	// write its outputs under new names ("reorder_token_N"): they stand
	// for the node's own outputs when those are gone.
	for k, name := range og.names {
		n := byName[name]
		if n == nil || og.dup[name] || len(og.outputs[k]) != len(n.Outputs) {
			continue
		}
		for j, o := range og.outputs[k] {
			v := n.Outputs[j]
			if v == nil || o == "" || t.tensors[o] {
				continue
			}
			if _, ok := og.producer[v.Name]; !ok {
				og.producer[v.Name] = k
			}
			og.alias[o] = v.Name
		}
	}
	return t
}

// survives reports whether v is a tensor ORT still computes.
func (t *tracer) survives(v *ir.Value) bool {
	_, ok := t.og.producer[v.Name]
	return ok
}

// activation reports whether v is computed or fed at run time: a graph
// input or a node output that is not a Constant's (parameters and values
// of enclosing graphs are not).
func (t *tracer) activation(v *ir.Value) bool {
	switch {
	case v == nil || v.Graph != t.g:
		return false
	case v.Def == nil:
		return !t.params[v] && !v.IsConst()
	}
	return !(v.Def.Op == "Constant" && (v.Def.Domain == "" || v.Def.Domain == "ai.onnx"))
}

// needs returns the surviving tensors (and graph inputs) that x's value
// depends on through tensors that vanished.
func (t *tracer) needs(x *ir.Node) map[string]bool {
	out := map[string]bool{}
	seen := map[*ir.Node]bool{}
	var walk func(*ir.Node)
	walk = func(n *ir.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, v := range n.AllInputs() {
			switch {
			case !t.activation(v):
			case v.Def == nil || t.survives(v):
				out[v.Name] = true
			case v.Def.Graph == t.g:
				walk(v.Def)
			}
		}
	}
	walk(x)
	return out
}

// region returns the nodes of the optimized graph that compute the
// surviving tensor name from surviving tensors, and the surviving tensors
// they read.
func (t *tracer) region(name string) ([]int, map[string]bool) {
	var nodes []int
	reads := map[string]bool{}
	seen := map[int]bool{}
	var walk func(int)
	walk = func(k int) {
		if seen[k] {
			return
		}
		seen[k] = true
		nodes = append(nodes, k)
		for _, in := range t.og.inputs[k] {
			if in == "" {
				continue
			}
			if base, ok := t.og.alias[in]; ok && t.tensors[base] {
				if base == name {
					// Another layout of the tensor itself (the NCHWc
					// form that a ReorderOutput turns back into it): its
					// producer computes the value.
					if p, ok := t.og.producer[in]; ok {
						walk(p)
					}
					continue
				}
				in = base
			}
			if t.tensors[in] {
				reads[in] = true
				continue
			}
			if p, ok := t.og.producer[in]; ok {
				walk(p) // a tensor ORT created: part of the fused computation
			}
		}
	}
	top := t.og.producer[name]
	walk(top)
	if len(nodes) > 1 && t.og.ops[top] == "ReorderOutput" {
		// The conversion back from the NCHWc layout, which ORT runs
		// where a reader needs the plain layout, possibly much later:
		// a copy of the value, not its computation.
		nodes = nodes[1:]
	}
	slices.Sort(nodes)
	return nodes, reads
}

// locate finds the kernels that compute x's value (x copies original, nil
// for none); why says why there are none.
func (t *tracer) locate(x, original *ir.Node) (location, bool, string) {
	for _, o := range x.Outputs {
		if o != nil && t.survives(o) {
			// Its producer, and the nodes ORT inserted upstream of it
			// (MatMulAddFusion's Reshape-Gemm-Reshape writes the Add's
			// tensor from a Reshape).
			nodes, _ := t.region(o.Name)
			return t.at(nodes, fmt.Sprintf("by output %q", o.Name))
		}
	}
	need := t.needs(x)
	if len(need) == 0 {
		return location{}, false, "its value depends on parameters alone (ORT folds such nodes into constants)"
	}
	origOut := map[string]bool{}
	if original != nil {
		for _, o := range original.Outputs {
			if o != nil {
				origOut[o.Name] = true
			}
		}
	}
	// Downstream, breadth first, to the first surviving tensors.
	type item struct {
		n    *ir.Node
		hops int
	}
	queue := []item{{x, 0}}
	seen := map[*ir.Node]bool{x: true}
	tried := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		for _, o := range it.n.Outputs {
			if o == nil {
				continue
			}
			for _, u := range o.Uses {
				c := u.Node
				if seen[c] || c.Graph != t.g {
					continue
				}
				seen[c] = true
				vanished := true
				for _, co := range c.Outputs {
					if co == nil || !t.survives(co) {
						continue
					}
					vanished = false
					tried++
					nodes, reads := t.region(co.Name)
					ok := true
					for name := range need {
						ok = ok && reads[name]
					}
					for name := range origOut {
						ok = ok && !reads[name]
					}
					if ok {
						return t.at(nodes, fmt.Sprintf("fused: its output is internal to the kernel(s) computing %q", co.Name))
					}
				}
				if vanished && it.hops+1 < traceHops {
					queue = append(queue, item{c, it.hops + 1})
				}
			}
		}
	}
	if tried == 0 {
		return location{}, false, "none of its outputs, nor any tensor computed from them nearby, is in the graph ORT ran"
	}
	return location{}, false, "its outputs are gone from the graph ORT ran, and no kernel downstream reads what its value is computed from (an optimizer merged it into another node or removed it)"
}

// at makes the location of optimized nodes ks.
func (t *tracer) at(ks []int, how string) (location, bool, string) {
	var evs []int
	for _, k := range ks {
		name := t.og.names[k]
		if t.og.dup[name] {
			return location{}, false, fmt.Sprintf("the graph ORT ran names two nodes %q, so the profile cannot tell them apart", name)
		}
		ev := t.og.events[name]
		if len(ev) == 0 {
			return location{}, false, fmt.Sprintf("node %q of the graph ORT ran has no kernel event in the profile", name)
		}
		evs = append(evs, ev...)
	}
	slices.Sort(evs)
	return location{first: evs[0], last: evs[len(evs)-1], how: how, events: evs}, true, ""
}
