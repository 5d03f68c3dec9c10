package shapes

import "github.com/remat-compile/remat/ir"

// tensorLike is t as the type of a tensor output: unknown when t is not a
// tensor type.
func tensorLike(t ir.TensorType) ir.TensorType {
	if t.Kind != ir.KindTensor {
		return unknownType(t.DType)
	}
	if rankOf(t) < 0 {
		return unknownType(t.DType)
	}
	return t.Clone()
}

// withDType is t with element type dt.
func withDType(t ir.TensorType, dt ir.DType) ir.TensorType {
	t = tensorLike(t)
	t.DType = dt
	return t
}

// castCval converts a constant to element type to.
func castCval(cv *cval, to ir.DType) *cval {
	if cv == nil || cv.dt == to {
		return cv
	}
	out := newCval(to, cv.shape)
	if out == nil {
		return nil
	}
	for k, e := range cv.e {
		r, ok := castElem(cv.dt, to, e)
		if !ok {
			return nil
		}
		out.e[k] = r
	}
	return out
}

// broadcastInputs broadcasts the shapes of the given inputs; ok is false
// when a rank is unknown or the shapes do not broadcast (an error).
func (c *nctx) broadcastInputs(idx ...int) ([]ir.Dim, bool) {
	shapes := make([][]ir.Dim, 0, len(idx))
	for _, i := range idx {
		s, ok := c.shape(i)
		if !ok {
			return nil, false
		}
		shapes = append(shapes, s)
	}
	out, bad, _, _ := broadcast(shapes...)
	if bad {
		strs := make([]any, 0, len(shapes))
		for _, s := range shapes {
			strs = append(strs, shapeString(s))
		}
		if len(shapes) == 2 {
			c.errf("input shapes %s and %s do not broadcast", strs...)
		} else {
			c.errf("input shapes %v do not broadcast", strs)
		}
		return nil, false
	}
	return out, true
}

// unary ops whose output has the input's type.
func inferUnary(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	t := c.typ(0)
	c.set(0, tensorLike(t))
	if cv := c.cst(0); cv != nil {
		if r := foldUnary(c.n.Op, cv); r != nil {
			c.setConst(0, r)
		}
	}
}

func foldUnary(op string, cv *cval) *cval {
	out := newCval(cv.dt, cv.shape)
	if out == nil {
		return nil
	}
	for k, e := range cv.e {
		r, ok := unElem(op, cv.dt, e)
		if !ok {
			return nil
		}
		out.e[k] = r
	}
	return out
}

// IsNaN, IsInf: bool of the input's shape.
func inferIsNaN(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	c.set(0, withDType(c.typ(0), ir.Bool))
}

func inferNot(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	c.set(0, withDType(c.typ(0), ir.Bool))
	if cv := c.cst(0); cv != nil {
		if r := foldUnary("Not", cv); r != nil {
			r.dt = ir.Bool
			c.setConst(0, r)
		}
	}
}

func isCompare(op string) bool {
	switch op {
	case "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor":
		return true
	}
	return false
}

// Binary broadcasting ops: arithmetic, comparisons, logic.
func inferBinary(c *nctx) {
	if !c.need(0, "A") || !c.need(1, "B") {
		return
	}
	op := c.n.Op
	mixed := op == "Pow" && c.opset >= 12 // Pow-12 allows an exponent of another type
	if !mixed && !c.sameDTypes(0, 1) {
		return
	}
	dt := c.firstDType(0, 1)
	if mixed {
		dt = c.dtype(0)
	}
	outDT := dt
	if isCompare(op) {
		outDT = ir.Bool
	}
	if op == "BitShift" {
		if d := c.attrString("direction", ""); d != "LEFT" && d != "RIGHT" {
			c.errf("attribute direction is %q; want LEFT or RIGHT", d)
			return
		}
	}
	var dims []ir.Dim
	var ok bool
	if c.opset < 7 && c.n.Attr("broadcast") != nil {
		// Before opset 7, B broadcast onto A's shape when broadcast=1.
		dims, ok = c.shape(0)
		if c.attrInt("broadcast", 0) == 0 {
			dims, ok = c.broadcastInputs(0, 1)
		}
	} else {
		dims, ok = c.broadcastInputs(0, 1)
	}
	if !ok {
		c.set(0, unknownType(outDT))
		return
	}
	c.set(0, tensorType(outDT, cloneDims(dims)))
	a, b := c.cst(0), c.cst(1)
	if a == nil || b == nil || !dt.Valid() {
		return
	}
	if mixed {
		b = castCval(b, dt)
	}
	out, bad, _, _ := broadcast(staticDims(a.shape...), staticDims(b.shape...))
	if bad || b == nil {
		return
	}
	sizes, _ := tensorType(dt, out).Dims()
	fmod := op == "Mod" && c.attrInt("fmod", 0) == 1
	r := foldElementwise(sizes, outDT, []*cval{a, b}, func(es []elem) (elem, bool) {
		return binElem(op, dt, fmod, es[0], es[1])
	})
	c.setConst(0, r)
}

// Max, Min, Sum, Mean: variadic broadcasting.
func inferVariadic(c *nctx) {
	if len(c.n.Inputs) == 0 || !c.need(0, "data_0") {
		return
	}
	idx := make([]int, 0, len(c.n.Inputs))
	for i := range c.n.Inputs {
		if !c.need(i, "data") {
			return
		}
		idx = append(idx, i)
	}
	if !c.sameDTypes(idx...) {
		return
	}
	dt := c.firstDType(idx...)
	dims, ok := c.broadcastInputs(idx...)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	c.set(0, tensorType(dt, cloneDims(dims)))
	if c.n.Op == "Mean" || !dt.Valid() {
		return
	}
	acc := c.cst(0)
	for i := 1; i < len(idx) && acc != nil; i++ {
		b := c.cst(i)
		if b == nil {
			return
		}
		out, bad, _, _ := broadcast(staticDims(acc.shape...), staticDims(b.shape...))
		if bad {
			return
		}
		sizes, _ := tensorType(dt, out).Dims()
		acc = foldElementwise(sizes, dt, []*cval{acc, b}, func(es []elem) (elem, bool) {
			return binElem(c.n.Op, dt, false, es[0], es[1])
		})
	}
	c.setConst(0, acc)
}

