// Package tfgraph builds the zoo's convolutional networks as TensorFlow
// graphs: Convert turns a zoo graph (ONNX-domain IR, NCHW) into the graph
// TensorFlow would hold for the same network, in the ir.TFDomain op domain
// and the NHWC layout, computing the same function with the same weights,
// so that one architecture can be compared across runtimes (ONNX Runtime
// running the zoo's ONNX model, TensorFlow.js running this one).
//
// Each ONNX node becomes one TensorFlow node, as TensorFlow's own
// inference graphs write them (what grappler leaves and tfjs-converter
// keeps):
//
//	Conv (+ bias)              _FusedConv2D with fused_ops [BiasAdd] (Conv2D without a bias);
//	                           depthwise (group = channels): FusedDepthwiseConv2dNative / DepthwiseConv2dNative;
//	                           filters [O, I, kh, kw] → HWIO [kh, kw, I, O] (depthwise [kh, kw, C, multiplier])
//	ConvTranspose              Conv2DBackpropInput (VALID) and, with a bias, BiasAdd
//	BatchNormalization         FusedBatchNormV3 (inference: is_training false)
//	Relu, Clip(0, 6)           Relu, Relu6
//	MaxPool                    MaxPool (SAME or VALID; other pads: PadV2 with the lowest float, then VALID)
//	GlobalAveragePool          Mean over H and W, keep_dims
//	Flatten                    Reshape (the next Gemm's weight rows follow NHWC's flattening order)
//	Gemm (transB)              _FusedMatMul with fused_ops [BiasAdd], the weights stored [in, out]
//	Add, Concat, Slice, LRN    AddV2, ConcatV2 (the axis in NHWC), Slice, LRN (TensorFlow's alpha is ONNX's alpha/size)
//
// Conv paddings are SAME or VALID where they match, EXPLICIT otherwise.
// The input "input" [B, 3, R, R] becomes a Placeholder [B, R, R, 3]; 4-D
// activations are NHWC, others keep their shape. Every value is typed.
// Networks with other ops (the transformers, the LSTM, SegNet's MaxUnpool)
// are an error naming the op.
package tfgraph

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// Convert returns the TensorFlow graph of the zoo graph g (which it types
// with shape inference first).
func Convert(g *ir.Graph) (*ir.Graph, error) {
	if err := shapes.Infer(g, shapes.Options{}); err != nil {
		return nil, fmt.Errorf("tfgraph: %w", err)
	}
	c := &converter{src: g, dst: ir.NewGraph(g.Name), vals: map[*ir.Value]*ir.Value{}, nhwc: map[*ir.Value]bool{}, params: map[string]*ir.Value{}, flat: map[*ir.Value][3]int64{}}
	c.dst.Doc = g.Doc
	for _, v := range g.Inputs {
		dims, ok := v.Type.Dims()
		if !ok || len(dims) != 4 {
			return nil, fmt.Errorf("tfgraph: %s: input %q is %v; only image models (NCHW inputs) have a TensorFlow form here", g.Name, v.Name, v.Type)
		}
		t := ir.TensorOf(v.Type.DType, dims[0], dims[2], dims[3], dims[1])
		c.vals[v] = c.dst.AddInput(v.Name, t)
		c.nhwc[c.vals[v]] = true
	}
	for _, n := range g.Nodes {
		if err := c.node(n); err != nil {
			return nil, fmt.Errorf("tfgraph: %s: node %q (%s): %w", g.Name, n.Name, n.OpName(), err)
		}
	}
	for _, o := range g.Outputs {
		v := c.vals[o]
		if v == nil {
			return nil, fmt.Errorf("tfgraph: %s: output %q is not computed", g.Name, o.Name)
		}
		c.dst.AddOutput(v)
	}
	if err := ir.Verify(c.dst); err != nil {
		return nil, fmt.Errorf("tfgraph: %s: internal error: %w", g.Name, err)
	}
	return c.dst, nil
}

