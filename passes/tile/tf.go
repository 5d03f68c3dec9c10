package tile

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// TensorFlow graphs (ir.TFDomain) get TensorFlow ops that TensorFlow.js
// 4.22 runs: a band reads its rows through Slice (begin and size int32
// Consts; a band copy of such a Slice, tiling a band again along the
// other axis, gets the band's size), the bands' rows of a region output
// are joined by ConcatV2 (an int32 Const axis) that takes over the
// original node's name (TensorFlow names a tensor by its node, so readers
// and the model's signature keep it), and a band copy of a window op gets
// its band's pads:
//
//   - padding "SAME" stays where TensorFlow's SAME padding of the band's
//     extents is the band's (TFBandPadding);
//   - otherwise a convolution (Conv2D, DepthwiseConv2dNative and their
//     fused forms) takes padding "EXPLICIT" with explicit_paddings, which
//     tfjs-converter 4.22 maps for those four ops (getPadding) and
//     tfjs-core's kernels take as explicit pads;
//   - a MaxPool reads its input through a PadV2 with −∞ and runs VALID:
//     the maximum of a window is the maximum of its rows inside the image
//     either way (tfjs-converter ignores a pool's explicit_paddings);
//   - an AvgPool's band never pads (ir.Spatial leaves SAME average
//     pooling that would pad along the axis non-local).

// int32s returns an int32 parameter of the given shape holding vals
// (shared by content), as TensorFlow's index operands are.
func (b *builder) int32s(shape []int64, vals ...int64) *ir.Value {
	key := fmt.Sprint("int32", shape, vals)
	if v := b.params[key]; v != nil {
		return v
	}
	raw := make([]byte, 4*len(vals))
	name := "tile_const"
	for i, x := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(x)))
		name += "_" + strconv.FormatInt(x, 10)
	}
	v := b.g.AddParam(b.unique(name), ir.TensorOf(ir.Int32, shape...), &ir.Tensor{DType: ir.Int32, Shape: shape, Raw: raw})
	b.params[key] = v
	return v
}

// negInf returns a float32 scalar parameter holding −∞.
func (b *builder) negInf() *ir.Value {
	const key = "float32 -inf"
	if v := b.params[key]; v != nil {
		return v
	}
	v := b.g.AddParam(b.unique("tile_neg_inf"), ir.TensorOf(ir.Float32), ir.Float32Tensor(nil, float32(math.Inf(-1))))
	b.params[key] = v
	return v
}

// tfType is the "T" attribute of a TensorFlow op on values of v's type.
func tfType(v *ir.Value) ir.Attr {
	return ir.StringAttr("T", ir.TFDTypeName(v.Type.DType))
}

// sliceTF is slice for a TensorFlow graph: Slice with int32 begin and
// size.
func (b *builder) sliceTF(v *ir.Value, axis int, lo, hi int64, base string) *ir.Value {
	t := withExtent(v.Type, axis, hi-lo)
	d, _ := t.Dims()
	begin := make([]int64, len(d))
	begin[axis] = lo
	rank := []int64{int64(len(d))}
	n := b.node("Slice", base, []*ir.Value{v, b.int32s(rank, begin...), b.int32s(rank, d...)}, base, t)
	n.SetAttr(tfType(v))
	n.SetAttr(ir.StringAttr("Index", "DT_INT32"))
	return n.Outputs[0]
}

// concatTF joins pieces along axis into a ConcatV2 that replaces v, named
// as v's producer was (the producer is renamed).
func (b *builder) concatTF(v *ir.Value, pieces []*ir.Value, axis int) {
	name, node := v.Name, v.Def.Name
	v.Name = b.unique(name + "_untiled")
	v.Def.Name = b.unique(node + "_untiled")
	ins := append(slices.Clone(pieces), b.int32s(nil, int64(axis)))
	c := b.node("ConcatV2", node+"_concat", ins, name+"_concat", v.Type.Clone())
	c.Name, c.Outputs[0].Name = node, name
	c.SetAttr(ir.IntAttr("N", int64(len(pieces))))
	c.SetAttr(tfType(v))
	c.SetAttr(ir.StringAttr("Tidx", "DT_INT32"))
	c.Outputs[0].Doc = v.Doc
	v.ReplaceUses(c.Outputs[0])
}

// adjustTF writes a band's geometry into its copy c of a TensorFlow
// region node (see the comment at the top of the file).
func (p *plan) adjustTF(bl *builder, c *ir.Node, rule *ir.SpatialRule, bd ir.SpatialBand) {
	c.DelAttr("_output_shapes")
	if c.Op == "Slice" {
		// Pointwise along the axis: a size that names the whole extent
		// names the band's.
		size, _ := ir.ConstTensor(c.Inputs[2]).Int64s()
		if size[p.axis] != -1 {
			size = slices.Clone(size)
			size[p.axis] = c.Outputs[0].Type.Shape[p.axis].Size
			c.SetInput(2, bl.int32s([]int64{int64(len(size))}, size...))
		}
		return
	}
	if rule.Kind == ir.SpatialPoint {
		return
	}
	pads := slices.Clone(rule.Pads)
	if pads != nil {
		pads[2*p.axis], pads[2*p.axis+1] = bd.PadBegin, bd.PadEnd
	}
	switch c.Op {
	case "Conv2D", "_FusedConv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative", "_FusedDepthwiseConv2dNative":
		if rule.TFBandPadding(c, bd) == "SAME" {
			return
		}
		c.SetAttr(ir.StringAttr("padding", "EXPLICIT"))
		c.SetAttr(ir.IntsAttr("explicit_paddings", pads...))
	case "MaxPool":
		if rule.TFBandPadding(c, bd) == "SAME" {
			return
		}
		c.SetAttr(ir.StringAttr("padding", "VALID"))
		if !slices.ContainsFunc(pads, func(x int64) bool { return x != 0 }) {
			return
		}
		x := c.Inputs[0]
		t := x.Type.Clone()
		for ax := range t.Shape {
			t.Shape[ax] = ir.D(t.Shape[ax].Size + pads[2*ax] + pads[2*ax+1])
		}
		pad := bl.node("PadV2", c.Name+"_pad", []*ir.Value{x, bl.int32s([]int64{int64(len(t.Shape)), 2}, pads...), bl.negInf()}, c.Name+"_pad", t)
		pad.SetAttr(tfType(x))
		pad.SetAttr(ir.StringAttr("Tpaddings", "DT_INT32"))
		c.SetInput(0, pad.Outputs[0])
	case "AvgPool":
		if bd.PadBegin != 0 || bd.PadEnd != 0 || (c.AttrString("padding", "") == "SAME" && rule.TFBandPadding(c, bd) != "SAME") {
			panic(fmt.Sprintf("tile: internal error: a band of AvgPool %s pads %d/%d", c.Name, bd.PadBegin, bd.PadEnd))
		}
	case "Pad", "PadV2", "MirrorPad":
		c.SetInput(1, bl.int32s([]int64{int64(len(pads) / 2), 2}, pads...))
	case "ResizeBilinear", "ResizeNearestNeighbor":
		d, _ := c.Outputs[0].Type.Dims()
		c.SetInput(1, bl.int32s([]int64{2}, d[1], d[2]))
	}
}
