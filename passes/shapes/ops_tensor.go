package shapes

import (
	"math"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// intsOrAttr reads a list that is an attribute before opset `since` and an
// input (at index i) from it on. present is false when the list is absent;
// known is false when it is an input whose value is not known.
func (c *nctx) intsOrAttr(since int64, attr string, i int) (vals []int64, present, known bool) {
	if c.opset < since {
		v, ok := c.attrInts(attr)
		return v, ok, true
	}
	if !c.has(i) {
		return nil, false, true
	}
	cv := c.cst(i)
	if cv == nil {
		return nil, true, false
	}
	if cv.rank() > 1 {
		c.errf("input %d must be a scalar or 1-D, has shape %v", i, cv.shape)
		return nil, true, false
	}
	v, ok := cv.ints()
	return v, true, ok
}

// listLen is the length of 1-D input i when its shape says so, or -1.
func (c *nctx) listLen(i int) int {
	if s, ok := c.shape(i); ok && len(s) == 1 && s[0].Known() {
		return int(s[0].Size)
	}
	if s, ok := c.shape(i); ok && len(s) == 0 {
		return 1
	}
	return -1
}

// Shape: int64 [rank], or the [start, end) part of it (opset 15).
func inferShape(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	x, ok := c.shape(0)
	if !ok {
		c.set(0, tensorType(ir.Int64, []ir.Dim{ir.UnknownDim}))
		return
	}
	r := int64(len(x))
	start, end := int64(0), r
	if c.opset >= 15 {
		start, end = c.attrInt("start", 0), c.attrInt("end", r)
		clamp := func(v int64) int64 {
			if v < 0 {
				v += r
			}
			return min(max(v, 0), r)
		}
		start, end = clamp(start), clamp(end)
		if end < start {
			end = start
		}
	}
	c.setConst(0, dimVec(x[start:end]))
}

// Size: int64 scalar.
func inferSize(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	c.set(0, tensorType(ir.Int64, nil))
	if x, ok := c.shape(0); ok {
		p := dimProd(x)
		cv := &cval{dt: ir.Int64, shape: []int64{}, e: make([]elem, 1)}
		switch {
		case p.Known():
			cv.e[0].i = p.Size
		case p.Sym != "":
			cv.e[0].sym = p.Sym
		default:
			return
		}
		c.setConst(0, cv)
	}
}

// Constant: exactly one of value, value_float(s), value_int(s),
// value_string(s), sparse_value.
func inferConstant(c *nctx) {
	var kinds []string
	for _, a := range c.n.Attrs {
		switch a.Name {
		case "value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings", "sparse_value":
			kinds = append(kinds, a.Name)
		}
	}
	if len(kinds) != 1 {
		c.errf("needs exactly one value attribute, has %d", len(kinds))
		return
	}
	a := c.n.Attr(kinds[0])
	want := map[string]ir.AttrKind{
		"value": ir.AttrTensor, "value_float": ir.AttrFloat, "value_floats": ir.AttrFloats,
		"value_int": ir.AttrInt, "value_ints": ir.AttrInts, "value_string": ir.AttrString,
		"value_strings": ir.AttrStrings,
	}[a.Name]
	if a.Name == "sparse_value" {
		c.unsupportedf("sparse_value")
		return
	}
	if a.Kind != want {
		c.errf("attribute %s is of kind %s, want %s", a.Name, a.Kind, want)
		return
	}
	switch a.Name {
	case "value":
		if a.Tensor == nil {
			c.errf("attribute value has no tensor")
			return
		}
		t := a.Tensor.Type()
		for _, d := range t.Shape {
			if d.Size < 0 {
				c.errf("attribute value has a negative dimension in shape %v", a.Tensor.Shape)
				return
			}
		}
		// Data kept outside the tensor (external storage) has no Raw bytes.
		if err := a.Tensor.CheckSize(); err != nil && (len(a.Tensor.Raw) > 0 || len(a.Tensor.Strs) > 0) {
			c.errf("attribute value: %v", err)
			return
		}
		c.set(0, t)
		if cv := fromTensor(a.Tensor); cv != nil {
			c.setConst(0, cv)
		}
	case "value_float":
		c.setConst(0, &cval{dt: ir.Float32, shape: []int64{}, e: []elem{{f: float64(a.Float)}}})
	case "value_floats":
		cv := newCval(ir.Float32, []int64{int64(len(a.Floats))})
		if cv == nil {
			c.set(0, ir.TensorOf(ir.Float32, int64(len(a.Floats))))
			return
		}
		for k, f := range a.Floats {
			cv.e[k].f = float64(f)
		}
		c.setConst(0, cv)
	case "value_int":
		c.setConst(0, &cval{dt: ir.Int64, shape: []int64{}, e: []elem{{i: a.Int}}})
	case "value_ints":
		if len(a.Ints) > maxConstElems {
			c.set(0, ir.TensorOf(ir.Int64, int64(len(a.Ints))))
			return
		}
		c.setConst(0, intVec(a.Ints...))
	case "value_string":
		c.set(0, ir.TensorOf(ir.String))
	case "value_strings":
		c.set(0, ir.TensorOf(ir.String, int64(len(a.Strs))))
	}
}

// shapeArg reads input i as a shape: its elements as dims, with negative
// and special values left to the caller through raw. ok is false when not
// even the length is known; dims is nil then, or unknown dims of the known
// length.
func (c *nctx) shapeArg(i int) (dims []ir.Dim, raw []elem, known bool) {
	cv := c.cst(i)
	if cv != nil {
		if cv.rank() > 1 {
			c.errf("input %d must be 1-D, has shape %v", i, cv.shape)
			return nil, nil, false
		}
		dims = make([]ir.Dim, len(cv.e))
		raw = make([]elem, len(cv.e))
		for k := range cv.e {
			dims[k] = cv.dimAt(k)
			raw[k] = cv.e[k]
			if isFloatType(cv.dt) && raw[k].sym == "" {
				raw[k] = elem{i: int64(cv.e[k].f)}
			}
		}
		return dims, raw, true
	}
	if n := c.listLen(i); n >= 0 {
		return unknownDims(n), nil, false
	}
	return nil, nil, false
}

// ConstantOfShape: the shape input's values, the value attribute's type
// (float32 0 by default).
func inferConstantOfShape(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := ir.Float32
	fill := elem{}
	if a := c.n.Attr("value"); a != nil {
		if a.Kind != ir.AttrTensor || a.Tensor == nil {
			c.errf("attribute value must be a one-element tensor")
			return
		}
		if a.Tensor.NumElements() != 1 {
			c.errf("attribute value must have one element, has %d", a.Tensor.NumElements())
			return
		}
		dt = a.Tensor.DType
		if cv := fromTensor(a.Tensor); cv != nil {
			fill = cv.e[0]
		} else {
			fill = unknownElem
		}
	}
	dims, raw, known := c.shapeArg(0)
	if dims == nil {
		c.set(0, unknownType(dt))
		return
	}
	for k, e := range raw {
		if e.sym == "" && e.i < 0 {
			c.errf("shape element %d is negative (%d)", k, e.i)
			return
		}
	}
	c.set(0, tensorType(dt, dims))
	if known && fill.sym == "" {
		if sizes, ok := tensorType(dt, dims).Dims(); ok {
			if cv := newCval(dt, sizes); cv != nil {
				for k := range cv.e {
					cv.e[k] = fill
				}
				c.setConst(0, cv)
			}
		}
	}
}

// Range: [max(ceil((limit-start)/delta), 0)] of start's type.
func inferRange(c *nctx) {
	if !c.need(0, "start") || !c.need(1, "limit") || !c.need(2, "delta") || !c.sameDTypes(0, 1, 2) {
		return
	}
	dt := c.firstDType(0, 1, 2)
	for i := range 3 {
		if s, ok := c.shape(i); ok && len(s) != 0 && !(len(s) == 1 && isOne(s[0])) {
			c.errf("input %d must be a scalar, has shape %s", i, shapeString(s))
			return
		}
	}
	c.set(0, tensorType(dt, []ir.Dim{ir.UnknownDim}))
	st, lt, dl := c.cst(0), c.cst(1), c.cst(2)
	s, ok1 := st.single()
	l, ok2 := lt.single()
	d, ok3 := dl.single()
	if !ok1 || !ok2 || !ok3 {
		return
	}
	fl := isFloatType(dt)
	if !s.known() || !d.known() {
		return
	}
	if !l.known() {
		// Range(0, n, 1) has n elements, n symbolic.
		if l.sym != unkSym && isVal(dt, s, 0) && isVal(dt, d, 1) {
			c.set(0, tensorType(dt, []ir.Dim{ir.SymDim(l.sym)}))
		}
		return
	}
	var n int64
	if fl {
		if d.f == 0 {
			c.errf("delta is 0")
			return
		}
		v := math.Ceil((l.f - s.f) / d.f)
		if math.IsNaN(v) || v > 1<<40 {
			return
		}
		n = max(int64(v), 0)
	} else {
		if d.i == 0 {
			c.errf("delta is 0")
			return
		}
		n = max(ceilDiv(l.i-s.i, d.i), 0)
	}
	c.set(0, tensorType(dt, []ir.Dim{ir.D(n)}))
	if cv := newCval(dt, []int64{n}); cv != nil {
		for k := range cv.e {
			if fl {
				cv.e[k].f = roundFloat(dt, s.f+float64(k)*d.f)
			} else {
				cv.e[k].i = s.i + int64(k)*d.i
			}
		}
		c.setConst(0, cv)
	}
}

// Concat along axis (required from opset 4; negative from 11).
func inferConcat(c *nctx) {
	if len(c.n.Inputs) == 0 {
		c.errf("needs at least one input")
		return
	}
	idx := make([]int, 0, len(c.n.Inputs))
	for i := range c.n.Inputs {
		if !c.need(i, "inputs") {
			return
		}
		idx = append(idx, i)
	}
	if !c.sameDTypes(idx...) {
		return
	}
	dt := c.firstDType(idx...)
	if !c.hasAttr("axis") && c.opset >= 4 {
		c.errf("missing required attribute axis")
		return
	}
	c.concatAt(idx, c.attrInt("axis", 1), dt)
}

// concatAt types output 0 as the inputs idx (of element type dt)
// concatenated along axis ax, and folds it.
func (c *nctx) concatAt(idx []int, ax int64, dt ir.DType) {
	r := -1
	for _, i := range idx {
		if s, ok := c.shape(i); ok {
			if r >= 0 && len(s) != r {
				c.errf("inputs have different ranks (%d and %d)", r, len(s))
				return
			}
			r = len(s)
		}
	}
	if r < 0 {
		c.set(0, unknownType(dt))
		return
	}
	if r == 0 {
		c.errf("cannot concatenate scalars")
		return
	}
	a, ok := c.axis(ax, r, "axis")
	if !ok {
		return
	}
	out := unknownDims(r)
	sum := ir.D(0)
	allRanked := true
	first := true
	for _, i := range idx {
		s, ok := c.shape(i)
		if !ok {
			allRanked = false
			continue
		}
		for k := range r {
			if k == a {
				continue
			}
			if first {
				out[k] = s[k]
				continue
			}
			if conflict(out[k], s[k]) {
				c.errf("input %d has shape %s; dimension %d must be %d as in the other inputs", i, shapeString(s), k, out[k].Size)
				return
			}
			out[k] = unify(out[k], s[k])
		}
		first = false
		sum = dimAdd(sum, s[a])
	}
	if allRanked {
		out[a] = sum
	}
	c.set(0, tensorType(dt, out))
	// Fold.
	cvs := make([]*cval, len(idx))
	for k, i := range idx {
		if cvs[k] = c.cst(i); cvs[k] == nil || cvs[k].rank() != r {
			return
		}
	}
	c.setConst(0, concatConst(dt, cvs, a))
}

func concatConst(dt ir.DType, cvs []*cval, a int) *cval {
	for _, cv := range cvs {
		for k, d := range cv.shape {
			if k != a && d != cvs[0].shape[k] {
				return nil
			}
		}
	}
	shape := append([]int64{}, cvs[0].shape...)
	shape[a] = 0
	for _, cv := range cvs {
		shape[a] += cv.shape[a]
	}
	out := newCval(dt, shape)
	if out == nil {
		return nil
	}
	outer := int64(1)
	for _, d := range shape[:a] {
		outer *= d
	}
	k := 0
	for o := int64(0); o < outer; o++ {
		for _, cv := range cvs {
			inner := int64(1)
			for _, d := range cv.shape[a:] {
				inner *= d
			}
			src := castCval(cv, dt)
			if src == nil {
				return nil
			}
			copy(out.e[k:], src.e[o*inner:(o+1)*inner])
			k += int(inner)
		}
	}
	return out
}

// Split: sizes from the split attribute (before 13), the split input (13),
// num_outputs (18) or equal parts.
func inferSplit(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.dtype(0)
	nout := c.numOut()
	x, ok := c.shape(0)
	if !ok {
		c.setAll(unknownType(dt))
		return
	}
	a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis")
	if !ok {
		return
	}
	if c.opset >= 2 && !c.formCheck(13, []string{"split"}, 1) {
		return
	}
	split, present, known := c.intsOrAttr(13, "split", 1)
	if c.opset < 2 && !present && c.has(1) { // Split-1 took it as an input too
		split, present, known = c.intsOrAttr(0, "", 1)
	}
	sizes := make([]ir.Dim, nout)
	switch {
	case present && !known:
		for i := range sizes {
			sizes[i] = ir.UnknownDim
		}
	case present:
		if len(split) != nout {
			c.errf("split has %d sizes, but the node has %d outputs", len(split), nout)
			return
		}
		sum := int64(0)
		for i, s := range split {
			if s < 0 {
				c.errf("split size %d is negative", s)
				return
			}
			sum += s
			sizes[i] = ir.D(s)
		}
		if x[a].Known() && sum != x[a].Size {
			c.errf("split sizes %v add up to %d, but axis %d has size %d", split, sum, a, x[a].Size)
			return
		}
	default:
		num := int64(nout)
		if c.opset >= 18 && c.hasAttr("num_outputs") {
			num = c.attrInt("num_outputs", 0)
			if num < 1 || num != int64(nout) {
				c.errf("attribute num_outputs is %d, but the node has %d outputs", num, nout)
				return
			}
		}
		d := x[a]
		switch {
		case !d.Known():
			for i := range sizes {
				sizes[i] = ir.UnknownDim
				if num == 1 {
					sizes[i] = d
				}
			}
		case d.Size%num == 0:
			for i := range sizes {
				sizes[i] = ir.D(d.Size / num)
			}
		case c.opset >= 18:
			chunk := ceilDiv(d.Size, num)
			rest := d.Size
			for i := range sizes {
				s := min(chunk, max(rest, 0))
				sizes[i] = ir.D(s)
				rest -= s
			}
		default:
			c.errf("axis %d of size %d does not split into %d equal parts", a, d.Size, num)
			return
		}
	}
	c.splitOutputs(0, dt, x, a, sizes)
}

// splitOutputs types the outputs of a split of input vi (shape x, element
// type dt) along axis a into parts of the given sizes, and folds them.
func (c *nctx) splitOutputs(vi int, dt ir.DType, x []ir.Dim, a int, sizes []ir.Dim) {
	cv := c.cstOfRank(vi, len(x))
	off := int64(0)
	for i, size := range sizes {
		o := cloneDims(x)
		o[a] = size
		c.set(i, tensorType(dt, o))
		if cv != nil && size.Known() {
			c.setConst(i, sliceConst(cv, []int{a}, []int64{off}, []int64{1}, []int64{size.Size}))
			off += size.Size
		} else {
			cv = nil
		}
	}
}

// sliceConst takes, on each listed axis, n elements from start by step.
func sliceConst(cv *cval, axes []int, starts, steps, counts []int64) *cval {
	out := append([]int64{}, cv.shape...)
	st := make([]int64, len(out))
	sp := make([]int64, len(out))
	for i := range sp {
		sp[i] = 1
	}
	for k, a := range axes {
		out[a], st[a], sp[a] = counts[k], starts[k], steps[k]
	}
	str := strides(cv.shape)
	return remap(cv, cv.dt, out, func(idx []int64) int64 {
		var j int64
		for a, i := range idx {
			j += (st[a] + i*sp[a]) * str[a]
		}
		return j
	})
}

// Slice: starts, ends, axes are attributes before opset 10; from 10 they
// and steps are inputs.
func inferSlice(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	r := len(x)
	var starts, ends, axes, steps []int64
	var haveAxes, haveSteps bool
	if !c.formCheck(10, []string{"starts", "ends", "axes"}, 1, 2, 3, 4) {
		return
	}
	if c.opset < 10 {
		var ok1, ok2 bool
		starts, ok1 = c.attrInts("starts")
		ends, ok2 = c.attrInts("ends")
		if !ok1 || !ok2 {
			c.errf("missing required attribute starts or ends")
			return
		}
		axes, haveAxes = c.attrInts("axes")
	} else {
		if !c.need(1, "starts") || !c.need(2, "ends") {
			return
		}
		var k1, k2, k3, k4 bool
		starts, _, k1 = c.intsOrAttr(10, "", 1)
		ends, _, k2 = c.intsOrAttr(10, "", 2)
		axes, haveAxes, k3 = c.intsOrAttr(10, "", 3)
		steps, haveSteps, k4 = c.intsOrAttr(10, "", 4)
		if !k3 {
			// Unknown axes: any axis may shrink.
			c.set(0, tensorType(dt, unknownDims(r)))
			return
		}
		if !k1 || !k2 || !k4 {
			out := cloneDims(x)
			n := c.listLen(1)
			if haveAxes {
				n = len(axes)
			}
			list := axes
			if !haveAxes && n >= 0 {
				list = make([]int64, n)
				for i := range list {
					list[i] = int64(i)
				}
			}
			if n < 0 || len(list) != n {
				c.set(0, tensorType(dt, unknownDims(r)))
				return
			}
			for _, a := range list {
				ax, ok := c.axis(a, r, "axis")
				if !ok {
					return
				}
				out[ax] = ir.UnknownDim
			}
			c.set(0, tensorType(dt, out))
			return
		}
	}
	if len(starts) != len(ends) {
		c.errf("starts has %d values, ends %d", len(starts), len(ends))
		return
	}
	if !haveAxes {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if !haveSteps {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		c.errf("starts, ends, axes and steps have %d, %d, %d and %d values", len(starts), len(ends), len(axes), len(steps))
		return
	}
	ax, ok := c.axes(axes, r, "axis")
	if !ok {
		return
	}
	out := cloneDims(x)
	cstarts := make([]int64, len(ax))
	counts := make([]int64, len(ax))
	allKnown := true
	for k, a := range ax {
		s, e, st := starts[k], ends[k], steps[k]
		if st == 0 {
			c.errf("step on axis %d is 0", a)
			return
		}
		d := x[a]
		if !d.Known() {
			allKnown = false
			// The whole axis, forwards: the size is unchanged.
			if st == 1 && (s == 0 || s <= math.MinInt64/2) && e >= math.MaxInt32 {
				continue
			}
			out[a] = ir.UnknownDim
			continue
		}
		n := d.Size
		if s < 0 {
			s += n
		}
		if e < 0 {
			e += n
		}
		var cnt int64
		if st > 0 {
			s = min(max(s, 0), n)
			e = min(max(e, 0), n)
			if e > s {
				cnt = ceilDiv(e-s, st)
			}
		} else {
			s = min(max(s, 0), n-1)
			e = min(max(e, -1), n-1)
			if s > e {
				cnt = ceilDiv(s-e, -st)
			}
		}
		out[a] = ir.D(cnt)
		cstarts[k], counts[k] = s, cnt
	}
	c.set(0, tensorType(dt, out))
	if cv := c.cstOfRank(0, r); cv != nil && allKnown {
		c.setConst(0, sliceConst(cv, ax, cstarts, steps, counts))
	}
}

// Reshape: a shape attribute before opset 5, an input from 5; 0 copies the
// input's dimension (unless allowzero, opset 14), -1 is inferred.
func inferReshape(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	dt := c.dtype(0)
	var dims []ir.Dim
	var raw []elem
	if !c.formCheck(5, []string{"shape"}, 1) {
		return
	}
	if c.opset < 5 {
		v, ok := c.attrInts("shape")
		if !ok {
			c.errf("missing required attribute shape")
			return
		}
		cv := intVec(v...)
		dims, raw = make([]ir.Dim, len(v)), cv.e
		for k := range v {
			dims[k] = cv.dimAt(k)
		}
	} else {
		if !c.need(1, "shape") {
			return
		}
		dims, raw, _ = c.shapeArg(1)
		if dims == nil {
			c.set(0, unknownType(dt))
			return
		}
		if raw == nil {
			c.set(0, tensorType(dt, dims))
			return
		}
	}
	c.reshapeTo(dt, dims, raw, c.opset >= 14 && c.attrInt("allowzero", 0) != 0)
}

// reshapeTo types output 0 as input 0 (of element type dt) reshaped to
// the shape an input gives (dims and raw as shapeArg reads them): one -1
// takes the remaining size, and a 0 copies the input's size unless
// allowZero, which makes it a size of 0 (as TensorFlow's Reshape always
// does). It folds the value.
func (c *nctx) reshapeTo(dt ir.DType, dims []ir.Dim, raw []elem, allowZero bool) {
	x, xok := c.shape(0)
	out := make([]ir.Dim, len(dims))
	infer := -1
	for k, e := range raw {
		switch {
		case e.sym != "":
			out[k] = dims[k]
		case e.i == -1:
			if infer >= 0 {
				c.errf("shape %s has more than one -1", rawString(raw))
				return
			}
			infer = k
			out[k] = ir.UnknownDim
		case e.i < -1:
			c.errf("shape %s has a negative size %d", rawString(raw), e.i)
			return
		case e.i == 0 && !allowZero:
			if !xok {
				out[k] = ir.UnknownDim
				continue
			}
			if k >= len(x) {
				c.errf("shape %s copies dimension %d, but the input has rank %d", rawString(raw), k, len(x))
				return
			}
			out[k] = x[k]
		default:
			out[k] = ir.D(e.i)
		}
	}
	if allowZero && infer >= 0 {
		for _, e := range raw {
			if e.sym == "" && e.i == 0 {
				c.errf("shape %s has both 0 and -1 (with allowzero): the -1 cannot be inferred", rawString(raw))
				return
			}
		}
	}
	if xok {
		if infer >= 0 {
			out[infer] = inferredDim(x, out, infer)
			if out[infer].Size == -2 {
				c.errf("cannot reshape %s into %s: the sizes do not divide", shapeString(x), rawString(raw))
				return
			}
		} else {
			pi, po := dimProd(x), dimProd(out)
			if pi.Known() && po.Known() && pi.Size != po.Size {
				c.errf("cannot reshape %s (%d elements) into %s (%d elements)", shapeString(x), pi.Size, shapeString(out), po.Size)
				return
			}
		}
	}
	c.set(0, tensorType(dt, out))
	c.foldReshape(out)
}

// foldReshape gives output 0 the value of input 0, when it is known, under
// the shape out (a Reshape, Squeeze, ExpandDims: the same elements).
func (c *nctx) foldReshape(out []ir.Dim) {
	cv := c.cst(0)
	if cv == nil {
		return
	}
	if sizes, ok := tensorType(cv.dt, out).Dims(); ok {
		c.setConst(0, reshaped(cv, sizes))
	}
}

func rawString(raw []elem) string {
	s := "["
	for k, e := range raw {
		if k > 0 {
			s += ","
		}
		switch {
		case e.sym == unkSym:
			s += "?"
		case e.sym != "":
			s += e.sym
		default:
			s += strconv.FormatInt(e.i, 10)
		}
	}
	return s + "]"
}

// inferredDim is the size at position k of out (a -1) such that out has
// as many elements as in; symbols cancel. Size -2 marks a mismatch.
func inferredDim(in, out []ir.Dim, k int) ir.Dim {
	inK, outK := int64(1), int64(1)
	var inSyms, outSyms []string
	for _, d := range in {
		switch {
		case d.Known():
			inK *= d.Size
		case d.Sym != "":
			inSyms = append(inSyms, d.Sym)
		default:
			return ir.UnknownDim
		}
	}
	for j, d := range out {
		if j == k {
			continue
		}
		switch {
		case d.Known():
			outK *= d.Size
		case d.Sym != "":
			outSyms = append(outSyms, d.Sym)
		default:
			return ir.UnknownDim
		}
	}
	// Cancel common symbols.
	for _, s := range outSyms {
		found := false
		for i, t := range inSyms {
			if t == s {
				inSyms = append(inSyms[:i], inSyms[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			return ir.UnknownDim
		}
	}
	if inK == 0 || outK == 0 {
		if inK == 0 && len(inSyms) == 0 && outK != 0 {
			return ir.D(0)
		}
		return ir.UnknownDim
	}
	if inK%outK != 0 {
		if len(inSyms) == 0 {
			return ir.Dim{Size: -2}
		}
		return ir.UnknownDim
	}
	q := inK / outK
	switch {
	case len(inSyms) == 0:
		return ir.D(q)
	case len(inSyms) == 1 && q == 1:
		return ir.SymDim(inSyms[0])
	}
	return ir.UnknownDim
}

// Flatten: [∏ d[:axis], ∏ d[axis:]]; axis in [0, r] (negative from 11).
func inferFlatten(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	ax := c.attrInt("axis", 1)
	if !ok {
		c.set(0, tensorType(dt, unknownDims(2)))
		return
	}
	r := int64(len(x))
	lo := int64(0)
	if c.opset >= 11 {
		lo = -r
	}
	if ax < lo || ax > r {
		c.errf("axis %d is out of range for rank %d", ax, r)
		return
	}
	if ax < 0 {
		ax += r
	}
	out := []ir.Dim{dimProd(x[:ax]), dimProd(x[ax:])}
	c.set(0, tensorType(dt, out))
	if cv := c.cst(0); cv != nil && out[0].Known() && out[1].Known() {
		c.setConst(0, reshaped(cv, []int64{out[0].Size, out[1].Size}))
	}
}

// Transpose: perm defaults to reversing the axes.
func inferTranspose(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	dt := c.dtype(0)
	perm, has := c.attrInts("perm")
	x, ok := c.shape(0)
	if !ok {
		if has {
			c.set(0, tensorType(dt, unknownDims(len(perm))))
		} else {
			c.set(0, unknownType(dt))
		}
		return
	}
	r := len(x)
	if !has {
		perm = make([]int64, r)
		for i := range perm {
			perm[i] = int64(r - 1 - i)
		}
	}
	c.transposeBy(dt, x, perm)
}

// transposeBy types output 0 as input 0 (shape x, element type dt) with
// its axes permuted by perm, and folds it.
func (c *nctx) transposeBy(dt ir.DType, x []ir.Dim, perm []int64) {
	r := len(x)
	if len(perm) != r {
		c.errf("perm %v has %d entries for an input of rank %d", perm, len(perm), r)
		return
	}
	p, ok := c.axes(perm, r, "perm entry")
	if !ok {
		return
	}
	out := make([]ir.Dim, r)
	for i, a := range p {
		out[i] = x[a]
	}
	c.set(0, tensorType(dt, out))
	if cv := c.cstOfRank(0, r); cv != nil {
		sizes := make([]int64, r)
		for i, a := range p {
			sizes[i] = cv.shape[a]
		}
		str := strides(cv.shape)
		c.setConst(0, remap(cv, cv.dt, sizes, func(idx []int64) int64 {
			var j int64
			for i, a := range p {
				j += idx[i] * str[a]
			}
			return j
		}))
	}
}

// Squeeze: axes attribute before opset 13, optional input from 13.
func inferSqueeze(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	dt := c.dtype(0)
	if !c.formCheck(13, []string{"axes"}, 1) {
		return
	}
	axes, present, known := c.intsOrAttr(13, "axes", 1)
	x, ok := c.shape(0)
	if !ok || !known {
		if ok && present && c.listLen(1) >= 0 {
			c.set(0, tensorType(dt, unknownDims(max(len(x)-c.listLen(1), 0))))
			return
		}
		c.set(0, unknownType(dt))
		return
	}
	c.squeeze(dt, x, axes, present, "axis")
}

// squeeze types output 0 as input 0 (shape x, element type dt) without
// the listed axes, each of size 1, or, when none are listed (present
// false), without every axis of size 1 (of unknown rank when a size is not
// known: a symbol may be 1 at run time). It folds the value.
func (c *nctx) squeeze(dt ir.DType, x []ir.Dim, axes []int64, present bool, what string) {
	drop := make([]bool, len(x))
	if !present {
		for i, d := range x {
			if !d.Known() {
				c.set(0, unknownType(dt))
				return
			}
			drop[i] = d.Size == 1
		}
	} else {
		ax, ok := c.axes(axes, len(x), what)
		if !ok {
			return
		}
		for _, a := range ax {
			if conflict(x[a], ir.D(1)) {
				c.errf("cannot squeeze axis %d of size %d", a, x[a].Size)
				return
			}
			drop[a] = true
		}
	}
	var out []ir.Dim
	for i, d := range x {
		if !drop[i] {
			out = append(out, d)
		}
	}
	c.set(0, tensorType(dt, out))
	c.foldReshape(out)
}

// Unsqueeze: axes (of the output) are an attribute before 13, an input
// from 13.
func inferUnsqueeze(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	dt := c.dtype(0)
	if !c.formCheck(13, []string{"axes"}, 1) || c.opset >= 13 && !c.need(1, "axes") {
		return
	}
	axes, present, known := c.intsOrAttr(13, "axes", 1)
	if !present {
		c.errf("missing required attribute axes")
		return
	}
	x, ok := c.shape(0)
	if !ok || !known {
		if ok && c.listLen(1) >= 0 {
			c.set(0, tensorType(dt, unknownDims(len(x)+c.listLen(1))))
			return
		}
		c.set(0, unknownType(dt))
		return
	}
	r := len(x) + len(axes)
	ax, ok := c.axes(axes, r, "axis")
	if !ok {
		return
	}
	ins := make([]bool, r)
	for _, a := range ax {
		ins[a] = true
	}
	out := make([]ir.Dim, r)
	j := 0
	for i := range out {
		if ins[i] {
			out[i] = ir.D(1)
			continue
		}
		out[i] = x[j]
		j++
	}
	c.set(0, tensorType(dt, out))
	c.foldReshape(out)
}

// Expand: bidirectional broadcast of the input and the shape input.
func inferExpand(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "shape") {
		return
	}
	dt := c.dtype(0)
	dims, raw, _ := c.shapeArg(1)
	x, ok := c.shape(0)
	if dims == nil || !ok {
		c.set(0, unknownType(dt))
		return
	}
	for k, e := range raw {
		if e.sym == "" && e.i < 0 {
			c.errf("shape element %d is negative (%d)", k, e.i)
			return
		}
	}
	out, bad, a, b := broadcast(x, dims)
	if bad {
		c.errf("input shape %s does not broadcast to %s (%s vs %s)", shapeString(x), shapeString(dims), a, b)
		return
	}
	c.set(0, tensorType(dt, out))
	if cv := c.cst(0); cv != nil {
		if sizes, ok := tensorType(dt, out).Dims(); ok {
			c.setConst(0, foldElementwise(sizes, cv.dt, []*cval{cv}, func(es []elem) (elem, bool) { return es[0], true }))
		}
	}
}

// Tile: out[i] = in[i] · repeats[i].
func inferTile(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "repeats") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	cv := c.cst(1)
	if cv == nil {
		c.set(0, tensorType(dt, unknownDims(len(x))))
		return
	}
	if len(cv.e) != len(x) {
		c.errf("repeats has %d values for an input of rank %d", len(cv.e), len(x))
		return
	}
	out := make([]ir.Dim, len(x))
	for k := range x {
		v, ok := cv.intAt(k)
		switch {
		case !ok:
			out[k] = ir.UnknownDim
		case v < 0:
			c.errf("repeat %d is negative", v)
			return
		default:
			out[k] = dimMul(x[k], ir.D(v))
		}
	}
	c.set(0, tensorType(dt, out))
	if in := c.cstOfRank(0, len(x)); in != nil {
		if sizes, ok := tensorType(dt, out).Dims(); ok {
			str := strides(in.shape)
			c.setConst(0, remap(in, in.dt, sizes, func(idx []int64) int64 {
				var j int64
				for a, i := range idx {
					j += (i % in.shape[a]) * str[a]
				}
				return j
			}))
		}
	}
}

// Pad: pads (and value, mode) are attributes before opset 11 ("paddings"
// in opset 1); inputs pads, constant_value and axes (18) from 11.
func inferPad(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	dt := c.dtype(0)
	mode := c.attrString("mode", "constant")
	switch mode {
	case "constant", "reflect", "edge":
	case "wrap":
		if c.opset < 19 {
			c.errf("unsupported mode %q before opset 19", mode)
			return
		}
	default:
		c.errf("unsupported mode %q (want constant, reflect, edge or wrap)", mode)
		return
	}
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	r := len(x)
	var pads []int64
	var known bool
	if !c.formCheck(11, []string{"pads", "paddings", "value"}, 1, 2) {
		return
	}
	if c.opset < 11 {
		name := "pads"
		if c.opset < 2 {
			name = "paddings"
		}
		pads, known = c.attrInts(name)
		if !known {
			c.errf("missing required attribute %s", name)
			return
		}
	} else {
		if !c.need(1, "pads") {
			return
		}
		pads, _, known = c.intsOrAttr(11, "", 1)
	}
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if c.opset >= 18 && c.has(3) {
		list, _, ok := c.intsOrAttr(18, "", 3)
		if !ok {
			c.set(0, tensorType(dt, unknownDims(r)))
			return
		}
		if axes, ok = c.axes(list, r, "axis"); !ok {
			return
		}
	}
	if !known {
		out := cloneDims(x)
		for _, a := range axes {
			out[a] = ir.UnknownDim
		}
		c.set(0, tensorType(dt, out))
		return
	}
	n := len(axes)
	if len(pads) != 2*n {
		c.errf("pads has %d values, want %d (begin and end for each of %d axes)", len(pads), 2*n, n)
		return
	}
	out := cloneDims(x)
	for k, a := range axes {
		d := dimAddConst(x[a], pads[k]+pads[k+n])
		if d.Known() && d.Size < 0 {
			c.errf("axis %d of size %d with pads %d and %d would have a negative size", a, x[a].Size, pads[k], pads[k+n])
			return
		}
		out[a] = d
	}
	c.set(0, tensorType(dt, out))
}

// Resize: scales only (opset 10); roi, scales, sizes (11+; roi and scales
// optional from 13); axes and keep_aspect_ratio_policy from 18. Sizes are
// floor(in · scale) otherwise.
func inferResize(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	r := len(x)
	mode := c.attrString("mode", "nearest")
	switch mode {
	case "nearest", "linear":
	case "cubic":
		if c.opset < 11 {
			c.errf("unsupported mode %q before opset 11", mode)
			return
		}
	default:
		c.errf("unsupported mode %q (want nearest, linear or cubic)", mode)
		return
	}
	scalesIdx, sizesIdx := 2, 3
	if c.opset < 11 {
		scalesIdx, sizesIdx = 1, -1
		if !c.need(1, "scales") {
			return
		}
	}
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if list, ok := c.attrInts("axes"); ok && c.opset >= 18 {
		if axes, ok = c.axes(list, r, "axis"); !ok {
			return
		}
	}
	out := cloneDims(x)
	policy := "stretch"
	if c.opset >= 18 {
		policy = c.attrString("keep_aspect_ratio_policy", "stretch")
		if policy != "stretch" && policy != "not_larger" && policy != "not_smaller" {
			c.errf("unsupported keep_aspect_ratio_policy %q", policy)
			return
		}
	}
	useSizes := sizesIdx >= 0 && c.has(sizesIdx) && c.listLen(sizesIdx) != 0
	useScales := c.has(scalesIdx) && c.listLen(scalesIdx) != 0
	switch {
	case useSizes && useScales:
		c.errf("both scales and sizes are given; give exactly one")
		return
	case useSizes:
		dims, raw, _ := c.shapeArg(sizesIdx)
		if raw == nil {
			for _, a := range axes {
				out[a] = ir.UnknownDim
			}
			break
		}
		if len(dims) != len(axes) {
			c.errf("sizes has %d values for %d axes", len(dims), len(axes))
			return
		}
		if policy != "stretch" {
			scale := 0.0
			for k, a := range axes {
				if !x[a].Known() || !dims[k].Known() || x[a].Size == 0 {
					for _, a := range axes {
						out[a] = ir.UnknownDim
					}
					scale = -1
					break
				}
				s := float64(dims[k].Size) / float64(x[a].Size)
				if k == 0 || (policy == "not_larger" && s < scale) || (policy == "not_smaller" && s > scale) {
					scale = s
				}
			}
			if scale >= 0 {
				for _, a := range axes {
					out[a] = ir.D(int64(math.Floor(scale*float64(x[a].Size) + 0.5)))
				}
			}
			break
		}
		for k, a := range axes {
			out[a] = dims[k]
		}
	case useScales:
		cv := c.cst(scalesIdx)
		if cv == nil {
			for _, a := range axes {
				out[a] = ir.UnknownDim
			}
			break
		}
		if len(cv.e) != len(axes) {
			c.errf("scales has %d values for %d axes", len(cv.e), len(axes))
			return
		}
		// The roi does not change the size: ONNX Runtime and onnx's own
		// inference compute floor(in · scale) with tf_crop_and_resize too.
		for k, a := range axes {
			e := cv.e[k]
			if e.sym != "" {
				out[a] = ir.UnknownDim
				continue
			}
			s := e.f
			if !isFloatType(cv.dt) {
				s = float64(e.i)
			}
			if s <= 0 {
				c.errf("scale %g on axis %d is not positive", s, a)
				return
			}
			out[a] = scaleDim(x[a], s)
		}
	default:
		c.errf("neither scales nor sizes is given")
		return
	}
	c.set(0, tensorType(dt, out))
}

// scaleDim is floor(d · s) as runtimes compute it, in float32.
func scaleDim(d ir.Dim, s float64) ir.Dim {
	if s == 1 {
		return d
	}
	if !d.Known() {
		return ir.UnknownDim
	}
	return ir.D(int64(math.Floor(float64(float32(d.Size) * float32(s)))))
}

// Upsample: scales attribute (opset 7, 8), input (9).
func inferUpsample(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	dt := c.dtype(0)
	mode := c.attrString("mode", "nearest")
	if mode != "nearest" && mode != "linear" && mode != "bilinear" {
		c.errf("unsupported mode %q (want nearest or linear)", mode)
		return
	}
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	var scales []float64
	if !c.formCheck(9, []string{"scales"}, 1) {
		return
	}
	if c.opset < 9 {
		fs, ok := c.attrFloats("scales")
		if !ok {
			if c.opset < 7 {
				c.unsupportedf("Upsample-1 (height_scale, width_scale)")
				return
			}
			c.errf("missing required attribute scales")
			return
		}
		for _, f := range fs {
			scales = append(scales, float64(f))
		}
	} else {
		if !c.need(1, "scales") {
			return
		}
		cv := c.cst(1)
		if cv == nil {
			c.set(0, tensorType(dt, unknownDims(len(x))))
			return
		}
		fs, ok := cv.floats()
		if !ok {
			c.set(0, tensorType(dt, unknownDims(len(x))))
			return
		}
		scales = fs
	}
	if len(scales) != len(x) {
		c.errf("scales has %d values for an input of rank %d", len(scales), len(x))
		return
	}
	out := make([]ir.Dim, len(x))
	for i, s := range scales {
		if s < 1 && c.opset >= 9 || s <= 0 {
			c.errf("scale %g is less than 1", s)
			return
		}
		out[i] = scaleDim(x[i], s)
	}
	c.set(0, tensorType(dt, out))
}

// Gather along axis: data[:axis] + indices + data[axis+1:].
func inferGather(c *nctx) {
	if !c.need(0, "data") || !c.need(1, "indices") {
		return
	}
	dt := c.dtype(0)
	if it := c.dtype(1); it.Valid() && it != ir.Int32 && it != ir.Int64 {
		c.errf("indices have element type %s, want i32 or i64", it)
		return
	}
	x, xok := c.shape(0)
	ind, iok := c.shape(1)
	if !xok || !iok {
		c.set(0, unknownType(dt))
		return
	}
	if len(x) == 0 {
		c.errf("data must have rank at least 1")
		return
	}
	a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis")
	if !ok {
		return
	}
	out := append(append(cloneDims(x[:a]), ind...), x[a+1:]...)
	c.set(0, tensorType(dt, out))
	data, idx := c.cstOfRank(0, len(x)), c.cst(1)
	if idx == nil {
		return
	}
	is, ok := idx.ints()
	if !ok {
		return
	}
	if x[a].Known() {
		for _, v := range is {
			if v < -x[a].Size || v >= x[a].Size {
				c.errf("index %d is out of range for axis %d of size %d", v, a, x[a].Size)
				return
			}
		}
	}
	if data == nil {
		return
	}
	c.setConst(0, gatherConst(data, is, idx.shape, a))
}

// gatherConst takes the elements of data at indices is (of shape
// idxShape; negative ones count from the end) along axis a.
func gatherConst(data *cval, is []int64, idxShape []int64, a int) *cval {
	n := data.shape[a]
	str := strides(data.shape)
	sizes := append(append(append([]int64{}, data.shape[:a]...), idxShape...), data.shape[a+1:]...)
	ri := len(idxShape)
	istr := strides(idxShape)
	return remap(data, data.dt, sizes, func(o []int64) int64 {
		var j int64
		for k := range a {
			j += o[k] * str[k]
		}
		var ii int64
		for k := range ri {
			ii += o[a+k] * istr[k]
		}
		v := is[ii]
		if v < 0 {
			v += n
		}
		if v < 0 || v >= n {
			return -1
		}
		j += v * str[a]
		for k := a + 1; k < len(data.shape); k++ {
			j += o[k-1+ri] * str[k]
		}
		return j
	})
}

// GatherElements: the shape of indices.
func inferGatherElements(c *nctx) {
	if !c.need(0, "data") || !c.need(1, "indices") {
		return
	}
	dt := c.dtype(0)
	x, xok := c.shape(0)
	ind, iok := c.shape(1)
	if xok && iok && len(x) != len(ind) {
		c.errf("data has rank %d, indices %d; they must be equal", len(x), len(ind))
		return
	}
	if xok {
		if _, ok := c.axis(c.attrInt("axis", 0), len(x), "axis"); !ok {
			return
		}
	}
	if !iok {
		c.set(0, unknownType(dt))
		return
	}
	c.set(0, tensorType(dt, cloneDims(ind)))
}

// GatherND with batch_dims (opset 12):
// indices[:-1] + data[batch_dims + indices[-1]:].
func inferGatherND(c *nctx) {
	if !c.need(0, "data") || !c.need(1, "indices") {
		return
	}
	dt := c.dtype(0)
	b := int(c.attrInt("batch_dims", 0))
	x, xok := c.shape(0)
	ind, iok := c.shape(1)
	if !xok || !iok {
		c.set(0, unknownType(dt))
		return
	}
	if len(ind) < 1 || len(x) < 1 {
		c.errf("data and indices must have rank at least 1")
		return
	}
	if b < 0 || b >= len(x) || b >= len(ind) {
		c.errf("batch_dims %d must be less than the ranks of data (%d) and indices (%d)", b, len(x), len(ind))
		return
	}
	last := ind[len(ind)-1]
	if !last.Known() {
		c.set(0, unknownType(dt))
		return
	}
	k := int(last.Size)
	if k < 1 || b+k > len(x) {
		c.errf("indices select %d dimensions; data of rank %d with batch_dims %d has only %d", k, len(x), b, len(x)-b)
		return
	}
	for i := range b {
		if conflict(x[i], ind[i]) {
			c.errf("batch dimension %d differs: data %d, indices %d", i, x[i].Size, ind[i].Size)
			return
		}
	}
	out := append(cloneDims(ind[:len(ind)-1]), x[b+k:]...)
	c.set(0, tensorType(dt, out))
}

// ScatterElements, ScatterND, Scatter: the data's type.
func inferScatter(c *nctx) {
	if !c.need(0, "data") || !c.need(1, "indices") || !c.need(2, "updates") || !c.sameDTypes(0, 2) {
		return
	}
	if red := c.attrString("reduction", "none"); red != "none" && red != "add" && red != "mul" && red != "max" && red != "min" {
		c.errf("unsupported reduction %q", red)
		return
	}
	c.set(0, tensorLike(c.typ(0)))
}

// reduceAxes reads the axes of a reduction: an attribute, or an input from
// opset 13 (ReduceSum) or 18 (the others).
func inferReduce(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	dt := c.dtype(0)
	since := int64(18)
	if c.n.Op == "ReduceSum" {
		since = 13
	}
	if !c.formCheck(since, []string{"axes"}, 1) {
		return
	}
	keep := c.attrInt("keepdims", 1) != 0
	noop := c.opset >= since && c.attrInt("noop_with_empty_axes", 0) != 0
	axes, present, known := c.intsOrAttr(since, "axes", 1)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	if !known {
		if keep {
			c.set(0, tensorType(dt, unknownDims(len(x))))
		} else if n := c.listLen(1); n >= 0 {
			c.set(0, tensorType(dt, unknownDims(max(len(x)-n, 0))))
		} else {
			c.set(0, unknownType(dt))
		}
		return
	}
	if present && len(axes) == 0 {
		present = false
	}
	if !present && noop {
		c.set(0, tensorType(dt, cloneDims(x)))
		if cv := c.cst(0); cv != nil {
			c.setConst(0, cv)
		}
		return
	}
	red := make([]bool, len(x))
	if !present {
		for i := range red {
			red[i] = true
		}
	} else {
		ax, ok := c.axes(axes, max(len(x), 1), "axis")
		if !ok {
			return
		}
		for _, a := range ax {
			if a < len(red) {
				red[a] = true
			}
		}
	}
	var out []ir.Dim
	for i, d := range x {
		switch {
		case !red[i]:
			out = append(out, d)
		case keep:
			out = append(out, ir.D(1))
		}
	}
	c.set(0, tensorType(dt, out))
	var op string
	switch c.n.Op {
	case "ReduceProd":
		op = "Mul"
	case "ReduceSum":
		op = "Add"
	case "ReduceMax":
		op = "Max"
	case "ReduceMin":
		op = "Min"
	default:
		return
	}
	c.setConst(0, reduceConst(c.cstOfRank(0, len(x)), red, out, op))
}

// reduceConst folds the reduction op (Add, Mul, Max, Min) of cv over the
// axes red marks, to the output shape out; nil when cv is nil or the
// result is not known.
func reduceConst(cv *cval, red []bool, out []ir.Dim, op string) *cval {
	if cv == nil {
		return nil
	}
	x := cv.shape
	sizes, ok := tensorType(cv.dt, out).Dims()
	if !ok {
		return nil
	}
	res := newCval(cv.dt, sizes)
	if res == nil {
		return nil
	}
	// Accumulate every input element into its output position.
	outStr := make([]int64, len(x)) // stride in res of each input axis (0 if reduced)
	acc := int64(1)
	for i := len(x) - 1; i >= 0; i-- {
		if red[i] {
			continue
		}
		outStr[i] = acc
		acc *= cv.shape[i]
	}
	set := make([]bool, len(res.e))
	idx := make([]int64, len(x))
	for k := range cv.e {
		var j int64
		for i := range idx {
			j += idx[i] * outStr[i]
		}
		if !set[j] {
			res.e[j], set[j] = cv.e[k], true
		} else {
			r, ok := binElem(op, cv.dt, false, res.e[j], cv.e[k])
			if !ok {
				return nil
			}
			res.e[j] = r
		}
		for a := len(idx) - 1; a >= 0; a-- {
			idx[a]++
			if idx[a] < cv.shape[a] {
				break
			}
			idx[a] = 0
		}
	}
	for j, s := range set {
		if !s { // reduction over an empty axis
			switch op {
			case "Mul":
				res.e[j] = elem{i: 1, f: 1}
			case "Add":
				res.e[j] = elem{}
			default:
				return nil
			}
		}
	}
	return res
}

// ArgMax, ArgMin: int64, the axis reduced (kept as 1 by default).
func inferArgMax(c *nctx) {
	if !c.need(0, "data") {
		return
	}
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(ir.Int64))
		return
	}
	a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis")
	if !ok {
		return
	}
	out := cloneDims(x)
	if c.attrInt("keepdims", 1) != 0 {
		out[a] = ir.D(1)
	} else {
		out = append(out[:a], out[a+1:]...)
	}
	c.set(0, tensorType(ir.Int64, out))
}

// TopK: k is an attribute before opset 10, an input from 10.
func inferTopK(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		c.set(1, unknownType(ir.Int64))
		return
	}
	a, ok := c.axis(c.attrInt("axis", -1), len(x), "axis")
	if !ok {
		return
	}
	k := ir.UnknownDim
	if !c.formCheck(10, []string{"k"}, 1) {
		return
	}
	if c.opset < 10 {
		if !c.hasAttr("k") {
			c.errf("missing required attribute k")
			return
		}
		k = ir.D(c.attrInt("k", 0))
	} else {
		if !c.need(1, "K") {
			return
		}
		if cv := c.cst(1); cv != nil {
			if len(cv.e) != 1 {
				c.errf("K must have one element, has %d", len(cv.e))
				return
			}
			k = cv.dimAt(0)
			if v, ok := cv.intAt(0); ok && v < 0 {
				c.errf("K is negative (%d)", v)
				return
			}
		}
	}
	if k.Known() && x[a].Known() && k.Size > x[a].Size {
		c.errf("K %d is larger than axis %d of size %d", k.Size, a, x[a].Size)
		return
	}
	out := cloneDims(x)
	out[a] = k
	c.set(0, tensorType(dt, out))
	c.set(1, tensorType(ir.Int64, cloneDims(out)))
}

