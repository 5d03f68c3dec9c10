package ir

import (
	"errors"
	"fmt"
	"slices"
)

// Spatial locality: which operators can run on a band of rows of an image
// (a slice along one spatial axis of an NCHW tensor) and give exactly the
// rows of the whole operator's output, and which input rows a band of
// output rows reads. passes/tile builds on it to split memory-heavy regions
// into bands that recompute their halos (patch-based inference, MCUNetV2,
// Lin et al., NeurIPS 2021).
//
// The facts are kept here, keyed by (domain, op) like the op table, so that
// tiling legality comes from the IR alone. The standard ONNX domain (NCHW)
// is covered here, TensorFlow ops (NHWC by default) in spatial_tf.go;
// other domains end a tileable region.

// SpatialKind is how an operator maps output rows to input rows along a
// spatial axis.
type SpatialKind uint8

const (
	// SpatialPoint: output row o reads row o of each banded input
	// (elementwise and activation ops, BatchNormalization in inference
	// form, Concat along another axis, Cast, Clip, Quantize/Dequantize,
	// LRN, Softmax along the channels).
	SpatialPoint SpatialKind = iota + 1
	// SpatialWindow: output row o reads rows o·Stride − PadBegin + k·Dilation,
	// k < Kernel (Conv, ConvInteger, QLinearConv, MaxPool, AveragePool,
	// LpPool, SpaceToDepth, and Pad in constant or edge mode with Kernel
	// 1). Rows outside the input are padding.
	SpatialWindow
	// SpatialTransposed: input row i contributes to output rows
	// i·Stride − PadBegin + k·Dilation, k < Kernel (ConvTranspose).
	SpatialTransposed
	// SpatialUpsample: output row o reads source row(s) of an integer
	// upscaling by Factor (Resize and Upsample in nearest mode, or in
	// linear mode with a power-of-two factor; DepthToSpace).
	SpatialUpsample
)

// SpatialRule is the receptive-field rule of one node along one spatial
// axis of its output: every fact a band rewrite needs, resolved from the
// node's attributes and static shapes.
type SpatialRule struct {
	Kind SpatialKind
	// Axis is the output axis (at least 2: N and C are never spatial).
	Axis int
	// OutSize is the output's extent along Axis, InSize that of the banded
	// inputs.
	OutSize, InSize int64
	// Inputs lists the input slots read band-wise, each with the axis of
	// that input that maps to Axis (inputs of lower rank broadcast from the
	// right). Every other present input is read whole by every band
	// (weights, biases, per-channel or per-tensor parameters, broadcast
	// operands of extent 1).
	Inputs []SpatialInput

	// Window and Transposed geometry along Axis: kernel extent, stride,
	// dilation and the explicit pads (auto_pad resolved). For Pad,
	// Kernel = Stride = Dilation = 1 and the pads are Pad's own (negative
	// ones crop).
	Kernel, Stride, Dilation int64
	PadBegin, PadEnd         int64
	// CeilMode is a pool's ceil_mode.
	CeilMode bool
	// OutputPadding is ConvTranspose's output_padding along Axis.
	OutputPadding int64
	// Pads holds the node's explicit pads for every spatial axis, in ONNX
	// order (all begins, then all ends), auto_pad resolved; nil for ops
	// without pads. A band writes these with Axis's entries replaced.
	Pads []int64

	// Upsample: the integer factor, the source row of a nearest output row
	// (before clamping) as num(o)/(2·Factor) rounded by the nearest mode,
	// or the two rows around it for linear mode.
	Factor int64
	Linear bool
	// coordOffset is c in x(o) = (2o + c)/(2·Factor); round is the nearest
	// mode.
	coordOffset int64
	round       roundMode
	// minOut and minIn are the fewest rows a band must produce (Conv) or
	// read (ConvTranspose); avoidIn, when not 0, is a count of input rows
	// a band must not read (see Band).
	minOut, minIn, avoidIn int64
}

// SpatialInput is one banded input: its slot in Node.Inputs and the axis of
// that input that follows the rule's axis.
type SpatialInput struct {
	Slot, Axis int
}

type roundMode uint8

const (
	roundPreferFloor roundMode = iota
	roundPreferCeil
	roundFloor
	roundCeil
)

// SpatialBand is how a node computes one band of output rows: the input
// rows it reads (clamped to the input), the pads it needs along the axis,
// and the output rows it then produces.
type SpatialBand struct {
	// Lo and Hi delimit the input rows [Lo, Hi) the band reads from each
	// banded input.
	Lo, Hi int64
	// PadBegin and PadEnd are the band node's pads along the axis: padding
	// only where the band touches the image border (a partial pad where
	// the window reaches past it), real neighbouring rows elsewhere. For
	// ConvTranspose they crop the band's output; for Pad they are its pads.
	PadBegin, PadEnd int64
	// OutputPadding is ConvTranspose's output_padding for the band.
	OutputPadding int64
	// OutLo and OutHi are the output rows [OutLo, OutHi) the band node
	// produces from those rows and pads, a superset of the rows asked for;
	// the rows asked for are exact (for SpatialUpsample only those: its
	// band clamps its sources at the band's edges).
	OutLo, OutHi int64
}

// ErrNotSpatial is wrapped by the errors Spatial returns for nodes that
// are not spatially local.
var ErrNotSpatial = errors.New("not spatially local")

func notSpatial(n *Node, format string, args ...any) error {
	return fmt.Errorf("%s (%s): %w: %s", n.String(), n.OpName(), ErrNotSpatial, fmt.Sprintf(format, args...))
}

