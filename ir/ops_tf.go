package ir

import "strings"

// TFDomain is the op table domain of TensorFlow ops, as the GraphDef and
// TensorFlow.js importers create them: Node.Domain == TFDomain and Node.Op
// the NodeDef's op ("Conv2D", "_FusedConv2D", …), with the NodeDef's
// attributes as Attrs.
const TFDomain = "tf"

// Flag shorthands of the TensorFlow table.
const (
	so = ShapeOnly
	st = Stateful
)

// tfOpTable lists the TensorFlow ops the IR knows: every op TensorFlow.js
// 4.22's graph executor runs (its op lists by category), the ops of the
// real TensorFlow.js models the tests use, and the variable, assignment,
// random and control-flow ops whose flags remat must see. Arities are the
// ops' own (variadic where an attribute sets the count, such as Unpack's
// num or ConcatV2's N). No TensorFlow op is marked InPlace: TensorFlow.js
// runs none in place. Alias marks the ops whose output the runtimes hand
// out as a view of the input (Identity, Reshape, Squeeze, ExpandDims).
var tfOpTable = []OpInfo{
	// Graph structure.
	{TFDomain, "Placeholder", 0, 0, 1, 1, 0},
	{TFDomain, "PlaceholderWithDefault", 1, 1, 1, 1, 0},
	{TFDomain, "Const", 0, 0, 1, 1, 0},
	{TFDomain, "NoOp", 0, 0, 0, 0, 0},
	{TFDomain, "Identity", 1, 1, 1, 1, al},
	{TFDomain, "IdentityN", 1, vv, 1, vv, 0},
	{TFDomain, "Snapshot", 1, 1, 1, 1, 0},
	{TFDomain, "StopGradient", 1, 1, 1, 1, 0},
	{TFDomain, "PreventGradient", 1, 1, 1, 1, 0},
	{TFDomain, "EnsureShape", 1, 1, 1, 1, 0},
	{TFDomain, "CheckNumerics", 1, 1, 1, 1, 0},
	{TFDomain, "FakeQuantWithMinMaxVars", 3, 3, 1, 1, 0},
	{TFDomain, "Shape", 1, 1, 1, 1, so},
	{TFDomain, "ShapeN", 1, vv, 1, vv, 0},
	{TFDomain, "Size", 1, 1, 1, 1, so},
	{TFDomain, "Rank", 1, 1, 1, 1, so},
	{TFDomain, "Print", 1, vv, 1, 1, st},
	{TFDomain, "Assert", 1, vv, 0, 0, st},

	// Convolution, pooling, matrix products, normalisation.
	{TFDomain, "Conv1D", 2, 2, 1, 1, 0},
	{TFDomain, "Conv2D", 2, 2, 1, 1, 0},
	{TFDomain, "_FusedConv2D", 2, vv, 1, 1, 0}, // input, filter, num_args args
	{TFDomain, "Conv2DBackpropInput", 3, 3, 1, 1, 0},
	{TFDomain, "Conv2DBackpropFilter", 3, 3, 1, 1, 0},
	{TFDomain, "Conv3D", 2, 2, 1, 1, 0},
	{TFDomain, "DepthwiseConv2d", 2, 2, 1, 1, 0},
	{TFDomain, "DepthwiseConv2dNative", 2, 2, 1, 1, 0},
	{TFDomain, "FusedDepthwiseConv2dNative", 2, vv, 1, 1, 0},
	{TFDomain, "_FusedDepthwiseConv2dNative", 2, vv, 1, 1, 0},
	{TFDomain, "Dilation2D", 2, 2, 1, 1, 0},
	{TFDomain, "AvgPool", 1, 1, 1, 1, 0},
	{TFDomain, "MaxPool", 1, 1, 1, 1, 0},
	{TFDomain, "MaxPoolV2", 3, 3, 1, 1, 0},
	{TFDomain, "MaxPoolWithArgmax", 1, 1, 2, 2, 0},
	{TFDomain, "AvgPool3D", 1, 1, 1, 1, 0},
	{TFDomain, "MaxPool3D", 1, 1, 1, 1, 0},
	{TFDomain, "MatMul", 2, 2, 1, 1, 0},
	{TFDomain, "_FusedMatMul", 2, vv, 1, 1, 0},
	{TFDomain, "BatchMatMul", 2, 2, 1, 1, 0},
	{TFDomain, "BatchMatMulV2", 2, 2, 1, 1, 0},
	{TFDomain, "BatchMatMulV3", 2, 2, 1, 1, 0},
	{TFDomain, "Einsum", 1, vv, 1, 1, 0},
	{TFDomain, "MatrixBandPart", 3, 3, 1, 1, 0},
	{TFDomain, "FusedBatchNorm", 5, 5, 5, 5, 0},
	{TFDomain, "FusedBatchNormV2", 5, 5, 5, 5, 0},
	{TFDomain, "FusedBatchNormV3", 5, 5, 6, 6, 0},
	{TFDomain, "LRN", 1, 1, 1, 1, 0},
	{TFDomain, "Softmax", 1, 1, 1, 1, 0},
	{TFDomain, "LogSoftmax", 1, 1, 1, 1, 0},

	// Elementwise arithmetic, comparisons and activations.
	{TFDomain, "Add", 2, 2, 1, 1, ew},
	{TFDomain, "AddV2", 2, 2, 1, 1, ew},
	{TFDomain, "AddN", 1, vv, 1, 1, ew},
	{TFDomain, "BiasAdd", 2, 2, 1, 1, ew},
	{TFDomain, "Sub", 2, 2, 1, 1, ew},
	{TFDomain, "Mul", 2, 2, 1, 1, ew},
	{TFDomain, "Div", 2, 2, 1, 1, ew},
	{TFDomain, "RealDiv", 2, 2, 1, 1, ew},
	{TFDomain, "DivNoNan", 2, 2, 1, 1, ew},
	{TFDomain, "FloorDiv", 2, 2, 1, 1, ew},
	{TFDomain, "FloorMod", 2, 2, 1, 1, ew},
	{TFDomain, "Mod", 2, 2, 1, 1, ew},
	{TFDomain, "Maximum", 2, 2, 1, 1, ew},
	{TFDomain, "Minimum", 2, 2, 1, 1, ew},
	{TFDomain, "Pow", 2, 2, 1, 1, ew},
	{TFDomain, "SquaredDifference", 2, 2, 1, 1, ew},
	{TFDomain, "Atan2", 2, 2, 1, 1, ew},
	{TFDomain, "Prelu", 2, 2, 1, 1, ew},
	{TFDomain, "ClipByValue", 3, 3, 1, 1, ew},
	{TFDomain, "Complex", 2, 2, 1, 1, ew},
	{TFDomain, "Equal", 2, 2, 1, 1, ew},
	{TFDomain, "NotEqual", 2, 2, 1, 1, ew},
	{TFDomain, "Greater", 2, 2, 1, 1, ew},
	{TFDomain, "GreaterEqual", 2, 2, 1, 1, ew},
	{TFDomain, "Less", 2, 2, 1, 1, ew},
	{TFDomain, "LessEqual", 2, 2, 1, 1, ew},
	{TFDomain, "LogicalAnd", 2, 2, 1, 1, ew},
	{TFDomain, "LogicalOr", 2, 2, 1, 1, ew},
	{TFDomain, "BitwiseAnd", 2, 2, 1, 1, ew},
	{TFDomain, "Select", 3, 3, 1, 1, ew},
	{TFDomain, "SelectV2", 3, 3, 1, 1, ew},
	{TFDomain, "Abs", 1, 1, 1, 1, ew},
	{TFDomain, "Acos", 1, 1, 1, 1, ew},
	{TFDomain, "Acosh", 1, 1, 1, 1, ew},
	{TFDomain, "Asin", 1, 1, 1, 1, ew},
	{TFDomain, "Asinh", 1, 1, 1, 1, ew},
	{TFDomain, "Atan", 1, 1, 1, 1, ew},
	{TFDomain, "Atanh", 1, 1, 1, 1, ew},
	{TFDomain, "Ceil", 1, 1, 1, 1, ew},
	{TFDomain, "Cos", 1, 1, 1, 1, ew},
	{TFDomain, "Cosh", 1, 1, 1, 1, ew},
	{TFDomain, "Elu", 1, 1, 1, 1, ew},
	{TFDomain, "Erf", 1, 1, 1, 1, ew},
	{TFDomain, "Exp", 1, 1, 1, 1, ew},
	{TFDomain, "Expm1", 1, 1, 1, 1, ew},
	{TFDomain, "Floor", 1, 1, 1, 1, ew},
	{TFDomain, "IsFinite", 1, 1, 1, 1, ew},
	{TFDomain, "IsInf", 1, 1, 1, 1, ew},
	{TFDomain, "IsNan", 1, 1, 1, 1, ew},
	{TFDomain, "LeakyRelu", 1, 1, 1, 1, ew},
	{TFDomain, "Log", 1, 1, 1, 1, ew},
	{TFDomain, "Log1p", 1, 1, 1, 1, ew},
	{TFDomain, "LogicalNot", 1, 1, 1, 1, ew},
	{TFDomain, "Neg", 1, 1, 1, 1, ew},
	{TFDomain, "Reciprocal", 1, 1, 1, 1, ew},
	{TFDomain, "Relu", 1, 1, 1, 1, ew},
	{TFDomain, "Relu6", 1, 1, 1, 1, ew},
	{TFDomain, "Rint", 1, 1, 1, 1, ew},
	{TFDomain, "Round", 1, 1, 1, 1, ew},
	{TFDomain, "Rsqrt", 1, 1, 1, 1, ew},
	{TFDomain, "Selu", 1, 1, 1, 1, ew},
	{TFDomain, "Sigmoid", 1, 1, 1, 1, ew},
	{TFDomain, "Sign", 1, 1, 1, 1, ew},
	{TFDomain, "Sin", 1, 1, 1, 1, ew},
	{TFDomain, "Sinh", 1, 1, 1, 1, ew},
	{TFDomain, "Softplus", 1, 1, 1, 1, ew},
	{TFDomain, "Softsign", 1, 1, 1, 1, ew},
	{TFDomain, "Sqrt", 1, 1, 1, 1, ew},
	{TFDomain, "Square", 1, 1, 1, 1, ew},
	{TFDomain, "Tan", 1, 1, 1, 1, ew},
	{TFDomain, "Tanh", 1, 1, 1, 1, ew},
	{TFDomain, "Cast", 1, 1, 1, 1, ew},
	{TFDomain, "ComplexAbs", 1, 1, 1, 1, ew},
	{TFDomain, "Real", 1, 1, 1, 1, ew},
	{TFDomain, "Imag", 1, 1, 1, 1, ew},
	{TFDomain, "ZerosLike", 1, 1, 1, 1, ew},
	{TFDomain, "OnesLike", 1, 1, 1, 1, ew},

	// Reductions, scans, sorting.
	{TFDomain, "Sum", 2, 2, 1, 1, 0},
	{TFDomain, "Mean", 2, 2, 1, 1, 0},
	{TFDomain, "Max", 2, 2, 1, 1, 0},
	{TFDomain, "Min", 2, 2, 1, 1, 0},
	{TFDomain, "Prod", 2, 2, 1, 1, 0},
	{TFDomain, "All", 2, 2, 1, 1, 0},
	{TFDomain, "Any", 2, 2, 1, 1, 0},
	{TFDomain, "EuclideanNorm", 2, 2, 1, 1, 0},
	{TFDomain, "ArgMax", 2, 2, 1, 1, 0},
	{TFDomain, "ArgMin", 2, 2, 1, 1, 0},
	{TFDomain, "Cumsum", 2, 2, 1, 1, 0},
	{TFDomain, "Cumprod", 2, 2, 1, 1, 0},
	{TFDomain, "Bincount", 3, 3, 1, 1, 0},
	{TFDomain, "DenseBincount", 3, 3, 1, 1, 0},
	{TFDomain, "TopKV2", 2, 2, 2, 2, 0},
	{TFDomain, "LowerBound", 2, 2, 1, 1, 0},
	{TFDomain, "UpperBound", 2, 2, 1, 1, 0},

	// Data movement and shape manipulation.
	{TFDomain, "Reshape", 2, 2, 1, 1, al},
	{TFDomain, "Squeeze", 1, 1, 1, 1, al},
	{TFDomain, "ExpandDims", 2, 2, 1, 1, al},
	{TFDomain, "Transpose", 2, 2, 1, 1, 0},
	{TFDomain, "ConcatV2", 2, vv, 1, 1, 0}, // N values, then the axis
	{TFDomain, "Concat", 2, vv, 1, 1, 0},   // the axis, then N values
	{TFDomain, "Pack", 1, vv, 1, 1, 0},
	{TFDomain, "Unpack", 1, 1, 0, vv, 0}, // num outputs
	{TFDomain, "Split", 2, 2, 1, vv, 0},  // num_split outputs
	{TFDomain, "SplitV", 3, 3, 1, vv, 0}, // num_split outputs
	{TFDomain, "Slice", 3, 3, 1, 1, 0},
	{TFDomain, "StridedSlice", 4, 4, 1, 1, 0},
	{TFDomain, "Pad", 2, 2, 1, 1, 0},
	{TFDomain, "PadV2", 3, 3, 1, 1, 0},
	{TFDomain, "MirrorPad", 2, 2, 1, 1, 0},
	{TFDomain, "Tile", 2, 2, 1, 1, 0},
	{TFDomain, "Reverse", 2, 2, 1, 1, 0},
	{TFDomain, "ReverseV2", 2, 2, 1, 1, 0},
	{TFDomain, "Gather", 2, 2, 1, 1, 0},
	{TFDomain, "GatherV2", 3, 3, 1, 1, 0},
	{TFDomain, "GatherNd", 2, 2, 1, 1, 0},
	{TFDomain, "ScatterNd", 3, 3, 1, 1, 0},
	{TFDomain, "TensorScatterUpdate", 3, 3, 1, 1, 0},
	{TFDomain, "SparseToDense", 4, 4, 1, 1, 0},
	{TFDomain, "OneHot", 4, 4, 1, 1, 0},
	{TFDomain, "Fill", 2, 2, 1, 1, 0},
	{TFDomain, "Range", 3, 3, 1, 1, 0},
	{TFDomain, "LinSpace", 3, 3, 1, 1, 0},
	{TFDomain, "BroadcastTo", 2, 2, 1, 1, 0},
	{TFDomain, "BroadcastArgs", 2, 2, 1, 1, 0},
	{TFDomain, "DepthToSpace", 1, 1, 1, 1, 0},
	{TFDomain, "SpaceToDepth", 1, 1, 1, 1, 0},
	{TFDomain, "SpaceToBatchND", 3, 3, 1, 1, 0},
	{TFDomain, "BatchToSpaceND", 3, 3, 1, 1, 0},
	{TFDomain, "ResizeBilinear", 2, 2, 1, 1, 0},
	{TFDomain, "ResizeNearestNeighbor", 2, 2, 1, 1, 0},
	{TFDomain, "CropAndResize", 4, 4, 1, 1, 0},
	{TFDomain, "ImageProjectiveTransformV3", 4, 4, 1, 1, 0},

	// Data-dependent output shapes.
	{TFDomain, "NonMaxSuppressionV2", 4, 4, 1, 1, dd},
	{TFDomain, "NonMaxSuppressionV3", 5, 5, 1, 1, dd},
	{TFDomain, "NonMaxSuppressionV4", 5, 5, 2, 2, dd},
	{TFDomain, "NonMaxSuppressionV5", 6, 6, 3, 3, dd},
	{TFDomain, "Where", 1, 1, 1, 1, dd},
	{TFDomain, "Unique", 1, 1, 2, 2, dd},
	{TFDomain, "UniqueV2", 2, 2, 2, 2, dd},
	{TFDomain, "ListDiff", 2, 2, 2, 2, dd},

	// Control flow: the v1 dataflow primitives and the functional ops
	// (their bodies are library functions named by func attributes).
	{TFDomain, "Switch", 2, 2, 2, 2, cf},
	{TFDomain, "Merge", 1, vv, 2, 2, cf},
	{TFDomain, "Enter", 1, 1, 1, 1, cf},
	{TFDomain, "Exit", 1, 1, 1, 1, cf},
	{TFDomain, "NextIteration", 1, 1, 1, 1, cf},
	{TFDomain, "LoopCond", 1, 1, 1, 1, cf},
	{TFDomain, "If", 1, vv, 0, vv, cf},
	{TFDomain, "StatelessIf", 1, vv, 0, vv, cf},
	{TFDomain, "While", 0, vv, 0, vv, cf},
	{TFDomain, "StatelessWhile", 0, vv, 0, vv, cf},

	// Random number generation (the stateful kernels; the Stateless*
	// ones are functions of their seed input).
	{TFDomain, "RandomUniform", 1, 1, 1, 1, rn},
	{TFDomain, "RandomStandardNormal", 1, 1, 1, 1, rn},
	{TFDomain, "RandomUniformInt", 3, 3, 1, 1, rn},
	{TFDomain, "TruncatedNormal", 1, 1, 1, 1, rn},
	{TFDomain, "Multinomial", 2, 2, 1, 1, rn},
	{TFDomain, "RandomShuffle", 1, 1, 1, 1, rn},

	// Variables, assignments and lookup tables.
	{TFDomain, "Variable", 0, 0, 1, 1, st},
	{TFDomain, "VariableV2", 0, 0, 1, 1, st},
	{TFDomain, "VarHandleOp", 0, 0, 1, 1, st},
	{TFDomain, "ReadVariableOp", 1, 1, 1, 1, st},
	{TFDomain, "VarIsInitializedOp", 1, 1, 1, 1, st},
	{TFDomain, "Assign", 2, 2, 1, 1, st},
	{TFDomain, "AssignAdd", 2, 2, 1, 1, st},
	{TFDomain, "AssignSub", 2, 2, 1, 1, st},
	{TFDomain, "AssignVariableOp", 2, 2, 0, 0, st},
	{TFDomain, "AssignAddVariableOp", 2, 2, 0, 0, st},
	{TFDomain, "AssignSubVariableOp", 2, 2, 0, 0, st},
	{TFDomain, "HashTable", 0, 0, 1, 1, st},
	{TFDomain, "HashTableV2", 0, 0, 1, 1, st},
	{TFDomain, "InitializeTable", 3, 3, 0, 0, st},
	{TFDomain, "InitializeTableV2", 3, 3, 0, 0, st},
	{TFDomain, "LookupTableImport", 3, 3, 0, 0, st},
	{TFDomain, "LookupTableImportV2", 3, 3, 0, 0, st},
	{TFDomain, "LookupTableFind", 3, 3, 1, 1, st},
	{TFDomain, "LookupTableFindV2", 3, 3, 1, 1, st},
	{TFDomain, "LookupTableSize", 1, 1, 1, 1, st},
	{TFDomain, "LookupTableSizeV2", 1, 1, 1, 1, st},
}

