package onnx_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func loopModel() *onnxpb.ModelProto {
	body := Graph("body", []*onnxpb.NodeProto{
		Node("Add", "acc", In("v_in", "step"), In("v_out")),
		Node("Identity", "cond_id", In("cond_in"), In("cond_out")),
		Node("Mul", "scan", In("v_out", "scale"), In("scan_out")),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("iter", onnxpb.TensorProto_INT64), VI("cond_in", onnxpb.TensorProto_BOOL), VI("v_in", onnxpb.TensorProto_FLOAT, 2)},
		Outputs: []*onnxpb.ValueInfoProto{VI("cond_out", onnxpb.TensorProto_BOOL), VI("v_out", onnxpb.TensorProto_FLOAT, 2), VI("scan_out", onnxpb.TensorProto_FLOAT, 2)},
		Inits:   []*onnxpb.TensorProto{F32s("step", []int64{2}, 1, 1)},
	})
	return Model(Graph("loop", []*onnxpb.NodeProto{
		Node("Loop", "loop", In("n", "", "v0"), In("v", "scans"), AttrGraph("body", body)),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("n", onnxpb.TensorProto_INT64), VI("v0", onnxpb.TensorProto_FLOAT, 2), VI("scale", onnxpb.TensorProto_FLOAT)},
		Outputs: []*onnxpb.ValueInfoProto{VI("v", onnxpb.TensorProto_FLOAT, 2), VI("scans", onnxpb.TensorProto_FLOAT, nil, 2)},
	}))
}

