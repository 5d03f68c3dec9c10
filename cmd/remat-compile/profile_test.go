package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/profiles/measure"
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
	testmodels.RequireORT(t)
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
	if base, _ := profiles.Load(measure.DefaultBase); p.Device.MemoryBytes != base.Device.MemoryBytes {
		t.Errorf("the datasheet section does not come from %s", measure.DefaultBase)
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
