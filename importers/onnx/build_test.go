package onnx_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/remat-compile/remat/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Small builders for ModelProtos, so tests read like the models they build.

func str(s string) *string { return proto.String(s) }

func model(g *onnxpb.GraphProto, opsets ...*onnxpb.OperatorSetIdProto) *onnxpb.ModelProto {
	if len(opsets) == 0 {
		opsets = []*onnxpb.OperatorSetIdProto{opset("", 17)}
	}
	return &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: opsets, Graph: g}
}

func opset(domain string, v int64) *onnxpb.OperatorSetIdProto {
	return &onnxpb.OperatorSetIdProto{Domain: str(domain), Version: proto.Int64(v)}
}

type graphParts struct {
	inputs, outputs, valueInfo []*onnxpb.ValueInfoProto
	inits                      []*onnxpb.TensorProto
}

func graph(name string, nodes []*onnxpb.NodeProto, p graphParts) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: str(name), Node: nodes, Input: p.inputs, Output: p.outputs, ValueInfo: p.valueInfo, Initializer: p.inits}
}

func node(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: str(op), Name: str(name), Input: ins, Output: outs, Attribute: attrs}
}

func in(names ...string) []string { return names }

// vi declares a tensor value; dims are ints (static), strings (symbolic) or
// nil (unknown). No dims at all means a scalar; use viUnranked for unknown
// rank.
func vi(name string, elem onnxpb.TensorProto_DataType, dims ...any) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
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
	return &onnxpb.ValueInfoProto{Name: str(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(elem)), Shape: shape}}}}
}

func f32s(name string, dims []int64, vals ...float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &onnxpb.TensorProto{Name: str(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), RawData: raw}
}

func i64s(name string, dims []int64, vals ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: str(name), Dims: dims, DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Int64Data: vals}
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: str(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: str(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: str(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: str(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

func attrGraph(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: str(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mlp is a small valid model: x -> MatMul(w) -> Add(b) -> Relu -> y.
func mlp() *onnxpb.ModelProto {
	return model(graph("mlp", []*onnxpb.NodeProto{
		node("MatMul", "mm", in("x", "w"), in("h")),
		node("Add", "add", in("h", "b"), in("hb")),
		node("Relu", "relu", in("hb"), in("y")),
	}, graphParts{
		inputs:    []*onnxpb.ValueInfoProto{vi("x", onnxpb.TensorProto_FLOAT, "batch", 4)},
		outputs:   []*onnxpb.ValueInfoProto{vi("y", onnxpb.TensorProto_FLOAT, "batch", 3)},
		valueInfo: []*onnxpb.ValueInfoProto{vi("h", onnxpb.TensorProto_FLOAT, "batch", 3)},
		inits: []*onnxpb.TensorProto{
			f32s("w", []int64{4, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
			f32s("b", []int64{3}, 0.5, -0.5, 0),
		},
	}))
}

// ifModel has an If whose branches read outer values, one of them through a
// nested If two levels deep.
func ifModel() *onnxpb.ModelProto {
	inner := graph("inner_then", []*onnxpb.NodeProto{
		node("Mul", "inner_mul", in("a", "k"), in("im")),
	}, graphParts{outputs: []*onnxpb.ValueInfoProto{vi("im", onnxpb.TensorProto_FLOAT, 4)}})
	innerElse := graph("inner_else", []*onnxpb.NodeProto{
		node("Identity", "inner_id", in("a"), in("ie")),
	}, graphParts{outputs: []*onnxpb.ValueInfoProto{vi("ie", onnxpb.TensorProto_FLOAT, 4)}})
	then := graph("then", []*onnxpb.NodeProto{
		node("If", "inner_if", in("c"), in("ti"), attrGraph("then_branch", inner), attrGraph("else_branch", innerElse)),
	}, graphParts{outputs: []*onnxpb.ValueInfoProto{vi("ti", onnxpb.TensorProto_FLOAT, 4)}})
	els := graph("else", []*onnxpb.NodeProto{
		node("Neg", "neg", in("a"), in("en")),
	}, graphParts{outputs: []*onnxpb.ValueInfoProto{vi("en", onnxpb.TensorProto_FLOAT, 4)}})
	return model(graph("main", []*onnxpb.NodeProto{
		node("Relu", "relu", in("x"), in("a")),
		node("If", "if", in("c"), in("y"), attrGraph("then_branch", then), attrGraph("else_branch", els)),
	}, graphParts{
		inputs: []*onnxpb.ValueInfoProto{
			vi("x", onnxpb.TensorProto_FLOAT, 4),
			vi("c", onnxpb.TensorProto_BOOL),
		},
		outputs: []*onnxpb.ValueInfoProto{vi("y", onnxpb.TensorProto_FLOAT, 4)},
		inits:   []*onnxpb.TensorProto{f32s("k", []int64{4}, 1, 2, 3, 4)},
	}))
}
