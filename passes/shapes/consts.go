package shapes

import (
	"math"

	"github.com/remat-compile/remat/ir"
)

// Constant values known during inference. The pass never changes the graph:
// this side table only lets shape computations inside the graph (Shape →
// Gather → Concat → Reshape, …) resolve to sizes. Elements may be symbolic:
// Shape of an f32[batch,3] value is the vector [batch, 3], and Gather of
// index 1 from it is the known 3.

// maxConstElems bounds the size of the tensors the table holds: shape
// computations are small, and weights are never decoded beyond it.
const maxConstElems = 4096

// unkSym marks an element whose value is not known at all.
const unkSym = "\x00"

// elem is one element: i for integer and bool tensors, f for floating-point
// ones, or, when sym is set, a symbolic dimension (or unknown, unkSym).
type elem struct {
	i   int64
	f   float64
	sym string
}

func (e elem) known() bool { return e.sym == "" }

type cval struct {
	dt    ir.DType
	shape []int64
	e     []elem
}

func isFloatType(dt ir.DType) bool { return dt.IsFloat() }

// foldable reports whether the pass keeps constant values of type dt.
func foldable(dt ir.DType) bool {
	switch dt {
	case ir.Float32, ir.Float64, ir.Float16, ir.BFloat16,
		ir.Int8, ir.Int16, ir.Int32, ir.Int64, ir.Uint8, ir.Uint16, ir.Uint32, ir.Uint64, ir.Bool:
		return true
	}
	return false
}

