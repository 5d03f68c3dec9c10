package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/passes/remat"
)

// SweepSpec is a series of budgets, percentages of the no-remat peak:
// From, From−Step, … down to To.
type SweepSpec struct {
	From, To, Step float64
}

// DefaultSweep is the sweep "sweep" means: 100% down to 5% in 5% steps.
var DefaultSweep = SweepSpec{From: 100, To: 5, Step: 5}

// maxSweepBudgets bounds the budgets of one sweep.
const maxSweepBudgets = 1000

// String writes s as ParseSweep reads it: "sweep:100-5:5".
func (s SweepSpec) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return "sweep:" + f(s.From) + "-" + f(s.To) + ":" + f(s.Step)
}

// IsSweep reports whether a -budget value asks for a sweep.
func IsSweep(budget string) bool {
	return budget == "sweep" || strings.HasPrefix(budget, "sweep:")
}

// ParseSweep parses "sweep" or "sweep:FROM-TO:STEP" (percentages of the
// no-remat peak, with or without "%": "sweep:100-50:10", "sweep:90%-60%:5%").
// A malformed spec is an *OptionError.
func ParseSweep(s string) (SweepSpec, error) {
	if s == "sweep" {
		return DefaultSweep, nil
	}
	bad := func(why string) (SweepSpec, error) {
		return SweepSpec{}, optionErrorf("-budget %q: %s (want sweep or sweep:FROM-TO:STEP, percentages of the no-remat peak such as sweep:100-5:5)", s, why)
	}
	rest, ok := strings.CutPrefix(s, "sweep:")
	if !ok {
		return bad("not a sweep")
	}
	rng, step, ok := strings.Cut(rest, ":")
	from, to, ok2 := strings.Cut(rng, "-")
	if !ok || !ok2 {
		return bad("want FROM-TO:STEP")
	}
	var v [3]float64
	for i, t := range []string{from, to, step} {
		x, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(t), "%"), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			return bad(fmt.Sprintf("%q is not a positive percentage", t))
		}
		v[i] = x
	}
	sp := SweepSpec{From: v[0], To: v[1], Step: v[2]}
	switch {
	case sp.To > sp.From:
		return bad("a sweep goes from the loosest budget down: FROM must be at least TO")
	case len(sp.Percents()) > maxSweepBudgets:
		return bad(fmt.Sprintf("more than %d budgets", maxSweepBudgets))
	}
	return sp, nil
}

// Percents lists the sweep's budgets in percent, loosest first.
func (s SweepSpec) Percents() []float64 {
	if s.Step <= 0 || s.To > s.From {
		return nil
	}
	var out []float64
	for k := 0; ; k++ {
		// Computed from k, not by repeated subtraction, so that 100-5:5
		// ends at exactly 5.
		p := math.Round((s.From-float64(k)*s.Step)*1e9) / 1e9
		if p < s.To || len(out) > maxSweepBudgets {
			break
		}
		out = append(out, p)
	}
	return out
}

// SweepOptions configure Sweep.
type SweepOptions struct {
	// Fit configures each budget's fit; its Budget is ignored.
	Fit FitOptions
	// Spec is the series of budgets; the zero SweepSpec is DefaultSweep.
	Spec SweepSpec
	// Progress, when not nil, is called before each budget is solved
	// (done budgets of at most total, and the budget about to be solved)
	// and once at the end with done == total.
	Progress func(done, total int, budget string)
}

// SweepResult is what Sweep did.
type SweepResult struct {
	// Sweep is the table, for the report.
	Sweep *report.Sweep
	// Model and Fit are the plan of the last row (the tightest budget
	// that fits), nil when no budget fits: what compile writes with -o.
	Model *Model
	Fit   *Fit
}

