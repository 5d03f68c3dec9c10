package checkmate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// BenchmarkBuildMILP builds the model of random layered training graphs;
// n = 101 should take well under a second.
func BenchmarkBuildMILP(b *testing.B) {
	for _, layers := range []int{12, 25, 50, 100} {
		p := layered(1, layers)
		p.BudgetBytes = caPeak(p) * 8 / 10
		b.Run(fmt.Sprint("nodes=", p.N()), func(b *testing.B) {
			var f *checkmate.Formulation
			for b.Loop() {
				var err error
				if f, err = checkmate.BuildMILP(p, checkmate.ModelOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(f.Model.NumVars()), "vars")
			b.ReportMetric(float64(f.Model.NumConstrs()), "rows")
		})
	}
}

// benchSolve solves a 60-node random DAG (the benchmark the package is
// measured by) and a 61-node layered training graph at 80 % of
// checkpoint-all's peak with a 30 s limit, and reports the cost, the
// bound, the gap and the peak.
func benchSolve(b *testing.B, s remat.Solver) {
	requireCBC(b)
	for _, c := range []struct {
		name string
		p    *remat.Problem
	}{
		{"random-60", solvertest.RandomDAG(1, 60)},
		{"layered-61", layered(1, 30)},
	} {
		p := withBudget(c.p, caPeak(c.p)*8/10)
		b.Run(c.name, func(b *testing.B) {
			var pl *remat.Plan
			var res remat.CheckResult
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				var err error
				pl, err = s.Solve(ctx, p, nil)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				if res, err = remat.Check(p, pl); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.TotalSeconds, "cost")
			b.ReportMetric(pl.LowerBound, "bound")
			b.ReportMetric(pl.Gap, "gap")
			b.ReportMetric(float64(res.PeakBytes), "peak-bytes")
			b.ReportMetric(float64(p.BudgetBytes), "budget-bytes")
		})
	}
}

func BenchmarkSolveMILP60(b *testing.B) { benchSolve(b, checkmate.MILP) }
func BenchmarkSolveLP60(b *testing.B)   { benchSolve(b, checkmate.LP) }
