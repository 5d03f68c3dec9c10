package onnx_test

import (
	"bytes"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	onnx "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

func fuzzSeeds(t testing.TB) [][]byte {
	attrs := Model(Graph("attrs", []*onnxpb.NodeProto{
		Node("Constant", "c", nil, In("cv"), AttrTensor("value", &onnxpb.TensorProto{Name: Str("t"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT16)), Dims: []int64{2}, Int32Data: []int32{0x3c00, 1}})),
		Node("Cast", "cast", In("cv"), In("y"), AttrInt("to", 1), &onnxpb.AttributeProto{Name: Str("tp"), Type: onnxpb.AttributeProto_TYPE_PROTO.Enum(), Tp: VI("", onnxpb.TensorProto_FLOAT, 2).Type}),
	}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 2)}}))
	sparse := MLP()
	sparse.Graph.Initializer = sparse.Graph.Initializer[:1]
	sparse.Graph.SparseInitializer = []*onnxpb.SparseTensorProto{{Values: F32s("b", []int64{1}, 1), Indices: I64s("bi", []int64{1}, 2), Dims: []int64{3}}}
	var seeds [][]byte
	for _, m := range []*onnxpb.ModelProto{MLP(), IfModel(), chain(12, true), attrs, sparse} {
		b := Marshal(t, m)
		seeds = append(seeds, b, b[:len(b)/2], b[:len(b)-1], b[:7])
	}
	return seeds
}

// FuzzImport checks that Import never panics, that whatever it accepts is
// valid IR, and that an accepted model exports, re-imports, and exports to
// the same bytes again.
func FuzzImport(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	opts := onnx.Options{File: "fuzz.onnx", MaxSparseBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := onnx.Import(data, opts)
		if err != nil {
			if _, ok := err.(ir.ErrorList); !ok {
				t.Fatalf("Import error is %T, not an ir.ErrorList: %v", err, err)
			}
			return
		}
		if err := ir.Verify(g); err != nil {
			t.Fatalf("accepted graph fails Verify: %v", err)
		}
		out, err := exporter.Export(g, exporter.Options{})
		if err != nil {
			t.Fatalf("Export of an imported graph: %v", err)
		}
		g2, err := onnx.Import(out, opts)
		if err != nil {
			t.Fatalf("re-import of the export: %v", err)
		}
		if len(g2.Nodes) != len(g.Nodes) || len(g2.Params) != len(g.Params) || len(g2.Inputs) != len(g.Inputs) || len(g2.Outputs) != len(g.Outputs) {
			t.Fatalf("round trip changed the graph: %d/%d nodes, %d/%d params", len(g.Nodes), len(g2.Nodes), len(g.Params), len(g2.Params))
		}
		out2, err := exporter.Export(g2, exporter.Options{})
		if err != nil {
			t.Fatalf("second Export: %v", err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("export(import(export(m))) differs from export(m)")
		}
	})
}
