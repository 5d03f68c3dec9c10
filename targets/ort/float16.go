package ort

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// ONNX Runtime's CPU execution provider has float16 kernels for few ops
// (on x86-64, none that computes: no Conv, Gemm, MatMul, pooling,
// normalisation, activation or elementwise arithmetic). When it loads a
// graph with float16 values, InsertCastTransformer (always on, at every
// optimization level) runs the ops it has no float16 kernel for in
// float32, with Casts it inserts around them, and RemoveDuplicateCast-
// Transformer then removes the Casts that cancel (insert_cast_transformer.cc
// in ORT's source; every rule below was checked on ORT 1.30 with profiled
// one- to seven-node models):
//
//  1. A node has a kernel ("is assigned") unless it reads a float16 value
//     and its op is not in float16Kernels. An assigned node with a float16
//     kernel is then forced to float32 when it is isolated: it reads another
//     node's output, writes no graph output, and every float16 value it
//     reads from another node and every reader of its float16 outputs is a
//     node without a kernel (for an op with a variadic input, as Concat,
//     only its first input counts; for a variadic output, as Split, only
//     its first output). Nodes are visited in index order and a forced node
//     counts as one without a kernel for the nodes after it. Clip between
//     two convolutions, Concat, Slice, Flatten and Reshape between float32
//     ops run in float32 this way.
//  2. In ORT's order (Order), each node without a kernel reads every
//     float16 input through a Cast to float32 named
//     "InsertedPrecisionFreeCast_<input>" (one per value, shared by all its
//     readers; for a weight this is a float32 copy computed at run time,
//     in the arena) and writes each float16 output through a Cast to
//     float16 named after the output. The Casts are new nodes, indexed
//     after all others in creation order, so ORT's depth-first order runs a
//     node's weight Casts before the rest of its inputs' subgraph: for a
//     chain, every weight's float32 copy is made before the first node
//     runs.
//  3. In index order, a Cast whose readers include Casts back to its input
//     type loses those readers (theirs read its input instead), and is
//     removed itself when every reader was such a Cast or another Cast and
//     it writes no graph output (a kept reader Cast then reads its input).
//     A Cast that loses precision (more bits to fewer) keeps readers that
//     would undo it, unless the Cast is one ORT inserted. So the float16
//     converter's Cast of a float32 graph input vanishes with the Cast ORT
//     adds after it, and its Cast of the last node's float16 output to the
//     float32 graph output becomes a float32 copy; a float32 island around
//     a blocked op (Resize) vanishes into the float32 graph around it.
//
// A float16 graph then runs with float32 activations wherever its ops have
// no float16 kernel, plus the float32 copies of the weights those ops read
// and the Casts that remain. Lower builds that graph.
//
// Measured (T = f32[1,16,64,64] = 256 KiB; bytes in use after each node's
// outputs, as float16_test.go replays them): three float16 3×3 Conv+Relu
// as the converter writes them run as six weight Casts (9216 + 256 bytes
// each, all before the first Conv, 28416 in all), then a float32
// Conv+Relu chain (peak 608768 = 2T + the Conv workspace 65536 + the
// copies still held) and a float32 copy for the output (524288 = 2T at the
// end); the same with Clip between the Convs runs the Clips in float32
// (peak 609280, one shared Cast of min and of max); a Conv read by a Slice
// that writes the output keeps the Slice in float16 behind a Cast of T/2
// (393216 at that Cast); a Concat of a Conv and its Relu read by a Conv
// runs in float32 (1067264 at the Concat); a Resize island between two
// Convs vanishes (Conv, Resize, Conv, output Cast: 84480, 337152, 533760,
// 608768). At Default sizes the float32 weight copies dominate: the
// float16 VGG16 at 224×224 peaks at 705807104 bytes, most of it the float32
// copies of its 553 MB of weights, all made before its first Conv
// (internal/memcheck -memcheck.default).

// float16Kernels are the ops ONNX Runtime 1.30's CPU execution provider
// runs on float16 data (measured on x86-64: a one-node model reading a
// float16 graph input runs the op without inserted Casts).
var float16Kernels = map[string]bool{
	"Cast": true, "Clip": true, "Compress": true, "Concat": true, "Expand": true, "Flatten": true,
	"Gather": true, "GatherElements": true, "Identity": true, "IsNaN": true, "LayerNormalization": true,
	"Max": true, "Min": true, "Mod": true, "Reshape": true, "ReverseSequence": true, "Round": true,
	"ScatterND": true, "Shape": true, "Shrink": true, "Sign": true, "Slice": true, "Split": true,
	"Squeeze": true, "Transpose": true, "Unsqueeze": true,
}

