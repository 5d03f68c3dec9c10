package shapes

import (
	"sort"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// window holds the sliding-window attributes shared by convolutions and
// pools.
type window struct {
	kernel, strides, dilations, padsB, padsE, outPad []int64
	autoPad                                          string
	ceil                                             bool
}

// windowAttrs reads strides, dilations, pads and auto_pad for n spatial
// axes; kernel is the kernel size (from kernel_shape or the weights), with
// -1 for an unknown size.
func (c *nctx) windowAttrs(n int, kernel []int64, dilations bool) (window, bool) {
	w := window{kernel: kernel}
	list := func(name string, want int, def int64, min int64) ([]int64, bool) {
		v, ok := c.attrInts(name)
		if !ok {
			out := make([]int64, want)
			for i := range out {
				out[i] = def
			}
			return out, true
		}
		if len(v) != want {
			c.errf("attribute %s has %d values, want %d", name, len(v), want)
			return nil, false
		}
		for _, x := range v {
			if x < min {
				c.errf("attribute %s has value %d, want at least %d", name, x, min)
				return nil, false
			}
		}
		return v, true
	}
	var ok bool
	if w.strides, ok = list("strides", n, 1, 1); !ok {
		return w, false
	}
	if dilations {
		if w.dilations, ok = list("dilations", n, 1, 1); !ok {
			return w, false
		}
	} else {
		w.dilations = make([]int64, n)
		for i := range w.dilations {
			w.dilations[i] = 1
		}
	}
	pads, ok := list("pads", 2*n, 0, -1<<62)
	if !ok {
		return w, false
	}
	w.padsB, w.padsE = pads[:n], pads[n:]
	w.autoPad = c.attrString("auto_pad", "NOTSET")
	switch w.autoPad {
	case "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID":
	case "":
		w.autoPad = "NOTSET"
	default:
		c.errf("unsupported auto_pad %q (want NOTSET, SAME_UPPER, SAME_LOWER or VALID)", w.autoPad)
		return w, false
	}
	if w.autoPad == "VALID" {
		w.padsB, w.padsE = make([]int64, n), make([]int64, n)
	}
	return w, true
}

// outDim is the output size of spatial axis i for input size in: a
// convolution (floor), or a pool with ceil_mode, where a last window that
// would start in the end padding is dropped.
func (c *nctx) outDim(w window, i int, in ir.Dim) (ir.Dim, bool) {
	k, s, d := w.kernel[i], w.strides[i], w.dilations[i]
	if k < 0 {
		return ir.UnknownDim, true
	}
	eff := (k-1)*d + 1
	if w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER" {
		if in.Known() {
			return ir.D(ceilDiv(in.Size, s)), true
		}
		if s == 1 {
			return in, true
		}
		return ir.UnknownDim, true
	}
	pb, pe := w.padsB[i], w.padsE[i]
	if !in.Known() {
		if s == 1 && pb+pe-eff+1 == 0 {
			return in, true
		}
		return ir.UnknownDim, true
	}
	total := in.Size + pb + pe - eff
	if total < 0 {
		c.errf("spatial axis %d: input size %d with pads %d+%d is smaller than the kernel extent %d", i, in.Size, pb, pe, eff)
		return ir.UnknownDim, false
	}
	if !w.ceil {
		return ir.D(total/s + 1), true
	}
	out := ceilDiv(total, s) + 1
	if (out-1)*s >= in.Size+pb {
		out--
	}
	return ir.D(out), true
}

// Conv, ConvInteger, QLinearConv: x [N, C, D1…], w [M, C/group, k1…],
// optional bias [M].
func inferConvLike(c *nctx, xi, wi, bi int, outDT ir.DType) {
	if !c.need(xi, "X") || !c.need(wi, "W") {
		return
	}
	g, ok := convGeometry(c, xi, wi, outDT)
	if !ok {
		return
	}
	x, xok, wt, wok, n, group, kernel := g.x, g.xok, g.w, g.wok, g.n, g.group, g.kernel
	w, ok := c.windowAttrs(n, kernel, true)
	if !ok {
		return
	}
	out := unknownDims(n + 2)
	if xok {
		out[0] = x[0]
	}
	if wok {
		out[1] = wt[0]
		if wt[0].Known() && wt[0].Size%group != 0 {
			c.errf("weight output channels %d are not divisible by group %d", wt[0].Size, group)
			return
		}
	}
	if xok && wok && x[1].Known() && wt[1].Known() && x[1].Size != wt[1].Size*group {
		c.errf("input channels %d do not match weight channels %d × group %d", x[1].Size, wt[1].Size, group)
		return
	}
	if bi >= 0 && c.has(bi) {
		if b, ok := c.shape(bi); ok {
			if len(b) != 1 || conflict(b[0], out[1]) {
				c.errf("bias shape %s does not match %s output channels", shapeString(b), out[1])
				return
			}
			out[1] = unify(out[1], b[0])
		}
	}
	if xok {
		for i := range n {
			d, ok := c.outDim(w, i, x[2+i])
			if !ok {
				return
			}
			out[2+i] = d
		}
	}
	c.set(0, tensorType(outDT, out))
}

