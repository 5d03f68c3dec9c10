package zoo_test

// Integration with the exporter, shape inference, python3-onnx and ONNX
// Runtime. The Small models are committed as testdata/zoo/<name>.onnx;
// regenerate them with
//
//	go test ./internal/zoo -run TestExportSmall -update
//
// (or go generate ./internal/zoo).

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
)

var update = flag.Bool("update", false, "rewrite testdata/zoo/*.onnx from the Small models")

// testdata is the repository's testdata/zoo directory.
const testdata = "../../testdata/zoo"

// maxFileBytes bounds a committed model file.
const maxFileBytes = 200_000

// outputShape is the architecture's output shape under c: logits per
// image, per pixel or per token.
func outputShape(name string, c zoo.Config) []int64 {
	b, r, k := int64(c.Batch), int64(c.Resolution), int64(c.Classes)
	switch name {
	case "unet", "fcn8", "segnet":
		return []int64{b, k, r, r}
	case "transformer_encoder", "transformer_decoder":
		return []int64{b, r, k}
	}
	return []int64{b, k}
}

// export builds m under c, infers its shapes (all static) and exports it.
func export(t *testing.T, m zoo.Model, c zoo.Config) (*ir.Graph, []byte) {
	t.Helper()
	g, err := m.Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: m.Name}); err != nil {
		t.Fatalf("%s: shapes.Infer: %v", m.Name, err)
	}
	if dims, _ := g.Outputs[0].Type.Dims(); !slices.Equal(dims, outputShape(m.Name, c)) {
		t.Errorf("%s: output shape %v, want %v", m.Name, g.Outputs[0].Type, outputShape(m.Name, c))
	}
	data, err := onnxexp.Export(g, onnxexp.Options{})
	if err != nil {
		t.Fatalf("%s: export: %v", m.Name, err)
	}
	return g, data
}

// TestExportSmall exports every Small model, checks it with python3-onnx
// (onnx.checker with full_check, strict shape inference, the output shape)
// and compares it with the committed testdata/zoo/<name>.onnx.
func TestExportSmall(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	want := map[string][]int64{}
	for _, m := range zoo.Models() {
		_, data := export(t, m, m.Small)
		if len(data) > maxFileBytes {
			t.Errorf("%s: Small exports to %d bytes, more than %d", m.Name, len(data), maxFileBytes)
		}
		p := filepath.Join(dir, m.Name+".onnx")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		want[p] = outputShape(m.Name, m.Small)
		golden := filepath.Join(testdata, m.Name+".onnx")
		if *update {
			if err := os.MkdirAll(testdata, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%v; run go test ./internal/zoo -run TestExportSmall -update", err)
		} else if !bytes.Equal(old, data) {
			t.Errorf("%s differs from the exported Small model; run go test ./internal/zoo -run TestExportSmall -update", golden)
		}
	}
	for p, shape := range pythonCheck(t, paths) {
		if !slices.Equal(shape, want[p]) {
			t.Errorf("%s: onnx shape inference gives output %v, want %v", filepath.Base(p), shape, want[p])
		}
	}
}

const checkScript = `
import json, sys, onnx
for p in sys.argv[1:]:
    m = onnx.load(p)
    onnx.checker.check_model(m, full_check=True)
    m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    t = m.graph.output[0].type.tensor_type
    print(json.dumps({"path": p, "output": [d.dim_value for d in t.shape.dim]}))
`

// pythonCheck runs Debian's python3-onnx on the files and returns each
// one's output shape as onnx's own shape inference sees it.
func pythonCheck(t *testing.T, paths []string) map[string][]int64 {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import onnx").Run(); err != nil {
		if testing.Short() {
			t.Skipf("%s with onnx unavailable (%v); skipped in -short mode", py, err)
		}
		t.Fatalf("%s with onnx unavailable (%v): install Debian's python3-onnx (scripts/setup.sh)", py, err)
	}
	out, err := exec.Command(py, append([]string{"-c", checkScript}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python3-onnx check: %v\n%s", err, out)
	}
	shapes := map[string][]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Path   string
			Output []int64
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("python3-onnx check printed %q: %v", line, err)
		}
		shapes[r.Path] = r.Output
	}
	if len(shapes) != len(paths) {
		t.Fatalf("python3-onnx checked %d of %d files:\n%s", len(shapes), len(paths), out)
	}
	return shapes
}

// runFinite runs the model file in ONNX Runtime (level all) on seeded
// random inputs (ids in [0, 4)) and checks that the output is finite and
// not constant.
func runFinite(t *testing.T, name, path string) {
	t.Helper()
	runFiniteAt(t, name, path, "all")
}

