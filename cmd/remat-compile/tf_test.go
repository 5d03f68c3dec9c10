package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/verify"
)

// TestTFCommands runs the commands on a TensorFlow graph (the zoo's U-Net
// built as one): compile writes model.json with the tfjs target by
// default and reports tfjs's peaks; convert writes a .pb from it and a
// model.json from that; inspect simulates TensorFlow.js's order; -target ort and
// cross-format outputs are errors naming the fix; verify runs the model
// and its conversions in TensorFlow.js.
func TestTFCommands(t *testing.T) {
	dir := t.TempDir()
	src := "zoo:unet:tf:res=64"
	out := filepath.Join(dir, "out", "model.json")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "r.json")
	code, stdout, stderr := run(t, src, "-o", out, "-budget", "128KiB", "-report", rep)
	if code != exitOK {
		t.Fatalf("compile: exit %d: %s%s", code, stdout, stderr)
	}
	var r report.Compile
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Target != "tfjs" || r.TFJSBeforePeakBytes != 128<<10 {
		t.Errorf("report: target %q, tfjs peak %d; want tfjs, 128 KiB", r.Target, r.TFJSBeforePeakBytes)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "model.bin")); err != nil {
		t.Errorf("compile wrote no weight shard: %v", err)
	}

	pb := filepath.Join(dir, "u.pb")
	back := filepath.Join(dir, "back", "model.json")
	if err := os.MkdirAll(filepath.Dir(back), 0o755); err != nil {
		t.Fatal(err)
	}
	// model.json → .pb → model.json.
	for _, c := range [][]string{{"convert", "-o", pb, out}, {"convert", "-o", back, pb}} {
		if code, stdout, stderr := run(t, c...); code != exitOK {
			t.Fatalf("%v: exit %d: %s%s", c, code, stdout, stderr)
		}
	}

	code, stdout, stderr = run(t, "inspect", src)
	if code != exitOK || !strings.Contains(stdout, "TensorFlow.js's execution order, tfjs memory model") {
		t.Errorf("inspect: exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{src, "-o", filepath.Join(dir, "x.json"), "-target", "ort"}, "use tfjs"},
		{[]string{"convert", "-o", filepath.Join(dir, "x.onnx"), src}, "does not convert between TensorFlow and ONNX"},
		{[]string{"profile", "-o", filepath.Join(dir, "p.yaml"), src}, "a TensorFlow graph cannot be profiled"},
	} {
		code, stdout, stderr := run(t, c.args...)
		if code == exitOK || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want an error containing %q:\n%s%s", c.args, code, c.want, stdout, stderr)
		}
	}

	testmodels.RequireTFJS(t)
	for _, remat := range []string{pb, back} {
		code, stdout, stderr := run(t, "verify", "-runs", "1", "-json", out, remat)
		var vr verify.TFReport
		if err := json.Unmarshal([]byte(stdout), &vr); err != nil {
			t.Fatalf("verify %s: exit %d: %v\n%s%s", remat, code, err, stdout, stderr)
		}
		if code != exitOK || !vr.OK || len(vr.Outputs) != 1 || !vr.Outputs[0].Equal || vr.Orig.PeakBytes != 128<<10 || vr.Rematted.PeakBytes != 128<<10 {
			t.Errorf("verify %s: exit %d, report %+v", remat, code, vr)
		}
	}
}

