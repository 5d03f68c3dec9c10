package onnxpb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/pbtest"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// TestGeneratedCodeIsUpToDate regenerates onnx.pb.go into a temporary
// directory with gen.sh (the script `go generate` runs) and compares it
// byte for byte with the committed file.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	pbtest.CheckUpToDate(t, "internal/onnxpb", "onnx.proto", "onnx.pb.go")
}

// --- hand encoding, independent of the generated code ---

type field = pbtest.Field

var (
	msg            = pbtest.Msg
	fInt           = pbtest.Int
	fBytes         = pbtest.Bytes
	fStr           = pbtest.Str
	fMsg           = pbtest.Sub
	fFloat         = pbtest.Float
	fPackedFloats  = pbtest.PackedFloats
	fPackedDoubles = pbtest.PackedDoubles
	fPackedVarints = pbtest.PackedVarints
)

func kv(num protowire.Number, k, v string) field { return fMsg(num, fStr(1, k), fStr(2, v)) }

// handEncodedModel is a ModelProto written field by field, in ascending
// field-number order inside every message and with packed encoding exactly
// where the reference schema declares it, so that the canonical output of
// proto.Marshal must reproduce it byte for byte.
func handEncodedModel() []byte {
	raw := make([]byte, 0, 24)
	for i := 0; i < 6; i++ {
		raw = binaryLEFloat(raw, float32(i))
	}
	tensorType := func(elem int64, dims ...field) field {
		return fMsg(1, fInt(1, elem), fMsg(2, dims...))
	}
	node := fMsg(1, // GraphProto.node
		fStr(1, "X"), fStr(1, "W"), // input
		fStr(2, "Y"),     // output
		fStr(3, "gemm0"), // name
		fStr(4, "Gemm"),  // op_type
		fMsg(5, // attribute: INTS
			fStr(1, "perm"),
			fInt(8, 0), fInt(8, 2), fInt(8, -1), // ints, unpacked as in the reference
			fStr(13, "permutation"),
			fInt(20, 7), // type = INTS
		),
		fMsg(5, // attribute: FLOAT
			fStr(1, "alpha"),
			fFloat(2, 1.5),
			fInt(20, 1),
		),
		fMsg(5, // attribute: FLOATS
			fStr(1, "scales"),
			fFloat(7, 0.25), fFloat(7, 4),
			fInt(20, 6),
		),
		fStr(6, "node doc"),
		fStr(7, "com.example"), // domain
		fStr(8, "v2"),          // overload
		kv(9, "node.key", "node.value"),
		fMsg(10, // device_configurations
			fStr(1, "two_gpus"),
			fMsg(2, // sharding_spec
				fStr(1, "X"),
				fInt(2, 0), fInt(2, 1), // device
				fMsg(3, fInt(1, 1), fInt(2, 0), fInt(2, 1)), // index_to_device_group_map
				fMsg(4, // sharded_dim
					fInt(1, 0),
					fMsg(2, fStr(2, "batch"), fInt(3, 2)),
				),
			),
			fInt(3, 1), // pipeline_stage
		),
	)
	graph := fMsg(7,
		node,
		fStr(2, "main"),
		fMsg(5, // initializer with raw_data
			fInt(1, 2), fInt(1, 3), // dims
			fInt(2, 1), // data_type = FLOAT
			fStr(8, "W"),
			fBytes(9, raw),
			kv(16, "origin", "hand"),
		),
		fMsg(5, // initializer with packed float_data
			fInt(1, 3),
			fInt(2, 1),
			fPackedFloats(4, 0.5, -1, 2),
			fStr(8, "B"),
		),
		fMsg(5, // initializer with the other packed typed fields
			fInt(1, 2),
			fInt(2, 7),                      // INT64
			fMsg(3, fInt(1, 0), fInt(2, 2)), // segment
			fPackedVarints(5, 1, uint64(0xFFFFFFFFFFFFFFFF)), // int32_data = 1, -1
			fBytes(6, []byte("s0")), fBytes(6, []byte("s1")), // string_data
			fPackedVarints(7, 5, uint64(1)<<40),
			fStr(8, "C"),
			fPackedDoubles(10, 2.5),
			fPackedVarints(11, math.MaxUint64),
			fStr(12, "tensor doc"),
			kv(13, "location", "weights.bin"),
			fInt(14, 1), // data_location = EXTERNAL
		),
		fStr(10, "graph doc"),
		fMsg(11, // input
			fStr(1, "X"),
			fMsg(2, // TypeProto
				tensorType(1,
					fMsg(1, fStr(2, "batch")),
					fMsg(1, fInt(1, 3), fStr(3, "DATA_FEATURE")),
				),
				fStr(6, "TENSOR"),
			),
			fStr(3, "input doc"),
			kv(4, "vi.key", "vi.value"),
		),
		fMsg(12, // output
			fStr(1, "Y"),
			fMsg(2, tensorType(1, fMsg(1, fStr(2, "batch")), fMsg(1, fInt(1, 3)))),
		),
		fMsg(13, fStr(1, "seq"), fMsg(2, fMsg(4, fMsg(1, tensorType(7))))),             // sequence
		fMsg(13, fStr(1, "map"), fMsg(2, fMsg(5, fInt(1, 8), fMsg(2, tensorType(1))))), // map
		fMsg(13, fStr(1, "opaque"), fMsg(2, fMsg(7, fStr(1, "ai.example"), fStr(2, "Thing")))),
		fMsg(13, fStr(1, "sparse"), fMsg(2, fMsg(8, fInt(1, 1), fMsg(2, fMsg(1, fInt(1, 4)))))),
		fMsg(13, fStr(1, "opt"), fMsg(2, fMsg(9, fMsg(1, tensorType(6))))), // optional
		fMsg(14, fStr(1, "W"), kv(2, "SCALE_TENSOR", "W_scale")),
		fMsg(15, // sparse_initializer
			fMsg(1, fInt(1, 2), fInt(2, 1), fPackedFloats(4, 7, 8), fStr(8, "S")),
			fMsg(2, fInt(1, 2), fInt(2, 7), fPackedVarints(7, 0, 3)),
			fInt(3, 4),
		),
		kv(16, "graph.key", "graph.value"),
	)
	return msg(
		fInt(1, 10), // ir_version
		fStr(2, "pytorch"),
		fStr(3, "2.3.0"),
		fStr(4, "org.example"),
		fInt(5, 7),
		fStr(6, "model doc"),
		graph,
		fMsg(8, fStr(1, ""), fInt(2, 17)), // opset_import
		fMsg(8, fStr(1, "com.example"), fInt(2, 1)),
		kv(14, "model.key", "model.value"),
		fMsg(20, // training_info
			fMsg(1, fStr(2, "init")),
			fMsg(2, fStr(2, "step")),
			kv(3, "W", "W_init"),
			kv(4, "W", "W_new"),
		),
		fMsg(25, // functions
			fStr(1, "MyRelu"),
			fStr(4, "a"),
			fStr(5, "b"),
			fStr(6, "alpha"),
			fMsg(7, fStr(1, "a"), fStr(2, "b"), fStr(4, "Relu")),
			fStr(8, "function doc"),
			fMsg(9, fStr(1, ""), fInt(2, 17)),
			fStr(10, "com.example"),
			fMsg(11, fStr(1, "beta"), fInt(3, 5), fInt(20, 2)), // attribute_proto
			fMsg(12, fStr(1, "a")),                             // value_info
			fStr(13, "v2"),                                     // overload
			kv(14, "fn.key", "fn.value"),
		),
		fMsg(26, fStr(1, "two_gpus"), fInt(2, 2), fStr(3, "gpu0"), fStr(3, "gpu1")), // configuration
	)
}

