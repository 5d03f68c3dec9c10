package moccasin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/moccasin"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// table3 is one row of the comparison of MOCCASIN's Table 3: a random
// layered graph of (n, m) at a fraction of its no-remat peak.
type table3 struct {
	n, m int
	pct  int64
}

var table3Rows = []table3{{100, 236, 90}, {100, 236, 80}, {250, 944, 90}, {250, 944, 80}}

// outcome is what one solver did on one row.
type outcome struct {
	status   string // "optimal", "feasible", or the error
	overhead float64
	peak     int64
	toBest   float64 // seconds to the best plan (when a report first showed its cost)
	total    float64
	gap      float64
	note     string
}

// runOne solves p with s under limit and measures it like Table 3: the
// total duration increase over the no-remat cost, the peak, the time to
// the best plan and the gap.
func runOne(s remat.Solver, p *remat.Problem, limit time.Duration) outcome {
	t := remat.SolveTimed(context.Background(), s, p, limit, nil)
	o := outcome{total: t.Total, note: t.LastNote}
	drainCBC()
	switch {
	case t.Err != nil:
		o.status = t.Err.Error()
		return o
	case t.CheckErr != nil:
		o.status = "fails Check: " + t.CheckErr.Error()
		return o
	}
	o.status = "feasible"
	if t.Plan.Optimal {
		o.status = "optimal"
	}
	lb := p.LowerBoundSeconds()
	o.overhead = 100 * (t.Check.TotalSeconds/lb - 1)
	o.peak = t.Check.PeakBytes
	o.gap = 100 * t.Plan.Gap
	o.toBest = t.ToBest
	return o
}

// drainCBC waits until no CBC solve abandoned at a deadline is still
// running (CBC solves are serialised process-wide, so a trivial one
// starts only after it), so that one solver's leftover does not eat into
// the next one's time.
func drainCBC() {
	m := milp.NewModel("drain")
	x := m.AddBinary("x")
	m.SetObjective(milp.VarExpr(x, 1), milp.Minimize)
	_, _ = milp.Solve(context.Background(), m, milp.Options{})
}

func table3Problem(tb testing.TB, r table3) *remat.Problem {
	p, err := synth.Layered(1, r.n, r.m)
	if err != nil {
		tb.Fatal(err)
	}
	return withBudget(p, noRematPeak(tb, p)*r.pct/100)
}

// BenchmarkTable3 runs MOCCASIN (C_v = 2, one CBC thread) and
// checkmate-milp on synth.Layered(1, n, m) at 90 % and 80 % of the
// no-remat peak (remat.Evaluate of the plan without rematerialization),
// each with a 120 s limit, and reports Table 3's columns as metrics:
// overhead-% (total duration increase), time-to-best-s, gap-% and
// peak-bytes. It takes about 16 minutes:
//
//	go test -run '^$' -bench Table3 -benchtime 1x ./passes/remat/moccasin/
//
// The same comparison as a table: remat-compile bench -solvers
// moccasin,checkmate-milp -milp-start=false -time-limit 120s
// layered:100:236 layered:250:944.
func BenchmarkTable3(b *testing.B) {
	requireCBC(b)
	limit := 120 * time.Second
	for _, r := range table3Rows {
		p := table3Problem(b, r)
		for _, s := range []remat.Solver{moccasin.Solver, checkmate.MILP} {
			b.Run(fmt.Sprintf("n=%d,m=%d,budget=%d%%/%s", r.n, r.m, r.pct, s.Name), func(b *testing.B) {
				var o outcome
				for b.Loop() {
					o = runOne(s, p, limit)
				}
				if o.status != "optimal" && o.status != "feasible" {
					b.Logf("no plan: %s", o.status)
					return
				}
				b.ReportMetric(o.overhead, "overhead-%")
				b.ReportMetric(o.toBest, "time-to-best-s")
				b.ReportMetric(o.gap, "gap-%")
				b.ReportMetric(float64(o.peak), "peak-bytes")
			})
		}
	}
}
