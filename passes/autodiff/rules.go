package autodiff

import (
	"math"
	"slices"

	"github.com/remat-compile/remat/ir"
)

// A rule turns the gradients of a node's outputs (dy, nil where an output
// has none) into contributions to its inputs (dx), each of its input's
// exact type. Notation in the doc comments: x, y are the node's inputs and
// outputs, dy = ∂loss/∂y, unb(g, x) sums g back to x's shape over the axes
// x was broadcast along (builder.unbroadcast), 1[p] is 1 where p holds and
// 0 elsewhere.
type rule struct {
	// in lists the input slots through which gradients flow; nil means
	// every input. Other slots (shapes, indices, axes, conditions) are
	// never differentiated.
	in   []int
	grad func(c *gctx) error
}

func (r *rule) flows(i int) bool { return r.in == nil || slices.Contains(r.in, i) }

// gctx is what a rule sees of one node.
type gctx struct {
	d    *differ
	b    *builder
	n    *ir.Node
	dy   []*ir.Value
	need []bool
	dx   []*ir.Value
}

func (c *gctx) x(i int) *ir.Value { return c.n.Inputs[i] }
func (c *gctx) y(i int) *ir.Value { return c.n.Outputs[i] }

// set records v as the contribution to input i when that input needs one.
func (c *gctx) set(i int, v *ir.Value) {
	if i < len(c.need) && c.need[i] {
		c.dx[i] = v
	}
}

// wants reports whether input i needs a gradient.
func (c *gctx) wants(i int) bool { return i < len(c.need) && c.need[i] }

func (c *gctx) errorf(format string, args ...any) error { return c.d.errorf(c.n, format, args...) }

// dyOrZero is the gradient of output i, zeros when it has none.
func (c *gctx) dyOrZero(i int) *ir.Value {
	if c.dy[i] != nil {
		return c.dy[i]
	}
	return c.b.zeros(c.y(i).Type.DType, dimsOf(c.y(i)))
}

func (c *gctx) dt() ir.DType { return c.y(0).Type.DType }

// constInts returns the contents of a constant integer input, if it is one.
func constInts(v *ir.Value) ([]int64, bool) {
	if v == nil || v.Data == nil {
		return nil, false
	}
	return v.Data.Int64s()
}

// constFloat returns the single value of a constant float input.
func constFloat(v *ir.Value) (float64, bool) {
	if v == nil || v.Data == nil {
		return 0, false
	}
	f, ok := v.Data.Float64s()
	if !ok || len(f) != 1 {
		return 0, false
	}
	return f[0], true
}

// ruleFor returns the gradient rule of n's op, or nil.
func ruleFor(n *ir.Node) *rule {
	if n.Domain == ir.TFDomain {
		return tfRules[n.Op]
	}
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return nil
	}
	return rules[n.Op]
}

// cutsGradient reports whether n's outputs are piecewise constant in its
// inputs (or do not depend on their values at all): their gradient is zero
// almost everywhere, so the path is pruned rather than differentiated.
func cutsGradient(n *ir.Node) bool {
	if n.Domain == ir.TFDomain {
		return tfCuts[n.Op]
	}
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return false
	}
	switch n.Op {
	case "Floor", "Ceil", "Round", "Sign", "Shape", "Size", "ArgMax", "ArgMin", "Hardmax",
		"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "IsNaN", "IsInf", "Not", "And", "Or", "Xor",
		"EyeLike", "ConstantOfShape", "RandomUniformLike", "RandomNormalLike", "Bernoulli", "Multinomial",
		"NonZero", "OneHot", "Constant", "Range":
		return true
	}
	return false
}

