package tfjs_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	imp "github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	rt "github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/targets/tfjs"
	"google.golang.org/protobuf/proto"
)

// TestOrderRealModels predicts the order TensorFlow.js runs every real
// model in and compares it with compile().orderedNodes.
func TestOrderRealModels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real models in TensorFlow.js; skipped in -short mode")
	}
	models := testmodels.TFModels(t)
	dir := testmodels.RequireTFJS(t)
	var jobs []rt.Options
	var want [][]string
	for _, m := range models {
		g, err := imp.ImportFile(m.Path, imp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := gdexp.WrittenGraph(g, gdexp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		order, err := tfjs.Order(w)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		var names []string
		for _, p := range order {
			names = append(names, w.Nodes[p].Name)
		}
		want = append(want, names)
		in, err := rt.SeededInputs(m.Inputs, 1)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, rt.Options{Dir: dir, Model: m.Path, Inputs: in, Order: true})
	}
	res, err := rt.RunAll(context.Background(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !slices.Equal(r.OrderedNodes, want[i]) {
			first := 0
			for first < len(want[i]) && first < len(r.OrderedNodes) && want[i][first] == r.OrderedNodes[first] {
				first++
			}
			t.Errorf("%s: predicted order differs from tfjs's at position %d of %d (tfjs %d nodes)", models[i].Name, first, len(want[i]), len(r.OrderedNodes))
		}
	}
}

// TestOrderQuirks checks Order against TensorFlow.js on a graph made to
// exercise what the real models do not: node names that are JavaScript
// array indices (they enumerate first), control inputs on nodes and on a
// Const, a NoOp, a node read twice, a sink that is not requested (so not
// used), two inputs fed.
func TestOrderQuirks(t *testing.T) {
	dir := testmodels.RequireTFJS(t)
	nodes := []*tfpb.NodeDef{
		placeholder("y", 1, 4),
		placeholder("x", 1, 4),
		op("10", "Relu", "x"),
		op("2", "Sigmoid", "y"),
		op("7", "Tanh", "x"),
		f32Const("c", "^2"),
		op("a", "AddV2", "10", "2"),
		op("b", "Mul", "a", "c"),
		op("gate", "NoOp", "^10"),
		op("d", "Relu", "a", "^gate"),
		op("dead", "Exp", "d"),
		op("sq", "Mul", "b", "b"),
		op("e", "AddV2", "d", "sq"),
		op("0", "Identity", "e"),
		op("1", "Neg", "7"),
	}
	data, err := proto.Marshal(&tfpb.GraphDef{Node: nodes, Versions: &tfpb.VersionDef{}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := imp.Import(data, imp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.json")
	if err := gdexp.ExportFile(g, path, gdexp.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, outs := range [][]string{{"0", "1"}, {"1", "e"}, {"b"}} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := gdexp.ReadWritten(raw)
		if err != nil {
			t.Fatal(err)
		}
		w.Outputs = outs
		order, err := tfjs.Order(w)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, p := range order {
			want = append(want, w.Nodes[p].Name)
		}
		in, err := rt.SeededInputs([]rt.InputSpec{{Name: "x", DType: rt.Float32, Shape: []int64{1, 4}}, {Name: "y", DType: rt.Float32, Shape: []int64{1, 4}}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rt.Run(context.Background(), rt.Options{Dir: dir, Model: path, Inputs: in, Outputs: outs, Order: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.OrderedNodes, want) {
			t.Errorf("outputs %v: predicted %v\n tfjs ran %v", outs, want, r.OrderedNodes)
		}
	}
}

func placeholder(name string, dims ...int64) *tfpb.NodeDef {
	sp := &tfpb.TensorShapeProto{}
	for _, d := range dims {
		sp.Dim = append(sp.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
	}
	return &tfpb.NodeDef{Name: name, Op: "Placeholder", Attr: map[string]*tfpb.AttrValue{
		"dtype": {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType_DT_FLOAT}},
		"shape": {Value: &tfpb.AttrValue_Shape{Shape: sp}},
	}}
}

func op(name, kind string, inputs ...string) *tfpb.NodeDef {
	return &tfpb.NodeDef{Name: name, Op: kind, Input: inputs, Attr: map[string]*tfpb.AttrValue{
		"T": {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType_DT_FLOAT}},
	}}
}

func f32Const(name string, inputs ...string) *tfpb.NodeDef {
	return &tfpb.NodeDef{Name: name, Op: "Const", Input: inputs, Attr: map[string]*tfpb.AttrValue{
		"dtype": {Value: &tfpb.AttrValue_Type{Type: tfpb.DataType_DT_FLOAT}},
		"value": {Value: &tfpb.AttrValue_Tensor{Tensor: &tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: &tfpb.TensorShapeProto{}, FloatVal: []float32{0.5}}}},
	}}
}
