// Package graphdef imports TensorFlow graphs into the IR: binary GraphDef
// protobufs (frozen graphs, .pb) and TensorFlow.js graph models (model.json,
// which holds a GraphDef in the proto3 JSON mapping and a weights manifest,
// and the binary weight shards the manifest names).
//
// The IR it builds:
//   - Every op node becomes an ir.Node in the ir.TFDomain domain with the
//     NodeDef's op and name, its attributes as ir.Attrs (attr.go says how
//     each AttrValue case maps), and one output value per output of the op:
//     as many as the op table says, or an attribute sets (Unpack's num,
//     Split's num_split, IdentityN's T, …); for an op the table does not
//     know, as many as its _output_shapes attribute lists, else the highest
//     output index any consumer reads plus one (at least one). Output k of
//     node N is the value named N (k = 0) or "N:k".
//   - A NodeDef input "name" or "name:k" is a data input; "^name" is a
//     control input, which becomes an ordering edge (ir.Node.Control).
//   - Placeholder nodes become the graph inputs, in file order, typed by
//     their dtype and shape attributes.
//   - Const nodes become parameters (ir.Graph.Params, Value.Data), as ONNX
//     initializers do, not nodes: a weight is loaded once and never freed
//     (TensorFlow.js keeps its weights apart from the activations it
//     allocates and frees), it is never recomputed, and passes read constant
//     operands (shapes, axes, paddings) from Value.Data. Control inputs on
//     a Const or a Placeholder, meaningless for a value that exists before
//     anything runs, are kept in its Ext for the exporter. In a
//     TensorFlow.js model a Const's value is its manifest weight as
//     TensorFlow.js decodes it: the manifest's dtype and shape, quantized
//     values dequantized to float32 (or int32) exactly as tfjs-core does;
//     the NodeDef's value attribute then only says dtype and shape.
//   - The graph outputs are the outputs of the model's signature when it
//     has one (TensorFlow.js: userDefinedMetadata.signature, else
//     signature), in the order TensorFlow.js lists them; otherwise output 0
//     of every NodeDef that no other NodeDef reads, by data or control
//     input, in file order (what TensorFlow.js runs by default).
//   - Value types are what the file says: Placeholders' dtype and shape,
//     Consts' tensors, and _output_shapes where a node has it (shapes only:
//     the element type stays unknown). Everything else stays unknown (the
//     zero ir.TensorType) for shape inference to fill in.
//
// Everything the IR does not model is kept in the Ext fields (ext.go) so
// that exporters/graphdef can write the model back. Problems with the input
// are returned as an ir.ErrorList of positioned errors; the importer never
// panics on bad input.
package graphdef

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/internal/pbcheck"
	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
)

// Options configure an import. The zero value reads a binary GraphDef; a
// TensorFlow.js model from bytes needs BaseDir or Shards.
type Options struct {
	// File names the model in error positions. ImportFile sets it to the
	// path when it is empty.
	File string
	// Format selects the reader; FormatAuto decides from the bytes.
	Format Format
	// BaseDir is the directory a model.json's shard paths are relative to.
	// ImportFile sets it to the model's directory when it is empty. Shards
	// must lie inside it.
	BaseDir string
	// Shards, when not nil, holds the shard files by the path the manifest
	// names, instead of reading them from BaseDir.
	Shards map[string][]byte
	// MaxErrors is how many errors the importer collects before it gives
	// up; 0 means 100. (The returned ir.ErrorList prints the first
	// ir.MaxErrors of them.)
	MaxErrors int
	// MaxTensorBytes bounds the decoded size of one constant (a Const's
	// value, a weight, an attribute tensor); 0 means 2 GiB. A small file
	// may claim a huge shape: nothing larger is allocated.
	MaxTensorBytes int64
	// MaxShardBytes bounds the total size of the weight shards; 0 means
	// 8 GiB.
	MaxShardBytes int64
}

// maxOutputs bounds the number of outputs of one node (an attribute or an
// input reference claiming more is an error).
const maxOutputs = 1 << 16

// ImportFile reads and imports the model at path: a binary GraphDef, or a
// TensorFlow.js model.json whose shards are read from the same directory.
func ImportFile(path string, opts Options) (*ir.Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("graphdef import: %w", err)
	}
	if opts.File == "" {
		opts.File = path
	}
	if opts.BaseDir == "" {
		opts.BaseDir = filepath.Dir(path)
	}
	return Import(data, opts)
}

