package verify_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
)

// TestTrainTFRealModels builds the training graphs of the real
// TensorFlow.js models (-loss sum over the first output) with respect to
// their image input, which every layer's gradient rule lies between, and
// checks them in TensorFlow.js (wasm) by directional derivatives: for a
// seeded direction v, Σᵢ ∂L/∂xᵢ·vᵢ from the training graph against
// (L(x + h·v) − L(x − h·v)) / 2h, L the model's output from the loss
// graph (autodiff.Forward) summed in float64, h = 1e-3, within 5% for
// one of two directions: ±1 on every element (the step crosses many ReLU
// and Relu6 kinks, each adding an error of order h: 2–3% measured on most
// models, 10% on Meet, 50% on Selfie) and ±1 on 256 elements (few kinks,
// a small change: 0.4% on Selfie, 0.7% on Meet, 2–5% on the others,
// 18% on EfficientPose). The best of the two is 0.4–2.8% on the six
// models with a float image input (MoveNet, below: 0.01%). This checks the whole chain on real graphs; the per-op
// gradient check (passes/autodiff
// TestGradientsTF) is the precise one.
//
// MoveNet's image input is int32 (nothing to differentiate), and its
// keypoints barely move with the image (a step small enough to miss the
// ArgMax flips of its decoder changes the sum by float32 rounding noise):
// its gradient is taken of the filters of its keypoint offset and heatmap
// heads (moveNetParams), made inputs of the loss graph, through its
// decoder's GatherNd, Unpack, Pack and ConcatV2 (the gathers' indices
// come from ArgMax of the heatmaps; the steps leave them unchanged).
func TestTrainTFRealModels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real models in TensorFlow.js; skipped in -short mode")
	}
	dir := testmodels.RequireTFJS(t)
	const h, tol = 1e-3, 5e-2
	ctx := context.Background()
	for _, m := range testmodels.TFModels(t) {
		t.Run(m.Name, func(t *testing.T) {
			pm, fm := loadTF(ctx, t, dir, m), loadTF(ctx, t, dir, m)
			// xs are what the gradient is taken of: the first float
			// input, or MoveNet's parameters (inputs of fm only).
			var xs []*ir.Value
			for _, in := range pm.Graph.Inputs {
				if in.Type.DType.IsFloat() && xs == nil {
					xs = []*ir.Value{in}
				}
			}
			params := map[string][]float32{} // values of the xs that are parameters
			if m.Name == "movenet-lightning" {
				xs = nil
				for _, name := range moveNetParams {
					x, vals := paramInput(t, fm.Graph, name)
					xs = append(xs, x)
					params[name] = vals
				}
			}
			if xs == nil {
				t.Fatal("no floating-point input")
			}
			opts := autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}}
			for _, x := range xs {
				opts.Trainable = append(opts.Trainable, x.Name)
			}
			if err := pm.Train(ctx, opts); err != nil {
				t.Fatal(err)
			}
			// The finite differences sum the model's output in float64
			// (the loss graph's float32 Sum rounds more than the step
			// changes on the larger outputs).
			out := fm.Graph.Outputs[0].Name
			if err := autodiff.Forward(fm.Graph, opts); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			tpath, fpath := filepath.Join(tmp, "train", "model.json"), filepath.Join(tmp, "fwd", "model.json")
			if err := pm.Export(tpath, nil, false); err != nil {
				t.Fatal(err)
			}
			if err := gdexp.ExportFile(fm.Graph, fpath, gdexp.Options{}); err != nil {
				t.Fatal(err)
			}
			if len(params) > 0 {
				dropSignature(t, fpath)
			}
			in, err := tfjs.SeededInputs(m.Inputs, 1)
			if err != nil {
				t.Fatal(err)
			}
			// xv is the xs' values end to end; fwdIn feeds the loss graph.
			var xv []float32
			fwdIn := map[string]tfjs.Tensor{}
			for k, t := range in {
				fwdIn[k] = t
			}
			for _, x := range xs {
				vals, ok := params[x.Name]
				if !ok {
					xv = append(xv, in[x.Name].Float32s()...)
					continue
				}
				xv = append(xv, vals...)
				dims, _ := x.Type.Dims()
				fwdIn[x.Name] = tfjs.Tensor{DType: tfjs.Float32, Shape: dims, Data: f32Bytes(vals)}
			}
			rng := rand.New(rand.NewPCG(11, 12))
			with := func(vals []float32) map[string]tfjs.Tensor {
				out := map[string]tfjs.Tensor{}
				for k, t := range fwdIn {
					out[k] = t
				}
				off := 0
				for _, x := range xs {
					n := len(fwdIn[x.Name].Data) / 4
					out[x.Name] = tfjs.Tensor{DType: tfjs.Float32, Shape: fwdIn[x.Name].Shape, Data: f32Bytes(vals[off : off+n])}
					off += n
				}
				return out
			}
			outs := []string{autodiff.LossName}
			for _, x := range xs {
				outs = append(outs, x.Name+"_grad")
			}
			// Two directions: ±1 on every element, and ±1 on 256 of them.
			var dirs [2][]float32
			jobs := []tfjs.Options{{Dir: dir, Model: tpath, Inputs: in, Outputs: outs}}
			for k := range dirs {
				v := make([]float32, len(xv))
				if k == 0 {
					for i := range v {
						v[i] = float32(1 - 2*rng.IntN(2))
					}
				} else {
					for range 256 {
						v[rng.IntN(len(v))] = float32(1 - 2*rng.IntN(2))
					}
				}
				dirs[k] = v
				for _, s := range []float32{1, -1} {
					p := make([]float32, len(xv))
					for i := range p {
						p[i] = xv[i] + s*h*v[i]
					}
					jobs = append(jobs, tfjs.Options{Dir: dir, Model: fpath, Inputs: with(p), Outputs: []string{out}})
				}
			}
			res, err := tfjs.RunAll(ctx, jobs)
			if err != nil {
				t.Fatal(err)
			}
			var g []float32
			for k := range xs {
				g = append(g, res[0].Outputs[1+k].Float32s()...)
			}
			if len(g) != len(xv) {
				t.Fatalf("the gradients have %d elements, want %d", len(g), len(xv))
			}
			best := math.Inf(1)
			for k, v := range dirs {
				var analytic float64
				for i := range g {
					analytic += float64(g[i]) * float64(v[i])
				}
				lp, lm := sum64(res[1+2*k].Outputs[0].Float32s()), sum64(res[2+2*k].Outputs[0].Float32s())
				numeric := (lp - lm) / (2 * h)
				rel := math.Abs(analytic-numeric) / math.Abs(numeric)
				best = min(best, rel)
				t.Logf("%s, direction %d: %d training nodes; loss %.6g; directional derivative %.6g, finite differences %.6g (%.2e relative)",
					m.Name, k, len(pm.Graph.Nodes), res[0].Outputs[0].Float32s()[0], analytic, numeric, rel)
			}
			if !(best <= tol) {
				t.Errorf("directional derivatives differ from finite differences by %.2e relative at best, over %g", best, tol)
			}
		})
	}
}

