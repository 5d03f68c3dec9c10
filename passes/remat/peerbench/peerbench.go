// Package peerbench reproduces MOCCASIN's Table 3 (Bartan et al., ICML
// 2023) on the graphs its repository publishes: the random layered graphs
// G1–G4 and Checkmate's training graphs CM 1 (FCN8) and CM 2 (ResNet50),
// at budgets of 90 % and 80 % of the input order's peak, read with
// MOCCASIN's memory semantics (passes/remat/interchange, FreeSinks). Each
// row gives a solver's total duration increase (TDI), peak, time to its
// best plan and gap to the best lower bound, next to the numbers MOCCASIN
// and Checkmate's MILP published (Table3).
package peerbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/interchange"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

// EnvDir names the environment variable that FindDir reads first.
const EnvDir = "REMAT_PEER_GRAPHS"

// FindDir returns the directory that holds the Table3 files: $REMAT_PEER_GRAPHS
// when set, else the first shared/benchmarks/moccasin found in the working
// directory or one of its parents (the project keeps the peers' data in
// ../shared beside its checkouts). It is an error when a file of Table3
// is not there.
func FindDir() (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; dir == ""; {
			c := filepath.Join(d, "shared", "benchmarks", "moccasin")
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				dir = c
			} else if up := filepath.Dir(d); up != d {
				d = up
			} else {
				return "", fmt.Errorf("peerbench: MOCCASIN's graphs not found: no shared/benchmarks/moccasin above %s; set %s to the directory holding %s and the other Table 3 files", wd, EnvDir, Table3[0].File)
			}
		}
	}
	for _, p := range Table3 {
		if _, err := os.Stat(filepath.Join(dir, p.File)); err != nil {
			return "", fmt.Errorf("peerbench: %s (%s) is missing from %s: %w", p.Label, p.File, dir, err)
		}
	}
	return dir, nil
}

// Options configure Run. The zero value runs auto on all six graphs at
// 90 % and 80 %, one minute per solve, from FindDir's directory.
type Options struct {
	// Dir holds the graph files; "" means FindDir.
	Dir string
	// Graphs selects graphs by Key (G1–G4, CM1, CM2); nil means all, in
	// Table3's order.
	Graphs []string
	// Multipliers are the budgets as fractions of the input order's peak;
	// nil means 0.9 and 0.8.
	Multipliers []float64
	// Solvers run on every graph and budget, in order; nil means auto.
	Solvers []remat.Solver
	// TimeLimit bounds each solve; 0 means one minute.
	TimeLimit time.Duration
	// BoundTime, when positive, runs checkmate.StageBound on each graph
	// and budget for at most this long, from the cheapest plan the solvers
	// found; its bound joins the solvers' in BestBound. It needs COIN-OR
	// CBC.
	BoundTime time.Duration
	// Progress, when not nil, receives each row as soon as it is done.
	Progress func(Row)
}

// Row is one solver's result on one graph and budget.
type Row struct {
	// Peer is the graph, with its published results.
	Peer Peer
	// Published is the published row for Multiplier (zero when Table 3
	// has none).
	Published Published
	// Nodes and Edges are the graph's as read.
	Nodes, Edges int
	// Multiplier is the budget's fraction of NoRematPeak; Budget is
	// ⌊Multiplier × NoRematPeak⌋ bytes.
	Multiplier float64
	Budget     int64
	// NoRematPeak and NoRematCost are the input order's (checkpoint-all)
	// peak in bytes and cost in the file's units.
	NoRematPeak int64
	NoRematCost float64
	// Solver names the solver.
	Solver string
	// Status is optimal, feasible (a plan within the budget), over-budget
	// (none; Peak is the least peak reached), infeasible (proved that
	// none exists), timeout (none within the limit) or error.
	Status string
	// TDI is the plan's total duration increase over NoRematCost in
	// percent (NaN without a plan).
	TDI float64
	// Peak is the plan's peak in bytes (remat.Check's), or the least peak
	// reached when over budget.
	Peak int64
	// TimeToBest is when the solver first reported a plan as cheap as
	// its final one; Seconds is the whole solve (both in seconds).
	TimeToBest, Seconds float64
	// TimeToPublished is when the solver first reported a plan whose TDI
	// is at or below MOCCASIN's published one (as Meets compares them),
	// in seconds; NaN when it never did or nothing is published.
	TimeToPublished float64
	// LowerBound is the solver's own proven bound on the cost of any plan
	// within the budget (NoRematCost when it knows nothing better).
	LowerBound float64
	// StageBound is checkmate.StageBound's bound for this graph and
	// budget (Options.BoundTime), NaN when it did not run.
	StageBound float64
	// BestBound is the best bound any solver of the run, or StageBound,
	// proved for this graph and budget, at least NoRematCost.
	BestBound float64
	// Gap is the distance from the plan's cost to BestBound in percentage
	// points of NoRematCost: the most by which TDI may exceed the optimal
	// TDI (NaN without a plan).
	Gap float64
	// Note explains an error or a mismatch with the published setup.
	Note string

	plan *remat.Plan // the plan, checked; nil without one
}

