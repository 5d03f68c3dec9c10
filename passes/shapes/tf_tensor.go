package shapes

import (
	"github.com/remat-compile/remat/ir"
)

// dimVecOf is the value of Shape with out_type dt: dims as a vector.
func dimVecOf(dims []ir.Dim, dt ir.DType) *cval {
	cv := dimVec(dims)
	cv.dt = dt
	return cv
}

// tfIntType reads an integer type attribute that defaults to def (Shape's
// out_type, ArgMax's output_type), which must be int32 or int64.
func (c *nctx) tfIntType(name string, def ir.DType) (ir.DType, bool) {
	dt := c.tfDTypeOr(name, def)
	if dt != ir.Int32 && dt != ir.Int64 {
		c.errf("attribute %s is %s, want int32 or int64", name, dt)
		return dt, false
	}
	return dt, true
}

// tfScalarArg reads input i, a scalar or one-element integer tensor (an
// axis, a count). known is false when its value is not known.
func (c *nctx) tfScalarArg(i int, what string) (v int64, known, ok bool) {
	if s, sok := c.shape(i); sok && len(s) > 1 || sok && len(s) == 1 && conflict(s[0], ir.D(1)) {
		c.errf("%s (input %d) must be a scalar, has shape %s", what, i, shapeString(s))
		return 0, false, false
	}
	vals, known := c.constInts(i)
	if !known {
		return 0, false, true
	}
	if len(vals) != 1 {
		c.errf("%s (input %d) must be a scalar, has %d elements", what, i, len(vals))
		return 0, false, false
	}
	return vals[0], true, true
}

// Shape: the input's shape as a vector of out_type (int32 by default).
func tfShape(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt, ok := c.tfIntType("out_type", ir.Int32)
	if !ok {
		return
	}
	x, xok := c.shape(0)
	if !xok {
		c.set(0, tensorType(dt, []ir.Dim{ir.UnknownDim}))
		return
	}
	c.setConst(0, dimVecOf(x, dt))
}

// ShapeN: Shape of each input.
func tfShapeN(c *nctx) {
	dt, ok := c.tfIntType("out_type", ir.Int32)
	if !ok {
		return
	}
	if len(c.n.Inputs) != len(c.n.Outputs) {
		c.errf("has %d inputs and %d outputs; ShapeN gives one shape per input", len(c.n.Inputs), len(c.n.Outputs))
		return
	}
	for i := range c.n.Inputs {
		if !c.need(i, "input") {
			return
		}
		if x, ok := c.shape(i); ok {
			c.setConst(i, dimVecOf(x, dt))
		} else {
			c.set(i, tensorType(dt, []ir.Dim{ir.UnknownDim}))
		}
	}
}

// Size: the number of elements, a scalar of out_type.
func tfSize(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt, ok := c.tfIntType("out_type", ir.Int32)
	if !ok {
		return
	}
	c.set(0, tensorType(dt, nil))
	x, xok := c.shape(0)
	if !xok {
		return
	}
	p := dimProd(x)
	if p.Known() || p.Sym != "" {
		cv := dimVecOf([]ir.Dim{p}, dt)
		cv.shape = []int64{}
		c.setConst(0, cv)
	}
}

// Rank: an int32 scalar.
func tfRank(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	c.set(0, tensorType(ir.Int32, nil))
	if x, ok := c.shape(0); ok {
		c.setConst(0, &cval{dt: ir.Int32, shape: []int64{}, e: []elem{{i: int64(len(x))}}})
	}
}

// Reshape (tensor, shape: a vector): one -1 takes the remaining size;
// unlike ONNX's (without allowzero), a 0 is a size of 0.
func tfReshape(c *nctx) {
	if !c.need(0, "tensor") || !c.need(1, "shape") {
		return
	}
	dt := c.inDType(0, "T")
	if s, ok := c.shape(1); ok && len(s) != 1 {
		c.errf("shape must be a vector, has shape %s", shapeString(s))
		return
	}
	dims, raw, _ := c.shapeArg(1)
	switch {
	case dims == nil:
		c.set(0, unknownType(dt))
		return
	case raw == nil:
		c.set(0, tensorType(dt, dims))
		return
	}
	c.reshapeTo(dt, dims, raw, true)
}

// Squeeze: squeeze_dims (the axes to drop, each of size 1), or every axis
// of size 1 when empty.
func tfSqueeze(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.inDType(0, "T")
	axes, _ := c.attrInts("squeeze_dims")
	if len(axes) == 0 {
		axes, _ = c.attrInts("axis") // TensorFlow.js's name
	}
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	c.squeeze(dt, x, axes, len(axes) > 0, "squeeze_dims entry")
}

