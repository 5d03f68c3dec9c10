package shapes

import "github.com/remat-compile/remat/ir"

// QuantizeLinear: x's shape; the zero point's type, else uint8, or
// output_dtype (opset 21).
func inferQuantize(c *nctx) {
	if !c.need(0, "x") || !c.need(1, "y_scale") {
		return
	}
	dt := ir.Uint8
	if c.has(2) && c.dtype(2).Valid() {
		dt = c.dtype(2)
	}
	if c.opset >= 21 && c.hasAttr("output_dtype") {
		if od := c.attrDType("output_dtype", ir.Undefined); od.Valid() {
			if c.has(2) && c.dtype(2).Valid() && c.dtype(2) != od {
				c.errf("output_dtype %s differs from the zero point's type %s", od, c.dtype(2))
				return
			}
			dt = od
		}
	}
	c.set(0, withDType(c.typ(0), dt))
}

// DequantizeLinear: x's shape; float32 before opset 19, x_scale's type from
// 19.
func inferDequantize(c *nctx) {
	if !c.need(0, "x") || !c.need(1, "x_scale") {
		return
	}
	dt := ir.Float32
	if c.opset >= 19 && c.dtype(1).Valid() {
		dt = c.dtype(1)
	}
	c.set(0, withDType(c.typ(0), dt))
}

// DynamicQuantizeLinear: y uint8 like x, scalar y_scale f32 and
// y_zero_point u8.
func inferDynamicQuantize(c *nctx) {
	if !c.need(0, "x") {
		return
	}
	c.set(0, withDType(c.typ(0), ir.Uint8))
	c.set(1, ir.TensorOf(ir.Float32))
	c.set(2, ir.TensorOf(ir.Uint8))
}

// Dropout: output like data; the mask has the data's type before opset 10
// and is bool from 10. The ratio is an attribute before 12, an input after.
func inferDropout(c *nctx) {
	if !c.need(0, "data") || !c.formCheck(12, []string{"ratio"}, 1, 2) {
		return
	}
	t := tensorLike(c.typ(0))
	c.set(0, t)
	mask := withDType(t, ir.Bool)
	if c.opset < 10 {
		mask = t.Clone()
	}
	c.set(1, mask)
}

// RandomNormal, RandomUniform: the shape attribute, dtype (default float).
func inferRandom(c *nctx) {
	dt := c.attrDType("dtype", ir.Float32)
	shape, ok := c.attrInts("shape")
	if !ok {
		c.errf("missing required attribute shape")
		return
	}
	for _, d := range shape {
		if d < 0 {
			c.errf("attribute shape %v has a negative size", shape)
			return
		}
	}
	c.set(0, ir.TensorOf(dt, shape...))
}

// RandomNormalLike, RandomUniformLike, Bernoulli: the input's shape, dtype
// or the input's type.
func inferRandomLike(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	c.set(0, withDType(c.typ(0), c.attrDType("dtype", c.dtype(0))))
}

// Multinomial: [batch, sample_size], int32 by default.
func inferMultinomial(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.attrDType("dtype", ir.Int32)
	batch := ir.UnknownDim
	if x, ok := c.shape(0); ok {
		if len(x) != 2 {
			c.errf("input has rank %d, want 2 [batch, classes]", len(x))
			return
		}
		batch = x[0]
	}
	c.set(0, tensorType(dt, []ir.Dim{batch, ir.D(c.attrInt("sample_size", 1))}))
}

// Sequences and optionals. Their types describe the element tensor.

func seqOf(t ir.TensorType) ir.TensorType {
	t = t.Clone()
	t.Kind = ir.KindSequence
	return t
}

// joinTypes describes a value that has type a or type b.
func joinTypes(a, b ir.TensorType) ir.TensorType {
	if rankOf(a) < 0 || rankOf(b) < 0 || len(a.Shape) != len(b.Shape) {
		dt := a.DType
		if dt != b.DType {
			dt = ir.Undefined
		}
		return ir.TensorType{Kind: a.Kind, DType: dt, Unranked: true}
	}
	out := a.Clone()
	if a.DType != b.DType {
		out.DType = ir.Undefined
	}
	for i := range out.Shape {
		out.Shape[i] = join(a.Shape[i], b.Shape[i])
	}
	return out
}

