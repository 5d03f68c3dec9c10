package tfpb

import (
	"bytes"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/pbtest"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestGeneratedCodeIsUpToDate regenerates tfpb.pb.go into a temporary
// directory with gen.sh (the script `go generate` runs) and compares it
// byte for byte with the committed file.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	pbtest.CheckUpToDate(t, "internal/tfpb", "tfpb.proto", "tfpb.pb.go")
}

// --- hand encoding, independent of the generated code ---

type field = pbtest.Field

var (
	msg           = pbtest.Msg
	fInt          = pbtest.Int
	fBytes        = pbtest.Bytes
	fStr          = pbtest.Str
	fMsg          = pbtest.Sub
	fFloat        = pbtest.Float
	fPackedFloats = pbtest.PackedFloats
)

func fPacked(num protowire.Number, vs ...uint64) field { return pbtest.PackedVarints(num, vs...) }

// attr is one entry of a map<string, AttrValue>: key 1, value 2.
func attr(num protowire.Number, key string, value ...field) field {
	return fMsg(num, fStr(1, key), fMsg(2, value...))
}

// handEncodedGraph is a GraphDef written field by field with TensorFlow's
// field numbers, covering every AttrValue case, the typed fields of
// TensorProto, shapes, versions and a function library.
func handEncodedGraph() []byte {
	shape := func(dims ...int64) field {
		var fs []field
		for _, d := range dims {
			fs = append(fs, fMsg(2, fInt(1, d)))
		}
		return fMsg(7, fs...) // AttrValue.shape
	}
	conv := fMsg(1, // GraphDef.node
		fStr(1, "conv"),
		fStr(2, "_FusedConv2D"),
		fStr(3, "x"), fStr(3, "w"), fStr(3, "b:0"), fStr(3, "^gate"),
		fStr(4, "/device:CPU:0"),
		attr(5, "T", fInt(6, 1)), // type DT_FLOAT
		attr(5, "data_format", fStr(2, "NHWC")),
		attr(5, "epsilon", fFloat(4, 0.001)),
		attr(5, "fused_ops", fMsg(1, fStr(2, "BiasAdd"), fStr(2, "Relu"))),
		attr(5, "strides", fMsg(1, fPacked(3, 1, 2, 2, 1))),
		attr(5, "use_cudnn_on_gpu", fInt(5, 1)),
		attr(5, "num_args", fInt(3, 1)),
		attr(5, "_output_shapes", fMsg(1, fMsg(7, fMsg(2, fInt(1, 1)), fMsg(2, fInt(1, uint64AsInt(math.MaxUint64)))))),
		attr(5, "f", fMsg(10, fStr(1, "fn"), attr(2, "k", fInt(3, 3)))),
		attr(5, "p", fStr(9, "outer_attr")),
		fMsg(6, fStr(1, "orig_conv"), fStr(2, "orig_fn")),
		fMsg(7, fInt(1, 1000), fMsg(2, fInt(1, 210))),
	)
	w := fMsg(1,
		fStr(1, "w"),
		fStr(2, "Const"),
		attr(5, "dtype", fInt(6, 1)),
		attr(5, "value", fMsg(8, // AttrValue.tensor
			fInt(1, 1),                   // dtype
			fMsg(2, fMsg(2, fInt(1, 2))), // tensor_shape [2]
			fPackedFloats(5, 0.5, -2),    // float_val
		)),
	)
	x := fMsg(1,
		fStr(1, "x"),
		fStr(2, "Placeholder"),
		attr(5, "dtype", fInt(6, 19)), // DT_HALF
		attr(5, "shape", shape(1, -1)),
	)
	half := fMsg(1,
		fStr(1, "h"),
		fStr(2, "Const"),
		attr(5, "value", fMsg(8,
			fInt(1, 19),
			fMsg(2, fInt(3, 1)), // unknown_rank
			fInt(3, 1),          // version_number
			fPacked(13, 0x3c00), // half_val
			fBytes(4, []byte{1, 2}),
			fPacked(16, 7),
			fPacked(17, 8),
			fBytes(18, []byte{0x38}),
		)),
	)
	return msg(conv, w, x, half,
		fMsg(2, // library
			fMsg(1, // function
				fMsg(1, fStr(1, "fn"), fMsg(2, fStr(1, "a"), fInt(3, 1)), fMsg(3, fStr(1, "r"), fStr(4, "T"))),
				fMsg(3, fStr(1, "n"), fStr(2, "Relu"), fStr(3, "a")),
				fMsg(4, fStr(1, "r"), fStr(2, "n:activations:0")), // ret: map<string, string>
			),
			fMsg(2, fStr(1, "fn"), fStr(2, "fn_grad")),
			fMsg(3, fStr(1, "g"), fStr(2, "Relu")),
		),
		fInt(3, 7), // deprecated version
		fMsg(4, fInt(1, 1882), fInt(2, 12), fPacked(3, 5)),
	)
}

