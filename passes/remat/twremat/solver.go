package twremat

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// Name is the name of the default solver, Solver.
const Name = "twremat"

// DefaultMaxLength is the default bound on the computations one run of
// Algorithm 1 may emit (its schedule σ, before the stages merge repeats
// within a stage). Theorem 5 bounds the length by O(T_onepass·k·n^log(k+2))
// for width k: on graphs of large width the deep recursions are far too
// long to run, and the sweep stops at the first that exceeds the bound.
const DefaultMaxLength = 1 << 22

// Options configure a TWRemat solver.
type Options struct {
	// K, when positive, fixes the recursion cut-off of TWRemat(K) (§4.3):
	// the recursion stops at components of fewer than K bags, which are
	// computed in topological order. K = 1 is Algorithm 1 itself; a K above
	// the number of bags is the plain schedule, every node once. When K is
	// 0 the solver sweeps K from the plain schedule toward full recursion
	// and returns the cheapest plan within the budget. A negative K is an
	// error.
	K int
	// MaxLength bounds the length of σ in one run (0: DefaultMaxLength).
	MaxLength int64
}

// Solver is TWRemat with the recursion cut-off chosen for the budget.
var Solver = NewWith(Options{})

// New returns TWRemat(k), Algorithm 1 with its recursion cut off below k
// bags (§4.3): New(1) is Algorithm 1, larger k recompute less and use
// more memory. It is not budget-aware: it returns its one plan when it
// fits and a *remat.BudgetError carrying it otherwise, and an error when
// its σ exceeds DefaultMaxLength computations. k must be at least 1
// (Solve reports an error otherwise).
func New(k int) remat.Solver {
	if k < 1 {
		name := fmt.Sprintf("%s-k%d", Name, k)
		return remat.Solver{
			Name: name,
			Doc:  "TWRemat with an invalid recursion cut-off (k must be at least 1).",
			Solve: func(context.Context, *remat.Problem, func(remat.Progress)) (*remat.Plan, error) {
				return nil, fmt.Errorf("%s: the recursion cut-off k is %d; want at least 1", name, k)
			},
		}
	}
	return NewWith(Options{K: k})
}

// NewWith returns the solver the options describe.
func NewWith(o Options) remat.Solver {
	name, doc := Name, "Kumar et al. (2019) TWRemat: divide and conquer on balanced separators of a min-fill tree decomposition (Algorithm 1), sweeping the recursion cut-off TWRemat(k) (§4.3) for the cheapest plan within the budget."
	if o.K != 0 {
		name = fmt.Sprintf("%s-k%d", Name, o.K)
		doc = fmt.Sprintf("Kumar et al. (2019) TWRemat(%d): Algorithm 1 on a min-fill tree decomposition, recursion cut off below %d bags (§4.3); not budget-aware.", o.K, o.K)
	}
	return remat.Solver{
		Name: name,
		Doc:  doc,
		Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
			return solve(ctx, p, progress, o, name)
		},
	}
}

// measured is one plan with what Evaluate says of it.
type measured struct {
	k    int
	plan *remat.Plan
	res  remat.CheckResult
}

// Prepared is a problem's tree decomposition and separator hierarchy,
// computed once for any number of runs of TWRemat(k).
type Prepared struct {
	p *remat.Problem
	d *decomposition
	h *hierarchy
}

// Prepare validates p and builds its tree decomposition (minimum
// fill-in, Lemma 1) and separator hierarchy (Lemma 3). It stops with
// ctx's error when ctx is done.
func Prepare(ctx context.Context, p *remat.Problem) (*Prepared, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d, err := decompose(ctx, p.Deps)
	if err != nil {
		return nil, err
	}
	return &Prepared{p: p, d: d, h: buildHierarchy(d, p.N())}, nil
}

// Width is the width of the tree decomposition: its largest bag minus
// one (§2.2), an upper bound on the treewidth.
func (pr *Prepared) Width() int { return pr.d.width() }

// Bags is the number of bags after Lemma 1's shrinking (at most N).
func (pr *Prepared) Bags() int { return len(pr.d.bags) }

// Depth is the number of levels of the separator hierarchy: the most
// nested recursive calls Algorithm 1 can make, plus one.
func (pr *Prepared) Depth() int {
	depth := 0
	var walk func(c int32, dep int)
	walk = func(c int32, dep int) {
		depth = max(depth, dep)
		for _, k := range pr.h.comps[c].kids {
			walk(k, dep+1)
		}
	}
	if len(pr.h.comps) > 0 {
		walk(0, 1)
	}
	return depth
}

// Cutoffs returns the values of k at which TWRemat(k) changes, from the
// plain schedule (the number of bags plus one) down to 1, Algorithm 1:
// the distinct component sizes of the hierarchy, plus one above them all.
func (pr *Prepared) Cutoffs() []int {
	seen := map[int32]bool{}
	top := int32(0)
	for _, c := range pr.h.comps {
		seen[c.bags] = true
		top = max(top, c.bags)
	}
	ks := []int{int(top) + 1}
	for b := top; b >= 1; b-- {
		if seen[b] {
			ks = append(ks, int(b))
		}
	}
	return ks
}

