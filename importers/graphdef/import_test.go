package graphdef_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/internal/pbtest"
	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtest"
	"github.com/remat-compile/remat/ir/irtext"
)

var update = flag.Bool("update", false, "rewrite testdata/tiny.ir with the imported form")

// TestHostileInputs feeds malformed and hostile files to Import: each must
// fail with an ir.ErrorList whose text names the problem, never a panic or
// an internal error.
func TestHostileInputs(t *testing.T) {
	x := placeholder("x", 1, 4)
	relu := unary("r", "Relu", "x")
	good := pb(t, x, relu)
	tinyJSON, err := os.ReadFile("testdata/tiny/model.json")
	if err != nil {
		t.Fatal(err)
	}
	tinyBin, err := os.ReadFile("testdata/tiny/tiny.bin")
	if err != nil {
		t.Fatal(err)
	}
	tinyShards := map[string][]byte{"tiny.bin": tinyBin}
	f32w := func(name string, dims ...int64) weight { return weight{Name: name, Shape: dims, DType: "float32"} }
	oneWeight := func(w weight, shard []byte, nodes ...*tfpb.NodeDef) ([]byte, map[string][]byte) {
		return modelJSON(t, nodes, []group{{Paths: []string{"w.bin"}, Weights: []weight{w}}}), map[string][]byte{"w.bin": shard}
	}
	jsonWith := func(path string) []byte {
		return modelJSON(t, []*tfpb.NodeDef{x, stripped("c", tfpb.DataType_DT_FLOAT, 2)},
			[]group{{Paths: []string{path}, Weights: []weight{f32w("c", 2)}}})
	}

	// A Const of dtype 57, which TensorFlow does not define.
	badDType := constOf("c", &tfpb.TensorProto{Dtype: 57, TensorShape: shapeProto(1), IntVal: []int32{1}})
	// NodeDef.name (field 1, a string) written as a varint.
	wrongWire := pbtest.Msg(pbtest.Sub(1, pbtest.Int(1, 5)))
	// AttrValue.f as a varint, inside the attr map of a node.
	wrongWireInMap := pbtest.Msg(pbtest.Sub(1, pbtest.Str(1, "n"), pbtest.Sub(5, pbtest.Str(1, "epsilon"), pbtest.Sub(2, pbtest.Int(4, 7)))))

	shortJSON, shortShards := oneWeight(f32w("c", 4), f32Bytes(1, 2, 3), x, stripped("c", tfpb.DataType_DT_FLOAT, 4))
	quantJSON, quantShards := oneWeight(weight{Name: "c", Shape: []int64{2}, DType: "float32", Quantization: map[string]any{"dtype": "int4"}}, []byte{1, 2}, stripped("c", tfpb.DataType_DT_FLOAT, 2))
	noMinJSON, noMinShards := oneWeight(weight{Name: "c", Shape: []int64{2}, DType: "float32", Quantization: map[string]any{"dtype": "uint8"}}, []byte{1, 2}, stripped("c", tfpb.DataType_DT_FLOAT, 2))
	orphanJSON, orphanShards := oneWeight(f32w("ghost", 1), f32Bytes(1), x)
	notConstJSON, notConstShards := oneWeight(f32w("x", 1), f32Bytes(1), x)
	f64JSON, f64Shards := oneWeight(weight{Name: "c", Shape: []int64{1}, DType: "float64"}, make([]byte, 8), stripped("c", tfpb.DataType_DT_DOUBLE, 1))
	negJSON, negShards := oneWeight(f32w("c", -1), nil, stripped("c", tfpb.DataType_DT_FLOAT, 1))
	hugeJSON, hugeShards := oneWeight(f32w("c", 1<<40, 1<<40), nil, stripped("c", tfpb.DataType_DT_FLOAT, 1))
	bigJSON, bigShards := oneWeight(f32w("c", 1<<28), nil, stripped("c", tfpb.DataType_DT_FLOAT, 1<<28))
	noWeightJSON := modelJSON(t, []*tfpb.NodeDef{x, stripped("c", tfpb.DataType_DT_FLOAT, 2)}, nil)
	dupWeightJSON := modelJSON(t, []*tfpb.NodeDef{stripped("c", tfpb.DataType_DT_FLOAT, 1)},
		[]group{{Paths: []string{"w.bin"}, Weights: []weight{f32w("c", 1), f32w("c", 1)}}})

	tests := []struct {
		name   string
		data   []byte
		opts   graphdef.Options
		want   string
		format graphdef.Format
	}{
		{name: "truncated bytes", data: good[:len(good)-7], want: "not a valid TensorFlow GraphDef (binary protobuf)"},
		{name: "wrong wire type", data: wrongWire, want: "node[0].name: field 1 has wire type varint, the schema says length-delimited"},
		{name: "wrong wire type in an attribute", data: wrongWireInMap, want: `node[0].attr["epsilon"].f: field 4 has wire type varint, the schema says fixed32`},
		{name: "reads a missing node", data: pb(t, x, unary("r", "Relu", "nowhere")), want: `node "r" (Relu): input "nowhere" names no node of the graph (dangling reference)`},
		{name: "missing control input", data: pb(t, x, node("g", "NoOp", "^nowhere")), want: `control input "^nowhere" names no node of the graph`},
		{name: "cycle through control inputs", data: pb(t, x, node("a", "NoOp", "^b"), node("b", "NoOp", "^a")), want: `has a cycle: nodes "a" (tf.NoOp), "b" (tf.NoOp) depend on each other`},
		{name: "cycle through data inputs", data: pb(t, unary("a", "Relu", "b"), unary("b", "Relu", "a")), want: "has a cycle"},
		{name: "self control input", data: pb(t, node("a", "NoOp", "^a")), want: "lists itself as a control input"},
		{name: "duplicate node names", data: pb(t, x, unary("r", "Relu", "x"), unary("r", "Sigmoid", "x")), want: `two NodeDefs are named "r" (Relu and Sigmoid, positions 1 and 2)`},
		{name: "unnamed node", data: pb(t, node("", "NoOp")), want: "NodeDef 0 has no name"},
		{name: "unknown dtype", data: pb(t, badDType), want: "unknown dtype 57 (not a TensorFlow DataType)"},
		{name: "negative dims", data: pb(t, f32Const("c", []int64{2, -3}, 1)), want: "negative dimension -3 in shape [2,-3]"},
		{name: "negative placeholder dim", data: pb(t, placeholder("x", 1, -5)), want: "negative dimension -5"},
		{name: "huge claimed shape (overflow)", data: pb(t, f32Const("c", []int64{1 << 40, 1 << 40}, 1)), want: "more elements than can be stored"},
		{name: "huge claimed shape (limit)", data: pb(t, f32Const("c", []int64{1 << 30}, 1)), opts: graphdef.Options{MaxTensorBytes: 1 << 20}, want: "f32[1073741824] takes more than the limit of 1048576 bytes"},
		{name: "too many typed values", data: pb(t, f32Const("c", []int64{2}, 1, 2, 3)), want: "float_val has 3 values, f32[2] holds 2"},
		{name: "values in the wrong field", data: pb(t, constOf("c", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: shapeProto(1), IntVal: []int32{1}})), want: "f32[1] tensor has 1 values in int_val; TensorFlow keeps f32 elements in float_val or tensor_content"},
		{name: "tensor_content size", data: pb(t, constOf("c", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: shapeProto(2), TensorContent: []byte{1, 2, 3}})), want: "tensor_content has 3 bytes, f32[2] needs 8"},
		{name: "output index out of range", data: pb(t, x, i32Const("ax", nil, 1), with(node("s", "Split", "ax", "x"), "num_split", intAttr(2)), unary("r", "Relu", "s:7")), want: `reads output 7`},
		{name: "bad output index", data: pb(t, x, unary("r", "Relu", "x:one")), want: `output index "one" is not a non-negative integer`},
		{name: "data input after a control input", data: pb(t, x, node("g", "NoOp"), node("a", "AddV2", "x", "^g", "x")), want: "follows a control input"},
		{name: "arity", data: pb(t, x, node("a", "AddV2", "x")), want: `has 1 data inputs; AddV2 takes exactly 2`},
		{name: "variadic outputs without their attribute", data: pb(t, x, node("u", "Unpack", "x")), want: "Unpack has a variable number of outputs and no num"},
		{name: "huge output count", data: pb(t, x, with(node("u", "Unpack", "x"), "num", intAttr(1<<40))), want: "attribute num = 1099511627776 outputs"},
		{name: "placeholder with inputs", data: pb(t, x, with(node("p", "Placeholder", "x"), "dtype", typeAttr(tfpb.DataType_DT_FLOAT))), want: "a Placeholder has 1 data inputs"},
		{name: "const without value", data: pb(t, node("c", "Const")), want: "a Const has no value attribute"},

		{name: "bad JSON", data: tinyJSON[:len(tinyJSON)/2], opts: graphdef.Options{Shards: tinyShards}, want: "not a valid TensorFlow.js model.json"},
		{name: "bad base64", data: []byte(`{"modelTopology": {"node": [{"name": "a", "op": "NoOp", "attr": {"s": {"s": "!!!"}}}]}}`), opts: graphdef.Options{Shards: map[string][]byte{}}, want: `invalid value for bytes field s: "!!!"`},
		{name: "unknown enum name", data: []byte(`{"modelTopology": {"node": [{"name": "a", "op": "NoOp", "attr": {"T": {"type": "DT_FOO"}}}]}}`), opts: graphdef.Options{Shards: map[string][]byte{}}, want: `invalid value for enum field type: "DT_FOO"`},
		{name: "duplicate JSON member", data: []byte(`{"format": "graph-model", "format": "graph-model"}`), want: `member "format" appears twice`},
		{name: "not a graph model", data: []byte(`{"format": "layers-model", "modelTopology": {}}`), want: `format "layers-model"`},
		{name: "no topology", data: []byte(`{"format": "graph-model"}`), want: "no modelTopology"},
		{name: "shard shorter than the manifest", data: shortJSON, opts: graphdef.Options{Shards: shortShards}, want: `the shards hold 12 bytes, but weight "c" needs bytes 0 to 16: a shard is shorter than the manifest says`},
		{name: "shard path escaping", data: jsonWith("../x.bin"), opts: graphdef.Options{BaseDir: t.TempDir()}, want: `shard path "../x.bin" escapes the model's directory`},
		{name: "absolute shard path", data: jsonWith("/etc/passwd"), opts: graphdef.Options{BaseDir: t.TempDir()}, want: `shard path "/etc/passwd" is absolute`},
		{name: "missing shard file", data: jsonWith("nothere.bin"), opts: graphdef.Options{BaseDir: t.TempDir()}, want: `shard "nothere.bin" does not exist`},
		{name: "no shard directory", data: jsonWith("w.bin"), want: "no directory to read them from"},
		{name: "unknown weight dtype", data: f64JSON, opts: graphdef.Options{Shards: f64Shards}, want: `unknown dtype "float64"`},
		{name: "quantization with an unknown dtype", data: quantJSON, opts: graphdef.Options{Shards: quantShards}, want: `quantization with unknown dtype "int4"`},
		{name: "quantization without min and scale", data: noMinJSON, opts: graphdef.Options{Shards: noMinShards}, want: "quantization uint8 needs min and scale"},
		{name: "weight with no Const node", data: orphanJSON, opts: graphdef.Options{Shards: orphanShards}, want: `manifest weight "ghost" names no node of the graph`},
		{name: "weight of a non-Const node", data: notConstJSON, opts: graphdef.Options{Shards: notConstShards}, want: `manifest weight "x" names a Placeholder node`},
		{name: "Const with no weight", data: noWeightJSON, opts: graphdef.Options{Shards: map[string][]byte{}}, want: `node "c" (Const): a Const has no entry in the weights manifest and no value of its own`},
		{name: "negative weight dimension", data: negJSON, opts: graphdef.Options{Shards: negShards}, want: "negative dimension -1 in shape"},
		{name: "huge weight shape (overflow)", data: hugeJSON, opts: graphdef.Options{Shards: hugeShards}, want: "more elements than can be stored"},
		{name: "huge weight shape (no bytes)", data: bigJSON, opts: graphdef.Options{Shards: bigShards}, want: "a shard is shorter than the manifest says"},
		{name: "weight listed twice", data: dupWeightJSON, opts: graphdef.Options{Shards: map[string][]byte{"w.bin": f32Bytes(1, 2)}}, want: `weight "c" is listed twice`},
		{name: "signature naming a missing node", data: modelJSON(t, []*tfpb.NodeDef{x}, nil, "signature", `{"outputs": {"y:0": {"name": "nope:0"}}}`), opts: graphdef.Options{Shards: map[string][]byte{}}, want: `signature output "nope:0" names no node of the graph`},
	}
	if len(tests) < 20 {
		t.Fatalf("only %d hostile inputs", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.File = "bad"
			g, err := graphdef.Import(tt.data, opts)
			if err == nil {
				t.Fatalf("Import succeeded, want an error containing %q; graph:\n%s", tt.want, irtext.Format(g))
			}
			var el ir.ErrorList
			if !errors.As(err, &el) {
				t.Fatalf("error is %T, not an ir.ErrorList: %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestShardSymlinkOutside checks that a shard that is a symlink leading out
// of the model's directory is refused.
func TestShardSymlinkOutside(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.bin"), f32Bytes(1, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "secret.bin"), filepath.Join(dir, "w.bin")); err != nil {
		t.Fatal(err)
	}
	data := modelJSON(t, []*tfpb.NodeDef{stripped("c", tfpb.DataType_DT_FLOAT, 2)},
		[]group{{Paths: []string{"w.bin"}, Weights: []weight{{Name: "c", Shape: []int64{2}, DType: "float32"}}}})
	_, err := graphdef.Import(data, graphdef.Options{BaseDir: dir})
	if err == nil || !strings.Contains(err.Error(), `shard "w.bin"`) || !strings.Contains(err.Error(), "escapes") {
		t.Fatalf("Import = %v, want the symlink refused as escaping the directory", err)
	}
}

// TestTiny checks the IR the importer builds from testdata/tiny/model.json
// against the golden text testdata/tiny.ir (run with -update to rewrite
// it), and what it keeps in Ext.
func TestTiny(t *testing.T) {
	g, err := graphdef.ImportFile("testdata/tiny/model.json", graphdef.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := irtext.Format(g)
	if *update {
		if err := os.WriteFile("testdata/tiny.ir", []byte(got), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/tiny.ir")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("imported IR differs from testdata/tiny.ir (-want +got):\n%s", irtest.Diff(string(want), got))
	}
	back, err := irtext.Parse("tiny.ir", got)
	if err != nil {
		t.Fatalf("the printed IR does not parse back: %v", err)
	}
	irtest.Equal(t, back, g)

	info := g.Ext.(*graphdef.ModelInfo)
	if info.Format != graphdef.FormatTFJS || info.NumNodeDefs != 11 || info.Versions.GetProducer() != 1882 || info.TFJS == nil {
		t.Fatalf("ModelInfo = %+v", info)
	}
	keys, _, ok := info.TFJSTopLevel()
	if !ok || strings.Join(keys, ",") != "format,generatedBy,convertedBy,modelTopology,weightsManifest" {
		t.Errorf("top-level keys %v", keys)
	}
	if info.TFJS.GeneratedBy != "remat-compile tests" || info.TFJS.ConvertedBy != "hand" || info.TFJS.Format != "graph-model" {
		t.Errorf("TFJSInfo strings %q %q %q", info.TFJS.Format, info.TFJS.GeneratedBy, info.TFJS.ConvertedBy)
	}
	shard, _ := os.ReadFile("testdata/tiny/tiny.bin")
	paths, groups, contents := info.TFJSShards()
	if len(paths) != 1 || paths[0] != "tiny.bin" || groups[0] != 0 || !bytes.Equal(contents[0], shard) {
		t.Errorf("TFJSShards = %v %v (%d bytes)", paths, groups, len(contents))
	}
	var stored []byte
	for _, grp := range info.TFJS.Manifest {
		for _, w := range grp.Weights {
			stored = append(stored, w.Stored...)
			if w.Param == nil || w.Param.Name != w.Name {
				t.Errorf("weight %s became %v", w.Name, w.Param)
			}
		}
	}
	if !bytes.Equal(append(stored, info.TFJS.Trailing...), shard) {
		t.Errorf("the weights' stored bytes and the trailing bytes do not make up the shard")
	}

	byName := map[string]*ir.Node{}
	for _, n := range g.Nodes {
		byName[n.Name] = n
		ni := n.Ext.(*graphdef.NodeInfo)
		if ni.TFNode().GetName() != n.Name || ni.TFNode().GetOp() != n.Op {
			t.Errorf("node %s keeps NodeDef %v", n.Name, ni.TFNode())
		}
		for _, a := range n.Attrs {
			if a.Ext.(*graphdef.AttrInfo).TFAttr() != ni.TFNode().GetAttr()[a.Name] {
				t.Errorf("%s.%s: Ext does not hold the AttrValue as read", n.Name, a.Name)
			}
		}
	}
	if conv := byName["conv"].Ext.(*graphdef.NodeInfo); conv.TFIndex() != 3 || conv.TFNode().GetDevice() != "/device:CPU:0" {
		t.Errorf("conv: index %d, device %q", conv.TFIndex(), conv.TFNode().GetDevice())
	}
	if a := byName["a"]; len(a.Control) != 1 || a.Control[0] != byName["gate"] {
		t.Errorf("a.Control = %v, want [gate]", a.Control)
	}
	if b := byName["conv"].Attr("use_cudnn_on_gpu"); b.Kind != ir.AttrInt || b.Int != 1 || b.Ext.(*graphdef.AttrInfo).TFAttr().GetB() != true {
		t.Errorf("use_cudnn_on_gpu = %+v, want int 1 keeping the bool", b)
	}
	for _, p := range g.Params {
		ci := p.Ext.(*graphdef.ConstInfo)
		if !ci.TFConstUnchanged(p.Data) {
			t.Errorf("param %s: TFConstUnchanged false on the imported tensor", p.Name)
		}
		entry, st, ok := ci.TFWeight()
		if !ok || len(entry) == 0 || len(st) == 0 {
			t.Errorf("param %s: no weight", p.Name)
		}
	}
	w := g.Params[0]
	if got := f32s(w.Data.Raw); len(got) != 6 || got[1] != -1 || got[5] != -0.5 {
		t.Errorf("w = %v, want the float16 values widened", got)
	}
	mutated := *w.Data
	mutated.Raw = append([]byte(nil), w.Data.Raw...)
	mutated.Raw[0] ^= 1
	if w.Ext.(*graphdef.ConstInfo).TFConstUnchanged(&mutated) {
		t.Errorf("TFConstUnchanged true on changed elements")
	}
}

// TestBinaryMatchesJSON encodes testdata/tiny.pbtxt with protoc against our
// schema and checks that the binary GraphDef imports to the same IR as the
// TensorFlow.js form of the same graph.
func TestBinaryMatchesJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs protoc; skipped in -short mode")
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Fatalf("protoc not found on PATH (%v): install the Debian package protobuf-compiler", err)
	}
	text, err := os.ReadFile("testdata/tiny.pbtxt")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("protoc", "--proto_path=../../internal/tfpb", "--encode=tensorflow.GraphDef", "tfpb.proto")
	cmd.Stdin = bytes.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	bin, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc --encode: %v\n%s", err, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "tiny.pb")
	if err := os.WriteFile(path, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	fromPB, err := graphdef.ImportFile(path, graphdef.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := graphdef.ImportFile("testdata/tiny/model.json", graphdef.Options{})
	if err != nil {
		t.Fatal(err)
	}
	irtest.Equal(t, fromPB, fromJSON)
	if info := fromPB.Ext.(*graphdef.ModelInfo); info.Format != graphdef.FormatGraphDef || info.TFJS != nil {
		t.Errorf("ModelInfo of the .pb: %+v", info)
	}
	if b := fromPB.Params[1]; len(f32s(b.Data.Raw)) != 3 || f32s(b.Data.Raw)[2] != 0.125 {
		t.Errorf("b = %v, want float_val's one value repeated to fill [3]", f32s(b.Data.Raw))
	}
}

// TestDequantizeMatchesTFJS decodes quantized weights and compares them
// with what TensorFlow.js 4.22's tf.io.decodeWeights produced for the same
// bytes (the SHA-256 of each decoded Float32Array or Int32Array, recorded
// by running tfjs-core in Node on the specs below): every uint8 and uint16
// value dequantized to float32 and to int32 (with Math.round's ties and
// Int32Array's wrap-around), and all 65536 float16 bit patterns.
func TestDequantizeMatchesTFJS(t *testing.T) {
	u8 := make([]byte, 256)
	for i := range u8 {
		u8[i] = byte(i)
	}
	u16 := make([]byte, 2*65536)
	for i := range 65536 {
		binary.LittleEndian.PutUint16(u16[2*i:], uint16(i))
	}
	specs := []struct {
		w    weight
		data []byte
		sum  string
	}{
		{weight{"u8f", []int64{256}, "float32", map[string]any{"dtype": "uint8", "min": -0.123456789, "scale": 0.0034567}}, u8,
			"a68ad2047f041c77bec9af4bb3dc952599329b09421bb39c41e28d9c954c0f17"},
		{weight{"u8i", []int64{256}, "int32", map[string]any{"dtype": "uint8", "min": -100.5, "scale": 0.5}}, u8,
			"0f350a710eb6deaf791ae402f9b762debfa2a2920cc252b3da518e0eb23f6ecb"},
		{weight{"u16f", []int64{65536}, "float32", map[string]any{"dtype": "uint16", "min": -1.7, "scale": 5.1e-5}}, u16,
			"0d6a1af285b8270b6f65f03442c33d5886cd74cbf0254f5f66df9fcc1730d200"},
		{weight{"u16i", []int64{65536}, "int32", map[string]any{"dtype": "uint16", "min": -3e9, "scale": 1e5}}, u16,
			"e357a11450ea4d9bc991aa4bcc43952ef63d54d77b9315875b4e0b1d8e679ac2"},
		{weight{"f16", []int64{65536}, "float32", map[string]any{"dtype": "float16"}}, u16,
			"f4fdd084f85448d28c84f20fabf4022ba938e40b7f382d2727dec6f41ac6267a"},
	}
	var nodes []*tfpb.NodeDef
	var ws []weight
	var shard []byte
	for _, s := range specs {
		dt := tfpb.DataType_DT_FLOAT
		if s.w.DType == "int32" {
			dt = tfpb.DataType_DT_INT32
		}
		nodes = append(nodes, stripped(s.w.Name, dt, s.w.Shape...))
		ws = append(ws, s.w)
		shard = append(shard, s.data...)
	}
	data := modelJSON(t, nodes, []group{{Paths: []string{"q.bin"}, Weights: ws}})
	g, err := graphdef.Import(data, graphdef.Options{Shards: map[string][]byte{"q.bin": shard}})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		p := g.Params[i]
		sum := sha256.Sum256(p.Data.Raw)
		if got := hex.EncodeToString(sum[:]); got != s.sum {
			t.Errorf("%s: decoded %v, SHA-256 %s; TensorFlow.js gives %s", s.w.Name, p.Data.Type(), got, s.sum)
		}
	}
	if got := f32s(g.Params[0].Data.Raw)[:2]; got[0] != -0.12345679104328156 || got[1] != -0.12000008672475815 {
		t.Errorf("u8f starts %v, want TensorFlow.js's -0.12345679104328156, -0.12000008672475815", got)
	}
}

// TestTensorSemantics checks TensorFlow's rules for typed values: the last
// value repeats to fill the shape, no values mean zeros, half_val holds
// float16 bits, and tensor_content wins.
func TestTensorSemantics(t *testing.T) {
	h := constOf("h", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_HALF, TensorShape: shapeProto(3), HalfVal: []int32{0x3c00, 0xc000}})
	z := constOf("z", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_INT64, TensorShape: shapeProto(2, 2)})
	r := f32Const("r", []int64{5}, 1, 2)
	tc := constOf("tc", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: shapeProto(1), TensorContent: f32Bytes(7)})
	s := constOf("s", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_STRING, TensorShape: shapeProto(3), StringVal: [][]byte{[]byte("a"), []byte("bc")}})
	b := constOf("b", &tfpb.TensorProto{Dtype: tfpb.DataType_DT_BOOL, TensorShape: shapeProto(2), BoolVal: []bool{true}})
	g, err := graphdef.Import(pb(t, h, z, r, tc, s, b), graphdef.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]*ir.Tensor{}
	for _, v := range g.Params {
		p[v.Name] = v.Data
	}
	if got, _ := p["h"].Float64s(); len(got) != 3 || got[0] != 1 || got[1] != -2 || got[2] != -2 {
		t.Errorf("h = %v, want [1 -2 -2]", got)
	}
	if got, _ := p["z"].Int64s(); len(got) != 4 || got[0] != 0 || got[3] != 0 {
		t.Errorf("z = %v, want four zeros", got)
	}
	if got := f32s(p["r"].Raw); len(got) != 5 || got[1] != 2 || got[4] != 2 {
		t.Errorf("r = %v, want [1 2 2 2 2]", got)
	}
	if got := f32s(p["tc"].Raw); len(got) != 1 || got[0] != 7 {
		t.Errorf("tc = %v", got)
	}
	if got := p["s"].Strs; len(got) != 3 || string(got[2]) != "bc" {
		t.Errorf("s = %q", got)
	}
	if got, _ := p["b"].Int64s(); len(got) != 2 || got[1] != 1 {
		t.Errorf("b = %v", got)
	}
	// Every graph output is an unconsumed NodeDef's output 0: here all six
	// Consts, in file order.
	if len(g.Outputs) != 6 || g.Outputs[0].Name != "h" || g.Outputs[5].Name != "b" {
		t.Errorf("outputs %v", g.Outputs)
	}
}

