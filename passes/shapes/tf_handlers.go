package shapes

import (
	"strings"

	"github.com/remat-compile/remat/ir"
)

// TensorFlow ops (the ir.TFDomain domain, as importers/graphdef makes them)
// have their own rules: their attributes, their layouts (data_format), and
// arguments that ONNX writes as attributes and TensorFlow as inputs (the
// axis of ConcatV2, the perm of Transpose, the reduction indices of Mean).
// The rules follow TensorFlow's shape functions (tensorflow/core/ops), and
// the element types TensorFlow gives; where TensorFlow.js, the runtime the
// project measures TensorFlow graphs in, differs it is said at the rule.
// TensorFlow.js has no 64-bit integers and runs int64 values as int32: the
// inference keeps TensorFlow's types, and the agreement test with tfjs
// compares them through that mapping (tfjsDType in the test).
//
// Every value is a tensor; Shape, Size, Rank and the integer arithmetic that
// graphs compute on shape vectors (StridedSlice, Pack, ConcatV2, GatherV2,
// Range, Prod, Fill, Reshape, Cast, the elementwise ops) fold on the side as
// the ONNX rules do (consts.go), so that a Reshape or a
// Conv2DBackpropInput whose sizes the graph computes gets static sizes.

// tfHandler returns the inference function of a TensorFlow op, or nil for
// an op the pass has no rule for (its outputs then take the types the file
// declares in _output_shapes, or the user's overrides).
func tfHandler(op string) func(*nctx) {
	switch op {
	// Elementwise.
	case "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Elu",
		"Erf", "Exp", "Expm1", "Floor", "LeakyRelu", "Log", "Log1p", "Neg", "Reciprocal", "Relu",
		"Relu6", "Rint", "Round", "Rsqrt", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus",
		"Softsign", "Sqrt", "Square", "Tan", "Tanh", "Invert",
		"Identity", "Snapshot", "StopGradient", "PreventGradient", "CheckNumerics",
		"PlaceholderWithDefault", "Enter", "Exit", "NextIteration", "MatrixBandPart",
		"Cumsum", "Cumprod", "RandomShuffle", "FakeQuantWithMinMaxVars":
		return tfUnary
	case "Reverse", "ReverseV2":
		return tfReverse
	case "IsFinite", "IsInf", "IsNan", "LogicalNot":
		return tfToBool
	case "Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "DivNoNan", "FloorDiv", "FloorMod", "Mod",
		"TruncateDiv", "TruncateMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Atan2",
		"BitwiseAnd", "BitwiseOr", "BitwiseXor",
		"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", "LogicalAnd", "LogicalOr":
		return tfBinary
	case "AddN":
		return tfAddN
	case "BiasAdd":
		return tfBiasAdd
	case "Prelu":
		return inferPRelu // x and alpha broadcast, as ONNX's PRelu
	case "ClipByValue":
		return tfClip
	case "Select":
		return tfSelect
	case "SelectV2":
		return tfSelectV2
	case "Cast":
		return tfCast
	case "Complex", "ComplexAbs", "Real", "Imag":
		return tfComplex
	case "ZerosLike", "OnesLike":
		return tfFillLike
	case "Softmax", "LogSoftmax":
		return tfSoftmax
	case "LRN":
		return tfLRN
	case "IdentityN":
		return tfIdentityN
	case "Print":
		return tfPrint
	case "EnsureShape":
		return tfEnsureShape
	case "NoOp", "Assert":
		return func(*nctx) {}

	// Convolutions, pools, matrix products, normalisation, images.
	case "Conv2D", "_FusedConv2D", "Conv3D":
		return tfConv
	case "DepthwiseConv2dNative", "DepthwiseConv2d", "FusedDepthwiseConv2dNative", "_FusedDepthwiseConv2dNative":
		return tfDepthwiseConv
	case "Conv2DBackpropInput":
		return tfConvBackpropInput
	case "Conv2DBackpropFilter":
		return tfConvBackpropFilter
	case "Dilation2D":
		return tfDilation2D
	case "MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D", "MaxPoolWithArgmax":
		return tfPool
	case "MaxPoolV2":
		return tfPoolV2
	case "MatMul", "_FusedMatMul":
		return tfMatMul
	case "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3":
		return tfBatchMatMul
	case "Einsum":
		return inferEinsum // as ONNX's
	case "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3":
		return tfFusedBatchNorm
	case "ResizeBilinear", "ResizeNearestNeighbor":
		return tfResize
	case "CropAndResize":
		return tfCropAndResize
	case "DepthToSpace", "SpaceToDepth":
		return tfDepthSpace
	case "SpaceToBatchND":
		return tfSpaceToBatch
	case "BatchToSpaceND":
		return tfBatchToSpace
	case "ImageProjectiveTransformV3":
		return tfImageTransform

	// Reductions, scans, sorting.
	case "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "EuclideanNorm":
		return tfReduce
	case "ArgMax", "ArgMin":
		return tfArgMax
	case "TopKV2":
		return tfTopK
	case "LowerBound", "UpperBound":
		return tfBound
	case "Bincount", "DenseBincount":
		return tfBincount

	// Shapes and data movement.
	case "Shape":
		return tfShape
	case "ShapeN":
		return tfShapeN
	case "Size":
		return tfSize
	case "Rank":
		return tfRank
	case "Reshape":
		return tfReshape
	case "Squeeze":
		return tfSqueeze
	case "ExpandDims":
		return tfExpandDims
	case "Transpose":
		return tfTranspose
	case "ConcatV2", "Concat":
		return tfConcat
	case "Pack":
		return tfPack
	case "Unpack":
		return tfUnpack
	case "Split", "SplitV":
		return tfSplit
	case "Slice":
		return tfSlice
	case "StridedSlice":
		return tfStridedSlice
	case "Pad", "PadV2", "MirrorPad":
		return tfPad
	case "Tile":
		return inferTile // (input, multiples) as ONNX's (input, repeats)
	case "Gather", "GatherV2":
		return tfGather
	case "GatherNd":
		return tfGatherNd
	case "ScatterNd":
		return tfScatterNd
	case "TensorScatterUpdate":
		return tfTensorScatter
	case "SparseToDense":
		return tfSparseToDense
	case "OneHot":
		return tfOneHot
	case "Fill":
		return tfFill
	case "Range":
		return inferRange // as ONNX's
	case "LinSpace":
		return tfLinSpace
	case "BroadcastTo":
		return tfBroadcastTo
	case "BroadcastArgs":
		return tfBroadcastArgs

	// Data-dependent sizes.
	case "NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5":
		return tfNMS
	case "Where":
		return tfWhere
	case "Unique", "UniqueV2":
		return tfUnique
	case "ListDiff":
		return tfListDiff

	// v1 control flow.
	case "Switch":
		return tfSwitch
	case "Merge":
		return tfMerge
	case "LoopCond":
		return tfLoopCond

	// Random numbers.
	case "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt":
		return tfRandom
	case "Multinomial":
		return tfMultinomial
	}
	return nil
}

