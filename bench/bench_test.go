package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

// TestRunInterrupted cancels the context in the middle of the last
// solve, as Ctrl-C does: Run returns the context's error and no rows, so
// that the command writes no table with a solve cut short.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	graphs, err := LoadGraphs(ctx, []string{"layered:20:40"}, GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	interrupted := remat.Solver{Name: "interrupted", Doc: "Finds checkpoint-all, then is interrupted.",
		Solve: func(ctx context.Context, p *remat.Problem, _ func(remat.Progress)) (*remat.Plan, error) {
			plan, err := remat.NoRematPlan(p)
			cancel()
			return plan, err
		}}
	rows, err := Run(ctx, graphs, Options{Budgets: []Budget{{Budget: remat.BudgetFraction(1)}}, Solvers: []remat.Solver{interrupted}})
	if !errors.Is(err, context.Canceled) || rows != nil {
		t.Errorf("Run interrupted in its last solve = %d rows, %v; want no rows and context.Canceled", len(rows), err)
	}
}
