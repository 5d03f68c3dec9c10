package shapes_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
)

// tfjsDType is the type TensorFlow.js gives a tensor of TensorFlow type
// dt: it has float32, int32, bool, complex64 and string tensors only, and
// runs every other floating-point type as float32 and every integer type
// as int32.
func tfjsDType(dt ir.DType) tfjs.DType {
	switch {
	case dt == ir.Bool:
		return tfjs.Bool
	case dt == ir.String:
		return "string"
	case dt == ir.Complex64 || dt == ir.Complex128:
		return "complex64"
	case dt.IsFloat():
		return tfjs.Float32
	case dt.IsInt():
		return tfjs.Int32
	}
	return tfjs.DType("(" + dt.String() + ")")
}

// tfModelSpecs reads the manifest of the real TensorFlow.js models
// ($REMAT_TF_MODELS, else MANIFEST-tf.tsv in ~/.cache/remat-compile/models,
// where scripts/setup.sh fetches them). Missing, it skips under -short and
// fails otherwise.
func tfModelSpecs(t *testing.T) []pipeline.ModelSpec {
	t.Helper()
	p := os.Getenv("REMAT_TF_MODELS")
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("neither REMAT_TF_MODELS nor HOME is set")
		}
		p = filepath.Join(home, ".cache", "remat-compile", "models", "MANIFEST-tf.tsv")
	}
	if _, err := os.Stat(p); err != nil {
		if testing.Short() {
			t.Skipf("real TensorFlow.js models: %v (skipped in -short mode)", err)
		}
		t.Fatalf("real TensorFlow.js models: %v\nRun scripts/setup.sh, which fetches them and prints REMAT_TF_MODELS to export.", err)
	}
	specs, err := pipeline.ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// tfjsAgreement is one model's row of the agreement tables.
type tfjsAgreement struct {
	name                            string
	values, matching, dataDependent int
	unknown                         []string
	nodes, ops                      int
}

// agreeModel is a model to check against TensorFlow.js: its model.json and
// the inputs to feed (tfjs types and shapes; Infer gets the same shapes).
// Every size must be static, unless dynamic says the model has
// data-dependent sizes.
type agreeModel struct {
	name, path string
	inputs     []tfjs.InputSpec
	dynamic    bool
	// notInTFJS names values TensorFlow.js does not compute (outputs of
	// TensorFlow ops that its kernels leave out); they are not asked for.
	notInTFJS []string
}

// TestTFJSAgreement infers the types of every value of every real
// TensorFlow.js model (at the manifest's input shapes, with every size
// required static) and runs the model in TensorFlow.js 4.22 (wasm),
// asking for every value (every node's outputs, the weights and the feeds:
// tfjs.Options.ShapesOnly). Every value tfjs computes must have the
// inferred shape and, through tfjsDType, the inferred element type; a size
// left to the data (a data-dependent symbol) is reported with what tfjs
// computed on the seeded input, its other sizes and its type compared.
func TestTFJSAgreement(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real models in TensorFlow.js; skipped in -short mode")
	}
	specs := tfModelSpecs(t)
	dir := tfjsDirOrSkip(t)
	var models []agreeModel
	for _, m := range specs {
		am := agreeModel{name: m.Name, path: m.Source}
		for _, name := range slices.Sorted(maps.Keys(m.InputShapes)) {
			dt, ok := m.InputTypes[name]
			if !ok {
				dt = ir.Float32
			}
			am.inputs = append(am.inputs, tfjs.InputSpec{Name: name, DType: tfjsDType(dt), Shape: m.InputShapes[name]})
		}
		models = append(models, am)
	}
	t.Log(agreementTable(checkAgreement(t, dir, models)))
}

func tfjsDirOrSkip(t *testing.T) string {
	t.Helper()
	dir, err := tfjs.FromEnv()
	if err != nil {
		if testing.Short() {
			t.Skipf("TensorFlow.js: %v (skipped in -short mode)", err)
		}
		t.Fatal(err)
	}
	return dir
}