// everything exercises what the IR does not model and the importer keeps in
// Ext.
func everything() *onnxpb.ModelProto {
	m := MLP()
	m.ProducerName = Str("pytorch")
	m.ProducerVersion = Str("2.1.0")
	m.Domain = Str("org.example")
	m.ModelVersion = proto.Int64(3)
	m.DocString = Str("model doc")
	m.MetadataProps = []*onnxpb.StringStringEntryProto{{Key: Str("author"), Value: Str("me")}, {Key: Str("license"), Value: Str("MIT")}}
	m.Functions = []*onnxpb.FunctionProto{{Name: Str("MyRelu"), Domain: Str("local"), Input: []string{"a"}, Output: []string{"b"},
		Node: []*onnxpb.NodeProto{Node("Relu", "", In("a"), In("b"))}, OpsetImport: []*onnxpb.OperatorSetIdProto{Opset("", 17)}}}
	m.TrainingInfo = []*onnxpb.TrainingInfoProto{{UpdateBinding: []*onnxpb.StringStringEntryProto{{Key: Str("w"), Value: Str("w_new")}}}}
	m.Configuration = []*onnxpb.DeviceConfigurationProto{{Name: Str("cfg"), NumDevices: proto.Int32(2)}}
	m.OpsetImport = append(m.OpsetImport, Opset("local", 1), Opset("com.vendor", 2))
	m.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 99, protowire.BytesType), "future model field"))

	g := m.Graph
	g.DocString = Str("graph doc")
	g.MetadataProps = []*onnxpb.StringStringEntryProto{{Key: Str("gk"), Value: Str("gv")}}
	g.QuantizationAnnotation = []*onnxpb.TensorAnnotation{{TensorName: Str("h"), QuantParameterTensorNames: []*onnxpb.StringStringEntryProto{{Key: Str("SCALE_TENSOR"), Value: Str("b")}}}}
	g.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 77, protowire.VarintType), 5))

	x := g.Input[0]
	x.DocString = Str("the input")
	x.MetadataProps = []*onnxpb.StringStringEntryProto{{Key: Str("xk"), Value: Str("xv")}}
	x.Type.Denotation = Str("TENSOR")
	x.Type.GetTensorType().Shape.Dim[0].Denotation = Str("DATA_BATCH")
	g.ValueInfo = append(g.ValueInfo, VI("not_a_value", onnxpb.TensorProto_INT8, 1))

	mm := g.Node[0]
	mm.DocString = Str("matmul doc")
	mm.Overload = Str("ov")
	mm.MetadataProps = []*onnxpb.StringStringEntryProto{{Key: Str("nk"), Value: Str("nv")}}
	mm.DeviceConfigurations = []*onnxpb.NodeDeviceConfigurationProto{{ConfigurationId: Str("cfg"), PipelineStage: proto.Int32(1)}}
	mm.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 50, protowire.VarintType), 1))

	w := g.Initializer[0]
	w.DocString = Str("weights")
	w.MetadataProps = []*onnxpb.StringStringEntryProto{{Key: Str("wk"), Value: Str("wv")}}
	w.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 60, protowire.VarintType), 2))

	custom := Node("Fancy", "fancy", In("y", ""), In("z", "", "aux"),
		&onnxpb.AttributeProto{Name: Str("tp"), Type: onnxpb.AttributeProto_TYPE_PROTO.Enum(), Tp: TensorType(onnxpb.TensorProto_FLOAT, 2)},
		&onnxpb.AttributeProto{Name: Str("sp"), Type: onnxpb.AttributeProto_SPARSE_TENSOR.Enum(), SparseTensor: &onnxpb.SparseTensorProto{
			Values: F32s("spv", []int64{1}, 2), Indices: Typed("spi", onnxpb.TensorProto_INT64, []int64{1}, func(tp *onnxpb.TensorProto) { tp.Int64Data = []int64{0} }), Dims: []int64{3}}},
		&onnxpb.AttributeProto{Name: Str("ref"), RefAttrName: Str("alpha"), Type: onnxpb.AttributeProto_FLOAT.Enum()},
		&onnxpb.AttributeProto{Name: Str("s"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte{}, DocString: Str("attr doc")},
		&onnxpb.AttributeProto{Name: Str("strs"), Type: onnxpb.AttributeProto_STRINGS.Enum(), Strings: [][]byte{[]byte("a"), []byte("\xff")}},
		&onnxpb.AttributeProto{Name: Str("fl"), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: []float32{1, float32(math.Inf(-1))}},
		&onnxpb.AttributeProto{Name: Str("ts"), Type: onnxpb.AttributeProto_TENSORS.Enum(), Tensors: []*onnxpb.TensorProto{F32s("t0", nil, 1)}},
		AttrFloat("alpha", 0.25),
	)
	custom.Domain = Str("com.vendor")
	custom.Attribute[4].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 40, protowire.VarintType), 3))
	call := Node("MyRelu", "call", In("z"), In("zz"))
	call.Domain = Str("local")
	g.Node = append(g.Node, custom, call)
	g.Output = append(g.Output, VI("zz", onnxpb.TensorProto_FLOAT, 2), VI("aux", onnxpb.TensorProto_INT64))
	return m
}

