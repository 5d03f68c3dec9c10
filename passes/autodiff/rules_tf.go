package autodiff

import (
	"math"
	"slices"
	"strings"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// TensorFlow graphs. A graph whose nodes are all TensorFlow ops
// (ir.TFDomain: read from a GraphDef or a TensorFlow.js model, or
// zoo:NAME:tf) gets its training graph in TensorFlow ops: the same driver
// (active values, reverse sweep, sums of contributions, losses, SGD) with
// the builder in its TensorFlow form and the rules of tfRules. Since
// TensorFlow.js's graph executor runs none of TensorFlow's backward ops
// (Conv2DBackpropFilter, ReluGrad, MaxPoolGrad, FusedBatchNormGradV3,
// BiasAddGrad, …), every gradient is composed of forward ops it runs:
//
//	Conv2D input gradient      Conv2DBackpropInput (tfjs's conv2dTranspose)
//	Conv2D filter gradient     Conv2D over the transposed operands, strides
//	                           and dilations swapped (convFilterGradTF)
//	Depthwise input gradient   DepthwiseConv2dNative of the zero-upsampled dy
//	                           with the filter reversed (depthwiseInputGradTF)
//	Depthwise filter gradient  DepthwiseConv2dNative with batch and channels
//	                           folded into channels (depthwiseFilterGradTF)
//	MaxPool                    window-offset equality masks, first maximum
//	                           wins, placed by one Conv2DBackpropInput
//	AvgPool                    dy over the window counts, placed alike
//	LRN                        channel-window sums as Pad, Slice and AddN
//	ResizeBilinear, …Nearest…  the transposed interpolation matrices, MatMul
//	FusedBatchNormV3           written out in training semantics (batch
//	                           statistics) in Mean, Sub, Mul, Sqrt, … first
//	Conv with strides and      written out first as the stride-1 dilated
//	dilations both above 1     convolution and a StridedSlice (TensorFlow.js
//	                           runs neither form; lowerStridedDilatedTF)
//	Depthwise multiplier M     filter laid out [kh, kw, C·M, 1]; dx summed
//	                           over M, dw from x's channels repeated M times
//	GatherNd                   ScatterNd of dy at the indices (duplicates add)
//	StridedSlice               dy reversed (negative strides), spread by the
//	                           strides (upsampleAxis) and padded
//	Pack, Unpack               Slice and Reshape; Pack
//	Maximum, Minimum           dy to the operand that is the result, ties to
//	                           the first (TensorFlow's convention)
//	BatchMatMulV2              MatMul's rule, batch axes summed back where
//	                           an operand was broadcast
//
// An op on an active path without a rule here is a *NoGradientError that
// names it, as for ONNX.

// isTF reports whether every node of g is a TensorFlow op.
func isTF(g *ir.Graph) bool {
	for _, n := range g.Nodes {
		if n.Domain != ir.TFDomain {
			return false
		}
	}
	return len(g.Nodes) > 0
}

// tfCuts lists the TensorFlow ops whose outputs are piecewise constant in
// their inputs or do not depend on their values (cutsGradient).
var tfCuts = map[string]bool{
	"Shape": true, "ShapeN": true, "Size": true, "Rank": true, "Const": true,
	"StopGradient": true, "PreventGradient": true,
	"Floor": true, "Ceil": true, "Round": true, "Rint": true, "Sign": true,
	"ArgMax": true, "ArgMin": true, "OneHot": true, "Range": true, "Fill": true,
	"ZerosLike": true, "OnesLike": true,
	"Equal": true, "NotEqual": true, "Greater": true, "GreaterEqual": true, "Less": true, "LessEqual": true,
	"LogicalAnd": true, "LogicalOr": true, "LogicalNot": true, "IsNan": true, "IsInf": true, "IsFinite": true,
	"RandomUniform": true, "RandomStandardNormal": true, "TruncatedNormal": true, "RandomUniformInt": true, "Multinomial": true,
}

// tfRules are the gradient rules of TensorFlow ops. The elementwise ones
// are the ONNX rules, which write through the builder's TensorFlow form.
var tfRules = map[string]*rule{
	"Identity":   {grad: gradIdentity},
	"Snapshot":   {grad: gradIdentity},
	"Add":        {grad: gradAdd},
	"AddV2":      {grad: gradAdd},
	"AddN":       {grad: gradSum},
	"Sub":        {grad: gradSub},
	"Mul":        {grad: gradMul},
	"RealDiv":    {grad: gradDiv},
	"Div":        {grad: gradDiv},
	"Neg":        {grad: gradNeg},
	"Sqrt":       {grad: gradSqrt},
	"Rsqrt":      {grad: gradRsqrtTF},
	"Square":     {grad: gradSquareTF},
	"Exp":        {grad: gradExp},
	"Log":        {grad: gradLog},
	"Reciprocal": {grad: gradReciprocal},
	"Sigmoid":    {grad: gradSigmoid},
	"Tanh":       {grad: gradTanh},
	"Relu":       {grad: gradRelu},
	"Relu6":      {grad: gradRelu6TF},
	"LeakyRelu":  {grad: gradLeakyRelu},
	"Elu":        {grad: gradElu},
	"Cast":       {grad: gradCast},
	"SelectV2":   {in: []int{1, 2}, grad: gradWhere},
	"Softmax":    {grad: gradSoftmaxTF},
	"LogSoftmax": {grad: gradLogSoftmaxTF},
	"BiasAdd":    {grad: gradBiasAddTF},
	"Maximum":    {grad: gradMaxMinTF},
	"Minimum":    {grad: gradMaxMinTF},
	"Prelu":      {grad: gradPRelu},

	"Sum":          {in: []int{0}, grad: gradReduceTF},
	"Mean":         {in: []int{0}, grad: gradReduceTF},
	"Reshape":      {in: []int{0}, grad: gradReshape},
	"Squeeze":      {in: []int{0}, grad: gradReshape},
	"ExpandDims":   {in: []int{0}, grad: gradReshape},
	"Transpose":    {in: []int{0}, grad: gradTransposeTF},
	"ConcatV2":     {grad: gradConcatTF},
	"Slice":        {in: []int{0}, grad: gradSliceTF},
	"Pad":          {in: []int{0}, grad: gradPadTF},
	"PadV2":        {in: []int{0}, grad: gradPadTF},
	"BroadcastTo":  {in: []int{0}, grad: gradExpand},
	"GatherNd":     {in: []int{0}, grad: gradGatherNdTF},
	"StridedSlice": {in: []int{0}, grad: gradStridedSliceTF},
	"Pack":         {grad: gradPackTF},
	"Unpack":       {grad: gradUnpackTF},

	"MatMul":                      {grad: gradMatMulTF},
	"_FusedMatMul":                {grad: gradMatMulTF},
	"BatchMatMulV2":               {grad: gradMatMulTF},
	"Conv2D":                      {grad: gradConv2DTF},
	"_FusedConv2D":                {grad: gradConv2DTF},
	"DepthwiseConv2dNative":       {grad: gradDepthwiseTF},
	"FusedDepthwiseConv2dNative":  {grad: gradDepthwiseTF},
	"_FusedDepthwiseConv2dNative": {grad: gradDepthwiseTF},
	"Conv2DBackpropInput":         {in: []int{1, 2}, grad: gradConv2DBackpropInputTF},
	"MaxPool":                     {grad: gradMaxPoolTF},
	"AvgPool":                     {grad: gradAvgPoolTF},
	"LRN":                         {grad: gradLRNTF},
	"ResizeBilinear":              {in: []int{0}, grad: gradResizeTF},
	"ResizeNearestNeighbor":       {in: []int{0}, grad: gradResizeTF},
}

// lowerFusedBatchNormTF writes FusedBatchNorm (V2, V3) out in training
// semantics, as lowerBatchNorm does for ONNX: statistics over N, H, W of
// the current batch (NHWC), y = x̂·scale + offset, the mean and variance
// inputs unused.
func (d *differ) lowerFusedBatchNormTF(n *ir.Node) error {
	b := d.b
	x := n.Inputs[0]
	if f := n.AttrString("data_format", "NHWC"); f != "NHWC" {
		return d.errorf(n, "the training graph supports %s in NHWC only, not %s", n.Op, f)
	}
	xd, ok := x.Type.Dims()
	if !ok || !x.Type.DType.IsFloat() || len(xd) != 4 {
		return d.errorf(n, "autodiff needs a static 4-D floating-point input, not %v", x.Type)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-4))
	xh := d.normalize(x, []int64{0, 1, 2}, eps)
	y := b.addv(b.mul(xh, n.Inputs[1]), n.Inputs[2])
	return d.replace(n, y)
}

