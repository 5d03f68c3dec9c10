package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	gdimp "github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/pipeline"
)

// TensorFlow graphs are verified in TensorFlow.js 4.22 (internal/tfjs),
// the reference runtime for them: RunTF runs the original and the rewrite
// on the same backend (wasm by default; wasm and cpu differ in the last
// bits, so the two are never compared across backends) on the same seeded
// inputs, and checks
//
//   - outputs: the rewrite's outputs, in its own output order (the
//     signature's keys, which the exporter keeps), bitwise equal to the
//     original's;
//   - placement: every recomputation of the metadata (model.json's
//     userDefinedMetadata["remat-compile.recompute"], exporters/graphdef
//     RematMetadata, the same schema as ONNX's with tfjs peaks) ran, after
//     its "after" node and before its "before" node, in the order
//     execute() ran the rewrite (compile().orderedNodes, which is also the
//     order of the nodes that ran);
//   - peaks: tf.profile's peak of each, less the weights and feeds, and the
//     measured drop over the drop the tfjs target predicted (the metadata's
//     tfjs peaks; the solver's liveness peaks when those are absent),
//     against AcceptanceBar;
//   - time: the median of the timed executions of each (after a warm-up),
//     the rewrite's extra compute as TensorFlow.js runs it.
//
// A binary GraphDef, which TensorFlow.js cannot read, is written as a
// model.json in a temporary directory first (exporters/graphdef; its
// NodeDefs, gates included, unchanged); a GraphDef has no place for the
// metadata, so a .pb rewrite is verified for outputs and peaks only.

// warmupExecutions is how many executions of the original warm the Node
// process up before anything is timed (measured on selfie: the first 20
// or so run up to 3× slower).
const warmupExecutions = 30

// TFOptions configure RunTF.
type TFOptions struct {
	// Backend is tfjs.WASM ("" means WASM) or tfjs.CPU.
	Backend tfjs.Backend
	// Runs is the number of timed executions after the profiled one and a
	// warm-up (0 means 5).
	Runs int
	// Seed seeds the inputs (tfjs.SeededInputs).
	Seed uint64
	// InputShapes gives the shapes of inputs whose Placeholder leaves
	// dimensions unknown.
	InputShapes map[string][]int64
	// Dir is the node_modules directory of TensorFlow.js ("" means
	// $REMAT_TFJS_DIR).
	Dir string
}

// TFReport is RunTF's result, the JSON form of verify's output for a
// TensorFlow graph.
type TFReport struct {
	Original    string       `json:"original"`
	Remat       string       `json:"remat"`
	TFJSVersion string       `json:"tfjs_version"`
	Backend     tfjs.Backend `json:"backend"`
	Runs        int          `json:"runs"`
	Seed        uint64       `json:"seed"`
	// Metadata is the rewrite's plan, nil when it has none.
	Metadata         *gdexp.RematMetadata `json:"metadata"`
	PlacementChecked bool                 `json:"placement_checked"`
	PlacementNote    string               `json:"placement_note,omitempty"`
	Outputs          []OutputReport       `json:"outputs"`
	Orig             TFMeasure            `json:"original_model"`
	Rematted         TFMeasure            `json:"remat_model"`
	// ReductionBytes is the original's peak minus the rewrite's.
	ReductionBytes   int64   `json:"reduction_bytes"`
	ReductionPercent float64 `json:"reduction_percent"`
	// PredictedBy is "tfjs" (the target's model) or "liveness" (the
	// solver's), and PredictedReductionBytes its predicted drop.
	PredictedBy                  string   `json:"predicted_by,omitempty"`
	PredictedReductionBytes      *int64   `json:"predicted_reduction_bytes,omitempty"`
	PredictedReductionPercent    *float64 `json:"predicted_reduction_percent,omitempty"`
	MeasuredOverPredictedPercent *float64 `json:"measured_over_predicted_drop_percent,omitempty"`
	MeetsAcceptanceBar           *bool    `json:"meets_acceptance_bar,omitempty"`
	// RunTimeChangePercent is the rewrite's extra time: the change of the
	// median timed execution (MedianRunTimeMS; after warm-ups, the
	// profiled execution not timed).
	RunTimeChangePercent float64 `json:"run_time_change_percent"`
	// MinRunTimeChangePercent is the same change of the fastest timed
	// executions, the steadier measure on a busy machine (other processes
	// only ever add time).
	MinRunTimeChangePercent float64       `json:"min_run_time_change_percent"`
	Recompute               []TFPlacement `json:"recompute"`
	OK                      bool          `json:"ok"`
	Failures                []string      `json:"failures"`
}