var rules = map[string]*rule{
	// Elementwise arithmetic.
	"Add":        {grad: gradAdd},
	"Sub":        {grad: gradSub},
	"Mul":        {grad: gradMul},
	"Div":        {grad: gradDiv},
	"Pow":        {grad: gradPow},
	"Neg":        {grad: gradNeg},
	"Sqrt":       {grad: gradSqrt},
	"Exp":        {grad: gradExp},
	"Log":        {grad: gradLog},
	"Abs":        {grad: gradAbs},
	"Reciprocal": {grad: gradReciprocal},
	"Sum":        {grad: gradSum},
	// Activations.
	"Relu":        {grad: gradRelu},
	"LeakyRelu":   {grad: gradLeakyRelu},
	"PRelu":       {grad: gradPRelu},
	"Elu":         {grad: gradElu},
	"Sigmoid":     {grad: gradSigmoid},
	"HardSigmoid": {grad: gradHardSigmoid},
	"HardSwish":   {grad: gradHardSwish},
	"Tanh":        {grad: gradTanh},
	"Clip":        {in: []int{0}, grad: gradClip},
	"Erf":         {grad: gradErf},
	"Gelu":        {grad: gradGelu},
	"Softplus":    {grad: gradSoftplus},
	"Softmax":     {grad: gradSoftmax},
	"LogSoftmax":  {grad: gradLogSoftmax},
	// Type and identity.
	"Cast":     {grad: gradCast},
	"Identity": {grad: gradIdentity},
	"Dropout":  {in: []int{0}, grad: gradDropout},
	"Where":    {in: []int{1, 2}, grad: gradWhere},
	// Matrix products and convolution.
	"Gemm":          {grad: gradGemm},
	"MatMul":        {grad: gradMatMul},
	"Conv":          {grad: gradConv},
	"ConvTranspose": {grad: gradConvTranspose},
	// Pooling.
	"MaxPool":           {in: []int{0}, grad: gradMaxPool},
	"AveragePool":       {grad: gradAveragePool},
	"GlobalAveragePool": {grad: gradGlobalAveragePool},
	"MaxUnpool":         {in: []int{0}, grad: gradMaxUnpool},
	// Reductions.
	"ReduceSum":  {in: []int{0}, grad: gradReduce},
	"ReduceMean": {in: []int{0}, grad: gradReduce},
	// Data movement.
	"Reshape":   {in: []int{0}, grad: gradReshape},
	"Flatten":   {grad: gradReshape},
	"Squeeze":   {in: []int{0}, grad: gradReshape},
	"Unsqueeze": {in: []int{0}, grad: gradReshape},
	"Transpose": {grad: gradTranspose},
	"Concat":    {grad: gradConcat},
	"Split":     {in: []int{0}, grad: gradSplit},
	"Slice":     {in: []int{0}, grad: gradSlice},
	"Expand":    {in: []int{0}, grad: gradExpand},
	"Pad":       {in: []int{0}, grad: gradPad},
	"Gather":    {in: []int{0}, grad: gradGather},
	"Resize":    {in: []int{0}, grad: gradResize},
}

// ---- elementwise arithmetic ----

// gradAdd: y = a + b; da = unb(dy, a), db = unb(dy, b).
func gradAdd(c *gctx) error {
	for i := range 2 {
		if c.wants(i) {
			c.set(i, c.b.unbroadcast(c.dy[0], dimsOf(c.x(i))))
		}
	}
	return nil
}

// gradSum: y = Σ xᵢ (variadic, broadcasting); dxᵢ = unb(dy, xᵢ).
func gradSum(c *gctx) error {
	for i := range c.n.Inputs {
		if c.wants(i) {
			c.set(i, c.b.unbroadcast(c.dy[0], dimsOf(c.x(i))))
		}
	}
	return nil
}

// gradSub: y = a − b; da = unb(dy, a), db = unb(−dy, b).
func gradSub(c *gctx) error {
	if c.wants(0) {
		c.set(0, c.b.unbroadcast(c.dy[0], dimsOf(c.x(0))))
	}
	if c.wants(1) {
		c.set(1, c.b.unbroadcast(c.b.neg(c.dy[0]), dimsOf(c.x(1))))
	}
	return nil
}

// gradMul: y = a·b; da = unb(dy·b, a), db = unb(dy·a, b).
func gradMul(c *gctx) error {
	b := c.b
	if c.wants(0) {
		c.set(0, b.unbroadcast(b.mul(c.dy[0], c.x(1)), dimsOf(c.x(0))))
	}
	if c.wants(1) {
		c.set(1, b.unbroadcast(b.mul(c.dy[0], c.x(0)), dimsOf(c.x(1))))
	}
	return nil
}

// gradDiv: y = a / b; da = unb(dy / b, a), db = unb(−dy·y / b, b).
func gradDiv(c *gctx) error {
	b := c.b
	if c.wants(0) {
		c.set(0, b.unbroadcast(b.div(c.dy[0], c.x(1)), dimsOf(c.x(0))))
	}
	if c.wants(1) {
		c.set(1, b.unbroadcast(b.neg(b.div(b.mul(c.dy[0], c.y(0)), c.x(1))), dimsOf(c.x(1))))
	}
	return nil
}