// OneHot: indices with a depth axis inserted at axis; the values' type.
func inferOneHot(c *nctx) {
	if !c.need(0, "indices") || !c.need(1, "depth") || !c.need(2, "values") {
		return
	}
	dt := c.dtype(2)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	a, ok := c.axis(c.attrInt("axis", -1), len(x)+1, "axis")
	if !ok {
		return
	}
	depth := ir.UnknownDim
	if cv := c.cst(1); cv != nil {
		if len(cv.e) != 1 {
			c.errf("depth must have one element, has %d", len(cv.e))
			return
		}
		if e := cv.e[0]; e.sym == "" {
			v := e.i
			if isFloatType(cv.dt) {
				v = int64(e.f)
			}
			if v < 1 {
				c.errf("depth %d must be positive", v)
				return
			}
			depth = ir.D(v)
		} else {
			depth = cv.dimAt(0)
		}
	}
	out := append(append(cloneDims(x[:a]), depth), x[a:]...)
	c.set(0, tensorType(dt, out))
}

// EyeLike: a 2-D input's shape, dtype attribute or the input's type.
func inferEyeLike(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.attrDType("dtype", c.dtype(0))
	x, ok := c.shape(0)
	if ok && len(x) != 2 {
		c.errf("input has rank %d, want 2", len(x))
		return
	}
	c.set(0, withDType(c.typ(0), dt))
}

