package autodiff

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// builder appends nodes and constants to a graph, choosing each operator's
// form for the graph's standard-domain opset (ReduceSum takes its axes as an
// input from opset 13, ReduceMean from 18, Squeeze/Unsqueeze/Split from 13,
// Slice from 10, Pad from 11), and gives every value it creates a type and
// a name unique in the graph.
//
// With tf set the builder writes TensorFlow ops (ir.TFDomain) instead, in
// the forms TensorFlow.js's graph executor runs (builder_tf.go): the same
// methods, so that the driver and the rules written against them serve
// both formats.
type builder struct {
	g     *ir.Graph
	opset int64
	tf    bool
	names map[string]bool
	n     int
}

func newBuilder(g *ir.Graph, opset int64) *builder {
	b := &builder{g: g, opset: opset, names: map[string]bool{}}
	g.Walk(func(sg *ir.Graph) {
		for _, v := range sg.Inputs {
			b.names[v.Name] = true
		}
		for _, v := range sg.Params {
			b.names[v.Name] = true
		}
		for _, n := range sg.Nodes {
			for _, o := range n.Outputs {
				if o != nil {
					b.names[o.Name] = true
				}
			}
		}
	})
	return b
}

// fresh returns a name based on base that no value of the graph has.
func (b *builder) fresh(base string) string {
	name := base
	for i := 1; b.names[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	b.names[name] = true
	return name
}

func (b *builder) tmp() string {
	b.n++
	return b.fresh("ad/" + strconv.Itoa(b.n))
}

// add appends a node with one output of type t.
func (b *builder) add(op string, t ir.TensorType, ins []*ir.Value, attrs ...ir.Attr) *ir.Value {
	domain := ""
	if b.tf {
		op, attrs = tfForm(op, ins, attrs)
		domain = ir.TFDomain
	}
	n := b.g.NewNode(op, domain, ins, []string{b.tmp()})
	for _, a := range attrs {
		n.SetAttr(a)
	}
	n.Name = n.Outputs[0].Name
	n.Outputs[0].Type = t.Clone()
	return n.Outputs[0]
}

// rename gives v a fresh name derived from base (v must have been created by
// the builder).
func (b *builder) rename(v *ir.Value, base string) {
	delete(b.names, v.Name)
	v.Name = b.fresh(base)
	if v.Def != nil && v.Def.Name != "" {
		v.Def.Name = v.Name
	}
}

// ---- constants ----

// constant adds a parameter holding t.
func (b *builder) constant(t *ir.Tensor) *ir.Value {
	name := b.tmp()
	t.Name = name
	return b.g.AddParam(name, t.Type(), t)
}

func (b *builder) ints(vals ...int64) *ir.Value {
	if b.tf {
		return b.constant(int32Tensor([]int64{int64(len(vals))}, vals...))
	}
	return b.constant(ir.Int64Tensor([]int64{int64(len(vals))}, vals...))
}

// scalar is a rank-0 constant of floating-point type dt.
func (b *builder) scalar(dt ir.DType, v float64) *ir.Value {
	return b.constant(floatTensor(dt, nil, []float64{v}))
}

// floatTensor encodes vals as a tensor of the floating-point type dt.
func floatTensor(dt ir.DType, shape []int64, vals []float64) *ir.Tensor {
	t := &ir.Tensor{DType: dt, Shape: slices.Clone(shape)}
	switch dt {
	case ir.Float64:
		t.Raw = make([]byte, 8*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint64(t.Raw[8*i:], math.Float64bits(v))
		}
	case ir.Float32:
		t.Raw = make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(t.Raw[4*i:], math.Float32bits(float32(v)))
		}
	case ir.Float16:
		t.Raw = make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(t.Raw[2*i:], float32ToHalf(float32(v)))
		}
	default:
		panic(fmt.Sprintf("autodiff: floatTensor of %v", dt))
	}
	return t
}

// float32ToHalf rounds to the nearest binary16 (ties to even), enough for
// the few constants (0, 1, 0.5, …) the rules need.
func float32ToHalf(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23&0xff) - 127 + 15
	mant := bits & 0x7fffff
	switch {
	case bits&0x7fffffff == 0:
		return sign
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		return sign // flush tiny values; not needed by the rules
	}
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	if mant&0x1fff > 0x1000 || (mant&0x1fff == 0x1000 && h&1 == 1) {
		h++
	}
	return h
}

// onnxCode is the TensorProto.DataType number of dt (for Cast's "to" and
// ConstantOfShape's value).
func onnxCode(dt ir.DType) int64 {
	switch dt {
	case ir.Float32:
		return 1
	case ir.Uint8:
		return 2
	case ir.Int8:
		return 3
	case ir.Int32:
		return 6
	case ir.Int64:
		return 7
	case ir.Bool:
		return 9
	case ir.Float16:
		return 10
	case ir.Float64:
		return 11
	case ir.BFloat16:
		return 16
	}
	panic(fmt.Sprintf("autodiff: no ONNX code for %v", dt))
}

