package ir

import "slices"

// Spatial rules of TensorFlow ops (TFDomain). TensorFlow images are NHWC
// unless an op's data_format says NCHW: the spatial axes are 1 and 2 (2
// and 3 for NCHW), and the 4-element strides, dilations and ksize lists
// and the explicit_paddings pairs are indexed by tensor axis. For a
// TensorFlow node, SpatialRule.Pads holds explicit_paddings' form: a
// (before, after) pair for every axis of the input, padding "SAME"
// resolved as TensorFlow resolves it (pad_total = max((out−1)·stride +
// (kernel−1)·dilation + 1 − in, 0), pad_before = ⌊pad_total/2⌋), for the
// window ops and Pad; nil for the others.

// tfSpatialPoint lists the TensorFlow ops, besides those flagged
// Elementwise in the op table, that map output row o to input row o.
var tfSpatialPoint = map[string]bool{
	"Identity": true, "Snapshot": true, "StopGradient": true, "PreventGradient": true,
	"FusedBatchNorm": true, "FusedBatchNormV2": true, "FusedBatchNormV3": true, "ConcatV2": true,
	"Slice": true,
}

// tfSpatialOther lists the remaining TensorFlow ops with a spatial rule.
var tfSpatialOther = map[string]SpatialKind{
	"Conv2D": SpatialWindow, "_FusedConv2D": SpatialWindow,
	"DepthwiseConv2dNative": SpatialWindow, "FusedDepthwiseConv2dNative": SpatialWindow,
	"_FusedDepthwiseConv2dNative": SpatialWindow,
	"MaxPool":                     SpatialWindow, "AvgPool": SpatialWindow,
	"Pad": SpatialWindow, "PadV2": SpatialWindow, "MirrorPad": SpatialWindow,
	"ResizeBilinear": SpatialUpsample, "ResizeNearestNeighbor": SpatialUpsample,
}

// tfFusedActivations are the fused_ops of _FusedConv2D and the fused
// depthwise convolutions that act on each output element alone.
var tfFusedActivations = []string{"BiasAdd", "Relu", "Relu6", "Elu", "LeakyRelu", "Sigmoid", "Tanh", "Prelu"}

// tfSpatialOp is SpatialOp for the TensorFlow domain.
func tfSpatialOp(op string) bool {
	if tfSpatialPoint[op] || tfSpatialOther[op] != 0 {
		return true
	}
	info := LookupOp(TFDomain, op)
	return info != nil && info.Flags&Elementwise != 0 && info.Flags&(Random|Stateful) == 0
}

// TFSpatialAxes returns the spatial axes (height, width) of n's image
// operands from its data_format attribute: 1 and 2 for NHWC (the
// default), 2 and 3 for NCHW. It fails for other formats.
func TFSpatialAxes(n *Node) (h, w int, err error) {
	switch f := n.AttrString("data_format", "NHWC"); f {
	case "NHWC", "":
		return 1, 2, nil
	case "NCHW":
		return 2, 3, nil
	default:
		return 0, 0, notSpatial(n, "data_format %q", f)
	}
}

// tf fills the rule of a TensorFlow node.
func (r *SpatialRule) tf(n *Node, out []int64) error {
	switch tfSpatialOther[n.Op] {
	case SpatialWindow:
		r.Kind = SpatialWindow
		switch n.Op {
		case "Pad", "PadV2", "MirrorPad":
			return r.tfPad(n, out)
		}
		return r.tfWindow(n, out)
	case SpatialUpsample:
		return r.tfResize(n, out)
	}
	return r.tfPoint(n, out)
}

