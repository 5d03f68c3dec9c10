package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

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

// batchProblem is the training graph of one batch size, lowered.
type batchProblem struct {
	p          *remat.Problem
	budget     int64   // the device's memory less parameters and inputs
	baseCost   float64 // checkpoint-all's cost of the training graph
	fwdCost    float64 // the forward graph's cost
	noRematFit bool
	err        error // the graph could not be built at this batch
}

// maxBatchRow is one solver's answer for one model.
type maxBatchRow struct {
	graph, solver string
	batch         int     // 0: not even batch 1
	overhead      float64 // percent, at that batch
	note          string
}

func runMaxBatch(ctx context.Context, o *benchOptions, args []string, list []remat.Solver, st *Streams) error {
	prof, err := profiles.Load(o.profile)
	if err != nil {
		return err
	}
	if prof.MemoryBytes() <= 0 {
		return usagef("-max-batch needs a profile with a memory capacity; %s has none", o.profile)
	}
	loss, err := autodiff.ParseLoss(o.loss)
	if err != nil {
		return usagef("-loss %q: %v", o.loss, err)
	}
	var rows []maxBatchRow
	for _, a := range args {
		spec, ok := strings.CutPrefix(a, "zoo:")
		if !ok {
			return usagef("-max-batch rebuilds each model at every batch size: give zoo:NAME[:small|default][:res=N]... graphs, not %q", a)
		}
		if strings.Contains(spec, "batch=") {
			return usagef("-max-batch chooses the batch: drop batch= from %q", a)
		}
		cache := map[int]*batchProblem{}
		build := func(b int) *batchProblem {
			if bp, ok := cache[b]; ok {
				return bp
			}
			bp := buildBatch(ctx, fmt.Sprintf("%s:batch=%d", spec, b), prof, loss)
			cache[b] = bp
			return bp
		}
		for _, s := range list {
			fits := func(b int) (bool, float64, error) {
				bp := build(b)
				if bp.err != nil {
					return false, 0, bp.err
				}
				q := *bp.p
				q.BudgetBytes = bp.budget
				r := benchOne(ctx, s, &q, bp.baseCost, o.timeLimit)
				if !withinBudget(r.status) {
					return false, 0, nil
				}
				return r.cost <= bp.baseCost+bp.fwdCost+1e-12*bp.baseCost, r.overhead, nil
			}
			row := maxBatchRow{graph: a, solver: s.Name}
			best, bestOver, err := searchBatch(fits, o.maxBatch)
			row.batch, row.overhead = best, bestOver
			if best == 0 {
				row.overhead = math.NaN()
			}
			if err != nil {
				row.note = err.Error()
			}
			rows = append(rows, row)
			fmt.Fprintf(st.Err, "bench: %s: %s supports batch %d\n", a, s.Name, best)
		}
	}
	return printMaxBatch(st.Out, rows, prof)
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

// buildBatch builds zoo:spec's training graph and lowers it with prof's
// costs.
func buildBatch(ctx context.Context, spec string, prof *profiles.Profile, loss autodiff.Loss) *batchProblem {
	bp := &batchProblem{}
	m, err := pipeline.Load(ctx, "zoo:"+spec, pipeline.LoadOptions{RequireStatic: true})
	if err != nil {
		bp.err = err
		return bp
	}
	g := m.Graph
	fp, _, _, err := remat.LowerCosted(g, prof, remat.LowerOptions{})
	if err != nil {
		bp.err = err
		return bp
	}
	for _, c := range fp.Seconds {
		bp.fwdCost += c
	}
	if err := m.Train(ctx, autodiff.Options{Loss: loss}); err != nil {
		bp.err = err
		return bp
	}
	p, _, _, err := remat.LowerCosted(g, prof, remat.LowerOptions{})
	if err != nil {
		bp.err = err
		return bp
	}
	bp.p = p
	for _, c := range p.Seconds {
		bp.baseCost += c
	}
	resident := remat.UncountedResident(g, remat.LowerOptions{})
	if resident >= prof.MemoryBytes() {
		bp.err = fmt.Errorf("%s: parameters and inputs (%s) exceed %s's memory", spec, remat.FormatBytes(resident), prof.Device.Name)
		return bp
	}
	bp.budget = prof.MemoryBytes() - resident
	return bp
}

func printMaxBatch(w io.Writer, rows []maxBatchRow, prof *profiles.Profile) error {
	fmt.Fprintf(w, "maximum batch size within %s's memory (%s) and one extra forward pass of cost (Checkmate eq. 10):\n", prof.Device.Name, remat.FormatBytes(prof.MemoryBytes()))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graph\tsolver\tmax batch\toverhead % at it\tnote\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t\n", r.graph, r.solver, r.batch, fmtNaN(r.overhead, 2), r.note)
	}
	return tw.Flush()
}
