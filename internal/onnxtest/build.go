// Package onnxtest builds ONNX ModelProtos for the tests of the importer
// and the exporter, so that tests read like the models they build. The
// builders set exactly the fields the exporter writes for such a model,
// so that an exported model can be compared with its source by
// proto.Equal. It is for tests only.
package onnxtest

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/remat-compile/remat/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Builders for ModelProtos. They set exactly the fields the exporter writes
// for such a model, so that an exported model can be compared with its
// source by proto.Equal.

func Str(s string) *string { return proto.String(s) }

func Model(g *onnxpb.GraphProto, opsets ...*onnxpb.OperatorSetIdProto) *onnxpb.ModelProto {
	if len(opsets) == 0 {
		opsets = []*onnxpb.OperatorSetIdProto{Opset("", 17)}
	}
	return &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: opsets, Graph: g}
}

func Opset(domain string, v int64) *onnxpb.OperatorSetIdProto {
	o := &onnxpb.OperatorSetIdProto{Version: proto.Int64(v)}
	if domain != "" {
		o.Domain = Str(domain)
	}
	return o
}

// GraphParts are a graph's declarations and initializers.
type GraphParts struct {
	Inputs, Outputs, ValueInfo []*onnxpb.ValueInfoProto
	Inits                      []*onnxpb.TensorProto
}

func Graph(name string, nodes []*onnxpb.NodeProto, p GraphParts) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: Str(name), Node: nodes, Input: p.Inputs, Output: p.Outputs, ValueInfo: p.ValueInfo, Initializer: p.Inits}
}

func Node(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	n := &onnxpb.NodeProto{OpType: Str(op), Input: ins, Output: outs, Attribute: attrs}
	if name != "" {
		n.Name = Str(name)
	}
	return n
}

func In(names ...string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

// vi declares a tensor value; dims are ints (static), strings (symbolic) or
// nil (unknown).
func VI(name string, elem onnxpb.TensorProto_DataType, dims ...any) *onnxpb.ValueInfoProto {
	return &onnxpb.ValueInfoProto{Name: Str(name), Type: TensorType(elem, dims...)}
}

func TensorType(elem onnxpb.TensorProto_DataType, dims ...any) *onnxpb.TypeProto {
	shape := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{}}
	for _, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		switch d := d.(type) {
		case int:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}
		case string:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(elem)), Shape: shape}}}
}

func F32s(name string, dims []int64, vals ...float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &onnxpb.TensorProto{Name: Str(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), RawData: raw}
}

func Typed(name string, dt onnxpb.TensorProto_DataType, dims []int64, set func(tp *onnxpb.TensorProto)) *onnxpb.TensorProto {
	tp := &onnxpb.TensorProto{Name: Str(name), Dims: dims, DataType: proto.Int32(int32(dt))}
	set(tp)
	return tp
}

func AttrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: Str(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func AttrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: Str(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func AttrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: Str(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func AttrTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: Str(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

func AttrGraph(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: Str(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

func Marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func Unmarshal(t testing.TB, b []byte) *onnxpb.ModelProto {
	t.Helper()
	m := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func I64s(name string, dims []int64, vals ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: Str(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Int64Data: vals}
}

// MLP is a small valid model: x -> MatMul(w) -> Add(b) -> Relu -> y.
func MLP() *onnxpb.ModelProto {
	return Model(Graph("mlp", []*onnxpb.NodeProto{
		Node("MatMul", "mm", In("x", "w"), In("h")),
		Node("Add", "add", In("h", "b"), In("hb")),
		Node("Relu", "relu", In("hb"), In("y")),
	}, GraphParts{
		Inputs:    []*onnxpb.ValueInfoProto{VI("x", onnxpb.TensorProto_FLOAT, "batch", 4)},
		Outputs:   []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, "batch", 3)},
		ValueInfo: []*onnxpb.ValueInfoProto{VI("h", onnxpb.TensorProto_FLOAT, "batch", 3)},
		Inits: []*onnxpb.TensorProto{
			F32s("w", []int64{4, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
			F32s("b", []int64{3}, 0.5, -0.5, 0),
		},
	}))
}

// IfModel has an If whose branches read outer values, one of them through a
// nested If two levels deep.
func IfModel() *onnxpb.ModelProto {
	inner := Graph("inner_then", []*onnxpb.NodeProto{
		Node("Mul", "inner_mul", In("a", "k"), In("im")),
	}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("im", onnxpb.TensorProto_FLOAT, 4)}})
	innerElse := Graph("inner_else", []*onnxpb.NodeProto{
		Node("Identity", "inner_id", In("a"), In("ie")),
	}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("ie", onnxpb.TensorProto_FLOAT, 4)}})
	then := Graph("then", []*onnxpb.NodeProto{
		Node("If", "inner_if", In("c"), In("ti"), AttrGraph("then_branch", inner), AttrGraph("else_branch", innerElse)),
	}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("ti", onnxpb.TensorProto_FLOAT, 4)}})
	els := Graph("else", []*onnxpb.NodeProto{
		Node("Neg", "neg", In("a"), In("en")),
	}, GraphParts{Outputs: []*onnxpb.ValueInfoProto{VI("en", onnxpb.TensorProto_FLOAT, 4)}})
	return Model(Graph("main", []*onnxpb.NodeProto{
		Node("Relu", "relu", In("x"), In("a")),
		Node("If", "if", In("c"), In("y"), AttrGraph("then_branch", then), AttrGraph("else_branch", els)),
	}, GraphParts{
		Inputs: []*onnxpb.ValueInfoProto{
			VI("x", onnxpb.TensorProto_FLOAT, 4),
			VI("c", onnxpb.TensorProto_BOOL),
		},
		Outputs: []*onnxpb.ValueInfoProto{VI("y", onnxpb.TensorProto_FLOAT, 4)},
		Inits:   []*onnxpb.TensorProto{F32s("k", []int64{4}, 1, 2, 3, 4)},
	}))
}
