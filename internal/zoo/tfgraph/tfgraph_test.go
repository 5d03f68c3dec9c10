package tfgraph_test

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/internal/zoo/tfgraph"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/pipeline"
)

// convertible are the zoo models Convert handles; the others fail with
// an error naming the op.
var convertible = map[string]bool{
	"vgg16": true, "vgg19": true, "mobilenet_v1": true, "mobilenet_v2": true, "resnet50": true, "resnet": true,
	"googlenet": true, "unet": true, "fcn8": true,
}

// TestConvert converts every zoo model's small configuration: the
// convolutional networks into verified, fully typed TensorFlow graphs
// whose nodes are all of the tf domain, the others into an error naming
// what has no TensorFlow form.
func TestConvert(t *testing.T) {
	for _, m := range zoo.Models() {
		t.Run(m.Name, func(t *testing.T) {
			g, err := m.Build(m.Small)
			if err != nil {
				t.Fatal(err)
			}
			h, err := tfgraph.Convert(g)
			if !convertible[m.Name] {
				if err == nil || !strings.Contains(err.Error(), "node ") && !strings.Contains(err.Error(), "input ") {
					t.Fatalf("want an error naming the node or input that has no TensorFlow form, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(h); err != nil {
				t.Fatal(err)
			}
			for _, n := range h.Nodes {
				if n.Domain != ir.TFDomain {
					t.Errorf("node %s is in domain %q", n.Name, n.Domain)
				}
				for _, o := range n.Outputs {
					if _, ok := o.Type.Bytes(); !ok || o.Type.DType == ir.Undefined {
						t.Errorf("value %s of node %s (%s) is untyped: %v", o.Name, n.Name, n.Op, o.Type)
					}
				}
			}
			in, _ := h.Inputs[0].Type.Dims()
			if in[3] != 3 {
				t.Errorf("input is %v, want NHWC", h.Inputs[0].Type)
			}
		})
	}
}

// TestAgainstONNX runs every convertible zoo model as ONNX in ONNX Runtime
// and as a TensorFlow.js model.json (and a .pb read back and written as
// model.json) in TensorFlow.js on the same input (NCHW for one, NHWC for
// the other) and compares the outputs: the same function up to float
// rounding.
func TestAgainstONNX(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every zoo TensorFlow graph in TensorFlow.js and ONNX Runtime; skipped in -short mode")
	}
	testmodels.RequireORT(t)
	dir := testmodels.RequireTFJS(t)
	for name := range convertible {
		t.Run(name, func(t *testing.T) {
			m, _ := zoo.Lookup(name)
			g, err := m.Build(m.Small)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			onnxPath := filepath.Join(tmp, "m.onnx")
			if err := onnxexp.ExportFile(g, onnxPath, onnxexp.Options{}); err != nil {
				t.Fatal(err)
			}
			h, err := tfgraph.Convert(g)
			if err != nil {
				t.Fatal(err)
			}
			tfPath := filepath.Join(tmp, "model.json")
			if err := gdexp.ExportFile(h, tfPath, gdexp.Options{}); err != nil {
				t.Fatal(err)
			}
			if err := gdexp.ExportFile(h, filepath.Join(tmp, "m.pb"), gdexp.Options{}); err != nil {
				t.Fatal(err)
			}
			dims, _ := g.Inputs[0].Type.Dims()
			x, err := ort.RandomTensor("float", dims, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ort.Run(onnxPath, map[string]ort.Tensor{g.Inputs[0].Name: x}, ort.DefaultOptions("disabled"))
			if err != nil {
				t.Fatal(err)
			}
			wo := want.Outputs[want.OutputNames[0]]
			xt := toNHWC(x.Data, dims)
			res, err := tfjs.Run(context.Background(), tfjs.Options{Dir: dir, Model: tfPath,
				Inputs: map[string]tfjs.Tensor{h.Inputs[0].Name: {DType: tfjs.Float32, Shape: []int64{dims[0], dims[2], dims[3], dims[1]}, Data: xt}}})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Outputs[0].Tensor
			gotData := got.Data
			if len(wo.Shape) == 4 {
				gotData = toNCHW(got.Data, got.Shape)
			}
			a, b := f32(gotData), f32(wo.Data)
			if len(a) != len(b) {
				t.Fatalf("TensorFlow.js output has %d elements %v, ORT's %d %v", len(a), got.Shape, len(b), wo.Shape)
			}
			var maxAbs, maxDiff float64
			for i := range a {
				maxAbs = math.Max(maxAbs, math.Abs(float64(b[i])))
				maxDiff = math.Max(maxDiff, math.Abs(float64(a[i]-b[i])))
			}
			if !(maxDiff <= 1e-4*math.Max(maxAbs, 1)) {
				t.Errorf("outputs differ by up to %g (largest |output| %g)", maxDiff, maxAbs)
			}
		})
	}
}

func f32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// toNHWC transposes float32 NCHW data of dims [N, C, H, W].
func toNHWC(data []byte, d []int64) []byte { return transpose4(data, d, [4]int{0, 2, 3, 1}) }

// toNCHW transposes float32 NHWC data of dims [N, H, W, C].
func toNCHW(data []byte, d []int64) []byte { return transpose4(data, d, [4]int{0, 3, 1, 2}) }

// transpose4 transposes 4-D float32 data of dims d: output dim k is input
// dim perm[k].
func transpose4(data []byte, d []int64, perm [4]int) []byte {
	var stride [4]int64
	s := int64(1)
	for k := 3; k >= 0; k-- {
		stride[k] = s
		s *= d[k]
	}
	out := make([]byte, len(data))
	o := 0
	for a := range d[perm[0]] {
		for b := range d[perm[1]] {
			for c := range d[perm[2]] {
				for e := range d[perm[3]] {
					src := a*stride[perm[0]] + b*stride[perm[1]] + c*stride[perm[2]] + e*stride[perm[3]]
					copy(out[4*o:4*o+4], data[4*src:4*src+4])
					o++
				}
			}
		}
	}
	return out
}

// TestTypesAgreeWithInference loads every convertible zoo model as a
// TensorFlow graph through the pipeline, whose shape inference checks the
// types Convert declares.
func TestTypesAgreeWithInference(t *testing.T) {
	for name := range convertible {
		if _, err := pipeline.Load(context.Background(), "zoo:"+name+":tf", pipeline.LoadOptions{RequireStatic: true}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
