package remat_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkpointall"
	"github.com/remat-compile/remat/profiles"
)

// passUText is a U-Net-like graph of 128-byte activations: the skip e1
// is live from the first node to the last decoder, so checkpoint-all
// peaks at dec3_add with e1, e2, e3, b and s3 resident (640 B), and
// recomputing enc1 right before dec1_add brings the peak to 512 B.
const passUText = `graph u {
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
  s1:f32[1,2,4,4] = Add(d2, e1) name="dec1_add"
  y:f32[1,2,4,4] = Conv(s1, w) name="out"
  return y
}`

// fixedSolver returns a solver whose plan is checkpoint-all plus, in each
// named stage, the named recomputations.
func fixedSolver(name string, recompute map[string][]string) remat.Solver {
	return remat.Solver{Name: name, Doc: "A fixed plan, for tests.", Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
		stages := make([][]int32, p.N())
		for t := range stages {
			stages[t] = []int32{int32(t)}
		}
		for stage, names := range recompute {
			st := slices.Index(p.Names, stage)
			for _, n := range names {
				stages[st] = append(stages[st], int32(slices.Index(p.Names, n)))
			}
		}
		plan, err := remat.ScheduleStages(p, stages)
		if err != nil {
			return nil, err
		}
		plan.Solver = name
		res, err := remat.Check(p, plan)
		var ce *remat.CheckError
		if errors.As(err, &ce) && ce.Has(remat.OverBudget) {
			return nil, &remat.BudgetError{NeedBytes: res.PeakBytes, HaveBytes: p.BudgetBytes, Plan: plan}
		}
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(remat.Progress{Incumbent: res.TotalSeconds, Gap: math.Inf(1), Note: "fixed"})
		}
		return plan, nil
	}}
}

func v100(t *testing.T) *profiles.Profile {
	t.Helper()
	prof, err := profiles.Load("v100-16gb")
	if err != nil {
		t.Fatal(err)
	}
	return prof
}

// runPass runs the remat pass on a fresh copy of passUText.
func runPass(t *testing.T, opts remat.Options) (*ir.Graph, *remat.Result, bool, error) {
	t.Helper()
	g := parse(t, passUText)
	res := &remat.Result{}
	opts.Result = res
	if opts.Profile == nil {
		opts.Profile = v100(t)
	}
	changed := false
	pass := remat.NewPass(opts)
	run := pass.Run
	pass.Run = func(st *passes.State, g *ir.Graph) (bool, error) {
		c, err := run(st, g)
		changed = c
		return c, err
	}
	_, err := passes.Run(context.Background(), g, []*passes.Pass{pass}, passes.Options{Verify: true})
	return g, res, changed, err
}

