package onnx_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	importer "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
)

func f32bytes(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// externalSource writes mlp with w (in data/weights.bin, after 8 bytes of
// padding) and b (in b.bin, the whole file, no offset or length) as external
// data, plus a Constant whose tensor is external too, into dir, and returns
// the model's path.
func externalSource(t *testing.T, dir string) string {
	m := MLP()
	ext := func(tp *onnxpb.TensorProto, entries ...string) {
		tp.RawData = nil
		tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
		for i := 0; i < len(entries); i += 2 {
			tp.ExternalData = append(tp.ExternalData, &onnxpb.StringStringEntryProto{Key: Str(entries[i]), Value: Str(entries[i+1])})
		}
	}
	ext(m.Graph.Initializer[0], "location", "data/weights.bin", "offset", "8", "length", "48")
	ext(m.Graph.Initializer[1], "location", "b.bin")
	ct := F32s("ct", []int64{2}, 0, 0)
	ext(ct, "location", "data/weights.bin", "offset", "56", "length", "8")
	m.Graph.Node = append(m.Graph.Node,
		Node("Constant", "c", nil, In("cv"), AttrTensor("value", ct)),
		Node("Add", "add2", In("y", "cv"), In("y2")))
	m.Graph.Output = append(m.Graph.Output, VI("y2", onnxpb.TensorProto_FLOAT, "batch", 3))
	writeFile(t, filepath.Join(dir, "data", "weights.bin"), slices.Concat(make([]byte, 8), f32bytes(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), f32bytes(-1, -2)))
	writeFile(t, filepath.Join(dir, "b.bin"), f32bytes(0.5, -0.5, 0))
	path := filepath.Join(dir, "model.onnx")
	writeFile(t, path, Marshal(t, m))
	return path
}

func importFile(t *testing.T, path string) *ir.Graph {
	t.Helper()
	g, err := importer.ImportFile(path, importer.Options{})
	if err != nil {
		t.Fatalf("ImportFile: %v", err)
	}
	return g
}

func externalEntries(m *onnxpb.ModelProto) map[string][]string {
	out := map[string][]string{}
	var walk func(g *onnxpb.GraphProto)
	add := func(tp *onnxpb.TensorProto) {
		if tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
			return
		}
		for _, e := range tp.GetExternalData() {
			out[tp.GetName()] = append(out[tp.GetName()], e.GetKey()+"="+e.GetValue())
		}
	}
	walk = func(g *onnxpb.GraphProto) {
		for _, tp := range g.GetInitializer() {
			add(tp)
		}
		for _, n := range g.GetNode() {
			for _, a := range n.GetAttribute() {
				if a.T != nil {
					add(a.T)
				}
			}
		}
	}
	walk(m.GetGraph())
	return out
}

