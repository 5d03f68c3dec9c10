package shapes

import (
	"github.com/remat-compile/remat/ir"
)

// tfFusedOps are the fused_ops lists of _FusedConv2D,
// FusedDepthwiseConv2dNative and _FusedMatMul that TensorFlow's grappler
// writes and TensorFlow.js runs, with the number of args each takes (the
// inputs after the input and the filter): a bias; a bias and a summand; the
// four batch-norm vectors; a bias and PReLU's alpha.
func tfFusedArgs(ops []string) (int, bool) {
	switch len(ops) {
	case 1:
		switch ops[0] {
		case "BiasAdd":
			return 1, true
		case "FusedBatchNorm":
			return 4, true
		}
	case 2:
		switch ops[0] + "," + ops[1] {
		case "BiasAdd,Relu", "BiasAdd,Relu6", "BiasAdd,Elu", "BiasAdd,LeakyRelu", "BiasAdd,Sigmoid", "BiasAdd,Tanh":
			return 1, true
		case "BiasAdd,Add", "BiasAdd,Prelu":
			return 2, true
		case "FusedBatchNorm,Relu", "FusedBatchNorm,Relu6", "FusedBatchNorm,Elu", "FusedBatchNorm,LeakyRelu":
			return 4, true
		}
	case 3:
		switch ops[0] + "," + ops[1] + "," + ops[2] {
		case "BiasAdd,Add,Relu", "BiasAdd,Add,Relu6", "BiasAdd,Add,Elu", "BiasAdd,Add,LeakyRelu":
			return 2, true
		}
	}
	return 0, false
}

// tfFused checks the fused_ops and args of a fused op whose output has
// channels ch (on axis chAxis of the output out): num_args matches the
// inputs, the list is one TensorFlow runs, a bias has the output's
// channels, and a summand has the output's shape.
func (c *nctx) tfFused(out []ir.Dim, chAxis int) bool {
	if !c.hasAttr("fused_ops") {
		if len(c.n.Inputs) > 2 {
			c.errf("has %d inputs but no fused_ops", len(c.n.Inputs))
			return false
		}
		return true
	}
	a := c.attr("fused_ops", ir.AttrStrings)
	var ops []string
	if a != nil {
		for _, s := range a.Strs {
			ops = append(ops, string(s))
		}
	}
	nargs := len(c.n.Inputs) - 2
	if n := c.attrInt("num_args", int64(nargs)); n != int64(nargs) {
		c.errf("num_args is %d, but the node has %d args (inputs after the input and the filter)", n, nargs)
		return false
	}
	want, ok := tfFusedArgs(ops)
	if !ok {
		if len(ops) == 0 && nargs == 0 {
			return true
		}
		c.errf("fused_ops %q is not a fusion TensorFlow runs", ops)
		return false
	}
	if want != nargs {
		c.errf("fused_ops %q takes %d args, the node has %d", ops, want, nargs)
		return false
	}
	for k := 2; k < len(c.n.Inputs); k++ {
		if !c.need(k, "args") {
			return false
		}
		s, ok := c.shape(k)
		if !ok || out == nil {
			continue
		}
		summand := len(ops) > 1 && ops[1] == "Add" && k == 3
		switch {
		case summand:
			if _, bad, _, _ := broadcast(out, s); bad {
				c.errf("the summand (input %d) has shape %s, the output %s", k, shapeString(s), shapeString(out))
				return false
			}
		case ops[0] == "FusedBatchNorm" || k == 2:
			if len(s) != 1 || conflict(s[0], out[chAxis]) {
				c.errf("arg %d has shape %s, want [%s] (the output channels)", k-2, shapeString(s), out[chAxis])
				return false
			}
		}
	}
	return true
}

// tfConvInputs reads x and the filter of a convolution: the layout, the
// window, and the output shape with the batch and spatial sizes filled.
// kdims are the filter's spatial dims; fin its input-channel axis.
func (c *nctx) tfConvInputs(def string) (x, f []ir.Dim, l layout, w window, out []ir.Dim, ok bool) {
	r := c.tfLayoutRank(def)
	if l, ok = c.tfLayout(def, r); !ok {
		return
	}
	n := r - 2
	var xok, fok bool
	x, xok = c.shape(0)
	f, fok = c.shape(1)
	if xok && len(x) != r {
		c.errf("input has shape %s, want rank %d (%s)", shapeString(x), r, c.attrString("data_format", def))
		return nil, nil, l, w, nil, false
	}
	if fok && len(f) != n+2 {
		c.errf("filter has shape %s, want rank %d", shapeString(f), n+2)
		return nil, nil, l, w, nil, false
	}
	if !fok {
		f = unknownDims(n + 2)
	}
	kernel := kernelSizes(f, n)
	if w, ok = c.tfWindow(l, r, kernel, "dilations"); !ok {
		return
	}
	out = unknownDims(r)
	if !xok {
		return nil, f, l, w, out, true
	}
	out[0] = x[0]
	if !c.spatialOut(w, l, x, out) {
		return nil, nil, l, w, nil, false
	}
	return x, f, l, w, out, true
}

