package irtext

import (
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// indentUnit is one level of indentation.
const indentUnit = "  "

// Format returns the text form of g. Where g holds something the text form
// cannot represent (an invalid dtype, a nil tensor; see Print) the text is
// written best-effort and will not parse back.
func Format(g *ir.Graph) string {
	p := &printer{}
	p.graph(g, 0)
	p.b.WriteByte('\n')
	return p.b.String()
}

// Print writes the text form of g to w. It returns the write error, or an
// error naming the first thing in g that the text form cannot represent
// (an element type, kind or attribute kind out of range, a nil tensor or
// graph in an attribute, a parameter without data, a nil graph output); it
// still writes the whole graph then.
func Print(w io.Writer, g *ir.Graph) error {
	p := &printer{}
	p.graph(g, 0)
	p.b.WriteByte('\n')
	if _, err := io.WriteString(w, p.b.String()); err != nil {
		return err
	}
	return p.err
}

type printer struct {
	b    strings.Builder
	err  error                      // the first thing that will not parse back
	refs map[*ir.Graph]*nodeRefKeys // how after(...) names the nodes of each graph
}

// nodeRefKeys says how the nodes of one graph are referred to in after(...)
// lists: by name where the name is unique in the graph, else by position.
type nodeRefKeys struct {
	pos   map[*ir.Node]int
	names map[string]int // how many nodes bear each name
}

func (p *printer) errorf(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("irtext: "+format, args...)
	}
}

func (p *printer) indent(depth int) {
	for range depth {
		p.b.WriteString(indentUnit)
	}
}

// reserved words cannot be bare value, graph or operator names: they start
// statements or trailers.
var reserved = map[string]bool{
	"_": true, "graph": true, "input": true, "param": true, "opset": true,
	"return": true, "doc": true, "name": true, "captures": true,
}

// unnamedNum reports whether s reads as the name of an unnamed value,
// v<ID> with ID in canonical decimal, and returns the ID.
func unnamedNum(s string) (int64, bool) {
	if len(s) < 2 || s[0] != 'v' || (s[1] == '0' && len(s) > 2) {
		return 0, false
	}
	for i := 1; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s[1:], 10, 32)
	return n, err == nil
}

// quoteName writes a name bare when it lexes as an identifier that is
// neither reserved nor of the unnamed-value form, else quoted.
func quoteName(s string) string {
	if _, ok := unnamedNum(s); isIdent(s) && !reserved[s] && !ok {
		return s
	}
	return strconv.Quote(s)
}

func (p *printer) valueName(v *ir.Value) string {
	if v == nil {
		return "_"
	}
	if v.Name == "" {
		if v.ID < 0 {
			p.errorf("unnamed value with negative ID %d", v.ID)
		}
		return "v" + strconv.Itoa(int(v.ID))
	}
	return quoteName(v.Name)
}

func (p *printer) values(vs []*ir.Value) {
	for i, v := range vs {
		if i > 0 {
			p.b.WriteString(", ")
		}
		p.b.WriteString(p.valueName(v))
	}
}

// opName writes domain and operator as one dotted identifier where that
// reads back, else as quoted strings joined by a dot.
func opName(domain, op string) string {
	if op != "" && !strings.Contains(op, ".") {
		if domain == "" && isIdent(op) && !reserved[op] {
			return op
		}
		if domain != "" && isIdent(domain+"."+op) {
			return domain + "." + op
		}
	}
	if domain == "" {
		return strconv.Quote(op)
	}
	return strconv.Quote(domain) + "." + strconv.Quote(op)
}

func isZeroType(t ir.TensorType) bool {
	return t.Kind == ir.KindTensor && t.DType == ir.Undefined && len(t.Shape) == 0 && !t.Unranked
}

