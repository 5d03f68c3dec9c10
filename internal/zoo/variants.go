package zoo

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/remat-compile/remat/ir"
)

// Variants of a model as deployment tools write them: Float16 converts a
// graph's float32 weights and activations to float16 as onnxconverter-common's
// float16 converter does, QuantizeDynamic quantizes its convolutions and
// matrix products as onnxruntime.quantization.quantize_dynamic does. Both
// rewrite the graph in place, need every value's element type (run shape
// inference first), and keep the names those tools give the nodes and values
// they add, so that a runtime's profile of the written model reads the same.

// Variants names the conversions Convert applies: "fp16" and "dynquant".
func Variants() []string { return []string{"fp16", "dynquant"} }

// Convert applies the named variant to g: "fp16" is Float16 with float32
// graph inputs and outputs and the default op block list (what
// convert_float_to_float16(model, keep_io_types=True) writes), "dynquant"
// is QuantizeDynamic.
func Convert(g *ir.Graph, variant string) error {
	switch variant {
	case "fp16":
		return Float16(g, Float16Options{KeepIOTypes: true})
	case "dynquant":
		return QuantizeDynamic(g)
	}
	return fmt.Errorf("zoo: unknown variant %q (want one of %v)", variant, Variants())
}

// ONNX TensorProto.DataType numbers of Cast's "to" attribute.
const (
	onnxFloat   = 1
	onnxUint8   = 2
	onnxInt8    = 3
	onnxInt32   = 6
	onnxFloat16 = 10
)

// DefaultFloat16OpBlockList returns the ops that onnxconverter-common's
// float16 converter keeps in float32 by default (its DEFAULT_OP_BLOCK_LIST):
// their values are cast to float32 before them and back to float16 after.
func DefaultFloat16OpBlockList() []string {
	return []string{
		"ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer",
		"FeatureVectorizer", "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor",
		"Normalizer", "OneHotEncoder", "RandomUniformLike", "SVMClassifier", "SVMRegressor", "Scaler",
		"TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap", "NonMaxSuppression", "TopK",
		"RoiAlign", "Resize", "Range", "CumSum", "Min", "Max", "Upsample",
	}
}

// Float16Options are the options of Float16, named after those of
// convert_float_to_float16.
type Float16Options struct {
	// KeepIOTypes keeps float32 graph inputs and outputs: each float32
	// input gets a Cast to float16 per node that reads it, each float32
	// output a Cast from float16 after the node that writes it.
	KeepIOTypes bool
	// OpBlockList names the ops kept in float32 (nil: the default list,
	// DefaultFloat16OpBlockList); NodeBlockList names nodes kept in
	// float32.
	OpBlockList, NodeBlockList []string
	// MinPositive and MaxFinite clamp converted constants: a nonzero
	// magnitude below MinPositive becomes MinPositive, a finite one above
	// MaxFinite becomes MaxFinite, sign kept (0: 1e-7 and 1e4).
	MinPositive, MaxFinite float64
}