// ExpandDims (input, dim): a 1 inserted at dim, in [-rank-1, rank].
func tfExpandDims(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "dim") {
		return
	}
	dt := c.inDType(0, "T")
	d, known, ok := c.tfScalarArg(1, "dim")
	if !ok {
		return
	}
	x, xok := c.shape(0)
	switch {
	case !xok:
		c.set(0, unknownType(dt))
		return
	case !known:
		c.set(0, tensorType(dt, unknownDims(len(x)+1)))
		return
	}
	a, ok := c.axis(d, len(x)+1, "dim")
	if !ok {
		return
	}
	out := append(append(cloneDims(x[:a]), ir.D(1)), x[a:]...)
	c.set(0, tensorType(dt, out))
	c.foldReshape(out)
}

// Transpose (x, perm).
func tfTranspose(c *nctx) {
	if !c.need(0, "x") || !c.need(1, "perm") {
		return
	}
	dt := c.inDType(0, "T")
	x, xok := c.shape(0)
	perm, pok := c.constInts(1)
	switch {
	case !pok && xok:
		c.set(0, tensorType(dt, unknownDims(len(x))))
	case !pok:
		if n := c.listLen(1); n >= 0 {
			c.set(0, tensorType(dt, unknownDims(n)))
		} else {
			c.set(0, unknownType(dt))
		}
	case !xok:
		c.set(0, tensorType(dt, unknownDims(len(perm))))
	default:
		c.transposeBy(dt, x, perm)
	}
}

// ConcatV2 (values…, axis) and Concat (axis, values…).
func tfConcat(c *nctx) {
	nv := len(c.n.Inputs) - 1
	ai, first := nv, 0
	if c.n.Op == "Concat" {
		ai, first = 0, 1
	}
	idx := make([]int, nv)
	for k := range idx {
		idx[k] = first + k
		if !c.need(idx[k], "values") {
			return
		}
	}
	if !c.need(ai, "axis") {
		return
	}
	dt, ok := c.tfSameType(idx...)
	if !ok {
		return
	}
	ax, known, ok := c.tfScalarArg(ai, "axis")
	if !ok {
		return
	}
	if !known {
		r := -1
		for _, i := range idx {
			if s, ok := c.shape(i); ok {
				r = len(s)
			}
		}
		if r >= 0 {
			c.set(0, tensorType(dt, unknownDims(r)))
		} else {
			c.set(0, unknownType(dt))
		}
		return
	}
	c.concatAt(idx, ax, dt)
}

// Pack (values…; axis): N tensors of one shape stacked along a new axis
// in [-rank-1, rank].
func tfPack(c *nctx) {
	n := len(c.n.Inputs)
	dt, x, ranked, ok := c.tfEqualShapes()
	if !ok || !ranked {
		return
	}
	a, ok := c.axis(c.attrInt("axis", 0), len(x)+1, "axis")
	if !ok {
		return
	}
	out := append(append(cloneDims(x[:a]), ir.D(int64(n))), x[a:]...)
	c.set(0, tensorType(dt, out))
	// Fold: each value with a 1 inserted at the axis, concatenated.
	cvs := make([]*cval, n)
	for k := range cvs {
		cv := castCval(c.cst(k), dt)
		if cv == nil || cv.rank() != len(x) {
			return
		}
		sizes := append(append(append([]int64{}, cv.shape[:a]...), 1), cv.shape[a:]...)
		if cvs[k] = reshaped(cv, sizes); cvs[k] == nil {
			return
		}
	}
	c.setConst(0, concatConst(dt, cvs, a))
}

// Unpack (value; num, axis): num outputs, each value without the axis.
func tfUnpack(c *nctx) {
	if !c.need(0, "value") {
		return
	}
	dt := c.inDType(0, "T")
	num := c.attrInt("num", int64(c.numOut()))
	if num != int64(c.numOut()) {
		c.errf("num is %d, but the node has %d outputs", num, c.numOut())
		return
	}
	x, ok := c.shape(0)
	if !ok {
		c.setAll(unknownType(dt))
		return
	}
	a, ok := c.axis(c.attrInt("axis", 0), len(x), "axis")
	if !ok {
		return
	}
	if conflict(x[a], ir.D(num)) {
		c.errf("axis %d has size %d, but num is %d", a, x[a].Size, num)
		return
	}
	out := append(cloneDims(x[:a]), x[a+1:]...)
	c.setAll(tensorType(dt, out))
	cv := c.cstOfRank(0, len(x))
	if cv == nil || cv.shape[a] != num {
		return
	}
	sizes, _ := tensorType(dt, out).Dims()
	for k := range num {
		if s := sliceConst(cv, []int{a}, []int64{k}, []int64{1}, []int64{1}); s != nil {
			c.setConst(int(k), reshaped(s, sizes))
		}
	}
}