// Det: [..., M, M] → [...].
func inferDet(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	if len(x) < 2 || conflict(x[len(x)-1], x[len(x)-2]) {
		c.errf("input %s is not a (batch of) square matrices", shapeString(x))
		return
	}
	c.set(0, tensorType(dt, cloneDims(x[:len(x)-2])))
}

// CenterCropPad: the shape input's values on the listed axes.
func inferCenterCropPad(c *nctx) {
	if !c.need(0, "input_data") || !c.need(1, "shape") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	axes := make([]int, len(x))
	for i := range axes {
		axes[i] = i
	}
	if list, ok := c.attrInts("axes"); ok {
		if axes, ok = c.axes(list, len(x), "axis"); !ok {
			return
		}
	}
	dims, _, _ := c.shapeArg(1)
	out := cloneDims(x)
	if dims == nil {
		for _, a := range axes {
			out[a] = ir.UnknownDim
		}
	} else {
		if len(dims) != len(axes) {
			c.errf("shape has %d values for %d axes", len(dims), len(axes))
			return
		}
		for k, a := range axes {
			out[a] = dims[k]
		}
	}
	c.set(0, tensorType(dt, out))
}

// NonZero: int64 [rank, n] with n data-dependent (known for a constant).
func inferNonZero(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	x, ok := c.shape(0)
	if !ok {
		c.set(0, tensorType(ir.Int64, []ir.Dim{ir.UnknownDim, c.dataDim("1")}))
		return
	}
	r := int64(len(x))
	if r == 0 {
		r = 1 // a scalar counts as [1]
	}
	if cv := c.cst(0); cv != nil && cv.full() {
		var idx []int64
		for k, e := range cv.e {
			if truthy(cv.dt, e) {
				idx = append(idx, int64(k))
			}
		}
		n := int64(len(idx))
		c.set(0, ir.TensorOf(ir.Int64, r, n))
		if out := newCval(ir.Int64, []int64{r, n}); out != nil {
			str := strides(cv.shape)
			for j, flat := range idx {
				for a := range cv.shape {
					out.e[int64(a)*n+int64(j)].i = (flat / str[a]) % cv.shape[a]
				}
			}
			c.setConst(0, out)
		}
		return
	}
	c.set(0, tensorType(ir.Int64, []ir.Dim{ir.D(r), c.dataDim("1")}))
}

