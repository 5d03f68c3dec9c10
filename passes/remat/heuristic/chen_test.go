package heuristic

import (
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// The √n rule is not budget-aware: on a few random DAGs its plan peaks
// above checkpoint-all's, so it may fail where checkpoint-all fits. The
// greedy search includes b = −1, every forward node a checkpoint, which is
// checkpoint-all, so it may not.
func TestChenConformanceSqrtN(t *testing.T) {
	solvertest.Run(t, ChenSqrtN, solvertest.Options{MayFail: true})
}

func TestChenConformanceGreedy(t *testing.T) {
	solvertest.Run(t, ChenGreedy, solvertest.Options{})
}

func TestChenLinearNetworkAgainstBruteForce(t *testing.T) {
	checkAgainstBruteForce(t, ChenSqrtN, solvertest.LinearNetwork(6), true)
	checkAgainstBruteForce(t, ChenGreedy, solvertest.LinearNetwork(6), false)
}

func TestChenSqrtNLinearNetwork(t *testing.T) { checkSqrtNLinearNetwork(t, ChenSqrtN) }

// A chain without a backward pass reads each value once, right away:
// nothing is worth recomputing.
func TestChenInferenceChain(t *testing.T) {
	p := solvertest.Chain(50)
	for _, s := range []remat.Solver{ChenSqrtN, ChenGreedy} {
		o := solveChecked(t, s, p)
		if o.res.Recomputations != 0 || o.res.PeakBytes != 2 || !o.plan.Optimal {
			t.Errorf("%s: %d recomputations, peak %d, Optimal %v; want 0, 2, true", s.Name, o.res.Recomputations, o.res.PeakBytes, o.plan.Optimal)
		}
	}
}

// The greedy search keeps the cheapest plan within the budget over a
// fixed family of segmentations, so a smaller budget never makes it
// cheaper, and the least budget it reaches is below the √n plan's peak.
func TestChenGreedyTradeoff(t *testing.T) {
	p := solvertest.LinearNetwork(30)
	ca := checkpointAllPeak(t, p)
	sq := solveChecked(t, ChenSqrtN, p)
	prev := 0.0
	least := ca
	for b := ca; b > 0; b-- {
		o := solveChecked(t, ChenGreedy, withBudget(p, b))
		if o.plan == nil {
			break
		}
		least = b
		if o.res.TotalSeconds < prev {
			t.Errorf("budget %d: cost %v, less than %v at budget %d", b, o.res.TotalSeconds, prev, b+1)
		}
		prev = o.res.TotalSeconds
	}
	t.Logf("greedy fits down to %d (√n peaks at %d, checkpoint-all at %d)", least, sq.res.PeakBytes, ca)
	if least > sq.res.PeakBytes {
		t.Errorf("greedy fits only down to %d; the √n plan peaks at %d", least, sq.res.PeakBytes)
	}
}

// Graphs that are not linear are solved in their linearized form, and the
// progress notes say so.
func TestChenNonLinearGraphs(t *testing.T) {
	for _, p := range []*remat.Problem{unet(3), training(unet(3)), training(layeredDAG(3, 40)), solvertest.Corpus()[3].Problem} {
		for _, s := range []remat.Solver{ChenSqrtN, ChenGreedy} {
			o := solveChecked(t, s, p)
			note := o.notes[len(o.notes)-1]
			if lin := analyze(p).linear; lin == strings.Contains(note, "linearized") {
				t.Errorf("%s on a graph with linear = %v: progress note %q", s.Name, lin, note)
			}
		}
	}
}

func TestChenDeadline(t *testing.T) {
	checkDeadline(t, ChenSqrtN)
	checkDeadline(t, ChenGreedy)
}

func TestChenCancelMidway(t *testing.T) {
	checkCancelMidway(t, ChenSqrtN)
	checkCancelMidway(t, ChenGreedy)
}

func TestChenTiny(t *testing.T) {
	checkTiny(t, ChenSqrtN)
	checkTiny(t, ChenGreedy)
}

func BenchmarkChenSqrtN(b *testing.B)  { benchmarkSolver(b, ChenSqrtN) }
func BenchmarkChenGreedy(b *testing.B) { benchmarkSolver(b, ChenGreedy) }