// Split (axis, value; num_split): equal parts. SplitV (value, size_splits,
// axis): the sizes listed, one of them -1 for the rest.
func tfSplit(c *nctx) {
	vi, ai := 1, 0
	if c.n.Op == "SplitV" {
		vi, ai = 0, 2
		if !c.need(1, "size_splits") {
			return
		}
	}
	if !c.need(vi, "value") || !c.need(ai, "axis") {
		return
	}
	dt := c.inDType(vi, "T")
	nout := c.numOut()
	if ns := c.attrInt("num_split", int64(nout)); ns != int64(nout) || nout < 1 {
		c.errf("num_split is %d, but the node has %d outputs", ns, nout)
		return
	}
	x, xok := c.shape(vi)
	ax, known, ok := c.tfScalarArg(ai, "axis")
	if !ok {
		return
	}
	if !xok || !known {
		if xok {
			c.setAll(tensorType(dt, unknownDims(len(x))))
		} else {
			c.setAll(unknownType(dt))
		}
		return
	}
	a, ok := c.axis(ax, len(x), "axis")
	if !ok {
		return
	}
	sizes := make([]ir.Dim, nout)
	if c.n.Op == "Split" {
		d, ok := dimDivExact(x[a], int64(nout))
		if !ok {
			c.errf("axis %d of size %d does not split into %d equal parts", a, x[a].Size, nout)
			return
		}
		for i := range sizes {
			sizes[i] = d
		}
	} else {
		ss, known := c.constInts(1)
		switch {
		case !known:
			for i := range sizes {
				sizes[i] = ir.UnknownDim
			}
		case len(ss) != nout:
			c.errf("size_splits has %d entries for %d outputs", len(ss), nout)
			return
		default:
			rest, sum := -1, int64(0)
			for i, s := range ss {
				switch {
				case s == -1 && rest < 0:
					rest = i
				case s < 0:
					c.errf("size_splits %v: only one -1 and no other negative size", ss)
					return
				default:
					sum += s
					sizes[i] = ir.D(s)
				}
			}
			if rest >= 0 {
				sizes[rest] = dimAddConst(x[a], -sum)
			} else if x[a].Known() && sum != x[a].Size {
				c.errf("size_splits %v add up to %d, but axis %d has size %d", ss, sum, a, x[a].Size)
				return
			}
			if d := sizes[max(rest, 0)]; d.Known() && d.Size < 0 {
				c.errf("size_splits %v exceed axis %d of size %d", ss, a, x[a].Size)
				return
			}
		}
	}
	c.splitOutputs(vi, dt, x, a, sizes)
}

// ReverseV2 (tensor, axis: the axes to reverse) and Reverse (tensor, dims:
// a bool per axis): the tensor's type.
func tfReverse(c *nctx) {
	if !c.need(0, "tensor") || !c.need(1, "axis") {
		return
	}
	c.set(0, tensorLike(c.typ(0)))
	x, ok := c.shape(0)
	if !ok {
		return
	}
	rev := make([]bool, len(x))
	list, known := c.constInts(1)
	if !known {
		return
	}
	if c.n.Op == "Reverse" {
		if len(list) != len(x) {
			c.errf("dims has %d entries for a tensor of rank %d", len(list), len(x))
			return
		}
		for a, v := range list {
			rev[a] = v != 0
		}
	} else {
		ax, ok := c.axes(list, len(x), "axis")
		if !ok {
			return
		}
		for _, a := range ax {
			rev[a] = true
		}
	}
	cv := c.cstOfRank(0, len(x))
	if cv == nil {
		return
	}
	str := strides(cv.shape)
	c.setConst(0, remap(cv, cv.dt, cv.shape, func(idx []int64) int64 {
		var j int64
		for a, i := range idx {
			if rev[a] {
				i = cv.shape[a] - 1 - i
			}
			j += i * str[a]
		}
		return j
	}))
}

