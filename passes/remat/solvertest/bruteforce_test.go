package solvertest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

func TestBruteForceKumarFigure1(t *testing.T) {
	p := KumarFigure1()
	for _, tt := range []struct {
		budget int64
		cost   float64
		seq    []int32
	}{
		{4, 5, []int32{0, 1, 2, 3, 4}},
		{3, 6, []int32{0, 1, 2, 3, 0, 4}}, // ⟨A,B,C,D,A,E⟩
	} {
		plan, err := BruteForce(withBudget(p, tt.budget))
		if err != nil {
			t.Fatalf("budget %d: %v", tt.budget, err)
		}
		if c := plan.Cost(p); c != tt.cost || !slices.Equal(plan.Sequence(), tt.seq) {
			t.Errorf("budget %d: cost %v, sequence %v; want %v, %v", tt.budget, c, plan.Sequence(), tt.cost, tt.seq)
		}
		if !plan.Optimal || plan.Solver != "brute-force" {
			t.Errorf("budget %d: Optimal %v, Solver %q", tt.budget, plan.Optimal, plan.Solver)
		}
	}
	// Two units cannot hold D's two inputs and its output.
	_, err := BruteForce(withBudget(p, 2))
	var be *remat.BudgetError
	if !errors.As(err, &be) || be.NeedBytes != 3 || be.HaveBytes != 2 || !be.Proven || !errors.Is(err, remat.ErrInfeasible) {
		t.Fatalf("budget 2: %v; want a proven BudgetError needing 3 bytes", err)
	}
	if be.Plan == nil || be.Plan.Cost(p) != 6 {
		t.Errorf("budget 2: BudgetError.Plan %v; want the optimal plan at 3 bytes", be.Plan)
	}
}

