package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

var updateVerify = flag.Bool("update-verify", false, "rewrite the fixtures under testdata/verify")

// uVariant selects how buildU writes the U-Net-like model U of the research
// note (ort-execution.md): four 1×1 Conv+Relu encoder blocks e1, e2, e3, b,
// decoder blocks d3 = B(b+e3), d2 = B(d3+e2), d1 = B(d2+e1), then
// y = Conv(d1); every activation is [1,16,64,64] float32 (256 KiB).
type uVariant struct {
	// remat recomputes e1 and e2 (two Conv+Relu pairs, "_rc1" names) right
	// before dec2_add, so that e1 and e2 are not live across the decoder.
	remat bool
	// dep adds the depreshape fake dependency on d3 (research note, Q4):
	// without it ORT hoists the chain at "disabled" and merges it (CSE)
	// from "basic" up.
	dep bool
	// meta writes the remat-compile.recompute metadata; metaJSON, when
	// set, is written as its value instead.
	meta     bool
	metaJSON string
	// perturb changes one weight of the final conv.
	perturb bool
	// extraOutput adds d2 as a second graph output.
	extraOutput bool
}

var uShape = []int64{1, 16, 64, 64}

const (
	uChannels = 16
	uTensor   = 1 * 16 * 64 * 64 * 4 // bytes of one activation
)

// uMetadata is the plan of the remat variant: ORT's 5 live activations at
// dec3_add become 4.
func uMetadata() rematMetadata {
	return rematMetadata{
		Version: 1, Solver: "hand", BudgetBytes: 4 * uTensor,
		PredictedPeakBytes: 4 * uTensor, OriginalPeakBytes: 5 * uTensor,
		Recompute: []recomputeEntry{
			{Node: "enc1_conv_rc1", Original: "enc1_conv", Outputs: []string{"enc1_c_rc1"}, After: "dec3_relu", Before: "enc1_relu_rc1"},
			{Node: "enc1_relu_rc1", Original: "enc1_relu", Outputs: []string{"e1_rc1"}, After: "dec3_relu", Before: "enc2_conv_rc1"},
			{Node: "enc2_conv_rc1", Original: "enc2_conv", Outputs: []string{"enc2_c_rc1"}, After: "dec3_relu", Before: "enc2_relu_rc1"},
			{Node: "enc2_relu_rc1", Original: "enc2_relu", Outputs: []string{"e2_rc1"}, After: "dec3_relu", Before: "dec2_add"},
		},
	}
}