// spatialPoint lists the ops of the standard domain, besides those flagged
// Elementwise in the op table, that map output row o to input row o.
var spatialPoint = map[string]bool{
	"BatchNormalization": true, "Concat": true, "QuantizeLinear": true, "DequantizeLinear": true,
	"LRN": true, "Softmax": true, "LogSoftmax": true, "Hardmax": true, "Identity": true,
}

// spatialOther lists the remaining ops with a spatial rule.
var spatialOther = map[string]SpatialKind{
	"Conv": SpatialWindow, "ConvInteger": SpatialWindow, "QLinearConv": SpatialWindow,
	"MaxPool": SpatialWindow, "AveragePool": SpatialWindow, "LpPool": SpatialWindow,
	"SpaceToDepth": SpatialWindow, "Pad": SpatialWindow, "Slice": SpatialWindow,
	"ConvTranspose": SpatialTransposed,
	"Resize":        SpatialUpsample, "Upsample": SpatialUpsample, "DepthToSpace": SpatialUpsample,
}

// SpatialOp reports whether the operator (domain, op) has a spatial rule at
// all; whether a particular node is local also depends on its attributes,
// shapes and axis (Spatial).
func SpatialOp(domain, op string) bool {
	if domain == TFDomain {
		return tfSpatialOp(op)
	}
	if domain != "" && domain != "ai.onnx" {
		return false
	}
	if spatialPoint[op] || spatialOther[op] != 0 {
		return true
	}
	info := LookupOp(domain, op)
	return info != nil && info.Flags&Elementwise != 0 && info.Flags&(Random|Stateful) == 0
}