// tfDTypes maps TensorFlow's DataType enum names to IR element types.
// Types without an IR counterpart (the quantized QINT/QUINT types, which
// carry scales elsewhere; resources; variants; 2-bit integers;
// FLOAT8_E4M3B11FNUZ) are absent.
var tfDTypes = []struct {
	name string
	dt   DType
}{
	{"DT_FLOAT", Float32},
	{"DT_DOUBLE", Float64},
	{"DT_INT32", Int32},
	{"DT_UINT8", Uint8},
	{"DT_INT16", Int16},
	{"DT_INT8", Int8},
	{"DT_STRING", String},
	{"DT_COMPLEX64", Complex64},
	{"DT_INT64", Int64},
	{"DT_BOOL", Bool},
	{"DT_BFLOAT16", BFloat16},
	{"DT_UINT16", Uint16},
	{"DT_COMPLEX128", Complex128},
	{"DT_HALF", Float16},
	{"DT_UINT32", Uint32},
	{"DT_UINT64", Uint64},
	{"DT_FLOAT8_E5M2", Float8E5M2},
	{"DT_FLOAT8_E4M3FN", Float8E4M3FN},
	{"DT_FLOAT8_E4M3FNUZ", Float8E4M3FNUZ},
	{"DT_FLOAT8_E5M2FNUZ", Float8E5M2FNUZ},
	{"DT_INT4", Int4},
	{"DT_UINT4", Uint4},
}

// TFDType returns the IR element type of a TensorFlow DataType enum name
// ("DT_FLOAT"; a reference type "DT_FLOAT_REF" is its base type). It
// reports false for a name the IR has no element type for.
func TFDType(name string) (DType, bool) {
	name = strings.TrimSuffix(name, "_REF")
	for _, e := range tfDTypes {
		if e.name == name {
			return e.dt, true
		}
	}
	return Undefined, false
}

// TFDTypeName returns the TensorFlow DataType enum name of an IR element
// type ("DT_FLOAT" for Float32), or "" when TensorFlow has none.
func TFDTypeName(d DType) string {
	for _, e := range tfDTypes {
		if e.dt == d {
			return e.name
		}
	}
	return ""
}
