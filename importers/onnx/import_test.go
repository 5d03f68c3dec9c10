package onnx_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	onnx "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func mustImport(t testing.TB, m *onnxpb.ModelProto) *ir.Graph {
	t.Helper()
	g, err := onnx.Import(Marshal(t, m), onnx.Options{File: "model.onnx"})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return g
}

func findNode(g *ir.Graph, name string) *ir.Node {
	var found *ir.Node
	g.Walk(func(sg *ir.Graph) {
		for _, n := range sg.Nodes {
			if n.Name == name {
				found = n
			}
		}
	})
	return found
}

func names(vs []*ir.Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
		if v == nil {
			out[i] = "-"
		}
	}
	return out
}

func TestImportMLP(t *testing.T) {
	m := MLP()
	m.ProducerName = Str("pytorch")
	m.ProducerVersion = Str("2.1")
	m.DocString = Str("a model")
	m.ModelVersion = proto.Int64(7)
	m.MetadataProps = []*onnxpb.StringStringEntryProto{{Key: Str("k"), Value: Str("v")}}
	m.Graph.DocString = Str("the graph")
	m.Graph.Node[0].DocString = Str("matmul doc")
	g := mustImport(t, m)

	info, ok := g.Ext.(*onnx.ModelInfo)
	if !ok {
		t.Fatalf("root Ext = %T, want *onnx.ModelInfo", g.Ext)
	}
	if info.IRVersion != 8 || info.ProducerName != "pytorch" || info.ProducerVersion != "2.1" || info.Doc != "a model" || info.ModelVersion != 7 {
		t.Errorf("ModelInfo = %+v", info)
	}
	if !slices.Equal(info.MetadataProps, []onnx.Prop{{Key: "k", Value: "v"}}) {
		t.Errorf("MetadataProps = %v", info.MetadataProps)
	}
	if g.Name != "mlp" || g.Doc != "the graph" {
		t.Errorf("graph name/doc = %q/%q", g.Name, g.Doc)
	}
	if !slices.Equal(g.Opsets, []ir.Opset{{Domain: "", Version: 17}}) {
		t.Errorf("Opsets = %v", g.Opsets)
	}
	if got := names(g.Inputs); !slices.Equal(got, []string{"x"}) {
		t.Errorf("inputs = %v", got)
	}
	if got := names(g.Params); !slices.Equal(got, []string{"w", "b"}) {
		t.Errorf("params = %v", got)
	}
	if got := names(g.Outputs); !slices.Equal(got, []string{"y"}) {
		t.Errorf("outputs = %v", got)
	}
	var ops []string
	for _, n := range g.Nodes {
		ops = append(ops, n.Name+":"+n.Op)
	}
	if want := []string{"mm:MatMul", "add:Add", "relu:Relu"}; !slices.Equal(ops, want) {
		t.Errorf("nodes = %v, want %v", ops, want)
	}
	if g.Nodes[0].Doc != "matmul doc" {
		t.Errorf("node doc = %q", g.Nodes[0].Doc)
	}
	x := g.Inputs[0]
	if want := (ir.TensorType{DType: ir.Float32, Shape: []ir.Dim{ir.SymDim("batch"), ir.D(4)}}); !x.Type.Equal(want) {
		t.Errorf("x type = %v, want %v", x.Type, want)
	}
	h := g.Nodes[0].Outputs[0]
	if h.Type.String() != "f32[batch,3]" {
		t.Errorf("h type (from value_info) = %v", h.Type)
	}
	if hb := g.Nodes[1].Outputs[0]; hb.Type.DType != ir.Undefined {
		t.Errorf("hb has no declaration, type = %v, want undefined", hb.Type)
	}
	w := g.Params[0]
	if vals, _ := w.Data.Float64s(); !slices.Equal(vals, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) || w.Type.String() != "f32[4,3]" {
		t.Errorf("w = %v %v", w.Type, vals)
	}
}