// Slice (input, begin, size): size -1 takes the rest of an axis.
func tfSlice(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "begin") || !c.need(2, "size") {
		return
	}
	dt := c.inDType(0, "T")
	x, xok := c.shape(0)
	begin, bok := c.constInts(1)
	size, sok := c.constInts(2)
	if !xok {
		if n := c.listLen(2); n >= 0 {
			c.set(0, tensorType(dt, unknownDims(n)))
		} else {
			c.set(0, unknownType(dt))
		}
		return
	}
	if bok && len(begin) != len(x) || sok && len(size) != len(x) {
		c.errf("begin %v and size %v must have %d entries (the input's rank)", begin, size, len(x))
		return
	}
	out := unknownDims(len(x))
	for k := range x {
		if !sok {
			continue
		}
		switch {
		case size[k] >= 0:
			out[k] = ir.D(size[k])
		case size[k] != -1:
			c.errf("size %v has a negative entry other than -1", size)
			return
		case bok && begin[k] == 0:
			out[k] = x[k]
		case bok:
			out[k] = dimAddConst(x[k], -begin[k])
		}
		if bok && (begin[k] < 0 || x[k].Known() && out[k].Known() && begin[k]+out[k].Size > x[k].Size) {
			c.errf("begin %v and size %v exceed the input's shape %s", begin, size, shapeString(x))
			return
		}
	}
	c.set(0, tensorType(dt, out))
	cv := c.cstOfRank(0, len(x))
	if cv == nil || !bok {
		return
	}
	axes := make([]int, len(x))
	steps, counts := make([]int64, len(x)), make([]int64, len(x))
	for k := range x {
		if !out[k].Known() {
			return
		}
		axes[k], steps[k], counts[k] = k, 1, out[k].Size
	}
	c.setConst(0, sliceConst(cv, axes, begin, steps, counts))
}

// tfPadArg reads paddings [rank, 2] (input 1).
func (c *nctx) tfPadArg(r int) ([]int64, bool, bool) {
	p, known := c.constInts(1)
	if !known {
		return nil, false, true
	}
	if len(p) != 2*r {
		c.errf("paddings has %d values, want [%d, 2]", len(p), r)
		return nil, false, false
	}
	for _, v := range p {
		if v < 0 {
			c.errf("paddings %v has a negative entry", p)
			return nil, false, false
		}
	}
	return p, true, true
}

// Pad, PadV2 (input, paddings[, constant_values]), MirrorPad (input,
// paddings; mode REFLECT or SYMMETRIC, whose paddings must be less than,
// or at most, the axis's size).
func tfPad(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "paddings") {
		return
	}
	dt := c.inDType(0, "T")
	x, xok := c.shape(0)
	if !xok {
		if s, ok := c.shape(1); ok && len(s) == 2 && s[0].Known() {
			c.set(0, tensorType(dt, unknownDims(int(s[0].Size))))
		} else {
			c.set(0, unknownType(dt))
		}
		return
	}
	p, known, ok := c.tfPadArg(len(x))
	if !ok {
		return
	}
	if !known {
		c.set(0, tensorType(dt, unknownDims(len(x))))
		return
	}
	slack := int64(-1) // how much larger than a padding an axis must be
	if c.n.Op == "MirrorPad" {
		switch m := c.attrString("mode", ""); m {
		case "REFLECT":
			slack = 1
		case "SYMMETRIC":
			slack = 0
		default:
			c.errf("mode %q is not supported (want REFLECT or SYMMETRIC)", m)
			return
		}
	}
	out := make([]ir.Dim, len(x))
	for k, d := range x {
		if slack >= 0 && d.Known() && (p[2*k] > d.Size-slack || p[2*k+1] > d.Size-slack) {
			c.errf("paddings %v too large for axis %d of size %d in %s mode", p, k, d.Size, c.attrString("mode", ""))
			return
		}
		out[k] = dimAddConst(d, p[2*k]+p[2*k+1])
	}
	c.set(0, tensorType(dt, out))
}

