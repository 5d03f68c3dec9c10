package zoo

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/remat-compile/remat/ir"
)

// pcgStream is the second word of the PCG state; the seed is the first.
const pcgStream = 0x9e3779b97f4a7c15

// builder appends nodes and parameters to a graph. It records the first
// error (an impossible parameter shape, a constant defined twice with
// different contents) and carries on, so that model code needs no error
// checks. A dry builder allocates no weights: it only adds up their bytes.
type builder struct {
	g      *ir.Graph
	rng    *rand.Rand
	dry    bool
	bytes  int64 // parameter bytes so far, saturating at maxParamBytes+1
	err    error
	consts map[string]*ir.Value
}

func newBuilder(name, doc string, seed uint64) *builder {
	g := ir.NewGraph(name)
	g.Doc = doc
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	return &builder{
		g:      g,
		rng:    rand.New(rand.NewPCG(seed, pcgStream)),
		consts: map[string]*ir.Value{},
	}
}

// build runs body, which adds a model's nodes and returns its output, first
// on a dry builder to check the size of the weights against maxParamBytes,
// then for real.
func build(name, doc string, seed uint64, body func(*builder) *ir.Value) (*ir.Graph, error) {
	dry := newBuilder(name, doc, seed)
	dry.dry = true
	body(dry)
	if dry.err != nil {
		return nil, dry.err
	}
	if dry.bytes > maxParamBytes {
		return nil, fmt.Errorf("zoo: %s: the configuration needs more than %d GiB of weights", name, maxParamBytes>>30)
	}
	b := newBuilder(name, doc, seed)
	return b.finish(body(b))
}

func (b *builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("zoo: %s: "+format, append([]any{b.g.Name}, args...)...)
	}
}

// finish names out "output", makes it the graph output and returns the
// graph, or the first error.
func (b *builder) finish(out *ir.Value) (*ir.Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	out.Name = "output"
	b.g.AddOutput(out)
	return b.g, nil
}

// input adds a graph input.
func (b *builder) input(name string, dt ir.DType, shape ...int64) *ir.Value {
	return b.g.AddInput(name, ir.TensorOf(dt, shape...))
}

// tensor adds a parameter of shape with zeroed data (none when dry).
func (b *builder) tensor(name string, dt ir.DType, shape []int64) *ir.Value {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || (d > 0 && n > maxParamBytes/d) {
			b.fail("the configuration needs more than %d GiB of weights (parameter %q of shape %v)", maxParamBytes>>30, name, shape)
			n = 0
			break
		}
		n *= d
	}
	size := n * int64(dt.Bits()/8)
	b.bytes = min(b.bytes+size, maxParamBytes+1)
	t := &ir.Tensor{Name: name, DType: dt, Shape: slices.Clone(shape)}
	if !b.dry && b.err == nil {
		t.Raw = make([]byte, size)
	}
	return b.g.AddParam(name, ir.TensorOf(dt, shape...), t)
}

// uniform adds a float32 parameter drawn uniformly from [lo, hi).
func (b *builder) uniform(name string, lo, hi float64, shape ...int64) *ir.Value {
	v := b.tensor(name, ir.Float32, shape)
	raw := v.Data.Raw
	span := hi - lo
	for i := 0; i+4 <= len(raw); i += 8 {
		// Two 24-bit uniform fractions per 64-bit draw.
		u := b.rng.Uint64()
		f0 := float64(u>>40) / (1 << 24)
		binary.LittleEndian.PutUint32(raw[i:], math.Float32bits(float32(lo+span*f0)))
		if i+8 <= len(raw) {
			f1 := float64(u>>16&(1<<24-1)) / (1 << 24)
			binary.LittleEndian.PutUint32(raw[i+4:], math.Float32bits(float32(lo+span*f1)))
		}
	}
	return v
}

