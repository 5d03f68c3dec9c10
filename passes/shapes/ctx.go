package shapes

import (
	"fmt"

	"github.com/remat-compile/remat/ir"
)

// nctx is the state of inferring one node: its inputs, attributes and
// the output types being built.
type nctx struct {
	in    *inferer
	n     *ir.Node
	opset int64
	depth int
	out   []ir.TensorType
	// unsupported, when set, sends the node to the declared-type path with
	// this reason ("-" for none).
	unsupported string
}

// errf reports an input error at the node.
func (c *nctx) errf(format string, args ...any) {
	c.in.errs.Add(ir.NodePos(c.in.file, c.n), format, args...)
}

// unsupportedf gives up on the node: its outputs take their declared types.
func (c *nctx) unsupportedf(format string, args ...any) {
	c.unsupported = fmt.Sprintf(format, args...)
}

// input returns input i, or nil when absent.
func (c *nctx) input(i int) *ir.Value {
	if i < 0 || i >= len(c.n.Inputs) {
		return nil
	}
	return c.n.Inputs[i]
}

func (c *nctx) has(i int) bool { return c.input(i) != nil }

// need reports an error when required input i (called name) is absent.
func (c *nctx) need(i int, name string) bool {
	if c.input(i) == nil {
		c.errf("missing required input %d (%s)", i, name)
		return false
	}
	return true
}

// typ is the type of input i; the zero-information type when absent.
func (c *nctx) typ(i int) ir.TensorType {
	v := c.input(i)
	if v == nil {
		return unknownType(ir.Undefined)
	}
	return v.Type
}

func (c *nctx) dtype(i int) ir.DType { return c.typ(i).DType }

// shape returns the dims of tensor input i and whether its rank is known.
func (c *nctx) shape(i int) ([]ir.Dim, bool) {
	t := c.typ(i)
	if t.Kind != ir.KindTensor || rankOf(t) < 0 {
		return nil, false
	}
	return t.Shape, true
}

// cst is the known value of input i, or nil.
func (c *nctx) cst(i int) *cval { return c.in.constOf(c.input(i)) }

// cstOfRank is the known value of input i when it has rank r (as its type
// says it has), or nil.
func (c *nctx) cstOfRank(i, r int) *cval {
	if cv := c.cst(i); cv != nil && cv.rank() == r {
		return cv
	}
	return nil
}

// constInts is the known integer value of input i.
func (c *nctx) constInts(i int) ([]int64, bool) {
	cv := c.cst(i)
	if cv == nil {
		return nil, false
	}
	return cv.ints()
}

// set gives output i type t.
func (c *nctx) set(i int, t ir.TensorType) {
	if i >= 0 && i < len(c.out) {
		c.out[i] = t
	}
}

// setAll gives every output type t.
func (c *nctx) setAll(t ir.TensorType) {
	for i := range c.out {
		c.out[i] = t.Clone()
	}
}

// setConst records the value of output i, and its static type.
func (c *nctx) setConst(i int, cv *cval) {
	if cv == nil || i < 0 || i >= len(c.n.Outputs) {
		return
	}
	o := c.n.Outputs[i]
	if !c.in.valid(o) {
		return
	}
	c.out[i] = cv.staticType()
	c.in.consts[o.ID] = cv
}

// numOut counts output slots, present or not.
func (c *nctx) numOut() int { return len(c.n.Outputs) }

// Attributes. A present attribute of the wrong kind is an input error.

func (c *nctx) attr(name string, kind ir.AttrKind) *ir.Attr {
	a := c.n.Attr(name)
	if a == nil {
		return nil
	}
	if a.Kind != kind {
		c.errf("attribute %s is of kind %s, want %s", name, a.Kind, kind)
		return nil
	}
	return a
}

func (c *nctx) attrInt(name string, def int64) int64 {
	if a := c.attr(name, ir.AttrInt); a != nil {
		return a.Int
	}
	return def
}