// ---- shapes ----

func dimsOf(v *ir.Value) []int64 {
	d, ok := v.Type.Dims()
	if !ok {
		panic(fmt.Sprintf("autodiff: value %s has no static shape (%v)", v, v.Type))
	}
	return d
}

func tensorType(dt ir.DType, dims []int64) ir.TensorType { return ir.TensorOf(dt, dims...) }

// broadcastDims is the multidirectional (numpy) broadcast of shapes.
func broadcastDims(shapes ...[]int64) []int64 {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int64, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := r - len(s)
		for i, d := range s {
			if d != 1 {
				out[off+i] = d
			}
		}
	}
	return out
}

func prod(dims []int64) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	return n
}

// ---- operators ----

// unary applies an elementwise op that keeps x's type.
func (b *builder) unary(op string, x *ir.Value, attrs ...ir.Attr) *ir.Value {
	return b.add(op, x.Type, []*ir.Value{x}, attrs...)
}

// binary applies a broadcasting elementwise op whose result has the element
// type dt (Undefined: the first input's).
func (b *builder) binaryT(op string, dt ir.DType, x, y *ir.Value) *ir.Value {
	if dt == ir.Undefined {
		dt = x.Type.DType
	}
	return b.add(op, tensorType(dt, broadcastDims(dimsOf(x), dimsOf(y))), []*ir.Value{x, y})
}

func (b *builder) binary(op string, x, y *ir.Value) *ir.Value {
	return b.binaryT(op, ir.Undefined, x, y)
}

func (b *builder) mul(x, y *ir.Value) *ir.Value { return b.binary("Mul", x, y) }
func (b *builder) div(x, y *ir.Value) *ir.Value { return b.binary("Div", x, y) }
func (b *builder) sub(x, y *ir.Value) *ir.Value { return b.binary("Sub", x, y) }
func (b *builder) addv(x, y *ir.Value) *ir.Value {
	return b.binary("Add", x, y)
}
func (b *builder) neg(x *ir.Value) *ir.Value { return b.unary("Neg", x) }

// scale multiplies x by the constant c (returning x when c is 1).
func (b *builder) scale(x *ir.Value, c float64) *ir.Value {
	if c == 1 {
		return x
	}
	if c == -1 {
		return b.neg(x)
	}
	return b.mul(x, b.scalar(x.Type.DType, c))
}

// compare applies a comparison (Greater, Less, Equal, …): a bool result.
func (b *builder) compare(op string, x, y *ir.Value) *ir.Value { return b.binaryT(op, ir.Bool, x, y) }

// where selects x where c holds and y elsewhere.
func (b *builder) where(c, x, y *ir.Value) *ir.Value {
	dt := x.Type.DType
	return b.add("Where", tensorType(dt, broadcastDims(dimsOf(c), dimsOf(x), dimsOf(y))), []*ir.Value{c, x, y})
}

func (b *builder) cast(x *ir.Value, dt ir.DType) *ir.Value {
	if x.Type.DType == dt {
		return x
	}
	if b.tf {
		return b.add("Cast", tensorType(dt, dimsOf(x)), []*ir.Value{x}, tfType("SrcT", x.Type.DType), tfType("DstT", dt), ir.IntAttr("Truncate", 0))
	}
	return b.add("Cast", tensorType(dt, dimsOf(x)), []*ir.Value{x}, ir.IntAttr("to", onnxCode(dt)))
}

// sum adds the values (all of one shape).
func (b *builder) sum(vs []*ir.Value) *ir.Value {
	if len(vs) == 1 {
		return vs[0]
	}
	if b.tf {
		return b.add("AddN", vs[0].Type, vs, ir.IntAttr("N", int64(len(vs))))
	}
	return b.add("Sum", vs[0].Type, vs)
}

func (b *builder) reshape(x *ir.Value, dims []int64) *ir.Value {
	if slices.Equal(dimsOf(x), dims) {
		return x
	}
	if b.tf {
		return b.add("Reshape", tensorType(x.Type.DType, dims), []*ir.Value{x, b.ints(dims...)}, tfType("Tshape", ir.Int32))
	}
	return b.add("Reshape", tensorType(x.Type.DType, dims), []*ir.Value{x, b.ints(dims...)})
}

func (b *builder) transpose(x *ir.Value, perm []int64) *ir.Value {
	identity := true
	for i, p := range perm {
		if p != int64(i) {
			identity = false
		}
	}
	if identity {
		return x
	}
	in := dimsOf(x)
	out := make([]int64, len(perm))
	for i, p := range perm {
		out[i] = in[p]
	}
	if b.tf {
		return b.add("Transpose", tensorType(x.Type.DType, out), []*ir.Value{x, b.ints(perm...)}, tfType("Tperm", ir.Int32))
	}
	return b.add("Transpose", tensorType(x.Type.DType, out), []*ir.Value{x}, ir.IntsAttr("perm", perm...))
}