// buildUGraph builds the model U in the given variant.
func buildUGraph(t testing.TB, v uVariant) *ir.Graph {
	t.Helper()
	g := ir.NewGraph("u")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	act := ir.TensorOf(ir.Float32, uShape...)
	x := g.AddInput("x", act)
	seed := uint64(1)
	param := func(name string, shape []int64, scale float32) *ir.Value {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		raw := make([]byte, 4*n)
		for i := range n {
			seed = seed*6364136223846793005 + 1442695040888963407
			f := (float32(seed>>40)/(1<<24)*2 - 1) * scale
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
		}
		return g.AddParam(name, ir.TensorOf(ir.Float32, shape...), &ir.Tensor{Name: name, DType: ir.Float32, Shape: shape, Raw: raw})
	}
	node := func(op, name string, in []*ir.Value, out string, typ ir.TensorType, attrs ...ir.Attr) *ir.Value {
		n := g.NewNode(op, "", in, []string{out})
		n.Name = name
		for _, a := range attrs {
			n.SetAttr(a)
		}
		n.Outputs[0].Type = typ
		return n.Outputs[0]
	}
	// block is Conv1x1+Relu; a recomputation reads the very same weights.
	weights := map[string][2]*ir.Value{}
	block := func(p, suffix string, in *ir.Value, out string) *ir.Value {
		w, ok := weights[p]
		if !ok {
			w = [2]*ir.Value{param(p+".weight", []int64{uChannels, uChannels, 1, 1}, 0.4), param(p+".bias", []int64{uChannels}, 0.1)}
			weights[p] = w
		}
		c := node("Conv", p+"_conv"+suffix, []*ir.Value{in, w[0], w[1]}, p+"_c"+suffix, act, ir.IntsAttr("kernel_shape", 1, 1))
		return node("Relu", p+"_relu"+suffix, []*ir.Value{c}, out+suffix, act)
	}
	e1 := block("enc1", "", x, "e1")
	e2 := block("enc2", "", e1, "e2")
	e3 := block("enc3", "", e2, "e3")
	b := block("bott", "", e3, "b")
	s3 := node("Add", "dec3_add", []*ir.Value{b, e3}, "s3", act)
	d3 := block("dec3", "", s3, "d3")
	if v.remat {
		in := x
		if v.dep {
			// x_rc1 = Reshape(x, Concat([1,16,64,64],
			//                 Cast(Slice(Reshape(d3, [-1]), [0], [0]))))
			i64 := func(n int64) ir.TensorType { return ir.TensorOf(ir.Int64, n) }
			flat := node("Reshape", "dep_rc1_flat", []*ir.Value{d3, g.AddParam("dep_rc1_minus1", i64(1), ir.Int64Tensor([]int64{1}, -1))}, "d3_rc1_flat", ir.TensorOf(ir.Float32, uTensor/4))
			zero := g.AddParam("dep_rc1_zero", i64(1), ir.Int64Tensor([]int64{1}, 0))
			empty := node("Slice", "dep_rc1_slice", []*ir.Value{flat, zero, zero}, "d3_rc1_empty", ir.TensorOf(ir.Float32, 0))
			cast := node("Cast", "dep_rc1_cast", []*ir.Value{empty}, "d3_rc1_empty_i64", ir.TensorOf(ir.Int64, 0), ir.IntAttr("to", 7))
			shape := g.AddParam("dep_rc1_shape", i64(4), ir.Int64Tensor([]int64{4}, uShape...))
			s := node("Concat", "dep_rc1_concat", []*ir.Value{shape, cast}, "x_rc1_shape", i64(4), ir.IntAttr("axis", 0))
			in = node("Reshape", "dep_rc1_reshape", []*ir.Value{x, s}, "x_rc1", act)
		}
		e1 = block("enc1", "_rc1", in, "e1")
		e2 = block("enc2", "_rc1", e1, "e2")
	}
	s2 := node("Add", "dec2_add", []*ir.Value{d3, e2}, "s2", act)
	d2 := block("dec2", "", s2, "d2")
	s1 := node("Add", "dec1_add", []*ir.Value{d2, e1}, "s1", act)
	d1 := block("dec1", "", s1, "d1")
	w := param("out.weight", []int64{uChannels, uChannels, 1, 1}, 0.4)
	if v.perturb {
		raw := w.Data.Raw
		f := math.Float32frombits(binary.LittleEndian.Uint32(raw))
		binary.LittleEndian.PutUint32(raw, math.Float32bits(f+0.25))
	}
	y := node("Conv", "out_conv", []*ir.Value{d1, w, param("out.bias", []int64{uChannels}, 0.1)}, "y", act, ir.IntsAttr("kernel_shape", 1, 1))
	g.AddOutput(y)
	if v.extraOutput {
		g.AddOutput(d2)
	}
	meta := v.metaJSON
	if v.meta && meta == "" {
		js, err := json.Marshal(uMetadata())
		if err != nil {
			t.Fatal(err)
		}
		meta = string(js)
	}
	if meta != "" {
		g.Ext = &onnximp.ModelInfo{ProducerName: "remat-compile verify test", MetadataProps: []onnximp.Prop{{Key: metadataKey, Value: meta}}}
	}
	return g
}