// lowerStridedDilatedTF writes a convolution (Conv2D, DepthwiseConv2dNative
// and their fused forms) with both strides and dilations above 1, which
// TensorFlow.js does not run, as the same convolution at stride 1: x
// padded by the node's pads, a VALID convolution with the dilations, then
// every s-th row and column (StridedSlice), then the fused tail (BiasAdd,
// Relu or Relu6) as ops of its own:
//
//	y[n, p, q, o] = Σ_{i,j,c} xpad[n, p·s + i·d, q·s + j·d, c]·w[i, j, c, o]
//	              = full[n, p·s, q·s, o]  with full the stride-1 result.
//
// It computes s² times the outputs; the gradients then follow from the
// rules of those ops. Other nodes are left alone.
func (d *differ) lowerStridedDilatedTF(n *ir.Node) error {
	st, ok1 := n.AttrInts("strides")
	dl, ok2 := n.AttrInts("dilations")
	if !ok1 || !ok2 || len(st) != 4 || len(dl) != 4 || (st[1] == 1 && st[2] == 1) || (dl[1] == 1 && dl[2] == 1) {
		return nil
	}
	b := d.b
	c := &gctx{d: d, b: b, n: n}
	x, w, y := n.Inputs[0], n.Inputs[1], n.Outputs[0]
	xd, wd, yd := dimsOf(x), dimsOf(w), dimsOf(y)
	if len(xd) != 4 || len(wd) != 4 || len(yd) != 4 {
		return d.errorf(n, "the training graph needs static 4-D operands for %s with strides %v and dilations %v", n.Op, st, dl)
	}
	g, err := tfGeometry(c, x, y, [2]int64{wd[0], wd[1]})
	if err != nil {
		return err
	}
	var tail []string
	if a := n.Attr("fused_ops"); a != nil {
		for _, s := range a.Strs {
			tail = append(tail, string(s))
		}
	}
	switch strings.Join(tail, ",") {
	case "", "BiasAdd", "BiasAdd,Relu", "BiasAdd,Relu6":
	default:
		return d.errorf(n, "no gradient for %s with fused_ops [%s]: the training graph supports BiasAdd, optionally followed by Relu or Relu6", n.Op, strings.Join(tail, ", "))
	}
	op := "Conv2D"
	if strings.Contains(n.Op, "Depthwise") {
		op = "DepthwiseConv2dNative"
	}
	full := b.conv2DTF(op, b.padded(x, g), w, [2]int64{1, 1}, g.d)
	fd := dimsOf(full)
	out := b.stridedSliceTF(full, []int64{0, 0, 0, 0}, []int64{fd[0], (yd[1]-1)*g.s[0] + 1, (yd[2]-1)*g.s[1] + 1, fd[3]},
		[]int64{1, g.s[0], g.s[1], 1}, tensorType(y.Type.DType, yd))
	for _, t := range tail {
		switch t {
		case "BiasAdd":
			if len(n.Inputs) < 3 {
				return d.errorf(n, "%s with fused_ops [BiasAdd] has %d inputs, want 3", n.Op, len(n.Inputs))
			}
			out = b.add("BiasAdd", out.Type, []*ir.Value{out, n.Inputs[2]}, ir.StringAttr("data_format", "NHWC"))
		default:
			out = b.unary(t, out)
		}
	}
	return d.replace(n, out)
}

// softmaxXentTF is the softmax cross-entropy loss of TensorFlow logits
// [N, d…, C], the class axis last as TensorFlow lays it out, against int32
// labels [N, d…]: −mean(Σ_c onehot(label)_c · LogSoftmax(logits)_c).
func (d *differ) softmaxXentTF(l Loss, out *ir.Value) (*ir.Value, error) {
	b := d.b
	dims := dimsOf(out)
	if len(dims) < 2 {
		return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: d.file, Value: out.Name}, "loss %s: logits %q must have rank 2 or more ([N, …, C], classes last in a TensorFlow graph), not %v", l, out.Name, out.Type)}.Err()
	}
	r := len(dims)
	labelDims := slices.Clone(dims[:r-1])
	label, err := d.lossInput(l, tensorType(ir.Int32, labelDims))
	if err != nil {
		return nil, err
	}
	logp := b.unary("LogSoftmax", out)
	classes := make([]int64, dims[r-1])
	for i := range classes {
		classes[i] = int64(i)
	}
	cls := b.constant(int32Tensor([]int64{dims[r-1]}, classes...))
	lab := b.reshape(b.cast(label, ir.Int32), append(slices.Clone(labelDims), 1))
	onehot := b.cast(b.compare("Equal", lab, cls), out.Type.DType)
	total := b.reduceAll("ReduceSum", b.mul(onehot, logp))
	return b.scale(total, -1/float64(prod(labelDims))), nil
}

// ---- elementwise ----

// gradRsqrtTF: y = 1/√x; dx = −½·dy·y³.
func gradRsqrtTF(c *gctx) error {
	b := c.b
	y := c.y(0)
	c.set(0, b.mul(b.scale(c.dy[0], -0.5), b.mul(y, b.mul(y, y))))
	return nil
}

// gradSquareTF: y = x²; dx = 2·dy·x.
func gradSquareTF(c *gctx) error {
	c.set(0, c.b.mul(c.b.scale(c.dy[0], 2), c.x(0)))
	return nil
}

