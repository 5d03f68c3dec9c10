package twremat

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// BenchmarkPrepare measures the tree decomposition (minimum fill-in,
// Lemma 1) and the separator hierarchy (Lemma 3) on synth's random layered
// DAGs at MOCCASIN's sizes, and reports the width and the bags.
func BenchmarkPrepare(b *testing.B) {
	for _, c := range [][2]int{{100, 236}, {250, 944}, {500, 2461}, {1000, 5875}} {
		p, err := synth.Layered(1, c[0], c[1])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d", c[0]), func(b *testing.B) {
			var pr *Prepared
			for b.Loop() {
				pr, err = Prepare(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(pr.Width()), "width")
			b.ReportMetric(float64(pr.Bags()), "bags")
		})
	}
}

// BenchmarkSolve measures the default solver at three quarters of the
// plain schedule's peak, on synth's layered DAGs and on Checkmate's
// linear training graphs, and reports whether the plan fits, its peak
// relative to the plain schedule's and its cost relative to one pass (for
// a *remat.BudgetError, those of the plan it carries).
func BenchmarkSolve(b *testing.B) {
	type bc struct {
		name string
		p    *remat.Problem
	}
	var cases []bc
	for _, c := range [][2]int{{100, 236}, {250, 944}, {1000, 5875}} {
		p, err := synth.Layered(1, c[0], c[1])
		if err != nil {
			b.Fatal(err)
		}
		cases = append(cases, bc{fmt.Sprintf("layered-n=%d", c[0]), p})
	}
	for _, l := range []int{100, 1000} {
		cases = append(cases, bc{fmt.Sprintf("linear-n=%d", 2*l+1), solvertest.LinearNetwork(l)})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			pr, err := Prepare(context.Background(), c.p)
			if err != nil {
				b.Fatal(err)
			}
			_, plain, _, err := pr.Run(context.Background(), pr.Cutoffs()[0], 0)
			if err != nil {
				b.Fatal(err)
			}
			q := *c.p
			q.BudgetBytes = plain.PeakBytes * 3 / 4
			var plan *remat.Plan
			for b.Loop() {
				plan, err = Solver.Solve(context.Background(), &q, nil)
			}
			fits := 1.0
			var be *remat.BudgetError
			switch {
			case errors.As(err, &be):
				fits, plan = 0, be.Plan
			case err != nil:
				b.Fatal(err)
			}
			res, err := remat.Evaluate(&q, plan)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(fits, "fits")
			b.ReportMetric(float64(res.PeakBytes)/float64(plain.PeakBytes), "peak/plain")
			b.ReportMetric(res.TotalSeconds/q.LowerBoundSeconds(), "cost/onepass")
		})
	}
}
