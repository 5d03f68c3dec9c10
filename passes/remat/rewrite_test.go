package remat_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkpointall"
	"github.com/remat-compile/remat/passes/shapes"
)

// uText is a U-Net-like graph: encoders e1, e2, e3, a bottleneck b, and
// decoders that add the skips back in reverse order. A Constant shape sits
// in the middle of the node list.
const uText = `graph u {
  opset 17
  input x:f32[1,2,4,4]
  param w = f32[2,2,1,1]{0.5, ...}
  e1:f32[1,2,4,4] = Conv(x, w) name="enc1"
  e2:f32[1,2,4,4] = Conv(e1, w) name="enc2"
  e3:f32[1,2,4,4] = Conv(e2, w) name="enc3"
  b:f32[1,2,4,4] = Conv(e3, w) name="bott"
  s3:f32[1,2,4,4] = Add(b, e3) name="dec3_add"
  d3:f32[1,2,4,4] = Conv(s3, w) name="dec3"
  s2:f32[1,2,4,4] = Add(d3, e2) name="dec2_add"
  d2:f32[1,2,4,4] = Conv(s2, w) name="dec2"
  sh:i64[4] = Constant() {value=i64[4]{1, 2, 4, 4}} name="shape"
  s1:f32[1,2,4,4] = Add(d2, e1) name="dec1_add"
  r:f32[1,2,4,4] = Reshape(s1, sh) name="reshape"
  y:f32[1,2,4,4] = Conv(r, w) name="out"
  return y
}`

// stagesWith returns the identity stages of p (checkpoint-all) plus, for
// each named stage, the named nodes it recomputes.
func stagesWith(t *testing.T, p *remat.Problem, recompute map[string][]string) [][]int32 {
	t.Helper()
	idx := func(name string) int32 {
		i := slices.Index(p.Names, name)
		if i < 0 {
			t.Fatalf("no node %q in %v", name, p.Names)
		}
		return int32(i)
	}
	stages := make([][]int32, p.N())
	for s := range stages {
		stages[s] = []int32{int32(s)}
	}
	for stage, names := range recompute {
		st := idx(stage)
		for _, n := range names {
			stages[st] = append(stages[st], idx(n))
		}
	}
	return stages
}

