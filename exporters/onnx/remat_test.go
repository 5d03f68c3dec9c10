package onnx_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	ortt "github.com/remat-compile/remat/targets/ort"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkpointall"
)

// The research note's test models (shared/research/ort-execution.md),
// built with the IR at a small size: every activation is float32
// [1,16,32,32] = 64 KiB, every block a 1×1 Conv + Relu.
var actShape = []int64{1, 16, 32, 32}

const actBytes = 1 * 16 * 32 * 32 * 4

// mb builds test graphs.
type mb struct {
	g    *ir.Graph
	seed uint64
	act  ir.TensorType
}

func newMB(name string) *mb {
	g := ir.NewGraph(name)
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	return &mb{g: g, seed: 1, act: ir.TensorOf(ir.Float32, actShape...)}
}

func (b *mb) param(name string, shape ...int64) *ir.Value {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	raw := make([]byte, 4*n)
	for i := range n {
		b.seed = b.seed*6364136223846793005 + 1442695040888963407
		f := (float32(b.seed>>40)/(1<<24)*2 - 1) * 0.4
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	return b.g.AddParam(name, ir.TensorOf(ir.Float32, shape...), &ir.Tensor{Name: name, DType: ir.Float32, Shape: shape, Raw: raw})
}

func (b *mb) op(op, name string, typ ir.TensorType, in []*ir.Value, out string, attrs ...ir.Attr) *ir.Value {
	n := b.g.NewNode(op, "", in, []string{out})
	n.Name = name
	for _, a := range attrs {
		n.SetAttr(a)
	}
	n.Outputs[0].Type = typ
	return n.Outputs[0]
}

// block is Conv1x1 (with bias) + Relu: nodes <p>_conv and <p>_relu,
// outputs <p>_c and out.
func (b *mb) block(p string, in *ir.Value, out string) *ir.Value {
	c := b.op("Conv", p+"_conv", b.act, []*ir.Value{in, b.param(p+".weight", 16, 16, 1, 1), b.param(p+".bias", 16)}, p+"_c", ir.IntsAttr("kernel_shape", 1, 1))
	return b.op("Relu", p+"_relu", b.act, []*ir.Value{c}, out)
}

func (b *mb) add(name string, x, y *ir.Value, out string) *ir.Value {
	return b.op("Add", name, b.act, []*ir.Value{x, y}, out)
}

// buildU is model U: encoders e1, e2, e3, b; decoders d3 = B(b+e3),
// d2 = B(d3+e2), d1 = B(d2+e1); y = Conv(d1).
func buildU() *ir.Graph {
	b := newMB("u")
	x := b.g.AddInput("x", b.act)
	e1 := b.block("enc1", x, "e1")
	e2 := b.block("enc2", e1, "e2")
	e3 := b.block("enc3", e2, "e3")
	bt := b.block("bott", e3, "b")
	d3 := b.block("dec3", b.add("dec3_add", bt, e3, "s3"), "d3")
	d2 := b.block("dec2", b.add("dec2_add", d3, e2, "s2"), "d2")
	d1 := b.block("dec1", b.add("dec1_add", d2, e1, "s1"), "d1")
	y := b.op("Conv", "out_conv", b.act, []*ir.Value{d1, b.param("out.weight", 16, 16, 1, 1), b.param("out.bias", 16)}, "y", ir.IntsAttr("kernel_shape", 1, 1))
	b.g.AddOutput(y)
	return b.g
}

// buildK is model K: a residual chain with one long skip from a0 to the
// end. With reshape, x comes in as [1,16,1024] and a Reshape (of a shape
// that a Constant node gives) makes it [1,16,32,32].
func buildK(reshape bool) func() *ir.Graph { return buildKWith(reshape, false) }

// buildKWith is buildK; with dynamic, the input is declared
// [N,16,32,32] (the rest of the graph keeps static types).
func buildKWith(reshape, dynamic bool) func() *ir.Graph {
	return func() *ir.Graph {
		b := newMB("k")
		var x *ir.Value
		switch {
		case dynamic:
			x = b.g.AddInput("x", ir.TensorType{DType: ir.Float32, Shape: []ir.Dim{ir.SymDim("N"), ir.D(16), ir.D(32), ir.D(32)}})
		case reshape:
			in := b.g.AddInput("x", ir.TensorOf(ir.Float32, 1, 16, 32*32))
			sh := b.g.NewNode("Constant", "", nil, []string{"shape"})
			sh.Name = "shape_const"
			sh.SetAttr(ir.TensorAttr("value", ir.Int64Tensor([]int64{4}, actShape...)))
			sh.Outputs[0].Type = ir.TensorOf(ir.Int64, 4)
			x = b.op("Reshape", "in_reshape", b.act, []*ir.Value{in, sh.Outputs[0]}, "xr")
		default:
			x = b.g.AddInput("x", b.act)
		}
		a0 := b.block("a0", x, "a0")
		h1 := b.block("a1", a0, "h1")
		r1 := b.block("a2", h1, "r1")
		h2 := b.add("res2", r1, h1, "h2")
		r2 := b.block("a3", h2, "r2")
		h3 := b.add("res3", r2, h2, "h3")
		b.g.AddOutput(b.add("skip", h3, a0, "y"))
		return b.g
	}
}

// rematCase is a model and a hand-made plan: for each named stage, the
// nodes it recomputes.
type rematCase struct {
	name      string
	build     func() *ir.Graph
	recompute map[string][]string
	// deps is the number of dependency nodes the export should add, and
	// form the op that carries them into the chain's entry.
	deps int
	form string
	// inputShapes gives ORT the shapes of dynamic inputs.
	inputShapes map[string][]int64
	// noModelGain: the memory model predicts no lower peak (ORT does).
	noModelGain bool
}

// peakGainAt reports whether TestRematORT expects ORT's peak to fall at a
// level. With a dynamic input ORT does not let the dependency's copy of L
// reuse a freed buffer: at "all", where NCHWc reorders L (in its blocked
// layout) into a new NCHW tensor for the dependency's Reshape (research
// note, Q4), that transient copy lifts the peak back to the original's
// (measured: +272 B over it).
func (c rematCase) peakGainAt(level string) bool {
	return c.inputShapes == nil || level == "disabled"
}

var rematCases = []rematCase{
	{name: "u", build: buildU, recompute: map[string][]string{"dec2_add": {"enc1_conv", "enc1_relu", "enc2_conv", "enc2_relu"}}, deps: 5, form: "Reshape"},
	{name: "k", build: buildK(false), recompute: map[string][]string{"skip": {"a0_conv", "a0_relu"}}, deps: 5, form: "Reshape"},
	// The entry Conv reads a Reshape's output: the dependency goes on its
	// bias (depbias), never a second Reshape. (The memory model, without
	// views, sees no gain: the recomputation keeps the Reshape's output
	// live; in ORT that output is a view of the input.)
	{name: "k_reshape_in", build: buildK(true), recompute: map[string][]string{"skip": {"a0_conv", "a0_relu"}}, deps: 3, form: "Concat", noModelGain: true},
	// The entry is the Reshape itself: the dependency goes on its shape.
	{name: "k_reshape", build: buildK(true), recompute: map[string][]string{"skip": {"in_reshape", "a0_conv", "a0_relu"}}, deps: 4, form: "Concat"},
	// The chain's input has a dynamic shape: the dependency's shape comes
	// from Shape(x).
	{name: "k_dyn", build: buildKWith(false, true), recompute: map[string][]string{"skip": {"a0_conv", "a0_relu"}}, deps: 6, form: "Reshape", inputShapes: map[string][]int64{"x": actShape}},
	// Two chains: e2 before dec2_add, e1 before dec1_add.
	{name: "u_two", build: buildU, recompute: map[string][]string{"dec2_add": {"enc2_conv", "enc2_relu"}, "dec1_add": {"enc1_conv", "enc1_relu"}}, deps: 10, form: "Reshape"},
}

// stages returns checkpoint-all's stages plus the case's recomputations.
func (c rematCase) stages(t *testing.T, p *remat.Problem) [][]int32 {
	t.Helper()
	stages := make([][]int32, p.N())
	for s := range stages {
		stages[s] = []int32{int32(s)}
	}
	for stage, names := range c.recompute {
		st := slices.Index(p.Names, stage)
		if st < 0 {
			t.Fatalf("no node %q", stage)
		}
		for _, n := range names {
			i := slices.Index(p.Names, n)
			if i < 0 {
				t.Fatalf("no node %q", n)
			}
			stages[st] = append(stages[st], int32(i))
		}
	}
	return stages
}

// rematExport is an exported original and its rewrite.
type rematExport struct {
	orig, remat []byte
	rw          *remat.RewriteResult
	g           *ir.Graph // the rewritten graph
	planNames   []string  // the plan's computations, in order
	info        exporter.RematInfo
}

func exportCase(t *testing.T, c rematCase) *rematExport {
	t.Helper()
	r := &rematExport{orig: mustExport(t, c.build(), exporter.Options{ValueInfo: true})}
	g := c.build()
	p, m, err := remat.Lower(g, func(*ir.Node) float64 { return 1 }, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := checkpointall.Solver.Solve(t.Context(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	baseRes, err := remat.Check(p, base)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := remat.ScheduleStages(p, c.stages(t, p))
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Check(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.PeakBytes >= baseRes.PeakBytes && !c.noModelGain {
		t.Fatalf("%s: the plan peaks at %d bytes, checkpoint-all at %d", c.name, res.PeakBytes, baseRes.PeakBytes)
	}
	// The plan's computations, named as Rewrite names duplicates.
	times := map[*ir.Node]int{}
	for _, n := range m.Sequence(plan) {
		name := n.Name
		if k := times[n]; k > 0 {
			name += "_rc" + itoa(int64(k))
		}
		times[n]++
		r.planNames = append(r.planNames, name)
	}
	r.rw, err = remat.Rewrite(g, m, plan)
	if err != nil {
		t.Fatal(err)
	}
	r.g = g
	r.info = exporter.RematInfo{Solver: "hand", BudgetBytes: res.PeakBytes, PredictedPeakBytes: res.PeakBytes, OriginalPeakBytes: baseRes.PeakBytes}
	r.remat = mustExport(t, g, exporter.Options{ValueInfo: true, Remat: r.rw, RuntimeOrder: ortt.Order, RematInfo: r.info})
	return r
}

// metadata reads the remat-compile metadata of a model.
func metadata(t *testing.T, mp *onnxpb.ModelProto) map[string]any {
	t.Helper()
	var out map[string]any
	n := 0
	for _, p := range mp.GetMetadataProps() {
		if p.GetKey() == exporter.RematMetadataKey {
			n++
			dec := json.NewDecoder(strings.NewReader(p.GetValue()))
			dec.UseNumber()
			if err := dec.Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d metadata entries %q", n, exporter.RematMetadataKey)
	}
	return out
}

func isDep(name string) bool { return strings.Contains(name, "_dep_") }

func TestRematExport(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, c := range rematCases {
		t.Run(c.name, func(t *testing.T) {
			r := exportCase(t, c)
			mp := Unmarshal(t, r.remat)

			// The metadata, exactly.
			md := metadata(t, mp)
			want := map[string]any{
				"version": json.Number("1"), "solver": "hand",
				"budget_bytes":         json.Number(itoa(r.info.BudgetBytes)),
				"predicted_peak_bytes": json.Number(itoa(r.info.PredictedPeakBytes)),
				"original_peak_bytes":  json.Number(itoa(r.info.OriginalPeakBytes)),
			}
			var entries []any
			for _, rc := range r.rw.Recomputes {
				e := map[string]any{"node": rc.Node.Name, "original": rc.Original.Name, "outputs": []any{rc.Node.Outputs[0].Name}, "after": rc.After.Name, "before": ""}
				if rc.Before != nil {
					e["before"] = rc.Before.Name
				}
				entries = append(entries, e)
			}
			want["recompute"] = entries
			if a, b := jsonString(t, md), jsonString(t, want); a != b {
				t.Errorf("metadata\n%s\nwant\n%s", a, b)
			}
			if c.name == "u" {
				want := `{"version":1,"solver":"hand","budget_bytes":262144,"predicted_peak_bytes":262144,"original_peak_bytes":327680,"recompute":[` +
					`{"node":"enc1_conv_rc1","original":"enc1_conv","outputs":["enc1_c_rc1"],"after":"dec3_relu","before":"enc1_relu_rc1"},` +
					`{"node":"enc1_relu_rc1","original":"enc1_relu","outputs":["e1_rc1"],"after":"dec3_relu","before":"enc2_conv_rc1"},` +
					`{"node":"enc2_conv_rc1","original":"enc2_conv","outputs":["enc2_c_rc1"],"after":"dec3_relu","before":"enc2_relu_rc1"},` +
					`{"node":"enc2_relu_rc1","original":"enc2_relu","outputs":["e2_rc1"],"after":"dec3_relu","before":"dec2_add"}]}`
				if got := mp.GetMetadataProps()[0].GetValue(); got != want {
					t.Errorf("metadata\n%s\nwant\n%s", got, want)
				}
			}
			if len(entries) != len(slices.Concat(mapValues(c.recompute)...)) {
				t.Errorf("%d recompute entries", len(entries))
			}

			// The nodes: plan order, with the dependency nodes right
			// before their chains.
			var written, deps []string
			for _, n := range mp.Graph.Node {
				if isDep(n.GetName()) {
					deps = append(deps, n.GetName())
					continue
				}
				if n.GetOpType() != "Constant" {
					written = append(written, n.GetName())
				}
			}
			if !slices.Equal(written, r.planNames) {
				t.Errorf("nodes written %v, plan %v", written, r.planNames)
			}
			if len(deps) != c.deps {
				t.Errorf("%d dependency nodes %v, want %d", len(deps), deps, c.deps)
			}
			// The chain entry reads a dependency node of the expected op.
			for _, rc := range r.rw.Recomputes {
				np := protoNode(mp, rc.Node.Name)
				for _, in := range np.GetInput() {
					if d := producerOf(mp, in); d != nil && isDep(d.GetName()) && d.GetOpType() != c.form {
						t.Errorf("%s reads %s from a %s, want %s", rc.Node.Name, in, d.GetOpType(), c.form)
					}
				}
			}

			// ORT's order, simulated, is the plan's.
			order, err := ortt.OrderOfModel(r.remat)
			if err != nil {
				t.Fatal(err)
			}
			var sim []string
			for _, p := range order {
				if n := mp.Graph.Node[p].GetName(); !isDep(n) {
					sim = append(sim, n)
				}
			}
			if !slices.Equal(sim, r.planNames) {
				t.Errorf("simulated ORT order %v\nplan %v", sim, r.planNames)
			}
			// Exporting is deterministic.
			if again := mustExport(t, r.g, exporter.Options{ValueInfo: true, Remat: r.rw, RuntimeOrder: ortt.Order, RematInfo: r.info}); !bytes.Equal(again, r.remat) {
				t.Errorf("a second export differs")
			}
			p := filepath.Join(dir, c.name+"_remat.onnx")
			writeFile(t, p, r.remat)
			paths = append(paths, p)
		})
	}
	runChecker(t, paths)
	runStrictChecker(t, paths)
}

// runStrictChecker runs onnx.checker with full_check (strict shape
// inference) on every model.
func runStrictChecker(t *testing.T, paths []string) {
	t.Helper()
	py := pythonONNX(t)
	script := `
import sys, onnx
for p in sys.argv[1:]:
    onnx.checker.check_model(onnx.load(p), full_check=True)
    onnx.shape_inference.infer_shapes(onnx.load(p), check_type=True, strict_mode=True)
print("ok")
`
	out, err := exec.Command(py, append([]string{"-c", script}, paths...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("strict onnx.checker: %v\n%s", err, out)
	}
}

// TestRematORTWithoutDependencies is the control: the rewritten graph
// exported without Options.Remat (plan order, no fake dependency) does not
// keep its recomputations where the plan put them: ORT hoists them at
// "disabled" and CSE merges them at "all".
func TestRematORTWithoutDependencies(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	for _, c := range rematCases[:2] {
		r := exportCase(t, c)
		plain := mustExport(t, r.g, exporter.Options{ValueInfo: true})
		p := filepath.Join(dir, c.name+"_nodep.onnx")
		writeFile(t, p, plain)
		inputs, err := ort.RandomInputs(p, 7, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, level := range []string{"disabled", "all"} {
			res, err := ort.Run(p, inputs, ort.MeasureOptions(level))
			if err != nil {
				t.Fatal(err)
			}
			problems := placementProblems(r, Unmarshal(t, plain), res.Profile)
			t.Logf("%s at %s without dependencies: %v", c.name, level, problems)
			if len(problems) == 0 {
				t.Errorf("%s at %s: the recomputations stayed in place without dependencies", c.name, level)
			}
		}
	}
}

// TestRematExportUnforceable: a recomputed Relu whose only input is a
// Reshape's output cannot carry a dependency without chaining two
// Reshapes; the export says so.
func TestRematExportUnforceable(t *testing.T) {
	b := newMB("r")
	in := b.g.AddInput("x", ir.TensorOf(ir.Float32, 1, 16, 32*32))
	sh := b.g.AddParam("shape", ir.TensorOf(ir.Int64, 4), ir.Int64Tensor([]int64{4}, actShape...))
	xr := b.op("Reshape", "in_reshape", b.act, []*ir.Value{in, sh}, "xr")
	a := b.op("Relu", "act", b.act, []*ir.Value{xr}, "a")
	h := b.block("h1", a, "h1")
	h = b.block("h2", h, "h2")
	b.g.AddOutput(b.add("skip", h, a, "y"))
	c := rematCase{name: "unforceable", recompute: map[string][]string{"skip": {"act"}}}
	p, m, err := remat.Lower(b.g, func(*ir.Node) float64 { return 1 }, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := remat.ScheduleStages(p, c.stages(t, p))
	if err != nil {
		t.Fatal(err)
	}
	rw, err := remat.Rewrite(b.g, m, plan)
	if err != nil {
		t.Fatal(err)
	}
	_, err = exporter.Export(b.g, exporter.Options{Remat: rw, RuntimeOrder: ortt.Order})
	if err == nil || !strings.Contains(err.Error(), "two Reshapes") {
		t.Errorf("export: %v", err)
	}
}

// TestRematExportNoRecompute: checkpoint-all's rewrite exports as the
// plain graph plus the metadata.
func TestRematExportNoRecompute(t *testing.T) {
	g := buildU()
	plain := mustExport(t, buildU(), exporter.Options{})
	p, m, err := remat.Lower(g, func(*ir.Node) float64 { return 1 }, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := checkpointall.Solver.Solve(t.Context(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := remat.Rewrite(g, m, plan)
	if err != nil {
		t.Fatal(err)
	}
	out := Unmarshal(t, mustExport(t, g, exporter.Options{Remat: rw, RuntimeOrder: ortt.Order, RematInfo: exporter.RematInfo{Solver: "checkpoint-all"}}))
	md := metadata(t, out)
	if rc, ok := md["recompute"].([]any); !ok || len(rc) != 0 || md["solver"] != "checkpoint-all" {
		t.Errorf("metadata %v", md)
	}
	out.MetadataProps = nil
	if !bytes.Equal(Marshal(t, out), plain) {
		t.Errorf("the export differs from the plain one beyond the metadata")
	}
}

func TestRematExportErrors(t *testing.T) {
	c := rematCases[0]
	r := exportCase(t, c)
	// A rewrite of another graph.
	if _, err := exporter.Export(buildU(), exporter.Options{Remat: r.rw, RuntimeOrder: ortt.Order}); err == nil || !strings.Contains(err.Error(), "Options.Remat") {
		t.Errorf("foreign rewrite: %v", err)
	}
	// Unnamed recompute nodes cannot be named in the metadata.
	r.rw.Recomputes[0].Node.Name = ""
	if _, err := exporter.Export(r.g, exporter.Options{Remat: r.rw, RuntimeOrder: ortt.Order}); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("unnamed node: %v", err)
	}
}

// TestRematORT runs each exported pair in ONNX Runtime at levels
// "disabled" and "all" with the default options (CSE on): the outputs are
// bitwise identical, every recompute node ran, after its chain's "after"
// node and as its own kernel (not merged into the original), and the
// activation peak is lower than the original's. At "disabled" ORT's order
// is exactly the simulated one.
func TestRematORT(t *testing.T) {
	testmodels.RequireORT(t)
	dir := t.TempDir()
	for _, c := range rematCases {
		t.Run(c.name, func(t *testing.T) {
			r := exportCase(t, c)
			orig := filepath.Join(dir, c.name+".onnx")
			rm := filepath.Join(dir, c.name+"_remat.onnx")
			writeFile(t, orig, r.orig)
			writeFile(t, rm, r.remat)
			inputs, err := ort.RandomInputs(orig, 7, c.inputShapes)
			if err != nil {
				t.Fatal(err)
			}
			mp := Unmarshal(t, r.remat)
			for _, level := range []string{"disabled", "all"} {
				opts := ort.MeasureOptions(level)
				a, err := ort.Run(orig, inputs, opts)
				if err != nil {
					t.Fatal(err)
				}
				b, err := ort.Run(rm, inputs, opts)
				if err != nil {
					t.Fatalf("level %s: %v", level, err)
				}
				for _, name := range a.OutputNames {
					if !bytes.Equal(a.Outputs[name].Data, b.Outputs[name].Data) {
						t.Errorf("level %s: output %s differs", level, name)
					}
				}
				pa, pb := activationPeak(a.Profile), activationPeak(b.Profile)
				t.Logf("%s at %s: activation peak %d -> %d bytes (%.2f -> %.2f activations); plan predicts %d -> %d; %d -> %d kernels",
					c.name, level, pa, pb, float64(pa)/actBytes, float64(pb)/actBytes, r.info.OriginalPeakBytes, r.info.PredictedPeakBytes, len(a.Profile.Nodes), len(b.Profile.Nodes))
				if pb >= pa && c.peakGainAt(level) {
					t.Errorf("level %s: the remat model peaks at %d bytes, the original at %d", level, pb, pa)
				}
				for _, msg := range placementProblems(r, mp, b.Profile) {
					t.Errorf("level %s: %s", level, msg)
				}
				if level == "disabled" {
					order, _ := ortt.OrderOfModel(r.remat)
					var sim []string
					for _, p := range order {
						sim = append(sim, mp.Graph.Node[p].GetName())
					}
					if got := b.Profile.Names(); !slices.Equal(got, sim) {
						t.Errorf("ORT ran %v\nsimulated %v", got, sim)
					}
				}
			}
		})
	}
}

// activationPeak is the profile's peak minus what the arena held before
// the first kernel, as remat-compile verify measures it.
func activationPeak(p *ort.Profile) int64 {
	first := p.Nodes[0]
	return p.PeakBytes() - (first.MemBytesInUse - first.MemInUseDelta)
}

// placementProblems matches profile events to the rewritten graph's nodes
// (by node name, or by an output tensor name T when the event is T or
// starts with T+"_", as ORT names NCHWc and other created kernels; a node
// without an event was fused into a neighbour of its chain, or, for an
// "after" node, into its producer) and checks every recompute node: it
// ran, as a kernel of its own, after its chain's "after" node.
func placementProblems(r *rematExport, mp *onnxpb.ModelProto, prof *ort.Profile) []string {
	var problems []string
	// Each event belongs to at most one node: the node of its name, else
	// the producer of the longest output tensor name T it equals or
	// starts with T+"_".
	byName := map[string]*ir.Node{}
	byTensor := map[string]*ir.Node{}
	for _, n := range r.g.Nodes {
		byName[n.Name] = n
		for _, o := range n.Outputs {
			if o != nil {
				byTensor[o.Name] = n
			}
		}
	}
	depNodes := map[string]bool{}
	for _, n := range mp.Graph.Node {
		if isDep(n.GetName()) {
			depNodes[n.GetName()] = true
		}
	}
	owner := make([]*ir.Node, len(prof.Nodes))
	for i, e := range prof.Nodes {
		if n := byName[e.Name]; n != nil {
			owner[i] = n
			continue
		}
		if depNodes[e.Name] {
			continue
		}
		for cand := e.Name; cand != ""; {
			if n := byTensor[cand]; n != nil {
				owner[i] = n
				break
			}
			k := strings.LastIndexByte(cand, '_')
			if k <= 0 {
				break
			}
			cand = cand[:k]
		}
	}
	direct := func(n *ir.Node) []int {
		var out []int
		for i, o := range owner {
			if o == n {
				out = append(out, i)
			}
		}
		return out
	}
	// located: the node's events, else a fusion partner's: its producer
	// (a fused kernel keeps its first node's name) or its consumer (an
	// NCHWc kernel is named after its last output).
	located := func(n *ir.Node, within func(*ir.Node) bool) []int {
		if ev := direct(n); len(ev) > 0 {
			return ev
		}
		for _, v := range n.Inputs {
			if v != nil && v.Def != nil && within(v.Def) {
				if ev := direct(v.Def); len(ev) > 0 {
					return ev
				}
			}
		}
		for _, o := range n.Outputs {
			for _, u := range o.Uses {
				if within(u.Node) {
					if ev := direct(u.Node); len(ev) > 0 {
						return ev
					}
				}
			}
		}
		return nil
	}
	for _, ch := range r.rw.Chains() {
		inChain := func(n *ir.Node) bool {
			return slices.ContainsFunc(ch, func(rc remat.Recompute) bool { return rc.Node == n })
		}
		after := located(ch[0].After, func(n *ir.Node) bool { return n.Op == "Conv" })
		if len(after) == 0 {
			problems = append(problems, fmt.Sprintf("the after node %s is not in the profile", ch[0].After.Name))
			continue
		}
		for _, rc := range ch {
			ev := located(rc.Node, inChain)
			orig := located(rc.Original, func(*ir.Node) bool { return true })
			switch {
			case len(ev) == 0:
				problems = append(problems, fmt.Sprintf("recompute node %s did not run (merged by CSE?)", rc.Node.Name))
			case len(orig) == 0 || slices.Contains(orig, ev[0]):
				problems = append(problems, fmt.Sprintf("recompute node %s runs as its original %s's kernel", rc.Node.Name, rc.Original.Name))
			case ev[0] <= after[len(after)-1]:
				problems = append(problems, fmt.Sprintf("recompute node %s ran at %d (%s), before its after node %s at %d", rc.Node.Name, ev[0], prof.Nodes[ev[0]].Name, rc.After.Name, after[len(after)-1]))
			}
		}
	}
	return problems
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mapValues(m map[string][]string) [][]string {
	var out [][]string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func protoNode(mp *onnxpb.ModelProto, name string) *onnxpb.NodeProto {
	for _, n := range mp.Graph.Node {
		if n.GetName() == name {
			return n
		}
	}
	return nil
}

func producerOf(mp *onnxpb.ModelProto, tensor string) *onnxpb.NodeProto {
	for _, n := range mp.Graph.Node {
		if slices.Contains(n.GetOutput(), tensor) {
			return n
		}
	}
	return nil
}

// BenchmarkRematExport exports rewritten residual chains of n Conv+Relu
// blocks (each block also adds the output of the block four back) in
// which every tenth stage recomputes the block it skips from: n/10 chains,
// each forced by a dependency.
func BenchmarkRematExport(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run("blocks="+itoa(int64(n)), func(b *testing.B) {
			mbd := newMB("chain")
			mbd.act = ir.TensorOf(ir.Float32, 1, 16, 4, 4)
			x := mbd.g.AddInput("x", mbd.act)
			var outs []*ir.Value
			h := x
			for i := range n {
				name := "b" + itoa(int64(i))
				h = mbd.block(name, h, name)
				if i >= 4 {
					h = mbd.add(name+"_add", h, outs[i-4], name+"_s")
				}
				outs = append(outs, h)
			}
			mbd.g.AddOutput(h)
			p, m, err := remat.Lower(mbd.g, func(*ir.Node) float64 { return 1 }, remat.LowerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			stages := make([][]int32, p.N())
			for s := range stages {
				stages[s] = []int32{int32(s)}
			}
			chains := 0
			for i := 10; i < n; i += 10 {
				// The stage of block i's Add recomputes block i-4's Relu.
				add := slices.Index(p.Names, "b"+itoa(int64(i))+"_add")
				relu := slices.Index(p.Names, "b"+itoa(int64(i-4))+"_relu")
				stages[add] = append([]int32{int32(relu)}, stages[add]...)
				chains++
			}
			plan, err := remat.ScheduleStages(p, stages)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := remat.Check(p, plan); err != nil {
				b.Fatal(err)
			}
			rw, err := remat.Rewrite(mbd.g, m, plan)
			if err != nil {
				b.Fatal(err)
			}
			var out []byte
			for b.Loop() {
				if out, err = exporter.Export(mbd.g, exporter.Options{Remat: rw, RuntimeOrder: ortt.Order}); err != nil {
					b.Fatal(err)
				}
			}
			deps := 0
			for _, nd := range Unmarshal(b, out).Graph.Node {
				if isDep(nd.GetName()) {
					deps++
				}
			}
			b.ReportMetric(float64(chains), "chains")
			b.ReportMetric(float64(deps), "dep-nodes")
			b.ReportMetric(float64(len(mbd.g.Nodes)), "nodes")
		})
	}
}

// buildBranches is two parallel branches, a = B(B(x)) and b = B(B(x)),
// joined by an Add, then p = B(a+b) and y = p + a1 (a long skip from the
// first block of branch a). In file order ORT's depth-first search runs
// branch b before branch a (it enters the producer with the higher index
// first), so a1 and a2 stay live across branch b when the plan runs a
// first.
func buildBranches() *ir.Graph {
	b := newMB("branches")
	x := b.g.AddInput("x", b.act)
	a1 := b.block("a1", x, "a1")
	a2 := b.block("a2", a1, "a2")
	b1 := b.block("b1", x, "b1")
	b2 := b.block("b2", b1, "b2")
	p := b.block("post", b.add("join", a2, b2, "s"), "p")
	b.g.AddOutput(b.add("skip", p, a1, "y"))
	return b.g
}

// scheduleNames returns the names of ORT's simulated order (targets/ort Schedule)'s nodes.
func scheduleNames(t *testing.T, g *ir.Graph, opts exporter.Options) []string {
	t.Helper()
	seq, err := ortSeq(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range seq {
		names = append(names, n.Name)
	}
	return names
}

func irNode(g *ir.Graph, name string) *ir.Node {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// TestRematExportOrderConstraint: an order constraint (Options.Order)
// holds its node back until its "after" node has run, in ORT's simulated order (targets/ort Schedule)'s
// simulated order and in the written model's (ORTOrder), through a
// depreshape on the node's data input; the recompute chain stays after
// its "after" node. CanForceOrder refuses a Relu that reads a Conv (the
// dependency would break ORT's Conv+activation fusion) and a node that
// reads only parameters (ORT folds it). With ORT, the model computes
// bitwise the original's outputs at "disabled" and "all" and runs b1_conv
// after a2_relu.
func TestRematExportOrderConstraint(t *testing.T) {
	c := rematCase{name: "branches", build: buildBranches, recompute: map[string][]string{"skip": {"a1_conv", "a1_relu"}}}
	r := exportCase(t, c)
	base := exporter.Options{ValueInfo: true, Remat: r.rw, RuntimeOrder: ortt.Order, RematInfo: r.info}
	before := func(names []string, x, y string) bool {
		i, j := slices.Index(names, x), slices.Index(names, y)
		if i < 0 || j < 0 {
			t.Fatalf("%s or %s missing from %v", x, y, names)
		}
		return i < j
	}
	free := scheduleNames(t, r.g, base)
	if !before(free, "b1_conv", "a2_relu") {
		t.Fatalf("the test is void: ORT would run b1_conv after a2_relu unforced: %v", free)
	}
	b1, a2 := irNode(r.g, "b1_conv"), irNode(r.g, "a2_relu")
	if !exporter.CanForceOrder(b1) {
		t.Fatal("CanForceOrder(b1_conv) = false")
	}
	if exporter.CanForceOrder(irNode(r.g, "b1_relu")) {
		t.Error("CanForceOrder(b1_relu) = true: a dependency between b1_conv and b1_relu breaks their fusion")
	}
	opts := base
	opts.Order = []remat.OrderConstraint{{Node: b1, After: a2}}
	forced := scheduleNames(t, r.g, opts)
	if before(forced, "b1_conv", "a2_relu") {
		t.Errorf("with the constraint ORT's simulated order (targets/ort Schedule) still runs b1_conv before a2_relu: %v", forced)
	}
	if !before(forced, "post_relu", "a1_conv_rc1") {
		t.Errorf("the recompute chain runs before its after node: %v", forced)
	}
	model := mustExport(t, r.g, opts)
	mp := Unmarshal(t, model)
	order, err := ortt.OrderOfModel(model)
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, p := range order {
		if n := mp.Graph.Node[p].GetName(); !isDep(n) {
			written = append(written, n)
		}
	}
	if !slices.Equal(written, forced) {
		t.Errorf("ORTOrder of the written model\n  %v\nORT's simulated order (targets/ort Schedule)\n  %v", written, forced)
	}
	np := protoNode(mp, "b1_conv")
	if dep := producerOf(mp, np.GetInput()[0]); dep == nil || !isDep(dep.GetName()) || dep.GetOpType() != "Reshape" {
		t.Errorf("b1_conv reads %v, want a depreshape on its data input", np.GetInput())
	}
	if flat := protoNode(mp, "b1_conv_dep_flat"); flat == nil || flat.GetInput()[0] != "a2" {
		t.Errorf("b1_conv's dependency is not on a2: %v", flat)
	}

	// A node that reads only parameters: ORT folds it into an initializer.
	g := buildBranches()
	w := irNode(g, "a1_conv").Inputs[1]
	neg := g.NewNode("Neg", "", []*ir.Value{w}, []string{"wneg"})
	neg.Name = "wneg"
	neg.Outputs[0].Type = w.Type
	if exporter.CanForceOrder(neg) {
		t.Error("CanForceOrder(Neg of a parameter) = true; ORT constant-folds it")
	}

	testmodels.RequireORT(t)
	dir := t.TempDir()
	orig := filepath.Join(dir, "branches.onnx")
	rm := filepath.Join(dir, "branches_ordered.onnx")
	writeFile(t, orig, r.orig)
	writeFile(t, rm, model)
	inputs, err := ort.RandomInputs(orig, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"disabled", "all"} {
		a, err := ort.Run(orig, inputs, ort.MeasureOptions(level))
		if err != nil {
			t.Fatal(err)
		}
		b, err := ort.Run(rm, inputs, ort.MeasureOptions(level))
		if err != nil {
			t.Fatalf("level %s: %v", level, err)
		}
		for _, name := range a.OutputNames {
			if !bytes.Equal(a.Outputs[name].Data, b.Outputs[name].Data) {
				t.Errorf("level %s: output %s differs", level, name)
			}
		}
		t.Logf("level %s: activation peak %d -> %d bytes", level, activationPeak(a.Profile), activationPeak(b.Profile))
		if level == "disabled" {
			var ran []string
			for _, n := range b.Profile.Names() {
				if !isDep(n) {
					ran = append(ran, n)
				}
			}
			if !slices.Equal(ran, forced) {
				t.Errorf("ORT ran\n  %v\nORT's simulated order (targets/ort Schedule)\n  %v", ran, forced)
			}
		}
	}
}

// TestRematExportRetainedCopy: two recomputations of one node that read the
// very same tensor (a value recomputed by the first chain and retained for
// the second) must not leave identical nodes for ORT's CSE to merge; the
// first copy, which is no entry of its chain, gets a dependency of its own.
func TestRematExportRetainedCopy(t *testing.T) {
	b := newMB("retained")
	x := b.g.AddInput("x", b.act)
	e1 := b.block("enc1", x, "e1")
	pv := b.op("Conv", "pc", b.act, []*ir.Value{e1, b.param("pc.weight", 16, 16, 1, 1), b.param("pc.bias", 16)}, "pv", ir.IntsAttr("kernel_shape", 1, 1))
	m2 := b.block("mid2", b.block("mid1", pv, "m1"), "m2")
	s1 := b.add("add1", m2, pv, "s1")
	s2 := b.add("add2", b.block("mid3", s1, "m3"), pv, "s2")
	b.g.AddOutput(s2)
	rw, _ := rewriteWith(t, b.g, map[string][]string{"add1": {"enc1_conv", "enc1_relu", "pc"}, "add2": {"pc"}})
	copies := map[string][]string{}
	for _, n := range b.g.Nodes {
		if strings.HasPrefix(n.Name, "pc_rc") {
			copies[n.Name] = []string{n.Inputs[0].Name}
		}
	}
	if len(copies) != 2 || copies["pc_rc1"][0] != copies["pc_rc2"][0] {
		t.Fatalf("the rewrite does not give the case: both copies of pc should read the same retained tensor: %v", copies)
	}
	data, err := exporter.Export(b.g, exporter.Options{ValueInfo: true, Remat: rw, RuntimeOrder: ortt.Order, RematInfo: exporter.RematInfo{Solver: "hand"}})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	mp := Unmarshal(t, data)
	first, second := protoNode(mp, "pc_rc1"), protoNode(mp, "pc_rc2")
	if slices.Equal(first.GetInput(), second.GetInput()) {
		t.Errorf("pc_rc1 and pc_rc2 both read %v: ORT's CSE would merge them", first.GetInput())
	}
}

// TestRematExportFoldableAnchor: when the node the plan runs right before
// a recompute chain reads parameters alone, ORT folds it into a constant,
// so the chain is held after the last node before it that ORT runs, and
// the metadata names that node.
func TestRematExportFoldableAnchor(t *testing.T) {
	b := newMB("anchor")
	x := b.g.AddInput("x", b.act)
	e1 := b.block("enc1", x, "e1")
	m1 := b.block("mid1", e1, "m1")
	fold := b.op("Neg", "fold", b.act, []*ir.Value{b.param("k", actShape...)}, "kneg")
	s1 := b.add("add1", m1, e1, "s1")
	b.g.AddOutput(b.add("addk", s1, fold, "s2"))
	rw, names := rewriteWith(t, b.g, map[string][]string{"add1": {"enc1_conv", "enc1_relu"}})
	if add1 := slices.Index(names, "add1"); add1 < 1 || names[add1-1] != "fold" {
		t.Fatalf("the plan order is %v: want fold right before add1", names)
	}
	if rw.Recomputes[0].After == nil || rw.Recomputes[0].After.Name != "fold" {
		t.Fatalf("the rewrite runs the chain after %v, want fold", rw.Recomputes[0].After)
	}
	data, err := exporter.Export(b.g, exporter.Options{ValueInfo: true, Remat: rw, RuntimeOrder: ortt.Order, RematInfo: exporter.RematInfo{Solver: "hand"}})
	if err != nil {
		t.Fatal(err)
	}
	md := metadata(t, Unmarshal(t, data))
	for _, e := range md["recompute"].([]any) {
		if after := e.(map[string]any)["after"]; after != "mid1_relu" {
			t.Errorf("%v runs after %v, want mid1_relu (fold reads parameters alone)", e.(map[string]any)["node"], after)
		}
	}
}

// rewriteWith rewrites g by checkpoint-all's stages plus recomputations:
// recompute maps a stage's node name to the names of the nodes it
// recomputes. It returns the rewrite and the plan's node names.
func rewriteWith(t *testing.T, g *ir.Graph, recompute map[string][]string) (*remat.RewriteResult, []string) {
	t.Helper()
	p, m, err := remat.Lower(g, func(*ir.Node) float64 { return 1 }, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := remat.ScheduleStages(p, rematCase{recompute: recompute}.stages(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remat.Check(p, plan); err != nil {
		t.Fatal(err)
	}
	rw, err := remat.Rewrite(g, m, plan)
	if err != nil {
		t.Fatal(err)
	}
	return rw, p.Names
}