// Gather (params, indices) and GatherV2 (params, indices, axis; batch_dims):
// params[:axis] + indices[batch_dims:] + params[axis+1:].
func tfGather(c *nctx) {
	if !c.need(0, "params") || !c.need(1, "indices") {
		return
	}
	dt := c.inDType(0, "Tparams")
	if it := c.dtype(1); it.Valid() && it != ir.Int32 && it != ir.Int64 {
		c.errf("indices have element type %s, want int32 or int64", it)
		return
	}
	ax, known := int64(0), true
	if c.n.Op == "GatherV2" {
		if !c.need(2, "axis") {
			return
		}
		var ok bool
		if ax, known, ok = c.tfScalarArg(2, "axis"); !ok {
			return
		}
	}
	x, xok := c.shape(0)
	ind, iok := c.shape(1)
	if !xok || !iok || !known {
		c.set(0, unknownType(dt))
		return
	}
	bd := c.attrInt("batch_dims", 0)
	if bd < 0 {
		bd += int64(len(ind))
	}
	if bd < 0 || bd > int64(len(ind)) {
		c.errf("batch_dims %d is out of range for indices of rank %d", c.attrInt("batch_dims", 0), len(ind))
		return
	}
	a, ok := c.axis(ax, len(x), "axis")
	if !ok {
		return
	}
	if int64(a) < bd {
		c.errf("axis %d must be at least batch_dims %d", a, bd)
		return
	}
	for k := range bd {
		if conflict(x[k], ind[k]) {
			c.errf("batch dimension %d differs: params %s, indices %s", k, shapeString(x), shapeString(ind))
			return
		}
	}
	out := append(append(cloneDims(x[:a]), ind[bd:]...), x[a+1:]...)
	c.set(0, tensorType(dt, out))
	data, idx := c.cstOfRank(0, len(x)), c.cst(1)
	if data == nil || idx == nil || bd != 0 {
		return
	}
	is, ok := idx.ints()
	if !ok {
		return
	}
	for _, v := range is {
		if v < 0 || v >= data.shape[a] { // TensorFlow has no negative indices
			return
		}
	}
	c.setConst(0, gatherConst(data, is, idx.shape, a))
}

// GatherNd (params, indices): indices[:-1] + params[indices[-1]:].
func tfGatherNd(c *nctx) {
	if !c.need(0, "params") || !c.need(1, "indices") {
		return
	}
	dt := c.inDType(0, "Tparams")
	x, xok := c.shape(0)
	ind, iok := c.shape(1)
	if !xok || !iok {
		c.set(0, unknownType(dt))
		return
	}
	if len(ind) < 1 {
		c.errf("indices must have rank at least 1")
		return
	}
	last := ind[len(ind)-1]
	if !last.Known() {
		c.set(0, unknownType(dt))
		return
	}
	if last.Size > int64(len(x)) {
		c.errf("indices select %d dimensions of params of rank %d", last.Size, len(x))
		return
	}
	out := append(cloneDims(ind[:len(ind)-1]), x[last.Size:]...)
	c.set(0, tensorType(dt, out))
}

// tfShapeOut types output 0 as the shape input i holds, of element type dt.
func (c *nctx) tfShapeOut(i int, dt ir.DType) {
	dims, raw, _ := c.shapeArg(i)
	if dims == nil {
		c.set(0, unknownType(dt))
		return
	}
	for k, e := range raw {
		if e.sym == "" && e.i < 0 {
			c.errf("shape %s has a negative size at %d", rawString(raw), k)
			return
		}
	}
	c.set(0, tensorType(dt, dims))
}

// ScatterNd (indices, updates, shape): the shape given, the updates' type.
func tfScatterNd(c *nctx) {
	if !c.need(0, "indices") || !c.need(1, "updates") || !c.need(2, "shape") {
		return
	}
	c.tfShapeOut(2, c.inDType(1, "T"))
}

// TensorScatterUpdate (tensor, indices, updates): the tensor's type.
func tfTensorScatter(c *nctx) {
	if !c.need(0, "tensor") || !c.need(1, "indices") || !c.need(2, "updates") {
		return
	}
	c.set(0, tensorLike(c.typ(0)))
}

// SparseToDense (sparse_indices, output_shape, sparse_values,
// default_value): output_shape, the values' type.
func tfSparseToDense(c *nctx) {
	for i, name := range []string{"sparse_indices", "output_shape", "sparse_values", "default_value"} {
		if !c.need(i, name) {
			return
		}
	}
	c.tfShapeOut(1, c.inDType(2, "T"))
}

// OneHot (indices, depth, on_value, off_value; axis -1): depth inserted at
// axis, on_value's type.
func tfOneHot(c *nctx) {
	for i, name := range []string{"indices", "depth", "on_value", "off_value"} {
		if !c.need(i, name) {
			return
		}
	}
	dt, ok := c.tfSameType(2, 3)
	if !ok {
		return
	}
	depth, known, ok := c.tfScalarArg(1, "depth")
	if !ok {
		return
	}
	d := ir.UnknownDim
	if known {
		if depth < 0 {
			c.errf("depth is %d, must not be negative", depth)
			return
		}
		d = ir.D(depth)
	}
	x, xok := c.shape(0)
	if !xok {
		c.set(0, unknownType(dt))
		return
	}
	ax := c.attrInt("axis", -1)
	if ax < -1 || ax > int64(len(x)) {
		c.errf("axis %d is out of range for indices of rank %d (want -1 to %d)", ax, len(x), len(x))
		return
	}
	if ax == -1 {
		ax = int64(len(x))
	}
	out := append(append(cloneDims(x[:ax]), d), x[ax:]...)
	c.set(0, tensorType(dt, out))
}