func TestExternalDataExport(t *testing.T) {
	srcDir := t.TempDir()
	src := externalSource(t, srcDir)
	g := importFile(t, src)
	want := dump(g)

	t.Run("another directory keeps the locations", func(t *testing.T) {
		outDir := t.TempDir()
		out := filepath.Join(outDir, "sub", "out.onnx")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := exporter.ExportFile(g, out, exporter.Options{Source: src}); err != nil {
			t.Fatal(err)
		}
		m := Unmarshal(t, readFile(t, out))
		got := externalEntries(m)
		wantEntries := map[string][]string{
			"w":  {"location=data/weights.bin", "offset=0", "length=48"},
			"b":  {"location=b.bin"},
			"ct": {"location=data/weights.bin", "offset=48", "length=8"},
		}
		for k, v := range wantEntries {
			if !slices.Equal(got[k], v) {
				t.Errorf("%s entries = %v, want %v", k, got[k], v)
			}
		}
		if data := readFile(t, filepath.Join(outDir, "sub", "data", "weights.bin")); len(data) != 56 {
			t.Errorf("weights.bin has %d bytes, want 56 (contiguous, no padding)", len(data))
		}
		if d := dump(importFile(t, out)); d != want {
			t.Errorf("re-imported IR differs:\n%s\n---\n%s", want, d)
		}
		// The source's data files are untouched.
		if len(readFile(t, filepath.Join(srcDir, "data", "weights.bin"))) != 64 {
			t.Errorf("source data file changed")
		}
		assertNoTemps(t, filepath.Dir(out))
	})

	t.Run("same directory does not overwrite the source data", func(t *testing.T) {
		before := readFile(t, filepath.Join(srcDir, "data", "weights.bin"))
		out := filepath.Join(srcDir, "out.onnx")
		if err := exporter.ExportFile(g, out, exporter.Options{Source: src}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(readFile(t, filepath.Join(srcDir, "data", "weights.bin")), before) {
			t.Fatalf("source data file overwritten")
		}
		got := externalEntries(Unmarshal(t, readFile(t, out)))
		if !slices.Equal(got["w"], []string{"location=out.onnx.data", "offset=0", "length=48"}) ||
			!slices.Equal(got["b"], []string{"location=out.onnx.data", "offset=48", "length=12"}) ||
			!slices.Equal(got["ct"], []string{"location=out.onnx.data", "offset=60", "length=8"}) {
			t.Errorf("entries = %v", got)
		}
		if d := dump(importFile(t, out)); d != want {
			t.Errorf("re-imported IR differs")
		}
	})

	t.Run("refuses to overwrite the input's data", func(t *testing.T) {
		err := exporter.ExportFile(g, filepath.Join(srcDir, "b.bin"), exporter.Options{})
		if err == nil || !strings.Contains(err.Error(), "holds the input model's external data") {
			t.Fatalf("ExportFile over b.bin = %v, want a refusal", err)
		}
		if n := len(readFile(t, filepath.Join(srcDir, "b.bin"))); n != 12 {
			t.Fatalf("b.bin changed")
		}
	})

	t.Run("one external file", func(t *testing.T) {
		outDir := t.TempDir()
		out := filepath.Join(outDir, "m.onnx")
		if err := exporter.ExportFile(g, out, exporter.Options{ExternalFile: "all.bin"}); err != nil {
			t.Fatal(err)
		}
		if n := len(readFile(t, filepath.Join(outDir, "all.bin"))); n != 68 {
			t.Errorf("all.bin has %d bytes, want 68", n)
		}
		if d := dump(importFile(t, out)); d != want {
			t.Errorf("re-imported IR differs")
		}
	})

	t.Run("inline", func(t *testing.T) {
		outDir := t.TempDir()
		out := filepath.Join(outDir, "m.onnx")
		if err := exporter.ExportFile(g, out, exporter.Options{Inline: true}); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(outDir)
		if len(entries) != 1 {
			t.Errorf("inline export wrote %d files", len(entries))
		}
		m := Unmarshal(t, readFile(t, out))
		if len(externalEntries(m)) != 0 || len(m.Graph.Initializer[0].RawData) != 48 {
			t.Errorf("tensors not inline")
		}
		// Export (bytes) always inlines, and gives the same model.
		b := mustExport(t, g, exporter.Options{})
		if !bytes.Equal(b, readFile(t, out)) {
			t.Errorf("Export and ExportFile(Inline) differ")
		}
		if d := dump(mustImport(t, b)); d != want {
			t.Errorf("re-imported IR differs")
		}
	})

	t.Run("deterministic", func(t *testing.T) {
		dir1, dir2 := t.TempDir(), t.TempDir()
		for _, d := range []string{dir1, dir2} {
			if err := exporter.ExportFile(g, filepath.Join(d, "m.onnx"), exporter.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{"m.onnx", "b.bin", filepath.Join("data", "weights.bin")} {
			if !bytes.Equal(readFile(t, filepath.Join(dir1, f)), readFile(t, filepath.Join(dir2, f))) {
				t.Errorf("%s differs between two exports", f)
			}
		}
	})

	t.Run("changed tensor drops its checksum", func(t *testing.T) {
		m := Unmarshal(t, readFile(t, src))
		m.Graph.Initializer[1].ExternalData = append(m.Graph.Initializer[1].ExternalData,
			&onnxpb.StringStringEntryProto{Key: Str("checksum"), Value: Str("0123")})
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "b.bin"), readFile(t, filepath.Join(srcDir, "b.bin")))
		writeFile(t, filepath.Join(dir, "data", "weights.bin"), readFile(t, filepath.Join(srcDir, "data", "weights.bin")))
		writeFile(t, filepath.Join(dir, "model.onnx"), Marshal(t, m))
		g := importFile(t, filepath.Join(dir, "model.onnx"))
		out := filepath.Join(t.TempDir(), "m.onnx")
		if err := exporter.ExportFile(g, out, exporter.Options{}); err != nil {
			t.Fatal(err)
		}
		if got := externalEntries(Unmarshal(t, readFile(t, out)))["b"]; !slices.Equal(got, []string{"location=b.bin", "checksum=0123"}) {
			t.Errorf("unchanged b entries = %v", got)
		}
		b := g.Params[1].Data
		b.Raw = slices.Clone(b.Raw)
		b.Raw[0] ^= 1
		if err := exporter.ExportFile(g, out, exporter.Options{}); err != nil {
			t.Fatal(err)
		}
		if got := externalEntries(Unmarshal(t, readFile(t, out)))["b"]; !slices.Equal(got, []string{"location=b.bin"}) {
			t.Errorf("changed b entries = %v", got)
		}
	})
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", path)
		}
		return nil
	})
}