func TestPassRecompute(t *testing.T) {
	var reports []remat.Progress
	g, res, changed, err := runPass(t, remat.Options{
		Solver:   fixedSolver("fixed", map[string][]string{"dec1_add": {"enc1"}}),
		Budget:   remat.BudgetBytes(512),
		Progress: func(p remat.Progress) { reports = append(reports, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Error("the pass reports no change, but it added a recomputation")
	}
	if res.BeforePeakBytes != 640 || res.AfterPeakBytes != 512 || res.BudgetBytes != 512 {
		t.Errorf("peaks %d → %d, budget %d; want 640 → 512 within 512", res.BeforePeakBytes, res.AfterPeakBytes, res.BudgetBytes)
	}
	if res.Recomputations != 1 || res.RecomputedNodes != 1 || res.Solver != "fixed" || res.PlanSolver != "fixed" {
		t.Errorf("recomputations %d, nodes %d, solver %q/%q; want 1, 1, fixed", res.Recomputations, res.RecomputedNodes, res.Solver, res.PlanSolver)
	}
	enc1 := res.Decisions[0]
	if enc1.Node.Name != "enc1" || enc1.Computations != 2 || !enc1.Recomputed() {
		t.Errorf("decision 0: %s computed %d times; want enc1 twice", enc1.Node.Name, enc1.Computations)
	}
	// The reason names the stretch the value would be kept over and that
	// keeping it breaks the budget.
	for _, want := range []string{"recomputed at step 8 for dec1_add", "keeping it from step 1 (read by enc2)", "over the budget of 512 B"} {
		if !strings.Contains(enc1.Why, want) {
			t.Errorf("enc1: Why = %q, want it to contain %q", enc1.Why, want)
		}
	}
	if d := res.Decisions[1]; d.Computations != 1 || !strings.HasPrefix(d.Why, "kept:") {
		t.Errorf("enc2: computed %d times, %q; want kept", d.Computations, d.Why)
	}
	if want := enc1.Seconds; math.Abs(res.OverheadSeconds-want) > 1e-15 || res.PlanSeconds <= res.BaseSeconds {
		t.Errorf("overhead %v s, want enc1's cost %v", res.OverheadSeconds, want)
	}
	if want := 100 * res.OverheadSeconds / res.BaseSeconds; math.Abs(res.OverheadPercent-want) > 1e-9 {
		t.Errorf("overhead %v%%, want %v%%", res.OverheadPercent, want)
	}
	if res.CostSources[profiles.SourceDatasheet] != 10 {
		t.Errorf("cost sources %v; want 10 datasheet", res.CostSources)
	}
	if len(reports) == 0 || reports[0].Note != "fixed" {
		t.Errorf("progress %v; want the solver's report passed on", reports)
	}
	// The graph is rewritten: the duplicate runs, and the memory model on
	// its file order gives the plan's peak.
	if res.Rewrite == nil || len(res.Rewrite.Recomputes) != 1 || res.Rewrite.Recomputes[0].Original.Name != "enc1" {
		t.Fatalf("Rewrite %+v; want one recomputation of enc1", res.Rewrite)
	}
	if len(g.Nodes) != 11 || !slices.ContainsFunc(g.Nodes, func(n *ir.Node) bool { return n.Name == "enc1_rc1" }) {
		t.Errorf("rewritten graph has %d nodes; want 11 with enc1_rc1", len(g.Nodes))
	}
	sim, err := memory.Simulate(g, g.Nodes, remat.LowerOptions{}.Memory())
	if err != nil || sim.PeakBytes != res.AfterPeakBytes {
		t.Errorf("memory.Simulate of the rewritten graph: %d, %v; want the plan's peak %d", sim.PeakBytes, err, res.AfterPeakBytes)
	}
}

func TestPassFractionBudget(t *testing.T) {
	_, res, changed, err := runPass(t, remat.Options{Solver: checkpointall.Solver, Budget: remat.BudgetFraction(1)})
	if err != nil {
		t.Fatal(err)
	}
	if changed || res.BudgetBytes != 640 || res.AfterPeakBytes != 640 || !res.Optimal || res.Gap != 0 || res.Recomputations != 0 {
		t.Errorf("changed %v, budget %d, peak %d, optimal %v, gap %v; want no change at 100%% = 640 B, optimal", changed, res.BudgetBytes, res.AfterPeakBytes, res.Optimal, res.Gap)
	}
	for _, d := range res.Decisions {
		if d.Computations != 1 || !strings.HasPrefix(d.Why, "kept:") {
			t.Errorf("%s: computed %d times, %q", d.Node.Name, d.Computations, d.Why)
		}
	}
}

func TestPassDefaultBudget(t *testing.T) {
	prof := v100(t)
	_, res, _, err := runPass(t, remat.Options{Solver: checkpointall.Solver, Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	// The input (128 B) and the weight (16 B) stay resident beside the
	// activations.
	if want := prof.MemoryBytes() - 128 - 16; res.BudgetBytes != want {
		t.Errorf("default budget %d, want the capacity less inputs and parameters, %d", res.BudgetBytes, want)
	}
}

func TestBudgetResolve(t *testing.T) {
	for _, tt := range []struct {
		b                        remat.Budget
		peak, capacity, resident int64
		want                     int64
		err                      string
	}{
		{remat.BudgetBytes(1000), 640, 0, 0, 1000, ""},
		{remat.BudgetFraction(0.8), 640, 0, 0, 512, ""},
		{remat.BudgetFraction(0.7), 1001, 0, 0, 700, ""}, // rounded down
		{remat.BudgetFraction(2), 640, 0, 0, 1280, ""},
		{remat.Budget{}, 640, 1 << 20, 1000, 1<<20 - 1000, ""},
		{remat.Budget{}, 640, 0, 0, 0, "no budget"},
		{remat.Budget{}, 640, 1000, 1000, 0, "do not fit the device's memory"},
		{remat.BudgetFraction(math.Inf(1)), 640, 0, 0, 0, "not a number"},
	} {
		got, err := tt.b.Resolve(tt.peak, tt.capacity, tt.resident)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%v.Resolve(%d, %d, %d) = %d, %v; want an error containing %q", tt.b, tt.peak, tt.capacity, tt.resident, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%v.Resolve(%d, %d, %d) = %d, %v; want %d", tt.b, tt.peak, tt.capacity, tt.resident, got, err, tt.want)
		}
	}
	if s := remat.BudgetFraction(0.725).String(); s != "72.5%" {
		t.Errorf("String = %q, want 72.5%%", s)
	}
}

func TestPassInfeasible(t *testing.T) {
	g, res, _, err := runPass(t, remat.Options{Solver: checkpointall.Solver, Budget: remat.BudgetFraction(0.5)})
	var be *remat.BudgetError
	var ie *remat.InfeasibleBudgetError
	if !errors.As(err, &be) || !errors.As(err, &ie) {
		t.Fatalf("err = %v; want an *InfeasibleBudgetError wrapping a *BudgetError", err)
	}
	if be.NeedBytes != 640 || be.HaveBytes != 320 || ie.By != "checkpoint-all" || ie.NoRematPeakBytes != 640 {
		t.Errorf("need %d, have %d, by %q, peak %d; want 640, 320, checkpoint-all, 640", be.NeedBytes, be.HaveBytes, ie.By, ie.NoRematPeakBytes)
	}
	want := "budget 50% of the no-remat peak (320 B) is below the smallest peak checkpoint-all reached, 640 B"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	if len(g.Nodes) != 10 || res.Problem == nil || res.Problem.BudgetBytes != 320 {
		t.Errorf("graph %d nodes, problem %v; want the graph unchanged and the problem kept", len(g.Nodes), res.Problem)
	}
}

// TestPassPortfolio checks the trace: attempts and the chosen solver
// reach the Result, and an infeasible budget names each solver's peak.
func TestPassPortfolio(t *testing.T) {
	portfolio := func(fail bool) remat.Solver {
		return remat.Solver{Name: "port", Doc: "A portfolio, for tests.", Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
			tr := remat.ContextTrace(ctx)
			tr.ReportAttempt(remat.Attempt{Solver: "a", Status: "over-budget", PeakBytes: 640})
			tr.ReportAttempt(remat.Attempt{Solver: "b", Status: "over-budget", PeakBytes: 512})
			tr.ReportAttempt(remat.Attempt{Solver: "c", Status: "unavailable"})
			if fail {
				return nil, &remat.BudgetError{NeedBytes: 512, HaveBytes: p.BudgetBytes}
			}
			plan, err := fixedSolver("b", map[string][]string{"dec1_add": {"enc1"}}).Solve(ctx, p, nil)
			if plan != nil {
				plan.Solver = "port"
			}
			tr.ReportChosen("b")
			return plan, err
		}}
	}
	_, res, _, err := runPass(t, remat.Options{Solver: portfolio(false), Budget: remat.BudgetBytes(600)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Solver != "port" || res.PlanSolver != "b" || len(res.Attempts) != 3 {
		t.Errorf("solver %q, plan by %q, %d attempts; want port, b, 3", res.Solver, res.PlanSolver, len(res.Attempts))
	}
	_, _, _, err = runPass(t, remat.Options{Solver: portfolio(true), Budget: remat.BudgetBytes(400)})
	var ie *remat.InfeasibleBudgetError
	if !errors.As(err, &ie) || ie.By != "b" {
		t.Fatalf("err = %v; want an *InfeasibleBudgetError by b", err)
	}
	for _, want := range []string{"budget 400 B is below the smallest peak any solver reached, 512 B (b)", "per solver: a 640 B, b 512 B, c unavailable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to contain %q", err, want)
		}
	}
}

func TestPassErrors(t *testing.T) {
	overBudget := remat.Solver{Name: "liar", Doc: "Returns a plan over the budget.", Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
		stages := make([][]int32, p.N())
		for t := range stages {
			stages[t] = []int32{int32(t)}
		}
		return remat.ScheduleStages(p, stages)
	}}
	slow := remat.Solver{Name: "slow", Doc: "Waits for its deadline.", Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	for _, tt := range []struct {
		name     string
		opts     remat.Options
		internal bool
		want     string
	}{
		{"no solver", remat.Options{}, false, "no solver"},
		{"plan fails Check", remat.Options{Solver: overBudget, Budget: remat.BudgetBytes(100)}, true, "solver liar returned a plan that fails Check"},
		{"time limit", remat.Options{Solver: slow, TimeLimit: 10 * time.Millisecond}, false, "solver slow found no plan within the time limit of 10ms"},
	} {
		_, _, _, err := runPass(t, tt.opts)
		if err == nil || passes.IsInternal(err) != tt.internal || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v (internal %v); want %q, internal %v", tt.name, err, passes.IsInternal(err), tt.want, tt.internal)
		}
	}
}

// TestPassReuseFloor checks the refusal of a budget below the floor under
// the planner's buffer reuse (Problem.ReuseFloor) but above the largest
// working set: viewText under Reuse holds 1 KiB at some step whatever the
// plan, where no node's working set exceeds 768 B.
func TestPassReuseFloor(t *testing.T) {
	g := parse(t, viewText)
	res := &remat.Result{}
	solver := checkpointall.Solver
	solver.TargetAware = true // lowered under Reuse
	opts := remat.Options{Solver: solver, Budget: remat.BudgetBytes(900), Memory: remat.LowerOptions{Reuse: true}, Result: res, Profile: v100(t)}
	_, err := passes.Run(context.Background(), g, []*passes.Pass{remat.NewPass(opts)}, passes.Options{Verify: true})
	var ie *remat.InfeasibleBudgetError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v; want an *InfeasibleBudgetError", err)
	}
	if res.FloorBytes != 768 || res.ReuseFloorBytes != 1024 || ie.ReuseFloorBytes != 1024 {
		t.Errorf("floor %d, reuse floor %d (error's %d); want 768, 1024", res.FloorBytes, res.ReuseFloorBytes, ie.ReuseFloorBytes)
	}
	want := "no plan fits the budget under the allocator's buffer reuse: at node " + ie.ReuseFloorNode + " every plan holds at least 1.00 KiB"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
}
