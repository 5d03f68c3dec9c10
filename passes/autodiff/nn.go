package autodiff

import (
	"slices"

	"github.com/remat-compile/remat/ir"
)

// ---- matrix products ----

// gradGemm: y = α·A'·B' + β·C with A' = Aᵀ if transA else A (B' likewise),
// C broadcast to y.
//
//	dA' = α·dy·B'ᵀ, dA = dA' (or dA'ᵀ = α·B'·dyᵀ when transA)
//	dB' = α·A'ᵀ·dy, dB = dB' (or dB'ᵀ = α·dyᵀ·A' when transB)
//	dC  = unb(β·dy, C)
//
// Each product is one Gemm with the transposes as attributes.
func gradGemm(c *gctx) error {
	b := c.b
	A, B := c.x(0), c.x(1)
	ta, tb := c.n.AttrInt("transA", 0) != 0, c.n.AttrInt("transB", 0) != 0
	alpha := float64(c.n.AttrFloat("alpha", 1))
	beta := float64(c.n.AttrFloat("beta", 1))
	dy := c.dy[0]
	if c.wants(0) {
		if !ta {
			c.set(0, b.gemm(dy, false, B, !tb, alpha))
		} else {
			c.set(0, b.gemm(B, tb, dy, true, alpha))
		}
	}
	if c.wants(1) {
		if !tb {
			c.set(1, b.gemm(A, !ta, dy, false, alpha))
		} else {
			c.set(1, b.gemm(dy, true, A, ta, alpha))
		}
	}
	if len(c.n.Inputs) > 2 && c.wants(2) {
		c.set(2, b.unbroadcast(b.scale(dy, beta), dimsOf(c.x(2))))
	}
	return nil
}

// gradMatMul: y = A·B with numpy semantics (batch axes broadcast; a 1-D A
// is a row [1, K], a 1-D B a column [K, 1], their unit axis dropped from
// y). With dy reshaped to the 2-D-promoted product's shape:
//
//	dA = unb(dy·Bᵀ, A),  dB = unb(Aᵀ·dy, B)
//
// (transposes of the last two axes), reshaped back to A's and B's shapes.
func gradMatMul(c *gctx) error {
	b := c.b
	A, B := c.x(0), c.x(1)
	ad, bd := dimsOf(A), dimsOf(B)
	a2, b2 := ad, bd
	if len(ad) == 1 {
		a2 = []int64{1, ad[0]}
	}
	if len(bd) == 1 {
		b2 = []int64{bd[0], 1}
	}
	batch := broadcastDims(a2[:len(a2)-2], b2[:len(b2)-2])
	y2 := append(slices.Clone(batch), a2[len(a2)-2], b2[len(b2)-1])
	dy := b.reshape(c.dy[0], y2)
	A2, B2 := b.reshape(A, a2), b.reshape(B, b2)
	if c.wants(0) {
		g := b.matmul(dy, b.swapLast(B2))
		c.set(0, b.reshape(b.unbroadcast(g, a2), ad))
	}
	if c.wants(1) {
		g := b.matmul(b.swapLast(A2), dy)
		c.set(1, b.reshape(b.unbroadcast(g, b2), bd))
	}
	return nil
}

// ---- convolution ----

// convGeom is a convolution's geometry with explicit pads.
type convGeom struct {
	group              int64
	kernel, strides    []int64
	dilations          []int64
	padBegin, padEnd   []int64
	outputPadding      []int64 // ConvTranspose only
	spatialIn, spatOut []int64
}