// Meets reports whether the row's TDI, rounded to Table 3's one decimal,
// is at or below MOCCASIN's published TDI.
func (r Row) Meets() bool {
	return r.Published.Moccasin.Found && atOrBelow(r.TDI, r.Published.Moccasin.TDI)
}

// atOrBelow reports whether tdi, rounded to one decimal, is at most
// published (false for NaN).
func atOrBelow(tdi, published float64) bool {
	return !math.IsNaN(tdi) && math.Round(tdi*10)/10 <= published+1e-9
}

// Run solves every selected graph at every multiplier with every solver,
// one after the other, and returns the rows in that order. A graph that
// cannot be read is an error; a solver that fails gives a row with Status
// error.
func Run(ctx context.Context, o Options) ([]Row, error) {
	if o.Dir == "" {
		d, err := FindDir()
		if err != nil {
			return nil, err
		}
		o.Dir = d
	}
	if o.Multipliers == nil {
		o.Multipliers = []float64{0.9, 0.8}
	}
	if o.Solvers == nil {
		o.Solvers = []remat.Solver{solvers.Auto}
	}
	if o.TimeLimit <= 0 {
		o.TimeLimit = time.Minute
	}
	peers, err := selectPeers(o.Graphs)
	if err != nil {
		return nil, err
	}
	for _, m := range o.Multipliers {
		if !(m > 0 && m <= 1) {
			return nil, fmt.Errorf("peerbench: budget multiplier %v is not in (0, 1]", m)
		}
	}
	var rows []Row
	for _, peer := range peers {
		g, err := interchange.LoadWith(filepath.Join(o.Dir, peer.File), interchange.Options{Semantics: interchange.FreeSinks})
		if err != nil {
			return rows, fmt.Errorf("peerbench: %s: %w", peer.Key, err)
		}
		base, err := remat.EvaluateNoRemat(g.Problem)
		if err != nil {
			return rows, fmt.Errorf("peerbench: %s: %w", peer.Key, err)
		}
		for _, m := range o.Multipliers {
			q := *g.Problem
			q.BudgetBytes = Budget(m, base.PeakBytes)
			first := len(rows)
			for _, s := range o.Solvers {
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				pub := published(peer, m)
				target := math.NaN()
				if pub.Moccasin.Found {
					target = pub.Moccasin.TDI
				}
				r := solveOne(ctx, s, &q, base, o.TimeLimit, target)
				r.Peer, r.Published = peer, pub
				r.Nodes, r.Edges, r.Multiplier = q.N(), g.Edges, m
				if peer.NoRematPeak > 0 && peer.NoRematPeak != base.PeakBytes {
					r.Note = fmt.Sprintf("input-order peak %d B, not the published %d B", base.PeakBytes, peer.NoRematPeak)
				}
				rows = append(rows, r)
			}
			stage := math.NaN()
			if o.BoundTime > 0 {
				b, infeasible, err := checkmate.StageBound(ctx, &q, o.BoundTime, cheapest(rows[first:]))
				if err != nil {
					return rows, fmt.Errorf("peerbench: %s at %g: the stage bound: %w", peer.Key, m, err)
				}
				if infeasible {
					for _, r := range rows[first:] {
						if r.Status == "optimal" || r.Status == "feasible" {
							return rows, fmt.Errorf("peerbench: %s at %g: the stage bound proves that no plan fits, but %s found one", peer.Key, m, r.Solver)
						}
					}
				} else {
					stage = b
				}
			}
			bestBounds(rows[first:], stage)
			if o.Progress != nil {
				for _, r := range rows[first:] {
					o.Progress(r)
				}
			}
		}
	}
	return rows, nil
}

