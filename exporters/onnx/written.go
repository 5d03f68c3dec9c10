package onnx

import (
	"errors"
	"fmt"
	"slices"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// WrittenNode is one node of a model's root graph as written, in the form
// a runtime's order model reads (Options.RuntimeOrder; targets/ort
// simulates ONNX Runtime's order on it).
type WrittenNode struct {
	Name, Op, Domain string
	// Inputs are the tensor names the node reads: its inputs, then the
	// outer-scope values its subgraphs read. "" marks an absent input.
	Inputs []string
	// Outputs are its output tensor names ("" for an absent one).
	Outputs []string
	// Node is the IR node this is the written form of; nil for the
	// exporter's helper nodes (order-forcing dependencies) and for nodes
	// read back from a file (ReadWritten).
	Node *ir.Node
}

// Constant reports whether the node is a Constant of the default domain,
// which ONNX Runtime turns into an initializer when it loads the model.
func (w *WrittenNode) Constant() bool {
	return w.Op == "Constant" && normDomain(w.Domain) == ""
}

// writtenNodes describes nodes; nodeOf maps a proto to the IR node it
// writes (nil for none).
func writtenNodes(nodes []*onnxpb.NodeProto, nodeOf map[*onnxpb.NodeProto]*ir.Node) []WrittenNode {
	out := make([]WrittenNode, len(nodes))
	for i, np := range nodes {
		out[i] = WrittenNode{
			Name: np.GetName(), Op: np.GetOpType(), Domain: np.GetDomain(),
			Inputs:  slices.Concat(np.GetInput(), implicitInputs(np)),
			Outputs: slices.Clone(np.GetOutput()),
			Node:    nodeOf[np],
		}
	}
	return out
}

// Written returns the root graph's nodes in the order Export(g, opts)
// writes them, with the rematerialization's helper nodes (Options.Remat,
// Options.Order) and Options.SinksLast applied; every node of g appears
// once with its Node set.
func Written(g *ir.Graph, opts Options) ([]WrittenNode, error) {
	opts.Inline = true
	ex := &exporter{opts: opts}
	mp, err := ex.model(g)
	if err != nil {
		return nil, err
	}
	if len(ex.rootProtos) != len(g.Nodes) {
		return nil, fmt.Errorf("onnx: Written: internal error: %d nodes written for %d", len(ex.rootProtos), len(g.Nodes))
	}
	nodeOf := make(map[*onnxpb.NodeProto]*ir.Node, len(g.Nodes))
	for i, n := range g.Nodes {
		nodeOf[ex.rootProtos[i]] = n
	}
	return writtenNodes(mp.Graph.GetNode(), nodeOf), nil
}

// ReadWritten reads a serialized ONNX model and returns its root graph's
// nodes in file order, for a runtime's order model.
func ReadWritten(model []byte) ([]WrittenNode, error) {
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(model, &mp); err != nil {
		return nil, fmt.Errorf("onnx: ReadWritten: %w", err)
	}
	if mp.Graph == nil {
		return nil, errors.New("onnx: ReadWritten: the model has no graph")
	}
	return writtenNodes(mp.Graph.GetNode(), nil), nil
}