// gradPow: y = a^e; da = unb(dy·e·a^(e−1), a), de = unb(dy·y·ln a, e)
// (defined for a > 0).
func gradPow(c *gctx) error {
	b := c.b
	a, e := c.x(0), c.x(1)
	if c.wants(0) {
		ef := b.cast(e, a.Type.DType)
		em1 := b.sub(ef, b.scalar(a.Type.DType, 1))
		c.set(0, b.unbroadcast(b.mul(b.mul(c.dy[0], ef), b.binary("Pow", a, em1)), dimsOf(a)))
	}
	if c.wants(1) {
		lg := b.unary("Log", b.cast(a, e.Type.DType))
		c.set(1, b.unbroadcast(b.mul(b.mul(c.dy[0], c.y(0)), lg), dimsOf(e)))
	}
	return nil
}

// gradNeg: y = −x; dx = −dy.
func gradNeg(c *gctx) error { c.set(0, c.b.neg(c.dy[0])); return nil }

// gradSqrt: y = √x; dx = dy / (2y) = 0.5·dy / y.
func gradSqrt(c *gctx) error {
	c.set(0, c.b.div(c.b.scale(c.dy[0], 0.5), c.y(0)))
	return nil
}

// gradExp: y = eˣ; dx = dy·y.
func gradExp(c *gctx) error { c.set(0, c.b.mul(c.dy[0], c.y(0))); return nil }

// gradLog: y = ln x; dx = dy / x.
func gradLog(c *gctx) error { c.set(0, c.b.div(c.dy[0], c.x(0))); return nil }

// gradAbs: y = |x|; dx = dy·sign(x).
func gradAbs(c *gctx) error {
	c.set(0, c.b.mul(c.dy[0], c.b.unary("Sign", c.x(0))))
	return nil
}

// gradReciprocal: y = 1/x; dx = −dy·y².
func gradReciprocal(c *gctx) error {
	b := c.b
	c.set(0, b.neg(b.mul(c.dy[0], b.mul(c.y(0), c.y(0)))))
	return nil
}

// ---- activations ----

// gradRelu: y = max(x, 0); dx = dy·1[x > 0].
func gradRelu(c *gctx) error {
	b := c.b
	pos := b.compare("Greater", c.x(0), b.scalar(c.dt(), 0))
	c.set(0, b.where(pos, c.dy[0], b.scalar(c.dt(), 0)))
	return nil
}

// gradLeakyRelu: y = x for x ≥ 0, αx else; dx = dy for x > 0, α·dy else.
func gradLeakyRelu(c *gctx) error {
	b := c.b
	alpha := float64(c.n.AttrFloat("alpha", 0.01))
	pos := b.compare("Greater", c.x(0), b.scalar(c.dt(), 0))
	c.set(0, b.where(pos, c.dy[0], b.scale(c.dy[0], alpha)))
	return nil
}

// gradPRelu: y = x for x ≥ 0, s·x else (s broadcast to x);
// dx = dy for x > 0, dy·s else; ds = unb(dy·min(x, 0), s).
func gradPRelu(c *gctx) error {
	b := c.b
	x, s := c.x(0), c.x(1)
	pos := b.compare("Greater", x, b.scalar(c.dt(), 0))
	if c.wants(0) {
		c.set(0, b.where(pos, c.dy[0], b.mul(c.dy[0], s)))
	}
	if c.wants(1) {
		neg := b.where(pos, b.scalar(c.dt(), 0), x)
		c.set(1, b.unbroadcast(b.mul(c.dy[0], neg), dimsOf(s)))
	}
	return nil
}

// gradElu: y = x for x > 0, α(eˣ − 1) else; dx = dy for x > 0,
// dy·(y + α) else.
func gradElu(c *gctx) error {
	b := c.b
	alpha := float64(c.n.AttrFloat("alpha", 1))
	pos := b.compare("Greater", c.x(0), b.scalar(c.dt(), 0))
	neg := b.mul(c.dy[0], b.addv(c.y(0), b.scalar(c.dt(), alpha)))
	c.set(0, b.where(pos, c.dy[0], neg))
	return nil
}