func typedTensors() *onnxpb.ModelProto {
	inits := []*onnxpb.TensorProto{
		Typed("f", onnxpb.TensorProto_FLOAT, []int64{2}, func(tp *onnxpb.TensorProto) { tp.FloatData = []float32{1, 2} }),
		Typed("h", onnxpb.TensorProto_FLOAT16, []int64{2}, func(tp *onnxpb.TensorProto) { tp.Int32Data = []int32{0x3c00, 0xc000} }),
		Typed("bf", onnxpb.TensorProto_BFLOAT16, []int64{1}, func(tp *onnxpb.TensorProto) { tp.Int32Data = []int32{0x3f80} }),
		// Not canonical: a bool of 2 and a uint8 of 511. The IR holds 1 and
		// 255; the file must come back as written.
		Typed("bl", onnxpb.TensorProto_BOOL, []int64{2}, func(tp *onnxpb.TensorProto) { tp.Int32Data = []int32{2, 0} }),
		Typed("u8", onnxpb.TensorProto_UINT8, []int64{1}, func(tp *onnxpb.TensorProto) { tp.Int32Data = []int32{511} }),
		Typed("i4", onnxpb.TensorProto_INT4, []int64{3}, func(tp *onnxpb.TensorProto) { tp.Int32Data = []int32{0xf1, 0x03} }),
		Typed("i64", onnxpb.TensorProto_INT64, []int64{2}, func(tp *onnxpb.TensorProto) { tp.Int64Data = []int64{-1, 1 << 50} }),
		Typed("d", onnxpb.TensorProto_DOUBLE, []int64{1}, func(tp *onnxpb.TensorProto) { tp.DoubleData = []float64{math.Pi} }),
		Typed("u32", onnxpb.TensorProto_UINT32, []int64{1}, func(tp *onnxpb.TensorProto) { tp.Uint64Data = []uint64{7} }),
		Typed("c64", onnxpb.TensorProto_COMPLEX64, []int64{1}, func(tp *onnxpb.TensorProto) { tp.FloatData = []float32{1, -1} }),
		Typed("s", onnxpb.TensorProto_STRING, []int64{2}, func(tp *onnxpb.TensorProto) { tp.StringData = [][]byte{[]byte("x"), {}} }),
		Typed("e", onnxpb.TensorProto_FLOAT, []int64{0}, func(tp *onnxpb.TensorProto) { tp.RawData = []byte{} }),
	}
	var nodes []*onnxpb.NodeProto
	var outs []*onnxpb.ValueInfoProto
	for _, tp := range inits {
		nodes = append(nodes, Node("Identity", "", In(tp.GetName()), In(tp.GetName()+"_out")))
		outs = append(outs, &onnxpb.ValueInfoProto{Name: Str(tp.GetName() + "_out")})
	}
	nodes = append(nodes, Node("Constant", "const", nil, In("cv"), AttrTensor("value",
		Typed("cv_t", onnxpb.TensorProto_INT32, []int64{3}, func(tp *onnxpb.TensorProto) { tp.Int32Data = []int32{-1, 0, 1} }))))
	outs = append(outs, &onnxpb.ValueInfoProto{Name: Str("cv")})
	m := Model(Graph("typed", nodes, GraphParts{Outputs: outs, Inits: inits}), Opset("", 21))
	m.IrVersion = proto.Int64(10)
	return m
}

func sparseModel() *onnxpb.ModelProto {
	m := Model(Graph("sparse", []*onnxpb.NodeProto{Node("Add", "add", In("x", "sw"), In("y"))}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 2, 3)},
		Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 2, 3)},
	}))
	m.Graph.SparseInitializer = []*onnxpb.SparseTensorProto{{
		Values:  F32s("sw", []int64{2}, 5, 7),
		Indices: Typed("sw_idx", onnxpb.TensorProto_INT64, []int64{2, 2}, func(tp *onnxpb.TensorProto) { tp.Int64Data = []int64{0, 1, 1, 2} }),
		Dims:    []int64{2, 3},
	}}
	return m
}

func roundTripModels() []struct {
	name string
	m    *onnxpb.ModelProto
} {
	inputWithDefault := MLP()
	inputWithDefault.Graph.Input = append(inputWithDefault.Graph.Input, VI("b", onnxpb.TensorProto_FLOAT, 3))
	optional := Model(Graph("opt", []*onnxpb.NodeProto{
		Node("Clip", "clip", In("x", "", "hi"), In("c")),
		Node("Dropout", "drop", In("c"), In("d", "")),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 3), VI("hi", onnxpb.TensorProto_FLOAT)},
		Outputs: []*onnxpb.ValueInfoProto{VI("d", onnxpb.TensorProto_FLOAT, 3)},
	}))
	constants := Model(Graph("const", []*onnxpb.NodeProto{
		Node("Constant", "w", nil, In("wv"), AttrTensor("value", F32s("wt", []int64{2}, 1, 2))),
		Node("Constant", "s", nil, In("sv"), AttrFloat("value_float", 0.5)),
		Node("Constant", "shape", nil, In("shv"), AttrInts("value_ints", 1, 2)),
		Node("Mul", "mul", In("wv", "sv"), In("m")),
		Node("Reshape", "r", In("m", "shv"), In("y"), AttrInt("allowzero", 0)),
	}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 1, 2)}}))
	siblings := Model(Graph("main", []*onnxpb.NodeProto{
		Node("If", "if", In("c"), In("y"),
			AttrGraph("then_branch", Graph("then", []*onnxpb.NodeProto{Node("Neg", "neg", In("x"), In("t"))}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("t", onnxpb.TensorProto_FLOAT, 4)}})),
			AttrGraph("else_branch", Graph("else", []*onnxpb.NodeProto{Node("Abs", "abs", In("x"), In("t"))}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("t", onnxpb.TensorProto_FLOAT, 4)}}))),
	}, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, 4), VI("c", onnxpb.TensorProto_BOOL)},
		Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 4)},
	}))
	dups := MLP() // a value listed twice as an output, and an input passed straight through
	dups.Graph.Output = append(dups.Graph.Output, VI("y", onnxpb.TensorProto_FLOAT, "batch", 3), VI("x", onnxpb.TensorProto_FLOAT, "batch", 4))
	return []struct {
		name string
		m    *onnxpb.ModelProto
	}{
		{"mlp", MLP()},
		{"if nested two deep", IfModel()},
		{"loop", loopModel()},
		{"everything kept in Ext", everything()},
		{"typed tensor fields", typedTensors()},
		{"sparse initializer", sparseModel()},
		{"input with default", inputWithDefault},
		{"optional inputs and outputs", optional},
		{"constant nodes", constants},
		{"duplicate outputs", dups},
		{"sibling subgraphs reuse a name", siblings},
	}
}

