// Package onnx imports ONNX models (protobuf ModelProto, .onnx files) into
// the IR.
//
// Everything the IR models (nodes, values, types, constant tensors,
// attributes, subgraphs, opset imports) becomes IR; everything else (model
// metadata, functions, training info, value_info declarations, tensor
// encodings, external data placement, unknown fields) is kept in the Ext
// fields as the types of ext.go, so that exporters/onnx can write the model
// back. Problems with the input are returned as an ir.ErrorList of
// positioned errors.
package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/internal/pbcheck"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// Options configure an import. The zero value is usable for models without
// external data.
type Options struct {
	// File names the model in error positions. ImportFile sets it to the
	// path when it is empty.
	File string
	// BaseDir is the directory that external data locations are relative
	// to. ImportFile sets it to the model's directory when it is empty. A
	// model with external data and no BaseDir is an error.
	BaseDir string
	// MaxErrors is how many errors the importer collects before it gives
	// up; 0 means 100. (The returned ir.ErrorList prints the first
	// ir.MaxErrors of them.)
	MaxErrors int
	// MaxSparseBytes bounds the dense size of a sparse initializer, which
	// the importer expands; 0 means 1 GiB.
	MaxSparseBytes int64
}

func (o *Options) maxErrors() int {
	if o.MaxErrors > 0 {
		return o.MaxErrors
	}
	return 100
}

func (o *Options) maxSparseBytes() int64 {
	if o.MaxSparseBytes > 0 {
		return o.MaxSparseBytes
	}
	return 1 << 30
}

// maxDepth bounds the nesting of subgraphs.
const maxDepth = 100

// ImportFile reads and imports the model at path. External data is read
// relative to the model's directory.
func ImportFile(path string, opts Options) (*ir.Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx import: %w", err)
	}
	if opts.File == "" {
		opts.File = path
	}
	if opts.BaseDir == "" {
		opts.BaseDir = filepath.Dir(path)
	}
	return Import(data, opts)
}

// Import decodes a serialized ModelProto into an IR graph. Problems with the
// model are an ir.ErrorList; an error wrapped as "onnx import: internal" means
// the importer built an IR graph that fails ir.Verify, a bug in the
// importer.
func Import(data []byte, opts Options) (*ir.Graph, error) {
	mp := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(data, mp); err != nil {
		return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: opts.File}, "not a valid ONNX model (protobuf ModelProto): %v", err)}.Err()
	}
	if err := pbcheck.Check(mp.ProtoReflect()); err != nil {
		return nil, ir.ErrorList{ir.Errorf(ir.Pos{File: opts.File}, "not a valid ONNX model: %v", err)}.Err()
	}
	im := &importer{opts: opts, max: opts.maxErrors()}
	defer im.closeFiles()
	g := im.model(mp)
	if err := im.errs.Err(); err != nil {
		return nil, err
	}
	if err := ir.Verify(g); err != nil {
		return nil, fmt.Errorf("onnx import: internal: %w", err)
	}
	return g, nil
}

type importer struct {
	opts     Options
	errs     ir.ErrorList
	max      int
	stop     bool // too many errors: stop looking for more
	root     *ir.Graph
	files    map[string]openFile
	domains  map[string]bool // imported opset domains ("ai.onnx" as "")
	declared []*ir.Value     // values given a ValueInfo
}

func (im *importer) errorf(pos ir.Pos, format string, args ...any) {
	im.errs.Add(pos, format, args...)
	if im.errs.Len() >= im.max {
		im.stop = true
	}
}

func (im *importer) closeFiles() {
	for _, f := range im.files {
		if f.f != nil {
			f.f.Close()
		}
	}
}

func (im *importer) filePos() ir.Pos { return ir.Pos{File: im.opts.File} }

func (im *importer) valuePos(name string) ir.Pos { return ir.Pos{File: im.opts.File, Value: name} }

func (im *importer) nodePos(np *onnxpb.NodeProto) ir.Pos {
	name := np.GetName()
	if name == "" {
		for _, o := range np.GetOutput() {
			if o != "" {
				name = o
				break
			}
		}
	}
	op := np.GetOpType()
	if d := np.GetDomain(); d != "" && d != "ai.onnx" {
		op = d + "." + op
	}
	return ir.Pos{File: im.opts.File, Node: name, Op: op}
}

func normDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

