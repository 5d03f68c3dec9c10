package irtext

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// MaxUnnamedID is the largest ID an unnamed value (v<ID>) may have in text
// that Parse reads: the parser allocates that many IDs to reproduce it.
const MaxUnnamedID = 1<<22 - 1

// Error is a problem in IR text at a position: line and column (in bytes)
// are 1-based.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// bailout carries a parse error up the recursive descent.
type bailout struct{ err *Error }

// Parse reads a graph in the text form that Print writes. name is the file
// name that error positions start with. The graph it returns prints back as
// the same text (up to comments, spacing and the normalisations described
// in the package documentation) and passes ir.Verify; an error is an *Error
// for a problem at a position in src.
func Parse(name, src string) (*ir.Graph, error) {
	return parse(name, src, limits{unnamedID: MaxUnnamedID, literalBytes: 1 << 26, literalStrings: 1 << 20})
}

// limits bound what a short text may make Parse allocate.
type limits struct {
	unnamedID      int64 // largest v<ID>
	literalBytes   int64 // largest tensor a literal (a splat) expands to
	literalStrings int64 // most elements of a string tensor literal
}

func parse(name, src string, lim limits) (g *ir.Graph, err error) {
	p := &parser{
		lim:    lim,
		file:   name,
		lx:     newLexer(src),
		skipNL: 1,
		names:  map[string]*sym{},
		nums:   map[int64]*sym{},
		fixed:  map[*ir.Value]int64{},
		params: map[*ir.Value]bool{},

		nodeNames: map[*ir.Graph]map[string]int{},
	}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			g, err = nil, b.err
		}
	}()
	g = p.parseFile()
	p.assignIDs()
	if err := ir.Verify(g); err != nil {
		return nil, fmt.Errorf("%s: the parsed graph does not verify (a bug in irtext): %w", name, err)
	}
	return g, nil
}

// sym is a value name's definition.
type sym struct {
	v         *ir.Value // nil until the defining node is built
	line, col int
	visible   bool // false while the defining node is being parsed
}

type parser struct {
	lim    limits
	file   string
	lx     *lexer
	buf    []token // tokens scanned; buf[head:] are not yet consumed
	head   int
	skipNL int // > 0: inside brackets, where newlines do not end statements

	root   *ir.Graph
	names  map[string]*sym     // named values, over all graphs (names are unique in a root graph)
	nums   map[int64]*sym      // unnamed values by the ID they are written with
	values []*ir.Value         // every value built, in order
	fixed  map[*ir.Value]int64 // unnamed values and their IDs
	params map[*ir.Value]bool  // inputs with defaults already placed by a "param NAME" line
	// nodeNames maps, per graph, the names of the nodes parsed so far to
	// their positions in Nodes (-1 for a name two nodes bear), for after(...).
	nodeNames map[*ir.Graph]map[string]int
}

func (p *parser) errorf(t token, format string, args ...any) {
	panic(bailout{&Error{File: p.file, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}})
}

// fill scans until n tokens are pending.
func (p *parser) fill(n int) {
	if p.head == len(p.buf) {
		p.buf, p.head = p.buf[:0], 0
	}
	for len(p.buf)-p.head < n {
		t, err := p.lx.scan()
		if err != nil {
			err.File = p.file
			panic(bailout{err})
		}
		p.buf = append(p.buf, t)
	}
}

// peekAt returns the k-th token ahead (0 is the next), skipping newlines
// inside brackets.
func (p *parser) peekAt(k int) token {
	for i := 0; ; i++ {
		p.fill(i + 1)
		t := p.buf[p.head+i]
		if t.kind == tEOF {
			return t
		}
		if t.kind == tNL && p.skipNL > 0 {
			continue
		}
		if k == 0 {
			return t
		}
		k--
	}
}

func (p *parser) peek() token { return p.peekAt(0) }

func (p *parser) next() token {
	for {
		p.fill(1)
		t := p.buf[p.head]
		if t.kind != tEOF {
			p.head++
		}
		if t.kind != tNL || p.skipNL == 0 {
			return t
		}
	}
}

// expect consumes the punctuation s or fails with "expected s<ctx>".
func (p *parser) expect(s, ctx string) token {
	t := p.next()
	if !t.is(s) {
		p.errorf(t, "expected %q%s, found %s", s, ctx, t.describe())
	}
	return t
}

// isTrailer reports whether a "word=" trailer follows.
func (p *parser) isTrailer(word string) bool {
	return p.peek().isWord(word) && p.peekAt(1).is("=")
}

