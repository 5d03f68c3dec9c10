package lns

import (
	"cmp"
	"context"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// # Repairing a plan in the arena
//
// The search's plan can fit the budget with its buffers and still not
// fit it in the arena: at some step a request takes a free chunk less
// than twice its size, which the arena hands out whole (solveArena). On
// the zoo U-Net's training graph at 65% a ConvTranspose's 589,824-byte
// workspace takes a 917,504-byte chunk, and that step's 327,680 wasted
// bytes are the plan's excess. Raising the stage's memory for another
// search (slack) moves the waste elsewhere as often as it removes it.
//
// repairArena works on the plan itself and judges every move by a full
// replay in the arena (remat.Evaluate on the problem with its arena).
// While the peak is over the budget it tries, at the peak step, for each
// value resident there that the step does not read, its recomputation
// just before its next reader after the step (peakMoves), so that it is
// not resident across the peak; when none of these lowers the peak, it
// tries changing what the arena holds before the peak step instead
// (historyMoves). The move with the least peak (ties: the least cost)
// is kept if it lowers the peak; the repair stops when none does. A
// plan that fits is then made cheaper: each recomputation, dearest
// first, is dropped if the plan still fits in the arena without it,
// until a pass drops none (cheapenArena). Every move keeps the plan legal
// (remat.ScheduleStages: a stage may compute any earlier node), so the
// plan returned passes Check.

// repairMoves bounds the moves repairArena keeps while the plan is over
// the budget.
const repairMoves = 64

// repairArena returns the plan of least arena peak that the moves above
// make from pl, and its evaluation in the arena: within p's budget, and
// made cheaper, when the moves reach it; nil when pl cannot be evaluated.
// When ctx ends it returns the best plan so far.
func repairArena(ctx context.Context, p *remat.Problem, pl *remat.Plan) (*remat.Plan, remat.CheckResult) {
	stages, cur, res, ok := evalPlan(p, pl)
	if !ok {
		return nil, remat.CheckResult{}
	}
	for range repairMoves {
		if res.PeakBytes <= p.BudgetBytes {
			return cheapenArena(ctx, p, stages, cur, res)
		}
		var (
			best    [][]int32
			bestPl  *remat.Plan
			bestRes remat.CheckResult
		)
		try := func(moves []recompute) {
			for _, mv := range moves {
				if ctx.Err() != nil {
					return
				}
				next := withNode(stages, mv.stage, mv.node)
				if mv.drop {
					next = withoutNode(stages, mv.stage, mv.node)
				}
				pl, r, ok := evalStages(p, next)
				if !ok {
					continue
				}
				if best == nil || r.PeakBytes < bestRes.PeakBytes || r.PeakBytes == bestRes.PeakBytes && r.TotalSeconds < bestRes.TotalSeconds {
					best, bestPl, bestRes = next, pl, r
				}
			}
		}
		try(peakMoves(p, cur, res))
		if best == nil || bestRes.PeakBytes >= res.PeakBytes {
			try(historyMoves(p, stages, res))
		}
		if best == nil || bestRes.PeakBytes >= res.PeakBytes {
			break
		}
		stages, cur, res = best, bestPl, bestRes
	}
	if res.PeakBytes <= p.BudgetBytes {
		return cheapenArena(ctx, p, stages, cur, res)
	}
	return cur, res
}

// recompute is a recomputation of node before the first computation of stage.
type recompute struct {
	node, stage int32
	drop        bool // remove the recomputation instead
}

// peakMoves lists the moves at the peak step of pl (res: its evaluation):
// for each node with a part resident at the peak that the peak step does
// not read, its recomputation at the stage of its next reader.
func peakMoves(p *remat.Problem, pl *remat.Plan, res remat.CheckResult) []recompute {
	// The index in pl.Ops of the peak step's compute.
	at, step := -1, 0
	for i, op := range pl.Ops {
		if op.Kind != remat.OpCompute {
			continue
		}
		if step == res.PeakStep {
			at = i
			break
		}
		step++
	}
	if at < 0 {
		return nil
	}
	peakNode := pl.Ops[at].Node
	var out []recompute
	seen := map[int32]bool{}
	for _, part := range res.Live {
		v := part.Node
		if seen[v] || v == peakNode || !p.Recomputable[v] || slices.Contains(p.Deps[peakNode], v) {
			continue
		}
		seen[v] = true
		for _, op := range pl.Ops[at+1:] {
			if op.Kind == remat.OpCompute && op.Node == v {
				break // recomputed before any later reader: nothing to move
			}
			if op.Kind == remat.OpCompute && slices.Contains(p.Deps[op.Node], v) {
				out = append(out, recompute{node: v, stage: op.Stage})
				break
			}
		}
	}
	return out
}

// historyWindow is how many stages before the peak historyMoves adds
// recomputations to.
const historyWindow = 24

// historyMoves lists moves that change what the arena holds before the
// peak step rather than at it: dropping each recomputation at or before
// the peak's stage, and recomputing, in each of the historyWindow stages
// up to the peak's, each recomputable input of the stage's node that the
// stage does not compute yet.
func historyMoves(p *remat.Problem, stages [][]int32, res remat.CheckResult) []recompute {
	var out []recompute
	peak := res.PeakStage
	for t := 0; t <= peak && t < len(stages); t++ {
		for _, v := range stages[t] {
			if v != int32(t) {
				out = append(out, recompute{node: v, stage: int32(t), drop: true})
			}
		}
	}
	for t := max(0, peak-historyWindow); t <= peak && t < len(stages); t++ {
		for _, d := range p.Deps[t] {
			if p.Recomputable[d] && !slices.Contains(stages[t], d) {
				out = append(out, recompute{node: d, stage: int32(t)})
			}
		}
	}
	return out
}

// cheapenArena drops recomputations of a plan within the budget in the
// arena (pl, evaluated as res), dearest first, while it stays within it,
// and returns the plan and its evaluation.
func cheapenArena(ctx context.Context, p *remat.Problem, stages [][]int32, pl *remat.Plan, res remat.CheckResult) (*remat.Plan, remat.CheckResult) {
	for {
		var recs []recompute
		for t, st := range stages {
			for _, v := range st {
				if v != int32(t) {
					recs = append(recs, recompute{node: v, stage: int32(t)})
				}
			}
		}
		slices.SortStableFunc(recs, func(a, b recompute) int { return cmp.Compare(p.Seconds[b.node], p.Seconds[a.node]) })
		dropped := false
		for _, mv := range recs {
			if ctx.Err() != nil {
				return pl, res
			}
			next := withoutNode(stages, mv.stage, mv.node)
			npl, r, ok := evalStages(p, next)
			if ok && r.PeakBytes <= p.BudgetBytes {
				stages, pl, res, dropped = next, npl, r, true
			}
		}
		if !dropped {
			return pl, res
		}
	}
}

// evalPlan returns pl's compute sets, the plan scheduled from them and
// its evaluation on p; ok is false when pl cannot be evaluated.
func evalPlan(p *remat.Problem, pl *remat.Plan) ([][]int32, *remat.Plan, remat.CheckResult, bool) {
	stages := startStages(p, pl)
	if stages == nil {
		return nil, nil, remat.CheckResult{}, false
	}
	cur, res, ok := evalStages(p, stages)
	return stages, cur, res, ok
}

// evalStages schedules stages and evaluates the plan on p.
func evalStages(p *remat.Problem, stages [][]int32) (*remat.Plan, remat.CheckResult, bool) {
	pl, err := remat.ScheduleStages(p, stages)
	if err != nil {
		return nil, remat.CheckResult{}, false
	}
	res, err := remat.Evaluate(p, pl)
	if err != nil {
		return nil, remat.CheckResult{}, false
	}
	return pl, res, true
}

// withNode returns stages with node added to stage t (a copy of that
// stage; the others shared).
func withNode(stages [][]int32, t, node int32) [][]int32 {
	next := slices.Clone(stages)
	next[t] = append(slices.Clone(stages[t]), node)
	return next
}

// withoutNode returns stages with node removed from stage t.
func withoutNode(stages [][]int32, t, node int32) [][]int32 {
	next := slices.Clone(stages)
	next[t] = slices.DeleteFunc(slices.Clone(stages[t]), func(v int32) bool { return v == node })
	return next
}