// buildU writes the variant to dir/name.onnx.
func buildU(t testing.TB, dir, name string, v uVariant) string {
	t.Helper()
	p := filepath.Join(dir, name+".onnx")
	if err := onnxexp.ExportFile(buildUGraph(t, v), p, onnxexp.Options{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// The fixtures under testdata/verify: the original, the exporter's intended
// form of its rewrite, and the rewrite without the fake dependency.
var verifyFixtures = []struct {
	file string
	v    uVariant
}{
	{"u.onnx", uVariant{}},
	{"u_remat.onnx", uVariant{remat: true, dep: true, meta: true}},
	{"u_remat_nodep.onnx", uVariant{remat: true, meta: true}},
}

// TestVerifyFixtures checks that testdata/verify holds what buildU writes
// (go test -run TestVerifyFixtures -update-verify rewrites them).
func TestVerifyFixtures(t *testing.T) {
	for _, f := range verifyFixtures {
		tmp := buildU(t, t.TempDir(), "m", f.v)
		want, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "verify", f.file)
		if *updateVerify {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestVerifyFixtures -update-verify)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale (run go test -run TestVerifyFixtures -update-verify)", path)
		}
	}
}

// needORT skips the test under -short when ONNX Runtime cannot be loaded
// and fails it otherwise, with the setup instructions.
func needORT(t *testing.T) {
	t.Helper()
	if _, err := ort.Version(); err != nil {
		if testing.Short() {
			t.Skipf("ONNX Runtime unavailable: %v", err)
		}
		t.Fatalf("ONNX Runtime unavailable (use -short to skip the ORT tests): %v", err)
	}
}

func TestVerifyUsage(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.onnx")
	os.WriteFile(m, []byte("x"), 0o644)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verify", m}, exitUsage, "verify takes two model files"},
		{[]string{"verify", "-levels", "disabled,fast", m, m}, exitUsage, `unknown level "fast"`},
		{[]string{"verify", "-runs", "0", m, m}, exitUsage, "-runs 0: want at least 1"},
		{[]string{"verify", "-input-value", "sr", m, m}, exitUsage, `-input-value "sr": want name=INT`},
		{[]string{"verify", "-input-value", "sr=1.5", m, m}, exitUsage, `-input-value "sr=1.5": want name=INT`},
		{[]string{"verify", "-input-shape", "x=1xN", m, m}, exitUsage, `dimension 1 is the symbol "N"`},
		{[]string{"verify", filepath.Join(dir, "nope.onnx"), m}, exitFailure, "nope.onnx: no such file"},
		{[]string{"verify", m, dir}, exitFailure, "is a directory"},
	} {
		code, out, errs := run(t, tt.args...)
		if code != tt.code || !strings.Contains(out+errs, tt.want) {
			t.Errorf("remat-compile %v: exit %d, output %q%q; want exit %d and %q", tt.args, code, out, errs, tt.code, tt.want)
		}
	}
	// verify is listed in the help.
	if _, out, _ := run(t, "help"); !strings.Contains(out, "remat-compile verify") {
		t.Errorf("help does not list verify:\n%s", out)
	}
}