func (im *importer) model(mp *onnxpb.ModelProto) *ir.Graph {
	gp := mp.GetGraph()
	g := ir.NewGraph(gp.GetName())
	im.root = g
	info := &ModelInfo{
		IRVersion:       mp.GetIrVersion(),
		ProducerName:    mp.GetProducerName(),
		ProducerVersion: mp.GetProducerVersion(),
		Domain:          mp.GetDomain(),
		ModelVersion:    mp.GetModelVersion(),
		Doc:             mp.GetDocString(),
		MetadataProps:   propsOf(mp.GetMetadataProps()),
		Functions:       mp.GetFunctions(),
		TrainingInfo:    mp.GetTrainingInfo(),
		Configuration:   mp.GetConfiguration(),
		Unknown:         unknownOf(mp),
	}
	g.Ext = info

	im.domains = map[string]bool{}
	for _, o := range mp.GetOpsetImport() {
		d := o.GetDomain()
		if im.domains[normDomain(d)] {
			im.errorf(im.filePos(), "opset_import lists domain %q twice; import each domain once", d)
			continue
		}
		im.domains[normDomain(d)] = true
		if o.GetVersion() <= 0 {
			im.errorf(im.filePos(), "opset_import of domain %q has version %d; opset versions start at 1", d, o.GetVersion())
		}
		g.Opsets = append(g.Opsets, ir.Opset{Domain: d, Version: o.GetVersion()})
	}
	if !im.domains[""] {
		im.errorf(im.filePos(), `model has no opset_import for the default ONNX domain ""; add one (for example domain "" version 17)`)
	}
	if gp == nil {
		im.errorf(im.filePos(), "model has no graph")
		return g
	}
	im.graph(g, gp, &info.GraphInfo, nil, 0)
	if len(gp.GetOutput()) == 0 {
		im.errorf(im.filePos(), "graph %q has no outputs; a model must declare at least one graph output", gp.GetName())
	}
	for _, v := range im.declared {
		vi := v.Ext.(*ValueInfo)
		vi.Type, vi.Doc = v.Type.Clone(), v.Doc
	}
	if im.opts.BaseDir != "" && len(im.files) > 0 {
		info.BaseDir = im.opts.BaseDir
	}
	if im.errs.Len() == 0 {
		if err := g.Sort(); err != nil {
			im.errorf(im.filePos(), "%v", err)
		}
	}
	return g
}

// describe says what defines v, for messages.
func describe(v *ir.Value) string {
	switch {
	case v.Def != nil:
		return fmt.Sprintf("node %q (%s)", nodeLabel(v.Def), v.Def.OpName())
	case slices.Contains(v.Graph.Params, v):
		return "an initializer"
	}
	return "a graph input"
}

func nodeLabel(n *ir.Node) string {
	if n.Name != "" {
		return n.Name
	}
	for _, o := range n.Outputs {
		if o != nil {
			return o.Name
		}
	}
	return n.String()
}

// scope maps the value names of one graph; lookups continue in the
// enclosing graphs' scopes. A subgraph may read, but not redefine, the names
// of enclosing graphs; sibling subgraphs (the branches of an If) may reuse
// a name.
type scope struct {
	names  map[string]*ir.Value
	parent *scope
}

func (sc *scope) lookup(name string) *ir.Value {
	for ; sc != nil; sc = sc.parent {
		if v, ok := sc.names[name]; ok {
			return v
		}
	}
	return nil
}

// claim checks that name is still free in sc; it records an error and
// reports false when it is not. what describes the new definition.
func (im *importer) claim(name string, sc *scope, pos ir.Pos, what string) bool {
	if prev, ok := sc.names[name]; ok {
		im.errorf(pos, "%s %q is also defined by %s (two producers of one name)", what, name, describe(prev))
		return false
	}
	if prev := sc.parent.lookup(name); prev != nil {
		im.errorf(pos, "%s %q shadows the value of that name in enclosing graph %q (defined by %s); ONNX forbids reusing an outer name in a subgraph", what, name, prev.Graph.Name, describe(prev))
		return false
	}
	return true
}

// resolve finds the value a name refers to in sc.
func (im *importer) resolve(name string, sc *scope, pos ir.Pos, what string) *ir.Value {
	v := sc.lookup(name)
	if v == nil {
		im.errorf(pos, "%s %q is not defined by any node, graph input or initializer in scope (dangling reference)", what, name)
	}
	return v
}

// declare gives v a ValueInfo Ext.
func (im *importer) declare(v *ir.Value) {
	if _, ok := v.Ext.(*ValueInfo); !ok {
		v.Ext = &ValueInfo{}
		im.declared = append(im.declared, v)
	}
}

