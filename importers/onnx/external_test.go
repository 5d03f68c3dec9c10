package onnx_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	onnx "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
)

func f32bytes(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// externalModel is mlp with w and b in external data: w at offset 0 of
// weights.bin (12 floats), b at offset 48 (3 floats), described by entries.
func externalModel(wEntries, bEntries [][2]string) *onnxpb.ModelProto {
	m := MLP()
	set := func(tp *onnxpb.TensorProto, entries [][2]string) {
		tp.RawData = nil
		tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
		tp.ExternalData = nil
		for _, e := range entries {
			tp.ExternalData = append(tp.ExternalData, &onnxpb.StringStringEntryProto{Key: Str(e[0]), Value: Str(e[1])})
		}
	}
	set(m.Graph.Initializer[0], wEntries)
	set(m.Graph.Initializer[1], bEntries)
	return m
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

func TestExternalData(t *testing.T) {
	wData := f32bytes(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	bData := f32bytes(0.5, -0.5, 0)
	good := [][2]string{{"location", "weights.bin"}, {"offset", "0"}, {"length", "48"}}
	goodB := [][2]string{{"location", "weights.bin"}, {"offset", "48"}, {"length", "12"}}

	tests := []struct {
		name   string
		w, b   [][2]string
		setup  func(t *testing.T, dir, outside string)
		want   string // error substring; "" for success
		checkB bool
	}{
		{name: "good", w: good, b: goodB, checkB: true},
		{name: "length omitted: to the end of the file", w: good, b: [][2]string{{"location", "weights.bin"}, {"offset", "48"}}, checkB: true},
		{name: "subdirectory and checksum", w: good, b: [][2]string{{"location", "sub/b.bin"}, {"checksum", "abc"}},
			setup: func(t *testing.T, dir, _ string) { writeFile(t, filepath.Join(dir, "sub", "b.bin"), bData) }, checkB: true},
		{name: "symlink inside the directory", w: good, b: [][2]string{{"location", "link.bin"}},
			setup: func(t *testing.T, dir, _ string) {
				writeFile(t, filepath.Join(dir, "real", "b.bin"), bData)
				if err := os.Symlink(filepath.Join("real", "b.bin"), filepath.Join(dir, "link.bin")); err != nil {
					t.Skip(err)
				}
			}, checkB: true},
		{name: "absolute path", w: good, b: [][2]string{{"location", "/etc/hostname"}},
			want: `value "b": initializer: external data: location "/etc/hostname" is an absolute path; external data must be a path relative to the model's directory`},
		{name: "dot-dot escape", w: good, b: [][2]string{{"location", "sub/../../secret.bin"}},
			want: `location "sub/../../secret.bin" leaves the model's directory`},
		{name: "symlink escape", w: good, b: [][2]string{{"location", "evil.bin"}},
			setup: func(t *testing.T, dir, outside string) {
				writeFile(t, filepath.Join(outside, "secret.bin"), bData)
				if err := os.Symlink(filepath.Join(outside, "secret.bin"), filepath.Join(dir, "evil.bin")); err != nil {
					t.Skip(err)
				}
			},
			want: `location "evil.bin" is a symlink that resolves outside the model's directory`},
		{name: "symlinked directory escape", w: good, b: [][2]string{{"location", "d/secret.bin"}},
			setup: func(t *testing.T, dir, outside string) {
				writeFile(t, filepath.Join(outside, "secret.bin"), bData)
				if err := os.Symlink(outside, filepath.Join(dir, "d")); err != nil {
					t.Skip(err)
				}
			},
			want: `is a symlink that resolves outside the model's directory`},
		{name: "offset past EOF", w: good, b: [][2]string{{"location", "weights.bin"}, {"offset", "4096"}, {"length", "12"}},
			want: `value "b": initializer: external data: offset 4096 is past the end of "weights.bin" (60 bytes)`},
		{name: "length past EOF", w: good, b: [][2]string{{"location", "weights.bin"}, {"offset", "52"}, {"length", "12"}},
			want: `offset 52 + length 12 is past the end of "weights.bin" (60 bytes)`},
		{name: "wrong length", w: good, b: [][2]string{{"location", "weights.bin"}, {"offset", "0"}, {"length", "8"}},
			want: `"weights.bin" holds 8 bytes for this tensor, f32[3] needs 12`},
		{name: "missing file", w: good, b: [][2]string{{"location", "nope.bin"}},
			want: `file "nope.bin" does not exist in`},
		{name: "no location", w: good, b: [][2]string{{"offset", "0"}},
			want: `no location entry`},
		{name: "bad length", w: good, b: [][2]string{{"location", "weights.bin"}, {"length", "12x"}},
			want: `length "12x" is not a non-negative integer`},
		{name: "key twice", w: good, b: [][2]string{{"location", "weights.bin"}, {"location", "weights.bin"}},
			want: `key "location" is given twice`},
		{name: "a directory", w: good, b: [][2]string{{"location", "sub"}},
			setup: func(t *testing.T, dir, _ string) { os.MkdirAll(filepath.Join(dir, "sub"), 0o755) },
			want:  `location "sub" is not a regular file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "model")
			outside := filepath.Join(root, "outside")
			writeFile(t, filepath.Join(dir, "weights.bin"), slices.Concat(wData, bData))
			if tt.setup != nil {
				tt.setup(t, dir, outside)
			}
			path := filepath.Join(dir, "model.onnx")
			writeFile(t, path, Marshal(t, externalModel(tt.w, tt.b)))
			g, err := onnx.ImportFile(path, onnx.Options{})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("ImportFile error = %v, want it to contain %q", err, tt.want)
				}
				if !strings.HasPrefix(err.Error(), path+": ") {
					t.Errorf("error does not start with the file name: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w, b := g.Params[0].Data, g.Params[1].Data
			if !slices.Equal(w.Raw, wData) {
				t.Errorf("w = % x", w.Raw)
			}
			if tt.checkB && !slices.Equal(b.Raw, bData) {
				t.Errorf("b = % x", b.Raw)
			}
			ti := b.Ext.(*onnx.TensorInfo)
			if ti.Encoding != onnx.EncExternal || ti.External == nil || ti.External.Location != tt.b[0][1] || len(ti.External.Entries) != len(tt.b) {
				t.Errorf("external placement not kept: %+v", ti.External)
			}
			if info := g.Ext.(*onnx.ModelInfo); info.BaseDir != dir {
				t.Errorf("BaseDir = %q, want %q", info.BaseDir, dir)
			}
		})
	}
}