// Checkmate §4.6: the 8-layer linear network (n = 17) with unit costs and
// sizes at a budget of 4. The paper gives the solve times (9.4 hours for
// the unpartitioned MILP, 0.23 s for the frontier-advancing one, "to the
// same objective") but not the objective itself.
func TestBruteForceCheckmateLinear8(t *testing.T) {
	p := withBudget(LinearNetwork(8), 4)
	if p.N() != 17 {
		t.Fatalf("n = %d, want 17", p.N())
	}
	plan, err := BruteForce(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Check(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("8-layer linear network, budget 4: optimal cost %v (checkpoint-all %v), peak %d, %d recomputations; stages %v",
		res.TotalSeconds, p.LowerBoundSeconds(), res.PeakBytes, res.Recomputations, plan.Stages())
	if res.TotalSeconds != wantLinear8Budget4 {
		t.Errorf("optimal cost %v, want %v", res.TotalSeconds, wantLinear8Budget4)
	}
	// The least budget of any plan: 3, at cost 45 (§4.2's constant memory
	// at O(n²) operations). The costs at budgets 4 to 6 are in the golden
	// references (checkmate-linear-8), which TestReferencesGolden checks.
	if testing.Short() {
		return
	}
	plan, err = BruteForce(withBudget(p, 3))
	if err != nil {
		t.Fatalf("budget 3: %v", err)
	}
	if c := plan.Cost(p); c != 45 {
		t.Errorf("budget 3: optimal cost %v, want 45", c)
	}
	if _, err := BruteForce(withBudget(p, 2)); !errors.Is(err, remat.ErrInfeasible) {
		t.Errorf("budget 2: %v, want ErrInfeasible (3 is the least peak)", err)
	}
}

// wantLinear8Budget4 is the brute-force optimum of the 8-layer linear
// network at budget 4: 26 unit computations, the 17 of checkpoint-all
// plus 9 recomputations (see TestBruteForceCheckmateLinear8). The least
// budget of any plan is 3 (cost 45: §4.2's constant memory at O(n²)
// operations).
const wantLinear8Budget4 = 26

// exhaustive is an independent reference for tiny problems: it enumerates
// every frontier-advancing R (each stage t recomputes any subset of the
// recomputable nodes before t), completes it with remat.Schedule, and
// keeps the cheapest plan that passes remat.Check. It shares nothing with
// BruteForce's search.
func exhaustive(p *remat.Problem) (best float64, feasible bool) {
	n := p.N()
	best = math.Inf(1)
	R := make([][]bool, n)
	for t := range R {
		R[t] = make([]bool, n)
		R[t][t] = true
	}
	var rec func(t, i int)
	rec = func(t, i int) {
		if t == n {
			plan, err := remat.Schedule(p, R)
			if err != nil {
				panic(err)
			}
			if res, err := remat.Check(p, plan); err == nil && res.TotalSeconds < best {
				best, feasible = res.TotalSeconds, true
			}
			return
		}
		if i == t {
			rec(t+1, 0)
			return
		}
		rec(t, i+1)
		if p.Recomputable[i] {
			R[t][i] = true
			rec(t, i+1)
			R[t][i] = false
		}
	}
	rec(0, 0)
	return best, feasible
}

func TestBruteForceAgreesWithExhaustiveEnumeration(t *testing.T) {
	// n = 6 has 2^15 R matrices per budget; -short keeps to n ≤ 5.
	maxN, seeds := 6, uint64(30)
	if testing.Short() {
		maxN, seeds = 5, 15
	}
	var cases []Case
	for _, c := range Corpus() {
		if c.Problem.N() <= maxN {
			cases = append(cases, c)
		}
	}
	for seed := uint64(100); seed < 100+seeds; seed++ {
		n := 3 + int(seed%4)
		if n > maxN {
			continue
		}
		cases = append(cases, Case{Name: fmt.Sprint("random-", seed), Problem: RandomDAG(seed, n)})
	}
	checked := 0
	for _, c := range cases {
		ref, err := newReference(Case{Name: c.Name, Problem: c.Problem})
		if err != nil {
			t.Fatal(err)
		}
		for b := max(ref.minPeak-1, 0); b <= ref.caPeak; b++ {
			p := withBudget(c.Problem, b)
			want, feasible := exhaustive(p)
			plan, err := BruteForce(p)
			switch {
			case feasible && err != nil:
				t.Errorf("%s at %d: brute force: %v; exhaustive finds cost %v", c.Name, b, err, want)
			case !feasible && err == nil:
				t.Errorf("%s at %d: brute force finds cost %v; exhaustive finds no plan", c.Name, b, plan.Cost(p))
			case feasible && plan.Cost(p) != want:
				t.Errorf("%s at %d: brute force cost %v; exhaustive %v", c.Name, b, plan.Cost(p), want)
			}
			checked++
		}
	}
	t.Logf("%d problem-budget pairs agree", checked)
}

// Every brute-force plan satisfies Theorem 4.1 (each value is freed at
// most once per stage) and its FREE is exactly eq. (5) with its R and S:
// FREE_{t,i,k} = R_{t,k} (1 − S_{t+1,i}) Π_{j ∈ USERS[i], j > k} (1 − R_{t,j})
// for k ∈ USERS[i] ∪ {i}, with S_{T+1} the outputs.
func TestBruteForceTheorem41(t *testing.T) {
	plans := 0
	for _, c := range Corpus() {
		if testing.Short() && c.Problem.N() > 10 {
			continue // the brute force is exponential in the nodes
		}
		ref, err := cachedReference(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range ref.budgets {
			p := withBudget(c.Problem, b)
			plan, err := BruteForce(p)
			if err != nil {
				continue
			}
			plans++
			checkEq5(t, c.Name, p, plan)
		}
	}
	t.Logf("%d plans checked", plans)
}

func checkEq5(tb *testing.T, name string, p *remat.Problem, plan *remat.Plan) {
	tb.Helper()
	n := p.N()
	users := make([][]int, n)
	for j, ds := range p.Deps {
		for _, d := range ds {
			users[d] = append(users[d], j)
		}
	}
	sNext := func(t, i int) bool {
		if t+1 < n {
			return plan.S[t+1].Has(i)
		}
		return slices.Contains(p.Outputs, int32(i))
	}
	// freeAfter[t][i] = k from the ops: the free of i follows compute k.
	for t := range n {
		freeAfter := map[int]int{}
		k := -1
		for _, op := range plan.Ops {
			if int(op.Stage) != t {
				continue
			}
			if op.Kind == remat.OpCompute {
				k = int(op.Node)
				continue
			}
			if _, dup := freeAfter[int(op.Node)]; dup {
				tb.Errorf("%s: stage %d frees node %d twice (Theorem 4.1)", name, t, op.Node)
			}
			freeAfter[int(op.Node)] = k
		}
		for i := 0; i <= t; i++ {
			for _, k := range append([]int{i}, users[i]...) {
				if k > t {
					continue
				}
				want := plan.R[t].Has(k) && !sNext(t, i)
				for _, j := range users[i] {
					if j > k && plan.R[t].Has(j) {
						want = false
					}
				}
				got := false
				if kk, ok := freeAfter[i]; ok && kk == k {
					got = true
				}
				if got != want {
					tb.Errorf("%s: FREE[%d][%d][%d] = %v, eq. (5) gives %v", name, t, i, k, got, want)
				}
			}
		}
	}
}

// TestBruteForceRetainsForRecomputation: the optimum may keep a value
// resident only so that a later stage can recompute one of its readers
// from it. On random-irrational-costs at 17 bytes the plan that keeps node
// 0 until stage 7, where node 1 is recomputed, costs 2.2333 s; a search
// that retained only values later nodes read directly reported 2.3333 s.
func TestBruteForceRetainsForRecomputation(t *testing.T) {
	var p *remat.Problem
	for _, c := range Corpus() {
		if c.Name == "random-irrational-costs" {
			p = withBudget(c.Problem, 17)
		}
	}
	if p == nil {
		t.Fatal("the corpus has no random-irrational-costs")
	}
	stages := make([][]int32, p.N())
	for s := range stages {
		stages[s] = []int32{int32(s)}
	}
	stages[7] = []int32{1, 7}
	want, err := remat.ScheduleStages(p, stages)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remat.Check(p, want); err != nil {
		t.Fatalf("the reference plan fails Check: %v", err)
	}
	got, err := BruteForce(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cost(p) > want.Cost(p)+1e-9 {
		t.Errorf("BruteForce reports the optimum %v; the plan %v costs %v", got.Cost(p), want.Sequence(), want.Cost(p))
	}
}