// graph fills g from gp; parent is the scope of the enclosing graph (nil
// for the root).
func (im *importer) graph(g *ir.Graph, gp *onnxpb.GraphProto, gi *GraphInfo, parent *scope, depth int) {
	sc := &scope{names: map[string]*ir.Value{}, parent: parent}
	g.Doc = gp.GetDocString()
	gi.QuantizationAnnotation = gp.GetQuantizationAnnotation()
	gi.MetadataProps = propsOf(gp.GetMetadataProps())
	gi.Unknown = unknownOf(gp)
	gname := gp.GetName()
	typed := map[*ir.Value]bool{} // values whose Type is settled
	setType := func(v *ir.Value, vip *onnxpb.ValueInfoProto, t ir.TensorType) {
		if vip.GetType() != nil && v.Graph == g && !typed[v] {
			v.Type, typed[v] = t, true
		}
		if v.Doc == "" && v.Graph == g {
			v.Doc = vip.GetDocString()
		}
	}

	// Initializers, dense then sparse, become parameters.
	params := map[string]*ir.Value{}
	addParam := func(name string, t *ir.Tensor) {
		var typ ir.TensorType
		if t != nil {
			typ = t.Type()
		}
		v := g.AddParam(name, typ, t)
		sc.names[name], params[name], typed[v] = v, v, true
	}
	for i, tp := range gp.GetInitializer() {
		name := tp.GetName()
		if name == "" {
			im.errorf(im.filePos(), "graph %q: initializer %d has no name", gname, i)
			continue
		}
		pos := im.valuePos(name)
		if !im.claim(name, sc, pos, "initializer") {
			continue
		}
		t, _ := im.tensor(tp, tensorCtx{pos: pos, what: "initializer"})
		addParam(name, t)
	}
	for i, sp := range gp.GetSparseInitializer() {
		name := sp.GetValues().GetName()
		if name == "" {
			im.errorf(im.filePos(), "graph %q: sparse initializer %d has no name (its values tensor names it)", gname, i)
			continue
		}
		pos := im.valuePos(name)
		if !im.claim(name, sc, pos, "sparse initializer") {
			continue
		}
		t, _ := im.sparse(sp, tensorCtx{pos: pos, what: "sparse initializer"})
		addParam(name, t)
	}

	// Inputs; an input that is also an initializer is an input with a
	// default value.
	gi.Inputs = make(map[*ir.Value]*onnxpb.ValueInfoProto, len(gp.GetInput()))
	inputSeen := make(map[string]bool, len(gp.GetInput()))
	for i, vip := range gp.GetInput() {
		name := vip.GetName()
		if name == "" {
			im.errorf(im.filePos(), "graph %q: input %d has no name", gname, i)
			continue
		}
		pos := im.valuePos(name)
		if inputSeen[name] {
			im.errorf(pos, "graph %q lists input %q twice (duplicate graph input)", gname, name)
			continue
		}
		inputSeen[name] = true
		t := im.valueType(vip.GetType(), pos, "graph input type")
		v, ok := params[name]
		if ok {
			g.MarkInput(v)
		} else {
			if !im.claim(name, sc, pos, "graph input") {
				continue
			}
			v = g.AddInput(name, ir.TensorType{})
			sc.names[name] = v
		}
		gi.Inputs[v] = vip
		im.declare(v)
		setType(v, vip, t)
	}
	if im.stop {
		return
	}

	// Nodes, first pass: create every node and define its outputs, so that
	// inputs may refer to nodes listed later (unsorted models) and
	// subgraphs to any value of an enclosing graph.
	nodes := make([]*ir.Node, len(gp.GetNode()))
	for i, np := range gp.GetNode() {
		pos := im.nodePos(np)
		op, domain := np.GetOpType(), np.GetDomain()
		if op == "" {
			im.errorf(pos, "node has no op_type")
		}
		if !im.domains[normDomain(domain)] && domain != "" {
			im.errorf(pos, "domain %q is not imported; add an opset_import for it", domain)
		}
		ins, outs := np.GetInput(), np.GetOutput()
		if info := ir.LookupOp(domain, op); info != nil {
			if len(ins) < info.MinIn || info.MaxIn != ir.Variadic && len(ins) > info.MaxIn {
				im.errorf(pos, "has %d inputs; %s takes %s", len(ins), op, info.InputArity())
			}
			if len(outs) < info.MinOut || info.MaxOut != ir.Variadic && len(outs) > info.MaxOut {
				im.errorf(pos, "has %d outputs; %s produces %s", len(outs), op, info.OutputArity())
			}
		}
		n := g.NewNode(op, domain, make([]*ir.Value, len(ins)), make([]string, len(outs)))
		n.Name, n.Doc = np.GetName(), np.GetDocString()
		if np.Overload != nil || len(np.MetadataProps) > 0 || len(np.DeviceConfigurations) > 0 || len(unknownOf(np)) > 0 {
			n.Ext = &NodeInfo{
				Overload:             np.GetOverload(),
				MetadataProps:        propsOf(np.GetMetadataProps()),
				DeviceConfigurations: np.GetDeviceConfigurations(),
				Unknown:              unknownOf(np),
			}
		}
		for j, name := range outs {
			if name == "" || !im.claim(name, sc, pos, "output") {
				continue
			}
			sc.names[name] = n.SetOutput(j, name)
		}
		nodes[i] = n
		if im.stop {
			return
		}
	}

	// Second pass: attributes (subgraphs) and inputs.
	for i, np := range gp.GetNode() {
		n := nodes[i]
		pos := im.nodePos(np)
		for k, ap := range np.GetAttribute() {
			im.attr(n, g, sc, ap, k, pos, depth)
		}
		for j, name := range np.GetInput() {
			if name == "" {
				continue // an absent optional input
			}
			v := im.resolve(name, sc, pos, fmt.Sprintf("input %d", j))
			if v == nil {
				continue
			}
			n.SetInput(j, v)
			if v.Graph != g {
				g.Capture(v)
			}
		}
		if im.stop {
			return
		}
	}

	// Outputs.
	gi.Outputs = make(map[*ir.Value]*onnxpb.ValueInfoProto, len(gp.GetOutput()))
	for i, vip := range gp.GetOutput() {
		name := vip.GetName()
		if name == "" {
			im.errorf(im.filePos(), "graph %q: output %d has no name", gname, i)
			continue
		}
		pos := im.valuePos(name)
		t := im.valueType(vip.GetType(), pos, "graph output type")
		v := im.resolve(name, sc, pos, "graph output")
		if v == nil {
			continue
		}
		g.AddOutput(v)
		if v.Graph != g {
			g.Capture(v)
		}
		if _, ok := gi.Outputs[v]; !ok {
			gi.Outputs[v] = vip
		}
		im.declare(v)
		setType(v, vip, t)
	}

	// value_info: types of intermediate values.
	for _, vip := range gp.GetValueInfo() {
		name := vip.GetName()
		t := im.valueType(vip.GetType(), im.valuePos(name), "value_info type")
		e := ValueInfoEntry{Proto: vip}
		if v := sc.lookup(name); v != nil && name != "" {
			e.Value = v
			im.declare(v)
			setType(v, vip, t)
		}
		gi.ValueInfo = append(gi.ValueInfo, e)
	}
}