// TestDTypes decodes every element type from raw_data and from its typed
// field, following the ONNX packing rules.
func TestDTypes(t *testing.T) {
	type tc struct {
		name  string
		tp    *onnxpb.TensorProto
		dtype ir.DType
		raw   []byte
		strs  []string
	}
	dt := func(d onnxpb.TensorProto_DataType) *int32 { return proto.Int32(int32(d)) }
	le32 := func(vs ...uint32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], v)
		}
		return b
	}
	le64 := func(vs ...uint64) []byte {
		b := make([]byte, 8*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	le16 := func(vs ...uint16) []byte {
		b := make([]byte, 2*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint16(b[2*i:], v)
		}
		return b
	}
	tests := []tc{
		{"float typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT), Dims: []int64{2}, FloatData: []float32{1.5, -2}}, ir.Float32, le32(math.Float32bits(1.5), math.Float32bits(-2)), nil},
		{"float raw", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT), Dims: []int64{1}, RawData: le32(math.Float32bits(3))}, ir.Float32, le32(math.Float32bits(3)), nil},
		{"double typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_DOUBLE), Dims: []int64{2}, DoubleData: []float64{0.25, 1e300}}, ir.Float64, le64(math.Float64bits(0.25), math.Float64bits(1e300)), nil},
		{"int64 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_INT64), Dims: []int64{3}, Int64Data: []int64{-1, 0, 1 << 40}}, ir.Int64, le64(math.MaxUint64, 0, 1<<40), nil},
		{"int32 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_INT32), Dims: []int64{2}, Int32Data: []int32{-2, 7}}, ir.Int32, le32(0xfffffffe, 7), nil},
		{"int16 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_INT16), Dims: []int64{2}, Int32Data: []int32{-2, 300}}, ir.Int16, le16(0xfffe, 300), nil},
		{"uint16 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_UINT16), Dims: []int64{1}, Int32Data: []int32{65535}}, ir.Uint16, le16(65535), nil},
		{"int8 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_INT8), Dims: []int64{3}, Int32Data: []int32{-128, -1, 127}}, ir.Int8, []byte{0x80, 0xff, 0x7f}, nil},
		{"uint8 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_UINT8), Dims: []int64{2}, Int32Data: []int32{0, 255}}, ir.Uint8, []byte{0, 255}, nil},
		{"uint8 raw", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_UINT8), Dims: []int64{2}, RawData: []byte{9, 8}}, ir.Uint8, []byte{9, 8}, nil},
		{"bool typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_BOOL), Dims: []int64{3}, Int32Data: []int32{1, 0, 1}}, ir.Bool, []byte{1, 0, 1}, nil},
		{"bool raw", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_BOOL), Dims: []int64{2}, RawData: []byte{0, 1}}, ir.Bool, []byte{0, 1}, nil},
		{"uint32 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_UINT32), Dims: []int64{2}, Uint64Data: []uint64{1, 0xffffffff}}, ir.Uint32, le32(1, 0xffffffff), nil},
		{"uint64 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_UINT64), Dims: []int64{1}, Uint64Data: []uint64{math.MaxUint64}}, ir.Uint64, le64(math.MaxUint64), nil},
		// float16 1.0 = 0x3c00, -2.0 = 0xc000, stored as bit patterns in int32_data.
		{"float16 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT16), Dims: []int64{2}, Int32Data: []int32{0x3c00, 0xc000}}, ir.Float16, le16(0x3c00, 0xc000), nil},
		{"float16 raw", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT16), Dims: []int64{1}, RawData: le16(0x7bff)}, ir.Float16, le16(0x7bff), nil},
		// bfloat16 1.0 = 0x3f80.
		{"bfloat16 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_BFLOAT16), Dims: []int64{2}, Int32Data: []int32{0x3f80, 0xbf80}}, ir.BFloat16, le16(0x3f80, 0xbf80), nil},
		{"float8e4m3fn typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT8E4M3FN), Dims: []int64{2}, Int32Data: []int32{0x38, 0xb8}}, ir.Float8E4M3FN, []byte{0x38, 0xb8}, nil},
		{"float8e4m3fnuz typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT8E4M3FNUZ), Dims: []int64{1}, Int32Data: []int32{0x40}}, ir.Float8E4M3FNUZ, []byte{0x40}, nil},
		{"float8e5m2 raw", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT8E5M2), Dims: []int64{1}, RawData: []byte{0x3c}}, ir.Float8E5M2, []byte{0x3c}, nil},
		{"float8e5m2fnuz typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT8E5M2FNUZ), Dims: []int64{1}, Int32Data: []int32{0x40}}, ir.Float8E5M2FNUZ, []byte{0x40}, nil},
		// 4-bit types: two elements per byte, the first in the low nibble;
		// int32_data holds one packed byte per value. [1, -1, 3] as int4 is
		// 0x1, 0xf, 0x3 → bytes 0xf1, 0x03.
		{"int4 typed odd", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_INT4), Dims: []int64{3}, Int32Data: []int32{0xf1, 0x03}}, ir.Int4, []byte{0xf1, 0x03}, nil},
		{"uint4 raw", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_UINT4), Dims: []int64{2, 2}, RawData: []byte{0x21, 0x43}}, ir.Uint4, []byte{0x21, 0x43}, nil},
		{"uint4 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_UINT4), Dims: []int64{4}, Int32Data: []int32{0x21, 0x43}}, ir.Uint4, []byte{0x21, 0x43}, nil},
		{"float4e2m1 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT4E2M1), Dims: []int64{1}, Int32Data: []int32{0x02}}, ir.Float4E2M1, []byte{0x02}, nil},
		{"complex64 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_COMPLEX64), Dims: []int64{1}, FloatData: []float32{1, -1}}, ir.Complex64, le32(math.Float32bits(1), math.Float32bits(-1)), nil},
		{"complex128 typed", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_COMPLEX128), Dims: []int64{1}, DoubleData: []float64{2, 3}}, ir.Complex128, le64(math.Float64bits(2), math.Float64bits(3)), nil},
		{"string", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_STRING), Dims: []int64{2}, StringData: [][]byte{[]byte("a"), []byte("\xff")}}, ir.String, nil, []string{"a", "\xff"}},
		{"scalar", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_INT64), Int64Data: []int64{5}}, ir.Int64, le64(5), nil},
		{"empty", &onnxpb.TensorProto{DataType: dt(onnxpb.TensorProto_FLOAT), Dims: []int64{0, 3}}, ir.Float32, []byte{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tp.Name = Str("c")
			m := Model(Graph("g", []*onnxpb.NodeProto{
				Node("Identity", "id", In("c"), In("y")),
			}, GraphParts{
				Outputs: []*onnxpb.ValueInfoProto{{Name: Str("y")}},
				Inits:   []*onnxpb.TensorProto{tt.tp},
			}))
			g := mustImport(t, m)
			tens := g.Params[0].Data
			if tens.DType != tt.dtype {
				t.Fatalf("dtype = %v, want %v", tens.DType, tt.dtype)
			}
			if tt.dtype == ir.String {
				var got []string
				for _, s := range tens.Strs {
					got = append(got, string(s))
				}
				if !slices.Equal(got, tt.strs) {
					t.Fatalf("strings = %q, want %q", got, tt.strs)
				}
				return
			}
			if !slices.Equal(tens.Raw, tt.raw) {
				t.Fatalf("Raw = % x, want % x", tens.Raw, tt.raw)
			}
			if err := tens.CheckSize(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tens.Shape, tt.tp.Dims) {
				t.Fatalf("shape = %v, want %v", tens.Shape, tt.tp.Dims)
			}
		})
	}
}

func TestFloat16Values(t *testing.T) {
	m := Model(Graph("g", []*onnxpb.NodeProto{Node("Identity", "id", In("c"), In("y"))}, GraphParts{
		Outputs: []*onnxpb.ValueInfoProto{{Name: Str("y")}},
		Inits: []*onnxpb.TensorProto{{Name: Str("c"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT16)), Dims: []int64{4},
			Int32Data: []int32{0x3c00, 0xc000, 0x3555, 0x0001}}},
	}))
	g := mustImport(t, m)
	got, ok := g.Params[0].Data.Float64s()
	want := []float64{1, -2, float64(float32(0.33325195)), float64(float32(5.9604645e-08))}
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("float16 values = %v, want %v", got, want)
	}
}

func TestUnsortedNodesAreSorted(t *testing.T) {
	m := MLP()
	slices.Reverse(m.Graph.Node)
	g := mustImport(t, m)
	var order []string
	for _, n := range g.Nodes {
		order = append(order, n.Name)
	}
	if want := []string{"mm", "add", "relu"}; !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
}