func TestExportFileSafety(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "model.onnx")
	orig := Marshal(t, MLP())
	writeFile(t, src, orig)
	g := importFile(t, src)

	// Refuses to overwrite the input, also through another spelling.
	for _, p := range []string{src, filepath.Join(dir, ".", "model.onnx")} {
		err := exporter.ExportFile(g, p, exporter.Options{Source: src})
		if err == nil || !strings.Contains(err.Error(), "refusing to overwrite the input model") {
			t.Errorf("ExportFile(%s) = %v, want a refusal", p, err)
		}
	}
	if !bytes.Equal(readFile(t, src), orig) {
		t.Fatal("input changed")
	}

	// A failed export leaves an existing output as it was, and no
	// temporary files.
	out := filepath.Join(dir, "out.onnx")
	writeFile(t, out, []byte("previous"))
	bad := importFile(t, src)
	bad.Opsets = nil
	if err := exporter.ExportFile(bad, out, exporter.Options{}); err == nil {
		t.Fatal("export of a broken graph succeeded")
	}
	if string(readFile(t, out)) != "previous" {
		t.Errorf("failed export changed the output file")
	}
	// A write error (the directory does not exist) leaves nothing either.
	if err := exporter.ExportFile(g, filepath.Join(dir, "missing", "out.onnx"), exporter.Options{}); err == nil {
		t.Errorf("export into a missing directory succeeded")
	}
	assertNoTemps(t, dir)

	// A successful export replaces the file atomically.
	if err := exporter.ExportFile(g, out, exporter.Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, out), orig) {
		t.Errorf("exported file differs from the source")
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	assertNoTemps(t, dir)
}

// TestDefaultIRVersion checks the IR version written for graphs that were
// not imported: the one of the opset's release, raised for new element
// types.
func TestDefaultIRVersion(t *testing.T) {
	for _, tt := range []struct {
		opset int64
		dt    ir.DType
		want  int64
	}{{7, ir.Float32, 4}, {11, ir.Float32, 6}, {13, ir.Float32, 7}, {17, ir.Float32, 8}, {19, ir.Float32, 9}, {21, ir.Float32, 10}, {23, ir.Float32, 11}, {17, ir.Int4, 10}, {17, ir.Float8E5M2, 9}} {
		g := ir.NewGraph("g")
		g.Opsets = []ir.Opset{{Version: tt.opset}}
		x := g.AddInput("x", ir.TensorOf(ir.Float32, 2))
		n := g.NewNode("Cast", "", []*ir.Value{x}, []string{"y"})
		n.Outputs[0].Type = ir.TensorOf(tt.dt, 2)
		g.AddOutput(n.Outputs[0])
		m := Unmarshal(t, mustExport(t, g, exporter.Options{}))
		if m.GetIrVersion() != tt.want {
			t.Errorf("opset %d with %v: ir_version %d, want %d", tt.opset, tt.dt, m.GetIrVersion(), tt.want)
		}
	}
}