// gradSigmoid: y = σ(x); dx = dy·y·(1 − y).
func gradSigmoid(c *gctx) error {
	b := c.b
	one := b.scalar(c.dt(), 1)
	c.set(0, b.mul(c.dy[0], b.mul(c.y(0), b.sub(one, c.y(0)))))
	return nil
}

// hardSigmoidMask is α·1[0 < αx + β < 1], the derivative of
// HardSigmoid(x) = max(0, min(1, αx + β)).
func hardSigmoidMask(b *builder, x *ir.Value, alpha, beta float64) *ir.Value {
	dt := x.Type.DType
	t := b.addv(b.scale(x, alpha), b.scalar(dt, beta))
	in := b.binaryT("And", ir.Bool, b.compare("Greater", t, b.scalar(dt, 0)), b.compare("Less", t, b.scalar(dt, 1)))
	return b.where(in, b.scalar(dt, alpha), b.scalar(dt, 0))
}

// gradHardSigmoid: y = max(0, min(1, αx + β)); dx = dy·α·1[0 < αx+β < 1].
func gradHardSigmoid(c *gctx) error {
	alpha := float64(c.n.AttrFloat("alpha", 0.2))
	beta := float64(c.n.AttrFloat("beta", 0.5))
	c.set(0, c.b.mul(c.dy[0], hardSigmoidMask(c.b, c.x(0), alpha, beta)))
	return nil
}

// gradHardSwish: y = x·h(x), h = HardSigmoid with α = 1/6, β = 1/2;
// dx = dy·(h(x) + x·h'(x)).
func gradHardSwish(c *gctx) error {
	b := c.b
	x := c.x(0)
	h := b.unary("HardSigmoid", x, ir.FloatAttr("alpha", float32(1.0/6)), ir.FloatAttr("beta", 0.5))
	d := b.addv(h, b.mul(x, hardSigmoidMask(b, x, float64(float32(1.0/6)), 0.5)))
	c.set(0, b.mul(c.dy[0], d))
	return nil
}

// gradTanh: y = tanh x; dx = dy·(1 − y²).
func gradTanh(c *gctx) error {
	b := c.b
	one := b.scalar(c.dt(), 1)
	c.set(0, b.mul(c.dy[0], b.sub(one, b.mul(c.y(0), c.y(0)))))
	return nil
}

// gradClip: y = min(max(x, lo), hi); dx = dy·1[lo ≤ x ≤ hi] (lo and hi are
// attributes before opset 11, optional inputs from 11; they get no
// gradient).
func gradClip(c *gctx) error {
	b := c.b
	x := c.x(0)
	var lo, hi *ir.Value
	if b.opset < 11 {
		if a := c.n.Attr("min"); a != nil {
			lo = b.scalar(c.dt(), float64(a.Float))
		}
		if a := c.n.Attr("max"); a != nil {
			hi = b.scalar(c.dt(), float64(a.Float))
		}
	} else {
		if len(c.n.Inputs) > 1 {
			lo = c.n.Inputs[1]
		}
		if len(c.n.Inputs) > 2 {
			hi = c.n.Inputs[2]
		}
	}
	var mask *ir.Value
	if lo != nil {
		mask = b.compare("GreaterOrEqual", x, lo)
		if b.opset < 12 {
			mask = b.unary("Not", b.compare("Less", x, lo))
		}
	}
	if hi != nil {
		m := b.compare("LessOrEqual", x, hi)
		if b.opset < 12 {
			m = b.unary("Not", b.compare("Greater", x, hi))
		}
		if mask == nil {
			mask = m
		} else {
			mask = b.binaryT("And", ir.Bool, mask, m)
		}
	}
	if mask == nil {
		c.set(0, c.dy[0])
		return nil
	}
	c.set(0, b.where(mask, c.dy[0], b.scalar(c.dt(), 0)))
	return nil
}

// gradErf: y = erf x; dx = dy·(2/√π)·e^(−x²).
func gradErf(c *gctx) error {
	b := c.b
	x := c.x(0)
	e := b.unary("Exp", b.neg(b.mul(x, x)))
	c.set(0, b.mul(c.dy[0], b.scale(e, 2/math.Sqrt(math.Pi))))
	return nil
}

