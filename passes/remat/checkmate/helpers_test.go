package checkmate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/remat-compile/remat/internal/cbc"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// layered is a seeded random training graph shaped like a residual
// network: layers forward nodes in a chain with occasional residual skips
// (a node also reading one two to four back), a loss node, and one backward
// node per forward node, in reverse, each reading the backward node before
// it, its forward node and that node's inputs. Costs are in halves of a
// millisecond (backward twice forward), sizes whole MiB plus a multiple of
// 256 bytes, about one node in twenty is not recomputable (dropout), and the
// last backward node is the output. n = 2·layers + 1.
func layered(seed uint64, layers int) *remat.Problem {
	r := rand.New(rand.NewPCG(seed, 0x1a7e7ed))
	n := 2*layers + 1
	p := &remat.Problem{
		Deps: make([][]int32, n), Seconds: make([]float64, n), Bytes: make([]int64, n),
		Recomputable: make([]bool, n), Outputs: []int32{int32(n - 1)}, BudgetBytes: remat.NoBudget,
		ConstBytes: 64 << 20,
	}
	add := func(i int, d int32) {
		for _, x := range p.Deps[i] {
			if x == d {
				return
			}
		}
		p.Deps[i] = append(p.Deps[i], d)
	}
	for i := range layers {
		p.Seconds[i] = 0.5e-3 * float64(1+r.IntN(8))
		p.Bytes[i] = int64(1+r.IntN(8))<<20 + 256*int64(r.IntN(16))
		p.Recomputable[i] = r.IntN(20) != 0
		if i > 0 {
			add(i, int32(i-1))
		}
		if i >= 2 && r.IntN(10) < 3 {
			add(i, int32(i-2-r.IntN(min(3, i-1))))
		}
	}
	p.Seconds[layers], p.Bytes[layers], p.Recomputable[layers] = 0.5e-3, 1024, true
	add(layers, int32(layers-1))
	for m := range layers {
		b, f := layers+1+m, layers-1-m
		p.Seconds[b] = 2 * p.Seconds[f]
		p.Bytes[b] = p.Bytes[f]
		p.Recomputable[b] = true
		add(b, int32(b-1))
		add(b, int32(f))
		for _, d := range p.Deps[f] {
			add(b, d)
		}
	}
	for i := range n {
		sortDeps(p.Deps[i])
		if p.Deps[i] == nil {
			p.Deps[i] = []int32{}
		}
	}
	return p
}

func sortDeps(d []int32) {
	for a := 1; a < len(d); a++ {
		for b := a; b > 0 && d[b] < d[b-1]; b-- {
			d[b], d[b-1] = d[b-1], d[b]
		}
	}
}

// withBudget returns a copy of p with the budget b.
func withBudget(p *remat.Problem, b int64) *remat.Problem {
	q := *p
	q.BudgetBytes = b
	return &q
}

// caPeak is the peak of checkpoint-all (R = I).
func caPeak(p *remat.Problem) int64 {
	stages := make([][]int32, p.N())
	for t := range stages {
		stages[t] = []int32{int32(t)}
	}
	pl, err := remat.ScheduleStages(p, stages)
	if err != nil {
		panic(err)
	}
	res, err := remat.Evaluate(p, pl)
	if err != nil {
		panic(err)
	}
	return res.PeakBytes
}

// requireCBC fails the test with cbc.Load's error, which names the Debian
// packages to install with apt-get, when the COIN-OR libraries are
// missing; under -short it skips instead.
func requireCBC(t testing.TB) {
	t.Helper()
	if _, err := cbc.Load(); err != nil {
		if testing.Short() {
			t.Skipf("COIN-OR CBC/CLP unavailable: %v", err)
		}
		t.Fatal(err)
	}
}

// instance is a problem at one budget with its optimum cost.
type instance struct {
	name string
	p    *remat.Problem
	opt  float64
	plan *remat.Plan // an optimal plan
}

// corpusInstances are the conformance corpus's problems (of at most
// maxNodes nodes) at the budgets between the least peak of any plan and
// checkpoint-all's peak (exclusive: there checkpoint-all is optimal), with
// the optimum: the MILP's, which the conformance suite checks against
// brute force (for the multi-output problems, the coarse problem's).
func corpusInstances(t testing.TB, maxNodes int) []instance {
	t.Helper()
	var out []instance
	for _, c := range solvertest.Corpus() {
		p := c.Problem
		if p.N() > maxNodes {
			continue
		}
		_, err := checkmate.MILP.Solve(context.Background(), withBudget(p, 0), nil)
		var be *remat.BudgetError
		if !errors.As(err, &be) {
			t.Fatalf("%s: the MILP at budget 0: %v", c.Name, err)
		}
		least, ca := be.NeedBytes, caPeak(p)
		var seen []int64
		for _, b := range []int64{least, least + (ca-least)/3, least + 2*(ca-least)/3} {
			if b >= ca || slices.Contains(seen, b) {
				continue
			}
			seen = append(seen, b)
			q := withBudget(p, b)
			pl, err := checkmate.MILP.Solve(context.Background(), q, nil)
			if err != nil {
				t.Fatalf("%s at %d: %v", c.Name, b, err)
			}
			out = append(out, instance{fmt.Sprintf("%s@%d", c.Name, b), q, pl.Cost(q), pl})
		}
	}
	return out
}