func TestVerifyGoodPair(t *testing.T) {
	needORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", uVariant{})
	remat := buildU(t, dir, "u_remat", uVariant{remat: true, dep: true, meta: true})
	code, out, errs := run(t, "verify", "-runs", "3", orig, remat)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"level disabled:", "level all:", "bitwise identical", "activation peak", "median run time", "enc2_relu_rc1", "measured/predicted drop", "verify: ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") || errs != "" {
		t.Errorf("unexpected failure or diagnostics:\n%s\n%s", out, errs)
	}

	// -json, at every level.
	code, out, errs = run(t, "verify", "-json", "-runs", "2", "-levels", "disabled,basic,extended,layout,all", orig, remat)
	if code != exitOK {
		t.Fatalf("-json: exit %d: %s", code, errs)
	}
	var r verifyReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("-json: %v\n%s", err, out)
	}
	if !r.OK || !r.PlacementChecked || len(r.Failures) != 0 || r.Metadata == nil || len(r.Levels) != 5 || r.Runs != 2 {
		t.Fatalf("implausible report: %+v", r)
	}
	for _, lr := range r.Levels {
		if !lr.OK || len(lr.Outputs) != 1 || !lr.Outputs[0].Equal {
			t.Errorf("level %s: %+v", lr.Level, lr)
		}
		// ORT's live set at dec3_add is 5 tensors in the original and 4
		// in the remat model (research note, Q3).
		if lr.Orig.PeakBytes != 5*uTensor || lr.Rematted.PeakBytes != 4*uTensor || lr.ReductionBytes != uTensor || lr.ReductionPercent != 20 {
			t.Errorf("level %s: peaks %d -> %d (reduction %d, %.2f%%), want %d -> %d", lr.Level, lr.Orig.PeakBytes, lr.Rematted.PeakBytes, lr.ReductionBytes, lr.ReductionPercent, 5*uTensor, 4*uTensor)
		}
		if lr.MeasuredOverPredictedPercent == nil || *lr.MeasuredOverPredictedPercent != 100 || !*lr.MeetsAcceptanceBar {
			t.Errorf("level %s: measured/predicted drop %v, want 100%%", lr.Level, lr.MeasuredOverPredictedPercent)
		}
		if len(lr.Orig.RunTimesMS) != 2 || lr.Orig.MedianRunTimeMS <= 0 || lr.Rematted.MedianRunTimeMS <= 0 {
			t.Errorf("level %s: run times %+v %+v", lr.Level, lr.Orig, lr.Rematted)
		}
		if len(lr.Recompute) != 4 {
			t.Fatalf("level %s: %d placement reports, want 4", lr.Level, len(lr.Recompute))
		}
		for _, pr := range lr.Recompute {
			if !pr.OK || pr.Position < 0 || pr.AfterPosition < 0 || pr.BeforePosition < 0 || pr.Position <= pr.AfterPosition || pr.Position > pr.BeforePosition {
				t.Errorf("level %s: placement %+v", lr.Level, pr)
			}
		}
	}
	// The JSON field names carry their units.
	var raw map[string]any
	json.Unmarshal([]byte(out), &raw)
	lvl := raw["levels"].([]any)[0].(map[string]any)
	for _, key := range []string{"reduction_bytes", "reduction_percent", "predicted_reduction_bytes", "measured_over_predicted_drop_percent", "run_time_change_percent"} {
		if _, ok := lvl[key]; !ok {
			t.Errorf("level JSON lacks %q: %v", key, lvl)
		}
	}
	for _, key := range []string{"peak_bytes", "baseline_bytes", "arena_peak_bytes", "median_run_time_ms", "run_times_ms"} {
		if _, ok := lvl["remat_model"].(map[string]any)[key]; !ok {
			t.Errorf("model JSON lacks %q", key)
		}
	}
}

