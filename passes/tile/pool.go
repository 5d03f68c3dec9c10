package tile

import (
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// A squeeze-and-excitation block (SE; PP-OCR's RSE-FPN, MobileNet v3)
// reads a convolution's output x three times: a global average pool
// squeezes it to one number per channel, and a scale computed from those
// multiplies x, often added back to x. A region can band everything but
// the pool, which reads every row: Split.Keep leaves the original
// convolution in the graph for it, so x exists whole once, only to be
// averaged. But a global pool is per channel and so is a convolution's
// output channel (its weights and bias rows): x's channels can be
// computed and pooled a group at a time and the pooled groups
// concatenated, so that only one group of x is ever live.
//
// poolGroups is that rewrite of a kept value v: when v is the output of a
// Conv (group 1, constant weights and bias) whose only reader is a
// GlobalAveragePool, it replaces both by, for each group of size
// channels, a Conv with that group's weight and bias rows and a
// GlobalAveragePool of it, and a Concat of the pooled groups along the
// channels, placed where the Conv was. It returns the nodes added; nil
// when v is not such a value or its channels do not split into groups of
// size (a multiple of size, more than one group). The arithmetic of each
// output channel is the same as the whole Conv's and the pool's, op by op;
// ONNX Runtime computes the same bits when a group is a multiple of its
// blocked layout's 16 channels (Runtime.PoolGroup).
func poolGroups(g *ir.Graph, v *ir.Value, size int64) []*ir.Node {
	conv := v.Def
	if size <= 0 || conv == nil || conv.Op != "Conv" || !std(conv) || v.Index != 0 || len(v.Uses) != 1 || isOutput(g, v) {
		return nil
	}
	pool := v.Uses[0].Node
	if pool.Op != "GlobalAveragePool" || !std(pool) || len(pool.Outputs) != 1 || isOutput(g, pool.Outputs[0]) {
		return nil
	}
	if a := conv.Attr("group"); a != nil && a.Int != 1 {
		return nil
	}
	if len(conv.Inputs) < 2 || len(conv.Outputs) != 1 {
		return nil
	}
	ch := channels(v)
	if ch <= size || ch%size != 0 {
		return nil
	}
	w := rows(conv.Inputs[1], ch, size)
	if w == nil {
		return nil
	}
	var bias [][]*ir.Tensor
	if len(conv.Inputs) > 2 && conv.Inputs[2] != nil {
		if bias = [][]*ir.Tensor{rows(conv.Inputs[2], ch, size)}; bias[0] == nil {
			return nil
		}
	}
	at := slices.Index(g.Nodes, conv)
	if at < 0 {
		return nil
	}
	b := newBuilder(g, "")
	var pooled []*ir.Value
	var added []*ir.Node
	for k := range w {
		suffix := "_ch" + strconv.FormatInt(int64(k)*size, 10)
		ins := []*ir.Value{conv.Inputs[0], b.param(conv.Inputs[1], w[k], suffix)}
		if bias != nil {
			ins = append(ins, b.param(conv.Inputs[2], bias[0][k], suffix))
		}
		c := b.node("Conv", conv.Name+suffix, ins, v.Name+suffix, withExtent(v.Type, 1, size))
		for _, a := range conv.Attrs {
			c.SetAttr(a.Clone())
		}
		p := b.node("GlobalAveragePool", pool.Name+suffix, []*ir.Value{c.Outputs[0]}, pool.Outputs[0].Name+suffix, withExtent(pool.Outputs[0].Type, 1, size))
		pooled = append(pooled, p.Outputs[0])
		added = append(added, c, p)
	}
	cat := b.node("Concat", pool.Name+"_concat", pooled, pool.Outputs[0].Name+"_concat", pool.Outputs[0].Type.Clone())
	cat.SetAttr(ir.IntAttr("axis", 1))
	added = append(added, cat)
	pool.Outputs[0].ReplaceUses(cat.Outputs[0])
	g.RemoveNode(pool)
	g.RemoveNode(conv)
	for i, n := range added {
		g.Insert(at+i, n)
	}
	return added
}

// rows splits the constant w, whose first axis has ch entries, into
// groups of size entries along it; nil when w is not a constant of that
// first axis with its data in memory.
func rows(w *ir.Value, ch, size int64) []*ir.Tensor {
	t := ir.ConstTensor(w)
	if t == nil || len(t.Shape) == 0 || t.Shape[0] != ch || t.Strs != nil {
		return nil
	}
	n, ok := t.DType.StorageBytes(t.NumElements())
	if !ok || int64(len(t.Raw)) != n || n%ch != 0 || t.DType.Bits()%8 != 0 {
		return nil
	}
	per := n / ch
	var out []*ir.Tensor
	for lo := int64(0); lo < ch; lo += size {
		shape := slices.Clone(t.Shape)
		shape[0] = size
		out = append(out, &ir.Tensor{DType: t.DType, Shape: shape, Raw: slices.Clone(t.Raw[lo*per : (lo+size)*per])})
	}
	return out
}

// param adds t as a parameter named after the value it is part of.
func (b *builder) param(of *ir.Value, t *ir.Tensor, suffix string) *ir.Value {
	return b.g.AddParam(b.unique(of.Name+suffix), ir.TensorOf(t.DType, t.Shape...), t)
}
