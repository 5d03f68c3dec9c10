package autodiff

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	exponnx "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
)

// The gradient check: for each case (one op and one attribute
// configuration) the training graph runs in ONNX Runtime and every gradient
// it returns is compared with central finite differences
// (L(v + h·eᵢ) − L(v − h·eᵢ)) / 2h of the loss graph (Forward) run in ONNX
// Runtime too.
//
// Cases are written with the element type T. They run in float64 (h = 1e-6,
// |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric|) when ONNX Runtime's CPU
// provider has a double kernel for every op of the training graph, and
// otherwise in float32 (h = 3e-4, tolerance 5e-3 + 2e-2·|numeric|; the
// loss is summed in float32, so its rounding error is about 1e-7·|L|/h,
// under 1e-3 for the losses here, while a larger h lets kinks of Relu
// and MaxPool fall within h of the conv-bn-relu network's values).
// Input values are a shuffled grid (distinct, at least 2/n apart, none
// within 0.4/n of 0), so that no kink of Relu, Abs, Clip or a max lies within h of an
// input in float64, and rarely in float32. When an input has more than
// maxChecked elements, a seeded sample of maxChecked of them is checked.

const maxChecked = 40

type gradCase struct {
	name  string
	opset int64
	// body is the graph's text without the opset line, T standing for the
	// float type.
	body string
	// loss defaults to "mse:target" against a random target, so that dy is
	// not uniform.
	loss string
	// wrt names the inputs to differentiate (comma-separated).
	wrt string
	// vals fixes the values of inputs (labels, indices).
	vals map[string][]float64
	// positive inputs are drawn from [0.5, 1.5] instead of [−1, 1].
	positive []string
	// keepDropout leaves Dropout in the file's mode.
	keepDropout bool
	// f32 runs in float32 only (ops that ORT has no double kernel for).
	f32 bool
}

