// Package bench benchmarks the remat solvers: each solver on each graph
// at each budget, with the compute overhead of its plan over
// checkpoint-all, the peak, the seconds to its best plan, and the gap to
// its own and to the best lower bound any solver proved (MOCCASIN
// Table 3's columns), and the cost ratios to checkmate-milp (Checkmate
// Table 2). remat-compile bench prints what Run returns; WriteCSV,
// WriteMarkdown and WriteSVG write it as files.
//
// The graphs are remat problems: models and zoo models lowered with a
// device profile's costs (LoadGraphs), seeded random layered DAGs at the
// sizes of MOCCASIN Table 3 (layered: specs), and graphs other tools
// publish.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

// Graph is one problem of a run.
type Graph struct {
	Name    string
	Problem *remat.Problem
	// Family is the layered: spec with a seed range that the graph is one
	// seed of; empty otherwise.
	Family string
}

// Row is one solver's outcome on one graph at one budget.
type Row struct {
	Graph        string
	Family       string // Graph.Family
	Nodes, Edges int
	Budget       string
	BudgetBytes  int64
	BasePeak     int64 // the no-remat peak
	FloorBytes   int64 // the working-set floor
	Solver       string
	Status       string      // optimal, feasible, over-budget, infeasible, skipped, timeout, error
	Overhead     float64     // percent over checkpoint-all's cost; NaN without a plan
	Peak         int64       // the plan's peak; the least peak reached when over budget
	ToBest       float64     // seconds to the best plan
	Total        float64     // seconds the solver ran
	Gap          float64     // percent, from the solver's own bound; NaN when unknown
	Bound        float64     // the solver's lower bound on the optimum, seconds; 0 when none
	BestGap      float64     // percent, to the best lower bound any solver proved on this graph and budget; NaN without a plan
	Cost         float64     // seconds; NaN without a plan
	TrivialBound float64     // seconds: every node computed once (Problem.LowerBoundSeconds)
	Plan         *remat.Plan // the plan within the budget, when there is one
	Note         string
}

// WithinBudget reports whether the row has a plan within the budget.
func (r *Row) WithinBudget() bool { return withinBudget(r.Status) }

func withinBudget(status string) bool { return status == "optimal" || status == "feasible" }

// Budget is one budget of a run: a remat.Budget, or Min, the smallest peak
// known to be feasible (the least any non-exact solver of the run reaches
// when asked for the working-set floor, or any solver reached at the
// budgets before it).
type Budget struct {
	Budget remat.Budget
	Min    bool
}

// String names the budget as the tables do ("90%", "512.0 KiB", "min").
func (b Budget) String() string {
	if b.Min {
		return "min"
	}
	return b.Budget.String()
}

// Options configure Run.
type Options struct {
	Budgets []Budget
	// Solvers run in order on every graph and budget.
	Solvers []remat.Solver
	// TimeLimit bounds each solver per graph and budget.
	TimeLimit time.Duration
	// ExactMaxNodes skips the exact solvers on graphs of more nodes (0:
	// never): CBC does not build and solve their models in useful time
	// there.
	ExactMaxNodes int
	// MILPStart starts checkmate-milp from the cheapest plan of the
	// solvers before it (a MIP start), so that its row is the best plan
	// known.
	MILPStart bool
	// Log, when set, receives a line per solve.
	Log func(string)
}