// typ writes a type as TensorType.String does, quoting symbols that would
// not read back as themselves.
func (p *printer) typ(t ir.TensorType) {
	if t.Kind > ir.KindOpaque {
		p.errorf("invalid type kind %d", t.Kind)
	}
	if !t.DType.Valid() && t.DType != ir.Undefined {
		p.errorf("invalid element type %d", t.DType)
	}
	if t.Kind != ir.KindTensor {
		p.b.WriteString(t.Kind.String())
		p.b.WriteByte('<')
	}
	p.b.WriteString(t.DType.String())
	if t.Unranked {
		p.b.WriteString("[*]")
		if len(t.Shape) > 0 {
			p.errorf("unranked type with %d dimensions", len(t.Shape))
		}
	} else {
		p.b.WriteByte('[')
		for i, d := range t.Shape {
			if i > 0 {
				p.b.WriteByte(',')
			}
			switch {
			case d.Sym != "":
				p.b.WriteString(quoteName(d.Sym))
				if d.Size != -1 {
					p.errorf("symbolic dimension %q with size %d", d.Sym, d.Size)
				}
			case d.Size >= 0:
				p.b.WriteString(strconv.FormatInt(d.Size, 10))
			default:
				p.b.WriteByte('?')
				if d.Size != -1 {
					p.errorf("unknown dimension with size %d", d.Size)
				}
			}
		}
		p.b.WriteByte(']')
	}
	if t.Kind != ir.KindTensor {
		p.b.WriteByte('>')
	}
}

// decl writes a value's declaration: name, type unless elided, doc.
func (p *printer) decl(v *ir.Value, elideType bool) {
	p.b.WriteString(p.valueName(v))
	if !elideType {
		p.b.WriteByte(':')
		p.typ(v.Type)
	}
	p.doc(v.Doc)
}

func (p *printer) doc(s string) {
	if s != "" {
		p.b.WriteString(" doc=")
		p.b.WriteString(strconv.Quote(s))
	}
}

// graph writes "graph NAME {", the body one level deeper than depth, and
// "}" at depth, with no final newline.
func (p *printer) graph(g *ir.Graph, depth int) {
	p.b.WriteString("graph ")
	p.b.WriteString(quoteName(g.Name))
	p.doc(g.Doc)
	p.b.WriteString(" {\n")
	in := depth + 1
	for _, o := range g.Opsets {
		p.indent(in)
		p.b.WriteString("opset ")
		if o.Domain != "" {
			p.b.WriteString(quoteName(o.Domain))
			p.b.WriteByte(' ')
		}
		p.b.WriteString(strconv.FormatInt(o.Version, 10))
		p.b.WriteByte('\n')
	}
	isParam := make(map[*ir.Value]bool, len(g.Params))
	for _, v := range g.Params {
		isParam[v] = true
	}
	isInput := make(map[*ir.Value]bool, len(g.Inputs))
	for _, v := range g.Inputs {
		isInput[v] = true
		p.indent(in)
		p.b.WriteString("input ")
		if isParam[v] && v.Data != nil {
			p.decl(v, v.Type.Equal(v.Data.Type()))
			p.b.WriteString(" = ")
			p.tensor(v.Data, v.Name)
		} else {
			p.decl(v, isZeroType(v.Type))
		}
		p.b.WriteByte('\n')
	}
	for _, v := range g.Params {
		p.indent(in)
		p.b.WriteString("param ")
		switch {
		case isInput[v]:
			p.b.WriteString(p.valueName(v))
		case v.Data == nil:
			p.errorf("parameter %s has no data", v)
			p.decl(v, false)
		default:
			p.decl(v, v.Type.Equal(v.Data.Type()))
			p.b.WriteString(" = ")
			p.tensor(v.Data, v.Name)
		}
		p.b.WriteByte('\n')
	}
	for _, n := range g.Nodes {
		p.node(n, in)
	}
	if len(g.Outputs) > 0 {
		p.indent(in)
		p.b.WriteString("return ")
		for _, v := range g.Outputs {
			if v == nil {
				p.errorf("graph %q has a nil output", g.Name)
			}
		}
		p.values(g.Outputs)
		p.b.WriteByte('\n')
	}
	p.indent(depth)
	p.b.WriteByte('}')
}

