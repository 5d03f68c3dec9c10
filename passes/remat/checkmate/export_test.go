package checkmate

import (
	"context"
	"time"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// StageOptimum solves StageBound's model of p to optimality, with the
// cuts (S) or without, and returns its optimum in seconds (Σ C_i
// included); ok is false when the model does not apply or is not solved.
func StageOptimum(ctx context.Context, p *remat.Problem, cuts bool) (opt float64, ok bool, err error) {
	sm, st := stageModel(p.Relaxed(), cuts)
	if st != stageOK {
		return 0, false, nil
	}
	sol, err := solve(ctx, sm.m, milp.Options{}, nil)
	if err != nil || sol.Status != milp.Optimal {
		return 0, false, err
	}
	return p.LowerBoundSeconds() + sol.Objective, true, nil
}

// StageStart returns the point that plan, a plan of p within its budget,
// gives StageBound's model without the cuts (the variables it does not
// set at 0, as CBC takes them): its largest violation of the model's rows
// and bounds, and its objective in seconds (Σ C_i included). applies is false when the model does not apply to p; ok is
// false when start made no point of the plan.
func StageStart(p *remat.Problem, plan *remat.Plan) (violation, cost float64, applies, ok bool) {
	sm, x, applies, ok := startPoint(p, plan)
	if !ok {
		return 0, 0, applies, false
	}
	obj, _ := sm.m.Objective()
	return sm.m.MaxViolation(x), p.LowerBoundSeconds() + obj.Eval(x), true, true
}

// startPoint returns StageBound's model of p without the cuts and the
// point plan gives it (see StageStart).
func startPoint(p *remat.Problem, plan *remat.Plan) (sm *stageMIP, x []float64, applies, ok bool) {
	sm, st := stageModel(p.Relaxed(), false)
	if st != stageOK {
		return nil, nil, false, false
	}
	start := sm.start(plan)
	if start == nil {
		return nil, nil, true, false
	}
	x = make([]float64, sm.m.NumVars())
	for v, val := range start {
		x[v] = val
	}
	return sm, x, true, true
}

// StageCascadeViolation returns the largest violation of the cascade cuts
// (C_k, all of them) by the point that plan, a plan of p within its
// budget, gives StageBound's model, and how many cuts there are; applies
// and ok as StageStart's.
func StageCascadeViolation(p *remat.Problem, plan *remat.Plan) (violation float64, cuts int, applies, ok bool) {
	sm, x, applies, ok := startPoint(p, plan)
	if !ok {
		return 0, 0, applies, false
	}
	all := sm.separate(nil)
	sm.addCuts(all)
	return sm.m.MaxViolation(x), len(all), true, true
}

// StageCascadeLP returns the optimum of StageBound's relaxation (Σ C_i
// included) without the cascade cuts and after StageBound's rounds of
// them, without a time limit; ok is false when the model does not apply
// or a relaxation is not solved.
func StageCascadeLP(ctx context.Context, p *remat.Problem) (without, with float64, ok bool, err error) {
	sm, st := stageModel(p.Relaxed(), false)
	if st != stageOK {
		return 0, 0, false, nil
	}
	lp, err := solve(ctx, sm.m, milp.Options{Relax: true}, nil)
	if err != nil || lp.Status != milp.Optimal {
		return 0, 0, false, err
	}
	b, _, solved, _, err := relax(ctx, sm, time.Now().Add(time.Hour))
	if err != nil || !solved {
		return 0, 0, false, err
	}
	sum := p.LowerBoundSeconds()
	return sum + lp.Objective, sum + b, true, nil
}

// StageSpansBound returns the bound (Σ C_i included) that StageBound's
// spans give p, whatever the size of its model, within limit; ok is false
// when the model does not apply.
func StageSpansBound(ctx context.Context, p *remat.Problem, limit time.Duration) (bound float64, ok bool, err error) {
	q := p.Relaxed()
	info := stageAnalyse(q)
	if info.first < 0 {
		return 0, false, nil
	}
	b, infeasible, err := info.spansBound(ctx, q, time.Now().Add(limit))
	if err != nil || infeasible {
		return 0, false, err
	}
	return p.LowerBoundSeconds() + b, true, nil
}