// Spatial returns n's rule along output axis axis, or an error wrapping
// ErrNotSpatial that says why the node cannot be computed band-wise: an op
// without a rule (it sees the whole tensor: global pools, reductions,
// normalisations over spatial axes, Reshape, Transpose, MatMul, …), an
// attribute that makes it depend on the image size (Resize with
// align_corners, Pad in reflect mode), an output that is not local
// (MaxPool's indices when read), or shapes that are not static. It reads
// only n, its values' types and constant inputs.
func Spatial(n *Node, axis int) (*SpatialRule, error) {
	if !SpatialOp(n.Domain, n.Op) {
		return nil, notSpatial(n, "the op has no spatial rule (it reads whole tensors)")
	}
	if len(n.Subgraphs()) > 0 {
		return nil, notSpatial(n, "the node has subgraphs")
	}
	if len(n.Outputs) == 0 || n.Outputs[0] == nil {
		return nil, notSpatial(n, "the node has no first output")
	}
	for i, o := range n.Outputs[1:] {
		if o != nil && (len(o.Uses) > 0 || isGraphOutput(o)) {
			return nil, notSpatial(n, "output %d (%s) is read", i+1, o)
		}
	}
	out, ok := n.Outputs[0].Type.Dims()
	if !ok {
		return nil, notSpatial(n, "output %s has no static shape (%s)", n.Outputs[0], n.Outputs[0].Type)
	}
	if n.Domain == TFDomain {
		// Layouts differ (NHWC, NCHW): the window ops check their axis.
		if err := tfCheckAxis(n, axis, len(out)); err != nil {
			return nil, err
		}
	} else if axis < 2 || axis >= len(out) {
		return nil, notSpatial(n, "axis %d is not a spatial axis of the rank-%d output", axis, len(out))
	}
	for _, v := range n.Inputs {
		if v != nil && !v.Type.Static() {
			return nil, notSpatial(n, "input %s has no static shape (%s)", v, v.Type)
		}
	}
	r := &SpatialRule{Axis: axis, OutSize: out[axis]}
	var err error
	switch {
	case n.Domain == TFDomain:
		err = r.tf(n, out)
	case spatialOther[n.Op] == SpatialWindow:
		err = r.window(n, out)
	case spatialOther[n.Op] == SpatialTransposed:
		err = r.transposed(n, out)
	case spatialOther[n.Op] == SpatialUpsample:
		err = r.upsample(n, out)
	default:
		err = r.point(n, out)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func isGraphOutput(v *Value) bool {
	return v.Graph != nil && slices.Contains(v.Graph.Outputs, v)
}

func dimsOf(v *Value) []int64 {
	d, _ := v.Type.Dims()
	return d
}

// point fills the rule of a SpatialPoint op: which inputs are banded.
func (r *SpatialRule) point(n *Node, out []int64) error {
	r.Kind = SpatialPoint
	rank := len(out)
	switch n.Op {
	case "BatchNormalization":
		if n.AttrInt("training_mode", 0) != 0 {
			return notSpatial(n, "training mode computes batch statistics")
		}
		if a := n.Attr("spatial"); a != nil && a.Int == 0 {
			return notSpatial(n, "spatial=0 normalises per position")
		}
		r.InSize = r.OutSize
		r.Inputs = []SpatialInput{{0, r.Axis}}
		return r.checkBanded(n)
	case "QuantizeLinear", "DequantizeLinear":
		if n.AttrInt("block_size", 0) != 0 {
			return notSpatial(n, "blocked quantization has per-block parameters")
		}
		for _, v := range n.Inputs[1:] {
			if v == nil {
				continue
			}
			d := dimsOf(v)
			if len(d) > 1 {
				return notSpatial(n, "parameter %s has rank %d", v, len(d))
			}
			if len(d) == 1 && d[0] != 1 {
				ax := n.AttrInt("axis", 1)
				if ax < 0 {
					ax += int64(rank)
				}
				if ax == int64(r.Axis) {
					return notSpatial(n, "per-axis parameters along axis %d", ax)
				}
			}
		}
		r.InSize = r.OutSize
		r.Inputs = []SpatialInput{{0, r.Axis}}
		return r.checkBanded(n)
	case "Concat":
		ax := n.AttrInt("axis", 0)
		if ax < 0 {
			ax += int64(rank)
		}
		if ax == int64(r.Axis) {
			return notSpatial(n, "concatenates along axis %d", ax)
		}
	case "Softmax", "LogSoftmax", "Hardmax":
		ax := n.AttrInt("axis", -1)
		if n.Graph != nil && n.Graph.Opset("") < 13 {
			ax = n.AttrInt("axis", 1)
		}
		if ax < 0 {
			ax += int64(rank)
		}
		if n.Graph != nil && n.Graph.Opset("") < 13 {
			// Before opset 13 the input is flattened to 2-D at axis: the
			// op normalises over every axis from axis on.
			if int64(r.Axis) >= ax {
				return notSpatial(n, "normalises over axes %d and up (opset < 13)", ax)
			}
		} else if ax == int64(r.Axis) {
			return notSpatial(n, "normalises along axis %d", ax)
		}
	case "LRN":
		if rank != 4 {
			return notSpatial(n, "LRN on a rank-%d tensor", rank)
		}
	}
	// Elementwise (multidirectional broadcast from the right), Concat,
	// Softmax along channels, LRN, Identity.
	r.InSize = r.OutSize
	return r.broadcastInputs(n, rank, n.Inputs)
}

// broadcastInputs fills the banded inputs of a pointwise op from ins (a
// prefix of n's inputs), which broadcast from the right: an input with
// the output's extent along the axis is banded, one of extent 1 (or of
// lower rank) is read whole.
func (r *SpatialRule) broadcastInputs(n *Node, rank int, ins []*Value) error {
	for i, v := range ins {
		if v == nil {
			continue
		}
		d := dimsOf(v)
		ax := r.Axis - (rank - len(d))
		switch {
		case ax < 0 || (d[ax] == 1 && r.OutSize != 1):
			// broadcast along the axis: read whole
		case d[ax] == r.OutSize:
			r.Inputs = append(r.Inputs, SpatialInput{i, ax})
		default:
			return notSpatial(n, "input %s has extent %d along the axis, the output %d", v, d[ax], r.OutSize)
		}
	}
	if len(r.Inputs) == 0 {
		return notSpatial(n, "no input varies along axis %d", r.Axis)
	}
	return nil
}

// checkBanded checks that the banded inputs have the output's extent.
func (r *SpatialRule) checkBanded(n *Node) error {
	for _, in := range r.Inputs {
		v := n.Inputs[in.Slot]
		if v == nil {
			return notSpatial(n, "input %d is absent", in.Slot)
		}
		d := dimsOf(v)
		if in.Axis >= len(d) || d[in.Axis] != r.InSize {
			return notSpatial(n, "input %s does not match the rule's extent %d", v, r.InSize)
		}
	}
	return nil
}

// convLike returns the data and weight slots of a convolution.
func convLike(op string) (x, w int) {
	if op == "QLinearConv" {
		return 0, 3
	}
	return 0, 1
}

// window fills the rule of a SpatialWindow op.
func (r *SpatialRule) window(n *Node, out []int64) error {
	r.Kind = SpatialWindow
	in := dimsOf(n.Inputs[0])
	if len(in) != len(out) {
		return notSpatial(n, "input rank %d, output rank %d", len(in), len(out))
	}
	r.InSize = in[r.Axis]
	r.Inputs = []SpatialInput{{0, r.Axis}}
	nd := len(in) - 2
	k := r.Axis - 2
	switch n.Op {
	case "SpaceToDepth":
		b := n.AttrInt("blocksize", 0)
		if b <= 0 || len(in) != 4 {
			return notSpatial(n, "blocksize %d on rank %d", b, len(in))
		}
		r.Kernel, r.Stride, r.Dilation = b, b, 1
		return r.checkWindowSize(n)
	case "Pad":
		return r.pad(n, in, out)
	case "Slice":
		return r.slice(n, in)
	}
	var kernel []int64
	switch n.Op {
	case "Conv", "ConvInteger", "QLinearConv":
		_, w := convLike(n.Op)
		if w >= len(n.Inputs) || n.Inputs[w] == nil {
			return notSpatial(n, "no weights")
		}
		wd := dimsOf(n.Inputs[w])
		if len(wd) != len(in) {
			return notSpatial(n, "weights of rank %d", len(wd))
		}
		kernel = wd[2:]
	default: // pools
		ks, ok := n.AttrInts("kernel_shape")
		if !ok || len(ks) != nd {
			return notSpatial(n, "kernel_shape %v for %d spatial axes", ks, nd)
		}
		kernel = ks
		r.CeilMode = n.AttrInt("ceil_mode", 0) != 0
	}
	if ks, ok := n.AttrInts("kernel_shape"); ok && !slices.Equal(ks, kernel) {
		return notSpatial(n, "kernel_shape %v disagrees with the weights %v", ks, kernel)
	}
	strides, dil, err := stridesDilations(n, nd)
	if err != nil {
		return err
	}
	pads, err := resolvePads(n, in[2:], out[2:], kernel, strides, dil)
	if err != nil {
		return err
	}
	if r.CeilMode {
		for i := range nd {
			span := in[2+i] + pads[i] + pads[i+nd] - (kernel[i]-1)*dil[i] - 1
			if c := -floorDiv(-span, strides[i]) + 1; span >= 0 && (c-1)*strides[i] >= in[2+i]+pads[i] {
				// Measured: ONNX Runtime 1.30's shape inference keeps such a
				// window and its kernel drops it, so the planner sizes
				// buffers wrongly; in a tiled graph it then reused a
				// buffer of another band's shape and the run failed
				// ("Shape mismatch attempting to re-use buffer").
				return notSpatial(n, "ceil_mode drops a last window that starts in the padding along axis %d, which ONNX Runtime's shape inference does not", i+2)
			}
		}
	}
	r.Kernel, r.Stride, r.Dilation = kernel[k], strides[k], dil[k]
	r.Pads = pads
	if n.Op == "Conv" && n.Inputs[0].Type.DType == Float32 {
		w := dimsOf(n.Inputs[1])
		other := prod(out[2:]) / out[r.Axis]
		r.minOut = (mlasMinPositions(prod(out[2:]), prod(w[1:])) + other - 1) / other // see Band
		// MLAS runs a one-channel-per-group 2-D Conv without padding,
		// stride or dilation as a plain GEMM when the kernel spans the
		// input's whole width (or its whole height, one column wide):
		// another summation order. A band must not make its input that
		// narrow where the whole op's is not (measured: a 3×3 depthwise
		// Conv whose column band was 3 wide changed 184 of 640 outputs).
		allOne := func(v []int64) bool {
			for _, x := range v {
				if x != 1 {
					return false
				}
			}
			return true
		}
		zero := true
		for _, p := range pads {
			zero = zero && p == 0
		}
		if nd == 2 && w[1] == 1 && allOne(strides) && allOne(dil) && zero &&
			(r.Axis == 3 || (r.Axis == 2 && kernel[1] == 1)) && in[r.Axis] != kernel[k] {
			r.avoidIn = kernel[k]
		}
	}
	r.PadBegin, r.PadEnd = pads[k], pads[k+nd]
	return r.checkWindowSize(n)
}

// checkWindowSize checks the output extent against the window geometry
// (floor, or ceil with ONNX Runtime's rule that drops a last window
// starting past the input and its begin padding).
func (r *SpatialRule) checkWindowSize(n *Node) error {
	if r.Kernel <= 0 || r.Stride <= 0 || r.Dilation <= 0 {
		return notSpatial(n, "kernel %d, stride %d, dilation %d", r.Kernel, r.Stride, r.Dilation)
	}
	if got := r.windowCount(r.InSize+r.PadBegin, r.PadEnd); got != r.OutSize {
		return notSpatial(n, "output extent %d, the window geometry gives %d", r.OutSize, got)
	}
	return nil
}

// windowCount is the number of windows over length rows (input rows plus
// begin padding) with end padding pe.
func (r *SpatialRule) windowCount(length, pe int64) int64 {
	ext := (r.Kernel-1)*r.Dilation + 1
	span := length + pe - ext
	if span < 0 {
		return 0
	}
	if !r.CeilMode {
		return span/r.Stride + 1
	}
	c := -floorDiv(-span, r.Stride) + 1
	if (c-1)*r.Stride >= length {
		c--
	}
	return c
}

func stridesDilations(n *Node, nd int) (strides, dil []int64, err error) {
	ones := func(name string) ([]int64, error) {
		v, ok := n.AttrInts(name)
		if !ok {
			v = make([]int64, nd)
			for i := range v {
				v[i] = 1
			}
			return v, nil
		}
		if len(v) != nd {
			return nil, notSpatial(n, "%s %v for %d spatial axes", name, v, nd)
		}
		return v, nil
	}
	if strides, err = ones("strides"); err != nil {
		return nil, nil, err
	}
	if dil, err = ones("dilations"); err != nil {
		return nil, nil, err
	}
	return strides, dil, nil
}

// resolvePads returns the explicit pads of a Conv or pool, auto_pad
// resolved from the shapes as ONNX defines it.
func resolvePads(n *Node, in, out, kernel, strides, dil []int64) ([]int64, error) {
	nd := len(in)
	pads := make([]int64, 2*nd)
	switch mode := n.AttrString("auto_pad", "NOTSET"); mode {
	case "NOTSET", "":
		if p, ok := n.AttrInts("pads"); ok {
			if len(p) != 2*nd {
				return nil, notSpatial(n, "pads %v for %d spatial axes", p, nd)
			}
			copy(pads, p)
		}
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := range nd {
			total := max(0, (out[i]-1)*strides[i]+(kernel[i]-1)*dil[i]+1-in[i])
			small, big := total/2, total-total/2
			if mode == "SAME_UPPER" {
				pads[i], pads[i+nd] = small, big
			} else {
				pads[i], pads[i+nd] = big, small
			}
		}
	default:
		return nil, notSpatial(n, "auto_pad %q", mode)
	}
	for _, p := range pads {
		if p < 0 {
			return nil, notSpatial(n, "negative pads %v", pads)
		}
	}
	return pads, nil
}

// pad fills the rule of Pad in constant or edge mode.
func (r *SpatialRule) pad(n *Node, in, out []int64) error {
	mode := n.AttrString("mode", "constant")
	if mode != "constant" && mode != "edge" {
		return notSpatial(n, "mode %q reads rows that depend on the image size", mode)
	}
	rank := len(in)
	var pads []int64
	if p, ok := n.AttrInts("pads"); ok && len(n.Inputs) < 2 {
		pads = p
	} else {
		t := ConstTensor(n.Inputs[1])
		if len(n.Inputs) < 2 || t == nil {
			return notSpatial(n, "pads are not a constant")
		}
		p, ok := t.Int64s()
		if !ok {
			return notSpatial(n, "pads are not integers")
		}
		pads = p
		if len(n.Inputs) > 3 && n.Inputs[3] != nil {
			t := ConstTensor(n.Inputs[3])
			if t == nil {
				return notSpatial(n, "axes are not a constant")
			}
			axes, ok := t.Int64s()
			if !ok || len(pads) != 2*len(axes) {
				return notSpatial(n, "axes %v with pads %v", axes, pads)
			}
			full := make([]int64, 2*rank)
			for j, a := range axes {
				if a < 0 {
					a += int64(rank)
				}
				if a < 0 || a >= int64(rank) {
					return notSpatial(n, "axis %d out of range", a)
				}
				full[a], full[int64(rank)+a] = pads[j], pads[len(axes)+j]
			}
			pads = full
		}
	}
	if len(pads) != 2*rank {
		return notSpatial(n, "pads %v for rank %d", pads, rank)
	}
	r.Kernel, r.Stride, r.Dilation = 1, 1, 1
	r.PadBegin, r.PadEnd = pads[r.Axis], pads[rank+r.Axis]
	r.Pads = slices.Clone(pads)
	if r.InSize+r.PadBegin+r.PadEnd != r.OutSize {
		return notSpatial(n, "output extent %d, pads give %d", r.OutSize, r.InSize+r.PadBegin+r.PadEnd)
	}
	if mode == "edge" && (r.PadBegin < 0 || r.PadEnd < 0) {
		return notSpatial(n, "edge mode with negative pads")
	}
	return nil
}

// SliceParams returns a Slice node's constant starts, ends, axes and
// steps, each with one entry per sliced axis (axes normalised to
// non-negative; missing axes and steps defaulted), from its inputs
// (opset 10 and up) or attributes.
func SliceParams(n *Node, rank int) (starts, ends, axes, steps []int64, err error) {
	get := func(slot int, attr string) ([]int64, bool, error) {
		if len(n.Inputs) == 1 {
			v, ok := n.AttrInts(attr)
			return v, ok, nil
		}
		if slot >= len(n.Inputs) || n.Inputs[slot] == nil {
			return nil, false, nil
		}
		t := ConstTensor(n.Inputs[slot])
		if t == nil {
			return nil, false, notSpatial(n, "%s are not a constant", attr)
		}
		d, ok := t.Int64s()
		if !ok {
			return nil, false, notSpatial(n, "%s are not integers", attr)
		}
		return d, true, nil
	}
	var ok bool
	if starts, _, err = get(1, "starts"); err != nil {
		return
	}
	if ends, _, err = get(2, "ends"); err != nil {
		return
	}
	if axes, ok, err = get(3, "axes"); err != nil {
		return
	}
	if !ok {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if steps, ok, err = get(4, "steps"); err != nil {
		return
	}
	if !ok {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, nil, nil, nil, notSpatial(n, "starts %v, ends %v, axes %v, steps %v", starts, ends, axes, steps)
	}
	axes = slices.Clone(axes)
	for i, a := range axes {
		if a < 0 {
			axes[i] += int64(rank)
		}
		if axes[i] < 0 || axes[i] >= int64(rank) {
			return nil, nil, nil, nil, notSpatial(n, "axis %d out of range", a)
		}
	}
	return starts, ends, axes, steps, nil
}

// slice fills the rule of Slice: pointwise when it does not slice the
// axis, a crop (a window of one row with stride step) when it does with a
// positive step.
func (r *SpatialRule) slice(n *Node, in []int64) error {
	starts, ends, axes, steps, err := SliceParams(n, len(in))
	if err != nil {
		return err
	}
	r.Kernel, r.Stride, r.Dilation = 1, 1, 1
	j := slices.Index(axes, int64(r.Axis))
	if j < 0 {
		r.Kind = SpatialPoint
		return nil
	}
	if steps[j] <= 0 {
		return notSpatial(n, "step %d along the axis", steps[j])
	}
	clamp := func(v int64) int64 {
		if v < 0 {
			v += r.InSize
		}
		return min(max(v, 0), r.InSize)
	}
	start, end := clamp(starts[j]), clamp(ends[j])
	if end <= start {
		return notSpatial(n, "an empty slice along the axis")
	}
	r.Stride = steps[j]
	r.PadBegin = -start
	r.PadEnd = (r.OutSize-1)*r.Stride + 1 - r.InSize + start
	return r.checkWindowSize(n)
}

// transposed fills the rule of ConvTranspose.
func (r *SpatialRule) transposed(n *Node, out []int64) error {
	r.Kind = SpatialTransposed
	if len(n.Inputs) < 2 || n.Inputs[1] == nil {
		return notSpatial(n, "no weights")
	}
	in, wd := dimsOf(n.Inputs[0]), dimsOf(n.Inputs[1])
	if len(in) != len(out) || len(wd) != len(in) {
		return notSpatial(n, "ranks %d, %d, %d", len(in), len(wd), len(out))
	}
	if _, ok := n.AttrInts("output_shape"); ok {
		return notSpatial(n, "output_shape is given (its implied pads are left to the runtime)")
	}
	if m := n.AttrString("auto_pad", "NOTSET"); m != "NOTSET" && m != "" {
		return notSpatial(n, "auto_pad %q", m)
	}
	nd := len(in) - 2
	k := r.Axis - 2
	strides, dil, err := stridesDilations(n, nd)
	if err != nil {
		return err
	}
	pads := make([]int64, 2*nd)
	if p, ok := n.AttrInts("pads"); ok {
		if len(p) != 2*nd {
			return notSpatial(n, "pads %v", p)
		}
		copy(pads, p)
	}
	op := make([]int64, nd)
	if p, ok := n.AttrInts("output_padding"); ok {
		if len(p) != nd {
			return notSpatial(n, "output_padding %v", p)
		}
		copy(op, p)
	}
	r.InSize = in[r.Axis]
	r.Inputs = []SpatialInput{{0, r.Axis}}
	r.Kernel, r.Stride, r.Dilation = wd[2+k], strides[k], dil[k]
	r.PadBegin, r.PadEnd, r.OutputPadding = pads[k], pads[k+nd], op[k]
	r.Pads = pads
	if n.Inputs[0].Type.DType == Float32 {
		other := prod(in[2:]) / in[r.Axis]
		group := max(1, n.AttrInt("group", 1))
		r.minIn = (mlasMinPositions(prod(in[2:]), in[1]/group) + other - 1) / other // see Band
	}
	if r.Kernel <= 0 || r.Stride <= 0 || r.Dilation <= 0 || r.PadBegin < 0 || r.PadEnd < 0 || r.OutputPadding < 0 {
		return notSpatial(n, "kernel %d, stride %d, dilation %d, pads %d/%d", r.Kernel, r.Stride, r.Dilation, r.PadBegin, r.PadEnd)
	}
	if (r.Kernel-1)*r.Dilation+1 < r.Stride {
		return notSpatial(n, "the kernel (extent %d) leaves gaps between stride-%d steps", (r.Kernel-1)*r.Dilation+1, r.Stride)
	}
	want := (r.InSize-1)*r.Stride + (r.Kernel-1)*r.Dilation + 1 + r.OutputPadding - r.PadBegin - r.PadEnd
	if want != r.OutSize {
		return notSpatial(n, "output extent %d, the geometry gives %d", r.OutSize, want)
	}
	return nil
}

// upsample fills the rule of Resize, Upsample and DepthToSpace.
func (r *SpatialRule) upsample(n *Node, out []int64) error {
	r.Kind = SpatialUpsample
	in := dimsOf(n.Inputs[0])
	if len(in) != len(out) {
		return notSpatial(n, "input rank %d, output rank %d", len(in), len(out))
	}
	r.InSize = in[r.Axis]
	r.Inputs = []SpatialInput{{0, r.Axis}}
	if n.Op == "DepthToSpace" {
		b := n.AttrInt("blocksize", 0)
		if b <= 0 || len(in) != 4 || r.OutSize != b*r.InSize {
			return notSpatial(n, "blocksize %d", b)
		}
		r.Factor, r.coordOffset, r.round = b, 0, roundFloor
		return nil
	}
	// Every axis but the banded one may scale as it likes; the banded one
	// must be an integer upscaling, and N and C must not scale.
	for i := range in {
		if i < 2 && in[i] != out[i] {
			return notSpatial(n, "scales axis %d", i)
		}
	}
	if in[r.Axis] <= 0 || out[r.Axis]%in[r.Axis] != 0 {
		return notSpatial(n, "extent %d → %d is not an integer upscaling", in[r.Axis], out[r.Axis])
	}
	r.Factor = out[r.Axis] / in[r.Axis]
	if err := r.checkScale(n, len(in)); err != nil {
		return err
	}
	mode := n.AttrString("mode", "nearest")
	coord := n.AttrString("coordinate_transformation_mode", "half_pixel")
	nearest := n.AttrString("nearest_mode", "round_prefer_floor")
	if n.Op == "Upsample" || (n.Op == "Resize" && n.Graph != nil && n.Graph.Opset("") < 11) {
		// Upsample and Resize-10 use asymmetric coordinates; their nearest
		// rounding is floor (ONNX Runtime's "simple" mode when upscaling).
		coord, nearest = "asymmetric", "floor"
	}
	if n.AttrInt("antialias", 0) != 0 {
		return notSpatial(n, "antialias")
	}
	if p := n.AttrString("keep_aspect_ratio_policy", "stretch"); p != "stretch" {
		return notSpatial(n, "keep_aspect_ratio_policy %q", p)
	}
	switch coord {
	case "half_pixel", "pytorch_half_pixel":
		r.coordOffset = 1 - r.Factor
	case "asymmetric":
		r.coordOffset = 0
	case "tf_half_pixel_for_nn":
		r.coordOffset = 1
	default:
		return notSpatial(n, "coordinate_transformation_mode %q depends on the image size", coord)
	}
	switch mode {
	case "nearest":
		switch nearest {
		case "round_prefer_floor":
			r.round = roundPreferFloor
		case "round_prefer_ceil":
			r.round = roundPreferCeil
		case "floor":
			r.round = roundFloor
		case "ceil":
			r.round = roundCeil
		default:
			return notSpatial(n, "nearest_mode %q", nearest)
		}
	case "linear", "bilinear":
		// The weights come from the fractional source coordinate, which a
		// band computes from smaller numbers: exact only when dividing by
		// the factor is exact in floating point.
		if r.Factor&(r.Factor-1) != 0 {
			return notSpatial(n, "linear mode with factor %d (not a power of two) rounds differently on a band", r.Factor)
		}
		r.Linear = true
	default:
		return notSpatial(n, "mode %q", mode)
	}
	return nil
}

// checkScale checks that the node's scales (or sizes) are constants that
// give the banded axis its integer factor, so that a band can keep them
// (scales) or get its own (sizes).
func (r *SpatialRule) checkScale(n *Node, rank int) error {
	if n.Op == "Upsample" {
		if s, ok := n.AttrFloats("scales"); ok {
			if len(s) != rank || float64(s[r.Axis]) != float64(r.Factor) {
				return notSpatial(n, "scales %v", s)
			}
			return nil
		}
	}
	if n.Attr("axes") != nil {
		return notSpatial(n, "the axes attribute is not supported")
	}
	// Resize-10 and Upsample-9: (X, scales); Resize-11+: (X, roi, scales, sizes).
	scaleSlot, sizeSlot := 2, 3
	if n.Op == "Upsample" || (n.Graph != nil && n.Graph.Opset("") < 11) {
		scaleSlot, sizeSlot = 1, -1
	}
	if sizeSlot >= 0 && sizeSlot < len(n.Inputs) && n.Inputs[sizeSlot] != nil && !emptyTensor(n.Inputs[sizeSlot]) {
		if ConstTensor(n.Inputs[sizeSlot]) == nil {
			return notSpatial(n, "sizes are not a constant")
		}
		return nil
	}
	var t *Tensor
	if scaleSlot < len(n.Inputs) {
		t = ConstTensor(n.Inputs[scaleSlot])
	}
	if t == nil {
		return notSpatial(n, "scales are not a constant")
	}
	s, ok := t.Float64s()
	if !ok || len(s) != rank || s[r.Axis] != float64(r.Factor) {
		return notSpatial(n, "scales %v do not give the integer factor %d", s, r.Factor)
	}
	return nil
}

// mlasKBlock is the block of the reduction depth k that MLAS's
// single-threaded SGEMM sums at a time for n output columns (ONNX Runtime
// 1.30; MlasSgemmOperation and MlasConvOperation adapt their strides,
// 128 columns × 128 depth, to the shape the same way): the partial sums of
// consecutive blocks are added, so the rounding depends on the block. k
// when one block holds all of it.
func mlasKBlock(n, k int64) int64 {
	sn, sk := int64(128), int64(128)
	if n >= k {
		for sk/2 >= k {
			sn, sk = sn*2, sk/2
		}
	} else {
		for sn > 16 && sn/2 >= n {
			sn, sk = sn/2, sk*2
		}
	}
	return min(sk, k)
}

// mlasMinPositions is the fewest output positions (GEMM columns) a band of
// a GEMM-based convolution with whole positions and reduction depth k may
// compute and still round as the whole op does: MLAS blocks the depth
// (mlasKBlock) by the column count, and it runs a GEMM with one column
// through another kernel. Measured at level disabled: a 3×3 Conv of 16
// channels on a 10×8 image (80 positions, depth 144: blocks of 128) cut
// into two bands of 40 positions (one block of 144) changed 2341 of 3840
// outputs by up to 2.9e-6; a 1×1 stride-2 Conv over a one-pixel-wide image
// cut into one-row bands changed 1 to 7 of 8; a ConvTranspose whose band
// reads one input pixel changed up to 29 of 48. Every band at least this
// large gave identical bits (ir/spatial.go's rules and passes/tile's tests).
func mlasMinPositions(whole, k int64) int64 {
	want := mlasKBlock(whole, k)
	best := whole
	// mlasKBlock only changes where n crosses 16, 32, 64 or k, and it
	// does not grow with n: the smallest breakpoint giving the same block
	// bounds every band.
	for _, c := range []int64{k, 65, 33, 17, 2} {
		if c >= 2 && c < best && mlasKBlock(c, k) == want {
			best = c
		}
	}
	return max(2, min(best, whole))
}

func prod(d []int64) int64 {
	p := int64(1)
	for _, x := range d {
		p *= x
	}
	return p
}

// ConstTensor returns the constant content of v: a parameter's data or a
// Constant node's value attribute; nil otherwise.
func ConstTensor(v *Value) *Tensor {
	if v == nil {
		return nil
	}
	if v.Data != nil {
		return v.Data
	}
	if d := v.Def; d != nil && d.Op == "Constant" && (d.Domain == "" || d.Domain == "ai.onnx") {
		if a := d.Attr("value"); a != nil && a.Kind == AttrTensor {
			return a.Tensor
		}
	}
	return nil
}

func emptyTensor(v *Value) bool {
	n, ok := v.Type.NumElements()
	return ok && n == 0
}

// windowBand is Band for a window op, starting at output row a.
func (r *SpatialRule) windowBand(a, b int64) SpatialBand {
	var bd SpatialBand
	ext := (r.Kernel-1)*r.Dilation + 1
	lo, hi := a*r.Stride-r.PadBegin, (b-1)*r.Stride-r.PadBegin+ext
	bd.Lo, bd.Hi = max(0, lo), min(r.InSize, hi)
	bd.PadBegin = bd.Lo - lo
	bd.PadEnd = hi - bd.Hi
	if b == r.OutSize && hi >= r.InSize {
		// The last rows, reaching the input's end: the node's own end
		// padding, so that ceil mode and a pool's divisor see the
		// geometry of the whole.
		bd.PadEnd = r.PadEnd
	}
	bd.OutLo = a
	bd.OutHi = a + r.windowCount(bd.Hi-bd.Lo+bd.PadBegin, bd.PadEnd)
	return bd
}

// transposedBand is Band for ConvTranspose, starting at output row a; ok
// is false when no input row contributes to [a, b).
func (r *SpatialRule) transposedBand(a, b int64) (bd SpatialBand, ok bool) {
	ext := (r.Kernel-1)*r.Dilation + 1
	lo := -floorDiv(-(a + r.PadBegin - ext + 1), r.Stride) // ⌈(a+pb−ext+1)/s⌉
	hi := floorDiv(b-1+r.PadBegin, r.Stride) + 1
	bd.Lo, bd.Hi = max(0, lo), min(r.InSize, hi)
	if bd.Lo >= bd.Hi {
		return bd, false
	}
	// Band output row j is global row j + Lo·s − pb': crop so that it
	// starts at a and ends at b.
	bd.PadBegin = a + r.PadBegin - bd.Lo*r.Stride
	full := (bd.Hi-bd.Lo-1)*r.Stride + ext
	bd.PadEnd = full - bd.PadBegin - (b - a)
	if bd.PadEnd < 0 {
		bd.OutputPadding, bd.PadEnd = -bd.PadEnd, 0
	}
	bd.OutLo, bd.OutHi = a, b
	return bd, bd.PadBegin >= 0
}

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// src returns the unclamped source row of an upsampled output row o, and
// for linear mode the row after it.
func (r *SpatialRule) src(o int64) (lo, hi int64) {
	num, den := 2*o+r.coordOffset, 2*r.Factor
	if r.Linear {
		f := floorDiv(num, den)
		return f, f + 1
	}
	var s int64
	switch r.round {
	case roundFloor:
		s = floorDiv(num, den)
	case roundCeil:
		s = -floorDiv(-num, den)
	case roundPreferFloor: // ⌈x − ½⌉
		s = -floorDiv(-(num - r.Factor), den)
	case roundPreferCeil: // ⌊x + ½⌋
		s = floorDiv(num+r.Factor, den)
	}
	return s, s
}

// Reads returns the input rows [lo, hi) that output rows [a, b) read,
// clamped to the input: the band's receptive field. It is Band's Lo and Hi.
func (r *SpatialRule) Reads(a, b int64) (lo, hi int64, err error) {
	bd, err := r.Band(a, b)
	return bd.Lo, bd.Hi, err
}

// Band returns how the node computes output rows [a, b): see SpatialBand.
// It fails when [a, b) is empty or outside the output, or when the band
// would read no input row (a band entirely inside a Pad's padding).
//
// A float Conv or ConvTranspose band is widened by neighbouring rows (and
// produces more rows than asked) when it is too small for ONNX Runtime's
// GEMM to sum the same way as for the whole op; see mlasMinPositions.
func (r *SpatialRule) Band(a, b int64) (SpatialBand, error) {
	if a < 0 || b > r.OutSize || a >= b {
		return SpatialBand{}, fmt.Errorf("output rows [%d,%d) outside [0,%d)", a, b, r.OutSize)
	}
	ea, eb := a, b
	for {
		bd, err := r.band(ea, eb)
		if err != nil {
			return bd, err
		}
		if r.BandOK(bd) || (ea == 0 && eb == r.OutSize) {
			if bd.OutLo > a || bd.OutHi < b {
				return SpatialBand{}, fmt.Errorf("internal: band for rows [%d,%d) produces [%d,%d)", a, b, bd.OutLo, bd.OutHi)
			}
			return bd, nil
		}
		if ea > 0 {
			ea--
		} else {
			eb++
		}
	}
}

// BandOK reports whether a band's geometry keeps the runtime's kernel on
// the same arithmetic as the whole op (see Band): false for a Conv band
// too small for ONNX Runtime's GEMM to sum as for the whole op, or one
// whose input MLAS would run through its whole-width GEMM.
func (r *SpatialRule) BandOK(bd SpatialBand) bool {
	in := bd.Hi - bd.Lo
	return bd.OutHi-bd.OutLo >= r.minOut && in >= r.minIn &&
		(r.avoidIn == 0 || in != r.avoidIn || bd.PadBegin != 0 || bd.PadEnd != 0)
}

// band is Band without the widening of bands that BandOK rejects.
func (r *SpatialRule) band(a, b int64) (SpatialBand, error) {
	var bd SpatialBand
	switch r.Kind {
	case SpatialPoint:
		bd = SpatialBand{Lo: a, Hi: b, OutLo: a, OutHi: b}
	case SpatialWindow:
		// A last window of a ceil-mode pool may need fewer input rows than
		// the kernel spans; a band that short would be a malformed node,
		// so such a band starts earlier and produces more rows.
		for start := a; start >= 0; start-- {
			bd = r.windowBand(start, b)
			if bd.Lo < bd.Hi && bd.Hi-bd.Lo+bd.PadBegin+bd.PadEnd >= (r.Kernel-1)*r.Dilation+1 && bd.OutHi-bd.OutLo == b-start {
				break
			}
		}
		if bd.Lo >= bd.Hi {
			return SpatialBand{}, fmt.Errorf("output rows [%d,%d) read only padding", a, b)
		}
	case SpatialTransposed:
		// Rows in the output padding receive no input row: a band of
		// only those starts earlier.
		ok := false
		for start := a; start >= 0 && !ok; start-- {
			bd, ok = r.transposedBand(start, b)
		}
		if !ok {
			return SpatialBand{}, fmt.Errorf("output rows [%d,%d) receive no input row", a, b)
		}
	case SpatialUpsample:
		s0, _ := r.src(a)
		_, s1 := r.src(b - 1)
		lo := min(max(0, s0), floorDiv(a, r.Factor))
		hi := max(min(r.InSize, s1+1), -floorDiv(-b, r.Factor))
		bd.Lo, bd.Hi = max(0, lo), min(r.InSize, hi)
		bd.OutLo, bd.OutHi = bd.Lo*r.Factor, bd.Hi*r.Factor
	}
	return bd, nil
}