// TestTFCompileSelfie compiles the real selfie segmentation model at 95%
// of its peak (the least remat reaches on it) for TensorFlow.js and
// verifies the rewrite there: outputs bitwise equal, every recomputation
// where the plan put it, the measured drop at least 80% of the predicted.
func TestTFCompileSelfie(t *testing.T) {
	m, shape := realTFModel(t, "selfie")
	out := filepath.Join(t.TempDir(), "model.json")
	code, stdout, stderr := run(t, m.Path, "-o", out, "-budget", "95%", "-input-shape", shape, "-time-limit", "20s")
	if code != exitOK || !strings.Contains(stdout, "tensorflow.js:") {
		t.Fatalf("compile: exit %d:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, "verify", "-runs", "3", "-json", "-input-shape", shape, m.Path, out)
	var vr verify.TFReport
	if err := json.Unmarshal([]byte(stdout), &vr); err != nil {
		t.Fatalf("verify: exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	if code != exitOK || !vr.OK || !vr.PlacementChecked || len(vr.Recompute) == 0 || vr.MeetsAcceptanceBar == nil || !*vr.MeetsAcceptanceBar {
		t.Errorf("verify: exit %d, ok %v, placement checked %v, %d recomputations, meets the bar %v; failures %v", code, vr.OK, vr.PlacementChecked, len(vr.Recompute), vr.MeetsAcceptanceBar, vr.Failures)
	}
}

// TestTFCompileTrain is the main command with -train on a TensorFlow
// graph: the training graph of MobileNetV2 (zoo, 64×64, batch 4, -loss
// sum) in TensorFlow ops, fitted at 80% of its tfjs peak and verified in
// TensorFlow.js (-verify): the rewrite's loss and gradients bitwise equal
// to the plain training graph's, and tf.profile's measured peak drop at
// least 80% of the predicted one.
func TestTFCompileTrain(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs a training graph in TensorFlow.js; skipped in -short mode")
	}
	testmodels.RequireTFJS(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out", "model.json")
	rep := filepath.Join(dir, "r.json")
	code, stdout, stderr := run(t, "zoo:mobilenet_v2:tf:res=64:batch=4", "-o", out, "-train", "-loss", "sum",
		"-budget", "80%", "-verify", "-report", rep, "-time-limit", "10s")
	if code != exitOK {
		t.Fatalf("compile -train -verify: exit %d:\n%s%s", code, stdout, stderr)
	}
	r := readReport(t, rep)
	if r.Target != "tfjs" || r.Recomputations == 0 || r.TFJSAfterPeakBytes >= r.TFJSBeforePeakBytes {
		t.Fatalf("report: target %q, %d recomputations, tfjs peak %d → %d B; want a tfjs plan that recomputes and lowers the peak",
			r.Target, r.Recomputations, r.TFJSBeforePeakBytes, r.TFJSAfterPeakBytes)
	}
	var before, after int64
	line := ""
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "verify (TensorFlow.js") {
			line = l
		}
	}
	_, rest, ok := strings.Cut(line, "bitwise identical outputs; tf.profile measured ")
	if !ok {
		t.Fatalf("no verify line with bitwise identical outputs:\n%s", stdout)
	}
	if _, err := fmt.Sscanf(rest, "%d", &before); err != nil {
		t.Fatalf("verify line %q: %v", line, err)
	}
	if _, err := fmt.Sscanf(rest[strings.Index(rest, "→ ")+len("→ "):], "%d", &after); err != nil {
		t.Fatalf("verify line %q: %v", line, err)
	}
	predicted, measured := r.TFJSBeforePeakBytes-r.TFJSAfterPeakBytes, before-after
	t.Logf("tfjs peak predicted %d → %d B, tf.profile %d → %d B (measured drop %.0f%% of predicted), %d recomputations, +%.2f%% predicted compute",
		r.TFJSBeforePeakBytes, r.TFJSAfterPeakBytes, before, after, 100*float64(measured)/float64(predicted), r.Recomputations, r.OverheadPercent)
	if float64(measured) < 0.8*float64(predicted) {
		t.Errorf("tf.profile's peak fell %d B, under 80%% of the predicted %d B", measured, predicted)
	}
}

// TestTFCompileTrainDiveForced: the training graph of MobileNetV2 (zoo,
// 64×64, batch 4, -loss sum) at 70% for TensorFlow.js. TensorFlow.js's
// LIFO stack runs a batch-norm gradient's second product right after its
// plan predecessor, the first, and both long before the scale gradient
// the plan runs first, which then holds two activations across the dive;
// holding the first behind the scale gradient alone lowers nothing. The
// written rewrite must still peak within the budget, at the plan order's
// peak (targets.ForceOptions.Latest holds the second product behind the
// scale gradient).
func TestTFCompileTrainDiveForced(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a training graph and forces its order for TensorFlow.js; skipped in -short mode")
	}
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	code, stdout, stderr := run(t, "zoo:mobilenet_v2:tf:res=64:batch=4", "-o", filepath.Join(dir, "out", "model.json"), "-train", "-loss", "sum",
		"-budget", "70%", "-report", rep, "-time-limit", "5s")
	if code != exitOK {
		t.Fatalf("compile: exit %d:\n%s%s", code, stdout, stderr)
	}
	r := readReport(t, rep)
	if r.Recomputations == 0 || r.TFJSAfterPeakBytes > r.BudgetBytes || r.TFJSAfterPeakBytes != r.TFJSPlanOrderPeakBytes {
		t.Fatalf("report: %d recomputations, tfjs peak %d B (plan order %d B) against a budget of %d B; want recomputations, a peak within the budget, the plan order's",
			r.Recomputations, r.TFJSAfterPeakBytes, r.TFJSPlanOrderPeakBytes, r.BudgetBytes)
	}
	t.Logf("tfjs peak %d → %d B (budget %d B), %d recomputations, constraints %v", r.TFJSBeforePeakBytes, r.TFJSAfterPeakBytes, r.BudgetBytes, r.Recomputations, r.OrderedNodes)
}