func inferWhere(c *nctx) {
	if !c.need(0, "condition") || !c.need(1, "X") || !c.need(2, "Y") {
		return
	}
	if !c.sameDTypes(1, 2) {
		return
	}
	if dt := c.dtype(0); dt.Valid() && dt != ir.Bool {
		c.errf("condition has element type %s, want bool", dt)
		return
	}
	dt := c.firstDType(1, 2)
	dims, ok := c.broadcastInputs(0, 1, 2)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	c.set(0, tensorType(dt, cloneDims(dims)))
	cond, x, y := c.cst(0), c.cst(1), c.cst(2)
	if cond == nil || x == nil || y == nil || !dt.Valid() {
		return
	}
	out, bad, _, _ := broadcast(staticDims(cond.shape...), staticDims(x.shape...), staticDims(y.shape...))
	if bad {
		return
	}
	sizes, _ := tensorType(dt, out).Dims()
	c.setConst(0, foldElementwise(sizes, dt, []*cval{cond, castCval(x, dt), castCval(y, dt)}, func(es []elem) (elem, bool) {
		if es[0].sym != "" {
			return unknownElem, true
		}
		if es[0].i != 0 {
			return es[1], true
		}
		return es[2], true
	}))
}

func inferPRelu(c *nctx) {
	if !c.need(0, "X") || !c.need(1, "slope") || !c.sameDTypes(0, 1) {
		return
	}
	dt := c.firstDType(0, 1)
	dims, ok := c.broadcastInputs(0, 1)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	c.set(0, tensorType(dt, cloneDims(dims)))
}

// Clip: min and max are attributes before opset 11, optional inputs after.
func inferClip(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	if !c.formCheck(11, []string{"min", "max"}, 1, 2) {
		return
	}
	t := c.typ(0)
	c.set(0, tensorLike(t))
	x := c.cst(0)
	if x == nil {
		return
	}
	var lo, hi *elem
	if c.opset < 11 {
		if c.hasAttr("min") {
			v := c.attrFloat("min", 0)
			lo = &elem{f: float64(v), i: int64(v)}
		}
		if c.hasAttr("max") {
			v := c.attrFloat("max", 0)
			hi = &elem{f: float64(v), i: int64(v)}
		}
	} else {
		for k, p := range []**elem{&lo, &hi} {
			if !c.has(1 + k) {
				continue
			}
			cv := castCval(c.cst(1+k), x.dt)
			e, ok := cv.single()
			if !ok || !e.known() {
				return
			}
			*p = &e
		}
	}
	r := newCval(x.dt, x.shape)
	if r == nil {
		return
	}
	for k, e := range x.e {
		if e.sym != "" {
			return
		}
		if lo != nil {
			e, _ = binElem("Max", x.dt, false, e, *lo)
		}
		if hi != nil {
			e, _ = binElem("Min", x.dt, false, e, *hi)
		}
		r.e[k] = e
	}
	c.setConst(0, r)
}

// Cast: the "to" attribute is a TensorProto.DataType number (a type name
// in Cast-1).
func inferCast(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	a := c.n.Attr("to")
	var to ir.DType
	switch {
	case a == nil:
		c.errf("missing required attribute to")
		return
	case a.Kind == ir.AttrInt:
		dt, ok := onnxDType(a.Int)
		if !ok {
			c.errf("attribute to: unknown element type %d", a.Int)
			return
		}
		to = dt
	case a.Kind == ir.AttrString:
		dt, ok := onnxDTypeNames[string(a.Str)]
		if !ok {
			c.errf("attribute to: unknown element type %q", a.Str)
			return
		}
		to = dt
	default:
		c.errf("attribute to is of kind %s, want int", a.Kind)
		return
	}
	c.castTo(to)
}

// castTo types output 0 as input 0 converted to element type to, and
// folds it.
func (c *nctx) castTo(to ir.DType) {
	c.set(0, withDType(c.typ(0), to))
	if cv := c.cst(0); cv != nil && foldable(to) {
		c.setConst(0, castCval(cv, to))
	}
}

func inferCastLike(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "target_type") {
		return
	}
	to := c.dtype(1)
	c.castTo(to)
}

// Softmax, LogSoftmax, Hardmax: the axis defaults to 1 before opset 13 and
// to -1 from 13 on; the shape does not change.
func inferSoftmax(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	t := c.typ(0)
	def := int64(-1)
	if c.opset < 13 {
		def = 1
	}
	ax := c.attrInt("axis", def)
	if r := rankOf(t); r >= 0 {
		if _, ok := c.axis(ax, max(r, 1), "axis"); !ok {
			return
		}
	}
	c.set(0, tensorLike(t))
}

// Identity passes any type through, sequences included, and its value.
func inferIdentity(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	c.set(0, c.typ(0).Clone())
	if cv := c.cst(0); cv != nil {
		c.setConst(0, cv)
	}
}

// ops whose output is their first input's type, with checks on nothing
// else (activations with attributes, normalisations of the whole tensor,
// scatters, CumSum, Trilu, ReverseSequence, …).
func inferSameAsFirst(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	c.set(0, tensorLike(c.typ(0)))
}
