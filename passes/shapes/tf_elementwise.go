package shapes

import (
	"math"

	"github.com/remat-compile/remat/ir"
)

// tfSameType is the common element type of the given inputs (TensorFlow's
// T). Integer inputs of different widths are accepted, as TensorFlow.js
// models have them (their int64 constants are stored as int32): the type
// attribute T decides then, else the widest. Other mixes are an error.
func (c *nctx) tfSameType(idx ...int) (ir.DType, bool) {
	dt, first := ir.Undefined, -1
	mixedInts := false
	for _, i := range idx {
		d := c.dtype(i)
		if !d.Valid() {
			continue
		}
		switch {
		case first < 0:
			dt, first = d, i
		case d == dt:
		case d.IsInt() && dt.IsInt():
			mixedInts = true
			if d.Bits() > dt.Bits() {
				dt = d
			}
		default:
			c.errf("input %d has element type %s, but input %d has %s", i, d, first, dt)
			return ir.Undefined, false
		}
	}
	if t, ok := c.tfDType("T"); ok && (!dt.Valid() || mixedInts && t.IsInt()) {
		dt = t
	}
	return dt, true
}

// tfUnary: ops whose output has the input's type and shape (activations,
// Identity and its kin, scans, reversals). Folds what the ONNX rules fold.
func tfUnary(c *nctx) {
	if !c.need(0, "x") {
		return
	}
	t := tensorLike(c.typ(0))
	if !t.DType.Valid() {
		t.DType = c.tfDTypeOr("T", ir.Undefined)
	}
	c.set(0, t)
	cv := c.cst(0)
	if cv == nil {
		return
	}
	switch op := c.n.Op; op {
	case "Identity", "Snapshot", "StopGradient", "PreventGradient", "CheckNumerics", "PlaceholderWithDefault":
		c.setConst(0, cv)
	case "Square":
		c.setConst(0, foldBinary(cv, cv, cv.dt, func(a, b elem) (elem, bool) { return binElem("Mul", cv.dt, false, a, b) }))
	case "Rint":
		c.setConst(0, foldUnary("Round", cv)) // both round half to even
	case "Neg", "Abs", "Floor", "Ceil", "Round", "Sqrt", "Reciprocal", "Relu", "Exp", "Log", "Sign":
		c.setConst(0, foldUnary(op, cv))
	}
}

// tfToBool: IsFinite, IsInf, IsNan, LogicalNot.
func tfToBool(c *nctx) {
	if !c.need(0, "x") {
		return
	}
	c.set(0, withDType(c.typ(0), ir.Bool))
	if c.n.Op == "LogicalNot" {
		if cv := c.cst(0); cv != nil {
			if r := foldUnary("Not", cv); r != nil {
				r.dt = ir.Bool
				c.setConst(0, r)
			}
		}
	}
}

// tfBinaryOut is the output element type of a binary op on dt.
func tfBinaryOut(op string, dt ir.DType) ir.DType {
	switch op {
	case "Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", "LogicalAnd", "LogicalOr":
		return ir.Bool
	}
	return dt
}

// Binary broadcasting ops (numpy broadcasting, as TensorFlow's BCast).
func tfBinary(c *nctx) {
	if !c.need(0, "x") || !c.need(1, "y") {
		return
	}
	op := c.n.Op
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	outDT := tfBinaryOut(op, dt)
	dims, ok := c.broadcastInputs(0, 1)
	if !ok {
		c.set(0, unknownType(outDT))
		return
	}
	c.set(0, tensorType(outDT, cloneDims(dims)))
	a, b := castCval(c.cst(0), dt), castCval(c.cst(1), dt)
	if a == nil || b == nil || !dt.Valid() {
		return
	}
	c.setConst(0, foldBinary(a, b, outDT, func(x, y elem) (elem, bool) { return tfBinElem(op, dt, x, y) }))
}

// foldBinary applies f to a and b broadcast together; the result has
// element type outDT.
func foldBinary(a, b *cval, outDT ir.DType, f func(x, y elem) (elem, bool)) *cval {
	out, bad, _, _ := broadcast(staticDims(a.shape...), staticDims(b.shape...))
	if bad {
		return nil
	}
	sizes, _ := tensorType(outDT, out).Dims()
	return foldElementwise(sizes, outDT, []*cval{a, b}, func(es []elem) (elem, bool) { return f(es[0], es[1]) })
}

