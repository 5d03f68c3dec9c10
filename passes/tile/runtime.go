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
	// PoolGroup, when above 0, is the channel group in which a kept
	// convolution read only by a global average pool may be computed and
	// pooled (poolGroups): a multiple of it gives the same bits as the
	// whole convolution and pool. 0: never.
	PoolGroup int64
}

// ORT is ONNX Runtime 1.30's CPU execution provider (levels disabled to
// all) on x86 with AVX-512, whose blocked layout has 16 channels per block
// (MlasNchwcGetBlockSize), as on this project's machines: FusionGroups,
// and ORTLayoutCheck. ORTBlocks makes the rules for another block size:
// 8 on AVX2 machines, where more channel counts qualify (a tiling exact
// on AVX2 is exact on AVX-512 as well, not always the other way round).
var ORT = ORTBlocks(16)

// ortPoolGroup is the channel group poolGroups uses under ONNX Runtime,
// whatever the block. Measured (ORT 1.30, AVX-512, levels disabled and
// all; 29 models, 1×1 to 5×5 Conv, 3 to 160 input and 32 to 128 output
// channels, images 17² to 160²): groups of 16, 32, 48 or 64 channels
// pooled the same bits as the whole Conv and GlobalAveragePool; groups
// that are not a multiple of 16 (4 to 24 channels) changed the pooled
// values by a few ulps at level all in 12 of 13 models. So the group is
// 16 on AVX2 machines as well, where 16 channels are two blocks.
const ortPoolGroup = 16

// ORTBlocks returns ORT's rules for a blocked layout of block channels.
func ORTBlocks(block int64) Runtime {
	return Runtime{Name: fmt.Sprintf("ONNX Runtime (%d-channel blocks)", block), Groups: FusionGroups,
		Check:     func(before *ir.Graph) func(*ir.Graph, *Tiled) error { return ortLayoutCheck(before, block) },
		PoolGroup: ortPoolGroup}
}

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
// convolution (Conv, ConvTranspose, ConvInteger, QLinearConv), or a node
// the layout optimizer turns into one (fusionSource), followed by the
// chain of its only readers that ORT's fusions fold into it, each the
// only reader of the one before and none a graph output: any number of
// BatchNormalization nodes and Add, Sub, Mul or Div by a constant (new
// weights and bias), then at most one Add or Sum of another tensor (the
// Conv accumulating onto it), then at most one activation FusedConv runs
// (Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid). Nodes in no group
// are absent.
func FusionGroups(g *ir.Graph) map[*ir.Node]*ir.Node {
	groups := map[*ir.Node]*ir.Node{}
	isOut := map[*ir.Value]bool{}
	for _, o := range g.Outputs {
		isOut[o] = true
	}
	for _, n := range g.Nodes {
		if !std(n) || groups[n] != nil || !fusionSource(n) {
			continue
		}
		cur, summed := n, false
		for {
			out := cur.Outputs[0]
			if out == nil || len(out.Uses) != 1 || isOut[out] {
				break
			}
			c := out.Uses[0].Node
			if !std(c) || groups[c] != nil {
				break
			}
			stage := 0 // 1: folded into the weights, 2: summed, 3: activation
			switch c.Op {
			case "BatchNormalization":
				stage = 1
			case "Add", "Sub", "Mul", "Div", "Sum":
				if len(c.Inputs) == 2 && constant(c.Inputs[1-out.Uses[0].Index]) && c.Op != "Sum" {
					stage = 1
				} else if (c.Op == "Add" || c.Op == "Sum") && !summed {
					stage = 2
				}
			case "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid":
				stage = 3
			}
			if stage == 0 || (stage == 1 && summed) {
				break
			}
			groups[n], groups[c] = n, n
			if stage == 3 {
				break
			}
			summed = summed || stage == 2
			cur = c
		}
	}
	return groups
}

// fusionSource reports whether n starts a fusion group: a convolution, or
// a BatchNormalization or a Mul by a constant, which the layout optimizer
// rewrites as a 1×1 depthwise Conv when its input is in the blocked layout
// (measured at level all: a Mul by a per-channel constant became such a
// Conv, with the residual Add and the HardSigmoid after it fused in).
func fusionSource(n *ir.Node) bool {
	switch n.Op {
	case "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "BatchNormalization":
		return true
	case "Mul":
		return len(n.Inputs) == 2 && (constant(n.Inputs[0]) || constant(n.Inputs[1]))
	}
	return false
}

// constant reports whether v is a parameter or a Constant node's output.
func constant(v *ir.Value) bool {
	return v != nil && (v.IsConst() || (v.Def != nil && v.Def.Op == "Constant" && std(v.Def)))
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
// level layout and up on x86, 16-channel blocks) as a Runtime check. It converts Convs and
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
	return ortLayoutCheck(before, 16)
}

