package graphdef_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
)

// checkImported is what the fuzz tests require of an import: an
// ir.ErrorList on failure, else a graph that verifies and whose text form
// parses back to the same text.
func checkImported(t *testing.T, g *ir.Graph, err error) {
	if err != nil {
		var el ir.ErrorList
		if !errors.As(err, &el) {
			t.Fatalf("Import error is %T, not an ir.ErrorList: %v", err, err)
		}
		return
	}
	if err := ir.Verify(g); err != nil {
		t.Fatalf("accepted graph fails Verify: %v", err)
	}
	var b strings.Builder
	if err := irtext.Print(&b, g); err != nil {
		t.Fatalf("Print of an imported graph: %v", err)
	}
	g2, err := irtext.Parse("imported", b.String())
	if err != nil {
		t.Fatalf("the imported graph's text does not parse: %v\n%s", err, b.String())
	}
	if irtext.Format(g2) != b.String() {
		t.Fatalf("the imported graph's text changes on a round trip")
	}
}

func graphDefSeeds(t testing.TB) [][]byte {
	x := placeholder("x", 1, 4)
	graphs := [][]*tfpb.NodeDef{
		{x, unary("r", "Relu", "x")},
		{x, i32Const("ax", nil, 1), with(node("s", "Split", "ax", "x"), "num_split", intAttr(2)), node("g", "NoOp", "^s"), node("a", "AddV2", "s", "s:1", "^g"), f32Const("c", []int64{3}, 0.5)},
		{x, node("custom", "Frobnicate", "x"), unary("r", "Relu", "custom:3"), constOf("h", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_HALF, TensorShape: shapeProto(2), HalfVal: []int32{0x3c00}})},
	}
	var seeds [][]byte
	for _, nodes := range graphs {
		b := pb(t, nodes...)
		seeds = append(seeds, b, b[:len(b)/2], b[:len(b)-1])
	}
	return seeds
}

// FuzzImportGraphDef checks that Import never panics on a binary GraphDef
// and that whatever it accepts is valid IR.
func FuzzImportGraphDef(f *testing.F) {
	for _, s := range graphDefSeeds(f) {
		f.Add(s)
	}
	opts := graphdef.Options{File: "fuzz.pb", Format: graphdef.FormatGraphDef, MaxTensorBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := graphdef.Import(data, opts)
		checkImported(t, g, err)
	})
}

// FuzzImportModelJSON checks that Import never panics on a TensorFlow.js
// model.json (with the shard of testdata/tiny) and that whatever it accepts
// is valid IR.
func FuzzImportModelJSON(f *testing.F) {
	tiny, err := os.ReadFile("testdata/tiny/model.json")
	if err != nil {
		f.Fatal(err)
	}
	shard, err := os.ReadFile("testdata/tiny/tiny.bin")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tiny)
	f.Add(tiny[:len(tiny)/2])
	f.Add([]byte(strings.Replace(string(tiny), `"float16"`, `"uint8", "min": -1, "scale": 0.5`, 1)))
	f.Add([]byte(strings.Replace(string(tiny), `"format": "graph-model",`, `"signature": {"outputs": {"0": {"name": "out2"}, "a": {"name": "split:2"}}},`, 1)))
	f.Add(modelJSON(f, []*tfpb.NodeDef{placeholder("x", 2), stripped("s", tfpb.DataType_DT_STRING, 2)},
		[]group{{Paths: []string{"tiny.bin"}, Weights: []weight{{Name: "s", Shape: []int64{2}, DType: "string"}}}}))
	opts := graphdef.Options{File: "fuzz.json", Format: graphdef.FormatTFJS, Shards: map[string][]byte{"tiny.bin": shard},
		MaxTensorBytes: 1 << 20, MaxShardBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := graphdef.Import(data, opts)
		checkImported(t, g, err)
	})
}