// gradMaxMinTF: y = max(a, b) (Maximum) or min(a, b) (Minimum),
// broadcasting; the gradient goes to the operand that is the result, and
// on a tie to a, the first (TensorFlow's convention): da = unb(dy·1[a ≥ b])
// (1[a ≤ b] for Minimum), db = unb(dy·1[¬(a ≥ b)]).
func gradMaxMinTF(c *gctx) error {
	b := c.b
	x, w := c.x(0), c.x(1)
	cmp := "GreaterOrEqual"
	if c.n.Op == "Minimum" {
		cmp = "LessOrEqual"
	}
	dy := c.dy[0]
	first := b.compare(cmp, x, w) // y's shape
	zero := b.scalar(c.dt(), 0)
	if c.wants(0) {
		c.set(0, b.unbroadcast(b.where(first, dy, zero), dimsOf(x)))
	}
	if c.wants(1) {
		c.set(1, b.unbroadcast(b.where(first, zero, dy), dimsOf(w)))
	}
	return nil
}

// relu6Mask is 1[0 < y < 6] as a bool tensor, the derivative of
// y = min(max(x, 0), 6) away from the two kinks.
func relu6Mask(b *builder, y *ir.Value) *ir.Value {
	dt := y.Type.DType
	return b.binaryT("And", ir.Bool, b.compare("Greater", y, b.scalar(dt, 0)), b.compare("Less", y, b.scalar(dt, 6)))
}

// gradRelu6TF: y = min(max(x, 0), 6); dx = dy·1[0 < y < 6].
func gradRelu6TF(c *gctx) error {
	b := c.b
	c.set(0, b.where(relu6Mask(b, c.y(0)), c.dy[0], b.scalar(c.dt(), 0)))
	return nil
}

// lastAxisSum is Σ over the last axis of x, kept as size 1.
func lastAxisSum(b *builder, x *ir.Value) *ir.Value {
	return b.reduce("ReduceSum", x, []int64{int64(len(dimsOf(x)) - 1)}, true)
}

// gradSoftmaxTF: y = softmax(x) over the last axis;
// dx = y·(dy − Σ_last dy·y).
func gradSoftmaxTF(c *gctx) error {
	b := c.b
	y := c.y(0)
	c.set(0, b.mul(y, b.sub(c.dy[0], lastAxisSum(b, b.mul(c.dy[0], y)))))
	return nil
}

// gradLogSoftmaxTF: y = log softmax(x) over the last axis;
// dx = dy − eʸ·Σ_last dy.
func gradLogSoftmaxTF(c *gctx) error {
	b := c.b
	c.set(0, b.sub(c.dy[0], b.mul(b.unary("Exp", c.y(0)), lastAxisSum(b, c.dy[0]))))
	return nil
}

// gradBiasAddTF: y = x + bias along the channel axis (last in NHWC);
// dx = dy, dbias = Σ over the other axes of dy.
func gradBiasAddTF(c *gctx) error {
	if f := c.n.AttrString("data_format", "NHWC"); f != "NHWC" {
		return c.errorf("the gradient of BiasAdd supports NHWC only, not %s", f)
	}
	c.set(0, c.dy[0])
	if c.wants(1) {
		c.set(1, biasGrad(c.b, c.dy[0]))
	}
	return nil
}

// biasGrad sums dy over every axis but the last.
func biasGrad(b *builder, dy *ir.Value) *ir.Value {
	r := len(dimsOf(dy))
	axes := make([]int64, r-1)
	for i := range axes {
		axes[i] = int64(i)
	}
	if len(axes) == 0 {
		return dy
	}
	return b.reduce("ReduceSum", dy, axes, false)
}

// ---- reductions and data movement ----

// gradReduceTF: y = Σ_A x (Sum) or mean_A x (Mean) over the constant axes
// input; dx = broadcast(reshape(dy, the kept shape), x) (divided by the
// count for Mean).
func gradReduceTF(c *gctx) error {
	b := c.b
	xd := dimsOf(c.x(0))
	axes, ok := constInts(c.x(1))
	if !ok {
		return c.errorf("the gradient of %s needs constant axes", c.n.Op)
	}
	r := int64(len(xd))
	norm := make([]int64, 0, len(axes))
	for _, a := range axes {
		if a < 0 {
			a += r
		}
		if !slices.Contains(norm, a) {
			norm = append(norm, a)
		}
	}
	if len(norm) == 0 {
		c.set(0, c.dy[0])
		return nil
	}
	g := b.expand(b.reshape(c.dy[0], reduced(xd, norm, true)), xd)
	if c.n.Op == "Mean" {
		g = b.scale(g, 1/float64(prod(xd)/prod(reduced(xd, norm, true))))
	}
	c.set(0, g)
	return nil
}

// gradTransposeTF: y = transpose(x, p) with p a constant input;
// dx = transpose(dy, p⁻¹).
func gradTransposeTF(c *gctx) error {
	perm, ok := constInts(c.x(1))
	if !ok {
		return c.errorf("the gradient of Transpose needs a constant permutation")
	}
	inv := make([]int64, len(perm))
	for i, p := range perm {
		inv[p] = int64(i)
	}
	c.set(0, c.b.transpose(c.dy[0], inv))
	return nil
}

// gradConcatTF: y = concat(x₀, …, x_{N−1}) along the constant axis input
// (the last); dxᵢ = dy[offᵢ : offᵢ+|xᵢ|] along it.
func gradConcatTF(c *gctx) error {
	last := len(c.n.Inputs) - 1
	ax, ok := constInts(c.x(last))
	if !ok || len(ax) != 1 {
		return c.errorf("the gradient of ConcatV2 needs a constant axis")
	}
	axis := ax[0]
	if axis < 0 {
		axis += int64(len(dimsOf(c.y(0))))
	}
	off := int64(0)
	for i, x := range c.n.Inputs[:last] {
		sz := dimsOf(x)[axis]
		if c.wants(i) {
			c.set(i, c.b.slice(c.dy[0], []int64{off}, []int64{off + sz}, []int64{axis}))
		}
		off += sz
	}
	return nil
}

// gradSliceTF: y = x[begin : begin+size]; dx = pad(dy) with zeros, begin
// before and |x| − begin − size after on each axis (size −1: to the end).
func gradSliceTF(c *gctx) error {
	xd := dimsOf(c.x(0))
	begin, ok1 := constInts(c.x(1))
	size, ok2 := constInts(c.x(2))
	if !ok1 || !ok2 || len(begin) != len(xd) || len(size) != len(xd) {
		return c.errorf("the gradient of Slice needs constant begin and size")
	}
	r := len(xd)
	pads := make([]int64, 2*r)
	for i := range r {
		s := size[i]
		if s < 0 {
			s = xd[i] - begin[i]
		}
		pads[i], pads[i+r] = begin[i], xd[i]-begin[i]-s
	}
	c.set(0, c.b.pad(c.dy[0], pads))
	return nil
}

// gradPadTF: y = pad(x, paddings) with a constant (Pad, PadV2);
// dx = dy cropped by the paddings.
func gradPadTF(c *gctx) error {
	xd := dimsOf(c.x(0))
	p, ok := constInts(c.x(1))
	if !ok || len(p) != 2*len(xd) {
		return c.errorf("the gradient of %s needs constant paddings", c.n.Op)
	}
	r := len(xd)
	starts, ends, axes := make([]int64, r), make([]int64, r), make([]int64, r)
	for i := range r {
		starts[i], ends[i], axes[i] = p[2*i], p[2*i]+xd[i], int64(i)
	}
	c.set(0, c.b.slice(c.dy[0], starts, ends, axes))
	return nil
}