// TestOutputsAndEdges covers how outputs are counted and chosen and where
// control inputs go.
func TestOutputsAndEdges(t *testing.T) {
	x := placeholder("x", 2, 3)
	c := f32Const("c", []int64{1}, 1)
	nodes := []*tfpb.NodeDef{
		x, c,
		node("gate", "NoOp", "^x", "^c"), // control inputs on a graph input and a parameter
		with(node("u", "Unpack", "x"), "num", intAttr(2)),
		node("custom", "Frobnicate", "u:1", "^gate"), // unknown op read at index 2 below
		unary("r", "Relu", "custom:2"),
		with(node("c2", "Const", "^r"), "value", tensorAttr(&tfpb.TensorProto{Dtype: tfpb.DataType_DT_FLOAT, TensorShape: shapeProto(), FloatVal: []float32{3}})),
		with(node("p2", "Placeholder", "^gate", "^c2"), "dtype", typeAttr(tfpb.DataType_DT_FLOAT)),
	}
	g, err := graphdef.Import(pb(t, nodes...), graphdef.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]*ir.Node{}
	for _, m := range g.Nodes {
		n[m.Name] = m
	}
	if len(n["u"].Outputs) != 2 || n["u"].Outputs[1].Name != "u:1" {
		t.Errorf("Unpack outputs %v, want [u u:1]", n["u"].Outputs)
	}
	if len(n["custom"].Outputs) != 3 {
		t.Errorf("unknown op: %d outputs, want 3 (the highest index read + 1)", len(n["custom"].Outputs))
	}
	if vc := n["gate"].Ext.(*graphdef.NodeInfo).TFValueControls(); len(vc) != 2 || vc[0].Name != "x" || vc[1].Name != "c" {
		t.Errorf("gate's value controls %v", vc)
	}
	if len(n["custom"].Control) != 1 || n["custom"].Control[0] != n["gate"] {
		t.Errorf("custom.Control = %v", n["custom"].Control)
	}
	var c2 *ir.Value
	for _, p := range g.Params {
		if p.Name == "c2" {
			c2 = p
		}
	}
	if ctl := c2.Ext.(*graphdef.ConstInfo).TFControl(); len(ctl) != 1 || ctl[0] != n["r"] {
		t.Errorf("c2's control inputs %v, want [r]", ctl)
	}
	p2 := g.Inputs[1].Ext.(*graphdef.NodeInfo)
	if len(p2.TFControl()) != 1 || p2.TFControl()[0] != n["gate"] || len(p2.TFValueControls()) != 1 || p2.TFValueControls()[0] != c2 {
		t.Errorf("p2's control inputs %v and %v, want [gate] and [c2]", p2.TFControl(), p2.TFValueControls())
	}
	if g.Inputs[1].Type.DType != ir.Float32 || !g.Inputs[1].Type.Unranked {
		t.Errorf("p2 (no shape attribute) has type %v, want f32 of unknown rank", g.Inputs[1].Type)
	}
	// Every NodeDef but p2 is read by a data or control input (r only by
	// c2's control input, c2 only by p2's): p2 is the one output.
	if len(g.Outputs) != 1 || g.Outputs[0] != g.Inputs[1] {
		t.Errorf("outputs %v, want [p2]", g.Outputs)
	}
	if r := n["r"].Outputs[0]; r.Type.DType != ir.Undefined || len(r.Type.Shape) != 0 {
		t.Errorf("r's type %v, want unknown", r.Type)
	}
}