// kernelSizes are the first n sizes of a filter f, -1 for an unknown one.
func kernelSizes(f []ir.Dim, n int) []int64 {
	k := make([]int64, n)
	for i := range k {
		k[i] = -1
		if f[i].Known() {
			k[i] = f[i].Size
		}
	}
	return k
}

// Conv2D, _FusedConv2D, Conv3D: input [N, spatial…, C] (or NCHW), filter
// [spatial…, C/groups, M]; output M channels. _FusedConv2D's args follow
// fused_ops.
func tfConv(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "filter") {
		return
	}
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	def := "NHWC"
	if c.n.Op == "Conv3D" {
		def = "NDHWC"
	}
	x, f, l, _, out, ok := c.tfConvInputs(def)
	if !ok {
		return
	}
	n := len(f) - 2
	if x != nil && x[l.channel].Known() && f[n].Known() && (f[n].Size == 0 || x[l.channel].Size%f[n].Size != 0) {
		c.errf("input has %d channels, the filter %d: the input's must be a multiple of the filter's", x[l.channel].Size, f[n].Size)
		return
	}
	out[l.channel] = f[n+1]
	if !c.tfFused(out, l.channel) {
		return
	}
	c.set(0, tensorType(dt, out))
}

// DepthwiseConv2dNative and its fused forms: filter [kh, kw, C, mult];
// output C·mult channels.
func tfDepthwiseConv(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "filter") {
		return
	}
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	x, f, l, _, out, ok := c.tfConvInputs("NHWC")
	if !ok {
		return
	}
	if x != nil && conflict(x[l.channel], f[2]) {
		c.errf("input has %d channels, the depthwise filter %d", x[l.channel].Size, f[2].Size)
		return
	}
	ch := f[2]
	if x != nil {
		ch = unify(x[l.channel], f[2])
	}
	out[l.channel] = dimMul(ch, f[3])
	if !c.tfFused(out, l.channel) {
		return
	}
	c.set(0, tensorType(dt, out))
}

// Conv2DBackpropInput (input_sizes, filter, out_backprop): the gradient of
// a convolution with respect to its input, a transposed convolution, has
// the shape input_sizes names. The convolution of that shape must give
// out_backprop's spatial sizes.
func tfConvBackpropInput(c *nctx) {
	if !c.need(0, "input_sizes") || !c.need(1, "filter") || !c.need(2, "out_backprop") {
		return
	}
	dt, ok := c.tfSameType(1, 2)
	if !ok {
		return
	}
	l, ok := c.tfLayout("NHWC", 4)
	if !ok {
		return
	}
	f, fok := c.shape(1)
	g, gok := c.shape(2)
	if fok && len(f) != 4 || gok && len(g) != 4 {
		c.errf("filter %s and out_backprop %s must be 4-D", rankString(f, fok), rankString(g, gok))
		return
	}
	if !fok {
		f = unknownDims(4)
	}
	kernel := kernelSizes(f, 2)
	w, ok := c.tfWindow(l, 4, kernel, "dilations")
	if !ok {
		return
	}
	sizes, _, known := c.shapeArg(0)
	out := unknownDims(4)
	switch {
	case sizes != nil && len(sizes) != 4:
		c.errf("input_sizes has %d elements, want 4", len(sizes))
		return
	case sizes != nil:
		copy(out, sizes)
	}
	if gok {
		out[0] = unify(out[0], g[0])
		if conflict(g[l.channel], f[3]) {
			c.errf("out_backprop has %d channels, the filter %d output channels", g[l.channel].Size, f[3].Size)
			return
		}
	}
	if conflict(out[l.channel], f[2]) {
		c.errf("input_sizes gives %d channels, the filter %d input channels", out[l.channel].Size, f[2].Size)
		return
	}
	out[l.channel] = unify(out[l.channel], f[2])
	if known && gok {
		fwd := unknownDims(4)
		if !c.spatialOut(w, l, out, fwd) {
			return
		}
		for _, a := range l.spatial {
			if conflict(fwd[a], g[a]) {
				c.errf("input_sizes %s convolves to spatial sizes %s, but out_backprop has %s", shapeString(out), shapeString(fwd), shapeString(g))
				return
			}
		}
	}
	c.set(0, tensorType(dt, out))
}

