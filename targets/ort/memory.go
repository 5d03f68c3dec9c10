package ort

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// Memory returns the options that model ONNX Runtime 1.30's CPU execution
// provider as the project measures it (arena on, memory pattern off,
// sequential executor, one thread, level "disabled"; research note
// ort-execution.md, Q3): caller-owned graph inputs and initializers not
// counted, Constant nodes as initializers, outputs kept and never shared,
// views, in-place writes and the planner's buffer reuse on, every buffer
// and workspace counted as the BFC arena chunk it gets, kernel workspace
// from Workspace, ConvTranspose's prepacked filters in the arena.
//
// Each rule was measured with one- to five-node models built with
// onnx.helper and run with internal/ort (T = f32[1,16,64,64] = 256 KiB; the
// profile's mem_bytes_in_use is taken after a kernel's outputs are
// allocated and before its dead inputs are released, so it equals During
// minus the workspace; memory_test.go replays these probes):
//
//   - Not counted: graph inputs (a Relu of a graph input allocates one
//     T; the input is the caller's). Initializers of more than 127 bytes
//     are not in the arena (Add(x, W) with a 4 MiB W peaks at 4 MiB, the
//     output). Initializers of at most 127 bytes and the weights MatMul,
//     Gemm and LSTM prepack are reserved in the arena's statistics (exact
//     bytes, no chunks) when the session is created, ConvTranspose's
//     prepacked filter takes a chunk then: all before the first kernel, a
//     constant the comparison subtracts (internal/memcheck).
//   - Views: Reshape, Flatten, Squeeze, Unsqueeze and Identity allocate 0
//     bytes, unless their output is a graph output (then a new T: the
//     planner gives graph outputs their own buffer; so does Relu writing a
//     graph output).
//   - In place over a dying same-shape input: Relu, LeakyRelu, Elu, Selu,
//     Celu, ThresholdedRelu, Sigmoid, HardSigmoid, Tanh, Softplus,
//     Softsign, Shrink, Clip (attribute or input bounds), Cast to a type
//     of the same size (f32→i32 and i32→f32 yes, f32→f16 and f32→i64 no:
//     a Cast of T to f16 allocates T/2, the Cast back to f32 takes a
//     freed same-shape f32 buffer), Softmax and LogSoftmax allocate 0
//     bytes, and so does ScatterElements (and Scatter) over its dying data
//     input (a [16384] float32 ConstantOfShape scattered into: 0 new
//     bytes; ScatterND: a new T). Not in place (a new T each): Abs, Neg,
//     Exp, Log, Sqrt, Erf, Floor, Ceil, Round, Sign, Reciprocal, PRelu,
//     Hardmax, Dropout, and the multi-input ops (Add, Sub, Mul, Div, Pow,
//     Max, Min, Sum, Where), even when every input dies at the node.
//   - Planner reuse: a = T; p = MaxPool(a) (a dies); q, q2 = T/4; r =
//     Resize(q2) = T takes a's buffer (0 new bytes), and a's T stays in use
//     from MaxPool to Resize. The shape must match exactly: a Concat output
//     f32[1,64,32,32] (same bytes, other shape) gets a new T and a's buffer
//     is released after MaxPool. An output nothing reads (Split's second
//     half, MaxPool's unused indices) stays allocated to the end of the run
//     unless a later same-shape output takes its buffer.
//   - Arena: outputs of 4, 12, 64, 256, 260, 400 and 4000 bytes occupy 256,
//     256, 256, 256, 512, 512 and 4096 bytes. A 512 KiB output placed in
//     the 768 KiB left of the first 1 MiB region counts 768 KiB (the chunk
//     is not split: it is less than twice the request); a 6.25 MiB first
//     output gets an 8 MiB region and counts 8 MiB (ppocrv4_det).
//   - Workspace: see Workspace.
//
// ONNX Runtime plans in-place writes and buffer reuse only for values
// whose static shape its own shape inference derives (or the file's
// value_info gives); the model assumes every shape is known, so give ORT
// the shapes (exporters/onnx Options.ValueInfo) where its inference stops,
// as after Shape → Slice → Concat → Reshape chains.
//
// Float16 graphs: ORT's CPU provider has no float16 kernel for most ops
// (Conv, Gemm, pooling, normalisation, activations, arithmetic) and runs
// them in float32 behind Casts it inserts, with float32 copies of their
// float16 weights made at run time in the arena; the casts that cancel
// vanish (a converter's Casts at the graph inputs and around float32
// islands such as Resize). The rules that say which are in
// targets/ort/float16.go; the model applies to the graph ORT really runs,
// targets/ort.Lower, not to the float16 graph as written (on the zoo's
// float16 variants and ppocrv4_det's the graph as written predicts 46% to
// 98% too little).
// On that graph the rules above hold unchanged: a Cast between element
// sizes (float16 ↔ float32) is never in place; Cast int32 → float32
// (after ConvInteger) is. Quantized graphs (quantize_dynamic's
// DynamicQuantizeLinear → ConvInteger/MatMulInteger → Cast → Mul) need
// only ConvInteger's workspace (Workspace); their uint8, int8 and
// int32 values are ordinary buffers (internal/memcheck: every fp16 and
// dynquant zoo variant and ppocrv4_det's, predicted to the byte).
func Memory() memory.Options {
	return memory.Options{
		Aliasing:          true,
		InPlace:           true,
		Reuse:             true,
		ConstantsAsParams: true,
		AlignBytes:        memory.ArenaAlign,
		Workspace:         Workspace,
		WorkspaceParts:    WorkspaceParts,
		WorkspaceFirst:    WorkspaceFirst,
		Arena:             true,
		Prepacked:         Prepacked,
	}
}