func TestSubgraphCaptures(t *testing.T) {
	g := mustImport(t, IfModel())
	outer := findNode(g, "if")
	inner := findNode(g, "inner_if")
	if outer == nil || inner == nil {
		t.Fatal("If nodes not found")
	}
	// The outer If reads a (then and else branches, and through the inner
	// If) and k (the inner then branch, two levels down).
	// c is read explicitly by the inner If, two levels down.
	if got := names(outer.Implicit); !slices.Equal(got, []string{"a", "k", "c"}) {
		t.Errorf("outer If implicit = %v, want [a k c]", got)
	}
	if got := names(inner.Implicit); !slices.Equal(got, []string{"a", "k"}) {
		t.Errorf("inner If implicit = %v, want [a k]", got)
	}
	// c is read explicitly by the inner If from two levels up.
	if got := names(inner.Inputs); !slices.Equal(got, []string{"c"}) {
		t.Errorf("inner If inputs = %v", got)
	}
	sub := outer.Attr("then_branch").Graph
	if sub == nil || sub.Parent != g || sub.Owner != outer || sub.Name != "then" {
		t.Fatalf("then_branch = %+v", sub)
	}
	if _, ok := sub.Ext.(*onnx.GraphInfo); !ok {
		t.Errorf("subgraph Ext = %T, want *onnx.GraphInfo", sub.Ext)
	}
	// Unsorted: the If before the Relu whose output it captures.
	m := IfModel()
	slices.Reverse(m.Graph.Node)
	g = mustImport(t, m)
	if g.Nodes[0].Op != "Relu" {
		t.Errorf("captured producer not moved first: %s first", g.Nodes[0].Op)
	}
}

// TestSiblingSubgraphsMayReuseNames: the two branches of an If each define
// a value "t", as ONNX allows; a subgraph may not redefine an outer name
// (TestBadInputs).
func TestSiblingSubgraphsMayReuseNames(t *testing.T) {
	then := Graph("then", []*onnxpb.NodeProto{Node("Neg", "neg", In("x"), In("t"))}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str("t")}}})
	els := Graph("else", []*onnxpb.NodeProto{Node("Abs", "abs", In("x"), In("t"))}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str("t")}}})
	m := Model(Graph("main", []*onnxpb.NodeProto{
		Node("If", "if", In("c"), In("y"), AttrGraph("then_branch", then), AttrGraph("else_branch", els)),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 4), VI("c", onnxpb.TensorProto_BOOL)},
		Outputs: []*onnxpb.ValueInfoProto{{Name: Str("y")}},
	}))
	g := mustImport(t, m)
	ifn := g.Nodes[0]
	t1 := ifn.Attr("then_branch").Graph.Outputs[0]
	t2 := ifn.Attr("else_branch").Graph.Outputs[0]
	if t1 == t2 || t1.Name != "t" || t2.Name != "t" || t1.Def.Op != "Neg" || t2.Def.Op != "Abs" {
		t.Fatalf("branch outputs %v (%s), %v (%s)", t1, t1.Def.Op, t2, t2.Def.Op)
	}
	if got := names(ifn.Implicit); !slices.Equal(got, []string{"x"}) {
		t.Errorf("implicit = %v, want [x]", got)
	}
}

func TestSubgraphLocalInitializerAndLoop(t *testing.T) {
	body := Graph("body", []*onnxpb.NodeProto{
		Node("Add", "acc", In("v_in", "step"), In("v_out")),
		Node("Identity", "cond_id", In("cond_in"), In("cond_out")),
	}, GraphParts{
		Inputs: []*onnxpb.ValueInfoProto{
			VI("iter", onnxpb.TensorProto_INT64), VI("cond_in", onnxpb.TensorProto_BOOL), VI("v_in", onnxpb.TensorProto_FLOAT, 2),
		},
		Outputs: []*onnxpb.ValueInfoProto{VI("cond_out", onnxpb.TensorProto_BOOL), VI("v_out", onnxpb.TensorProto_FLOAT, 2)},
		Inits:   []*onnxpb.TensorProto{F32s("step", []int64{2}, 1, 1)},
	})
	m := Model(Graph("loop", []*onnxpb.NodeProto{
		Node("Loop", "loop", In("n", "", "v0"), In("v"), AttrGraph("body", body)),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("n", onnxpb.TensorProto_INT64), VI("v0", onnxpb.TensorProto_FLOAT, 2)},
		Outputs: []*onnxpb.ValueInfoProto{VI("v", onnxpb.TensorProto_FLOAT, 2)},
	}))
	g := mustImport(t, m)
	loop := g.Nodes[0]
	if loop.Inputs[1] != nil || len(loop.Inputs) != 3 {
		t.Fatalf("loop inputs = %v, want [n - v0]", names(loop.Inputs))
	}
	b := loop.Attr("body").Graph
	if got := names(b.Params); !slices.Equal(got, []string{"step"}) {
		t.Errorf("body params = %v", got)
	}
	if len(loop.Implicit) != 0 {
		t.Errorf("loop implicit = %v, want none", names(loop.Implicit))
	}
}

func TestOptionalInputsAndOutputs(t *testing.T) {
	m := Model(Graph("g", []*onnxpb.NodeProto{
		Node("Clip", "clip", In("x", "", "hi"), In("y")),
		Node("Dropout", "drop", In("y"), In("z", "")),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 3), VI("hi", onnxpb.TensorProto_FLOAT)},
		Outputs: []*onnxpb.ValueInfoProto{VI("z", onnxpb.TensorProto_FLOAT, 3)},
	}))
	g := mustImport(t, m)
	clip, drop := g.Nodes[0], g.Nodes[1]
	if got := names(clip.Inputs); !slices.Equal(got, []string{"x", "-", "hi"}) {
		t.Errorf("Clip inputs = %v", got)
	}
	if got := names(drop.Outputs); !slices.Equal(got, []string{"z", "-"}) {
		t.Errorf("Dropout outputs = %v", got)
	}
}