// sym adds a float32 parameter uniform on [-a, a).
func (b *builder) sym(name string, a float64, shape ...int64) *ir.Value {
	return b.uniform(name, -a, a, shape...)
}

// heUniform has variance 2/fanIn: activations keep their scale through a
// ReLU network (He et al. 2015).
func heUniform(fanIn int) float64 { return math.Sqrt(6 / float64(max(fanIn, 1))) }

// lecunUniform has variance 1/fanIn, for layers without a ReLU after them.
func lecunUniform(fanIn int) float64 { return math.Sqrt(3 / float64(max(fanIn, 1))) }

// xavierUniform has variance 2/(fanIn+fanOut) (Glorot and Bengio 2010).
func xavierUniform(fanIn, fanOut int) float64 {
	return math.Sqrt(6 / float64(max(fanIn+fanOut, 1)))
}

// fill adds a float32 parameter whose every element is x.
func (b *builder) fill(name string, x float32, shape ...int64) *ir.Value {
	v := b.tensor(name, ir.Float32, shape)
	raw := v.Data.Raw
	for i := 0; i+4 <= len(raw); i += 4 {
		binary.LittleEndian.PutUint32(raw[i:], math.Float32bits(x))
	}
	return v
}

// floats adds a float32 parameter with the given elements.
func (b *builder) floats(name string, vals []float32, shape ...int64) *ir.Value {
	v := b.tensor(name, ir.Float32, shape)
	if v.Data.Raw != nil {
		for i, x := range vals {
			binary.LittleEndian.PutUint32(v.Data.Raw[4*i:], math.Float32bits(x))
		}
	}
	return v
}

// ints returns the shared 1-D int64 constant called name, adding it on
// first use.
func (b *builder) ints(name string, vals ...int64) *ir.Value {
	if v, ok := b.consts[name]; ok {
		if got, _ := v.Data.Int64s(); !b.dry && !slices.Equal(got, vals) {
			b.fail("internal error: constant %q defined as %v and %v", name, got, vals)
		}
		return v
	}
	v := b.tensor(name, ir.Int64, []int64{int64(len(vals))})
	if v.Data.Raw != nil {
		for i, x := range vals {
			binary.LittleEndian.PutUint64(v.Data.Raw[8*i:], uint64(x))
		}
	}
	b.consts[name] = v
	return v
}

// scalar returns the shared float32 scalar constant called name.
func (b *builder) scalar(name string, x float32) *ir.Value {
	if v, ok := b.consts[name]; ok {
		if got, _ := v.Data.Float64s(); !b.dry && (len(got) != 1 || float32(got[0]) != x) {
			b.fail("internal error: constant %q defined twice", name)
		}
		return v
	}
	v := b.floats(name, []float32{x})
	b.consts[name] = v
	return v
}

// op appends a node called name with one output value of the same name.
func (b *builder) op(op, name string, in []*ir.Value, attrs ...ir.Attr) *ir.Value {
	return b.opN(op, name, in, []string{name}, attrs...).Outputs[0]
}

// opN appends a node with the given output names ("" for an absent
// optional output).
func (b *builder) opN(op, name string, in []*ir.Value, outs []string, attrs ...ir.Attr) *ir.Node {
	n := b.g.NewNode(op, "", in, outs)
	n.Name = name
	for _, a := range attrs {
		n.SetAttr(a)
	}
	return n
}

// Layers. Parameters are named after the node that reads them:
// "<node>.weight", "<node>.bias"; node names never end in those suffixes.

