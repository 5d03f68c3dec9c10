package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

func TestProfileUsage(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.onnx")
	os.WriteFile(m, []byte("x"), 0o644)
	out := filepath.Join(dir, "p.yaml")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"profile", "-o", out}, exitUsage, "profile needs at least one MODEL"},
		{[]string{"profile", m}, exitUsage, "profile needs -o device.profile.yaml"},
		{[]string{"profile", "-o", out, "-repeat", "0", m}, exitUsage, "-repeat 0: want at least 1"},
		{[]string{"profile", "-o", out, "-warmup", "-1", m}, exitUsage, "-warmup -1"},
		{[]string{"profile", "-o", out, "-level", "max", m}, exitUsage, `-level "max"`},
		{[]string{"profile", "-o", out, "-clock", "sundial", m}, exitUsage, `-clock "sundial"`},
		{[]string{"profile", "-o", filepath.Join(dir, "p.json"), m}, exitUsage, "must end in .yaml or .yml"},
		{[]string{"profile", "-o", out, "-loss", "mean", m}, exitUsage, "-loss applies to training graphs"},
		{[]string{"profile", "-o", out, "-input-value", "sr", m}, exitUsage, `-input-value "sr"`},
		{[]string{"profile", "-o", out, "-base", "tpu-v9", m}, exitFailure, `unknown profile "tpu-v9"`},
		{[]string{"profile", "-o", out, "manifest:" + filepath.Join(dir, "none.tsv")}, exitFailure, "manifest:"},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a failed profile run wrote %s", out)
	}
}

func TestReadManifest(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tsv")
	os.WriteFile(good, []byte("name\tpath\tsha256\tsource\tinputs\n"+
		"det\t/m/det.onnx\tab\tsrc\tx:1x3x64x64\n"+
		"vad\t/m/vad.onnx\tcd\tsrc\tinput:1x512 sr:scalar:int64=16000\n"), 0o644)
	specs, err := parseModelArgs([]string{"manifest:" + good, "zoo:unet", "a/b.onnx"})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 4 {
		t.Fatalf("%d specs, want 4", len(specs))
	}
	if s := specs[1]; s.name != "vad" || !slices.Equal(s.shapes["input"], []int64{1, 512}) || len(s.shapes["sr"]) != 0 || s.shapes["sr"] == nil || s.values["sr"] != 16000 {
		t.Errorf("vad spec %+v", s)
	}
	if s := specs[2]; s.zoo != "unet" || s.path != "" || s.shapes != nil {
		t.Errorf("zoo spec %+v", s)
	}
	if s := specs[3]; s.name != "b.onnx" || s.path != "a/b.onnx" {
		t.Errorf("file spec %+v", s)
	}
	for _, tc := range []struct{ body, want string }{
		{"h\n", "lists no models"},
		{"h\nm\tp\n", "2 columns, want 5"},
		{"h\nm\tp\ts\ts\tx:1xA\n", `bad dimension "A"`},
		{"h\nm\tp\ts\ts\tsr:scalar:f32=1\n", "only int64=VALUE"},
		{"h\nm\tp\ts\ts\tnocolon\n", "want name:SHAPE"},
	} {
		p := filepath.Join(dir, "bad.tsv")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := readManifest(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("manifest %q: error %v, want %q", tc.body, err, tc.want)
		}
	}
}

// bigChain is x (4 MiB) → a = Relu(x) → b = Relu(a) → c = Add(a, b) →
// d = Add(c, bias) with a small bias, then eight more Relus of 4 MiB
// each, and e = Add(a, the last).
func bigChain(t *testing.T) (*ir.Graph, map[string]*ir.Node) {
	t.Helper()
	g := ir.NewGraph("chain")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	typ := ir.TensorOf(ir.Float32, 1024, 1024)
	x := g.AddInput("x", typ)
	bias := g.AddParam("bias", ir.TensorOf(ir.Float32, 1024), ir.Float32Tensor([]int64{1024}, make([]float32, 1024)...))
	nodes := map[string]*ir.Node{}
	add := func(name, op string, ins ...*ir.Value) *ir.Value {
		n := g.NewNode(op, "", ins, []string{name})
		n.Name = name
		nodes[name] = n
		return n.Outputs[0]
	}
	a := add("a", "Relu", x)
	b := add("b", "Relu", a)
	c := add("c", "Add", a, b)
	v := add("d", "Add", c, bias)
	for i := range 8 {
		v = add(fmt.Sprintf("r%d", i), "Relu", v)
	}
	g.AddOutput(add("e", "Add", a, v))
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	return g, nodes
}