func TestConstantNodes(t *testing.T) {
	m := Model(Graph("g", []*onnxpb.NodeProto{
		Node("Constant", "w", nil, In("wv"), AttrTensor("value", F32s("wt", []int64{2}, 1, 2))),
		Node("Constant", "s", nil, In("sv"), AttrFloat("value_float", 0.5)),
		Node("Constant", "shape", nil, In("shv"), AttrInts("value_ints", 1, 2)),
		Node("Mul", "mul", In("wv", "sv"), In("m")),
		Node("Reshape", "r", In("m", "shv"), In("y")),
	}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 1, 2)}}))
	g := mustImport(t, m)
	if len(g.Params) != 0 {
		t.Errorf("Constant nodes became params: %v", names(g.Params))
	}
	w := findNode(g, "w")
	a := w.Attr("value")
	if w.Op != "Constant" || a == nil || a.Kind != ir.AttrTensor || a.Tensor.Name != "wt" {
		t.Fatalf("Constant w attrs = %+v", w.Attrs)
	}
	if vals, _ := a.Tensor.Float64s(); !slices.Equal(vals, []float64{1, 2}) {
		t.Errorf("value = %v", vals)
	}
	if got := findNode(g, "s").AttrFloat("value_float", 0); got != 0.5 {
		t.Errorf("value_float = %v", got)
	}
	if got, _ := findNode(g, "shape").AttrInts("value_ints"); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("value_ints = %v", got)
	}
}

func TestCustomDomainAndOpaqueOps(t *testing.T) {
	n := Node("FusedThing", "f", In("x"), In("y", "aux"), AttrInt("alpha", 3))
	n.Domain = Str("com.example")
	n.Overload = Str("v2")
	m := Model(Graph("g", []*onnxpb.NodeProto{n, Node("NewOpFromTheFuture", "nf", In("y"), In("z"))}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 2)},
		Outputs: []*onnxpb.ValueInfoProto{VI("z", onnxpb.TensorProto_FLOAT, 2), VI("aux", onnxpb.TensorProto_INT64)},
	}), Opset("", 21), Opset("com.example", 1))
	g := mustImport(t, m)
	f := findNode(g, "f")
	if f.Op != "FusedThing" || f.Domain != "com.example" || f.OpName() != "com.example.FusedThing" || len(f.Outputs) != 2 {
		t.Fatalf("custom node = %s %s %d outputs", f.Op, f.Domain, len(f.Outputs))
	}
	if ni, ok := f.Ext.(*onnx.NodeInfo); !ok || ni.Overload != "v2" {
		t.Errorf("node Ext = %#v, want overload v2", f.Ext)
	}
	if !slices.Equal(g.Opsets, []ir.Opset{{Domain: "", Version: 21}, {Domain: "com.example", Version: 1}}) {
		t.Errorf("opsets = %v", g.Opsets)
	}
	if findNode(g, "nf").Info() != nil {
		t.Errorf("unknown op has an op table entry")
	}
}

func TestInputWithDefault(t *testing.T) {
	m := MLP()
	m.Graph.Input = append(m.Graph.Input, VI("b", onnxpb.TensorProto_FLOAT, 3))
	g := mustImport(t, m)
	if got := names(g.Inputs); !slices.Equal(got, []string{"x", "b"}) {
		t.Fatalf("inputs = %v", got)
	}
	if g.Inputs[1] != g.Params[1] || g.Inputs[1].Data == nil {
		t.Fatalf("b is not the same value as the initializer")
	}
}

func TestValueTypes(t *testing.T) {
	x := VI("x", onnxpb.TensorProto_FLOAT, "batch", nil, 3)
	x.Type.GetTensorType().Shape.Dim[0].Denotation = Str("DATA_BATCH")
	x.Type.Denotation = Str("TENSOR")
	seq := &onnxpb.ValueInfoProto{Name: Str("s"), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{
		ElemType: VI("", onnxpb.TensorProto_INT64, 2).Type}}}}
	mp := &onnxpb.ValueInfoProto{Name: Str("mp"), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_MapType{MapType: &onnxpb.TypeProto_Map{KeyType: proto.Int32(8), ValueType: VI("", onnxpb.TensorProto_FLOAT).Type}}}}
	unranked := &onnxpb.ValueInfoProto{Name: Str("u"), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(1)}}}}
	m := Model(Graph("g", []*onnxpb.NodeProto{
		Node("Identity", "a", In("x"), In("y")),
		Node("Identity", "b", In("s"), In("s2")),
		Node("Identity", "c", In("mp"), In("mp2")),
		Node("Identity", "d", In("u"), In("u2")),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{x, seq, mp, unranked},
		Outputs: []*onnxpb.ValueInfoProto{{Name: Str("y")}, {Name: Str("s2")}, {Name: Str("mp2")}, {Name: Str("u2")}},
	}))
	g := mustImport(t, m)
	want := []string{"f32[batch,?,3]", "seq<i64[2]>", "map<undef[*]>", "f32[*]"}
	for i, v := range g.Inputs {
		if v.Type.String() != want[i] {
			t.Errorf("input %s type = %v, want %s", v.Name, v.Type, want[i])
		}
	}
	gi := g.Ext.(*onnx.ModelInfo).GraphInfo
	decl := gi.Inputs[g.Inputs[0]]
	if decl.GetType().GetTensorType().GetShape().GetDim()[0].GetDenotation() != "DATA_BATCH" || decl.GetType().GetDenotation() != "TENSOR" {
		t.Errorf("denotations not kept: %v", decl)
	}
	if vi, ok := g.Inputs[0].Ext.(*onnx.ValueInfo); !ok || !vi.Type.Equal(g.Inputs[0].Type) {
		t.Errorf("value Ext = %#v", g.Inputs[0].Ext)
	}
}