func inferConv(c *nctx) {
	if !c.sameDTypes(0, 1) {
		return
	}
	inferConvLike(c, 0, 1, 2, c.firstDType(0, 1))
}

func inferConvInteger(c *nctx) { inferConvLike(c, 0, 1, -1, ir.Int32) }

// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
// y_scale, y_zero_point, B.
func inferQLinearConv(c *nctx) {
	dt := c.dtype(7)
	if !dt.Valid() {
		dt = c.dtype(0)
	}
	inferConvLike(c, 0, 3, 8, dt)
}

// ConvTranspose: x [N, C, D…], w [C, M/group, k…].
func inferConvTranspose(c *nctx) {
	if !c.need(0, "X") || !c.need(1, "W") || !c.sameDTypes(0, 1) {
		return
	}
	dt := c.firstDType(0, 1)
	g, ok := convGeometry(c, 0, 1, dt)
	if !ok {
		return
	}
	x, xok, wt, wok, n, group, kernel := g.x, g.xok, g.w, g.wok, g.n, g.group, g.kernel
	w, ok := c.windowAttrs(n, kernel, true)
	if !ok {
		return
	}
	outPad, has := c.attrInts("output_padding")
	if !has {
		outPad = make([]int64, n)
	} else if len(outPad) != n {
		c.errf("attribute output_padding has %d values, want %d", len(outPad), n)
		return
	}
	outShape, hasOut := c.attrInts("output_shape")
	if hasOut {
		switch len(outShape) {
		case n:
		case n + 2:
			outShape = outShape[2:]
		default:
			c.errf("attribute output_shape has %d values, want %d", len(outShape), n)
			return
		}
	}
	out := unknownDims(n + 2)
	if xok {
		out[0] = x[0]
	}
	if xok && wok && conflict(x[1], wt[0]) {
		c.errf("input channels %d do not match weight input channels %d", x[1].Size, wt[0].Size)
		return
	}
	if wok {
		out[1] = dimMul(wt[1], ir.D(group))
	}
	if c.has(2) {
		if b, ok := c.shape(2); ok {
			if len(b) != 1 || conflict(b[0], out[1]) {
				c.errf("bias shape %s does not match %s output channels", shapeString(b), out[1])
				return
			}
			out[1] = unify(out[1], b[0])
		}
	}
	for i := range n {
		if hasOut {
			out[2+i] = ir.D(outShape[i])
			continue
		}
		if !xok || kernel[i] < 0 {
			continue
		}
		in := x[2+i]
		s, d := w.strides[i], w.dilations[i]
		eff := (kernel[i]-1)*d + 1
		if w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER" {
			out[2+i] = dimMul(in, ir.D(s))
			continue
		}
		extra := outPad[i] + eff - 1 - w.padsB[i] - w.padsE[i]
		if !in.Known() {
			if s == 1 && extra == 0 {
				out[2+i] = in
			}
			continue
		}
		v := s*(in.Size-1) + extra + 1
		if v < 0 {
			c.errf("spatial axis %d: output size %d is negative", i, v)
			return
		}
		out[2+i] = ir.D(v)
	}
	c.set(0, tensorType(dt, out))
}