func gradCases() []gradCase {
	return []gradCase{
		// Elementwise arithmetic with broadcasting.
		{name: "Add/bcast", body: `input a:T[2,3,4]
input b:T[3,1]
y = Add(a, b)
return y`, wrt: "a,b"},
		{name: "Sub/bcast", body: `input a:T[3,1]
input b:T[2,3,4]
y = Sub(a, b)
return y`, wrt: "a,b"},
		{name: "Mul/bcast", body: `input a:T[2,3,4]
input b:T[4]
y = Mul(a, b)
return y`, wrt: "a,b"},
		{name: "Div/bcast", body: `input a:T[2,3,4]
input b:T[2,1,4]
y = Div(a, b)
return y`, wrt: "a,b", positive: []string{"b"}},
		{name: "Pow", body: `input a:T[2,3]
input e:T[3]
y = Pow(a, e)
return y`, wrt: "a,e", positive: []string{"a"}},
		{name: "Sum/variadic", body: `input a:T[2,3]
input b:T[3]
input c:T[2,1]
y = Sum(a, b, c)
return y`, wrt: "a,b,c"},
		{name: "Neg", body: unary("Neg", ""), wrt: "x"},
		{name: "Sqrt", body: unary("Sqrt", ""), wrt: "x", positive: []string{"x"}},
		{name: "Exp", body: unary("Exp", ""), wrt: "x"},
		{name: "Log", body: unary("Log", ""), wrt: "x", positive: []string{"x"}},
		{name: "Abs", body: unary("Abs", ""), wrt: "x"},
		{name: "Reciprocal", body: unary("Reciprocal", ""), wrt: "x", positive: []string{"x"}},
		// Activations.
		{name: "Relu", body: unary("Relu", ""), wrt: "x"},
		{name: "LeakyRelu", body: unary("LeakyRelu", "{alpha=0.3}"), wrt: "x"},
		{name: "PRelu/channel", body: `input x:T[2,3,2,2]
input s:T[3,1,1]
y = PRelu(x, s)
return y`, wrt: "x,s"},
		{name: "Elu", body: unary("Elu", "{alpha=0.7}"), wrt: "x"},
		{name: "Sigmoid", body: unary("Sigmoid", ""), wrt: "x"},
		{name: "HardSigmoid", body: unary("HardSigmoid", "{alpha=0.4, beta=0.45}"), wrt: "x"},
		{name: "HardSwish", opset: 17, body: `input x:T[3,5]
param k = T[]{4.0}
s = Mul(x, k)
y = HardSwish(s)
return y`, wrt: "x"},
		{name: "Tanh", body: unary("Tanh", ""), wrt: "x"},
		{name: "Clip/inputs", body: `input x:T[3,5]
param lo = T[]{-0.5}
param hi = T[]{0.6}
y = Clip(x, lo, hi)
return y`, wrt: "x"},
		{name: "Clip/opset9attrs", opset: 9, body: `input x:T[3,5]
y = Clip(x) {min=-0.5, max=0.6}
return y`, wrt: "x"},
		{name: "Erf", body: unary("Erf", ""), wrt: "x"},
		{name: "Gelu/exact", opset: 20, body: unary("Gelu", ""), wrt: "x"},
		{name: "Gelu/tanh", opset: 20, body: unary("Gelu", `{approximate="tanh"}`), wrt: "x"},
		{name: "Softplus", body: unary("Softplus", ""), wrt: "x"},
		{name: "Softmax/axis1", body: `input x:T[2,3,4]
y = Softmax(x) {axis=1}
return y`, wrt: "x"},
		{name: "Softmax/last", body: `input x:T[2,3,4]
y = Softmax(x)
return y`, wrt: "x"},
		{name: "Softmax/opset11coerced", opset: 11, body: `input x:T[2,3,4]
y = Softmax(x) {axis=1}
return y`, wrt: "x"},
		{name: "LogSoftmax/axis1", body: `input x:T[2,3,4]
y = LogSoftmax(x) {axis=1}
return y`, wrt: "x"},
		{name: "LogSoftmax/opset11", opset: 11, body: `input x:T[2,3,4]
y = LogSoftmax(x) {axis=1}
return y`, wrt: "x"},
		// Matrix products.
		{name: "Gemm/plain", body: gemm(false, false, 1, 1, "[3,5]"), wrt: "a,b,c"},
		{name: "Gemm/transA", body: gemm(true, false, 0.5, 2, "[5]"), wrt: "a,b,c"},
		{name: "Gemm/transB", body: gemm(false, true, 1.5, 0.5, "[3,1]"), wrt: "a,b,c"},
		{name: "Gemm/transAB", body: gemm(true, true, -0.7, 1, "[]"), wrt: "a,b,c"},
		{name: "MatMul/2d", body: matmul("[3,4]", "[4,5]"), wrt: "a,b"},
		{name: "MatMul/batched", body: matmul("[2,3,4]", "[2,4,5]"), wrt: "a,b"},
		{name: "MatMul/broadcast", body: matmul("[2,1,3,4]", "[3,4,2]"), wrt: "a,b"},
		{name: "MatMul/vec-mat", body: matmul("[4]", "[2,4,3]"), wrt: "a,b"},
		{name: "MatMul/mat-vec", body: matmul("[2,3,4]", "[4]"), wrt: "a,b"},
		// Convolution.
		{name: "Conv/basic", body: conv("[1,2,5,5]", "[3,2,3,3]", true, ""), wrt: "x,w,b"},
		{name: "Conv/stride2pad1", body: conv("[2,2,6,5]", "[3,2,3,3]", true, "strides=[2,2], pads=[1,1,1,1]"), wrt: "x,w,b"},
		{name: "Conv/asympads", body: conv("[1,2,5,6]", "[2,2,2,3]", false, "pads=[0,1,2,1]"), wrt: "x,w"},
		{name: "Conv/dilation2", body: conv("[1,2,7,7]", "[2,2,3,3]", false, "dilations=[2,2], pads=[1,1,1,1]"), wrt: "x,w"},
		{name: "Conv/groups2", body: conv("[1,4,5,5]", "[6,2,3,3]", true, "group=2, pads=[1,1,1,1]"), wrt: "x,w,b"},
		{name: "Conv/depthwise", body: conv("[2,3,5,5]", "[3,1,3,3]", false, "group=3, strides=[2,2]"), wrt: "x,w"},
		{name: "Conv/same_upper_s2", body: conv("[1,2,6,6]", "[2,2,3,3]", false, `auto_pad="SAME_UPPER", strides=[2,2]`), wrt: "x,w"},
		{name: "Conv/same_lower", body: conv("[1,2,5,5]", "[2,2,2,2]", false, `auto_pad="SAME_LOWER"`), wrt: "x,w"},
		{name: "Conv/1d_stride3", body: conv("[2,2,10]", "[3,2,3]", true, "strides=[3], pads=[1,0]"), wrt: "x,w,b"},
		{name: "ConvTranspose/s2p1", body: convT("[1,2,3,3]", "[2,3,3,3]", true, "strides=[2,2], pads=[1,1,1,1]"), wrt: "x,w,b"},
		{name: "ConvTranspose/outpad", body: convT("[1,2,3,4]", "[2,2,3,3]", false, "strides=[2,2], pads=[1,1,1,1], output_padding=[1,1]"), wrt: "x,w"},
		{name: "ConvTranspose/groups2", body: convT("[1,4,3,3]", "[4,1,2,2]", false, "group=2, strides=[2,2]"), wrt: "x,w"},
		// Pooling.
		{name: "MaxPool/2x2s2", body: pool("MaxPool", "[1,2,4,6]", "kernel_shape=[2,2], strides=[2,2]"), wrt: "x"},
		{name: "MaxPool/3x3s2p1overlap", body: pool("MaxPool", "[1,2,6,6]", "kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]"), wrt: "x"},
		{name: "MaxPool/opset13nooverlap", opset: 13, body: pool("MaxPool", "[2,2,4,4]", "kernel_shape=[2,2], strides=[2,2]"), wrt: "x"},
		{name: "AveragePool/2x2s2", body: pool("AveragePool", "[1,2,4,6]", "kernel_shape=[2,2], strides=[2,2]"), wrt: "x"},
		{name: "AveragePool/3x3p1exclpad", body: pool("AveragePool", "[1,2,5,5]", "kernel_shape=[3,3], pads=[1,1,1,1]"), wrt: "x"},
		{name: "AveragePool/3x3p1inclpad", body: pool("AveragePool", "[1,2,5,5]", "kernel_shape=[3,3], pads=[1,1,1,1], count_include_pad=1"), wrt: "x"},
		{name: "AveragePool/ceil", body: pool("AveragePool", "[1,1,5,5]", "kernel_shape=[2,2], strides=[2,2], ceil_mode=1"), wrt: "x"},
		{name: "GlobalAveragePool", body: pool("GlobalAveragePool", "[2,3,3,4]", ""), wrt: "x"},
		{name: "MaxUnpool/segnet", body: `input x:T[1,2,4,4]
input k:T[1,2,2,2]
p, i = MaxPool(x) {kernel_shape=[2,2], strides=[2,2]}
q = Mul(p, k)
y = MaxUnpool(q, i) {kernel_shape=[2,2], strides=[2,2]}
return y`, wrt: "x,k"},
		// Normalisation in training semantics.
		{name: "BatchNormalization/train", body: `input x:T[3,2,2,3]
input s:T[2]
input b:T[2]
param m = T[2]{0, ...}
param v = T[2]{1, ...}
y = BatchNormalization(x, s, b, m, v) {epsilon=0.01}
return y`, wrt: "x,s,b"},
		{name: "InstanceNormalization", body: `input x:T[2,2,3,3]
input s:T[2]
input b:T[2]
y = InstanceNormalization(x, s, b) {epsilon=0.01}
return y`, wrt: "x,s,b"},
		{name: "LayerNormalization", body: `input x:T[2,3,4]
input s:T[4]
input b:T[4]
y = LayerNormalization(x, s, b) {epsilon=0.01}
return y`, wrt: "x,s,b"},
		{name: "LRN/size3", body: `input x:T[2,5,2,2]
y = LRN(x) {size=3, alpha=0.5, beta=0.75, bias=1.5}
return y`, wrt: "x"},
		{name: "LRN/size4", body: `input x:T[1,6,3,1]
y = LRN(x) {size=4, alpha=0.3, beta=0.6, bias=1.0}
return y`, wrt: "x"},
		// Data movement.
		{name: "Concat", body: `input a:T[2,3]
input b:T[2,2]
y = Concat(a, b, a) {axis=1}
return y`, wrt: "a,b"},
		{name: "Split/opset13", opset: 13, body: `input x:T[2,5]
param sp = i64[2]{2, 3}
p, q = Split(x, sp) {axis=1}
y = Mul(p, p)
z = Concat(y, q) {axis=1}
return z`, wrt: "x"},
		{name: "Split/opset11unused", opset: 11, body: `input x:T[6,2]
p, q, r = Split(x) {axis=0}
y = Add(p, r)
return y`, wrt: "x"},
		{name: "Slice", body: `input x:T[4,5]
param st = i64[2]{1, -4}
param en = i64[2]{3, 100}
param ax = i64[2]{0, 1}
y = Slice(x, st, en, ax)
return y`, wrt: "x"},
		{name: "Reshape+Flatten", body: `input x:T[2,3,4]
param sh = i64[2]{4, -1}
r = Reshape(x, sh)
y = Flatten(r) {axis=0}
return y`, wrt: "x"},
		{name: "Transpose", body: `input x:T[2,3,4]
y = Transpose(x) {perm=[2,0,1]}
return y`, wrt: "x"},
		{name: "Squeeze+Unsqueeze/opset13", opset: 13, body: `input x:T[2,1,3]
param a1 = i64[1]{1}
param a2 = i64[1]{0}
s = Squeeze(x, a1)
y = Unsqueeze(s, a2)
return y`, wrt: "x"},
		{name: "Squeeze+Unsqueeze/opset11", opset: 11, body: `input x:T[2,1,3]
s = Squeeze(x) {axes=[1]}
y = Unsqueeze(s) {axes=[0]}
return y`, wrt: "x"},
		{name: "Expand", body: `input x:T[3,1]
param sh = i64[3]{2, 3, 4}
y = Expand(x, sh)
return y`, wrt: "x"},
		{name: "Pad/negative", body: `input x:T[3,4]
param p = i64[4]{1, -1, 2, 1}
y = Pad(x, p)
return y`, wrt: "x"},
		{name: "Resize/nearest2x", body: resize("[1,1,3,4]", `{mode="nearest"}`, "1, 1, 2, 2"), wrt: "x", f32: true},
		{name: "Resize/linear_half_pixel", body: resize("[1,2,3,4]", `{mode="linear"}`, "1, 1, 2, 1.5"), wrt: "x", f32: true},
		{name: "Resize/linear_align_corners", body: resize("[1,1,3,3]", `{mode="linear", coordinate_transformation_mode="align_corners"}`, "1, 1, 1.7, 2"), wrt: "x", f32: true},
		{name: "ReduceSum/opset11", opset: 11, body: `input x:T[2,3,4]
y = ReduceSum(x) {axes=[1], keepdims=0}
z = Mul(y, y)
return z`, wrt: "x"},
		{name: "ReduceSum/opset13", opset: 13, body: `input x:T[2,3,4]
param ax = i64[2]{0, -1}
y = ReduceSum(x, ax)
z = Mul(y, y)
return z`, wrt: "x"},
		{name: "ReduceMean/opset17", body: `input x:T[2,3,4]
y = ReduceMean(x) {axes=[2]}
z = Mul(y, y)
return z`, wrt: "x"},
		{name: "ReduceMean/opset18", opset: 18, body: `input x:T[2,3,4]
param ax = i64[1]{1}
y = ReduceMean(x, ax) {keepdims=0}
z = Mul(y, y)
return z`, wrt: "x"},
		{name: "Gather/embedding", body: `input e:T[5,3]
input ids:i64[2,3]
y = Gather(e, ids)
return y`, wrt: "e", vals: map[string][]float64{"ids": {1, 4, 1, 0, -1, 1}}},
		{name: "Where", body: `input c:bool[2,3]
input a:T[2,3]
input b:T[3]
y = Where(c, a, b)
return y`, wrt: "a,b", vals: map[string][]float64{"c": {1, 0, 1, 1, 0, 0}}},
		{name: "Cast+Identity", body: `input x:T[2,3]
c = Cast(x) {to=11}
d = Identity(c)
e = Cast(d) {to=1}
return e`, wrt: "x", f32: true},
		{name: "Dropout/inference", keepDropout: true, body: `input x:T[2,3]
y = Dropout(x)
z = Mul(y, y)
return z`, wrt: "x"},
		{name: "Shape-path/pruned", body: `input x:T[2,3,4]
param idx = i64[1]{0}
param m1 = i64[1]{-1}
s = Shape(x)
n = Gather(s, idx)
sh = Concat(n, m1) {axis=0}
y = Reshape(x, sh)
z = Mul(y, y)
return z`, wrt: "x"},
		// Losses and a small network.
		{name: "loss/softmax-xent", body: `input z:T[3,4]
y = Identity(z)
return y`, loss: "softmax-xent:label", wrt: "z", vals: map[string][]float64{"label": {2, 0, 3}}},
		{name: "loss/softmax-xent-spatial", body: `input z:T[2,3,2]
y = Identity(z)
return y`, loss: "softmax-xent:label", wrt: "z", vals: map[string][]float64{"label": {2, 0, 1, 1}}},
		{name: "loss/mean", body: unary("Tanh", ""), loss: "mean", wrt: "x"},
		{name: "cnn/conv-bn-relu-pool-gemm", body: `input x:T[2,2,6,6]
input w:T[3,2,3,3]
input s:T[3]
input b:T[3]
input fw:T[4,27]
input fb:T[4]
param m = T[3]{0, ...}
param v = T[3]{1, ...}
c = Conv(x, w) {pads=[1,1,1,1]}
n = BatchNormalization(c, s, b, m, v)
r = Relu(n)
p = MaxPool(r) {kernel_shape=[2,2], strides=[2,2]}
f = Flatten(p)
y = Gemm(f, fw, fb) {transB=1}
return y`, loss: "softmax-xent:label", wrt: "x,w,s,b,fw,fb", vals: map[string][]float64{"label": {1, 3}}},
	}
}