// Conv2DBackpropFilter (input, filter_sizes, out_backprop): the shape
// filter_sizes names.
func tfConvBackpropFilter(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "filter_sizes") || !c.need(2, "out_backprop") {
		return
	}
	dt, ok := c.tfSameType(0, 2)
	if !ok {
		return
	}
	sizes, _, _ := c.shapeArg(1)
	switch {
	case sizes == nil:
		c.set(0, tensorType(dt, unknownDims(4)))
	case len(sizes) != 4:
		c.errf("filter_sizes has %d elements, want 4", len(sizes))
	default:
		c.set(0, tensorType(dt, sizes))
	}
}

// Dilation2D: input [N, H, W, C], filter [fh, fw, C], strides and rates
// over NHWC.
func tfDilation2D(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "filter") {
		return
	}
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	l := layout{channel: 3, spatial: []int{1, 2}}
	x, xok := c.shape(0)
	f, fok := c.shape(1)
	if xok && len(x) != 4 || fok && len(f) != 3 {
		c.errf("input %s must be 4-D and filter %s 3-D", rankString(x, xok), rankString(f, fok))
		return
	}
	if !fok {
		f = unknownDims(3)
	}
	kernel := kernelSizes(f, 2)
	w, ok := c.tfWindow(l, 4, kernel, "rates")
	if !ok {
		return
	}
	if !xok {
		c.set(0, tensorType(dt, unknownDims(4)))
		return
	}
	if conflict(x[3], f[2]) {
		c.errf("input has %d channels, the filter %d", x[3].Size, f[2].Size)
		return
	}
	out := cloneDims(x)
	if !c.spatialOut(w, l, x, out) {
		return
	}
	c.set(0, tensorType(dt, out))
}

// MaxPool, AvgPool (4-D, NHWC by default), MaxPool3D, AvgPool3D (5-D,
// NDHWC), MaxPoolWithArgmax (NHWC; a second output of argmax indices,
// Targmax): ksize and strides over every axis.
func tfPool(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	def := "NHWC"
	if c.n.Op == "MaxPool3D" || c.n.Op == "AvgPool3D" {
		def = "NDHWC"
	}
	c.tfPoolWith(def, nil)
}

func (c *nctx) tfPoolWith(def string, w *window) {
	dt := c.inDType(0, "T")
	r := c.tfLayoutRank(def)
	l, ok := c.tfLayout(def, r)
	if !ok {
		return
	}
	if w == nil {
		ww, ok := c.tfWindow(l, r, nil, "")
		if !ok {
			return
		}
		w = &ww
	}
	x, xok := c.shape(0)
	var out []ir.Dim
	switch {
	case xok && len(x) != r:
		c.errf("input has shape %s, want rank %d", shapeString(x), r)
		return
	case xok:
		out = cloneDims(x)
		if !c.spatialOut(*w, l, x, out) {
			return
		}
	default:
		out = unknownDims(r)
	}
	c.set(0, tensorType(dt, out))
	if c.n.Op == "MaxPoolWithArgmax" {
		c.set(1, tensorType(c.tfDTypeOr("Targmax", ir.Int64), cloneDims(out)))
	}
}

// MaxPoolV2: ksize and strides are inputs.
func tfPoolV2(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "ksize") || !c.need(2, "strides") {
		return
	}
	r := c.tfLayoutRank("NHWC")
	l, ok := c.tfLayout("NHWC", r)
	if !ok {
		return
	}
	ks, kok := c.constInts(1)
	st, sok := c.constInts(2)
	if !kok || !sok {
		c.set(0, tensorType(c.inDType(0, "T"), unknownDims(r)))
		return
	}
	if len(ks) != r || len(st) != r {
		c.errf("ksize %v and strides %v must have %d values", ks, st, r)
		return
	}
	w := window{padsB: make([]int64, len(l.spatial)), padsE: make([]int64, len(l.spatial)), dilations: make([]int64, len(l.spatial))}
	for i, a := range l.spatial {
		if ks[a] < 1 || st[a] < 1 {
			c.errf("ksize %v and strides %v must be positive", ks, st)
			return
		}
		w.kernel = append(w.kernel, ks[a])
		w.strides = append(w.strides, st[a])
		w.dilations[i] = 1
	}
	switch p := c.attrString("padding", ""); p {
	case "SAME":
		w.autoPad = "SAME_UPPER"
	case "VALID":
		w.autoPad = "VALID"
	default:
		c.errf("padding %q is not supported (want SAME or VALID)", p)
		return
	}
	c.tfPoolWith("NHWC", &w)
}

