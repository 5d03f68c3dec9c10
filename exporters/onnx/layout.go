package onnx

import (
	"slices"

	"github.com/remat-compile/remat/internal/onnxpb"
)

// How the exporter arranges the written node list: the outer-scope reads
// of a node's subgraphs (which a runtime's order model counts as edges)
// and Options.SinksLast. The runtime's order itself is not this package's
// knowledge: Options.RuntimeOrder supplies it (targets/ort for ONNX
// Runtime).

// isConstantProto reports whether np is a Constant of the default domain,
// which ONNX Runtime turns into an initializer.
func isConstantProto(np *onnxpb.NodeProto) bool {
	return np.GetOpType() == "Constant" && normDomain(np.GetDomain()) == ""
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

// sinksLast returns the node list with the sinks moved to the end in
// reverse order (Options.SinksLast): the nodes none of whose outputs
// another node reads, explicitly or from a subgraph, graph outputs not
// counting, Constants excepted. The list stays topological.
//
// ONNX Runtime's search (targets/ort) starts from the sinks, the highest node
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
