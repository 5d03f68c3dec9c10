package pipeline

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

func TestReadManifest(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tsv")
	os.WriteFile(good, []byte("name\tpath\tsha256\tsource\tinputs\n"+
		"det\t/m/det.onnx\tab\tsrc\tx:1x3x64x64\n"+
		"\n"+
		"vad\t/m/vad.onnx\tcd\tsrc\tinput:1x512 sr:scalar:int64=16000\n"+
		"movenet\t/m/tf/model.json\tef\tsrc\tinput:1x192x192x3:int32\n"), 0o644)
	specs, err := ParseModelArgs([]string{"manifest:" + good, "zoo:unet", "a/b.onnx"})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 5 {
		t.Fatalf("%d specs, want 5", len(specs))
	}
	if s := specs[0]; s.Name != "det" || s.Source != "/m/det.onnx" || !slices.Equal(s.InputShapes["x"], []int64{1, 3, 64, 64}) || len(s.InputTypes) != 0 || len(s.InputValues) != 0 {
		t.Errorf("det spec %+v", s)
	}
	if s := specs[1]; s.Name != "vad" || !slices.Equal(s.InputShapes["input"], []int64{1, 512}) || len(s.InputShapes["sr"]) != 0 || s.InputShapes["sr"] == nil ||
		s.InputValues["sr"] != 16000 || s.InputTypes["sr"] != ir.Int64 {
		t.Errorf("vad spec %+v", s)
	}
	if s := specs[2]; s.Name != "movenet" || !slices.Equal(s.InputShapes["input"], []int64{1, 192, 192, 3}) || s.InputTypes["input"] != ir.Int32 || len(s.InputValues) != 0 {
		t.Errorf("movenet spec %+v", s)
	}
	if s := specs[3]; s.Name != "zoo:unet" || s.Source != "zoo:unet" || s.InputShapes != nil {
		t.Errorf("zoo spec %+v", s)
	}
	if s := specs[4]; s.Name != "b.onnx" || s.Source != "a/b.onnx" || s.InputShapes != nil {
		t.Errorf("file spec %+v", s)
	}
}

func TestReadManifestErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{"h\n", "lists no models"},
		{"h\n\n\n", "lists no models"},
		{"h\nm\tp\n", "2 columns, want 5"},
		{"h\n\tp\ts\ts\tx:1\n", "empty name or path"},
		{"h\nm\tp\ts\ts\tx:1xA\n", `bad dimension "A"`},
		{"h\nm\tp\ts\ts\tx:1x-3\n", `bad dimension "-3"`},
		{"h\nm\tp\ts\ts\tx:\n", `bad dimension ""`},
		{"h\nm\tp\ts\ts\tsr:scalar:f32=1\n", "only int64=VALUE"},
		{"h\nm\tp\ts\ts\tsr:scalar:int64=many\n", "only int64=VALUE"},
		{"h\nm\tp\ts\ts\tx:1x2:f32\n", `unknown element type "f32"`},
		{"h\nm\tp\ts\ts\tnocolon\n", "want name:SHAPE"},
		{"h\nm\tp\ts\ts\t:1x2\n", "want name:SHAPE"},
		{"h\nm\tp\ts\ts\tx:1:int32:extra\n", "want name:SHAPE"},
		{"h\nm\tp\ts\ts\tx:1 x:2\n", "x is listed twice"},
	} {
		p := filepath.Join(dir, "bad.tsv")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := ReadManifest(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("manifest %q: error %v, want %q", tc.body, err, tc.want)
		}
	}
	if _, err := ParseModelArgs([]string{"zoo:unet", "manifest:" + filepath.Join(dir, "none.tsv")}); err == nil || !strings.HasPrefix(err.Error(), "manifest: ") {
		t.Errorf("a missing manifest: %v", err)
	}
}

func TestModelSpecLoadOptions(t *testing.T) {
	flags := LoadOptions{
		InputShapes:   map[string][]ir.Dim{"x": {ir.SymDim("batch"), ir.D(3)}},
		Dims:          map[string]int64{"batch": 2},
		ValueTypes:    map[string]ir.TensorType{"y": ir.TensorOf(ir.Float32, 1)},
		RequireStatic: true, Check: true,
	}
	manifest := ModelSpec{Name: "m", Source: "m.onnx", InputShapes: map[string][]int64{"in": {1, 8}, "sr": {}}}
	want := LoadOptions{InputShapes: map[string][]ir.Dim{"in": {ir.D(1), ir.D(8)}, "sr": {}}, RequireStatic: true, Check: true}
	if got := manifest.LoadOptions(flags); !reflect.DeepEqual(got, want) {
		t.Errorf("manifest entry: %+v, want %+v", got, want)
	}
	zoo := ModelSpec{Name: "zoo:unet", Source: "zoo:unet"}
	if got := zoo.LoadOptions(flags); !reflect.DeepEqual(got, LoadOptions{RequireStatic: true, Check: true}) {
		t.Errorf("zoo model: %+v", got)
	}
	file := ModelSpec{Name: "f.onnx", Source: "dir/f.onnx"}
	if got := file.LoadOptions(flags); !reflect.DeepEqual(got, flags) {
		t.Errorf("model file: %+v, want the flags' %+v", got, flags)
	}
	// The spec's shapes are copied: changing the options leaves it alone.
	manifest.LoadOptions(flags).InputShapes["in"][0] = ir.D(9)
	if manifest.InputShapes["in"][0] != 1 {
		t.Errorf("LoadOptions shares the spec's shapes")
	}
}
