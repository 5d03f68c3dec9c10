// Package onnx writes IR graphs as ONNX models (protobuf ModelProto).
//
// A graph imported by importers/onnx is written back with everything the
// importer kept in the Ext fields: model metadata, functions, training info,
// declarations with their original type protos, tensor encodings, external
// data placement and unknown fields. Importing and exporting an unchanged
// model gives the same nodes in the same order, bit-identical initializers
// and the same names. Nodes, values and tensors without Ext (made by passes)
// get plain encodings: raw_data for tensors, types built from the IR.
package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"google.golang.org/protobuf/proto"
)

// Options configure an export. The zero value writes the source's
// value_info entries and keeps external data external (ExportFile).
type Options struct {
	// ValueInfo writes a value_info entry for every typed intermediate
	// value (one whose element type is known). When false, exactly the value_info entries the source had are
	// written back, in the source's order (entries of values that no longer
	// exist are dropped).
	ValueInfo bool
	// Inline writes every tensor inline (raw_data), external ones included.
	// Export always inlines: it has no directory to put data files in.
	Inline bool
	// ExternalFile, when set, is the one file (relative to the output's
	// directory) that ExportFile writes all external tensors to. By default
	// each tensor goes to the location it was read from, relative to the
	// output's directory; a location that would overwrite a file the model
	// was read from becomes "<output file name>.data" instead.
	ExternalFile string
	// Source is the path of the input model. ExportFile refuses to
	// overwrite it.
	Source string
	// Producer is written as producer_name for graphs that were not
	// imported from ONNX; "" means "remat-compile".
	Producer string
	// Remat, when set, is what remat.Rewrite did to the graph: the export
	// adds the fake dependencies that make ONNX Runtime run each recompute
	// chain where the plan put it and writes the plan, with RematInfo's
	// numbers, as the "remat-compile.recompute" metadata (see remat.go).
	Remat     *remat.RewriteResult
	RematInfo RematInfo
	// Order lists extra order constraints, applied with Remat (after the
	// recompute chains' dependencies): each holds its Node back until its
	// After node has run, through a fake dependency on After's first
	// tensor output in the depreshape form (on a data input that no Conv,
	// ConvTranspose, Gemm or MatMul produces, unless Node is one of those
	// itself, so that ORT's fusions of such a node with the activation or
	// Add after it survive) or, for a Reshape, the depshape form; never
	// depbias. A node that already has a dependency (from a recompute
	// chain or an earlier constraint) gets one more empty tensor on its
	// Concat instead, unless that dependency is a depbias. CanForceOrder
	// tells whether a node can take a constraint.
	Order []remat.OrderConstraint
	// RuntimeOrder, when set, is the order model of the runtime the model
	// is written for: the positions of a written root node list in the
	// order the runtime runs it (targets/ort gives ONNX Runtime's). The
	// rematerialization's forcing (Options.Remat) checks every recompute
	// chain against it and adds dependencies wherever the runtime would
	// run a chain before its place. Nil means a runtime that follows the
	// file's order: then only the dependencies that defeat common
	// subexpression elimination are added.
	RuntimeOrder func(nodes []WrittenNode) []int
	// HideShapes hides the shapes of the activations from ONNX Runtime's
	// allocation planner, so that it neither keeps freed buffers for later
	// values of the same shape nor writes outputs in place (hide.go): the
	// graph inputs are read through views whose shape it cannot infer, the
	// nodes that make shapes from tensors read them through a Concat with
	// an empty tensor computed from an input, and no value_info is written
	// for the values Shapeless names.
	HideShapes bool
	// SinksLast writes the root graph's sinks (nodes whose outputs no node
	// reads) last, in reverse order, after the rematerialization's helper
	// nodes are added: ONNX Runtime then finishes them in the order g has
	// them, which in a training graph computes each parameter gradient as
	// the backward pass reaches its layer (see sinksLast in ortorder.go).
	SinksLast bool
}

// Export serializes g, a root graph, as an ONNX model. Tensors that came
// from external data are written inline; use ExportFile to keep them
// external. The output is deterministic: the same graph gives the same
// bytes.
func Export(g *ir.Graph, opts Options) ([]byte, error) {
	opts.Inline = true
	ex := &exporter{opts: opts}
	mp, err := ex.model(g)
	if err != nil {
		return nil, err
	}
	return marshal(mp)
}

// protoLimit is the largest message protobuf can serialize.
const protoLimit = math.MaxInt32

