package heuristic

import (
	"context"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// XLAGreedy is a heuristic that may stall above the budget; but where the
// order without recomputation fits it returns that plan, so it never
// fails where checkpoint-all fits.
func TestXLAGreedyConformance(t *testing.T) {
	solvertest.Run(t, XLAGreedy, solvertest.Options{})
}

// Kumar et al. Figure 1: ⟨A, B, C, D, E⟩ needs four units, and
// rematerializing A after D, ⟨A, B, C, D, A, E⟩, three. At stage D the
// only resident value that D does not read is A, whose recomputation
// before E frees one unit.
func TestXLAGreedyKumarFigure1(t *testing.T) {
	p := withBudget(solvertest.KumarFigure1(), 3)
	o := solveChecked(t, XLAGreedy, p)
	if o.plan == nil {
		t.Fatalf("no plan within 3 units; least peak %d", o.over.NeedBytes)
	}
	if got, want := o.plan.Sequence(), []int32{0, 1, 2, 3, 0, 4}; !slices.Equal(got, want) {
		t.Errorf("sequence %v, want %v", got, want)
	}
	if o.res.PeakBytes != 3 {
		t.Errorf("peak %d, want 3", o.res.PeakBytes)
	}
}

// The walk's own measure of memory is the memory model's: on problems
// without Parts, the coarse peak it computes over its finished stages is
// exactly remat.Evaluate's peak of the plan, and on problems with Parts
// an upper bound of it.
func TestXLAGreedyMeasuresTheModel(t *testing.T) {
	cases := []*remat.Problem{
		solvertest.LinearNetwork(20), layeredDAG(2, 120), training(layeredDAG(4, 60)), unet(4), training(unet(3)),
	}
	for _, c := range solvertest.Corpus() {
		cases = append(cases, c.Problem)
	}
	for k, p0 := range cases {
		ca := checkpointAllPeak(t, p0)
		for _, frac := range []int64{4, 3, 2} {
			p := withBudget(p0, max(p0.ConstBytes, ca*frac/4))
			w := newXLAWalk(p)
			if err := w.walk(context.Background()); err != nil {
				t.Fatal(err)
			}
			c, err := measure(p, w.stages())
			if err != nil {
				t.Fatal(err)
			}
			model := w.coarsePeak()
			switch {
			case !p.Refined() && model != c.res.PeakBytes:
				t.Errorf("case %d at %d/4 of %d: the walk measures %d bytes, Evaluate %d", k, frac, ca, model, c.res.PeakBytes)
			case p.Refined() && model < c.res.PeakBytes:
				t.Errorf("case %d (Parts) at %d/4 of %d: the walk measures %d bytes, below Evaluate's %d", k, frac, ca, model, c.res.PeakBytes)
			}
		}
	}
}

// No stage the walk has passed gains memory later: every stage that fits
// when the walk leaves it fits at the end, so when the walk never stalls
// the plan fits, and its peak falls with the budget. On the training
// graphs (a random layered DAG's, Checkmate's linear network) the walk
// fits every budget down to 40% of the plain schedule's peak.
func TestXLAGreedyTradeoff(t *testing.T) {
	for k, p0 := range []*remat.Problem{layeredDAG(1, 250), training(layeredDAG(1, 124)), solvertest.LinearNetwork(40)} {
		training := k > 0
		ca := checkpointAllPeak(t, p0)
		prevPeak := ca
		for _, frac := range []int64{100, 90, 80, 70, 60, 50, 40, 30} {
			b := ca * frac / 100
			p := withBudget(p0, b)
			w := newXLAWalk(p)
			if err := w.walk(context.Background()); err != nil {
				t.Fatal(err)
			}
			c, err := measure(p, w.stages())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d nodes, budget %d%% of %d: %d rematerializations, %d stalled stages, peak %d, cost %.4g (%.2f× one pass)",
				p.N(), frac, ca, w.remats, w.over, c.res.PeakBytes, c.res.TotalSeconds, c.res.TotalSeconds/p.LowerBoundSeconds())
			if w.over == 0 && c.res.PeakBytes > b {
				t.Errorf("budget %d: no stage stalled, but the plan peaks at %d", b, c.res.PeakBytes)
			}
			if w.over == 0 && c.res.PeakBytes > prevPeak {
				t.Errorf("budget %d: peak %d, above %d at the larger budget", b, c.res.PeakBytes, prevPeak)
			}
			prevPeak = c.res.PeakBytes
			if training && frac >= 40 && c.res.PeakBytes > b {
				t.Errorf("training graph, budget %d%%: no plan within the budget (peak %d)", frac, c.res.PeakBytes)
			}
		}
	}
}