func binaryLEFloat(b []byte, v float32) []byte {
	u := math.Float32bits(v)
	return append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
}

func expectedModel() *ModelProto {
	s := proto.String
	i64 := proto.Int64
	ss := func(k, v string) *StringStringEntryProto { return &StringStringEntryProto{Key: s(k), Value: s(v)} }
	dimParam := func(p string) *TensorShapeProto_Dimension {
		return &TensorShapeProto_Dimension{Value: &TensorShapeProto_Dimension_DimParam{DimParam: p}}
	}
	dimValue := func(v int64) *TensorShapeProto_Dimension {
		return &TensorShapeProto_Dimension{Value: &TensorShapeProto_Dimension_DimValue{DimValue: v}}
	}
	tensorType := func(elem int32, dims ...*TensorShapeProto_Dimension) *TypeProto {
		return &TypeProto{Value: &TypeProto_TensorType{TensorType: &TypeProto_Tensor{
			ElemType: proto.Int32(elem),
			Shape:    &TensorShapeProto{Dim: dims},
		}}}
	}
	var raw []byte
	for i := 0; i < 6; i++ {
		raw = binaryLEFloat(raw, float32(i))
	}
	intsType := AttributeProto_INTS
	floatType := AttributeProto_FLOAT
	floatsType := AttributeProto_FLOATS
	intType := AttributeProto_INT
	external := TensorProto_EXTERNAL
	return &ModelProto{
		IrVersion:       i64(10),
		ProducerName:    s("pytorch"),
		ProducerVersion: s("2.3.0"),
		Domain:          s("org.example"),
		ModelVersion:    i64(7),
		DocString:       s("model doc"),
		Graph: &GraphProto{
			Node: []*NodeProto{{
				Input:  []string{"X", "W"},
				Output: []string{"Y"},
				Name:   s("gemm0"),
				OpType: s("Gemm"),
				Attribute: []*AttributeProto{
					{Name: s("perm"), Ints: []int64{0, 2, -1}, DocString: s("permutation"), Type: &intsType},
					{Name: s("alpha"), F: proto.Float32(1.5), Type: &floatType},
					{Name: s("scales"), Floats: []float32{0.25, 4}, Type: &floatsType},
				},
				DocString:     s("node doc"),
				Domain:        s("com.example"),
				Overload:      s("v2"),
				MetadataProps: []*StringStringEntryProto{ss("node.key", "node.value")},
				DeviceConfigurations: []*NodeDeviceConfigurationProto{{
					ConfigurationId: s("two_gpus"),
					ShardingSpec: []*ShardingSpecProto{{
						TensorName:            s("X"),
						Device:                []int64{0, 1},
						IndexToDeviceGroupMap: []*IntIntListEntryProto{{Key: i64(1), Value: []int64{0, 1}}},
						ShardedDim: []*ShardedDimProto{{
							Axis: i64(0),
							SimpleSharding: []*SimpleShardedDimProto{{
								Dim:       &SimpleShardedDimProto_DimParam{DimParam: "batch"},
								NumShards: i64(2),
							}},
						}},
					}},
					PipelineStage: proto.Int32(1),
				}},
			}},
			Name: s("main"),
			Initializer: []*TensorProto{
				{Dims: []int64{2, 3}, DataType: proto.Int32(1), Name: s("W"), RawData: raw,
					MetadataProps: []*StringStringEntryProto{ss("origin", "hand")}},
				{Dims: []int64{3}, DataType: proto.Int32(1), FloatData: []float32{0.5, -1, 2}, Name: s("B")},
				{
					Dims:         []int64{2},
					DataType:     proto.Int32(7),
					Segment:      &TensorProto_Segment{Begin: i64(0), End: i64(2)},
					Int32Data:    []int32{1, -1},
					StringData:   [][]byte{[]byte("s0"), []byte("s1")},
					Int64Data:    []int64{5, 1 << 40},
					Name:         s("C"),
					DoubleData:   []float64{2.5},
					Uint64Data:   []uint64{math.MaxUint64},
					DocString:    s("tensor doc"),
					ExternalData: []*StringStringEntryProto{ss("location", "weights.bin")},
					DataLocation: &external,
				},
			},
			DocString: s("graph doc"),
			Input: []*ValueInfoProto{{
				Name: s("X"),
				Type: func() *TypeProto {
					tp := tensorType(1, dimParam("batch"), dimValue(3))
					tp.GetTensorType().GetShape().GetDim()[1].Denotation = s("DATA_FEATURE")
					tp.Denotation = s("TENSOR")
					return tp
				}(),
				DocString:     s("input doc"),
				MetadataProps: []*StringStringEntryProto{ss("vi.key", "vi.value")},
			}},
			Output: []*ValueInfoProto{{Name: s("Y"), Type: tensorType(1, dimParam("batch"), dimValue(3))}},
			ValueInfo: []*ValueInfoProto{
				{Name: s("seq"), Type: &TypeProto{Value: &TypeProto_SequenceType{SequenceType: &TypeProto_Sequence{
					ElemType: tensorType(7)}}}},
				{Name: s("map"), Type: &TypeProto{Value: &TypeProto_MapType{MapType: &TypeProto_Map{
					KeyType: proto.Int32(8), ValueType: tensorType(1)}}}},
				{Name: s("opaque"), Type: &TypeProto{Value: &TypeProto_OpaqueType{OpaqueType: &TypeProto_Opaque{
					Domain: s("ai.example"), Name: s("Thing")}}}},
				{Name: s("sparse"), Type: &TypeProto{Value: &TypeProto_SparseTensorType{SparseTensorType: &TypeProto_SparseTensor{
					ElemType: proto.Int32(1), Shape: &TensorShapeProto{Dim: []*TensorShapeProto_Dimension{dimValue(4)}}}}}},
				{Name: s("opt"), Type: &TypeProto{Value: &TypeProto_OptionalType{OptionalType: &TypeProto_Optional{
					ElemType: tensorType(6)}}}},
			},
			QuantizationAnnotation: []*TensorAnnotation{{
				TensorName:                s("W"),
				QuantParameterTensorNames: []*StringStringEntryProto{ss("SCALE_TENSOR", "W_scale")},
			}},
			SparseInitializer: []*SparseTensorProto{{
				Values:  &TensorProto{Dims: []int64{2}, DataType: proto.Int32(1), FloatData: []float32{7, 8}, Name: s("S")},
				Indices: &TensorProto{Dims: []int64{2}, DataType: proto.Int32(7), Int64Data: []int64{0, 3}},
				Dims:    []int64{4},
			}},
			MetadataProps: []*StringStringEntryProto{ss("graph.key", "graph.value")},
		},
		OpsetImport: []*OperatorSetIdProto{
			{Domain: s(""), Version: i64(17)},
			{Domain: s("com.example"), Version: i64(1)},
		},
		MetadataProps: []*StringStringEntryProto{ss("model.key", "model.value")},
		TrainingInfo: []*TrainingInfoProto{{
			Initialization:        &GraphProto{Name: s("init")},
			Algorithm:             &GraphProto{Name: s("step")},
			InitializationBinding: []*StringStringEntryProto{ss("W", "W_init")},
			UpdateBinding:         []*StringStringEntryProto{ss("W", "W_new")},
		}},
		Functions: []*FunctionProto{{
			Name:           s("MyRelu"),
			Input:          []string{"a"},
			Output:         []string{"b"},
			Attribute:      []string{"alpha"},
			Node:           []*NodeProto{{Input: []string{"a"}, Output: []string{"b"}, OpType: s("Relu")}},
			DocString:      s("function doc"),
			OpsetImport:    []*OperatorSetIdProto{{Domain: s(""), Version: i64(17)}},
			Domain:         s("com.example"),
			AttributeProto: []*AttributeProto{{Name: s("beta"), I: i64(5), Type: &intType}},
			ValueInfo:      []*ValueInfoProto{{Name: s("a")}},
			Overload:       s("v2"),
			MetadataProps:  []*StringStringEntryProto{ss("fn.key", "fn.value")},
		}},
		Configuration: []*DeviceConfigurationProto{{
			Name: s("two_gpus"), NumDevices: proto.Int32(2), Device: []string{"gpu0", "gpu1"},
		}},
	}
}