func ortLayoutCheck(before *ir.Graph, block int64) func(after *ir.Graph, t *Tiled) error {
	was := ortConverted(before, block)
	nodes := slices.Clone(before.Nodes)
	return func(after *ir.Graph, t *Tiled) error {
		now := ortConverted(after, block)
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

// ortConverted returns, for each node of g whose conversion by ONNX
// Runtime's layout optimizer changes the arithmetic, whether it is
// converted: an Add or Sum in a Conv's fusion group (the Conv accumulates
// onto the other operand) when every input is in the blocked layout; a
// BatchNormalization or a Mul by a constant outside any group (one after a
// Conv is folded into its weights first) and a GlobalAveragePool of
// block-aligned channels when its input is. Elementwise nodes converted without fusion compute
// the same values. Measured (level all, 16-channel blocks): a
// GlobalAveragePool after a Conv whose output was concatenated from bands
// changed its result for 16, 96 and 192 channels and kept it for 24.
func ortConverted(g *ir.Graph, block int64) map[*ir.Node]bool {
	blocked := ortBlocked(g, block)
	groups := FusionGroups(g)
	converted := map[*ir.Node]bool{}
	for _, n := range g.Nodes {
		if !std(n) {
			continue
		}
		inGroup := groups[n] != nil && groups[n] != n
		switch n.Op {
		case "Add", "Sum":
			if !inGroup {
				continue
			}
			all := true
			for _, v := range n.Inputs {
				all = all && v != nil && blocked[v]
			}
			converted[n] = all
		case "BatchNormalization":
			if !inGroup {
				converted[n] = blocked[n.Inputs[0]]
			}
		case "Mul":
			// A Mul by a constant becomes a 1×1 depthwise Conv, which
			// adds its product to +0: a −0 product comes out +0
			// (measured: 300 of 1536 outputs changed sign of zero).
			if fusionSource(n) && !inGroup {
				in := n.Inputs[0]
				if constant(in) {
					in = n.Inputs[1]
				}
				converted[n] = blocked[in]
			}
		case "GlobalAveragePool":
			converted[n] = blocked[n.Inputs[0]] && channels(n.Inputs[0])%block == 0
		}
	}
	return converted
}

// channels is a 4-D value's channel count, 0 when unknown.
func channels(v *ir.Value) int64 {
	if d, ok := v.Type.Dims(); ok && len(d) == 4 {
		return d[1]
	}
	return 0
}

// ortBlocked returns the values ONNX Runtime's layout optimizer may keep
// in its blocked layout, following NchwcTransformer's rules (read in ORT's
// source, nchwc_transformer.cc) but erring towards "blocked" where channel
// counts decide (a wrong "blocked" only makes the check stricter): a float
// Conv with constant 4-D weights; MaxPool and AveragePool (their input is
// reordered if need be); and, only when every input already is in the
// layout, every elementwise op (the source lists Add, Sum, Mul, Relu,
// Sigmoid and Tanh), BatchNormalization, a channel Concat, a nearest
// Resize with integer scales (asymmetric, floor,
// from opset 11) and global pools of block-aligned channels (measured:
// 24 channels stay unconverted with 16-channel blocks). A node fused into
// the Conv before it (its fusion group) carries the Conv's layout.
func ortBlocked(g *ir.Graph, block int64) map[*ir.Value]bool {
	blocked := map[*ir.Value]bool{}
	groups := FusionGroups(g)
	all := func(n *ir.Node) bool {
		some := false
		for _, v := range n.Inputs {
			if v == nil || constant(v) {
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
		c := channels(out)
		switch n.Op {
		case "Conv":
			blocked[out] = ortConvConverts(n)
		case "MaxPool", "AveragePool":
			blocked[out] = len(n.Outputs) < 2 || n.Outputs[1] == nil
		case "GlobalAveragePool", "GlobalMaxPool":
			blocked[out] = c%block == 0 && all(n)
		case "BatchNormalization":
			blocked[out] = all(n)
		case "Concat":
			blocked[out] = n.AttrInt("axis", 0) == 1 && all(n)
		case "Resize", "Upsample":
			blocked[out] = all(n) && ortResizeConverts(n)
		default:
			// Every elementwise op: ORT 1.30 carries the layout through
			// more activations than its older source lists (measured: a
			// HardSigmoid on a blocked tensor kept it blocked, and the
			// residual Add after it fused into the next Conv).
			if info := n.Info(); info != nil && info.Flags&ir.Elementwise != 0 {
				blocked[out] = all(n)
			}
		}
		if groups[n] != nil && groups[n] != n && blocked[n.Inputs[0]] {
			blocked[out] = true // fused into the Conv before it
		}
	}
	return blocked
}

// ortConvConverts reports whether NchwcTransformer may convert Conv n:
// float constant 4-D weights and a constant bias. (The transformer also
// checks channel counts, but ORT 1.30 converted a 4-channel depthwise
// Conv that the rules in its older source reject, so channel counts are
// not trusted here: a Conv counts as converted whatever its channels.)
func ortConvConverts(n *ir.Node) bool {
	if len(n.Inputs) < 2 || !constant(n.Inputs[1]) || n.Inputs[1].Type.DType != ir.Float32 {
		return false
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != nil && !constant(n.Inputs[2]) {
		return false
	}
	w, ok := n.Inputs[1].Type.Dims()
	return ok && len(w) == 4
}

// ortResizeConverts reports whether NchwcTransformer converts a Resize or
// Upsample whose input is in the blocked layout: nearest, constant
// integer scales with N and C unscaled, and from opset 11 the asymmetric
// coordinates with floor rounding and no sizes input.
func ortResizeConverts(n *ir.Node) bool {
	if m := n.AttrString("mode", "nearest"); m != "nearest" {
		return false
	}
	slot := 1
	if n.Op == "Resize" && n.Graph != nil && n.Graph.Opset("") >= 11 {
		if len(n.Inputs) != 3 || n.AttrString("coordinate_transformation_mode", "half_pixel") != "asymmetric" ||
			n.AttrString("nearest_mode", "round_prefer_floor") != "floor" {
			return false
		}
		slot = 2
	}
	if slot >= len(n.Inputs) || n.Inputs[slot] == nil || !constant(n.Inputs[slot]) {
		return false
	}
	t := ir.ConstTensor(n.Inputs[slot])
	if t == nil {
		return false
	}
	s, ok := t.Float64s()
	if !ok || len(s) != 4 || s[0] != 1 || s[1] != 1 {
		return false
	}
	for _, x := range s {
		if x <= 0 || x != float64(int64(x)) {
			return false
		}
	}
	return true
}