// On synth's 250-node random layered DAG (MOCCASIN's size) the greedy
// fits 90% of the plain schedule's peak; at 80% it stalls, but the plan
// it returns with the *remat.BudgetError still peaks below the plain one.
func TestXLAGreedySynthLayered(t *testing.T) {
	p0, err := synth.Layered(1, 250, 944)
	if err != nil {
		t.Fatal(err)
	}
	ca := checkpointAllPeak(t, p0)
	o := solveChecked(t, XLAGreedy, withBudget(p0, ca*9/10))
	if o.plan == nil {
		t.Fatalf("no plan within 90%% of %d: least peak %d", ca, o.over.NeedBytes)
	}
	t.Logf("90%%: peak %d of %d, %d recomputations, cost %.3f× one pass", o.res.PeakBytes, ca, o.res.Recomputations, o.res.TotalSeconds/p0.LowerBoundSeconds())
	o = solveChecked(t, XLAGreedy, withBudget(p0, ca*8/10))
	if o.plan != nil {
		t.Logf("80%%: peak %d of %d, %d recomputations", o.res.PeakBytes, ca, o.res.Recomputations)
	} else {
		if o.over.NeedBytes >= ca {
			t.Errorf("80%%: the least peak reached, %d, is not below the plain schedule's %d", o.over.NeedBytes, ca)
		}
		t.Logf("80%%: no plan; least peak %d of %d", o.over.NeedBytes, ca)
	}
}

// Nodes that may not be recomputed never are, even when keeping them
// leaves the budget out of reach.
func TestXLAGreedyNonRecomputable(t *testing.T) {
	p0 := layeredDAG(5, 150)
	ca := checkpointAllPeak(t, p0)
	for _, frac := range []int64{3, 2, 1} {
		o := solveChecked(t, XLAGreedy, withBudget(p0, ca*frac/4))
		plan := o.plan
		if plan == nil {
			plan = o.over.Plan
		}
		for i, c := range recomputed(plan) {
			if !p0.Recomputable[i] {
				t.Errorf("budget %d/4: node %d, not recomputable, recomputed %d times", frac, i, c)
			}
		}
	}
}

func TestXLAGreedyDeterministic(t *testing.T) {
	p := withBudget(training(layeredDAG(3, 80)), 0)
	p.BudgetBytes = checkpointAllPeak(t, p) * 2 / 3
	a := solveChecked(t, XLAGreedy, p)
	b := solveChecked(t, XLAGreedy, p)
	pa, pb := a.plan, b.plan
	if pa == nil {
		pa, pb = a.over.Plan, b.over.Plan
	}
	if !slices.Equal(pa.Sequence(), pb.Sequence()) {
		t.Errorf("two runs differ")
	}
}

func TestXLAGreedyDeadline(t *testing.T)     { checkDeadline(t, XLAGreedy) }
func TestXLAGreedyCancelMidway(t *testing.T) { checkCancelMidway(t, XLAGreedy) }
func TestXLAGreedyTiny(t *testing.T)         { checkTiny(t, XLAGreedy) }

func TestXLAGreedyLinearNetworkAgainstBruteForce(t *testing.T) {
	checkAgainstBruteForce(t, XLAGreedy, solvertest.LinearNetwork(6), false)
}

func BenchmarkXLAGreedy(b *testing.B) { benchmarkSolver(b, XLAGreedy) }