// TestWireCompatHandEncoded decodes a ModelProto encoded by hand from the
// field numbers of the ONNX IR specification and checks every field, so a
// wrong field number, type or packing in onnx.proto shows up here.
func TestWireCompatHandEncoded(t *testing.T) {
	wire := handEncodedModel()
	var got ModelProto
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatalf("unmarshal hand-encoded model: %v", err)
	}
	assertNoUnknownFields(t, got.ProtoReflect(), "ModelProto")
	want := expectedModel()
	if !proto.Equal(&got, want) {
		t.Fatalf("decoded model differs from expected\n--- got:\n%s\n--- want:\n%s",
			prototext.Format(&got), prototext.Format(want))
	}

	// Spot checks through the getters, for readable failures.
	g := got.GetGraph()
	if n := g.GetNode()[0]; n.GetOpType() != "Gemm" || n.GetAttribute()[0].GetType() != AttributeProto_INTS ||
		fmt.Sprint(n.GetAttribute()[0].GetInts()) != "[0 2 -1]" {
		t.Errorf("node = %v", n)
	}
	if w := g.GetInitializer()[0]; w.GetDataType() != int32(TensorProto_FLOAT) || len(w.GetRawData()) != 24 {
		t.Errorf("raw_data initializer = %v", w)
	}
	if b := g.GetInitializer()[1]; fmt.Sprint(b.GetFloatData()) != "[0.5 -1 2]" {
		t.Errorf("float_data initializer = %v", b)
	}
	dims := g.GetInput()[0].GetType().GetTensorType().GetShape().GetDim()
	if dims[0].GetDimParam() != "batch" || dims[1].GetDimValue() != 3 {
		t.Errorf("input dims = %v", dims)
	}
	if _, ok := dims[0].GetValue().(*TensorShapeProto_Dimension_DimParam); !ok {
		t.Errorf("dim 0 oneof = %T, want dim_param", dims[0].GetValue())
	}
	if got.GetOpsetImport()[0].Domain == nil {
		t.Errorf("explicit empty opset domain lost its presence")
	}

	// Re-encoding must give the hand encoding back, up to the order of
	// fields (Go writes oneof members last): in particular repeated numeric
	// fields must be packed exactly where the reference schema packs them.
	out, err := proto.Marshal(&got)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := canonicalWire(t, out, got.ProtoReflect().Descriptor()), canonicalWire(t, wire, got.ProtoReflect().Descriptor()); !bytes.Equal(a, b) {
		t.Errorf("re-encoded model differs from the hand encoding (%d vs %d bytes): packing or field numbers disagree",
			len(out), len(wire))
	}
}