func uint64AsInt(u uint64) int64 { return int64(u) }

func expectedGraph() *GraphDef {
	f := func(v float32) *AttrValue { return &AttrValue{Value: &AttrValue_F{F: v}} }
	i := func(v int64) *AttrValue { return &AttrValue{Value: &AttrValue_I{I: v}} }
	dim := func(n int64) *TensorShapeProto_Dim { return &TensorShapeProto_Dim{Size: n} }
	return &GraphDef{
		Node: []*NodeDef{
			{
				Name:   "conv",
				Op:     "_FusedConv2D",
				Input:  []string{"x", "w", "b:0", "^gate"},
				Device: "/device:CPU:0",
				Attr: map[string]*AttrValue{
					"T":                {Value: &AttrValue_Type{Type: DataType_DT_FLOAT}},
					"data_format":      {Value: &AttrValue_S{S: []byte("NHWC")}},
					"epsilon":          f(0.001),
					"fused_ops":        {Value: &AttrValue_List{List: &AttrValue_ListValue{S: [][]byte{[]byte("BiasAdd"), []byte("Relu")}}}},
					"strides":          {Value: &AttrValue_List{List: &AttrValue_ListValue{I: []int64{1, 2, 2, 1}}}},
					"use_cudnn_on_gpu": {Value: &AttrValue_B{B: true}},
					"num_args":         i(1),
					"_output_shapes": {Value: &AttrValue_List{List: &AttrValue_ListValue{Shape: []*TensorShapeProto{
						{Dim: []*TensorShapeProto_Dim{dim(1), dim(-1)}},
					}}}},
					"f": {Value: &AttrValue_Func{Func: &NameAttrList{Name: "fn", Attr: map[string]*AttrValue{"k": i(3)}}}},
					"p": {Value: &AttrValue_Placeholder{Placeholder: "outer_attr"}},
				},
				ExperimentalDebugInfo: &NodeDef_ExperimentalDebugInfo{OriginalNodeNames: []string{"orig_conv"}, OriginalFuncNames: []string{"orig_fn"}},
				ExperimentalType:      &FullTypeDef{TypeId: FullTypeId_TFT_TENSOR, Args: []*FullTypeDef{{TypeId: FullTypeId_TFT_FLOAT}}},
			},
			{
				Name: "w",
				Op:   "Const",
				Attr: map[string]*AttrValue{
					"dtype": {Value: &AttrValue_Type{Type: DataType_DT_FLOAT}},
					"value": {Value: &AttrValue_Tensor{Tensor: &TensorProto{
						Dtype:       DataType_DT_FLOAT,
						TensorShape: &TensorShapeProto{Dim: []*TensorShapeProto_Dim{dim(2)}},
						FloatVal:    []float32{0.5, -2},
					}}},
				},
			},
			{
				Name: "x",
				Op:   "Placeholder",
				Attr: map[string]*AttrValue{
					"dtype": {Value: &AttrValue_Type{Type: DataType_DT_HALF}},
					"shape": {Value: &AttrValue_Shape{Shape: &TensorShapeProto{Dim: []*TensorShapeProto_Dim{dim(1), dim(-1)}}}},
				},
			},
			{
				Name: "h",
				Op:   "Const",
				Attr: map[string]*AttrValue{
					"value": {Value: &AttrValue_Tensor{Tensor: &TensorProto{
						Dtype:         DataType_DT_HALF,
						TensorShape:   &TensorShapeProto{UnknownRank: true},
						VersionNumber: 1,
						HalfVal:       []int32{0x3c00},
						TensorContent: []byte{1, 2},
						Uint32Val:     []uint32{7},
						Uint64Val:     []uint64{8},
						Float8Val:     []byte{0x38},
					}}},
				},
			},
		},
		Library: &FunctionDefLibrary{
			Function: []*FunctionDef{{
				Signature: &OpDef{
					Name:      "fn",
					InputArg:  []*OpDef_ArgDef{{Name: "a", Type: DataType_DT_FLOAT}},
					OutputArg: []*OpDef_ArgDef{{Name: "r", TypeAttr: "T"}},
				},
				NodeDef: []*NodeDef{{Name: "n", Op: "Relu", Input: []string{"a"}}},
				Ret:     map[string]string{"r": "n:activations:0"},
			}},
			Gradient:            []*GradientDef{{FunctionName: "fn", GradientFunc: "fn_grad"}},
			RegisteredGradients: []*RegisteredGradient{{GradientFunc: "g", RegisteredOpType: "Relu"}},
		},
		Version:  7,
		Versions: &VersionDef{Producer: 1882, MinConsumer: 12, BadConsumers: []int32{5}},
	}
}

