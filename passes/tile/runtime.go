package tile

import (
	"fmt"
	"slices"

	"github.com/remat-compile/remat/ir"
)

// Runtime is what a runtime's graph optimizer requires of region
// boundaries for the tiled graph to compute the same bits as the untiled
// one at every optimization level. The rewrite itself is exact op by op;
// these rules keep the optimizer from treating a node differently on one
// side of a Slice or Concat that tiling put in its way.
type Runtime struct {
	// Name names the runtime in errors.
	Name string
	// Groups returns, for each node the optimizer may fuse with others,
	// the first node of its group; regions take groups whole.
	Groups func(g *ir.Graph) map[*ir.Node]*ir.Node
	// Check, called with a graph before a rewrite, returns the check of
	// the rewritten graph: an error when the runtime would optimize a
	// node or a band copy of it differently than the node before.
	Check func(before *ir.Graph) func(after *ir.Graph, t *Tiled) error
}

// ORT is ONNX Runtime 1.30's CPU execution provider (levels disabled to
// all): FusionGroups, and ORTLayoutCheck.
var ORT = Runtime{Name: "ONNX Runtime", Groups: FusionGroups, Check: ORTLayoutCheck}

// A runtime's graph optimizer fuses some nodes into the node before them:
// ONNX Runtime folds a BatchNormalization or a Mul or Add by a constant
// into the Conv before it (new weights, so new rounding) and runs an
// activation or a residual Add inside the Conv's kernel. Inside a band the
// same nodes follow each other, so the band fuses them the same way; but a
// region boundary between them puts a Slice or a Concat in between, and the
// fusion no longer happens on one side only. Measured (ORT 1.30, level
// all): tiling a 5×5 Conv into 2 bands but leaving the per-channel Mul
// after it outside the region changed 272 of 408 output elements (by up to
// 1.4e-6), while tiling both together, or neither, gave identical bits.
// So regions must take such chains whole: FusionGroups lists them, and Fit
// only forms regions that are unions of whole groups.

// FusionGroups returns, for each node of g that ONNX Runtime 1.30 may fuse
// with others (levels basic to all), the first node of its group: a
// convolution (Conv, ConvTranspose, ConvInteger, QLinearConv) followed by
// the chain of its only readers that ORT's fusions fold into it
// (BatchNormalization; Add, Sub, Mul or Div; the activations FusedConv
// runs: Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid; and Sum), each
// the only reader of the one before and none a graph output. Nodes in no
// group are absent.
func FusionGroups(g *ir.Graph) map[*ir.Node]*ir.Node {
	groups := map[*ir.Node]*ir.Node{}
	isOut := map[*ir.Value]bool{}
	for _, o := range g.Outputs {
		isOut[o] = true
	}
	for _, n := range g.Nodes {
		if !std(n) || !slices.Contains([]string{"Conv", "ConvTranspose", "ConvInteger", "QLinearConv"}, n.Op) {
			continue
		}
		cur := n
		for {
			out := cur.Outputs[0]
			if out == nil || len(out.Uses) != 1 || isOut[out] {
				break
			}
			c := out.Uses[0].Node
			if !std(c) || !fusesIntoConv[c.Op] || groups[c] != nil {
				break
			}
			groups[n], groups[c] = n, n
			cur = c
		}
	}
	return groups
}

var fusesIntoConv = map[string]bool{
	"BatchNormalization": true, "Add": true, "Sub": true, "Mul": true, "Div": true, "Sum": true,
	"Relu": true, "Clip": true, "LeakyRelu": true, "Sigmoid": true, "Tanh": true, "HardSigmoid": true,
}

func std(n *ir.Node) bool { return n.Domain == "" || n.Domain == "ai.onnx" }

// closeRegion returns the nodes of set (in g's order) after making it a
// union of whole fusion groups: a group partly in the set joins it whole
// when every member is in allowed, and leaves it otherwise.
func closeRegion(g *ir.Graph, set map[*ir.Node]bool, groups map[*ir.Node]*ir.Node, allowed func(*ir.Node) bool) []*ir.Node {
	members := map[*ir.Node][]*ir.Node{}
	for _, n := range g.Nodes {
		if l := groups[n]; l != nil {
			members[l] = append(members[l], n)
		}
	}
	for _, ms := range members {
		in, ok := false, true
		for _, m := range ms {
			in = in || set[m]
			ok = ok && allowed(m)
		}
		if !in {
			continue
		}
		for _, m := range ms {
			set[m] = ok
		}
	}
	var out []*ir.Node
	for _, n := range g.Nodes {
		if set[n] {
			out = append(out, n)
		}
	}
	return out
}

