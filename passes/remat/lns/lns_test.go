package lns_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/lns"
	"github.com/remat-compile/remat/passes/remat/solvertest"
	"github.com/remat-compile/remat/passes/remat/synth"
)

func TestConformance(t *testing.T) {
	solvertest.Run(t, lns.Solver, solvertest.Options{})
}

// layered returns synth.Layered(seed, n, m) with its budget at frac of
// the no-remat peak, and checkpoint-all's cost.
func layered(t testing.TB, seed uint64, n, m int, frac float64) (*remat.Problem, float64) {
	t.Helper()
	p, err := synth.Layered(seed, n, m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.EvaluateNoRemat(p)
	if err != nil {
		t.Fatal(err)
	}
	p.BudgetBytes = int64(frac * float64(res.PeakBytes))
	return p, res.TotalSeconds
}

// TestDeterministic checks that with a fixed seed and round count the plan
// does not depend on how many workers run at once.
func TestDeterministic(t *testing.T) {
	p, _ := layered(t, 3, 100, 236, 0.8)
	solve := func(seed uint64, threads int) []int32 {
		pl, err := lns.New(lns.Options{Seed: seed, Threads: threads, Rounds: 3, Patience: 100}).Solve(context.Background(), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remat.Check(p, pl); err != nil {
			t.Fatal(err)
		}
		return pl.Sequence()
	}
	one := solve(1, 1)
	for _, threads := range []int{1, 2, 5} {
		if got := solve(1, threads); !slices.Equal(got, one) {
			t.Errorf("seed 1 on %d threads gives another plan than on one thread", threads)
		}
	}
}

// TestAnytime checks that a search cut short by its deadline, or
// cancelled while it runs, returns its best plan so far, within the
// budget, promptly.
func TestAnytime(t *testing.T) {
	p, _ := layered(t, 1, 250, 944, 0.85)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	start := time.Now()
	pl, err := lns.New(lns.Options{Patience: 1 << 30}).Solve(ctx, p, func(pr remat.Progress) {
		once.Do(func() { time.AfterFunc(200*time.Millisecond, cancel) })
	})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled search returned after %v", d)
	}
	if err != nil {
		t.Fatalf("cancelled search: %v; want its best plan", err)
	}
	if _, err := remat.Check(p, pl); err != nil {
		t.Fatal(err)
	}
}

// TestStart checks that a start plan within the budget is never made
// worse, and that an illegal one is ignored.
func TestStart(t *testing.T) {
	p, _ := layered(t, 2, 100, 236, 0.85)
	first, err := lns.Solver.Solve(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	firstRes, _ := remat.Check(p, first)
	again, err := lns.New(lns.Options{Start: first, Rounds: 1}).Solve(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Check(p, again)
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalSeconds > firstRes.TotalSeconds*(1+1e-12) {
		t.Errorf("from a start costing %v the search returned %v", firstRes.TotalSeconds, res.TotalSeconds)
	}
	bad := *first
	bad.Ops = nil // fails Evaluate
	if _, err := lns.New(lns.Options{Start: &bad, Rounds: 1}).Solve(context.Background(), p, nil); err != nil {
		t.Errorf("an illegal start: %v; want it ignored", err)
	}
}

// TestLeastPeakIsMetAgain checks the budget error on a budget below what
// the search reaches (the working-set floor): NeedBytes is the peak of
// its plan, and a budget of NeedBytes is then met (remat-compile bench
// takes that as the smallest budget to compare solvers at).
func TestLeastPeakIsMetAgain(t *testing.T) {
	p, _ := layered(t, 1, 100, 236, 1)
	floor := p.Floor().Bytes
	p.BudgetBytes = floor
	_, err := lns.Solver.Solve(context.Background(), p, nil)
	var be *remat.BudgetError
	if !errors.As(err, &be) || be.Plan == nil {
		t.Fatalf("at the floor %d: %v; want a *remat.BudgetError with a plan", floor, err)
	}
	res, err := remat.Evaluate(p, be.Plan)
	if err != nil || res.PeakBytes != be.NeedBytes {
		t.Fatalf("BudgetError plan peak %d (%v); NeedBytes %d", res.PeakBytes, err, be.NeedBytes)
	}
	p.BudgetBytes = be.NeedBytes
	pl, err := lns.Solver.Solve(context.Background(), p, nil)
	if err != nil {
		t.Fatalf("at the least peak %d found before: %v", be.NeedBytes, err)
	}
	if _, err := remat.Check(p, pl); err != nil {
		t.Fatal(err)
	}
}

// TestLowerBoundProvesInfeasible checks that a budget below what the
// nodes that may not be recomputed hold is proven infeasible.
func TestLowerBoundProvesInfeasible(t *testing.T) {
	p, _ := layered(t, 1, 30, 60, 1)
	for i := range p.Recomputable {
		p.Recomputable[i] = false
	}
	res, _ := remat.EvaluateNoRemat(p)
	p.BudgetBytes = res.PeakBytes - 1
	_, err := lns.Solver.Solve(context.Background(), p, nil)
	if !errors.Is(err, remat.ErrInfeasible) {
		t.Fatalf("nothing recomputable, budget one byte below checkpoint-all's peak: %v; want a proven BudgetError", err)
	}
}

// TestProgressIncumbent checks that the last progress report carries the
// returned plan's cost exactly as remat.Check sums it (a time-to-best
// measurement compares the two), and a valid bound.
func TestProgressIncumbent(t *testing.T) {
	for seed := range uint64(6) {
		for _, frac := range []float64{0.9, 0.85, 0.8} {
			p, _ := layered(t, seed+1, 60, 140, frac)
			var last remat.Progress
			pl, err := lns.New(lns.Options{Rounds: 1}).Solve(context.Background(), p, func(pr remat.Progress) { last = pr })
			if err != nil {
				continue // no plan at this budget
			}
			res, err := remat.Check(p, pl)
			if err != nil {
				t.Fatal(err)
			}
			if last.Incumbent != res.TotalSeconds {
				t.Errorf("seed %d at %v: last reported incumbent %v, the plan costs %v", seed+1, frac, last.Incumbent, res.TotalSeconds)
			}
			if last.Bound > res.TotalSeconds || last.Bound < p.LowerBoundSeconds() || pl.LowerBound < last.Bound*(1-1e-9) {
				t.Errorf("seed %d at %v: reported bound %v, plan's LowerBound %v, cost %v, Σ C %v",
					seed+1, frac, last.Bound, pl.LowerBound, res.TotalSeconds, p.LowerBoundSeconds())
			}
		}
	}
}

// TestHint checks the problem's hint (remat.Problem.Start) on a layered
// graph: a plan of a looser budget never makes the plan dearer than the
// search without it, the progress reports' incumbent never rises, an
// illegal hint gives the plan of the search without one, and here the
// search from the hint finds a cheaper plan (else the hint would be dead
// weight).
func TestHint(t *testing.T) {
	ctx := context.Background()
	solver := lns.New(lns.Options{Patience: 2})
	cheaper := 0
	for _, seed := range []uint64{1} { // the graph on which the hint pays
		loose, _ := layered(t, seed+1, 100, 236, 0.85)
		hint, err := solver.Solve(ctx, loose, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := *loose
		p.BudgetBytes = loose.BudgetBytes * 9 / 10
		cold, err := solver.Solve(ctx, &p, nil)
		if err != nil {
			t.Fatalf("seed %d cold: %v", seed+1, err)
		}
		coldRes, err := remat.Check(&p, cold)
		if err != nil {
			t.Fatal(err)
		}
		hinted := p
		hinted.Start = hint
		last := math.Inf(1)
		warm, err := solver.Solve(ctx, &hinted, func(pr remat.Progress) {
			if pr.Incumbent > last*(1+1e-12) {
				t.Errorf("seed %d: the incumbent rose from %v to %v (%s)", seed+1, last, pr.Incumbent, pr.Note)
			}
			last = pr.Incumbent
		})
		if err != nil {
			t.Fatalf("seed %d with the hint: %v", seed+1, err)
		}
		warmRes, err := remat.Check(&p, warm)
		if err != nil {
			t.Fatal(err)
		}
		if warmRes.TotalSeconds > coldRes.TotalSeconds*(1+1e-12) {
			t.Errorf("seed %d: with the hint %v, without %v", seed+1, warmRes.TotalSeconds, coldRes.TotalSeconds)
		}
		if last != warmRes.TotalSeconds {
			t.Errorf("seed %d: last reported incumbent %v, the plan costs %v", seed+1, last, warmRes.TotalSeconds)
		}
		if warmRes.TotalSeconds < coldRes.TotalSeconds*(1-1e-9) {
			cheaper++
		}
		t.Logf("seed %d at %d bytes: %.6g s without the hint, %.6g s with it", seed+1, p.BudgetBytes, coldRes.TotalSeconds, warmRes.TotalSeconds)
		bad := *hint
		bad.Ops = nil // fails Evaluate
		hinted.Start = &bad
		again, err := solver.Solve(ctx, &hinted, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(again.Sequence(), cold.Sequence()) {
			t.Errorf("seed %d: an illegal hint changed the plan", seed+1)
		}
	}
	if cheaper == 0 {
		t.Error("the search from the hint found no cheaper plan")
	}
}

// TestHintSharesDeadline checks that under a deadline the search from
// the hint gets its share of the time (the first search's rounds, which
// would run until the deadline, stop halfway) and that the solve still
// ends at the deadline with a plan within the budget.
func TestHintSharesDeadline(t *testing.T) {
	ctx := context.Background()
	loose, _ := layered(t, 1, 100, 236, 0.85)
	hint, err := lns.New(lns.Options{TimeLimit: 300 * time.Millisecond}).Solve(ctx, loose, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := *loose
	p.BudgetBytes = loose.BudgetBytes * 95 / 100
	p.Start = hint
	const limit = time.Second
	var notes []string
	start := time.Now()
	var hinted time.Duration
	pl, err := lns.New(lns.Options{TimeLimit: limit, Patience: 1 << 30}).Solve(ctx, &p, func(pr remat.Progress) {
		notes = append(notes, pr.Note)
		if hinted == 0 && strings.HasPrefix(pr.Note, "searching from the hint") {
			hinted = time.Since(start)
		}
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remat.Check(&p, pl); err != nil {
		t.Fatal(err)
	}
	if hinted == 0 || hinted > limit*3/4 {
		t.Fatalf("the search from the hint started at %v of %v; notes %q", hinted, limit, notes)
	}
	if took > limit+2*time.Second {
		t.Errorf("the solve took %v with a time limit of %v", took, limit)
	}
}