// TestSignatureOrder checks that signature outputs come in TensorFlow.js's
// order: array-index names first, numerically, then by first appearance;
// userDefinedMetadata.signature wins over signature.
func TestSignatureOrder(t *testing.T) {
	x := placeholder("x", 1)
	nodes := []*tfpb.NodeDef{x, unary("b", "Relu", "x"), unary("10", "Relu", "x"), unary("2", "Relu", "x"), unary("a", "Relu", "x")}
	sig := `{"outputs": {"k1": {"name": "b:0"}, "k2": {"name": "10"}, "k3": {"name": "a"}, "k4": {"name": "2"}, "k5": {"name": "b:0"}}}`
	data := modelJSON(t, nodes, nil, "signature", `{"outputs": {"z": {"name": "x"}}}`, "userDefinedMetadata", `{"signature": `+sig+`}`)
	g, err := graphdef.Import(data, graphdef.Options{Shards: map[string][]byte{}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range g.Outputs {
		names = append(names, o.Name)
	}
	if got := strings.Join(names, " "); got != "2 10 b a" {
		t.Errorf("outputs %q, want \"2 10 b a\"", got)
	}
}

func TestDeterministic(t *testing.T) {
	a, err := graphdef.ImportFile("testdata/tiny/model.json", graphdef.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := graphdef.ImportFile("testdata/tiny/model.json", graphdef.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if irtext.Format(a) != irtext.Format(b) {
			t.Fatal("two imports of one file differ")
		}
	}
}
