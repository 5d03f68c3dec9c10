package graphdef

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// exporter builds the NodeDefs of one graph.
type exporter struct {
	g    *ir.Graph
	opts Options
	// entries are the NodeDefs in file order.
	entries []*entry
	byNode  map[*ir.Node]*entry
	byValue map[*ir.Value]*entry // graph inputs and parameters
	// names holds every NodeDef name in use; nodeNames and valueNames
	// are the names of the graph's nodes, inputs and parameters (the IR's
	// names; a fresh one where the IR has none).
	names      map[string]bool
	nodeNames  map[*ir.Node]string
	valueNames map[*ir.Value]string
	// gates are the NoOp gates written so far, by the node they wait for.
	gates map[*ir.Node]*entry
	// meta is the rewrite's metadata, once forced (nil without Remat).
	meta *RematMetadata
}

// entry is one NodeDef to write.
type entry struct {
	nd    *tfpb.NodeDef
	node  *ir.Node  // the op node written, nil for a Placeholder, Const or helper
	value *ir.Value // the graph input or parameter written
	// helper is a NoOp gate or an Identity the exporter added to force an
	// order ("" otherwise).
	helper string
	// key orders the entries in the file (see newExporter).
	key [2]int
}

// name returns the NodeDef's name.
func (e *entry) name() string { return e.nd.GetName() }

// newExporter builds the NodeDefs of g, order forcing included.
func newExporter(g *ir.Graph, opts Options) (*exporter, error) {
	if g == nil {
		return nil, fmt.Errorf("graphdef export: nil graph")
	}
	if opts.Format != FormatGraphDef && opts.Format != FormatTFJS {
		return nil, fmt.Errorf("graphdef export: unknown format %d", opts.Format)
	}
	ex := &exporter{g: g, opts: opts, byNode: map[*ir.Node]*entry{}, byValue: map[*ir.Value]*entry{}, names: map[string]bool{}, nodeNames: map[*ir.Node]string{}, valueNames: map[*ir.Value]string{}, gates: map[*ir.Node]*entry{}}
	if err := ex.check(); err != nil {
		return nil, err
	}
	if err := ex.assignNames(); err != nil {
		return nil, err
	}
	if err := ex.build(); err != nil {
		return nil, err
	}
	if err := ex.force(); err != nil {
		return nil, err
	}
	return ex, nil
}

// check refuses graphs that a GraphDef cannot hold.
func (ex *exporter) check() error {
	if ex.g.Parent != nil {
		return fmt.Errorf("graphdef export: graph %q is a subgraph; export its root", ex.g.Name)
	}
	for _, n := range ex.g.Nodes {
		if n.Domain != ir.TFDomain {
			return fmt.Errorf("graphdef export: node %q is %s, an op of domain %q; a TensorFlow graph holds TensorFlow ops (domain %q) only: write this graph as ONNX", n.String(), n.OpName(), n.Domain, ir.TFDomain)
		}
		if len(n.Subgraphs()) > 0 {
			return fmt.Errorf("graphdef export: node %q (%s) has subgraphs; TensorFlow graphs call functions instead, which the IR does not hold", n.String(), n.OpName())
		}
		for j, v := range n.Inputs {
			if v == nil {
				return fmt.Errorf("graphdef export: node %q (%s) has no input %d; TensorFlow ops have no absent inputs", n.String(), n.OpName(), j)
			}
		}
	}
	return nil
}

// assignNames names every NodeDef: graph inputs and parameters after
// their values, nodes after themselves; nameless ones get a fresh name.
func (ex *exporter) assignNames() error {
	taken := map[string]string{} // name → what took it, for messages
	claim := func(name, what string) error {
		if name == "" {
			return nil
		}
		if strings.ContainsAny(name, ":^") {
			return fmt.Errorf("graphdef export: %s is named %q; TensorFlow names cannot hold ':' or '^' (input references reserve them)", what, name)
		}
		if prev, dup := taken[name]; dup {
			return fmt.Errorf("graphdef export: %s and %s are both named %q; NodeDef names must be unique", prev, what, name)
		}
		taken[name] = what
		return nil
	}
	for _, v := range ex.g.Inputs {
		if err := claim(v.Name, "graph input "+strconv.Quote(v.Name)); err != nil {
			return err
		}
	}
	for _, v := range ex.g.Params {
		if err := claim(v.Name, "parameter "+strconv.Quote(v.Name)); err != nil {
			return err
		}
	}
	for _, n := range ex.g.Nodes {
		if err := claim(n.Name, fmt.Sprintf("node %q (%s)", n.Name, n.OpName())); err != nil {
			return err
		}
	}
	for name := range taken {
		ex.names[name] = true
	}
	orFresh := func(name, base string) string {
		if name != "" {
			return name
		}
		return ex.fresh(base)
	}
	for _, v := range ex.g.Inputs {
		ex.valueNames[v] = orFresh(v.Name, "input")
	}
	for _, v := range ex.g.Params {
		ex.valueNames[v] = orFresh(v.Name, "const")
	}
	for _, n := range ex.g.Nodes {
		ex.nodeNames[n] = orFresh(n.Name, n.Op)
	}
	return nil
}

