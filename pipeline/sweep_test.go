package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/lns"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/targets/liveness"
)

func TestParseSweep(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // SweepSpec.String, or the error's text
		n    int    // number of budgets
	}{
		{"sweep", "sweep:100-5:5", 20},
		{"sweep:100-5:5", "sweep:100-5:5", 20},
		{"sweep:90%-60%:10%", "sweep:90-60:10", 4},
		{"sweep:100-50:7.5", "sweep:100-50:7.5", 7},
		{"sweep:80-80:5", "sweep:80-80:5", 1},
		{"sweep:5-100:5", "FROM must be at least TO", 0},
		{"sweep:100-5", "want FROM-TO:STEP", 0},
		{"sweep:100-x:5", `"x" is not a positive percentage`, 0},
		{"sweep:100-0:5", `"0" is not a positive percentage`, 0},
		{"sweep:100-1:0.01", "more than 1000 budgets", 0},
		{"sweeps", "not a sweep", 0},
	} {
		sp, err := ParseSweep(tt.in)
		var oe *OptionError
		switch {
		case tt.n == 0 && (err == nil || !errors.As(err, &oe) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ParseSweep(%q) = %v, %v; want an *OptionError saying %q", tt.in, sp, err, tt.want)
		case tt.n > 0 && (err != nil || sp.String() != tt.want || len(sp.Percents()) != tt.n):
			t.Errorf("ParseSweep(%q) = %v (%d budgets), %v; want %s with %d budgets", tt.in, sp, len(sp.Percents()), err, tt.want, tt.n)
		}
	}
	if p := DefaultSweep.Percents(); p[0] != 100 || p[len(p)-1] != 5 || p[1] != 95 {
		t.Errorf("DefaultSweep.Percents() = %v", p)
	}
	if !IsSweep("sweep") || !IsSweep("sweep:1-1:1") || IsSweep("70%") {
		t.Error("IsSweep")
	}
}

// TestAddRowKeepsMonotone checks the back-fill: a tighter row cheaper
// than looser ones gives them its plan.
func TestAddRowKeepsMonotone(t *testing.T) {
	out := &SweepResult{Sweep: &report.Sweep{}}
	out.addRow(report.SweepRow{Budget: "100%", BudgetBytes: 100, PeakBytes: 100, OverheadSeconds: 0}, nil, nil)
	out.addRow(report.SweepRow{Budget: "90%", BudgetBytes: 90, PeakBytes: 88, OverheadSeconds: 3, OverheadPercent: 30, Solver: "a"}, nil, nil)
	out.addRow(report.SweepRow{Budget: "80%", BudgetBytes: 80, PeakBytes: 75, OverheadSeconds: 2, OverheadPercent: 20, Solver: "b"}, nil, nil)
	rows := out.Sweep.Rows
	if rows[0].OverheadSeconds != 0 || rows[1].OverheadSeconds != 2 || rows[1].PeakBytes != 75 || rows[1].ReusedFrom != "80%" || rows[1].Budget != "90%" || rows[1].BudgetBytes != 90 || rows[1].Solver != "b" {
		t.Errorf("rows after a cheaper tighter plan: %+v", rows)
	}
	checkMonotone(t, out.Sweep)
}

// checkMonotone checks a sweep's invariants: budgets decrease, every
// plan fits its budget, a tighter budget never costs less, and a reused
// plan is an earlier row's.
func checkMonotone(t *testing.T, sw *report.Sweep) {
	t.Helper()
	for k, r := range sw.Rows {
		if r.PeakBytes > r.BudgetBytes {
			t.Errorf("row %s: peak %d over its budget %d", r.Budget, r.PeakBytes, r.BudgetBytes)
		}
		if k == 0 {
			continue
		}
		prev := sw.Rows[k-1]
		if r.BudgetBytes >= prev.BudgetBytes {
			t.Errorf("row %s: budget %d not below %s's %d", r.Budget, r.BudgetBytes, prev.Budget, prev.BudgetBytes)
		}
		if r.OverheadSeconds < prev.OverheadSeconds {
			t.Errorf("not monotone: %s costs %.3g s, less than the looser %s's %.3g s", r.Budget, r.OverheadSeconds, prev.Budget, prev.OverheadSeconds)
		}
	}
}

