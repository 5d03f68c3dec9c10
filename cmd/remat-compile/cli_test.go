package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, &Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// zooFile exports a small zoo model with symbolic batch left in place when
// symbolic is set.
func zooFile(t *testing.T, name string) string {
	t.Helper()
	m, ok := zoo.Lookup(name)
	if !ok {
		t.Fatalf("zoo has no %s", name)
	}
	g, err := m.Build(m.Small)
	if err != nil {
		t.Fatal(err)
	}
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".onnx")
	if err := onnxexp.ExportFile(g, p, onnxexp.Options{}); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage:"},
		{[]string{"help"}, exitOK, "remat-compile inspect"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"inspect"}, exitUsage, "inspect takes one model file, got 0 arguments"},
		{[]string{"inspect", "-nope", "m.onnx"}, exitUsage, "flag provided but not defined: -nope"},
		{[]string{"inspect", "-input-shape", "x", "m.onnx"}, exitUsage, `-input-shape "x": want name=DIMxDIMx…`},
		{[]string{"inspect", "-dim", "batch=-1", "m.onnx"}, exitUsage, `-dim "batch=-1": want symbol=SIZE`},
		{[]string{"convert", "m.onnx"}, exitUsage, "convert needs -o out.onnx"},
		{[]string{"inspect", "-memory", "magic", "m.onnx"}, exitUsage, `-memory "magic": want ort, tfjs or liveness`},
		{[]string{"inspect", "/nonexistent/m.onnx"}, exitFailure, "/nonexistent/m.onnx"},
		{[]string{"inspect", "-d", "chek", "m.onnx"}, exitUsage, `-d "chek": unknown debug flag "chek"`},
		{[]string{"inspect", "-value-type", "y=f32[1,", "m.onnx"}, exitUsage, `-value-type "y=f32[1,"`},
	} {
		code, out, errs := run(t, tt.args...)
		if code != tt.code || !strings.Contains(out+errs, tt.want) {
			t.Errorf("remat-compile %v: exit %d, output %q%q; want exit %d and %q", tt.args, code, out, errs, tt.code, tt.want)
		}
	}
}

func TestInspect(t *testing.T) {
	p := zooFile(t, "unet")
	// Flags may follow the model path.
	code, out, errs := run(t, "inspect", p, "-top", "3")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"nodes:", "parameter bytes:", "peak memory:", "Conv", "largest values live at the peak:"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = run(t, "inspect", "-json", p)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r pipeline.Inspection
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("inspect -json: %v\n%s", err, out)
	}
	if r.Nodes == 0 || r.PeakBytes <= 0 || r.ParamBytes <= 0 || r.Ops["Conv"] == 0 || len(r.LargestAtPeak) == 0 || len(r.LargestAtPeak) > 10 {
		t.Fatalf("implausible report: %+v", r)
	}
	// The peak holds at least the largest buffer live at it.
	if r.PeakBytes < r.LargestAtPeak[0].Bytes {
		t.Fatalf("peak %d below its largest live value %d", r.PeakBytes, r.LargestAtPeak[0].Bytes)
	}
	// Plain liveness never exceeds the sum of all activations; the ORT
	// model may (kernel scratch buffers, arena rounding).
	_, out2, _ := run(t, "inspect", "-json", "-memory", "liveness", p)
	var r2 pipeline.Inspection
	if err := json.Unmarshal([]byte(out2), &r2); err != nil {
		t.Fatal(err)
	}
	if r2.PeakBytes <= 0 || r2.PeakBytes > r2.ActivationBytes || r2.PeakBytes == r.PeakBytes {
		t.Fatalf("liveness peak %d, ORT-model peak %d, activations %d: want 0 < liveness <= activations and the two models to differ on U-Net", r2.PeakBytes, r.PeakBytes, r2.ActivationBytes)
	}
}

func TestConvertWritesAtomicallyAndDeterministically(t *testing.T) {
	p := zooFile(t, "mobilenet_v2")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.onnx"), filepath.Join(dir, "b.onnx")
	for _, out := range []string{a, b} {
		if code, _, errs := run(t, "convert", "-shapes", "-o", out, p); code != exitOK {
			t.Fatalf("convert: exit %d: %s", code, errs)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if len(da) == 0 || !bytes.Equal(da, db) {
		t.Fatalf("two converts of one model differ (%d vs %d bytes)", len(da), len(db))
	}
	// Refuses to overwrite its input.
	if code, _, errs := run(t, "convert", "-o", p, p); code != exitFailure || errs == "" {
		t.Fatalf("convert onto its input: exit %d %q, want exit 1 and an error", code, errs)
	}
	// A failing convert leaves no output file behind.
	bad := filepath.Join(dir, "bad.onnx")
	os.WriteFile(bad, []byte("not a model"), 0o644)
	out := filepath.Join(dir, "never.onnx")
	if code, _, _ := run(t, "convert", "-o", out, bad); code != exitFailure {
		t.Fatalf("convert of garbage: exit %d, want 1", code)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("failed convert left %s behind", out)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

// TestInspectTF inspects a TensorFlow.js model.json: the tfjs target's
// memory model in TensorFlow.js's order by default, liveness on request;
// ONNX Runtime's model does not apply (an error naming the fix).
func TestInspectTF(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.json")
	model := `{"format": "graph-model", "modelTopology": {"node": [
		{"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": "1"}, {"size": "8"}, {"size": "8"}, {"size": "4"}]}}}},
		{"name": "p", "op": "MaxPool", "input": ["x"], "attr": {"T": {"type": "DT_FLOAT"}, "ksize": {"list": {"i": ["1", "2", "2", "1"]}},
			"strides": {"list": {"i": ["1", "2", "2", "1"]}}, "padding": {"s": "VkFMSUQ="}, "data_format": {"s": "TkhXQw=="}}},
		{"name": "y", "op": "Relu", "input": ["p"], "attr": {"T": {"type": "DT_FLOAT"}}}],
		"versions": {"producer": 1}}, "weightsManifest": []}`
	if err := os.WriteFile(p, []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "inspect", p)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"tf.MaxPool", "TensorFlow.js's execution order, tfjs memory model", "f32[1,4,4,4]"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	if code, out, errs := run(t, "inspect", "-memory", "liveness", p); code != exitOK || !strings.Contains(out, "liveness memory model") {
		t.Errorf("inspect -memory liveness: exit %d:\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "inspect", "-memory", "ort", p); code != exitUsage || !strings.Contains(errs, "use tfjs") {
		t.Errorf("inspect -memory ort: exit %d, want 2 and an error naming tfjs:\n%s", code, errs)
	}
	if strings.Contains(out, "opset") {
		t.Errorf("inspect prints an opset for a TensorFlow graph:\n%s", out)
	}
}

// TestInspectFloorAndArena: -floor gives the single-node floor and a tiled
// floor below it for a model the repository ships; -arena a static plan
// no smaller than the live peak it places.
func TestInspectFloorAndArena(t *testing.T) {
	code, stdout, stderr := run(t, "inspect", "-json", "-floor", "-arena", filepath.Join("..", "..", "testdata", "models", "unet_like.onnx"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r pipeline.Inspection
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if f := r.Floor; f == nil || f.NodeBytes <= 0 || f.TiledBytes <= 0 || f.TiledBytes >= f.TargetBytes || len(f.Regions) == 0 {
		t.Errorf("floor %+v: want a tiled floor below the model's peak", r.Floor)
	}
	if a := r.Arena; a == nil || a.ArenaBytes < a.LivePeakBytes || a.LivePeakBytes <= 0 {
		t.Errorf("arena %+v", r.Arena)
	}
}