type converter struct {
	src, dst *ir.Graph
	// vals maps a value of src to its value in dst; nhwc marks 4-D
	// values of dst in the NHWC layout.
	vals map[*ir.Value]*ir.Value
	nhwc map[*ir.Value]bool
	// params are dst's parameters by name.
	params map[string]*ir.Value
	// flat marks the values of dst that a Reshape flattened from NHWC
	// [B, H, W, C]: their C, H, W, for the Gemm that reads them.
	flat map[*ir.Value][3]int64
}

// fusedOps is the fused_ops attribute of a grappler-fused op.
func fusedOps(ops ...string) ir.Attr {
	a := ir.Attr{Name: "fused_ops", Kind: ir.AttrStrings}
	for _, o := range ops {
		a.Strs = append(a.Strs, []byte(o))
	}
	return a
}

func typeAttr(name string, dt ir.DType) ir.Attr { return ir.StringAttr(name, ir.TFDTypeName(dt)) }

// op adds a TensorFlow node with one output of type t.
func (c *converter) op(op, name string, in []*ir.Value, t ir.TensorType, attrs ...ir.Attr) *ir.Value {
	return c.opN(op, name, in, []ir.TensorType{t}, attrs...).Outputs[0]
}

func (c *converter) opN(op, name string, in []*ir.Value, ts []ir.TensorType, attrs ...ir.Attr) *ir.Node {
	outs := make([]string, len(ts))
	for k := range outs {
		outs[k] = name
		if k > 0 {
			outs[k] += ":" + strconv.Itoa(k)
		}
	}
	n := c.dst.NewNode(op, ir.TFDomain, in, outs)
	n.Name = name
	for k, t := range ts {
		n.Outputs[k].Type = t
	}
	for _, a := range attrs {
		n.SetAttr(a)
	}
	return n
}

// param adds (once) a parameter called name.
func (c *converter) param(name string, t *ir.Tensor) *ir.Value {
	if v := c.params[name]; v != nil {
		return v
	}
	t.Name = name
	v := c.dst.AddParam(name, ir.TensorOf(t.DType, t.Shape...), t)
	c.params[name] = v
	return v
}

// int32s adds (once) an int32 vector parameter.
func (c *converter) int32s(name string, vals ...int64) *ir.Value {
	return c.int32Const(name, []int64{int64(len(vals))}, vals...)
}

// int32Const adds (once) an int32 parameter of the given shape.
func (c *converter) int32Const(name string, shape []int64, vals ...int64) *ir.Value {
	raw := make([]byte, 4*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(x)))
	}
	return c.param(name, &ir.Tensor{DType: ir.Int32, Shape: shape, Raw: raw})
}

// in returns the dst value of input i of n, which must be computed.
func (c *converter) in(n *ir.Node, i int) (*ir.Value, error) {
	if i >= len(n.Inputs) || n.Inputs[i] == nil {
		return nil, fmt.Errorf("input %d is missing", i)
	}
	if v := c.vals[n.Inputs[i]]; v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("input %d (%q) is a value TensorFlow's form does not compute here", i, n.Inputs[i].Name)
}

// weight returns the data of input i of n, a parameter.
func weight(n *ir.Node, i int) (*ir.Tensor, error) {
	if i >= len(n.Inputs) || n.Inputs[i] == nil || n.Inputs[i].Data == nil {
		return nil, fmt.Errorf("input %d is not a parameter", i)
	}
	t := n.Inputs[i].Data
	if t.DType != ir.Float32 && t.DType != ir.Int64 {
		return nil, fmt.Errorf("input %d is %v; the converter handles float32 weights and int64 operands", i, t.DType)
	}
	return t, nil
}

// permute returns t's elements transposed by perm (out dim k is in dim
// perm[k]), for 4-byte elements.
func permute(t *ir.Tensor, perm []int) *ir.Tensor {
	in := t.Shape
	out := make([]int64, len(perm))
	for k, p := range perm {
		out[k] = in[p]
	}
	n := t.NumElements()
	raw := make([]byte, 4*n)
	inStride := make([]int64, len(in))
	s := int64(1)
	for d := len(in) - 1; d >= 0; d-- {
		inStride[d] = s
		s *= in[d]
	}
	idx := make([]int64, len(out))
	for o := int64(0); o < n; o++ {
		var src int64
		for k := range out {
			src += idx[k] * inStride[perm[k]]
		}
		copy(raw[4*o:4*o+4], t.Raw[4*src:4*src+4])
		for k := len(out) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < out[k] {
				break
			}
			idx[k] = 0
		}
	}
	return &ir.Tensor{DType: t.DType, Shape: out, Raw: raw}
}