func TestColdInputs(t *testing.T) {
	g, n := bigChain(t)
	cold := coldInputs(g)
	for _, tc := range []struct {
		node string
		want []int
	}{
		{"a", []int{inDRAM}},           // the graph input: the model moves 52 MiB between runs
		{"b", []int{inCache}},          // a, just written
		{"c", []int{inL3, inCache}},    // a: b's 4 MiB written since; b: just written
		{"d", []int{inCache, inCache}}, // c just written; bias is 4 KiB, stays warm
		{"e", []int{inDRAM, inCache}},  // a: 44 MiB written since
	} {
		if got := cold[n[tc.node]]; !slices.Equal(got, tc.want) {
			t.Errorf("node %s: levels %v, want %v", tc.node, got, tc.want)
		}
	}
	// A view reads nothing: a Reshape of a far-away value is not cold.
	shape := g.AddParam("shape", ir.TensorOf(ir.Int64, 1), ir.Int64Tensor([]int64{1}, -1))
	rs := g.NewNode("Reshape", "", []*ir.Value{n["a"].Outputs[0], shape}, []string{"flat"})
	rs.Outputs[0].Type = ir.TensorOf(ir.Float32, 1024*1024)
	g.AddOutput(rs.Outputs[0])
	if got := coldInputs(g)[rs]; !slices.Equal(got, []int{inCache, inCache}) {
		t.Errorf("Reshape at the end: levels %v, want all in cache", got)
	}
	if evictFor(inCache) != 0 || evictFor(inL3) < l2Bytes || evictFor(inDRAM) < l3Bytes {
		t.Errorf("evictFor: %d, %d, %d", evictFor(inCache), evictFor(inL3), evictFor(inDRAM))
	}
}

func TestSingleNode(t *testing.T) {
	g := ir.NewGraph("conv")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 8, 16, 16))
	w := g.AddParam("w", ir.TensorOf(ir.Float32, 64, 8, 3, 3), ir.Float32Tensor([]int64{64, 8, 3, 3}, make([]float32, 64*8*9)...))
	b := g.AddParam("b", ir.TensorOf(ir.Float32, 64), ir.Float32Tensor([]int64{64}, make([]float32, 64)...))
	conv := g.NewNode("Conv", "", []*ir.Value{x, w, b}, []string{"y"})
	conv.Name = "conv"
	conv.SetAttr(ir.IntsAttr("pads", 1, 1, 1, 1))
	relu := g.NewNode("Relu", "", []*ir.Value{conv.Outputs[0]}, []string{"z"})
	g.AddOutput(relu.Outputs[0])
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	m, err := profiles.NewMeasured(conv)
	if err != nil {
		t.Fatal(err)
	}
	xt, _ := ort.RandomTensor("float", []int64{1, 8, 16, 16}, 1)
	pm := &preparedModel{graph: g, inputs: map[string]ort.Tensor{"x": xt}}
	e := &sigEntry{key: measuredKey(m), m: m, node: conv, model: pm, cold: []int{inCache, inDRAM, inCache}}

	// Plain: the weights are initializers, the output a graph output.
	sg, inputs, cold, err := singleNode(e, nil, 1, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(sg.Inputs) != 1 || len(sg.Params) != 2 || len(cold) != 0 || len(sg.Outputs) != 1 || sg.Outputs[0].Def.Op != "Conv" {
		t.Errorf("plain: %d inputs, %d params, cold %v, outputs %v", len(sg.Inputs), len(sg.Params), cold, sg.Outputs)
	}
	if got := inputs["in0"]; !got.Equal(xt) {
		t.Errorf("the model's own input value was not passed on")
	}
	if pads, _ := sg.Nodes[0].AttrInts("pads"); !slices.Equal(pads, []int64{1, 1, 1, 1}) {
		t.Errorf("attributes not copied: pads %v", pads)
	}

	// Timed: the cold weight is a graph input listed as cold; the output
	// is read by a one-element Slice.
	sg, inputs, cold, err = singleNode(e, nil, 1, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cold, []string{"in1"}) || len(sg.Params) != 1+3 || inputs["in1"].NumElements() != 64*8*9 {
		t.Errorf("timed: cold %v, %d params (want the bias and the Slice's starts, ends, axes)", cold, len(sg.Params))
	}
	if len(sg.Outputs) != 1 || sg.Outputs[0].Def.Op != "Slice" || sg.Outputs[0].Type.String() != "f32[1,1,1,1]" {
		t.Errorf("timed output %v (%v), want a one-element Slice", sg.Outputs, sg.Outputs[0].Type)
	}
	if err := ir.Verify(sg); err != nil {
		t.Errorf("the single-node graph fails Verify: %v", err)
	}

	// The Relu writes the model's output: it stays a graph output, which
	// ONNX Runtime allocates afresh on every run, as in the model.
	mr, _ := profiles.NewMeasured(relu)
	er := &sigEntry{key: measuredKey(mr), m: mr, node: relu, model: pm, cold: []int{inCache}}
	sg, _, _, err = singleNode(er, nil, 1, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(sg.Outputs) != 1 || sg.Outputs[0].Def.Op != "Relu" {
		t.Errorf("the model's output became %v", sg.Outputs)
	}
}

func TestDerivedShape(t *testing.T) {
	g := ir.NewGraph("d")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 2, 3))
	s := g.AddInput("s", ir.TensorOf(ir.Int64, 2))
	tile := g.NewNode("Tile", "", []*ir.Value{x, s}, []string{"y"})
	tile.Outputs[0].Type = ir.TensorOf(ir.Float32, 4, 9)
	got, ok := derivedShape(tile, 1, []int64{2})
	vals, _ := got.Int64s()
	if !ok || !slices.Equal(vals, []int64{2, 3}) {
		t.Errorf("Tile repeats %v (%v), want [2 3]", vals, ok)
	}
	rs := g.NewNode("Reshape", "", []*ir.Value{x, s}, []string{"z"})
	rs.Outputs[0].Type = ir.TensorOf(ir.Float32, 3, 2)
	got, ok = derivedShape(rs, 1, []int64{2})
	vals, _ = got.Int64s()
	if !ok || !slices.Equal(vals, []int64{3, 2}) {
		t.Errorf("Reshape shape %v (%v), want [3 2]", vals, ok)
	}
	if _, ok := derivedShape(rs, 0, []int64{2, 3}); ok {
		t.Errorf("Reshape's data input got a derived value")
	}
}