// MaxPool, AveragePool, LpPool.
func inferPool(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	dt := c.dtype(0)
	kernel, ok := c.attrInts("kernel_shape")
	if !ok {
		c.errf("missing required attribute kernel_shape")
		return
	}
	n := len(kernel)
	for _, k := range kernel {
		if k < 1 {
			c.errf("attribute kernel_shape has value %d, want at least 1", k)
			return
		}
	}
	x, xok := c.shape(0)
	if xok && len(x) != n+2 {
		c.errf("input rank %d does not match kernel_shape %v (want rank %d)", len(x), kernel, n+2)
		return
	}
	dil := (c.n.Op == "MaxPool" && c.opset >= 10) || (c.n.Op == "AveragePool" && c.opset >= 19) || (c.n.Op == "LpPool" && c.opset >= 18)
	w, ok := c.windowAttrs(n, kernel, dil)
	if !ok {
		return
	}
	if c.opset >= 10 {
		w.ceil = c.attrInt("ceil_mode", 0) != 0
	}
	if !xok {
		c.set(0, unknownType(dt))
		c.set(1, unknownType(ir.Int64))
		return
	}
	out := make([]ir.Dim, n+2)
	out[0], out[1] = x[0], x[1]
	for i := range n {
		d, ok := c.outDim(w, i, x[2+i])
		if !ok {
			return
		}
		out[2+i] = d
	}
	c.set(0, tensorType(dt, out))
	c.set(1, tensorType(ir.Int64, cloneDims(out)))
}

// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: [N, C, 1, …].
func inferGlobalPool(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	dt := c.dtype(0)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	if len(x) < 2 {
		c.errf("input rank %d; %s needs at least 2 (N, C)", len(x), c.n.Op)
		return
	}
	out := make([]ir.Dim, len(x))
	out[0], out[1] = x[0], x[1]
	for i := 2; i < len(x); i++ {
		out[i] = ir.D(1)
	}
	c.set(0, tensorType(dt, out))
}

// MaxUnpool: X, I, optional output_shape.
func inferMaxUnpool(c *nctx) {
	if !c.need(0, "X") || !c.need(1, "I") {
		return
	}
	dt := c.dtype(0)
	if c.has(2) {
		if cv := c.cst(2); cv != nil && cv.rank() == 1 {
			dims := make([]ir.Dim, len(cv.e))
			for k := range cv.e {
				dims[k] = cv.dimAt(k)
			}
			c.set(0, tensorType(dt, dims))
			return
		}
		if s, ok := c.shape(2); ok && len(s) == 1 && s[0].Known() {
			c.set(0, tensorType(dt, unknownDims(int(s[0].Size))))
			return
		}
		c.set(0, unknownType(dt))
		return
	}
	kernel, ok := c.attrInts("kernel_shape")
	if !ok {
		c.errf("missing required attribute kernel_shape")
		return
	}
	n := len(kernel)
	x, xok := c.shape(0)
	if !xok {
		c.set(0, unknownType(dt))
		return
	}
	if len(x) != n+2 {
		c.errf("input rank %d does not match kernel_shape %v", len(x), kernel)
		return
	}
	w, ok := c.windowAttrs(n, kernel, false)
	if !ok {
		return
	}
	out := cloneDims(x)
	for i := range n {
		in := x[2+i]
		if in.Known() {
			out[2+i] = ir.D((in.Size-1)*w.strides[i] + kernel[i] - w.padsB[i] - w.padsE[i])
		} else {
			out[2+i] = ir.UnknownDim
		}
	}
	c.set(0, tensorType(dt, out))
}

// Gemm: A [M,K] (transA: [K,M]), B [K,N] (transB: [N,K]), C broadcast to
// [M,N].
func inferGemm(c *nctx) {
	if !c.need(0, "A") || !c.need(1, "B") || !c.sameDTypes(0, 1, 2) {
		return
	}
	dt := c.firstDType(0, 1)
	a, aok := c.shape(0)
	b, bok := c.shape(1)
	if (aok && len(a) != 2) || (bok && len(b) != 2) {
		c.errf("inputs must be matrices; A is %s, B is %s", rankString(a, aok), rankString(b, bok))
		return
	}
	m, k1, k2, nn := ir.UnknownDim, ir.UnknownDim, ir.UnknownDim, ir.UnknownDim
	if aok {
		m, k1 = a[0], a[1]
		if c.attrInt("transA", 0) != 0 {
			m, k1 = a[1], a[0]
		}
	}
	if bok {
		k2, nn = b[0], b[1]
		if c.attrInt("transB", 0) != 0 {
			k2, nn = b[1], b[0]
		}
	}
	if conflict(k1, k2) {
		c.errf("inner dimensions differ: A gives K=%d, B gives K=%d", k1.Size, k2.Size)
		return
	}
	out := []ir.Dim{m, nn}
	if s, ok := c.shape(2); ok && c.has(2) {
		if len(s) > 2 {
			c.errf("C has rank %d; it must broadcast to [M, N]", len(s))
			return
		}
		for i := range s {
			j := 2 - len(s) + i
			if !isOne(s[i]) && conflict(s[i], out[j]) {
				c.errf("C shape %s does not broadcast to %s", shapeString(s), shapeString(out))
				return
			}
		}
	}
	c.set(0, tensorType(dt, out))
}