// canonicalWire rewrites an encoded message with the fields of every
// (nested) message stably sorted by field number, leaving each field's own
// encoding (packed or not) untouched, so two encodings that differ only in
// field order compare equal.
func canonicalWire(t *testing.T, b []byte, md protoreflect.MessageDescriptor) []byte {
	t.Helper()
	type rec struct {
		num protowire.Number
		enc []byte
	}
	var recs []rec
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("%s: bad tag: %v", md.FullName(), protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatalf("%s: bad field %d: %v", md.FullName(), num, protowire.ParseError(m))
		}
		enc := b[:n+m]
		if fd := md.Fields().ByNumber(num); fd != nil && fd.Message() != nil && typ == protowire.BytesType {
			inner, _ := protowire.ConsumeBytes(b[n:])
			enc = protowire.AppendTag(nil, num, typ)
			enc = protowire.AppendBytes(enc, canonicalWire(t, inner, fd.Message()))
		}
		recs = append(recs, rec{num, enc})
		b = b[n+m:]
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].num < recs[j].num })
	var out []byte
	for _, r := range recs {
		out = append(out, r.enc...)
	}
	return out
}

// TestWireCompatAcceptsBothPackings checks that repeated numeric fields are
// read whether a writer packed them or not.
func TestWireCompatAcceptsBothPackings(t *testing.T) {
	wire := msg(
		fFloat(4, 1), fFloat(4, 2), // float_data unpacked
		fInt(7, 3), fInt(7, 4), // int64_data unpacked
		fPackedVarints(1, 5, 6), // dims packed
	)
	var got TensorProto
	if err := proto.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.GetFloatData(), got.GetInt64Data(), got.GetDims()) != "[1 2] [3 4] [5 6]" {
		t.Errorf("got %v", &got)
	}
	assertNoUnknownFields(t, got.ProtoReflect(), "TensorProto")

	attr := msg(fPackedVarints(8, 1, 2, 3), fPackedFloats(7, 0.5))
	var a AttributeProto
	if err := proto.Unmarshal(attr, &a); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.GetInts(), a.GetFloats()) != "[1 2 3] [0.5]" {
		t.Errorf("got %v", &a)
	}
}