// Sweep fits m to a series of budgets, loosest first, and returns a row
// per budget that fits (package report's SweepRow: the peaks, the
// predicted overhead, the solver, the time). m itself is not changed:
// each budget is fitted on a fresh build of it (Rebuild).
//
// The rows are monotone: a tighter budget never reports a lower overhead
// than a looser one. When the plan of the previous row fits the next
// budget too, that row reuses it without solving (ReusedFrom). When a
// tighter budget's solve finds a plan cheaper than a looser budget's (a
// heuristic or a time-limited search can), that plan fits the looser
// budget as well, and the looser rows take it (their Note says so).
//
// Each budget's solve is warm-started from the previous budget's plan
// (remat.Problem.Start): the search (lns, in auto) first runs as it does
// cold, then polishes that plan, repaired to the tighter budget, and
// keeps the cheaper of the two (see lns.Options.Start). Solvers that do
// not search ignore it. Measured on the zoo ResNet50 training graph
// (res=64, batch 4, sweep:100-5:5, auto, 30 s per solve): every row at
// least as cheap as with cold solves, three cheaper (55%: 1.91% overhead
// against 1.94%, 45%: 2.81 against 2.85, 35%: 3.92 against 3.96), the
// whole sweep 11% slower. Starting the search from the repaired plan
// instead, without the cold search, made the loose budgets dearer (the
// search settled near it).
//
// The sweep stops at the first budget that does not fit (its error says
// the smallest peak the solvers reached there), or whose plan does not
// lower the target's peak (a *TargetError, which compile would refuse to
// write), and after the first kind fits that
// smallest peak as a budget in bytes: when it fits, it is the last row,
// the smallest budget known to be feasible. It also stops when ctx is
// cancelled: the rows so far are returned, Interrupted set, with no
// error (a fit interrupted mid-solve keeps its best plan, noted).
func (m *Model) Sweep(ctx context.Context, o SweepOptions) (*SweepResult, error) {
	spec := o.Spec
	if spec == (SweepSpec{}) {
		spec = DefaultSweep
	}
	pcts := spec.Percents()
	if len(pcts) == 0 {
		return nil, optionErrorf("-budget %s: no budgets", spec)
	}
	tname := "ort"
	if o.Fit.Target != nil {
		tname = o.Fit.Target.Name()
	}
	out := &SweepResult{Sweep: &report.Sweep{Spec: spec.String(), Target: tname, Rows: []report.SweepRow{}}}
	sw := out.Sweep
	total := len(pcts)
	progress := func(done int, budget string) {
		if o.Progress != nil {
			o.Progress(done, total, budget)
		}
	}
	// fit solves one budget on a fresh build of m, its search started
	// from the previous budget's plan (FitOptions.Start).
	var warm *remat.Plan
	// bytes is the budget in the solver's bytes, for a fit that tiles
	// (whose remat budget is over the tiled graph); 0 when unknown.
	fit := func(b remat.Budget, label string, bytes int64) (*report.SweepRow, *Model, *Fit, error) {
		start := time.Now()
		n, err := m.Rebuild(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		fo := o.Fit
		fo.Budget, fo.Start = b, warm
		fo.ReachProbes = -1 // the sweep's own looser rows are that search
		f, err := n.Fit(ctx, fo)
		if err != nil {
			return nil, nil, nil, err
		}
		warm = f.Remat.Plan
		row := sweepRow(f, label)
		if f.Tiled != nil && bytes > 0 {
			row.BudgetBytes = bytes
		}
		row.Seconds = time.Since(start).Seconds()
		if ctx.Err() != nil {
			row.Note = "interrupted: the best plan found before the interrupt"
		}
		return &row, n, f, nil
	}
	// reuse returns the last row's plan for a tighter budget when it fits.
	reuse := func(budgetBytes int64, label string) (report.SweepRow, bool) {
		if len(sw.Rows) == 0 {
			return report.SweepRow{}, false
		}
		last := sw.Rows[len(sw.Rows)-1]
		if last.PeakBytes > budgetBytes {
			return report.SweepRow{}, false
		}
		row := last
		row.Budget, row.BudgetBytes, row.Seconds, row.Note = label, budgetBytes, 0, ""
		row.ReusedFrom = last.Budget
		if last.ReusedFrom != "" {
			row.ReusedFrom = last.ReusedFrom
		}
		return row, true
	}
	var need int64 // the smallest peak reached at the first infeasible budget
	for k, pct := range pcts {
		label := strconv.FormatFloat(pct, 'f', -1, 64) + "%"
		if ctx.Err() != nil {
			sw.Interrupted = true
			sw.Stopped = fmt.Sprintf("interrupted before the budget %s", label)
			break
		}
		progress(k, label)
		var bb int64
		if sw.NoRematPeakBytes > 0 {
			bb = int64(math.Floor(pct / 100 * float64(sw.NoRematPeakBytes)))
			if row, ok := reuse(bb, label); ok {
				sw.Rows = append(sw.Rows, row)
				continue
			}
		}
		row, n, f, err := fit(remat.BudgetFraction(pct/100), label, bb)
		var ib *remat.InfeasibleBudgetError
		var te *TargetError
		switch {
		case errors.As(err, &ib):
			sw.NoRematPeakBytes = max(sw.NoRematPeakBytes, ib.NoRematPeakBytes)
			need = ib.NeedBytes
			if ib.BudgetError != nil && ib.Plan != nil {
				warm = ib.Plan // the retry at need starts from the plan that reached it
			}
			sw.Stopped = fmt.Sprintf("stopped at %s (%s): %v", label, remat.FormatBytes(ib.HaveBytes), err)
		case errors.As(err, &te):
			// The rows stop at the last plan the target gains from.
			sw.Stopped = fmt.Sprintf("stopped at %s (%s): %v", label, remat.FormatBytes(te.BudgetBytes), err)
		case err != nil && ctx.Err() != nil:
			sw.Interrupted = true
			sw.Stopped = fmt.Sprintf("interrupted while solving the budget %s: %v", label, err)
		case err != nil:
			return out, err
		}
		if err != nil {
			break
		}
		if f.Tiled == nil {
			// A tiled fit's remat problem is the tiled graph's.
			sw.NoRematPeakBytes = f.Remat.BeforePeakBytes
		}
		out.addRow(*row, n, f)
		if row.Note != "" {
			sw.Interrupted = true
			sw.Stopped = "interrupted while solving the budget " + label + ": its row is the best plan found before the interrupt"
			break
		}
	}
	if need > 0 && !sw.Interrupted {
		// The smallest peak reached at the infeasible budget, as a budget.
		label := fmt.Sprintf("%s (%.1f%%, the smallest peak reached)", remat.FormatBytes(need), report.PercentOf(need, sw.NoRematPeakBytes))
		progress(total-1, label)
		if len(sw.Rows) > 0 && need >= sw.Rows[len(sw.Rows)-1].BudgetBytes {
			// The last row's budget is that small already.
		} else if row, ok := reuse(need, label); ok {
			sw.Rows = append(sw.Rows, row)
		} else {
			row, n, f, err := fit(remat.BudgetBytes(need), label, need)
			var ib *remat.InfeasibleBudgetError
			var te *TargetError
			switch {
			case errors.As(err, &ib):
				sw.Stopped += fmt.Sprintf("; the smallest peak reached, %s, did not fit again: %v", remat.FormatBytes(need), err)
			case errors.As(err, &te):
				sw.Stopped += fmt.Sprintf("; the plan of the smallest peak reached, %s: %v", remat.FormatBytes(need), err)
			case err != nil && ctx.Err() != nil:
				sw.Interrupted = true
				sw.Stopped += "; interrupted while solving the smallest peak reached"
			case err != nil:
				return out, err
			default:
				out.addRow(*row, n, f)
			}
		}
	} else if sw.Stopped == "" {
		sw.Stopped = fmt.Sprintf("every budget of %s fits", spec)
	}
	progress(total, "")
	return out, nil
}

// addRow appends row, fitted as f on n, and keeps the rows monotone: a
// looser row that costs more takes row's plan, which fits it too.
func (out *SweepResult) addRow(row report.SweepRow, n *Model, f *Fit) {
	rows := out.Sweep.Rows
	for j := range rows {
		if rows[j].OverheadSeconds > row.OverheadSeconds {
			r := row
			r.Budget, r.BudgetBytes, r.Seconds = rows[j].Budget, rows[j].BudgetBytes, rows[j].Seconds
			r.ReusedFrom = row.Budget
			r.Note = "the plan of the tighter budget " + row.Budget + ", cheaper than this budget's own solve"
			rows[j] = r
		}
	}
	out.Sweep.Rows = append(rows, row)
	out.Model, out.Fit = n, f
}

// sweepRow is the row of one fit.
func sweepRow(f *Fit, label string) report.SweepRow {
	res := f.Remat
	row := report.SweepRow{
		Budget: label, BudgetBytes: res.BudgetBytes, PeakBytes: res.AfterPeakBytes,
		OverheadPercent: res.OverheadPercent, OverheadSeconds: res.OverheadSeconds,
		Recomputations: res.Recomputations, Solver: PlanSolver(res), Optimal: res.Optimal,
	}
	if t := f.Tiled; t != nil && t.CostBefore > 0 {
		// The remat plan's overhead is over the tiled graph; the row's is
		// over the model as given, the tiling's extra compute included.
		row.OverheadSeconds += t.CostAfter - t.CostBefore
		row.OverheadPercent = 100 * row.OverheadSeconds / t.CostBefore
	}
	if f.TargetErr == nil && f.Placement != nil {
		row.TargetPeakBytes = f.Placement.PeakBytes
	}
	return row
}
