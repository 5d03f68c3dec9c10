package shapes

// handler returns the inference function of a standard-domain op, or nil
// for an op the pass has no rule for (its outputs then take their declared
// types).
func handler(op string) func(*nctx) {
	switch op {
	// Elementwise, one input, same type.
	case "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
		"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
		"Erf", "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "Sigmoid",
		"HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign", "Mish", "Gelu", "Shrink",
		"BitwiseNot":
		return inferUnary
	case "IsNaN", "IsInf":
		return inferIsNaN
	case "Not":
		return inferNot
	case "Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
		"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor":
		return inferBinary
	case "Max", "Min", "Sum", "Mean":
		return inferVariadic
	case "Where":
		return inferWhere
	case "PRelu":
		return inferPRelu
	case "Clip":
		return inferClip
	case "Cast":
		return inferCast
	case "CastLike":
		return inferCastLike
	case "Identity":
		return inferIdentity
	case "Softmax", "LogSoftmax", "Hardmax":
		return inferSoftmax
	case "CumSum", "Trilu", "ReverseSequence", "MeanVarianceNormalization", "LpNormalization":
		return inferSameAsFirst
	case "Scatter", "ScatterElements", "ScatterND":
		return inferScatter

	// Convolution, matrix products, normalisation, pooling.
	case "Conv":
		return inferConv
	case "ConvInteger":
		return inferConvInteger
	case "QLinearConv":
		return inferQLinearConv
	case "ConvTranspose":
		return inferConvTranspose
	case "Gemm":
		return inferGemm
	case "MatMul":
		return inferMatMul
	case "MatMulInteger":
		return inferMatMulInteger
	case "QLinearMatMul":
		return inferQLinearMatMul
	case "Einsum":
		return inferEinsum
	case "BatchNormalization":
		return inferBatchNorm
	case "InstanceNormalization":
		return inferInstanceNorm
	case "LayerNormalization":
		return inferLayerNorm
	case "GroupNormalization":
		return inferGroupNorm
	case "LRN":
		return inferLRN
	case "MaxPool", "AveragePool", "LpPool":
		return inferPool
	case "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool":
		return inferGlobalPool
	case "MaxUnpool":
		return inferMaxUnpool
	case "RoiAlign", "MaxRoiPool":
		return inferRoi
	case "GridSample":
		return inferGridSample
	case "Col2Im":
		return inferCol2Im
	case "DepthToSpace", "SpaceToDepth":
		return inferDepthSpace
	case "LSTM", "GRU", "RNN":
		return inferRNN
	case "QuantizeLinear":
		return inferQuantize
	case "DequantizeLinear":
		return inferDequantize
	case "DynamicQuantizeLinear":
		return inferDynamicQuantize

	// Reductions.
	case "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
		"ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare":
		return inferReduce
	case "ArgMax", "ArgMin":
		return inferArgMax
	case "TopK":
		return inferTopK

	// Data movement and shapes.
	case "Concat":
		return inferConcat
	case "Split":
		return inferSplit
	case "Slice":
		return inferSlice
	case "Reshape":
		return inferReshape
	case "Flatten":
		return inferFlatten
	case "Transpose":
		return inferTranspose
	case "Squeeze":
		return inferSqueeze
	case "Unsqueeze":
		return inferUnsqueeze
	case "Expand":
		return inferExpand
	case "Tile":
		return inferTile
	case "Pad":
		return inferPad
	case "Resize":
		return inferResize
	case "Upsample":
		return inferUpsample
	case "Gather":
		return inferGather
	case "GatherElements":
		return inferGatherElements
	case "GatherND":
		return inferGatherND
	case "OneHot":
		return inferOneHot
	case "EyeLike":
		return inferEyeLike
	case "Det":
		return inferDet
	case "CenterCropPad":
		return inferCenterCropPad
	case "Shape":
		return inferShape
	case "Size":
		return inferSize
	case "Constant":
		return inferConstant
	case "ConstantOfShape":
		return inferConstantOfShape
	case "Range":
		return inferRange

	// Data-dependent sizes.
	case "NonZero":
		return inferNonZero
	case "Compress":
		return inferCompress
	case "Unique":
		return inferUnique
	case "NonMaxSuppression":
		return inferNMS

	// Control flow.
	case "If":
		return inferIf
	case "Loop":
		return inferLoop
	case "Scan":
		return inferScan

	// Random.
	case "Dropout":
		return inferDropout
	case "RandomNormal", "RandomUniform":
		return inferRandom
	case "RandomNormalLike", "RandomUniformLike", "Bernoulli":
		return inferRandomLike
	case "Multinomial":
		return inferMultinomial

	// Sequences and optionals.
	case "SequenceConstruct":
		return inferSequenceConstruct
	case "SequenceEmpty":
		return inferSequenceEmpty
	case "SequenceAt":
		return inferSequenceAt
	case "SequenceInsert":
		return inferSequenceInsert
	case "SequenceErase":
		return inferSequenceErase
	case "SequenceLength":
		return inferSequenceLength
	case "SplitToSequence":
		return inferSplitToSequence
	case "ConcatFromSequence":
		return inferConcatFromSequence
	case "Optional":
		return inferOptional
	case "OptionalHasElement":
		return inferOptionalHasElement
	case "OptionalGetElement":
		return inferOptionalGetElement
	}
	return nil
}