// tfBinElem evaluates a TensorFlow binary op on elements of type dt.
func tfBinElem(op string, dt ir.DType, a, b elem) (elem, bool) {
	fl := isFloatType(dt)
	known := a.sym == "" && b.sym == ""
	switch op {
	case "Add", "AddV2":
		return binElem("Add", dt, false, a, b)
	case "Sub", "Mul", "Pow", "Equal", "Less", "Greater", "BitwiseAnd", "BitwiseOr", "BitwiseXor":
		return binElem(op, dt, false, a, b)
	case "Maximum":
		return binElem("Max", dt, false, a, b)
	case "Minimum":
		return binElem("Min", dt, false, a, b)
	case "GreaterEqual":
		return binElem("GreaterOrEqual", dt, false, a, b)
	case "LessEqual":
		return binElem("LessOrEqual", dt, false, a, b)
	case "LogicalAnd":
		return binElem("And", dt, false, a, b)
	case "LogicalOr":
		return binElem("Or", dt, false, a, b)
	case "NotEqual":
		e, ok := binElem("Equal", dt, false, a, b)
		if !ok || e.sym != "" {
			return e, ok
		}
		return boolElem(e.i == 0), true
	case "Div", "RealDiv", "TruncateDiv":
		// Integer division truncates (C semantics), as Go's does.
		return binElem("Div", dt, false, a, b)
	case "DivNoNan":
		if known && isVal(dt, b, 0) {
			return elem{}, true
		}
		return binElem("Div", dt, false, a, b)
	case "Mod", "TruncateMod":
		return binElem("Mod", dt, true, a, b)
	case "FloorMod":
		if !known || !fl {
			return binElem("Mod", dt, false, a, b)
		}
		r := math.Mod(a.f, b.f)
		if r != 0 && (r < 0) != (b.f < 0) {
			r += b.f
		}
		return elem{f: roundFloat(dt, r)}, true
	case "FloorDiv":
		if !known {
			return binElem("Div", dt, false, a, b) // keeps x / 1
		}
		if fl {
			return elem{f: roundFloat(dt, math.Floor(a.f/b.f))}, true
		}
		if b.i == 0 || (a.i == math.MinInt64 && b.i == -1) {
			return elem{}, false
		}
		q := a.i / b.i
		if (a.i%b.i != 0) && ((a.i < 0) != (b.i < 0)) {
			q--
		}
		return elem{i: wrapInt(dt, q)}, true
	case "SquaredDifference":
		d, ok := binElem("Sub", dt, false, a, b)
		if !ok {
			return d, ok
		}
		return binElem("Mul", dt, false, d, d)
	}
	return elem{}, false
}

// tfEqualShapes reads the N inputs of a variadic op that takes tensors of
// one shape (AddN, Pack): their element type and their common shape
// (ranked false when no input's rank is known; output 0 is then typed
// unknown). ok is false after an error.
func (c *nctx) tfEqualShapes() (dt ir.DType, shape []ir.Dim, ranked, ok bool) {
	idx := make([]int, len(c.n.Inputs))
	for i := range idx {
		if !c.need(i, "inputs") {
			return dt, nil, false, false
		}
		idx[i] = i
	}
	if dt, ok = c.tfSameType(idx...); !ok {
		return dt, nil, false, false
	}
	for _, i := range idx {
		s, ok := c.shape(i)
		if !ok {
			continue
		}
		if !ranked {
			shape, ranked = cloneDims(s), true
			continue
		}
		same := len(s) == len(shape)
		for k := 0; same && k < len(s); k++ {
			same = !conflict(shape[k], s[k])
			shape[k] = unify(shape[k], s[k])
		}
		if !same {
			c.errf("input %d has shape %s, input 0 %s: %s needs equal shapes", i, shapeString(s), shapeString(shape), c.n.Op)
			return dt, nil, false, false
		}
	}
	if !ranked {
		c.set(0, unknownType(dt))
	}
	return dt, shape, ranked, true
}

// AddN: N inputs of one shape (TensorFlow does not broadcast them).
func tfAddN(c *nctx) {
	dt, out, ranked, ok := c.tfEqualShapes()
	if !ok || !ranked {
		return
	}
	c.set(0, tensorType(dt, out))
	acc := castCval(c.cst(0), dt)
	for i := 1; i < len(c.n.Inputs) && acc != nil; i++ {
		b := castCval(c.cst(i), dt)
		if b == nil {
			return
		}
		acc = foldBinary(acc, b, dt, func(x, y elem) (elem, bool) { return binElem("Add", dt, false, x, y) })
	}
	c.setConst(0, acc)
}