// Prepacked returns the bytes ONNX Runtime 1.30's CPU kernel for n
// prepacks its constant weights into as an arena chunk when the session is
// created: ConvTranspose's transposed filter, the filter's bytes. The
// weights MatMul, Gemm and LSTM prepack are reserved outside the arena's
// chunks (the arena's held bytes grow by exactly their size: 786432 for a
// 512×384 MatMul weight, with the 1 MiB first region still empty), and
// initializers of at most 127 bytes likewise; they shape nothing. The key
// is the filter: ConvTranspose nodes reading the same initializer (a
// tiled region's band copies, a recomputation) share one prepacked copy
// (measured: three on one 32 KiB filter hold 32768 bytes, on three
// filters 98304).
func Prepacked(n *ir.Node) (int64, any) {
	if n.Op != "ConvTranspose" || (n.Domain != "" && n.Domain != "ai.onnx") || len(n.Inputs) < 2 || n.Inputs[1] == nil {
		return 0, nil
	}
	w := n.Inputs[1]
	if !w.IsConst() && (w.Def == nil || w.Def.Op != "Constant") {
		return 0, nil
	}
	if b, ok := w.Type.Bytes(); ok {
		return b, w
	}
	return 0, nil
}

// mlasConvWorkingBuffer is MLAS's per-thread convolution working buffer in
// floats (MLAS_CONV_WORKING_BUFFER_SIZE_PER_THREAD = MLAS_SGEMM_STRIDEN ×
// MLAS_SGEMM_STRIDEK).
const mlasConvWorkingBuffer = 16384

