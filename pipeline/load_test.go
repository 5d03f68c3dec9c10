package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// tinyGraphDef is x[1,4,4,2] → Shape → StridedSlice → Pack → Reshape →
// Relu: a TensorFlow graph whose output size is computed in the graph.
func tinyGraphDef() *tfpb.GraphDef {
	typ := func(dt tfpb.DataType) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: dt}} }
	i := func(v int64) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: v}} }
	i32 := func(name string, dims []int64, vals ...int32) *tfpb.NodeDef {
		shape := &tfpb.TensorShapeProto{}
		for _, d := range dims {
			shape.Dim = append(shape.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
		}
		return &tfpb.NodeDef{Name: name, Op: "Const", Attr: map[string]*tfpb.AttrValue{
			"dtype": typ(tfpb.DataType_DT_INT32),
			"value": {Value: &tfpb.AttrValue_Tensor{Tensor: &tfpb.TensorProto{Dtype: tfpb.DataType_DT_INT32, TensorShape: shape, IntVal: vals}}}}}
	}
	shape := &tfpb.TensorShapeProto{}
	for _, d := range []int64{1, 4, 4, 2} {
		shape.Dim = append(shape.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
	}
	f := typ(tfpb.DataType_DT_FLOAT)
	t32 := typ(tfpb.DataType_DT_INT32)
	return &tfpb.GraphDef{Versions: &tfpb.VersionDef{Producer: 1}, Node: []*tfpb.NodeDef{
		{Name: "x", Op: "Placeholder", Attr: map[string]*tfpb.AttrValue{"dtype": f, "shape": {Value: &tfpb.AttrValue_Shape{Shape: shape}}}},
		i32("b", []int64{1}, 0), i32("e", []int64{1}, 1), i32("s", []int64{1}, 1), i32("m1", nil, -1),
		{Name: "shape", Op: "Shape", Input: []string{"x"}, Attr: map[string]*tfpb.AttrValue{"T": f, "out_type": t32}},
		{Name: "n", Op: "StridedSlice", Input: []string{"shape", "b", "e", "s"}, Attr: map[string]*tfpb.AttrValue{"T": t32, "Index": t32, "shrink_axis_mask": i(1)}},
		{Name: "dims", Op: "Pack", Input: []string{"n", "m1"}, Attr: map[string]*tfpb.AttrValue{"T": t32, "N": i(2)}},
		{Name: "flat", Op: "Reshape", Input: []string{"x", "dims"}, Attr: map[string]*tfpb.AttrValue{"T": f, "Tshape": t32}},
		{Name: "y", Op: "Relu", Input: []string{"flat"}, Attr: map[string]*tfpb.AttrValue{"T": f}},
	}}
}

// TestLoadFormats: Load reads a binary GraphDef (.pb), a TensorFlow.js
// model.json, and a JSON model of any name (by its content) with the
// TensorFlow importer, and an ONNX file of any name with the ONNX one.
func TestLoadFormats(t *testing.T) {
	dir := t.TempDir()
	gd := tinyGraphDef()
	bin, err := proto.MarshalOptions{Deterministic: true}.Marshal(gd)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := protojson.Marshal(gd)
	if err != nil {
		t.Fatal(err)
	}
	js := []byte(`{"format": "graph-model", "modelTopology": ` + string(topo) + `, "weightsManifest": []}`)
	onnxData, err := os.ReadFile(filepath.Join("..", "testdata", "models", "unet_like.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"frozen.pb": bin, "model.json": js, "tiny.JSON": js, "tfjs-graph": append([]byte(" \n"), js...),
		"unet.onnx": onnxData, "unet-no-extension": onnxData,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range files {
		t.Run(name, func(t *testing.T) {
			m, err := Load(context.Background(), filepath.Join(dir, name), LoadOptions{RequireStatic: true})
			if err != nil {
				t.Fatal(err)
			}
			tf := !strings.HasPrefix(name, "unet")
			if got := m.Graph.Nodes[0].Domain == ir.TFDomain; got != tf {
				t.Fatalf("first node in domain %q; TensorFlow import %v, want %v", m.Graph.Nodes[0].Domain, got, tf)
			}
			if tf {
				if got := m.Graph.Outputs[0].Type.String(); got != "f32[1,32]" {
					t.Errorf("output y: %s, want f32[1,32] (the Reshape's size folded from Shape)", got)
				}
			}
			wantName := name
			if name == "model.json" {
				wantName = filepath.Join(filepath.Base(dir), name)
			}
			if m.Name != wantName {
				t.Errorf("Name %q, want %q", m.Name, wantName)
			}
		})
	}
	// A .pb that is not a GraphDef gets the TensorFlow importer's message.
	bad := filepath.Join(dir, "bad.pb")
	os.WriteFile(bad, []byte("\xff\xff\xff"), 0o644)
	if _, err := Load(context.Background(), bad, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "bad.pb") {
		t.Errorf("bad .pb: %v", err)
	}
}

// TestInspectTF: inspect on a TensorFlow graph reports the tfjs target's
// peak by default (in TensorFlow.js's order), the liveness peak when
// asked, and, asked for ONNX Runtime's model, the liveness peak with a
// note.
func TestInspectTF(t *testing.T) {
	dir := t.TempDir()
	topo, err := protojson.Marshal(tinyGraphDef())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.json")
	os.WriteFile(path, []byte(`{"modelTopology": `+string(topo)+`, "weightsManifest": []}`), 0o644)
	m, err := Load(context.Background(), path, LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "ort", "liveness"} {
		o := InspectOptions{Top: 3}
		if name != "" {
			if o.Target, err = LookupTarget(name); err != nil {
				t.Fatal(err)
			}
		}
		r, err := m.Inspect(o)
		if err != nil {
			t.Fatal(err)
		}
		want := "liveness"
		if name == "" {
			want = "tfjs"
		}
		if r.MemoryModel != want || (r.Note != "") != (name == "ort") {
			t.Errorf("target %q: memory model %s, note %q", name, r.MemoryModel, r.Note)
		}
		// flat and y are [1,32] float32: y is computed while flat lives.
		if r.PeakBytes != 256 {
			t.Errorf("target %q: peak %d, want 256", name, r.PeakBytes)
		}
	}
}

// TestInspectRealTFModels loads every real TensorFlow.js model of the
// manifest with every size static and inspects it.
func TestInspectRealTFModels(t *testing.T) {
	p := os.Getenv("REMAT_TF_MODELS")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "remat-compile", "models", "MANIFEST-tf.tsv")
	}
	if _, err := os.Stat(p); err != nil {
		if testing.Short() {
			t.Skipf("real TensorFlow.js models: %v (skipped in -short mode)", err)
		}
		t.Fatalf("real TensorFlow.js models: %v; run scripts/setup.sh and export REMAT_TF_MODELS", err)
	}
	specs, err := ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		m, err := Load(context.Background(), s.Source, s.LoadOptions(LoadOptions{RequireStatic: true}))
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		r, err := m.Inspect(InspectOptions{Top: 5})
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if r.MemoryModel != "tfjs" || r.Note != "" || r.PeakBytes <= 0 || len(r.LargestAtPeak) == 0 {
			t.Errorf("%s: %s peak %d, note %q, %d values at the peak", s.Name, r.MemoryModel, r.PeakBytes, r.Note, len(r.LargestAtPeak))
		}
		t.Logf("%s: %d nodes, peak %d B at %s (%s), activations %d B", s.Name, r.Nodes, r.PeakBytes, r.PeakNode, r.PeakOp, r.ActivationBytes)
	}
}

