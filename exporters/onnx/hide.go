package onnx

import (
	"slices"
	"sync"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
)

// Hiding the activations' shapes from ONNX Runtime's planner
// (Options.HideShapes).
//
// ONNX Runtime's allocation planner (allocation_planner.cc) lets an output
// take a freed buffer, or write over its dying input in place, only when it
// can compare the two values' static shapes: both must be fully known,
// from value_info or from its shape inference. A freed buffer that a later
// value of the same shape takes stays allocated in between, so in a
// training graph a forward activation dropped for recomputation keeps its
// memory until the backward value of its shape takes it, and the plan
// saves nothing there (passes/remat ReuseModel). With the shapes hidden,
// ORT allocates such values from its arena when they are produced and
// frees them after their last reader: liveness, in arena chunks.
//
// The export hides them at their sources, so that shape inference cannot
// compute them:
//
//   - every root graph input x that nodes read (a tensor of rank ≥ 1, not a
//     string) is read through xh = Reshape(x, Concat(Shape(x), Li)), a
//     zero-copy view of x whose shape ORT cannot infer; Li is an empty
//     int64 tensor computed from the first such input's data
//     (Cast(Slice(Reshape(x, [-1]), [0], [0]))), which no inference sees
//     through. Reshape, Flatten, Squeeze and Unsqueeze nodes keep reading
//     x itself (a dynamic Reshape next to another reshape breaks ORT's
//     Reshape fusion at session creation, research note Q4);
//   - every node that makes a shape from a tensor (Reshape, Expand and
//     Tile from their second input, ConstantOfShape from its first, Resize
//     from its sizes) and reads something computed at run time reads
//     Concat(that tensor, Li) instead: the same values, which inference
//     no longer knows (hidesShape);
//   - value_info is written only for the values that stay shaped.
//
// A value computed from a hidden one then lacks the dimensions that ONNX
// shape inference cannot compute without the hidden ones: a Conv's output
// keeps its channels (from the weights) but loses its batch and spatial
// sizes, while an Add or Where of a hidden value and a shaped one gets the
// shaped one's sizes back, since broadcasting takes any size other than
// 1. Shapeless follows those rules dimension by dimension (dims.go) and
// names the values with a dimension unknown: the model's side of the
// hiding (passes/memory Options.Shapeless). Rank-0 values are never
// shapeless: ORT never reuses their buffers and writes them in place as
// it does with shapes.

// Shapeless returns the predicate that says which values of a graph
// exported with Options.HideShapes ONNX Runtime's planner sees without a
// static shape. It works on any graph (a value knows its graph) and may be
// called from several goroutines.
func Shapeless() func(v *ir.Value) bool {
	h := &shapeHider{tainted: map[*ir.Value]bool{}, known: map[*ir.Value][]bool{}, sources: map[*ir.Graph]map[*ir.Value]bool{}, foldable: map[*ir.Node]bool{}}
	return h.query
}

type shapeHider struct {
	mu sync.Mutex
	// tainted[v]: v is computed from a hidden source; known[v]: per
	// dimension of v, whether ORT's shape inference knows it (dims).
	tainted map[*ir.Value]bool
	known   map[*ir.Value][]bool
	// sources[g]: the inputs of root graph g that the export hides.
	sources map[*ir.Graph]map[*ir.Value]bool
	// foldable memoizes constantFoldable.
	foldable map[*ir.Node]bool
}

func (h *shapeHider) query(v *ir.Value) bool {
	if v == nil || v.Type.Rank() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.dims(v), false)
}

// taint reports whether v is computed from a hidden source.
func (h *shapeHider) taint(v *ir.Value) bool {
	if t, ok := h.tainted[v]; ok {
		return t
	}
	t := false
	switch n := v.Def; {
	case v.Data != nil:
	case n == nil && v.Graph != nil && v.Graph.Parent == nil:
		t = h.hidden(v.Graph)[v]
	case n == nil:
		// A subgraph's own input (a loop's iteration values): computed
		// from what its owner reads.
		if o := v.Graph.Owner; o != nil {
			t = h.nodeTaint(o)
		}
	default:
		t = h.nodeTaint(n)
	}
	h.tainted[v] = t
	return t
}

// nodeTaint reports whether n's outputs are computed from a hidden source:
// n makes a shape the export hides, or reads a tainted value (a hidden
// input only where the export gives n its hidden view).
func (h *shapeHider) nodeTaint(n *ir.Node) bool {
	if h.rewritten(n) {
		return true
	}
	for i, in := range n.AllInputs() {
		if h.readsTainted(n, i, in) {
			return true
		}
	}
	return false
}

