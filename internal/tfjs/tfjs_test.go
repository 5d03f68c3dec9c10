package tfjs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tfjsDir returns the TensorFlow.js directory for tests that run tfjs: they
// skip under -short and fail when REMAT_TFJS_DIR is missing.
func tfjsDir(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs Node.js and TensorFlow.js (skipped under -short)")
	}
	dir, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// f32 is the bytes of a float32 tensor of the given shape.
func f32(shape ...int64) int64 { return 4 * Elements(shape) }

// handGraph builds the research note's graph (tfjs-execution.md, "Measured:
// recomputation lowers the peak only with a control gate"):
//
//	x[1,16,16,8] → a = Relu(Conv2D 3x3 8→32, SAME) → c1 = Conv2D 1x1 32→128
//	→ c2 = Conv2D 1x1 128→128 → c3 = Conv2D 1x1 128→32 → out = AddV2(c3, a)
//
// The note names c3 only; c1 and c2 are chosen here as plain 1x1 Conv2Ds
// (no bias, no activation) with 128 channels, which gives the note's peak:
// a, c1 and c2 live together while c2 runs, 32 768 + 2 × 131 072 =
// 294 912 B. tail replaces the output node (out) and may add the nodes of a
// recomputation; early nodes go right after x in the file.
func handGraph(t testing.TB, dir string, early, tail []gnode) string {
	t.Helper()
	nodes := []gnode{placeholder("x", "DT_FLOAT", []int64{1, 16, 16, 8})}
	nodes = append(nodes, early...)
	nodes = append(nodes,
		conv("conv_a", "x", "w_a", "SAME"), unary("a", "Relu", "conv_a"),
		conv("c1", "a", "w_c1", "VALID"), conv("c2", "c1", "w_c2", "VALID"), conv("c3", "c2", "w_c3", "VALID"))
	nodes = append(nodes, tail...)
	weights := []weight{
		seededWeight(t, "w_a", 3, 3, 8, 32), seededWeight(t, "w_c1", 1, 1, 32, 128),
		seededWeight(t, "w_c2", 1, 1, 128, 128), seededWeight(t, "w_c3", 1, 1, 128, 32),
	}
	return writeModel(t, dir, nodes, weights)
}

// handBaseline is what the hand-built graph holds before it runs: its
// weights and x. handPeak is its original's peak above that: a, c1 and c2
// live together while c2 runs.
var (
	handBaseline = f32(3, 3, 8, 32) + f32(1, 1, 32, 128) + f32(1, 1, 128, 128) + f32(1, 1, 128, 32) + f32(1, 16, 16, 8)
	handPeak     = f32(1, 16, 16, 32) + 2*f32(1, 16, 16, 128) // the note's 294,912 B
)

// recompute is a's recomputation from x (conv_a_r, a_r), its Conv2D
// carrying the given control inputs.
func recompute(control ...string) []gnode {
	return []gnode{conv("conv_a_r", "x", "w_a", "SAME", control...), unary("a_r", "Relu", "conv_a_r")}
}