// MatMul, _FusedMatMul: a [m, k] (transpose_a: [k, m]) times b [k, n]
// (transpose_b: [n, k]).
func tfMatMul(c *nctx) {
	if !c.need(0, "a") || !c.need(1, "b") {
		return
	}
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	a, aok := c.shape(0)
	b, bok := c.shape(1)
	if aok && len(a) != 2 || bok && len(b) != 2 {
		c.errf("a %s and b %s must be matrices", rankString(a, aok), rankString(b, bok))
		return
	}
	if !aok {
		a = unknownDims(2)
	}
	if !bok {
		b = unknownDims(2)
	}
	if c.attrBool("transpose_a", false) {
		a = []ir.Dim{a[1], a[0]}
	}
	if c.attrBool("transpose_b", false) {
		b = []ir.Dim{b[1], b[0]}
	}
	out, ok := c.matmulShape(a, b)
	if !ok {
		return
	}
	if !c.tfFused(out, 1) {
		return
	}
	c.set(0, tensorType(dt, out))
}

// BatchMatMul (equal batch dims), V2 and V3 (broadcast batch dims): the
// last two axes multiply, adj_x and adj_y transpose them; V3's output type
// is Tout.
func tfBatchMatMul(c *nctx) {
	if !c.need(0, "x") || !c.need(1, "y") {
		return
	}
	var dt ir.DType
	if c.n.Op == "BatchMatMulV3" {
		dt = c.tfDTypeOr("Tout", c.firstDType(0, 1))
	} else {
		var ok bool
		if dt, ok = c.tfSameType(0, 1); !ok {
			return
		}
	}
	a, aok := c.shape(0)
	b, bok := c.shape(1)
	if !aok || !bok {
		c.set(0, unknownType(dt))
		return
	}
	if len(a) < 2 || len(b) < 2 {
		c.errf("x %s and y %s must have rank at least 2", shapeString(a), shapeString(b))
		return
	}
	if c.n.Op == "BatchMatMul" && len(a) != len(b) {
		c.errf("x %s and y %s must have the same rank", shapeString(a), shapeString(b))
		return
	}
	swap := func(s []ir.Dim) []ir.Dim {
		s = cloneDims(s)
		s[len(s)-1], s[len(s)-2] = s[len(s)-2], s[len(s)-1]
		return s
	}
	if c.attrBool("adj_x", false) {
		a = swap(a)
	}
	if c.attrBool("adj_y", false) {
		b = swap(b)
	}
	out, ok := c.matmulShape(a, b)
	if !ok {
		return
	}
	c.set(0, tensorType(dt, out))
}

// FusedBatchNorm (V2, V3): y has x's shape; batch_mean, batch_variance and
// the reserve spaces are [C] of the parameters' type (U). V3's sixth
// output, reserve_space_3, is an empty [0] on the CPU kernel (TensorFlow
// leaves its shape to the device).
func tfFusedBatchNorm(c *nctx) {
	for i, name := range []string{"x", "scale", "offset", "mean", "variance"} {
		if !c.need(i, name) {
			return
		}
	}
	dt := c.inDType(0, "T")
	u := c.inDType(1, "U")
	if !u.Valid() {
		u = dt
	}
	r := c.tfLayoutRank("NHWC")
	l, ok := c.tfLayout("NHWC", r)
	if !ok {
		return
	}
	x, xok := c.shape(0)
	if xok && len(x) != r {
		c.errf("x has shape %s, want rank %d", shapeString(x), r)
		return
	}
	ch := ir.UnknownDim
	if xok {
		ch = x[l.channel]
	}
	for i := 1; i < 5; i++ {
		s, ok := c.shape(i)
		if !ok {
			continue
		}
		// In inference mode mean and variance may be empty.
		if len(s) != 1 || (conflict(s[0], ch) && !(i >= 3 && s[0].Known() && s[0].Size == 0)) {
			c.errf("input %d has shape %s, want [%s] (the channels)", i, shapeString(s), ch)
			return
		}
		if i < 3 {
			ch = unify(ch, s[0])
		}
	}
	if xok {
		out := cloneDims(x)
		out[l.channel] = ch
		c.set(0, tensorType(dt, out))
	} else {
		c.set(0, tensorType(dt, unknownDims(r)))
	}
	for i := 1; i < min(5, c.numOut()); i++ {
		c.set(i, tensorType(u, []ir.Dim{ch}))
	}
	if c.numOut() > 5 {
		c.set(5, tensorType(u, []ir.Dim{ir.D(0)}))
	}
}