// assertNoUnknownFields fails if any message in m's tree carries fields the
// schema does not know.
func assertNoUnknownFields(t *testing.T, m protoreflect.Message, path string) {
	t.Helper()
	if u := m.GetUnknown(); len(u) > 0 {
		t.Errorf("%s: %d bytes of unknown fields", path, len(u))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		p := path + "." + string(fd.Name())
		switch {
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				assertNoUnknownFields(t, v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", p, i))
			}
		case fd.IsMap():
			// ONNX has no map fields.
		default:
			assertNoUnknownFields(t, v.Message(), p)
		}
		return true
	})
}

// --- cross-check against the reference implementation (Python onnx) ---

// pythonWithONNX returns a Python interpreter that can import onnx, or
// fails the test (skips under -short).
func pythonWithONNX(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, py := range candidates {
		if _, err := os.Stat(py); err != nil {
			continue
		}
		if err := exec.Command(py, "-c", "import onnx").Run(); err == nil {
			return py
		}
	}
	if testing.Short() {
		t.Skip("python3 with the onnx module not available; skipped in -short mode")
	}
	t.Fatalf("no python3 that can `import onnx` (tried %v): install the Debian package python3-onnx "+
		"(apt-get install python3-onnx); it is the reference the ONNX schema is checked against", candidates)
	return ""
}

