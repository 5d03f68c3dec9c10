package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/verify"
)

var updateVerify = flag.Bool("update-verify", false, "rewrite the fixtures under testdata/verify")

// buildU writes the variant to dir/name.onnx.
func buildU(t testing.TB, dir, name string, v testmodels.UVariant) string {
	t.Helper()
	p, err := testmodels.WriteU(dir, name, v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const uTensor = testmodels.UTensor

// The fixtures under testdata/verify: the original, the exporter's intended
// form of its rewrite, and the rewrite without the fake dependency.
var verifyFixtures = []struct {
	file string
	v    testmodels.UVariant
}{
	{"u.onnx", testmodels.UVariant{}},
	{"u_remat.onnx", testmodels.UVariant{Remat: true, Dep: true, Meta: true}},
	{"u_remat_nodep.onnx", testmodels.UVariant{Remat: true, Meta: true}},
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
	testmodels.RequireORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", testmodels.UVariant{})
	rm := buildU(t, dir, "u_remat", testmodels.UVariant{Remat: true, Dep: true, Meta: true})
	code, out, errs := run(t, "verify", "-runs", "3", orig, rm)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"level disabled:", "level all:", "bitwise identical", "activation peak", "peak, ORT defaults", "median run time", "enc2_relu_rc1", "measured/predicted drop", "verify: ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") || errs != "" {
		t.Errorf("unexpected failure or diagnostics:\n%s\n%s", out, errs)
	}

	// -json, at every level.
	code, out, errs = run(t, "verify", "-json", "-runs", "2", "-levels", "disabled,basic,extended,layout,all", orig, rm)
	if code != exitOK {
		t.Fatalf("-json: exit %d: %s", code, errs)
	}
	var r verify.Report
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
		// A session under ORT's defaults runs its first run as measured
		// above, and later ones with the memory pattern's block.
		if lr.Orig.DefaultPeakBytes < lr.Orig.PeakBytes || lr.Rematted.DefaultPeakBytes < lr.Rematted.PeakBytes ||
			lr.DefaultReductionBytes != lr.Orig.DefaultPeakBytes-lr.Rematted.DefaultPeakBytes {
			t.Errorf("level %s: peaks under ORT's defaults %d → %d (reduction %d), measured %d → %d", lr.Level,
				lr.Orig.DefaultPeakBytes, lr.Rematted.DefaultPeakBytes, lr.DefaultReductionBytes, lr.Orig.PeakBytes, lr.Rematted.PeakBytes)
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
	for _, key := range []string{"reduction_bytes", "reduction_percent", "predicted_reduction_bytes", "measured_over_predicted_drop_percent", "run_time_change_percent", "default_reduction_bytes", "default_reduction_percent"} {
		if _, ok := lvl[key]; !ok {
			t.Errorf("level JSON lacks %q: %v", key, lvl)
		}
	}
	for _, key := range []string{"peak_bytes", "baseline_bytes", "arena_peak_bytes", "median_run_time_ms", "run_times_ms", "default_peak_bytes"} {
		if _, ok := lvl["remat_model"].(map[string]any)[key]; !ok {
			t.Errorf("model JSON lacks %q", key)
		}
	}
}

func TestVerifyHoistedOrMerged(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", testmodels.UVariant{})
	rm := buildU(t, dir, "u_remat_nodep", testmodels.UVariant{Remat: true, Meta: true})
	code, out, errs := run(t, "verify", "-runs", "1", orig, rm)
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
	code, out, _ = run(t, "verify", "-json", "-runs", "1", "-levels", "basic", orig, rm)
	var r verify.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFailure {
		t.Fatalf("exit %d, %v", code, err)
	}
	if lr := r.Levels[0]; lr.ReductionBytes != 0 || lr.OK || r.OK {
		t.Errorf("merged variant at basic: reduction %d, ok %v: want no reduction and a failure", lr.ReductionBytes, lr.OK)
	}
}

func TestVerifyOutputsDiffer(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", testmodels.UVariant{})
	rm := buildU(t, dir, "u_bad", testmodels.UVariant{Remat: true, Dep: true, Meta: true, Perturb: true})
	code, out, errs := run(t, "verify", "-runs", "1", orig, rm)
	if code != exitFailure {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, `level disabled: output "y" differs:`) || !strings.Contains(errs, "elements differ, max abs diff") {
		t.Errorf("stderr:\n%s", errs)
	}
	if !strings.Contains(out, "DIFFERS") {
		t.Errorf("stdout:\n%s", out)
	}
	code, out, _ = run(t, "verify", "-json", "-runs", "1", "-levels", "disabled", orig, rm)
	var r verify.Report
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
	testmodels.RequireORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", testmodels.UVariant{})
	rm := buildU(t, dir, "u_remat", testmodels.UVariant{Remat: true, Dep: true})
	code, out, errs := run(t, "verify", "-runs", "1", orig, rm)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	want := "placement check skipped: u_remat.onnx has no remat-compile metadata"
	if !strings.Contains(errs, want) || !strings.Contains(out, want) {
		t.Errorf("want %q in stdout and stderr:\n%s\n%s", want, out, errs)
	}
	code, out, _ = run(t, "verify", "-json", "-runs", "1", orig, rm)
	var r verify.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v", code, err)
	}
	if r.PlacementChecked || r.Metadata != nil || !strings.Contains(r.PlacementNote, "no remat-compile metadata") || r.Levels[0].ReductionBytes != uTensor {
		t.Errorf("report %+v", r)
	}
}

func TestVerifyBadInputs(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	orig := buildU(t, dir, "u", testmodels.UVariant{})
	good := buildU(t, dir, "u_remat", testmodels.UVariant{Remat: true, Dep: true, Meta: true})
	extra := buildU(t, dir, "u_extra", testmodels.UVariant{Remat: true, Dep: true, Meta: true, ExtraOutput: true})
	badJSON := buildU(t, dir, "u_badjson", testmodels.UVariant{Remat: true, Dep: true, MetaJSON: `{"version":1,"recompute":[`})
	v2 := buildU(t, dir, "u_v2", testmodels.UVariant{Remat: true, Dep: true, MetaJSON: `{"version":2}`})
	md := testmodels.UMetadata()
	md.Recompute[0].Node = "enc1_conv_rc9"
	md.Recompute[1].After = "nowhere"
	js, _ := json.Marshal(md)
	badNames := buildU(t, dir, "u_badnames", testmodels.UVariant{Remat: true, Dep: true, MetaJSON: string(js)})
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