// ---- fused ops ----

// fusedTail applies the gradient of a grappler-fused op's tail
// (fused_ops: BiasAdd, optionally followed by Relu or Relu6) to dy and
// returns the gradient at the core op's output and, when the node has a
// bias, sets the bias's contribution (input 2). Any other fusion is an
// error that names it.
func fusedTail(c *gctx) (*ir.Value, error) {
	dy := c.dy[0]
	a := c.n.Attr("fused_ops")
	if a == nil {
		return dy, nil
	}
	var ops []string
	for _, s := range a.Strs {
		ops = append(ops, string(s))
	}
	b := c.b
	switch strings.Join(ops, ",") {
	case "":
		return dy, nil
	case "BiasAdd":
	case "BiasAdd,Relu":
		dy = b.where(b.compare("Greater", c.y(0), b.scalar(c.dt(), 0)), dy, b.scalar(c.dt(), 0))
	case "BiasAdd,Relu6":
		dy = b.where(relu6Mask(b, c.y(0)), dy, b.scalar(c.dt(), 0))
	default:
		return nil, c.errorf("no gradient for %s with fused_ops [%s]: the training graph supports BiasAdd, optionally followed by Relu or Relu6", c.n.Op, strings.Join(ops, ", "))
	}
	if len(c.n.Inputs) != 3 {
		return nil, c.errorf("%s with fused_ops [BiasAdd] has %d inputs, want 3", c.n.Op, len(c.n.Inputs))
	}
	if c.wants(2) {
		c.set(2, biasGrad(b, dy))
	}
	return dy, nil
}

// ---- matrix products ----

// gradMatMulTF: y = op(a)·op(b) (op: the transpose_a / transpose_b
// attributes of MatMul, adj_x / adj_y of BatchMatMulV2, whose batch axes
// broadcast), with a fused bias tail for _FusedMatMul;
// d op(a) = unb(dy·op(b)ᵀ, op(a)), d op(b) = unb(op(a)ᵀ·dy, op(b)),
// transposed back where the operand was (unb: summed over the batch axes
// the operand was broadcast along). The products are written without the
// transpose attributes (TensorFlow.js 4.22's wasm backend gets
// transpose_b wrong in _FusedMatMul). The batch broadcast is TensorFlow's;
// TensorFlow.js 4.22 computes a forward BatchMatMulV2 right only where
// each operand's batch axes are a suffix of the product's after leading
// 1s (builder.matmul broadcasts the gradient's operands first).
func gradMatMulTF(c *gctx) error {
	b := c.b
	dy, err := fusedTail(c)
	if err != nil {
		return err
	}
	x, w := c.x(0), c.x(1)
	attrA, attrB := "transpose_a", "transpose_b"
	if strings.HasPrefix(c.n.Op, "BatchMatMul") {
		attrA, attrB = "adj_x", "adj_y"
	}
	ta, tb := c.n.AttrInt(attrA, 0) != 0, c.n.AttrInt(attrB, 0) != 0
	if len(dimsOf(x)) < 2 || len(dimsOf(w)) < 2 || (c.n.Op != "BatchMatMulV2" && (len(dimsOf(x)) != 2 || len(dimsOf(w)) != 2)) {
		return c.errorf("the gradient of %s needs 2-D operands (BatchMatMulV2: rank 2 or more)", c.n.Op)
	}
	// opT(v, t) is op(v)ᵀ: v itself when op transposes it.
	opT := func(v *ir.Value, t bool) *ir.Value {
		if t {
			return v
		}
		return b.swapLast(v)
	}
	// back is the gradient g of op(v) as v's: summed to op(v)'s shape,
	// transposed back when op transposes.
	back := func(g, v *ir.Value, t bool) *ir.Value {
		vd := slices.Clone(dimsOf(v))
		r := len(vd)
		if t {
			vd[r-2], vd[r-1] = vd[r-1], vd[r-2]
		}
		g = b.unbroadcast(g, vd)
		if t {
			g = b.swapLast(g)
		}
		return g
	}
	if c.wants(0) {
		c.set(0, back(b.matmul(dy, opT(w, tb)), x, ta))
	}
	if c.wants(1) {
		c.set(1, back(b.matmul(opT(x, ta), dy), w, tb))
	}
	return nil
}

// gradStridedSliceTF: y = x read along each axis a at Count_a indices
// Start_a + k·Stride_a (shapes.ResolveStridedSlice resolves the masks:
// shrunk axes read one index and drop, new axes add a 1); dx is dy
// reshaped to the counts and, on each axis, reversed where the stride is
// negative (so the indices rise from first = Start + (Count−1)·Stride),
// spread by |Stride| (upsampleAxis) and padded with zeros to x's size,
// first before (a negative pad after crops the spread's trailing zeros).
// This is TensorFlow's StridedSlice; TensorFlow.js 4.22 reads other
// elements where a shrunk axis meets a stride other than 1 (both
// backends), and there the gradient is not that of what it computes.
func gradStridedSliceTF(c *gctx) error {
	b := c.b
	xd := dimsOf(c.x(0))
	axes, err := shapes.ResolveStridedSlice(c.n, xd)
	if err != nil {
		return c.errorf("the gradient of StridedSlice needs a static spec: %v", err)
	}
	counts := make([]int64, len(xd))
	for a, ax := range axes {
		counts[a] = ax.Count
	}
	if prod(counts) == 0 {
		c.set(0, b.zeros(c.dt(), xd))
		return nil
	}
	g := b.reshape(c.dy[0], counts)
	pads := make([]int64, 2*len(xd))
	for a, ax := range axes {
		first, s := ax.Start, ax.Stride
		if s < 0 {
			if ax.Count > 1 {
				g = b.add("ReverseV2", g.Type, []*ir.Value{g, b.ints(int64(a))}, tfType("Tidx", ir.Int32))
			}
			first, s = ax.Start+(ax.Count-1)*s, -s
		}
		if ax.Count == 1 {
			s = 1
		}
		g = b.upsampleAxis(g, a, s)
		pads[a], pads[len(xd)+a] = first, xd[a]-first-ax.Count*s
	}
	c.set(0, b.pad(g, pads))
	return nil
}

// gradGatherNdTF: y[i…] = params[indices[i…, 0], …, indices[i…, K−1], …]
// (K the indices' last axis); dparams = ScatterNd(indices, dy,
// |params|): each slice of dy added at the position it was read from, the
// contributions of equal indices summed (TensorFlow.js's ScatterNd adds
// duplicates, as TensorFlow's does). TensorFlow's GatherNd takes
// in-range indices only, so no negative index needs resolving.
func gradGatherNdTF(c *gctx) error {
	idx := c.x(1)
	if dt := idx.Type.DType; dt != ir.Int32 && dt != ir.Int64 {
		return c.errorf("the gradient of GatherNd needs int32 or int64 indices, not %v", dt)
	}
	pd := dimsOf(c.x(0))
	shape := c.b.ints(pd...)
	c.set(0, c.b.add("ScatterNd", c.x(0).Type, []*ir.Value{idx, c.dy[0], shape},
		tfType("T", c.dt()), tfType("Tindices", idx.Type.DType)))
	return nil
}