// Fill (dims, value): value's type, the shape dims holds.
func tfFill(c *nctx) {
	if !c.need(0, "dims") || !c.need(1, "value") {
		return
	}
	dt := c.inDType(1, "T")
	if s, ok := c.shape(1); ok && len(s) != 0 {
		c.errf("value must be a scalar, has shape %s", shapeString(s))
		return
	}
	c.tfShapeOut(0, dt)
	dims, _, known := c.shapeArg(0)
	v := c.cst(1)
	if !known || v == nil || len(v.e) != 1 {
		return
	}
	if sizes, ok := tensorType(dt, dims).Dims(); ok {
		if cv := newCval(v.dt, sizes); cv != nil {
			for k := range cv.e {
				cv.e[k] = v.e[0]
			}
			c.setConst(0, cv)
		}
	}
}

// LinSpace (start, stop, num): [num] of start's type.
func tfLinSpace(c *nctx) {
	if !c.need(0, "start") || !c.need(1, "stop") || !c.need(2, "num") {
		return
	}
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	n, known, ok := c.tfScalarArg(2, "num")
	switch {
	case !ok:
	case !known:
		c.set(0, tensorType(dt, []ir.Dim{ir.UnknownDim}))
	case n < 1:
		c.errf("num is %d, must be positive", n)
	default:
		c.set(0, tensorType(dt, []ir.Dim{ir.D(n)}))
	}
}

// BroadcastTo (input, shape): the shape given, which input must broadcast
// to.
func tfBroadcastTo(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "shape") {
		return
	}
	dt := c.inDType(0, "T")
	c.tfShapeOut(1, dt)
	dims, _, _ := c.shapeArg(1)
	x, ok := c.shape(0)
	if dims == nil || !ok {
		return
	}
	out, bad, _, _ := broadcast(x, dims)
	if bad || len(out) != len(dims) {
		c.errf("input shape %s does not broadcast to %s", shapeString(x), shapeString(dims))
		return
	}
	for k := range dims {
		if conflict(out[k], dims[k]) {
			c.errf("input shape %s does not broadcast to %s", shapeString(x), shapeString(dims))
			return
		}
	}
	c.set(0, tensorType(dt, dims))
	if cv := c.cst(0); cv != nil {
		if sizes, ok := tensorType(dt, dims).Dims(); ok {
			st := strides(cv.shape)
			c.setConst(0, remap(cv, cv.dt, sizes, func(idx []int64) int64 { return broadcastIndex(cv.shape, st, idx) }))
		}
	}
}

// BroadcastArgs (s0, s1): the broadcast shape of two shape vectors.
func tfBroadcastArgs(c *nctx) {
	if !c.need(0, "s0") || !c.need(1, "s1") {
		return
	}
	dt, ok := c.tfSameType(0, 1)
	if !ok {
		return
	}
	c.set(0, tensorType(dt, []ir.Dim{ir.UnknownDim}))
	a, _, ak := c.shapeArg(0)
	b, _, bk := c.shapeArg(1)
	if !ak || !bk {
		if la, lb := c.listLen(0), c.listLen(1); la >= 0 && lb >= 0 {
			c.set(0, tensorType(dt, []ir.Dim{ir.D(int64(max(la, lb)))}))
		}
		return
	}
	out, bad, x, y := broadcast(a, b)
	if bad {
		c.errf("shapes %s and %s do not broadcast (%s vs %s)", shapeString(a), shapeString(b), x, y)
		return
	}
	c.setConst(0, dimVecOf(out, dt))
}

// tfReduceAxes reads the reduction indices (input 1) against rank r: red
// marks the reduced axes; known is false when they are not known.
func (c *nctx) tfReduceAxes(r int) (red []bool, known, ok bool) {
	axes, known := c.constInts(1)
	if !known {
		return nil, false, true
	}
	red = make([]bool, r)
	for _, v := range axes {
		a, ok := c.axis(v, max(r, 1), "reduction index")
		if !ok {
			return nil, false, false
		}
		if a < r {
			red[a] = true
		}
	}
	return red, true, true
}