// BiasAdd: value [..., C] (NHWC) or [N, C, ...] (NCHW), bias [C].
func tfBiasAdd(c *nctx) {
	if !c.need(0, "value") || !c.need(1, "bias") {
		return
	}
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	x, xok := c.shape(0)
	if !xok {
		c.set(0, unknownType(dt))
		return
	}
	if len(x) < 2 {
		c.errf("value must have rank at least 2, has shape %s", shapeString(x))
		return
	}
	ch := len(x) - 1
	switch f := c.attrString("data_format", "NHWC"); f {
	case "NCHW":
		ch = 1
	case "NHWC", "":
	default:
		c.errf("data_format %q is not supported (want NHWC or NCHW)", f)
		return
	}
	out := cloneDims(x)
	if b, ok := c.shape(1); ok {
		if len(b) != 1 || conflict(b[0], x[ch]) {
			c.errf("bias has shape %s, want [%s] (the channels of %s)", shapeString(b), x[ch], shapeString(x))
			return
		}
		out[ch] = unify(x[ch], b[0])
	}
	c.set(0, tensorType(dt, out))
}

// ClipByValue: t, and bounds that are scalars or t's shape.
func tfClip(c *nctx) {
	if !c.need(0, "t") || !c.need(1, "clip_value_min") || !c.need(2, "clip_value_max") {
		return
	}
	dt, ok := c.tfSameType(0, 1, 2)
	if !ok {
		return
	}
	_, r0 := c.shape(0)
	_, r1 := c.shape(1)
	_, r2 := c.shape(2)
	if r0 && r1 && r2 {
		if _, ok := c.broadcastInputs(0, 1, 2); !ok {
			return
		}
	}
	c.set(0, withDType(c.typ(0), dt))
}

// tfSelectArgs checks the inputs of Select and SelectV2 (condition, t, e)
// and returns the element type of t and e.
func (c *nctx) tfSelectArgs() (ir.DType, bool) {
	if !c.need(0, "condition") || !c.need(1, "t") || !c.need(2, "e") {
		return ir.Undefined, false
	}
	dt, ok := c.tfSameType(1, 2)
	if !ok {
		return dt, false
	}
	if d := c.dtype(0); d.Valid() && d != ir.Bool {
		c.errf("condition has element type %s, want bool", d)
		return dt, false
	}
	return dt, true
}

// Select (v1): condition of t's shape, or a vector over t's first axis (a
// scalar for scalar t); the output is t's shape.
func tfSelect(c *nctx) {
	dt, ok := c.tfSelectArgs()
	if !ok {
		return
	}
	t, tok := c.shape(1)
	e, eok := c.shape(2)
	var out []ir.Dim
	switch {
	case tok && eok:
		if len(t) != len(e) {
			c.errf("t has shape %s, e %s: they must be equal", shapeString(t), shapeString(e))
			return
		}
		out = make([]ir.Dim, len(t))
		for k := range t {
			if conflict(t[k], e[k]) {
				c.errf("t has shape %s, e %s: they must be equal", shapeString(t), shapeString(e))
				return
			}
			out[k] = unify(t[k], e[k])
		}
	case tok:
		out = cloneDims(t)
	case eok:
		out = cloneDims(e)
	default:
		c.set(0, unknownType(dt))
		return
	}
	if cs, ok := c.shape(0); ok {
		vector := len(cs) == 1 && len(out) > 1
		switch {
		case vector && conflict(cs[0], out[0]):
			c.errf("condition has shape %s; a vector condition must have the size of t's first axis %s", shapeString(cs), out[0])
			return
		case !vector && len(cs) != len(out):
			c.errf("condition has shape %s, t %s: the condition must have t's shape or be a vector over its first axis", shapeString(cs), shapeString(out))
			return
		case !vector:
			for k := range cs {
				if conflict(cs[k], out[k]) {
					c.errf("condition has shape %s, t %s: the condition must have t's shape or be a vector over its first axis", shapeString(cs), shapeString(out))
					return
				}
				out[k] = unify(out[k], cs[k])
			}
		}
	}
	c.set(0, tensorType(dt, out))
	cond, x, y := c.cst(0), castCval(c.cst(1), dt), castCval(c.cst(2), dt)
	if cond == nil || x == nil || y == nil || len(cond.shape) != len(x.shape) {
		return
	}
	c.setConst(0, selectConst(cond, x, y, dt))
}

// SelectV2: condition, t and e broadcast together.
func tfSelectV2(c *nctx) {
	dt, ok := c.tfSelectArgs()
	if !ok {
		return
	}
	dims, ok := c.broadcastInputs(0, 1, 2)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	c.set(0, tensorType(dt, cloneDims(dims)))
	cond, x, y := c.cst(0), castCval(c.cst(1), dt), castCval(c.cst(2), dt)
	if cond == nil || x == nil || y == nil {
		return
	}
	c.setConst(0, selectConst(cond, x, y, dt))
}