// packAxis is the axis attribute of Pack or Unpack resolved against the
// packed tensor's rank r.
func packAxis(c *gctx, r int) int64 {
	axis := c.n.AttrInt("axis", 0)
	if axis < 0 {
		axis += int64(r)
	}
	return axis
}

// gradPackTF: y = stack(x₀, …, x_{N−1}) along a new axis a; dxᵢ =
// dy[…, i, …] along a, that axis dropped (a Slice and a Reshape).
func gradPackTF(c *gctx) error {
	axis := packAxis(c, len(dimsOf(c.y(0))))
	for i, x := range c.n.Inputs {
		if c.wants(i) {
			c.set(i, c.b.reshape(c.b.slice(c.dy[0], []int64{int64(i)}, []int64{int64(i) + 1}, []int64{axis}), dimsOf(x)))
		}
	}
	return nil
}

// gradUnpackTF: (y₀, …, y_{N−1}) = x split along axis a into its N
// slices, that axis dropped; dx = stack(dy₀, …, dy_{N−1}) along a (Pack),
// zeros for outputs without a gradient.
func gradUnpackTF(c *gctx) error {
	x := c.x(0)
	axis := packAxis(c, len(dimsOf(x)))
	parts := make([]*ir.Value, len(c.n.Outputs))
	for i := range c.n.Outputs {
		if c.y(i) == nil {
			return c.errorf("the gradient of Unpack needs every output")
		}
		parts[i] = c.dyOrZero(i)
	}
	c.set(0, c.b.add("Pack", x.Type, parts, ir.IntAttr("N", int64(len(parts))), ir.IntAttr("axis", axis)))
	return nil
}

// ---- convolution ----

// tfGeom is the geometry of a 2-D NHWC window op: kernel, strides,
// dilations and the pads (top, left) and (bottom, right) resolved from
// its padding.
type tfGeom struct {
	k, s, d  [2]int64
	pb, pe   [2]int64
	in, out  [2]int64 // spatial sizes of input and output
	explicit []int64  // explicit_paddings as written, for EXPLICIT
	padding  string
}

// tfGeometry reads a window op's attributes (data_format NHWC only).
func tfGeometry(c *gctx, x, y *ir.Value, k [2]int64) (*tfGeom, error) {
	n := c.n
	if f := n.AttrString("data_format", "NHWC"); f != "NHWC" {
		return nil, c.errorf("the gradient of %s supports data_format NHWC only, not %s", n.Op, f)
	}
	xd, yd := dimsOf(x), dimsOf(y)
	if len(xd) != 4 || len(yd) != 4 {
		return nil, c.errorf("the gradient of %s needs 4-D input and output", n.Op)
	}
	g := &tfGeom{k: k, s: [2]int64{1, 1}, d: [2]int64{1, 1}, in: [2]int64{xd[1], xd[2]}, out: [2]int64{yd[1], yd[2]}}
	if st, ok := n.AttrInts("strides"); ok && len(st) == 4 {
		g.s = [2]int64{st[1], st[2]}
	}
	if dl, ok := n.AttrInts("dilations"); ok && len(dl) == 4 {
		g.d = [2]int64{dl[1], dl[2]}
	}
	g.padding = n.AttrString("padding", "VALID")
	switch g.padding {
	case "VALID":
	case "SAME":
		for a := range 2 {
			ext := (k[a]-1)*g.d[a] + 1
			total := max(0, (g.out[a]-1)*g.s[a]+ext-g.in[a])
			g.pb[a], g.pe[a] = total/2, total-total/2
		}
	case "EXPLICIT":
		e, _ := n.AttrInts("explicit_paddings")
		if len(e) != 8 {
			return nil, c.errorf("%s has padding EXPLICIT with %d explicit_paddings, want 8", n.Op, len(e))
		}
		g.explicit = e
		g.pb, g.pe = [2]int64{e[2], e[4]}, [2]int64{e[3], e[5]}
	default:
		return nil, c.errorf("the gradient of %s does not support padding %q", n.Op, g.padding)
	}
	return g, nil
}

// padAttrs are the padding attributes of g for a Conv2D-like op.
func (g *tfGeom) padAttrs() []ir.Attr {
	attrs := []ir.Attr{ir.StringAttr("padding", g.padding)}
	if g.explicit != nil {
		attrs = append(attrs, ir.IntsAttr("explicit_paddings", g.explicit...))
	}
	return attrs
}

// padded is x [N, H, W, C] zero-padded by g's pads.
func (b *builder) padded(x *ir.Value, g *tfGeom) *ir.Value {
	return b.pad(x, []int64{0, g.pb[0], g.pb[1], 0, 0, g.pe[0], g.pe[1], 0})
}

// conv2DTF is a Conv2D of x by w with the given strides, dilations and
// VALID padding (NHWC).
func (b *builder) conv2DTF(op string, x, w *ir.Value, s, d [2]int64) *ir.Value {
	xd, wd := dimsOf(x), dimsOf(w)
	oc := wd[3]
	if op == "DepthwiseConv2dNative" {
		oc = wd[2] * wd[3]
	}
	var out [2]int64
	for a := range 2 {
		out[a] = (xd[1+a]-(wd[a]-1)*d[a]-1)/s[a] + 1
	}
	return b.add(op, tensorType(x.Type.DType, []int64{xd[0], out[0], out[1], oc}), []*ir.Value{x, w},
		ir.StringAttr("data_format", "NHWC"), ir.IntsAttr("strides", 1, s[0], s[1], 1),
		ir.IntsAttr("dilations", 1, d[0], d[1], 1), ir.StringAttr("padding", "VALID"))
}

// convFilterGradTF is ∂loss/∂w of a Conv2D of in [N, H, W, C] into
// out [N, P, Q, O] with filter [kh, kw, C, O] (dout its gradient):
//
//	dw[i, j, c, o] = Σ_{n,p,q} inpad[n, p·s + i·d, q·s + j·d, c] · dout[n, p, q, o]
//
// which is a VALID Conv2D of inpad transposed to [C, Hp, Wp, N] by dout
// transposed to [P, Q, N, O], with strides d and dilations s (swapped):
// [C, kh', kw', O] (kh' ≥ kh), cut to kh × kw and transposed to
// [kh, kw, C, O]. (TensorFlow.js's Conv2D needs strides or dilations 1:
// true when the forward op's dilations are 1.)
func (b *builder) convFilterGradTF(in, dout *ir.Value, g *tfGeom) *ir.Value {
	x := b.transpose(b.padded(in, g), []int64{3, 1, 2, 0})
	w := b.transpose(dout, []int64{1, 2, 0, 3})
	res := b.conv2DTF("Conv2D", x, w, g.d, g.s)
	rd := dimsOf(res)
	if rd[1] != g.k[0] || rd[2] != g.k[1] {
		res = b.slice(res, []int64{0, 0}, []int64{g.k[0], g.k[1]}, []int64{1, 2})
	}
	return b.transpose(res, []int64{1, 2, 0, 3})
}

