package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

// The maximum batch size each solver supports (Checkmate §6.4, Fig. 6):
// the largest batch B at which the solver finds a plan for the training
// graph within the device's memory whose cost stays within one extra
// forward pass, eq. (10):
//
//	Σ_t Σ_i C_i R_{t,i} ≤ 2 Σ_{v_i ∈ G_fwd} C_i + Σ_{v_i ∈ G_bwd} C_i,
//
// that is, the plan's cost is at most the training graph's cost plus the
// forward graph's. Like the paper's baselines, every solver is searched
// over B (doubling, then bisection), solving the fixed-batch problem at
// each; for checkmate-milp that gives a lower bound on the batch its
// quadratic reformulation would reach.

// BatchProblem is the training graph of one batch size, lowered.
type BatchProblem struct {
	Problem  *remat.Problem
	Budget   int64   // the device's memory less parameters and inputs
	BaseCost float64 // checkpoint-all's cost of the training graph
	FwdCost  float64 // the forward graph's cost
	Err      error   // the graph could not be built at this batch
}

// MaxBatchRow is one solver's answer for one model.
type MaxBatchRow struct {
	Graph, Solver string
	Batch         int     // 0: not even batch 1
	Overhead      float64 // percent, at that batch
	Note          string
}

// MaxBatchOptions configure MaxBatch.
type MaxBatchOptions struct {
	// Profile gives the costs and the device's memory (required, with a
	// memory capacity).
	Profile *profiles.Profile
	// Loss builds the training graphs.
	Loss autodiff.Loss
	// Limit is the largest batch tried; TimeLimit bounds each solve.
	Limit     int
	TimeLimit time.Duration
	// Log, when set, receives a line per model and solver.
	Log func(string)
}

// MaxBatch finds, per zoo: model (without batch=) and solver, the largest
// training batch up to o.Limit that fits the profile's memory within one
// extra forward pass of cost (Checkmate §6.4, eq. 10). When ctx is
// cancelled (an interrupt) it returns ctx's error and no rows.
func MaxBatch(ctx context.Context, models []string, list []remat.Solver, o MaxBatchOptions) ([]MaxBatchRow, error) {
	prof := o.Profile
	if prof == nil || prof.MemoryBytes() <= 0 {
		return nil, optionErrorf("-max-batch needs a profile with a memory capacity")
	}
	var rows []MaxBatchRow
	for _, a := range models {
		spec, ok := strings.CutPrefix(a, "zoo:")
		if !ok {
			return nil, optionErrorf("-max-batch rebuilds each model at every batch size: give zoo:NAME[:small|default][:res=N]... graphs, not %q", a)
		}
		if strings.Contains(spec, "batch=") {
			return nil, optionErrorf("-max-batch chooses the batch: drop batch= from %q", a)
		}
		cache := map[int]*BatchProblem{}
		build := func(b int) *BatchProblem {
			if bp, ok := cache[b]; ok {
				return bp
			}
			bp := BuildBatch(ctx, fmt.Sprintf("%s:batch=%d", spec, b), prof, o.Loss)
			cache[b] = bp
			return bp
		}
		for _, s := range list {
			fits := func(b int) (bool, float64, error) {
				bp := build(b)
				if bp.Err != nil {
					return false, 0, bp.Err
				}
				q := *bp.Problem
				q.BudgetBytes = bp.Budget
				r := One(ctx, s, &q, bp.BaseCost, o.TimeLimit)
				if !withinBudget(r.Status) {
					return false, 0, nil
				}
				return r.Cost <= bp.BaseCost+bp.FwdCost+1e-12*bp.BaseCost, r.Overhead, nil
			}
			row := MaxBatchRow{Graph: a, Solver: s.Name}
			best, bestOver, err := searchBatch(fits, o.Limit)
			row.Batch, row.Overhead = best, bestOver
			if best == 0 {
				row.Overhead = math.NaN()
			}
			if err != nil {
				row.Note = err.Error()
			}
			rows = append(rows, row)
			if o.Log != nil {
				o.Log(fmt.Sprintf("bench: %s: %s supports batch %d", a, s.Name, best))
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// searchBatch returns the largest b in [1, limit] with fits(b), assuming
// fits is monotone: doubling from 1, then bisection.
func searchBatch(fits func(int) (bool, float64, error), limit int) (int, float64, error) {
	ok, over, err := fits(1)
	if err != nil || !ok {
		return 0, 0, err
	}
	lo, loOver, hi := 1, over, 0 // fits(lo); !fits(hi) when hi > 0
	for hi == 0 {
		next := min(2*lo, limit)
		if next == lo {
			return lo, loOver, nil
		}
		ok, over, err := fits(next)
		if err != nil {
			return lo, loOver, err
		}
		if ok {
			lo, loOver = next, over
		} else {
			hi = next
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, over, err := fits(mid)
		if err != nil {
			return lo, loOver, err
		}
		if ok {
			lo, loOver = mid, over
		} else {
			hi = mid
		}
	}
	return lo, loOver, nil
}

// BuildBatch builds zoo:spec's training graph and lowers it with prof's
// costs.
func BuildBatch(ctx context.Context, spec string, prof *profiles.Profile, loss autodiff.Loss) *BatchProblem {
	bp := &BatchProblem{}
	m, err := pipeline.Load(ctx, "zoo:"+spec, pipeline.LoadOptions{RequireStatic: true})
	if err != nil {
		bp.Err = err
		return bp
	}
	g := m.Graph
	fp, _, _, err := remat.LowerCosted(g, prof, remat.LowerOptions{})
	if err != nil {
		bp.Err = err
		return bp
	}
	for _, c := range fp.Seconds {
		bp.FwdCost += c
	}
	if err := m.Train(ctx, autodiff.Options{Loss: loss}); err != nil {
		bp.Err = err
		return bp
	}
	p, _, _, err := remat.LowerCosted(g, prof, remat.LowerOptions{})
	if err != nil {
		bp.Err = err
		return bp
	}
	bp.Problem = p
	for _, c := range p.Seconds {
		bp.BaseCost += c
	}
	resident := remat.UncountedResident(g, remat.LowerOptions{})
	if resident >= prof.MemoryBytes() {
		bp.Err = fmt.Errorf("%s: parameters and inputs (%s) exceed %s's memory", spec, remat.FormatBytes(resident), prof.Device.Name)
		return bp
	}
	bp.Budget = prof.MemoryBytes() - resident
	return bp
}
