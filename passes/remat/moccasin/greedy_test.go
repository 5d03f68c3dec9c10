package moccasin

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

// TestSimMatchesCheck: the greedy's memory model is Check's, step by step,
// on random plans of the corpus (multi-output parts and outputs included).
func TestSimMatchesCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range modelProblems() {
		p := c.Problem
		s := newSim(p)
		for trial := range 20 {
			stages := randomStages(r, p, []float64{0, 0.1, 0.3, 0.7}[trial%4])
			plan, err := remat.ScheduleStages(p, stages)
			if err != nil {
				t.Fatal(err)
			}
			res, err := remat.Evaluate(p, plan)
			if err != nil {
				t.Fatal(err)
			}
			s.run(stages)
			if s.peak != res.PeakBytes || !slices.Equal(s.during, res.During) || !close(s.cost, res.TotalSeconds) {
				t.Fatalf("%s trial %d: sim peak %d cost %v during %v; Check peak %d cost %v during %v",
					c.Name, trial, s.peak, s.cost, s.during, res.PeakBytes, res.TotalSeconds, res.During)
			}
			if s.peakStep != res.PeakStep {
				t.Fatalf("%s trial %d: sim peaks at step %d, Check at %d", c.Name, trial, s.peakStep, res.PeakStep)
			}
		}
	}
}

// TestGreedyFits: whenever the greedy reports a peak within the budget,
// its plan passes Check there, respects the cap, and the peak is Check's.
// On the corpus at the budgets of the conformance suite it must also find
// a plan whenever checkpoint-all fits.
func TestGreedyFits(t *testing.T) {
	for _, c := range modelProblems() {
		p := c.Problem
		s := newSim(p)
		s.run(identity(p.N()))
		caPeak := s.peak
		for _, frac := range []float64{1, 0.9, 0.8, 0.7, 0.6} {
			q := withBudget(p, int64(float64(caPeak)*frac))
			for _, capC := range []int{2, p.N()} {
				stages, peak := greedy(context.Background(), q, capC)
				plan, err := remat.ScheduleStages(q, stages)
				if err != nil {
					t.Fatal(err)
				}
				res, err := remat.Evaluate(q, plan)
				if err != nil {
					t.Fatal(err)
				}
				if res.PeakBytes != peak {
					t.Fatalf("%s at %v: greedy says peak %d, Check %d", c.Name, frac, peak, res.PeakBytes)
				}
				if frac == 1 && peak > q.BudgetBytes {
					t.Fatalf("%s: greedy misses the budget that checkpoint-all fits", c.Name)
				}
				for v, k := range counts(q.N(), stages) {
					if k > capC || k > 1 && !q.Recomputable[v] {
						t.Fatalf("%s: node %d computed %d times (cap %d, recomputable %v)", c.Name, v, k, capC, q.Recomputable[v])
					}
				}
			}
		}
	}
}