// Float16 converts g to float16 as onnxconverter-common's
// convert_float_to_float16 (version 1.14) writes it:
//
//   - every float32 value becomes float16, except the outputs of blocked
//     nodes (OpBlockList, NodeBlockList) and, with KeepIOTypes, the graph's
//     inputs and outputs; float32 constants (parameters and tensor
//     attributes such as Constant's value) become float16, clamped, except
//     the parameters a blocked node reads;
//   - with KeepIOTypes, each float32 graph input x gets a Cast to float16
//     "x_cast_to_D" (node and value named alike) for each node D that reads
//     it, and the node U that writes a float32 graph output y writes
//     "U_cast_to_y" instead, which a Cast of that name turns into y;
//   - a blocked node N reads each float16 value through a Cast to float32
//     "N_input_castI" (value "N_input_cast_I") and writes each float32
//     output through "N_output_cast_I", which a Cast "N_output_castI" turns
//     back into float16: a float32 island;
//   - the nodes are sorted again (repeatedly the first node of the list whose
//     inputs are all available), and a Cast to float16 whose only reader is a
//     Cast to float32 is removed with it (two blocked nodes in a row, or a
//     graph input read by a blocked node).
//
// One departure: a Cast to float32 that is not blocked is made a Cast to
// float16 (the converter's earlier versions did so; 1.14 leaves it, which
// makes the written model's types disagree). g must have every value's
// element type; it must have no subgraphs.
func Float16(g *ir.Graph, o Float16Options) error {
	if err := needTypes(g, "Float16"); err != nil {
		return err
	}
	if o.MinPositive == 0 {
		o.MinPositive = 1e-7
	}
	if o.MaxFinite == 0 {
		o.MaxFinite = 1e4
	}
	blockOps := o.OpBlockList
	if blockOps == nil {
		blockOps = DefaultFloat16OpBlockList()
	}
	blocked := func(n *ir.Node) bool {
		return slices.Contains(blockOps, n.Op) || slices.Contains(o.NodeBlockList, n.Name)
	}
	isF32 := func(v *ir.Value) bool { return v != nil && v.Type.DType == ir.Float32 }
	cast := func(name string, in *ir.Value, to int64) *ir.Node {
		n := g.NewNode("Cast", "", []*ir.Value{in}, []string{name})
		n.Name = name
		n.SetAttr(ir.IntAttr("to", to))
		n.Outputs[0].Type = in.Type.Clone()
		n.Outputs[0].Type.DType = dtypeOf(to)
		return n
	}
	isOutput := make(map[*ir.Value]bool)
	for _, v := range g.Outputs {
		isOutput[v] = true
	}
	nodes := slices.Clone(g.Nodes)

	// Graph inputs: a Cast per reading node.
	if o.KeepIOTypes {
		for _, x := range g.Inputs {
			if !isF32(x) || x.IsConst() {
				continue
			}
			for _, d := range readers(nodes, x) {
				c := cast(x.Name+"_cast_to_"+d.Name, x, onnxFloat16)
				for i, in := range d.Inputs {
					if in == x {
						d.SetInput(i, c.Outputs[0])
					}
				}
			}
		}
	} else {
		for _, x := range g.Inputs {
			if isF32(x) && !x.IsConst() {
				x.Type.DType = ir.Float16
			}
		}
	}
	// Tensors inside nodes, and every intermediate float32 value.
	for _, n := range nodes {
		if blocked(n) {
			continue
		}
		for i := range n.Attrs {
			a := &n.Attrs[i]
			if a.Tensor != nil && a.Tensor.DType == ir.Float32 {
				a.Tensor = toHalf(a.Tensor, o.MinPositive, o.MaxFinite)
			}
			for k, t := range a.Tensors {
				if t.DType == ir.Float32 {
					a.Tensors[k] = toHalf(t, o.MinPositive, o.MaxFinite)
				}
			}
		}
		if n.Op == "Cast" && n.AttrInt("to", 0) == onnxFloat {
			n.SetAttr(ir.IntAttr("to", onnxFloat16))
		}
		for _, v := range n.Outputs {
			if isF32(v) && !isOutput[v] {
				v.Type.DType = ir.Float16
			}
		}
	}
	// Float32 islands around blocked nodes.
	for _, n := range nodes {
		if !blocked(n) {
			continue
		}
		for i, v := range n.Inputs {
			if v != nil && !v.IsConst() && v.Type.DType == ir.Float16 {
				c := cast(fmt.Sprintf("%s_input_cast%d", n.Name, i), v, onnxFloat)
				c.Outputs[0].Name = fmt.Sprintf("%s_input_cast_%d", n.Name, i)
				n.SetInput(i, c.Outputs[0])
			}
		}
		for i, v := range n.Outputs {
			if !isF32(v) {
				continue
			}
			c := g.NewNode("Cast", "", []*ir.Value{nil}, []string{v.Name})
			c.Name = fmt.Sprintf("%s_output_cast%d", n.Name, i)
			c.SetAttr(ir.IntAttr("to", onnxFloat16))
			c.Outputs[0].Type = v.Type.Clone()
			c.Outputs[0].Type.DType = ir.Float16
			v.ReplaceUses(c.Outputs[0])
			c.SetInput(0, v)
			v.Name = fmt.Sprintf("%s_output_cast_%d", n.Name, i)
			if isOutput[v] {
				isOutput[c.Outputs[0]] = true
			}
		}
	}
	// Parameters, unless a blocked node reads them.
	for _, p := range g.Params {
		if !isF32(p) {
			continue
		}
		kept, converted := false, false
		for _, u := range p.Uses {
			if blocked(u.Node) {
				kept = true
			} else {
				converted = true
			}
		}
		if kept && converted {
			return fmt.Errorf("zoo: Float16: parameter %q is read by blocked and by converted nodes; the converter would give it one type for both", p.Name)
		}
		if !kept {
			p.Data = toHalf(p.Data, o.MinPositive, o.MaxFinite)
			p.Type.DType = ir.Float16
		}
	}
	// Graph outputs: the writer writes float16, a Cast gives float32.
	for _, y := range slices.Clone(g.Outputs) {
		switch {
		case !isF32(y) || y.Def == nil:
		case !o.KeepIOTypes:
			y.Type.DType = ir.Float16
		default:
			name := y.Def.Name + "_cast_to_" + y.Name
			c := g.NewNode("Cast", "", []*ir.Value{nil}, []string{y.Name})
			c.Name = name
			c.SetAttr(ir.IntAttr("to", onnxFloat))
			c.Outputs[0].Type = y.Type.Clone()
			y.ReplaceUses(c.Outputs[0])
			c.SetInput(0, y)
			y.Name = name
			y.Type.DType = ir.Float16
		}
	}
	sortFirstReady(g)
	return removeCastPairs(g)
}

