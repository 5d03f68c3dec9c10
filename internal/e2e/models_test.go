package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
)

// modelCase is one model file with the input shapes and fixed input values
// it runs with.
type modelCase struct {
	name     string
	path     string
	shapes   map[string][]int64 // concrete input shapes
	fixed    map[string]ort.Tensor
	external bool // written by others (not by our zoo)
}

func (c modelCase) inputShapes() map[string][]ir.Dim {
	m := map[string][]ir.Dim{}
	for k, s := range c.shapes {
		d := make([]ir.Dim, len(s))
		for i, n := range s {
			d[i] = ir.D(n)
		}
		m[k] = d
	}
	return m
}

var (
	zooOnce  sync.Once
	zooDir   string
	zooCases []modelCase
	zooErr   error
)

// zooModels exports every zoo model's Small configuration once per test
// binary, with shapes inferred so that the files are complete ONNX.
func zooModels(t *testing.T) []modelCase {
	t.Helper()
	zooOnce.Do(func() {
		zooDir, zooErr = os.MkdirTemp("", "remat-e2e-zoo-")
		if zooErr != nil {
			return
		}
		for _, m := range zoo.Models() {
			g, err := m.Build(m.Small)
			if err != nil {
				zooErr = fmt.Errorf("zoo %s: %w", m.Name, err)
				return
			}
			if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: m.Name}); err != nil {
				zooErr = fmt.Errorf("zoo %s: shapes: %w", m.Name, err)
				return
			}
			p := filepath.Join(zooDir, m.Name+".onnx")
			if err := onnxexp.ExportFile(g, p, onnxexp.Options{}); err != nil {
				zooErr = fmt.Errorf("zoo %s: export: %w", m.Name, err)
				return
			}
			c := modelCase{name: "zoo/" + m.Name, path: p, shapes: map[string][]int64{}}
			for _, in := range g.Inputs {
				dims, _ := in.Type.Dims()
				c.shapes[in.Name] = dims
			}
			zooCases = append(zooCases, c)
		}
	})
	if zooErr != nil {
		t.Fatal(zooErr)
	}
	return zooCases
}

// realModels reads the manifest written by ../shared/models/fetch.sh
// (scripts/setup.sh exports its path as REMAT_MODELS).
func realModels(t *testing.T) []modelCase {
	t.Helper()
	manifest := os.Getenv("REMAT_MODELS")
	if manifest == "" {
		if testing.Short() {
			t.Skip("REMAT_MODELS not set (run scripts/setup.sh); skipped in -short mode")
		}
		t.Fatal("REMAT_MODELS is not set: run the tests through scripts/test.sh, which fetches the real models of ../shared/models")
	}
	specs, err := pipeline.ReadManifest(manifest)
	if err != nil {
		t.Fatalf("real-model manifest: %v", err)
	}
	var cases []modelCase
	for _, s := range specs {
		c := modelCase{name: "real/" + s.Name, path: s.Source, shapes: s.InputShapes, fixed: map[string]ort.Tensor{}, external: true}
		for name, v := range s.InputValues {
			if c.fixed[name], err = ort.Filled("int64", s.InputShapes[name], v); err != nil {
				t.Fatalf("manifest %s: input %s: %v", s.Name, name, err)
			}
		}
		cases = append(cases, c)
	}
	if len(cases) < 5 {
		t.Fatalf("manifest %s lists %d models, want the 5 of ../shared/models", manifest, len(cases))
	}
	return cases
}

func allModels(t *testing.T) []modelCase {
	all := append(zooModels(t), realModels(t)...)
	if !testing.Short() {
		return all
	}
	// -short: the zoo's small models and the two smallest real models (the
	// full run covers every real model).
	var some []modelCase
	for _, c := range all {
		if !c.external || c.name == "real/oww_embedding" || c.name == "real/ppocr_mobile_v2_cls" {
			some = append(some, c)
		}
	}
	return some
}

// inputsFor draws the seeded inputs of a case and applies its fixed ones.
func inputsFor(t *testing.T, c modelCase, seed uint64) map[string]ort.Tensor {
	t.Helper()
	in, err := ort.RandomInputs(c.path, seed, c.shapes)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range c.fixed {
		in[k] = v
	}
	return in
}

// convert is what `remat-compile convert` does: import, infer shapes,
// export. It returns the graph and the path written.
func convert(t *testing.T, c modelCase, valueInfo bool) (*ir.Graph, string) {
	t.Helper()
	g, err := onnximp.ImportFile(c.path, onnximp.Options{})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if err := ir.Verify(g); err != nil {
		t.Fatalf("imported graph fails Verify: %v", err)
	}
	if err := shapes.Infer(g, shapes.Options{InputShapes: c.inputShapes(), RequireStatic: true, File: filepath.Base(c.path)}); err != nil {
		t.Fatalf("shape inference: %v", err)
	}
	out := filepath.Join(t.TempDir(), "converted.onnx")
	if err := onnxexp.ExportFile(g, out, onnxexp.Options{ValueInfo: valueInfo, Source: c.path}); err != nil {
		t.Fatalf("export: %v", err)
	}
	return g, out
}

// python returns Debian's python3 with the onnx module.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import onnx").Run() == nil {
			return p
		}
	}
	if testing.Short() {
		t.Skip("python3 with onnx not installed; skipped in -short mode")
	}
	t.Fatal("python3 with the onnx module is missing: apt-get install python3-onnx (scripts/setup.sh does)")
	return ""
}
