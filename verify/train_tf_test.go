package verify_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/pipeline"
)

// TestTrainTFMatchesONNX holds the TensorFlow training graphs to the ONNX
// ones across runtimes: for zoo models (MobileNet v1 and v2, a ResNet-18,
// U-Net and FCN-8s, which have MaxPool and ConvTranspose /
// Conv2DBackpropInput, and GoogLeNet, which has LRN), the training graph of the model's TensorFlow form
// (zoo:NAME:tf, -loss sum) run in TensorFlow.js (wasm) and the training
// graph of its ONNX form run in ONNX Runtime, on the same weights and the
// same input (NCHW for ONNX, transposed to NHWC for TensorFlow), give the
// same loss (relative difference ≤ 1e-4) and the same gradient for every
// parameter: ‖g_tf − g_onnx‖₂ ≤ 1e-2·‖g_onnx‖₂ + 1e-4·s·√n (float32;
// n the parameter's size, s the largest per-element RMS of any
// parameter's gradient: a floor for gradients that are zero but for
// rounding). ONNX Runtime runs unoptimised (level disabled): its
// optimised graph differs from its own unoptimised one by up to 2e-2 on
// MobileNet's batch-norm gradients, which are ill-conditioned at this
// batch size, while TensorFlow.js agrees with the unoptimised one to
// 5e-3 (3e-4 on MobileNet v1, 2e-5 on the others). The
// TensorFlow weights are the ONNX ones permuted (filters HWIO for OIHW,
// the classifier's rows in NHWC's flattening order): each TensorFlow
// parameter's elements are matched to the ONNX parameter's by value
// (the zoo's weights are distinct random floats; vectors keep their
// layout), so the comparison needs no knowledge of the layouts.
func TestTrainTFMatchesONNX(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ONNX Runtime and TensorFlow.js; skipped in -short mode")
	}
	testmodels.RequireORT(t)
	dir := testmodels.RequireTFJS(t)
	const lossTol, gradTol = 1e-4, 1e-2
	seen := map[string]bool{}
	for _, spec := range []string{
		"mobilenet_v1:res=64:batch=4:width=0.25",
		"mobilenet_v2:res=64:batch=4:width=0.25",
		"resnet:depth=18:res=64:batch=4:width=0.25",
		"unet:small:batch=4",
		"fcn8:small:batch=4",
		"googlenet:small:batch=4",
	} {
		t.Run(spec, func(t *testing.T) {
			ctx := context.Background()
			tmp := t.TempDir()
			train := func(src, path string) *pipeline.Model {
				m, err := pipeline.Load(ctx, src, pipeline.LoadOptions{RequireStatic: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Train(ctx, autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}}); err != nil {
					t.Fatal(err)
				}
				if err := m.Export(path, nil, false); err != nil {
					t.Fatal(err)
				}
				return m
			}
			mo := train("zoo:"+spec, filepath.Join(tmp, "train.onnx"))
			mt := train("zoo:"+spec+":tf", filepath.Join(tmp, "tf", "model.json"))
			for _, n := range mt.Graph.Nodes {
				seen[n.Op] = true
				if n.Domain != ir.TFDomain {
					t.Fatalf("TensorFlow training graph has node %s (%s) in domain %q", n.Name, n.Op, n.Domain)
				}
			}

			// The input, NCHW for ONNX and NHWC for TensorFlow.
			dims, _ := mo.Graph.Inputs[0].Type.Dims()
			B, C, H, W := dims[0], dims[1], dims[2], dims[3]
			rng := rand.New(rand.NewPCG(3, 4))
			nchw := make([]float32, B*C*H*W)
			for i := range nchw {
				nchw[i] = float32(rng.Float64()*2 - 1)
			}
			nhwc := make([]float32, len(nchw))
			for b := range B {
				for c := range C {
					for h := range H {
						for w := range W {
							nhwc[((b*H+h)*W+w)*C+c] = nchw[((b*C+c)*H+h)*W+w]
						}
					}
				}
			}
			ores, err := ort.Run(filepath.Join(tmp, "train.onnx"), map[string]ort.Tensor{
				mo.Graph.Inputs[0].Name: {DType: "float", Shape: dims, Data: f32Bytes(nchw)}}, ort.Options{Level: "disabled"})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range mt.Graph.Outputs {
				names = append(names, o.Name)
			}
			tres, err := tfjs.Run(ctx, tfjs.Options{Dir: dir, Model: filepath.Join(tmp, "tf", "model.json"), Outputs: names,
				Inputs: map[string]tfjs.Tensor{mt.Graph.Inputs[0].Name: {DType: tfjs.Float32, Shape: []int64{B, H, W, C}, Data: f32Bytes(nhwc)}}})
			if err != nil {
				t.Fatal(err)
			}
			onnxOut := func(name string) []float64 {
				o, ok := ores.Outputs[name]
				if !ok {
					t.Fatalf("the ONNX training graph has no output %s", name)
				}
				v, err := o.Float64s()
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			lo, lt := onnxOut(autodiff.LossName)[0], float64(tres.Outputs[0].Float32s()[0])
			if math.Abs(lo-lt) > lossTol*math.Abs(lo) {
				t.Errorf("loss: tfjs %.7g, ORT %.7g", lt, lo)
			}
			params := func(g *ir.Graph) map[string]*ir.Value {
				m := map[string]*ir.Value{}
				for _, p := range g.Params {
					m[p.Name] = p
				}
				return m
			}
			op, tp := params(mo.Graph), params(mt.Graph)
			type cmp struct {
				name            string
				diff, norm, rms float64
				elements        int
			}
			var cmps []cmp
			scale := 0.0 // the largest RMS of a parameter's ONNX gradient
			for k, o := range mt.Graph.Outputs[1:] {
				pname := strings.TrimSuffix(o.Name, "_grad")
				oname := strings.TrimSuffix(pname, "/nhwc")
				tv, ov := tp[pname], op[oname]
				if tv == nil || ov == nil {
					t.Fatalf("gradient %s: parameter %q (TensorFlow) or %q (ONNX) missing", o.Name, pname, oname)
				}
				perm, err := layoutPerm(tv.Data, ov.Data, flattened(mt.Graph, tv))
				if err != nil {
					t.Fatalf("%s: %v", pname, err)
				}
				gt := tres.Outputs[1+k].Float32s()
				gov := onnxOut(oname + "_grad")
				if len(gt) != len(gov) {
					t.Fatalf("%s: %d gradient elements in tfjs, %d in ORT", pname, len(gt), len(gov))
				}
				c := cmp{name: pname, elements: len(gt)}
				for i, j := range perm {
					d := float64(gt[i]) - gov[j]
					c.diff += d * d
					c.norm += gov[j] * gov[j]
				}
				c.diff, c.norm = math.Sqrt(c.diff), math.Sqrt(c.norm)
				scale = max(scale, c.norm/math.Sqrt(float64(c.elements)))
				cmps = append(cmps, c)
			}
			worst, checked := 0.0, 0
			for _, c := range cmps {
				// The floor: gradients that are zero but for rounding (a
				// bias followed by a batch norm) are held to 1e-4 of the
				// model's largest gradient RMS per element.
				bound := gradTol*c.norm + 1e-4*scale*math.Sqrt(float64(c.elements))
				worst = max(worst, c.diff/bound)
				checked++
				if c.diff > bound {
					t.Errorf("%s: ‖g_tf − g_onnx‖ = %.3g, over the bound %.3g (‖g_onnx‖ = %.3g)", c.name, c.diff, bound, c.norm)
				}
			}
			if checked != len(mo.Graph.Outputs)-1 {
				t.Errorf("%d gradients compared; the ONNX training graph has %d", checked, len(mo.Graph.Outputs)-1)
			}
			t.Logf("loss tfjs %.7g, ORT %.7g; %d gradients, worst difference %.2e of its bound", lt, lo, checked, worst)
		})
	}
	for _, op := range []string{"MaxPool", "Conv2DBackpropInput", "DepthwiseConv2dNative", "Relu6", "_FusedMatMul", "Mean", "PadV2", "ConcatV2", "AddV2", "LRN"} {
		if !seen[op] {
			t.Errorf("no model here has %s", op)
		}
	}
}