func (p *printer) node(n *ir.Node, depth int) {
	p.indent(depth)
	if len(n.Outputs) > 0 {
		for i, v := range n.Outputs {
			if i > 0 {
				p.b.WriteString(", ")
			}
			if v == nil {
				p.b.WriteByte('_')
				continue
			}
			p.decl(v, isZeroType(v.Type))
		}
		p.b.WriteString(" = ")
	}
	p.b.WriteString(opName(n.Domain, n.Op))
	p.b.WriteByte('(')
	p.values(n.Inputs)
	p.b.WriteByte(')')
	if len(n.Implicit) > 0 {
		p.b.WriteString(" captures(")
		p.values(n.Implicit)
		p.b.WriteByte(')')
	}
	if len(n.Control) > 0 {
		p.b.WriteString(" after(")
		for i, c := range n.Control {
			if i > 0 {
				p.b.WriteString(", ")
			}
			p.b.WriteString(p.nodeRef(n, c))
		}
		p.b.WriteByte(')')
	}
	if len(n.Attrs) > 0 {
		p.attrs(n.Attrs, depth)
	}
	if n.Name != "" {
		p.b.WriteString(" name=")
		p.b.WriteString(strconv.Quote(n.Name))
	}
	p.doc(n.Doc)
	p.b.WriteByte('\n')
}

func hasGraph(a *ir.Attr) bool {
	return a.Kind == ir.AttrGraph || a.Kind == ir.AttrGraphs && len(a.Graphs) > 0
}

// attrs writes " {a=1, b=2}", or, when a subgraph is among them, one
// attribute a line.
func (p *printer) attrs(as []ir.Attr, depth int) {
	multi := false
	for i := range as {
		multi = multi || hasGraph(&as[i])
	}
	p.b.WriteString(" {")
	for i := range as {
		a := &as[i]
		if multi {
			p.b.WriteByte('\n')
			p.indent(depth + 1)
		} else if i > 0 {
			p.b.WriteString(", ")
		}
		p.b.WriteString(quoteName(a.Name))
		p.b.WriteByte('=')
		d := depth
		if multi {
			d++
		}
		p.attrValue(a, d)
		if a.Kind == ir.AttrTensor && a.Tensor != nil && a.Doc != "" && a.Tensor.Doc == "" {
			p.b.WriteString(` doc=""`) // the first doc after a tensor is the tensor's
		}
		p.doc(a.Doc)
		if multi {
			p.b.WriteByte(',')
		}
	}
	if multi {
		p.b.WriteByte('\n')
		p.indent(depth)
	}
	p.b.WriteByte('}')
}

// attrValue writes the value of a; depth is the indentation of the line the
// attribute starts on.
func (p *printer) attrValue(a *ir.Attr, depth int) {
	switch a.Kind {
	case ir.AttrUndefined:
		p.b.WriteString("undef")
	case ir.AttrOther:
		p.b.WriteString("other")
	case ir.AttrInt:
		p.b.WriteString(strconv.FormatInt(a.Int, 10))
	case ir.AttrFloat:
		p.b.WriteString(formatAttrFloat(a.Float))
	case ir.AttrString:
		p.b.WriteString(strconv.Quote(string(a.Str)))
	case ir.AttrTensor:
		p.tensor(a.Tensor, "")
	case ir.AttrGraph:
		p.subgraph(a.Graph, depth)
	case ir.AttrInts:
		p.list("ints", len(a.Ints), func(i int) { p.b.WriteString(strconv.FormatInt(a.Ints[i], 10)) })
	case ir.AttrFloats:
		p.list("floats", len(a.Floats), func(i int) { p.b.WriteString(formatAttrFloat(a.Floats[i])) })
	case ir.AttrStrings:
		p.list("strings", len(a.Strs), func(i int) { p.b.WriteString(strconv.Quote(string(a.Strs[i]))) })
	case ir.AttrTensors:
		p.list("tensors", len(a.Tensors), func(i int) { p.tensor(a.Tensors[i], "") })
	case ir.AttrGraphs:
		if len(a.Graphs) == 0 {
			p.b.WriteString("graphs[]")
			return
		}
		p.b.WriteByte('[')
		for _, g := range a.Graphs {
			p.b.WriteByte('\n')
			p.indent(depth + 1)
			p.subgraph(g, depth+1)
			p.b.WriteByte(',')
		}
		p.b.WriteByte('\n')
		p.indent(depth)
		p.b.WriteByte(']')
	default:
		p.errorf("attribute %q has invalid kind %d", a.Name, a.Kind)
		p.b.WriteString(a.Kind.String())
	}
}