// nhwcType is the NHWC type of the NCHW value v.
func nhwcType(v *ir.Value) (ir.TensorType, error) {
	dims, ok := v.Type.Dims()
	if !ok || len(dims) != 4 {
		return ir.TensorType{}, fmt.Errorf("value %q is %v; want a 4-D static shape", v.Name, v.Type)
	}
	return ir.TensorOf(v.Type.DType, dims[0], dims[2], dims[3], dims[1]), nil
}

// padding chooses the TensorFlow padding of a window op on a [_, H, W, _]
// input: VALID for no pads, SAME where ONNX's pads (top, left, bottom,
// right) are SAME's, EXPLICIT otherwise, with explicit_paddings.
func padding(inH, inW int64, k, s, d [2]int64, pads []int64) (string, []int64) {
	if len(pads) == 0 || !slices.ContainsFunc(pads, func(p int64) bool { return p != 0 }) {
		return "VALID", nil
	}
	same := true
	for a, in := range [2]int64{inH, inW} {
		out := (in + s[a] - 1) / s[a]
		total := max((out-1)*s[a]+(k[a]-1)*d[a]+1-in, 0)
		if pads[a] != total/2 || pads[a+2] != total-total/2 {
			same = false
		}
	}
	if same {
		return "SAME", nil
	}
	return "EXPLICIT", []int64{0, 0, pads[0], pads[2], pads[1], pads[3], 0, 0}
}

func ints2(a *ir.Attr, def int64) [2]int64 {
	if a == nil || len(a.Ints) < 2 {
		return [2]int64{def, def}
	}
	return [2]int64{a.Ints[0], a.Ints[1]}
}

func attrInts(a *ir.Attr) []int64 {
	if a == nil {
		return nil
	}
	return a.Ints
}