func xInput(t *testing.T) map[string]Tensor {
	t.Helper()
	in, err := SeededInputs([]InputSpec{{Name: "x", DType: Float32, Shape: []int64{1, 16, 16, 8}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestRecomputeGate reproduces the note's measurement: recomputing a from x
// lowers tf.profile's peak by exactly one [1,16,16,32] float tensor when a
// NoOp gate (gate = NoOp(^c3)) holds the recomputation after c3, and not at
// all without the gate, wherever the duplicate stands in the file; the
// outputs are bitwise equal to the original's on each backend.
func TestRecomputeGate(t *testing.T) {
	dir := tfjsDir(t)
	tmp := t.TempDir()
	variants := []struct {
		name  string
		model string
		drop  int64 // expected peak drop against the original
	}{
		{"original", handGraph(t, filepath.Join(tmp, "original"), nil,
			[]gnode{unary("out", "AddV2", "c3", "a")}), 0},
		{"gated", handGraph(t, filepath.Join(tmp, "gated"), nil,
			append(append([]gnode{noOp("gate", "^c3")}, recompute("^gate")...), unary("out", "AddV2", "c3", "a_r"))),
			f32(1, 16, 16, 32)},
		{"ungated-late", handGraph(t, filepath.Join(tmp, "ungated-late"), nil,
			append(recompute(), unary("out", "AddV2", "c3", "a_r"))), 0},
		{"ungated-early", handGraph(t, filepath.Join(tmp, "ungated-early"), recompute(),
			[]gnode{unary("out", "AddV2", "c3", "a_r")}), 0},
	}
	in := xInput(t)
	var jobs []Options
	for _, b := range []Backend{WASM, CPU} {
		for _, v := range variants {
			jobs = append(jobs, Options{Dir: dir, Model: v.model, Backend: b, Inputs: in, Outputs: []string{"out"},
				Profile: true, Order: true, Runs: 2})
		}
	}
	res, err := RunAll(context.Background(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	for bi, b := range []Backend{WASM, CPU} {
		orig := res[bi*len(variants)]
		if orig.Memory.PeakBytes != handPeak || orig.Memory.BaselineBytes != handBaseline {
			t.Errorf("%s: original's peak is %d B above a baseline of %d B; the note measured %d above the weights and x, %d",
				b, orig.Memory.PeakBytes, orig.Memory.BaselineBytes, handPeak, handBaseline)
		}
		for vi, v := range variants {
			r := res[bi*len(variants)+vi]
			t.Logf("%s %-13s peak %7d B (baseline %d B, tfjs peakBytes %d), order %v",
				b, v.name, r.Memory.PeakBytes, r.Memory.BaselineBytes, r.Memory.ProfilePeakBytes, executedNames(r))
			if r.Backend != b {
				t.Errorf("%s %s ran on %s", b, v.name, r.Backend)
			}
			if got, want := r.Memory.PeakBytes, orig.Memory.PeakBytes-v.drop; got != want {
				t.Errorf("%s %s: peak %d B, want the original's %d minus %d = %d", b, v.name, got, orig.Memory.PeakBytes, v.drop, want)
			}
			if !Equal(r.Outputs[0].Tensor, orig.Outputs[0].Tensor) {
				t.Errorf("%s %s: output differs from the original's", b, v.name)
			}
			checkDigests(t, fmt.Sprintf("%s %s", b, v.name), r)
		}
		gated := res[bi*len(variants)+1]
		if i, j := indexOf(gated.OrderedNodes, "c3"), indexOf(gated.OrderedNodes, "conv_a_r"); i < 0 || j < i {
			t.Errorf("%s gated: conv_a_r does not run after c3: %v", b, gated.OrderedNodes)
		}
		early := res[bi*len(variants)+3]
		if i, j := indexOf(early.OrderedNodes, "c1"), indexOf(early.OrderedNodes, "conv_a_r"); i < 0 || j > i {
			t.Errorf("%s ungated-early: conv_a_r does not run before c1: %v", b, early.OrderedNodes)
		}
	}
	// Memory over time in the original, from the sizes: the engine's bytes
	// above the baseline after each node's op and after the frees that
	// follow it (a lives until out; c1, c2, c3 until their consumers).
	A, C := f32(1, 16, 16, 32), f32(1, 16, 16, 128)
	overTime := []struct {
		node, kernel  string
		before, after int64
	}{
		{"conv_a", "Conv2D", A, A}, {"a", "Relu", 2 * A, A}, {"c1", "Conv2D", A + C, A + C},
		{"c2", "Conv2D", A + 2*C, A + C}, {"c3", "Conv2D", 2*A + C, 2 * A}, {"out", "Add", 3 * A, A},
	}
	for _, i := range []int{0, len(variants)} {
		r := res[i]
		if len(r.Executed) != len(overTime) {
			t.Fatalf("%s original: executed %v", r.Backend, executedNames(r))
		}
		for k, w := range overTime {
			e := r.Executed[k]
			base := r.Memory.BaselineBytes
			if e.Name != w.node || e.BytesBeforeFree-base != w.before || e.BytesAfterFree-base != w.after {
				t.Errorf("%s original: node %d is %s with %d → %d B above the baseline, want %s with %d → %d",
					r.Backend, k, e.Name, e.BytesBeforeFree-base, e.BytesAfterFree-base, w.node, w.before, w.after)
			}
			if e.Kernels[1]-e.Kernels[0] != 1 || r.Kernels[e.Kernels[0]].Name != w.kernel || r.Kernels[e.Kernels[0]].Node != w.node {
				t.Errorf("%s original: node %s issued kernels %v, want one %s", r.Backend, e.Name, r.Kernels[e.Kernels[0]:e.Kernels[1]], w.kernel)
			}
		}
	}
	// The backends differ in the last bits, not in shape.
	if a, b := res[0].Outputs[0], res[len(variants)].Outputs[0]; a.DType != b.DType || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) {
		t.Errorf("wasm gives %s%v, cpu %s%v", a.DType, a.Shape, b.DType, b.Shape)
	}
}

// TestControlInputPitfall documents tfjs 4.22's handling of control inputs
// on a variadic op: AddN(c3, a, ^c3) adds c3 twice (tfjs passes the control
// input as an ordinary input), bitwise the same as AddN(c3, a, c3) and not
// as AddN(c3, a); a control input whose source is a NoOp is filtered out,
// so AddN(c3, a, ^gate) with gate = NoOp(^c3) is AddN(c3, a).
func TestControlInputPitfall(t *testing.T) {
	dir := tfjsDir(t)
	tmp := t.TempDir()
	models := []string{
		handGraph(t, filepath.Join(tmp, "plain"), nil, []gnode{addN("out", "c3", "a")}),
		handGraph(t, filepath.Join(tmp, "control"), nil, []gnode{addN("out", "c3", "a", "^c3")}),
		handGraph(t, filepath.Join(tmp, "twice"), nil, []gnode{addN("out", "c3", "a", "c3")}),
		handGraph(t, filepath.Join(tmp, "noop"), nil, []gnode{noOp("gate", "^c3"), addN("out", "c3", "a", "^gate")}),
	}
	in := xInput(t)
	for _, b := range []Backend{WASM, CPU} {
		var jobs []Options
		for _, m := range models {
			jobs = append(jobs, Options{Dir: dir, Model: m, Backend: b, Inputs: in, Outputs: []string{"out"}})
		}
		res, err := RunAll(context.Background(), jobs)
		if err != nil {
			t.Fatal(err)
		}
		plain, control, twice, noop := res[0].Outputs[0].Tensor, res[1].Outputs[0].Tensor, res[2].Outputs[0].Tensor, res[3].Outputs[0].Tensor
		if !Equal(control, twice) {
			t.Errorf("%s: AddN(c3, a, ^c3) differs from AddN(c3, a, c3): tfjs no longer passes control inputs to the op", b)
		}
		if Equal(control, plain) {
			t.Errorf("%s: AddN(c3, a, ^c3) equals AddN(c3, a): the pitfall is gone", b)
		}
		if !Equal(noop, plain) {
			t.Errorf("%s: AddN(c3, a, ^NoOp) differs from AddN(c3, a): the NoOp control input was not filtered", b)
		}
	}
}

// TestAsyncModel runs a model with a dynamic op (Where): the harness falls
// back to executeAsync, reports no static order, and still profiles.
func TestAsyncModel(t *testing.T) {
	dir := tfjsDir(t)
	zero := weight{name: "zero", shape: []int64{}, data: make([]byte, 4)}
	nodes := []gnode{
		placeholder("x", "DT_FLOAT", []int64{4, 5}),
		unary("pos", "Greater", "x", "zero"),
		{name: "idx", op: "Where", inputs: []string{"pos"}, attr: map[string]any{"T": dtAttr("DT_BOOL")}},
	}
	model := writeModel(t, t.TempDir(), nodes, []weight{zero})
	in, err := SeededInputs([]InputSpec{{Name: "x", DType: Float32, Shape: []int64{4, 5}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	positive := int64(0)
	for _, v := range in["x"].Float32s() {
		if v > 0 {
			positive++
		}
	}
	for _, b := range []Backend{WASM, CPU} {
		r, err := Run(context.Background(), Options{Dir: dir, Model: model, Backend: b, Inputs: in, Profile: true, Order: true})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Async || r.OrderedNodes != nil {
			t.Errorf("%s: Async %v, OrderedNodes %v; want executeAsync and no static order", b, r.Async, r.OrderedNodes)
		}
		if got := executedNames(r); fmt.Sprint(got) != "[pos idx]" {
			t.Errorf("%s: executed %v, want [pos idx]", b, got)
		}
		out := r.Outputs[0]
		if out.Name != "idx" || out.DType != Int32 || fmt.Sprint(out.Shape) != fmt.Sprint([]int64{positive, 2}) {
			t.Errorf("%s: output %s %s%v, want idx int32[%d 2]", b, out.Name, out.DType, out.Shape, positive)
		}
		if r.Memory == nil || r.Memory.PeakBytes <= 0 || len(r.Kernels) == 0 {
			t.Errorf("%s: no profile of the async execution: %+v", b, r.Memory)
		}
	}
}

// TestRunErrors checks that bad input gets an error naming the problem,
// with tfjs's own message where tfjs found it.
func TestRunErrors(t *testing.T) {
	dir := tfjsDir(t)
	tmp := t.TempDir()
	good := handGraph(t, filepath.Join(tmp, "good"), nil, []gnode{unary("out", "AddV2", "c3", "a")})
	noShard := handGraph(t, filepath.Join(tmp, "noshard"), nil, []gnode{unary("out", "AddV2", "c3", "a")})
	if err := os.Remove(filepath.Join(tmp, "noshard", "weights.bin")); err != nil {
		t.Fatal(err)
	}
	short := handGraph(t, filepath.Join(tmp, "short"), nil, []gnode{unary("out", "AddV2", "c3", "a")})
	if err := os.Truncate(filepath.Join(tmp, "short", "weights.bin"), 1000); err != nil {
		t.Fatal(err)
	}
	escape := handGraph(t, filepath.Join(tmp, "escape"), nil, []gnode{unary("out", "AddV2", "c3", "a")})
	rewrite(t, escape, `"weights.bin"`, `"../good/weights.bin"`)
	notJSON := filepath.Join(tmp, "garbage.json")
	if err := os.WriteFile(notJSON, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknownOp := handGraph(t, filepath.Join(tmp, "unknownop"), nil, []gnode{unary("out", "FrobnicateV7", "c3", "a")})
	missingOp := handGraph(t, filepath.Join(tmp, "missingop"), nil, []gnode{unary("out", "AddV2", "c3", "nowhere")})
	in := xInput(t)
	int32In := map[string]Tensor{"x": {DType: Int32, Shape: in["x"].Shape, Data: in["x"].Data}}
	badShape := map[string]Tensor{"x": {DType: Float32, Shape: []int64{1, 16, 8, 16}, Data: in["x"].Data}}

	// Errors found by tfjs, one job each in one process.
	jsCases := []struct {
		name string
		opts Options
		want []string
	}{
		{"missing shard", Options{Model: noShard, Inputs: in}, []string{"weights.bin", "no such file"}},
		{"short shard", Options{Model: short, Inputs: in}, []string{"shards hold 1000 bytes", "manifest needs"}},
		{"shard outside the model's directory", Options{Model: escape, Inputs: in}, []string{"../good/weights.bin", "leaves the model's directory"}},
		{"not JSON", Options{Model: notJSON, Inputs: in}, []string{"garbage.json", "JSON"}},
		{"op tfjs does not know", Options{Model: unknownOp, Inputs: in, Profile: true}, []string{"Unknown op 'FrobnicateV7'"}},
		{"node reads a missing node", Options{Model: missingOp, Inputs: in}, []string{"nowhere"}},
		{"bad input name", Options{Model: good, Inputs: map[string]Tensor{"y": in["x"]}}, []string{`input "y" is not an input`, "x [1,16,16,8] float32"}},
		{"no input", Options{Model: good}, []string{"no value given", "x"}},
		{"bad input shape", Options{Model: good, Inputs: badShape}, []string{"must be [1,16,16,8]", "[1,16,8,16]"}},
		{"bad input dtype", Options{Model: good, Inputs: int32In}, []string{"dtype", "float32", "int32"}},
		{"bad output name", Options{Model: good, Inputs: in, Outputs: []string{"nope"}}, []string{`output "nope" is not a node`, "its outputs are: out"}},
		{"bad backend", Options{Model: good, Inputs: in, Backend: "webgl"}, []string{"webgl"}},
	}
	var jobs []Options
	var idx []int
	for i, c := range jsCases {
		if c.opts.Backend == "webgl" {
			continue // checked on the Go side below
		}
		c.opts.Dir = dir
		jobs = append(jobs, c.opts)
		idx = append(idx, i)
	}
	// A good job after the bad ones still runs, and measures what it would
	// alone: the failed jobs left no tensor behind and no profiling on.
	jobs = append(jobs, Options{Dir: dir, Model: good, Inputs: in, Profile: true})
	res, err := RunAll(context.Background(), jobs)
	if err == nil {
		t.Fatal("RunAll of bad jobs gave no error")
	}
	if res == nil || res[len(jobs)-1] == nil {
		t.Fatalf("the good job among bad ones did not run: %v", err)
	}
	if m := res[len(jobs)-1].Memory; m.BaselineBytes != handBaseline || m.PeakBytes != handPeak {
		t.Errorf("the good job after bad ones measured a baseline of %d B and a peak of %d B, want %d and %d",
			m.BaselineBytes, m.PeakBytes, handBaseline, handPeak)
	}
	byIndex := map[int]*JobError{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var je *JobError
		if !errors.As(e, &je) {
			t.Fatalf("RunAll's error %v is not a *JobError", e)
		}
		byIndex[je.Index] = je
	}
	for k, i := range idx {
		c := jsCases[i]
		je := byIndex[k]
		if je == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		checkMessage(t, c.name, je, append(c.want, filepath.Base(filepath.Dir(c.opts.Model)))...)
		if res[k] != nil {
			t.Errorf("%s: a result besides the error", c.name)
		}
	}

	// Errors found before Node starts, and Run's single-job form.
	goCases := []struct {
		name string
		opts Options
		want []string
	}{
		{"missing model", Options{Model: filepath.Join(tmp, "absent", "model.json")}, []string{"absent", "no such file"}},
		{"model is a directory", Options{Model: filepath.Join(tmp, "good")}, []string{"is a directory"}},
		{"no model", Options{}, []string{"no model"}},
		{"bad backend", jsCases[len(jsCases)-1].opts, []string{`backend "webgl"`}},
		{"data too short", Options{Model: good, Inputs: map[string]Tensor{"x": {DType: Float32, Shape: []int64{1, 16, 16, 8}, Data: make([]byte, 12)}}},
			[]string{`input "x"`, "needs 8192 bytes", "has 12"}},
		{"unknown dtype", Options{Model: good, Inputs: map[string]Tensor{"x": {DType: "float64", Shape: []int64{1}, Data: make([]byte, 8)}}},
			[]string{`"float64" is not supported`}},
		{"Node missing", Options{Model: good, Inputs: in, Node: filepath.Join(tmp, "no-node")}, []string{"Node.js", "no-node", "install Node.js"}},
		{"wrong tfjs dir", Options{Model: good, Inputs: in, Dir: tmp}, []string{"@tensorflow/tfjs-core", "scripts/setup.sh"}},
		{"bad Runs", Options{Model: good, Inputs: in, Runs: -1}, []string{"Runs (-1)"}},
	}
	for _, c := range goCases {
		if c.opts.Dir == "" {
			c.opts.Dir = dir
		}
		r, err := Run(context.Background(), c.opts)
		if err == nil || r != nil {
			t.Errorf("%s: result %v, error %v; want an error", c.name, r, err)
			continue
		}
		checkMessage(t, c.name, err, c.want...)
	}
	if r, err := Run(context.Background(), Options{Dir: dir, Model: good, Inputs: map[string]Tensor{"y": in["x"]}}); err == nil || r != nil {
		t.Errorf("Run with a bad input name: %v, %v", r, err)
	} else if _, ok := err.(*JobError); !ok {
		t.Errorf("Run's error for a bad input name is %T, want *JobError: %v", err, err)
	}
}

// TestRunKilled checks that a timeout and a cancelled context end the Node
// process promptly with an error saying so.
func TestRunKilled(t *testing.T) {
	dir := tfjsDir(t)
	model := handGraph(t, t.TempDir(), nil, []gnode{unary("out", "AddV2", "c3", "a")})
	in := xInput(t)
	start := time.Now()
	_, err := Run(context.Background(), Options{Dir: dir, Model: model, Inputs: in, Timeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("50 ms timeout: error %v, want one naming the timeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = Run(ctx, Options{Dir: dir, Model: model, Inputs: in, Runs: 100000})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("killing took %v", d)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("REMAT_TFJS_DIR", "")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Errorf("FromEnv with REMAT_TFJS_DIR unset: %v, want an error naming scripts/setup.sh", err)
	}
	tmp := t.TempDir()
	t.Setenv("REMAT_TFJS_DIR", tmp)
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "tfjs-core") || !strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Errorf("FromEnv on an empty directory: %v", err)
	}
	for _, p := range Packages {
		d := filepath.Join(tmp, "@tensorflow", p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		v := Version
		if p == "tfjs-backend-wasm" {
			v = "4.21.0"
		}
		if err := os.WriteFile(filepath.Join(d, "package.json"), []byte(`{"name":"@tensorflow/`+p+`","version":"`+v+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "tfjs-backend-wasm 4.21.0") {
		t.Errorf("FromEnv with a wrong version: %v", err)
	}
}

func checkMessage(t *testing.T, name string, err error, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", name, err, w)
		}
	}
}

// rewrite replaces old by new in a file.
func rewrite(t *testing.T, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), old, new, 1)
	if s == string(data) {
		t.Fatalf("%s has no %s", file, old)
	}
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkDigests checks that every execution of a result gave the same
// outputs, bitwise.
func checkDigests(t *testing.T, name string, r *Result) {
	t.Helper()
	if len(r.Digests) < 2 {
		t.Errorf("%s: %d executions digested, want at least 2", name, len(r.Digests))
	}
	for i, d := range r.Digests {
		if d != r.Digests[0] {
			t.Errorf("%s: execution %d gave other outputs than the first", name, i)
		}
	}
}

func executedNames(r *Result) []string {
	names := make([]string, len(r.Executed))
	for i, e := range r.Executed {
		names[i] = e.Name
	}
	return names
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestShapesOnly asks the hand-built graph for every value (weights, the
// feed, each node, an output twice named) in shapes-only mode: each comes
// back with its dtype and shape and no data, and no digests are computed;
// the same outputs asked normally come with their data.
func TestShapesOnly(t *testing.T) {
	dir := tfjsDir(t)
	model := handGraph(t, t.TempDir(), nil, []gnode{unary("out", "AddV2", "c3", "a")})
	outs := []string{"x", "w_a", "conv_a", "a", "c1", "c2", "c3", "out", "out:0"}
	want := [][]int64{{1, 16, 16, 8}, {3, 3, 8, 32}, {1, 16, 16, 32}, {1, 16, 16, 32}, {1, 16, 16, 128}, {1, 16, 16, 128}, {1, 16, 16, 32}, {1, 16, 16, 32}, {1, 16, 16, 32}}
	res, err := RunAll(context.Background(), []Options{
		{Dir: dir, Model: model, Inputs: xInput(t), Outputs: outs, ShapesOnly: true},
		{Dir: dir, Model: model, Inputs: xInput(t), Outputs: outs},
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range res {
		if len(r.Outputs) != len(outs) {
			t.Fatalf("run %d: %d outputs, want %d", k, len(r.Outputs), len(outs))
		}
		for i, o := range r.Outputs {
			if o.Name != outs[i] || o.DType != Float32 || fmt.Sprint(o.Shape) != fmt.Sprint(want[i]) {
				t.Errorf("run %d: output %d is %s %s%v, want %s float32%v", k, i, o.Name, o.DType, o.Shape, outs[i], want[i])
			}
			if shapesOnly := k == 0; shapesOnly != (o.Data == nil) {
				t.Errorf("run %d: output %s has %d data bytes", k, o.Name, len(o.Data))
			}
		}
	}
	if len(res[0].Digests) != 0 || len(res[1].Digests) != 1 {
		t.Errorf("digests: %d shapes-only, %d with data; want 0 and 1", len(res[0].Digests), len(res[1].Digests))
	}
}