// tfSizeArg reads a 2-element size input (new height and width).
func (c *nctx) tfSizeArg(i int, what string) ([]ir.Dim, bool) {
	dims, raw, _ := c.shapeArg(i)
	if dims == nil {
		return unknownDims(2), true
	}
	if len(dims) != 2 {
		c.errf("%s has %d elements, want 2 (height and width)", what, len(dims))
		return nil, false
	}
	for k, e := range raw {
		if e.sym == "" && e.i < 0 {
			c.errf("%s %s has a negative size at %d", what, rawString(raw), k)
			return nil, false
		}
	}
	return dims, true
}

// ResizeBilinear, ResizeNearestNeighbor: images [N, H, W, C], size [2] →
// [N, h, w, C]; bilinear gives float32 whatever the input type, nearest
// neighbour keeps it. align_corners and half_pixel_centers change the
// sampling, not the shape; both set is an error.
func tfResize(c *nctx) {
	if !c.need(0, "images") || !c.need(1, "size") {
		return
	}
	dt := c.inDType(0, "T")
	if c.n.Op == "ResizeBilinear" {
		dt = ir.Float32
	}
	if c.attrBool("align_corners", false) && c.attrBool("half_pixel_centers", false) {
		c.errf("align_corners and half_pixel_centers cannot both be true")
		return
	}
	size, ok := c.tfSizeArg(1, "size")
	if !ok {
		return
	}
	x, xok := c.shape(0)
	if xok && len(x) != 4 {
		c.errf("images has shape %s, want 4-D [batch, height, width, channels]", shapeString(x))
		return
	}
	out := unknownDims(4)
	if xok {
		out[0], out[3] = x[0], x[3]
	}
	out[1], out[2] = size[0], size[1]
	c.set(0, tensorType(dt, out))
}

// CropAndResize: image [N, H, W, C], boxes [B, 4], box_ind [B], crop_size
// [2] → float32 [B, h, w, C].
func tfCropAndResize(c *nctx) {
	for i, name := range []string{"image", "boxes", "box_ind", "crop_size"} {
		if !c.need(i, name) {
			return
		}
	}
	size, ok := c.tfSizeArg(3, "crop_size")
	if !ok {
		return
	}
	out := unknownDims(4)
	if x, ok := c.shape(0); ok {
		if len(x) != 4 {
			c.errf("image has shape %s, want 4-D", shapeString(x))
			return
		}
		out[3] = x[3]
	}
	if b, ok := c.shape(1); ok {
		if len(b) != 2 || conflict(b[1], ir.D(4)) {
			c.errf("boxes has shape %s, want [num_boxes, 4]", shapeString(b))
			return
		}
		out[0] = b[0]
	}
	out[1], out[2] = size[0], size[1]
	c.set(0, tensorType(ir.Float32, out))
}

// DepthToSpace, SpaceToDepth: block_size over the spatial axes of an NHWC
// or NCHW tensor.
func tfDepthSpace(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.inDType(0, "T")
	bs := c.attrInt("block_size", 0)
	if bs < 2 {
		c.errf("block_size is %d, want at least 2", bs)
		return
	}
	l, ok := c.tfLayout("NHWC", 4)
	if !ok {
		return
	}
	x, xok := c.shape(0)
	if !xok {
		c.set(0, tensorType(dt, unknownDims(4)))
		return
	}
	if len(x) != 4 {
		c.errf("input has shape %s, want 4-D", shapeString(x))
		return
	}
	out := cloneDims(x)
	if c.n.Op == "DepthToSpace" {
		ch, ok := dimDivExact(x[l.channel], bs*bs)
		if !ok {
			c.errf("channels %d are not divisible by block_size² %d", x[l.channel].Size, bs*bs)
			return
		}
		out[l.channel] = ch
		for _, a := range l.spatial {
			out[a] = dimMul(x[a], ir.D(bs))
		}
	} else {
		for _, a := range l.spatial {
			d, ok := dimDivExact(x[a], bs)
			if !ok {
				c.errf("spatial size %d is not divisible by block_size %d", x[a].Size, bs)
				return
			}
			out[a] = d
		}
		out[l.channel] = dimMul(x[l.channel], ir.D(bs*bs))
	}
	c.set(0, tensorType(dt, out))
}