// TFMeasure is what TensorFlow.js measured of one model.
type TFMeasure struct {
	// PeakBytes is tf.profile's peak less BaselineBytes (the weights and
	// the feeds). MedianRunTimeMS is the mean of the medians of the
	// model's two jobs (ABBA order: the first job in a process runs
	// colder), RunTimesMS their timed executions.
	PeakBytes     int64 `json:"peak_bytes"`
	BaselineBytes int64 `json:"baseline_bytes"`
	// NodesRun counts the nodes execute() ran; Kernels the kernels.
	NodesRun        int       `json:"nodes_run"`
	Kernels         int       `json:"kernels"`
	MedianRunTimeMS float64   `json:"median_run_time_ms"`
	MinRunTimeMS    float64   `json:"min_run_time_ms"`
	RunTimesMS      []float64 `json:"run_times_ms"`
}

// TFPlacement is where one recomputation ran in the rewrite.
type TFPlacement struct {
	Node string `json:"node"`
	// Position is the node's index in the rewrite's execution order (-1:
	// it did not run); likewise for its original (which TensorFlow.js does
	// not run when no output needs it), After and Before.
	Position         int    `json:"position"`
	Original         string `json:"original"`
	OriginalPosition int    `json:"original_position"`
	After            string `json:"after"`
	AfterPosition    int    `json:"after_position"`
	Before           string `json:"before"`
	BeforePosition   int    `json:"before_position"`
	OK               bool   `json:"ok"`
	Problem          string `json:"problem,omitempty"`
}

// FittedTF verifies the fit f of the TensorFlow graph m, written to
// rematPath, against m's original (rebuilt from its source and written as
// model.json in a temporary directory) with RunTF; InputShapes default to
// the original's input shapes.
func FittedTF(ctx context.Context, m *pipeline.Model, f *pipeline.Fit, rematPath string, o TFOptions) (*TFReport, error) {
	orig, path, cleanup, err := writeOriginal(ctx, m, f, "model.json")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	o.InputShapes = staticInputShapes(orig, o.InputShapes)
	r, err := RunTF(ctx, path, rematPath, o)
	if err != nil {
		return nil, err
	}
	r.Original = m.Source
	return r, nil
}

// IsTFModel reports whether path is a TensorFlow graph that RunTF verifies
// (a .json file: a TensorFlow.js model; a .pb file: a GraphDef).
func IsTFModel(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".pb":
		return true
	}
	return false
}