// Budget is MOCCASIN's budget M = ⌊multiplier × peak⌋ (the README of
// ../shared/benchmarks/moccasin). The product is nudged up by a relative
// 1e-12 so that a product that is an integer in exact arithmetic does not
// round down to the integer below.
func Budget(multiplier float64, peak int64) int64 {
	return int64(math.Floor(multiplier * float64(peak) * (1 + 1e-12)))
}

func selectPeers(keys []string) ([]Peer, error) {
	if keys == nil {
		return Table3, nil
	}
	var out []Peer
	for _, k := range keys {
		found := false
		for _, p := range Table3 {
			if p.Key == k {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("peerbench: unknown graph %q; the graphs are G1, G2, G3, G4, CM1 and CM2", k)
		}
	}
	return out, nil
}

func published(p Peer, m float64) Published {
	for _, r := range p.Rows {
		if math.Abs(r.Multiplier-m) < 1e-9 {
			return r
		}
	}
	return Published{}
}

// solveOne runs one solver under the time limit and measures its plan
// with remat.Check; target is the TDI whose first report TimeToPublished
// records (NaN for none).
func solveOne(ctx context.Context, s remat.Solver, p *remat.Problem, base remat.CheckResult, limit time.Duration, target float64) Row {
	r := Row{
		Solver: s.Name, Budget: p.BudgetBytes, NoRematPeak: base.PeakBytes, NoRematCost: base.TotalSeconds,
		TDI: math.NaN(), Gap: math.NaN(), LowerBound: base.TotalSeconds, TimeToPublished: math.NaN(),
	}
	t := remat.SolveTimed(ctx, s, p, limit, func(pr remat.Progress) {
		if math.IsNaN(r.TimeToPublished) && atOrBelow(tdi(pr.Incumbent, base.TotalSeconds), target) {
			r.TimeToPublished = pr.Elapsed
		}
	})
	r.Seconds = t.Total
	r.Status, r.Note = t.Status()
	var be *remat.BudgetError
	switch {
	case r.Status == "optimal" || r.Status == "feasible":
		plan, res := t.Plan, t.Check
		r.plan = plan
		if math.IsNaN(r.TimeToPublished) && atOrBelow(tdi(res.TotalSeconds, base.TotalSeconds), target) {
			r.TimeToPublished = r.Seconds // a solver that reports nothing found it at the end
		}
		if plan.Optimal {
			r.LowerBound = res.TotalSeconds
		} else {
			r.LowerBound = max(r.LowerBound, min(plan.LowerBound, res.TotalSeconds))
		}
		r.Peak = res.PeakBytes
		r.TDI = tdi(res.TotalSeconds, base.TotalSeconds)
		r.TimeToBest = t.ToBest
	case errors.As(t.Err, &be):
		r.Peak = be.NeedBytes
	}
	return r
}

// cheapest returns the cheapest plan of rows (StageBound's incumbent), nil
// when none has one.
func cheapest(rows []Row) *remat.Plan {
	var best *Row
	for i := range rows {
		if r := &rows[i]; r.plan != nil && (best == nil || r.TDI < best.TDI) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	return best.plan
}

// tdi is the cost's increase over base in percent.
func tdi(cost, base float64) float64 {
	if base <= 0 {
		return 0
	}
	return 100 * (cost - base) / base
}

// bestBounds sets BestBound and Gap on the rows of one graph and budget.
func bestBounds(rows []Row, stage float64) {
	lb := 0.0
	if !math.IsNaN(stage) {
		lb = stage
	}
	for _, r := range rows {
		if r.Status == "optimal" || r.Status == "feasible" {
			lb = max(lb, r.LowerBound)
		}
	}
	for i := range rows {
		r := &rows[i]
		r.StageBound = stage
		r.BestBound = max(lb, r.NoRematCost)
		if !math.IsNaN(r.TDI) {
			r.Gap = max(0, r.TDI-tdi(r.BestBound, r.NoRematCost))
		}
	}
}