// fresh returns an unused NodeDef name made from base and reserves it.
func (ex *exporter) fresh(base string) string {
	name := base
	for k := 2; ex.names[name]; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	ex.names[name] = true
	return name
}

// build makes the entries of the graph's inputs, parameters and nodes and
// puts them in file order.
func (ex *exporter) build() error {
	g := ex.g
	// The sort key of an entry read from a file is (its index, 0). A node
	// that was not read follows the nearest node before it in the graph's
	// order that was: (that node's index, 1 + its own position), or
	// (-1, position) when there is none. Graph inputs and parameters that
	// were not read come first.
	for i, v := range g.Inputs {
		e := &entry{value: v, key: [2]int{-3, i}}
		if ne := nodeExtOf(v.Ext); ne != nil {
			e.key = [2]int{ne.TFIndex(), 0}
		}
		nd, err := ex.placeholderDef(v)
		if err != nil {
			return err
		}
		e.nd = nd
		ex.byValue[v] = e
		ex.entries = append(ex.entries, e)
	}
	for i, v := range g.Params {
		e := &entry{value: v, key: [2]int{-2, i}}
		if ne := nodeExtOf(v.Ext); ne != nil {
			e.key = [2]int{ne.TFIndex(), 0}
		}
		ex.byValue[v] = e
		ex.entries = append(ex.entries, e)
	}
	anchor := -1
	for p, n := range g.Nodes {
		e := &entry{node: n, key: [2]int{anchor, 1 + p}}
		if ne := nodeExtOf(n.Ext); ne != nil && !ex.isDuplicate(n) {
			e.key = [2]int{ne.TFIndex(), 0}
			anchor = ne.TFIndex()
		}
		ex.byNode[n] = e
		ex.entries = append(ex.entries, e)
	}
	slices.SortStableFunc(ex.entries, func(a, b *entry) int {
		if c := cmp.Compare(a.key[0], b.key[0]); c != 0 {
			return c
		}
		return cmp.Compare(a.key[1], b.key[1])
	})
	for _, v := range g.Params {
		nd, err := ex.constDef(v)
		if err != nil {
			return err
		}
		ex.byValue[v].nd = nd
	}
	for _, n := range g.Nodes {
		nd, err := ex.nodeDef(n)
		if err != nil {
			return err
		}
		ex.byNode[n].nd = nd
	}
	// Control inputs the importer kept on graph inputs and parameters.
	for _, v := range slices.Concat(g.Inputs, g.Params) {
		if ne := nodeExtOf(v.Ext); ne != nil {
			e := ex.byValue[v]
			e.nd.Input = append(e.nd.Input, ex.controlRefs(e.nd.Input, ne.TFControl(), ne.TFValueControls())...)
		}
	}
	return nil
}

// isDuplicate reports whether n is a recomputation of the rewrite (which
// shares its original's Ext, file index included).
func (ex *exporter) isDuplicate(n *ir.Node) bool {
	if ex.opts.Remat == nil {
		return false
	}
	for _, rc := range ex.opts.Remat.Recomputes {
		if rc.Node == n {
			return true
		}
	}
	return false
}

// tensorName is the name by which NodeDefs read v: "node" for output 0,
// "node:k" for output k, the Placeholder's or Const's name for a graph
// input or parameter.
func (ex *exporter) tensorName(v *ir.Value) string {
	if v.Def == nil {
		return ex.valueNames[v]
	}
	if v.Index == 0 {
		return ex.nodeNames[v.Def]
	}
	return ex.nodeNames[v.Def] + ":" + strconv.Itoa(v.Index)
}

// canonical is an input reference with ":0" dropped.
func canonical(ref string) string {
	if name, ok := strings.CutSuffix(ref, ":0"); ok && !strings.HasPrefix(ref, "^") {
		return name
	}
	return ref
}