// RunTF runs the TensorFlow graph at origPath and its rematerialized
// rewrite at rematPath in TensorFlow.js and checks them (see above). A
// failed check is in TFReport.Failures (OK false); errors are models that
// cannot be read or run, bad options, a missing TensorFlow.js.
func RunTF(ctx context.Context, origPath, rematPath string, o TFOptions) (*TFReport, error) {
	if o.Backend == "" {
		o.Backend = tfjs.WASM
	}
	if o.Backend != tfjs.WASM && o.Backend != tfjs.CPU {
		return nil, fmt.Errorf("verify: backend %q: want wasm or cpu", o.Backend)
	}
	if o.Runs == 0 {
		o.Runs = 5
	}
	if o.Runs < 1 {
		return nil, fmt.Errorf("verify: %d runs: want at least 1", o.Runs)
	}
	if o.Dir == "" {
		dir, err := tfjs.FromEnv()
		if err != nil {
			return nil, fmt.Errorf("verify needs TensorFlow.js: %w", err)
		}
		o.Dir = dir
	}
	tmp, err := os.MkdirTemp("", "remat-verify-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	orig, origModel, err := tfjsModel(origPath, filepath.Join(tmp, "original"))
	if err != nil {
		return nil, err
	}
	remat, rematModel, err := tfjsModel(rematPath, filepath.Join(tmp, "remat"))
	if err != nil {
		return nil, err
	}
	specs, err := inputSpecs(orig, o.InputShapes)
	if err != nil {
		return nil, err
	}
	if err := sameInputs(orig, remat); err != nil {
		return nil, err
	}
	inputs, err := tfjs.SeededInputs(specs, o.Seed)
	if err != nil {
		return nil, err
	}
	// The jobs run in one Node process, whose JIT and wasm tiers warm up
	// over tens of executions: a warm-up job first (its result unused),
	// then ABBA (original, rewrite, rewrite, original), each model's time
	// the mean of its two jobs' medians. The first job of each model is
	// profiled and ordered.
	job := func(model string, profile bool) tfjs.Options {
		return tfjs.Options{Dir: o.Dir, Model: model, Backend: o.Backend, Inputs: inputs, Runs: o.Runs, Warmup: 3, Profile: profile, Order: profile}
	}
	warm := job(origModel, false)
	warm.Warmup, warm.Runs = warmupExecutions, 1
	res, err := tfjs.RunAll(ctx, []tfjs.Options{warm, job(origModel, true), job(rematModel, true), job(rematModel, false), job(origModel, false)})
	if err != nil {
		return nil, err
	}
	res = res[1:]
	a, b := res[0], res[1]
	r := &TFReport{Original: origPath, Remat: rematPath, TFJSVersion: a.TFJSVersion, Backend: o.Backend, Runs: o.Runs, Seed: o.Seed, Failures: []string{}}
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	if a.Async || b.Async {
		fail("a model needs executeAsync (dynamic ops): TensorFlow.js gives it no static order, so the plan's order cannot hold")
	}

	// Outputs.
	if len(a.Outputs) != len(b.Outputs) {
		fail("the original has %d outputs, the rewrite %d", len(a.Outputs), len(b.Outputs))
	}
	for i := range min(len(a.Outputs), len(b.Outputs)) {
		or := compareTFOutputs(a.Outputs[i], b.Outputs[i])
		r.Outputs = append(r.Outputs, or)
		if !or.Equal {
			fail("output %s: %s", or.Name, DescribeDiff(or))
		}
	}

	// Measures.
	r.Orig, r.Rematted = tfMeasure(a, res[3]), tfMeasure(b, res[2])
	r.ReductionBytes = r.Orig.PeakBytes - r.Rematted.PeakBytes
	r.ReductionPercent = percent(r.ReductionBytes, r.Orig.PeakBytes)
	if r.Orig.MedianRunTimeMS > 0 {
		r.RunTimeChangePercent = round(100*(r.Rematted.MedianRunTimeMS-r.Orig.MedianRunTimeMS)/r.Orig.MedianRunTimeMS, 2)
	}
	if r.Orig.MinRunTimeMS > 0 {
		r.MinRunTimeChangePercent = round(100*(r.Rematted.MinRunTimeMS-r.Orig.MinRunTimeMS)/r.Orig.MinRunTimeMS, 2)
	}

	// The plan.
	md, err := tfMetadata(rematPath)
	switch {
	case err != nil:
		fail("%v", err)
		r.PlacementNote = "placement check skipped: " + err.Error()
	case md == nil:
		r.PlacementNote = fmt.Sprintf("placement check skipped: %s has no remat-compile metadata (userDefinedMetadata key %q; a .pb has no place for it); only outputs and peaks were checked", filepath.Base(rematPath), gdexp.RematMetadataKey)
	default:
		r.Metadata, r.PlacementChecked = md, true
		r.checkPlacement(md, b, fail)
		before, after, by := md.TFJSOriginalPeakBytes, md.TFJSPredictedPeakBytes, "tfjs"
		if before <= 0 || after <= 0 {
			before, after, by = md.OriginalPeakBytes, md.PredictedPeakBytes, "liveness"
		}
		if before > 0 && after > 0 {
			d := before - after
			p := percent(d, before)
			r.PredictedBy, r.PredictedReductionBytes, r.PredictedReductionPercent = by, &d, &p
			if d > 0 {
				ratio := round(100*float64(r.ReductionBytes)/float64(d), 1)
				ok := float64(r.ReductionBytes) >= AcceptanceBar*float64(d)
				r.MeasuredOverPredictedPercent, r.MeetsAcceptanceBar = &ratio, &ok
			}
		}
	}
	r.OK = len(r.Failures) == 0
	return r, nil
}

// tfjsModel reads the model at path and returns its graph and the path of
// a model.json TensorFlow.js can load: path itself, or for a GraphDef the
// model.json written into dir.
func tfjsModel(path, dir string) (*ir.Graph, string, error) {
	g, err := gdimp.ImportFile(path, gdimp.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("verify: %w", err)
	}
	if g.Ext.(*gdimp.ModelInfo).Format == gdimp.FormatTFJS {
		return g, path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	out := filepath.Join(dir, "model.json")
	if err := gdexp.ExportFile(g, out, gdexp.Options{Source: path}); err != nil {
		return nil, "", fmt.Errorf("verify: writing %s as a TensorFlow.js model: %w", path, err)
	}
	return g, out, nil
}

// inputSpecs are the inputs to feed g: its Placeholders' types, shapes
// from shapes where given.
func inputSpecs(g *ir.Graph, shapes map[string][]int64) ([]tfjs.InputSpec, error) {
	var specs []tfjs.InputSpec
	for _, v := range g.Inputs {
		dt := tfjs.Float32
		switch v.Type.DType {
		case ir.Float32, ir.Float16, ir.Float64, ir.Undefined:
		case ir.Int32, ir.Int64, ir.Int16, ir.Int8, ir.Uint8, ir.Uint16:
			dt = tfjs.Int32
		case ir.Bool:
			dt = tfjs.Bool
		default:
			return nil, fmt.Errorf("verify: input %q is %v, which the harness cannot feed (float, integer or bool inputs)", v.Name, v.Type.DType)
		}
		shape, ok := shapes[v.Name]
		if !ok {
			dims, known := v.Type.Dims()
			if !known {
				return nil, fmt.Errorf("verify: input %q has shape %v; give its sizes with -input-shape %s=DIMS", v.Name, v.Type, v.Name)
			}
			shape = dims
		}
		specs = append(specs, tfjs.InputSpec{Name: v.Name, DType: dt, Shape: shape})
	}
	for name := range shapes {
		if !slices.ContainsFunc(g.Inputs, func(v *ir.Value) bool { return v.Name == name }) {
			return nil, fmt.Errorf("verify: -input-shape %s: the model has no input %q", name, name)
		}
	}
	return specs, nil
}

// sameInputs checks that the rewrite has the original's inputs.
func sameInputs(a, b *ir.Graph) error {
	names := func(g *ir.Graph) []string {
		var out []string
		for _, v := range g.Inputs {
			out = append(out, v.Name)
		}
		return out
	}
	if x, y := names(a), names(b); !slices.Equal(x, y) {
		return fmt.Errorf("verify: the original's inputs are %v, the rewrite's %v: not a rewrite of the same model", x, y)
	}
	return nil
}

func compareTFOutputs(a, b tfjs.Output) OutputReport {
	r := OutputReport{Name: a.Name, DType: string(a.DType), Shape: a.Shape, Elements: tfjs.Elements(a.Shape)}
	if r.Shape == nil {
		r.Shape = []int64{}
	}
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) {
		r.Note = fmt.Sprintf("the original gives %s%s, the rewrite %s%s", a.DType, FormatShape(a.Shape), b.DType, FormatShape(b.Shape))
		r.DifferingElements = r.Elements
		return r
	}
	if bytes.Equal(a.Data, b.Data) {
		r.Equal = true
		return r
	}
	size := a.DType.Size()
	var af, bf []float32
	if a.DType == tfjs.Float32 {
		af, bf = a.Float32s(), b.Float32s()
	}
	for i := range int(r.Elements) {
		if bytes.Equal(a.Data[i*size:(i+1)*size], b.Data[i*size:(i+1)*size]) {
			continue
		}
		r.DifferingElements++
		if af == nil || bf == nil {
			continue
		}
		x, y := float64(af[i]), float64(bf[i])
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			continue
		}
		d := math.Abs(x - y)
		r.MaxAbsDiff = max(r.MaxAbsDiff, d)
		if m := max(math.Abs(x), math.Abs(y)); m > 0 {
			r.MaxRelDiff = max(r.MaxRelDiff, d/m)
		}
	}
	return r
}