// gradGelu: exact form y = x·Φ(x), Φ(x) = ½(1 + erf(x/√2));
// dx = dy·(Φ(x) + x·φ(x)), φ(x) = e^(−x²/2)/√(2π).
// Tanh form y = ½x(1 + tanh u), u = √(2/π)(x + 0.044715x³);
// dx = dy·(½(1 + tanh u) + ½x(1 − tanh²u)·√(2/π)(1 + 3·0.044715x²)).
func gradGelu(c *gctx) error {
	b := c.b
	x := c.x(0)
	dt := c.dt()
	half, one := b.scalar(dt, 0.5), b.scalar(dt, 1)
	x2 := b.mul(x, x)
	var d *ir.Value
	if c.n.AttrString("approximate", "none") == "tanh" {
		k := math.Sqrt(2 / math.Pi)
		u := b.scale(b.addv(x, b.scale(b.mul(x2, x), 0.044715)), k)
		t := b.unary("Tanh", u)
		du := b.scale(b.addv(one, b.scale(x2, 3*0.044715)), k)
		d = b.addv(b.mul(half, b.addv(one, t)), b.mul(b.mul(b.scale(x, 0.5), b.sub(one, b.mul(t, t))), du))
	} else {
		cdf := b.mul(half, b.addv(one, b.unary("Erf", b.scale(x, 1/math.Sqrt2))))
		pdf := b.scale(b.unary("Exp", b.scale(x2, -0.5)), 1/math.Sqrt(2*math.Pi))
		d = b.addv(cdf, b.mul(x, pdf))
	}
	c.set(0, b.mul(c.dy[0], d))
	return nil
}

// gradSoftplus: y = ln(1 + eˣ); dx = dy·σ(x).
func gradSoftplus(c *gctx) error {
	c.set(0, c.b.mul(c.dy[0], c.b.unary("Sigmoid", c.x(0))))
	return nil
}

// softmaxAxes are the axes Softmax and LogSoftmax normalise over: from
// opset 13 the one axis (default −1); before, every axis from axis (default
// 1) on, the input being coerced to 2-D there.
func softmaxAxes(c *gctx) []int64 {
	r := int64(len(dimsOf(c.x(0))))
	def := int64(-1)
	if c.b.opset < 13 {
		def = 1
	}
	axis := c.n.AttrInt("axis", def)
	if axis < 0 {
		axis += r
	}
	if c.b.opset >= 13 {
		return []int64{axis}
	}
	var axes []int64
	for a := axis; a < r; a++ {
		axes = append(axes, a)
	}
	return axes
}

// gradSoftmax: y = softmax(x) over the axes A; dx = y·(dy − Σ_A dy·y).
func gradSoftmax(c *gctx) error {
	b := c.b
	y := c.y(0)
	s := b.reduce("ReduceSum", b.mul(c.dy[0], y), softmaxAxes(c), true)
	c.set(0, b.mul(y, b.sub(c.dy[0], s)))
	return nil
}

// gradLogSoftmax: y = x − ln Σ_A eˣ; dx = dy − e^y·Σ_A dy.
func gradLogSoftmax(c *gctx) error {
	b := c.b
	s := b.reduce("ReduceSum", c.dy[0], softmaxAxes(c), true)
	c.set(0, b.sub(c.dy[0], b.mul(b.unary("Exp", c.y(0)), s)))
	return nil
}

// ---- type and identity ----

// gradCast: y = cast(x); dx = cast(dy) back to x's type (float to float
// only: a cast to an integer type cuts the path, as its output is not
// differentiable).
func gradCast(c *gctx) error {
	c.set(0, c.b.cast(c.dy[0], c.x(0).Type.DType))
	return nil
}

// gradIdentity: y = x; dx = dy.
func gradIdentity(c *gctx) error { c.set(0, c.dy[0]); return nil }

// gradWhere: y = c ? a : b; da = unb(c ? dy : 0, a), db = unb(c ? 0 : dy, b).
func gradWhere(c *gctx) error {
	b := c.b
	zero := b.scalar(c.dt(), 0)
	if c.wants(1) {
		c.set(1, b.unbroadcast(b.where(c.x(0), c.dy[0], zero), dimsOf(c.x(1))))
	}
	if c.wants(2) {
		c.set(2, b.unbroadcast(b.where(c.x(0), zero, c.dy[0]), dimsOf(c.x(2))))
	}
	return nil
}

// ---- reductions ----

