package shapes

import "github.com/remat-compile/remat/ir"

// ONNX writes element types into attributes (Cast's to, EyeLike's dtype,
// ConstantOfShape, QuantizeLinear's output_dtype, …) as TensorProto.DataType
// numbers. The importer keeps attribute integers as they are in the file, so
// this pass maps them onto ir.DType itself.

// onnxDTypes maps TensorProto.DataType numbers to IR element types.
var onnxDTypes = [...]ir.DType{
	0:  ir.Undefined,
	1:  ir.Float32,
	2:  ir.Uint8,
	3:  ir.Int8,
	4:  ir.Uint16,
	5:  ir.Int16,
	6:  ir.Int32,
	7:  ir.Int64,
	8:  ir.String,
	9:  ir.Bool,
	10: ir.Float16,
	11: ir.Float64,
	12: ir.Uint32,
	13: ir.Uint64,
	14: ir.Complex64,
	15: ir.Complex128,
	16: ir.BFloat16,
	17: ir.Float8E4M3FN,
	18: ir.Float8E4M3FNUZ,
	19: ir.Float8E5M2,
	20: ir.Float8E5M2FNUZ,
	21: ir.Uint4,
	22: ir.Int4,
	23: ir.Float4E2M1,
}

// onnxDType converts a TensorProto.DataType number; ok is false for 0 and
// numbers ONNX does not define.
func onnxDType(code int64) (ir.DType, bool) {
	if code <= 0 || code >= int64(len(onnxDTypes)) {
		return ir.Undefined, false
	}
	return onnxDTypes[code], true
}

// onnxDTypeNames are the names Cast-1 used for its string "to" attribute.
var onnxDTypeNames = map[string]ir.DType{
	"FLOAT": ir.Float32, "UINT8": ir.Uint8, "INT8": ir.Int8, "UINT16": ir.Uint16,
	"INT16": ir.Int16, "INT32": ir.Int32, "INT64": ir.Int64, "STRING": ir.String,
	"BOOL": ir.Bool, "FLOAT16": ir.Float16, "DOUBLE": ir.Float64, "UINT32": ir.Uint32,
	"UINT64": ir.Uint64, "COMPLEX64": ir.Complex64, "COMPLEX128": ir.Complex128,
	"BFLOAT16": ir.BFloat16,
}