// moveNetParams are the filters of MoveNet's keypoint offset and heatmap
// heads, whose gradients run through its decoder's GatherNd, Unpack and
// Pack (the offsets) and GatherNd and ConcatV2 (the scores).
var moveNetParams = []string{
	"StatefulPartitionedCall/kpt_offset_0/conv2d_7/Conv2D/ReadVariableOp",
	"StatefulPartitionedCall/kpt_heatmap_0/conv2d_5/Conv2D/ReadVariableOp",
}

// paramInput makes the float32 parameter name of g an input of g (the
// loss graph's finite differences perturb it) and returns it and its
// values.
func paramInput(t *testing.T, g *ir.Graph, name string) (*ir.Value, []float32) {
	t.Helper()
	i := slices.IndexFunc(g.Params, func(v *ir.Value) bool { return v.Name == name })
	if i < 0 {
		t.Fatalf("no parameter %s", name)
	}
	v := g.Params[i]
	f64, ok := v.Data.Float64s()
	if !ok || v.Data.DType != ir.Float32 {
		t.Fatalf("parameter %s is not float32", name)
	}
	vals := make([]float32, len(f64))
	for k, f := range f64 {
		vals[k] = float32(f)
	}
	g.Params = slices.Delete(g.Params, i, i+1)
	v.Data = nil
	g.Inputs = append(g.Inputs, v)
	return v, vals
}

// dropSignature removes the signature from the model.json at path, so
// that TensorFlow.js takes the graph's placeholders as its inputs: the
// exporter keeps the source's signature, which lists the image input
// only, not the parameters paramInput made inputs.
func dropSignature(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "signature")
	if udm, ok := m["userDefinedMetadata"].(map[string]any); ok {
		delete(udm, "signature")
	}
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func sum64(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s
}