// trailer consumes word="string" and returns the string.
func (p *parser) trailer() string {
	w := p.next()
	p.next()
	t := p.next()
	if t.kind != tString {
		p.errorf(t, "expected a quoted string after %s=, found %s", w.text, t.describe())
	}
	return t.val
}

func (p *parser) parseFile() *ir.Graph {
	t := p.next()
	if !t.isWord("graph") {
		p.errorf(t, "expected \"graph\", found %s", t.describe())
	}
	name := p.graphName()
	g := ir.NewGraph(name)
	p.root = g
	p.graphRest(g)
	if t := p.next(); t.kind != tEOF {
		p.errorf(t, "expected end of file after the graph, found %s", t.describe())
	}
	return g
}

func (p *parser) graphName() string {
	t := p.next()
	switch t.kind {
	case tIdent:
		return t.text
	case tString:
		return t.val
	}
	p.errorf(t, "expected a graph name, found %s", t.describe())
	return ""
}

// graphRest parses what follows a graph's name: its doc and body.
func (p *parser) graphRest(g *ir.Graph) {
	if p.isTrailer("doc") {
		g.Doc = p.trailer()
	}
	open := p.expect("{", " to open the graph body")
	saved := p.skipNL
	p.skipNL = 0
	const (
		header = iota // opsets, inputs, params
		nodes
		returned
	)
	stage := header
	for {
		t := p.peek()
		switch {
		case t.kind == tNL:
			p.next()
			continue
		case t.kind == tEOF:
			p.errorf(t, "expected \"}\" to close graph %s opened at %d:%d, found end of file", quoteName(g.Name), open.line, open.col)
		case t.is("}"):
			p.next()
			p.skipNL = saved
			return
		case stage == returned:
			p.errorf(t, "expected \"}\" after return, found %s", t.describe())
		}
		switch {
		case t.isWord("opset") || t.isWord("input") || t.isWord("param"):
			if stage != header {
				p.errorf(t, "%s declaration after the first node; opsets, inputs and params come first", t.text)
			}
			p.next()
			switch t.text {
			case "opset":
				p.opset(g)
			case "input":
				p.input(g)
			default:
				p.param(g)
			}
		case t.isWord("return"):
			p.next()
			p.ret(g)
			stage = returned
		default:
			p.node(g)
			stage = nodes
		}
		if t := p.peek(); t.kind == tNL {
			p.next()
		} else if !t.is("}") && t.kind != tEOF {
			p.errorf(t, "expected end of line, found %s", t.describe())
		}
	}
}

func (p *parser) opset(g *ir.Graph) {
	domain := ""
	if t := p.peek(); t.kind == tIdent || t.kind == tString {
		p.next()
		domain = t.text
		if t.kind == tString {
			domain = t.val
		}
	}
	t := p.next()
	v, err := strconv.ParseInt(t.text, 10, 64)
	if t.kind != tNumber || err != nil {
		p.errorf(t, "expected the opset version (an integer), found %s", t.describe())
	}
	g.Opsets = append(g.Opsets, ir.Opset{Domain: domain, Version: v})
}

// declInfo is a parsed value declaration: name or number, type, doc.
type declInfo struct {
	tok    token
	absent bool   // "_"
	name   string // "" for an unnamed value
	num    int64  // the ID of an unnamed value, else -1
	typ    ir.TensorType
	hasTyp bool
	doc    string
	sym    *sym
}

func (d *declInfo) String() string {
	if d.num >= 0 {
		return "v" + strconv.FormatInt(d.num, 10)
	}
	return quoteName(d.name)
}

// decl parses NAME [":" TYPE] [doc="..."] and reserves the name.
func (p *parser) decl(allowAbsent bool) declInfo {
	t := p.next()
	d := declInfo{tok: t, num: -1}
	switch t.kind {
	case tIdent:
		if t.text == "_" {
			if !allowAbsent {
				p.errorf(t, "expected a value name, found \"_\" (an absent value is only allowed among node inputs and outputs)")
			}
			d.absent = true
			return d
		}
		if n, ok := unnamedNum(t.text); ok {
			d.num = n
		} else {
			d.name = t.text
		}
	case tString:
		if t.val == "" {
			p.errorf(t, "empty value name (an unnamed value is written v<ID>)")
		}
		d.name = t.val
	default:
		p.errorf(t, "expected a value name, found %s", t.describe())
	}
	if p.peek().is(":") {
		p.next()
		d.typ = p.typ()
		d.hasTyp = true
	}
	if p.isTrailer("doc") {
		d.doc = p.trailer()
	}
	p.reserve(&d)
	return d
}

