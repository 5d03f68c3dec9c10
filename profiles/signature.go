package profiles

import (
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// CanonicalAttrs is the attribute part of a node's signature: every
// attribute as name=value, sorted by name, separated by ", ", with values
// written as the IR text form writes them: 3, 0.5, "NOTSET", [1,1],
// [0.5,2], ["a","b"]. Tensor-valued attributes are written as their type
// (tensor(f32[3])), graph-valued ones as graph, since a signature names a
// kernel configuration, not data. Attributes are taken as the model
// spells them: an attribute left at its default and the same default
// written out are different signatures.
func CanonicalAttrs(n *ir.Node) string {
	attrs := slices.Clone(n.Attrs)
	slices.SortStableFunc(attrs, func(a, b ir.Attr) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	for i := range attrs {
		a := &attrs[i]
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Name)
		b.WriteByte('=')
		writeAttrValue(&b, a)
	}
	return b.String()
}

func formatFloat32(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

func writeList[T any](b *strings.Builder, xs []T, f func(T) string) {
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f(x))
	}
	b.WriteByte(']')
}

func writeAttrValue(b *strings.Builder, a *ir.Attr) {
	switch a.Kind {
	case ir.AttrInt:
		b.WriteString(strconv.FormatInt(a.Int, 10))
	case ir.AttrFloat:
		b.WriteString(formatFloat32(a.Float))
	case ir.AttrString:
		b.WriteString(strconv.Quote(string(a.Str)))
	case ir.AttrInts:
		writeList(b, a.Ints, func(x int64) string { return strconv.FormatInt(x, 10) })
	case ir.AttrFloats:
		writeList(b, a.Floats, formatFloat32)
	case ir.AttrStrings:
		writeList(b, a.Strs, func(s []byte) string { return strconv.Quote(string(s)) })
	case ir.AttrTensor:
		b.WriteString("tensor(")
		if a.Tensor != nil {
			b.WriteString(a.Tensor.Type().String())
		}
		b.WriteByte(')')
	case ir.AttrTensors:
		writeList(b, a.Tensors, func(t *ir.Tensor) string {
			if t == nil {
				return "tensor()"
			}
			return "tensor(" + t.Type().String() + ")"
		})
	case ir.AttrGraph:
		b.WriteString("graph")
	case ir.AttrGraphs:
		b.WriteString("graphs(" + strconv.Itoa(len(a.Graphs)) + ")")
	default:
		b.WriteString(a.Kind.String())
	}
}

// ComputeDType is the element type a node computes in, which selects the
// peak rate and is part of its signature: the type of its first present
// input that is not Bool (Where's condition, for one, is skipped), else the
// type of its first output, else Float32. Quantized ops (ConvInteger,
// QLinearMatMul, …) compute in their 8-bit input type.
func ComputeDType(n *ir.Node) ir.DType {
	for _, v := range n.Inputs {
		if v != nil && v.Type.DType.Valid() && v.Type.DType != ir.Bool {
			return v.Type.DType
		}
	}
	for _, v := range n.Outputs {
		if v != nil && v.Type.DType.Valid() {
			return v.Type.DType
		}
	}
	return ir.Float32
}

// NewMeasured returns the signature of n as a Measured entry with Seconds
// and Repeats left for the caller (the profiling tool) to fill. Every
// present input must have a static shape.
func NewMeasured(n *ir.Node) (Measured, error) {
	m := Measured{Op: n.Op, Domain: normDomain(n.Domain), Attrs: CanonicalAttrs(n), DType: ComputeDType(n)}
	m.Shapes = make([][]int64, len(n.Inputs))
	for i, v := range n.Inputs {
		if v == nil {
			continue
		}
		dims, ok := v.Type.Dims()
		if !ok {
			return Measured{}, nodeErr(n, "input %d %q has no static shape (%s)", i, v.Name, v.Type)
		}
		if dims == nil {
			dims = []int64{}
		}
		m.Shapes[i] = dims
	}
	return m, nil
}

func normDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

// key is the lookup key of a signature.
func (m *Measured) key() string {
	var b strings.Builder
	b.WriteString(m.Op)
	b.WriteByte(0)
	b.WriteString(normDomain(m.Domain))
	b.WriteByte(0)
	b.WriteString(m.Attrs)
	b.WriteByte(0)
	b.WriteString(m.DType.String())
	b.WriteByte(0)
	b.WriteString(shapesString(m.Shapes))
	return b.String()
}

// shapesString writes shapes as [1,3,224,224];[64,3,7,7];- with - for an
// absent input.
func shapesString(shapes [][]int64) string {
	var b strings.Builder
	for i, s := range shapes {
		if i > 0 {
			b.WriteByte(';')
		}
		if s == nil {
			b.WriteByte('-')
			continue
		}
		writeList(&b, s, func(x int64) string { return strconv.FormatInt(x, 10) })
	}
	return b.String()
}

// lookup returns the measured entry with n's signature, if any.
func (p *Profile) lookup(n *ir.Node) (*Measured, bool) {
	if len(p.Measured) == 0 {
		return nil, false
	}
	sig, err := NewMeasured(n)
	if err != nil {
		return nil, false
	}
	k := sig.key()
	if p.index != nil {
		if i, ok := p.index[k]; ok && i < len(p.Measured) && p.Measured[i].key() == k {
			return &p.Measured[i], true
		}
		if len(p.index) == len(p.Measured) {
			return nil, false
		}
	}
	// Not indexed (built in code, or changed since): search.
	for i := range p.Measured {
		if p.Measured[i].key() == k {
			return &p.Measured[i], true
		}
	}
	return nil, false
}