// float16Functions are ops for which ONNX Runtime, having no float16
// kernel, runs the ONNX function body instead (new nodes, each then cast
// as above). Lower does not model them.
var float16Functions = map[string]bool{
	"Softmax": true, "LogSoftmax": true, "LeakyRelu": true, "PRelu": true, "HardSwish": true,
	"GreaterOrEqual": true, "LessOrEqual": true, "Celu": true, "Gelu": true, "Mish": true,
	"MeanVarianceNormalization": true,
}

// Lowered is the graph ONNX Runtime runs in place of a graph with float16
// values (Lower).
type Lowered struct {
	// Graph is the runtime graph: the source graph's Constant nodes, then
	// the nodes ORT runs in ORT's order at level "disabled", each reading
	// and writing values of the types ORT gives them.
	Graph *ir.Graph
	// Index[i] is ORT's node index of Graph.Nodes[i] (the profile's
	// node_index), -1 for a Constant node, which ORT makes an initializer.
	Index []int
	// Orig[i] is the source graph's node that Graph.Nodes[i] runs, nil for
	// a Cast ORT inserted.
	Orig []*ir.Node
	// Removed lists the source graph's nodes ORT removed (Casts that
	// cancel), in index order.
	Removed []*ir.Node
}

// lnode and lval are the lowering's working graph.
type lnode struct {
	op, domain, name string
	ins, outs        []*lval
	orig             *ir.Node
	index            int
	assigned         bool
	removed          bool
	subgraphs        bool
	to               int64 // an inserted Cast's "to"
}

type lval struct {
	name string
	typ  ir.TensorType
	def  *lnode // nil for graph inputs, parameters and Constant outputs
	orig *ir.Value
	out  bool // a graph output
}

// NeedsLowering reports whether ONNX Runtime's CPU execution provider runs
// g differently from its nodes as written: some node without a float16
// kernel reads a float16 value.
func NeedsLowering(g *ir.Graph) bool {
	for _, n := range g.Nodes {
		if isConstant(n) || len(n.Subgraphs()) > 0 || float16Kernels[n.Op] {
			continue
		}
		for _, v := range n.Inputs {
			if v != nil && v.Type.DType == ir.Float16 {
				return true
			}
		}
	}
	return false
}

// Lower returns the graph ONNX Runtime 1.30's CPU execution provider runs
// for g, written with its nodes in g's order (no helper nodes), at
// optimization level "disabled": the transformation described above. g
// needs every value's element type. It fails for a float16 op that ORT
// replaces by its function body (float16Functions) and for a graph with
// subgraphs.
func Lower(g *ir.Graph) (*Lowered, error) { return lower(g, g.Nodes) }

// lower is Lower for g written with its nodes in the order written (a
// topological order of all of g's nodes).
func lower(g *ir.Graph, written []*ir.Node) (*Lowered, error) {
	lw := &lowering{names: map[string]bool{}}
	vals := make(map[*ir.Value]*lval)
	valOf := func(v *ir.Value) *lval {
		if v == nil {
			return nil
		}
		if lv, ok := vals[v]; ok {
			return lv
		}
		lv := &lval{name: v.Name, typ: v.Type, orig: v}
		vals[v] = lv
		return lv
	}
	for _, v := range g.Outputs {
		valOf(v).out = true
	}
	var consts []*ir.Node
	for _, n := range written {
		lw.names[n.Name] = true
		if isConstant(n) {
			consts = append(consts, n)
			for _, o := range n.Outputs {
				valOf(o)
			}
			continue
		}
		ln := &lnode{op: n.Op, domain: n.Domain, name: n.Name, orig: n, index: len(lw.nodes), subgraphs: len(n.Subgraphs()) > 0}
		if ln.name == "" {
			ln.name = n.Op + "_" + strconv.Itoa(ln.index) // ORT's name for an unnamed node
		}
		for _, v := range n.Inputs {
			ln.ins = append(ln.ins, valOf(v))
		}
		for _, o := range n.Outputs {
			lv := valOf(o)
			if lv != nil {
				lv.def = ln
			}
			ln.outs = append(ln.outs, lv)
		}
		if ln.subgraphs {
			return nil, fmt.Errorf("ort: node %q has subgraphs; lowering a float16 graph with subgraphs is not modelled", n.String())
		}
		ln.assigned = !hasFloat16(ln.ins) || float16Kernels[n.Op]
		if !ln.assigned && float16Functions[n.Op] && (n.Domain == "" || n.Domain == "ai.onnx") {
			return nil, fmt.Errorf("ort: node %q: ONNX Runtime runs float16 %s as its function body; that is not modelled", n.String(), n.Op)
		}
		lw.nodes = append(lw.nodes, ln)
	}
	lw.readers()
	lw.forceIsolated()
	lw.insertCasts()
	lw.removeDuplicateCasts()
	return lw.build(g, consts, vals)
}