// Workspace returns the scratch bytes ONNX Runtime 1.30's CPU kernel for
// n allocates from the arena while it runs and frees before it returns,
// each allocation rounded up to memory.ArenaAlign, with one intra-op thread. It is
// 0 for every op not listed here, and for listed ops whose shapes are not
// static or whose element type is not float32. Each formula was checked
// against the profile's mem_in_use_peak − (bytes in use before the node) −
// (the node's outputs) on single-node models; "floats" are 4 bytes.
//
//   - Conv (MLAS, float32, 1–3 spatial dims): with K = C_in/group × ∏kernel,
//     O = ∏(output spatial dims) and F = C_out/group, 0 when every stride is
//     1, every pad 0 and the kernel is 1×…×1 (pointwise: the input is the
//     GEMM operand), and 0 for a one-channel-per-group 2-D kernel spanning
//     the whole input width (or the whole height with width 1); otherwise
//     O × K floats when F > O, else 16384 floats (64 KiB, MLAS's per-thread
//     working buffer, one segment at a time). Groups and batch images reuse
//     the one buffer. Measured: 3×3, 5×5, dilated, strided, grouped,
//     depthwise, 1-D and batch-2 convolutions on 16×64×64 inputs, and a 1×1
//     convolution with padding, all 65536; a 1×1 stride-1 one 0; a 3×3
//     convolution of 64×4×4 into 128 channels 36864 (16 × 576 floats) and
//     its 4-group form 9216.
//   - ConvTranspose (float32): the col buffer, C_out/group × ∏kernel ×
//     ∏(input spatial dims) floats. Measured: 2×2 stride 2, 16→8 channels
//     on 64×64: 524288; 4×4 stride 2: 2097152.
//   - ConvInteger (uint8 data, int8 or uint8 weights, any rank): the
//     im2col buffer of uint8, C_in/group × ∏kernel × ∏(output spatial dims)
//     bytes, one for all groups and batch images; 0 for a 1×…×1 kernel with
//     every stride 1 and every pad 0 (the input is the GEMM operand). Its
//     int32 output is an ordinary output. Measured (conv_integer.cc's
//     col_buffer): 3×3 16→16 on 64×64 589824 (K = 144 × 4096), strided
//     147456, 64×4×4 into 128 channels 9216, depthwise 36864, 4 groups
//     147456, 1-D 196608, 5×5 on a batch of 2 204800, 1×1 with stride 2
//     16384 and with padding 18688; a plain 1×1 0.
//   - DynamicQuantizeLinear, MatMulInteger: none (MLAS's integer GEMM
//     packs outside the arena). DynamicQuantizeLinear's outputs are a uint8
//     tensor of its input's shape and two scalars (scale, zero point) of
//     one 256-byte chunk each; MatMulInteger prepacks a constant B at
//     session creation (the baseline, like MatMul). Measured: 0 on
//     [1,16,64,64] and [256,512] inputs, with constant and with computed B.
//   - LSTM (float32, layout 0): per direction, hidden_size floats twice,
//     batch × hidden_size floats three times, 4 × hidden_size × batch ×
//     seq_length floats (the gate pre-activations), 4 × hidden_size floats
//     when there is a bias, batch int32 sequence lengths when the input
//     gives none, 3 × hidden_size floats with peepholes, and for the
//     reverse direction the reversed input and output (seq × batch ×
//     input_size and seq × batch × hidden_size floats); plus directions ×
//     batch × hidden_size floats each for Y_h and Y_c when the node does
//     not output them. Measured exactly on forward, reverse, bidirectional,
//     bias-less and Y_h-only LSTMs (12800 to 268544 bytes).
//   - LRN (float32, NCHW): N × C × H × W floats (the scale) plus
//     (C + size − 1) × H × W floats (the padded squares), two allocations
//     in that order (WorkspaceParts). Measured: 147456 for 16×32×32,
//     size 5; 133120 for 64×16×16, size 3. As one request the GoogLeNet
//     norm2 workspace (192×56×56: 2408448 + 2458624 bytes) would take a
//     new arena region and count its whole chunk: 28.7% over the measured
//     peak of the dynamically quantized GoogLeNet at 224×224, exact as two.
//   - Where (every element type but string): two temporaries, the
//     selection from X (condition and X broadcast) and the one from Y
//     (condition and Y broadcast), which the kernel allocates in that
//     order before the output it merges them into (where_op.cc;
//     WorkspaceParts, WorkspaceFirst). Measured: 262144 for a
//     [4,2,64,64] float32 output, with Y of the same shape, a scalar, or
//     [1,2,1,1]. Allocated after the output instead, the model put the
//     output of one Where in VGG19's training graph into another chunk
//     than ORT's arena does: 141568 bytes under the measured peak.
//   - Sum, Max, Min, Mean with three or more inputs: one temporary of the
//     output's bytes (the kernel folds the inputs pairwise through it);
//     none with two. Measured for each of the four ops on [1,16,64,64]
//     float32 inputs, with and without a [1,16,1,1] operand: 262144 with
//     three inputs, and with four and five (Sum), 0 with two.
//   - HardSwish: ORT has no kernel and runs the ONNX function body,
//     HardSigmoid then Mul; the HardSigmoid result (one output's bytes)
//     lives while Mul runs.
//   - If, Loop, Scan: the subgraph runs inside the node, in the same arena;
//     the workspace is its peak under this model (the largest over an If's
//     branches, one iteration of a body) less the subgraph outputs, which
//     are the node's outputs. This rule is an estimate: ORT orders and
//     plans the subgraph itself, and which branch runs depends on data. A
//     subgraph whose sizes are unknown contributes nothing. Under
//     Options.Arena, Simulate replays the subgraphs' buffers in the arena
//     instead of using this number.
func Workspace(n *ir.Node) int64 {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return 0
	}
	switch n.Op {
	case "Conv":
		return convWorkspace(n)
	case "ConvTranspose":
		return convTransposeWorkspace(n)
	case "ConvInteger":
		return convIntegerWorkspace(n)
	case "LSTM":
		return lstmWorkspace(n)
	case "LRN":
		return lrnWorkspace(n)
	case "Where":
		var total int64
		for _, p := range whereSelections(n) {
			total += memory.ArenaRound(p)
		}
		return total
	case "Sum", "Max", "Min", "Mean":
		present := 0
		for _, v := range n.Inputs {
			if v != nil {
				present++
			}
		}
		if present >= 3 && len(n.Outputs) > 0 && n.Outputs[0] != nil {
			if b, ok := n.Outputs[0].Type.Bytes(); ok {
				return memory.ArenaRound(b)
			}
		}
	case "HardSwish":
		if len(n.Outputs) > 0 && n.Outputs[0] != nil {
			if b, ok := n.Outputs[0].Type.Bytes(); ok {
				return memory.ArenaRound(b)
			}
		}
	case "If", "Loop", "Scan":
		var most int64
		for _, sg := range n.Subgraphs() {
			most = max(most, subgraphWorkspace(sg))
		}
		return most
	}
	return 0
}

