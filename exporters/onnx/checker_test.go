package onnx_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
)

// checkerScript runs onnx.checker on every model path given and prints one
// line per model: "ok PATH" or "FAIL PATH: reason".
const checkerScript = `
import sys, onnx
for p in sys.argv[1:]:
    try:
        m = onnx.load(p)
        onnx.checker.check_model(m, full_check=False)
        print("ok", p)
    except Exception as e:
        print("FAIL", p + ":", str(e).replace("\n", " "))
`

func runChecker(t *testing.T, paths []string) {
	t.Helper()
	py := pythonONNX(t)
	out, err := exec.Command(py, append([]string{"-c", checkerScript}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ok ") {
			n++
		}
	}
	if n != len(paths) {
		t.Errorf("onnx.checker accepted %d of %d exported models:\n%s", n, len(paths), out)
	}
}

// TestCheckerAcceptsExports runs the reference checker (Debian's
// python3-onnx) on exported models: graphs that went through a round trip,
// graphs built with the IR's API, and external-data exports.
func TestCheckerAcceptsExports(t *testing.T) {
	pythonONNX(t)
	dir := t.TempDir()
	var paths []string
	models := map[string]*onnxpb.ModelProto{
		"mlp":      MLP(),
		"if":       IfModel(),
		"loop":     loopModel(),
		"sparse":   sparseModel(),
		"optional": roundTripModels()[7].m,
		"const":    roundTripModels()[8].m,
	}
	for name, m := range models {
		g := mustImport(t, Marshal(t, m))
		p := filepath.Join(dir, name+".onnx")
		if err := exporter.ExportFile(g, p, exporter.Options{ValueInfo: true}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	p := filepath.Join(dir, "new.onnx")
	if err := exporter.ExportFile(newGraph(), p, exporter.Options{ValueInfo: true}); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, p)

	src := externalSource(t, t.TempDir())
	g := importFile(t, src)
	p = filepath.Join(dir, "ext", "external.onnx")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := exporter.ExportFile(g, p, exporter.Options{}); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, p)
	runChecker(t, paths)
}

// TestRealModels round-trips the third-party models that
// /work/shared/models/fetch.sh caches, when they are present: the IR must
// survive, export must be a fixed point, and the checker must accept the
// exports.
func TestRealModels(t *testing.T) {
	// scripts/setup.sh exports REMAT_MODELS, the manifest that fetch.sh
	// writes next to the models; without it, look in fetch.sh's default
	// cache.
	var cache string
	if m := os.Getenv("REMAT_MODELS"); m != "" {
		cache = filepath.Dir(m)
	} else {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "remat-real-models")
		if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
			cache = filepath.Join(x, "remat-real-models")
		}
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.onnx"))
	if len(files) == 0 {
		t.Skipf("no models in %s; run scripts/setup.sh (or ../shared/models/fetch.sh) to fetch them", cache)
	}
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			g := importFile(t, f)
			out := mustExport(t, g, exporter.Options{})
			g2 := mustImport(t, out)
			if d1, d2 := dump(g), dump(g2); d1 != d2 {
				t.Errorf("IR differs after the round trip")
			}
			if out2 := mustExport(t, g2, exporter.Options{}); !bytes.Equal(out, out2) {
				t.Errorf("export is not a fixed point")
			}
			// Same nodes in the same order, same initializers.
			src := Unmarshal(t, readFile(t, f))
			exp := Unmarshal(t, out)
			if a, b := nodeKeys(src.Graph), nodeKeys(exp.Graph); a != b {
				t.Errorf("node lists differ")
			}
			p := filepath.Join(dir, name)
			writeFile(t, p, out)
			paths = append(paths, p)
		})
	}
	runChecker(t, paths)
}

func nodeKeys(g *onnxpb.GraphProto) string {
	var b strings.Builder
	for _, n := range g.GetNode() {
		fmt.Fprintf(&b, "%s %s %s %v %v %d\n", n.GetName(), n.GetDomain(), n.GetOpType(), n.GetInput(), n.GetOutput(), len(n.GetAttribute()))
	}
	for _, tp := range g.GetInitializer() {
		fmt.Fprintf(&b, "%s %v %d %d\n", tp.GetName(), tp.GetDims(), len(tp.GetRawData()), len(tp.GetFloatData()))
	}
	return b.String()
}