func rankString(d []ir.Dim, ok bool) string {
	if !ok {
		return "of unknown rank"
	}
	return shapeString(d)
}

// matmulShape is the numpy matrix product shape of a and b.
func (c *nctx) matmulShape(a, b []ir.Dim) ([]ir.Dim, bool) {
	if len(a) == 0 || len(b) == 0 {
		c.errf("inputs must not be scalars (shapes %s and %s)", shapeString(a), shapeString(b))
		return nil, false
	}
	a1, b1 := len(a) == 1, len(b) == 1
	if a1 {
		a = []ir.Dim{ir.D(1), a[0]}
	}
	if b1 {
		b = []ir.Dim{b[0], ir.D(1)}
	}
	ka, kb := a[len(a)-1], b[len(b)-2]
	if conflict(ka, kb) {
		c.errf("inner dimensions differ: %d and %d (shapes %s and %s)", ka.Size, kb.Size, shapeString(a), shapeString(b))
		return nil, false
	}
	batch, bad, x, y := broadcast(a[:len(a)-2], b[:len(b)-2])
	if bad {
		c.errf("batch dimensions %s and %s do not broadcast (%s vs %s)", shapeString(a[:len(a)-2]), shapeString(b[:len(b)-2]), x, y)
		return nil, false
	}
	out := cloneDims(batch)
	if !a1 {
		out = append(out, a[len(a)-2])
	}
	if !b1 {
		out = append(out, b[len(b)-1])
	}
	return out, true
}

func inferMatMulLike(c *nctx, ai, bi int, dt ir.DType) {
	if !c.need(ai, "A") || !c.need(bi, "B") {
		return
	}
	a, aok := c.shape(ai)
	b, bok := c.shape(bi)
	if !aok || !bok {
		c.set(0, unknownType(dt))
		return
	}
	out, ok := c.matmulShape(a, b)
	if !ok {
		return
	}
	c.set(0, tensorType(dt, out))
}

func inferMatMul(c *nctx) {
	if !c.sameDTypes(0, 1) {
		return
	}
	inferMatMulLike(c, 0, 1, c.firstDType(0, 1))
}

func inferMatMulInteger(c *nctx) { inferMatMulLike(c, 0, 1, ir.Int32) }

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
// y_scale, y_zero_point.
func inferQLinearMatMul(c *nctx) {
	dt := c.dtype(7)
	if !dt.Valid() {
		dt = c.dtype(0)
	}
	inferMatMulLike(c, 0, 3, dt)
}