func TestAttributeKinds(t *testing.T) {
	sparse := &onnxpb.SparseTensorProto{Values: F32s("sv", []int64{1}, 2), Indices: I64s("si", []int64{1}, 0), Dims: []int64{3}}
	attrs := []*onnxpb.AttributeProto{
		AttrInt("i", 3),
		AttrFloat("f", 1.5),
		{Name: Str("s"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte("hi")},
		{Name: Str("fs"), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: []float32{1, 2}},
		AttrInts("is", 4, 5),
		{Name: Str("ss"), Type: onnxpb.AttributeProto_STRINGS.Enum(), Strings: [][]byte{[]byte("a"), []byte("b")}},
		AttrTensor("t", F32s("tt", []int64{1}, 9)),
		{Name: Str("ts"), Type: onnxpb.AttributeProto_TENSORS.Enum(), Tensors: []*onnxpb.TensorProto{F32s("t1", nil, 1), I64s("t2", nil, 2)}},
		{Name: Str("sp"), Type: onnxpb.AttributeProto_SPARSE_TENSOR.Enum(), SparseTensor: sparse},
		{Name: Str("tp"), Type: onnxpb.AttributeProto_TYPE_PROTO.Enum(), Tp: VI("", onnxpb.TensorProto_FLOAT, 2).Type},
		{Name: Str("ref"), RefAttrName: Str("outer_alpha"), Type: onnxpb.AttributeProto_FLOAT.Enum()},
		{Name: Str("untyped"), I: proto.Int64(11)}, // IR version 1 style: no type field
		{Name: Str("doc"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(1), DocString: Str("documented")},
	}
	n := Node("Custom", "n", In("x"), In("y"), attrs...)
	n.Domain = Str("custom")
	m := Model(Graph("g", []*onnxpb.NodeProto{n}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 2)},
		Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 2)},
	}), Opset("", 17), Opset("custom", 1))
	g := mustImport(t, m)
	got := g.Nodes[0].Attrs
	wantKinds := []ir.AttrKind{ir.AttrInt, ir.AttrFloat, ir.AttrString, ir.AttrFloats, ir.AttrInts, ir.AttrStrings, ir.AttrTensor, ir.AttrTensors, ir.AttrOther, ir.AttrOther, ir.AttrOther, ir.AttrInt, ir.AttrInt}
	if len(got) != len(wantKinds) {
		t.Fatalf("%d attributes, want %d", len(got), len(wantKinds))
	}
	for i, a := range got {
		if a.Name != attrs[i].GetName() || a.Kind != wantKinds[i] {
			t.Errorf("attr %d = %s %v, want %s %v", i, a.Name, a.Kind, attrs[i].GetName(), wantKinds[i])
		}
		if a.Kind == ir.AttrOther {
			if ai, ok := a.Ext.(*onnx.AttrInfo); !ok || !proto.Equal(ai.Proto, attrs[i]) {
				t.Errorf("attr %s: Ext does not keep the proto", a.Name)
			}
		}
	}
	if got[11].Int != 11 || got[2].Str == nil || string(got[2].Str) != "hi" || got[12].Doc != "documented" {
		t.Errorf("values: untyped=%d s=%q doc=%q", got[11].Int, got[2].Str, got[12].Doc)
	}
}

func TestSparseInitializer(t *testing.T) {
	sp := &onnxpb.SparseTensorProto{
		Values:  F32s("w", []int64{2}, 5, 7),
		Indices: I64s("w_idx", []int64{2, 2}, 0, 1, 1, 2),
		Dims:    []int64{2, 3},
	}
	m := Model(Graph("g", []*onnxpb.NodeProto{Node("Add", "add", In("x", "w"), In("y"))}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 2, 3)},
		Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 2, 3)},
	}))
	m.Graph.SparseInitializer = []*onnxpb.SparseTensorProto{sp}
	g := mustImport(t, m)
	vals, _ := g.Params[0].Data.Float64s()
	if !slices.Equal(vals, []float64{0, 5, 0, 0, 0, 7}) {
		t.Fatalf("dense = %v", vals)
	}
	if ti := g.Params[0].Data.Ext.(*onnx.TensorInfo); ti.Sparse == nil {
		t.Fatalf("sparse form not kept")
	}
}

func TestTensorEncodingKept(t *testing.T) {
	m := Model(Graph("g", []*onnxpb.NodeProto{Node("Add", "add", In("a", "b"), In("y"))}, GraphParts{
		Outputs: []*onnxpb.ValueInfoProto{{Name: Str("y")}},
		Inits: []*onnxpb.TensorProto{
			{Name: Str("a"), DataType: proto.Int32(int32(onnxpb.TensorProto_INT32)), Dims: []int64{2}, Int32Data: []int32{1, 2}},
			{Name: Str("b"), DataType: proto.Int32(int32(onnxpb.TensorProto_INT32)), Dims: []int64{2}, RawData: make([]byte, 8)},
		},
	}))
	g := mustImport(t, m)
	a := g.Params[0].Data.Ext.(*onnx.TensorInfo)
	b := g.Params[1].Data.Ext.(*onnx.TensorInfo)
	if a.Encoding != onnx.EncInt32 || !slices.Equal(a.Int32Data, []int32{1, 2}) || b.Encoding != onnx.EncRaw {
		t.Fatalf("encodings = %v %v", a.Encoding, b.Encoding)
	}
}