// TestTrainTFGraph: -train on a TensorFlow graph builds its training
// graph in TensorFlow ops (every node in the tf domain, the loss and one
// gradient per parameter as outputs); an op on a differentiable path
// without a TensorFlow gradient rule (Atan, in a TensorFlow.js model
// file) is a clear error naming the op and its node, and the graph is
// left as it was.
func TestTrainTFGraph(t *testing.T) {
	ctx := context.Background()
	m, err := Load(ctx, "zoo:vgg16:small:tf", LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	params := len(m.Graph.Params)
	if err := m.Train(ctx, autodiff.Options{}); err != nil {
		t.Fatal(err)
	}
	if m.Training == nil || !m.IsTF() {
		t.Fatalf("training %v, TensorFlow graph %v", m.Training, m.IsTF())
	}
	for _, n := range m.Graph.Nodes {
		if n.Domain != ir.TFDomain {
			t.Fatalf("node %s (%s) is in domain %q, not TensorFlow's", n.Name, n.Op, n.Domain)
		}
	}
	if got := len(m.Graph.Outputs); got < 2 || m.Graph.Outputs[0].Name != autodiff.LossName || !strings.HasSuffix(m.Graph.Outputs[1].Name, "_grad") {
		t.Errorf("outputs %v, want the loss then the gradients (%d parameters before)", m.Graph.Outputs, params)
	}
	// The same job gives the same bytes; with SGD the outputs are the
	// updated parameters, still in TensorFlow ops.
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		m, err := Load(ctx, "zoo:vgg16:small:tf", LoadOptions{RequireStatic: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Train(ctx, autodiff.Options{Optimizer: autodiff.Optimizer{Kind: autodiff.SGD, LR: 0.01}}); err != nil {
			t.Fatal(err)
		}
		for _, n := range m.Graph.Nodes {
			if n.Domain != ir.TFDomain {
				t.Fatalf("SGD: node %s (%s) is in domain %q", n.Name, n.Op, n.Domain)
			}
		}
		if o := m.Graph.Outputs[1].Name; !strings.HasSuffix(o, "_new") {
			t.Errorf("SGD: output %s, want <param>_new", o)
		}
		path := filepath.Join(dir, strconv.Itoa(i), "model.json")
		if err := m.Export(path, nil, false); err != nil {
			t.Fatal(err)
		}
		if files[i], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if string(files[0]) != string(files[1]) {
		t.Error("two builds of one training graph wrote different model.json files")
	}

	// A TensorFlow.js model with an op that has no TensorFlow rule (Atan)
	// after a convolution.
	g := ir.NewGraph("atan")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 4, 4, 3))
	wt := ir.Float32Tensor([]int64{1, 1, 3, 2}, 1, 2, 3, 4, 5, 6)
	wt.Name = "w"
	w := g.AddParam("w", wt.Type(), wt)
	conv := g.NewNode("Conv2D", ir.TFDomain, []*ir.Value{x, w}, []string{"conv"})
	conv.Name = "conv"
	for _, a := range []ir.Attr{ir.StringAttr("T", "DT_FLOAT"), ir.StringAttr("data_format", "NHWC"), ir.StringAttr("padding", "VALID"),
		ir.IntsAttr("strides", 1, 1, 1, 1), ir.IntsAttr("dilations", 1, 1, 1, 1)} {
		conv.SetAttr(a)
	}
	at := g.NewNode("Atan", ir.TFDomain, []*ir.Value{conv.Outputs[0]}, []string{"atan"})
	at.Name = "atan"
	at.SetAttr(ir.StringAttr("T", "DT_FLOAT"))
	g.AddOutput(at.Outputs[0])
	path := filepath.Join(t.TempDir(), "model.json")
	if err := gdexp.ExportFile(g, path, gdexp.Options{}); err != nil {
		t.Fatal(err)
	}
	m, err = Load(ctx, path, LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	nodes := len(m.Graph.Nodes)
	err = m.Train(ctx, autodiff.Options{})
	if err == nil {
		t.Fatal("Train accepted Atan on a differentiable path")
	}
	var ng *autodiff.NoGradientError
	if !errors.As(err, &ng) {
		t.Errorf("error is not a *autodiff.NoGradientError: %v", err)
	}
	for _, want := range []string{"-train on a TensorFlow graph", `node "atan" (tf.Atan): no gradient for tf.Atan`, "forward ops TensorFlow.js runs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if m.Training != nil || len(m.Graph.Nodes) != nodes {
		t.Errorf("the graph changed: %d nodes, had %d; training %v", len(m.Graph.Nodes), nodes, m.Training)
	}
}
