package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/remat-compile/remat/bench"
	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/peerbench"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

// The bench command: every solver on a set of graphs at a set of budgets,
// one table row per (graph, budget, solver), in the columns of MOCCASIN's
// Table 3 (total duration increase, peak, time to the best plan) plus the
// optimality gap, and the cost ratio of checkmate-lp to checkmate-milp
// (Checkmate Table 2).

type benchOptions struct {
	load      loadFlags
	budgets   string
	solvers   string
	profile   string
	timeLimit time.Duration
	csvOut    string
	svgOut    string
	train     bool
	loss      string
	maxBatch  int
	mdOut     string
	// exactMaxNodes skips the exact solvers on larger graphs (0: never).
	exactMaxNodes int
	// milpStart MIP-starts checkmate-milp from the cheapest plan before it.
	milpStart bool
	// peers runs MOCCASIN's Table 3 on the peers' published graphs.
	peers bool
	// boundTime is -peers' time for checkmate.StageBound per graph and
	// budget (0: not run).
	boundTime time.Duration
}

func benchCmd() *command {
	return &command{
		name:  "bench",
		usage: "[-budgets 90%,80%,min] [-solvers all|NAME,...] [-time-limit 60s] [-profile NAME] [-train [-loss sum]] [-csv out.csv] [-md out.md] [-svg curves.svg] [-exact-max-nodes 400] [-milp-start=false] [-max-batch N] GRAPH...",
		short: "Run solvers on models, zoo models or seeded random layered graphs (GRAPH = model.onnx, " + pipeline.ZooHelp + " or " + bench.LayeredHelp + ") at several budgets and tabulate overhead, peak, time to the best plan, gap to the solver's and to the best known lower bound, and cost ratios to checkmate-milp; -svg draws overhead-vs-budget curves.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &benchOptions{}
			o.load.register(fs)
			fs.StringVar(&o.budgets, "budgets", "90%,80%", "comma-separated `budgets`: percentages of the no-remat peak, bytes with a unit, or min (the smallest peak known to be feasible: the least any non-exact solver of the run reaches when asked for the working-set floor, or any solver reached at the budgets before min)")
			fs.StringVar(&o.solvers, "solvers", "all", "comma-separated solver `names`, or all (see `remat-compile solvers`)")
			fs.StringVar(&o.profile, "profile", pipeline.DefaultProfile, "device `profile` for the models' costs: a built-in name ("+strings.Join(profiles.Builtins(), ", ")+") or a .yaml file")
			fs.DurationVar(&o.timeLimit, "time-limit", 60*time.Second, "each solver's time limit per graph and budget")
			fs.StringVar(&o.csvOut, "csv", "", "also write the rows to `file` as CSV")
			fs.StringVar(&o.mdOut, "md", "", "also write the table to `file` as Markdown")
			fs.StringVar(&o.svgOut, "svg", "", "also draw each graph's overhead-vs-budget curves, one per solver (Checkmate Fig. 5), into `file` (an SVG; several graphs are stacked)")
			fs.BoolVar(&o.train, "train", false, "benchmark the models' training graphs (passes/autodiff) instead of their inference graphs")
			fs.StringVar(&o.loss, "loss", "sum", "with -train, the `loss` (as for compile)")
			fs.IntVar(&o.exactMaxNodes, "exact-max-nodes", 400, "skip the exact solvers (checkmate-milp, checkmate-lp, moccasin) on graphs of more than `N` nodes, where CBC does not build and solve their models in any useful time (0: run them everywhere)")
			fs.BoolVar(&o.milpStart, "milp-start", true, "start checkmate-milp from the cheapest plan of the solvers before it (a MIP start), so that its row is the best plan known; false times CBC from scratch")
			fs.DurationVar(&o.boundTime, "bound-time", 0, "with -peers, also prove a lower bound on each graph and budget from the stages' last steps of Checkmate's MILP (CBC, at most this `long`); the gap column then measures against the better of it and the solvers' bounds")
			fs.BoolVar(&o.peers, "peers", false, "instead of GRAPHs, reproduce MOCCASIN's Table 3 on the peers' published graphs (G1-G4, CM 1, CM 2 from ../shared/benchmarks/moccasin or $REMAT_PEER_GRAPHS; GRAPH arguments, if any, select them by key) at -budgets (percentages of each graph's input-order peak) and print it next to MOCCASIN's and Checkmate's published numbers")
			fs.IntVar(&o.maxBatch, "max-batch", 0, "instead of the table, find for each zoo: model and solver the largest training batch, up to `N`, that fits the profile's memory within one extra forward pass of cost (Checkmate §6.4, eq. 10)")
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) == 0 && !o.peers {
					return usagef("bench needs at least one GRAPH: a model file, a zoo: model, a node-link JSON or TWRemat graph, or " + bench.LayeredHelp)
				}
				return runBench(ctx, o, args, st)
			}
		},
	}
}