// reduceAxes returns the axes a ReduceSum/ReduceMean node reduces over
// (attribute before opset 13/18, input after), normalised; all axes when
// none are given (unless noop_with_empty_axes).
func reduceAxes(c *gctx) ([]int64, bool, error) {
	r := int64(len(dimsOf(c.x(0))))
	var axes []int64
	if a, ok := c.n.AttrInts("axes"); ok {
		axes = a
	} else if len(c.n.Inputs) > 1 && c.n.Inputs[1] != nil {
		a, ok := constInts(c.n.Inputs[1])
		if !ok {
			return nil, false, c.errorf("the gradient needs constant axes")
		}
		axes = a
	}
	if len(axes) == 0 {
		if c.n.AttrInt("noop_with_empty_axes", 0) != 0 {
			return nil, true, nil
		}
		for i := range r {
			axes = append(axes, i)
		}
	}
	out := make([]int64, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += r
		}
		out[i] = a
	}
	return out, false, nil
}

// gradReduce: y = Σ_A x (ReduceSum) or mean_A x (ReduceMean);
// dx = expand(reshape(dy, keepdims shape), x) (divided by Π_A |x_a| for the
// mean).
func gradReduce(c *gctx) error {
	b := c.b
	axes, noop, err := reduceAxes(c)
	if err != nil {
		return err
	}
	if noop {
		c.set(0, c.dy[0])
		return nil
	}
	xd := dimsOf(c.x(0))
	g := b.expand(b.reshape(c.dy[0], reduced(xd, axes, true)), xd)
	if c.n.Op == "ReduceMean" {
		n := int64(1)
		for _, a := range axes {
			n *= xd[a]
		}
		g = b.scale(g, 1/float64(n))
	}
	c.set(0, g)
	return nil
}

// ---- data movement ----

// gradReshape (Reshape, Flatten, Squeeze, Unsqueeze): y = x viewed in
// another shape; dx = reshape(dy, x's shape).
func gradReshape(c *gctx) error {
	c.set(0, c.b.reshape(c.dy[0], dimsOf(c.x(0))))
	return nil
}

// gradTranspose: y = transpose(x, p); dx = transpose(dy, p⁻¹).
func gradTranspose(c *gctx) error {
	r := len(dimsOf(c.x(0)))
	perm, ok := c.n.AttrInts("perm")
	if !ok {
		perm = make([]int64, r)
		for i := range perm {
			perm[i] = int64(r - 1 - i)
		}
	}
	inv := make([]int64, r)
	for i, p := range perm {
		inv[p] = int64(i)
	}
	c.set(0, c.b.transpose(c.dy[0], inv))
	return nil
}

// gradConcat: y = concat(x₀, x₁, …) along a; dxᵢ = dy[offᵢ : offᵢ+|xᵢ|]
// along a.
func gradConcat(c *gctx) error {
	r := int64(len(dimsOf(c.y(0))))
	axis := c.n.AttrInt("axis", 1)
	if axis < 0 {
		axis += r
	}
	off := int64(0)
	for i, x := range c.n.Inputs {
		sz := dimsOf(x)[axis]
		if c.wants(i) {
			c.set(i, c.b.slice(c.dy[0], []int64{off}, []int64{off + sz}, []int64{axis}))
		}
		off += sz
	}
	return nil
}

// gradSplit: (y₀, y₁, …) = split(x) along a; dx = concat(dy₀, dy₁, …)
// with zeros for outputs without a gradient.
func gradSplit(c *gctx) error {
	r := int64(len(dimsOf(c.x(0))))
	axis := c.n.AttrInt("axis", 0)
	if axis < 0 {
		axis += r
	}
	parts := make([]*ir.Value, len(c.n.Outputs))
	for i := range c.n.Outputs {
		if c.y(i) == nil {
			return c.errorf("the gradient of Split needs every output")
		}
		parts[i] = c.dyOrZero(i)
	}
	c.set(0, c.b.concat(parts, axis))
	return nil
}

