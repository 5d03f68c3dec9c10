package graphdef

import (
	"encoding/json"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
)

// The importer (importers/graphdef) keeps what the IR does not model in
// Ext fields; the exporter may not import it (DESIGN.md), so it reads
// them through these interfaces, which the importer's Ext types satisfy.

// modelExt is the Ext of an imported graph (importers/graphdef
// *ModelInfo).
type modelExt interface {
	// TFGraphDef returns the graph-level fields as read, without nodes.
	TFGraphDef() *tfpb.GraphDef
	// TFJSTopLevel returns model.json's members in file order.
	TFJSTopLevel() (keys []string, values []json.RawMessage, ok bool)
	// TFJSShards returns the shards as read, in manifest order.
	TFJSShards() (paths []string, groups []int, contents [][]byte)
	// TFJSSource returns model.json as read.
	TFJSSource() []byte
}

// nodeExt is the Ext of an imported node, graph input or parameter
// (*NodeInfo, *ConstInfo).
type nodeExt interface {
	TFNode() *tfpb.NodeDef
	TFIndex() int
	TFValueControls() []*ir.Value
	TFControl() []*ir.Node
}

// constExt is the Ext of a parameter imported from a Const (*ConstInfo).
type constExt interface {
	nodeExt
	TFConstUnchanged(t *ir.Tensor) bool
	TFWeight() (entry json.RawMessage, stored []byte, ok bool)
}

// attrExt is the Ext of an imported attribute (*AttrInfo).
type attrExt interface {
	TFAttr() *tfpb.AttrValue
}

// model returns the Ext of the graph, or nil for a graph not read from a
// TensorFlow file.
func (ex *exporter) model() modelExt {
	m, _ := ex.g.Ext.(modelExt)
	return m
}

func nodeExtOf(x any) nodeExt {
	n, _ := x.(nodeExt)
	return n
}