func ones(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// geometry reads the attributes of a Conv, ConvTranspose or pooling node
// with input x and output y, resolving auto_pad from the static shapes the
// way ONNX defines it for Conv and pooling (SAME_UPPER puts the odd pad at
// the end, SAME_LOWER at the beginning).
func geometry(c *gctx, x, y *ir.Value, kernel []int64) (*convGeom, error) {
	n := c.n
	xd, yd := dimsOf(x), dimsOf(y)
	r := len(xd) - 2
	gm := &convGeom{group: n.AttrInt("group", 1), kernel: kernel, spatialIn: xd[2:], spatOut: yd[2:]}
	gm.strides, _ = n.AttrInts("strides")
	if gm.strides == nil {
		gm.strides = ones(r)
	}
	gm.dilations, _ = n.AttrInts("dilations")
	if gm.dilations == nil {
		gm.dilations = ones(r)
	}
	gm.outputPadding, _ = n.AttrInts("output_padding")
	if gm.outputPadding == nil {
		gm.outputPadding = make([]int64, r)
	}
	pads, _ := n.AttrInts("pads")
	if pads == nil {
		pads = make([]int64, 2*r)
	}
	gm.padBegin, gm.padEnd = slices.Clone(pads[:r]), slices.Clone(pads[r:])
	switch ap := n.AttrString("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
	case "VALID":
		gm.padBegin, gm.padEnd = make([]int64, r), make([]int64, r)
	case "SAME_UPPER", "SAME_LOWER":
		if n.Op == "ConvTranspose" {
			return nil, c.errorf("the gradient of ConvTranspose supports explicit pads only, not auto_pad %q", ap)
		}
		for i := range r {
			ext := (kernel[i]-1)*gm.dilations[i] + 1
			total := max(0, (yd[2+i]-1)*gm.strides[i]+ext-xd[2+i])
			if ap == "SAME_UPPER" {
				gm.padBegin[i], gm.padEnd[i] = total/2, total-total/2
			} else {
				gm.padBegin[i], gm.padEnd[i] = total-total/2, total/2
			}
		}
	default:
		return nil, c.errorf("unsupported auto_pad %q", ap)
	}
	return gm, nil
}

// convWeightGrad returns ∂/∂W of a convolution of in [N, G·Ci, S…] into
// out [N, G·Co, O…] (dout its gradient) with weight [G·Co, Ci, K…]:
//
//	dW[g·Co+m, c, k] = Σ_{n,o} dout[n, g·Co+m, o] · inpad[n, g·Ci+c, o·s + k·d − pb]
//
// which is itself a convolution with strides and dilations swapped: the
// input in rearranged to [Ci, G·N, S…], the kernel dout rearranged to
// [G·Co, N, O…], group G, strides d, dilations s, the same pads; the
// result [Ci, G·Co, K'…] (K' ≥ K) is cut to K and transposed to
// [G·Co, Ci, K…].
func (b *builder) convWeightGrad(in, dout *ir.Value, gm *convGeom) *ir.Value {
	id, od := dimsOf(in), dimsOf(dout)
	N, G := id[0], gm.group
	Ci, Co := id[1]/G, od[1]/G
	r := len(id) - 2
	// dout: [N, G·Co, O…] → [G·Co, N, O…]
	perm2 := []int64{1, 0}
	for i := range r {
		perm2 = append(perm2, int64(2+i))
	}
	// in: [N, G, Ci, S…] → [Ci, G, N, S…] → [Ci, G·N, S…]; with one group
	// a single transpose [N, Ci, S…] → [Ci, N, S…], without the reshapes,
	// which ONNX Runtime runs as views but which would be copies of the
	// whole activation in the solvers' memory model.
	var x *ir.Value
	if G == 1 {
		x = b.transpose(in, perm2)
	} else {
		x = b.reshape(in, append([]int64{N, G, Ci}, id[2:]...))
		perm := []int64{2, 1, 0}
		for i := range r {
			perm = append(perm, int64(3+i))
		}
		x = b.transpose(x, perm)
		x = b.reshape(x, append([]int64{Ci, G * N}, id[2:]...))
	}
	w := b.transpose(dout, perm2)
	kOut := make([]int64, r)
	for i := range r {
		kOut[i] = (id[2+i]+gm.padBegin[i]+gm.padEnd[i]-gm.strides[i]*(od[2+i]-1)-1)/gm.dilations[i] + 1
	}
	t := tensorType(in.Type.DType, append([]int64{Ci, G * Co}, kOut...))
	res := b.add("Conv", t, []*ir.Value{x, w},
		ir.IntAttr("group", G),
		ir.IntsAttr("kernel_shape", od[2:]...),
		ir.IntsAttr("strides", gm.dilations...),
		ir.IntsAttr("dilations", gm.strides...),
		ir.IntsAttr("pads", append(slices.Clone(gm.padBegin), gm.padEnd...)...))
	if !slices.Equal(kOut, gm.kernel) {
		axes := make([]int64, r)
		for i := range axes {
			axes[i] = int64(2 + i)
		}
		res = b.slice(res, make([]int64, r), gm.kernel, axes)
	}
	return b.transpose(res, perm2)
}

// gradConv: y = conv(x, W) + bias with strides s, dilations d, pads
// (pb, pe), group G.
//
//	dx    = convTranspose(dy, W; s, d, pb, pe, G, output_padding op) with
//	        op = |x| − (s·(|y|−1) + d·(K−1) + 1 − pb − pe), so that dx has
//	        x's shape (the rows the forward stride skipped get no gradient);
//	dW    = convWeightGrad(x, dy);
//	dbias = Σ_{n, spatial} dy.
func gradConv(c *gctx) error {
	b := c.b
	x, w, y := c.x(0), c.x(1), c.y(0)
	wd := dimsOf(w)
	gm, err := geometry(c, x, y, wd[2:])
	if err != nil {
		return err
	}
	dy := c.dy[0]
	r := len(wd) - 2
	if c.wants(0) {
		op := make([]int64, r)
		for i := range r {
			op[i] = gm.spatialIn[i] - (gm.strides[i]*(gm.spatOut[i]-1) + gm.dilations[i]*(gm.kernel[i]-1) + 1 - gm.padBegin[i] - gm.padEnd[i])
		}
		attrs := []ir.Attr{
			ir.IntAttr("group", gm.group),
			ir.IntsAttr("kernel_shape", gm.kernel...),
			ir.IntsAttr("strides", gm.strides...),
			ir.IntsAttr("dilations", gm.dilations...),
			ir.IntsAttr("pads", append(slices.Clone(gm.padBegin), gm.padEnd...)...),
		}
		if slices.ContainsFunc(op, func(v int64) bool { return v != 0 }) {
			attrs = append(attrs, ir.IntsAttr("output_padding", op...))
		}
		c.set(0, b.add("ConvTranspose", x.Type, []*ir.Value{dy, w}, attrs...))
	}
	if c.wants(1) {
		c.set(1, b.convWeightGrad(x, dy, gm))
	}
	if len(c.n.Inputs) > 2 && c.wants(2) {
		c.set(2, b.reduce("ReduceSum", dy, spatialAndBatch(len(dimsOf(dy))), false))
	}
	return nil
}

// spatialAndBatch is [0, 2, 3, …, r−1].
func spatialAndBatch(r int) []int64 {
	axes := []int64{0}
	for i := 2; i < r; i++ {
		axes = append(axes, int64(i))
	}
	return axes
}

// gradConvTranspose: y = convTranspose(x, W) + bias (x [N, G·Ci, S…], W
// [G·Ci, Co, K…], y [N, G·Co, O…]), the adjoint of a convolution:
//
//	dx    = conv(dy, W; s, d, pb, pe, G), which has x's shape as long as
//	        output_padding < s;
//	dW    = convWeightGrad(dy, x): y[n, g·Co+m, i·s + k·d − pb] gets
//	        x[n, g·Ci+c, i]·W[g·Ci+c, m, k], so dW[g·Ci+c, m, k] =
//	        Σ_{n,i} x[n, g·Ci+c, i]·dypad[n, g·Co+m, i·s + k·d];
//	dbias = Σ_{n, spatial} dy.
//
// Only explicit pads (or VALID) are supported, not output_shape.
func gradConvTranspose(c *gctx) error {
	b := c.b
	x, w, y := c.x(0), c.x(1), c.y(0)
	if c.n.Attr("output_shape") != nil {
		return c.errorf("the gradient of ConvTranspose does not support output_shape; give pads")
	}
	wd := dimsOf(w)
	gm, err := geometry(c, x, y, wd[2:])
	if err != nil {
		return err
	}
	dy := c.dy[0]
	if c.wants(0) {
		c.set(0, b.add("Conv", x.Type, []*ir.Value{dy, w},
			ir.IntAttr("group", gm.group),
			ir.IntsAttr("kernel_shape", gm.kernel...),
			ir.IntsAttr("strides", gm.strides...),
			ir.IntsAttr("dilations", gm.dilations...),
			ir.IntsAttr("pads", append(slices.Clone(gm.padBegin), gm.padEnd...)...)))
	}
	if c.wants(1) {
		// The roles of input and output swap: dy plays the input (its
		// spatial size O, padded by pb, pe), x the output gradient.
		g2 := *gm
		g2.spatialIn, g2.spatOut = gm.spatOut, gm.spatialIn
		c.set(1, b.convWeightGrad(dy, x, &g2))
	}
	if len(c.n.Inputs) > 2 && c.wants(2) {
		c.set(2, b.reduce("ReduceSum", dy, spatialAndBatch(len(dimsOf(dy))), false))
	}
	return nil
}

// ---- pooling ----

// gradMaxPool: y[o] = max over the window of o; the gradient goes to the
// element that won: dx = scatter-add of dy at MaxPool's Indices output
// (added to the node when the file omits it), on x flattened:
//
//	dx = reshape(ScatterElements(zeros[|x|], flat(indices), flat(dy), reduction=add), x)
//
// reduction=add needs opset 16; below it, windows that do not overlap
// (every kernel extent ≤ its stride) let plain ScatterElements (or, before
// opset 11, Scatter) do, and overlapping windows are an error.
func gradMaxPool(c *gctx) error {
	b := c.b
	x, y := c.x(0), c.y(0)
	if b.opset < 8 {
		return c.errorf("the gradient of MaxPool needs its Indices output, which opset %d lacks (opset 8 added it)", b.opset)
	}
	if c.n.AttrInt("storage_order", 0) != 0 {
		return c.errorf("the gradient of MaxPool supports storage_order 0 only")
	}
	kernel, _ := c.n.AttrInts("kernel_shape")
	gm, err := geometry(c, x, y, kernel)
	if err != nil {
		return err
	}
	overlap := false
	for i := range kernel {
		if (kernel[i]-1)*gm.dilations[i]+1 > gm.strides[i] {
			overlap = true
		}
	}
	if overlap && b.opset < 16 {
		return c.errorf("the gradient of MaxPool with overlapping windows needs ScatterElements with reduction=add, from opset 16; the graph imports opset %d", b.opset)
	}
	idx := c.n.Outputs
	var ind *ir.Value
	if len(idx) > 1 && idx[1] != nil {
		ind = idx[1]
	} else {
		ind = c.n.SetOutput(1, b.fresh(y.Name+"_indices"))
		ind.Type = tensorType(ir.Int64, dimsOf(y))
	}
	xd := dimsOf(x)
	nx, ny := prod(xd), prod(dimsOf(y))
	zeros := b.zeros(c.dt(), []int64{nx})
	fi := b.reshape(ind, []int64{ny})
	fd := b.reshape(c.dy[0], []int64{ny})
	t := tensorType(c.dt(), []int64{nx})
	var s *ir.Value
	switch {
	case overlap:
		s = b.add("ScatterElements", t, []*ir.Value{zeros, fi, fd}, ir.IntAttr("axis", 0), ir.StringAttr("reduction", "add"))
	case b.opset >= 11:
		s = b.add("ScatterElements", t, []*ir.Value{zeros, fi, fd}, ir.IntAttr("axis", 0))
	default:
		s = b.add("Scatter", t, []*ir.Value{zeros, fi, fd}, ir.IntAttr("axis", 0))
	}
	c.set(0, b.reshape(s, xd))
	return nil
}

// gradAveragePool: y[o] = Σ_window x / D[o], the divisor D being the
// window's size counted as ONNX Runtime does (kernel elements inside the
// padded input with count_include_pad, else inside the input only);
// dx = convTranspose(dy / D, ones[C, 1, K…]; group C, the pool's strides
// and pads), which spreads each dy[o]/D[o] back over its window, with
// output_padding (or extra end padding) so that dx has x's shape.
func gradAveragePool(c *gctx) error {
	b := c.b
	x, y := c.x(0), c.y(0)
	kernel, _ := c.n.AttrInts("kernel_shape")
	gm, err := geometry(c, x, y, kernel)
	if err != nil {
		return err
	}
	for _, d := range gm.dilations {
		if d != 1 {
			return c.errorf("the gradient of AveragePool supports dilation 1 only")
		}
	}
	incl := c.n.AttrInt("count_include_pad", 0) != 0
	xd, yd := dimsOf(x), dimsOf(y)
	r := len(kernel)
	// Per-axis divisors, multiplied out over the output's spatial grid.
	per := make([][]float64, r)
	for i := range r {
		per[i] = make([]float64, yd[2+i])
		for o := range yd[2+i] {
			start := o*gm.strides[i] - gm.padBegin[i]
			end := min(start+kernel[i], xd[2+i]+gm.padEnd[i])
			if !incl {
				start, end = max(start, 0), min(end, xd[2+i])
			}
			per[i][o] = float64(end - start)
		}
	}
	spatial := yd[2:]
	div := make([]float64, prod(spatial))
	uniform := true
	for k := range div {
		rem, v := int64(k), 1.0
		for i := r - 1; i >= 0; i-- {
			v *= per[i][rem%spatial[i]]
			rem /= spatial[i]
		}
		div[k] = v
		if v != div[0] {
			uniform = false
		}
	}
	var g *ir.Value
	if uniform {
		g = b.scale(c.dy[0], 1/div[0])
	} else {
		shape := append([]int64{1, 1}, spatial...)
		g = b.div(c.dy[0], b.constant(floatTensor(c.dt(), shape, div)))
	}
	C := xd[1]
	wshape := append([]int64{C, 1}, kernel...)
	wv := make([]float64, prod(wshape))
	for i := range wv {
		wv[i] = 1
	}
	w := b.constant(floatTensor(c.dt(), wshape, wv))
	op := make([]int64, r)
	padEnd := slices.Clone(gm.padEnd)
	for i := range r {
		op[i] = xd[2+i] - (gm.strides[i]*(yd[2+i]-1) + kernel[i] - gm.padBegin[i] - gm.padEnd[i])
		if op[i] < 0 { // ceil_mode windows past the padded end
			padEnd[i] -= op[i]
			op[i] = 0
		}
	}
	attrs := []ir.Attr{
		ir.IntAttr("group", C),
		ir.IntsAttr("kernel_shape", kernel...),
		ir.IntsAttr("strides", gm.strides...),
		ir.IntsAttr("pads", append(slices.Clone(gm.padBegin), padEnd...)...),
	}
	if slices.ContainsFunc(op, func(v int64) bool { return v != 0 }) {
		attrs = append(attrs, ir.IntsAttr("output_padding", op...))
	}
	c.set(0, b.add("ConvTranspose", x.Type, []*ir.Value{g, w}, attrs...))
	return nil
}

// gradGlobalAveragePool: y[n, c] = mean over the spatial axes of x;
// dx = expand(dy, x) / Π spatial sizes.
func gradGlobalAveragePool(c *gctx) error {
	xd := dimsOf(c.x(0))
	c.set(0, c.b.scale(c.b.expand(c.dy[0], xd), 1/float64(prod(xd[2:]))))
	return nil
}

// gradMaxUnpool: y = zeros with y_flat[I[i]] = x_flat[i] (I the indices
// MaxPool produced, over the whole flattened tensor); dx[i] = dy_flat[I[i]]:
//
//	dx = reshape(Gather(flat(dy), flat(I)), x)
//
// exact when the indices are distinct, as those of a MaxPool whose windows
// do not overlap are (when two elements land on one position the
// runtime keeps one of them, which this rule does not model).
func gradMaxUnpool(c *gctx) error {
	b := c.b
	x, ind := c.x(0), c.x(1)
	ny, ni := prod(dimsOf(c.y(0))), prod(dimsOf(ind))
	fd := b.reshape(c.dy[0], []int64{ny})
	fi := b.reshape(ind, []int64{ni})
	g := b.add("Gather", tensorType(c.dt(), []int64{ni}), []*ir.Value{fd, fi}, ir.IntAttr("axis", 0))
	c.set(0, b.reshape(g, dimsOf(x)))
	return nil
}

// ---- random ----

// gradDropout: in training mode y = x·mask/(1 − ratio), so
// dx = dy·mask/(1 − ratio), reading the mask the forward pass drew (the
// node's second output, added when the file omits it); in inference mode
// y = x and dx = dy. A training_mode given at run time selects between the
// two with Where.
func gradDropout(c *gctx) error {
	b := c.b
	mode := dropoutMode(c.n, b.opset)
	if mode == modeInference {
		c.set(0, c.dy[0])
		return nil
	}
	y := c.y(0)
	var mask *ir.Value
	if len(c.n.Outputs) > 1 && c.n.Outputs[1] != nil {
		mask = c.n.Outputs[1]
	} else {
		mask = c.n.SetOutput(1, b.fresh(y.Name+"_mask"))
		mask.Type = tensorType(ir.Bool, dimsOf(y))
	}
	var scale *ir.Value
	ratio := 0.5
	var rv *ir.Value
	if len(c.n.Inputs) > 1 {
		rv = c.n.Inputs[1]
	}
	if rv != nil {
		if r, ok := constFloat(rv); ok {
			ratio = r
			rv = nil
		}
	}
	if rv != nil {
		one := b.scalar(rv.Type.DType, 1)
		scale = b.cast(b.div(one, b.sub(one, rv)), c.dt())
	} else {
		scale = b.scalar(c.dt(), 1/(1-ratio))
	}
	g := b.mul(b.mul(c.dy[0], b.cast(mask, c.dt())), scale)
	if mode == modeRuntime {
		g = b.where(c.n.Inputs[2], g, c.dy[0])
	}
	c.set(0, g)
	return nil
}

type dropMode uint8

const (
	modeInference dropMode = iota
	modeTraining
	modeRuntime
)

// dropoutMode says how a Dropout node runs: before opset 12 ONNX Runtime
// runs Dropout as the identity; from 12 the optional training_mode input
// decides (absent: inference).
func dropoutMode(n *ir.Node, opset int64) dropMode {
	if opset < 12 || len(n.Inputs) < 3 || n.Inputs[2] == nil {
		return modeInference
	}
	t := n.Inputs[2]
	if v, ok := constInts(t); ok && len(v) == 1 {
		if v[0] != 0 {
			return modeTraining
		}
		return modeInference
	}
	return modeRuntime
}

// ---- resize ----

// gradResize: nearest and linear Resize are linear in x and separable: on
// each resized axis a, y = A_a·x along a for an interpolation matrix A_a
// [O_a, S_a]. So dx = A_aᵀ·dy along each resized axis in turn. A_aᵀ is
// computed by the graph with the same Resize (same attributes, same scales
// or sizes on axis a, 1 elsewhere) applied to an identity: input E [1, S_a,
// 1…, S_a (axis a), 1…] with E[0, j, …, i, …] = 1[i = j] gives R[0, j, …, o,
// …] = A_a[o, j], so the rule follows ONNX Runtime's coordinate
// transformation and rounding modes exactly. Only the spatial axes (2 on)
// may be resized; cubic, antialias, axes and tf_crop_and_resize are not
// supported.
func gradResize(c *gctx) error {
	b := c.b
	x, y := c.x(0), c.y(0)
	mode := c.n.AttrString("mode", "nearest")
	if mode != "nearest" && mode != "linear" {
		return c.errorf("the gradient of Resize supports modes nearest and linear, not %q", mode)
	}
	if c.n.AttrString("coordinate_transformation_mode", "") == "tf_crop_and_resize" || c.n.AttrInt("antialias", 0) != 0 || c.n.Attr("axes") != nil {
		return c.errorf("the gradient of Resize does not support tf_crop_and_resize, antialias or axes")
	}
	xd, yd := dimsOf(x), dimsOf(y)
	r := len(xd)
	if r < 3 || xd[0] != yd[0] || xd[1] != yd[1] {
		return c.errorf("the gradient of Resize supports resizing the spatial axes (2 on) of a tensor of rank ≥ 3 only")
	}
	// Scales or sizes as the node gives them.
	var scales []float64
	scaleIn := 2
	if b.opset < 11 {
		scaleIn = 1
	}
	if len(c.n.Inputs) > scaleIn && c.n.Inputs[scaleIn] != nil && c.n.Inputs[scaleIn].Data != nil {
		if s, ok := c.n.Inputs[scaleIn].Data.Float64s(); ok && len(s) == r {
			scales = s
		}
	}
	g := c.dy[0]
	for a := 2; a < r; a++ {
		if xd[a] == yd[a] && (scales == nil || scales[a] == 1) {
			continue
		}
		S, O := xd[a], yd[a]
		eshape := ones(r)
		eshape[1], eshape[a] = S, S
		ev := make([]float64, S*S)
		for i := range S {
			ev[i*S+i] = 1
		}
		E := b.constant(floatTensor(c.dt(), eshape, ev))
		rshape := slices.Clone(eshape)
		rshape[a] = O
		ins := []*ir.Value{E}
		f32 := func(vals []float64) *ir.Value {
			return b.constant(floatTensor(ir.Float32, []int64{int64(len(vals))}, vals))
		}
		if scales != nil {
			sc := make([]float64, r)
			for i := range sc {
				sc[i] = 1
			}
			sc[a] = scales[a]
			switch {
			case b.opset < 11:
				ins = append(ins, f32(sc))
			case b.opset < 13:
				ins = append(ins, f32(nil), f32(sc))
			default:
				ins = append(ins, nil, f32(sc))
			}
		} else {
			if b.opset < 11 {
				return c.errorf("the gradient of Resize needs constant scales")
			}
			sizes := b.ints(rshape...)
			if b.opset < 13 {
				ins = append(ins, f32(nil), f32(nil), sizes)
			} else {
				ins = append(ins, nil, nil, sizes)
			}
		}
		var attrs []ir.Attr
		for _, at := range c.n.Attrs {
			attrs = append(attrs, at)
		}
		R := b.add("Resize", tensorType(c.dt(), rshape), ins, attrs...)
		At := b.reshape(R, []int64{S, O}) // A_aᵀ: [S_a, O_a]
		A := b.swapLast(At)               // [O_a, S_a]
		// Move axis a last, contract with A, move it back.
		perm := make([]int64, 0, r)
		for i := range r {
			if i != a {
				perm = append(perm, int64(i))
			}
		}
		perm = append(perm, int64(a))
		inv := make([]int64, r)
		for i, p := range perm {
			inv[p] = int64(i)
		}
		g = b.transpose(b.matmul(b.transpose(g, perm), A), inv)
	}
	c.set(0, g)
	return nil
}