// TestBadInputs feeds malformed and hostile models to Import: each must fail
// with a specific, positioned error, never panic.
func TestBadInputs(t *testing.T) {
	valid := func() *onnxpb.ModelProto { return MLP() }
	with := func(f func(m *onnxpb.ModelProto)) []byte {
		m := valid()
		f(m)
		return Marshal(t, m)
	}
	truncated := Marshal(t, valid())
	truncated = truncated[:len(truncated)/2]
	wrongWire := protowire.AppendTag(nil, 7, protowire.VarintType) // graph as a varint
	wrongWire = protowire.AppendVarint(wrongWire, 5)
	badUTF := protowire.AppendTag(nil, 1, protowire.BytesType) // ir_version as bytes
	badUTF = protowire.AppendBytes(badUTF, []byte("x"))
	deep := func(depth int) *onnxpb.ModelProto {
		g := Graph("leaf", []*onnxpb.NodeProto{Node("Identity", "leaf_id", In("x"), In("leaf_y"))}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str("leaf_y")}}})
		for i := range depth {
			out := fmt.Sprintf("y%d", i)
			eout := fmt.Sprintf("e%d", i)
			els := Graph(fmt.Sprintf("else%d", i), []*onnxpb.NodeProto{Node("Identity", eout, In("x"), In(eout))}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str(eout)}}})
			g = Graph(fmt.Sprintf("g%d", i), []*onnxpb.NodeProto{
				Node("If", fmt.Sprintf("if%d", i), In("c"), In(out), AttrGraph("then_branch", g), AttrGraph("else_branch", els)),
			}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str(out)}}})
		}
		g.Input = []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT), VI("c", onnxpb.TensorProto_BOOL)}
		return Model(g)
	}
	ifWith := func(thenNodes []*onnxpb.NodeProto, thenOut string, elseNodes []*onnxpb.NodeProto, elseOut string) []byte {
		then := Graph("then", thenNodes, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str(thenOut)}}})
		els := Graph("else", elseNodes, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str(elseOut)}}})
		return Marshal(t, Model(Graph("main", []*onnxpb.NodeProto{
			Node("Relu", "relu", In("x"), In("a")),
			Node("If", "if", In("c"), In("y"), AttrGraph("then_branch", then), AttrGraph("else_branch", els)),
		}, GraphParts{
			Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 4), VI("c", onnxpb.TensorProto_BOOL)},
			Outputs: []*onnxpb.ValueInfoProto{{Name: Str("y")}},
		})))
	}
	f32 := proto.Int32(int32(onnxpb.TensorProto_FLOAT))

	tests := []struct {
		name string
		data []byte
		opts onnx.Options
		want string
	}{
		{"garbage", []byte("\xff\xff\xff\xff garbage"), onnx.Options{}, "model.onnx: not a valid ONNX model"},
		{"truncated", truncated, onnx.Options{}, "not a valid ONNX model"},
		{"wrong wire type", wrongWire, onnx.Options{}, "model.onnx: not a valid ONNX model: graph: field 7 has wire type varint, the schema says length-delimited"},
		{"ir_version as bytes", badUTF, onnx.Options{}, "not a valid ONNX model: ir_version: field 1 has wire type length-delimited, the schema says varint"},
		{"nested wrong wire type", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[1].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1))
		}), onnx.Options{}, "not a valid ONNX model: graph.node[1].op_type: field 4 has wire type varint"},
		{"unknown enum value", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[1].Attribute = []*onnxpb.AttributeProto{{Name: Str("k")}}
			m.Graph.Node[1].Attribute[0].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 20, protowire.VarintType), 99))
		}), onnx.Options{}, `node "add" (Add): attribute "k" has unknown type 99`},
		{"unknown data location", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer[1].DataLocation = onnxpb.TensorProto_DataLocation(7).Enum()
		}), onnx.Options{}, `value "b": initializer: unknown data_location 7`},
		{"empty file", nil, onnx.Options{}, "model has no graph"},
		{"no graph", with(func(m *onnxpb.ModelProto) { m.Graph = nil }), onnx.Options{}, "model has no graph"},
		{"no default opset", with(func(m *onnxpb.ModelProto) { m.OpsetImport = []*onnxpb.OperatorSetIdProto{Opset("com.x", 1)} }), onnx.Options{}, `no opset_import for the default ONNX domain`},
		{"duplicate opset", with(func(m *onnxpb.ModelProto) { m.OpsetImport = append(m.OpsetImport, Opset("ai.onnx", 13)) }), onnx.Options{}, `lists domain "ai.onnx" twice`},
		{"opset version 0", with(func(m *onnxpb.ModelProto) { m.OpsetImport[0].Version = proto.Int64(0) }), onnx.Options{}, "opset versions start at 1"},
		{"empty graph", Marshal(t, Model(&onnxpb.GraphProto{Name: Str("empty")})), onnx.Options{}, `graph "empty" has no outputs`},
		{"empty op_type", with(func(m *onnxpb.ModelProto) { m.Graph.Node[1].OpType = Str("") }), onnx.Options{}, `model.onnx: node "add": node has no op_type`},
		{"dangling input", with(func(m *onnxpb.ModelProto) { m.Graph.Node[1].Input[1] = "nowhere" }), onnx.Options{}, `model.onnx: node "add" (Add): input 1 "nowhere" is not defined by any node, graph input or initializer in scope (dangling reference)`},
		{"two producers", with(func(m *onnxpb.ModelProto) { m.Graph.Node[2].Output[0] = "h" }), onnx.Options{}, `node "relu" (Relu): output "h" is also defined by node "mm" (MatMul) (two producers of one name)`},
		{"output shadows input", with(func(m *onnxpb.ModelProto) { m.Graph.Node[0].Output[0] = "x" }), onnx.Options{}, `output "x" is also defined by a graph input`},
		{"initializer twice", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer = append(m.Graph.Initializer, F32s("w", []int64{1}, 1))
		}), onnx.Options{}, `value "w": initializer "w" is also defined by an initializer`},
		{"cycle", with(func(m *onnxpb.ModelProto) { m.Graph.Node[0].Input[0] = "y" }), onnx.Options{}, `graph "mlp" has a cycle: nodes "mm" (MatMul), "add" (Add), "relu" (Relu) depend on each other`},
		{"self loop", with(func(m *onnxpb.ModelProto) { m.Graph.Node[2].Input[0] = "y" }), onnx.Options{}, `has a cycle: nodes "relu" (Relu)`},
		{"duplicate graph input", with(func(m *onnxpb.ModelProto) { m.Graph.Input = append(m.Graph.Input, VI("x", onnxpb.TensorProto_FLOAT)) }), onnx.Options{}, `value "x": graph "mlp" lists input "x" twice (duplicate graph input)`},
		{"input without name", with(func(m *onnxpb.ModelProto) { m.Graph.Input[0].Name = nil }), onnx.Options{}, `graph "mlp": input 0 has no name`},
		{"output without name", with(func(m *onnxpb.ModelProto) { m.Graph.Output[0].Name = Str("") }), onnx.Options{}, `graph "mlp": output 0 has no name`},
		{"undefined graph output", with(func(m *onnxpb.ModelProto) { m.Graph.Output[0].Name = Str("zz") }), onnx.Options{}, `value "zz": graph output "zz" is not defined`},
		{"initializer without name", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[0].Name = nil }), onnx.Options{}, `initializer 0 has no name`},
		{"negative tensor dim", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].Dims = []int64{-3} }), onnx.Options{}, `value "b": initializer: negative dimension -3 in dims [-3]`},
		{"overflowing dims", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].Dims = []int64{1 << 40, 1 << 40} }), onnx.Options{}, `value "b": initializer: dims [1099511627776 1099511627776] have more elements than can be stored`},
		{"raw size mismatch", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].RawData = make([]byte, 8) }), onnx.Options{}, `value "b": initializer: raw_data has 8 bytes, f32[3] needs 12`},
		{"huge dims small data", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].Dims = []int64{1 << 31, 1 << 30} }), onnx.Options{}, `value "b": initializer: dims [2147483648 1073741824] have more elements than can be stored`},
		{"typed count mismatch", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer[1] = &onnxpb.TensorProto{Name: Str("b"), DataType: f32, Dims: []int64{3}, FloatData: []float32{1, 2}}
		}), onnx.Options{}, `float_data has 2 values, f32[3] needs 3`},
		{"wrong typed field", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer[1] = &onnxpb.TensorProto{Name: Str("b"), DataType: f32, Dims: []int64{3}, Int64Data: []int64{1, 2, 3}}
		}), onnx.Options{}, `f32 tensor stores its data in int64_data; ONNX puts f32 elements in float_data or raw_data`},
		{"data in two fields", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].FloatData = []float32{1, 2, 3} }), onnx.Options{}, `holds its data in both raw_data and float_data`},
		{"unsupported dtype", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].DataType = proto.Int32(24) }), onnx.Options{}, `unsupported data type FLOAT8E8M0 (24)`},
		{"unknown dtype", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].DataType = proto.Int32(99) }), onnx.Options{}, `unsupported data type 99`},
		{"undefined dtype", with(func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].DataType = nil }), onnx.Options{}, `data type is UNDEFINED`},
		{"string in raw_data", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer[1].DataType = proto.Int32(int32(onnxpb.TensorProto_STRING))
		}), onnx.Options{}, `strings go in string_data`},
		{"segment", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer[1].Segment = &onnxpb.TensorProto_Segment{Begin: proto.Int64(0), End: proto.Int64(1)}
		}), onnx.Options{}, `segmented tensors`},
		{"external entries without location", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer[1].ExternalData = []*onnxpb.StringStringEntryProto{{Key: Str("location"), Value: Str("w.bin")}}
		}), onnx.Options{}, `data_location is not EXTERNAL`},
		{"external without base dir", with(func(m *onnxpb.ModelProto) { makeExternal(m.Graph.Initializer[1], "b.bin", 0, 12) }), onnx.Options{}, `value "b": initializer: external data: location "b.bin" is relative to the model's directory, which is unknown; use ImportFile or set Options.BaseDir`},
		{"external absolute", with(func(m *onnxpb.ModelProto) { makeExternal(m.Graph.Initializer[1], "/etc/passwd", 0, 12) }), onnx.Options{BaseDir: "."}, `location "/etc/passwd" is an absolute path`},
		{"external escape", with(func(m *onnxpb.ModelProto) { makeExternal(m.Graph.Initializer[1], "../../etc/passwd", 0, 12) }), onnx.Options{BaseDir: "."}, `location "../../etc/passwd" leaves the model's directory`},
		{"external bad offset", with(func(m *onnxpb.ModelProto) {
			makeExternal(m.Graph.Initializer[1], "b.bin", 0, 12)
			m.Graph.Initializer[1].ExternalData[1].Value = Str("-5")
		}), onnx.Options{BaseDir: "."}, `offset "-5" is not a non-negative integer`},
		{"negative value dim", with(func(m *onnxpb.ModelProto) {
			m.Graph.Input[0].Type.GetTensorType().Shape.Dim[1].Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: -4}
		}), onnx.Options{}, `value "x": graph input type: dimension 1 is negative (-4)`},
		{"overflowing value dims", with(func(m *onnxpb.ModelProto) { m.Graph.ValueInfo[0] = VI("h", onnxpb.TensorProto_FLOAT, 1<<40, 1<<40) }), onnx.Options{}, `value "h": value_info type: dimensions [1099511627776 1099511627776] have more elements than can be stored`},
		{"arity", with(func(m *onnxpb.ModelProto) { m.Graph.Node[1].Input = append(m.Graph.Node[1].Input, "x") }), onnx.Options{}, `node "add" (Add): has 3 inputs; Add takes exactly 2`},
		{"output arity", with(func(m *onnxpb.ModelProto) { m.Graph.Node[2].Output = append(m.Graph.Node[2].Output, "y2") }), onnx.Options{}, `node "relu" (Relu): has 2 outputs; Relu produces exactly 1`},
		{"domain not imported", with(func(m *onnxpb.ModelProto) { m.Graph.Node[2].Domain = Str("com.vendor") }), onnx.Options{}, `node "relu" (com.vendor.Relu): domain "com.vendor" is not imported`},
		{"attribute twice", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[2].Attribute = []*onnxpb.AttributeProto{AttrInt("k", 1), AttrInt("k", 2)}
		}), onnx.Options{}, `node "relu" (Relu): attribute "k" is given twice`},
		{"attribute without name", with(func(m *onnxpb.ModelProto) { m.Graph.Node[2].Attribute = []*onnxpb.AttributeProto{{I: proto.Int64(1)}} }), onnx.Options{}, `attribute 0 has no name`},
		{"attribute without value", with(func(m *onnxpb.ModelProto) { m.Graph.Node[2].Attribute = []*onnxpb.AttributeProto{{Name: Str("k")}} }), onnx.Options{}, `attribute "k" has no value (no type and no value field set)`},
		{"tensor attribute without tensor", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[2].Attribute = []*onnxpb.AttributeProto{{Name: Str("value"), Type: onnxpb.AttributeProto_TENSOR.Enum()}}
		}), onnx.Options{}, `attribute "value" is of type TENSOR but has no t value`},
		{"bad attribute tensor", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[2].Attribute = []*onnxpb.AttributeProto{AttrTensor("value", F32s("cv", []int64{5}, 1))}
		}), onnx.Options{}, `node "relu" (Relu): attribute "value": tensor "cv": raw_data has 4 bytes, f32[5] needs 20`},
		{"graph attribute without graph", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[2].Attribute = []*onnxpb.AttributeProto{{Name: Str("body"), Type: onnxpb.AttributeProto_GRAPH.Enum()}}
		}), onnx.Options{}, `attribute "body" is of type GRAPH but has no g value`},
		{"subgraph shadows outer name", ifWith([]*onnxpb.NodeProto{Node("Neg", "neg", In("a"), In("x"))}, "x", []*onnxpb.NodeProto{Node("Neg", "neg2", In("a"), In("e"))}, "e"), onnx.Options{}, `node "neg" (Neg): output "x" shadows the value of that name in enclosing graph "main"`},
		{"subgraph reads sibling's value", ifWith([]*onnxpb.NodeProto{Node("Neg", "neg", In("a"), In("t"))}, "t", []*onnxpb.NodeProto{Node("Abs", "abs", In("t"), In("e"))}, "e"), onnx.Options{}, `node "abs" (Abs): input 0 "t" is not defined by any node, graph input or initializer in scope (dangling reference)`},
		{"outer reads subgraph value", with(func(m *onnxpb.ModelProto) {
			then := Graph("then", []*onnxpb.NodeProto{Node("Neg", "neg", In("x"), In("inner"))}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str("inner")}}})
			m.Graph.Node = append(m.Graph.Node, Node("If", "if", In("x"), In("o"), AttrGraph("then_branch", then), AttrGraph("else_branch", then)))
			m.Graph.Node[2].Input[0] = "inner"
		}), onnx.Options{}, `node "relu" (Relu): input 0 "inner" is not defined by any node, graph input or initializer in scope`},
		{"subgraph reads its owner's output", ifWith([]*onnxpb.NodeProto{Node("Neg", "neg", In("y"), In("t"))}, "t", []*onnxpb.NodeProto{Node("Abs", "abs", In("a"), In("e"))}, "e"), onnx.Options{}, `has a cycle: nodes "if" (If)`},
		{"subgraphs too deep", Marshal(t, deep(120)), onnx.Options{}, "subgraphs are nested more than 100 deep"},
		{"sparse index out of range", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer = m.Graph.Initializer[:1]
			m.Graph.SparseInitializer = []*onnxpb.SparseTensorProto{{Values: F32s("b", []int64{1}, 1), Indices: I64s("bi", []int64{1}, 7), Dims: []int64{3}}}
		}), onnx.Options{}, `value "b": sparse initializer: sparse tensor: linear index 7 of value 0 is outside [0,3)`},
		{"sparse too large", with(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer = m.Graph.Initializer[:1]
			m.Graph.SparseInitializer = []*onnxpb.SparseTensorProto{{Values: F32s("b", []int64{1}, 1), Indices: I64s("bi", []int64{1}, 0), Dims: []int64{1 << 20, 1 << 20}}}
		}), onnx.Options{}, `dense form needs 4398046511104 bytes, more than the 1073741824-byte limit (Options.MaxSparseBytes)`},
	}
	if len(tests) < 25 {
		t.Fatalf("only %d bad inputs", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.File == "" {
				tt.opts.File = "model.onnx"
			}
			// Cases about library options, or about importing bytes without a
			// directory (the command always has one), stay out of the corpus.
			if *writeCorpus != "" && tt.opts.BaseDir == "" && tt.opts.MaxErrors == 0 && tt.opts.MaxSparseBytes == 0 && tt.name != "external without base dir" {
				addCorpus(t, tt.name, tt.data, tt.want)
			}
			g, err := onnx.Import(tt.data, tt.opts)
			if err == nil {
				t.Fatalf("Import succeeded (%d nodes), want an error containing %q", len(g.Nodes), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
			if strings.Contains(err.Error(), "internal") {
				t.Fatalf("input error reported as internal: %v", err)
			}
			var ie *ir.Error
			if !errors.As(err, &ie) {
				t.Fatalf("error %T is not an ir.ErrorList of *ir.Error", err)
			}
		})
	}
}