// TestRoundTrip imports, exports and imports again: the exported model must
// equal the source message, the two IR graphs must print the same, and
// exporting is deterministic and a fixed point.
func TestRoundTrip(t *testing.T) {
	for _, tt := range roundTripModels() {
		t.Run(tt.name, func(t *testing.T) {
			src := Marshal(t, tt.m)
			g1 := mustImport(t, src)
			out1 := mustExport(t, g1, exporter.Options{})
			if !proto.Equal(Unmarshal(t, out1), tt.m) {
				t.Errorf("exported model differs from its source:\n--- source\n%s\n--- exported\n%s",
					prototext.Format(tt.m), prototext.Format(Unmarshal(t, out1)))
			}
			if !bytes.Equal(out1, src) {
				t.Errorf("exported bytes differ from the source's (%d vs %d bytes)", len(out1), len(src))
			}
			if again := mustExport(t, g1, exporter.Options{}); !bytes.Equal(again, out1) {
				t.Errorf("exporting twice gave different bytes")
			}
			g2 := mustImport(t, out1)
			if d1, d2 := dump(g1), dump(g2); d1 != d2 {
				t.Errorf("IR differs after the round trip:\n--- first\n%s\n--- second\n%s", d1, d2)
			}
			if out2 := mustExport(t, g2, exporter.Options{}); !bytes.Equal(out2, out1) {
				t.Errorf("export(import(export(m))) differs from export(m)")
			}
		})
	}
}

func initializer(m *onnxpb.ModelProto, name string) *onnxpb.TensorProto {
	for _, tp := range m.GetGraph().GetInitializer() {
		if tp.GetName() == name {
			return tp
		}
	}
	return nil
}