// readers lists, in node order, the nodes that read v (each once).
func readers(nodes []*ir.Node, v *ir.Value) []*ir.Node {
	var out []*ir.Node
	for _, n := range nodes {
		if slices.Contains(n.Inputs, v) {
			out = append(out, n)
		}
	}
	return out
}

// sortFirstReady sorts g's nodes as the float16 converter does: it takes,
// again and again, the first node of the remaining list whose inputs no
// remaining node produces.
func sortFirstReady(g *ir.Graph) {
	pos := make(map[*ir.Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		pos[n] = i
	}
	waiting := make(map[*ir.Node]int, len(g.Nodes)) // inputs produced by unsorted nodes
	readersOf := make(map[*ir.Node][]*ir.Node)
	for _, n := range g.Nodes {
		seen := map[*ir.Node]bool{}
		for _, v := range n.Inputs {
			if v != nil && v.Def != nil && v.Def != n && !seen[v.Def] {
				seen[v.Def] = true
				waiting[n]++
				readersOf[v.Def] = append(readersOf[v.Def], n)
			}
		}
	}
	ready := &nodeHeap{pos: pos}
	for _, n := range g.Nodes {
		if waiting[n] == 0 {
			heap.Push(ready, n)
		}
	}
	out := make([]*ir.Node, 0, len(g.Nodes))
	for ready.Len() > 0 {
		n := heap.Pop(ready).(*ir.Node)
		out = append(out, n)
		for _, r := range readersOf[n] {
			if waiting[r]--; waiting[r] == 0 {
				heap.Push(ready, r)
			}
		}
	}
	g.Nodes = out
}

// nodeHeap orders nodes by their position in the list being sorted.
type nodeHeap struct {
	nodes []*ir.Node
	pos   map[*ir.Node]int
}

func (h *nodeHeap) Len() int           { return len(h.nodes) }
func (h *nodeHeap) Less(i, j int) bool { return h.pos[h.nodes[i]] < h.pos[h.nodes[j]] }
func (h *nodeHeap) Swap(i, j int)      { h.nodes[i], h.nodes[j] = h.nodes[j], h.nodes[i] }
func (h *nodeHeap) Push(x any)         { h.nodes = append(h.nodes, x.(*ir.Node)) }
func (h *nodeHeap) Pop() any {
	n := h.nodes[len(h.nodes)-1]
	h.nodes = h.nodes[:len(h.nodes)-1]
	return n
}

// removeCastPairs removes each Cast to float16 whose output is read by
// exactly one input slot, of a Cast to float32 (the converter's
// remove_unnecessary_cast_node): the second Cast's readers read the first
// Cast's input. Casts of a Constant's output are left alone.
func removeCastPairs(g *ir.Graph) error {
	isCast := func(n *ir.Node, to int64) bool {
		return n != nil && n.Op == "Cast" && n.Domain == "" && n.AttrInt("to", 0) == to &&
			(n.Inputs[0] == nil || n.Inputs[0].Def == nil || n.Inputs[0].Def.Op != "Constant")
	}
	var pairs [][2]*ir.Node
	for _, n := range g.Nodes {
		if !isCast(n, onnxFloat16) || len(n.Outputs[0].Uses) != 1 {
			continue
		}
		if next := n.Outputs[0].Uses[0].Node; isCast(next, onnxFloat) {
			pairs = append(pairs, [2]*ir.Node{n, next})
		}
	}
	for _, p := range pairs {
		first, second := p[0], p[1]
		out := second.Outputs[0]
		if len(out.Uses) == 0 || slices.Contains(g.Outputs, out) {
			return fmt.Errorf("zoo: Float16: the Cast pair %q, %q writes a graph output; the converter fails there", first.Name, second.Name)
		}
		out.ReplaceUses(first.Inputs[0])
		g.RemoveNode(second)
		g.RemoveNode(first)
	}
	return nil
}

// dtypeOf maps the Cast targets used here to element types.
func dtypeOf(to int64) ir.DType {
	switch to {
	case onnxFloat:
		return ir.Float32
	case onnxFloat16:
		return ir.Float16
	case onnxUint8:
		return ir.Uint8
	case onnxInt8:
		return ir.Int8
	case onnxInt32:
		return ir.Int32
	}
	return ir.Undefined
}

// toHalf returns the float16 form of a float32 tensor, clamped as the
// converter's convert_np_to_float16 clamps.
func toHalf(t *ir.Tensor, minPos, maxFinite float64) *ir.Tensor {
	if t == nil {
		return nil
	}
	n := int(t.NumElements())
	raw := make([]byte, 2*n)
	for i := 0; i < n && 4*i+4 <= len(t.Raw); i++ {
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Raw[4*i:])))
		a := math.Abs(x)
		switch {
		case a > 0 && a < minPos:
			x = math.Copysign(minPos, x)
		case a > maxFinite && !math.IsInf(a, 0):
			x = math.Copysign(maxFinite, x)
		}
		binary.LittleEndian.PutUint16(raw[2*i:], ir.Float32ToHalf(float32(x)))
	}
	out := *t
	out.DType, out.Raw, out.Ext = ir.Float16, raw, nil
	out.Shape = slices.Clone(t.Shape)
	return &out
}