func makeExternal(tp *onnxpb.TensorProto, loc string, offset, length int) {
	tp.RawData = nil
	tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	tp.ExternalData = []*onnxpb.StringStringEntryProto{
		{Key: Str("location"), Value: Str(loc)},
		{Key: Str("offset"), Value: Str(fmt.Sprint(offset))},
		{Key: Str("length"), Value: Str(fmt.Sprint(length))},
	}
}

func TestErrorCap(t *testing.T) {
	var nodes []*onnxpb.NodeProto
	for i := range 300 {
		nodes = append(nodes, Node("Relu", fmt.Sprintf("n%d", i), In(fmt.Sprintf("missing%d", i)), In(fmt.Sprintf("o%d", i))))
	}
	m := Model(Graph("g", nodes, GraphParts{Outputs: []*onnxpb.ValueInfoProto{{Name: Str("o0")}}}))
	_, err := onnx.Import(Marshal(t, m), onnx.Options{MaxErrors: 20})
	var list ir.ErrorList
	if !errors.As(err, &list) || len(list) != 20 {
		t.Fatalf("got %d errors (%T), want 20", len(list), err)
	}
	if !strings.Contains(err.Error(), "too many errors (10 more)") {
		t.Errorf("error text lacks the cap notice:\n%v", err)
	}
}

