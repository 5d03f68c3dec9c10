// Package shapes infers the element type and shape of every value of a
// graph, ONNX operator by operator, following the opset the graph imports,
// and TensorFlow op by op (the ir.TFDomain domain, with TensorFlow's
// attributes and layouts: tf_handlers.go).
//
// Sizes computed inside the graph (Shape → Gather → Concat → Reshape, Shape
// → Slice → Cast → Mul → Resize, …) are folded on the side so that they
// resolve to static sizes; the graph itself is not changed except for the
// types of its values. Symbolic dimensions ("batch") propagate through every
// op that can keep them, and Options.Dims binds them to sizes.
//
// Data-dependent sizes (NonZero, Unique, Compress, a Loop's trip count, …)
// get a fresh symbol that starts with DataDependentPrefix and names the
// node, such as "dd:nz:1", which Options.Dims can bind like any other.
package shapes

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// Options configures Infer.
type Options struct {
	// InputShapes replaces the shapes of graph inputs, by input name (from
	// -input-shape name=1x3x224x224). The element type stays the declared one.
	InputShapes map[string][]ir.Dim
	// Dims binds symbolic dimensions to sizes wherever they occur (from -dim
	// batch=8).
	Dims map[string]int64
	// InputValues gives the run-time values of graph inputs that are fixed
	// for this compilation (an int64 sample rate that selects an If
	// branch), by input name. They set the input's shape and take part in
	// constant folding; the graph is not changed.
	InputValues map[string]*ir.Tensor
	// OutputTypes gives the types of values that inference cannot derive,
	// by value name: outputs of custom ops, or data-dependent outputs whose
	// size the user knows. For outputs of known ops it refines the inferred
	// type and must agree with it.
	OutputTypes map[string]ir.TensorType
	// RequireStatic makes it an error for any tensor value that runs (in the
	// root graph, loop bodies and If branches that are not statically dead)
	// to lack a static shape or an element type after inference: one error
	// lists them (the first 20). It is checked only when inference itself
	// found no errors.
	RequireStatic bool
	// File names the input file in error positions.
	File string
}

// DataDependentPrefix starts the names of the symbols Infer makes up for
// sizes that depend on the data (the number of non-zeros, a loop's trip
// count).
const DataDependentPrefix = "dd:"

// IsDataDependent reports whether d is a symbol Infer made up for a
// data-dependent size.
func IsDataDependent(d ir.Dim) bool { return strings.HasPrefix(d.Sym, DataDependentPrefix) }

// defaultOpset is assumed when a graph imports no version of the standard
// domain.
const defaultOpset = 21

// maxListed bounds how many values the RequireStatic error names.
const maxListed = 20

// maxDepth bounds subgraph nesting, against malformed graphs that contain
// themselves.
const maxDepth = 64

// Infer sets the type of every value of g and its subgraphs. Graph inputs
// keep their declared types, changed by opts.InputShapes and opts.Dims;
// parameters take the type of their data; node outputs get the inferred
// type, merged with the type the file declared for them (value_info). It
// returns an ir.ErrorList of input errors, positioned at nodes.
func Infer(g *ir.Graph, opts Options) error {
	if g == nil {
		return ir.ErrorList{ir.Errorf(ir.Pos{File: opts.File}, "no graph")}.Err()
	}
	in := &inferer{
		opts:   &opts,
		file:   opts.File,
		opset:  g.Opset(""),
		stale:  len(opts.InputShapes) > 0,
		seen:   map[*ir.Graph]bool{},
		active: map[*ir.Graph]bool{},
		dead:   map[*ir.Graph]bool{},
	}
	if in.opset <= 0 {
		in.opset = defaultOpset
	}
	nv := g.NumValues()
	in.consts = make([]*cval, nv)
	in.decl = make([]ir.TensorType, nv)
	in.hasDecl = make([]bool, nv)
	in.usedOut = map[string]bool{}

	in.snapshot(g, 0)
	in.setInputs(g)
	in.graph(g, 0)
	in.checkOptions(g)
	if opts.RequireStatic && len(in.errs) == 0 {
		in.requireStatic(g)
	}
	return in.errs.Err()
}

