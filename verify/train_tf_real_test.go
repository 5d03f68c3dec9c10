package verify_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
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
// models. This checks the whole chain on real graphs; the per-op
// gradient check (passes/autodiff
// TestGradientsTF) is the precise one. MoveNet, whose
// decoder gathers (GatherNd) and packs, has ops without TensorFlow rules:
// its error names them.
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
			if m.Name == "movenet-lightning" {
				// Its input is int32: its parameters are what trains.
				err := pm.Train(ctx, autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}})
				var ng *autodiff.NoGradientError
				if !errors.As(err, &ng) || !strings.Contains(err.Error(), "no gradient for tf.GatherNd") {
					t.Fatalf("MoveNet: %v, want a NoGradientError naming GatherNd", err)
				}
				return
			}
			var x *ir.Value
			for _, in := range pm.Graph.Inputs {
				if in.Type.DType.IsFloat() && x == nil {
					x = in
				}
			}
			if x == nil {
				t.Fatal("no floating-point input")
			}
			opts := autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}, Trainable: []string{x.Name}}
			err := pm.Train(ctx, opts)
			if err != nil {
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
			in, err := tfjs.SeededInputs(m.Inputs, 1)
			if err != nil {
				t.Fatal(err)
			}
			xv := in[x.Name].Float32s()
			rng := rand.New(rand.NewPCG(11, 12))
			with := func(vals []float32) map[string]tfjs.Tensor {
				out := map[string]tfjs.Tensor{}
				for k, t := range in {
					out[k] = t
				}
				out[x.Name] = tfjs.Tensor{DType: tfjs.Float32, Shape: in[x.Name].Shape, Data: f32Bytes(vals)}
				return out
			}
			// Two directions: ±1 on every element, and ±1 on 256 of them.
			var dirs [2][]float32
			jobs := []tfjs.Options{{Dir: dir, Model: tpath, Inputs: in, Outputs: []string{autodiff.LossName, x.Name + "_grad"}}}
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
			g := res[0].Outputs[1].Float32s()
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

func sum64(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s
}