// upsampleTF spreads dy [N, P, Q, C] to [N, P·sh, Q·sw, C] with dy[n, p,
// q, c] at (p·sh, q·sw) and zeros between.
func (b *builder) upsampleTF(dy *ir.Value, s [2]int64) *ir.Value {
	return b.upsampleAxis(b.upsampleAxis(dy, 2, s[1]), 1, s[0])
}

// upsampleAxis spreads x along axis a by s: element k goes to k·s, with
// s − 1 zeros after each (reshape, pad a new axis, reshape).
func (b *builder) upsampleAxis(x *ir.Value, a int, s int64) *ir.Value {
	if s <= 1 {
		return x
	}
	d := dimsOf(x)
	pre, post := prod(d[:a]), prod(d[a+1:])
	t := b.pad(b.reshape(x, []int64{pre, d[a], 1, post}), []int64{0, 0, 0, 0, 0, 0, s - 1, 0})
	out := slices.Clone(d)
	out[a] *= s
	return b.reshape(t, out)
}

// reverseHW reverses a filter [kh, kw, …] along its two spatial axes.
func (b *builder) reverseHW(w *ir.Value) *ir.Value {
	return b.add("ReverseV2", w.Type, []*ir.Value{w, b.ints(0, 1)}, tfType("Tidx", ir.Int32))
}

// transposedConvTF is ∂loss/∂x of a window op of x [N, H, W, C] whose
// output gradient is dy [N, P, Q, ·], given the correlation op that maps
// the upsampled dy back (Conv2D with the filter reversed and its channel
// axes swapped, or DepthwiseConv2dNative with the filter reversed):
//
//	dxpad[a] = Σ_i U[a − i·d]·w[i]   (U: dy upsampled by the strides)
//	         = correlation of U, padded by (k−1)·d − pb before and
//	           H + pb − |U| after, with w reversed, dilation d,
//
// which is x's shape directly (negative pads crop).
func (b *builder) transposedConvTF(op string, dy, w *ir.Value, g *tfGeom) *ir.Value {
	u := b.upsampleTF(dy, g.s)
	ud := dimsOf(u)
	var pads [4]int64
	for a := range 2 {
		pads[a] = (g.k[a]-1)*g.d[a] - g.pb[a]
		pads[2+a] = g.in[a] + g.pb[a] - ud[1+a]
	}
	u = b.pad(u, []int64{0, pads[0], pads[1], 0, 0, pads[2], pads[3], 0})
	return b.conv2DTF(op, u, w, [2]int64{1, 1}, g.d)
}

// convGradSetupTF is what the convolution rules share: the gradient
// through the node's fused tail, x, w and the geometry, with a clear error
// for strides and dilations both above 1, which TensorFlow.js does not run
// (lowerStridedDilatedTF rewrites such nodes first).
func convGradSetupTF(c *gctx, what string) (dy, x, w *ir.Value, g *tfGeom, err error) {
	if dy, err = fusedTail(c); err != nil {
		return nil, nil, nil, nil, err
	}
	x, w = c.x(0), c.x(1)
	wd := dimsOf(w)
	if g, err = tfGeometry(c, x, c.y(0), [2]int64{wd[0], wd[1]}); err != nil {
		return nil, nil, nil, nil, err
	}
	if g.s != [2]int64{1, 1} && g.d != [2]int64{1, 1} {
		return nil, nil, nil, nil, c.errorf("no gradient for %s with both strides %v and dilations %v above 1 (TensorFlow.js's %s needs one of them 1; prepare lowers such a node)", c.n.Op, g.s, g.d, what)
	}
	return dy, x, w, g, nil
}

// gradConv2DTF: y = Conv2D(x, w) (_FusedConv2D: then the fused tail).
//
//	dx = Conv2DBackpropInput(|x|, w, dy) with the node's strides and
//	     padding (TensorFlow.js's conv2dTranspose; with dilations > 1, the
//	     transposed correlation of transposedConvTF);
//	dw = convFilterGradTF(x, dy).
func gradConv2DTF(c *gctx) error {
	b := c.b
	dy, x, w, g, err := convGradSetupTF(c, "Conv2D")
	if err != nil {
		return err
	}
	if c.wants(0) {
		if g.d == [2]int64{1, 1} {
			attrs := append([]ir.Attr{ir.StringAttr("data_format", "NHWC"), ir.IntsAttr("strides", 1, g.s[0], g.s[1], 1), ir.IntsAttr("dilations", 1, 1, 1, 1)}, g.padAttrs()...)
			c.set(0, b.add("Conv2DBackpropInput", x.Type, []*ir.Value{b.ints(dimsOf(x)...), w, dy}, attrs...))
		} else {
			wt := b.transpose(b.reverseHW(w), []int64{0, 1, 3, 2})
			c.set(0, b.transposedConvTF("Conv2D", dy, wt, g))
		}
	}
	if c.wants(1) {
		c.set(1, b.convFilterGradTF(x, dy, g))
	}
	return nil
}

// gradDepthwiseTF: y = DepthwiseConv2dNative(x, w) with w [kh, kw, C, M]
// (channel multiplier M: output channel c·M + m reads input channel c
// with filter w[·, ·, c, m]; the fused forms then the fused tail).
//
//	dx = DepthwiseConv2dNative of dy upsampled by the strides, with w
//	     reversed and laid out [kh, kw, C·M, 1] (transposedConvTF),
//	     [N, H, W, C·M], reshaped to [N, H, W, C, M] and summed over M;
//	dw[i, j, c, m] = Σ_{n,p,q} xpad[n, p·s + i·d, q·s + j·d, c]·dy[n, p, q, c·M + m]:
//	     with x's channels repeated M times (x' [N, H, W, C·M], x'[…, c·M
//	     + m] = x[…, c]), a VALID DepthwiseConv2dNative of x'pad laid out
//	     [1, Hp, Wp, N·C·M] by dy laid out [P, Q, N·C·M, 1] with strides
//	     d and dilations s, [1, kh', kw', N·C·M], reshaped to [kh', kw',
//	     N, C·M], summed over N, cut to kh × kw and reshaped to w's shape.
func gradDepthwiseTF(c *gctx) error {
	b := c.b
	dy, x, w, g, err := convGradSetupTF(c, "depthwise convolution")
	if err != nil {
		return err
	}
	wd, xd := dimsOf(w), dimsOf(x)
	N, H, W, C, M := xd[0], xd[1], xd[2], xd[3], wd[3]
	if c.wants(0) {
		wr := b.reshape(b.reverseHW(w), []int64{wd[0], wd[1], C * M, 1})
		dx := b.transposedConvTF("DepthwiseConv2dNative", dy, wr, g)
		if M > 1 {
			dx = b.reduce("ReduceSum", b.reshape(dx, []int64{N, H, W, C, M}), []int64{4}, false)
		}
		c.set(0, dx)
	}
	if c.wants(1) {
		xr := x
		if M > 1 {
			xr = b.reshape(b.expand(b.reshape(x, []int64{N, H, W, C, 1}), []int64{N, H, W, C, M}), []int64{N, H, W, C * M})
		}
		CM := C * M
		yd := dimsOf(dy)
		xp := b.padded(xr, g)
		pd := dimsOf(xp)
		xt := b.reshape(b.transpose(xp, []int64{1, 2, 0, 3}), []int64{1, pd[1], pd[2], N * CM})
		ft := b.reshape(b.transpose(dy, []int64{1, 2, 0, 3}), []int64{yd[1], yd[2], N * CM, 1})
		res := b.conv2DTF("DepthwiseConv2dNative", xt, ft, g.d, g.s)
		rd := dimsOf(res)
		res = b.reduce("ReduceSum", b.reshape(res, []int64{rd[1], rd[2], N, CM}), []int64{2}, false)
		if rd[1] != g.k[0] || rd[2] != g.k[1] {
			res = b.slice(res, []int64{0, 0}, []int64{g.k[0], g.k[1]}, []int64{0, 1})
		}
		c.set(1, b.reshape(res, wd))
	}
	return nil
}