// Einsum.
func inferEinsum(c *nctx) {
	eq := strings.ReplaceAll(c.attrString("equation", ""), " ", "")
	if eq == "" {
		c.errf("missing required attribute equation")
		return
	}
	for i := range c.n.Inputs {
		if !c.need(i, "Inputs") {
			return
		}
	}
	idx := make([]int, len(c.n.Inputs))
	for i := range idx {
		idx[i] = i
	}
	if !c.sameDTypes(idx...) {
		return
	}
	dt := c.firstDType(idx...)
	lhs, rhs, arrow := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(c.n.Inputs) {
		c.errf("equation %q has %d operands, but the node has %d inputs", eq, len(terms), len(c.n.Inputs))
		return
	}
	parse := func(term string) ([]byte, bool, bool) { // letters, has ellipsis, ok
		var letters []byte
		ell := false
		for i := 0; i < len(term); i++ {
			ch := term[i]
			switch {
			case ch == '.':
				if ell || !strings.HasPrefix(term[i:], "...") {
					return nil, false, false
				}
				ell = true
				letters = append(letters, '.')
				i += 2
			case (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'):
				letters = append(letters, ch)
			default:
				return nil, false, false
			}
		}
		return letters, ell, true
	}
	dims := map[byte]ir.Dim{}
	count := map[byte]int{}
	var ellDims [][]ir.Dim
	known := true
	for i, term := range terms {
		letters, ell, ok := parse(term)
		if !ok {
			c.errf("equation %q: cannot parse operand %q", eq, term)
			return
		}
		nl := len(letters)
		if ell {
			nl--
		}
		for _, l := range letters {
			if l != '.' {
				count[l]++
			}
		}
		s, sok := c.shape(i)
		if !sok {
			known = false
			continue
		}
		if (!ell && len(s) != nl) || (ell && len(s) < nl) {
			c.errf("equation %q: operand %d %q has %d subscripts, but input %d has rank %d", eq, i, term, nl, i, len(s))
			return
		}
		pos := 0
		for _, l := range letters {
			if l == '.' {
				ne := len(s) - nl
				ellDims = append(ellDims, s[pos:pos+ne])
				pos += ne
				continue
			}
			d := s[pos]
			pos++
			if old, ok := dims[l]; ok {
				if conflict(old, d) && !isOne(old) && !isOne(d) {
					c.errf("equation %q: subscript %c has sizes %d and %d", eq, l, old.Size, d.Size)
					return
				}
				if isOne(old) {
					dims[l] = d
				} else {
					dims[l] = unify(old, d)
				}
			} else {
				dims[l] = d
			}
		}
	}
	ell, bad, _, _ := broadcast(ellDims...)
	if bad {
		c.errf("equation %q: the dimensions under ... do not broadcast", eq)
		return
	}
	var outLetters []byte
	if arrow {
		letters, _, ok := parse(rhs)
		if !ok {
			c.errf("equation %q: cannot parse the output %q", eq, rhs)
			return
		}
		for _, l := range letters {
			if l != '.' && count[l] == 0 {
				c.errf("equation %q: output subscript %c appears in no operand", eq, l)
				return
			}
		}
		outLetters = letters
	} else {
		var once []byte
		for l, n := range count {
			if n == 1 {
				once = append(once, l)
			}
		}
		sort.Slice(once, func(i, j int) bool { return once[i] < once[j] })
		if len(ellDims) > 0 {
			outLetters = append([]byte{'.'}, once...)
		} else {
			outLetters = once
		}
	}
	if !known {
		hasEll := strings.IndexByte(string(outLetters), '.') >= 0
		if hasEll {
			c.set(0, unknownType(dt))
			return
		}
		c.set(0, tensorType(dt, unknownDims(len(outLetters))))
		return
	}
	var out []ir.Dim
	for _, l := range outLetters {
		if l == '.' {
			out = append(out, ell...)
			continue
		}
		out = append(out, dims[l])
	}
	c.set(0, tensorType(dt, out))
}

// BatchNormalization: X [N, C, …]; scale, B, mean, var [C]. Before opset 14
// the optional outputs are mean, var, saved_mean, saved_var (training);
// from 14 they are running_mean and running_var, only with training_mode.
func inferBatchNorm(c *nctx) {
	for i, name := range []string{"X", "scale", "B", "input_mean", "input_var"} {
		if !c.need(i, name) {
			return
		}
	}
	dt := c.dtype(0)
	x, xok := c.shape(0)
	ch := ir.UnknownDim
	if xok {
		if len(x) < 2 {
			c.errf("input rank %d; BatchNormalization needs at least 2 (N, C)", len(x))
			return
		}
		ch = x[1]
	}
	spatial := c.opset >= 9 || c.attrInt("spatial", 1) == 1
	if spatial {
		for i, name := range []string{"scale", "B", "input_mean", "input_var"} {
			s, ok := c.shape(1 + i)
			if !ok {
				continue
			}
			if len(s) != 1 || conflict(s[0], ch) {
				c.errf("%s has shape %s; want [%s] (the channels of X)", name, shapeString(s), ch)
				return
			}
			ch = unify(ch, s[0])
		}
	}
	if xok {
		c.set(0, tensorType(dt, cloneDims(x)))
	} else {
		c.set(0, unknownType(dt))
	}
	statDT := dt
	if c.opset >= 14 && c.dtype(3).Valid() {
		statDT = c.dtype(3)
	}
	if c.opset >= 14 {
		training := c.attrInt("training_mode", 0) != 0
		if !training && c.n.NumOutputs() > 1 {
			c.errf("training_mode is 0, but the node has %d outputs; running_mean and running_var exist only in training mode", c.n.NumOutputs())
			return
		}
		if c.numOut() > 3 {
			c.errf("has %d outputs; BatchNormalization-%d produces at most 3", c.numOut(), c.opset)
			return
		}
	}
	for i := 1; i < c.numOut(); i++ {
		c.set(i, tensorType(statDT, []ir.Dim{ch}))
	}
}

// InstanceNormalization: X [N, C, …], scale and B [C].
func inferInstanceNorm(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "scale") || !c.need(2, "B") || !c.sameDTypes(0, 1, 2) {
		return
	}
	x, xok := c.shape(0)
	if xok && len(x) < 2 {
		c.errf("input rank %d; InstanceNormalization needs at least 2 (N, C)", len(x))
		return
	}
	for i, name := range []string{"scale", "B"} {
		s, ok := c.shape(1 + i)
		if ok && xok && (len(s) != 1 || conflict(s[0], x[1])) {
			c.errf("%s has shape %s; want [%s] (the channels of input)", name, shapeString(s), x[1])
			return
		}
	}
	c.set(0, tensorLike(c.typ(0)))
}