func f32Bytes(v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return raw
}

// layoutPerm returns, for each element of the TensorFlow parameter tv,
// the index of the same element in the ONNX parameter ov, from the
// converter's layouts (internal/zoo/tfgraph): vectors as they are; 4-D
// filters [kh, kw, I, O] for ONNX's [O, I, kh, kw] (ConvTranspose's
// [I, O, kh, kw] for [kh, kw, O, I] alike) or, depthwise, [kh, kw, C, 1]
// for [C, 1, kh, kw]; a classifier's weights [in, out] for [out, in], with
// rows in NHWC's flattening order (h, w, c) where chw gives the feature
// map it reads. The permutation is checked against the values: every
// TensorFlow element must equal its ONNX element.
func layoutPerm(tv, ov *ir.Tensor, chw [3]int64) ([]int, error) {
	if tv == nil || ov == nil || tv.DType != ir.Float32 || ov.DType != ir.Float32 || len(tv.Raw) != len(ov.Raw) {
		return nil, fmt.Errorf("parameters are not float32 tensors of one size")
	}
	n := len(tv.Raw) / 4
	perm := make([]int, n)
	ts, os := tv.Shape, ov.Shape
	switch {
	case len(ts) <= 1:
		for i := range perm {
			perm[i] = i
		}
	case len(ts) == 4 && ts[0] == os[2] && ts[1] == os[3] && ts[2] == os[1] && ts[3] == os[0]:
		// TF (h, w, a, b) is ONNX (b, a, h, w).
		for h := range ts[0] {
			for w := range ts[1] {
				for a := range ts[2] {
					for b := range ts[3] {
						perm[((h*ts[1]+w)*ts[2]+a)*ts[3]+b] = int(((b*os[1]+a)*os[2]+h)*os[3] + w)
					}
				}
			}
		}
	case len(ts) == 4 && ts[0] == os[2] && ts[1] == os[3] && ts[2] == os[0] && ts[3] == os[1]:
		// Depthwise: TF (h, w, a, b) is ONNX (a, b, h, w).
		for h := range ts[0] {
			for w := range ts[1] {
				for a := range ts[2] {
					for b := range ts[3] {
						perm[((h*ts[1]+w)*ts[2]+a)*ts[3]+b] = int(((a*os[1]+b)*os[2]+h)*os[3] + w)
					}
				}
			}
		}
	case len(ts) == 2 && ts[0] == os[1] && ts[1] == os[0]:
		C, H, W := chw[0], chw[1], chw[2]
		if C*H*W != ts[0] {
			C, H, W = ts[0], 1, 1
		}
		for h := range H {
			for w := range W {
				for c := range C {
					in := (h*W+w)*C + c
					oin := (c*H+h)*W + w
					for o := range ts[1] {
						perm[in*ts[1]+o] = int(o*os[1] + oin)
					}
				}
			}
		}
	default:
		return nil, fmt.Errorf("no known layout maps %v to %v", ts, os)
	}
	for i, j := range perm {
		if string(tv.Raw[4*i:4*i+4]) != string(ov.Raw[4*j:4*j+4]) {
			return nil, fmt.Errorf("element %d does not equal ONNX element %d: the layouts differ", i, j)
		}
	}
	return perm, nil
}

// flattened returns the [C, H, W] of the NHWC feature map that a Reshape
// flattens into the matrix product reading p, if one does.
func flattened(g *ir.Graph, p *ir.Value) [3]int64 {
	for _, u := range p.Uses {
		n := u.Node
		if (n.Op != "MatMul" && n.Op != "_FusedMatMul") || n.Inputs[0].Def == nil || n.Inputs[0].Def.Op != "Reshape" {
			continue
		}
		if d, ok := n.Inputs[0].Def.Inputs[0].Type.Dims(); ok && len(d) == 4 {
			return [3]int64{d[3], d[1], d[2]}
		}
	}
	return [3]int64{}
}
