package testmodels

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
)

// TFModel is one real TensorFlow.js graph model of the manifest that
// ../shared/models/fetch-tf.sh writes.
type TFModel struct {
	Name string
	// Path is the model.json.
	Path string
	// Inputs are the inputs it runs with (the manifest's inputs column).
	Inputs []tfjs.InputSpec
}

// TFManifest returns the path of the manifest of the real TensorFlow.js
// models that ../shared/models/fetch-tf.sh writes: $REMAT_TF_MODELS
// (scripts/setup.sh prints it), else MANIFEST-tf.tsv under
// $REMAT_CACHE/models or ~/.cache/remat-compile/models. Missing, it skips
// under -short and fails otherwise.
func TFManifest(t testing.TB) string {
	t.Helper()
	p := os.Getenv("REMAT_TF_MODELS")
	if p == "" {
		dir := os.Getenv("REMAT_CACHE")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatalf("neither REMAT_TF_MODELS nor HOME is set")
			}
			dir = filepath.Join(home, ".cache", "remat-compile")
		}
		p = filepath.Join(dir, "models", "MANIFEST-tf.tsv")
	}
	if _, err := os.Stat(p); err != nil {
		if testing.Short() {
			t.Skipf("real TensorFlow.js models: %v (skipped in -short mode)", err)
		}
		t.Fatalf("real TensorFlow.js models: %v\nRun scripts/setup.sh, which fetches them with ../shared/models/fetch-tf.sh and prints REMAT_TF_MODELS to export.", err)
	}
	return p
}

// TFModels reads the manifest of the real TensorFlow.js models
// (TFManifest): name, model.json and the inputs column
// (tfjs.ParseInputSpecs). (pipeline.ReadManifest reads the same file for
// the pipeline; this package cannot import pipeline, whose dependencies'
// tests import it.)
func TFModels(t testing.TB) []TFModel {
	t.Helper()
	p := TFManifest(t)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []TFModel
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 || strings.TrimSpace(sc.Text()) == "" {
			continue // the header
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 5 {
			t.Fatalf("%s:%d: %d columns, want 5", p, line, len(cols))
		}
		specs, err := tfjs.ParseInputSpecs(cols[4])
		if err != nil {
			t.Fatalf("%s:%d: %v", p, line, err)
		}
		out = append(out, TFModel{Name: cols[0], Path: cols[1], Inputs: specs})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no models", p)
	}
	return out
}

// RequireTFJS returns the node_modules directory holding TensorFlow.js
// ($REMAT_TFJS_DIR) and checks that Node.js is on $PATH; when either is
// missing it skips under -short and fails otherwise.
func RequireTFJS(t testing.TB) string {
	t.Helper()
	dir, err := tfjs.FromEnv()
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		if testing.Short() {
			t.Skipf("TensorFlow.js unavailable (%v); skipped in -short mode", err)
		}
		t.Fatalf("TensorFlow.js unavailable (run scripts/setup.sh, or use -short to skip the tfjs tests): %v", err)
	}
	return dir
}

// TypesFromTFJS types every output of the nodes of g that ran in r (a
// TensorFlow.js run of the model g was imported from) as TensorFlow.js
// computed it (tfjs.Result.Executed): the tests of what follows shape
// inference check TensorFlow graphs on their own with it.
func TypesFromTFJS(g *ir.Graph, r *tfjs.Result) {
	byName := map[string]*ir.Node{}
	for _, n := range g.Nodes {
		byName[n.Name] = n
	}
	for _, e := range r.Executed {
		n := byName[e.Name]
		if n == nil {
			continue
		}
		for k, o := range e.Outputs {
			if k >= len(n.Outputs) || n.Outputs[k] == nil || o.Shape == nil {
				continue
			}
			dt := map[tfjs.DType]ir.DType{tfjs.Float32: ir.Float32, tfjs.Int32: ir.Int32, tfjs.Bool: ir.Bool}[o.DType]
			n.Outputs[k].Type = ir.TensorOf(dt, o.Shape...)
		}
	}
}