type inferer struct {
	opts  *Options
	file  string
	opset int64
	errs  ir.ErrorList
	// consts holds the known value of a value, by value ID.
	consts []*cval
	// decl is the type the file declared for a value (Dims bound), by ID;
	// hasDecl says whether it declared one.
	decl    []ir.TensorType
	hasDecl []bool
	// stale is set when input shapes are replaced: known sizes declared
	// for intermediate values describe the old inputs then.
	stale   bool
	usedOut map[string]bool
	seen    map[*ir.Graph]bool
	// active holds the graphs being inferred, against graphs that contain
	// themselves.
	active map[*ir.Graph]bool
	// dead holds the If branches found never to run: the other branch's
	// condition is known, or this branch cannot be typed while the other
	// can (a run that took it would fail).
	dead map[*ir.Graph]bool
}

func (in *inferer) valid(v *ir.Value) bool {
	return v != nil && v.ID >= 0 && int(v.ID) < len(in.consts)
}

// declared reports whether t carries information: the zero TensorType is
// what a value without value_info has.
func declared(t ir.TensorType) bool {
	return t.Kind != ir.KindTensor || t.DType != ir.Undefined || t.Unranked || len(t.Shape) > 0
}

// rankOf is the rank of t, or -1 when it is unknown: unranked, or the zero
// type of a value nothing is known about.
func rankOf(t ir.TensorType) int {
	if t.Unranked || (t.Kind == ir.KindTensor && t.DType == ir.Undefined && len(t.Shape) == 0) {
		return -1
	}
	return len(t.Shape)
}

// bind substitutes bound symbols in t.
func (in *inferer) bind(t ir.TensorType) ir.TensorType {
	if len(in.opts.Dims) == 0 {
		return t
	}
	var out []ir.Dim
	for i, d := range t.Shape {
		if d.Sym == "" {
			continue
		}
		if n, ok := in.opts.Dims[d.Sym]; ok {
			if out == nil {
				out = cloneDims(t.Shape)
			}
			out[i] = ir.D(n)
		}
	}
	if out != nil {
		t.Shape = out
	}
	return t
}

func (in *inferer) bindDim(d ir.Dim) ir.Dim {
	if d.Sym != "" {
		if n, ok := in.opts.Dims[d.Sym]; ok {
			return ir.D(n)
		}
	}
	return d
}

// snapshot records the declared types of every value before any is changed.
func (in *inferer) snapshot(g *ir.Graph, depth int) {
	if depth > maxDepth || in.seen[g] {
		return
	}
	in.seen[g] = true
	rec := func(v *ir.Value) {
		if in.valid(v) && declared(v.Type) {
			in.decl[v.ID] = in.bind(v.Type)
			in.hasDecl[v.ID] = true
		}
	}
	for _, v := range g.Inputs {
		rec(v)
	}
	for _, v := range g.Params {
		rec(v)
	}
	for _, n := range g.Nodes {
		if n == nil {
			continue
		}
		for _, o := range n.Outputs {
			rec(o)
		}
		for _, sg := range n.Subgraphs() {
			if sg != nil {
				in.snapshot(sg, depth+1)
			}
		}
	}
}

// setInputs gives the root's inputs their (overridden) types.
func (in *inferer) setInputs(g *ir.Graph) {
	for _, v := range g.Inputs {
		if v == nil {
			continue
		}
		t := v.Type
		if in.valid(v) && in.hasDecl[v.ID] {
			t = in.decl[v.ID]
		}
		if dims, ok := in.opts.InputShapes[v.Name]; ok {
			t.Kind = ir.KindTensor
			t.Unranked = false
			t.Shape = cloneDims(dims)
			t = in.bind(t)
			if in.valid(v) {
				in.decl[v.ID] = t
			}
		}
		if val, ok := in.opts.InputValues[v.Name]; ok && val != nil {
			t = in.inputValue(v, t, val)
		}
		v.Type = t
	}
}