func TestChangedTensorsUseRawData(t *testing.T) {
	g := mustImport(t, Marshal(t, typedTensors()))
	params := map[string]*ir.Value{}
	for _, p := range g.Params {
		params[p.Name] = p
	}
	// Change f's elements and h's element type; leave bf alone.
	f := params["f"].Data
	f.Raw = slices.Clone(f.Raw)
	binary.LittleEndian.PutUint32(f.Raw, math.Float32bits(9))
	params["h"].Data.DType = ir.Int16
	// A new tensor from a pass, without Ext.
	nt := ir.Float32Tensor([]int64{2}, 3, 4)
	p := g.AddParam("new_param", nt.Type(), nt)
	n := g.NewNode("Identity", "", []*ir.Value{p}, []string{"new_out"})
	g.AddOutput(n.Outputs[0])

	out := Unmarshal(t, mustExport(t, g, exporter.Options{}))
	tf := initializer(out, "f")
	if len(tf.FloatData) != 0 || len(tf.RawData) != 8 || math.Float32frombits(binary.LittleEndian.Uint32(tf.RawData)) != 9 {
		t.Errorf("changed f = %v", tf)
	}
	if th := initializer(out, "h"); len(th.Int32Data) != 0 || th.GetDataType() != int32(onnxpb.TensorProto_INT16) || len(th.RawData) != 4 {
		t.Errorf("retyped h = %v", th)
	}
	if tb := initializer(out, "bf"); !slices.Equal(tb.Int32Data, []int32{0x3f80}) || tb.RawData != nil {
		t.Errorf("unchanged bf = %v", tb)
	}
	if tn := initializer(out, "new_param"); tn.GetDataType() != int32(onnxpb.TensorProto_FLOAT) || len(tn.RawData) != 8 || !slices.Equal(tn.Dims, []int64{2}) {
		t.Errorf("new tensor = %v", tn)
	}
	// The non-canonical bool is still written as the source had it.
	if tb := initializer(out, "bl"); !slices.Equal(tb.Int32Data, []int32{2, 0}) {
		t.Errorf("bool = %v", tb)
	}
	g2 := mustImport(t, Marshal(t, out))
	for _, p := range g2.Params {
		if p.Name == "f" {
			if v, _ := p.Data.Float64s(); v[0] != 9 || v[1] != 2 {
				t.Errorf("re-imported f = %v", v)
			}
		}
	}
}

// TestNewGraph exports a graph built with the IR's API, with no Ext at all.
func TestNewGraph(t *testing.T) {
	g := newGraph()
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	out := mustExport(t, g, exporter.Options{ValueInfo: true})
	m := Unmarshal(t, out)
	if m.GetIrVersion() != 8 || m.GetProducerName() != "remat-compile" {
		t.Errorf("ir_version %d producer %q", m.GetIrVersion(), m.GetProducerName())
	}
	g2 := mustImport(t, out)
	// The exporter names the unnamed value after its ID.
	g.Nodes[1].Outputs[0].Name = "_v4"
	if d1, d2 := dump(g), dump(g2); d1 != d2 {
		t.Errorf("IR differs:\n--- built\n%s\n--- re-imported\n%s", d1, d2)
	}
	var viNames []string
	for _, v := range m.Graph.ValueInfo {
		viNames = append(viNames, v.GetName())
	}
	if want := []string{"h", "_v4"}; !slices.Equal(viNames, want) {
		t.Errorf("value_info = %v, want %v", viNames, want)
	}
}

// newGraph builds x -> Conv(w) -> Relu -> If(then: Mul by an outer value,
// else: Identity) -> y, with one unnamed value.
func newGraph() *ir.Graph {
	g := ir.NewGraph("main")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	x := g.AddInput("x", ir.TensorType{DType: ir.Float32, Shape: []ir.Dim{ir.SymDim("N"), ir.D(1), ir.D(4), ir.D(4)}})
	c := g.AddInput("c", ir.TensorOf(ir.Bool))
	w := ir.Float32Tensor([]int64{1, 1, 1, 1}, 2)
	w.Name = "w"
	wv := g.AddParam("w", w.Type(), w)
	conv := g.NewNode("Conv", "", []*ir.Value{x, wv}, []string{"h"})
	conv.Name = "conv"
	conv.SetAttr(ir.IntsAttr("kernel_shape", 1, 1))
	conv.Outputs[0].Type = x.Type.Clone()
	relu := g.NewNode("Relu", "", []*ir.Value{conv.Outputs[0]}, []string{"r"})
	relu.SetOutput(0, "") // unnamed
	relu.Outputs[0].Type = x.Type.Clone()
	ifn := g.NewNode("If", "", []*ir.Value{c}, []string{"y"})
	then := g.NewSubgraph("then")
	els := g.NewSubgraph("else")
	ifn.SetAttr(ir.GraphAttr("then_branch", then))
	ifn.SetAttr(ir.GraphAttr("else_branch", els))
	m := then.NewNode("Mul", "", []*ir.Value{relu.Outputs[0], wv}, []string{"tm"})
	then.Capture(relu.Outputs[0])
	then.Capture(wv)
	then.AddOutput(m.Outputs[0])
	id := els.NewNode("Identity", "", []*ir.Value{relu.Outputs[0]}, []string{"ei"})
	els.Capture(relu.Outputs[0])
	els.AddOutput(id.Outputs[0])
	ifn.Outputs[0].Type = x.Type.Clone()
	g.AddOutput(ifn.Outputs[0])
	return g
}