func runBench(ctx context.Context, o *benchOptions, args []string, st *Streams) error {
	if err := timeLimitFlag(o.timeLimit); err != nil {
		return err
	}
	switch {
	case o.boundTime < 0:
		return usagef("-bound-time %v: want a positive duration such as 60s", o.boundTime)
	case o.boundTime > 0 && !o.peers:
		return usagef("-bound-time applies to -peers only")
	}
	var budgets []bench.Budget
	for _, s := range strings.Split(o.budgets, ",") {
		if strings.TrimSpace(s) == "min" {
			budgets = append(budgets, bench.Budget{Min: true})
			continue
		}
		b, err := parseBudget(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		if b.IsZero() {
			return usagef("-budgets %q: an empty budget; give percentages, bytes or min", o.budgets)
		}
		budgets = append(budgets, bench.Budget{Budget: b})
	}
	var list []remat.Solver
	if o.solvers == "all" {
		list = solvers.All
	} else {
		for _, name := range strings.Split(o.solvers, ",") {
			s, ok := solvers.Lookup(strings.TrimSpace(name))
			if !ok {
				return usagef("-solvers: unknown solver %q; the solvers are %s", name, strings.Join(solvers.Names(), ", "))
			}
			list = append(list, s)
		}
	}
	if o.maxBatch < 0 {
		return usagef("-max-batch %d: want a positive upper limit such as 1024", o.maxBatch)
	}
	logLine := func(s string) { fmt.Fprintln(st.Err, s) }
	if o.peers {
		return runPeers(ctx, o, args, budgets, list, st)
	}
	if o.maxBatch > 0 {
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
		rows, err := bench.MaxBatch(ctx, args, list, bench.MaxBatchOptions{Profile: prof, Loss: loss, Limit: o.maxBatch, TimeLimit: o.timeLimit, Log: logLine})
		if err != nil {
			return err
		}
		return printMaxBatch(st.Out, rows, prof)
	}
	gopts := bench.GraphOptions{}
	if o.train {
		loss, err := autodiff.ParseLoss(o.loss)
		if err != nil {
			return usagef("-loss %q: %v", o.loss, err)
		}
		gopts.Train = &autodiff.Options{Loss: loss}
	}
	var err error
	if gopts.Load, err = o.load.options(st, true); err != nil {
		return err
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "layered:") && gopts.Profile == nil {
			if gopts.Profile, err = profiles.Load(o.profile); err != nil {
				return err
			}
		}
	}
	graphs, err := bench.LoadGraphs(ctx, args, gopts)
	if err != nil {
		return err
	}
	rows, err := bench.Run(ctx, graphs, bench.Options{
		Budgets: budgets, Solvers: list, TimeLimit: o.timeLimit,
		ExactMaxNodes: o.exactMaxNodes, MILPStart: o.milpStart, Log: logLine,
	})
	if err != nil {
		return err
	}
	if err := printBench(st.Out, rows); err != nil {
		return err
	}
	for _, f := range []struct {
		path  string
		write func(io.Writer, []bench.Row) error
	}{{o.mdOut, bench.WriteMarkdown}, {o.csvOut, bench.WriteCSV}, {o.svgOut, bench.WriteSVG}} {
		if f.path == "" {
			continue
		}
		if err := atomicfile.Write(f.path, func(w io.Writer) error { return f.write(w, rows) }); err != nil {
			return err
		}
	}
	return nil
}

