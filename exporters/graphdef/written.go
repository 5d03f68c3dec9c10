package graphdef

import (
	"fmt"
	"slices"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Written is a graph as written, in the form a runtime's order model reads
// (Options.RuntimeOrder; targets/tfjs simulates TensorFlow.js's executor
// on it).
type Written struct {
	// Nodes are the NodeDefs in file order.
	Nodes []WrittenNode
	// Inputs are the Placeholders fed (the graph's inputs), in the
	// graph's order; Outputs the tensors the model returns ("node" or
	// "node:k"), in the graph's order.
	Inputs, Outputs []string
}

// WrittenNode is one NodeDef as written.
type WrittenNode struct {
	Name, Op string
	// Inputs are the NodeDef's inputs: "node", "node:k", then "^node".
	Inputs []string
	// Node is the op node of the graph it writes; Value the graph input
	// (Placeholder) or parameter (Const); both nil for the exporter's
	// helpers (Helper "gate" or "identity") and for NodeDefs read back
	// from a file (ReadWritten).
	Node   *ir.Node
	Value  *ir.Value
	Helper string
}

// written describes the entries.
func (ex *exporter) written() *Written {
	w := &Written{Nodes: make([]WrittenNode, len(ex.entries))}
	for i, e := range ex.entries {
		w.Nodes[i] = WrittenNode{Name: e.name(), Op: e.nd.GetOp(), Inputs: slices.Clone(e.nd.Input), Node: e.node, Value: e.value, Helper: e.helper}
	}
	for _, v := range ex.g.Inputs {
		w.Inputs = append(w.Inputs, ex.valueNames[v])
	}
	for _, v := range ex.g.Outputs {
		w.Outputs = append(w.Outputs, ex.tensorName(v))
	}
	return w
}

// WrittenGraph returns g as Export(g, opts) writes it: its NodeDefs in
// file order with the order-forcing helpers, and its inputs and outputs.
func WrittenGraph(g *ir.Graph, opts Options) (*Written, error) {
	if opts.Format == FormatAuto {
		opts.Format = FormatTFJS
	}
	ex, err := newExporter(g, opts)
	if err != nil {
		return nil, err
	}
	return ex.written(), nil
}

// ReadWritten reads a model's NodeDefs for a runtime's order model: a
// binary GraphDef, or a model.json's modelTopology (its weights are not
// read). Inputs are the Placeholders in file order; Outputs are left
// empty (a GraphDef does not say them).
func ReadWritten(data []byte) (*Written, error) {
	gd := &tfpb.GraphDef{}
	if t := trimJSON(data); len(t) > 0 && t[0] == '{' {
		ms, err := tfpb.JSONMembers(data, true)
		if err != nil {
			return nil, fmt.Errorf("graphdef: ReadWritten: %w", err)
		}
		topo := member(ms, keyTopology)
		if topo == nil {
			return nil, fmt.Errorf("graphdef: ReadWritten: model.json has no modelTopology")
		}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(topo, gd); err != nil {
			return nil, fmt.Errorf("graphdef: ReadWritten: %w", err)
		}
	} else if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, gd); err != nil {
		return nil, fmt.Errorf("graphdef: ReadWritten: %w", err)
	}
	w := &Written{}
	for _, nd := range gd.GetNode() {
		w.Nodes = append(w.Nodes, WrittenNode{Name: nd.GetName(), Op: nd.GetOp(), Inputs: slices.Clone(nd.GetInput())})
		if nd.GetOp() == "Placeholder" {
			w.Inputs = append(w.Inputs, nd.GetName())
		}
	}
	return w, nil
}

func trimJSON(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}