// controlRefs returns the "^name" references of the control inputs that
// are still in the graph and not yet in have.
func (ex *exporter) controlRefs(have []string, nodes []*ir.Node, values []*ir.Value) []string {
	var out []string
	add := func(name string) {
		ref := "^" + name
		if !slices.Contains(have, ref) && !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	for _, c := range nodes {
		if ex.byNode[c] != nil {
			add(ex.nodeNames[c])
		}
	}
	for _, v := range values {
		if ex.byValue[v] != nil {
			add(ex.valueNames[v])
		}
	}
	return out
}

// nodeDef builds the NodeDef of op node n: from the NodeDef it was read
// from, when there is one, with its inputs and attributes as the IR has
// them now.
func (ex *exporter) nodeDef(n *ir.Node) (*tfpb.NodeDef, error) {
	nd := &tfpb.NodeDef{}
	var orig []string
	var valueControls []*ir.Value
	if ne := nodeExtOf(n.Ext); ne != nil && ne.TFNode() != nil {
		nd = proto.Clone(ne.TFNode()).(*tfpb.NodeDef)
		orig = nd.Input
		valueControls = ne.TFValueControls()
	}
	nd.Name, nd.Op = ex.nodeNames[n], n.Op
	nd.Input = make([]string, 0, len(n.Inputs)+len(n.Control))
	for j, v := range n.Inputs {
		ref := ex.tensorName(v)
		if j < len(orig) && !strings.HasPrefix(orig[j], "^") && canonical(orig[j]) == canonical(ref) {
			ref = orig[j] // as read ("x:0" stays "x:0")
		}
		nd.Input = append(nd.Input, ref)
	}
	nd.Input = append(nd.Input, ex.controlRefs(nd.Input, n.Control, valueControls)...)
	attrs, err := ex.attrMap(n)
	if err != nil {
		return nil, err
	}
	nd.Attr = attrs
	return nd, nil
}

// attrMap converts n's attributes.
func (ex *exporter) attrMap(n *ir.Node) (map[string]*tfpb.AttrValue, error) {
	if len(n.Attrs) == 0 {
		return nil, nil
	}
	m := make(map[string]*tfpb.AttrValue, len(n.Attrs))
	for i := range n.Attrs {
		a := &n.Attrs[i]
		av, err := attrValue(a)
		if err != nil {
			return nil, fmt.Errorf("graphdef export: node %q (%s): attribute %q: %w", ex.nodeNames[n], n.OpName(), a.Name, err)
		}
		m[a.Name] = av
	}
	return m, nil
}

// placeholderDef builds the Placeholder of graph input v: the NodeDef it
// was read from, else one with v's dtype and shape.
func (ex *exporter) placeholderDef(v *ir.Value) (*tfpb.NodeDef, error) {
	if ne := nodeExtOf(v.Ext); ne != nil && ne.TFNode() != nil && ne.TFNode().GetOp() == "Placeholder" {
		nd := proto.Clone(ne.TFNode()).(*tfpb.NodeDef)
		nd.Name = ex.valueNames[v]
		nd.Input = nil
		return nd, nil
	}
	nd := &tfpb.NodeDef{Name: ex.valueNames[v], Op: "Placeholder", Attr: map[string]*tfpb.AttrValue{}}
	if v.Type.DType != ir.Undefined {
		dt, err := dataType(v.Type.DType)
		if err != nil {
			return nil, fmt.Errorf("graphdef export: graph input %q: %w", v.Name, err)
		}
		nd.Attr["dtype"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: dt}}
	}
	nd.Attr["shape"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_Shape{Shape: shapeProto(v.Type)}}
	return nd, nil
}

// constDef builds the Const of parameter v for the output format.
func (ex *exporter) constDef(v *ir.Value) (*tfpb.NodeDef, error) {
	if v.Data == nil {
		return nil, fmt.Errorf("graphdef export: parameter %q has no value; a Const needs one", v.Name)
	}
	ce, _ := v.Ext.(constExt)
	var nd *tfpb.NodeDef
	if ce != nil && ce.TFNode() != nil {
		nd = proto.Clone(ce.TFNode()).(*tfpb.NodeDef)
		nd.Input = nil
	}
	if nd == nil || nd.GetOp() != "Const" {
		nd = &tfpb.NodeDef{Op: "Const"}
	}
	nd.Name = ex.valueNames[v]
	if nd.Attr == nil {
		nd.Attr = map[string]*tfpb.AttrValue{}
	}
	unchanged := ce != nil && ce.TFConstUnchanged(v.Data)
	old := nd.Attr["value"].GetTensor()
	switch {
	case unchanged && ex.opts.Format == FormatTFJS && old != nil:
		nd.Attr["value"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: stripTensor(old)}}
		return nd, nil
	case unchanged && ex.opts.Format == FormatGraphDef && old != nil && hasInline(old):
		return nd, nil // as read
	}
	// The value written: v's data, in the NodeDef's dtype when it names
	// a wider integer type (TensorFlow.js keeps int64 Consts as int32).
	t := v.Data
	if want, ok := nd.Attr["dtype"].GetValue().(*tfpb.AttrValue_Type); ok && old != nil {
		if dt, ok := ir.TFDType(want.Type.String()); ok && dt != t.DType {
			w, err := widen(t, dt)
			if err != nil {
				return nil, fmt.Errorf("graphdef export: Const %q: %w", v.Name, err)
			}
			t = w
		}
	}
	tp, err := tensorProto(t, ex.opts.Format == FormatGraphDef)
	if err != nil {
		return nil, fmt.Errorf("graphdef export: Const %q: %w", v.Name, err)
	}
	if ex.opts.Format == FormatTFJS {
		// TensorFlow.js reads the value from the manifest, whose dtype is
		// what it computes with.
		if dt, err := dataType(tfjsDType(v.Data.DType)); err == nil {
			tp.Dtype = dt
		}
	}
	nd.Attr["dtype"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tp.Dtype}}
	nd.Attr["value"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: tp}}
	return nd, nil
}