// printBench writes the table, then each graph and budget's LP/MILP cost
// ratio.
func printBench(w io.Writer, rows []bench.Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graph\t(n, m)\tbudget\tsolver\tstatus\toverhead %\tpeak\ttime to best s\tgap %\tgap to best bound %\t")
	var last string
	for _, r := range rows {
		key := r.Graph + "\x00" + r.Budget
		if key != last && last != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t")
		}
		last = key
		fmt.Fprintf(tw, "%s\t(%d, %d)\t%s = %d\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t\n",
			r.Graph, r.Nodes, r.Edges, r.Budget, r.BudgetBytes, r.Solver, r.Status,
			bench.FormatNaN(r.Overhead, 2), bench.FormatPeak(r), r.ToBest, bench.FormatNaN(r.Gap, 2), bench.FormatNaN(r.BestGap, 2))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if table := bench.Ratios(rows); table != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "cost / checkmate-milp cost (the MILP starts from the cheapest plan of the solvers before it; Checkmate Table 2 reports 1.00-1.06 for checkmate-lp):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, cells := range table {
			fmt.Fprintf(tw, "%s\t\n", strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return printSeedMeans(w, rows)
}

// printSeedMeans writes the seedMeans table, when a seed range was run.
func printSeedMeans(w io.Writer, rows []bench.Row) error {
	ms := bench.SeedMeans(rows)
	if len(ms) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nMeans over the seeds (over the seeds with a plan within the budget):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graphs\tbudget\tsolver\tplans\tmean overhead %\tleast %\tlargest %\tmean time to best s\t")
	for _, m := range ms {
		fmt.Fprintln(tw, strings.Join(m.Cells(), "\t")+"\t")
	}
	return tw.Flush()
}

// printMaxBatch writes -max-batch's table.
func printMaxBatch(w io.Writer, rows []bench.MaxBatchRow, prof *profiles.Profile) error {
	fmt.Fprintf(w, "maximum batch size within %s's memory (%s) and one extra forward pass of cost (Checkmate eq. 10):\n", prof.Device.Name, remat.FormatBytes(prof.MemoryBytes()))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graph\tsolver\tmax batch\toverhead % at it\tnote\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t\n", r.Graph, r.Solver, r.Batch, bench.FormatNaN(r.Overhead, 2), r.Note)
	}
	return tw.Flush()
}

// runPeers is bench -peers: MOCCASIN's Table 3 (passes/remat/peerbench).
func runPeers(ctx context.Context, o *benchOptions, graphs []string, budgets []bench.Budget, list []remat.Solver, st *Streams) error {
	po := peerbench.Options{Graphs: graphs, Solvers: list, TimeLimit: o.timeLimit, BoundTime: o.boundTime}
	if o.solvers == "all" {
		po.Solvers = nil // auto, as the table compares
	}
	for _, b := range budgets {
		if b.Min || b.Budget.Fraction <= 0 {
			return usagef("-peers takes -budgets as percentages of each graph's input-order peak, such as 90%%,80%%")
		}
		po.Multipliers = append(po.Multipliers, b.Budget.Fraction)
	}
	po.Progress = func(r peerbench.Row) {
		fmt.Fprintf(st.Err, "bench: %s at %.0f%%: %s %s, TDI %.2f%% in %.1fs\n", r.Peer.Key, 100*r.Multiplier, r.Solver, r.Status, r.TDI, r.TimeToBest)
	}
	rows, err := peerbench.Run(ctx, po)
	if err != nil {
		return err
	}
	if err := peerbench.WriteMarkdown(st.Out, rows); err != nil {
		return err
	}
	if o.mdOut != "" {
		return atomicfile.Write(o.mdOut, func(w io.Writer) error { return peerbench.WriteMarkdown(w, rows) })
	}
	return nil
}
