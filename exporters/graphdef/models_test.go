package graphdef_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	exp "github.com/remat-compile/remat/exporters/graphdef"
	imp "github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/internal/tfpb"
	"google.golang.org/protobuf/proto"
)

// TestRealModelsUnchanged exports every real TensorFlow.js model as it was
// imported: model.json and the shards come out byte for byte.
func TestRealModelsUnchanged(t *testing.T) {
	for _, m := range testmodels.TFModels(t) {
		t.Run(m.Name, func(t *testing.T) {
			g, err := imp.ImportFile(m.Path, imp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "model.json")
			if err := exp.ExportFile(g, out, exp.Options{Source: m.Path}); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(m.Path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("model.json differs from the source (%d bytes, want %d)", len(got), len(want))
			}
			paths, _, _ := g.Ext.(*imp.ModelInfo).TFJSShards()
			for _, p := range paths {
				a, err := os.ReadFile(filepath.Join(filepath.Dir(m.Path), p))
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("shard %s differs from the source's", p)
				}
			}
		})
	}
}

// protocDecode checks that protoc decodes a written .pb as a
// tensorflow.GraphDef with our schema, and returns the text.
func protocDecode(t *testing.T, pb string) []byte {
	t.Helper()
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		if testing.Short() {
			t.Skip("protoc is not installed (Debian: protobuf-compiler); skipped in -short mode")
		}
		t.Fatal("protoc is not installed (Debian: protobuf-compiler), and the test decodes every .pb written with it")
	}
	in, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	schema, err := filepath.Abs("../../internal/tfpb/tfpb.proto")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(protoc, "--proto_path="+filepath.Dir(schema), "--decode=tensorflow.GraphDef", filepath.Base(schema))
	cmd.Stdin = in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	text, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("protoc --decode=tensorflow.GraphDef %s: %v\n%s", pb, err, stderr.Bytes())
	}
	return text
}

// TestRealModelsRoundTrip writes every real model as model.json, and as a
// .pb (which protoc decodes with our schema) that is read back and written
// as model.json again, and runs all three in TensorFlow.js on the same
// seeded inputs: the outputs are bitwise equal. The .pb written from the
// .pb is the same bytes, and its NodeDefs are the source's (Consts aside,
// whose values move between the manifest and the NodeDef).
func TestRealModelsRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the seven real models in TensorFlow.js; skipped in -short mode")
	}
	models := testmodels.TFModels(t)
	tfjsDir := testmodels.RequireTFJS(t)
	var jobs []tfjs.Options
	var names []string
	for _, m := range models {
		dir := t.TempDir()
		g, err := imp.ImportFile(m.Path, imp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		direct := filepath.Join(dir, "direct", "model.json")
		if err := os.MkdirAll(filepath.Dir(direct), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportFile(g, direct, exp.Options{Source: m.Path}); err != nil {
			t.Fatal(err)
		}
		pb := filepath.Join(dir, m.Name+".pb")
		if err := exp.ExportFile(g, pb, exp.Options{Source: m.Path}); err != nil {
			t.Fatal(err)
		}
		protocDecode(t, pb)
		g2, err := imp.ImportFile(pb, imp.Options{})
		if err != nil {
			t.Fatalf("%s: reading the .pb back: %v", m.Name, err)
		}
		pb2 := filepath.Join(dir, m.Name+"2.pb")
		if err := exp.ExportFile(g2, pb2, exp.Options{Source: pb}); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(pb)
		b, _ := os.ReadFile(pb2)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the .pb written from the .pb differs from it (%d and %d bytes)", m.Name, len(a), len(b))
		}
		sameNodes(t, m.Name, m.Path, pb)
		viaPB := filepath.Join(dir, "viapb", "model.json")
		if err := os.MkdirAll(filepath.Dir(viaPB), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportFile(g2, viaPB, exp.Options{Source: pb}); err != nil {
			t.Fatal(err)
		}
		inputs, err := tfjs.SeededInputs(m.Inputs, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The outputs by name: a .pb does not say which tensors are the
		// outputs, so the one read back returns its sinks in file order.
		var outs []string
		for _, v := range g.Outputs {
			outs = append(outs, v.Def.Name+":"+strconv.Itoa(v.Index))
		}
		for _, p := range []string{m.Path, direct, viaPB} {
			jobs = append(jobs, tfjs.Options{Dir: tfjsDir, Model: p, Inputs: inputs, Outputs: outs, Backend: tfjs.WASM})
			names = append(names, m.Name)
		}
	}
	res, err := tfjs.RunAll(context.Background(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(res); i += 3 {
		for k, what := range []string{"model.json written", "model.json via .pb"} {
			r := res[i+1+k]
			if len(r.Digests) == 0 || len(res[i].Digests) == 0 || r.Digests[0] != res[i].Digests[0] {
				t.Errorf("%s: %s: outputs differ from the source's in tfjs", names[i], what)
			}
		}
	}
}

// sameNodes checks that the .pb holds the source's NodeDefs: names, ops,
// inputs, devices and attributes, in order, except the value of Consts.
func sameNodes(t *testing.T, name, src, pb string) {
	t.Helper()
	g, err := imp.ImportFile(src, imp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	var got tfpb.GraphDef
	if err := proto.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := g.Ext.(*imp.ModelInfo).NumNodeDefs
	if len(got.Node) != want {
		t.Fatalf("%s: the .pb has %d NodeDefs, the source %d", name, len(got.Node), want)
	}
	byIndex := map[int]*tfpb.NodeDef{}
	collect := func(x any) {
		if ni, ok := x.(interface {
			TFNode() *tfpb.NodeDef
			TFIndex() int
		}); ok {
			byIndex[ni.TFIndex()] = ni.TFNode()
		}
	}
	for _, v := range g.Inputs {
		collect(v.Ext)
	}
	for _, v := range g.Params {
		collect(v.Ext)
	}
	for _, n := range g.Nodes {
		collect(n.Ext)
	}
	for i, nd := range got.Node {
		w := proto.Clone(byIndex[i]).(*tfpb.NodeDef)
		gn := proto.Clone(nd).(*tfpb.NodeDef)
		if w.Op == "Const" {
			delete(w.Attr, "value")
			delete(gn.Attr, "value")
		}
		if !proto.Equal(w, gn) {
			t.Errorf("%s: NodeDef %d differs:\n got %v\nwant %v", name, i, gn, w)
			return
		}
	}
}