func TestVerifyHoistedOrMerged(t *testing.T) {
	needORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", uVariant{})
	remat := buildU(t, dir, "u_remat_nodep", uVariant{remat: true, meta: true})
	code, out, errs := run(t, "verify", "-runs", "1", orig, remat)
	if code != exitFailure {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// At "disabled" ORT hoists the chain to the start (research note,
	// Q1); at "all" CSE merges it into the original and runs it there.
	for _, want := range []string{
		`level disabled: recompute node "enc1_conv_rc1": ran at position 0`,
		`before its "after" node "dec3_relu"`,
		"ORT hoisted the recomputation",
		`level all: recompute node "enc1_conv_rc1": its original "enc1_conv" no longer runs: ORT merged the two copies (CSE)`,
		`level all: recompute node "enc2_relu_rc1"`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// Outputs are still identical, and the peak is the original's.
	if !strings.Contains(out, "bitwise identical") || strings.Contains(errs, "differs") {
		t.Errorf("outputs should be identical:\n%s\n%s", out, errs)
	}
	code, out, _ = run(t, "verify", "-json", "-runs", "1", "-levels", "basic", orig, remat)
	var r verifyReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFailure {
		t.Fatalf("exit %d, %v", code, err)
	}
	if lr := r.Levels[0]; lr.ReductionBytes != 0 || lr.OK || r.OK {
		t.Errorf("merged variant at basic: reduction %d, ok %v: want no reduction and a failure", lr.ReductionBytes, lr.OK)
	}
}

func TestVerifyOutputsDiffer(t *testing.T) {
	needORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", uVariant{})
	remat := buildU(t, dir, "u_bad", uVariant{remat: true, dep: true, meta: true, perturb: true})
	code, out, errs := run(t, "verify", "-runs", "1", orig, remat)
	if code != exitFailure {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, `level disabled: output "y" differs:`) || !strings.Contains(errs, "elements differ, max abs diff") {
		t.Errorf("stderr:\n%s", errs)
	}
	if !strings.Contains(out, "DIFFERS") {
		t.Errorf("stdout:\n%s", out)
	}
	code, out, _ = run(t, "verify", "-json", "-runs", "1", "-levels", "disabled", orig, remat)
	var r verifyReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFailure {
		t.Fatalf("exit %d, %v", code, err)
	}
	o := r.Levels[0].Outputs[0]
	if o.Equal || o.DifferingElements <= 0 || o.DifferingElements > o.Elements || o.MaxAbsDiff <= 0 || o.MaxRelDiff <= 0 {
		t.Errorf("output report %+v", o)
	}
	// The placement itself was fine.
	for _, pr := range r.Levels[0].Recompute {
		if !pr.OK {
			t.Errorf("placement %+v", pr)
		}
	}
}

func TestVerifyWithoutMetadata(t *testing.T) {
	needORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", uVariant{})
	remat := buildU(t, dir, "u_remat", uVariant{remat: true, dep: true})
	code, out, errs := run(t, "verify", "-runs", "1", orig, remat)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	want := "placement check skipped: u_remat.onnx has no remat-compile metadata"
	if !strings.Contains(errs, want) || !strings.Contains(out, want) {
		t.Errorf("want %q in stdout and stderr:\n%s\n%s", want, out, errs)
	}
	code, out, _ = run(t, "verify", "-json", "-runs", "1", orig, remat)
	var r verifyReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v", code, err)
	}
	if r.PlacementChecked || r.Metadata != nil || !strings.Contains(r.PlacementNote, "no remat-compile metadata") || r.Levels[0].ReductionBytes != uTensor {
		t.Errorf("report %+v", r)
	}
}

func TestVerifyBadInputs(t *testing.T) {
	needORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", uVariant{})
	good := buildU(t, dir, "u_remat", uVariant{remat: true, dep: true, meta: true})
	extra := buildU(t, dir, "u_extra", uVariant{remat: true, dep: true, meta: true, extraOutput: true})
	badJSON := buildU(t, dir, "u_badjson", uVariant{remat: true, dep: true, metaJSON: `{"version":1,"recompute":[`})
	v2 := buildU(t, dir, "u_v2", uVariant{remat: true, dep: true, metaJSON: `{"version":2}`})
	md := uMetadata()
	md.Recompute[0].Node = "enc1_conv_rc9"
	md.Recompute[1].After = "nowhere"
	js, _ := json.Marshal(md)
	badNames := buildU(t, dir, "u_badnames", uVariant{remat: true, dep: true, metaJSON: string(js)})
	garbage := filepath.Join(dir, "garbage.onnx")
	os.WriteFile(garbage, []byte("not a model"), 0o644)
	for _, tt := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{orig, extra}, exitFailure, []string{"have different inputs or outputs", `the remat model has an extra output "d2"`}},
		{[]string{extra, orig}, exitFailure, []string{`output "d2" is missing from the remat model`}},
		{[]string{orig, garbage}, exitFailure, []string{"ONNX Runtime cannot load the remat model", "garbage.onnx"}},
		{[]string{orig, badJSON}, exitFailure, []string{`metadata "remat-compile.recompute" is not valid JSON`, "placement check skipped"}},
		{[]string{orig, v2}, exitFailure, []string{"has version 2; this remat-compile reads version 1"}},
		{[]string{orig, badNames}, exitFailure, []string{`recompute node "enc1_conv_rc9": the metadata names node "enc1_conv_rc9", which the remat model does not have`, `recompute node "enc1_relu_rc1": the metadata names node "nowhere"`}},
		{[]string{"-input-value", "sr=16000", orig, good}, exitFailure, []string{`u.onnx has no input "sr"; its inputs are x`}},
		{[]string{"-input-shape", "x=1x16x32x32", orig, good}, exitFailure, []string{"disagrees with the model's"}},
		// Fixed inputs and a shape equal to the declared one are fine.
		{[]string{"-input-value", "x=1", "-input-shape", "x=1x16x64x64", orig, good}, exitOK, []string{}},
	} {
		args := append([]string{"verify", "-runs", "1", "-levels", "disabled"}, tt.args...)
		code, out, errs := run(t, args...)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d\n%s\n%s", tt.args, code, tt.code, out, errs)
		}
		for _, w := range tt.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tt.args, w, errs)
			}
		}
		if strings.Contains(errs, "panic") || strings.Contains(errs, "internal error") {
			t.Errorf("%v: %s", tt.args, errs)
		}
	}
}