// Run is one run of TWRemat(k): the plan, checked by remat.Evaluate (not
// against the budget), and the length of Algorithm 1's schedule σ. It
// stops with an error when σ would exceed maxLength computations (0:
// DefaultMaxLength; never less than N, the plain schedule's length) or
// ctx is done.
func (pr *Prepared) Run(ctx context.Context, k int, maxLength int64) (*remat.Plan, remat.CheckResult, int64, error) {
	if k < 1 {
		return nil, remat.CheckResult{}, 0, fmt.Errorf("twremat: the recursion cut-off k is %d; want at least 1", k)
	}
	if maxLength <= 0 {
		maxLength = DefaultMaxLength
	}
	maxLength = max(maxLength, int64(pr.p.N())) // the plain schedule always runs
	stages, length, err := run(ctx, pr.p, pr.h, k, maxLength)
	if err != nil {
		return nil, remat.CheckResult{}, length, err
	}
	plan, err := remat.ScheduleStages(pr.p, stages)
	if err != nil {
		return nil, remat.CheckResult{}, length, fmt.Errorf("remat: internal error: twremat produced illegal stages: %w", err)
	}
	res, err := remat.Evaluate(pr.p, plan)
	if err != nil {
		return nil, remat.CheckResult{}, length, fmt.Errorf("remat: internal error: twremat produced an illegal plan: %w", err)
	}
	return plan, res, length, nil
}

// sweep picks the cut-offs the default solver tries, from the plain
// schedule toward full recursion: every cut-off when there are few, else
// a geometric selection (each at most 5/6 of the previous one) that keeps
// the first two and the last.
func sweep(all []int) []int {
	if len(all) <= 40 {
		return all
	}
	ks := all[:2:2]
	for _, k := range all[2 : len(all)-1] {
		if 6*k <= 5*ks[len(ks)-1] {
			ks = append(ks, k)
		}
	}
	return append(ks, all[len(all)-1])
}

func solve(ctx context.Context, p *remat.Problem, progress func(remat.Progress), o Options, name string) (*remat.Plan, error) {
	start := time.Now()
	if o.K < 0 {
		return nil, fmt.Errorf("%s: the recursion cut-off k is %d; want at least 1", name, o.K)
	}
	pr, err := Prepare(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w while building the tree decomposition", name, err)
		}
		return nil, err
	}
	ks := []int{o.K}
	if o.K == 0 {
		ks = sweep(pr.Cutoffs())
	}
	lb := p.LowerBoundSeconds()
	var fit, low *measured
	var cut error
	for i, k := range ks {
		if i > 0 {
			if err := ctx.Err(); err != nil {
				cut = err
				break
			}
		}
		plan, res, length, err := pr.Run(ctx, k, o.MaxLength)
		if err == errTooLong {
			if progress != nil {
				progress(remat.Progress{Elapsed: time.Since(start).Seconds(), Incumbent: incumbent(fit), Bound: lb, Gap: gap(fit, lb),
					Note: fmt.Sprintf("TWRemat(%d): the schedule exceeds %d computations; deeper recursion is longer still, so the sweep stops", k, length-1)})
			}
			if fit == nil && low == nil {
				return nil, fmt.Errorf("%s: TWRemat(%d)'s schedule exceeds %d computations", name, k, length-1)
			}
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				cut = ctx.Err()
				break
			}
			return nil, err
		}
		m := &measured{k, plan, res}
		if res.PeakBytes <= p.BudgetBytes && (fit == nil || res.TotalSeconds < fit.res.TotalSeconds ||
			res.TotalSeconds == fit.res.TotalSeconds && res.PeakBytes < fit.res.PeakBytes) {
			fit = m
		}
		if low == nil || res.PeakBytes < low.res.PeakBytes ||
			res.PeakBytes == low.res.PeakBytes && res.TotalSeconds < low.res.TotalSeconds {
			low = m
		}
		if progress != nil {
			progress(remat.Progress{Elapsed: time.Since(start).Seconds(), Incumbent: incumbent(fit), Bound: lb, Gap: gap(fit, lb),
				Note: fmt.Sprintf("TWRemat(%d) (width %d, %d bags): σ of %d computations, plan of %d (%.2f·n), peak %d bytes, %.4g s",
					k, pr.Width(), pr.Bags(), length, len(plan.Sequence()), float64(len(plan.Sequence()))/float64(max(p.N(), 1)), res.PeakBytes, res.TotalSeconds)})
		}
		if fit != nil && fit.res.TotalSeconds <= lb {
			break // nothing is cheaper than computing every node once
		}
	}
	if fit == nil {
		if cut != nil {
			return nil, fmt.Errorf("%s: %w before any plan within the budget was found", name, cut)
		}
		label(low.plan, low.res, p, name, false)
		return nil, &remat.BudgetError{NeedBytes: low.res.PeakBytes, HaveBytes: p.BudgetBytes, Plan: low.plan}
	}
	label(fit.plan, fit.res, p, name, true)
	if _, err := remat.Check(p, fit.plan); err != nil {
		return nil, fmt.Errorf("remat: internal error: %s: its plan within the budget fails Check: %w", name, err)
	}
	return fit.plan, nil
}

func incumbent(fit *measured) float64 {
	if fit == nil {
		return math.Inf(1)
	}
	return fit.res.TotalSeconds
}

func gap(fit *measured, lb float64) float64 {
	if fit == nil {
		return math.Inf(1)
	}
	return gapOf(fit.res.TotalSeconds, lb)
}

func gapOf(cost, lb float64) float64 {
	if cost <= lb || cost <= 0 {
		return 0
	}
	return (cost - lb) / cost
}

// label fills in the plan's solver name and bounds: no plan costs less
// than computing every node once (Problem.LowerBoundSeconds), and a plan
// within the budget that costs no more is optimal.
func label(plan *remat.Plan, res remat.CheckResult, p *remat.Problem, name string, fits bool) {
	lb := p.LowerBoundSeconds()
	plan.Solver = name
	plan.LowerBound = lb
	plan.Gap = gapOf(res.TotalSeconds, lb)
	plan.Optimal = fits && res.TotalSeconds <= lb
}
