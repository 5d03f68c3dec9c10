package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// TestBadInputCorpus runs every malformed or hostile model of testdata/bad
// (written by importers/onnx's bad-input table, see EXPECT.tsv) through the
// commands: each must exit with status 1 and a message naming the problem,
// never panic, never report an internal error, and never write an output.
func TestBadInputCorpus(t *testing.T) {
	f, err := os.Open("../../testdata/bad/EXPECT.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		file, want, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("EXPECT.tsv: bad line %q", sc.Text())
		}
		n++
		path := filepath.Join("../../testdata/bad", file)
		t.Run(file, func(t *testing.T) {
			checkBad(t, path, want)
		})
	}
	if n < 25 {
		t.Fatalf("the bad-input corpus has %d cases, want at least 25", n)
	}
}

// checkBad runs inspect and convert on a bad model.
func checkBad(t *testing.T, path, want string, extra ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.onnx")
	for _, args := range [][]string{
		append(append([]string{"inspect"}, extra...), path),
		append(append([]string{"convert", "-o", out}, extra...), path),
	} {
		code, _, errs := run(t, args...)
		if code != exitFailure {
			t.Errorf("%v: exit %d, want 1; stderr:\n%s", args[:1], code, errs)
		}
		if !strings.Contains(errs, want) {
			t.Errorf("%v: stderr\n%s\nwant it to contain %q", args[:1], errs, want)
		}
		if !strings.Contains(errs, filepath.Base(path)) {
			t.Errorf("%v: the message does not name the file: %s", args[:1], errs)
		}
		if strings.Contains(errs, "internal error") || strings.Contains(errs, "panic") {
			t.Errorf("%v: bad input reported as a bug: %s", args[:1], errs)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("convert left %s behind for a bad model", out)
	}
}

// TestBadInputsNeedingFiles covers hostile inputs that involve more than
// one file or a later pass: external data escaping the model's directory
// or running past the end of its file, and an unknown op without a
// declared output type.
func TestBadInputsNeedingFiles(t *testing.T) {
	s := proto.String
	model := func(init *onnxpb.TensorProto, nodes ...*onnxpb.NodeProto) *onnxpb.ModelProto {
		f32 := onnxpb.TensorProto_FLOAT
		vi := func(name string) *onnxpb.ValueInfoProto {
			return &onnxpb.ValueInfoProto{Name: s(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
				ElemType: proto.Int32(int32(f32)),
				Shape:    &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 4}}}},
			}}}}
		}
		g := &onnxpb.GraphProto{Name: s("g"), Node: nodes, Input: []*onnxpb.ValueInfoProto{vi("x")}, Output: []*onnxpb.ValueInfoProto{{Name: s("y")}}}
		if init != nil {
			g.Initializer = []*onnxpb.TensorProto{init}
		}
		return &onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: g, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(17)}, {Domain: s("com.example"), Version: proto.Int64(1)}}}
	}
	external := func(location string, offset, length int) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{
			Name: s("w"), Dims: []int64{4}, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
			DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
			ExternalData: []*onnxpb.StringStringEntryProto{
				{Key: s("location"), Value: s(location)},
				{Key: s("offset"), Value: s(itoa(offset))},
				{Key: s("length"), Value: s(itoa(length))},
			},
		}
	}
	add := &onnxpb.NodeProto{OpType: s("Add"), Name: s("add"), Input: []string{"x", "w"}, Output: []string{"y"}}
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(root, "secret.bin"), make([]byte, 64), 0o644)
	os.WriteFile(filepath.Join(dir, "weights.bin"), make([]byte, 8), 0o644)
	os.Symlink(filepath.Join(root, "secret.bin"), filepath.Join(dir, "link.bin"))
	for _, tt := range []struct {
		name string
		m    *onnxpb.ModelProto
		want string
	}{
		{"dotdot", model(external("../secret.bin", 0, 16), add), `"../secret.bin"`},
		{"absolute", model(external(filepath.Join(root, "secret.bin"), 0, 16), add), "absolute"},
		{"symlink", model(external("link.bin", 0, 16), add), "link.bin"},
		{"past eof", model(external("weights.bin", 0, 16), add), "weights.bin"},
		{"missing file", model(external("nothere.bin", 0, 16), add), "nothere.bin"},
		{"unknown op without value_info", model(nil, &onnxpb.NodeProto{OpType: s("FancyOp"), Domain: s("com.example"), Name: s("fancy"), Input: []string{"x"}, Output: []string{"y"}}), `node "fancy" (com.example.FancyOp): unknown op`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := proto.Marshal(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".onnx")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			checkBad(t, path, tt.want)
		})
	}
	// A user override gives the custom op its output type.
	path := filepath.Join(dir, "unknown_op_without_value_info.onnx")
	if code, out, errs := run(t, "inspect", "-value-type", "y=f32[4]", path); code != exitOK || !strings.Contains(out, "com.example.FancyOp") {
		t.Errorf("inspect -value-type: exit %d\n%s%s", code, out, errs)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