// TestPlacementMatching checks the event matching on profiles as ORT 1.30
// wrote them for the U remat models (event names, op types and node
// indices copied from real runs), without running ORT.
func TestPlacementMatching(t *testing.T) {
	type ev struct {
		name, op string
		index    int
	}
	events := func(list ...ev) *ort.Profile {
		p := &ort.Profile{}
		for _, e := range list {
			p.Nodes = append(p.Nodes, ort.NodeEvent{Name: e.name, OpType: e.op, NodeIndex: e.index})
		}
		return p
	}
	dep := &plan{md: ptr(uMetadata()), g: buildUGraph(t, uVariant{remat: true, dep: true})}
	late := &plan{md: ptr(uMetadata()), g: buildUGraph(t, uVariant{remat: true})}
	for _, tt := range []struct {
		name string
		plan *plan
		prof *ort.Profile
		// want gives, per recompute node, the event it ran as and "" or
		// a substring of the problem.
		want map[string][2]string
	}{
		{"dep/extended: FusedConv keeps the conv's name and absorbs the relu", dep, events(
			ev{"enc1_conv", "FusedConv", 27}, ev{"enc2_conv", "FusedConv", 28}, ev{"enc3_conv", "FusedConv", 29}, ev{"bott_conv", "FusedConv", 30},
			ev{"dec3_add", "Add", 8}, ev{"dec3_conv", "FusedConv", 31},
			ev{"dep_rc1_flat", "Reshape", 11}, ev{"dep_rc1_slice", "Slice", 12}, ev{"dep_rc1_cast", "Cast", 13}, ev{"dep_rc1_concat", "Concat", 14}, ev{"dep_rc1_reshape", "Reshape", 15},
			ev{"enc1_conv_rc1", "FusedConv", 32}, ev{"enc2_conv_rc1", "FusedConv", 33},
			ev{"dec2_add", "Add", 20}, ev{"dec2_conv", "FusedConv", 34}, ev{"dec1_add", "Add", 23}, ev{"dec1_conv", "FusedConv", 35}, ev{"out_conv", "Conv", 26}),
			map[string][2]string{"enc1_conv_rc1": {"enc1_conv_rc1", ""}, "enc1_relu_rc1": {"enc1_conv_rc1", ""}, "enc2_conv_rc1": {"enc2_conv_rc1", ""}, "enc2_relu_rc1": {"enc2_conv_rc1", ""}}},
		{"dep/all: NCHWc names the fused conv after its output", dep, events(
			ev{"ReorderInput", "ReorderInput", 37}, ev{"e1_nchwc", "Conv", 36}, ev{"e2_nchwc", "Conv", 38}, ev{"e3_nchwc", "Conv", 39}, ev{"b_nchwc", "Conv", 40},
			ev{"dec3_add", "Add", 8}, ev{"d3_nchwc", "Conv", 41}, ev{"ReorderOutput", "ReorderOutput", 54},
			ev{"dep_rc1_flat", "Reshape", 11}, ev{"dep_rc1_slice", "Slice", 12}, ev{"dep_rc1_cast", "Cast", 13}, ev{"dep_rc1_concat", "Concat", 14}, ev{"dep_rc1_reshape", "Reshape", 15},
			ev{"ReorderInput_token_12", "ReorderInput", 43}, ev{"e1_rc1_nchwc", "Conv", 42}, ev{"Reshape_token_26", "Reshape", 50}, ev{"e2_rc1_nchwc", "Conv", 44},
			ev{"Reshape_token_16", "Reshape", 46}, ev{"Reshape", "Reshape", 45}, ev{"dec2_add", "Add", 20}, ev{"Reshape_token_19", "Reshape", 47}, ev{"d2_nchwc", "Conv", 48},
			ev{"Reshape_token_24", "Reshape", 49}, ev{"dec1_add", "Add", 23}, ev{"Reshape_token_28", "Reshape", 51}, ev{"d1_nchwc", "Conv", 52}, ev{"y_nchwc", "Conv", 53}, ev{"ReorderOutput_token_34", "ReorderOutput", 55}),
			map[string][2]string{"enc1_conv_rc1": {"e1_rc1_nchwc", ""}, "enc1_relu_rc1": {"e1_rc1_nchwc", ""}, "enc2_conv_rc1": {"e2_rc1_nchwc", ""}, "enc2_relu_rc1": {"e2_rc1_nchwc", ""}}},
		{"late/basic: CSE kept the copies and dropped the originals", late, events(
			ev{"enc1_conv_rc1", "Conv", 11}, ev{"enc1_relu_rc1", "Relu", 12}, ev{"enc2_conv_rc1", "Conv", 13}, ev{"enc2_relu_rc1", "Relu", 14},
			ev{"enc3_conv", "Conv", 4}, ev{"enc3_relu", "Relu", 5}, ev{"bott_conv", "Conv", 6}, ev{"bott_relu", "Relu", 7},
			ev{"dec3_add", "Add", 8}, ev{"dec3_conv", "Conv", 9}, ev{"dec3_relu", "Relu", 10}, ev{"dec2_add", "Add", 15},
			ev{"dec2_conv", "Conv", 16}, ev{"dec2_relu", "Relu", 17}, ev{"dec1_add", "Add", 18}, ev{"dec1_conv", "Conv", 19}, ev{"dec1_relu", "Relu", 20}, ev{"out_conv", "Conv", 21}),
			map[string][2]string{"enc1_conv_rc1": {"enc1_conv_rc1", `original "enc1_conv" no longer runs`}, "enc2_relu_rc1": {"enc2_relu_rc1", "ORT hoisted"}}},
		{"dep/disabled: a recompute missing from the profile", dep, events(
			ev{"enc1_conv", "Conv", 0}, ev{"enc1_relu", "Relu", 1}, ev{"enc2_conv", "Conv", 2}, ev{"enc2_relu", "Relu", 3}, ev{"dec3_relu", "Relu", 10}, ev{"enc2_conv_rc1", "Conv", 18}, ev{"enc2_relu_rc1", "Relu", 19}, ev{"dec2_add", "Add", 20}),
			map[string][2]string{"enc1_conv_rc1": {"", "missing from ORT's profile"}, "enc2_relu_rc1": {"enc2_relu_rc1", ""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]placementReport{}
			for _, pr := range checkPlacement(tt.plan, tt.prof, nil) {
				got[pr.Node] = pr
			}
			for node, want := range tt.want {
				pr, ok := got[node]
				if !ok {
					t.Fatalf("no report for %s", node)
				}
				if pr.Event != want[0] {
					t.Errorf("%s ran as %q (%s), want %q", node, pr.Event, pr.Match, want[0])
				}
				if want[1] == "" && !pr.OK || want[1] != "" && !strings.Contains(pr.Problem, want[1]) {
					t.Errorf("%s: ok %v, problem %q; want problem %q", node, pr.OK, pr.Problem, want[1])
				}
			}
		})
	}
}