func runPython(t *testing.T, py, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(py, append([]string{script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s %s: %v\nstdout:\n%s\nstderr:\n%s", py, script, strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

func writeScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "onnx_reference.py")
	if err := os.WriteFile(p, []byte(referenceScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPythonONNXRoundTrip has the reference onnx package build a model that
// uses every kind of attribute and type, reads it with the generated code,
// writes it back, and has the reference package parse our bytes and compare
// them with its own message.
func TestPythonONNXRoundTrip(t *testing.T) {
	py := pythonWithONNX(t)
	script := writeScript(t)
	dir := t.TempDir()
	ref := filepath.Join(dir, "reference.onnx")
	ours := filepath.Join(dir, "ours.onnx")

	runPython(t, py, script, "build", ref)
	refBytes, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	var m ModelProto
	if err := proto.Unmarshal(refBytes, &m); err != nil {
		t.Fatalf("unmarshal model written by python onnx: %v", err)
	}
	assertNoUnknownFields(t, m.ProtoReflect(), "ModelProto")

	// A few fields the script sets, read through our getters.
	g := m.GetGraph()
	if m.GetIrVersion() == 0 || len(m.GetOpsetImport()) != 2 || len(m.GetFunctions()) != 1 ||
		len(m.GetTrainingInfo()) != 1 || len(m.GetMetadataProps()) != 2 {
		t.Errorf("model header: ir=%d opsets=%d functions=%d training=%d metadata=%d", m.GetIrVersion(),
			len(m.GetOpsetImport()), len(m.GetFunctions()), len(m.GetTrainingInfo()), len(m.GetMetadataProps()))
	}
	seen := map[AttributeProto_AttributeType]bool{}
	for _, n := range g.GetNode() {
		for _, a := range n.GetAttribute() {
			seen[a.GetType()] = true
		}
	}
	for v := range AttributeProto_AttributeType_name {
		ty := AttributeProto_AttributeType(v)
		if ty != AttributeProto_UNDEFINED && !seen[ty] {
			t.Errorf("python model has no attribute of type %v", ty)
		}
	}
	if len(g.GetSparseInitializer()) != 1 || g.GetSparseInitializer()[0].GetValues().GetName() != "sparse_w" {
		t.Errorf("sparse_initializer = %v", g.GetSparseInitializer())
	}
	var kinds []string
	for _, vi := range g.GetValueInfo() {
		kinds = append(kinds, fmt.Sprintf("%T", vi.GetType().GetValue()))
	}
	sort.Strings(kinds)
	for _, want := range []string{"*onnxpb.TypeProto_MapType", "*onnxpb.TypeProto_OptionalType",
		"*onnxpb.TypeProto_SequenceType", "*onnxpb.TypeProto_SparseTensorType", "*onnxpb.TypeProto_OpaqueType"} {
		found := false
		for _, k := range kinds {
			found = found || k == want
		}
		if !found {
			t.Errorf("value_info types %v lack %s", kinds, want)
		}
	}

	out, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ours, out, 0o644); err != nil {
		t.Fatal(err)
	}
	res := runPython(t, py, script, "compare", ref, ours)
	if strings.TrimSpace(string(res)) != "equal" {
		t.Fatalf("python onnx says our re-encoding differs from its model:\n%s", res)
	}
	// Message equality does not see how repeated fields were packed; the
	// encodings themselves must agree up to field order.
	md := m.ProtoReflect().Descriptor()
	if !bytes.Equal(canonicalWire(t, out, md), canonicalWire(t, refBytes, md)) {
		t.Errorf("our encoding (%d bytes) differs from python onnx's (%d bytes) beyond field order", len(out), len(refBytes))
	}
}

type pyField struct {
	Name       string `json:"name"`
	Number     int    `json:"number"`
	Type       int    `json:"type"`
	Label      int    `json:"label"`
	Packed     bool   `json:"packed"`
	Oneof      string `json:"oneof"`
	TypeName   string `json:"type_name"`
	HasDefault bool   `json:"has_default"`
}

type pyMessage struct {
	Name   string    `json:"name"`
	Fields []pyField `json:"fields"`
}

type pyEnum struct {
	Name   string           `json:"name"`
	Values map[string]int32 `json:"values"`
}

type pySchema struct {
	Version  string      `json:"version"`
	Messages []pyMessage `json:"messages"`
	Enums    []pyEnum    `json:"enums"`
}

// TestSchemaMatchesPythonONNX compares every message, field and enum value
// of the reference onnx package's compiled schema with ours: numbers, wire
// types, labels, packing and oneof membership must agree. Fields newer than
// the installed reference are only listed.
func TestSchemaMatchesPythonONNX(t *testing.T) {
	py := pythonWithONNX(t)
	script := writeScript(t)
	var schema pySchema
	if err := json.Unmarshal(runPython(t, py, script, "describe"), &schema); err != nil {
		t.Fatal(err)
	}
	t.Logf("reference: python onnx %s, %d messages, %d enums", schema.Version, len(schema.Messages), len(schema.Enums))
	if len(schema.Messages) < 15 {
		t.Fatalf("reference schema has only %d messages", len(schema.Messages))
	}
	for _, pm := range schema.Messages {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(pm.Name))
		if err != nil {
			t.Errorf("message %s: missing from our schema", pm.Name)
			continue
		}
		md, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			t.Errorf("%s: not a message in our schema", pm.Name)
			continue
		}
		known := map[string]bool{}
		for _, pf := range pm.Fields {
			known[pf.Name] = true
			fd := md.Fields().ByName(protoreflect.Name(pf.Name))
			where := pm.Name + "." + pf.Name
			if fd == nil {
				t.Errorf("%s: missing from our schema", where)
				continue
			}
			if int(fd.Number()) != pf.Number {
				t.Errorf("%s: number %d, reference %d", where, fd.Number(), pf.Number)
			}
			if int(fd.Kind()) != pf.Type {
				t.Errorf("%s: type %v, reference type %d", where, fd.Kind(), pf.Type)
			}
			if int(fd.Cardinality()) != pf.Label {
				t.Errorf("%s: cardinality %v, reference label %d", where, fd.Cardinality(), pf.Label)
			}
			if fd.IsPacked() != pf.Packed {
				t.Errorf("%s: packed=%v, reference packed=%v", where, fd.IsPacked(), pf.Packed)
			}
			oneof := ""
			if o := fd.ContainingOneof(); o != nil {
				oneof = string(o.Name())
			}
			if oneof != pf.Oneof {
				t.Errorf("%s: oneof %q, reference %q", where, oneof, pf.Oneof)
			}
			typeName := ""
			if fd.Message() != nil {
				typeName = string(fd.Message().FullName())
			} else if fd.Enum() != nil {
				typeName = string(fd.Enum().FullName())
			}
			if typeName != pf.TypeName {
				t.Errorf("%s: type name %q, reference %q", where, typeName, pf.TypeName)
			}
			if fd.HasDefault() != pf.HasDefault {
				t.Errorf("%s: has default %v, reference %v", where, fd.HasDefault(), pf.HasDefault)
			}
		}
		for i := 0; i < md.Fields().Len(); i++ {
			if fd := md.Fields().Get(i); !known[string(fd.Name())] {
				t.Logf("%s.%s = %d: newer than the reference, not cross-checked here", pm.Name, fd.Name(), fd.Number())
			}
		}
	}
	for _, pe := range schema.Enums {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(pe.Name))
		if err != nil {
			t.Errorf("enum %s: missing from our schema", pe.Name)
			continue
		}
		ed, ok := d.(protoreflect.EnumDescriptor)
		if !ok {
			t.Errorf("%s: not an enum in our schema", pe.Name)
			continue
		}
		for name, num := range pe.Values {
			v := ed.Values().ByName(protoreflect.Name(name))
			if v == nil {
				t.Errorf("%s.%s: missing from our schema", pe.Name, name)
				continue
			}
			if pe.Name == "onnx.Version" && name == "IR_VERSION" {
				// IR_VERSION names the newest version, which moves; ours
				// must be at least as new and name the reference's one.
				if int32(v.Number()) < num || ed.Values().ByNumber(protoreflect.EnumNumber(num)) == nil {
					t.Errorf("%s.%s = %d, reference %d", pe.Name, name, v.Number(), num)
				}
				continue
			}
			if int32(v.Number()) != num {
				t.Errorf("%s.%s = %d, reference %d", pe.Name, name, v.Number(), num)
			}
		}
	}
}

// referenceScript is run with a Python that has the onnx package.
//
//	build OUT          write a model covering the schema to OUT
//	compare REF OURS   print "equal" if both files parse to equal ModelProtos
//	describe           print the compiled ONNX schema as JSON
const referenceScript = `
import json
import sys

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, TensorProto, TypeProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


def has_field(msg_cls, name):
    return name in msg_cls.DESCRIPTOR.fields_by_name


def subgraph(name):
    return helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name=name + "_id")],
        name,
        [helper.make_tensor_value_info("x", FLOAT, [2])],
        [helper.make_tensor_value_info("y", FLOAT, [2])],
        initializer=[helper.make_tensor(name + "_c", FLOAT, [1], [3.0])],
    )


def sparse(name):
    values = helper.make_tensor(name, FLOAT, [2], [1.5, -2.5])
    indices = helper.make_tensor(name + "_idx", INT64, [2], [1, 3])
    return helper.make_sparse_tensor(values, indices, [4])


def tensor_type(elem, shape):
    return helper.make_tensor_type_proto(elem, shape)


def build(path):
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), name="W")  # raw_data
    b = helper.make_tensor("B", FLOAT, [3], [0.5, -1.0, 2.0])  # float_data
    i32 = helper.make_tensor("I32", TensorProto.INT32, [3], [7, -7, 2147483647])
    i64 = helper.make_tensor("I64", INT64, [2], [-3, 1 << 40])
    dbl = helper.make_tensor("D", TensorProto.DOUBLE, [2], [1.5, -2.25])
    u64 = helper.make_tensor("U64", TensorProto.UINT64, [2], [1, (1 << 63) + 5])
    strs = helper.make_tensor("S", TensorProto.STRING, [2], [b"a", b"bc"])
    f16 = helper.make_tensor("H", TensorProto.FLOAT16, [2], np.array([1.0, -2.0], dtype=np.float16))
    bf16 = helper.make_tensor("BF", TensorProto.BFLOAT16, [1], [1.0])
    boolean = helper.make_tensor("BOOL", TensorProto.BOOL, [2], [True, False])
    c64 = helper.make_tensor("C64", TensorProto.COMPLEX64, [1], [complex(1, 2)])
    ext = TensorProto(name="E", data_type=FLOAT, dims=[4], data_location=TensorProto.EXTERNAL, doc_string="ext")
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        e = ext.external_data.add()
        e.key, e.value = k, v
    seg = helper.make_tensor("SEG", FLOAT, [2], [1.0, 2.0])
    seg.segment.begin = 0
    seg.segment.end = 2

    tp_seq = helper.make_sequence_type_proto(tensor_type(FLOAT, [None, 2]))
    tp_opt = helper.make_optional_type_proto(tensor_type(INT64, ["N"]))
    tp_map = TypeProto()
    tp_map.map_type.key_type = INT64
    tp_map.map_type.value_type.CopyFrom(tensor_type(FLOAT, [3]))
    tp_sparse = helper.make_sparse_tensor_type_proto(FLOAT, [4])
    tp_opaque = TypeProto()
    tp_opaque.opaque_type.domain = "ai.example"
    tp_opaque.opaque_type.name = "Thing"

    attrs = dict(
        f=1.5,
        i=-42,
        s="hello",
        t=helper.make_tensor("attr_t", INT64, [2], [1, 2]),
        g=subgraph("attr_g"),
        sp=sparse("attr_sp"),
        tp=tp_seq,
        floats=[1.0, 2.5, -3.25],
        ints=[1, -2, 1 << 50],
        strings=["a", "b"],
        tensors=[b, i64],
        graphs=[subgraph("attr_g1"), subgraph("attr_g2")],
        sparse_tensors=[sparse("attr_sp1")],
        type_protos=[tp_opt, tp_map],
    )
    n0 = helper.make_node("Gemm", ["X", "W", "B"], ["Y0"], name="gemm", doc_string="node doc", alpha=0.5, transB=1)
    n1 = helper.make_node("Everything", ["Y0"], ["Y1"], name="everything", domain="custom.domain", **attrs)
    n1.attribute[0].doc_string = "attr doc"
    n2 = helper.make_node("MyFunc", ["Y1"], ["Y"], name="call", domain="custom.domain")
    a = n2.attribute.add()
    a.name = "alpha"
    a.type = AttributeProto.FLOAT
    a.f = 0.25

    x = helper.make_tensor_value_info("X", FLOAT, ["batch", 2])
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    x.type.denotation = "TENSOR"
    x.doc_string = "input doc"
    y = helper.make_tensor_value_info("Y", FLOAT, ["batch", 3])
    unknown_dim = helper.make_tensor_value_info("U", FLOAT, [None, 3])
    value_info = [unknown_dim]
    for name, tp in (("seq", tp_seq), ("opt", tp_opt), ("map", tp_map), ("sparse", tp_sparse), ("opaque", tp_opaque)):
        vi = onnx.ValueInfoProto(name=name)
        vi.type.CopyFrom(tp)
        value_info.append(vi)

    graph = helper.make_graph(
        [n0, n1, n2],
        "main",
        [x],
        [y],
        initializer=[w, b, i32, i64, dbl, u64, strs, f16, bf16, boolean, c64, ext, seg],
        doc_string="graph doc",
        value_info=value_info,
        sparse_initializer=[sparse("sparse_w")],
    )
    qa = graph.quantization_annotation.add()
    qa.tensor_name = "W"
    e = qa.quant_parameter_tensor_names.add()
    e.key, e.value = "SCALE_TENSOR", "W_scale"

    fn = helper.make_function(
        "custom.domain",
        "MyFunc",
        ["a"],
        ["b"],
        [helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_opsetid("", 17)],
        attributes=["alpha"],
        doc_string="function doc",
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom.domain", 1)],
        producer_name="remat-test",
        producer_version="1.0",
        domain="org.example",
        model_version=3,
        doc_string="model doc",
    )
    model.functions.extend([fn])
    helper.set_model_props(model, {"author": "test", "license": "none"})
    ti = model.training_info.add()
    ti.initialization.CopyFrom(subgraph("init"))
    ti.algorithm.CopyFrom(subgraph("algo"))
    e = ti.initialization_binding.add()
    e.key, e.value = "W", "y"
    e = ti.update_binding.add()
    e.key, e.value = "W", "y"

    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def compare(ref_path, ours_path):
    ref = onnx.ModelProto()
    with open(ref_path, "rb") as f:
        ref.ParseFromString(f.read())
    ours = onnx.ModelProto()
    with open(ours_path, "rb") as f:
        ours.ParseFromString(f.read())
    if ref == ours:
        print("equal")
    else:
        print("differ")
        print("--- reference:")
        print(ref)
        print("--- ours:")
        print(ours)


def describe():
    fd = onnx.ModelProto.DESCRIPTOR.file
    messages, enums = [], []

    def walk_enum(e):
        enums.append({"name": e.full_name, "values": {v.name: v.number for v in e.values}})

    def walk(m):
        fields = []
        for f in m.fields:
            type_name = ""
            if f.message_type is not None:
                type_name = f.message_type.full_name
            elif f.enum_type is not None:
                type_name = f.enum_type.full_name
            fields.append({
                "name": f.name,
                "number": f.number,
                "type": f.type,
                "label": f.label,
                "packed": bool(f.has_options and f.GetOptions().packed),
                "oneof": f.containing_oneof.name if f.containing_oneof is not None else "",
                "type_name": type_name,
                "has_default": bool(f.has_default_value),
            })
        messages.append({"name": m.full_name, "fields": fields})
        for n in m.nested_types:
            walk(n)
        for e in m.enum_types:
            walk_enum(e)

    for m in fd.message_types_by_name.values():
        walk(m)
    for e in fd.enum_types_by_name.values():
        walk_enum(e)
    json.dump({"version": onnx.__version__, "messages": messages, "enums": enums}, sys.stdout)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "build":
        build(sys.argv[2])
    elif cmd == "compare":
        compare(sys.argv[2], sys.argv[3])
    elif cmd == "describe":
        describe()
    else:
        sys.exit("unknown command " + cmd)
`