func elemOf(t ir.TensorType) ir.TensorType {
	t = t.Clone()
	t.Kind = ir.KindTensor
	return t
}

func inferSequenceConstruct(c *nctx) {
	if !c.need(0, "inputs") {
		return
	}
	t := elemOf(c.typ(0))
	for i := 1; i < len(c.n.Inputs); i++ {
		if !c.need(i, "inputs") || !c.sameDTypes(0, i) {
			return
		}
		t = joinTypes(t, elemOf(c.typ(i)))
	}
	c.set(0, seqOf(t))
}

func inferSequenceEmpty(c *nctx) {
	c.set(0, ir.TensorType{Kind: ir.KindSequence, DType: c.attrDType("dtype", ir.Float32), Unranked: true})
}

func inferSequenceAt(c *nctx) {
	if !c.need(0, "input_sequence") || !c.need(1, "position") {
		return
	}
	c.set(0, elemOf(c.typ(0)))
}

func inferSequenceInsert(c *nctx) {
	if !c.need(0, "input_sequence") || !c.need(1, "tensor") {
		return
	}
	s := c.typ(0)
	t := elemOf(c.typ(1))
	if s.DType.Valid() && t.DType.Valid() && s.DType != t.DType {
		c.errf("sequence of %s cannot take a tensor of %s", s.DType, t.DType)
		return
	}
	if !s.DType.Valid() {
		c.set(0, seqOf(t))
		return
	}
	c.set(0, seqOf(joinTypes(elemOf(s), t)))
}

func inferSequenceErase(c *nctx) {
	if !c.need(0, "input_sequence") {
		return
	}
	c.set(0, c.typ(0).Clone())
}

func inferSequenceLength(c *nctx) {
	if !c.need(0, "input_sequence") {
		return
	}
	c.set(0, ir.TensorOf(ir.Int64))
}

// SplitToSequence: pieces along axis; size 1 (or dropped with keepdims=0)
// without split.
func inferSplitToSequence(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, ir.TensorType{Kind: ir.KindSequence, DType: dt, Unranked: true})
		return
	}
	a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis")
	if !ok {
		return
	}
	out := cloneDims(x)
	switch {
	case !c.has(1):
		if c.attrInt("keepdims", 1) == 0 {
			out = append(out[:a], out[a+1:]...)
		} else {
			out[a] = ir.D(1)
		}
	default:
		out[a] = ir.UnknownDim
		if cv := c.cst(1); cv != nil && cv.rank() == 0 && x[a].Known() {
			if v, ok := cv.intAt(0); ok && v > 0 && x[a].Size%v == 0 {
				out[a] = ir.D(v)
			}
		}
	}
	c.set(0, seqOf(tensorType(dt, out)))
}

// ConcatFromSequence: the element's rank (one more with new_axis); the
// axis size is data-dependent.
func inferConcatFromSequence(c *nctx) {
	if !c.need(0, "input_sequence") {
		return
	}
	s := c.typ(0)
	dt := s.DType
	if rankOf(s) < 0 {
		c.set(0, unknownType(dt))
		return
	}
	if !c.hasAttr("axis") {
		c.errf("missing required attribute axis")
		return
	}
	out := cloneDims(s.Shape)
	r := len(out)
	newAxis := c.attrInt("new_axis", 0) != 0
	if newAxis {
		r++
	}
	a, ok := c.axis(c.attrInt("axis", 0), r, "axis")
	if !ok {
		return
	}
	if newAxis {
		out = append(out[:a], append([]ir.Dim{ir.UnknownDim}, out[a:]...)...)
	} else {
		out[a] = ir.UnknownDim
	}
	c.set(0, tensorType(dt, out))
}

func inferOptional(c *nctx) {
	if !c.has(0) {
		c.unsupportedf("Optional without an input carries its type in an attribute the IR does not model")
		return
	}
	t := c.typ(0).Clone()
	if t.Kind == ir.KindTensor {
		t.Kind = ir.KindOptional
	}
	c.set(0, t)
}

func inferOptionalHasElement(c *nctx) { c.set(0, ir.TensorOf(ir.Bool)) }

func inferOptionalGetElement(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	t := c.typ(0).Clone()
	if t.Kind == ir.KindOptional {
		t.Kind = ir.KindTensor
	}
	c.set(0, t)
}