// needTypes checks that every value of g has an element type and that g
// has no subgraphs.
func needTypes(g *ir.Graph, what string) error {
	check := func(v *ir.Value) error {
		if v != nil && !v.Type.DType.Valid() {
			return fmt.Errorf("zoo: %s: value %q has no element type; infer shapes first (passes/shapes)", what, v.Name)
		}
		return nil
	}
	for _, v := range slices.Concat(g.Inputs, g.Params) {
		if err := check(v); err != nil {
			return err
		}
	}
	for _, n := range g.Nodes {
		if len(n.Subgraphs()) > 0 {
			return fmt.Errorf("zoo: %s: node %q has subgraphs, which the conversion does not handle", what, n.Name)
		}
		for _, v := range n.Outputs {
			if err := check(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// QuantizeDynamic quantizes g's Conv and MatMul nodes as
// onnxruntime.quantization.quantize_dynamic writes them with its defaults
// (per-tensor int8 weights, symmetric; uint8 activations quantized at run
// time; fused dynamic quantization, opset 11 and above). For a node N whose
// inputs are float32:
//
//   - each activation input a (not a parameter) is quantized once, by a
//     DynamicQuantizeLinear "a_QuantizeLinear" with outputs "a_quantized",
//     "a_scale" and "a_zero_point", which every later reader of a shares;
//   - each weight parameter W becomes "W_quantized" (int8, zero point 0,
//     scale max|W|/127; a MatMul's weight uses the reduced range 64 as
//     quantize_dynamic does), with scalars "W_scale" and "W_zero_point";
//     a parameter in an activation's place is quantized to uint8 the same
//     way, with an asymmetric range;
//   - N becomes ConvInteger or MatMulInteger "N_quant" (Conv's attributes
//     kept) writing int32 "Y_output_quantized" (Y is N's output), a Cast to
//     float32 "Y_output_quantized_cast" writing "..._cast_output", a Mul
//     "N_quant_scales_mul" of the two scales, and a Mul
//     "N_quant_output_scale_mul" of the two that writes Y, or, when a Conv
//     has a bias B, "Yquant_scaled_output", to which an Add "Y_bias_add"
//     adds B reshaped (an unnamed Reshape, shape "Y_bias_reshape_shape")
//     to [1, C, 1, …].
//
// The new nodes take N's place in the node order; parameters no node reads
// any more are removed. quantize_dynamic's rules for Gather, LSTM, Attention
// and EmbedLayerNormalization are not implemented: those nodes stay
// float32. g must have every value's element type and import opset 11 or
// later of the standard domain.
func QuantizeDynamic(g *ir.Graph) error {
	if err := needTypes(g, "QuantizeDynamic"); err != nil {
		return err
	}
	if v := g.Opset(""); v < 11 {
		return fmt.Errorf("zoo: QuantizeDynamic: the graph imports opset %d; DynamicQuantizeLinear needs 11 or later", v)
	}
	q := &quantizer{g: g, dql: map[*ir.Value]*ir.Node{}, params: map[string]*ir.Value{}}
	var out []*ir.Node
	for _, n := range slices.Clone(g.Nodes) {
		if !q.quantizable(n) {
			out = append(out, n)
			continue
		}
		nodes, err := q.quantize(n)
		if err != nil {
			return err
		}
		out = append(out, nodes...)
	}
	g.Nodes = out
	g.Params = slices.DeleteFunc(g.Params, func(p *ir.Value) bool { return len(p.Uses) == 0 && !slices.Contains(g.Outputs, p) })
	return nil
}

// quantizer holds QuantizeDynamic's state: the DynamicQuantizeLinear node
// of each activation quantized so far and the quantized parameters by
// name.
type quantizer struct {
	g      *ir.Graph
	dql    map[*ir.Value]*ir.Node
	params map[string]*ir.Value
}

// quantizable reports whether n is a Conv or MatMul of float32 data with
// a float32 weight.
func (q *quantizer) quantizable(n *ir.Node) bool {
	if n.Domain != "" || (n.Op != "Conv" && n.Op != "MatMul") || len(n.Inputs) < 2 {
		return false
	}
	for _, v := range n.Inputs[:2] {
		if v == nil || v.Type.DType != ir.Float32 {
			return false
		}
	}
	return n.Outputs[0] != nil
}

// quantize returns the nodes that replace n, in order, and removes n.
func (q *quantizer) quantize(n *ir.Node) ([]*ir.Node, error) {
	var nodes []*ir.Node
	g := q.g
	y := n.Outputs[0]
	integer := n.Op + "Integer"
	qname := ""
	if n.Name != "" {
		qname = n.Name + "_quant"
	}
	var ins, zps, scales []*ir.Value
	for i, v := range n.Inputs[:2] {
		if v.IsConst() {
			w, s, z, err := q.param(v, i == 1, n.Op == "MatMul")
			if err != nil {
				return nil, err
			}
			ins, scales, zps = append(ins, w), append(scales, s), append(zps, z)
			continue
		}
		d, ok := q.dql[v]
		if !ok {
			d = g.CreateNode("DynamicQuantizeLinear", "", []*ir.Value{v}, []string{v.Name + "_quantized", v.Name + "_scale", v.Name + "_zero_point"})
			d.Name = v.Name + "_QuantizeLinear"
			d.Outputs[0].Type = v.Type.Clone()
			d.Outputs[0].Type.DType = ir.Uint8
			d.Outputs[1].Type = ir.TensorOf(ir.Float32)
			d.Outputs[2].Type = ir.TensorOf(ir.Uint8)
			q.dql[v] = d
			nodes = append(nodes, d)
		}
		ins, scales, zps = append(ins, d.Outputs[0]), append(scales, d.Outputs[1]), append(zps, d.Outputs[2])
	}
	op := newNode(g, integer, qname, slices.Concat(ins, zps), y.Name+"_output_quantized", y.Type, ir.Int32)
	if n.Op == "Conv" {
		op.Attrs = slices.Clone(n.Attrs)
	}
	cast := newNode(g, "Cast", y.Name+"_output_quantized_cast", op.Outputs, y.Name+"_output_quantized_cast_output", y.Type, ir.Float32)
	cast.SetAttr(ir.IntAttr("to", onnxFloat))
	mulName := qname + "_scales_mul"
	if qname == "" {
		mulName = scales[0].Name + "_" + scales[1].Name + "_mul"
	}
	smul := newNode(g, "Mul", mulName, scales, mulName+":0", ir.TensorOf(ir.Float32), ir.Float32)
	outMul := ""
	if qname != "" {
		outMul = qname + "_output_scale_mul"
	}
	bias := n.Op == "Conv" && len(n.Inputs) > 2 && n.Inputs[2] != nil
	scaledName := y.Name
	if bias {
		scaledName = y.Name + "quant_scaled_output"
	}
	scaled := newNode(g, "Mul", outMul, []*ir.Value{cast.Outputs[0], smul.Outputs[0]}, scaledName+".tmp", y.Type, ir.Float32)
	nodes = append(nodes, op, cast, smul, scaled)
	last := scaled
	if bias {
		b := n.Inputs[2]
		rank := int64(n.Inputs[1].Type.Rank())
		shape := make([]int64, rank)
		for i := range shape {
			shape[i] = 1
		}
		shape[1] = -1
		sv := g.AddParam(y.Name+"_bias_reshape_shape", ir.TensorOf(ir.Int64, rank), ir.Int64Tensor([]int64{rank}, shape...))
		sv.Data.Name = sv.Name
		bshape := make([]int64, rank)
		for i := range bshape {
			bshape[i] = 1
		}
		if d, ok := b.Type.Dims(); ok && len(d) == 1 {
			bshape[1] = d[0]
		}
		reshape := newNode(g, "Reshape", "", []*ir.Value{b, sv}, y.Name+"_bias_reshape_output", ir.TensorOf(b.Type.DType, bshape...), b.Type.DType)
		add := newNode(g, "Add", y.Name+"_bias_add", []*ir.Value{scaled.Outputs[0], reshape.Outputs[0]}, y.Name+".tmp", y.Type, ir.Float32)
		scaled.Outputs[0].Name = scaledName
		nodes = append(nodes, reshape, add)
		last = add
	}
	out := last.Outputs[0]
	y.ReplaceUses(out)
	g.RemoveNode(n)
	out.Name = y.Name
	return nodes, nil
}

// newNode creates (without placing it) a node with one output called out
// of type t with element type dt.
func newNode(g *ir.Graph, op, name string, in []*ir.Value, out string, t ir.TensorType, dt ir.DType) *ir.Node {
	n := g.CreateNode(op, "", in, []string{out})
	n.Name = name
	n.Outputs[0].Type = t.Clone()
	n.Outputs[0].Type.DType = dt
	return n
}

// param returns the quantized form of parameter p, its scale and its zero
// point, adding them on first use: int8 symmetric for a weight (range 127,
// or 64 with reduceRange), uint8 asymmetric otherwise.
func (q *quantizer) param(p *ir.Value, weight, reduceRange bool) (w, scale, zp *ir.Value, err error) {
	if v, ok := q.params[p.Name]; ok {
		return v, q.params[p.Name+"_scale"], q.params[p.Name+"_zero_point"], nil
	}
	xs, ok := p.Data.Float64s()
	if !ok {
		return nil, nil, nil, fmt.Errorf("zoo: QuantizeDynamic: parameter %q has no readable float32 data", p.Name)
	}
	lo, hi := 0.0, 0.0
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	dt, qmin, qmax := ir.Uint8, 0.0, 255.0
	if weight {
		dt, qmin, qmax = ir.Int8, -127, 127
		if reduceRange {
			qmin, qmax = -64, 64
		}
		m := max(-lo, hi)
		lo, hi = -m, m
	}
	s := (hi - lo) / (qmax - qmin)
	if s == 0 {
		s = 1
	}
	z := math.Round(qmin - lo/s)
	if weight {
		z = 0
	}
	raw := make([]byte, len(xs))
	for i, x := range xs {
		v := math.Max(qmin, math.Min(qmax, math.RoundToEven(x/s)+z))
		raw[i] = byte(int8(v))
		if !weight {
			raw[i] = byte(uint8(v))
		}
	}
	shape := slices.Clone(p.Data.Shape)
	w = q.g.AddParam(p.Name+"_quantized", ir.TensorOf(dt, shape...), &ir.Tensor{Name: p.Name + "_quantized", DType: dt, Shape: shape, Raw: raw})
	scale = q.g.AddParam(p.Name+"_scale", ir.TensorOf(ir.Float32), &ir.Tensor{Name: p.Name + "_scale", DType: ir.Float32, Raw: binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(s)))})
	zraw := []byte{byte(uint8(z))}
	if weight {
		zraw = []byte{byte(int8(z))}
	}
	zp = q.g.AddParam(p.Name+"_zero_point", ir.TensorOf(dt), &ir.Tensor{Name: p.Name + "_zero_point", DType: dt, Raw: zraw})
	q.params[p.Name], q.params[p.Name+"_scale"], q.params[p.Name+"_zero_point"] = w, scale, zp
	return w, scale, zp, nil
}