type lowering struct {
	nodes []*lnode
	// uses[v] lists the (node, slot) pairs reading v.
	uses  map[*lval][]luse
	names map[string]bool // node names taken
	token int             // Graph::GenerateNodeName's counter
}

type luse struct {
	n    *lnode
	slot int
}

func hasFloat16(vs []*lval) bool {
	for _, v := range vs {
		if v != nil && v.typ.DType == ir.Float16 {
			return true
		}
	}
	return false
}

// readers rebuilds the use lists from the nodes that are not removed.
func (lw *lowering) readers() {
	lw.uses = make(map[*lval][]luse)
	for _, n := range lw.nodes {
		if n.removed {
			continue
		}
		for i, v := range n.ins {
			if v != nil {
				lw.uses[v] = append(lw.uses[v], luse{n, i})
			}
		}
	}
}

// needsCast is NodeNeedsInputCastToFp32: no kernel and a float16 input.
func needsCast(n *lnode) bool { return !n.assigned && hasFloat16(n.ins) }

// forceIsolated unassigns the isolated float16 nodes (rule 1).
func (lw *lowering) forceIsolated() {
	for _, n := range lw.nodes {
		if lw.isolated(n) {
			n.assigned = false
		}
	}
}

func (lw *lowering) isolated(n *lnode) bool {
	if !n.assigned || n.subgraphs {
		return false
	}
	edges := false
	for _, v := range n.ins {
		if v != nil && v.def != nil {
			edges = true
		}
	}
	for _, o := range n.outs {
		if o != nil && o.out {
			return false
		}
	}
	if !edges {
		return false
	}
	info := ir.LookupOp(n.domain, n.op)
	variadicIn := info != nil && info.MaxIn == ir.Variadic
	variadicOut := info != nil && info.MaxOut == ir.Variadic
	var fp16In []int
	for i, v := range n.ins {
		if v == nil {
			continue
		}
		if v.typ.DType == ir.Float16 {
			fp16In = append(fp16In, i)
		}
		if variadicIn {
			break // only the first input of a variadic parameter counts
		}
	}
	if len(fp16In) == 0 {
		return false
	}
	for _, i := range fp16In {
		if d := n.ins[i].def; d != nil && !needsCast(d) {
			return false
		}
	}
	fp16Out := false
	for j, o := range n.outs {
		if variadicOut && j > 0 {
			break
		}
		if o == nil || o.typ.DType != ir.Float16 {
			continue
		}
		fp16Out = true
		for _, u := range lw.uses[o] {
			if !needsCast(u.n) {
				return false
			}
		}
	}
	return fp16Out
}

// nodeName is Graph::GenerateNodeName: base, or base_token_N while the
// name is taken.
func (lw *lowering) nodeName(base string) string {
	name := base
	for lw.names[name] {
		name = base + "_token_" + strconv.Itoa(lw.token)
		lw.token++
	}
	lw.names[name] = true
	return name
}

// castNode adds an inserted Cast reading in and writing out.
func (lw *lowering) castNode(name string, in, out *lval, to int64) *lnode {
	c := &lnode{op: "Cast", name: name, ins: []*lval{in}, outs: []*lval{out}, index: len(lw.nodes), assigned: true, to: to}
	out.def = c
	lw.nodes = append(lw.nodes, c)
	return c
}