// attr converts attribute ap (the k-th) of node n, in graph g, and sets it on
// n.
func (im *importer) attr(n *ir.Node, g *ir.Graph, sc *scope, ap *onnxpb.AttributeProto, k int, pos ir.Pos, depth int) {
	name := ap.GetName()
	if name == "" {
		im.errorf(pos, "attribute %d has no name", k)
		return
	}
	if n.Attr(name) != nil {
		im.errorf(pos, "attribute %q is given twice", name)
		return
	}
	what := fmt.Sprintf("attribute %q", name)
	a := ir.Attr{Name: name, Doc: ap.GetDocString()}
	if u := unknownOf(ap); u != nil {
		a.Ext = &AttrInfo{Unknown: u}
	}
	typ := ap.GetType()
	if ap.Type == nil {
		typ = inferAttrType(ap) // IR version 1 had no type field
	}
	missing := func(field string) {
		im.errorf(pos, "%s is of type %v but has no %s value", what, typ, field)
	}
	if ap.RefAttrName != nil {
		// A reference to an attribute of an enclosing function: only
		// meaningful in function bodies; kept as it is.
		typ = -1
	}
	switch typ {
	case onnxpb.AttributeProto_FLOAT:
		a.Kind, a.Float = ir.AttrFloat, ap.GetF()
	case onnxpb.AttributeProto_INT:
		a.Kind, a.Int = ir.AttrInt, ap.GetI()
	case onnxpb.AttributeProto_STRING:
		a.Kind, a.Str = ir.AttrString, ap.GetS()
		if a.Str == nil {
			a.Str = []byte{}
		}
	case onnxpb.AttributeProto_FLOATS:
		a.Kind, a.Floats = ir.AttrFloats, ap.GetFloats()
	case onnxpb.AttributeProto_INTS:
		a.Kind, a.Ints = ir.AttrInts, ap.GetInts()
	case onnxpb.AttributeProto_STRINGS:
		a.Kind, a.Strs = ir.AttrStrings, ap.GetStrings()
	case onnxpb.AttributeProto_TENSOR:
		if ap.T == nil {
			missing("t")
			return
		}
		t, ok := im.tensor(ap.T, tensorCtx{pos: pos, what: what})
		if !ok {
			return
		}
		a.Kind, a.Tensor = ir.AttrTensor, t
	case onnxpb.AttributeProto_TENSORS:
		a.Kind = ir.AttrTensors
		for i, tp := range ap.GetTensors() {
			t, ok := im.tensor(tp, tensorCtx{pos: pos, what: fmt.Sprintf("%s tensor %d", what, i)})
			if !ok {
				return
			}
			a.Tensors = append(a.Tensors, t)
		}
	case onnxpb.AttributeProto_GRAPH:
		if ap.G == nil {
			missing("g")
			return
		}
		a.Kind = ir.AttrGraph
		a.Graph = g.NewSubgraph(ap.G.GetName())
		n.SetAttr(a) // sets the owner, which captures need
		im.subgraph(a.Graph, ap.G, sc, pos, depth+1)
		return
	case onnxpb.AttributeProto_GRAPHS:
		a.Kind = ir.AttrGraphs
		for _, gp := range ap.GetGraphs() {
			a.Graphs = append(a.Graphs, g.NewSubgraph(gp.GetName()))
		}
		n.SetAttr(a)
		for i, gp := range ap.GetGraphs() {
			im.subgraph(a.Graphs[i], gp, sc, pos, depth+1)
		}
		return
	case onnxpb.AttributeProto_SPARSE_TENSOR, onnxpb.AttributeProto_SPARSE_TENSORS,
		onnxpb.AttributeProto_TYPE_PROTO, onnxpb.AttributeProto_TYPE_PROTOS, -1:
		a.Kind = ir.AttrOther
		kept := ap
		if ap.Type == nil && typ >= 0 {
			// IR version 1 had no type field: keep the inferred type, so
			// the exporter can write the attribute back.
			kept = proto.Clone(ap).(*onnxpb.AttributeProto)
			kept.Type = typ.Enum()
		}
		a.Ext = &AttrInfo{Proto: kept}
	case onnxpb.AttributeProto_UNDEFINED:
		im.errorf(pos, "%s has no value (no type and no value field set)", what)
		return
	default:
		im.errorf(pos, "%s has unknown type %d", what, typ)
		return
	}
	n.SetAttr(a)
}