// WorkspaceParts splits Workspace(n) into the allocations ONNX
// Runtime 1.30's kernel makes, in order, where there is more than one and
// the arena's placement of them matters: LRN's scale, then its padded
// squares (lrn.cc); Where's selection from X, then from Y. Nil for every
// other node: one allocation.
func WorkspaceParts(n *ir.Node) []int64 {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return nil
	}
	if n.Op == "Where" {
		return whereSelections(n)
	}
	if n.Op != "LRN" {
		return nil
	}
	x, ok := floatDims(n, 0, false)
	if !ok || len(x) != 4 {
		return nil
	}
	size := n.AttrInt("size", 1)
	return []int64{4 * prod(x), 4 * (x[1] + size - 1) * x[2] * x[3]}
}

// WorkspaceFirst reports whether ONNX Runtime 1.30's kernel for n
// allocates its workspace before its outputs: Where, whose selections
// come before the output (where_op.cc). Every other kernel that has a
// workspace asks for its output first.
func WorkspaceFirst(n *ir.Node) bool {
	return n.Op == "Where" && (n.Domain == "" || n.Domain == "ai.onnx")
}

// whereSelections returns the bytes of Where's two selections, the
// condition broadcast with X and with Y, in the order the kernel
// allocates them; nil when a shape is not static or the type is string.
func whereSelections(n *ir.Node) []int64 {
	if len(n.Inputs) != 3 || len(n.Outputs) == 0 || n.Outputs[0] == nil || n.Outputs[0].Type.DType == ir.String {
		return nil
	}
	dt := n.Outputs[0].Type.DType
	cond, ok := staticDims(n.Inputs[0])
	if !ok {
		return nil
	}
	var parts []int64
	for _, v := range n.Inputs[1:] {
		d, ok := staticDims(v)
		if !ok {
			return nil
		}
		b, ok := dt.StorageBytes(broadcastElements(cond, d))
		if !ok || b == 0 {
			return nil // an empty Where allocates nothing
		}
		parts = append(parts, b)
	}
	return parts
}

