package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/remat-compile/remat/bench"
	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

type solveOptions struct {
	load      loadFlags
	budget    string
	solver    string
	profile   string
	timeLimit time.Duration
	semantics string
	out       string
	format    string
}

func solveCmd() *command {
	return &command{
		name:  "solve",
		usage: "[-budget 80%|512MiB] [-solver auto|NAME] [-time-limit 60s] [-semantics default|free-sinks|hold-sinks] [-o schedule.json|schedule.txt] [-format json|twremat] GRAPH",
		short: "Solve one remat problem and write its schedule (GRAPH = networkx node-link JSON as MOCCASIN and Checkmate publish them, TWRemat text, " + bench.LayeredHelp + ", a model or a zoo: model): the computations and frees in order, with the peak and the cost, checked by remat.Check.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &solveOptions{}
			o.load.register(fs)
			fs.StringVar(&o.budget, "budget", "", "memory `budget`: bytes with a unit, or a percentage of the graph's no-remat peak (its input order's; MOCCASIN's M = ⌊multiplier × that peak⌋); default: a TWRemat file's memlimit, else none")
			fs.StringVar(&o.solver, "solver", solvers.Default, "`solver` (see `remat-compile solvers`)")
			fs.StringVar(&o.profile, "profile", pipeline.DefaultProfile, "device `profile` for a model's costs")
			fs.DurationVar(&o.timeLimit, "time-limit", pipeline.DefaultTimeLimit, "bound on the solver's `time`")
			fs.StringVar(&o.semantics, "semantics", "default", "memory `semantics` of another tool's graph: default (the format's), free-sinks (MOCCASIN's: sinks freed at once, no constant term) or hold-sinks (Checkmate's: sinks held to the end, parameters counted)")
			fs.StringVar(&o.out, "o", "", "write the schedule to `file` (default: print the summary only)")
			fs.StringVar(&o.format, "format", "", "schedule `format`: json (remat-compile schedule, version 1) or twremat (`c n` / `f n` lines); default by -o's extension (.txt and .twremat: twremat)")
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) != 1 {
					return usagef("solve takes one GRAPH, got %d arguments", len(args))
				}
				return runSolve(ctx, o, args[0], st)
			}
		},
	}
}

func runSolve(ctx context.Context, o *solveOptions, arg string, st *Streams) error {
	budget, err := parseBudget(o.budget)
	if err != nil {
		return err
	}
	solver, err := solverFlags(o.solver, o.timeLimit)
	if err != nil {
		return err
	}
	sem, err := interchange.ParseSemantics(o.semantics)
	if err != nil {
		return usagef("-semantics: %v", err)
	}
	format, err := interchange.ParseScheduleFormat(o.format, o.out)
	if err != nil {
		return usagef("-format %q: want json or twremat", o.format)
	}
	if o.out != "" && pipeline.SamePath(o.out, arg) {
		return fmt.Errorf("refusing to overwrite the input %s: write the schedule to another path", arg)
	}
	gopts := bench.GraphOptions{Semantics: sem}
	if gopts.Load, err = o.load.options(st, true); err != nil {
		return err
	}
	if !strings.HasPrefix(arg, "layered:") {
		if gopts.Profile, err = profiles.Load(o.profile); err != nil {
			return err
		}
	}
	sv, err := bench.Solve(ctx, arg, gopts, budget, solver, o.timeLimit)
	var be *remat.BudgetError
	switch {
	case errors.As(err, &be):
		return fmt.Errorf("remat-compile solve: %s: no plan within the budget of %s: the smallest peak %s reached is %s; try -budget %s",
			sv.Graph.Name, remat.FormatBytes(sv.Graph.Problem.BudgetBytes), solver.Name, remat.FormatBytes(be.NeedBytes), pipeline.SuggestBudget(be.NeedBytes))
	case sv != nil && err != nil:
		return fmt.Errorf("remat-compile solve: %w", err)
	case err != nil:
		return err
	}
	g, p, t, base := sv.Graph, sv.Graph.Problem, sv.Timed, sv.Base
	if o.out != "" {
		data, err := interchange.MarshalSchedule(format, p, t.Plan, g.Name)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(o.out, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return fmt.Errorf("-o: %w", err)
		}
	}
	tw := tabwriter.NewWriter(st.Out, 0, 0, 2, ' ', 0)
	edges := 0
	for _, d := range p.Deps {
		edges += len(d)
	}
	fmt.Fprintf(tw, "graph:\t%s (%d nodes, %d edges)\n", g.Name, p.N(), edges)
	budgetText := "none"
	if p.BudgetBytes != remat.NoBudget {
		budgetText = fmt.Sprintf("%d bytes (%s)", p.BudgetBytes, remat.FormatBytes(p.BudgetBytes))
	}
	fmt.Fprintf(tw, "budget:\t%s\n", budgetText)
	fmt.Fprintf(tw, "peak:\t%d bytes (no remat: %d)\n", t.Check.PeakBytes, base.PeakBytes)
	overhead := 0.0
	if base.TotalSeconds > 0 {
		overhead = 100 * (t.Check.TotalSeconds - base.TotalSeconds) / base.TotalSeconds
	}
	fmt.Fprintf(tw, "cost:\t%.6g (no remat: %.6g, %+.3f%%), %d recomputations\n", t.Check.TotalSeconds, base.TotalSeconds, overhead, t.Check.Recomputations)
	gap := math.NaN() // no lower bound: optimality unknown
	if t.Plan.LowerBound > 0 {
		gap = t.Plan.Gap
	}
	fmt.Fprintf(tw, "solver:\t%s, %s in %.2fs (best plan at %.2fs)\n", solver.Name, describeOptimality(t.Plan.Optimal, gap, ""), t.Total, t.ToBest)
	if o.out != "" {
		fmt.Fprintf(tw, "schedule:\t%s (%s)\n", o.out, format)
	}
	return tw.Flush()
}