// gradConv2DBackpropInputTF: y = Conv2DBackpropInput(sizes, w, x), the
// adjoint of y ↦ Conv2D(y, w) (x has that Conv2D's output shape):
//
//	dx = Conv2D(dy, w) with the node's strides and padding;
//	dw = convFilterGradTF(dy, x): the roles of input and output swap.
func gradConv2DBackpropInputTF(c *gctx) error {
	b := c.b
	w, x, y := c.x(1), c.x(2), c.y(0)
	wd := dimsOf(w)
	// The geometry of the forward convolution y ↦ x.
	g, err := tfGeometry(c, y, x, [2]int64{wd[0], wd[1]})
	if err != nil {
		return err
	}
	if g.d != [2]int64{1, 1} {
		return c.errorf("no gradient for Conv2DBackpropInput with dilations %v", g.d)
	}
	dy := c.dy[0]
	if c.wants(2) {
		attrs := append([]ir.Attr{ir.StringAttr("data_format", "NHWC"), ir.IntsAttr("strides", 1, g.s[0], g.s[1], 1), ir.IntsAttr("dilations", 1, 1, 1, 1)}, g.padAttrs()...)
		c.set(2, b.add("Conv2D", x.Type, []*ir.Value{dy, w}, attrs...))
	}
	if c.wants(1) {
		c.set(1, b.convFilterGradTF(dy, x, g))
	}
	return nil
}

// ---- pooling ----

// gradMaxPoolTF: y[n, p, q, c] = max over the window of (p, q) of xpad
// (padded with the lowest float); the gradient goes to the first element
// of the window (row-major) that equals the maximum, as the index output
// of ONNX's MaxPool picks it. For each window offset k = (i, j):
//
//	eq_k   = (xpad[n, p·s + i, q·s + j, c] == y)        (StridedSlice, Equal)
//	m_k    = eq_k ∧ ¬(eq_0 ∨ … ∨ eq_{k−1})
//	z_k    = m_k ? dy : 0
//
// and dxpad[n, p·s + i, q·s + j, c] += z_k: the z_k stacked as the
// channels of [N·C, P, Q, K] go through one Conv2DBackpropInput with the
// one-hot filter E[i, j, 0, k] = 1[k = i·kw + j] and the pool's strides,
// which places and sums them; dx is dxpad without its pads.
func gradMaxPoolTF(c *gctx) error {
	b := c.b
	x, y := c.x(0), c.y(0)
	g, err := poolGeometry(c)
	if err != nil {
		return err
	}
	dt := c.dt()
	xd, yd := dimsOf(x), dimsOf(y)
	N, C, P, Q := xd[0], xd[3], yd[1], yd[2]
	kh, kw := g.k[0], g.k[1]
	xp := x
	if g.pb != [2]int64{} || g.pe != [2]int64{} {
		pt := tensorType(dt, []int64{N, xd[1] + g.pb[0] + g.pe[0], xd[2] + g.pb[1] + g.pe[1], C})
		pv := b.constant(int32Tensor([]int64{4, 2}, 0, 0, g.pb[0], g.pe[0], g.pb[1], g.pe[1], 0, 0))
		xp = b.add("PadV2", pt, []*ir.Value{x, pv, b.scalar(dt, -math.MaxFloat32)}, tfType("Tpaddings", ir.Int32))
	}
	var zs []*ir.Value
	var taken *ir.Value
	zero := b.scalar(dt, 0)
	for i := range kh {
		for j := range kw {
			win := b.stridedSliceTF(xp, []int64{0, i, j, 0}, []int64{N, i + (P-1)*g.s[0] + 1, j + (Q-1)*g.s[1] + 1, C}, []int64{1, g.s[0], g.s[1], 1}, y.Type)
			eq := b.compare("Equal", win, y)
			m := eq
			if taken != nil {
				m = b.binaryT("And", ir.Bool, eq, b.unary("Not", taken))
				taken = b.binaryT("Or", ir.Bool, taken, eq)
			} else {
				taken = eq
			}
			zs = append(zs, b.where(m, c.dy[0], zero))
		}
	}
	K := kh * kw
	st := b.add("Pack", tensorType(dt, []int64{N, P, Q, C, K}), zs, ir.IntAttr("N", K), ir.IntAttr("axis", 4))
	st = b.reshape(b.transpose(st, []int64{0, 3, 1, 2, 4}), []int64{N * C, P, Q, K})
	e := make([]float64, K*K)
	for k := range K {
		e[k*K+k] = 1 // E[i, j, 0, k] with k = i·kw + j: row k of [kh·kw, K]
	}
	filter := b.constant(floatTensor(dt, []int64{kh, kw, 1, K}, e))
	c.set(0, b.placeWindows(st, filter, g, xd))
	return nil
}

// poolGeometry is the geometry of a 2-D pool (ksize [1, kh, kw, 1]).
func poolGeometry(c *gctx) (*tfGeom, error) {
	ks, ok := c.n.AttrInts("ksize")
	if !ok || len(ks) != 4 || ks[0] != 1 || ks[3] != 1 {
		return nil, c.errorf("the gradient of %s needs ksize [1, kh, kw, 1]", c.n.Op)
	}
	return tfGeometry(c, c.x(0), c.y(0), [2]int64{ks[1], ks[2]})
}

// placeWindows adds the window contributions st [N·C, P, Q, K] back onto
// the input [N, H, W, C] of a pool of geometry g: a Conv2DBackpropInput
// with filter [kh, kw, 1, K] (which says where in the window each of the
// K channels lands) and the pool's strides gives the padded input's rows
// the windows span, [N·C, span_h, span_w, 1]; moved back to NHWC, it is
// cut (or zero-extended) to x's rows, which start at the pads.
func (b *builder) placeWindows(st, filter *ir.Value, g *tfGeom, xd []int64) *ir.Value {
	dt := st.Type.DType
	N, C := xd[0], xd[3]
	sd := dimsOf(st)
	span := [2]int64{(sd[1]-1)*g.s[0] + g.k[0], (sd[2]-1)*g.s[1] + g.k[1]}
	placed := b.add("Conv2DBackpropInput", tensorType(dt, []int64{N * C, span[0], span[1], 1}),
		[]*ir.Value{b.ints(N*C, span[0], span[1], 1), filter, st},
		ir.StringAttr("data_format", "NHWC"), ir.IntsAttr("strides", 1, g.s[0], g.s[1], 1),
		ir.IntsAttr("dilations", 1, 1, 1, 1), ir.StringAttr("padding", "VALID"))
	dxp := b.transpose(b.reshape(placed, []int64{N, C, span[0], span[1]}), []int64{0, 2, 3, 1})
	return b.pad(dxp, []int64{0, -g.pb[0], -g.pb[1], 0, 0, xd[1] + g.pb[0] - span[0], xd[2] + g.pb[1] - span[1], 0})
}