// tfPoint fills the rule of a pointwise TensorFlow op.
func (r *SpatialRule) tfPoint(n *Node, out []int64) error {
	r.Kind = SpatialPoint
	r.InSize = r.OutSize
	rank := len(out)
	switch n.Op {
	case "BiasAdd":
		// The bias runs along the channels (of either data_format).
		r.Inputs = []SpatialInput{{0, r.Axis}}
		return r.checkBanded(n)
	case "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3":
		if n.AttrInt("is_training", 1) != 0 {
			return notSpatial(n, "training mode computes batch statistics")
		}
		r.Inputs = []SpatialInput{{0, r.Axis}}
		return r.checkBanded(n)
	case "Slice":
		// Pointwise where it keeps the axis whole (as the band rewrite's
		// own Slices do along the other axis of a grid).
		b, sz := ConstTensor(n.Inputs[1]), ConstTensor(n.Inputs[2])
		if b == nil || sz == nil {
			return notSpatial(n, "begin or size is not a constant")
		}
		begin, ok1 := b.Int64s()
		size, ok2 := sz.Int64s()
		in := dimsOf(n.Inputs[0])
		if !ok1 || !ok2 || len(begin) != rank || len(size) != rank || len(in) != rank {
			return notSpatial(n, "begin %v, size %v for rank %d", begin, size, rank)
		}
		if begin[r.Axis] != 0 || (size[r.Axis] != -1 && size[r.Axis] != in[r.Axis]) {
			return notSpatial(n, "slices along axis %d", r.Axis)
		}
		r.Inputs = []SpatialInput{{0, r.Axis}}
		return r.checkBanded(n)
	case "ConcatV2":
		last := len(n.Inputs) - 1
		t := ConstTensor(n.Inputs[last])
		ax, ok := int64(0), false
		if t != nil {
			var v []int64
			if v, ok = t.Int64s(); ok && len(v) == 1 {
				ax = v[0]
			}
		}
		if !ok {
			return notSpatial(n, "the axis is not a constant scalar")
		}
		if ax < 0 {
			ax += int64(rank)
		}
		if ax == int64(r.Axis) {
			return notSpatial(n, "concatenates along axis %d", ax)
		}
		return r.broadcastInputs(n, rank, n.Inputs[:last])
	}
	return r.broadcastInputs(n, rank, n.Inputs)
}

// tfLayout returns n's spatial axes and the index (0 or 1) of the rule's
// axis among them; it fails when the rule's axis is not spatial.
func (r *SpatialRule) tfLayout(n *Node) (h, w, k int, err error) {
	h, w, err = TFSpatialAxes(n)
	if err != nil {
		return 0, 0, 0, err
	}
	switch r.Axis {
	case h:
		return h, w, 0, nil
	case w:
		return h, w, 1, nil
	}
	return 0, 0, 0, notSpatial(n, "axis %d is not a spatial axis of data_format %q", r.Axis, n.AttrString("data_format", "NHWC"))
}

// tfList returns the 4-element attribute list name (all ones when absent
// and def is true).
func tfList(n *Node, name string, def bool) ([]int64, error) {
	v, ok := n.AttrInts(name)
	if !ok && def {
		return []int64{1, 1, 1, 1}, nil
	}
	if len(v) != 4 {
		return nil, notSpatial(n, "%s %v is not a list of 4", name, v)
	}
	return v, nil
}

