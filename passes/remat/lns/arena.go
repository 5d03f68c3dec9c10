package lns

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// arenaTries bounds the searches of a problem with an arena
// (solveArena): the first without slack, the others with the arena's
// slack (slack.add).
const arenaTries = 10

// solveArena solves a problem whose memory is counted in the runtime's
// arena (remat.Problem.Arena), or whose views share buffers
// (remat.Problem.View). The search's evaluator follows neither views nor
// the arena: it searches p.Unviewed(), where a view's reader holds the
// part the view shares, which gives a plan p's memory except where it
// frees a viewed part under a view (the loop below takes that up as it
// takes up the arena). The search's evaluator follows the
// problem's buffers (liveness, or the planner's reuse) but not the arena:
// where a chunk lies depends on every allocation and release before it,
// which no incremental evaluation of a move follows, and the arena adds
// to a plan's memory only what its chunks waste (rounding, and free
// chunks handed out whole because they are less than twice the request),
// at steps that need not be the buffers' peak. So it searches p without
// the arena, replays the plan in the arena, and, while the arena's peak
// exceeds the budget, searches again with each stage's memory raised by
// the most the arena has added to it in any plan so far, and more where
// it stays over (slack.add: an estimate, not a bound; at most arenaTries
// searches, each from the last plan, within the one deadline). The arena
// can defeat that alone: on the zoo U-Net's training graph at 2.4 MiB,
// four searches bring the buffers' peak from 2,461,724 to 2,297,884 bytes
// while the arena's stays at 2,532,096, at the same step (a chunk handed
// out whole is not smaller for a smaller request). So each search's plan
// that the arena puts over the budget is first repaired in the arena
// (repairArena); when the repaired plan fits, one more search runs with
// the slack and the cheaper of the two plans that fit is returned (the
// repaired one when the search's does not fit). A repaired plan that
// does not fit still counts for the least peak. The plan returned fits p's
// budget in the arena and passes remat.Check on p; its lower bound is the
// first search's, proven on p's relaxation (remat.Problem.Relaxed),
// which has no arena, no views and no slack. The searches share two
// thirds of the time to the deadline, each but the last half of what is
// left of that (tryContext); without a deadline they are, like Solve,
// deterministic. When no search fits, the problem's hint
// (remat.Problem.Start) is the plan if it fits: a sweep retries the least
// peak a tighter budget reached with that budget's plan as the hint.
// Otherwise the least plan is lowered in the time left (descend, then
// walkArena) and returned in a *remat.BudgetError.
func solveArena(ctx context.Context, p *remat.Problem, progress func(remat.Progress), opts Options) (*remat.Plan, error) {
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.TimeLimit)
		defer cancel()
		opts.TimeLimit = 0 // one deadline for all the searches
	}
	q := *p.Unviewed()
	q.Arena = nil
	opts.relaxed = p.Relaxed()
	var (
		bound     float64 // the first search's lower bound, 0 if none
		least     *remat.Plan
		leastPeak int64 = math.MaxInt64
		proven    bool
		sl        slack
		refitted  bool // the last search ran with the slack reset after a failure
		repaired  *remat.Plan
		fixedRes  remat.CheckResult // repaired's evaluation in the arena
	)
	// The searches get two thirds of the time: when none fits, the
	// least peak is lowered in the rest (descend, walkArena), so that a
	// budget at the least peak reported is reached again.
	sctx := shareContext(ctx, 2, 3)
	for try := 0; try < arenaTries; try++ {
		pl, err := solve(tryContext(sctx, try), &q, progress, opts)
		var be *remat.BudgetError
		switch {
		case errors.As(err, &be) && be.Plan != nil:
			proven = proven || (try == 0 && be.Proven)
			pl = be.Plan
		case err != nil && sctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
			continue // this try's share of the time ran out before a plan: the next has more
		case err != nil && least == nil:
			return nil, err
		}
		if pl == nil {
			break // cut short: the least peak found so far
		}
		if try == 0 {
			bound = pl.LowerBound
		}
		arena, err := remat.Evaluate(p, pl)
		if err != nil {
			return nil, fmt.Errorf("lns: internal error: the plan fails Evaluate in the arena: %w", err)
		}
		if arena.PeakBytes < leastPeak {
			least, leastPeak = pl, arena.PeakBytes
		}
		if arena.PeakBytes <= p.BudgetBytes {
			// Within the budget in the arena, even where the search, with
			// the slack, reported it over.
			if repaired != nil && cheaper(fixedRes, arena) {
				pl = repaired
			}
			return arenaPlan(p, pl, bound)
		}
		if repaired != nil {
			break // the search after a repair did not fit: the repaired plan stands
		}
		if fixed, res := repairArena(sctx, p, pl); fixed != nil {
			if res.PeakBytes <= p.BudgetBytes {
				// One more search, with the slack, may find a plan that
				// fits as cheaply with more room to spare: the repair
				// stops at the first plan that fits and then spends
				// the room on dropping recomputations.
				repaired, fixedRes = fixed, res
			} else if res.PeakBytes < leastPeak {
				least, leastPeak = fixed, res.PeakBytes
			}
		}
		if sctx.Err() != nil || (be != nil && (try == 0 || refitted)) {
			break // the buffers do not fit even without slack, or not with the slack of one plan
		}
		own, err := remat.Evaluate(&q, pl)
		if err != nil {
			return nil, fmt.Errorf("lns: internal error: the plan fails Evaluate: %w", err)
		}
		if refitted = be != nil; refitted {
			// The slack of all the plans so far is too much to fit: start
			// again from what the arena adds to this plan alone.
			sl = slack{}
		}
		sl.add(p.N(), pl, arena, own, p.BudgetBytes)
		opts.slack = sl.bytes
		opts.Start = pl
	}
	if repaired != nil {
		return arenaPlan(p, repaired, bound)
	}
	if st := startStages(p, p.Start); st != nil {
		// No search fitted the arena, but the problem's hint does (a
		// plan that reached this peak at a smaller budget, say).
		if hint, err := remat.ScheduleStages(p, st); err == nil {
			if res, err := remat.Evaluate(p, hint); err == nil && res.PeakBytes <= p.BudgetBytes {
				return arenaPlan(p, hint, bound)
			}
		}
	}
	if least == nil {
		return nil, &remat.BudgetError{NeedBytes: math.MaxInt64, HaveBytes: p.BudgetBytes, Proven: proven}
	}
	if !proven && !opts.noDescent {
		// The searches at lower budgets get a quarter of the time left,
		// the walk in the arena the rest: on the zoo VGG16's training
		// graph the searches do not lower the least peak at all, and the
		// walk keeps lowering it for tens of seconds (walkArena).
		least, leastPeak = descend(shareContext(ctx, 1, 4), p, opts, least, leastPeak)
		if leastPeak > p.BudgetBytes {
			if pl, res := walkArena(ctx, p, least, opts.Seed); pl != nil && res.PeakBytes < leastPeak {
				least, leastPeak = pl, res.PeakBytes
			}
		}
		if leastPeak <= p.BudgetBytes {
			// A search at a budget below p's, or the walk, fitted p.
			return arenaPlan(p, least, bound)
		}
	}
	least.Solver = Name
	least.Optimal, least.LowerBound, least.Gap = false, 0, 0
	return nil, &remat.BudgetError{NeedBytes: leastPeak, HaveBytes: p.BudgetBytes, Plan: least, Proven: proven}
}