// tfDType reads a type attribute ("DT_FLOAT"); ok is false when it is
// absent, and an error is reported when it is malformed or a type the IR
// lacks.
func (c *nctx) tfDType(name string) (ir.DType, bool) {
	a := c.n.Attr(name)
	if a == nil {
		return ir.Undefined, false
	}
	if a.Kind != ir.AttrString {
		c.errf("attribute %s is of kind %s, want a type", name, a.Kind)
		return ir.Undefined, false
	}
	dt, ok := ir.TFDType(string(a.Str))
	if !ok {
		c.errf("attribute %s: element type %s is not supported", name, a.Str)
		return ir.Undefined, false
	}
	return dt, true
}

// tfDTypeOr is the element type of a TensorFlow type attribute, or def.
func (c *nctx) tfDTypeOr(name string, def ir.DType) ir.DType {
	if dt, ok := c.tfDType(name); ok {
		return dt
	}
	return def
}

// inDType is the element type of input i, or the type attribute attr when
// the input's is unknown. Inputs win: a TensorFlow.js model's integer
// constants are int32 whatever the attribute says (tfjs has no int64).
func (c *nctx) inDType(i int, attr string) ir.DType {
	if dt := c.dtype(i); dt.Valid() {
		return dt
	}
	if attr == "" {
		return ir.Undefined
	}
	return c.tfDTypeOr(attr, ir.Undefined)
}

// attrBool reads a TensorFlow bool attribute (an int 0 or 1 in the IR).
func (c *nctx) attrBool(name string, def bool) bool {
	d := int64(0)
	if def {
		d = 1
	}
	return c.attrInt(name, d) != 0
}

// layout says where the batch, channel and spatial axes of a tensor are.
type layout struct {
	channel int
	spatial []int
}