// Import decodes a binary GraphDef or a TensorFlow.js model.json. Problems
// with the model are an ir.ErrorList; an error wrapped as "graphdef import:
// internal" means the importer built an IR graph that fails ir.Verify, a bug
// in the importer.
func Import(data []byte, opts Options) (*ir.Graph, error) {
	im := &importer{opts: opts, max: opts.MaxErrors}
	if im.max <= 0 {
		im.max = 100
	}
	format := opts.Format
	if format == FormatAuto {
		format = FormatGraphDef
		if t := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n"); len(t) > 0 && t[0] == '{' {
			format = FormatTFJS
		}
	}
	var g *ir.Graph
	switch format {
	case FormatGraphDef:
		gd := &tfpb.GraphDef{}
		if err := proto.Unmarshal(data, gd); err != nil {
			return nil, ir.ErrorList{ir.Errorf(im.filePos(), "not a valid TensorFlow GraphDef (binary protobuf): %v", err)}.Err()
		}
		if err := pbcheck.Check(gd.ProtoReflect()); err != nil {
			return nil, ir.ErrorList{ir.Errorf(im.filePos(), "not a valid TensorFlow GraphDef: %v", err)}.Err()
		}
		info := &ModelInfo{Format: FormatGraphDef, Unknown: unknownOf(gd)}
		g = im.build(gd, info, nil)
	case FormatTFJS:
		g = im.tfjs(data)
	default:
		return nil, ir.ErrorList{ir.Errorf(im.filePos(), "unknown format %d", format)}.Err()
	}
	if err := im.errs.Err(); err != nil {
		return nil, err
	}
	if err := ir.Verify(g); err != nil {
		return nil, fmt.Errorf("graphdef import: internal: %w", err)
	}
	return g, nil
}

type importer struct {
	opts Options
	errs ir.ErrorList
	max  int
	stop bool // too many errors: stop looking for more
}

func (im *importer) errorf(pos ir.Pos, format string, args ...any) {
	if im.stop {
		return
	}
	im.errs.Add(pos, format, args...)
	if im.errs.Len() >= im.max {
		im.stop = true
	}
}

func (im *importer) filePos() ir.Pos { return ir.Pos{File: im.opts.File} }

func (im *importer) nodePos(nd *tfpb.NodeDef) ir.Pos {
	return ir.Pos{File: im.opts.File, Node: nd.GetName(), Op: nd.GetOp()}
}

func (im *importer) maxTensorBytes() int64 {
	if im.opts.MaxTensorBytes > 0 {
		return im.opts.MaxTensorBytes
	}
	return 2 << 30
}

func (im *importer) maxShardBytes() int64 {
	if im.opts.MaxShardBytes > 0 {
		return im.opts.MaxShardBytes
	}
	return 8 << 30
}