func (p *printer) subgraph(g *ir.Graph, depth int) {
	if g == nil {
		p.errorf("nil graph in an attribute")
		p.b.WriteString("<nil graph>")
		return
	}
	p.graph(g, depth)
}

// list writes "[e0, e1]" (numbers without the space, as in shapes: [2,2]),
// or kind[] when empty.
func (p *printer) list(kind string, n int, elem func(int)) {
	if n == 0 {
		p.b.WriteString(kind)
		p.b.WriteString("[]")
		return
	}
	sep := ", "
	if kind == "ints" || kind == "floats" {
		sep = ","
	}
	p.b.WriteByte('[')
	for i := range n {
		if i > 0 {
			p.b.WriteString(sep)
		}
		elem(i)
	}
	p.b.WriteByte(']')
}

// tensor writes a tensor literal and its name and doc trailers; the name is
// left out when it is defName (the parameter's own name).
func (p *printer) tensor(t *ir.Tensor, defName string) {
	if t == nil {
		p.errorf("nil tensor in an attribute")
		p.b.WriteString("<nil tensor>")
		return
	}
	if !t.DType.Valid() && t.DType != ir.Undefined {
		p.errorf("tensor of invalid element type %d", t.DType)
	}
	p.b.WriteString(t.DType.String())
	p.b.WriteByte('[')
	for i, d := range t.Shape {
		if i > 0 {
			p.b.WriteByte(',')
		}
		p.b.WriteString(strconv.FormatInt(d, 10))
	}
	p.b.WriteByte(']')
	if t.DType == ir.String && int64(len(t.Strs)) != t.NumElements() {
		p.errorf("string tensor %q has %d elements, shape %v needs %d", t.Name, len(t.Strs), t.Shape, t.NumElements())
	}
	if t.DType == ir.String && t.Raw != nil || t.DType != ir.String && t.Strs != nil {
		p.errorf("tensor %q holds data in the field its element type %v does not use", t.Name, t.DType)
	}
	form, n := tensorForm(t)
	switch form {
	case formRaw:
		p.b.WriteString(` raw"`)
		p.b.WriteString(hex.EncodeToString(t.Raw))
		p.b.WriteByte('"')
	case formElems, formSplat:
		if form == formSplat {
			n = 1
		}
		p.b.WriteByte('{')
		for i := range n {
			if i > 0 {
				p.b.WriteString(", ")
			}
			if t.DType == ir.String {
				p.b.WriteString(strconv.Quote(string(t.Strs[i])))
			} else {
				p.b.WriteString(formatElem(t.DType, getElem(t.Raw, t.DType, i)))
			}
		}
		if form == formSplat {
			p.b.WriteString(", ...")
		}
		p.b.WriteByte('}')
	}
	if t.Name != defName {
		p.b.WriteString(" name=")
		p.b.WriteString(strconv.Quote(t.Name))
	}
	p.doc(t.Doc)
}

// nodeRef writes how n's after(...) list names its control input c: c's
// name when no other node of the graph bears it, else c's position in the
// graph's Nodes.
func (p *printer) nodeRef(n, c *ir.Node) string {
	g := n.Graph
	if c == nil || g == nil {
		p.errorf("node %s has a nil control input or no graph", n)
		return "?"
	}
	k := p.refs[g]
	if k == nil {
		k = &nodeRefKeys{pos: make(map[*ir.Node]int, len(g.Nodes)), names: map[string]int{}}
		for i, m := range g.Nodes {
			k.pos[m] = i
			if m.Name != "" {
				k.names[m.Name]++
			}
		}
		if p.refs == nil {
			p.refs = map[*ir.Graph]*nodeRefKeys{}
		}
		p.refs[g] = k
	}
	i, ok := k.pos[c]
	if !ok {
		p.errorf("control input %s of node %s is not a node of graph %q", c, n, g.Name)
		return quoteName(c.String())
	}
	if c.Name != "" && k.names[c.Name] == 1 {
		return quoteName(c.Name)
	}
	return strconv.Itoa(i)
}