func (im *importer) subgraph(sub *ir.Graph, gp *onnxpb.GraphProto, parent *scope, pos ir.Pos, depth int) {
	gi := &GraphInfo{}
	sub.Ext = gi
	if depth > maxDepth {
		im.errorf(pos, "subgraphs are nested more than %d deep", maxDepth)
		im.stop = true
		return
	}
	im.graph(sub, gp, gi, parent, depth)
}

// inferAttrType guesses the type of an attribute written without one, from
// the field that holds its value.
func inferAttrType(ap *onnxpb.AttributeProto) onnxpb.AttributeProto_AttributeType {
	switch {
	case ap.F != nil:
		return onnxpb.AttributeProto_FLOAT
	case ap.I != nil:
		return onnxpb.AttributeProto_INT
	case ap.S != nil:
		return onnxpb.AttributeProto_STRING
	case ap.T != nil:
		return onnxpb.AttributeProto_TENSOR
	case ap.G != nil:
		return onnxpb.AttributeProto_GRAPH
	case ap.SparseTensor != nil:
		return onnxpb.AttributeProto_SPARSE_TENSOR
	case ap.Tp != nil:
		return onnxpb.AttributeProto_TYPE_PROTO
	case len(ap.Floats) > 0:
		return onnxpb.AttributeProto_FLOATS
	case len(ap.Ints) > 0:
		return onnxpb.AttributeProto_INTS
	case len(ap.Strings) > 0:
		return onnxpb.AttributeProto_STRINGS
	case len(ap.Tensors) > 0:
		return onnxpb.AttributeProto_TENSORS
	case len(ap.Graphs) > 0:
		return onnxpb.AttributeProto_GRAPHS
	case len(ap.SparseTensors) > 0:
		return onnxpb.AttributeProto_SPARSE_TENSORS
	case len(ap.TypeProtos) > 0:
		return onnxpb.AttributeProto_TYPE_PROTOS
	}
	return onnxpb.AttributeProto_UNDEFINED
}