// tfMeasure is what res (profiled) and again (the same model's other
// job) measured: the peak of res, the mean of both medians.
func tfMeasure(res, again *tfjs.Result) TFMeasure {
	m := TFMeasure{NodesRun: len(res.Executed), Kernels: len(res.Kernels)}
	m.MedianRunTimeMS = round((ms(res.MedianRunTime())+ms(again.MedianRunTime()))/2, 4)
	if res.Memory != nil {
		m.PeakBytes, m.BaselineBytes = res.Memory.PeakBytes, res.Memory.BaselineBytes
	}
	for _, d := range slices.Concat(res.RunTimes, again.RunTimes) {
		m.RunTimesMS = append(m.RunTimesMS, ms(d))
	}
	if len(m.RunTimesMS) > 0 {
		m.MinRunTimeMS = slices.Min(m.RunTimesMS)
	}
	return m
}

// tfMetadata reads the rewrite's plan from model.json's
// userDefinedMetadata: nil for a model without one (or a .pb).
func tfMetadata(path string) (*gdexp.RematMetadata, error) {
	if strings.ToLower(filepath.Ext(path)) != ".json" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var mj struct {
		UDM map[string]json.RawMessage `json:"userDefinedMetadata"`
	}
	if err := json.Unmarshal(data, &mj); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	raw, ok := mj.UDM[gdexp.RematMetadataKey]
	if !ok {
		return nil, nil
	}
	var md gdexp.RematMetadata
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("%s: the remat-compile metadata is not valid: %v", path, err)
	}
	if md.Version != gdexp.RematMetadataVersion {
		return nil, fmt.Errorf("%s: remat-compile metadata version %d; this verify reads version %d", path, md.Version, gdexp.RematMetadataVersion)
	}
	return &md, nil
}