// shortNodes is the size of the largest problem the corpus-wide tests
// take under -short, which keeps them to a few seconds: brute force takes
// seconds on checkmate-linear-8 (17 nodes; TestLinearNetwork covers it),
// and proving a budget one byte below the least peak infeasible takes CBC
// seconds on some 10- to 12-node random DAGs.
func shortNodes() int {
	if testing.Short() {
		return 9
	}
	return math.MaxInt
}

// exhaustive is an independent reference for small problems: it
// enumerates every recomputation matrix R of the frontier-advancing form
// (R[t][t] set, any subset of the recomputable nodes before t) and lets
// remat.ScheduleStages and remat.Evaluate derive and measure each plan. It
// is complete because a plan's memory is that of its compute sequence,
// which R alone fixes, and Schedule's S and FREE are legal for any such R.
// 2^(n(n−1)/2) plans at most: n ≤ 6.
type exhaustive struct {
	front []point // the least cost at each peak, by increasing peak and decreasing cost
}

type point struct {
	peak int64
	cost float64
}

func newExhaustive(t testing.TB, p *remat.Problem) *exhaustive {
	t.Helper()
	n := p.N()
	if n > 6 {
		t.Fatalf("exhaustive: %d nodes", n)
	}
	var all []point
	stages := make([][]int32, n)
	var rec func(s int)
	rec = func(s int) {
		if s == n {
			pl, err := remat.ScheduleStages(p, stages)
			if err != nil {
				t.Fatal(err)
			}
			res, err := remat.Evaluate(p, pl)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, point{res.PeakBytes, res.TotalSeconds})
			return
		}
		var c []int32
		for i := range s {
			if p.Recomputable[i] {
				c = append(c, int32(i))
			}
		}
		for mask := 0; mask < 1<<len(c); mask++ {
			st := stages[s][:0]
			for k, i := range c {
				if mask>>k&1 != 0 {
					st = append(st, i)
				}
			}
			stages[s] = append(st, int32(s))
			rec(s + 1)
		}
	}
	rec(0)
	slices.SortFunc(all, func(a, b point) int {
		if a.peak != b.peak {
			return int(a.peak - b.peak)
		}
		return int(math.Copysign(1, a.cost-b.cost))
	})
	e := &exhaustive{}
	for _, q := range all {
		if len(e.front) == 0 || q.cost < e.front[len(e.front)-1].cost {
			e.front = append(e.front, q)
		}
	}
	return e
}

// leastPeak is the least peak of any plan.
func (e *exhaustive) leastPeak() int64 { return e.front[0].peak }

// optimum is the least cost of a plan within budget, ok false when none
// fits.
func (e *exhaustive) optimum(budget int64) (float64, bool) {
	opt, ok := math.Inf(1), false
	for _, q := range e.front {
		if q.peak <= budget {
			opt, ok = q.cost, true
		}
	}
	return opt, ok
}

// counterexample is the corpus problem random-irrational-costs at a budget
// of 17 bytes with its optimal plan, which keeps node 0 resident until
// stage 7, where the recomputation of node 1 reads it, instead of
// recomputing node 0 too: 2.2333 s. (The first solvertest.BruteForce
// missed it and reported 2.3333 s: it only retained values that later
// nodes read directly.)
func counterexample(t testing.TB) (*remat.Problem, *remat.Plan) {
	t.Helper()
	var p *remat.Problem
	for _, c := range solvertest.Corpus() {
		if c.Name == "random-irrational-costs" {
			p = withBudget(c.Problem, 17)
		}
	}
	if p == nil {
		t.Skip("the corpus no longer has random-irrational-costs")
	}
	stages := make([][]int32, p.N())
	for s := range stages {
		stages[s] = []int32{int32(s)}
	}
	stages[7] = []int32{1, 7}
	pl, err := remat.ScheduleStages(p, stages)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remat.Check(p, pl); err != nil {
		t.Fatalf("the counterexample plan fails Check: %v", err)
	}
	return p, pl
}
