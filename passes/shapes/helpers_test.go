package shapes

import (
	"strconv"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// parseType reads the text form of a type: f32[1,batch,?], i64[], f32[*],
// seq<f32[?]>.
func parseType(t testing.TB, s string) ir.TensorType {
	t.Helper()
	var tt ir.TensorType
	if strings.HasPrefix(s, "seq<") && strings.HasSuffix(s, ">") {
		tt = parseType(t, s[4:len(s)-1])
		tt.Kind = ir.KindSequence
		return tt
	}
	i := strings.IndexByte(s, '[')
	if i < 0 || !strings.HasSuffix(s, "]") {
		t.Fatalf("bad type %q", s)
	}
	dt, ok := ir.ParseDType(s[:i])
	if !ok {
		t.Fatalf("bad dtype in %q", s)
	}
	tt.DType = dt
	body := s[i+1 : len(s)-1]
	tt.Shape = []ir.Dim{}
	switch body {
	case "*":
		tt.Unranked, tt.Shape = true, nil
		return tt
	case "":
		return tt
	}
	for _, f := range strings.Split(body, ",") {
		switch n, err := strconv.ParseInt(f, 10, 64); {
		case f == "?":
			tt.Shape = append(tt.Shape, ir.UnknownDim)
		case err == nil:
			tt.Shape = append(tt.Shape, ir.D(n))
		default:
			tt.Shape = append(tt.Shape, ir.SymDim(f))
		}
	}
	return tt
}

// builder makes small graphs for tests.
type builder struct {
	t testing.TB
	g *ir.Graph
	n int
}

func newBuilder(t testing.TB, opset int64) *builder {
	g := ir.NewGraph("test")
	if opset > 0 {
		g.Opsets = []ir.Opset{{Domain: "", Version: opset}}
	}
	return &builder{t: t, g: g}
}

func (b *builder) input(name, typ string) *ir.Value {
	return b.g.AddInput(name, parseType(b.t, typ))
}

func (b *builder) i64(name string, shape []int64, vals ...int64) *ir.Value {
	if shape == nil {
		shape = []int64{int64(len(vals))}
	}
	return b.g.AddParam(name, ir.TensorOf(ir.Int64, shape...), ir.Int64Tensor(shape, vals...))
}

func (b *builder) f32(name string, shape []int64, vals ...float32) *ir.Value {
	if shape == nil {
		shape = []int64{int64(len(vals))}
	}
	return b.g.AddParam(name, ir.TensorOf(ir.Float32, shape...), ir.Float32Tensor(shape, vals...))
}

// node appends op with nout outputs named after the node.
func (b *builder) node(op string, ins []*ir.Value, nout int, attrs ...ir.Attr) *ir.Node {
	b.n++
	name := op + "_" + strconv.Itoa(b.n)
	outs := make([]string, nout)
	for i := range outs {
		outs[i] = name + "_out" + strconv.Itoa(i)
	}
	n := b.g.NewNode(op, "", ins, outs)
	n.Name = name
	for _, a := range attrs {
		n.SetAttr(a)
	}
	return n
}

// op appends a one-output node and returns its output.
func (b *builder) op(op string, ins []*ir.Value, attrs ...ir.Attr) *ir.Value {
	return b.node(op, ins, 1, attrs...).Outputs[0]
}

func (b *builder) ins(vs ...*ir.Value) []*ir.Value { return vs }

func typeStrings(vs []*ir.Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if v == nil {
			out[i] = "<absent>"
			continue
		}
		out[i] = v.Type.String()
	}
	return out
}