// reserve records the declaration of a name; names are unique over the root
// graph and all its subgraphs.
func (p *parser) reserve(d *declInfo) {
	s := &sym{line: d.tok.line, col: d.tok.col}
	if d.num >= 0 {
		if d.num > p.lim.unnamedID {
			p.errorf(d.tok, "unnamed value v%d: IDs above %d are not supported", d.num, p.lim.unnamedID)
		}
		if prev := p.nums[d.num]; prev != nil {
			p.errorf(d.tok, "value %s already defined at %d:%d", d, prev.line, prev.col)
		}
		p.nums[d.num] = s
	} else {
		if prev := p.names[d.name]; prev != nil {
			p.errorf(d.tok, "value %s already defined at %d:%d", d, prev.line, prev.col)
		}
		p.names[d.name] = s
	}
	d.sym = s
}

// bind attaches the built value to its declaration.
func (p *parser) bind(d *declInfo, v *ir.Value) {
	d.sym.v = v
	v.Doc = d.doc
	p.values = append(p.values, v)
	if d.num >= 0 {
		p.fixed[v] = d.num
	}
}

func (p *parser) input(g *ir.Graph) {
	d := p.decl(false)
	var v *ir.Value
	if p.peek().is("=") {
		p.next()
		data := p.tensor(d.name)
		if !d.hasTyp {
			d.typ = data.Type()
		}
		v = g.AddParam(d.name, d.typ, data)
		g.MarkInput(v)
	} else {
		v = g.AddInput(d.name, d.typ)
	}
	p.bind(&d, v)
	d.sym.visible = true
}

func (p *parser) param(g *ir.Graph) {
	if t := p.peekAt(1); t.kind == tNL || t.kind == tEOF || t.is("}") {
		// "param NAME": the place among the params of an input with a default.
		t := p.peek()
		v := p.ref(g, false, false)
		if v.Graph != g || v.Data == nil || !slices.Contains(g.Inputs, v) {
			p.errorf(t, "param %s: expected \"=\" and the parameter's data, or the name of an input of this graph declared with a default (input NAME = TENSOR)", t.describe())
		}
		if p.params[v] {
			p.errorf(t, "param %s listed twice", t.describe())
		}
		p.params[v] = true
		i := slices.Index(g.Params, v)
		g.Params = append(slices.Delete(g.Params, i, i+1), v)
		return
	}
	d := p.decl(false)
	p.expect("=", " and the parameter's data")
	data := p.tensor(d.name)
	if !d.hasTyp {
		d.typ = data.Type()
	}
	v := g.AddParam(d.name, d.typ, data)
	p.bind(&d, v)
	d.sym.visible = true
}

func (p *parser) ret(g *ir.Graph) {
	if t := p.peek(); t.kind == tNL || t.is("}") {
		return
	}
	for {
		g.AddOutput(p.ref(g, false, false))
		if !p.peek().is(",") {
			return
		}
		p.next()
	}
}

// ref parses a reference to a value visible from g. With capture, a value of
// an enclosing graph that no owner between lists as an implicit input is
// captured (Graph.Capture).
func (p *parser) ref(g *ir.Graph, allowAbsent, capture bool) *ir.Value {
	t := p.next()
	var s *sym
	switch t.kind {
	case tIdent:
		if t.text == "_" {
			if allowAbsent {
				return nil
			}
			p.errorf(t, "expected a value name, found \"_\" (an absent value is only allowed among node inputs and outputs)")
		}
		if n, ok := unnamedNum(t.text); ok {
			s = p.nums[n]
		} else {
			s = p.names[t.text]
		}
	case tString:
		s = p.names[t.val]
	default:
		p.errorf(t, "expected a value name, found %s", t.describe())
	}
	if s == nil {
		p.errorf(t, "undefined value %s", t.describe())
	}
	if !s.visible {
		p.errorf(t, "value %s is an output of the node being defined (at %d:%d) and cannot be used inside it", t.describe(), s.line, s.col)
	}
	v := s.v
	visible := false
	for h := g; h != nil; h = h.Parent {
		visible = visible || h == v.Graph
	}
	if !visible {
		p.errorf(t, "value %s of graph %s is not visible here", t.describe(), quoteName(v.Graph.Name))
	}
	if capture && v.Graph != g && !captured(g, v) {
		g.Capture(v)
	}
	return v
}