// insertCasts runs the nodes without a kernel in float32 (rule 2), in
// ORT's order of the current graph.
func (lw *lowering) insertCasts() {
	updates := make(map[*lval]*lval)
	for _, i := range lw.order() {
		n := lw.nodes[i]
		if n.assigned || n.subgraphs {
			continue
		}
		repl := make(map[*lval]*lval)
		casted := false
		for _, v := range n.ins {
			if v == nil || v.typ.DType != ir.Float16 {
				continue
			}
			if _, ok := updates[v]; !ok {
				name := lw.nodeName("InsertedPrecisionFreeCast_" + v.name)
				f := &lval{name: name, typ: withDType(v.typ, ir.Float32)}
				lw.castNode(name, v, f, onnxFloat)
				updates[v] = f
			}
			repl[v] = updates[v]
			casted = true
		}
		if !casted {
			continue
		}
		n.assigned = true
		for j, o := range n.outs {
			if o == nil || o.typ.DType != ir.Float16 {
				continue
			}
			name := lw.nodeName("InsertedPrecisionFreeCast_" + o.name)
			f := &lval{name: name, typ: withDType(o.typ, ir.Float32), def: n}
			n.outs[j] = f
			lw.castNode(name, f, o, onnxFloat16)
		}
		for k, v := range n.ins {
			if r, ok := repl[v]; ok {
				n.ins[k] = r
			}
		}
	}
	lw.readers()
}

// Cast targets used by the lowering (ONNX TensorProto.DataType numbers).
const (
	onnxFloat   = 1
	onnxFloat16 = 10
)

func withDType(t ir.TensorType, dt ir.DType) ir.TensorType {
	t = t.Clone()
	t.DType = dt
	return t
}

// order is ORT's order (dfsOrder) of the nodes not removed, as indices
// into lw.nodes.
func (lw *lowering) order() []int {
	in := make([][]int, len(lw.nodes))
	for i, n := range lw.nodes {
		if n.removed {
			continue
		}
		for _, v := range n.ins {
			if v != nil && v.def != nil {
				in[i] = append(in[i], v.def.index)
			}
		}
	}
	var out []int
	for _, i := range dfsOrder(in) {
		if !lw.nodes[i].removed {
			out = append(out, i)
		}
	}
	return out
}

// castType is the source and target element types of a Cast node.
func castTypes(n *lnode) (src, dst ir.DType) { return n.ins[0].typ.DType, n.outs[0].typ.DType }