// cheaper reports whether a plan evaluated as a costs less than one
// evaluated as b, or as much (within a relative 1e-9) with a lower peak.
func cheaper(a, b remat.CheckResult) bool {
	tol := 1e-9 * max(math.Abs(a.TotalSeconds), math.Abs(b.TotalSeconds))
	if d := a.TotalSeconds - b.TotalSeconds; d < -tol || d > tol {
		return d < 0
	}
	return a.PeakBytes < b.PeakBytes
}

// tryContext gives search try of solveArena half the time left to ctx's
// deadline (the last try all of it), so that a search that runs to the
// deadline leaves time for the searches with the arena's slack.
func tryContext(ctx context.Context, try int) context.Context {
	if try == arenaTries-1 {
		return ctx
	}
	return shareContext(ctx, 1, 2)
}

// shareContext gives num/den of the time left to ctx's deadline; ctx
// itself when it has none.
func shareContext(ctx context.Context, num, den int) context.Context {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx
	}
	c, cancel := context.WithDeadline(ctx, time.Now().Add(time.Until(dl)*time.Duration(num)/time.Duration(den)))
	context.AfterFunc(c, cancel)
	return c
}

// slack is solveArena's estimate of what the arena adds to each stage.
type slack struct {
	bytes []int64 // per stage (Options.slack)
	over  []int   // per stage, the searches whose plan the arena put over the budget there
}