// checkAgreement imports and infers each model, runs them all in one
// TensorFlow.js process asking for every value's type, and compares.
func checkAgreement(t *testing.T, dir string, models []agreeModel) []tfjsAgreement {
	t.Helper()
	var jobs []tfjs.Options
	var graphs []*ir.Graph
	var names [][]*ir.Value
	var done []agreeModel
	for _, m := range models {
		g, err := graphdef.ImportFile(m.path, graphdef.Options{})
		if err != nil {
			t.Errorf("%s: %v", m.name, err)
			continue
		}
		opts := shapes.Options{InputShapes: map[string][]ir.Dim{}, RequireStatic: !m.dynamic, File: m.name}
		for _, in := range m.inputs {
			d := make([]ir.Dim, len(in.Shape))
			for i, n := range in.Shape {
				d[i] = ir.D(n)
			}
			opts.InputShapes[in.Name] = d
		}
		if err := shapes.Infer(g, opts); err != nil {
			t.Errorf("%s: %v", m.name, err)
			continue
		}
		feeds, err := tfjs.SeededInputs(m.inputs, 1)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		var vals []*ir.Value
		vals = append(vals, g.Inputs...)
		vals = append(vals, g.Params...)
		for _, n := range g.Nodes {
			for _, o := range n.Outputs {
				if o != nil && !slices.Contains(m.notInTFJS, o.Name) {
					vals = append(vals, o)
				}
			}
		}
		outs := make([]string, len(vals))
		for i, v := range vals {
			outs[i] = v.Name
		}
		jobs = append(jobs, tfjs.Options{Dir: dir, Model: m.path, Inputs: feeds, Outputs: outs, ShapesOnly: true})
		graphs = append(graphs, g)
		names = append(names, vals)
		done = append(done, m)
	}
	if len(jobs) == 0 {
		return nil
	}
	res, err := tfjs.RunAll(context.Background(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	var rows []tfjsAgreement
	for j, r := range res {
		row := tfjsAgreement{name: done[j].name, nodes: len(graphs[j].Nodes)}
		ops := map[string]bool{}
		for _, n := range graphs[j].Nodes {
			ops[n.Op] = true
		}
		row.ops = len(ops)
		if len(r.Outputs) != len(names[j]) {
			t.Errorf("%s: tfjs returned %d values for %d asked", row.name, len(r.Outputs), len(names[j]))
			continue
		}
		for i, v := range names[j] {
			got := r.Outputs[i]
			row.values++
			if got.Name != v.Name {
				t.Errorf("%s: value %d is %s in tfjs, %s here", row.name, i, got.Name, v.Name)
				continue
			}
			dd := false
			for _, d := range v.Type.Shape {
				dd = dd || shapes.IsDataDependent(d)
			}
			if dd {
				// The element type, the rank and the other sizes must still agree.
				row.dataDependent++
				ok := tfjsDType(v.Type.DType) == got.DType && len(v.Type.Shape) == len(got.Shape)
				for k := 0; ok && k < len(got.Shape); k++ {
					ok = !v.Type.Shape[k].Known() || v.Type.Shape[k].Size == got.Shape[k]
				}
				if !ok {
					t.Errorf("%s: %s (data-dependent): inferred %s, tfjs %s%v", row.name, v.Name, v.Type, got.DType, got.Shape)
				}
				t.Logf("%s: %s is data-dependent: inferred %s, tfjs computed %s%v on its input", row.name, v.Name, v.Type, got.DType, got.Shape)
				continue
			}
			if !v.Type.Static() || !v.Type.DType.Valid() {
				row.unknown = append(row.unknown, fmt.Sprintf("%s %s (tfjs %s%v)", v.Name, v.Type, got.DType, got.Shape))
				continue
			}
			want, _ := v.Type.Dims()
			if tfjsDType(v.Type.DType) != got.DType || !slices.Equal(want, got.Shape) {
				op := "input or weight"
				if v.Def != nil {
					op = v.Def.Op
				}
				t.Errorf("%s: %s (%s): inferred %s, tfjs %s%v", row.name, v.Name, op, v.Type, got.DType, got.Shape)
				continue
			}
			row.matching++
		}
		for _, u := range row.unknown {
			t.Errorf("%s: inference leaves %s unknown", row.name, u)
		}
		rows = append(rows, row)
	}
	return rows
}

// agreementTable formats the rows as a Markdown table.
func agreementTable(rows []tfjsAgreement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| model | nodes | op types | values checked | matching tfjs | data-dependent | unknown |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d |\n", r.name, r.nodes, r.ops, r.values, r.matching, r.dataDependent, len(r.unknown))
	}
	return b.String()
}
