package main

import (
	"encoding/json"
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
// default and reports tfjs's peaks; convert writes a .pb and a model.json;
// inspect simulates TensorFlow.js's order; -target ort and
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
	// (Reading .pb and model.json through pipeline.Load, convert's .pb ⇄
	// model.json, is format detection's, tested with it; verify reads
	// them itself.)
	for _, c := range [][]string{{"convert", "-o", pb, src}, {"convert", "-o", back, src}} {
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
		{[]string{src, "-o", filepath.Join(dir, "x.json"), "-target", "ort"}, "use -target tfjs"},
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
