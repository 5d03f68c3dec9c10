package ort

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/remat-compile/remat/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// The test models are built once per test binary by Debian's python3-onnx
// (onnx.helper, checked with onnx.checker) into a temporary directory.
const modelScript = `
import sys, os
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as TP

out = sys.argv[1]
rng = np.random.RandomState(0)

def save(name, nodes, inputs, outputs, inits=(), check=True):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="remat-ort-test")
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(out, name + ".onnx"))

def w(name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)

# twoconv: Conv+Relu twice, 3x3, [1,3,32,32] -> [1,8,32,32].
save("twoconv", [
    helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c2"], ["y"], name="relu2"),
], [vi("x", TP.FLOAT, [1, 3, 32, 32])], [vi("y", TP.FLOAT, [1, 8, 32, 32])],
   [w("W1", (8, 3, 3, 3)), w("B1", (8,)), w("W2", (8, 8, 3, 3)), w("B2", (8,))])

# multi: outputs of many element types, dynamic dims, a scalar, float16.
N = ["N", 4]
save("multi", [
    helper.make_node("Relu", ["x"], ["y"], name="relu"),
    helper.make_node("Cast", ["x"], ["yd"], name="cast_d", to=TP.DOUBLE),
    helper.make_node("Add", ["i", "i"], ["yi"], name="add_i"),
    helper.make_node("Cast", ["i"], ["yi32"], to=TP.INT32),  # unnamed: ORT calls it Cast_3
    helper.make_node("Cast", ["i"], ["yu8"], name="cast_u8", to=TP.UINT8),
    helper.make_node("Not", ["b"], ["yb"], name="not"),
    helper.make_node("Cast", ["h"], ["hf"], name="h2f", to=TP.FLOAT),
    helper.make_node("Cast", ["hf"], ["yh"], name="f2h", to=TP.FLOAT16),
    helper.make_node("Mul", ["s", "s"], ["ys"], name="sq"),
    helper.make_node("Cast", ["x"], ["yhd"], name="x2h", to=TP.FLOAT16),
], [vi("x", TP.FLOAT, N), vi("i", TP.INT64, N), vi("b", TP.BOOL, N), vi("h", TP.FLOAT16, [2, 3]), vi("s", TP.FLOAT, [])],
   [vi("y", TP.FLOAT, N), vi("yd", TP.DOUBLE, N), vi("yi", TP.INT64, N), vi("yi32", TP.INT32, N),
    vi("yu8", TP.UINT8, N), vi("yb", TP.BOOL, N), vi("hf", TP.FLOAT, [2, 3]), vi("yh", TP.FLOAT16, [2, 3]),
    vi("ys", TP.FLOAT, []), vi("yhd", TP.FLOAT16, N)])

# chain / chainkeep: four Adds on 1 MiB tensors; chainkeep keeps a alive to the end.
T = [1, 64, 64, 64]
for name, last in (("chain", "c"), ("chainkeep", "a")):
    save(name, [
        helper.make_node("Add", ["x", "x"], ["a"], name="add_a"),
        helper.make_node("Add", ["a", "a"], ["b"], name="add_b"),
        helper.make_node("Add", ["b", "b"], ["c"], name="add_c"),
        helper.make_node("Add", ["c", last], ["y"], name="add_y"),
    ], [vi("x", TP.FLOAT, T)], [vi("y", TP.FLOAT, T)])

# dup: a duplicated Relu that ORT's CSE merges from level basic up.
save("dup", [
    helper.make_node("Relu", ["x"], ["r1"], name="r1"),
    helper.make_node("Relu", ["x"], ["r2"], name="r2"),
    helper.make_node("Add", ["r1", "r2"], ["y"], name="add"),
], [vi("x", TP.FLOAT, [1, 16])], [vi("y", TP.FLOAT, [1, 16])])

# noinput: a graph without inputs (onnxruntime_go cannot run it).
save("noinput", [helper.make_node("Constant", [], ["y"], name="c", value=numpy_helper.from_array(np.ones(3, np.float32)))],
     [], [vi("y", TP.FLOAT, [3])])

# badop: an operator ORT does not know.
save("badop", [helper.make_node("NoSuchOp", ["x"], ["y"], name="bad")],
     [vi("x", TP.FLOAT, [2])], [vi("y", TP.FLOAT, [2])], check=False)
`

var (
	modelsOnce sync.Once
	modelsDir  string
	modelsErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if modelsDir != "" {
		os.RemoveAll(modelsDir)
	}
	os.Exit(code)
}