// ifModel writes a model with a Constant, an If whose branches are Neg
// and Sigmoid, and a Conv, all over a Relu.
func ifModel(t *testing.T) string {
	t.Helper()
	g := ir.NewGraph("ifmodel")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 8, 16, 16))
	cond := g.AddInput("cond", ir.TensorOf(ir.Bool))
	relu := g.NewNode("Relu", "", []*ir.Value{x}, []string{"r"})
	relu.Name = "relu"
	r := relu.Outputs[0]
	c := g.NewNode("Constant", "", nil, []string{"shape"})
	c.Name = "shape_const"
	c.SetAttr(ir.TensorAttr("value", ir.Int64Tensor([]int64{3}, 1, 8, 256)))
	rs := g.NewNode("Reshape", "", []*ir.Value{r, c.Outputs[0]}, []string{"flat"})
	rs.Name = "reshape"
	ifn := g.NewNode("If", "", []*ir.Value{cond}, []string{"branch"})
	ifn.Name = "if"
	for _, br := range []struct{ name, op string }{{"then_branch", "Neg"}, {"else_branch", "Sigmoid"}} {
		sg := g.NewSubgraph(br.name)
		ifn.SetAttr(ir.GraphAttr(br.name, sg))
		sg.Capture(r)
		m := sg.NewNode(br.op, "", []*ir.Value{r}, []string{br.name + "_out"})
		m.Name = br.name + "_" + br.op
		sg.AddOutput(m.Outputs[0])
	}
	w := g.AddParam("w", ir.TensorOf(ir.Float32, 8, 8, 3, 3), ir.Float32Tensor([]int64{8, 8, 3, 3}, make([]float32, 8*8*9)...))
	conv := g.NewNode("Conv", "", []*ir.Value{r, w}, []string{"y"})
	conv.Name = "conv"
	conv.SetAttr(ir.IntsAttr("pads", 1, 1, 1, 1))
	g.AddOutput(rs.Outputs[0])
	g.AddOutput(ifn.Outputs[0])
	g.AddOutput(conv.Outputs[0])
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ifmodel.onnx")
	if err := onnxexp.ExportFile(g, p, onnxexp.Options{}); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfileCommand(t *testing.T) {
	needORT(t)
	model := ifModel(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "dev.yaml")
	code, stdout, stderr := run(t, "profile", "-repeat", "3", "-warmup", "1", "-name", "testcpu", "-o", out, model)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"(device testcpu, 5 measured entries)",
		"measured: 5 signatures covering 5 of 7 nodes",
		"1 nodes: Constant: ONNX Runtime turns it into an initializer",
		"1 nodes: If: control flow, its body nodes are measured one by one",
		"fitted roofline:",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	p, err := profiles.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, m := range p.Measured {
		ops = append(ops, m.Op)
		if !(m.Seconds > 0) || m.Repeats != 3 {
			t.Errorf("entry %s: %g s over %d runs", m.Op, m.Seconds, m.Repeats)
		}
	}
	slices.Sort(ops)
	if want := []string{"Conv", "Neg", "Relu", "Reshape", "Sigmoid"}; !slices.Equal(ops, want) {
		t.Errorf("measured ops %v, want %v (the branches' nodes, not If and Constant)", ops, want)
	}
	if p.Fitted == nil || !strings.Contains(p.Fitted.Source, "remat-compile profile") || p.Device.Name != "testcpu" {
		t.Errorf("fitted %+v, device %q", p.Fitted, p.Device.Name)
	}
	if base, _ := profiles.Load(defaultProfileBase); p.Device.MemoryBytes != base.Device.MemoryBytes {
		t.Errorf("the datasheet section does not come from %s", defaultProfileBase)
	}

	// inspect -profile: every node that runs costs as measured, the If
	// as its bodies plus the fitted overhead.
	code, stdout, stderr = run(t, "inspect", "-profile", out, "-json", model)
	if code != exitOK {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var rep pipeline.Inspection
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Costs
	if c == nil || c.ConstantNodes != 1 || len(c.Nodes) != 4 {
		t.Fatalf("costs %+v", c)
	}
	var sum float64
	for _, n := range c.Nodes {
		sum += n.Seconds
		want := profiles.SourceMeasured
		if n.Op == "If" {
			want = profiles.SourceFitted
		}
		if n.Source != want {
			t.Errorf("node %s (%s): source %s, want %s", n.Node, n.Op, n.Source, want)
		}
	}
	if c.Sources["measured"].Nodes != 3 || c.Sources["fitted"].Nodes != 1 || sum != c.PredictedSeconds {
		t.Errorf("totals %+v, predicted %g, sum %g", c.Sources, c.PredictedSeconds, sum)
	}

	// Merging: a second run on another model keeps the first's entries.
	out2 := filepath.Join(dir, "dev2.yaml")
	code, stdout, stderr = run(t, "profile", "-repeat", "3", "-warmup", "1", "-base", out, "-o", out2, "zoo:lstm")
	if code != exitOK {
		t.Fatalf("merge: exit %d: %s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "base: 5 measured entries of "+out+" kept, 0 measured again") {
		t.Errorf("merge summary:\n%s", stdout)
	}
	q, err := profiles.Load(out2)
	if err != nil {
		t.Fatal(err)
	}
	if q.Device.Name != "testcpu" || len(q.Measured) <= 5 {
		t.Errorf("merged profile: device %q, %d entries", q.Device.Name, len(q.Measured))
	}
}

func TestInspectProfileErrors(t *testing.T) {
	code, _, stderr := run(t, "inspect", "-profile", "tpu-v9", unetModel)
	if code != exitFailure || !strings.Contains(stderr, `unknown profile "tpu-v9"`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// The text form names the sources.
	code, stdout, stderr := run(t, "inspect", "-profile", "v100-16gb", unetModel)
	if code != exitOK || !strings.Contains(stdout, "predicted time on v100-16gb") || !strings.Contains(stdout, "datasheet") {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
}

func TestProgressBar(t *testing.T) {
	var off, on strings.Builder
	for _, tc := range []struct {
		w   *strings.Builder
		tty bool
	}{{&off, false}, {&on, true}} {
		b := newProgressBar(&Streams{Err: tc.w, ErrTTY: tc.tty}, "profile", 4)
		b.update(0, "Conv [1,3,8,8]")
		b.update(4, "")
		b.done()
	}
	if off.Len() != 0 {
		t.Errorf("a progress bar off a terminal: %q", off.String())
	}
	if s := on.String(); !strings.Contains(s, "profile [..............................] 0/4 Conv [1,3,8,8]") ||
		!strings.Contains(s, "profile [##############################] 4/4") || !strings.HasSuffix(s, "\r\033[K") {
		t.Errorf("progress bar: %q", s)
	}
}
