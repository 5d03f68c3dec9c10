package autodiff

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	exponnx "github.com/remat-compile/remat/exporters/onnx"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtest"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/passes"
)

func TestParseLoss(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Loss
		err  string
	}{
		{in: "sum", want: Loss{Kind: LossSum}},
		{in: "mean:out2", want: Loss{Kind: LossMean, Output: "out2"}},
		{in: "mse:tgt", want: Loss{Kind: LossMSE, Input: "tgt"}},
		{in: "mse:tgt:y", want: Loss{Kind: LossMSE, Input: "tgt", Output: "y"}},
		{in: "softmax-xent:label", want: Loss{Kind: LossSoftmaxXent, Input: "label"}},
		{in: "softmax-xent:label:logits", want: Loss{Kind: LossSoftmaxXent, Input: "label", Output: "logits"}},
		{in: "mse", err: "want mse:TARGET_INPUT"},
		{in: "mse::y", err: "want mse:TARGET_INPUT"},
		{in: "sum:a:b", err: "want sum[:OUTPUT]"},
		{in: "hinge", err: "unknown loss"},
	} {
		got, err := ParseLoss(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseLoss(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseLoss(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("ParseLoss(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestParseTrainableAndOptimizer(t *testing.T) {
	if got, err := ParseTrainable("all"); got != nil || err != nil {
		t.Errorf("ParseTrainable(all) = %v, %v", got, err)
	}
	if got, err := ParseTrainable("w1, b1"); !slices.Equal(got, []string{"w1", "b1"}) || err != nil {
		t.Errorf("ParseTrainable = %v, %v", got, err)
	}
	for _, bad := range []string{"w,,b", "w,w"} {
		if _, err := ParseTrainable(bad); err == nil {
			t.Errorf("ParseTrainable(%q) succeeded", bad)
		}
	}
	if o, err := ParseOptimizer("sgd:0.1"); err != nil || o != (Optimizer{Kind: SGD, LR: 0.1}) {
		t.Errorf("ParseOptimizer(sgd:0.1) = %v, %v", o, err)
	}
	if o, err := ParseOptimizer(""); err != nil || o.Kind != NoOptimizer {
		t.Errorf("ParseOptimizer(\"\") = %v, %v", o, err)
	}
	for _, bad := range []string{"sgd", "sgd:-1", "sgd:x", "adam:0.1", "sgd:NaN"} {
		if _, err := ParseOptimizer(bad); err == nil {
			t.Errorf("ParseOptimizer(%q) succeeded", bad)
		}
	}
}

const mlp = `graph mlp {
  opset 17
  input x:f32[2,3]
  param w = f32[4,3]{0.5, ...}
  param b = f32[4]{0.1, ...}
  param steps = i64[1]{3}
  h = Gemm(x, w, b) {transB=1}
  y = Relu(h)
  return y
}`

func build(t *testing.T, src string, opts Options) *ir.Graph {
	t.Helper()
	g := irtest.MustParse(t, src)
	if err := Build(g, opts); err != nil {
		t.Fatalf("Build: %v", err)
	}
	if err := ir.Verify(g); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return g
}

func outputNames(g *ir.Graph) []string {
	var s []string
	for _, o := range g.Outputs {
		s = append(s, o.Name)
	}
	return s
}

func TestDefaultTrainableAndOutputs(t *testing.T) {
	g := build(t, mlp, Options{Loss: Loss{Kind: LossSum}})
	if got, want := outputNames(g), []string{"loss", "w_grad", "b_grad"}; !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
	for _, o := range g.Outputs[1:] {
		if o.Type.String() != map[string]string{"w_grad": "f32[4,3]", "b_grad": "f32[4]"}[o.Name] {
			t.Errorf("%s has type %v", o.Name, o.Type)
		}
	}
	if l := g.Outputs[0]; l.Type.String() != "f32[]" {
		t.Errorf("loss has type %v", l.Type)
	}
	// The integer parameter is neither trainable nor kept.
	for _, p := range g.Params {
		if p.Name == "steps" {
			t.Errorf("unused integer parameter steps kept")
		}
	}
	for _, n := range g.Nodes {
		if n.Domain != "" {
			t.Errorf("node %s uses domain %q", n, n.Domain)
		}
	}
}

func TestSGDOutputs(t *testing.T) {
	g := build(t, mlp, Options{Loss: Loss{Kind: LossMean}, Trainable: []string{"w"}, Optimizer: Optimizer{Kind: SGD, LR: 0.01}})
	if got, want := outputNames(g), []string{"loss", "w_new"}; !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
}

func TestTrainableErrors(t *testing.T) {
	for _, tt := range []struct {
		trainable []string
		want      string
	}{
		{[]string{"nope"}, `"nope" is not a parameter or graph input`},
		{[]string{"steps"}, `trainable "steps" has type i64[1]`},
	} {
		g := irtest.MustParse(t, mlp)
		err := Build(g, Options{Trainable: tt.trainable})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Build(trainable %v) = %v, want %q", tt.trainable, err, tt.want)
		}
	}
	g := irtest.MustParse(t, `graph g {
  opset 17
  input x:f32[2]
  param w = f32[2]{1, 2}
  param u = f32[2]{1, 2}
  c = Greater(x, u)
  y = Mul(x, w)
  z = Where(c, y, x)
  return z, u
}`)
	err := Build(g, Options{Trainable: []string{"w", "u"}})
	if err == nil || !strings.Contains(err.Error(), `trainable "u" does not reach the loss`) {
		t.Errorf("Build = %v, want an error about u", err)
	}
}

func TestNoGradientError(t *testing.T) {
	g := irtest.MustParse(t, `graph g {
  opset 17
  input x:f32[2,3]
  param w = f32[3]{1, 2, 3}
  a = Mul(x, w)
  s = Sin(a) name="the_sine"
  k = Cos(x) name="unrelated"
  y = Add(s, k)
  return y
}`)
	err := Build(g, Options{File: "m.onnx"})
	var ng *NoGradientError
	if !errors.As(err, &ng) {
		t.Fatalf("Build = %v, want a *NoGradientError", err)
	}
	if want := `m.onnx: node "the_sine" (Sin): no gradient for Sin on a differentiable path`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestPrunesShapePaths: a reshape whose target shape is computed from the
// input's Shape, and integer index arithmetic, need no gradients.
func TestPrunesShapePaths(t *testing.T) {
	g := build(t, `graph g {
  opset 17
  input x:f32[2,3,4]
  param w = f32[4]{1, 2, 3, 4}
  param idx = i64[1]{0}
  param m1 = i64[1]{-1}
  s = Shape(x)
  n = Gather(s, idx)
  sh = Concat(n, m1) {axis=0}
  a = Mul(x, w)
  f = Floor(a)
  r = Reshape(a, sh)
  k = Add(r, r)
  return k, f
}`, Options{Loss: Loss{Kind: LossSum}})
	if got, want := outputNames(g), []string{"loss", "w_grad"}; !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
	for _, n := range g.Nodes {
		if n.Op == "Floor" {
			t.Errorf("the Floor branch, which feeds no loss, was kept")
		}
	}
}

// TestOpsetForms: reductions, squeezes and splits take their axes in the
// graph's opset's form.
func TestOpsetForms(t *testing.T) {
	src := func(opset string) string {
		return `graph g {
  opset ` + opset + `
  input x:f32[2,3,4]
  param w = f32[1,3,1]{1, 2, 3}
  y = Mul(x, w)
  return y
}`
	}
	for _, tt := range []struct {
		opset     string
		axesInput bool
	}{{"11", false}, {"13", true}, {"17", true}} {
		g := build(t, src(tt.opset), Options{Loss: Loss{Kind: LossMean}})
		found := false
		for _, n := range g.Nodes {
			if n.Op != "ReduceSum" {
				continue
			}
			found = true
			_, hasAttr := n.AttrInts("axes")
			if hasAttr == tt.axesInput || (len(n.Inputs) > 1) != tt.axesInput {
				t.Errorf("opset %s: ReduceSum has axes attribute %v, %d inputs", tt.opset, hasAttr, len(n.Inputs))
			}
		}
		if !found {
			t.Errorf("opset %s: no ReduceSum unbroadcasts w's gradient", tt.opset)
		}
		if g.Opset("") != map[string]int64{"11": 11, "13": 13, "17": 17}[tt.opset] {
			t.Errorf("opset changed to %d", g.Opset(""))
		}
	}
	g := irtest.MustParse(t, src("8"))
	if err := Build(g, Options{}); err == nil || !strings.Contains(err.Error(), "opset 9 or later") {
		t.Errorf("Build at opset 8 = %v", err)
	}
}

func TestMaxPoolOverlapNeedsOpset16(t *testing.T) {
	g := irtest.MustParse(t, `graph g {
  opset 13
  input x:f32[1,1,5,5]
  param w = f32[1,1,5,5]{1, ...}
  a = Mul(x, w)
  y = MaxPool(a) {kernel_shape=[3,3], strides=[2,2]} name="pool"
  return y
}`)
	err := Build(g, Options{})
	if err == nil || !strings.Contains(err.Error(), `node "pool" (MaxPool): the gradient of MaxPool with overlapping windows needs ScatterElements with reduction=add, from opset 16`) {
		t.Errorf("Build = %v", err)
	}
}

// TestDropoutMaskReused: in training mode the backward pass reads the
// mask output of the one Dropout node, which stays Random (never
// recomputed), and no second random node appears.
func TestDropoutMaskReused(t *testing.T) {
	g := build(t, `graph g {
  opset 17
  input x:f32[4,8]
  param w = f32[8]{0.5, ...}
  param r = f32[]{0.25}
  a = Mul(x, w)
  y = Dropout(a, r)
  return y
}`, Options{Loss: Loss{Kind: LossSum}})
	var drops []*ir.Node
	for _, n := range g.Nodes {
		if info := n.Info(); info != nil && info.Flags&ir.Random != 0 {
			drops = append(drops, n)
		}
	}
	if len(drops) != 1 {
		t.Fatalf("%d random nodes, want the one Dropout", len(drops))
	}
	d := drops[0]
	if d.Recomputable() {
		t.Errorf("Dropout is recomputable")
	}
	if len(d.Inputs) < 3 || d.Inputs[2] == nil || d.Inputs[2].Data == nil || d.Inputs[2].Data.Raw[0] != 1 {
		t.Errorf("Dropout not switched to training mode: inputs %v", d.Inputs)
	}
	if len(d.Outputs) < 2 || d.Outputs[1] == nil || len(d.Outputs[1].Uses) == 0 {
		t.Fatalf("the backward pass does not read the Dropout mask")
	}
}

func TestLossNames(t *testing.T) {
	g := irtest.MustParse(t, `graph g {
  opset 17
  input x:f32[2,3]
  param w = f32[3]{1, 2, 3}
  loss = Mul(x, w)
  return loss
}`)
	if err := Build(g, Options{}); err == nil || !strings.Contains(err.Error(), `already has a value named "loss"`) {
		t.Errorf("Build = %v", err)
	}
	g = irtest.MustParse(t, mlp)
	err := Build(g, Options{Loss: Loss{Kind: LossMSE, Input: "x"}})
	if err == nil || !strings.Contains(err.Error(), `input "x" has type f32[2,3], want f32[2,4]`) {
		t.Errorf("Build(mse:x) = %v", err)
	}
	g = build(t, mlp, Options{Loss: Loss{Kind: LossSoftmaxXent, Input: "label"}})
	lab := g.Inputs[len(g.Inputs)-1]
	if lab.Name != "label" || lab.Type.String() != "i64[2]" {
		t.Errorf("label input %s:%v", lab.Name, lab.Type)
	}
}

func TestPass(t *testing.T) {
	g := irtest.MustParse(t, mlp)
	p := NewPass(Options{Loss: Loss{Kind: LossSum}})
	if err := passes.Validate([]*passes.Pass{p}); err != nil {
		t.Fatal(err)
	}
	if _, err := passes.Run(context.Background(), g, []*passes.Pass{p}, passes.Options{Verify: true}); err != nil {
		t.Fatal(err)
	}
	if got := outputNames(g); !slices.Equal(got, []string{"loss", "w_grad", "b_grad"}) {
		t.Errorf("outputs %v", got)
	}
}

// cnn is a small network with initializers as weights; its weights are
// filled in by cnnSource.
const cnnTemplate = `graph cnn {
  opset 17
  input x:f32[2,3,8,8]
  param w1 = f32[4,3,3,3]{W1}
  param b1 = f32[4]{0.01, -0.02, 0.03, 0.0}
  param s1 = f32[4]{1, 0.9, 1.1, 1.2}
  param t1 = f32[4]{0, 0.1, -0.1, 0.05}
  param m1 = f32[4]{0, ...}
  param v1 = f32[4]{1, ...}
  param fw = f32[5,4]{FW}
  param fb = f32[5]{0, ...}
  c = Conv(x, w1, b1) {pads=[1,1,1,1]}
  n = BatchNormalization(c, s1, t1, m1, v1)
  r = Relu(n)
  p = MaxPool(r) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}
  d = Dropout(p)
  gp = GlobalAveragePool(d)
  f = Flatten(gp)
  y = Gemm(f, fw, fb) {transB=1}
  return y
}`

var cnn = cnnSource()

// cnnSource fills the template's weights with deterministic values.
func cnnSource() string {
	vals := func(n int, k float64) string {
		s := make([]string, n)
		for i := range s {
			s[i] = strconv.FormatFloat(0.3*math.Sin(float64(i)*k+1), 'g', 6, 32)
		}
		return strings.Join(s, ", ")
	}
	return strings.NewReplacer("{W1}", "{"+vals(108, 0.71)+"}", "{FW}", "{"+vals(20, 1.3)+"}").Replace(cnnTemplate)
}

// TestTrainingGraphRuns exports the training graph of a small CNN with
// initializers as its weights, checks it with onnx.checker when available,
// runs it in ONNX Runtime, and checks that one SGD step taken by the
// sgd:LR graph is p − LR·∂loss/∂p and lowers the loss (Dropout kept in
// inference mode so that the two runs see the same function).
func TestTrainingGraphRuns(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	write := func(name string, opts Options) string {
		g, err := irtext.Parse(name, cnn)
		if err != nil {
			t.Fatal(err)
		}
		if err := Build(g, opts); err != nil {
			t.Fatalf("Build: %v", err)
		}
		data, err := exponnx.Export(g, exponnx.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name+".onnx")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loss := Loss{Kind: LossSoftmaxXent, Input: "label"}
	gradPath := write("grad", Options{Loss: loss, KeepDropoutMode: true})
	sgdPath := write("sgd", Options{Loss: loss, KeepDropoutMode: true, Optimizer: Optimizer{Kind: SGD, LR: 0.5}})
	trainPath := write("train", Options{Loss: loss})
	if py := pythonWithONNX(); py != "" {
		out, err := exec.Command(py, "-c", "import onnx,sys\nfor p in sys.argv[1:]: onnx.checker.check_model(onnx.load(p), full_check=True)", gradPath, sgdPath, trainPath).CombinedOutput()
		if err != nil {
			t.Errorf("onnx.checker: %v\n%s", err, out)
		}
	} else {
		t.Log("python3 with the onnx module not found (Debian python3-onnx); onnx.checker not run")
	}
	xs := make([]float32, 2*3*8*8)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i) * 0.37))
	}
	x, _ := ort.NewTensor([]int64{2, 3, 8, 8}, xs)
	label, _ := ort.NewTensor([]int64{2}, []int64{1, 4})
	in := map[string]ort.Tensor{"x": x, "label": label}
	opts := ort.Options{Threads: 1}
	gr, err := ort.Run(gradPath, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	sg, err := ort.Run(sgdPath, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ort.Run(trainPath, in, opts); err != nil {
		t.Fatalf("training-mode graph (Dropout active): %v", err)
	}
	g0 := irtest.MustParse(t, cnn)
	params := map[string][]float64{}
	for _, p := range g0.Params {
		params[p.Name], _ = p.Data.Float64s()
	}
	for _, name := range []string{"w1", "b1", "s1", "t1", "fw", "fb"} {
		grad, _ := gr.Outputs[name+"_grad"].Float64s()
		upd, _ := sg.Outputs[name+"_new"].Float64s()
		if len(grad) == 0 || len(grad) != len(upd) {
			t.Fatalf("%s: %d gradient and %d updated elements", name, len(grad), len(upd))
		}
		for i := range grad {
			want := params[name][i] - 0.5*grad[i]
			if math.Abs(upd[i]-want) > 1e-5 {
				t.Errorf("%s_new[%d] = %g, want %g", name, i, upd[i], want)
				break
			}
		}
	}
	// One step lowers the loss: run the grad graph again with the updated
	// parameters fed as ... the parameters are initializers, so rebuild
	// the model with them.
	g1 := irtest.MustParse(t, cnn)
	for _, p := range g1.Params {
		if v, ok := sg.Outputs[p.Name+"_new"]; ok {
			f, _ := v.Float64s()
			p.Data = floatTensor(ir.Float32, p.Data.Shape, f)
		}
	}
	if err := Build(g1, Options{Loss: loss, KeepDropoutMode: true}); err != nil {
		t.Fatal(err)
	}
	data, err := exponnx.Export(g1, exponnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := filepath.Join(dir, "step1.onnx")
	os.WriteFile(p1, data, 0o644)
	r1, err := ort.Run(p1, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	l0, _ := gr.Outputs["loss"].Float64s()
	l1, _ := r1.Outputs["loss"].Float64s()
	if !(l1[0] < l0[0]) {
		t.Errorf("loss %g after one SGD step, %g before", l1[0], l0[0])
	}
	t.Logf("loss %.6g → %.6g after one SGD step", l0[0], l1[0])
}

// pythonWithONNX returns a python3 that imports onnx, or "".
func pythonWithONNX() string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import onnx").Run() == nil {
			return path
		}
	}
	return ""
}

// TestDropoutTrainingGradient: with Dropout active, the gradient of
// sum(Dropout(x)·k) is k·mask/(1 − ratio): each element is 0 or k/(1 − r),
// both occur, and the loss equals the sum over the kept elements.
func TestDropoutTrainingGradient(t *testing.T) {
	testmodels.RequireORT(t)
	g := irtest.MustParse(t, `graph g {
  opset 17
  input x:f32[16,16]
  param r = f32[]{0.25}
  param k = f32[]{3}
  y = Dropout(x, r)
  z = Mul(y, k)
  return z
}`)
	if err := Build(g, Options{Loss: Loss{Kind: LossSum}, Trainable: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	data, err := exponnx.Export(g, exponnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "drop.onnx")
	os.WriteFile(p, data, 0o644)
	xs := make([]float32, 256)
	for i := range xs {
		xs[i] = 1
	}
	x, _ := ort.NewTensor([]int64{16, 16}, xs)
	res, err := ort.Run(p, map[string]ort.Tensor{"x": x}, ort.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	grad, _ := res.Outputs["x_grad"].Float64s()
	loss, _ := res.Outputs["loss"].Float64s()
	keep := 3 / 0.75
	kept := 0
	for i, v := range grad {
		switch {
		case v == 0:
		case math.Abs(v-keep) < 1e-5:
			kept++
		default:
			t.Fatalf("x_grad[%d] = %g, want 0 or %g", i, v, keep)
		}
	}
	if kept == 0 || kept == len(grad) {
		t.Errorf("%d of %d elements kept: the mask is degenerate", kept, len(grad))
	}
	// x is all ones, so the loss is Σ mask·k/(1−r) = kept·keep: the
	// backward pass used the forward pass's mask.
	if math.Abs(loss[0]-float64(kept)*keep) > 1e-3 {
		t.Errorf("loss %g, but the gradient's mask keeps %d elements (%g)", loss[0], kept, float64(kept)*keep)
	}
}

// TestTrainableAllIsTheModelsParameters: with every parameter trainable
// (the default), the gradients are those of the model's own parameters,
// not of the constants the lowering of BatchNormalization adds (its
// epsilon), on the zoo's MobileNet v2.
func TestTrainableAllIsTheModelsParameters(t *testing.T) {
	g, err := onnximp.ImportFile(filepath.Join("..", "..", "testdata", "zoo", "mobilenet_v2.onnx"), onnximp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{}
	for _, v := range g.Params {
		own[v.Name] = true
	}
	if err := Build(g, Options{}); err != nil {
		t.Fatal(err)
	}
	grads := 0
	for _, o := range g.Outputs[1:] {
		name, ok := strings.CutSuffix(o.Name, "_grad")
		if !ok || !own[name] {
			t.Errorf("output %q is not the gradient of a parameter of the model", o.Name)
		}
		grads++
	}
	if grads == 0 {
		t.Error("no gradients")
	}
}