func marshal(mp *onnxpb.ModelProto) ([]byte, error) {
	if n := proto.Size(mp); n > protoLimit {
		return nil, fmt.Errorf("onnx export: the model needs %d bytes, more than protobuf's 2 GiB limit; write it with ExportFile and external data", n)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(mp)
	if err != nil {
		return nil, fmt.Errorf("onnx export: %w", err)
	}
	return b, nil
}

type exporter struct {
	opts Options
	// shapeless is Shapeless() under Options.HideShapes, else nil.
	shapeless func(*ir.Value) bool
	names     map[*ir.Value]string // names given to unnamed values
	used      map[string]bool      // every value name in the model
	live      map[*ir.Value]bool   // every value defined in the model
	// ext lists the tensors to be written as external data, in the order
	// met (ExportFile without Inline).
	ext []*extTensor
	// rootProtos are the root graph's nodes as written, before the
	// rematerialization's helper nodes: rootProtos[i] is g.Nodes[i].
	rootProtos []*onnxpb.NodeProto
}

// extTensor is a tensor placed in external data.
type extTensor struct {
	tp     *onnxpb.TensorProto
	raw    []byte
	source string // the file it was read from
}

func (ex *exporter) model(g *ir.Graph) (*onnxpb.ModelProto, error) {
	if g == nil {
		return nil, errors.New("onnx export: nil graph")
	}
	if g.Parent != nil {
		return nil, fmt.Errorf("onnx export: graph %q is a subgraph; export its root graph", g.Name)
	}
	if err := ir.Verify(g); err != nil {
		return nil, fmt.Errorf("onnx export: the graph is not valid IR: %w", err)
	}
	domains := map[string]bool{}
	for _, o := range g.Opsets {
		domains[normDomain(o.Domain)] = true
	}
	if !domains[""] {
		return nil, fmt.Errorf(`onnx export: graph %q imports no version of the default ONNX domain ""; add one to Graph.Opsets`, g.Name)
	}
	ex.collectNames(g)
	if ex.opts.HideShapes {
		ex.shapeless = Shapeless()
	}
	var err error
	g.Walk(func(sg *ir.Graph) {
		for _, n := range sg.Nodes {
			if err == nil && !domains[normDomain(n.Domain)] {
				err = fmt.Errorf("onnx export: node %q (%s): domain %q is not imported; add it to Graph.Opsets", nodeLabel(n), n.OpName(), n.Domain)
			}
		}
	})
	if err != nil {
		return nil, err
	}

	var mp *onnxpb.ModelProto
	if me, ok := g.Ext.(modelExt); ok {
		mp = me.ONNXModel()
	} else {
		producer := ex.opts.Producer
		if producer == "" {
			producer = "remat-compile"
		}
		mp = &onnxpb.ModelProto{ProducerName: proto.String(producer)}
	}
	if mp.GetIrVersion() <= 0 {
		mp.IrVersion = proto.Int64(defaultIRVersion(g))
	}
	mp.OpsetImport = nil
	for _, o := range g.Opsets {
		op := &onnxpb.OperatorSetIdProto{Version: proto.Int64(o.Version)}
		if o.Domain != "" {
			op.Domain = proto.String(o.Domain)
		}
		mp.OpsetImport = append(mp.OpsetImport, op)
	}
	mp.Graph, err = ex.graph(g)
	if err != nil {
		return nil, err
	}
	// The root's nodes, written in g's order, before the forcer inserts
	// its helpers (Written maps the written order back through them).
	ex.rootProtos = slices.Clone(mp.Graph.Node)
	if len(ex.opts.Order) > 0 && ex.opts.Remat == nil {
		return nil, errors.New("onnx export: Options.Order needs Options.Remat")
	}
	if ex.opts.Remat != nil {
		if err := ex.remat(g, mp); err != nil {
			return nil, err
		}
	}
	if ex.opts.HideShapes {
		ex.hideShapes(g, mp.Graph, mp.GetIrVersion())
	}
	if ex.opts.SinksLast {
		mp.Graph.Node = sinksLast(mp.Graph.Node)
	}
	return mp, nil
}

func normDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

func nodeLabel(n *ir.Node) string {
	if n.Name != "" {
		return n.Name
	}
	for _, o := range n.Outputs {
		if o != nil && o.Name != "" {
			return o.Name
		}
	}
	return n.String()
}

// defaultIRVersion picks the IR version for a graph that was not imported:
// the one released with its default-domain opset, raised for element types
// that need a newer one.
func defaultIRVersion(g *ir.Graph) int64 {
	v := g.Opset("")
	var irv int64
	switch {
	case v <= 9:
		irv = 4
	case v == 10:
		irv = 5
	case v == 11:
		irv = 6
	case v <= 14:
		irv = 7
	case v <= 18:
		irv = 8
	case v <= 20:
		irv = 9
	case v <= 22:
		irv = 10
	default:
		irv = 11
	}
	need := func(dt ir.DType) {
		min := int64(0)
		switch dt {
		case ir.Float8E4M3FN, ir.Float8E4M3FNUZ, ir.Float8E5M2, ir.Float8E5M2FNUZ:
			min = 9
		case ir.Int4, ir.Uint4:
			min = 10
		case ir.Float4E2M1:
			min = 11
		}
		irv = max(irv, min)
	}
	g.Walk(func(sg *ir.Graph) {
		for _, p := range sg.Params {
			need(p.Type.DType)
		}
		for _, n := range sg.Nodes {
			for _, o := range n.Outputs {
				if o != nil {
					need(o.Type.DType)
				}
			}
		}
	})
	return irv
}

// collectNames records every value of the model and invents names for
// unnamed ones.
func (ex *exporter) collectNames(g *ir.Graph) {
	ex.used = map[string]bool{}
	ex.live = map[*ir.Value]bool{}
	ex.names = map[*ir.Value]string{}
	var unnamed []*ir.Value
	add := func(v *ir.Value) {
		if v == nil || ex.live[v] {
			return
		}
		ex.live[v] = true
		if v.Name == "" {
			unnamed = append(unnamed, v)
		} else {
			ex.used[v.Name] = true
		}
	}
	g.Walk(func(sg *ir.Graph) {
		for _, v := range sg.Inputs {
			add(v)
		}
		for _, v := range sg.Params {
			add(v)
		}
		for _, n := range sg.Nodes {
			for _, o := range n.Outputs {
				add(o)
			}
		}
	})
	for _, v := range unnamed {
		name := "_v" + strconv.Itoa(int(v.ID))
		for i := 1; ex.used[name]; i++ {
			name = "_v" + strconv.Itoa(int(v.ID)) + "_" + strconv.Itoa(i)
		}
		ex.used[name] = true
		ex.names[v] = name
	}
}

func (ex *exporter) name(v *ir.Value) string {
	if v == nil {
		return ""
	}
	if v.Name != "" {
		return v.Name
	}
	return ex.names[v]
}

// encloses reports whether outer is g or one of g's enclosing graphs.
func encloses(outer, g *ir.Graph) bool {
	for ; g != nil; g = g.Parent {
		if g == outer {
			return true
		}
	}
	return false
}

func (ex *exporter) graph(g *ir.Graph) (*onnxpb.GraphProto, error) {
	gp := &onnxpb.GraphProto{}
	var inDecl, outDecl map[*ir.Value]*onnxpb.ValueInfoProto
	var viList []*onnxpb.ValueInfoProto
	var viVals []*ir.Value
	if ge, ok := g.Ext.(graphExt); ok {
		gp, inDecl, outDecl, viList, viVals = ge.ONNXGraph()
	}
	name := g.Name
	if name == "" {
		name = "graph"
		if g.Owner != nil {
			name = nodeLabel(g.Owner) + "_body"
		}
	}
	gp.Name = proto.String(name)
	if g.Doc != "" {
		gp.DocString = proto.String(g.Doc)
	}

	for _, p := range g.Params {
		if p.Data == nil {
			return nil, fmt.Errorf("onnx export: parameter %q has no data", ex.name(p))
		}
		if se, ok := p.Data.Ext.(sparseExt); ok {
			if values, indices, dims, ok := se.ONNXSparse(p.Data); ok {
				vt, err := ex.tensor(values, ex.name(p))
				if err != nil {
					return nil, err
				}
				it, err := ex.tensor(indices, indices.Name)
				if err != nil {
					return nil, err
				}
				gp.SparseInitializer = append(gp.SparseInitializer, &onnxpb.SparseTensorProto{Values: vt, Indices: it, Dims: dims})
				continue
			}
		}
		tp, err := ex.tensor(p.Data, ex.name(p))
		if err != nil {
			return nil, err
		}
		gp.Initializer = append(gp.Initializer, tp)
	}
	for _, v := range g.Inputs {
		gp.Input = append(gp.Input, ex.valueInfo(v, inDecl[v], false))
	}
	for _, n := range g.Nodes {
		np, err := ex.node(n)
		if err != nil {
			return nil, err
		}
		gp.Node = append(gp.Node, np)
	}
	isOutput := make(map[*ir.Value]bool, len(g.Outputs))
	for _, v := range g.Outputs {
		gp.Output = append(gp.Output, ex.valueInfo(v, outDecl[v], false))
		isOutput[v] = true
	}

	written := map[*ir.Value]bool{}
	for i, vip := range viList {
		v := viVals[i]
		switch {
		case v == nil:
			gp.ValueInfo = append(gp.ValueInfo, vip)
		case ex.shapeless != nil && ex.shapeless(v):
			// Hidden from the runtime's planner: no declaration.
		case ex.live[v] && encloses(v.Graph, g):
			gp.ValueInfo = append(gp.ValueInfo, ex.valueInfo(v, vip, ex.opts.ValueInfo))
			written[v] = true
		}
	}
	if ex.opts.ValueInfo {
		for _, n := range g.Nodes {
			for _, o := range n.Outputs {
				if o != nil && o.Type.DType != ir.Undefined && !written[o] && !isOutput[o] && (ex.shapeless == nil || !ex.shapeless(o)) {
					gp.ValueInfo = append(gp.ValueInfo, ex.valueInfo(o, nil, true))
					written[o] = true
				}
			}
		}
	}
	return gp, nil
}

// valueInfo declares v, starting from decl, the source's declaration, when
// there is one. A declaration keeps the type it was read with unless refine
// is set: graph inputs and outputs are the model's interface and are never
// narrowed (a runtime may fold and inline control flow differently once an
// input is static: silero_vad's If branches fail ONNX Runtime's type
// inference at level all when its inputs are declared static), and
// value_info entries are refined only when Options.ValueInfo asks for the
// inferred types.
func (ex *exporter) valueInfo(v *ir.Value, decl *onnxpb.ValueInfoProto, refine bool) *onnxpb.ValueInfoProto {
	var (
		impType ir.TensorType
		impDoc  string
		hasExt  bool
	)
	if ve, ok := v.Ext.(valueExt); ok {
		impType, impDoc = ve.ONNXValue()
		hasExt = true
	}
	name := ex.name(v)
	if decl != nil {
		typeSame := hasExt && v.Type.Equal(impType)
		docSame := hasExt && v.Doc == impDoc
		if typeSame && docSame && decl.GetName() == name {
			return decl
		}
		vip := proto.Clone(decl).(*onnxpb.ValueInfoProto)
		vip.Name = proto.String(name)
		if fixed, ok := contradicted(impType, v.Type); hasExt && !typeSame && !refine && ok {
			// The declaration contradicts the graph (an input's static
			// size was overridden, as with remat-compile -input-shape):
			// written as read, the model would be invalid. Only the
			// contradicted sizes change; dynamic ones stay dynamic.
			vip.Type = typeProto(fixed, decl.GetType())
		}
		if !typeSame && refine {
			// A type that says less than the declaration (no element
			// type) leaves the declaration's type alone.
			if tp := typeProto(v.Type, decl.GetType()); tp != nil || decl.Type == nil {
				vip.Type = tp
			}
		}
		if !docSame {
			vip.DocString = nil
			if v.Doc != "" {
				vip.DocString = proto.String(v.Doc)
			}
		}
		return vip
	}
	vip := &onnxpb.ValueInfoProto{Name: proto.String(name), Type: typeProto(v.Type, nil)}
	if v.Doc != "" {
		vip.DocString = proto.String(v.Doc)
	}
	return vip
}

// contradicted reports whether now, a value's type, contradicts read, the
// type it was declared with: another element type or rank, or a static
// size where the declaration gives another static size. It returns the
// declaration with the contradicted parts taken from now (every other
// dimension as declared, dynamic ones included).
func contradicted(read, now ir.TensorType) (ir.TensorType, bool) {
	if read.Kind != now.Kind || read.Unranked || now.Unranked || read.DType == ir.Undefined || now.DType == ir.Undefined {
		return read, false
	}
	if read.DType != now.DType || len(read.Shape) != len(now.Shape) {
		return now, true
	}
	fixed := read
	fixed.Shape = slices.Clone(read.Shape)
	changed := false
	for i, d := range read.Shape {
		if n := now.Shape[i]; d.Known() && n.Known() && d.Size != n.Size {
			fixed.Shape[i] = n
			changed = true
		}
	}
	return fixed, changed
}

func (ex *exporter) node(n *ir.Node) (*onnxpb.NodeProto, error) {
	np := &onnxpb.NodeProto{}
	if ne, ok := n.Ext.(nodeExt); ok {
		np = ne.ONNXNode()
	}
	np.Input = make([]string, len(n.Inputs))
	for i, v := range n.Inputs {
		np.Input[i] = ex.name(v)
	}
	np.Output = make([]string, len(n.Outputs))
	for i, v := range n.Outputs {
		np.Output[i] = ex.name(v)
	}
	np.OpType = proto.String(n.Op)
	if n.Domain != "" {
		np.Domain = proto.String(n.Domain)
	}
	if n.Name != "" {
		np.Name = proto.String(n.Name)
	}
	if n.Doc != "" {
		np.DocString = proto.String(n.Doc)
	}
	np.Attribute = nil
	for i := range n.Attrs {
		ap, err := ex.attr(&n.Attrs[i])
		if err != nil {
			return nil, fmt.Errorf("onnx export: node %q (%s): %w", nodeLabel(n), n.OpName(), err)
		}
		np.Attribute = append(np.Attribute, ap)
	}
	return np, nil
}

func (ex *exporter) attr(a *ir.Attr) (*onnxpb.AttributeProto, error) {
	var tmpl *onnxpb.AttributeProto
	if ae, ok := a.Ext.(attrExt); ok {
		tmpl = ae.ONNXAttr()
	}
	if a.Kind == ir.AttrOther {
		if tmpl == nil || tmpl.Type == nil && tmpl.RefAttrName == nil {
			return nil, fmt.Errorf("attribute %q of kind %v has no ONNX form (its Ext lacks the attribute proto)", a.Name, a.Kind)
		}
		ap := proto.Clone(tmpl).(*onnxpb.AttributeProto)
		ap.Name = proto.String(a.Name)
		ap.DocString = nil
		if a.Doc != "" {
			ap.DocString = proto.String(a.Doc)
		}
		return ap, nil
	}
	ap := &onnxpb.AttributeProto{}
	if tmpl != nil && tmpl.Type == nil && tmpl.RefAttrName == nil {
		ap = tmpl // leftovers only (unknown fields)
	}
	ap.Name = proto.String(a.Name)
	if a.Doc != "" {
		ap.DocString = proto.String(a.Doc)
	}
	var typ onnxpb.AttributeProto_AttributeType
	switch a.Kind {
	case ir.AttrFloat:
		typ, ap.F = onnxpb.AttributeProto_FLOAT, proto.Float32(a.Float)
	case ir.AttrInt:
		typ, ap.I = onnxpb.AttributeProto_INT, proto.Int64(a.Int)
	case ir.AttrString:
		typ, ap.S = onnxpb.AttributeProto_STRING, a.Str
		if ap.S == nil {
			ap.S = []byte{}
		}
	case ir.AttrFloats:
		typ, ap.Floats = onnxpb.AttributeProto_FLOATS, a.Floats
	case ir.AttrInts:
		typ, ap.Ints = onnxpb.AttributeProto_INTS, a.Ints
	case ir.AttrStrings:
		typ, ap.Strings = onnxpb.AttributeProto_STRINGS, a.Strs
	case ir.AttrTensor:
		if a.Tensor == nil {
			return nil, fmt.Errorf("attribute %q has no tensor", a.Name)
		}
		t, err := ex.tensor(a.Tensor, a.Tensor.Name)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		typ, ap.T = onnxpb.AttributeProto_TENSOR, t
	case ir.AttrTensors:
		typ = onnxpb.AttributeProto_TENSORS
		for _, at := range a.Tensors {
			t, err := ex.tensor(at, at.Name)
			if err != nil {
				return nil, fmt.Errorf("attribute %q: %w", a.Name, err)
			}
			ap.Tensors = append(ap.Tensors, t)
		}
	case ir.AttrGraph:
		sg, err := ex.graph(a.Graph)
		if err != nil {
			return nil, err
		}
		typ, ap.G = onnxpb.AttributeProto_GRAPH, sg
	case ir.AttrGraphs:
		typ = onnxpb.AttributeProto_GRAPHS
		for _, g := range a.Graphs {
			sg, err := ex.graph(g)
			if err != nil {
				return nil, err
			}
			ap.Graphs = append(ap.Graphs, sg)
		}
	default:
		return nil, fmt.Errorf("attribute %q has kind %v, which ONNX cannot express", a.Name, a.Kind)
	}
	ap.Type = typ.Enum()
	return ap, nil
}
