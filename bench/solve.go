package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// Solved is one solve of one graph, as remat-compile solve runs it.
type Solved struct {
	// Graph is the graph, its Problem's budget set.
	Graph Graph
	// Base is the no-remat schedule's peak and cost.
	Base remat.CheckResult
	// Timed is the solve (its Check is the plan's peak and cost).
	Timed remat.Timed
}

// Solve reads one GRAPH argument as LoadGraphs does, sets its budget (a
// percentage of its no-remat peak, or bytes; the zero Budget leaves it
// unbounded) and solves it with s under the time limit. An argument
// naming several graphs (a seed range) is a *pipeline.OptionError. When
// the solver fails or its plan fails Check, the error names the graph and
// wraps the solver's error (a *remat.BudgetError says the least peak it
// reached); the Solved is returned with it once the graph was read.
func Solve(ctx context.Context, arg string, o GraphOptions, b remat.Budget, s remat.Solver, limit time.Duration) (*Solved, error) {
	graphs, err := LoadGraphs(ctx, []string{arg}, o)
	if err != nil {
		return nil, err
	}
	if len(graphs) != 1 {
		return nil, optionErrorf("solve takes one graph; %s names %d (give a single seed)", arg, len(graphs))
	}
	sv := &Solved{Graph: graphs[0]}
	p := sv.Graph.Problem
	if sv.Base, err = remat.EvaluateNoRemat(p); err != nil {
		return nil, fmt.Errorf("solve %s: %w", sv.Graph.Name, err)
	}
	if !b.IsZero() {
		if p.BudgetBytes, err = b.Resolve(sv.Base.PeakBytes, 0, 0); err != nil {
			return nil, err
		}
	}
	sv.Timed = remat.SolveTimed(ctx, s, p, limit, nil)
	switch t := sv.Timed; {
	case t.Err != nil:
		return sv, fmt.Errorf("%s: %w", sv.Graph.Name, t.Err)
	case t.CheckErr != nil:
		return sv, fmt.Errorf("%s: the plan of %s fails remat.Check (a solver bug): %w", sv.Graph.Name, s.Name, t.CheckErr)
	}
	return sv, nil
}
