package testmodels

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/pipeline"
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
// (TFManifest, pipeline.ReadManifest), inputs in name order.
func TFModels(t testing.TB) []TFModel {
	t.Helper()
	specs, err := pipeline.ReadManifest(TFManifest(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) == 0 {
		t.Fatalf("%s lists no models", TFManifest(t))
	}
	var out []TFModel
	for _, s := range specs {
		m := TFModel{Name: s.Name, Path: s.Source}
		for _, name := range slices.Sorted(maps.Keys(s.InputShapes)) {
			dt := tfjs.Float32
			switch s.InputTypes[name] {
			case ir.Int32, ir.Int64:
				dt = tfjs.Int32
			case ir.Bool:
				dt = tfjs.Bool
			}
			m.Inputs = append(m.Inputs, tfjs.InputSpec{Name: name, DType: dt, Shape: s.InputShapes[name]})
		}
		out = append(out, m)
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