// tfLayout reads data_format (def when absent) for a tensor of rank r:
// NHWC-like formats (NWC, NHWC, NDHWC) put the channels last, NCHW-like
// ones (NCW, NCHW, NCDHW) second; the batch is first.
func (c *nctx) tfLayout(def string, r int) (layout, bool) {
	f := c.attrString("data_format", def)
	if f == "" {
		f = def
	}
	if len(f) != r || r < 3 || f[0] != 'N' {
		c.errf("data_format %q does not describe a tensor of rank %d (want one of NHWC, NCHW, NDHWC, NCDHW, NWC, NCW of that rank)", f, r)
		return layout{}, false
	}
	switch {
	case f[len(f)-1] == 'C' && !strings.Contains(f[1:len(f)-1], "C"):
		l := layout{channel: r - 1}
		for i := 1; i < r-1; i++ {
			l.spatial = append(l.spatial, i)
		}
		return l, true
	case f[1] == 'C':
		l := layout{channel: 1}
		for i := 2; i < r; i++ {
			l.spatial = append(l.spatial, i)
		}
		return l, true
	}
	c.errf("data_format %q is not supported (want NHWC-like or NCHW-like)", f)
	return layout{}, false
}

// tfLayoutRank is the rank data_format implies, or def's length.
func (c *nctx) tfLayoutRank(def string) int {
	f := c.attrString("data_format", def)
	if f == "" {
		f = def
	}
	return len(f)
}

// tfWindow reads the window attributes of a convolution or pool: strides,
// dilations (rates), ksize and explicit paddings are lists over every axis
// of the layout; the batch and channel entries must be 1 (0 for paddings).
// kernel gives the spatial kernel sizes when they come from a filter (-1
// unknown); nil reads ksize.
func (c *nctx) tfWindow(l layout, r int, kernel []int64, dilName string) (window, bool) {
	n := len(l.spatial)
	list := func(name string, def int64) ([]int64, bool) {
		v, ok := c.attrInts(name)
		if !ok || len(v) == 0 {
			out := make([]int64, n)
			for i := range out {
				out[i] = def
			}
			return out, true
		}
		if len(v) != r {
			c.errf("attribute %s has %d values, want %d (one per axis of %s)", name, len(v), r, c.attrString("data_format", "NHWC"))
			return nil, false
		}
		if v[0] != def || v[l.channel] != def {
			c.errf("attribute %s %v: the batch and channel entries must be %d", name, v, def)
			return nil, false
		}
		out := make([]int64, n)
		for i, a := range l.spatial {
			if v[a] < 1 {
				c.errf("attribute %s %v: entry %d must be at least 1", name, v, a)
				return nil, false
			}
			out[i] = v[a]
		}
		return out, true
	}
	w := window{kernel: kernel}
	var ok bool
	if w.kernel == nil {
		if !c.hasAttr("ksize") {
			c.errf("missing required attribute ksize")
			return w, false
		}
		if w.kernel, ok = list("ksize", 1); !ok {
			return w, false
		}
	}
	if w.strides, ok = list("strides", 1); !ok {
		return w, false
	}
	if dilName == "" {
		w.dilations = make([]int64, n)
		for i := range w.dilations {
			w.dilations[i] = 1
		}
	} else if w.dilations, ok = list(dilName, 1); !ok {
		return w, false
	}
	w.padsB, w.padsE = make([]int64, n), make([]int64, n)
	switch p := c.attrString("padding", ""); p {
	case "SAME":
		w.autoPad = "SAME_UPPER"
	case "VALID":
		w.autoPad = "VALID"
	case "EXPLICIT":
		w.autoPad = "NOTSET"
		v, _ := c.attrInts("explicit_paddings")
		if len(v) != 2*r {
			c.errf("padding EXPLICIT needs explicit_paddings with %d values (a pair per axis), has %d", 2*r, len(v))
			return w, false
		}
		if v[0] != 0 || v[1] != 0 || v[2*l.channel] != 0 || v[2*l.channel+1] != 0 {
			c.errf("explicit_paddings %v: the batch and channel pairs must be 0", v)
			return w, false
		}
		for i, a := range l.spatial {
			if v[2*a] < 0 || v[2*a+1] < 0 {
				c.errf("explicit_paddings %v: negative padding", v)
				return w, false
			}
			w.padsB[i], w.padsE[i] = v[2*a], v[2*a+1]
		}
	case "":
		c.errf("missing required attribute padding (SAME, VALID or EXPLICIT)")
		return w, false
	default:
		c.errf("padding %q is not supported (want SAME, VALID or EXPLICIT)", p)
		return w, false
	}
	return w, true
}

// spatialOut computes the output sizes of the spatial axes of x under w
// into out (laid out as l).
func (c *nctx) spatialOut(w window, l layout, x, out []ir.Dim) bool {
	for i, a := range l.spatial {
		d, ok := c.outDim(w, i, x[a])
		if !ok {
			return false
		}
		out[a] = d
	}
	return true
}
