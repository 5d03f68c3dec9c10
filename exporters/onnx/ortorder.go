package onnx

import (
	"errors"
	"fmt"
	"slices"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
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
// that holds at every level (see remat.go).

// ORTOrder reads an ONNX model and returns the positions in graph.node of
// its root graph's nodes in the order ONNX Runtime 1.30's sequential
// executor runs them at optimization level "disabled". Constant nodes,
// which ORT turns into initializers, are left out.
func ORTOrder(model []byte) ([]int, error) {
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(model, &mp); err != nil {
		return nil, fmt.Errorf("onnx: ORTOrder: %w", err)
	}
	if mp.Graph == nil {
		return nil, errors.New("onnx: ORTOrder: the model has no graph")
	}
	return ortOrder(mp.Graph.GetNode()), nil
}

// isConstantProto reports whether ORT turns the node into an initializer.
func isConstantProto(np *onnxpb.NodeProto) bool {
	return np.GetOpType() == "Constant" && normDomain(np.GetDomain()) == ""
}

// ortOrder simulates ORT's execution order of a node list (see above) and
// returns positions into nodes.
func ortOrder(nodes []*onnxpb.NodeProto) []int {
	// index[p] is the ORT node index of nodes[p], -1 for Constants; pos
	// maps an index back.
	index := make([]int, len(nodes))
	var pos []int
	producer := map[string]int{} // tensor name → position of a non-Constant producer
	for p, np := range nodes {
		if isConstantProto(np) {
			index[p] = -1
			for _, o := range np.GetOutput() {
				delete(producer, o)
			}
			continue
		}
		index[p] = len(pos)
		pos = append(pos, p)
		for _, o := range np.GetOutput() {
			if o != "" {
				producer[o] = p
			}
		}
	}
	// in[i] lists the input nodes of node index i, by index.
	in := make([][]int, len(pos))
	consumed := make([]bool, len(pos))
	for i, p := range pos {
		np := nodes[p]
		names := slices.Clone(np.GetInput())
		names = append(names, implicitInputs(np)...)
		for _, name := range names {
			if name == "" {
				continue
			}
			if q, ok := producer[name]; ok && q != p {
				j := index[q]
				in[i] = append(in[i], j)
				consumed[j] = true
			}
		}
		slices.Sort(in[i])
		in[i] = slices.Compact(in[i])
	}
	type work struct {
		node  int
		leave bool
	}
	var stack []work
	for i := range pos {
		if !consumed[i] {
			stack = append(stack, work{i, false})
		}
	}
	visited := make([]bool, len(pos))
	order := make([]int, 0, len(pos))
	for len(stack) > 0 {
		w := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w.leave {
			order = append(order, pos[w.node])
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

// implicitInputs returns the names of outer-scope values that the
// subgraphs of np read, in first-use order.
func implicitInputs(np *onnxpb.NodeProto) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range np.GetAttribute() {
		gs := a.GetGraphs()
		if a.G != nil {
			gs = append([]*onnxpb.GraphProto{a.G}, gs...)
		}
		for _, g := range gs {
			for _, name := range freeNames(g) {
				if !seen[name] {
					seen[name] = true
					out = append(out, name)
				}
			}
		}
	}
	return out
}

// freeNames returns the names g reads (in its nodes and nested subgraphs)
// that g does not define.
func freeNames(g *onnxpb.GraphProto) []string {
	defined := map[string]bool{"": true}
	for _, v := range g.GetInput() {
		defined[v.GetName()] = true
	}
	for _, t := range g.GetInitializer() {
		defined[t.GetName()] = true
	}
	for _, s := range g.GetSparseInitializer() {
		defined[s.GetValues().GetName()] = true
	}
	for _, np := range g.GetNode() {
		for _, o := range np.GetOutput() {
			defined[o] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	use := func(name string) {
		if !defined[name] && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, np := range g.GetNode() {
		for _, name := range np.GetInput() {
			use(name)
		}
		for _, name := range implicitInputs(np) {
			use(name)
		}
	}
	for _, v := range g.GetOutput() {
		use(v.GetName())
	}
	return out
}

// ORTSchedule returns the root nodes of g in the order ONNX Runtime 1.30's
// sequential executor runs, at level "disabled", the model that
// Export(g, opts) writes (with its rematerialization dependencies and
// order constraints, Options.Remat and Options.Order): ORTOrder's
// simulation of the written node list, mapped back to g's nodes. The
// exporter's helper nodes are left out; Constant nodes, which ORT turns
// into initializers, come first, in g's order. The result is a
// topological order of g's root nodes, fit for passes/memory's Simulate.
func ORTSchedule(g *ir.Graph, opts Options) ([]*ir.Node, error) {
	r, err := ORTRun(g, opts)
	if err != nil {
		return nil, err
	}
	return r.Seq, nil
}

// ORTRunResult is ORTSchedule's order with what the helper nodes in it
// read.
type ORTRunResult struct {
	// Seq is ORTSchedule's result.
	Seq []*ir.Node
	// Holds maps a node of Seq to the values of g that the exporter's
	// helper nodes ORT runs after it, before the next node of Seq, read:
	// a rematerialization dependency reads its anchor's output there, so
	// ORT keeps that buffer until then, however early the anchor's own
	// readers finish. It is passes/memory's Options.Holds.
	Holds map[*ir.Node][]*ir.Value
}

// ORTRun is ORTSchedule with the helper nodes' reads (ORTRunResult).
func ORTRun(g *ir.Graph, opts Options) (*ORTRunResult, error) {
	opts.Inline = true
	ex := &exporter{opts: opts}
	mp, err := ex.model(g)
	if err != nil {
		return nil, err
	}
	if len(ex.rootProtos) != len(g.Nodes) {
		return nil, fmt.Errorf("onnx: ORTSchedule: internal error: %d nodes written for %d", len(ex.rootProtos), len(g.Nodes))
	}
	nodeOf := make(map[*onnxpb.NodeProto]*ir.Node, len(g.Nodes))
	valueOf := map[string]*ir.Value{}
	r := &ORTRunResult{Holds: map[*ir.Node][]*ir.Value{}}
	for i, n := range g.Nodes {
		np := ex.rootProtos[i]
		nodeOf[np] = n
		if isConstantProto(np) {
			r.Seq = append(r.Seq, n)
		}
		for j, name := range np.GetOutput() {
			if name != "" && j < len(n.Outputs) && n.Outputs[j] != nil {
				valueOf[name] = n.Outputs[j]
			}
		}
	}
	nodes := mp.Graph.GetNode()
	var prev *ir.Node // the last node of g ORT ran
	for _, p := range ortOrder(nodes) {
		np := nodes[p]
		if n := nodeOf[np]; n != nil {
			r.Seq = append(r.Seq, n)
			prev = n
			continue
		}
		if prev == nil || isConstantProto(np) {
			continue
		}
		for _, name := range slices.Concat(np.GetInput(), implicitInputs(np)) {
			if v := valueOf[name]; v != nil && !slices.Contains(r.Holds[prev], v) {
				r.Holds[prev] = append(r.Holds[prev], v)
			}
		}
	}
	return r, nil
}

// sinksLast returns the node list with the sinks moved to the end in
// reverse order (Options.SinksLast): the nodes none of whose outputs
// another node reads, explicitly or from a subgraph, graph outputs not
// counting, Constants excepted. The list stays topological.
//
// ONNX Runtime's search (ortOrder) starts from the sinks, the highest node
// index first, and finishes everything a sink needs before it turns to the
// next. In a training graph every parameter gradient is a sink; written in
// the order of the backward pass, the first gradient computed is found
// last, so ORT runs the whole chain of data gradients down to the first
// layer before any parameter gradient above it, holding every forward
// activation those gradients read. Reversed at the end, the gradient
// computed first has the highest index and is finished first, and each
// next one needs only the next step of the data-gradient chain: the order
// of the backward pass.
func sinksLast(nodes []*onnxpb.NodeProto) []*onnxpb.NodeProto {
	read := map[string]bool{}
	for _, np := range nodes {
		for _, in := range np.GetInput() {
			read[in] = true
		}
		for _, in := range implicitInputs(np) {
			read[in] = true
		}
	}
	body := make([]*onnxpb.NodeProto, 0, len(nodes))
	var sinks []*onnxpb.NodeProto
	for _, np := range nodes {
		sink := !isConstantProto(np)
		for _, o := range np.GetOutput() {
			if o != "" && read[o] {
				sink = false
			}
		}
		if sink {
			sinks = append(sinks, np)
		} else {
			body = append(body, np)
		}
	}
	slices.Reverse(sinks)
	return append(body, sinks...)
}