func numel(shape []int64) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > maxConstElems*4/d+1 {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// fromTensor decodes t when it is small and numeric.
func fromTensor(t *ir.Tensor) *cval {
	if t == nil || !foldable(t.DType) {
		return nil
	}
	n, ok := numel(t.Shape)
	if !ok || n > maxConstElems {
		return nil
	}
	c := &cval{dt: t.DType, shape: append([]int64{}, t.Shape...), e: make([]elem, n)}
	if isFloatType(t.DType) {
		fs, ok := t.Float64s()
		if !ok {
			return nil
		}
		for i, f := range fs {
			c.e[i].f = f
		}
		return c
	}
	is, ok := t.Int64s()
	if !ok {
		return nil
	}
	for i, v := range is {
		c.e[i].i = v
	}
	return c
}

func newCval(dt ir.DType, shape []int64) *cval {
	n, ok := numel(shape)
	if !ok || n > maxConstElems || !foldable(dt) {
		return nil
	}
	return &cval{dt: dt, shape: append([]int64{}, shape...), e: make([]elem, n)}
}

// intVec builds an int64 vector.
func intVec(vals ...int64) *cval {
	c := &cval{dt: ir.Int64, shape: []int64{int64(len(vals))}, e: make([]elem, len(vals))}
	for i, v := range vals {
		c.e[i].i = v
	}
	return c
}

// dimVec builds the int64 vector of dims (the value of Shape).
func dimVec(dims []ir.Dim) *cval {
	c := &cval{dt: ir.Int64, shape: []int64{int64(len(dims))}, e: make([]elem, len(dims))}
	for i, d := range dims {
		switch {
		case d.Known():
			c.e[i].i = d.Size
		case d.Sym != "":
			c.e[i].sym = d.Sym
		default:
			c.e[i].sym = unkSym
		}
	}
	return c
}

func (c *cval) rank() int { return len(c.shape) }

// reshaped is cv with another shape of as many elements, or nil.
func reshaped(cv *cval, sizes []int64) *cval {
	if n, ok := numel(sizes); !ok || n != int64(len(cv.e)) {
		return nil
	}
	return &cval{dt: cv.dt, shape: append([]int64{}, sizes...), e: cv.e}
}

// full reports whether every element is known.
func (c *cval) full() bool {
	for _, e := range c.e {
		if e.sym != "" {
			return false
		}
	}
	return true
}

// ints returns the elements as integers; false when one is not known or the
// tensor is floating-point with a non-integral element.
func (c *cval) ints() ([]int64, bool) {
	out := make([]int64, len(c.e))
	for k := range c.e {
		v, ok := c.intAt(k)
		if !ok {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

func (c *cval) intAt(k int) (int64, bool) {
	e := c.e[k]
	if e.sym != "" {
		return 0, false
	}
	if isFloatType(c.dt) {
		if e.f != math.Trunc(e.f) || math.Abs(e.f) > 1<<62 {
			return 0, false
		}
		return int64(e.f), true
	}
	return e.i, true
}

func (c *cval) floats() ([]float64, bool) {
	out := make([]float64, len(c.e))
	for k, e := range c.e {
		if e.sym != "" {
			return nil, false
		}
		if isFloatType(c.dt) {
			out[k] = e.f
		} else {
			out[k] = float64(e.i)
		}
	}
	return out, true
}

// dimAt reads element k as a dimension: a known non-negative size, a
// symbol, or unknown (also for negative values; callers that give negative
// values a meaning check them first).
func (c *cval) dimAt(k int) ir.Dim {
	e := c.e[k]
	switch {
	case e.sym == unkSym:
		return ir.UnknownDim
	case e.sym != "":
		return ir.SymDim(e.sym)
	}
	v, ok := c.intAt(k)
	if !ok || v < 0 {
		return ir.UnknownDim
	}
	return ir.D(v)
}

// scalar reports the single element of a scalar or one-element tensor.
func (c *cval) single() (elem, bool) {
	if c == nil || len(c.e) != 1 {
		return elem{}, false
	}
	return c.e[0], true
}

func (c *cval) staticType() ir.TensorType { return ir.TensorOf(c.dt, c.shape...) }

// strides of a row-major shape.
func strides(shape []int64) []int64 {
	s := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// remap builds a tensor of shape out whose element at each multi-index idx
// is src's element at flat position from(idx), or fails when from reports -1.
func remap(src *cval, dt ir.DType, out []int64, from func(idx []int64) int64) *cval {
	c := newCval(dt, out)
	if c == nil {
		return nil
	}
	idx := make([]int64, len(out))
	for k := range c.e {
		j := from(idx)
		if j < 0 || j >= int64(len(src.e)) {
			return nil
		}
		c.e[k] = src.e[j]
		for a := len(idx) - 1; a >= 0; a-- {
			idx[a]++
			if idx[a] < out[a] {
				break
			}
			idx[a] = 0
		}
	}
	return c
}

// broadcastIndex maps an output multi-index to the flat index of an input
// of the given shape under numpy broadcasting.
func broadcastIndex(in []int64, inStrides []int64, idx []int64) int64 {
	off := len(idx) - len(in)
	var j int64
	for a := range in {
		if in[a] != 1 {
			j += idx[a+off] * inStrides[a]
		}
	}
	return j
}

// foldElementwise applies f to inputs broadcast to the output shape.
func foldElementwise(out []int64, dt ir.DType, ins []*cval, f func(es []elem) (elem, bool)) *cval {
	for _, in := range ins {
		if in == nil || len(in.shape) > len(out) {
			return nil
		}
		for a, d := range in.shape {
			if d != 1 && d != out[len(out)-len(in.shape)+a] {
				return nil
			}
		}
	}
	c := newCval(dt, out)
	if c == nil {
		return nil
	}
	st := make([][]int64, len(ins))
	for i, in := range ins {
		st[i] = strides(in.shape)
	}
	idx := make([]int64, len(out))
	es := make([]elem, len(ins))
	for k := range c.e {
		for i, in := range ins {
			es[i] = in.e[broadcastIndex(in.shape, st[i], idx)]
		}
		r, ok := f(es)
		if !ok {
			return nil
		}
		c.e[k] = r
		for a := len(idx) - 1; a >= 0; a-- {
			idx[a]++
			if idx[a] < out[a] {
				break
			}
			idx[a] = 0
		}
	}
	return c
}

// wrapInt reduces v to the range of integer type dt, as a cast or an
// overflowing operation in that type does.
func wrapInt(dt ir.DType, v int64) int64 {
	switch dt {
	case ir.Int8:
		return int64(int8(v))
	case ir.Int16:
		return int64(int16(v))
	case ir.Int32:
		return int64(int32(v))
	case ir.Uint8:
		return int64(uint8(v))
	case ir.Uint16:
		return int64(uint16(v))
	case ir.Uint32:
		return int64(uint32(v))
	case ir.Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

func roundFloat(dt ir.DType, f float64) float64 {
	if dt == ir.Float32 {
		return float64(float32(f))
	}
	return f
}

var unknownElem = elem{sym: unkSym}

// castElem converts e from type from to type to.
func castElem(from, to ir.DType, e elem) (elem, bool) {
	if e.sym != "" {
		if to == ir.Bool {
			return unknownElem, true
		}
		return e, true
	}
	switch {
	case isFloatType(from) && isFloatType(to):
		return elem{f: roundFloat(to, e.f)}, true
	case isFloatType(from) && to == ir.Bool:
		if e.f != 0 {
			return elem{i: 1}, true
		}
		return elem{}, true
	case isFloatType(from):
		if math.IsNaN(e.f) || math.Abs(e.f) >= 1<<63 {
			return elem{}, false
		}
		return elem{i: wrapInt(to, int64(e.f))}, true
	case isFloatType(to):
		v := float64(e.i)
		if from == ir.Uint64 {
			v = float64(uint64(e.i))
		}
		return elem{f: roundFloat(to, v)}, true
	}
	return elem{i: wrapInt(to, e.i)}, true
}

// isVal reports whether a known element equals v.
func isVal(dt ir.DType, e elem, v int64) bool {
	if e.sym != "" {
		return false
	}
	if isFloatType(dt) {
		return e.f == float64(v)
	}
	return e.i == v
}

func boolElem(b bool) elem {
	if b {
		return elem{i: 1}
	}
	return elem{}
}

// binElem evaluates a binary elementwise op on elements of type dt. The
// result has type dt, or Bool for comparisons and logic.
func binElem(op string, dt ir.DType, fmod bool, a, b elem) (elem, bool) {
	if a.sym != "" || b.sym != "" {
		return symBin(op, dt, a, b), true
	}
	fl := isFloatType(dt)
	switch op {
	case "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual":
		var c int
		if fl {
			switch {
			case math.IsNaN(a.f) || math.IsNaN(b.f):
				return boolElem(false), true
			case a.f < b.f:
				c = -1
			case a.f > b.f:
				c = 1
			}
		} else {
			x, y := a.i, b.i
			if dt == ir.Uint64 {
				switch {
				case uint64(x) < uint64(y):
					c = -1
				case uint64(x) > uint64(y):
					c = 1
				}
			} else {
				switch {
				case x < y:
					c = -1
				case x > y:
					c = 1
				}
			}
		}
		switch op {
		case "Equal":
			return boolElem(c == 0), true
		case "Less":
			return boolElem(c < 0), true
		case "Greater":
			return boolElem(c > 0), true
		case "LessOrEqual":
			return boolElem(c <= 0), true
		}
		return boolElem(c >= 0), true
	case "And":
		return boolElem(a.i != 0 && b.i != 0), true
	case "Or":
		return boolElem(a.i != 0 || b.i != 0), true
	case "Xor":
		return boolElem((a.i != 0) != (b.i != 0)), true
	}
	if fl {
		var r float64
		switch op {
		case "Add", "Sum":
			r = a.f + b.f
		case "Sub":
			r = a.f - b.f
		case "Mul":
			r = a.f * b.f
		case "Div":
			r = a.f / b.f
		case "Max":
			r = math.Max(a.f, b.f)
		case "Min":
			r = math.Min(a.f, b.f)
		case "Pow":
			r = math.Pow(a.f, b.f)
		case "Mod":
			r = math.Mod(a.f, b.f)
		default:
			return elem{}, false
		}
		return elem{f: roundFloat(dt, r)}, true
	}
	x, y := a.i, b.i
	var r int64
	switch op {
	case "Add", "Sum":
		r = x + y
	case "Sub":
		r = x - y
	case "Mul":
		r = x * y
	case "Div":
		if y == 0 || (x == math.MinInt64 && y == -1) {
			return elem{}, false
		}
		r = x / y
	case "Mod":
		if y == 0 || (x == math.MinInt64 && y == -1) {
			return elem{}, false
		}
		r = x % y
		if !fmod && r != 0 && (r < 0) != (y < 0) {
			r += y
		}
	case "Max":
		r = max(x, y)
	case "Min":
		r = min(x, y)
	case "Pow":
		if y < 0 || y > 62 {
			return elem{}, false
		}
		r = 1
		for range y {
			r *= x
		}
	case "BitwiseAnd":
		r = x & y
	case "BitwiseOr":
		r = x | y
	case "BitwiseXor":
		r = x ^ y
	default:
		return elem{}, false
	}
	return elem{i: wrapInt(dt, r)}, true
}

// symBin is binElem when an operand is symbolic: identities keep the
// symbol, everything else is unknown.
func symBin(op string, dt ir.DType, a, b elem) elem {
	same := a.sym != "" && a.sym != unkSym && a.sym == b.sym
	switch op {
	case "Add", "Sum":
		if isVal(dt, b, 0) {
			return a
		}
		if isVal(dt, a, 0) {
			return b
		}
	case "Sub":
		if isVal(dt, b, 0) {
			return a
		}
		if same {
			return elem{}
		}
	case "Mul":
		if isVal(dt, b, 1) {
			return a
		}
		if isVal(dt, a, 1) {
			return b
		}
		if isVal(dt, a, 0) || isVal(dt, b, 0) {
			return elem{}
		}
	case "Div":
		if isVal(dt, b, 1) {
			return a
		}
	case "Max", "Min":
		if same {
			return a
		}
	case "Equal", "LessOrEqual", "GreaterOrEqual":
		if same {
			return elem{i: 1}
		}
	case "Less", "Greater":
		if same {
			return elem{}
		}
	}
	return unknownElem
}

// unElem evaluates a unary elementwise op.
func unElem(op string, dt ir.DType, a elem) (elem, bool) {
	if a.sym != "" {
		switch op {
		case "Identity", "Floor", "Ceil", "Round", "Abs", "Relu":
			return a, true // symbolic dimensions are non-negative integers
		}
		return unknownElem, true
	}
	if isFloatType(dt) {
		var r float64
		switch op {
		case "Identity":
			r = a.f
		case "Neg":
			r = -a.f
		case "Abs":
			r = math.Abs(a.f)
		case "Floor":
			r = math.Floor(a.f)
		case "Ceil":
			r = math.Ceil(a.f)
		case "Round":
			r = math.RoundToEven(a.f)
		case "Sqrt":
			r = math.Sqrt(a.f)
		case "Reciprocal":
			r = 1 / a.f
		case "Relu":
			r = math.Max(a.f, 0)
		case "Exp":
			r = math.Exp(a.f)
		case "Log":
			r = math.Log(a.f)
		case "Sign":
			switch {
			case a.f > 0:
				r = 1
			case a.f < 0:
				r = -1
			}
		default:
			return elem{}, false
		}
		return elem{f: roundFloat(dt, r)}, true
	}
	switch op {
	case "Identity", "Floor", "Ceil", "Round":
		return a, true
	case "Neg":
		return elem{i: wrapInt(dt, -a.i)}, true
	case "Abs":
		if a.i < 0 {
			return elem{i: wrapInt(dt, -a.i)}, true
		}
		return a, true
	case "Relu":
		return elem{i: max(a.i, 0)}, true
	case "Sign":
		switch {
		case a.i > 0:
			return elem{i: 1}, true
		case a.i < 0:
			return elem{i: -1}, true
		}
		return elem{}, true
	case "Not":
		return boolElem(a.i == 0), true
	case "BitwiseNot":
		return elem{i: wrapInt(dt, ^a.i)}, true
	}
	return elem{}, false
}

// truthy reports whether a known element is non-zero.
func truthy(dt ir.DType, e elem) bool {
	if isFloatType(dt) {
		return e.f != 0
	}
	return e.i != 0
}