// checkPlacement checks every recomputation against the order the rewrite
// ran in.
func (r *TFReport) checkPlacement(md *gdexp.RematMetadata, res *tfjs.Result, fail func(string, ...any)) {
	order := res.OrderedNodes
	if order == nil {
		for _, e := range res.Executed {
			order = append(order, e.Name)
		}
	}
	pos := make(map[string]int, len(order))
	for i, n := range order {
		pos[n] = i
	}
	at := func(name string) int {
		if name == "" {
			return -1
		}
		if p, ok := pos[name]; ok {
			return p
		}
		return -1
	}
	for _, e := range md.Recompute {
		p := TFPlacement{Node: e.Node, Position: at(e.Node), Original: e.Original, OriginalPosition: at(e.Original),
			After: e.After, AfterPosition: at(e.After), Before: e.Before, BeforePosition: at(e.Before), OK: true}
		switch {
		case p.Position < 0:
			p.Problem = "did not run"
		case e.After != "" && p.AfterPosition < 0:
			p.Problem = fmt.Sprintf("its after node %s did not run", e.After)
		case e.After != "" && p.Position < p.AfterPosition:
			p.Problem = fmt.Sprintf("ran at %d, before its after node %s (%d)", p.Position, e.After, p.AfterPosition)
		case e.Before != "" && p.BeforePosition >= 0 && p.Position > p.BeforePosition:
			p.Problem = fmt.Sprintf("ran at %d, after its before node %s (%d)", p.Position, e.Before, p.BeforePosition)
		}
		// An original that no output needs (the plan computed it and
		// dropped it unread, every reader reading a recomputation) is not
		// run by TensorFlow.js, which runs only what the outputs need and
		// merges nothing: no failure (OriginalPosition is -1).
		if p.Problem != "" {
			p.OK = false
			fail("recompute %s: %s", e.Node, p.Problem)
		}
		r.Recompute = append(r.Recompute, p)
	}
}
