package graphdef_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"github.com/remat-compile/remat/internal/tfpb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Builders of GraphDefs and TensorFlow.js models for the tests.

func node(name, op string, inputs ...string) *tfpb.NodeDef {
	return &tfpb.NodeDef{Name: name, Op: op, Input: inputs, Attr: map[string]*tfpb.AttrValue{}}
}

func with(nd *tfpb.NodeDef, key string, v *tfpb.AttrValue) *tfpb.NodeDef {
	nd.Attr[key] = v
	return nd
}

func typeAttr(dt tfpb.DataType) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: dt}}
}

func intAttr(i int64) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: i}} }

func shapeProto(dims ...int64) *tfpb.TensorShapeProto {
	sp := &tfpb.TensorShapeProto{}
	for _, d := range dims {
		sp.Dim = append(sp.Dim, &tfpb.TensorShapeProto_Dim{Size: d})
	}
	return sp
}

func shapeAttr(dims ...int64) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: shapeProto(dims...)}}
}

func tensorAttr(tp *tfpb.TensorProto) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: tp}}
}

func placeholder(name string, dims ...int64) *tfpb.NodeDef {
	nd := with(node(name, "Placeholder"), "dtype", typeAttr(tfpb.DataType_DT_FLOAT))
	return with(nd, "shape", shapeAttr(dims...))
}

// constOf is a Const holding tp.
func constOf(name string, tp *tfpb.TensorProto) *tfpb.NodeDef {
	return with(with(node(name, "Const"), "dtype", typeAttr(tp.Dtype)), "value", tensorAttr(tp))
}

func f32Const(name string, dims []int64, vals ...float32) *tfpb.NodeDef {
	return constOf(name, &tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: shapeProto(dims...), FloatVal: vals})
}

func i32Const(name string, dims []int64, vals ...int32) *tfpb.NodeDef {
	return constOf(name, &tfpb.TensorProto{Dtype: tfpb.DataType_DT_INT32, TensorShape: shapeProto(dims...), IntVal: vals})
}

func unary(name, op, in string) *tfpb.NodeDef {
	return with(node(name, op, in), "T", typeAttr(tfpb.DataType_DT_FLOAT))
}

func pb(t testing.TB, nodes ...*tfpb.NodeDef) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&tfpb.GraphDef{Node: nodes})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// weight is a manifest entry.
type weight struct {
	Name         string         `json:"name"`
	Shape        []int64        `json:"shape"`
	DType        string         `json:"dtype"`
	Quantization map[string]any `json:"quantization,omitempty"`
}

type group struct {
	Paths   []string `json:"paths"`
	Weights []weight `json:"weights"`
}

// modelJSON writes a model.json: a GraphDef in the proto3 JSON mapping
// (the Consts' values stripped, as the TensorFlow.js converter does) and a
// manifest; extra members come first, in the order given.
func modelJSON(t testing.TB, nodes []*tfpb.NodeDef, manifest []group, extra ...string) []byte {
	t.Helper()
	gd := &tfpb.GraphDef{Node: nodes, Versions: &tfpb.VersionDef{}}
	topo, err := protojson.MarshalOptions{UseProtoNames: false}.Marshal(gd)
	if err != nil {
		t.Fatal(err)
	}
	man, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte("{")
	for i := 0; i+1 < len(extra); i += 2 {
		out = append(out, []byte(`"`+extra[i]+`": `+extra[i+1]+`, `)...)
	}
	out = append(out, []byte(`"format": "graph-model", "modelTopology": `)...)
	out = append(out, topo...)
	out = append(out, []byte(`, "weightsManifest": `)...)
	out = append(out, man...)
	return append(out, '}')
}

// stripped is a Const whose value tensor has a dtype and a shape but no
// data: its value is in the manifest.
func stripped(name string, dt tfpb.DataType, dims ...int64) *tfpb.NodeDef {
	return constOf(name, &tfpb.TensorProto{Dtype: dt, TensorShape: shapeProto(dims...)})
}

func f32Bytes(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func f32s(raw []byte) []float32 {
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}