// add raises the slack of each stage of pl to what the arena added to it
// (the most, over the stage's steps, of the arena's memory less the
// buffers'), and, at a stage the arena put over the budget again, by the
// excess doubled for each search that left it over before: the arena
// often hands a smaller request the same chunk, so that the buffers must
// shrink by more than the excess before the chunks change.
func (sl *slack) add(n int, pl *remat.Plan, arena, own remat.CheckResult, budget int64) {
	if sl.bytes == nil {
		sl.bytes, sl.over = make([]int64, n), make([]int, n)
	}
	waste := make([]int64, n)
	over := make([]int64, n)
	step := 0
	for _, op := range pl.Ops {
		if op.Kind != remat.OpCompute {
			continue
		}
		if step < len(arena.During) && step < len(own.During) {
			waste[op.Stage] = max(waste[op.Stage], arena.During[step]-own.During[step])
			over[op.Stage] = max(over[op.Stage], arena.During[step]-budget)
		}
		step++
	}
	for t := range n {
		sl.bytes[t] = max(sl.bytes[t], waste[t])
		if over[t] > 0 {
			if sl.over[t] > 0 {
				sl.bytes[t] += over[t] << min(sl.over[t]-1, 16)
			}
			sl.over[t]++
		}
	}
}

// arenaPlan checks pl on p (the arena included) and gives it the lower
// bound of the search at p's budget.
func arenaPlan(p *remat.Problem, pl *remat.Plan, bound float64) (*remat.Plan, error) {
	res, err := remat.Check(p, pl)
	if err != nil {
		return nil, fmt.Errorf("lns: internal error: the plan fails Check in the arena: %w", err)
	}
	cost := res.TotalSeconds
	pl.Solver = Name
	pl.Optimal, pl.LowerBound, pl.Gap = false, 0, 0
	if bound > 0 {
		if cost <= bound*(1+1e-9) {
			pl.Optimal, pl.LowerBound, pl.Gap = true, cost, 0
		} else {
			pl.LowerBound = min(bound, cost)
			pl.Gap = max(0, (cost-pl.LowerBound)/cost)
		}
	}
	return pl, nil
}

// descents bounds the searches of descend.
const descents = 4

// descend lowers the least peak reached under a budget that no search
// fitted by solving again at budgets just below it, each search starting
// from the least plan so far: a search given a budget it nearly meets
// gets further than one given a budget far below. On the zoo VGG16's
// training graph (64², batch 4, the shapes hidden from ORT's planner)
// the searches at 643 KiB reach 854 KiB, while a search at 830 KiB fits
// 825 KiB. The budgets start at 1/32 of the least peak below it; a
// budget not fitted halves the step. It stops at the deadline, after
// descents searches, or when the step is less than one arena chunk
// (256 bytes), and returns the least plan and its peak on p, which can
// be within p's budget: on the zoo FCN8's training graph at 894 KiB the
// searches reach 897 KiB, and a search at 870 KiB fits 868 KiB.
func descend(ctx context.Context, p *remat.Problem, opts Options, least *remat.Plan, leastPeak int64) (*remat.Plan, int64) {
	o := opts
	o.noDescent, o.slack = true, nil
	step := leastPeak / 32
	for k := 0; k < descents && step >= 256 && ctx.Err() == nil; k++ {
		q := *p
		q.BudgetBytes = leastPeak - step
		o.Start = least
		pl, err := solveArena(ctx, &q, nil, o)
		var be *remat.BudgetError
		switch {
		case err == nil:
		case errors.As(err, &be) && be.Plan != nil:
			pl = be.Plan
		default:
			pl = nil
		}
		if pl != nil {
			if res, err := remat.Evaluate(p, pl); err == nil && res.PeakBytes < leastPeak {
				least, leastPeak = pl, res.PeakBytes
				continue
			}
		}
		step /= 2
	}
	return least, leastPeak
}