func TestValueInfoEntries(t *testing.T) {
	m := MLP()
	m.Graph.ValueInfo = []*onnxpb.ValueInfoProto{
		VI("hb", onnxpb.TensorProto_FLOAT, "batch", 3),
		VI("gone", onnxpb.TensorProto_FLOAT, 3), // names no value: kept as written
		VI("h", onnxpb.TensorProto_FLOAT, "batch", 3),
	}
	m.Graph.ValueInfo[2].DocString = Str("h doc")
	m.Graph.ValueInfo[2].Type.GetTensorType().Shape.Dim[1].Denotation = Str("FEATURE")

	g := mustImport(t, Marshal(t, m))
	viNames := func(m *onnxpb.ModelProto) []string {
		var out []string
		for _, v := range m.Graph.ValueInfo {
			out = append(out, v.GetName())
		}
		return out
	}
	out := Unmarshal(t, mustExport(t, g, exporter.Options{}))
	if got := viNames(out); !slices.Equal(got, []string{"hb", "gone", "h"}) {
		t.Errorf("value_info = %v", got)
	}
	// A pass refines h's type. Without ValueInfo the declaration is
	// written back as read; with it, the entry follows the IR type and
	// keeps its denotation and doc.
	h := g.Nodes[0].Outputs[0]
	h.Type = ir.TensorOf(ir.Float32, 8, 3)
	out = Unmarshal(t, mustExport(t, g, exporter.Options{}))
	hv := out.Graph.ValueInfo[2]
	if dims := hv.GetType().GetTensorType().GetShape().GetDim(); len(dims) != 2 || dims[0].GetDimParam() != "batch" || dims[1].GetDenotation() != "FEATURE" || hv.GetDocString() != "h doc" {
		t.Errorf("h without ValueInfo = %v, want the declaration as read", hv)
	}
	out = Unmarshal(t, mustExport(t, g, exporter.Options{ValueInfo: true}))
	hv = out.Graph.ValueInfo[2]
	if dims := hv.GetType().GetTensorType().GetShape().GetDim(); len(dims) != 2 || dims[0].GetDimValue() != 8 || dims[1].GetDenotation() != "FEATURE" || hv.GetDocString() != "h doc" {
		t.Errorf("h with ValueInfo = %v", hv)
	}
	// With ValueInfo, every typed intermediate value gets an entry; the
	// source's come first.
	g.Nodes[1].Outputs[0].Type = ir.TensorOf(ir.Float32, 8, 3)
	relu := g.Nodes[2]
	relu.Outputs[0].Type = ir.TensorOf(ir.Float32, 8, 3) // a graph output: no value_info
	out = Unmarshal(t, mustExport(t, g, exporter.Options{ValueInfo: true}))
	if got := viNames(out); !slices.Equal(got, []string{"hb", "gone", "h"}) {
		t.Errorf("value_info with ValueInfo = %v", got)
	}
	// Removing the Add drops its entry.
	add := g.Nodes[1]
	add.Outputs[0].ReplaceUses(h)
	g.RemoveNode(add)
	out = Unmarshal(t, mustExport(t, g, exporter.Options{}))
	if got := viNames(out); !slices.Equal(got, []string{"gone", "h"}) {
		t.Errorf("value_info after removing add = %v", got)
	}
}

func TestExportErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func() *ir.Graph
		want  string
	}{
		{"nil graph", func() *ir.Graph { return nil }, "nil graph"},
		{"subgraph", func() *ir.Graph {
			g := newGraph()
			return g.Nodes[2].Attr("then_branch").Graph
		}, `graph "then" is a subgraph; export its root graph`},
		{"no default opset", func() *ir.Graph {
			g := newGraph()
			g.Opsets = []ir.Opset{{Domain: "com.x", Version: 1}}
			return g
		}, `imports no version of the default ONNX domain`},
		{"domain not imported", func() *ir.Graph {
			g := newGraph()
			g.Nodes[0].Domain = "com.vendor"
			return g
		}, `node "conv" (com.vendor.Conv): domain "com.vendor" is not imported`},
		{"invalid IR", func() *ir.Graph {
			g := newGraph()
			g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0]
			return g
		}, "the graph is not valid IR"},
		{"attribute other without proto", func() *ir.Graph {
			g := newGraph()
			g.Nodes[0].SetAttr(ir.Attr{Name: "odd", Kind: ir.AttrOther})
			return g
		}, `node "conv" (Conv): attribute "odd" of kind other has no ONNX form`},
		{"tensor size mismatch", func() *ir.Graph {
			g := newGraph()
			g.Params[0].Data.Raw = make([]byte, 3)
			return g
		}, `tensor "w": tensor data has 3 bytes, f32[1 1 1 1] needs 4`},
		{"undefined dtype", func() *ir.Graph {
			g := newGraph()
			g.Params[0].Data = &ir.Tensor{DType: ir.Undefined}
			return g
		}, `has element type undef, which ONNX cannot express`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := exporter.Export(tt.build(), exporter.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Export error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// chainGraph imports a chain of n elementwise nodes.
func chainGraph(b testing.TB, n int) *ir.Graph {
	nodes := make([]*onnxpb.NodeProto, 0, n)
	prev := "x"
	for i := range n {
		out := "t" + strconv.Itoa(i)
		if i%2 == 0 {
			nodes = append(nodes, Node("Add", "add"+strconv.Itoa(i), In(prev, "bias"), In(out)))
		} else {
			nodes = append(nodes, Node("Relu", "relu"+strconv.Itoa(i), In(prev), In(out)))
		}
		prev = out
	}
	m := Model(Graph("chain", nodes, GraphParts{
		Inputs:  []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, "batch", 16)},
		Outputs: []*onnxpb.ValueInfoProto{VI(prev, onnxpb.TensorProto_FLOAT, "batch", 16)},
		Inits:   []*onnxpb.TensorProto{F32s("bias", []int64{16}, make([]float32, 16)...)},
	}))
	return mustImport(b, Marshal(b, m))
}

func BenchmarkExport(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		g := chainGraph(b, n)
		b.Run("nodes="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := exporter.Export(g, exporter.Options{ValueInfo: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTypesWithoutElementType: ONNX cannot declare a tensor of unknown
// element type (runtimes reject elem_type 0), so such IR types are written
// as no type at all, and never replace a declaration's type.
func TestTypesWithoutElementType(t *testing.T) {
	m := MLP()
	m.Graph.ValueInfo = []*onnxpb.ValueInfoProto{{Name: Str("h"), Type: &onnxpb.TypeProto{}}}
	g := mustImport(t, Marshal(t, m))
	h := g.Nodes[0].Outputs[0]
	h.Type = ir.TensorType{Unranked: true} // a pass learned nothing
	hb := g.Nodes[1].Outputs[0]
	hb.Type = ir.TensorType{Shape: []ir.Dim{ir.D(2), ir.D(3)}} // a shape, no element type
	out := Unmarshal(t, mustExport(t, g, exporter.Options{ValueInfo: true}))
	for _, v := range out.Graph.ValueInfo {
		switch v.GetName() {
		case "h":
			if v.Type == nil || v.Type.GetValue() != nil {
				t.Errorf("h = %v, want the declaration's empty type kept", v)
			}
		case "hb":
			t.Errorf("hb declared as %v; a value without element type gets no entry", v)
		}
	}
	g.Outputs[0].Type = ir.TensorType{Shape: []ir.Dim{ir.D(2), ir.D(3)}}
	out = Unmarshal(t, mustExport(t, g, exporter.Options{}))
	if got := out.Graph.Output[0].GetType().GetTensorType(); got.GetElemType() != int32(onnxpb.TensorProto_FLOAT) {
		t.Errorf("output type = %v, want the declared f32 kept", out.Graph.Output[0])
	}
}