// runFiniteAt is runFinite at an optimization level; it returns the
// output.
func runFiniteAt(t *testing.T, name, path, level string) []float64 {
	t.Helper()
	in, err := ort.RandomInputs(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ort.Run(path, in, ort.Options{Level: level, Threads: 1})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	y, err := res.Outputs["output"].Float64s()
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: output holds %v", name, v)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if !(hi > lo) {
		t.Errorf("%s: constant output %v", name, lo)
	}
	t.Logf("%-20s %-8s %8.1f ms  output %v in [%.3g, %.3g]", name, level, float64(res.RunTimes[0].Microseconds())/1000, res.Outputs["output"].Shape, lo, hi)
	return y
}

// TestVariantsCheckAndRun converts every Small model as the float16
// converter and quantize_dynamic write it (pipeline.BuildZoo's fp16 and
// dynquant): the graph verifies, shape inference infers every shape
// statically, python3-onnx's checker (full check, strict shape inference)
// accepts the export and infers the model's output shape, and ONNX Runtime
// runs it at levels disabled and all to a finite, non-constant output. The
// float16 models' outputs stay within 5% (of the output's largest
// magnitude) of the float32 model's at level disabled: the conversion
// rounds the weights and nothing else.
func TestVariantsCheckAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("checks and runs every zoo variant; skipped in -short mode")
	}
	dir := t.TempDir()
	var paths []string
	want := map[string][]int64{}
	for _, m := range zoo.Models() {
		for _, v := range append([]string{""}, zoo.Variants()...) {
			spec := m.Name
			if v != "" {
				spec += ":" + v
			}
			g, err := pipeline.BuildZoo(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(g); err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: spec}); err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			data, err := onnxexp.Export(g, onnxexp.Options{})
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			p := filepath.Join(dir, strings.ReplaceAll(spec, ":", "_")+".onnx")
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if v != "" {
				paths = append(paths, p)
				want[p] = outputShape(m.Name, m.Small)
			}
		}
	}
	for p, shape := range pythonCheck(t, paths) {
		if !slices.Equal(shape, want[p]) {
			t.Errorf("%s: onnx shape inference gives output %v, want %v", filepath.Base(p), shape, want[p])
		}
	}
	testmodels.RequireORT(t)
	for _, m := range zoo.Models() {
		f32 := runFiniteAt(t, m.Name, filepath.Join(dir, m.Name+".onnx"), "disabled")
		for _, v := range zoo.Variants() {
			spec := m.Name + ":" + v
			p := filepath.Join(dir, m.Name+"_"+v+".onnx")
			y := runFiniteAt(t, spec, p, "disabled")
			runFiniteAt(t, spec, p, "all")
			if v != "fp16" {
				continue
			}
			var scale, diff float64
			for i := range y {
				scale = max(scale, math.Abs(f32[i]))
				diff = max(diff, math.Abs(y[i]-f32[i]))
			}
			if diff > 0.05*scale {
				t.Errorf("%s: output differs from the float32 model's by up to %.3g, more than 5%% of its largest magnitude %.3g", spec, diff, scale)
			}
		}
	}
}

// TestSmallRunsInORT: every Small model runs in ONNX Runtime to a finite,
// non-constant output.
func TestSmallRunsInORT(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	for _, m := range zoo.Models() {
		_, data := export(t, m, m.Small)
		p := filepath.Join(dir, m.Name+".onnx")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		runFinite(t, m.Name, p)
	}
}

// TestDefaultRunsInORT runs the paper-size models and the deepest
// configurations in ONNX Runtime (about three minutes and 8 GB of memory); set
// REMAT_ZOO_DEFAULT_ORT=1 to run it.
func TestDefaultRunsInORT(t *testing.T) {
	if os.Getenv("REMAT_ZOO_DEFAULT_ORT") == "" {
		t.Skip("set REMAT_ZOO_DEFAULT_ORT=1 to run the paper-size models in ONNX Runtime")
	}
	testmodels.RequireORT(t)
	dir := t.TempDir()
	type run struct {
		name string
		c    zoo.Config
	}
	var runs []run
	for _, m := range zoo.Models() {
		runs = append(runs, run{m.Name, m.Default})
	}
	runs = append(runs,
		run{"resnet", zoo.Config{Batch: 1, Resolution: 224, Width: 1, Depth: 200, Classes: 1000}},
		run{"transformer_decoder", zoo.Config{Batch: 1, Resolution: 128, Width: 1, Depth: 48, Classes: 50257}},
		run{"transformer_encoder", zoo.Config{Batch: 1, Resolution: 128, Width: 1, Depth: 48, Classes: 30522}},
		run{"unet", zoo.Config{Batch: 1, Resolution: 256, Width: 0.25, Depth: 7, Classes: 2}},
	)
	for i, r := range runs {
		m, _ := zoo.Lookup(r.name)
		_, data := export(t, m, r.c)
		p := filepath.Join(dir, fmt.Sprintf("%d.onnx", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		data = nil
		runFinite(t, fmt.Sprintf("%s/%d", r.name, r.c.Depth), p)
		os.Remove(p)
	}
}