// tfWindow fills the rule of a TensorFlow convolution or pool.
func (r *SpatialRule) tfWindow(n *Node, out []int64) error {
	in := dimsOf(n.Inputs[0])
	if len(in) != 4 || len(out) != 4 {
		return notSpatial(n, "input rank %d, output rank %d (want 4)", len(in), len(out))
	}
	h, w, k, err := r.tfLayout(n)
	if err != nil {
		return err
	}
	r.InSize = in[r.Axis]
	r.Inputs = []SpatialInput{{0, r.Axis}}
	strides, err := tfList(n, "strides", false)
	if err != nil {
		return err
	}
	dil, err := tfList(n, "dilations", true)
	if err != nil {
		return err
	}
	var kernel [2]int64
	pool := n.Op == "MaxPool" || n.Op == "AvgPool"
	if pool {
		ks, err := tfList(n, "ksize", false)
		if err != nil {
			return err
		}
		kernel = [2]int64{ks[h], ks[w]}
		dil = []int64{1, 1, 1, 1}
	} else {
		if len(n.Inputs) < 2 || n.Inputs[1] == nil {
			return notSpatial(n, "no filter")
		}
		f := dimsOf(n.Inputs[1])
		if len(f) != 4 {
			return notSpatial(n, "filter of rank %d", len(f))
		}
		kernel = [2]int64{f[0], f[1]} // HWIO (HWCM for depthwise) in either data_format
		if err := r.tfFused(n, len(out)); err != nil {
			return err
		}
	}
	padding := n.AttrString("padding", "")
	if pool && padding == "EXPLICIT" {
		return notSpatial(n, "explicit padding of a pool (TensorFlow.js does not support it)")
	}
	pads := make([]int64, 2*len(in))
	for i, ax := range []int{h, w} {
		ext := (kernel[i]-1)*dil[ax] + 1
		switch padding {
		case "VALID":
		case "SAME":
			total := max((out[ax]-1)*strides[ax]+ext-in[ax], 0)
			pads[2*ax], pads[2*ax+1] = total/2, total-total/2
		case "EXPLICIT":
			ep, ok := n.AttrInts("explicit_paddings")
			if !ok || len(ep) != 2*len(in) {
				return notSpatial(n, "explicit_paddings %v for rank %d", ep, len(in))
			}
			pads[2*ax], pads[2*ax+1] = ep[2*ax], ep[2*ax+1]
		default:
			return notSpatial(n, "padding %q", padding)
		}
	}
	for _, p := range pads {
		if p < 0 {
			return notSpatial(n, "negative pads %v", pads)
		}
	}
	r.Kernel, r.Stride, r.Dilation = kernel[k], strides[r.Axis], dil[r.Axis]
	r.PadBegin, r.PadEnd = pads[2*r.Axis], pads[2*r.Axis+1]
	r.Pads = pads
	if n.Op == "AvgPool" && padding == "SAME" && (r.PadBegin > 0 || r.PadEnd > 0 || r.Kernel > r.Stride) {
		// SAME average pooling divides by the count of the window's rows
		// inside the image: a band at the border cannot express that
		// (TensorFlow.js takes no explicit pads for pools), and one with
		// a window wider than its stride would pad on its own.
		return notSpatial(n, "SAME average pooling pads along axis %d (its divisor excludes the padding)", r.Axis)
	}
	return r.checkWindowSize(n)
}

// tfFused checks the extra arguments and fused ops of a fused
// convolution: per-channel arguments and activations only.
func (r *SpatialRule) tfFused(n *Node, rank int) error {
	if n.Op != "_FusedConv2D" && n.Op != "FusedDepthwiseConv2dNative" && n.Op != "_FusedDepthwiseConv2dNative" {
		return nil
	}
	if a := n.Attr("fused_ops"); a != nil {
		if a.Kind != AttrStrings && !(a.Kind == AttrInts && len(a.Ints) == 0) {
			return notSpatial(n, "fused_ops is not a list of strings")
		}
		for _, op := range a.Strs {
			if !slices.Contains(tfFusedActivations, string(op)) {
				return notSpatial(n, "fused op %q", op)
			}
		}
	}
	for _, v := range n.Inputs[2:] {
		if v == nil {
			continue
		}
		d, ok := v.Type.Dims()
		if !ok {
			return notSpatial(n, "argument %s has no static shape", v)
		}
		if ax := r.Axis - (rank - len(d)); ax >= 0 && d[ax] != 1 {
			return notSpatial(n, "argument %s varies along axis %d", v, r.Axis)
		}
	}
	return nil
}

// tfPad fills the rule of Pad, PadV2 and MirrorPad: constant padding is a
// window of one row with the node's pads; MirrorPad reflects rows whose
// position depends on the image size, so it is local only where it does
// not pad along the axis.
func (r *SpatialRule) tfPad(n *Node, out []int64) error {
	in := dimsOf(n.Inputs[0])
	rank := len(in)
	if rank != len(out) || r.Axis >= rank {
		return notSpatial(n, "input rank %d, output rank %d", rank, len(out))
	}
	t := ConstTensor(n.Inputs[1])
	if t == nil {
		return notSpatial(n, "paddings are not a constant")
	}
	pads, ok := t.Int64s()
	if !ok || len(pads) != 2*rank {
		return notSpatial(n, "paddings %v for rank %d", pads, rank)
	}
	r.InSize = in[r.Axis]
	r.Inputs = []SpatialInput{{0, r.Axis}}
	r.Kernel, r.Stride, r.Dilation = 1, 1, 1
	r.PadBegin, r.PadEnd = pads[2*r.Axis], pads[2*r.Axis+1]
	r.Pads = slices.Clone(pads)
	if r.PadBegin < 0 || r.PadEnd < 0 {
		return notSpatial(n, "negative paddings")
	}
	if n.Op == "MirrorPad" && (r.PadBegin > 0 || r.PadEnd > 0) {
		return notSpatial(n, "mirror padding along axis %d reads rows that depend on the image size", r.Axis)
	}
	return r.checkWindowSize(n)
}