// inputValue checks a given input value against the input's type and
// records it; the type becomes the value's.
func (in *inferer) inputValue(v *ir.Value, t ir.TensorType, val *ir.Tensor) ir.TensorType {
	pos := ir.Pos{File: in.file, Value: v.Name}
	vt := val.Type()
	switch {
	case val.DType == ir.String || val.CheckSize() != nil:
		in.errs.Add(pos, "the given input value is not a well-formed numeric tensor")
		return t
	case t.DType.Valid() && t.DType != val.DType:
		in.errs.Add(pos, "the given input value is %s, but the input is %s", vt, t)
		return t
	case rankOf(t) >= 0 && len(t.Shape) != len(vt.Shape):
		in.errs.Add(pos, "the given input value is %s, but the input is %s", vt, t)
		return t
	}
	for i, d := range vt.Shape {
		if rankOf(t) >= 0 && conflict(d, t.Shape[i]) {
			in.errs.Add(pos, "the given input value is %s, but the input is %s", vt, t)
			return t
		}
	}
	if in.valid(v) {
		in.consts[v.ID] = fromTensor(val)
		in.decl[v.ID] = vt
	}
	return vt
}

// checkOptions reports option entries that name nothing.
func (in *inferer) checkOptions(g *ir.Graph) {
	pos := ir.Pos{File: in.file}
	for _, name := range slices.Sorted(maps.Keys(in.opts.InputValues)) {
		if !slices.ContainsFunc(g.Inputs, func(v *ir.Value) bool { return v != nil && v.Name == name }) {
			in.errs.Add(pos, "input value given for %q, but the graph has no input of that name (inputs: %s)", name, inputNames(g))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.opts.InputShapes)) {
		if !slices.ContainsFunc(g.Inputs, func(v *ir.Value) bool { return v != nil && v.Name == name }) {
			in.errs.Add(pos, "input shape given for %q, but the graph has no input of that name (inputs: %s)", name, inputNames(g))
		}
		for _, d := range in.opts.InputShapes[name] {
			if d.Sym == "" && d.Size < -1 {
				in.errs.Add(pos, "input shape for %q has a negative size %d", name, d.Size)
			}
		}
	}
	// A binding of a symbol the graph lacks is not an error here: Infer runs
	// again on graphs whose symbols an earlier run bound. Callers check
	// user input against Symbols first.
	for _, name := range slices.Sorted(maps.Keys(in.opts.Dims)) {
		if in.opts.Dims[name] < 0 {
			in.errs.Add(pos, "dimension %q bound to a negative size %d", name, in.opts.Dims[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.opts.OutputTypes)) {
		if !in.usedOut[name] {
			in.errs.Add(pos, "output type given for %q, but no node produces a value of that name", name)
		}
	}
}

func inputNames(g *ir.Graph) string {
	var names []string
	for _, v := range g.Inputs {
		if v != nil && v.Data == nil {
			names = append(names, strconv.Quote(v.Name))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// graph infers every node of g, whose inputs already have their types.
func (in *inferer) graph(g *ir.Graph, depth int) {
	if depth > maxDepth {
		in.errs.Add(ir.Pos{File: in.file}, "subgraphs nested more than %d deep", maxDepth)
		return
	}
	if in.active[g] {
		in.errs.Add(ir.Pos{File: in.file}, "graph %q contains itself as a subgraph", g.Name)
		return
	}
	in.active[g] = true
	defer delete(in.active, g)
	for _, v := range g.Params {
		if v == nil {
			continue
		}
		if _, replaced := in.opts.InputShapes[v.Name]; replaced && g.Parent == nil && slices.Contains(g.Inputs, v) {
			continue // an input with a default whose shape the user replaced
		}
		if v.Data != nil {
			t := v.Data.Type()
			// A negative dimension in the data is malformed; leave it unknown.
			for i, d := range t.Shape {
				if d.Size < 0 {
					t.Shape[i] = ir.UnknownDim
				}
			}
			v.Type = t
		}
		if in.valid(v) {
			in.consts[v.ID] = nil
		}
	}
	for _, n := range g.Nodes {
		if n != nil {
			in.node(n, depth)
		}
	}
}

// constOf returns the known value of v, decoding parameter data on demand.
func (in *inferer) constOf(v *ir.Value) *cval {
	if !in.valid(v) {
		return nil
	}
	if c := in.consts[v.ID]; c != nil {
		return c
	}
	if v.Data != nil {
		if _, replaced := in.opts.InputShapes[v.Name]; replaced && slices.Contains(v.Graph.Inputs, v) {
			return nil
		}
		c := fromTensor(v.Data)
		in.consts[v.ID] = c
		return c
	}
	return nil
}

// node infers one node's outputs.
func (in *inferer) node(n *ir.Node, depth int) {
	for _, o := range n.Outputs {
		if in.valid(o) {
			in.consts[o.ID] = nil
		}
	}
	c := &nctx{in: in, n: n, opset: in.opset, depth: depth, out: make([]ir.TensorType, len(n.Outputs))}
	for i := range c.out {
		c.out[i] = unknownType(ir.Undefined)
	}
	info := ir.LookupOp(n.Domain, n.Op)
	if info == nil {
		in.opaque(c, false)
		return
	}
	if nin := len(n.Inputs); nin < info.MinIn || (info.MaxIn != ir.Variadic && nin > info.MaxIn) {
		c.errf("has %d inputs; %s takes %s", nin, n.Op, info.InputArity())
		in.finishAll(c)
		return
	}
	if nout := len(n.Outputs); nout < info.MinOut || (info.MaxOut != ir.Variadic && nout > info.MaxOut) {
		c.errf("has %d outputs; %s produces %s", nout, n.Op, info.OutputArity())
		in.finishAll(c)
		return
	}
	// Ops of different domains that share a name (TensorFlow's Reshape,
	// Cast, Transpose, … and ONNX's) differ: each domain has its rules.
	var h func(*nctx)
	switch n.Domain {
	case "", "ai.onnx":
		h = handler(n.Op)
	case ir.TFDomain:
		h = tfHandler(n.Op)
	}
	if h == nil {
		in.opaque(c, true)
		return
	}
	h(c)
	if c.unsupported != "" {
		in.opaque(c, true)
		return
	}
	in.finishAll(c)
}

func (in *inferer) finishAll(c *nctx) {
	for i, o := range c.n.Outputs {
		if o != nil {
			in.finish(c, o, c.out[i])
		}
	}
}

// finish merges the inferred type of output v with the user's override and
// the declared type, and stores it.
func (in *inferer) finish(c *nctx, v *ir.Value, t ir.TensorType) {
	t = in.bind(t)
	if ov, ok := in.opts.OutputTypes[v.Name]; ok {
		in.usedOut[v.Name] = true
		t = in.combine(c, v, t, in.bind(ov), "the output type override gives", false)
	}
	if in.valid(v) && in.hasDecl[v.ID] {
		t = in.combine(c, v, t, in.decl[v.ID], "the model declares", in.stale)
	}
	v.Type = t
	if cv := in.constOfID(v); cv != nil && !t.Static() {
		in.consts[v.ID] = nil // defensive: the side table never outruns the type
	}
}

func (in *inferer) constOfID(v *ir.Value) *cval {
	if !in.valid(v) {
		return nil
	}
	return in.consts[v.ID]
}

// combine merges an inferred type with a declared one (or an override).
// Known sizes win over symbols, symbols over unknown sizes; two different
// known sizes, element types or ranks are an error, unless the declared
// sizes are stale.
func (in *inferer) combine(c *nctx, v *ir.Value, inf, dec ir.TensorType, what string, stale bool) ir.TensorType {
	infUnknown := inf.Kind == ir.KindTensor && inf.DType == ir.Undefined && rankOf(inf) < 0
	if infUnknown {
		if stale {
			return forgetSizes(dec)
		}
		return dec.Clone()
	}
	bad := false
	if inf.Kind != dec.Kind {
		bad = true
	}
	if inf.DType.Valid() && dec.DType.Valid() && inf.DType != dec.DType {
		bad = true
	}
	out := inf.Clone()
	if !out.DType.Valid() {
		out.DType = dec.DType
	}
	ri, rd := rankOf(inf), rankOf(dec)
	switch {
	case bad:
	case ri < 0 && rd >= 0:
		out.Unranked = false
		out.Shape = cloneDims(dec.Shape)
		if stale {
			out = forgetSizes(out)
		}
	case ri < 0 || rd < 0:
	case ri != rd:
		bad = !stale
	default:
		for i, a := range inf.Shape {
			d := dec.Shape[i]
			switch {
			case a.Known() && d.Known():
				if a.Size != d.Size && !stale {
					bad = true
				}
			case a.Known():
			case d.Known():
				if !stale {
					out.Shape[i] = d
				}
			case a.Sym != "" && !IsDataDependent(a):
			case d.Sym != "":
				out.Shape[i] = d // the file's name for a size inference made up
			}
		}
	}
	if bad {
		c.errf("output %q has inferred type %s, but %s %s", v.String(), inf, what, dec)
		return inf
	}
	return out
}

// forgetSizes keeps only the symbols of t's shape.
func forgetSizes(t ir.TensorType) ir.TensorType {
	t = t.Clone()
	for i, d := range t.Shape {
		if d.Known() {
			t.Shape[i] = ir.UnknownDim
		}
	}
	return t
}

// opaque types the outputs of an op the pass cannot infer: the declared
// type, else the override, else an error. A TensorFlow graph declares
// shapes without element types (_output_shapes): the element type is then
// the node's type attribute (tfOpaqueDType), and a value still without one
// is an error too.
func (in *inferer) opaque(c *nctx, known bool) {
	tf := c.n.Domain == ir.TFDomain
	var missing []string
	for _, o := range c.n.Outputs {
		if o == nil {
			continue
		}
		ov, hasOv := in.opts.OutputTypes[o.Name]
		hasDecl := in.valid(o) && in.hasDecl[o.ID]
		switch {
		case hasOv && hasDecl:
			in.usedOut[o.Name] = true
			o.Type = in.combine(c, o, in.bind(ov), in.decl[o.ID], "the model declares", in.stale)
		case hasOv:
			in.usedOut[o.Name] = true
			o.Type = in.bind(ov)
		case hasDecl:
			o.Type = in.decl[o.ID].Clone()
			if tf && !o.Type.DType.Valid() {
				if o.Type.DType = tfOpaqueDType(c.n); !o.Type.DType.Valid() {
					missing = append(missing, strconv.Quote(o.String()))
				}
			}
		default:
			o.Type = unknownType(ir.Undefined)
			missing = append(missing, strconv.Quote(o.String()))
		}
	}
	if len(missing) == 0 {
		return
	}
	if tf {
		what := "unknown TensorFlow op " + c.n.Op
		if known {
			what = "TensorFlow op " + c.n.Op + " has no shape inference rule"
			if c.unsupported != "" && c.unsupported != "-" {
				what += " (" + c.unsupported + ")"
			}
		}
		c.errf("%s: cannot infer the type of %s; give it with an output type override (-value-type NAME=TYPE), or keep the node's _output_shapes attribute and a T attribute in the graph", what, strings.Join(missing, ", "))
		return
	}
	what := "unknown operator"
	if known {
		what = fmt.Sprintf("shape inference for %s at opset %d is not supported", c.n.Op, in.opset)
		if c.unsupported != "" && c.unsupported != "-" {
			what += " (" + c.unsupported + ")"
		}
	}
	c.errf("%s: cannot infer the type of %s; declare it in the model's value_info or pass an output type override", what, strings.Join(missing, ", "))
}

// tfOpaqueDType is the element type of the outputs of a TensorFlow op the
// pass has no rule for, by TensorFlow's convention that an op's type
// attribute T (or dtype, out_type, DstT, Tout) is the type it produces:
// the first of those the node has, or Undefined.
func tfOpaqueDType(n *ir.Node) ir.DType {
	for _, name := range []string{"T", "dtype", "out_type", "DstT", "Tout"} {
		if a := n.Attr(name); a != nil && a.Kind == ir.AttrString {
			if dt, ok := ir.TFDType(string(a.Str)); ok {
				return dt
			}
		}
	}
	return ir.Undefined
}

// requireStatic reports, in one error, every tensor value that runs and
// lacks a static shape.
func (in *inferer) requireStatic(g *ir.Graph) {
	var bad []string
	total := 0
	add := func(v *ir.Value, where string) {
		if v == nil || v.Type.Kind != ir.KindTensor || (v.Type.Static() && v.Type.DType.Valid()) {
			return
		}
		total++
		if len(bad) < maxListed {
			bad = append(bad, fmt.Sprintf("%q %s (%s)", v.String(), v.Type, where))
		}
	}
	seen := map[*ir.Graph]bool{}
	var walk func(g *ir.Graph, depth int)
	walk = func(g *ir.Graph, depth int) {
		if depth > maxDepth || seen[g] {
			return
		}
		seen[g] = true
		for _, v := range g.Inputs {
			if g.Parent == nil {
				add(v, "graph input")
			} else {
				add(v, "subgraph "+strconv.Quote(g.Name)+" input")
			}
		}
		for _, n := range g.Nodes {
			if n == nil {
				continue
			}
			where := fmt.Sprintf("node %q (%s)", ir.NodePos("", n).Node, n.OpName())
			for _, o := range n.Outputs {
				add(o, where)
			}
			for _, sg := range in.liveSubgraphs(n) {
				walk(sg, depth+1)
			}
		}
	}
	walk(g, 0)
	if total == 0 {
		return
	}
	msg := fmt.Sprintf("%d values have no static shape: %s", total, strings.Join(bad, ", "))
	if total == 1 {
		msg = "1 value has no static shape: " + bad[0]
	}
	if total > len(bad) {
		msg += fmt.Sprintf(", and %d more", total-len(bad))
	}
	msg += "; fix their sizes with input shapes or dimension bindings (-input-shape, -dim), or output type overrides for data-dependent and custom ops"
	in.errs.Add(ir.Pos{File: in.file}, "%s", msg)
}

// liveSubgraphs are the subgraphs of n that may run: both branches of an If
// unless its condition is a known constant.
func (in *inferer) liveSubgraphs(n *ir.Node) []*ir.Graph {
	if n.Op == "If" && (n.Domain == "" || n.Domain == "ai.onnx") && len(n.Inputs) > 0 {
		if cv := in.constOf(n.Inputs[0]); cv != nil {
			if e, ok := cv.single(); ok && e.known() {
				name := "else_branch"
				if truthy(cv.dt, e) {
					name = "then_branch"
				}
				if a := n.Attr(name); a != nil && a.Graph != nil {
					return []*ir.Graph{a.Graph}
				}
				return nil
			}
		}
	}
	var gs []*ir.Graph
	for _, sg := range n.Subgraphs() {
		if sg != nil && !in.dead[sg] {
			gs = append(gs, sg)
		}
	}
	return gs
}

// Symbols lists, sorted, the symbolic dimensions that g's inputs and the
// types declared in g and its subgraphs use: the names Options.Dims may
// bind before inference (a caller checks user-given names against it).
func Symbols(g *ir.Graph) []string {
	set := map[string]bool{}
	seen := map[*ir.Graph]bool{}
	add := func(v *ir.Value) {
		if v == nil {
			return
		}
		for _, d := range v.Type.Shape {
			if d.Sym != "" {
				set[d.Sym] = true
			}
		}
	}
	var walk func(g *ir.Graph, depth int)
	walk = func(g *ir.Graph, depth int) {
		if g == nil || depth > maxDepth || seen[g] {
			return
		}
		seen[g] = true
		for _, v := range g.Inputs {
			add(v)
		}
		for _, n := range g.Nodes {
			if n == nil {
				continue
			}
			for _, o := range n.Outputs {
				add(o)
			}
			for _, sg := range n.Subgraphs() {
				walk(sg, depth+1)
			}
		}
	}
	walk(g, 0)
	return slices.Sorted(maps.Keys(set))
}
