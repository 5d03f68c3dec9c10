package heuristic

import (
	"math"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

func TestRevolveConformance(t *testing.T) {
	solvertest.Run(t, Revolve, solvertest.Options{})
}

func TestRevolveLinearNetworkAgainstBruteForce(t *testing.T) {
	checkAgainstBruteForce(t, Revolve, solvertest.LinearNetwork(6), true)
}

// leastSteps is T(l, s), the least number of steps to reverse l ≥ 1
// positions (the first stored) with s free slots, by its dynamic program:
// T(1, s) = 0, T(l, 0) = l(l−1)/2 and T(l, s) = min over j of
// j + T(l−j, s−1) + T(j, s).
func leastSteps(maxL, maxS int) [][]int {
	T := make([][]int, maxS+1)
	for s := range T {
		T[s] = make([]int, maxL+1)
		for l := 2; l <= maxL; l++ {
			if s == 0 {
				T[s][l] = l * (l - 1) / 2
				continue
			}
			T[s][l] = math.MaxInt
			for j := 1; j < l; j++ {
				T[s][l] = min(T[s][l], j+T[s-1][l-j]+T[s][j])
			}
		}
	}
	return T
}

func TestRevolveSplitIsOptimal(t *testing.T) {
	T := leastSteps(150, 7)
	for s := 1; s <= 7; s++ {
		for l := 2; l <= 150; l++ {
			j := split(l, s)
			if j < 1 || j >= l || j+T[s-1][l-j]+T[s][j] != T[s][l] {
				t.Fatalf("split(%d, %d) = %d: %d steps, the optimum is %d", l, s, j, j+T[s-1][l-j]+T[s][j], T[s][l])
			}
		}
	}
}

// On the linear training graph of L layers, revolve with ⌈log₂(L+2)⌉ slots
// recomputes exactly the optimal number of steps for that many slots
// (T(L+2, s) less the first forward sweep) and peaks at O(log L) values:
// the slots, the gradient being computed and the one before it, and the
// value being recomputed.
func TestRevolveRevolveLinearNetwork(t *testing.T) {
	T := leastSteps(402, 9)
	for _, layers := range []int{4, 16, 64, 100, 400} {
		p := solvertest.LinearNetwork(layers)
		o := solveChecked(t, Revolve, p)
		l := layers + 2
		s := int(math.Ceil(math.Log2(float64(l))))
		t.Logf("L=%d: %d slots, peak %d values, %d recomputations (%.2f per forward node); checkpoint-all peaks at %d",
			layers, s, o.res.PeakBytes, o.res.Recomputations, float64(o.res.Recomputations)/float64(layers+1), checkpointAllPeak(t, p))
		if want := T[s][l] - (l - 1); o.res.Recomputations != want {
			t.Errorf("L=%d: %d recomputations, want revolve's %d", layers, o.res.Recomputations, want)
		}
		if o.res.PeakBytes > int64(s+4) {
			t.Errorf("L=%d: peak %d values; want at most %d slots + 4", layers, o.res.PeakBytes, s)
		}
	}
	// Memory grows with log L: 64 layers need no more than twice what 8 do.
	small := solveChecked(t, Revolve, solvertest.LinearNetwork(8)).res.PeakBytes
	big := solveChecked(t, Revolve, solvertest.LinearNetwork(64)).res.PeakBytes
	if big > 2*small {
		t.Errorf("peak %d values for 64 layers, %d for 8", big, small)
	}
}

// Without a backward part there is nothing to reverse.
func TestRevolveInference(t *testing.T) {
	for _, p := range []*remat.Problem{solvertest.Chain(40), layeredDAG(2, 120)} {
		o := solveChecked(t, Revolve, p)
		if o.res.Recomputations != 0 || !strings.Contains(o.notes[len(o.notes)-1], "no backward part") {
			t.Errorf("%d recomputations, note %q; want none and a note saying why", o.res.Recomputations, o.notes[len(o.notes)-1])
		}
	}
}

// unetDAG is a U-Net with a residual connection around the first level's
// convolutions, so not a chain; its decoder reads the encoder in reverse,
// like a backward pass, and revolve treats it as one.
func unetDAG() *remat.Problem {
	p := unet(3)
	b := &builder{p}
	b.add("res", 1e-3, p.Bytes[0], 0, 2)
	return b.done()
}

// A training graph that is not a chain is reversed along its topological
// order (legal plans, and the note says so).
func TestRevolveTrainingDAG(t *testing.T) {
	for _, p := range []*remat.Problem{training(unet(3)), training(layeredDAG(5, 60)), unetDAG()} {
		o := solveChecked(t, Revolve, p)
		note := o.notes[len(o.notes)-1]
		if !strings.Contains(note, "linearized") {
			t.Errorf("note %q does not say the graph was linearized", note)
		}
		t.Logf("n=%d: peak %d (checkpoint-all %d), cost %.4g (checkpoint-all %.4g): %s",
			p.N(), o.res.PeakBytes, checkpointAllPeak(t, p), o.res.TotalSeconds, p.LowerBoundSeconds(), note)
	}
}

func TestRevolveUNets(t *testing.T) { checkUNets(t, Revolve) }

func TestRevolveDeadline(t *testing.T) { checkDeadline(t, Revolve) }

func TestRevolveCancelMidway(t *testing.T) { checkCancelMidway(t, Revolve) }

func TestRevolveTiny(t *testing.T) { checkTiny(t, Revolve) }

func BenchmarkRevolveRevolve(b *testing.B) { benchmarkSolver(b, Revolve) }