// selectConst picks x where cond is true and y elsewhere, broadcasting the
// three.
func selectConst(cond, x, y *cval, dt ir.DType) *cval {
	out, bad, _, _ := broadcast(staticDims(cond.shape...), staticDims(x.shape...), staticDims(y.shape...))
	if bad {
		return nil
	}
	sizes, _ := tensorType(dt, out).Dims()
	return foldElementwise(sizes, dt, []*cval{cond, x, y}, func(es []elem) (elem, bool) {
		if es[0].sym != "" {
			return unknownElem, true
		}
		if truthy(cond.dt, es[0]) {
			return es[1], true
		}
		return es[2], true
	})
}

// Cast: DstT.
func tfCast(c *nctx) {
	if !c.need(0, "x") {
		return
	}
	to, ok := c.tfDType("DstT")
	if !ok {
		c.errf("missing required attribute DstT")
		return
	}
	c.castTo(to)
}

// Complex (real, imag → Tout, complex64 by default), ComplexAbs, Real,
// Imag (→ Tout, float32 by default).
func tfComplex(c *nctx) {
	if !c.need(0, "x") {
		return
	}
	def := ir.Float32
	if c.n.Op == "Complex" {
		def = ir.Complex64
		if !c.need(1, "imag") {
			return
		}
		if c.dtype(0) == ir.Float64 {
			def = ir.Complex128
		}
		dt := c.tfDTypeOr("Tout", def)
		dims, ok := c.broadcastInputs(0, 1)
		if !ok {
			c.set(0, unknownType(dt))
			return
		}
		c.set(0, tensorType(dt, cloneDims(dims)))
		return
	}
	if c.dtype(0) == ir.Complex128 {
		def = ir.Float64
	}
	c.set(0, withDType(c.typ(0), c.tfDTypeOr("Tout", def)))
}

// ZerosLike, OnesLike: x's type, filled.
func tfFillLike(c *nctx) {
	if !c.need(0, "x") {
		return
	}
	t := tensorLike(c.typ(0))
	c.set(0, t)
	sizes, ok := t.Dims()
	if !ok {
		return
	}
	if cv := newCval(t.DType, sizes); cv != nil {
		if c.n.Op == "OnesLike" {
			for k := range cv.e {
				cv.e[k] = elem{i: 1, f: 1}
			}
		}
		c.setConst(0, cv)
	}
}

// Softmax, LogSoftmax: logits of rank at least 1, over the last axis.
func tfSoftmax(c *nctx) {
	if !c.need(0, "logits") {
		return
	}
	if s, ok := c.shape(0); ok && len(s) == 0 {
		c.errf("logits must have rank at least 1")
		return
	}
	c.set(0, tensorLike(c.typ(0)))
}

// LRN: a 4-D input, its shape.
func tfLRN(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	if s, ok := c.shape(0); ok && len(s) != 4 {
		c.errf("input must be 4-D, has shape %s", shapeString(s))
		return
	}
	c.set(0, tensorLike(c.typ(0)))
}

// IdentityN: each output is its input.
func tfIdentityN(c *nctx) {
	if len(c.n.Inputs) != len(c.n.Outputs) {
		c.errf("has %d inputs and %d outputs; IdentityN passes each input through", len(c.n.Inputs), len(c.n.Outputs))
		return
	}
	for i := range c.n.Inputs {
		if !c.need(i, "input") {
			return
		}
		c.set(i, tensorLike(c.typ(i)))
		c.setConst(i, c.cst(i))
	}
}

// Print: its first input, passed through.
func tfPrint(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	c.set(0, tensorLike(c.typ(0)))
}

// EnsureShape: the input, checked against (and refined by) the shape
// attribute.
func tfEnsureShape(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	t := tensorLike(c.typ(0))
	want, ok := c.attrInts("shape")
	if !ok {
		c.set(0, t)
		return
	}
	wt := tensorType(t.DType, unknownDims(len(want)))
	for k, d := range want {
		if d >= 0 {
			wt.Shape[k] = ir.D(d)
		}
	}
	if rankOf(t) < 0 {
		c.set(0, wt)
		return
	}
	if len(t.Shape) != len(want) {
		c.errf("input has shape %s, the shape attribute says %s", shapeString(t.Shape), shapeString(wt.Shape))
		return
	}
	for k := range t.Shape {
		if conflict(t.Shape[k], wt.Shape[k]) {
			c.errf("input has shape %s, the shape attribute says %s", shapeString(t.Shape), shapeString(wt.Shape))
			return
		}
		t.Shape[k] = unify(t.Shape[k], wt.Shape[k])
	}
	c.set(0, t)
	c.setConst(0, c.cst(0))
}