// TestSweepMonotone sweeps the zoo U-Net's training graph from 100% down
// to the smallest feasible budget for the liveness target (whose peak every
// plan lowers) and checks the rows.
func TestSweepMonotone(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a dozen budgets; skipped in -short mode")
	}
	ctx := context.Background()
	m, err := Load(ctx, "zoo:unet", LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Train(ctx, autodiff.Options{}); err != nil {
		t.Fatal(err)
	}
	nodes := len(m.Graph.Nodes)
	var calls []string
	res, err := m.Sweep(ctx, SweepOptions{
		Fit:  FitOptions{Target: liveness.Target{}, TimeLimit: 2 * time.Second},
		Spec: SweepSpec{From: 100, To: 10, Step: 10},
		Progress: func(done, total int, budget string) {
			calls = append(calls, fmt.Sprintf("%d/%d %s", done, total, budget))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sw := res.Sweep
	t.Logf("rows: %+v\nstopped: %s\nprogress: %v", sw.Rows, sw.Stopped, calls)
	if len(m.Graph.Nodes) != nodes {
		t.Error("Sweep changed the model it was given")
	}
	if len(sw.Rows) < 3 || sw.Rows[0].Budget != "100%" || sw.Rows[0].OverheadSeconds != 0 || sw.Interrupted {
		t.Fatalf("sweep rows %+v", sw.Rows)
	}
	checkMonotone(t, sw)
	last := sw.Rows[len(sw.Rows)-1]
	if !strings.HasPrefix(sw.Stopped, "stopped at ") && !strings.HasPrefix(sw.Stopped, "every budget") || strings.Contains(sw.Stopped, "does not lower the peak") {
		t.Errorf("Stopped = %q", sw.Stopped)
	}
	if strings.HasPrefix(sw.Stopped, "stopped at ") && !strings.Contains(last.Budget, "the smallest peak reached") && last.ReusedFrom == "" {
		// The last percentage row may already be at the smallest peak.
		t.Logf("last row %s", last.Budget)
	}
	if res.Fit == nil || res.Fit.Remat.AfterPeakBytes != last.PeakBytes || res.Model == nil || res.Model.Graph == m.Graph {
		t.Error("the result's plan is not the last row's")
	}
	if calls[len(calls)-1] != fmt.Sprintf("%d/%d ", len(SweepSpec{From: 100, To: 10, Step: 10}.Percents()), 10) || !strings.HasPrefix(calls[0], "0/10 100%") {
		t.Errorf("progress calls %v", calls)
	}
	// Reused rows are exactly those whose looser neighbour's plan fits.
	for k := 1; k < len(sw.Rows); k++ {
		if r := sw.Rows[k]; r.ReusedFrom != "" && r.Seconds != 0 && !strings.Contains(r.Note, "cheaper") {
			t.Errorf("row %s reuses %s but took %.1f s", r.Budget, r.ReusedFrom, r.Seconds)
		}
	}
}

// interrupting is a solver that is interrupted mid-solve: it finds the
// no-remat plan, then cancels the run's context (as Ctrl-C does) and
// returns that plan as its best so far.
func interrupting(cancel context.CancelFunc) remat.Solver {
	return remat.Solver{Name: "interrupted", Doc: "Finds checkpoint-all, then is interrupted.",
		Solve: func(ctx context.Context, p *remat.Problem, _ func(remat.Progress)) (*remat.Plan, error) {
			plan, err := remat.NoRematPlan(p)
			cancel()
			<-ctx.Done()
			return plan, err
		}}
}

// TestInterruptedMidSolve cancels the context in the middle of a solve:
// Fit returns the solver's best plan, and a sweep stops with the rows so
// far, the interrupted one noted.
func TestInterruptedMidSolve(t *testing.T) {
	m, err := Load(context.Background(), "../testdata/models/unet_like.onnx", LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fit, err := m.Fit(ctx, FitOptions{Solver: interrupting(cancel), Budget: remat.BudgetFraction(1)})
	if err != nil || fit.Remat.Plan == nil || ctx.Err() == nil {
		t.Fatalf("Fit interrupted mid-solve = %v, %v; want the best plan so far", fit, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	res, err := m.Sweep(ctx, SweepOptions{Fit: FitOptions{Solver: interrupting(cancel), Target: liveness.Target{}}})
	if err != nil {
		t.Fatal(err)
	}
	sw := res.Sweep
	if !sw.Interrupted || len(sw.Rows) != 1 || !strings.HasPrefix(sw.Rows[0].Note, "interrupted") || !strings.HasPrefix(sw.Stopped, "interrupted") {
		t.Errorf("interrupted sweep: %+v", sw)
	}
	// Cancelled before it starts, a sweep solves nothing.
	res, err = m.Sweep(ctx, SweepOptions{})
	if err != nil || !res.Sweep.Interrupted || len(res.Sweep.Rows) != 0 || res.Fit != nil {
		t.Errorf("sweep with a cancelled context: %+v, %v", res, err)
	}
}

// TestSweepStopsAtTargetError: on ONNX Runtime's target with a solver
// that plans under liveness (lns, marked not remat.Solver.TargetAware),
// the U-Net training graph's plans stop lowering ORT's peak at some
// budget; the sweep stops there, with the rows before it and the last of
// them as its plan, instead of failing.
func TestSweepStopsAtTargetError(t *testing.T) {
	if testing.Short() {
		t.Skip("solves several budgets; skipped in -short mode")
	}
	// lns as a solver that is not target-aware: the pass lowers the
	// problem under plain liveness for it.
	live := lns.Solver
	live.TargetAware = false
	ctx := context.Background()
	m, err := Load(ctx, "zoo:unet", LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Train(ctx, autodiff.Options{}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Sweep(ctx, SweepOptions{
		Fit:  FitOptions{TimeLimit: 2 * time.Second, Solver: live, ORTShapes: ORTShapesShown},
		Spec: SweepSpec{From: 100, To: 10, Step: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	sw := res.Sweep
	if !strings.HasPrefix(sw.Stopped, "stopped at ") || !strings.Contains(sw.Stopped, "does not lower the peak on the ort target") {
		t.Fatalf("Stopped = %q; the premise (a plan ORT gains nothing from) no longer holds: choose another model or budget series", sw.Stopped)
	}
	checkMonotone(t, sw)
	last := sw.Rows[len(sw.Rows)-1]
	if res.Fit == nil || res.Fit.Remat.AfterPeakBytes != last.PeakBytes || res.Fit.Placement.PeakBytes >= res.Fit.Original.PeakBytes && res.Fit.Remat.Recomputations > 0 {
		t.Errorf("the result's plan is not the last row's, or ORT gains nothing from it")
	}
}

// TestSweepWarmStarts: every budget's solve after the first gets the
// previous budget's plan as its problem's hint, a plan of the same
// problem.
func TestSweepWarmStarts(t *testing.T) {
	ctx := context.Background()
	m, err := Load(ctx, "../testdata/models/unet_like.onnx", LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	var hints []string
	recording := remat.Solver{Name: "recording", Doc: "Auto, recording the hint.",
		Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
			switch _, err := remat.Evaluate(p, p.Start); {
			case p.Start == nil:
				hints = append(hints, "none")
			case err != nil:
				hints = append(hints, "not a plan of the problem: "+err.Error())
			default:
				hints = append(hints, "plan")
			}
			return solvers.Auto.Solve(ctx, p, progress)
		}}
	res, err := m.Sweep(ctx, SweepOptions{
		Fit:  FitOptions{Target: liveness.Target{}, Solver: recording, TimeLimit: 2 * time.Second},
		Spec: SweepSpec{From: 100, To: 60, Step: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hints) < 3 || hints[0] != "none" {
		t.Fatalf("hints %v over rows %+v; want none, then plans", hints, res.Sweep.Rows)
	}
	for k, h := range hints[1:] {
		if h != "plan" {
			t.Errorf("solve %d: hint %s", k+1, h)
		}
	}
}