// conv adds a square k×k Conv with stride s and symmetric padding p, He
// initialised. cin is the input channel count, g the group count.
func (b *builder) conv(name string, x *ir.Value, cin, cout, k, s, p, g int, bias bool) *ir.Value {
	fanIn := cin / g * k * k
	in := []*ir.Value{x, b.sym(name+".weight", heUniform(fanIn), int64(cout), int64(cin/g), int64(k), int64(k))}
	if bias {
		in = append(in, b.sym(name+".bias", 1/math.Sqrt(float64(fanIn)), int64(cout)))
	}
	attrs := []ir.Attr{
		ir.IntsAttr("kernel_shape", int64(k), int64(k)),
		ir.IntsAttr("strides", int64(s), int64(s)),
		ir.IntsAttr("pads", int64(p), int64(p), int64(p), int64(p)),
	}
	if g != 1 {
		attrs = append(attrs, ir.IntAttr("group", int64(g)))
	}
	return b.op("Conv", name, in, attrs...)
}

// convT adds a ConvTranspose with a k×k kernel, stride s and no padding.
func (b *builder) convT(name string, x *ir.Value, cin, cout, k, s int, bias bool) *ir.Value {
	// Each output pixel sums cin·(k/s)² products.
	fanIn := max(1, cin*k*k/(s*s))
	in := []*ir.Value{x, b.sym(name+".weight", heUniform(fanIn), int64(cin), int64(cout), int64(k), int64(k))}
	if bias {
		in = append(in, b.sym(name+".bias", 1/math.Sqrt(float64(fanIn)), int64(cout)))
	}
	return b.op("ConvTranspose", name, in,
		ir.IntsAttr("kernel_shape", int64(k), int64(k)),
		ir.IntsAttr("strides", int64(s), int64(s)))
}

// bn adds an inference-form BatchNormalization over c channels whose scale
// is drawn from [gLo, gHi); running statistics are near 0 and 1.
func (b *builder) bn(name string, x *ir.Value, c int, gLo, gHi float64) *ir.Value {
	n := int64(c)
	return b.op("BatchNormalization", name, []*ir.Value{x,
		b.uniform(name+".scale", gLo, gHi, n),
		b.sym(name+".bias", 0.1, n),
		b.sym(name+".mean", 0.1, n),
		b.uniform(name+".var", 0.8, 1.2, n),
	}, ir.FloatAttr("epsilon", 1e-5))
}

func (b *builder) relu(name string, x *ir.Value) *ir.Value {
	return b.op("Relu", name, []*ir.Value{x})
}

// relu6 is Clip(x, 0, 6), MobileNetV2's activation.
func (b *builder) relu6(name string, x *ir.Value) *ir.Value {
	return b.op("Clip", name, []*ir.Value{x, b.scalar("relu6.min", 0), b.scalar("relu6.max", 6)})
}

// maxPool adds a k×k MaxPool with stride s and pads (top, left, bottom,
// right).
func (b *builder) maxPool(name string, x *ir.Value, k, s int, pads ...int64) *ir.Value {
	attrs := []ir.Attr{ir.IntsAttr("kernel_shape", int64(k), int64(k)), ir.IntsAttr("strides", int64(s), int64(s))}
	if len(pads) > 0 {
		attrs = append(attrs, ir.IntsAttr("pads", pads...))
	}
	return b.op("MaxPool", name, []*ir.Value{x}, attrs...)
}

// classifier is GlobalAveragePool, Flatten and a fully connected layer.
func (b *builder) classifier(x *ir.Value, c, classes int) *ir.Value {
	x = b.op("GlobalAveragePool", "avgpool", []*ir.Value{x})
	x = b.op("Flatten", "flatten", []*ir.Value{x}, ir.IntAttr("axis", 1))
	return b.gemm("fc", x, c, classes, lecunUniform(c))
}

// gemm adds a fully connected layer y = x·Wᵀ + b with W of shape
// [out, in] (transB), weights uniform on [-a, a).
func (b *builder) gemm(name string, x *ir.Value, in, out int, a float64) *ir.Value {
	return b.op("Gemm", name, []*ir.Value{x,
		b.sym(name+".weight", a, int64(out), int64(in)),
		b.sym(name+".bias", 1/math.Sqrt(float64(in)), int64(out)),
	}, ir.IntAttr("transB", 1))
}