// reduced is the shape of x reduced over axes.
func reduced(dims []int64, axes []int64, keep bool) []int64 {
	var out []int64
	for i, d := range dims {
		if slices.Contains(axes, int64(i)) {
			if keep {
				out = append(out, 1)
			}
			continue
		}
		out = append(out, d)
	}
	return out
}

// reduce applies ReduceSum or ReduceMean over axes (non-empty).
func (b *builder) reduce(op string, x *ir.Value, axes []int64, keep bool) *ir.Value {
	t := tensorType(x.Type.DType, reduced(dimsOf(x), axes, keep))
	if b.tf {
		op = map[string]string{"ReduceSum": "Sum", "ReduceMean": "Mean"}[op]
		return b.add(op, t, []*ir.Value{x, b.ints(axes...)}, ir.IntAttr("keep_dims", boolInt(keep)), tfType("Tidx", ir.Int32))
	}
	kd := ir.IntAttr("keepdims", boolInt(keep))
	inputAxes := (op == "ReduceSum" && b.opset >= 13) || b.opset >= 18
	if inputAxes {
		return b.add(op, t, []*ir.Value{x, b.ints(axes...)}, kd)
	}
	return b.add(op, t, []*ir.Value{x}, ir.IntsAttr("axes", axes...), kd)
}