func unary(op, attrs string) string {
	return fmt.Sprintf("input x:T[3,5]\ny = %s(x) %s\nreturn y", op, attrs)
}

func gemm(ta, tb bool, alpha, beta float64, cshape string) string {
	a, b := "[3,4]", "[4,5]"
	if ta {
		a = "[4,3]"
	}
	if tb {
		b = "[5,4]"
	}
	return fmt.Sprintf("input a:T%s\ninput b:T%s\ninput c:T%s\ny = Gemm(a, b, c) {transA=%d, transB=%d, alpha=%s, beta=%s}\nreturn y",
		a, b, cshape, boolInt(ta), boolInt(tb), float32ish(alpha), float32ish(beta))
}

// float32ish prints a float attribute so that it reads as a float.
func float32ish(v float64) string {
	s := fmt.Sprintf("%g", v)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func matmul(a, b string) string {
	return fmt.Sprintf("input a:T%s\ninput b:T%s\ny = MatMul(a, b)\nreturn y", a, b)
}

func conv(x, w string, bias bool, attrs string) string {
	if bias {
		m := strings.Split(strings.Trim(w, "[]"), ",")[0]
		return fmt.Sprintf("input x:T%s\ninput w:T%s\ninput b:T[%s]\ny = Conv(x, w, b) {%s}\nreturn y", x, w, m, attrs)
	}
	return fmt.Sprintf("input x:T%s\ninput w:T%s\ny = Conv(x, w) {%s}\nreturn y", x, w, attrs)
}

func convT(x, w string, bias bool, attrs string) string {
	if bias {
		return fmt.Sprintf("input x:T%s\ninput w:T%s\ninput b:T[3]\ny = ConvTranspose(x, w, b) {%s}\nreturn y", x, w, attrs)
	}
	return fmt.Sprintf("input x:T%s\ninput w:T%s\ny = ConvTranspose(x, w) {%s}\nreturn y", x, w, attrs)
}

func pool(op, x, attrs string) string {
	return fmt.Sprintf("input x:T%s\ny = %s(x) {%s}\nreturn y", x, op, attrs)
}

func resize(x, attrs, scales string) string {
	return fmt.Sprintf("input x:T%s\nparam sc = f32[4]{%s}\ny = Resize(x, _, sc) %s\nreturn y", x, scales, attrs)
}

// ---- the harness ----

// checkResult is the outcome of one gradient check.
type checkResult struct {
	dtype      string // "double" or "float"
	checked    int    // elements compared
	mismatches []string
	worst      float64 // largest |analytic − numeric| / (atol + rtol·|numeric|)
}

// errNoDouble marks ORT's refusal of a double kernel.
var errNoDouble = errors.New("no double kernel")

func (c gradCase) source(dt string) string {
	op := c.opset
	if op == 0 {
		op = 17
	}
	body := strings.ReplaceAll(c.body, "T[", dt+"[")
	return fmt.Sprintf("graph g {\n  opset %d\n%s\n}\n", op, body)
}

func (c gradCase) options() (Options, error) {
	ls := c.loss
	if ls == "" {
		ls = "mse:target"
	}
	l, err := ParseLoss(ls)
	if err != nil {
		return Options{}, err
	}
	tr, err := ParseTrainable(c.wrt)
	if err != nil {
		return Options{}, err
	}
	return Options{Loss: l, Trainable: tr, KeepDropoutMode: c.keepDropout}, nil
}

// runCheck builds, exports and checks one case in one element type.
func runCheck(t *testing.T, c gradCase, dt string) (*checkResult, error) {
	ortdt := "double"
	h, atol, rtol := 1e-6, 1e-6, 1e-5
	if dt == "f32" {
		ortdt = "float"
		h, atol, rtol = 3e-4, 5e-3, 2e-2
	}
	opts, err := c.options()
	if err != nil {
		return nil, err
	}
	src := c.source(dt)
	fg, err := irtext.Parse(c.name, src)
	if err != nil {
		return nil, fmt.Errorf("parse: %v", err)
	}
	tg, _ := irtext.Parse(c.name, src)
	if err := Forward(fg, opts); err != nil {
		return nil, fmt.Errorf("Forward: %w", err)
	}
	if err := Build(tg, opts); err != nil {
		return nil, fmt.Errorf("Build: %w", err)
	}
	dir := t.TempDir()
	fpath, tpath := filepath.Join(dir, "forward.onnx"), filepath.Join(dir, "train.onnx")
	for _, w := range []struct {
		g *ir.Graph
		p string
	}{{fg, fpath}, {tg, tpath}} {
		data, err := exponnx.Export(w.g, exponnx.Options{})
		if err != nil {
			return nil, fmt.Errorf("export: %v", err)
		}
		if err := os.WriteFile(w.p, data, 0o644); err != nil {
			return nil, err
		}
	}

	// Inputs of the forward graph (the training graph has the same ones).
	rng := rand.New(rand.NewPCG(uint64(len(c.name)), 7))
	inputs := map[string]ort.Tensor{}
	values := map[string][]float64{}
	shapes := map[string][]int64{}
	for _, in := range fg.Inputs {
		dims, ok := in.Type.Dims()
		if !ok {
			return nil, fmt.Errorf("input %s is not static", in)
		}
		n := int(prod(dims))
		var vals []float64
		if v, ok := c.vals[in.Name]; ok {
			vals = v
		} else {
			lo := -1.0
			if slices.Contains(c.positive, in.Name) {
				lo = 0.5
			}
			// A shuffled grid in [lo, lo+2] (positive: [0.5, 1.5]), offset
			// by 0.3 of a step so that no value lies within 0.2 of a step
			// of 0.
			span := 2.0
			if lo > 0 {
				span = 1
			}
			perm := rng.Perm(n)
			vals = make([]float64, n)
			for i := range vals {
				vals[i] = lo + span*(float64(perm[i])+0.3)/float64(n) + 1e-3*rng.Float64()/float64(n)
			}
		}
		values[in.Name], shapes[in.Name] = vals, dims
		tt, err := tensorOf(in.Type.DType, dims, vals)
		if err != nil {
			return nil, err
		}
		inputs[in.Name] = tt
	}
	runOpts := ort.Options{Level: "disabled", Threads: 1}
	res, err := ort.Run(tpath, inputs, runOpts)
	if err != nil {
		if strings.Contains(err.Error(), "NOT_IMPLEMENTED") || strings.Contains(err.Error(), "Could not find an implementation") {
			return nil, fmt.Errorf("%w: %v", errNoDouble, err)
		}
		return nil, fmt.Errorf("training graph: %v", err)
	}
	loss := func(in map[string]ort.Tensor) (float64, error) {
		r, err := ort.Run(fpath, in, runOpts)
		if err != nil {
			return 0, err
		}
		v, err := r.Outputs[LossName].Float64s()
		if err != nil {
			return 0, err
		}
		return v[0], nil
	}
	l0, err := loss(inputs)
	if err != nil {
		if strings.Contains(err.Error(), "NOT_IMPLEMENTED") || strings.Contains(err.Error(), "Could not find an implementation") {
			return nil, fmt.Errorf("%w: %v", errNoDouble, err)
		}
		return nil, fmt.Errorf("forward graph: %v", err)
	}
	lt, _ := res.Outputs[LossName].Float64s()
	out := &checkResult{dtype: ortdt}
	if d := math.Abs(lt[0] - l0); d > atol+rtol*math.Abs(l0) {
		out.mismatches = append(out.mismatches, fmt.Sprintf("loss: training graph %g, forward graph %g", lt[0], l0))
	}
	for _, name := range opts.Trainable {
		gt, ok := res.Outputs[name+"_grad"]
		if !ok {
			return nil, fmt.Errorf("no output %s_grad", name)
		}
		grad, err := gt.Float64s()
		if err != nil {
			return nil, err
		}
		vals := values[name]
		for _, i := range sampleIndices(rng, len(vals), maxChecked) {
			pert := slices.Clone(vals)
			var l [2]float64
			for k, s := range []float64{1, -1} {
				pert[i] = vals[i] + s*h
				tt, _ := tensorOf(fgType(fg, name), shapes[name], pert)
				in := maps(inputs)
				in[name] = tt
				if l[k], err = loss(in); err != nil {
					return nil, err
				}
			}
			// The step actually taken, after rounding to the element type.
			step := h
			if dt == "f32" {
				step = float64(float32(vals[i]+h)) - float64(float32(vals[i]-h))
				step /= 2
			}
			num := (l[0] - l[1]) / (2 * step)
			out.checked++
			ratio := math.Abs(grad[i]-num) / (atol + rtol*math.Abs(num))
			out.worst = max(out.worst, ratio)
			if ratio > 1 {
				out.mismatches = append(out.mismatches, fmt.Sprintf("%s_grad[%d] = %.8g, finite differences %.8g", name, i, grad[i], num))
			}
		}
	}
	return out, nil
}

// sampleIndices returns 0, …, n−1, or a seeded sorted sample of most of
// them when n is larger.
func sampleIndices(rng *rand.Rand, n, most int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if n > most {
		rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx = idx[:most]
		slices.Sort(idx)
	}
	return idx
}

func fgType(g *ir.Graph, name string) ir.DType {
	for _, in := range g.Inputs {
		if in.Name == name {
			return in.Type.DType
		}
	}
	return ir.Undefined
}

func maps(m map[string]ort.Tensor) map[string]ort.Tensor {
	out := make(map[string]ort.Tensor, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// tensorOf encodes vals as an ORT tensor of the IR element type dt.
func tensorOf(dt ir.DType, dims []int64, vals []float64) (ort.Tensor, error) {
	switch dt {
	case ir.Float64:
		return ort.NewTensor(dims, vals)
	case ir.Float32:
		v := make([]float32, len(vals))
		for i, x := range vals {
			v[i] = float32(x)
		}
		return ort.NewTensor(dims, v)
	case ir.Int64:
		v := make([]int64, len(vals))
		for i, x := range vals {
			v[i] = int64(x)
		}
		return ort.NewTensor(dims, v)
	case ir.Int32:
		v := make([]int32, len(vals))
		for i, x := range vals {
			v[i] = int32(x)
		}
		return ort.NewTensor(dims, v)
	case ir.Bool:
		v := make([]bool, len(vals))
		for i, x := range vals {
			v[i] = x != 0
		}
		return ort.NewTensor(dims, v)
	}
	return ort.Tensor{}, fmt.Errorf("tensorOf: unsupported %v", dt)
}

// check runs a case in float64, falling back to float32 when ORT has no
// double kernel for one of its ops.
func check(t *testing.T, c gradCase) (*checkResult, error) {
	if !c.f32 {
		r, err := runCheck(t, c, "f64")
		if err == nil || !errors.Is(err, errNoDouble) {
			return r, err
		}
	}
	return runCheck(t, c, "f32")
}

var rulesMu sync.Mutex // the wrong-rule test swaps an entry of rules

// TestGradients is the per-op gradient check against ONNX Runtime.
func TestGradients(t *testing.T) {
	testmodels.RequireORT(t)
	rulesMu.Lock()
	defer rulesMu.Unlock()
	cases := gradCases()
	if testing.Short() {
		cases = slices.DeleteFunc(cases, func(c gradCase) bool {
			return strings.HasPrefix(c.name, "cnn/") || strings.HasPrefix(c.name, "Conv")
		})
	}
	passed, ran := 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran++
			r, err := check(t, c)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range r.mismatches {
				if i == 10 {
					t.Errorf("and %d more mismatches", len(r.mismatches)-i)
					break
				}
				t.Error(m)
			}
			if len(r.mismatches) == 0 {
				passed++
			}
			t.Logf("%s: %d elements checked in %s, worst error %.3g of tolerance", c.name, r.checked, r.dtype, r.worst)
		})
	}
	t.Logf("%d of %d configurations pass", passed, ran)
}