func (c *nctx) attrFloat(name string, def float32) float32 {
	if a := c.attr(name, ir.AttrFloat); a != nil {
		return a.Float
	}
	return def
}

func (c *nctx) attrString(name, def string) string {
	if a := c.attr(name, ir.AttrString); a != nil {
		return string(a.Str)
	}
	return def
}

func (c *nctx) attrInts(name string) ([]int64, bool) {
	if a := c.attr(name, ir.AttrInts); a != nil {
		return a.Ints, true
	}
	return nil, false
}

func (c *nctx) attrFloats(name string) ([]float32, bool) {
	if a := c.attr(name, ir.AttrFloats); a != nil {
		return a.Floats, true
	}
	return nil, false
}

func (c *nctx) hasAttr(name string) bool { return c.n.Attr(name) != nil }

// axis normalises axis ax against rank r (ax in [-r, r-1]).
func (c *nctx) axis(ax int64, r int, what string) (int, bool) {
	if ax < -int64(r) || ax >= int64(r) {
		c.errf("%s %d is out of range for rank %d", what, ax, r)
		return 0, false
	}
	if ax < 0 {
		ax += int64(r)
	}
	return int(ax), true
}

// axes normalises a list of axes against rank r, rejecting repeats.
func (c *nctx) axes(list []int64, r int, what string) ([]int, bool) {
	out := make([]int, len(list))
	seen := make([]bool, r)
	for i, a := range list {
		ax, ok := c.axis(a, r, what)
		if !ok {
			return nil, false
		}
		if seen[ax] {
			c.errf("%s %d is repeated", what, a)
			return nil, false
		}
		seen[ax] = true
		out[i] = ax
	}
	return out, true
}

// sameDTypes reports an error when the known element types of the given
// inputs differ.
func (c *nctx) sameDTypes(idx ...int) bool {
	var first ir.DType
	fi := -1
	for _, i := range idx {
		dt := c.dtype(i)
		if !dt.Valid() || !c.has(i) {
			continue
		}
		if fi < 0 {
			first, fi = dt, i
			continue
		}
		if dt != first {
			c.errf("input %d has element type %s, but input %d has %s", i, dt, fi, first)
			return false
		}
	}
	return true
}

// firstDType is the first valid element type among the inputs.
func (c *nctx) firstDType(idx ...int) ir.DType {
	for _, i := range idx {
		if dt := c.dtype(i); dt.Valid() {
			return dt
		}
	}
	return ir.Undefined
}

// dataDim is a fresh symbol for a data-dependent size of this node.
func (c *nctx) dataDim(tag string) ir.Dim {
	name := ir.NodePos("", c.n).Node
	return c.in.bindDim(ir.SymDim(DataDependentPrefix + name + ":" + tag))
}

// elemType is the element type stored in a tensor-valued attribute such
// as ConstantOfShape's value; def when absent.
func (c *nctx) attrDType(name string, def ir.DType) ir.DType {
	a := c.n.Attr(name)
	if a == nil {
		return def
	}
	if a.Kind != ir.AttrInt {
		c.errf("attribute %s is of kind %s, want int", name, a.Kind)
		return def
	}
	dt, ok := onnxDType(a.Int)
	if !ok {
		c.errf("attribute %s: unknown element type %d", name, a.Int)
		return def
	}
	return dt
}

// formCheck rejects the wrong form of an argument that moved from an
// attribute to an input at opset since: the attribute from since on, the
// input before it.
func (c *nctx) formCheck(since int64, attrs []string, inputs ...int) bool {
	if c.opset >= since {
		for _, a := range attrs {
			if c.hasAttr(a) {
				c.errf("attribute %s is not valid at opset %d: from opset %d it is an input", a, c.opset, since)
				return false
			}
		}
		return true
	}
	for _, i := range inputs {
		if c.has(i) {
			c.errf("has input %d, which %s takes only from opset %d (at opset %d it is an attribute)", i, c.n.Op, since, c.opset)
			return false
		}
	}
	return true
}
