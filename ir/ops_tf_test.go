package ir

import "testing"

func TestOpTableHasNoDuplicates(t *testing.T) {
	if len(opIndex) != len(allOps) {
		seen := map[opKey]bool{}
		for _, o := range allOps {
			k := opKey{o.Domain, o.Name}
			if seen[k] {
				t.Errorf("op %s.%s is listed twice", o.Domain, o.Name)
			}
			seen[k] = true
		}
	}
	for _, o := range allOps {
		if o.MinIn < 0 || o.MaxIn != Variadic && o.MaxIn < o.MinIn || o.MinOut < 0 || o.MaxOut != Variadic && o.MaxOut < o.MinOut {
			t.Errorf("%s.%s: arity [%d,%d] -> [%d,%d] is not a range", o.Domain, o.Name, o.MinIn, o.MaxIn, o.MinOut, o.MaxOut)
		}
	}
}

// TestTFOps checks that the ops of the real TensorFlow.js models (listed in
// ../shared/research/tfjs-execution.md, and those of the fetched models)
// are in the table, and the flags remat relies on.
func TestTFOps(t *testing.T) {
	seen := []string{
		"Conv2D", "_FusedConv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative", "_FusedMatMul",
		"MatMul", "BiasAdd", "Add", "AddV2", "AddN", "Mul", "Sub", "Maximum", "Minimum", "Relu", "Relu6",
		"Prelu", "LeakyRelu", "Sigmoid", "Tanh", "Abs", "MaxPool", "AvgPool", "Mean", "Pad", "ConcatV2",
		"Reshape", "Transpose", "StridedSlice", "ExpandDims", "Squeeze", "Pack", "GatherV2", "Cast",
		"ResizeBilinear", "ResizeNearestNeighbor", "Softmax", "Identity", "Placeholder", "Const",
		"NonMaxSuppressionV5",
		// In the fetched models besides the list above.
		"Conv2DBackpropInput", "Shape", "Unpack", "ArgMax", "FloorDiv", "GatherNd", "SquaredDifference",
		"Sqrt", "RealDiv",
	}
	for _, op := range seen {
		if LookupOp(TFDomain, op) == nil {
			t.Errorf("LookupOp(%q, %q) = nil", TFDomain, op)
		}
	}
	if LookupOp("", "Conv2D") != nil {
		t.Errorf("TensorFlow's Conv2D leaks into the ONNX domain")
	}
	if got := LookupOp(TFDomain, "Add"); got == nil || got.Domain != TFDomain {
		t.Errorf("LookupOp(tf, Add) = %+v, want the TensorFlow entry", got)
	}
	flags := []struct {
		op   string
		want OpFlags
	}{
		{"Identity", Alias}, {"Reshape", Alias}, {"Squeeze", Alias}, {"ExpandDims", Alias},
		{"Shape", ShapeOnly}, {"NonMaxSuppressionV5", DataDependent}, {"Where", DataDependent},
		{"RandomUniform", Random}, {"TruncatedNormal", Random},
		{"Switch", ControlFlow}, {"Merge", ControlFlow}, {"Enter", ControlFlow}, {"Exit", ControlFlow},
		{"NextIteration", ControlFlow}, {"If", ControlFlow}, {"While", ControlFlow},
		{"StatelessIf", ControlFlow}, {"StatelessWhile", ControlFlow},
		{"VariableV2", Stateful}, {"VarHandleOp", Stateful}, {"AssignVariableOp", Stateful}, {"Assign", Stateful},
		{"Relu", Elementwise}, {"AddV2", Elementwise},
	}
	for _, f := range flags {
		info := LookupOp(TFDomain, f.op)
		if info == nil || info.Flags&f.want == 0 {
			t.Errorf("%s: flags %v, want %v set", f.op, info, f.want)
		}
	}
	for _, o := range Ops() {
		if o.Domain == TFDomain && o.Flags&InPlace != 0 {
			t.Errorf("%s is marked InPlace; TensorFlow.js runs no op in place", o.Name)
		}
	}
	if LookupOp(TFDomain, "RandomUniform").Recomputable() || LookupOp(TFDomain, "AssignVariableOp").Recomputable() {
		t.Errorf("random and stateful TensorFlow ops must not be recomputable")
	}
	if !LookupOp(TFDomain, "_FusedConv2D").Recomputable() {
		t.Errorf("_FusedConv2D must be recomputable")
	}
}

func TestTFDTypes(t *testing.T) {
	for _, e := range tfDTypes {
		d, ok := TFDType(e.name)
		if !ok || d != e.dt || TFDTypeName(d) != e.name {
			t.Errorf("%s: TFDType = %v, %v; TFDTypeName back = %q", e.name, d, ok, TFDTypeName(d))
		}
	}
	if d, ok := TFDType("DT_HALF_REF"); !ok || d != Float16 {
		t.Errorf("DT_HALF_REF = %v, %v; want f16 (a reference type is its base type)", d, ok)
	}
	for _, name := range []string{"DT_QINT8", "DT_RESOURCE", "DT_VARIANT", "DT_INVALID", "DT_INT2", "bogus"} {
		if d, ok := TFDType(name); ok {
			t.Errorf("TFDType(%q) = %v, want none", name, d)
		}
	}
	if TFDTypeName(Float4E2M1) != "" {
		t.Errorf("TFDTypeName(f4e2m1) = %q, TensorFlow has no such type", TFDTypeName(Float4E2M1))
	}
}

func TestNumElements(t *testing.T) {
	for _, tt := range []struct {
		dims []int64
		n    int64
		ok   bool
	}{{nil, 1, true}, {[]int64{2, 3}, 6, true}, {[]int64{0, -1}, 0, true}, {[]int64{2, -1}, 0, false}, {[]int64{1 << 40, 1 << 40}, 0, false}} {
		if n, ok := NumElements(tt.dims); n != tt.n || ok != tt.ok {
			t.Errorf("NumElements(%v) = %d, %v; want %d, %v", tt.dims, n, ok, tt.n, tt.ok)
		}
	}
}