// ORTLayoutCheck is ONNX Runtime's layout optimizer (NchwcTransformer,
// level layout and up on x86) as a Runtime check. It converts Convs and
// pools to a blocked channel layout (NCHWc) and carries the layout through
// the nodes after them (Add, Sum, Mul, channel Concat, Relu, Sigmoid,
// Tanh, BatchNormalization, nearest Resize, GlobalAveragePool,
// GlobalMaxPool) only while every input of such a node is already in that
// layout; a Slice, or a Concat along a spatial axis, is not. Three of
// those conversions change the arithmetic: an Add or Sum fused into the
// Conv before it (the Conv accumulates onto the other operand),
// BatchNormalization rewritten as a 1×1 depthwise Conv, and
// GlobalAveragePool summing in another order. The check recomputes, on
// the graph before and after a rewrite, which of those nodes the
// optimizer converts, and fails when a node, or a band copy of it, would
// be converted differently. Measured (level all): a residual block (Conv →
// Add of its input → Relu) whose skip operand a band sliced changed 388 of
// 1920 outputs by up to 4.8e-7; a channel Concat of sliced inputs before
// Tanh and a residual Add changed 3706 of 19712 by up to 3.8e-6;
// BatchNormalization after a tiled Resize changed 28 of 684.
func ORTLayoutCheck(before *ir.Graph) func(after *ir.Graph, t *Tiled) error {
	was := ortConverted(before)
	nodes := slices.Clone(before.Nodes)
	return func(after *ir.Graph, t *Tiled) error {
		now := ortConverted(after)
		for _, n := range nodes {
			w, ok := was[n]
			if !ok {
				continue
			}
			if c, present := now[n]; present && c != w {
				return fmt.Errorf("ONNX Runtime's layout optimizer would treat %s differently after tiling (see ORTLayoutCheck)", n)
			}
			for _, c := range t.Copies[n] {
				if now[c] != w {
					return fmt.Errorf("ONNX Runtime's layout optimizer would treat %s's band copy %s differently than %s (see ORTLayoutCheck)", n, c, n)
				}
			}
		}
		return nil
	}
}

// ortConverted returns, for each Add, Sum, BatchNormalization and
// GlobalAveragePool of g, whether ONNX Runtime's layout optimizer may
// convert it (every input in the blocked layout).
func ortConverted(g *ir.Graph) map[*ir.Node]bool {
	blocked := ortBlocked(g)
	converted := map[*ir.Node]bool{}
	for _, n := range g.Nodes {
		if !std(n) {
			continue
		}
		switch n.Op {
		case "Add", "Sum":
			all := true
			for _, v := range n.Inputs {
				all = all && v != nil && blocked[v]
			}
			converted[n] = all
		case "BatchNormalization", "GlobalAveragePool":
			converted[n] = len(n.Inputs) > 0 && blocked[n.Inputs[0]]
		}
	}
	return converted
}

// ortBlocked returns the values ONNX Runtime's layout optimizer may keep
// in its blocked layout: an over-approximation of NchwcTransformer's rules
// (channel alignment is not checked, so any float 4-D Conv counts).
func ortBlocked(g *ir.Graph) map[*ir.Value]bool {
	blocked := map[*ir.Value]bool{}
	groups := FusionGroups(g)
	all := func(n *ir.Node) bool {
		some := false
		for _, v := range n.Inputs {
			if v == nil || v.IsConst() || (v.Def != nil && v.Def.Op == "Constant") {
				continue
			}
			if !blocked[v] {
				return false
			}
			some = true
		}
		return some
	}
	for _, n := range g.Nodes {
		if !std(n) || len(n.Outputs) == 0 || n.Outputs[0] == nil {
			continue
		}
		out := n.Outputs[0]
		if d, ok := out.Type.Dims(); !ok || len(d) != 4 || out.Type.DType != ir.Float32 {
			continue
		}
		switch n.Op {
		case "Conv", "MaxPool", "AveragePool":
			blocked[out] = true
		case "Add", "Sum", "Mul", "Relu", "Sigmoid", "Tanh", "BatchNormalization", "Resize", "Upsample", "GlobalAveragePool", "GlobalMaxPool":
			blocked[out] = all(n)
		case "Concat":
			blocked[out] = n.AttrInt("axis", 0) == 1 && all(n)
		}
		if groups[n] != nil && groups[n] != n && blocked[n.Inputs[0]] {
			blocked[out] = true // fused into the Conv before it
		}
	}
	return blocked
}