// gradSlice: y = x[s:e:1] along axes; dx = pad(dy) with zeros back to x's
// shape: sᵢ before and |xᵢ| − eᵢ after on each sliced axis. Only constant
// starts, ends and axes with step 1 are supported.
func gradSlice(c *gctx) error {
	b := c.b
	xd := dimsOf(c.x(0))
	r := int64(len(xd))
	var starts, ends, axes, steps []int64
	if b.opset < 10 {
		starts, _ = c.n.AttrInts("starts")
		ends, _ = c.n.AttrInts("ends")
		axes, _ = c.n.AttrInts("axes")
	} else {
		var ok1, ok2, ok3, ok4 bool
		starts, ok1 = constInts(c.n.Inputs[1])
		ends, ok2 = constInts(c.n.Inputs[2])
		ok3, ok4 = true, true
		if len(c.n.Inputs) > 3 && c.n.Inputs[3] != nil {
			axes, ok3 = constInts(c.n.Inputs[3])
		}
		if len(c.n.Inputs) > 4 && c.n.Inputs[4] != nil {
			steps, ok4 = constInts(c.n.Inputs[4])
		}
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return c.errorf("the gradient of Slice needs constant starts, ends, axes and steps")
		}
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	pads := make([]int64, 2*r)
	for i, a := range axes {
		if a < 0 {
			a += r
		}
		if steps != nil && steps[i] != 1 {
			return c.errorf("the gradient of Slice supports step 1 only, not %d", steps[i])
		}
		d := xd[a]
		s, e := starts[i], ends[i]
		if s < 0 {
			s += d
		}
		if e < 0 {
			e += d
		}
		s, e = min(max(s, 0), d), min(max(e, 0), d)
		pads[a] = s
		pads[a+r] = d - max(e, s)
	}
	c.set(0, b.pad(c.dy[0], pads))
	return nil
}

// gradExpand: y = expand(x, shape); dx = unb(dy, x).
func gradExpand(c *gctx) error {
	c.set(0, c.b.unbroadcast(c.dy[0], dimsOf(c.x(0))))
	return nil
}

// gradPad: y = pad(x, p) in constant mode; dx = pad(dy, −p), which crops
// what was padded (and zero-pads what a negative pad cropped).
func gradPad(c *gctx) error {
	b := c.b
	if m := c.n.AttrString("mode", "constant"); m != "constant" {
		return c.errorf("the gradient of Pad supports mode \"constant\" only, not %q", m)
	}
	var pads []int64
	if b.opset < 11 {
		pads, _ = c.n.AttrInts("pads")
	} else {
		p, ok := constInts(c.n.Inputs[1])
		if !ok {
			return c.errorf("the gradient of Pad needs constant pads")
		}
		pads = p
		if len(c.n.Inputs) > 3 && c.n.Inputs[3] != nil {
			axes, ok := constInts(c.n.Inputs[3])
			if !ok {
				return c.errorf("the gradient of Pad needs constant axes")
			}
			r := int64(len(dimsOf(c.x(0))))
			full := make([]int64, 2*r)
			for i, a := range axes {
				if a < 0 {
					a += r
				}
				full[a], full[a+r] = pads[i], pads[i+len(axes)]
			}
			pads = full
		}
	}
	neg := make([]int64, len(pads))
	for i, p := range pads {
		neg[i] = -p
	}
	c.set(0, b.pad(c.dy[0], neg))
	return nil
}

// gradGather: y = gather(x, idx) along axis 0 (an embedding lookup);
// dx = onehot(idx, |x₀|)ᵀ · dy, written as MatMul of the one-hot matrix
// [K, V] (K = number of indices, V = |x₀|) with dy reshaped to [K, D]; equal
// indices add up. Negative indices count from the end.
func gradGather(c *gctx) error {
	b := c.b
	x, idx := c.x(0), c.x(1)
	if axis := c.n.AttrInt("axis", 0); axis != 0 && axis != -int64(len(dimsOf(x))) {
		return c.errorf("the gradient of Gather supports axis 0 only, not %d", axis)
	}
	xd := dimsOf(x)
	V := xd[0]
	D := prod(xd[1:])
	K := prod(dimsOf(idx))
	flat := b.reshape(b.cast(idx, ir.Int64), []int64{K, 1})
	// Negative indices: i < 0 means i + V.
	flat = b.where(b.compare("Less", flat, b.constant(ir.Int64Tensor(nil, 0))), b.binary("Add", flat, b.constant(ir.Int64Tensor(nil, V))), flat)
	classes := make([]int64, V)
	for i := range classes {
		classes[i] = int64(i)
	}
	oh := b.cast(b.compare("Equal", flat, b.constant(ir.Int64Tensor([]int64{1, V}, classes...))), c.dt())
	g := b.matmul(b.swapLast(oh), b.reshape(c.dy[0], []int64{K, D}))
	c.set(0, b.reshape(g, xd))
	return nil
}
