package onnx

import (
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
)

// The Ext fields of an imported graph hold what the IR does not model (see
// importers/onnx, ext.go). This package may not import the importer (the
// package rules in DESIGN.md allow only ir and internal/onnxpb), so it
// reaches those pieces through the interfaces below, which the importer's Ext
// types implement. Messages they return are fresh at the top level; slices
// inside them may be shared with the Ext value and are never modified here.
// An Ext value that implements none of them is ignored, and the object is
// written as a new one would be.

// modelExt is implemented by the Ext of an imported root graph.
type modelExt interface {
	// ONNXModel returns the model-level fields: everything except the graph
	// and opset_import.
	ONNXModel() *onnxpb.ModelProto
}

// graphExt is implemented by the Ext of an imported graph (root included).
type graphExt interface {
	// ONNXGraph returns the graph-level leftovers in tmpl; the graph.input
	// and graph.output entries as read, by value; and the value_info entries
	// as read, each with the value it described (nil when none).
	ONNXGraph() (tmpl *onnxpb.GraphProto, inputs, outputs map[*ir.Value]*onnxpb.ValueInfoProto, valueInfo []*onnxpb.ValueInfoProto, described []*ir.Value)
}

// valueExt is implemented by the Ext of a value the source declared.
type valueExt interface {
	// ONNXValue returns the value's type and doc string as imported. While
	// the value still has them, its declarations are written as read.
	ONNXValue() (typ ir.TensorType, doc string)
}

// nodeExt is implemented by the Ext of a node with leftovers.
type nodeExt interface {
	// ONNXNode returns a NodeProto holding only the node's leftovers
	// (overload, metadata, device configurations, unknown fields).
	ONNXNode() *onnxpb.NodeProto
}

// attrExt is implemented by the Ext of an attribute.
type attrExt interface {
	// ONNXAttr returns the whole attribute as read for an AttrOther
	// attribute, else a template holding its unknown fields.
	ONNXAttr() *onnxpb.AttributeProto
}

// tensorExt is implemented by the Ext of an imported tensor.
type tensorExt interface {
	// ONNXTensor returns t's leftovers: metadata, unknown fields, external
	// placement, and, when t still holds the elements it was read with from
	// a typed field, that field.
	ONNXTensor(t *ir.Tensor) *onnxpb.TensorProto
	// ONNXExternalSource is the file the tensor was read from, or "".
	ONNXExternalSource() string
}

// sparseExt is implemented by the Ext of a tensor imported from a sparse
// initializer.
type sparseExt interface {
	// ONNXSparse returns the sparse form when t is unchanged.
	ONNXSparse(t *ir.Tensor) (values, indices *ir.Tensor, dims []int64, ok bool)
}
