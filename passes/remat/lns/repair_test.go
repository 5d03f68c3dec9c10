package lns

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// TestConeRepair checks the repair with dependency cones (growCone) on a
// layered graph at 75 % of the no-remat peak, where the repair of
// checkpoint-all by the total-excess rule without cones fails: with them
// it reaches a plan within the budget that remat.Check accepts, and the
// evaluator agrees with remat.Evaluate on it.
func TestConeRepair(t *testing.T) {
	p, err := synth.Layered(2, 100, 236)
	if err != nil {
		t.Fatal(err)
	}
	_, peak := stagePeaks(t, p, identityStages(p.N()))
	p.BudgetBytes = peak * 3 / 4
	g := newGraph(p)
	capBytes := p.BudgetBytes - p.ConstBytes
	for _, cone := range []int{0, coneCuts} {
		s := newState(g, capBytes)
		s.load(identityStages(g.n))
		var j journal
		rep := &repairer{chainDepth: chainDepth, costEps: 1e-6 * meanCost(g), exact: exactCuts, cone: cone}
		ok := s.repair(&j, rep, rand.New(rand.NewPCG(1, 2)))
		compare(t, fmt.Sprintf("cone %d", cone), p, s, capBytes)
		if cone == 0 {
			if ok {
				t.Error("the repair without cones succeeds too: the test no longer tells the two apart (pick a graph or budget where only the cones repair it)")
			}
			continue
		}
		if !ok {
			t.Fatalf("repair with cones of %d: %d bytes over in %d stages", cone, s.over, s.nOver)
		}
		// Every cone move undone leaves the plan as it was.
		before := s.stages()
		mark := len(j.moves)
		for _, c := range s.recomputations(nil)[:min(5, s.nRec)] {
			s.doRemove(&j, c.i, c.at)
			s.doAdd(&j, c.i, c.at)
			s.growCone(&j, c.i, c.at, cone)
		}
		s.revert(&j, mark)
		compare(t, "reverted cones", p, s, capBytes)
		for st, xs := range s.stages() {
			if fmt.Sprint(xs) != fmt.Sprint(before[st]) {
				t.Fatalf("stage %d: %v after reverting, %v before", st, xs, before[st])
			}
		}
		plan, err := remat.ScheduleStages(p, s.stages())
		if err != nil {
			t.Fatal(err)
		}
		res, err := remat.Check(p, plan)
		if err != nil {
			t.Fatal(err)
		}
		if res.PeakBytes > p.BudgetBytes {
			t.Fatalf("peak %d over the budget %d", res.PeakBytes, p.BudgetBytes)
		}
	}
}

// TestNeeded checks descend's filter: whenever needed claims that dropping
// a recomputation leaves a stage over the cap, dropping it does, on
// repaired plans (where it skips most removals) and on random ones.
func TestNeeded(t *testing.T) {
	for _, c := range evalProblems(t) {
		p := c.Problem
		g := newGraph(p)
		_, peak := stagePeaks(t, p, identityStages(p.N()))
		rng := rand.New(rand.NewPCG(3, 4))
		for _, frac := range []float64{0.9, 0.8} {
			capBytes := int64(frac*float64(peak)) - p.ConstBytes
			s := newState(g, capBytes)
			var plans [][][]int32
			s.load(identityStages(g.n))
			var j journal
			rep := &repairer{chainDepth: chainDepth, costEps: 1e-6 * meanCost(g), exact: exactCuts, cone: coneCuts}
			if s.repair(&j, rep, rng) {
				plans = append(plans, s.stages())
			}
			plans = append(plans, randomStages(p, rng, 0.05))
			claimed := 0
			for _, st := range plans {
				s.load(st)
				for _, rc := range s.recomputations(nil) {
					if !s.needed(rc.i, rc.at) {
						continue
					}
					claimed++
					mark := len(j.moves)
					s.doRemove(&j, rc.i, rc.at)
					if s.nOver == 0 {
						t.Fatalf("%s at %v: needed(%d, %d) but dropping it leaves no stage over", c.Name, frac, rc.i, rc.at)
					}
					s.revert(&j, mark)
				}
			}
			t.Logf("%s at %v: %d recomputations claimed needed", c.Name, frac, claimed)
		}
	}
}