func staticDims(v *ir.Value) ([]int64, bool) {
	if v == nil {
		return nil, false
	}
	return v.Type.Dims()
}

// broadcastElements is the number of elements of the numpy broadcast of
// shapes a and b.
func broadcastElements(a, b []int64) int64 {
	if len(a) < len(b) {
		a, b = b, a
	}
	n := int64(1)
	for i := range a {
		d := a[len(a)-1-i]
		if j := len(b) - 1 - i; j >= 0 && d == 1 {
			d = b[j]
		}
		n *= d
	}
	return n
}

// subgraphWorkspace is the memory a subgraph (an If branch, a Loop or Scan
// body, run once) needs beyond its outputs, which the runtime writes into
// the owning node's outputs: the largest During of the subgraph's nodes in
// file order under Memory() without the arena replay (the arena is shared with
// the enclosing graph), less the outputs allocated by then.
func subgraphWorkspace(sg *ir.Graph) int64 {
	opts := Memory()
	opts.Arena = false
	r, err := memory.Simulate(sg, sg.Nodes, opts)
	if err != nil {
		return 0
	}
	isOut := map[*ir.Value]bool{}
	for _, o := range sg.Outputs {
		isOut[o] = true
	}
	var outs, most int64
	for i, nd := range sg.Nodes {
		for _, o := range nd.Outputs {
			if o != nil && isOut[o] {
				if b, ok := o.Type.Bytes(); ok {
					outs += memory.ArenaRound(b)
				}
			}
		}
		most = max(most, r.During[i]-outs)
	}
	return most
}

// floatDims returns the static dims of the i-th input (or output, with
// out set) of n when it is a float32 tensor.
func floatDims(n *ir.Node, i int, out bool) ([]int64, bool) {
	vs := n.Inputs
	if out {
		vs = n.Outputs
	}
	if i >= len(vs) || vs[i] == nil || vs[i].Type.DType != ir.Float32 {
		return nil, false
	}
	return vs[i].Type.Dims()
}

func prod(d []int64) int64 {
	p := int64(1)
	for _, x := range d {
		p *= x
	}
	return p
}

// convGeometry reads the attributes shared by Conv and ConvTranspose:
// strides, dilations and whether every pad is 0, for nd spatial dims.
func convGeometry(n *ir.Node, nd int, in, kernel, out []int64) (strides, dilations []int64, zeroPads bool) {
	ones := func(name string) []int64 {
		v, ok := n.AttrInts(name)
		if !ok || len(v) != nd {
			v = make([]int64, nd)
			for i := range v {
				v[i] = 1
			}
		}
		return v
	}
	strides, dilations = ones("strides"), ones("dilations")
	zeroPads = true
	switch n.AttrString("auto_pad", "NOTSET") {
	case "SAME_UPPER", "SAME_LOWER":
		for i := 0; i < nd; i++ {
			if (out[i]-1)*strides[i]+(kernel[i]-1)*dilations[i]+1 > in[i] {
				zeroPads = false
			}
		}
	case "VALID":
	default:
		if pads, ok := n.AttrInts("pads"); ok {
			for _, p := range pads {
				if p != 0 {
					zeroPads = false
				}
			}
		}
	}
	return strides, dilations, zeroPads
}