// LayerNormalization: Y like X; Mean and InvStdDev keep the axes before
// axis and have size 1 from axis on, in the stash type.
func inferLayerNorm(c *nctx) {
	if !c.need(0, "X") || !c.need(1, "Scale") {
		return
	}
	dt := c.dtype(0)
	stash := c.attrDType("stash_type", ir.Float32)
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		c.set(1, unknownType(stash))
		c.set(2, unknownType(stash))
		return
	}
	ax, ok := c.axis(c.attrInt("axis", -1), len(x), "axis")
	if !ok {
		return
	}
	c.set(0, tensorType(dt, cloneDims(x)))
	st := cloneDims(x)
	for i := ax; i < len(st); i++ {
		st[i] = ir.D(1)
	}
	c.set(1, tensorType(stash, st))
	c.set(2, tensorType(stash, cloneDims(st)))
}

// GroupNormalization: X [N, C, …]; C must be a multiple of num_groups.
func inferGroupNorm(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	g := c.attrInt("num_groups", 0)
	if !c.hasAttr("num_groups") || g < 1 {
		c.errf("attribute num_groups must be at least 1")
		return
	}
	x, ok := c.shape(0)
	if ok {
		if len(x) < 2 {
			c.errf("input rank %d; GroupNormalization needs at least 2 (N, C)", len(x))
			return
		}
		if x[1].Known() && x[1].Size%g != 0 {
			c.errf("channels %d are not a multiple of num_groups %d", x[1].Size, g)
			return
		}
	}
	c.set(0, tensorLike(c.typ(0)))
}

func inferLRN(c *nctx) {
	if !c.need(0, "X") {
		return
	}
	if size := c.attrInt("size", 0); size < 1 {
		c.errf("attribute size must be at least 1")
		return
	}
	c.set(0, tensorLike(c.typ(0)))
}

// DepthToSpace: [N, C/(b·b), H·b, W·b]; SpaceToDepth the inverse.
func inferDepthSpace(c *nctx) {
	if !c.need(0, "input") {
		return
	}
	dt := c.dtype(0)
	b := c.attrInt("blocksize", 0)
	if b < 1 {
		c.errf("attribute blocksize must be at least 1")
		return
	}
	x, ok := c.shape(0)
	if !ok {
		c.set(0, unknownType(dt))
		return
	}
	if len(x) != 4 {
		c.errf("input rank %d; %s needs rank 4", len(x), c.n.Op)
		return
	}
	if c.n.Op == "DepthToSpace" {
		if m := c.attrString("mode", "DCR"); m != "DCR" && m != "CRD" {
			c.errf("unsupported mode %q (want DCR or CRD)", m)
			return
		}
		ch, ok := dimDivExact(x[1], b*b)
		if !ok {
			c.errf("channels %d are not a multiple of blocksize² %d", x[1].Size, b*b)
			return
		}
		c.set(0, tensorType(dt, []ir.Dim{x[0], ch, dimMul(x[2], ir.D(b)), dimMul(x[3], ir.D(b))}))
		return
	}
	h, ok1 := dimDivExact(x[2], b)
	w, ok2 := dimDivExact(x[3], b)
	if !ok1 || !ok2 {
		c.errf("spatial size %s×%s is not a multiple of blocksize %d", x[2], x[3], b)
		return
	}
	c.set(0, tensorType(dt, []ir.Dim{x[0], dimMul(x[1], ir.D(b*b)), h, w}))
}