// tfResize fills the rule of ResizeBilinear and ResizeNearestNeighbor:
// an integer upscaling by a power of two along the axis (TensorFlow.js
// computes a source coordinate as (o + ½)·in/out − ½ or o·in/out, exact
// on a band only when in/out is), without align_corners (whose scale
// depends on the image size).
func (r *SpatialRule) tfResize(n *Node, out []int64) error {
	r.Kind = SpatialUpsample
	in := dimsOf(n.Inputs[0])
	if len(in) != 4 || len(out) != 4 {
		return notSpatial(n, "input rank %d, output rank %d (want 4)", len(in), len(out))
	}
	// TensorFlow's resize ops are NHWC only.
	if r.Axis != 1 && r.Axis != 2 {
		return notSpatial(n, "axis %d is not a spatial axis of an NHWC image", r.Axis)
	}
	if in[0] != out[0] || in[3] != out[3] {
		return notSpatial(n, "scales the batch or the channels")
	}
	if n.AttrInt("align_corners", 0) != 0 {
		return notSpatial(n, "align_corners scales by (in−1)/(out−1), which depends on the image size")
	}
	r.InSize = in[r.Axis]
	r.Inputs = []SpatialInput{{0, r.Axis}}
	if r.InSize <= 0 || r.OutSize%r.InSize != 0 {
		return notSpatial(n, "extent %d → %d is not an integer upscaling", r.InSize, r.OutSize)
	}
	r.Factor = r.OutSize / r.InSize
	if r.Factor&(r.Factor-1) != 0 {
		return notSpatial(n, "factor %d (not a power of two) rounds the source coordinates differently on a band", r.Factor)
	}
	if t := ConstTensor(n.Inputs[1]); t == nil {
		return notSpatial(n, "size is not a constant")
	}
	half := n.AttrInt("half_pixel_centers", 0) != 0
	r.round = roundFloor
	switch {
	case n.Op == "ResizeBilinear" && half: // (o + ½)/F − ½
		r.coordOffset, r.Linear = 1-r.Factor, true
	case n.Op == "ResizeBilinear": // o/F
		r.coordOffset, r.Linear = 0, true
	case half: // ⌊(o + ½)/F⌋
		r.coordOffset = 1
	default: // ⌊o/F⌋
		r.coordOffset = 0
	}
	return nil
}

// TFBandPadding returns how a band of a TensorFlow window node with rule
// r reads its pads: "SAME" when TensorFlow's own SAME padding of the
// band's extents (in input rows, out output rows) gives the band's pads
// along the axis, the node's pads along the other axes being what SAME
// gives there too; "" otherwise (the band needs explicit pads).
func (r *SpatialRule) TFBandPadding(n *Node, bd SpatialBand) string {
	if n.AttrString("padding", "") != "SAME" {
		return ""
	}
	in, out := bd.Hi-bd.Lo, bd.OutHi-bd.OutLo
	if (in+r.Stride-1)/r.Stride != out {
		return ""
	}
	total := max((out-1)*r.Stride+(r.Kernel-1)*r.Dilation+1-in, 0)
	if total/2 != bd.PadBegin || total-total/2 != bd.PadEnd {
		return ""
	}
	return "SAME"
}

// tfCheckAxis reports an axis that a TensorFlow node cannot be banded
// along at all: the batch axis.
func tfCheckAxis(n *Node, axis, rank int) error {
	if axis < 1 || axis >= rank {
		return notSpatial(n, "axis %d is not a spatial axis of the rank-%d output", axis, rank)
	}
	return nil
}
