package checkmate

import (
	"context"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// StageOptimum solves StageBound's model of p to optimality, with the
// cuts (S) or without, and returns its optimum in seconds (Σ C_i
// included); ok is false when the model does not apply or is not solved.
func StageOptimum(ctx context.Context, p *remat.Problem, cuts bool) (opt float64, ok bool, err error) {
	m, st := stageModel(p.Relaxed(), cuts)
	if st != stageOK {
		return 0, false, nil
	}
	sol, err := solve(ctx, m, milp.Options{}, nil)
	if err != nil || sol.Status != milp.Optimal {
		return 0, false, err
	}
	return p.LowerBoundSeconds() + sol.Objective, true, nil
}