// unsafeCast is RemoveDuplicateCastTransformer's test for a Cast that loses
// information and must not be undone.
func unsafeCast(src, dst ir.DType, name string) bool {
	group := func(d ir.DType) int {
		switch {
		case d == ir.Bool:
			return 0
		case d == ir.Int8 || d == ir.Int16 || d == ir.Int32 || d == ir.Int64:
			return 1
		case d == ir.Uint8 || d == ir.Uint16 || d == ir.Uint32 || d == ir.Uint64:
			return 2
		case d == ir.Float16 || d == ir.BFloat16 || d == ir.Float32 || d == ir.Float64:
			return 3
		}
		return -1
	}
	bits := func(d ir.DType) int {
		if d == ir.Bool {
			return 1
		}
		return d.Bits()
	}
	sg, dg := group(src), group(dst)
	switch {
	case sg < 0 || dg < 0:
		return true
	case sg != 0 && sg != 2 && dg == 2:
		return true
	case sg == 3 && dg != 3:
		return true
	case sg == 2 && dg == 1:
		return bits(dst) <= bits(src)
	case (sg == 1 || sg == 2) && dg == 3:
		return bits(dst) <= bits(src)
	case (src == ir.Float16 && dst == ir.BFloat16) || (src == ir.BFloat16 && dst == ir.Float16):
		return true
	}
	return bits(src) > bits(dst) && !hasPrefix(name, "InsertedPrecisionFreeCast_")
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// removeDuplicateCasts is rule 3.
func (lw *lowering) removeDuplicateCasts() {
	for _, c := range lw.nodes {
		if c.removed || c.op != "Cast" || (c.domain != "" && c.domain != "ai.onnx") || len(c.ins) == 0 || c.ins[0] == nil || c.outs[0] == nil {
			continue
		}
		src, dst := castTypes(c)
		loss := unsafeCast(src, dst, c.name)
		children := lw.uses[c.outs[0]]
		var remove, keep []*lnode
		inconsistent := false
		for _, u := range children {
			k := u.n
			if k.op != "Cast" {
				continue
			}
			src1, dst1 := castTypes(k)
			if loss && unsafeCast(dst1, src1, k.name) {
				inconsistent = true
				break
			}
			if !k.outs[0].out && src == dst1 && src1 == dst {
				remove = append(remove, k)
			} else {
				keep = append(keep, k)
			}
		}
		if inconsistent {
			continue
		}
		for _, k := range remove {
			if k.removed {
				continue
			}
			lw.replaceUses(k.outs[0], c.ins[0])
			k.removed = true
			lw.readers()
		}
		if len(children) > 0 && len(remove)+len(keep) == len(children) && !c.outs[0].out {
			lw.replaceUses(c.outs[0], c.ins[0])
			c.removed = true
			lw.readers()
		}
	}
}

// replaceUses makes every reader of v read w.
func (lw *lowering) replaceUses(v, w *lval) {
	for _, u := range lw.uses[v] {
		u.n.ins[u.slot] = w
	}
}

// build writes the lowered graph as an ir.Graph.
func (lw *lowering) build(g *ir.Graph, consts []*ir.Node, vals map[*ir.Value]*lval) (*Lowered, error) {
	r := ir.NewGraph(g.Name)
	r.Doc = g.Doc
	r.Opsets = slices.Clone(g.Opsets)
	res := &Lowered{Graph: r}
	nv := make(map[*lval]*ir.Value)
	for _, v := range g.Inputs {
		if v.IsConst() {
			continue
		}
		nv[vals[v]] = r.AddInput(v.Name, v.Type)
	}
	for _, v := range g.Params {
		if x, ok := nv[vals[v]]; ok {
			r.Params = append(r.Params, x)
			x.Data = v.Data
			continue
		}
		nv[vals[v]] = r.AddParam(v.Name, v.Type, v.Data)
	}
	copyNode := func(op, domain, name string, attrs []ir.Attr, ins, outs []*lval) (*ir.Node, error) {
		in := make([]*ir.Value, len(ins))
		for i, v := range ins {
			if v == nil {
				continue
			}
			x, ok := nv[v]
			if !ok {
				return nil, fmt.Errorf("ort: lowering: %q reads %q before it is written (internal error)", name, v.name)
			}
			in[i] = x
		}
		names := make([]string, len(outs))
		for j, o := range outs {
			if o != nil {
				names[j] = o.name
			}
		}
		n := r.NewNode(op, domain, in, names)
		n.Name = name
		n.Attrs = slices.Clone(attrs)
		for j, o := range outs {
			if o != nil {
				n.Outputs[j].Type = o.typ.Clone()
				nv[o] = n.Outputs[j]
			}
		}
		return n, nil
	}
	for _, c := range consts {
		var outs []*lval
		for _, o := range c.Outputs {
			outs = append(outs, vals[o])
		}
		if _, err := copyNode(c.Op, c.Domain, c.Name, c.Attrs, nil, outs); err != nil {
			return nil, err
		}
		res.Index = append(res.Index, -1)
		res.Orig = append(res.Orig, c)
	}
	for _, i := range lw.order() {
		n := lw.nodes[i]
		var attrs []ir.Attr
		name := n.name
		if n.orig != nil {
			attrs, name = n.orig.Attrs, n.orig.Name
		} else {
			attrs = []ir.Attr{ir.IntAttr("to", n.to)}
		}
		if _, err := copyNode(n.op, n.domain, name, attrs, n.ins, n.outs); err != nil {
			return nil, err
		}
		res.Index = append(res.Index, n.index)
		res.Orig = append(res.Orig, n.orig)
	}
	for _, n := range lw.nodes {
		if n.removed && n.orig != nil {
			res.Removed = append(res.Removed, n.orig)
		}
	}
	for _, v := range g.Outputs {
		x, ok := nv[vals[v]]
		if !ok {
			return nil, fmt.Errorf("ort: lowering: graph output %q is not written (internal error)", v.Name)
		}
		r.AddOutput(x)
	}
	if err := ir.Verify(r); err != nil {
		return nil, fmt.Errorf("ort: lowering: %w (internal error)", err)
	}
	return res, nil
}
