package ort

import (
	"slices"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
)

// ONNX Runtime does not run a graph's nodes in the file's order. Its
// sequential executor takes the order of GraphViewer, which is the
// post-order of a depth-first search that starts at the sink nodes and,
// at each node, first goes fully into the producer with the highest node
// index (research note ort-execution.md, Q1; graph_viewer.cc and
// Graph::ReverseDFSFrom in ORT's source: the leaves and each node's input
// nodes are pushed onto a stack in increasing index order, so the highest
// index is popped, entered and finished first). The node index is the
// node's position in GraphProto.node, counting only the nodes ORT keeps:
// it turns Constant nodes into initializers when it loads a model, so
// they get no index and give no edges. A sink (leaf) is a node none of
// whose outputs another node reads; graph outputs do not count. Edges
// include the outer-scope values that a node's subgraphs read (implicit
// inputs).
//
// This is the order at optimization level "disabled". Optimizers that
// create nodes (fusions, NCHWc) give them new, higher indices, so at
// other levels the order can differ; a data dependency is the only thing
// that holds at every level (exporters/onnx, remat.go).

// Order returns the positions of a written root node list in the order
// ONNX Runtime 1.30's sequential executor runs it at optimization level
// "disabled". Constant nodes, which ORT turns into initializers, are left
// out. It is exporters/onnx's Options.RuntimeOrder for ONNX Runtime.
func Order(nodes []onnxexp.WrittenNode) []int {
	// index[p] is the ORT node index of nodes[p], -1 for Constants; pos
	// maps an index back.
	index := make([]int, len(nodes))
	var pos []int
	producer := map[string]int{} // tensor name → position of a non-Constant producer
	for p := range nodes {
		w := &nodes[p]
		if w.Constant() {
			index[p] = -1
			for _, o := range w.Outputs {
				delete(producer, o)
			}
			continue
		}
		index[p] = len(pos)
		pos = append(pos, p)
		for _, o := range w.Outputs {
			if o != "" {
				producer[o] = p
			}
		}
	}
	// in[i] lists the input nodes of node index i, by index.
	in := make([][]int, len(pos))
	for i, p := range pos {
		for _, name := range nodes[p].Inputs {
			if name == "" {
				continue
			}
			if q, ok := producer[name]; ok && q != p {
				in[i] = append(in[i], index[q])
			}
		}
	}
	order := dfsOrder(in)
	for k, i := range order {
		order[k] = pos[i]
	}
	return order
}

// dfsOrder is GraphViewer's order of a graph whose node i reads the
// outputs of the nodes in[i] (by index; repeats allowed): the post-order of
// a depth-first search from the sinks, in increasing index, that enters the
// unvisited input node of highest index first. It returns the indices in
// that order.
func dfsOrder(in [][]int) []int {
	consumed := make([]bool, len(in))
	for i := range in {
		slices.Sort(in[i])
		in[i] = slices.Compact(in[i])
		for _, j := range in[i] {
			consumed[j] = true
		}
	}
	type work struct {
		node  int
		leave bool
	}
	var stack []work
	for i := range in {
		if !consumed[i] {
			stack = append(stack, work{i, false})
		}
	}
	visited := make([]bool, len(in))
	order := make([]int, 0, len(in))
	for len(stack) > 0 {
		w := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w.leave {
			order = append(order, w.node)
			continue
		}
		if visited[w.node] {
			continue
		}
		visited[w.node] = true
		stack = append(stack, work{w.node, true})
		for _, j := range in[w.node] { // increasing: the highest is popped first
			if !visited[j] {
				stack = append(stack, work{j, false})
			}
		}
	}
	return order
}

// OrderOfModel reads a serialized ONNX model and returns the positions in
// its graph.node of the root graph's nodes in ONNX Runtime's order
// (Order).
func OrderOfModel(model []byte) ([]int, error) {
	nodes, err := onnxexp.ReadWritten(model)
	if err != nil {
		return nil, err
	}
	return Order(nodes), nil
}

// Run is the order in which ONNX Runtime runs the model that exporting a
// graph writes, in terms of the graph's nodes.
type Run struct {
	// Seq is the root graph's nodes in ORT's order: Constant nodes,
	// which ORT turns into initializers, first, in the graph's order; the
	// exporter's helper nodes left out. It is a topological order of the
	// graph, fit for memory.Simulate.
	Seq []*ir.Node
	// Holds maps a node of Seq to the values of the graph that the
	// exporter's helper nodes ORT runs after it, before the next node of
	// Seq, read: a rematerialization dependency reads its anchor's output
	// there, so ORT keeps that buffer until then, however early the
	// anchor's own readers finish. It is memory.Options.Holds.
	Holds map[*ir.Node][]*ir.Value
}

// Schedule simulates ORT's order (level "disabled") of the model that
// exporters/onnx writes for g with opts (its rematerialization
// dependencies and order constraints included; opts.RuntimeOrder is set
// to Order).
func Schedule(g *ir.Graph, opts onnxexp.Options) (*Run, error) {
	opts.RuntimeOrder = Order
	nodes, err := onnxexp.Written(g, opts)
	if err != nil {
		return nil, err
	}
	r := &Run{Holds: map[*ir.Node][]*ir.Value{}}
	for _, n := range g.Nodes {
		if isConstant(n) {
			r.Seq = append(r.Seq, n)
		}
	}
	valueOf := map[string]*ir.Value{}
	for i := range nodes {
		w := &nodes[i]
		if w.Node == nil {
			continue
		}
		for j, name := range w.Outputs {
			if name != "" && j < len(w.Node.Outputs) && w.Node.Outputs[j] != nil {
				valueOf[name] = w.Node.Outputs[j]
			}
		}
	}
	var prev *ir.Node // the last node of g ORT ran
	for _, p := range Order(nodes) {
		w := &nodes[p]
		if w.Node != nil {
			r.Seq = append(r.Seq, w.Node)
			prev = w.Node
			continue
		}
		if prev == nil || w.Constant() {
			continue
		}
		for _, name := range w.Inputs {
			if v := valueOf[name]; v != nil && !slices.Contains(r.Holds[prev], v) {
				r.Holds[prev] = append(r.Holds[prev], v)
			}
		}
	}
	return r, nil
}

// isConstant reports whether n is a Constant node of the default domain,
// which ORT turns into an initializer.
func isConstant(n *ir.Node) bool {
	return n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx")
}