// Sum, Mean, Max, Min, Prod, All, Any, EuclideanNorm (input,
// reduction_indices; keep_dims): the axes listed (repeats allowed, none
// for no reduction) dropped, or kept as 1.
func tfReduce(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "reduction_indices") {
		return
	}
	dt := c.inDType(0, "T")
	if c.n.Op == "All" || c.n.Op == "Any" {
		dt = ir.Bool
	}
	keep := c.attrBool("keep_dims", false)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	red, known, ok := c.tfReduceAxes(len(x))
	if !ok {
		return
	}
	if !known {
		if keep {
			c.set(0, tensorType(dt, unknownDims(len(x))))
		} else {
			c.set(0, unknownType(dt))
		}
		return
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
	op := map[string]string{"Sum": "Add", "Prod": "Mul", "Max": "Max", "Min": "Min"}[c.n.Op]
	if op != "" {
		c.setConst(0, reduceConst(c.cstOfRank(0, len(x)), red, out, op))
	}
}

// ArgMax, ArgMin (input, dimension; output_type int64): the axis dropped.
func tfArgMax(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "dimension") {
		return
	}
	dt, ok := c.tfIntType("output_type", ir.Int64)
	if !ok {
		return
	}
	x, xok := c.shape(0)
	d, known, ok := c.tfScalarArg(1, "dimension")
	switch {
	case !ok:
		return
	case !xok:
		c.set(0, unknownType(dt))
		return
	case len(x) == 0:
		c.errf("input must have rank at least 1")
		return
	case !known:
		c.set(0, tensorType(dt, unknownDims(len(x)-1)))
		return
	}
	a, ok := c.axis(d, len(x), "dimension")
	if !ok {
		return
	}
	c.set(0, tensorType(dt, append(cloneDims(x[:a]), x[a+1:]...)))
}

// TopKV2 (input, k): values [..., k] and int32 indices.
func tfTopK(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "k") {
		return
	}
	dt := c.inDType(0, "T")
	k, known, ok := c.tfScalarArg(1, "k")
	if !ok {
		return
	}
	x, xok := c.shape(0)
	if !xok {
		c.set(0, unknownType(dt))
		c.set(1, unknownType(ir.Int32))
		return
	}
	if len(x) == 0 {
		c.errf("input must have rank at least 1")
		return
	}
	out := cloneDims(x)
	out[len(out)-1] = ir.UnknownDim
	if known {
		last := x[len(x)-1]
		if k < 0 || last.Known() && k > last.Size {
			c.errf("k is %d, but the last axis has size %s", k, last)
			return
		}
		out[len(out)-1] = ir.D(k)
	}
	c.set(0, tensorType(dt, out))
	c.set(1, tensorType(ir.Int32, cloneDims(out)))
}

// LowerBound, UpperBound (sorted_inputs, values): values' shape, out_type.
func tfBound(c *nctx) {
	if !c.need(0, "sorted_inputs") || !c.need(1, "values") {
		return
	}
	dt, ok := c.tfIntType("out_type", ir.Int32)
	if !ok {
		return
	}
	c.set(0, withDType(c.typ(1), dt))
}

// Bincount (arr, size, weights) → [size]; DenseBincount (input, size,
// weights) → [size] or [batch, size]; the weights' type.
func tfBincount(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "size") || !c.need(2, "weights") {
		return
	}
	dt := c.inDType(2, "T")
	n, known, ok := c.tfScalarArg(1, "size")
	if !ok {
		return
	}
	d := ir.UnknownDim
	if known {
		if n < 0 {
			c.errf("size is %d, must not be negative", n)
			return
		}
		d = ir.D(n)
	}
	out := []ir.Dim{d}
	if x, ok := c.shape(0); ok && c.n.Op == "DenseBincount" && len(x) == 2 {
		out = []ir.Dim{x[0], d}
	}
	c.set(0, tensorType(dt, out))
}

// Where (input): the coordinates of its true (non-zero) elements, int64
// [count, rank]; the count depends on the data.
func tfWhere(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	r := ir.UnknownDim
	if x, ok := c.shape(0); ok {
		r = ir.D(int64(len(x)))
	}
	c.set(0, tensorType(ir.Int64, []ir.Dim{c.dataDim("where"), r}))
}