// LSTM, GRU, RNN: X [seq, batch, input] (layout 0) or [batch, seq, input]
// (layout 1, opset 14); W [dirs, gates·hidden, input].
func inferRNN(c *nctx) {
	if !c.need(0, "X") || !c.need(1, "W") || !c.need(2, "R") {
		return
	}
	dt := c.dtype(0)
	gates := int64(1)
	switch c.n.Op {
	case "LSTM":
		gates = 4
	case "GRU":
		gates = 3
	}
	dirs := int64(1)
	switch d := c.attrString("direction", "forward"); d {
	case "forward", "reverse":
	case "bidirectional":
		dirs = 2
	default:
		c.errf("unsupported direction %q (want forward, reverse or bidirectional)", d)
		return
	}
	layout := int64(0)
	if c.opset >= 14 {
		layout = c.attrInt("layout", 0)
		if layout != 0 && layout != 1 {
			c.errf("attribute layout is %d, want 0 or 1", layout)
			return
		}
	}
	hidden := ir.UnknownDim
	if c.hasAttr("hidden_size") {
		h := c.attrInt("hidden_size", 0)
		if h < 1 {
			c.errf("attribute hidden_size is %d, want at least 1", h)
			return
		}
		hidden = ir.D(h)
	}
	seq, batch, inSize := ir.UnknownDim, ir.UnknownDim, ir.UnknownDim
	if x, ok := c.shape(0); ok {
		if len(x) != 3 {
			c.errf("X has rank %d, want 3", len(x))
			return
		}
		seq, batch, inSize = x[0], x[1], x[2]
		if layout == 1 {
			seq, batch = x[1], x[0]
		}
	}
	if w, ok := c.shape(1); ok {
		if len(w) != 3 {
			c.errf("W has rank %d, want 3", len(w))
			return
		}
		if conflict(w[0], ir.D(dirs)) {
			c.errf("W has %d directions, but direction gives %d", w[0].Size, dirs)
			return
		}
		if conflict(w[2], inSize) {
			c.errf("W has input size %d, but X has %d", w[2].Size, inSize.Size)
			return
		}
		if w[1].Known() {
			if w[1].Size%gates != 0 || conflict(ir.D(w[1].Size/gates), hidden) {
				c.errf("W has %d rows; want %d × hidden_size %s", w[1].Size, gates, hidden)
				return
			}
			hidden = ir.D(w[1].Size / gates)
		}
	}
	if r, ok := c.shape(2); ok {
		if len(r) != 3 {
			c.errf("R has rank %d, want 3", len(r))
			return
		}
		if conflict(r[2], hidden) {
			c.errf("R has hidden size %d, but W and hidden_size give %d", r[2].Size, hidden.Size)
			return
		}
		hidden = unify(hidden, r[2])
	}
	nd := ir.D(dirs)
	if layout == 0 {
		c.set(0, tensorType(dt, []ir.Dim{seq, nd, batch, hidden}))
		c.set(1, tensorType(dt, []ir.Dim{nd, batch, hidden}))
		c.set(2, tensorType(dt, []ir.Dim{nd, batch, hidden}))
	} else {
		c.set(0, tensorType(dt, []ir.Dim{batch, seq, nd, hidden}))
		c.set(1, tensorType(dt, []ir.Dim{batch, nd, hidden}))
		c.set(2, tensorType(dt, []ir.Dim{batch, nd, hidden}))
	}
}

// RoiAlign: X [N, C, H, W], rois [R, 4], batch_indices [R] →
// [R, C, output_height, output_width]. MaxRoiPool: rois [R, 5],
// pooled_shape.
func inferRoi(c *nctx) {
	if !c.need(0, "X") || !c.need(1, "rois") {
		return
	}
	dt := c.dtype(0)
	var oh, ow int64
	if c.n.Op == "RoiAlign" {
		if m := c.attrString("mode", "avg"); m != "avg" && m != "max" {
			c.errf("unsupported mode %q (want avg or max)", m)
			return
		}
		oh, ow = c.attrInt("output_height", 1), c.attrInt("output_width", 1)
	} else {
		ps, ok := c.attrInts("pooled_shape")
		if !ok || len(ps) != 2 {
			c.errf("attribute pooled_shape must have 2 values")
			return
		}
		oh, ow = ps[0], ps[1]
	}
	r, ch := ir.UnknownDim, ir.UnknownDim
	if x, ok := c.shape(0); ok {
		if len(x) != 4 {
			c.errf("X has rank %d, want 4", len(x))
			return
		}
		ch = x[1]
	}
	if s, ok := c.shape(1); ok {
		if len(s) != 2 {
			c.errf("rois has rank %d, want 2", len(s))
			return
		}
		r = s[0]
	}
	c.set(0, tensorType(dt, []ir.Dim{r, ch, ir.D(oh), ir.D(ow)}))
}