// TestWrongGradientFails proves that the harness catches a wrong formula:
// with the Sigmoid rule swapped for dx = dy·y (missing the 1 − y factor),
// MaxPool's scatter without reduction=add over overlapping windows, and
// the Conv weight rule's strides and dilations not swapped, the checks of
// those ops fail.
func TestWrongGradientFails(t *testing.T) {
	testmodels.RequireORT(t)
	rulesMu.Lock()
	defer rulesMu.Unlock()
	byName := map[string]gradCase{}
	for _, c := range gradCases() {
		byName[c.name] = c
	}
	for _, w := range []struct {
		op, cas string
		wrong   func(*gctx) error
	}{
		{"Sigmoid", "Sigmoid", func(c *gctx) error {
			c.set(0, c.b.mul(c.dy[0], c.y(0)))
			return nil
		}},
		{"MaxPool", "MaxPool/3x3s2p1overlap", func(c *gctx) error {
			// Overlapping windows scattered without reduction=add: a
			// plausible mistake that loses contributions.
			x := c.x(0)
			ind := c.n.SetOutput(1, c.b.fresh(c.y(0).Name+"_indices"))
			ind.Type = tensorType(ir.Int64, dimsOf(c.y(0)))
			nx, ny := prod(dimsOf(x)), prod(dimsOf(c.y(0)))
			s := c.b.add("ScatterElements", tensorType(c.dt(), []int64{nx}), []*ir.Value{c.b.zeros(c.dt(), []int64{nx}), c.b.reshape(ind, []int64{ny}), c.b.reshape(c.dy[0], []int64{ny})}, ir.IntAttr("axis", 0))
			c.set(0, c.b.reshape(s, dimsOf(x)))
			return nil
		}},
	} {
		t.Run(w.op, func(t *testing.T) {
			good := rules[w.op]
			rules[w.op] = &rule{in: good.in, grad: w.wrong}
			defer func() { rules[w.op] = good }()
			r, err := check(t, byName[w.cas])
			if err != nil {
				t.Fatal(err)
			}
			if len(r.mismatches) == 0 {
				t.Fatalf("the wrong %s rule passed the gradient check (worst error %.3g of tolerance)", w.op, r.worst)
			}
			t.Logf("the wrong %s rule fails as it should: %d mismatches, first: %s", w.op, len(r.mismatches), r.mismatches[0])
		})
	}
	// Conv: the weight gradient of a strided convolution computed without
	// swapping strides and dilations.
	t.Run("Conv", func(t *testing.T) {
		good := rules["Conv"]
		rules["Conv"] = &rule{grad: func(c *gctx) error {
			if err := gradConv(c); err != nil {
				return err
			}
			if c.wants(1) {
				gm, _ := geometry(c, c.x(0), c.y(0), dimsOf(c.x(1))[2:])
				bad := *gm
				bad.strides, bad.dilations = gm.dilations, gm.strides
				c.dx[1] = c.b.convWeightGrad(c.x(0), c.dy[0], &bad)
			}
			return nil
		}}
		defer func() { rules["Conv"] = good }()
		r, err := check(t, byName["Conv/stride2pad1"])
		if err != nil {
			// A wrong geometry may also give a shape error, which fails too.
			t.Logf("the wrong Conv rule fails as it should: %v", err)
			return
		}
		if len(r.mismatches) == 0 {
			t.Fatalf("the wrong Conv rule passed the gradient check")
		}
		t.Logf("the wrong Conv rule fails as it should: %d mismatches, first: %s", len(r.mismatches), r.mismatches[0])
	})
}