// rewritten reports whether the export gives n a hidden shape input.
func (h *shapeHider) rewritten(n *ir.Node) bool {
	root := n.Graph != nil && n.Graph.Parent == nil
	return root && len(h.hidden(n.Graph)) > 0 && hidesShape(n, h.foldable)
}

// readsTainted reports whether n's input slot i, value in, is tainted: a
// hidden graph input that the export gives n as its view, or a value
// computed from a hidden source.
func (h *shapeHider) readsTainted(n *ir.Node, i int, in *ir.Value) bool {
	if in == nil {
		return false
	}
	root := n.Graph != nil && n.Graph.Parent == nil
	if in.Def == nil && in.Data == nil && in.Graph == n.Graph && root {
		return h.hidden(n.Graph)[in] && i < len(n.Inputs) && !isReshapeLike(n)
	}
	if root && len(h.hidden(n.Graph)) > 0 && crossesFold(n, i, h.foldable) {
		return true
	}
	return h.taint(in)
}

// crossesFold reports whether n's input slot i carries a value that ORT's
// constant folding computes (from parameters alone: the backward pass's
// seed under a sum loss and what follows from it) into a node it does not
// fold, where the export gives n a hidden view of it: a folded value keeps
// its static shape, and ONNX's broadcasting would give it back to every
// value an Add or a Where computes from it and a hidden one. Only into a
// broadcasting node (broadcasts): elsewhere a folded value leaves the
// other inputs' unknown sizes unknown, and a Conv, Gemm or MatMul needs
// its folded weights constant (ORT's NCHWc transformer converts a Conv
// only then, and computes it with other bits: the zoo SegNet's weight
// gradients). Not for a value a reshape-like node makes (no Reshape next
// to another) or a rank-0 value (memo caches constantFoldable).
func crossesFold(n *ir.Node, i int, memo map[*ir.Node]bool) bool {
	if i >= len(n.Inputs) || n.Inputs[i] == nil || !broadcasts(n) {
		return false
	}
	v := n.Inputs[i]
	d := v.Def
	return d != nil && d.Graph == n.Graph && v.Type.Rank() >= 1 && !isConstantNode(d) && !isReshapeLike(d) &&
		constantFoldable(d, memo) && !constantFoldable(n, memo)
}

// valueSlot reports whether the values of n's input slot i give n's
// output shape (a shape, axes, pads, sizes or counts), so that n's output
// shape is unknown when they are.
func valueSlot(n *ir.Node, i int) bool {
	if n.Domain != "" {
		return false
	}
	switch n.Op {
	case "Reshape", "Expand", "Tile", "TopK", "OneHot", "Squeeze", "Unsqueeze", "Split", "Upsample":
		return i == 1
	case "ConstantOfShape":
		return i == 0
	case "Resize":
		return i >= 1
	case "Slice", "Pad":
		return i >= 1
	case "Range":
		return true
	case "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare":
		return i == 1
	case "NonZero", "Compress", "Unique":
		return true // data-dependent output sizes
	}
	return false
}

// hidden returns the inputs of root graph g that the export hides.
func (h *shapeHider) hidden(g *ir.Graph) map[*ir.Value]bool {
	if s, ok := h.sources[g]; ok {
		return s
	}
	s := map[*ir.Value]bool{}
	for _, v := range hiddenInputs(g) {
		s[v] = true
	}
	h.sources[g] = s
	return s
}

// HiddenShapeTensors describes the int64 shape tensors that the helper
// nodes of root graph g written with Options.HideShapes compute at run
// time, by their lengths (elements). Head lists, per hidden input in the
// order the head of the written graph takes them, the input's rank: the
// head computes the input's Shape and then its Concat with the empty
// tensor, both of that length; its helpers read graph inputs and
// initializers only, so ONNX Runtime runs them before any node of g.
// Body holds the lengths of the shape tensors that the Concat helpers
// compute right before g's nodes: a hidden shape input's length, a hidden
// view's rank. Both are empty when the export hides nothing.
func HiddenShapeTensors(g *ir.Graph) (head []int, body map[int]bool) {
	body = map[int]bool{}
	srcs := hiddenInputs(g)
	if len(srcs) == 0 {
		return nil, body
	}
	for _, x := range srcs {
		head = append(head, x.Type.Rank())
	}
	foldable := map[*ir.Node]bool{}
	for _, n := range g.Nodes {
		for j, v := range n.Inputs {
			if crossesFold(n, j, foldable) {
				body[v.Type.Rank()] = true
			}
		}
		if s := shapeInput(n); s >= 0 && hidesShape(n, foldable) {
			if dims, ok := n.Inputs[s].Type.Dims(); ok && len(dims) == 1 {
				body[int(dims[0])] = true
			}
		}
	}
	return head, body
}