func (c *converter) node(n *ir.Node) error {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return fmt.Errorf("domain %q has no TensorFlow form here", n.Domain)
	}
	out := n.Outputs[0]
	set := func(v *ir.Value) { c.vals[out] = v; c.nhwc[v] = v.Type.Rank() == 4 }
	f32 := typeAttr("T", ir.Float32)
	nhwcAttr := ir.StringAttr("data_format", "NHWC")
	switch n.Op {
	case "Conv":
		x, w, t, err := c.convOperands(n)
		if err != nil {
			return err
		}
		xd, _ := x.Type.Dims()
		group := int64(1)
		if a := n.Attr("group"); a != nil {
			group = a.Int
		}
		k := [2]int64{w.Shape[2], w.Shape[3]}
		s, d := ints2(n.Attr("strides"), 1), ints2(n.Attr("dilations"), 1)
		pad, explicit := padding(xd[1], xd[2], k, s, d, attrInts(n.Attr("pads")))
		attrs := []ir.Attr{f32, nhwcAttr, ir.IntsAttr("strides", 1, s[0], s[1], 1), ir.IntsAttr("dilations", 1, d[0], d[1], 1), ir.StringAttr("padding", pad)}
		if explicit != nil {
			attrs = append(attrs, ir.IntsAttr("explicit_paddings", explicit...))
		}
		cin := xd[3]
		var filter *ir.Tensor
		var op, fused string
		switch {
		case group == 1:
			filter = permute(w, []int{2, 3, 1, 0}) // [O, I, kh, kw] → [kh, kw, I, O]
			op, fused = "Conv2D", "_FusedConv2D"
		case group == cin && w.Shape[1] == 1:
			// [C·m, 1, kh, kw] → [kh, kw, C, m]: output channel c·m+j is
			// input channel c's j-th filter.
			m := w.Shape[0] / cin
			r := &ir.Tensor{DType: w.DType, Shape: []int64{cin, m, k[0], k[1]}, Raw: w.Raw}
			filter = permute(r, []int{2, 3, 0, 1})
			op, fused = "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative"
		default:
			return fmt.Errorf("grouped convolution (group %d of %d channels) has no TensorFlow.js op", group, cin)
		}
		in := []*ir.Value{x, c.param(n.Inputs[1].Name, filter)}
		if b, err := c.bias(n); err != nil {
			return err
		} else if b != nil {
			in = append(in, b)
			op = fused
			attrs = append(attrs, fusedOps("BiasAdd"), ir.IntAttr("num_args", 1), ir.FloatAttr("epsilon", 0))
		}
		set(c.op(op, n.Name, in, t, attrs...))
	case "ConvTranspose":
		x, w, t, err := c.convOperands(n)
		if err != nil {
			return err
		}
		if p := attrInts(n.Attr("pads")); slices.ContainsFunc(p, func(v int64) bool { return v != 0 }) {
			return fmt.Errorf("a padded ConvTranspose is not converted")
		}
		s := ints2(n.Attr("strides"), 1)
		od, _ := t.Dims()
		filter := permute(w, []int{2, 3, 1, 0}) // [I, O, kh, kw] → [kh, kw, O, I]
		y := c.op("Conv2DBackpropInput", n.Name, []*ir.Value{c.int32s(n.Name+"/input_sizes", od...), c.param(n.Inputs[1].Name, filter), x}, t,
			f32, nhwcAttr, ir.IntsAttr("strides", 1, s[0], s[1], 1), ir.IntsAttr("dilations", 1, 1, 1, 1), ir.StringAttr("padding", "VALID"))
		if b, err := c.bias(n); err != nil {
			return err
		} else if b != nil {
			y = c.op("BiasAdd", n.Name+"/bias", []*ir.Value{y, b}, t, f32, nhwcAttr)
		}
		set(y)
	case "BatchNormalization":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		in := []*ir.Value{x}
		for i := 1; i <= 4; i++ {
			w, err := weight(n, i)
			if err != nil {
				return err
			}
			in = append(in, c.param(n.Inputs[i].Name, w))
		}
		eps := float32(1e-5)
		if a := n.Attr("epsilon"); a != nil {
			eps = a.Float
		}
		ch := ir.TensorOf(ir.Float32, in[1].Type.Shape[0].Size)
		// y, then batch mean and variance and two reserve spaces of C
		// values, and reserve_space_3, empty at inference.
		bn := c.opN("FusedBatchNormV3", n.Name, in, []ir.TensorType{x.Type, ch, ch, ch, ch, ir.TensorOf(ir.Float32, 0)},
			f32, typeAttr("U", ir.Float32), nhwcAttr, ir.FloatAttr("epsilon", eps), ir.IntAttr("is_training", 0), ir.FloatAttr("exponential_avg_factor", 1))
		set(bn.Outputs[0])
	case "Relu":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		set(c.op("Relu", n.Name, []*ir.Value{x}, x.Type, f32))
	case "Clip":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		lo, err1 := weight(n, 1)
		hi, err2 := weight(n, 2)
		if err1 != nil || err2 != nil || scalarF32(lo) != 0 || scalarF32(hi) != 6 {
			return fmt.Errorf("only Clip(0, 6), ReLU6, is converted")
		}
		set(c.op("Relu6", n.Name, []*ir.Value{x}, x.Type, f32))
	case "MaxPool":
		if len(n.Outputs) > 1 && n.Outputs[1] != nil && len(n.Outputs[1].Uses) > 0 {
			return fmt.Errorf("a MaxPool whose indices are read (SegNet's MaxUnpool) has no TensorFlow.js form")
		}
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		t, err := nhwcType(out)
		if err != nil {
			return err
		}
		xd, _ := x.Type.Dims()
		k, s := ints2(n.Attr("kernel_shape"), 1), ints2(n.Attr("strides"), 1)
		pads := attrInts(n.Attr("pads"))
		pad, explicit := padding(xd[1], xd[2], k, s, [2]int64{1, 1}, pads)
		if explicit != nil {
			// TensorFlow.js's MaxPool has no explicit paddings: pad with
			// the lowest float, which no window's maximum picks.
			pt := ir.TensorOf(ir.Float32, xd[0], xd[1]+pads[0]+pads[2], xd[2]+pads[1]+pads[3], xd[3])
			padsV := c.int32Const(n.Name+"/paddings", []int64{4, 2}, explicit...)
			lowest := c.param(n.Name+"/lowest", &ir.Tensor{DType: ir.Float32, Shape: []int64{}, Raw: binary.LittleEndian.AppendUint32(nil, math.Float32bits(-math.MaxFloat32))})
			x = c.op("PadV2", n.Name+"/pad", []*ir.Value{x, padsV, lowest}, pt, f32, typeAttr("Tpaddings", ir.Int32))
			pad = "VALID"
		}
		set(c.op("MaxPool", n.Name, []*ir.Value{x}, t, f32, nhwcAttr, ir.IntsAttr("ksize", 1, k[0], k[1], 1), ir.IntsAttr("strides", 1, s[0], s[1], 1), ir.StringAttr("padding", pad)))
	case "GlobalAveragePool":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		t, err := nhwcType(out)
		if err != nil {
			return err
		}
		set(c.op("Mean", n.Name, []*ir.Value{x, c.int32s("spatial_axes", 1, 2)}, t, f32, typeAttr("Tidx", ir.Int32), ir.IntAttr("keep_dims", 1)))
	case "Flatten":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		od, ok := out.Type.Dims()
		if !ok || len(od) != 2 {
			return fmt.Errorf("output %v: want a 2-D static shape", out.Type)
		}
		y := c.op("Reshape", n.Name, []*ir.Value{x, c.int32s(n.Name+"/shape", od...)}, ir.TensorOf(out.Type.DType, od...), f32, typeAttr("Tshape", ir.Int32))
		if xd, ok := x.Type.Dims(); ok && c.nhwc[x] && xd[1]*xd[2] > 1 {
			c.flat[y] = [3]int64{xd[3], xd[1], xd[2]}
		}
		c.vals[out] = y
	case "Gemm":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		w, err := weight(n, 1)
		if err != nil {
			return err
		}
		if a := n.Attr("transB"); a == nil || a.Int != 1 {
			return fmt.Errorf("only Gemm with transB = 1 is converted")
		}
		if a := n.Attr("transA"); a != nil && a.Int != 0 {
			return fmt.Errorf("Gemm with transA is not converted")
		}
		name := n.Inputs[1].Name
		if chw, ok := c.flat[x]; ok {
			// The rows of W follow ONNX's NCHW flattening (c, h, w);
			// TensorFlow flattened NHWC (h, w, c).
			r := &ir.Tensor{DType: w.DType, Shape: []int64{w.Shape[0], chw[0], chw[1], chw[2]}, Raw: w.Raw}
			p := permute(r, []int{0, 2, 3, 1})
			w = &ir.Tensor{DType: w.DType, Shape: []int64{w.Shape[0], w.Shape[1]}, Raw: p.Raw}
			name += "/nhwc"
		}
		// W [out, in] is stored as [in, out]: TensorFlow.js 4.22's wasm
		// _FusedMatMul computes wrong results with transpose_b (measured on
		// the zoo's classifiers; the cpu backend is right).
		in := []*ir.Value{x, c.param(name, permute(w, []int{1, 0}))}
		op := "MatMul"
		attrs := []ir.Attr{f32, ir.IntAttr("transpose_a", 0), ir.IntAttr("transpose_b", 0)}
		if b, err := c.bias(n); err != nil {
			return err
		} else if b != nil {
			in = append(in, b)
			op = "_FusedMatMul"
			attrs = append(attrs, fusedOps("BiasAdd"), ir.IntAttr("num_args", 1), ir.FloatAttr("epsilon", 0))
		}
		set(c.op(op, n.Name, in, out.Type.Clone(), attrs...))
	case "Add":
		a, err := c.in(n, 0)
		if err != nil {
			return err
		}
		b, err := c.in(n, 1)
		if err != nil {
			return err
		}
		if !a.Type.Equal(b.Type) || c.nhwc[a] != c.nhwc[b] {
			return fmt.Errorf("Add of %v and %v: only same-shaped operands are converted", a.Type, b.Type)
		}
		set(c.op("AddV2", n.Name, []*ir.Value{a, b}, a.Type.Clone(), f32))
	case "Concat":
		var in []*ir.Value
		for i := range n.Inputs {
			v, err := c.in(n, i)
			if err != nil {
				return err
			}
			in = append(in, v)
		}
		axis := n.Attr("axis").Int
		t := out.Type.Clone()
		if c.nhwc[in[0]] {
			if axis < 0 {
				axis += 4
			}
			axis = []int64{0, 3, 1, 2}[axis]
			if t, _ = nhwcType(out); t.Rank() != 4 {
				return fmt.Errorf("output %v: want a 4-D static shape", out.Type)
			}
		}
		in = append(in, c.int32Const("axis"+strconv.FormatInt(axis, 10), []int64{}, axis))
		set(c.op("ConcatV2", n.Name, in, t, f32, typeAttr("Tidx", ir.Int32), ir.IntAttr("N", int64(len(in)-1))))
	case "Slice":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		if !c.nhwc[x] {
			return fmt.Errorf("only slices of 4-D activations are converted")
		}
		t, err := nhwcType(out)
		if err != nil {
			return err
		}
		starts, err1 := weight(n, 1)
		axes, err2 := weight(n, 3)
		if err1 != nil || err2 != nil || len(n.Inputs) > 4 {
			return fmt.Errorf("only Slice with constant starts and axes and unit steps is converted")
		}
		begin := []int64{0, 0, 0, 0}
		for i, a := range int64s(axes) {
			if a < 0 {
				a += 4
			}
			begin[[]int64{0, 3, 1, 2}[a]] = int64s(starts)[i]
		}
		od, _ := t.Dims()
		set(c.op("Slice", n.Name, []*ir.Value{x, c.int32s(n.Name+"/begin", begin...), c.int32s(n.Name+"/size", od...)}, t, f32, typeAttr("Index", ir.Int32)))
	case "LRN":
		x, err := c.in(n, 0)
		if err != nil {
			return err
		}
		size := n.Attr("size").Int
		alpha, beta, bias := float32(1e-4), float32(0.75), float32(1)
		if a := n.Attr("alpha"); a != nil {
			alpha = a.Float
		}
		if a := n.Attr("beta"); a != nil {
			beta = a.Float
		}
		if a := n.Attr("bias"); a != nil {
			bias = a.Float
		}
		if size%2 == 0 {
			return fmt.Errorf("LRN of even size %d has no TensorFlow form (depth_radius is (size-1)/2)", size)
		}
		set(c.op("LRN", n.Name, []*ir.Value{x}, x.Type.Clone(), f32, ir.IntAttr("depth_radius", (size-1)/2),
			ir.FloatAttr("bias", bias), ir.FloatAttr("alpha", alpha/float32(size)), ir.FloatAttr("beta", beta)))
	default:
		return fmt.Errorf("op %s has no TensorFlow form in this converter (it handles the zoo's convolutional networks)", n.Op)
	}
	return nil
}

// convOperands returns the input, the weights and the NHWC output type of
// a Conv or ConvTranspose.
func (c *converter) convOperands(n *ir.Node) (*ir.Value, *ir.Tensor, ir.TensorType, error) {
	x, err := c.in(n, 0)
	if err != nil {
		return nil, nil, ir.TensorType{}, err
	}
	w, err := weight(n, 1)
	if err != nil {
		return nil, nil, ir.TensorType{}, err
	}
	t, err := nhwcType(n.Outputs[0])
	return x, w, t, err
}

// bias returns the parameter of n's optional bias (input 2), nil when n
// has none.
func (c *converter) bias(n *ir.Node) (*ir.Value, error) {
	if len(n.Inputs) < 3 || n.Inputs[2] == nil {
		return nil, nil
	}
	b, err := weight(n, 2)
	if err != nil {
		return nil, err
	}
	return c.param(n.Inputs[2].Name, b), nil
}

func scalarF32(t *ir.Tensor) float32 {
	if t.DType != ir.Float32 || len(t.Raw) != 4 {
		return float32(math.NaN())
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(t.Raw))
}

func int64s(t *ir.Tensor) []int64 {
	out := make([]int64, len(t.Raw)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Raw[8*i:]))
	}
	return out
}