// Run runs every solver on every graph at every budget. Rows come in that
// order: graph, budget, solver. When ctx is cancelled (an interrupt) it
// returns ctx's error and no rows: a solve cut short would be a partial
// row.
func Run(ctx context.Context, graphs []Graph, o Options) ([]Row, error) {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			o.Log(fmt.Sprintf(format, args...))
		}
	}
	var rows []Row
	for _, gr := range graphs {
		baseRes, err := remat.EvaluateNoRemat(gr.Problem)
		if err != nil {
			return nil, fmt.Errorf("bench %s: internal error: %w", gr.Name, err)
		}
		floor := gr.Problem.Floor().Bytes
		edges := 0
		for _, d := range gr.Problem.Deps {
			edges += len(d)
		}
		for _, b := range o.Budgets {
			var bytes int64
			if b.Min {
				bytes = smallestPeak(ctx, gr.Problem, o.Solvers, floor, o.TimeLimit)
				for _, r := range rows {
					if r.Graph == gr.Name && r.Peak > 0 && (withinBudget(r.Status) || r.Status == "over-budget") {
						bytes = min(bytes, r.Peak)
					}
				}
				logf("bench: %s: the smallest peak the heuristics reach is %d bytes (working-set floor %d)", gr.Name, bytes, floor)
			} else if bytes, err = b.Budget.Resolve(baseRes.PeakBytes, 0, 0); err != nil {
				return nil, err
			}
			q := *gr.Problem
			q.BudgetBytes = bytes
			fill := func(r *Row) {
				r.Graph, r.Family, r.Nodes, r.Edges = gr.Name, gr.Family, gr.Problem.N(), edges
				r.Budget, r.BudgetBytes = b.String(), bytes
				r.BasePeak, r.FloorBytes = baseRes.PeakBytes, floor
				r.TrivialBound = gr.Problem.LowerBoundSeconds()
			}
			// The cheapest plan within the budget so far: checkmate-milp
			// starts from it (a MIP start), so that its row is the best
			// plan known when CBC improves on none in time.
			var start *remat.Plan
			startBy, startCost := "", math.Inf(1)
			for _, s := range o.Solvers {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if o.ExactMaxNodes > 0 && gr.Problem.N() > o.ExactMaxNodes && solvers.Exact(s.Name) {
					r := Row{Solver: s.Name, Status: "skipped", Overhead: math.NaN(), Gap: math.NaN(), BestGap: math.NaN(), Cost: math.NaN(),
						Note: fmt.Sprintf("%d nodes > -exact-max-nodes %d", gr.Problem.N(), o.ExactMaxNodes)}
					fill(&r)
					rows = append(rows, r)
					logf("bench: %s at %s: %s skipped (%d nodes > -exact-max-nodes %d)", gr.Name, r.Budget, s.Name, gr.Problem.N(), o.ExactMaxNodes)
					continue
				}
				run := s
				started := s.Name == checkmate.MILPName && start != nil && o.MILPStart
				if started {
					run = checkmate.NewMILP(checkmate.Options{Start: start, Threads: 1})
				}
				r := One(ctx, run, &q, baseRes.TotalSeconds, o.TimeLimit)
				if started {
					r.Note = strings.TrimSpace("MIP start: " + startBy + "'s plan. " + r.Note)
				}
				if r.Plan != nil && withinBudget(r.Status) && r.Cost < startCost {
					start, startBy, startCost = r.Plan, s.Name, r.Cost
				}
				fill(&r)
				rows = append(rows, r)
				logf("bench: %s at %s: %s %s in %.1fs", gr.Name, r.Budget, s.Name, r.Status, r.Total)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bestBounds(rows)
	return rows, nil
}

// One runs one solver on p under the time limit (remat.SolveTimed) and
// describes the outcome as a row (without the graph's and budget's
// columns); baseSeconds is checkpoint-all's cost, the base of the
// overhead (0: no overhead).
func One(ctx context.Context, s remat.Solver, p *remat.Problem, baseSeconds float64, limit time.Duration) Row {
	r := Row{Solver: s.Name, Overhead: math.NaN(), Gap: math.NaN(), BestGap: math.NaN(), Cost: math.NaN()}
	t := remat.SolveTimed(ctx, s, p, limit, nil)
	r.Total = t.Total
	r.Status, r.Note = t.Status()
	var be *remat.BudgetError
	switch {
	case r.Status == "optimal" || r.Status == "feasible":
		plan, res := t.Plan, t.Check
		r.Cost, r.Peak, r.Plan = res.TotalSeconds, res.PeakBytes, plan
		if baseSeconds > 0 {
			r.Overhead = 100 * (res.TotalSeconds - baseSeconds) / baseSeconds
		}
		switch {
		case plan.Optimal:
			r.Gap, r.Bound = 0, res.TotalSeconds
		case plan.LowerBound > 0 && !math.IsNaN(plan.Gap) && !math.IsInf(plan.Gap, 0):
			r.Gap, r.Bound = 100*plan.Gap, plan.LowerBound
		}
		r.ToBest = t.ToBest
	case errors.As(t.Err, &be):
		r.Peak = be.NeedBytes
		// The plan that reached NeedBytes, when the solver returned it:
		// its overhead is what MOCCASIN's tables list for rounding that
		// overshoots the budget.
		if be.Plan != nil {
			if res, eerr := remat.Evaluate(p, be.Plan); eerr == nil && baseSeconds > 0 {
				r.Cost = res.TotalSeconds
				r.Overhead = 100 * (res.TotalSeconds - baseSeconds) / baseSeconds
			}
		}
	}
	return r
}

// smallestPeak is the budget "min" stands for on p: the least peak any of
// the non-exact solvers of the run reaches when asked for the working-set
// floor, each within the time limit (the floor itself when one reaches
// it). Exact solvers are left out: proving that no plan meets the floor
// can take them far longer than finding the heuristics' least peak.
func smallestPeak(ctx context.Context, p *remat.Problem, list []remat.Solver, floor int64, limit time.Duration) int64 {
	q := *p
	q.BudgetBytes = floor
	least := int64(math.MaxInt64)
	for _, s := range list {
		if s.Exact {
			continue
		}
		r := One(ctx, s, &q, 0, limit)
		if r.Peak > 0 && (withinBudget(r.Status) || r.Status == "over-budget") {
			least = min(least, r.Peak)
		}
	}
	if least == math.MaxInt64 {
		if res, err := remat.EvaluateNoRemat(p); err == nil {
			return res.PeakBytes
		}
		return floor
	}
	return least
}

// bestBounds sets each row's gap to the best lower bound known for its
// graph and budget: the largest of the trivial bound (every node once:
// the least cost of any plan, checkpoint-all's cost) and the bounds the
// solvers proved.
func bestBounds(rows []Row) {
	type key struct{ graph, budget string }
	best := map[key]float64{}
	for _, r := range rows {
		k := key{r.Graph, r.Budget}
		if withinBudget(r.Status) && r.Bound > best[k] {
			best[k] = r.Bound
		}
	}
	for i := range rows {
		r := &rows[i]
		if lb := best[key{r.Graph, r.Budget}]; withinBudget(r.Status) && r.Cost > 0 {
			lb = max(lb, r.TrivialBound)
			r.BestGap = 100 * max(0, r.Cost-lb) / r.Cost
		}
	}
}