// hiddenInputs lists the inputs of root graph g that an export with
// HideShapes reads through a hidden view: tensors of rank ≥ 1, not
// strings, that some node of g reads.
func hiddenInputs(g *ir.Graph) []*ir.Value {
	var out []*ir.Value
	for _, v := range g.Inputs {
		if v.Data != nil || v.Type.Kind != ir.KindTensor || v.Type.Rank() < 1 || v.Type.DType == ir.String || v.Type.DType == ir.Undefined || len(v.Uses) == 0 {
			continue
		}
		out = append(out, v)
	}
	return out
}

// hidesShape reports whether the export makes n's shape input dynamic:
// n makes its output's shape from a tensor (shapeInput) and reads
// something computed at run time. A node that ORT's constant folding
// computes from parameters alone (the backward pass's seed under a sum
// loss, its zero tensors) keeps its static shape: hiding it would stop
// the folding, and ORT's folded results and kernels run at level "all"
// are not always bitwise those of the kernels run in the graph (memo
// caches constantFoldable).
func hidesShape(n *ir.Node, memo map[*ir.Node]bool) bool {
	return shapeInput(n) >= 0 && !constantFoldable(n, memo)
}

// shapeInput is the input slot from which n makes its output's shape, the
// one the export hides, or -1.
func shapeInput(n *ir.Node) int {
	if n.Domain != "" {
		return -1
	}
	slot := -1
	switch n.Op {
	case "Reshape", "Expand", "Tile":
		slot = 1
	case "ConstantOfShape":
		slot = 0
	case "Resize":
		slot = 3
	}
	if slot < 0 || slot >= len(n.Inputs) || n.Inputs[slot] == nil {
		return -1
	}
	return slot
}

// hideShapes rewrites the written root graph gp of g as Options.HideShapes
// says (see above). It runs after the rematerialization's helpers are in
// place; it changes the inputs of g's own nodes only.
func (ex *exporter) hideShapes(g *ir.Graph, gp *onnxpb.GraphProto, irVersion int64) {
	srcs := hiddenInputs(g)
	if len(srcs) == 0 {
		return
	}
	f := &forcer{ex: ex, g: g, gp: gp, nodeNames: map[string]int{}, irVersion: irVersion}
	for _, np := range gp.Node {
		if np.GetName() != "" {
			f.nodeNames[np.GetName()]++
		}
	}
	var head []*onnxpb.NodeProto
	view := map[string]string{} // input name → its hidden view
	li := ""
	for _, x := range srcs {
		xn := ex.name(x)
		if li == "" {
			minus1 := f.addInit(xn+"_hide_minus1", []int64{-1})
			zero := f.addInit(xn+"_hide_zero", []int64{0})
			flat, empty := f.value(xn+"_hide_flat"), f.value(xn+"_hide_empty")
			head = append(head,
				f.node("Reshape", xn+"_hide_flat", []string{xn, minus1}, flat, nil),
				f.node("Slice", xn+"_hide_slice", []string{flat, zero, zero}, empty, nil))
			li = empty
			if x.Type.DType != ir.Int64 {
				li = f.value(xn + "_hide_empty_i64")
				head = append(head, f.node("Cast", xn+"_hide_cast", []string{empty}, li, []*onnxpb.AttributeProto{intAttr("to", int64(onnxpb.TensorProto_INT64))}))
			}
		}
		shape, dyn, xh := f.value(xn+"_hide_shape"), f.value(xn+"_hide_dyn_shape"), f.value(xn+"_hidden")
		head = append(head,
			f.node("Shape", xn+"_hide_shape", []string{xn}, shape, nil),
			f.node("Concat", xn+"_hide_concat", []string{shape, li}, dyn, []*onnxpb.AttributeProto{intAttr("axis", 0)}),
			f.node("Reshape", xn+"_hide_reshape", []string{xn, dyn}, xh, nil))
		view[xn] = xh
	}
	index := make(map[*onnxpb.NodeProto]int, len(ex.rootProtos))
	for i, np := range ex.rootProtos {
		index[np] = i
	}
	foldable := map[*ir.Node]bool{}
	folded := map[*ir.Value]string{} // a folded value → its hidden view
	var body []*onnxpb.NodeProto
	for _, np := range gp.Node {
		i, ok := index[np]
		if !ok {
			body = append(body, np)
			continue
		}
		n := g.Nodes[i]
		if !isReshapeLike(n) {
			for j := range np.Input {
				if xh, ok := view[np.Input[j]]; ok && j < len(n.Inputs) {
					np.Input[j] = xh
				}
			}
		}
		for j, v := range n.Inputs {
			if j >= len(np.Input) || !crossesFold(n, j, foldable) || np.Input[j] != ex.name(v) {
				continue
			}
			vh, ok := folded[v]
			if !ok {
				vh = f.hiddenView(ex.name(v), v.Type, li, &body)
				folded[v] = vh
			}
			np.Input[j] = vh
		}
		if s := shapeInput(n); hidesShape(n, foldable) && s < len(np.Input) && np.Input[s] != "" {
			// The empty tensor comes from the node's data input when it
			// has one computed at run time, so that ORT runs the helpers
			// right before the node rather than wherever its search
			// reaches them first (their shape tensors would be held
			// from there on); else from the graph input.
			e := li
			if d := n.Inputs[0]; s > 0 && d != nil && np.Input[0] != "" && !d.IsConst() && (d.Def == nil || !isConstantNode(d.Def) && !constantFoldable(d.Def, foldable)) {
				e = f.emptyOf(np.Input[0], d.Type.DType, np.GetName()+"_hide", &body)
			}
			name := np.Input[s]
			h := f.value(name + "_hidden")
			body = append(body, f.node("Concat", np.GetName()+"_hide_concat", []string{name, e}, h, []*onnxpb.AttributeProto{intAttr("axis", 0)}))
			np.Input[s] = h
		}
		body = append(body, np)
	}
	gp.Node = append(head, body...)
}