// Compress: the selected slices along axis, or of the flattened input;
// the count is data-dependent unless the condition is known.
func inferCompress(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "condition") {
		return
	}
	dt := c.dtype(0)
	n := c.dataDim("n")
	x, xok := c.shape(0)
	if cv := c.cst(1); cv != nil && cv.full() {
		limit := int64(-1)
		if xok {
			if c.hasAttr("axis") {
				if a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis"); ok && x[a].Known() {
					limit = x[a].Size
				}
			} else if p := dimProd(x); p.Known() {
				limit = p.Size
			}
		}
		cnt := int64(0)
		for k, e := range cv.e {
			if limit >= 0 && int64(k) >= limit {
				break
			}
			if truthy(cv.dt, e) {
				cnt++
			}
		}
		n = ir.D(cnt)
	}
	if !c.hasAttr("axis") {
		c.set(0, tensorType(dt, []ir.Dim{n}))
		return
	}
	if !xok {
		c.set(0, unknownType(dt))
		return
	}
	a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis")
	if !ok {
		return
	}
	out := cloneDims(x)
	out[a] = n
	c.set(0, tensorType(dt, out))
}

// Unique: Y, indices, inverse_indices, counts.
func inferUnique(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	dt := c.dtype(0)
	n := c.dataDim("n")
	x, ok := c.shape(0)
	if !c.hasAttr("axis") {
		c.set(0, tensorType(dt, []ir.Dim{n}))
		inv := ir.UnknownDim
		if ok {
			inv = dimProd(x)
		}
		c.set(2, tensorType(ir.Int64, []ir.Dim{inv}))
	} else {
		if !ok {
			c.set(0, unknownType(dt))
			c.set(1, tensorType(ir.Int64, []ir.Dim{n}))
			c.set(2, tensorType(ir.Int64, []ir.Dim{ir.UnknownDim}))
			c.set(3, tensorType(ir.Int64, []ir.Dim{n}))
			return
		}
		a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis")
		if !ok {
			return
		}
		out := cloneDims(x)
		out[a] = n
		c.set(0, tensorType(dt, out))
		c.set(2, tensorType(ir.Int64, []ir.Dim{x[a]}))
	}
	c.set(1, tensorType(ir.Int64, []ir.Dim{n}))
	c.set(3, tensorType(ir.Int64, []ir.Dim{n}))
}

// NonMaxSuppression: int64 [n, 3], n data-dependent.
func inferNMS(c *nctx) {
	if !c.need(0, "boxes") || !c.need(1, "scores") {
		return
	}
	c.set(0, tensorType(ir.Int64, []ir.Dim{c.dataDim("n"), ir.D(3)}))
}
