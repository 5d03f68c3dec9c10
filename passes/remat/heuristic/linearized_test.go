package heuristic

import (
	"testing"

	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// The √n rule is not budget-aware: on a few random DAGs its plan peaks
// above checkpoint-all's, so it may fail where checkpoint-all fits. The
// greedy search includes b = −1, every forward node a checkpoint, which is
// checkpoint-all, so it may not.
func TestLinearizedConformanceSqrtN(t *testing.T) {
	solvertest.Run(t, LinearizedSqrtN, solvertest.Options{MayFail: true})
}

func TestLinearizedConformanceGreedy(t *testing.T) {
	solvertest.Run(t, LinearizedGreedy, solvertest.Options{})
}

func TestLinearizedLinearNetworkAgainstBruteForce(t *testing.T) {
	checkAgainstBruteForce(t, LinearizedSqrtN, solvertest.LinearNetwork(6), true)
	checkAgainstBruteForce(t, LinearizedGreedy, solvertest.LinearNetwork(6), false)
}

func TestLinearizedSqrtNLinearNetwork(t *testing.T) { checkSqrtNLinearNetwork(t, LinearizedSqrtN) }

// On an inference DAG a value read across a segment boundary is
// recomputed just before its reader: with checkpoints only, a layered DAG
// recomputes, and every recomputation happens in the stage of a node that
// reads it or reads another recomputation.
func TestLinearizedInferenceRecomputesBeforeUse(t *testing.T) {
	p := layeredDAG(3, 120)
	o := solveChecked(t, LinearizedSqrtN, p)
	if o.res.Recomputations == 0 {
		t.Fatal("no recomputation on a layered DAG")
	}
	for st, nodes := range o.plan.Stages() {
		need := map[int32]bool{int32(st): true}
		for k := len(nodes) - 1; k >= 0; k-- {
			v := nodes[k]
			if !need[v] {
				t.Errorf("stage %d recomputes node %d, which nothing computed after it in the stage reads", st, v)
			}
			for _, d := range p.Deps[v] {
				need[d] = true
			}
		}
	}
}

func TestLinearizedUNets(t *testing.T) {
	checkUNets(t, LinearizedSqrtN)
	checkUNets(t, LinearizedGreedy)
}

// At the √n plan's peak the greedy search finds a plan at least as cheap:
// on unit-size linear networks the √n segmentation (a checkpoint every k
// nodes) is the greedy rule's with b = k−1.
func TestLinearizedGreedyNoWorseThanSqrtN(t *testing.T) {
	for _, layers := range []int{9, 16, 25, 36} {
		p := solvertest.LinearNetwork(layers)
		sq := solveChecked(t, LinearizedSqrtN, p)
		g := solveChecked(t, LinearizedGreedy, withBudget(p, sq.res.PeakBytes))
		if g.plan == nil || g.res.TotalSeconds > sq.res.TotalSeconds {
			t.Errorf("L=%d: greedy %v at the √n plan's peak %d; √n costs %v", layers, g.res.TotalSeconds, sq.res.PeakBytes, sq.res.TotalSeconds)
		}
	}
}

func TestLinearizedDeadline(t *testing.T) {
	checkDeadline(t, LinearizedSqrtN)
	checkDeadline(t, LinearizedGreedy)
}

func TestLinearizedCancelMidway(t *testing.T) {
	checkCancelMidway(t, LinearizedSqrtN)
	checkCancelMidway(t, LinearizedGreedy)
}

func TestLinearizedTiny(t *testing.T) {
	checkTiny(t, LinearizedSqrtN)
	checkTiny(t, LinearizedGreedy)
}

func BenchmarkLinearizedSqrtN(b *testing.B)  { benchmarkSolver(b, LinearizedSqrtN) }
func BenchmarkLinearizedGreedy(b *testing.B) { benchmarkSolver(b, LinearizedGreedy) }