// TestTFCompileTrainWithinBudget compiles the training graph of the real
// handlandmark-lite model (-loss sum) at 70% for TensorFlow.js. Its
// ReLU6 gradients are SelectV2 nodes, each of which holds its three
// operands broadcast to its output's shape while it runs: a plan made
// without them peaked at 22.7 MB against a budget of 17.8 MB. Compile
// must write a plan whose peak as TensorFlow.js runs the written file is
// within the budget and is the plan order's; verify measures that peak
// with tf.profile, bitwise outputs, and every recomputation where the plan
// put it.
func TestTFCompileTrainWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs a real model's training graph in TensorFlow.js; skipped in -short mode")
	}
	m, shape := realTFModel(t, "handlandmark-lite")
	dir := t.TempDir()
	out, orig := filepath.Join(dir, "out", "model.json"), filepath.Join(dir, "orig", "model.json")
	rep := filepath.Join(dir, "r.json")
	args := []string{m.Path, "-train", "-loss", "sum", "-input-shape", shape}
	if code, stdout, stderr := run(t, append(args, "-budget", "70%", "-time-limit", "20s", "-report", rep, "-o", out)...); code != exitOK {
		t.Fatalf("compile: exit %d:\n%s%s", code, stdout, stderr)
	}
	r := readReport(t, rep)
	if r.Recomputations == 0 || r.TFJSAfterPeakBytes > r.BudgetBytes || r.TFJSAfterPeakBytes != r.TFJSPlanOrderPeakBytes {
		t.Fatalf("report: %d recomputations, tfjs peak %d B (plan order %d B) against a budget of %d B; want recomputations, a peak within the budget, the plan order's",
			r.Recomputations, r.TFJSAfterPeakBytes, r.TFJSPlanOrderPeakBytes, r.BudgetBytes)
	}
	if code, stdout, stderr := run(t, append(args, "-solver", "checkpoint-all", "-o", orig)...); code != exitOK {
		t.Fatalf("compile -solver checkpoint-all: exit %d:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := run(t, "verify", "-runs", "1", "-json", "-input-shape", shape, orig, out)
	var vr verify.TFReport
	if err := json.Unmarshal([]byte(stdout), &vr); err != nil {
		t.Fatalf("verify: exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	if code != exitOK || !vr.OK || len(vr.Recompute) != r.Recomputations {
		t.Errorf("verify: exit %d, ok %v, %d of %d recomputations checked; failures %v", code, vr.OK, len(vr.Recompute), r.Recomputations, vr.Failures)
	}
	for _, o := range vr.Outputs {
		if !o.Equal {
			t.Errorf("output %+v differs", o)
		}
	}
	if vr.Rematted.PeakBytes != r.TFJSAfterPeakBytes || vr.Orig.PeakBytes != r.TFJSBeforePeakBytes {
		t.Errorf("tf.profile measured %d → %d B, predicted %d → %d B", vr.Orig.PeakBytes, vr.Rematted.PeakBytes, r.TFJSBeforePeakBytes, r.TFJSAfterPeakBytes)
	}
	t.Logf("tfjs peak %d → %d B (budget %d B), %d recomputations, tf.profile %d → %d B", r.TFJSBeforePeakBytes, r.TFJSAfterPeakBytes, r.BudgetBytes, r.Recomputations, vr.Orig.PeakBytes, vr.Rematted.PeakBytes)
}

// realTFModel returns the real TensorFlow.js model of the manifest named
// name and its first input's -input-shape value, and requires
// TensorFlow.js.
func realTFModel(t *testing.T, name string) (testmodels.TFModel, string) {
	t.Helper()
	var m testmodels.TFModel
	for _, x := range testmodels.TFModels(t) {
		if x.Name == name {
			m = x
		}
	}
	if m.Path == "" {
		t.Fatalf("the manifest has no %s model", name)
	}
	testmodels.RequireTFJS(t)
	return m, m.Inputs[0].Name + "=" + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(m.Inputs[0].Shape)), "x"), "[]")
}