// TestWireFormat decodes a GraphDef encoded by hand with TensorFlow's field
// numbers and compares it with the message the generated code should
// produce; a wrong field number or type in tfpb.proto fails it.
func TestWireFormat(t *testing.T) {
	got := &GraphDef{}
	if err := proto.Unmarshal(handEncodedGraph(), got); err != nil {
		t.Fatal(err)
	}
	if len(got.ProtoReflect().GetUnknown()) > 0 {
		t.Errorf("fields left unknown: % x", got.ProtoReflect().GetUnknown())
	}
	for _, n := range got.Node {
		if len(n.ProtoReflect().GetUnknown()) > 0 {
			t.Errorf("node %s: fields left unknown", n.Name)
		}
	}
	if want := expectedGraph(); !proto.Equal(got, want) {
		t.Errorf("decoded\n%v\nwant\n%v", got, want)
	}
}

// TestUnknownFieldsSurvive checks that a field this schema leaves out
// (GraphDef.debug_info, field 5) is kept through a binary round trip.
func TestUnknownFieldsSurvive(t *testing.T) {
	in := msg(fMsg(1, fStr(1, "a"), fStr(2, "NoOp")), fMsg(5, fStr(1, "file.py")))
	g := &GraphDef{}
	if err := proto.Unmarshal(in, g); err != nil {
		t.Fatal(err)
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Errorf("round trip changed the bytes:\n in % x\nout % x", in, out)
	}
}

// TestProtoc checks the schema with protoc itself: it decodes our encoding
// as tensorflow.GraphDef, and a text GraphDef it encodes decodes to the
// expected message.
func TestProtoc(t *testing.T) {
	if testing.Short() {
		t.Skip("runs protoc; skipped in -short mode")
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Fatalf("protoc not found on PATH (%v): install the Debian package protobuf-compiler", err)
	}
	run := func(stdin []byte, args ...string) []byte {
		t.Helper()
		cmd := exec.Command("protoc", append([]string{"--proto_path=.", "tfpb.proto"}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("protoc %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	bin, err := proto.MarshalOptions{Deterministic: true}.Marshal(expectedGraph())
	if err != nil {
		t.Fatal(err)
	}
	text := string(run(bin, "--decode=tensorflow.GraphDef"))
	for _, want := range []string{
		`name: "conv"`, `op: "_FusedConv2D"`, `input: "^gate"`, `type: DT_FLOAT`, `s: "NHWC"`,
		`float_val: 0.5`, `half_val: 15360`, `unknown_rank: true`, `producer: 1882`,
		`placeholder: "outer_attr"`, `gradient_func: "fn_grad"`, `type_id: TFT_TENSOR`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("protoc --decode output lacks %q:\n%s", want, text)
		}
	}
	enc := run([]byte(text), "--encode=tensorflow.GraphDef")
	back := &GraphDef{}
	if err := proto.Unmarshal(enc, back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, expectedGraph()) {
		t.Errorf("protoc --encode of its own decoding differs:\n%v", back)
	}
}

// TestJSONMapping reads a node as TensorFlow.js writes it in model.json
// (camelCase names, int64 as strings, bytes in base64, enum names).
func TestJSONMapping(t *testing.T) {
	src := `{"node": [{"name": "c", "op": "Const", "attr": {
		"value": {"tensor": {"dtype": "DT_INT32", "tensorShape": {"dim": [{"size": "2"}]}, "intVal": [1, -1]}},
		"dtype": {"type": "DT_INT32"},
		"fused_ops": {"list": {"s": ["Qmlhc0FkZA=="]}},
		"strides": {"list": {"i": ["1", "2"]}},
		"epsilon": {"f": 0}}}],
		"versions": {"producer": 561}, "library": {}}`
	g := &GraphDef{}
	if err := protojson.Unmarshal([]byte(src), g); err != nil {
		t.Fatal(err)
	}
	n := g.Node[0]
	if tp := n.Attr["value"].GetTensor(); tp.GetDtype() != DataType_DT_INT32 || tp.GetTensorShape().GetDim()[0].GetSize() != 2 || len(tp.GetIntVal()) != 2 {
		t.Errorf("value = %v", tp)
	}
	if s := n.Attr["fused_ops"].GetList().GetS(); len(s) != 1 || string(s[0]) != "BiasAdd" {
		t.Errorf("fused_ops = %q", s)
	}
	if i := n.Attr["strides"].GetList().GetI(); len(i) != 2 || i[1] != 2 {
		t.Errorf("strides = %v", i)
	}
	if _, ok := n.Attr["epsilon"].GetValue().(*AttrValue_F); !ok {
		t.Errorf("epsilon: a zero float must still select the f case, got %T", n.Attr["epsilon"].GetValue())
	}
	if g.GetVersions().GetProducer() != 561 {
		t.Errorf("producer = %d", g.GetVersions().GetProducer())
	}
}