// Unique, UniqueV2: y [count] of x's type (the count depends on the data),
// idx of x's shape (out_idx, int32 by default).
func tfUnique(c *nctx) {
	if !c.need(0, "x") {
		return
	}
	it, ok := c.tfIntType("out_idx", ir.Int32)
	if !ok {
		return
	}
	dt := c.inDType(0, "T")
	x, xok := c.shape(0)
	if c.n.Op == "Unique" && xok && len(x) != 1 {
		c.errf("x must be 1-D, has shape %s", shapeString(x))
		return
	}
	if xok && len(x) == 1 {
		c.set(0, tensorType(dt, []ir.Dim{c.dataDim("unique")}))
		c.set(1, tensorType(it, cloneDims(x)))
		return
	}
	c.set(0, unknownType(dt))
	c.set(1, tensorType(it, []ir.Dim{ir.UnknownDim}))
}

// ListDiff (x, y): out and idx [count], the count data-dependent.
func tfListDiff(c *nctx) {
	if !c.need(0, "x") || !c.need(1, "y") {
		return
	}
	it, ok := c.tfIntType("out_idx", ir.Int32)
	if !ok {
		return
	}
	n := c.dataDim("listdiff")
	c.set(0, tensorType(c.inDType(0, "T"), []ir.Dim{n}))
	c.set(1, tensorType(it, []ir.Dim{n}))
}

// NonMaxSuppressionV2…V5: selected_indices int32 [count] (V5 also
// selected_scores [count]) and, from V4, valid_outputs, an int32 scalar.
// The count depends on the data, unless pad_to_max_output_size pads it to
// max_output_size.
func tfNMS(c *nctx) {
	if !c.need(0, "boxes") || !c.need(1, "scores") || !c.need(2, "max_output_size") {
		return
	}
	n := c.dataDim("nms")
	if c.attrBool("pad_to_max_output_size", false) {
		if m, known, ok := c.tfScalarArg(2, "max_output_size"); !ok {
			return
		} else if known && m >= 0 {
			n = ir.D(m)
		}
	}
	c.set(0, tensorType(ir.Int32, []ir.Dim{n}))
	switch c.n.Op {
	case "NonMaxSuppressionV4":
		c.set(1, tensorType(ir.Int32, nil))
	case "NonMaxSuppressionV5":
		c.set(1, tensorType(c.inDType(1, "T"), []ir.Dim{n}))
		c.set(2, tensorType(ir.Int32, nil))
	}
}

// Switch (data, pred): data on the output the predicate selects (both
// typed as data).
func tfSwitch(c *nctx) {
	if !c.need(0, "data") || !c.need(1, "pred") {
		return
	}
	c.setAll(tensorLike(c.typ(0)))
}

// Merge (inputs…): the first input available (output 0: what every input
// has in common) and its index (output 1, an int32 scalar).
func tfMerge(c *nctx) {
	var t ir.TensorType
	for i := range c.n.Inputs {
		if !c.need(i, "inputs") {
			return
		}
		if i == 0 {
			t = tensorLike(c.typ(0))
		} else {
			t = joinTypes(t, tensorLike(c.typ(i)))
		}
	}
	c.set(0, t)
	c.set(1, tensorType(ir.Int32, nil))
}

// LoopCond: its boolean scalar input.
func tfLoopCond(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	c.set(0, tensorType(ir.Bool, nil))
}

// RandomUniform, RandomStandardNormal, TruncatedNormal (shape; dtype) and
// RandomUniformInt (shape, minval, maxval; Tout).
func tfRandom(c *nctx) {
	if !c.need(0, "shape") {
		return
	}
	var dt ir.DType
	if c.n.Op == "RandomUniformInt" {
		dt = c.inDType(1, "Tout")
	} else {
		dt = c.tfDTypeOr("dtype", ir.Float32)
	}
	c.tfShapeOut(0, dt)
}

// Multinomial (logits [batch, classes], num_samples): [batch, num_samples]
// of output_dtype (int64).
func tfMultinomial(c *nctx) {
	if !c.need(0, "logits") || !c.need(1, "num_samples") {
		return
	}
	dt, ok := c.tfIntType("output_dtype", ir.Int64)
	if !ok {
		return
	}
	out := unknownDims(2)
	if x, ok := c.shape(0); ok {
		if len(x) != 2 {
			c.errf("logits has shape %s, want [batch, classes]", shapeString(x))
			return
		}
		out[0] = x[0]
	}
	if n, known, ok := c.tfScalarArg(1, "num_samples"); !ok {
		return
	} else if known {
		out[1] = ir.D(n)
	}
	c.set(0, tensorType(dt, out))
}
