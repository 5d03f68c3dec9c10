// Package solvertest is the conformance suite that every remat solver
// passes (DESIGN.md, "Testing"), with the brute-force reference solver it
// measures them against and the corpus of small problems it runs on.
//
// A solver package's test is one line:
//
//	func TestConformance(t *testing.T) { solvertest.Run(t, mysolver.Solver, solvertest.Options{}) }
package solvertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// Options configure Run. The zero value is the strict default.
type Options struct {
	// Timeout bounds each Solve call (default 30 s). A solver must return
	// within it, plus a second of grace.
	Timeout time.Duration
	// MaxNodes skips corpus problems with more nodes (0: none skipped).
	MaxNodes int
	// MayFail lets a heuristic solver return an error on problems where
	// checkpoint-all fits the budget. By default even a heuristic must then
	// return a plan. Exact solvers must always return one when one exists.
	MayFail bool
	// Cases are run after the corpus.
	Cases []Case
}

// Run checks s on every problem of the corpus (and opts.Cases) at several
// budgets, against BruteForce:
//   - the Solver is declared properly (Name, Doc, Solve);
//   - every returned plan passes remat.Check (legal, within budget),
//     carries the solver's name, and leaves the Problem unmodified;
//   - no plan costs less than the brute-force optimum, nor less than
//     checkpoint-all's cost, the sum of all costs (every plan computes
//     every node at least once);
//   - an exact solver's plan costs exactly the optimum (for problems with
//     the multi-output refinement, at most the optimum of the coarse
//     problem it may model instead), and it returns a plan whenever one
//     exists;
//   - a plan that claims Optimal costs the optimum; LowerBound never
//     exceeds it; Gap is non-negative;
//   - when checkpoint-all fits, every solver returns a plan (unless
//     opts.MayFail);
//   - errors are remat.ErrInfeasible or a *remat.BudgetError whose
//     NeedBytes is over the budget, at least the least peak of any plan,
//     and, with a Plan, that plan's peak;
//   - solving twice gives the same plan (determinism), the second time
//     with a nil progress callback;
//   - progress reports have non-decreasing Elapsed and non-negative Gap;
//   - a cancelled context makes Solve return promptly.
func Run(t *testing.T, s remat.Solver, opts Options) {
	t.Helper()
	if s.Name == "" || s.Doc == "" || s.Solve == nil {
		t.Fatalf("solver %q: Name, Doc and Solve must all be set", s.Name)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	cases := append(Corpus(), opts.Cases...)
	for _, c := range cases {
		if opts.MaxNodes > 0 && c.Problem.N() > opts.MaxNodes {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			ref, err := cachedReference(c)
			if err != nil {
				t.Fatalf("reference: %v", err)
			}
			for _, b := range ref.budgets {
				t.Run(fmt.Sprintf("budget=%d", b), func(t *testing.T) {
					checkOne(t, s, opts, ref, b)
				})
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) { checkCancelled(t, s) })
}

// reference holds what brute force says about one case.
type reference struct {
	c       Case
	minPeak int64 // the least peak of any plan
	caPeak  int64 // checkpoint-all's peak
	budgets []int64
	opt     map[int64]float64 // optimum per budget; absent: infeasible
	coarse  map[int64]float64 // the coarse problem's optimum, for refined problems
}

func withBudget(p *remat.Problem, b int64) *remat.Problem {
	q := *p
	q.BudgetBytes = b
	return &q
}

// references caches the reference of each case (goldenReference, else
// newReference): a test binary usually runs the suite for several solvers
// over the same corpus.
var referenceCache sync.Map // caseKey → *reference

// caseKey identifies a case by its name and a hash of its problem and
// budgets, so that a golden reference of a case that changed is not used.
func caseKey(c Case) string {
	p := c.Problem
	h := sha256.Sum256(fmt.Append(nil, p.Deps, p.Seconds, p.Bytes, p.Recomputable, p.Outputs, p.ConstBytes, p.Parts, p.Reads, p.OutputParts, c.Budgets))
	return c.Name + "@" + hex.EncodeToString(h[:8])
}

func cachedReference(c Case) (*reference, error) {
	key := caseKey(c)
	if r, ok := referenceCache.Load(key); ok {
		return r.(*reference), nil
	}
	r, ok := goldenReference(c, key)
	if !ok {
		var err error
		if r, err = newReference(c); err != nil {
			return nil, err
		}
	}
	referenceCache.Store(key, r)
	return r, nil
}

func newReference(c Case) (*reference, error) {
	p := c.Problem
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r := &reference{c: c, opt: map[int64]float64{}, coarse: map[int64]float64{}}
	least, err := leastPeak(p)
	if err != nil {
		return nil, err
	}
	r.minPeak = least
	identity := make([][]int32, p.N())
	for t := range identity {
		identity[t] = []int32{int32(t)}
	}
	ca, err := remat.ScheduleStages(p, identity)
	if err != nil {
		return nil, err
	}
	res, err := remat.Evaluate(p, ca)
	if err != nil {
		return nil, err
	}
	r.caPeak = res.PeakBytes
	r.budgets = c.Budgets
	if r.budgets == nil {
		span := r.caPeak - least
		for _, b := range []int64{least - 1, least, least + span/3, least + 2*span/3, r.caPeak} {
			if b >= 0 && !slices.Contains(r.budgets, b) {
				r.budgets = append(r.budgets, b)
			}
		}
		slices.Sort(r.budgets)
	}
	for _, b := range r.budgets {
		if plan, err := BruteForce(withBudget(p, b)); err == nil {
			r.opt[b] = plan.Cost(p)
		} else if !errors.Is(err, remat.ErrInfeasible) {
			return nil, err
		}
		if p.Refined() {
			if plan, err := BruteForce(withBudget(p.Coarse(), b)); err == nil {
				r.coarse[b] = plan.Cost(p)
			} else if !errors.Is(err, remat.ErrInfeasible) {
				return nil, err
			}
		}
	}
	return r, nil
}

// leastPeak is the least peak of any plan of p.
func leastPeak(p *remat.Problem) (int64, error) {
	plan, err := BruteForce(withBudget(p, 0))
	if err == nil {
		res, err := remat.Evaluate(p, plan)
		return res.PeakBytes, err
	}
	var be *remat.BudgetError
	if errors.As(err, &be) {
		return be.NeedBytes, nil
	}
	return 0, err
}

// approx reports whether a and b agree to a relative 1e-9.
func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// below reports whether a is less than b by more than the tolerance.
func below(a, b float64) bool { return a < b && !approx(a, b) }

type outcome struct {
	plan     *remat.Plan
	err      error
	elapsed  time.Duration
	reports  []remat.Progress
	deadline bool // the context's deadline passed
}

func solve(s remat.Solver, p *remat.Problem, timeout time.Duration, withProgress bool) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var o outcome
	var progress func(remat.Progress)
	if withProgress {
		progress = func(pr remat.Progress) { o.reports = append(o.reports, pr) }
	}
	start := time.Now()
	o.plan, o.err = s.Solve(ctx, p, progress)
	o.elapsed = time.Since(start)
	o.deadline = ctx.Err() != nil
	return o
}

func checkOne(t *testing.T, s remat.Solver, opts Options, ref *reference, budget int64) {
	p := withBudget(ref.c.Problem, budget)
	orig := clone(p)
	opt, feasible := ref.opt[budget]
	coarseOpt, coarseFeasible := ref.coarse[budget]
	caFits := ref.caPeak <= budget
	lb := p.LowerBoundSeconds()

	o := solve(s, p, opts.Timeout, true)
	if o.elapsed > opts.Timeout+time.Second {
		t.Errorf("Solve took %v, past its %v deadline", o.elapsed, opts.Timeout)
	}
	if !reflect.DeepEqual(p, orig) {
		t.Fatalf("Solve modified the problem")
	}
	checkProgress(t, o.reports)
	if o.err != nil {
		checkError(t, s, ref, p, o, feasible, caFits, opts)
	} else {
		checkPlan(t, s, p, o, budget, checkPlanRef{opt, feasible, coarseOpt, coarseFeasible, lb})
	}

	// Determinism: the same answer again, without a progress callback.
	o2 := solve(s, p, opts.Timeout, false)
	switch {
	case o.deadline || o2.deadline:
		// A solver cut short by its deadline may stop at different points.
	case (o.err == nil) != (o2.err == nil):
		t.Errorf("not deterministic: first Solve returned error %v, second %v", o.err, o2.err)
	case o.err == nil && !slices.Equal(o.plan.Sequence(), o2.plan.Sequence()):
		t.Errorf("not deterministic: two Solves returned different plans:\n%v\n%v", o.plan.Sequence(), o2.plan.Sequence())
	}
}

type checkPlanRef struct {
	opt            float64
	feasible       bool
	coarseOpt      float64
	coarseFeasible bool
	lowerBound     float64
}

func checkPlan(t *testing.T, s remat.Solver, p *remat.Problem, o outcome, budget int64, r checkPlanRef) {
	t.Helper()
	plan := o.plan
	if plan == nil {
		t.Fatalf("Solve returned neither a plan nor an error")
	}
	res, err := remat.Check(p, plan)
	if err != nil {
		t.Fatalf("the plan fails Check: %v", err)
	}
	cost := res.TotalSeconds
	if plan.Solver != s.Name {
		t.Errorf("plan.Solver = %q, want %q", plan.Solver, s.Name)
	}
	if !r.feasible {
		t.Fatalf("brute force finds no plan within %d bytes, but the solver returned one that passes Check (cost %v, peak %d): the reference is wrong", budget, cost, res.PeakBytes)
	}
	if below(cost, r.opt) {
		t.Errorf("cost %v beats the brute-force optimum %v", cost, r.opt)
	}
	if below(cost, r.lowerBound) {
		t.Errorf("cost %v is below checkpoint-all's cost %v, which no plan beats", cost, r.lowerBound)
	}
	// The optimum a correct exact solver reaches: the problem's own, or,
	// for the multi-output refinement it may ignore, at worst the coarse
	// problem's.
	exactLimit, exactFeasible := r.opt, true
	if p.Refined() {
		exactLimit, exactFeasible = r.coarseOpt, r.coarseFeasible
	}
	if s.Exact && exactFeasible && below(exactLimit, cost) {
		t.Errorf("exact solver: cost %v, but the optimum is %v (brute force)", cost, exactLimit)
	}
	if s.Exact && o.deadline {
		t.Errorf("exact solver: hit the %v deadline on a problem of %d nodes", o.elapsed, p.N())
	}
	if plan.Optimal {
		switch {
		case !p.Refined() && !approx(cost, r.opt):
			t.Errorf("the plan claims Optimal at cost %v, but the optimum is %v (brute force)", cost, r.opt)
		case p.Refined() && exactFeasible && below(exactLimit, cost):
			t.Errorf("the plan claims Optimal at cost %v, but even the coarse problem's optimum is %v (brute force)", cost, exactLimit)
		}
	}
	if below(r.opt, plan.LowerBound) {
		t.Errorf("LowerBound %v exceeds the optimum %v", plan.LowerBound, r.opt)
	}
	if math.IsNaN(plan.Gap) || plan.Gap < 0 {
		t.Errorf("Gap %v; want a non-negative number", plan.Gap)
	}
	if plan.Optimal && plan.Gap != 0 {
		t.Errorf("an Optimal plan has Gap %v", plan.Gap)
	}
}

func checkError(t *testing.T, s remat.Solver, ref *reference, p *remat.Problem, o outcome, feasible, caFits bool, opts Options) {
	t.Helper()
	err := o.err
	var be *remat.BudgetError
	switch {
	case errors.As(err, &be):
		if be.HaveBytes != p.BudgetBytes {
			t.Errorf("BudgetError.HaveBytes = %d, want the budget %d", be.HaveBytes, p.BudgetBytes)
		}
		if be.NeedBytes <= be.HaveBytes {
			t.Errorf("BudgetError.NeedBytes = %d is within the budget %d", be.NeedBytes, be.HaveBytes)
		}
		if be.NeedBytes < ref.minPeak {
			t.Errorf("BudgetError.NeedBytes = %d, below the least peak of any plan, %d", be.NeedBytes, ref.minPeak)
		}
		if be.Proven && feasible {
			t.Errorf("BudgetError claims Proven, but brute force finds a plan")
		}
		if be.Plan != nil {
			res, err := remat.Evaluate(p, be.Plan)
			switch {
			case err != nil:
				t.Errorf("BudgetError.Plan is illegal: %v", err)
			case res.PeakBytes != be.NeedBytes:
				t.Errorf("BudgetError.Plan peaks at %d bytes, not NeedBytes %d", res.PeakBytes, be.NeedBytes)
			}
		}
	case errors.Is(err, remat.ErrInfeasible):
		if feasible {
			t.Errorf("ErrInfeasible, but brute force finds a plan")
		}
	case o.deadline && errors.Is(err, context.DeadlineExceeded):
		t.Errorf("Solve ran out of time (%v) without a plan", opts.Timeout)
		return
	default:
		t.Errorf("error %v: want a plan, remat.ErrInfeasible or a *remat.BudgetError", err)
		return
	}
	exactFeasible := feasible
	if p.Refined() {
		_, exactFeasible = ref.coarse[p.BudgetBytes]
	}
	switch {
	case s.Exact && exactFeasible:
		t.Errorf("exact solver found no plan, but brute force does: %v", err)
	case caFits && !opts.MayFail:
		t.Errorf("no plan, but checkpoint-all fits the budget (peak %d ≤ %d): %v", ref.caPeak, p.BudgetBytes, err)
	}
}

func checkProgress(t *testing.T, reports []remat.Progress) {
	t.Helper()
	last := 0.0
	for k, r := range reports {
		if r.Elapsed < last || math.IsNaN(r.Elapsed) {
			t.Errorf("progress report %d: Elapsed %v after %v", k, r.Elapsed, last)
		}
		last = r.Elapsed
		if math.IsNaN(r.Gap) || r.Gap < 0 {
			t.Errorf("progress report %d: Gap %v", k, r.Gap)
		}
	}
}

func checkCancelled(t *testing.T, s remat.Solver) {
	p := withBudget(LinearNetwork(8), 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	plan, err := s.Solve(ctx, p, nil)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("with a cancelled context Solve took %v", d)
	}
	if err == nil {
		if _, cerr := remat.Check(p, plan); cerr != nil {
			t.Errorf("with a cancelled context Solve returned a plan that fails Check: %v", cerr)
		}
	}
}

// clone deep-copies a problem, to detect solvers that modify theirs.
func clone(p *remat.Problem) *remat.Problem {
	q := *p
	q.Deps = make([][]int32, len(p.Deps))
	for i, d := range p.Deps {
		q.Deps[i] = slices.Clone(d)
	}
	q.Seconds = slices.Clone(p.Seconds)
	q.Bytes = slices.Clone(p.Bytes)
	q.Recomputable = slices.Clone(p.Recomputable)
	q.Outputs = slices.Clone(p.Outputs)
	q.Names = slices.Clone(p.Names)
	if p.Parts != nil {
		q.Parts = make([][]int64, len(p.Parts))
		for i, ps := range p.Parts {
			q.Parts[i] = slices.Clone(ps)
		}
	}
	if p.Reads != nil {
		q.Reads = make([][]remat.Part, len(p.Reads))
		for i, rs := range p.Reads {
			q.Reads[i] = slices.Clone(rs)
		}
	}
	q.OutputParts = slices.Clone(p.OutputParts)
	return &q
}