// GridSample: X [N, C, D…], grid [N, D_out…, r] → [N, C, D_out…].
func inferGridSample(c *nctx) {
	if !c.need(0, "X") || !c.need(1, "grid") {
		return
	}
	dt := c.dtype(0)
	x, xok := c.shape(0)
	g, gok := c.shape(1)
	if !xok || !gok {
		c.set(0, unknownType(dt))
		return
	}
	if len(x) < 3 || len(g) != len(x) {
		c.errf("X %s and grid %s: want ranks r ≥ 3 and r", shapeString(x), shapeString(g))
		return
	}
	out := []ir.Dim{unify(x[0], g[0]), x[1]}
	out = append(out, g[1:len(g)-1]...)
	c.set(0, tensorType(dt, out))
}

// Col2Im: input [N, C·∏block, L], image_shape, block_shape → [N, C, image…].
func inferCol2Im(c *nctx) {
	if !c.need(0, "input") || !c.need(1, "image_shape") || !c.need(2, "block_shape") {
		return
	}
	dt := c.dtype(0)
	img, iok := c.constInts(1)
	blk, bok := c.constInts(2)
	x, xok := c.shape(0)
	if !iok || !bok || !xok {
		if s, ok := c.shape(1); ok && len(s) == 1 && s[0].Known() {
			c.set(0, tensorType(dt, unknownDims(int(s[0].Size)+2)))
			return
		}
		c.set(0, unknownType(dt))
		return
	}
	if len(x) != 3 || len(img) != len(blk) {
		c.errf("input %s, image_shape %v and block_shape %v do not fit", shapeString(x), img, blk)
		return
	}
	p := int64(1)
	for _, b := range blk {
		p *= b
	}
	ch, ok := ir.UnknownDim, false
	if p > 0 {
		ch, ok = dimDivExact(x[1], p)
	}
	if !ok {
		c.errf("input channels %s are not a multiple of the block size %d", x[1], p)
		return
	}
	out := []ir.Dim{x[0], ch}
	out = append(out, staticDims(img...)...)
	c.set(0, tensorType(dt, out))
}

// convGeom is what the convolution family shares: the input and weight
// shapes, the number of spatial axes, the group count and the kernel size
// per spatial axis (-1 where unknown).
type convGeom struct {
	x, w     []ir.Dim
	xok, wok bool
	n        int
	group    int64
	kernel   []int64
}

// convGeometry reads input xi and weight wi of a Conv-like node ([N, C, D…]
// and [M, C/group, k…] for Conv, [C, M/group, k…] for ConvTranspose) with
// the group and kernel_shape attributes, checking that ranks and kernel
// sizes agree. With nothing known it sets an unknown output of dtype dt;
// on a mismatch it reports the error. Either way it returns false.
func convGeometry(c *nctx, xi, wi int, dt ir.DType) (convGeom, bool) {
	var g convGeom
	g.x, g.xok = c.shape(xi)
	g.w, g.wok = c.shape(wi)
	kshape, hasK := c.attrInts("kernel_shape")
	switch {
	case g.xok:
		g.n = len(g.x) - 2
	case g.wok:
		g.n = len(g.w) - 2
	case hasK:
		g.n = len(kshape)
	default:
		c.set(0, unknownType(dt))
		return g, false
	}
	if g.n < 1 {
		c.errf("input rank %d; %s needs at least 3 (N, C, spatial axes)", g.n+2, c.n.Op)
		return g, false
	}
	if g.xok && g.wok && len(g.w) != len(g.x) {
		c.errf("weight rank %d does not match input rank %d", len(g.w), len(g.x))
		return g, false
	}
	g.group = c.attrInt("group", 1)
	if g.group < 1 {
		c.errf("attribute group is %d, want at least 1", g.group)
		return g, false
	}
	g.kernel = make([]int64, g.n)
	for i := range g.kernel {
		g.kernel[i] = -1
		if g.wok && g.w[2+i].Known() {
			g.kernel[i] = g.w[2+i].Size
		}
	}
	if hasK {
		if len(kshape) != g.n {
			c.errf("attribute kernel_shape has %d values, want %d", len(kshape), g.n)
			return g, false
		}
		for i, k := range kshape {
			if k < 1 {
				c.errf("attribute kernel_shape has value %d, want at least 1", k)
				return g, false
			}
			if g.kernel[i] >= 0 && g.kernel[i] != k {
				c.errf("attribute kernel_shape %v does not match weight shape %s", kshape, shapeString(g.w))
				return g, false
			}
			g.kernel[i] = k
		}
	}
	return g, true
}