func convWorkspace(n *ir.Node) int64 {
	x, ok1 := floatDims(n, 0, false)
	w, ok2 := floatDims(n, 1, false)
	y, ok3 := floatDims(n, 0, true)
	if !ok1 || !ok2 || !ok3 || len(x) < 3 || len(x) > 5 || len(w) != len(x) || len(y) != len(x) {
		return 0
	}
	nd := len(x) - 2
	group := n.AttrInt("group", 1)
	if group <= 0 || x[1]%group != 0 || w[0]%group != 0 {
		return 0
	}
	in, kernel, out := x[2:], w[2:], y[2:]
	strides, dilations, zeroPads := convGeometry(n, nd, in, kernel, out)
	cg, filters := x[1]/group, w[0]/group
	k, o := cg*prod(kernel), prod(out)
	allOne := func(v []int64) bool {
		for _, d := range v {
			if d != 1 {
				return false
			}
		}
		return true
	}
	if allOne(strides) && zeroPads {
		if prod(kernel) == 1 {
			return 0 // pointwise: MlasConvAlgorithmGemmDirect
		}
		if nd <= 2 && allOne(dilations) && cg == 1 {
			// MLAS promotes 1-D to 2-D with a leading extent of 1.
			in2, k2 := []int64{1, in[0]}, []int64{1, kernel[0]}
			if nd == 2 {
				in2, k2 = in, kernel
			}
			if k2[1] == in2[1] || (k2[0] == in2[0] && k2[1] == 1) {
				return 0
			}
		}
	}
	if filters > o {
		return memory.ArenaRound(4 * o * k) // MlasConvAlgorithmExpandThenGemm
	}
	return memory.ArenaRound(4 * mlasConvWorkingBuffer) // MlasConvAlgorithmExpandThenGemmSegmented
}

func convIntegerWorkspace(n *ir.Node) int64 {
	if len(n.Inputs) < 2 || n.Inputs[0] == nil || n.Inputs[1] == nil || len(n.Outputs) == 0 || n.Outputs[0] == nil {
		return 0
	}
	x, ok1 := n.Inputs[0].Type.Dims()
	w, ok2 := n.Inputs[1].Type.Dims()
	y, ok3 := n.Outputs[0].Type.Dims()
	if !ok1 || !ok2 || !ok3 || len(x) < 3 || len(w) != len(x) || len(y) != len(x) {
		return 0
	}
	nd := len(x) - 2
	group := n.AttrInt("group", 1)
	if group <= 0 || x[1]%group != 0 {
		return 0
	}
	kernel := w[2:]
	strides, _, zeroPads := convGeometry(n, nd, x[2:], kernel, y[2:])
	if prod(kernel) == 1 && zeroPads && prod(strides) == 1 {
		return 0
	}
	return memory.ArenaRound(x[1] / group * prod(kernel) * prod(y[2:]))
}

func convTransposeWorkspace(n *ir.Node) int64 {
	x, ok1 := floatDims(n, 0, false)
	w, ok2 := floatDims(n, 1, false)
	if !ok1 || !ok2 || len(x) < 3 || len(w) != len(x) {
		return 0
	}
	return memory.ArenaRound(4 * w[1] * prod(w[2:]) * prod(x[2:]))
}

func lstmWorkspace(n *ir.Node) int64 {
	x, ok := floatDims(n, 0, false)
	h := n.AttrInt("hidden_size", 0)
	if !ok || len(x) != 3 || h <= 0 || n.AttrInt("layout", 0) != 0 {
		return 0
	}
	seq, batch, input := x[0], x[1], x[2]
	present := func(vs []*ir.Value, i int) bool { return i < len(vs) && vs[i] != nil }
	dirs := []bool{false} // reverse?
	switch n.AttrString("direction", "forward") {
	case "reverse":
		dirs = []bool{true}
	case "bidirectional":
		dirs = []bool{false, true}
	}
	var total int64
	for _, reverse := range dirs {
		total += 2*memory.ArenaRound(4*h) + 3*memory.ArenaRound(4*batch*h) + memory.ArenaRound(4*4*h*batch*seq)
		if present(n.Inputs, 3) {
			total += 4 * memory.ArenaRound(4*h)
		}
		if !present(n.Inputs, 4) {
			total += memory.ArenaRound(4 * batch)
		}
		if present(n.Inputs, 7) {
			total += 3 * memory.ArenaRound(4*h)
		}
		if reverse {
			total += memory.ArenaRound(4*seq*batch*input) + memory.ArenaRound(4*seq*batch*h)
		}
	}
	for _, out := range []int{1, 2} {
		if !present(n.Outputs, out) {
			total += memory.ArenaRound(4 * int64(len(dirs)) * batch * h)
		}
	}
	return total
}

func lrnWorkspace(n *ir.Node) int64 {
	var total int64
	for _, p := range WorkspaceParts(n) {
		total += memory.ArenaRound(p)
	}
	return total
}