// tfBlockArgs reads block_shape [M] and paddings or crops [M, 2].
func (c *nctx) tfBlockArgs(what string) (block []int64, pads []int64, ok bool) {
	bc, pc := c.cst(1), c.cst(2)
	if bc == nil || pc == nil {
		return nil, nil, true
	}
	block, ok1 := bc.ints()
	pads, ok2 := pc.ints()
	if !ok1 || !ok2 {
		return nil, nil, true
	}
	if len(pads) != 2*len(block) {
		c.errf("block_shape has %d elements, %s %d: want [%d, 2]", len(block), what, len(pads), len(block))
		return nil, nil, false
	}
	for k, b := range block {
		if b < 1 || pads[2*k] < 0 || pads[2*k+1] < 0 {
			c.errf("block_shape %v must be positive and %s %v non-negative", block, what, pads)
			return nil, nil, false
		}
	}
	return block, pads, true
}

// SpaceToBatchND: [N, s…, rest] → [N·∏block, (s+pads)/block…, rest].
func tfSpaceToBatch(c *nctx) {
	c.tfBatchSpace(true)
}

// BatchToSpaceND: [N, s…, rest] → [N/∏block, s·block − crops…, rest].
func tfBatchToSpace(c *nctx) {
	c.tfBatchSpace(false)
}

func (c *nctx) tfBatchSpace(toBatch bool) {
	if !c.need(0, "input") || !c.need(1, "block_shape") || !c.need(2, "paddings") {
		return
	}
	dt := c.inDType(0, "T")
	what := "crops"
	if toBatch {
		what = "paddings"
	}
	block, pads, ok := c.tfBlockArgs(what)
	if !ok {
		return
	}
	x, xok := c.shape(0)
	if !xok || block == nil {
		if xok {
			c.set(0, tensorType(dt, unknownDims(len(x))))
		} else {
			c.set(0, unknownType(dt))
		}
		return
	}
	if len(x) < len(block)+1 {
		c.errf("input has shape %s, too few axes for block_shape %v", shapeString(x), block)
		return
	}
	out := cloneDims(x)
	prod := int64(1)
	for k, b := range block {
		prod *= b
		a := 1 + k
		if toBatch {
			d, ok := dimDivExact(dimAddConst(x[a], pads[2*k]+pads[2*k+1]), b)
			if !ok {
				c.errf("padded axis %d (%d + %d + %d) is not divisible by block size %d", a, x[a].Size, pads[2*k], pads[2*k+1], b)
				return
			}
			out[a] = d
		} else {
			out[a] = dimAddConst(dimMul(x[a], ir.D(b)), -pads[2*k]-pads[2*k+1])
			if out[a].Known() && out[a].Size < 0 {
				c.errf("crops %v exceed axis %d of size %d × %d", pads, a, x[a].Size, b)
				return
			}
		}
	}
	if toBatch {
		out[0] = dimMul(x[0], ir.D(prod))
	} else {
		d, ok := dimDivExact(x[0], prod)
		if !ok {
			c.errf("batch %d is not divisible by the block's product %d", x[0].Size, prod)
			return
		}
		out[0] = d
	}
	c.set(0, tensorType(dt, out))
}

// ImageProjectiveTransformV3: images [N, H, W, C], output_shape [2] →
// [N, h, w, C] of dtype.
func tfImageTransform(c *nctx) {
	if !c.need(0, "images") || !c.need(2, "output_shape") {
		return
	}
	dt := c.tfDTypeOr("dtype", c.dtype(0))
	size, ok := c.tfSizeArg(2, "output_shape")
	if !ok {
		return
	}
	out := unknownDims(4)
	if x, ok := c.shape(0); ok {
		if len(x) != 4 {
			c.errf("images has shape %s, want 4-D", shapeString(x))
			return
		}
		out[0], out[3] = x[0], x[3]
	}
	out[1], out[2] = size[0], size[1]
	c.set(0, tensorType(dt, out))
}