// emptyOf writes, at the end of *out, the helpers that make an empty int64
// tensor from the tensor named d of element type dt: Slice(d, [0], [0],
// axes [0]) (no Reshape, which next to a reshape that made d would break
// ORT's Reshape fusion), Reshape to [-1], Cast to int64. It returns the
// empty tensor's name.
func (f *forcer) emptyOf(d string, dt ir.DType, prefix string, out *[]*onnxpb.NodeProto) string {
	zero := f.addInit(prefix+"_zero", []int64{0})
	minus1 := f.addInit(prefix+"_minus1", []int64{-1})
	sl, flat := f.value(prefix+"_slice"), f.value(prefix+"_flat")
	*out = append(*out,
		f.node("Slice", prefix+"_slice", []string{d, zero, zero, zero}, sl, nil),
		f.node("Reshape", prefix+"_flat", []string{sl, minus1}, flat, nil))
	if dt == ir.Int64 {
		return flat
	}
	e := f.value(prefix + "_empty_i64")
	*out = append(*out, f.node("Cast", prefix+"_cast", []string{flat}, e, []*onnxpb.AttributeProto{intAttr("to", int64(onnxpb.TensorProto_INT64))}))
	return e
}

// hiddenView writes, at the end of *out, a zero-copy view of the tensor
// named v (of type t) whose shape ORT cannot infer: Reshape(v,
// Concat(shape, li)), the shape a constant when t's is static, else
// Shape(v). It returns the view's name.
func (f *forcer) hiddenView(v string, t ir.TensorType, li string, out *[]*onnxpb.NodeProto) string {
	shape := ""
	if dims, ok := t.Dims(); ok {
		shape = f.addInit(v+"_hide_dims", dims)
	} else {
		shape = f.value(v + "_hide_shape")
		*out = append(*out, f.node("Shape", v+"_hide_shape", []string{v}, shape, nil))
	}
	dyn, view := f.value(v+"_hide_dyn_shape"), f.value(v+"_hidden")
	*out = append(*out,
		f.node("Concat", v+"_hide_concat", []string{shape, li}, dyn, []*onnxpb.AttributeProto{intAttr("axis", 0)}),
		f.node("Reshape", v+"_hide_reshape", []string{v, dyn}, view, nil))
	return view
}

// broadcasts reports whether n is an ONNX op whose output shape is the
// multidirectional broadcast of its inputs' (dims.go: broadcast).
func broadcasts(n *ir.Node) bool {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return false
	}
	switch n.Op {
	case "Add", "Sub", "Mul", "Div", "Pow", "Where", "Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor",
		"Max", "Min", "Sum", "Mean", "PRelu", "Mod", "BitShift":
		return true
	}
	return false
}