// pythonWithONNX finds a Python that can import onnx.
func pythonWithONNX() (string, error) {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(p, "-c", "import onnx").Run(); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no python3 with the onnx module (install Debian's python3-onnx: apt-get install python3-onnx)")
}

// model returns the path of a test model, building them all on first use.
func model(t *testing.T, name string) string {
	t.Helper()
	modelsOnce.Do(func() {
		py, err := pythonWithONNX()
		if err != nil {
			modelsErr = err
			return
		}
		dir, err := os.MkdirTemp("", "remat-ort-test-")
		if err != nil {
			modelsErr = err
			return
		}
		modelsDir = dir
		if out, err := exec.Command(py, "-c", modelScript, dir).CombinedOutput(); err != nil {
			modelsErr = fmt.Errorf("building test models: %v\n%s", err, out)
		}
	})
	if modelsErr != nil {
		if testing.Short() {
			t.Skip(modelsErr)
		}
		t.Fatal(modelsErr)
	}
	return filepath.Join(modelsDir, name+".onnx")
}

// requireORT fails the test when the ORT library is missing (skips it with
// -short, or in a build without cgo).
func requireORT(t *testing.T) {
	t.Helper()
	if !cgoEnabled {
		t.Skip("built without cgo")
	}
	if _, err := LibraryPath(); err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if _, err := Version(); err != nil {
		t.Fatal(err)
	}
}

func mustRun(t *testing.T, path string, inputs map[string]Tensor, opts Options) *Result {
	t.Helper()
	res, err := Run(path, inputs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustInputs(t *testing.T, path string, seed uint64, shapes map[string][]int64) map[string]Tensor {
	t.Helper()
	in, err := RandomInputs(path, seed, shapes)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestLibraryPathMissing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "libonnxruntime.so.1")
	t.Setenv("REMAT_ORT_LIB", missing)
	_, err := LibraryPath()
	if err == nil {
		t.Fatal("LibraryPath: no error for a missing REMAT_ORT_LIB")
	}
	for _, want := range []string{missing, "does not exist", "npm install --ignore-scripts --prefix DIR onnxruntime-node@1.30.0",
		"REMAT_ORT_LIB=DIR/node_modules/onnxruntime-node/bin/napi-v6/", "scripts/setup.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	t.Setenv("REMAT_ORT_LIB", "")
	t.Setenv("REMAT_CACHE", dir)
	_, err = LibraryPath()
	if err == nil {
		t.Fatal("LibraryPath: no error for an empty REMAT_CACHE")
	}
	prefix := filepath.Join(dir, "ort")
	for _, want := range []string{filepath.Join(prefix, "node_modules", "onnxruntime-node", "bin", "napi-v6"),
		"npm install --ignore-scripts --prefix " + prefix + " onnxruntime-node@1.30.0", "scripts/setup.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	lib := filepath.Join(dir, "lib.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REMAT_ORT_LIB", lib)
	if got, err := LibraryPath(); err != nil || got != lib {
		t.Errorf("LibraryPath() = %q, %v; want %q", got, err, lib)
	}
}

func TestVersion(t *testing.T) {
	requireORT(t)
	v, err := Version()
	if err != nil || v != ORTVersion {
		t.Errorf("Version() = %q, %v; want %q", v, err, ORTVersion)
	}
}

func TestModelIO(t *testing.T) {
	requireORT(t)
	ins, outs, err := ModelIO(model(t, "multi"))
	if err != nil {
		t.Fatal(err)
	}
	wantIn := []ValueInfo{{"x", "float", []int64{-1, 4}}, {"i", "int64", []int64{-1, 4}}, {"b", "bool", []int64{-1, 4}},
		{"h", "float16", []int64{2, 3}}, {"s", "float", []int64{}}}
	if !reflect.DeepEqual(ins, wantIn) {
		t.Errorf("inputs = %v, want %v", ins, wantIn)
	}
	var names []string
	for _, o := range outs {
		names = append(names, o.Name)
	}
	if want := []string{"y", "yd", "yi", "yi32", "yu8", "yb", "hf", "yh", "ys", "yhd"}; !reflect.DeepEqual(names, want) {
		t.Errorf("outputs = %v, want %v", names, want)
	}
}

func TestDeterministicOutputs(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	opts := MeasureOptions("disabled")
	in1 := mustInputs(t, path, 1, nil)
	in1b := mustInputs(t, path, 1, nil)
	in2 := mustInputs(t, path, 2, nil)
	if !in1["x"].Equal(in1b["x"]) {
		t.Fatal("RandomInputs differ for the same seed")
	}
	if in1["x"].Equal(in2["x"]) {
		t.Fatal("RandomInputs equal for different seeds")
	}
	y1 := mustRun(t, path, in1, opts).Outputs["y"]
	y1b := mustRun(t, path, in1b, opts).Outputs["y"]
	y2 := mustRun(t, path, in2, opts).Outputs["y"]
	if y1.DType != "float" || !reflect.DeepEqual(y1.Shape, []int64{1, 8, 32, 32}) || len(y1.Data) != 8*32*32*4 {
		t.Fatalf("y = %s%v with %d bytes", y1.DType, y1.Shape, len(y1.Data))
	}
	if !y1.Equal(y1b) {
		t.Error("outputs differ between two runs with the same seed")
	}
	if y1.Equal(y2) {
		t.Error("outputs equal for different seeds")
	}
	vals, err := y1.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	positive := 0
	for _, v := range vals {
		if v < 0 || math.IsNaN(v) {
			t.Fatalf("Relu output %v", v)
		}
		if v > 0 {
			positive++
		}
	}
	if positive == 0 {
		t.Error("output is all zero")
	}
}

func TestProfileTwoConv(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	in := mustInputs(t, path, 7, nil)
	opts := MeasureOptions("disabled")
	opts.Runs = 3
	res := mustRun(t, path, in, opts)
	p := res.Profile
	if p == nil {
		t.Fatal("no profile")
	}
	if p.Runs != 3 || len(res.RunTimes) != 3 {
		t.Errorf("profile has %d runs, RunTimes %d; want 3", p.Runs, len(res.RunTimes))
	}
	want := []struct {
		name, op string
		in       [][]int64
	}{
		{"conv1", "Conv", [][]int64{{1, 3, 32, 32}, {8, 3, 3, 3}, {8}}},
		{"relu1", "Relu", [][]int64{{1, 8, 32, 32}}},
		{"conv2", "Conv", [][]int64{{1, 8, 32, 32}, {8, 8, 3, 3}, {8}}},
		{"relu2", "Relu", [][]int64{{1, 8, 32, 32}}},
	}
	if len(p.Nodes) != len(want) {
		t.Fatalf("profile nodes %v, want 4 (first run only)", p.Names())
	}
	var last int64 = -1
	for i, n := range p.Nodes {
		w := want[i]
		if n.Name != w.name || n.OpType != w.op || n.NodeIndex != i || n.Provider != "CPUExecutionProvider" {
			t.Errorf("node %d = %s/%s#%d on %s, want %s/%s#%d", i, n.Name, n.OpType, n.NodeIndex, n.Provider, w.name, w.op, i)
		}
		if !reflect.DeepEqual(n.OutputShapes, [][]int64{{1, 8, 32, 32}}) || !reflect.DeepEqual(n.OutputTypes, []string{"float"}) {
			t.Errorf("%s outputs %v %v", n.Name, n.OutputTypes, n.OutputShapes)
		}
		if !reflect.DeepEqual(n.InputShapes, w.in) {
			t.Errorf("%s inputs %v, want %v", n.Name, n.InputShapes, w.in)
		}
		if n.OutputSize != 8*32*32*4 {
			t.Errorf("%s output_size %d", n.Name, n.OutputSize)
		}
		if n.TsUS < last {
			t.Errorf("%s starts at %d, before the previous node (%d)", n.Name, n.TsUS, last)
		}
		last = n.TsUS
	}
	if conv1, _ := p.Find("conv1"); conv1.ParameterSize != (8*3*3*3+8)*4 {
		t.Errorf("conv1 parameter_size = %d", conv1.ParameterSize)
	}
	if p.PeakBytes() < 8*32*32*4 {
		t.Errorf("PeakBytes = %d, want at least one activation", p.PeakBytes())
	}
	if p.RunDurUS <= 0 {
		t.Errorf("RunDurUS = %d", p.RunDurUS)
	}

	// One run gives the same events and peak: only the first run is kept.
	opts.Runs = 1
	one := mustRun(t, path, in, opts)
	if !reflect.DeepEqual(one.Profile.Names(), p.Names()) || one.Profile.PeakBytes() != p.PeakBytes() {
		t.Errorf("1 run: %v peak %d; 3 runs: %v peak %d", one.Profile.Names(), one.Profile.PeakBytes(), p.Names(), p.PeakBytes())
	}
	if !one.Outputs["y"].Equal(res.Outputs["y"]) {
		t.Error("outputs differ between Runs=1 and Runs=3")
	}

	// Without profiling there is no profile; with the arena off the memory
	// fields are zero.
	opts.Profile = false
	if r := mustRun(t, path, in, opts); r.Profile != nil {
		t.Error("profile without Options.Profile")
	}
	opts.Profile, opts.Arena = true, false
	if r := mustRun(t, path, in, opts); r.Profile.PeakBytes() != 0 || len(r.Profile.Nodes) != 4 {
		t.Errorf("arena off: PeakBytes %d, %d nodes", r.Profile.PeakBytes(), len(r.Profile.Nodes))
	}
}

func TestPeakBytesKeepAlive(t *testing.T) {
	requireORT(t)
	const mib = 1 << 20
	peaks := map[string]int64{}
	for _, name := range []string{"chain", "chainkeep"} {
		path := model(t, name)
		res := mustRun(t, path, mustInputs(t, path, 3, nil), MeasureOptions("disabled"))
		peaks[name] = res.Profile.PeakBytes()
		again := mustRun(t, path, mustInputs(t, path, 3, nil), MeasureOptions("disabled"))
		if got := again.Profile.PeakBytes(); got != peaks[name] {
			t.Errorf("%s: PeakBytes %d then %d", name, peaks[name], got)
		}
	}
	t.Logf("PeakBytes: chain %d, chainkeep %d", peaks["chain"], peaks["chainkeep"])
	if peaks["chain"] < 2*mib {
		t.Errorf("chain peak %d < 2 MiB (two live 1 MiB tensors)", peaks["chain"])
	}
	if d := peaks["chainkeep"] - peaks["chain"]; d < mib {
		t.Errorf("keeping one more 1 MiB tensor alive raised the peak by %d bytes, want >= 1 MiB", d)
	}
}

func TestMultiDtype(t *testing.T) {
	requireORT(t)
	path := model(t, "multi")
	shapes := map[string][]int64{"x": {3, 4}, "i": {3, 4}, "b": {3, 4}}
	in := mustInputs(t, path, 11, shapes)

	for name, dtype := range map[string]string{"x": "float", "i": "int64", "b": "bool", "h": "float16", "s": "float"} {
		if in[name].DType != dtype {
			t.Errorf("input %s is %s, want %s", name, in[name].DType, dtype)
		}
	}
	x, _ := in["x"].Float64s()
	for _, v := range x {
		if v < -1 || v >= 1 {
			t.Fatalf("float input %v outside [-1,1)", v)
		}
	}
	iv, _ := in["i"].Int64s()
	for _, v := range iv {
		if v < 0 || v >= 4 {
			t.Fatalf("int input %v outside [0,4)", v)
		}
	}
	bv, _ := in["b"].Int64s()
	for _, v := range bv {
		if v != 0 && v != 1 {
			t.Fatalf("bool input byte %v", v)
		}
	}

	opts := MeasureOptions("disabled")
	opts.OutputShapes = map[string][]int64{"yhd": {3, 4}}
	res := mustRun(t, path, in, opts)
	if want := []string{"y", "yd", "yi", "yi32", "yu8", "yb", "hf", "yh", "ys", "yhd"}; !reflect.DeepEqual(res.OutputNames, want) {
		t.Errorf("OutputNames = %v", res.OutputNames)
	}
	out := res.Outputs
	check := func(name, dtype string, shape []int64, want []float64) {
		t.Helper()
		o := out[name]
		if o.DType != dtype || !reflect.DeepEqual(o.Shape, shape) {
			t.Errorf("%s is %s%v, want %s%v", name, o.DType, o.Shape, dtype, shape)
			return
		}
		got, err := o.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	relu, twice, not, h2f, x2h := make([]float64, len(x)), make([]float64, len(iv)), make([]float64, len(bv)), []float64{}, []float64{}
	for k, v := range x {
		relu[k] = math.Max(v, 0)
		x2h = append(x2h, float64(HalfToFloat32(Float32ToHalf(float32(v)))))
	}
	for k, v := range iv {
		twice[k] = float64(2 * v)
	}
	for k, v := range bv {
		not[k] = float64(1 - v)
	}
	h2f, _ = in["h"].Float64s()
	iF, _ := in["i"].Float64s()
	s, _ := in["s"].Float64s()
	check("y", "float", []int64{3, 4}, relu)
	check("yd", "double", []int64{3, 4}, x)
	check("yi", "int64", []int64{3, 4}, twice)
	check("yi32", "int32", []int64{3, 4}, iF)
	check("yu8", "uint8", []int64{3, 4}, iF)
	check("yb", "bool", []int64{3, 4}, not)
	check("hf", "float", []int64{2, 3}, h2f)
	check("yh", "float16", []int64{2, 3}, h2f)
	check("ys", "float", []int64{}, []float64{float64(float32(s[0]) * float32(s[0]))})
	check("yhd", "float16", []int64{3, 4}, x2h)
	if !bytes.Equal(out["yh"].Data, in["h"].Data) {
		t.Error("float16 -> float -> float16 changed the bits")
	}

	again := mustRun(t, path, mustInputs(t, path, 11, shapes), opts)
	for _, name := range res.OutputNames {
		if !again.Outputs[name].Equal(out[name]) {
			t.Errorf("output %s differs between identical runs", name)
		}
	}

	// Node names in the profile: ORT names the unnamed Cast "Cast_3".
	if _, ok := res.Profile.Find("Cast_3"); !ok {
		t.Errorf("no Cast_3 in %v", res.Profile.Names())
	}
}

func TestDynamicShapeErrors(t *testing.T) {
	requireORT(t)
	path := model(t, "multi")
	_, err := RandomInputs(path, 1, nil)
	if err == nil || !strings.Contains(err.Error(), `input "x"`) || !strings.Contains(err.Error(), "dim 0") || !strings.Contains(err.Error(), path) {
		t.Errorf("RandomInputs without shapes: %v", err)
	}
	_, err = RandomInputs(path, 1, map[string][]int64{"x": {3, 4}, "i": {3, 4}, "b": {3, 5}})
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("RandomInputs with a bad static dim: %v", err)
	}
	_, err = RandomInputs(path, 1, map[string][]int64{"x": {3, 4}, "i": {3, 4}, "b": {3, 4}, "zz": {1}})
	if err == nil || !strings.Contains(err.Error(), `"zz"`) {
		t.Errorf("RandomInputs with an unknown name: %v", err)
	}
	in := mustInputs(t, path, 1, map[string][]int64{"x": {3, 4}, "i": {3, 4}, "b": {3, 4}})
	_, err = Run(path, in, MeasureOptions("disabled"))
	if err == nil || !strings.Contains(err.Error(), `OutputShapes["yhd"]`) {
		t.Errorf("Run without the float16 output's shape: %v", err)
	}
}

func TestInputErrors(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	in := mustInputs(t, path, 1, nil)
	x := in["x"]
	cases := map[string]struct {
		in   map[string]Tensor
		want string
	}{
		"missing":    {map[string]Tensor{}, `no value for graph input "x"`},
		"extra":      {map[string]Tensor{"x": x, "q": x}, `"q"`},
		"dtype":      {map[string]Tensor{"x": {DType: "double", Shape: x.Shape, Data: make([]byte, 2*len(x.Data))}}, "the model wants float"},
		"short data": {map[string]Tensor{"x": {DType: "float", Shape: x.Shape, Data: x.Data[:8]}}, "needs"},
		"shape":      {map[string]Tensor{"x": {DType: "float", Shape: []int64{1, 3, 32, 16}, Data: x.Data[:len(x.Data)/2]}}, "disagrees"},
	}
	for name, c := range cases {
		_, err := Run(path, c.in, MeasureOptions("disabled"))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s and containing %q", name, err, path, c.want)
		}
	}
	for _, opts := range []Options{{Level: "fast"}, {DisabledOptimizers: []string{"A,B"}}, {Runs: -1}} {
		if _, err := Run(path, in, opts); err == nil {
			t.Errorf("Run with bad options %+v: no error", opts)
		}
	}
}

func TestBadModels(t *testing.T) {
	requireORT(t)
	garbage := filepath.Join(t.TempDir(), "garbage.onnx")
	if err := os.WriteFile(garbage, []byte("this is not an ONNX model"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.onnx")
	for _, path := range []string{garbage, missing, model(t, "badop")} {
		x, _ := NewTensor([]int64{2}, []float32{1, 2})
		if _, err := Run(path, map[string]Tensor{"x": x}, MeasureOptions("disabled")); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Run(%s): %v", filepath.Base(path), err)
		}
		if _, err := RandomInputs(path, 1, nil); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("RandomInputs(%s): %v", filepath.Base(path), err)
		}
		if _, _, err := ModelIO(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("ModelIO(%s): %v", filepath.Base(path), err)
		}
	}
}

func TestNoInputs(t *testing.T) {
	requireORT(t)
	path := model(t, "noinput")
	in := mustInputs(t, path, 1, nil)
	if len(in) != 0 {
		t.Errorf("RandomInputs = %v", in)
	}
	if _, err := Run(path, in, MeasureOptions("disabled")); err == nil || !strings.Contains(err.Error(), "without graph inputs") {
		t.Errorf("Run: %v", err)
	}
}

func TestValueShapes(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	opts := MeasureOptions("all") // ValueShapes forces "disabled"
	vs, err := ValueShapes(path, mustInputs(t, path, 1, nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[NodeOutput]ValueShape{}
	for i, n := range []string{"conv1", "relu1", "conv2", "relu2"} {
		want[NodeOutput{n, 0}] = ValueShape{NodeIndex: i, OpType: map[bool]string{true: "Conv", false: "Relu"}[i%2 == 0], DType: "float", Shape: []int64{1, 8, 32, 32}}
	}
	if !reflect.DeepEqual(vs, want) {
		t.Errorf("ValueShapes = %v\nwant %v", vs, want)
	}

	path = model(t, "multi")
	shapes := map[string][]int64{"x": {5, 4}, "i": {5, 4}, "b": {5, 4}}
	opts.OutputShapes = map[string][]int64{"yhd": {5, 4}}
	vs, err = ValueShapes(path, mustInputs(t, path, 1, shapes), opts)
	if err != nil {
		t.Fatal(err)
	}
	for key, w := range map[NodeOutput]ValueShape{
		{"Cast_3", 0}: {NodeIndex: 3, OpType: "Cast", DType: "int32", Shape: []int64{5, 4}},
		{"sq", 0}:     {NodeIndex: 8, OpType: "Mul", DType: "float", Shape: []int64{}},
		{"x2h", 0}:    {NodeIndex: 9, OpType: "Cast", DType: "float16", Shape: []int64{5, 4}},
		{"not", 0}:    {NodeIndex: 5, OpType: "Not", DType: "bool", Shape: []int64{5, 4}},
	} {
		if got := vs[key]; !reflect.DeepEqual(got, w) {
			t.Errorf("%v = %+v, want %+v", key, got, w)
		}
	}
	if len(vs) != 10 {
		t.Errorf("%d values, want 10", len(vs))
	}
}

func TestDisabledOptimizers(t *testing.T) {
	requireORT(t)
	path := model(t, "dup")
	in := mustInputs(t, path, 1, nil)
	count := func(opts Options) int {
		return len(mustRun(t, path, in, opts).Profile.Nodes)
	}
	opts := MeasureOptions("basic")
	if n := count(opts); n != 2 {
		t.Errorf("basic: %d nodes, want 2 (CSE merges the duplicate Relu)", n)
	}
	opts.DisabledOptimizers = []string{CSE}
	if n := count(opts); n != 3 {
		t.Errorf("basic without CSE: %d nodes, want 3", n)
	}
	opts.DisabledOptimizers = []string{"ConstantFolding", CSE}
	if n := count(opts); n != 3 {
		t.Errorf("basic without ConstantFolding;CSE: %d nodes, want 3", n)
	}
}

func TestLevels(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	in := mustInputs(t, path, 4, nil)
	ref, _ := mustRun(t, path, in, MeasureOptions("disabled")).Outputs["y"].Float64s()
	for _, level := range []string{"basic", "extended", "layout", "all", ""} {
		res := mustRun(t, path, in, MeasureOptions(level))
		got, _ := res.Outputs["y"].Float64s()
		if len(got) != len(ref) || len(res.Profile.Nodes) == 0 {
			t.Fatalf("level %q: %d values, %d profiled nodes", level, len(got), len(res.Profile.Nodes))
		}
		for i := range got {
			if math.Abs(got[i]-ref[i]) > 1e-4 {
				t.Fatalf("level %q: y[%d] = %v, disabled gives %v", level, i, got[i], ref[i])
			}
		}
	}
}

func TestConcurrentRuns(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	in := mustInputs(t, path, 9, nil)
	want := mustRun(t, path, in, MeasureOptions("disabled"))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Run(path, in, MeasureOptions("disabled"))
			switch {
			case err != nil:
				errs[g] = err
			case !res.Outputs["y"].Equal(want.Outputs["y"]):
				errs[g] = fmt.Errorf("goroutine %d: outputs differ", g)
			case !reflect.DeepEqual(res.Profile.Names(), want.Profile.Names()):
				errs[g] = fmt.Errorf("goroutine %d: profile %v", g, res.Profile.Names())
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestParseProfile(t *testing.T) {
	ev := func(name string, ts, idx int64, peak string) string {
		return fmt.Sprintf(`{"cat":"Node","pid":1,"tid":1,"dur":5,"ts":%d,"ph":"X","name":"%s_kernel_time","args":{"op_name":"Relu","node_index":"%d","mem_in_use_peak":%s,"output_type_shape":[{"float":[2,3]},{"int64":[]}],"input_type_shape":[]}}`, ts, name, idx, peak)
	}
	data := "[" + strings.Join([]string{
		`{"cat":"Session","pid":1,"tid":1,"dur":10,"ts":1,"ph":"X","name":"session_initialization","args":{}}`,
		ev("b", 30, 1, `"200"`),
		ev("a", 20, 0, `100`),
		`{"cat":"Node","pid":1,"tid":1,"dur":1,"ts":25,"ph":"X","name":"a_fence_before","args":{}}`,
		`{"cat":"Session","pid":1,"tid":1,"dur":30,"ts":15,"ph":"X","name":"model_run","args":{}}`,
		ev("a", 60, 0, `"900"`),
		ev("b", 70, 1, `"900"`),
		`{"cat":"Session","pid":1,"tid":1,"dur":30,"ts":55,"ph":"X","name":"model_run","args":{}}`,
	}, ",\n") + "]"
	p, err := ParseProfile([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Names(), []string{"a", "b"}) || p.Runs != 2 || p.RunDurUS != 30 || p.PeakBytes() != 200 {
		t.Fatalf("parsed %v runs %d dur %d peak %d", p.Names(), p.Runs, p.RunDurUS, p.PeakBytes())
	}
	if sp, err := p.SessionPeakBytes(); err != nil || sp != 900 {
		t.Errorf("SessionPeakBytes = %d, %v; want the second run's 900", sp, err)
	}
	a := p.Nodes[0]
	if a.OpType != "Relu" || a.NodeIndex != 0 || a.MemInUsePeak != 100 || !reflect.DeepEqual(a.OutputTypes, []string{"float", "int64"}) ||
		!reflect.DeepEqual(a.OutputShapes, [][]int64{{2, 3}, {}}) || len(a.InputShapes) != 0 {
		t.Errorf("event a = %+v", a)
	}
	vs, err := p.ValueShapes()
	if err != nil || len(vs) != 4 || !reflect.DeepEqual(vs[NodeOutput{"b", 1}], ValueShape{NodeIndex: 1, OpType: "Relu", DType: "int64", Shape: []int64{}}) {
		t.Errorf("ValueShapes = %v, %v", vs, err)
	}
	// Without model_run events the first repeated node_index ends the run.
	noRun := "[" + ev("a", 1, 0, `"5"`) + "," + ev("b", 2, 1, `"6"`) + "," + ev("a", 3, 0, `"7"`) + "]"
	if p, err := ParseProfile([]byte(noRun)); err != nil || !reflect.DeepEqual(p.Names(), []string{"a", "b"}) {
		t.Errorf("no model_run: %v, %v", p, err)
	}
	if _, err := ParseProfile([]byte(`[{"cat":"Node","name":"x_kernel_time","args":{"node_index":"zz"}}]`)); err == nil {
		t.Error("bad node_index: no error")
	}
	if _, err := ParseProfile([]byte(`{`)); err == nil {
		t.Error("bad JSON: no error")
	}
}

func TestRandomTensor(t *testing.T) {
	for _, dtype := range []string{"float", "double", "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32", "int64", "uint32", "uint64", "bool"} {
		a, err := RandomTensor(dtype, []int64{4, 250}, 5)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := RandomTensor(dtype, []int64{4, 250}, 5)
		c, _ := RandomTensor(dtype, []int64{4, 250}, 6)
		if err := a.Validate(); err != nil {
			t.Fatalf("%s: %v", dtype, err)
		}
		if !a.Equal(b) || a.Equal(c) {
			t.Errorf("%s: same seed equal %v, other seed equal %v", dtype, a.Equal(b), a.Equal(c))
		}
		vals, err := a.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := 0.0, 4.0
		switch dtype {
		case "float", "double", "float16", "bfloat16":
			lo, hi = -1, 1
		case "bool":
			hi = 2
		}
		seen := map[float64]bool{}
		for _, v := range vals {
			if v < lo || v >= hi || (lo == 0 && v != math.Trunc(v)) {
				t.Fatalf("%s: value %v outside [%v,%v)", dtype, v, lo, hi)
			}
			seen[v] = true
		}
		if len(seen) < 2 {
			t.Errorf("%s: only %d distinct values", dtype, len(seen))
		}
	}
	// Pinned values: the generator must never change, or recorded outputs
	// and hashes break.
	x, _ := RandomTensor("float", []int64{2}, 1)
	if got := binary.LittleEndian.Uint64(x.Data); got != 0x3efbae343e085168 {
		t.Errorf("RandomTensor(float, [2], 1) bytes = %#x", got)
	}
	s, _ := RandomTensor("int64", []int64{}, 1)
	if len(s.Data) != 8 || len(s.Shape) != 0 {
		t.Errorf("scalar: %+v", s)
	}
	if _, err := RandomTensor("string", []int64{1}, 1); err == nil {
		t.Error("string: no error")
	}
}

func TestHalf(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {0x1p-24, 0x0001}, {0x1p-25, 0}, {0x1.8p-25, 0x0001}, {0x1p-14, 0x0400},
		{0.1, 0x2e66}, {1 + 0x1p-11, 0x3c00}, {1 + 0x1.8p-11, 0x3c01}, {1 + 0x1.8p-10, 0x3c02}, {float32(math.Copysign(0, -1)), 0x8000},
	} {
		if got := Float32ToHalf(c.f); got != c.h {
			t.Errorf("Float32ToHalf(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := HalfToFloat32(uint16(h))
		if f != f {
			if back := Float32ToHalf(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back := Float32ToHalf(f); back != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestTensorHelpers(t *testing.T) {
	x, err := NewTensor([]int64{2, 2}, []float32{1, -2, 0.5, 3})
	if err != nil {
		t.Fatal(err)
	}
	if x.DType != "float" || x.NumElements() != 4 || len(x.Data) != 16 {
		t.Errorf("NewTensor = %+v", x)
	}
	if v, _ := x.Float64s(); !reflect.DeepEqual(v, []float64{1, -2, 0.5, 3}) {
		t.Errorf("Float64s = %v", v)
	}
	if _, err := x.Int64s(); err == nil {
		t.Error("Int64s on float: no error")
	}
	b, _ := NewTensor([]int64{3}, []bool{true, false, true})
	if v, _ := b.Int64s(); b.DType != "bool" || !reflect.DeepEqual(v, []int64{1, 0, 1}) {
		t.Errorf("bool tensor %+v -> %v", b, v)
	}
	i8, _ := NewTensor([]int64{2}, []int8{-3, 4})
	if v, _ := i8.Int64s(); !reflect.DeepEqual(v, []int64{-3, 4}) {
		t.Errorf("int8 -> %v", v)
	}
	if _, err := NewTensor([]int64{3}, []float32{1}); err == nil {
		t.Error("NewTensor with too little data: no error")
	}
	if (Tensor{DType: "float", Shape: []int64{-1}}).Validate() == nil {
		t.Error("negative dim validates")
	}
	for _, o := range []Options{{Level: "fast"}, {Threads: -1}, {DisabledOptimizers: []string{"A;B"}}} {
		if _, _, err := o.check(); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
	if th, runs, err := (Options{}).check(); th != 1 || runs != 1 || err != nil {
		t.Errorf("zero options: threads %d runs %d err %v", th, runs, err)
	}
}

// TestOptimizedModel: ORT hands back the graph it ran. The zoo's
// transformer encoder gathers its position embeddings from two
// initializers; ORT's constant folding (level basic and up) removes that
// node, and at level disabled the graph is the file's.
func TestOptimizedModel(t *testing.T) {
	requireORT(t)
	path := filepath.Join("..", "..", "testdata", "zoo", "transformer_encoder.onnx")
	in := mustInputs(t, path, 1, nil)
	nodes := func(level string) map[string]string {
		opts := MeasureOptions(level)
		opts.OptimizedModel = true
		res := mustRun(t, path, in, opts)
		var mp onnxpb.ModelProto
		if err := proto.Unmarshal(res.OptimizedModel, &mp); err != nil || mp.Graph == nil {
			t.Fatalf("level %s: the optimized model does not parse (%d bytes): %v", level, len(res.OptimizedModel), err)
		}
		out := map[string]string{}
		for _, n := range mp.Graph.Node {
			out[n.GetName()] = n.GetOpType()
		}
		// Every node the profile names is a node of the optimized graph.
		for _, e := range res.Profile.Nodes {
			if op, ok := out[e.Name]; !ok || op != e.OpType {
				t.Errorf("level %s: profile event %q (%s) is not a node of the optimized graph", level, e.Name, e.OpType)
			}
		}
		return out
	}
	if d := nodes("disabled"); d["embeddings.position"] != "Gather" || len(d) != 48 {
		t.Errorf("level disabled: %d nodes, embeddings.position is %q; want the file's 48, a Gather", len(d), d["embeddings.position"])
	}
	if b := nodes("basic"); b["embeddings.position"] != "" {
		t.Errorf("level basic: embeddings.position (%s) was not constant-folded", b["embeddings.position"])
	}
	res := mustRun(t, path, in, MeasureOptions("disabled"))
	if res.OptimizedModel != nil {
		t.Errorf("OptimizedModel returned without being asked for")
	}
}