// chain builds a model of n nodes: an MLP-like chain with side inputs, in
// reverse order when reversed is set.
func chain(n int, reversed bool) *onnxpb.ModelProto {
	nodes := make([]*onnxpb.NodeProto, 0, n)
	prev := "x"
	for i := range n {
		out := fmt.Sprintf("t%d", i)
		switch i % 3 {
		case 0:
			nodes = append(nodes, Node("Add", fmt.Sprintf("add%d", i), In(prev, "bias"), In(out)))
		case 1:
			nodes = append(nodes, Node("Relu", fmt.Sprintf("relu%d", i), In(prev), In(out)))
		default:
			nodes = append(nodes, Node("Mul", fmt.Sprintf("mul%d", i), In(prev, "x"), In(out)))
		}
		prev = out
	}
	if reversed {
		slices.Reverse(nodes)
	}
	return Model(Graph("chain", nodes, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, "batch", 16)},
		Outputs: []*onnxpb.ValueInfoProto{VI(prev, onnxpb.TensorProto_FLOAT, "batch", 16)},
		Inits:   []*onnxpb.TensorProto{F32s("bias", []int64{16}, make([]float32, 16)...)},
	}))
}

func TestLargeModel(t *testing.T) {
	g := mustImport(t, chain(10000, true))
	if len(g.Nodes) != 10000 || g.Nodes[0].Name != "add0" || g.Nodes[9999].Name != "add9999" {
		t.Fatalf("%d nodes, first %s, last %s", len(g.Nodes), g.Nodes[0].Name, g.Nodes[len(g.Nodes)-1].Name)
	}
}

// BenchmarkImport measures import time by model size (the target: a
// 10k-node model well under a second).
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{1000, 10000, 30000} {
		for _, rev := range []bool{false, true} {
			data := Marshal(b, chain(n, rev))
			b.Run(fmt.Sprintf("nodes=%d/reversed=%v", n, rev), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := onnx.Import(data, onnx.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// writeCorpus writes the bad-input table's files, with the error each must
// produce, for the command's tests (cmd/remat-compile), which check that
// every one exits with status 1 and that message:
//
//	go test ./importers/onnx -run TestBadInputs -write-corpus ../../testdata/bad
var writeCorpus = flag.String("write-corpus", "", "write the bad-input table as files into this `directory`")

func addCorpus(t *testing.T, name string, data []byte, want string) {
	t.Helper()
	file := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(name)) + ".onnx"
	if err := os.MkdirAll(*writeCorpus, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*writeCorpus, file), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The table's messages name the file "model.onnx"; the command names
	// the real file, so the expectation keeps only what follows.
	want = strings.TrimPrefix(want, "model.onnx: ")
	f, err := os.OpenFile(filepath.Join(*writeCorpus, "EXPECT.tsv"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%s\n", file, want)
}