func ptr[T any](x T) *T { return &x }

// TestPlacementTracing checks the tracing through the graph ORT ran
// (optGraph), without running ORT: optimized graphs written by hand in the
// forms ORT's optimizers produce, with a profile that runs their nodes in
// order.
func TestPlacementTracing(t *testing.T) {
	late := &plan{md: ptr(uMetadata()), g: buildUGraph(t, uVariant{remat: true})}
	type onode struct {
		name, op string
		in, out  []string
	}
	build := func(nodes ...onode) ([]byte, *ort.Profile) {
		mp := &onnxpb.ModelProto{Graph: &onnxpb.GraphProto{Name: proto.String("u")}}
		prof := &ort.Profile{}
		for i, n := range nodes {
			mp.Graph.Node = append(mp.Graph.Node, &onnxpb.NodeProto{Name: proto.String(n.name), OpType: proto.String(n.op), Input: n.in, Output: n.out})
			prof.Nodes = append(prof.Nodes, ort.NodeEvent{Name: n.name, OpType: n.op, NodeIndex: i})
		}
		data, err := proto.Marshal(mp)
		if err != nil {
			t.Fatal(err)
		}
		return data, prof
	}
	head := []onode{
		{"enc1_conv", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"e1"}},
		{"enc2_conv", "FusedConv", []string{"e1", "enc2.weight", "enc2.bias"}, []string{"e2"}},
		{"dec3_relu", "Relu", []string{"s3"}, []string{"d3"}},
	}
	tail := onode{"dec2_add", "Add", []string{"d3", "e2_rc1"}, []string{"s2"}}
	for _, tt := range []struct {
		name  string
		nodes []onode
		// want gives, per recompute node, the event it ran as ("" when
		// it is not located) and "" or a substring of the problem.
		want map[string][2]string
	}{
		{"fused with generated names: traced through the tensors ORT created", append(slices.Clone(head),
			onode{"enc1_conv_rc1/Fusion", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"fusion_token_1"}},
			onode{"reshape_token_2", "Reshape", []string{"fusion_token_1", "shape_token_0"}, []string{"e1_rc1"}},
			onode{"FusedConv_token_3", "FusedConv", []string{"e1_rc1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			tail),
			map[string][2]string{"enc1_conv_rc1": {"enc1_conv_rc1/Fusion", ""}, "enc1_relu_rc1": {"enc1_conv_rc1/Fusion", ""},
				"enc2_conv_rc1": {"FusedConv_token_3", ""}, "enc2_relu_rc1": {"FusedConv_token_3", ""}}},
		{"CSE merged the first copy: the kernel that reads the original's output does not compute it", append(slices.Clone(head),
			onode{"FusedConv_token_3", "FusedConv", []string{"e1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			tail),
			map[string][2]string{"enc1_conv_rc1": {"", "cannot be verified"}, "enc1_relu_rc1": {"", "cannot be verified"},
				"enc2_conv_rc1": {"", "cannot be verified"}, "enc2_relu_rc1": {"FusedConv_token_3", ""}}},
		{"hoisted: the fused copy runs before its \"after\" node", []onode{head[0], head[1],
			{"FusedConv_token_3", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"e1_rc1"}},
			{"FusedConv_token_4", "FusedConv", []string{"e1_rc1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			head[2], tail},
			map[string][2]string{"enc1_conv_rc1": {"FusedConv_token_3", "ORT hoisted"}, "enc2_conv_rc1": {"FusedConv_token_4", "ORT hoisted"}}},
		{"NCHWc: the copy back to the plain layout runs late; the recompute is the blocked kernel", append(slices.Clone(head),
			onode{"e1_rc1_nchwc", "Conv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"reorder_token_5"}},
			onode{"e2_rc1_nchwc", "Conv", []string{"reorder_token_5", "enc2.weight", "enc2.bias"}, []string{"reorder_token_6"}},
			onode{"ReorderOutput_token_7", "ReorderOutput", []string{"reorder_token_6"}, []string{"e2_rc1"}},
			tail,
			onode{"ReorderOutput_token_8", "ReorderOutput", []string{"reorder_token_5"}, []string{"e1_rc1"}}),
			map[string][2]string{"enc1_relu_rc1": {"e1_rc1_nchwc", ""}, "enc2_relu_rc1": {"e2_rc1_nchwc", ""}}},
		{"the \"after\" node is gone: unverifiable, not passed", []onode{head[0], head[1],
			{"FusedConv_token_3", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"e1_rc1"}},
			{"FusedConv_token_4", "FusedConv", []string{"e1_rc1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			{"dec2_add", "Add", []string{"s3", "e2_rc1"}, []string{"s2"}}},
			map[string][2]string{"enc1_conv_rc1": {"FusedConv_token_3", `its "after" node "dec3_relu" is not in the graph ORT ran`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, prof := build(tt.nodes...)
			og, err := parseOptGraph(data, prof)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]placementReport{}
			for _, pr := range checkPlacement(late, prof, og) {
				got[pr.Node] = pr
			}
			for node, want := range tt.want {
				pr := got[node]
				if pr.Event != want[0] {
					t.Errorf("%s ran as %q (%s), want %q", node, pr.Event, pr.Match, want[0])
				}
				if want[1] == "" && !pr.OK || want[1] != "" && !strings.Contains(pr.Problem, want[1]) {
					t.Errorf("%s: ok %v, problem %q; want problem %q", node, pr.OK, pr.Problem, want[1])
				}
			}
		})
	}
}