// gradAvgPoolTF: y[n, p, q, c] = Σ_window x / D[p, q], D counting the
// window's elements inside the input (TensorFlow's AvgPool leaves the
// padding out); dx = each dy[n, p, q, c] / D[p, q] spread over its
// window: placeWindows with the filter ones[kh, kw, 1, 1].
func gradAvgPoolTF(c *gctx) error {
	b := c.b
	x, y := c.x(0), c.y(0)
	g, err := poolGeometry(c)
	if err != nil {
		return err
	}
	dt := c.dt()
	xd, yd := dimsOf(x), dimsOf(y)
	N, C, P, Q := xd[0], xd[3], yd[1], yd[2]
	inv := make([]float64, P*Q)
	for p := range P {
		rows := min(p*g.s[0]-g.pb[0]+g.k[0], xd[1]) - max(p*g.s[0]-g.pb[0], 0)
		for q := range Q {
			cols := min(q*g.s[1]-g.pb[1]+g.k[1], xd[2]) - max(q*g.s[1]-g.pb[1], 0)
			inv[p*Q+q] = 1 / float64(rows*cols)
		}
	}
	z := b.mul(c.dy[0], b.constant(floatTensor(dt, []int64{1, P, Q, 1}, inv)))
	st := b.reshape(b.transpose(z, []int64{0, 3, 1, 2}), []int64{N * C, P, Q, 1})
	ones := make([]float64, g.k[0]*g.k[1])
	for i := range ones {
		ones[i] = 1
	}
	c.set(0, b.placeWindows(st, b.constant(floatTensor(dt, []int64{g.k[0], g.k[1], 1, 1}, ones)), g, xd))
	return nil
}

// channelWindowSum is Σ_{|k| ≤ r} t[…, c + k] over the last axis (zero
// beyond it): the channels padded by r on both sides, 2r + 1 slices, AddN.
func (b *builder) channelWindowSum(t *ir.Value, r int64) *ir.Value {
	d := dimsOf(t)
	rank := len(d)
	C := d[rank-1]
	pads := make([]int64, 2*rank)
	pads[rank-1], pads[2*rank-1] = r, r
	p := b.pad(t, pads)
	var parts []*ir.Value
	for k := range 2*r + 1 {
		parts = append(parts, b.slice(p, []int64{k}, []int64{k + C}, []int64{int64(rank - 1)}))
	}
	return b.sum(parts)
}

// gradLRNTF: y = x·s^(−β) with s = bias + α·Σ_{|k| ≤ r} x[c + k]² over
// the channels (TensorFlow's LRN: depth_radius r, NHWC);
//
//	dx = dy·s^(−β) − 2αβ·x·Σ_{|k| ≤ r} (dy·y / s)[c + k]
//
// (the window is symmetric, so the sum over the windows that contain c is
// the window sum around c).
func gradLRNTF(c *gctx) error {
	b := c.b
	x, y := c.x(0), c.y(0)
	r := c.n.AttrInt("depth_radius", 5)
	bias := float64(c.n.AttrFloat("bias", 1))
	alpha := float64(c.n.AttrFloat("alpha", 1))
	beta := float64(c.n.AttrFloat("beta", 0.5))
	dt := c.dt()
	s := b.addv(b.scale(b.channelWindowSum(b.mul(x, x), r), alpha), b.scalar(dt, bias))
	p := b.binary("Pow", s, b.scalar(dt, -beta))
	w := b.channelWindowSum(b.div(b.mul(c.dy[0], y), s), r)
	c.set(0, b.sub(b.mul(c.dy[0], p), b.mul(b.scale(x, 2*alpha*beta), w)))
	return nil
}

// resizeMatrix is the matrix A [out, in] of a 1-D resize, y = A·x along
// one axis, as TensorFlow.js 4.22 computes ResizeBilinear and
// ResizeNearestNeighbor (tfjs-backend-cpu's kernels; the ratio is
// (in − 1)/(out − 1) with align_corners, in/out otherwise; half-pixel
// centres shift the source by ½): bilinear weighs the two nearest source
// rows by the fraction, nearest picks one.
func resizeMatrix(in, out int64, align, half, nearest bool) []float64 {
	ein, eout := float64(in), float64(out)
	if align && out > 1 {
		ein, eout = float64(in-1), float64(out-1)
	}
	ratio := ein / eout
	a := make([]float64, out*in)
	for r := range out {
		if nearest {
			src := ratio * float64(r)
			if half {
				src = ratio * (float64(r) + 0.5)
			}
			k := int64(math.Floor(src))
			if align {
				k = int64(math.Floor(src + 0.5))
			}
			k = min(in-1, k)
			if half {
				k = max(0, k)
			}
			a[r*in+k] = 1
			continue
		}
		src := ratio * float64(r)
		if half {
			src = ratio*(float64(r)+0.5) - 0.5
		}
		lo := max(0, int64(math.Floor(src)))
		frac := src - float64(lo)
		hi := min(in-1, int64(math.Ceil(src)))
		a[r*in+lo] += 1 - frac
		a[r*in+hi] += frac
	}
	return a
}

// gradResizeTF: y = ResizeBilinear(x) or ResizeNearestNeighbor(x), linear
// in x and separable: y[n, ·, ·, c] = A_h · x[n, ·, ·, c] · A_wᵀ with the
// constant matrices of resizeMatrix; dx[n, ·, ·, c] = A_hᵀ · dy[n, ·, ·, c]
// · A_w, written as two MatMuls over dy with its channels moved ahead of
// the spatial axes.
func gradResizeTF(c *gctx) error {
	b := c.b
	x, y := c.x(0), c.y(0)
	xd, yd := dimsOf(x), dimsOf(y)
	if len(xd) != 4 {
		return c.errorf("the gradient of %s needs a 4-D input", c.n.Op)
	}
	N, H, W, C := xd[0], xd[1], xd[2], xd[3]
	P, Q := yd[1], yd[2]
	align := c.n.AttrInt("align_corners", 0) != 0
	half := c.n.AttrInt("half_pixel_centers", 0) != 0
	nearest := c.n.Op == "ResizeNearestNeighbor"
	dt := c.dt()
	ah := b.constant(floatTensor(dt, []int64{P, H}, resizeMatrix(H, P, align, half, nearest)))
	aw := b.constant(floatTensor(dt, []int64{Q, W}, resizeMatrix(W, Q, align, half, nearest)))
	g := b.reshape(b.transpose(c.dy[0], []int64{0, 3, 1, 2}), []int64{N * C * P, Q})
	g = b.reshape(b.matmul(g, aw), []int64{N * C, P, W})
	g = b.reshape(b.transpose(g, []int64{0, 2, 1}), []int64{N * C * W, P})
	g = b.reshape(b.matmul(g, ah), []int64{N, C, W, H})
	c.set(0, b.transpose(g, []int64{0, 3, 2, 1}))
	return nil
}