func boolInt(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// reduceAll sums (or averages) every element of x into a scalar.
func (b *builder) reduceAll(op string, x *ir.Value) *ir.Value {
	r := len(dimsOf(x))
	if r == 0 {
		return x
	}
	axes := make([]int64, r)
	for i := range axes {
		axes[i] = int64(i)
	}
	return b.reduce(op, x, axes, false)
}

// unbroadcast sums g, whose shape is a broadcast of dims, back to dims:
// ReduceSum over the leading axes that dims lacks and over the axes where
// dims has size 1 and g does not, then Reshape to dims.
func (b *builder) unbroadcast(g *ir.Value, dims []int64) *ir.Value {
	gd := dimsOf(g)
	if slices.Equal(gd, dims) {
		return g
	}
	off := len(gd) - len(dims)
	var axes []int64
	for i, d := range gd {
		if i < off || (dims[i-off] == 1 && d != 1) {
			axes = append(axes, int64(i))
		}
	}
	if len(axes) > 0 {
		g = b.reduce("ReduceSum", g, axes, true)
	}
	return b.reshape(g, dims)
}

// expand broadcasts x to dims.
func (b *builder) expand(x *ir.Value, dims []int64) *ir.Value {
	if slices.Equal(dimsOf(x), dims) {
		return x
	}
	if b.tf {
		return b.add("BroadcastTo", tensorType(x.Type.DType, dims), []*ir.Value{x, b.ints(dims...)}, tfType("Tidx", ir.Int32))
	}
	return b.add("Expand", tensorType(x.Type.DType, dims), []*ir.Value{x, b.ints(dims...)})
}

// zeros is a tensor of zeros of type dt and shape dims, made at run time
// (ConstantOfShape) so that it costs no parameter memory.
func (b *builder) zeros(dt ir.DType, dims []int64) *ir.Value {
	if b.tf {
		return b.add("Fill", tensorType(dt, dims), []*ir.Value{b.ints(dims...), b.scalar(dt, 0)}, tfType("index_type", ir.Int32))
	}
	val := floatTensor(dt, []int64{1}, []float64{0})
	return b.add("ConstantOfShape", tensorType(dt, dims), []*ir.Value{b.ints(dims...)}, ir.TensorAttr("value", val))
}

// slice takes x[starts:ends] along axes (step 1).
func (b *builder) slice(x *ir.Value, starts, ends, axes []int64) *ir.Value {
	dims := slices.Clone(dimsOf(x))
	for i, a := range axes {
		dims[a] = ends[i] - starts[i]
	}
	if slices.Equal(dims, dimsOf(x)) {
		return x
	}
	t := tensorType(x.Type.DType, dims)
	if b.tf {
		size := slices.Clone(dimsOf(x))
		begin := make([]int64, len(size))
		for i, a := range axes {
			begin[a], size[a] = starts[i], ends[i]-starts[i]
		}
		return b.add("Slice", t, []*ir.Value{x, b.ints(begin...), b.ints(size...)}, tfType("Index", ir.Int32))
	}
	if b.opset >= 10 {
		return b.add("Slice", t, []*ir.Value{x, b.ints(starts...), b.ints(ends...), b.ints(axes...)})
	}
	return b.add("Slice", t, []*ir.Value{x}, ir.IntsAttr("starts", starts...), ir.IntsAttr("ends", ends...), ir.IntsAttr("axes", axes...))
}

// pad pads x with zeros (pads in ONNX order: all begins, then all ends;
// negative entries crop).
func (b *builder) pad(x *ir.Value, pads []int64) *ir.Value {
	dims := slices.Clone(dimsOf(x))
	r := len(dims)
	zero := true
	for i := range dims {
		dims[i] += pads[i] + pads[i+r]
		if pads[i] != 0 || pads[i+r] != 0 {
			zero = false
		}
	}
	if zero {
		return x
	}
	t := tensorType(x.Type.DType, dims)
	if b.tf {
		return b.tfPad(x, pads, t)
	}
	if b.opset >= 11 {
		return b.add("Pad", t, []*ir.Value{x, b.ints(pads...)}, ir.StringAttr("mode", "constant"))
	}
	return b.add("Pad", t, []*ir.Value{x}, ir.StringAttr("mode", "constant"), ir.IntsAttr("pads", pads...))
}

// concat joins xs along axis.
func (b *builder) concat(xs []*ir.Value, axis int64) *ir.Value {
	if len(xs) == 1 {
		return xs[0]
	}
	dims := slices.Clone(dimsOf(xs[0]))
	dims[axis] = 0
	for _, x := range xs {
		dims[axis] += dimsOf(x)[axis]
	}
	if b.tf {
		ins := append(slices.Clone(xs), b.constant(int32Tensor(nil, axis)))
		return b.add("ConcatV2", tensorType(xs[0].Type.DType, dims), ins, ir.IntAttr("N", int64(len(xs))), tfType("Tidx", ir.Int32))
	}
	return b.add("Concat", tensorType(xs[0].Type.DType, dims), xs, ir.IntAttr("axis", axis))
}

// matmul is MatMul with numpy semantics on inputs of rank ≥ 2. In the
// TensorFlow form it is BatchMatMulV2 where either has batch axes
// (TensorFlow's MatMul is 2-D), each operand whose batch axes differ from
// the product's broadcast to them first: TensorFlow.js 4.22 indexes an
// operand's flattened batch modulo its size, which is the broadcast only
// when the operand's batch is a suffix of the product's.
func (b *builder) matmul(x, y *ir.Value) *ir.Value {
	xd, yd := dimsOf(x), dimsOf(y)
	batch := broadcastDims(xd[:len(xd)-2], yd[:len(yd)-2])
	out := append(batch, xd[len(xd)-2], yd[len(yd)-1])
	if b.tf && len(out) > 2 {
		full := func(v *ir.Value) *ir.Value {
			d := dimsOf(v)
			if slices.Equal(d[:len(d)-2], batch) {
				return v
			}
			return b.expand(v, append(slices.Clone(batch), d[len(d)-2:]...))
		}
		return b.add("BatchMatMulV2", tensorType(x.Type.DType, out), []*ir.Value{full(x), full(y)}, ir.IntAttr("adj_x", 0), ir.IntAttr("adj_y", 0))
	}
	return b.add("MatMul", tensorType(x.Type.DType, out), []*ir.Value{x, y})
}

// swapLast transposes the last two axes.
func (b *builder) swapLast(x *ir.Value) *ir.Value {
	r := len(dimsOf(x))
	perm := make([]int64, r)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[r-1], perm[r-2] = perm[r-2], perm[r-1]
	return b.transpose(x, perm)
}

// gemm computes alpha·op(a)·op(c) with Gemm (2-D inputs).
func (b *builder) gemm(a *ir.Value, ta bool, c *ir.Value, tc bool, alpha float64) *ir.Value {
	ad, cd := dimsOf(a), dimsOf(c)
	m, n := ad[0], cd[1]
	if ta {
		m = ad[1]
	}
	if tc {
		n = cd[0]
	}
	attrs := []ir.Attr{ir.IntAttr("transA", boolInt(ta)), ir.IntAttr("transB", boolInt(tc))}
	if alpha != 1 {
		attrs = append(attrs, ir.FloatAttr("alpha", float32(alpha)))
	}
	return b.add("Gemm", tensorType(a.Type.DType, []int64{m, n}), []*ir.Value{a, c}, attrs...)
}

// identity copies x under a new name.
func (b *builder) identity(x *ir.Value, name string) *ir.Value {
	op, domain := "Identity", ""
	if b.tf {
		domain = ir.TFDomain
	}
	n := b.g.NewNode(op, domain, []*ir.Value{x}, []string{b.fresh(name)})
	if b.tf {
		n.SetAttr(tfType("T", x.Type.DType))
	}
	n.Name = n.Outputs[0].Name
	n.Outputs[0].Type = x.Type.Clone()
	return n.Outputs[0]
}