// graphName names the graph after the model file: its directory for a
// model.json (selfie/model.json is "selfie"), its base name otherwise.
func (im *importer) graphName(format Format) string {
	f := im.opts.File
	if f == "" {
		return "graph"
	}
	base := filepath.Base(f)
	if format == FormatTFJS && base == "model.json" {
		if d := filepath.Base(filepath.Dir(f)); d != "." && d != string(filepath.Separator) {
			return d
		}
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// ref is one parsed NodeDef input.
type ref struct {
	node    string
	index   int
	control bool
}

// parseRef parses "name", "name:k" or "^name".
func parseRef(s string) (ref, error) {
	var r ref
	if rest, ok := strings.CutPrefix(s, "^"); ok {
		if rest == "" {
			return r, fmt.Errorf("control input %q names no node", s)
		}
		if strings.Contains(rest, ":") {
			return r, fmt.Errorf("control input %q names an output; a control input is \"^node\"", s)
		}
		return ref{node: rest, control: true}, nil
	}
	name, idx, found := strings.Cut(s, ":")
	if name == "" {
		return r, fmt.Errorf("input %q names no node", s)
	}
	r.node = name
	if found {
		k, err := strconv.Atoi(idx)
		if err != nil || k < 0 || strconv.Itoa(k) != idx {
			return r, fmt.Errorf("input %q: output index %q is not a non-negative integer", s, idx)
		}
		if k >= maxOutputs {
			return r, fmt.Errorf("input %q: output index %d is beyond the limit of %d outputs", s, k, maxOutputs)
		}
		r.index = k
	}
	return r, nil
}

// entity is what one NodeDef became.
type entity struct {
	nd    *tfpb.NodeDef
	index int
	node  *ir.Node  // an op node
	value *ir.Value // a Placeholder's graph input or a Const's parameter
	refs  []ref     // parsed inputs (nil when they did not parse)
	used  bool      // some NodeDef reads it (data or control)
}

func (e *entity) kind() string {
	switch {
	case e.nd.GetOp() == "Placeholder":
		return "a Placeholder (graph input)"
	case e.nd.GetOp() == "Const":
		return "a Const (parameter)"
	}
	return "node"
}

// build turns gd into an IR graph. weights holds the decoded tensors of a
// TensorFlow.js manifest by Const name (nil for a binary GraphDef).
func (im *importer) build(gd *tfpb.GraphDef, info *ModelInfo, weights map[string]*Weight) *ir.Graph {
	g := ir.NewGraph(im.graphName(info.Format))
	info.Versions, info.Library, info.Version = gd.GetVersions(), gd.GetLibrary(), gd.GetVersion()
	info.NumNodeDefs = len(gd.GetNode())
	g.Ext = info

	// Index the NodeDefs and parse their inputs.
	ents := make([]*entity, len(gd.GetNode()))
	byName := make(map[string]*entity, len(ents))
	maxRead := map[string]int{} // highest output index any data input reads
	for i, nd := range gd.GetNode() {
		e := &entity{nd: nd, index: i}
		ents[i] = e
		pos := im.nodePos(nd)
		name := nd.GetName()
		switch {
		case name == "":
			im.errorf(ir.Pos{File: im.opts.File, Op: nd.GetOp()}, "NodeDef %d has no name", i)
			continue
		case strings.ContainsAny(name, ":^"):
			im.errorf(pos, "node name contains ':' or '^', which input references reserve")
			continue
		case nd.GetOp() == "":
			im.errorf(pos, "has no op")
		}
		if prev, dup := byName[name]; dup {
			im.errorf(pos, "two NodeDefs are named %q (%s and %s, positions %d and %d); node names must be unique", name, prev.nd.GetOp(), nd.GetOp(), prev.index, i)
			continue
		}
		byName[name] = e
		refs := make([]ref, 0, len(nd.GetInput()))
		ok, sawControl := true, false
		for j, s := range nd.GetInput() {
			r, err := parseRef(s)
			if err != nil {
				im.errorf(pos, "input %d: %v", j, err)
				ok = false
				continue
			}
			if !r.control && sawControl {
				im.errorf(pos, "input %d %q follows a control input; data inputs come first, control inputs (\"^node\") last", j, s)
				ok = false
			}
			sawControl = sawControl || r.control
			if !r.control {
				if k, seen := maxRead[r.node]; !seen || r.index > k {
					maxRead[r.node] = r.index
				}
			}
			refs = append(refs, r)
		}
		if ok {
			e.refs = refs
		}
	}
	if im.stop {
		return g
	}

	// Create the graph inputs, parameters and nodes in file order.
	for _, e := range ents {
		nd := e.nd
		if nd.GetName() == "" || byName[nd.GetName()] != e {
			continue
		}
		pos := im.nodePos(nd)
		dataIn := 0
		for _, r := range e.refs {
			if !r.control {
				dataIn++
			}
		}
		switch nd.GetOp() {
		case "Placeholder":
			if dataIn > 0 {
				im.errorf(pos, "a Placeholder has %d data inputs; it takes none", dataIn)
			}
			e.value = g.AddInput(nd.GetName(), im.placeholderType(nd, pos))
			e.value.Ext = &NodeInfo{Def: nd, Index: e.index}
			continue
		case "Const":
			if dataIn > 0 {
				im.errorf(pos, "a Const has %d data inputs; it takes none", dataIn)
			}
			ci := &ConstInfo{NodeInfo: NodeInfo{Def: nd, Index: e.index}}
			t := im.constValue(nd, pos, weights, ci)
			if t == nil {
				continue
			}
			e.value = g.AddParam(nd.GetName(), t.Type(), t)
			e.value.Ext = ci
			ci.DType, ci.Sum = t.DType, tensorSum(t)
			if ci.Weight != nil {
				ci.Weight.Param = e.value
			}
			continue
		}
		info := ir.LookupOp(ir.TFDomain, nd.GetOp())
		if info != nil && (dataIn < info.MinIn || info.MaxIn != ir.Variadic && dataIn > info.MaxIn) {
			im.errorf(pos, "has %d data inputs; %s takes %s", dataIn, nd.GetOp(), info.InputArity())
			continue
		}
		highest, read := maxRead[nd.GetName()]
		if !read {
			highest = -1
		}
		nout, err := outputCount(nd, info, highest)
		if err != nil {
			im.errorf(pos, "%v", err)
			continue
		}
		names := make([]string, nout)
		for k := range names {
			names[k] = nd.GetName()
			if k > 0 {
				names[k] += ":" + strconv.Itoa(k)
			}
		}
		n := g.NewNode(nd.GetOp(), ir.TFDomain, make([]*ir.Value, dataIn), names)
		n.Name = nd.GetName()
		n.Ext = &NodeInfo{Def: nd, Index: e.index}
		n.Attrs = im.attrs(nd, pos)
		im.outputShapes(n, pos)
		e.node = n
		if im.stop {
			return g
		}
	}
	if im.stop {
		return g
	}

	// Wire data and control inputs.
	for _, e := range ents {
		if e.node == nil && e.value == nil {
			continue
		}
		pos := im.nodePos(e.nd)
		slot := 0
		for _, r := range e.refs {
			src := byName[r.node]
			if src == nil {
				what := "input"
				if r.control {
					what = "control input"
				}
				im.errorf(pos, "%s %q names no node of the graph (dangling reference)", what, refString(r))
				continue
			}
			src.used = true
			if src.node == nil && src.value == nil {
				continue // src failed to import; its error is reported
			}
			if r.control {
				im.control(e, src, pos)
				continue
			}
			v := src.value
			if src.node != nil {
				if r.index < len(src.node.Outputs) {
					v = src.node.Outputs[r.index]
				} else {
					v = nil
				}
			} else if r.index > 0 {
				v = nil
			}
			if v == nil {
				im.errorf(pos, "input %d %q reads output %d of %s %q, which has %d outputs", slot, refString(r), r.index, src.kind(), r.node, numOutputs(src))
			} else if e.node != nil {
				e.node.SetInput(slot, v)
			}
			slot++
		}
	}
	if im.stop {
		return g
	}
	im.outputs(g, ents, byName, info)
	if im.errs.Len() == 0 {
		if err := g.Sort(); err != nil {
			im.errorf(im.filePos(), "%v (data or control inputs)", err)
		}
	}
	return g
}

func refString(r ref) string {
	switch {
	case r.control:
		return "^" + r.node
	case r.index > 0:
		return r.node + ":" + strconv.Itoa(r.index)
	}
	return r.node
}

func numOutputs(e *entity) int {
	if e.node != nil {
		return len(e.node.Outputs)
	}
	return 1
}

// control records the control input src of e.
func (im *importer) control(e, src *entity, pos ir.Pos) {
	switch {
	case src == e:
		im.errorf(pos, "lists itself as a control input (a cycle)")
	case e.node != nil && src.node != nil:
		e.node.AddControl(src.node)
	case e.node != nil:
		ni := e.node.Ext.(*NodeInfo)
		if !slices.Contains(ni.ValueControls, src.value) {
			ni.ValueControls = append(ni.ValueControls, src.value)
		}
	default: // a control input on a Placeholder or a Const
		var ni *NodeInfo
		switch x := e.value.Ext.(type) {
		case *ConstInfo:
			ni = &x.NodeInfo
		case *NodeInfo:
			ni = x
		}
		switch {
		case src.node != nil && !slices.Contains(ni.Control, src.node):
			ni.Control = append(ni.Control, src.node)
		case src.node == nil && !slices.Contains(ni.ValueControls, src.value):
			ni.ValueControls = append(ni.ValueControls, src.value)
		}
	}
}

// outputCount is the number of outputs of nd: fixed by the op table, set by
// an attribute for ops with a variable number, or, for ops the table does
// not know, the length of _output_shapes, else one more than the highest
// index a consumer reads (at least one). highest is -1 when no data input
// reads the node.
func outputCount(nd *tfpb.NodeDef, info *ir.OpInfo, highest int) (int, error) {
	attrInt := func(name string) (int64, bool) {
		v, ok := nd.GetAttr()[name].GetValue().(*tfpb.AttrValue_I)
		if !ok {
			return 0, false
		}
		return v.I, true
	}
	listLen := func(name string) (int64, bool) {
		v, ok := nd.GetAttr()[name].GetValue().(*tfpb.AttrValue_List)
		if !ok {
			return 0, false
		}
		return int64(len(v.List.GetType())), true
	}
	var n int64
	var from string
	switch {
	case info != nil && info.MinOut == info.MaxOut:
		n, from = int64(info.MinOut), "the op"
	case info != nil:
		var ok bool
		switch nd.GetOp() {
		case "Unpack":
			n, ok = attrInt("num")
			from = "attribute num"
		case "Split", "SplitV":
			n, ok = attrInt("num_split")
			from = "attribute num_split"
		case "ShapeN":
			n, ok = attrInt("N")
			from = "attribute N"
		case "IdentityN", "While", "StatelessWhile":
			n, ok = listLen("T")
			from = "attribute T"
		case "If", "StatelessIf":
			n, ok = listLen("Tout")
			from = "attribute Tout"
		}
		if !ok {
			return 0, fmt.Errorf("%s has a variable number of outputs and no %s to say how many", nd.GetOp(), strings.TrimPrefix(from, "attribute "))
		}
		if n < int64(info.MinOut) || info.MaxOut != ir.Variadic && n > int64(info.MaxOut) || n > maxOutputs {
			return 0, fmt.Errorf("%s = %d outputs; %s produces %s (at most %d)", from, n, nd.GetOp(), info.OutputArity(), maxOutputs)
		}
	default:
		if v, ok := nd.GetAttr()["_output_shapes"].GetValue().(*tfpb.AttrValue_List); ok && len(v.List.GetShape()) > 0 {
			n, from = int64(len(v.List.GetShape())), "attribute _output_shapes"
		} else {
			n, from = int64(max(highest+1, 1)), ""
		}
	}
	if int64(highest) >= n {
		return 0, fmt.Errorf("a consumer reads output %d, but %s %s gives it %d outputs", highest, nd.GetOp(), from, n)
	}
	return int(n), nil
}

// outputShapes types n's outputs from its _output_shapes attribute, when it
// has one of the right length: shapes only (the attribute says nothing of
// the element type, which stays unknown).
func (im *importer) outputShapes(n *ir.Node, pos ir.Pos) {
	a := n.Attr("_output_shapes")
	if a == nil {
		return
	}
	l := a.Ext.(*AttrInfo).Value.GetList()
	if len(l.GetShape()) == 0 {
		return
	}
	if len(l.GetShape()) != len(n.Outputs) {
		im.errorf(pos, "_output_shapes lists %d shapes for %d outputs", len(l.GetShape()), len(n.Outputs))
		return
	}
	for k, sp := range l.GetShape() {
		t, err := shapeType(ir.Undefined, sp)
		if err != nil {
			im.errorf(pos, "_output_shapes[%d]: %v", k, err)
			return
		}
		n.Outputs[k].Type = t
	}
}

// placeholderType is the type of a Placeholder's graph input: its dtype
// attribute (unknown when absent or a type the IR lacks) and its shape
// attribute (unknown rank when absent).
func (im *importer) placeholderType(nd *tfpb.NodeDef, pos ir.Pos) ir.TensorType {
	t := ir.TensorType{Unranked: true}
	if av, ok := nd.GetAttr()["dtype"]; ok {
		v, isType := av.GetValue().(*tfpb.AttrValue_Type)
		if !isType {
			im.errorf(pos, "attribute dtype is not a type")
		} else if err := checkDType(v.Type); err != nil {
			im.errorf(pos, "attribute dtype: %v", err)
		} else if dt, ok := ir.TFDType(v.Type.String()); ok {
			t.DType = dt
		}
	}
	if av, ok := nd.GetAttr()["shape"]; ok {
		v, isShape := av.GetValue().(*tfpb.AttrValue_Shape)
		if !isShape {
			im.errorf(pos, "attribute shape is not a shape")
			return t
		}
		st, err := shapeType(t.DType, v.Shape)
		if err != nil {
			im.errorf(pos, "attribute shape: %v", err)
			return t
		}
		t = st
	}
	return t
}

// constValue returns the tensor of a Const: its manifest weight (a
// TensorFlow.js model), else its value attribute. It records an error and
// returns nil when there is none or it does not decode.
func (im *importer) constValue(nd *tfpb.NodeDef, pos ir.Pos, weights map[string]*Weight, ci *ConstInfo) *ir.Tensor {
	if av, ok := nd.GetAttr()["dtype"]; ok {
		if v, isType := av.GetValue().(*tfpb.AttrValue_Type); !isType {
			im.errorf(pos, "attribute dtype is not a type")
		} else if err := checkDType(v.Type); err != nil {
			im.errorf(pos, "attribute dtype: %v", err)
		}
	}
	av, hasValue := nd.GetAttr()["value"]
	var tp *tfpb.TensorProto
	if hasValue {
		v, ok := av.GetValue().(*tfpb.AttrValue_Tensor)
		if !ok {
			im.errorf(pos, "attribute value is not a tensor")
			return nil
		}
		tp = v.Tensor
	}
	if w, ok := weights[nd.GetName()]; ok {
		ci.Weight = w
		t, err := im.decodeWeight(w)
		if err != nil {
			im.errorf(pos, "weight %q: %v", w.Name, err)
			return nil
		}
		return t
	}
	if tp == nil {
		im.errorf(pos, "a Const has no value attribute")
		return nil
	}
	if weights != nil && !hasInlineData(tp) {
		if _, n, err := constShape(tp.GetTensorShape()); err == nil && n > 0 {
			im.errorf(pos, "a Const has no entry in the weights manifest and no value of its own; add its weight to weightsManifest")
			return nil
		}
	}
	t, err := decodeTensor(nd.GetName(), tp, im.maxTensorBytes())
	if err != nil {
		im.errorf(pos, "value: %v", err)
		return nil
	}
	return t
}

func hasInlineData(tp *tfpb.TensorProto) bool {
	return len(tp.GetTensorContent()) > 0 || len(typedCounts(tp)) > 0
}

// outputs sets the graph outputs: the signature's, else output 0 of every
// NodeDef nobody reads.
func (im *importer) outputs(g *ir.Graph, ents []*entity, byName map[string]*entity, info *ModelInfo) {
	var names []string
	if info.TFJS != nil && info.TFJS.Signature != nil {
		var err error
		names, err = signatureOutputs(info.TFJS.Signature)
		if err != nil {
			im.errorf(im.filePos(), "signature: %v", err)
			return
		}
	}
	if len(names) == 0 {
		for _, e := range ents {
			if e.used {
				continue
			}
			switch {
			case e.value != nil:
				g.AddOutput(e.value)
			case e.node != nil && len(e.node.Outputs) > 0:
				g.AddOutput(e.node.Outputs[0])
			}
		}
		return
	}
	for _, name := range names {
		r, err := parseRef(name)
		if err != nil || r.control {
			im.errorf(im.filePos(), "signature output %q is not a tensor name (\"node\" or \"node:k\")", name)
			continue
		}
		src := byName[r.node]
		if src == nil {
			im.errorf(im.filePos(), "signature output %q names no node of the graph", name)
			continue
		}
		var v *ir.Value
		switch {
		case src.node != nil && r.index < len(src.node.Outputs):
			v = src.node.Outputs[r.index]
		case src.value != nil && r.index == 0:
			v = src.value
		case src.node == nil && src.value == nil:
			continue // its error is reported
		}
		if v == nil {
			im.errorf(im.filePos(), "signature output %q reads output %d of %q, which has %d outputs", name, r.index, r.node, numOutputs(src))
			continue
		}
		g.AddOutput(v)
	}
}

// errNoShards is returned when a model.json needs shards and neither
// Options.BaseDir nor Options.Shards says where they are.
var errNoShards = errors.New("the model has weight shards but no directory to read them from; use ImportFile, or set Options.BaseDir or Options.Shards")
