package lns

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/remat-compile/remat/passes/remat"
)

// # Lowering the least peak in the arena
//
// When no search fits the budget, the least peak that solveArena reports
// is a local minimum of repairArena's steepest descent: on the zoo
// VGG16's training graph (64², batch 4, shapes hidden) every search from
// 760 KiB to 845 KiB stops at the same plan of 876,800 bytes, where a
// 216-byte weight gradient's step is 132 KiB over its buffers because
// earlier chunks were split. The arena's peak depends on every request
// before it, so a plan a few moves away can lay the chunks out quite
// differently. walkArena is an iterated local search on the arena's peak
// (Lourenço, Martin and Stützle 2003): from the least plan it applies a
// kick of one to three random moves of repairArena's kinds (peakMoves,
// historyMoves), then walkKick random moves each kept when it lowers the
// peak or keeps it and costs less, and keeps the result when it is
// better than the least plan (a lower peak, or as low and cheaper).
// The walk is seeded (Options.Seed).

// walkArena walks to the context's deadline when it has one: it keeps
// finding lower peaks for tens of seconds (on VGG16's training graph, at
// about 1,900 plans a second on this project's 2-core machine, 17,112
// plans reach 828,672 to 867,840 bytes depending on the seed, 45,000
// reach 786,688 from two seeds). Without a deadline it evaluates N²/2
// plans for a problem of N nodes (the moves at each step grow with N),
// from walkMin to walkMax, and is deterministic. walkKick is the length
// of each descent after a kick.
const (
	walkMin, walkMax = 200, 20_000
	walkKick         = 60
)

// walkArena returns the plan of least arena peak the walk from pl
// reaches, and its evaluation: the walk stops early at a plan within p's
// budget, and the plan returned is made cheaper (cheapenArena) within the
// larger of its peak and p's budget. When ctx ends it returns the best
// plan so far; nil when pl cannot be evaluated.
func walkArena(ctx context.Context, p *remat.Problem, pl *remat.Plan, seed uint64) (*remat.Plan, remat.CheckResult) {
	stages, cur, res, ok := evalPlan(p, pl)
	if !ok {
		return nil, remat.CheckResult{}
	}
	best, bestPl, bestRes := stages, cur, res
	rng := rand.New(rand.NewPCG(seed, 0x77616c6b))
	move := func(stages [][]int32, pl *remat.Plan, res remat.CheckResult) [][]int32 {
		moves := append(peakMoves(p, pl, res), historyMoves(p, stages, res)...)
		if len(moves) == 0 {
			return nil
		}
		mv := moves[rng.IntN(len(moves))]
		if mv.drop {
			return withoutNode(stages, mv.stage, mv.node)
		}
		return withNode(stages, mv.stage, mv.node)
	}
	steps := min(walkMax, max(walkMin, p.N()*p.N()/2))
	if _, ok := ctx.Deadline(); ok {
		steps = math.MaxInt // to the deadline
	}
	for evals := 0; evals < steps && bestRes.PeakBytes > p.BudgetBytes && ctx.Err() == nil; {
		// The kick: one to three moves from the least plan, whatever
		// they do to the peak.
		stages, cur, res = best, bestPl, bestRes
		for range 1 + rng.IntN(3) {
			next := move(stages, cur, res)
			if next == nil {
				break
			}
			npl, r, ok := evalStages(p, next)
			evals++
			if ok {
				stages, cur, res = next, npl, r
			}
		}
		// The descent: random moves kept when they lower the peak, or
		// keep it and cost less.
		for range walkKick {
			next := move(stages, cur, res)
			if next == nil || ctx.Err() != nil {
				break
			}
			npl, r, ok := evalStages(p, next)
			evals++
			if ok && (r.PeakBytes < res.PeakBytes || r.PeakBytes == res.PeakBytes && r.TotalSeconds < res.TotalSeconds) {
				stages, cur, res = next, npl, r
			}
		}
		if res.PeakBytes < bestRes.PeakBytes || res.PeakBytes == bestRes.PeakBytes && res.TotalSeconds < bestRes.TotalSeconds {
			best, bestPl, bestRes = stages, cur, res
		}
	}
	q := *p
	q.BudgetBytes = max(bestRes.PeakBytes, p.BudgetBytes)
	// The walk ends at the deadline; dropping recomputations takes a
	// few replays per recomputation, and is done past it.
	bestPl, bestRes = cheapenArena(context.WithoutCancel(ctx), &q, best, bestPl, bestRes)
	return bestPl, bestRes
}