// captured reports whether the owner of g or of an enclosing graph lists v
// as an implicit input.
func captured(g *ir.Graph, v *ir.Value) bool {
	for ; g != nil && g.Owner != nil; g = g.Parent {
		if slices.Contains(g.Owner.Implicit, v) {
			return true
		}
	}
	return false
}

// refs parses a comma-separated list of references up to (not including)
// closer; a trailing comma is allowed.
func (p *parser) refs(g *ir.Graph, closer string, allowAbsent, capture bool) []*ir.Value {
	var vs []*ir.Value
	for !p.peek().is(closer) {
		vs = append(vs, p.ref(g, allowAbsent, capture))
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	return vs
}

// startsOp reports whether the statement is a node without outputs: it
// begins with an operator and "(".
func (p *parser) startsOp() bool {
	t0, t1 := p.peek(), p.peekAt(1)
	switch t0.kind {
	case tIdent:
		return t1.is("(")
	case tString:
		return t1.is("(") || t1.is(".") && p.peekAt(2).kind == tString && p.peekAt(3).is("(")
	}
	return false
}

// opName parses [DOMAIN "."] OP, bare (com.microsoft.FusedConv) or quoted
// ("dom"."op").
func (p *parser) opName() (domain, op string) {
	t := p.next()
	switch t.kind {
	case tIdent:
		i := strings.LastIndexByte(t.text, '.')
		if i < 0 {
			return "", t.text
		}
		if i == len(t.text)-1 {
			p.errorf(t, "expected an operator name after domain %q", t.text[:i])
		}
		return t.text[:i], t.text[i+1:]
	case tString:
		if p.peek().is(".") && p.peekAt(1).kind == tString {
			p.next()
			o := p.next()
			if o.val == "" {
				p.errorf(o, "empty operator name")
			}
			return t.val, o.val
		}
		if t.val == "" {
			p.errorf(t, "empty operator name")
		}
		return "", t.val
	}
	p.errorf(t, "expected an operator name, found %s", t.describe())
	return "", ""
}

func (p *parser) node(g *ir.Graph) {
	var outs []declInfo
	if !p.startsOp() {
		for {
			outs = append(outs, p.decl(true))
			if !p.peek().is(",") {
				break
			}
			p.next()
		}
		if t := p.next(); !t.is("=") {
			p.errorf(t, "expected \",\" or \"=\" after output %s, found %s", outs[len(outs)-1].tok.describe(), t.describe())
		}
	}
	opTok := p.peek()
	domain, op := p.opName()
	shown := opName(domain, op)
	open := p.expect("(", " after operator "+shown)
	p.skipNL++
	inputs := p.refs(g, ")", true, true)
	if t := p.next(); !t.is(")") {
		p.errorf(t, "expected \",\" or \")\" in the inputs of %s opened at %d:%d, found %s", shown, open.line, open.col, t.describe())
	}
	p.skipNL--

	n := g.NewNode(op, domain, inputs, make([]string, len(outs)))
	for i := range outs {
		if d := &outs[i]; !d.absent {
			v := n.SetOutput(i, d.name)
			v.Type = d.typ
			p.bind(d, v)
		}
	}
	if info := n.Info(); info != nil {
		if in := len(n.Inputs); in < info.MinIn || info.MaxIn != ir.Variadic && in > info.MaxIn {
			p.errorf(opTok, "%s takes %s inputs, found %d", shown, info.InputArity(), in)
		}
		if out := len(n.Outputs); out < info.MinOut || info.MaxOut != ir.Variadic && out > info.MaxOut {
			p.errorf(opTok, "%s produces %s outputs, found %d", shown, info.OutputArity(), out)
		}
	}
	if p.peek().isWord("captures") && p.peekAt(1).is("(") {
		p.next()
		open := p.next()
		p.skipNL++
		for _, v := range p.refs(g, ")", false, false) {
			n.AddImplicit(v)
		}
		if t := p.next(); !t.is(")") {
			p.errorf(t, "expected \",\" or \")\" in the captures opened at %d:%d, found %s", open.line, open.col, t.describe())
		}
		p.skipNL--
	}
	if p.peek().isWord("after") && p.peekAt(1).is("(") {
		p.after(g, n)
	}
	if p.peek().is("{") {
		p.attrs(n)
	}
	for nameSet, docSet := false, false; ; {
		switch {
		case !nameSet && p.isTrailer("name"):
			n.Name, nameSet = p.trailer(), true
		case !docSet && p.isTrailer("doc"):
			n.Doc, docSet = p.trailer(), true
		default:
			for i := range outs {
				if !outs[i].absent {
					outs[i].sym.visible = true
				}
			}
			if n.Name != "" {
				names := p.nodeNames[g]
				if names == nil {
					names = map[string]int{}
					p.nodeNames[g] = names
				}
				if _, dup := names[n.Name]; dup {
					names[n.Name] = -1
				} else {
					names[n.Name] = len(g.Nodes) - 1
				}
			}
			return
		}
	}
}

// after parses the control inputs of n, the last node of g: "after" "("
// ref { "," ref } ")", each ref a node name (bare or quoted) or a position
// in g's Nodes, naming a node that comes before n.
func (p *parser) after(g *ir.Graph, n *ir.Node) {
	p.next()
	open := p.next()
	p.skipNL++
	for !p.peek().is(")") {
		t := p.next()
		var c *ir.Node
		switch t.kind {
		case tNumber:
			i, err := strconv.Atoi(t.text)
			if err != nil || i < 0 || strconv.Itoa(i) != t.text {
				p.errorf(t, "expected a node name or position in after(...), found %s", t.describe())
			}
			if i >= len(g.Nodes)-1 {
				p.errorf(t, "after(%d): graph %s has only %d nodes before this one; a control input must come before the node", i, quoteName(g.Name), len(g.Nodes)-1)
			}
			c = g.Nodes[i]
		case tIdent, tString:
			name := t.text
			if t.kind == tString {
				name = t.val
			}
			i, ok := p.nodeNames[g][name]
			switch {
			case !ok:
				p.errorf(t, "after(%s): no node of that name comes before this one in graph %s", t.describe(), quoteName(g.Name))
			case i < 0:
				p.errorf(t, "after(%s): two earlier nodes bear that name; refer to one by its position in the graph", t.describe())
			}
			c = g.Nodes[i]
		default:
			p.errorf(t, "expected a node name or position in after(...), found %s", t.describe())
		}
		if slices.Contains(n.Control, c) {
			p.errorf(t, "after(...) lists node %s twice", t.describe())
		}
		n.AddControl(c)
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	if t := p.next(); !t.is(")") {
		p.errorf(t, "expected \",\" or \")\" in the after(...) opened at %d:%d, found %s", open.line, open.col, t.describe())
	}
	p.skipNL--
}

var kindByName = map[string]ir.TypeKind{
	"seq": ir.KindSequence, "opt": ir.KindOptional, "map": ir.KindMap,
	"sparse": ir.KindSparseTensor, "opaque": ir.KindOpaque,
}

// typ parses [KIND "<"] DTYPE "[" ("*" | DIMS) "]" [">"].
func (p *parser) typ() ir.TensorType {
	var t ir.TensorType
	tok := p.next()
	wrapped := false
	if k, ok := kindByName[tok.text]; ok && tok.kind == tIdent && p.peek().is("<") {
		p.next()
		t.Kind, wrapped = k, true
		tok = p.next()
	}
	t.DType = p.dtype(tok, "a type such as f32[1,3,224,224]")
	p.expect("[", " after the element type")
	if p.peek().is("*") {
		p.next()
		t.Unranked = true
	} else {
		for !p.peek().is("]") {
			d := p.next()
			switch {
			case d.kind == tNumber:
				n, err := strconv.ParseInt(d.text, 10, 64)
				if err != nil || n < 0 {
					p.errorf(d, "expected a dimension (a size, a symbol or ?), found %s", d.describe())
				}
				t.Shape = append(t.Shape, ir.D(n))
			case d.is("?"):
				t.Shape = append(t.Shape, ir.UnknownDim)
			case d.kind == tIdent:
				t.Shape = append(t.Shape, ir.SymDim(d.text))
			case d.kind == tString:
				t.Shape = append(t.Shape, ir.Dim{Size: -1, Sym: d.val})
			default:
				p.errorf(d, "expected a dimension (a size, a symbol or ?), found %s", d.describe())
			}
			if !p.peek().is(",") {
				break
			}
			p.next()
		}
	}
	p.expect("]", " to close the shape")
	if wrapped {
		p.expect(">", " to close the "+t.Kind.String()+" type")
	}
	return t
}

// dtype resolves an element type name; what describes the expected syntax.
func (p *parser) dtype(t token, what string) ir.DType {
	if t.kind != tIdent {
		p.errorf(t, "expected %s, found %s", what, t.describe())
	}
	dt, ok := ir.ParseDType(t.text)
	if !ok {
		p.errorf(t, "unknown element type %s (expected %s)", t.describe(), what)
	}
	return dt
}

// tensor parses DTYPE "[" INTS "]" ("{" ELEMS "}" | raw"HEX") [name=] [doc=];
// defName is the tensor's name when no name= trailer follows.
func (p *parser) tensor(defName string) *ir.Tensor {
	tok := p.next()
	t := &ir.Tensor{DType: p.dtype(tok, "a tensor such as f32[2]{1, 2.5}"), Name: defName}
	p.expect("[", " after the element type")
	for !p.peek().is("]") {
		d := p.next()
		n, err := strconv.ParseInt(d.text, 10, 64)
		if d.kind != tNumber || err != nil {
			p.errorf(d, "expected a tensor dimension (an integer), found %s", d.describe())
		}
		t.Shape = append(t.Shape, n)
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	p.expect("]", " to close the tensor shape")
	switch d := p.peek(); {
	case d.is("{"):
		p.elems(t)
	case d.isWord("raw"):
		p.next()
		s := p.next()
		if s.kind != tString {
			p.errorf(s, "expected a quoted hex string after raw, found %s", s.describe())
		}
		if t.DType == ir.String {
			p.errorf(d, "string tensors take quoted elements in braces, not raw data")
		}
		b, err := hex.DecodeString(s.val)
		if err != nil {
			p.errorf(s, "invalid hex data: %v", err)
		}
		t.Raw = b
	default:
		p.errorf(d, "expected the tensor data, {elements} or raw\"hex\", found %s", d.describe())
	}
	for nameSet, docSet := false, false; ; {
		switch {
		case !nameSet && p.isTrailer("name"):
			t.Name, nameSet = p.trailer(), true
		case !docSet && p.isTrailer("doc"):
			t.Doc, docSet = p.trailer(), true
		default:
			return t
		}
	}
}

// elems parses "{" e0, e1, ... [, "..."] "}" into t's data.
func (p *parser) elems(t *ir.Tensor) {
	open := p.next()
	dt := t.DType
	k := elemKindOf(dt)
	if k == ekRaw {
		p.errorf(open, "%v tensors have no element syntax; write raw\"hex\"", dt)
	}
	n := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			p.errorf(open, "tensor shape %v has a negative dimension", t.Shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			n = math.MaxInt64
		} else {
			n *= d
		}
	}
	tooBig := n > p.lim.literalStrings
	if k != ekString {
		size, ok := dt.StorageBytes(n)
		tooBig = !ok || size > p.lim.literalBytes
	}
	if tooBig {
		p.errorf(open, "tensor %v%v is too large for a literal", dt, t.Shape)
	}
	if k == ekString {
		t.Strs = make([][]byte, 0, min(n, inlineLimit))
	} else {
		size, _ := dt.StorageBytes(n)
		t.Raw = make([]byte, size)
	}
	p.skipNL++
	count, splat := int64(0), false
	var last uint64
	for !p.peek().is("}") {
		e := p.next()
		if e.is("...") {
			if count == 0 {
				p.errorf(e, "\"...\" must follow an element to repeat")
			}
			splat = true
			break
		}
		if count == n {
			p.errorf(e, "too many elements: %v%v has %d", dt, t.Shape, n)
		}
		if k == ekString {
			if e.kind != tString {
				p.errorf(e, "expected a string element, found %s", e.describe())
			}
			t.Strs = append(t.Strs, []byte(e.val))
		} else {
			last = p.elem(dt, e)
			putElem(t.Raw, dt, int(count), last)
		}
		count++
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	if c := p.next(); !c.is("}") {
		p.errorf(c, "expected \",\" or \"}\" in the elements opened at %d:%d, found %s", open.line, open.col, c.describe())
	}
	p.skipNL--
	switch {
	case splat && k == ekString:
		for count < n {
			t.Strs = append(t.Strs, t.Strs[count-1])
			count++
		}
	case splat:
		for ; count < n; count++ {
			putElem(t.Raw, dt, int(count), last)
		}
	case count != n:
		p.errorf(open, "%v%v needs %d elements, found %d", dt, t.Shape, n, count)
	}
}

// elem converts one element token (already consumed) to bits of type dt.
func (p *parser) elem(dt ir.DType, e token) uint64 {
	switch elemKindOf(dt) {
	case ekBool:
		switch {
		case e.isWord("true"):
			return 1
		case e.isWord("false"):
			return 0
		}
		p.errorf(e, "expected true or false, found %s", e.describe())
	case ekInt, ekUint:
		if e.kind != tNumber {
			p.errorf(e, "expected an integer element, found %s", e.describe())
		}
		bits, err := parseIntElem(dt, e.text)
		if err != nil {
			p.errorf(e, "%v", err)
		}
		return bits
	}
	return p.float(dt, e)
}

// float converts a float token (a number, inf, nan or nan(0xBITS)), already
// consumed, to bits of float type dt.
func (p *parser) float(dt ir.DType, e token) uint64 {
	switch {
	case e.isWord("nan") && p.peek().is("("):
		p.next()
		b := p.next()
		bits, err := strconv.ParseUint(b.text, 0, 64)
		if b.kind != tNumber || err != nil {
			p.errorf(b, "expected the NaN's bits (such as 0x7fa00000), found %s", b.describe())
		}
		if err := checkNaNBits(dt, bits); err != nil {
			p.errorf(b, "%v", err)
		}
		p.expect(")", " after the NaN's bits")
		return bits
	case e.kind == tNumber, e.isWord("inf"), e.isWord("nan"):
		bits, err := parseFloatElem(dt, e.text)
		if err != nil {
			p.errorf(e, "%v", err)
		}
		return bits
	}
	p.errorf(e, "expected a number, found %s", e.describe())
	return 0
}

func (p *parser) attrs(n *ir.Node) {
	open := p.next()
	p.skipNL++
	seen := map[string]token{}
	for !p.peek().is("}") {
		t := p.next()
		var name string
		switch t.kind {
		case tIdent:
			name = t.text
		case tString:
			name = t.val
		default:
			p.errorf(t, "expected an attribute name, found %s", t.describe())
		}
		if prev, dup := seen[name]; dup {
			p.errorf(t, "attribute %s repeated (first at %d:%d)", quoteName(name), prev.line, prev.col)
		}
		seen[name] = t
		p.expect("=", " after attribute "+quoteName(name))
		a := p.attrValue(n)
		a.Name = name
		if p.isTrailer("doc") {
			a.Doc = p.trailer()
		}
		n.SetAttr(a)
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	if c := p.next(); !c.is("}") {
		p.errorf(c, "expected \",\" or \"}\" in the attributes opened at %d:%d, found %s", open.line, open.col, c.describe())
	}
	p.skipNL--
}

var listKinds = map[string]ir.AttrKind{
	"ints": ir.AttrInts, "floats": ir.AttrFloats, "strings": ir.AttrStrings,
	"tensors": ir.AttrTensors, "graphs": ir.AttrGraphs,
}

func (p *parser) attrValue(n *ir.Node) ir.Attr {
	t := p.peek()
	switch {
	case t.kind == tNumber, t.isWord("inf"), t.isWord("nan"):
		p.next()
		if i, isInt, ok := p.intValue(t); isInt {
			if !ok {
				p.errorf(t, "integer %s out of range", t.text)
			}
			return ir.Attr{Kind: ir.AttrInt, Int: i}
		}
		return ir.Attr{Kind: ir.AttrFloat, Float: math.Float32frombits(uint32(p.float(ir.Float32, t)))}
	case t.kind == tString:
		p.next()
		return ir.Attr{Kind: ir.AttrString, Str: []byte(t.val)}
	case t.isWord("graph"):
		p.next()
		return ir.Attr{Kind: ir.AttrGraph, Graph: p.subgraph(n)}
	case t.is("["):
		return p.list(n, ir.AttrUndefined)
	case t.kind == tIdent && p.peekAt(1).is("["):
		if k, ok := listKinds[t.text]; ok {
			p.next()
			return p.list(n, k)
		}
		return ir.Attr{Kind: ir.AttrTensor, Tensor: p.tensor("")}
	case t.isWord("undef"):
		p.next()
		return ir.Attr{Kind: ir.AttrUndefined}
	case t.isWord("other"):
		p.next()
		return ir.Attr{Kind: ir.AttrOther}
	}
	p.errorf(t, "expected an attribute value, found %s", t.describe())
	return ir.Attr{}
}

// intValue parses a number token as an int64: isInt reports whether it is
// written as an integer, ok whether it fits.
func (p *parser) intValue(t token) (i int64, isInt, ok bool) {
	if t.kind != tNumber {
		return 0, false, false
	}
	s := strings.TrimLeft(t.text, "+-")
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false, false
	}
	i, err := strconv.ParseInt(t.text, 10, 64)
	return i, true, err == nil
}

// list parses "[" v0, v1, ... "]" after an optional kind word (kind is then
// that list kind, else AttrUndefined and the elements decide).
func (p *parser) list(n *ir.Node, kind ir.AttrKind) ir.Attr {
	open := p.expect("[", "")
	p.skipNL++
	a := ir.Attr{Kind: kind}
	anyFloat := false
	for !p.peek().is("]") {
		t := p.peek()
		var ek ir.AttrKind // the list kind this element belongs to
		switch {
		case t.kind == tNumber, t.isWord("inf"), t.isWord("nan"):
			ek = ir.AttrInts
			if a.Kind == ir.AttrFloats {
				ek = ir.AttrFloats
			}
		case t.kind == tString:
			ek = ir.AttrStrings
		case t.isWord("graph"):
			ek = ir.AttrGraphs
		case t.kind == tIdent && p.peekAt(1).is("["):
			ek = ir.AttrTensors
		default:
			p.errorf(t, "expected a list element, found %s", t.describe())
		}
		if a.Kind == ir.AttrUndefined {
			a.Kind = ek
		}
		if ek != a.Kind {
			p.errorf(t, "expected an element of %s, found %s", a.Kind, t.describe())
		}
		switch ek {
		case ir.AttrInts, ir.AttrFloats:
			p.next()
			i, isInt, ok := p.intValue(t)
			switch {
			case isInt && !ok:
				p.errorf(t, "integer %s out of range", t.text)
			case isInt:
				a.Ints = append(a.Ints, i)
				a.Floats = append(a.Floats, float32(i))
			case kind == ir.AttrInts:
				p.errorf(t, "expected an integer, found %s", t.describe())
			default:
				anyFloat = true
				a.Ints = append(a.Ints, 0)
				a.Floats = append(a.Floats, math.Float32frombits(uint32(p.float(ir.Float32, t))))
			}
		case ir.AttrStrings:
			p.next()
			a.Strs = append(a.Strs, []byte(t.val))
		case ir.AttrGraphs:
			p.next()
			a.Graphs = append(a.Graphs, p.subgraph(n))
		case ir.AttrTensors:
			a.Tensors = append(a.Tensors, p.tensor(""))
		}
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	if c := p.next(); !c.is("]") {
		p.errorf(c, "expected \",\" or \"]\" in the list opened at %d:%d, found %s", open.line, open.col, c.describe())
	}
	p.skipNL--
	if a.Kind == ir.AttrUndefined {
		p.errorf(open, "an empty list needs its kind: ints[], floats[], strings[], tensors[] or graphs[]")
	}
	if a.Kind == ir.AttrInts && anyFloat {
		a.Kind = ir.AttrFloats
	}
	if a.Kind == ir.AttrInts {
		a.Floats = nil
	} else {
		a.Ints = nil
	}
	return a
}

// subgraph parses NAME [doc=] "{" BODY "}" after "graph", as a subgraph of
// n's graph owned by n.
func (p *parser) subgraph(n *ir.Node) *ir.Graph {
	sub := n.Graph.NewSubgraph(p.graphName())
	sub.Owner = n // SetAttr sets it too; captures inside the body need it now
	p.graphRest(sub)
	return sub
}

// assignIDs gives every unnamed value the ID it was written with, and the
// named ones the remaining IDs in order.
func (p *parser) assignIDs() {
	need := int64(p.root.NumValues())
	for _, n := range p.fixed {
		need = max(need, n+1)
	}
	if int64(p.root.NumValues()) < need {
		scratch := p.root.NewSubgraph("") // never attached: only draws IDs
		for int64(p.root.NumValues()) < need {
			scratch.AddInput("", ir.TensorType{})
			scratch.Inputs = scratch.Inputs[:0]
		}
	}
	used := make([]bool, need)
	for v, n := range p.fixed {
		v.ID = ir.ID(n)
		used[n] = true
	}
	next := 0
	for _, v := range p.values {
		if _, ok := p.fixed[v]; ok {
			continue
		}
		for used[next] {
			next++
		}
		v.ID = ir.ID(next)
		used[next] = true
	}
}

// ParseType reads one type in the text form, such as f32[1,3,224,224],
// i64[batch,?], f32[*] or seq<f32[?]>.
func ParseType(src string) (t ir.TensorType, err error) {
	p := &parser{lim: limits{unnamedID: MaxUnnamedID}, file: "type", lx: newLexer(src), skipNL: 1}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			err = b.err
		}
	}()
	t = p.typ()
	if tok := p.peek(); tok.kind != tEOF {
		p.errorf(tok, "unexpected %q after the type", tok.text)
	}
	return t, nil
}