// rewrite lowers g, schedules the stages, checks the plan and rewrites g.
func rewrite(t *testing.T, g *ir.Graph, recompute map[string][]string) (*remat.RewriteResult, remat.CheckResult) {
	t.Helper()
	p, m, err := remat.Lower(g, unitCost, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := remat.ScheduleStages(p, stagesWith(t, p, recompute))
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Check(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := remat.Rewrite(g, m, plan)
	if err != nil {
		t.Fatal(err)
	}
	return rw, res
}

func TestRewriteCheckpointAllIsIdentity(t *testing.T) {
	for _, src := range []string{uText, segText, attnText, unetText} {
		g := parse(t, src)
		before := irtext.Format(g)
		p, m, err := remat.Lower(g, unitCost, remat.LowerOptions{})
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
		if len(rw.Recomputes) != 0 || rw.Graph != g {
			t.Errorf("%s: %d recomputes", g.Name, len(rw.Recomputes))
		}
		if after := irtext.Format(g); after != before {
			t.Errorf("%s: checkpoint-all changed the graph:\n%s", g.Name, after)
		}
	}
}

func TestRewriteU(t *testing.T) {
	g := parse(t, uText)
	// Stage dec2_add recomputes enc1 and enc2: e2 is read right away, e1
	// is kept for dec1_add.
	rw, res := rewrite(t, g, map[string][]string{"dec2_add": {"enc1", "enc2"}})
	want := `graph u {
  opset 17
  input x:f32[1,2,4,4]
  param w = f32[2,2,1,1]{0.5, 0.5, 0.5, 0.5}
  e1:f32[1,2,4,4] = Conv(x, w) name="enc1"
  e2:f32[1,2,4,4] = Conv(e1, w) name="enc2"
  e3:f32[1,2,4,4] = Conv(e2, w) name="enc3"
  b:f32[1,2,4,4] = Conv(e3, w) name="bott"
  s3:f32[1,2,4,4] = Add(b, e3) name="dec3_add"
  d3:f32[1,2,4,4] = Conv(s3, w) name="dec3"
  e1_rc1:f32[1,2,4,4] = Conv(x, w) name="enc1_rc1"
  e2_rc1:f32[1,2,4,4] = Conv(e1_rc1, w) name="enc2_rc1"
  s2:f32[1,2,4,4] = Add(d3, e2_rc1) name="dec2_add"
  d2:f32[1,2,4,4] = Conv(s2, w) name="dec2"
  sh:i64[4] = Constant() {value=i64[4]{1, 2, 4, 4}} name="shape"
  s1:f32[1,2,4,4] = Add(d2, e1_rc1) name="dec1_add"
  r:f32[1,2,4,4] = Reshape(s1, sh) name="reshape"
  y:f32[1,2,4,4] = Conv(r, w) name="out"
  return y
}
`
	if got := irtext.Format(g); got != want {
		t.Errorf("rewritten graph:\n%s\nwant:\n%s", got, want)
	}
	type entry struct{ node, orig, after, before string }
	var got []entry
	for _, rc := range rw.Recomputes {
		got = append(got, entry{rc.Node.Name, rc.Original.Name, rc.After.Name, rc.Before.Name})
	}
	wantRC := []entry{{"enc1_rc1", "enc1", "dec3", "enc2_rc1"}, {"enc2_rc1", "enc2", "dec3", "dec2_add"}}
	if !slices.Equal(got, wantRC) {
		t.Errorf("recomputes %v, want %v", got, wantRC)
	}
	if ch := rw.Chains(); len(ch) != 1 || len(ch[0]) != 2 {
		t.Errorf("chains %v, want one of two", ch)
	}
	// 4×4×2 f32 = 128 B per activation: the original holds e1, e2, e3, b
	// and s3 at dec3_add (640 B); the plan one less.
	sim, err := memory.Simulate(g, g.Nodes, remat.LowerOptions{}.Memory())
	if err != nil {
		t.Fatal(err)
	}
	if sim.PeakBytes != res.PeakBytes || res.PeakBytes != 4*128 {
		t.Errorf("peak: Simulate %d, Check %d, want 512", sim.PeakBytes, res.PeakBytes)
	}
}

// TestRewriteOutputKeepsName recomputes a graph output after its first
// computation: the duplicate produces the output under its name.
func TestRewriteOutputKeepsName(t *testing.T) {
	g := parse(t, strings.Replace(uText, "return y", "return y, e1", 1))
	rw, _ := rewrite(t, g, map[string][]string{"out": {"enc1"}})
	if len(rw.Recomputes) != 1 {
		t.Fatalf("%d recomputes", len(rw.Recomputes))
	}
	rc := rw.Recomputes[0]
	if rc.Node.Name != "enc1_rc1" || rc.After.Name != "reshape" || rc.Before != nil {
		t.Errorf("recompute %s after %v before %v", rc.Node.Name, rc.After, rc.Before)
	}
	if out := g.Outputs[1]; out != rc.Node.Outputs[0] || out.Name != "e1" || rc.Original.Outputs[0].Name != "e1_rc1" {
		t.Errorf("output 1 is %q of %s; the original's output is %q", out.Name, out.Def, rc.Original.Outputs[0].Name)
	}
	if g.Nodes[len(g.Nodes)-2] != rc.Node || g.Nodes[len(g.Nodes)-1].Name != "out" {
		t.Errorf("the duplicate is not right before out")
	}
	// The readers of the first instance still read it.
	if e2 := g.Nodes[1]; e2.Name != "enc2" || e2.Inputs[0] != rc.Original.Outputs[0] {
		t.Errorf("enc2 reads %v", e2.Inputs[0])
	}
}

func TestRewriteRefuses(t *testing.T) {
	g := parse(t, segText)
	p, m, err := remat.Lower(g, unitCost, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A plan that recomputes the Dropout (ScheduleStages refuses it, so
	// build the ops by hand from a legal plan).
	plan, err := remat.ScheduleStages(p, stagesWith(t, p, nil))
	if err != nil {
		t.Fatal(err)
	}
	drop := int32(slices.Index(p.Names, "drop"))
	bad := *plan
	bad.Ops = append(slices.Clone(plan.Ops), remat.Op{Kind: remat.OpCompute, Stage: int32(p.N() - 1), Node: drop})
	if _, err := remat.Rewrite(g, m, &bad); err == nil || !strings.Contains(err.Error(), "not recomputable") {
		t.Errorf("recomputing Dropout: %v", err)
	}
	// Another graph's mapping.
	if _, err := remat.Rewrite(parse(t, segText), m, plan); err == nil || !strings.Contains(err.Error(), "lowered from graph") {
		t.Errorf("foreign mapping: %v", err)
	}
	// Reading a value before computing it.
	bad = *plan
	bad.Ops = slices.DeleteFunc(slices.Clone(plan.Ops), func(o remat.Op) bool { return o.Kind == remat.OpCompute && o.Node == 0 })
	bad.Ops = append(bad.Ops, remat.Op{Kind: remat.OpCompute, Stage: int32(p.N() - 1), Node: 0})
	before := irtext.Format(g)
	if _, err := remat.Rewrite(g, m, &bad); err == nil || !strings.Contains(err.Error(), "before the plan computes it") {
		t.Errorf("reading before computing: %v", err)
	}
	if irtext.Format(g) != before {
		t.Errorf("a refused plan changed the graph")
	}
}

// recomputableStages is randomStages without control flow, which Rewrite
// does not duplicate.
func recomputableStages(p *remat.Problem, m *remat.Mapping, r *rand.Rand, q float64) [][]int32 {
	stages := randomStages(p, r, q)
	for t, st := range stages {
		stages[t] = slices.DeleteFunc(st, func(i int32) bool {
			return int(i) != t && len(m.Nodes[i].Subgraphs()) > 0
		})
	}
	return stages
}

// assertRewriteMemory rewrites fresh copies of a graph for random plans
// and compares the rewritten graph's memory, in its node order, with
// Check's.
func assertRewriteMemory(t *testing.T, build func() *ir.Graph, opts remat.LowerOptions, plans int) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, uint64(plans)))
	for k := range plans {
		g := build()
		p, m, err := remat.Lower(g, unitCost, opts)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := remat.ScheduleStages(p, recomputableStages(p, m, r, []float64{0, 0.05, 0.2, 0.5}[k%4]))
		if err != nil {
			t.Fatal(err)
		}
		res, err := remat.Check(p, plan)
		if err != nil {
			t.Fatal(err)
		}
		rw, err := remat.Rewrite(g, m, plan)
		if err != nil {
			t.Fatalf("plan %d: %v", k, err)
		}
		if got, want := len(rw.Recomputes), res.Recomputations; got != want {
			t.Errorf("plan %d: %d recomputes, Check counts %d", k, got, want)
		}
		sim, err := memory.Simulate(g, g.Nodes, opts.Memory())
		if err != nil {
			t.Fatal(err)
		}
		if sim.PeakBytes != res.PeakBytes {
			t.Fatalf("plan %d: rewritten graph peaks at %d bytes, Check %d", k, sim.PeakBytes, res.PeakBytes)
		}
		// The rewritten graph lowers to a problem whose identity plan is
		// the same computation.
		p2, _, err := remat.Lower(g, unitCost, opts)
		if err != nil {
			t.Fatal(err)
		}
		if p2.N() != len(plan.Sequence()) {
			t.Errorf("plan %d: the rewritten graph has %d nodes in the problem, the plan %d computations", k, p2.N(), len(plan.Sequence()))
		}
		for _, rc := range rw.Recomputes {
			if rc.Node.Op != rc.Original.Op || !strings.HasPrefix(rc.Node.Name, rc.Original.Name+"_rc") {
				t.Errorf("plan %d: recompute %s of %s", k, rc.Node.Name, rc.Original.Name)
			}
		}
	}
}

func TestRewriteMemoryEqualsCheck(t *testing.T) {
	for _, tt := range []struct{ name, src string }{
		{"u", uText}, {"seg", segText}, {"attn", attnText}, {"unet", unetText},
	} {
		for _, o := range lowerOptionSets {
			t.Run(fmt.Sprintf("%s/%+v", tt.name, o), func(t *testing.T) {
				assertRewriteMemory(t, func() *ir.Graph { return parse(t, tt.src) }, o, 24)
			})
		}
	}
	for _, model := range zoo.Models() {
		t.Run(model.Name, func(t *testing.T) {
			build := func() *ir.Graph {
				g, err := model.Build(model.Small)
				if err != nil {
					t.Fatal(err)
				}
				if err := shapes.Infer(g, shapes.Options{}); err != nil {
					t.Fatal(err)
				}
				return g
			}
			plans := 4
			if testing.Short() {
				plans = 2
			}
			assertRewriteMemory(t, build, remat.LowerOptions{}, plans)
		})
	}
}

// TestRewriteRefusesCapturedDuplicate: an If whose branch reads a value
// the plan has recomputed before it would have to read the duplicate
// inside its subgraph; Rewrite refuses and leaves the graph alone.
func TestRewriteRefusesCapturedDuplicate(t *testing.T) {
	g := parse(t, `graph c {
  opset 17
  input x:f32[4]
  input cond:bool[]
  a:f32[4] = Relu(x) name="a"
  b:f32[4] = Neg(a) name="b"
  z:f32[4] = If(cond) {
    then_branch=graph then {
      t:f32[4] = Neg(a)
      return t
    },
    else_branch=graph else {
      return a
    },
  } name="if"
  y:f32[4] = Add(z, b) name="y"
  return y
}`)
	before := irtext.Format(g)
	p, m, err := remat.Lower(g, unitCost, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := remat.ScheduleStages(p, stagesWith(t, p, map[string][]string{"if": {"a"}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remat.Rewrite(g, m, plan); err == nil || !strings.Contains(err.Error(), "inside its subgraphs") {
		t.Errorf("Rewrite: %v", err)
	}
	if irtext.Format(g) != before {
		t.Errorf("a refused plan changed the graph")
	}
}
