package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/passes/remat/synth"
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
}

func benchCmd() *command {
	return &command{
		name:  "bench",
		usage: "[-budgets 90%,80%,min] [-solvers all|NAME,...] [-time-limit 60s] [-profile NAME] [-train [-loss sum]] [-csv out.csv] [-md out.md] [-svg curves.svg] [-exact-max-nodes 400] [-milp-start=false] [-max-batch N] GRAPH...",
		short: "Run solvers on models, zoo models or seeded random layered graphs (GRAPH = model.onnx, " + pipeline.ZooHelp + " or " + layeredSpecHelp + ") at several budgets and tabulate overhead, peak, time to the best plan, gap to the solver's and to the best known lower bound, and cost ratios to checkmate-milp; -svg draws overhead-vs-budget curves.",
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
			fs.IntVar(&o.maxBatch, "max-batch", 0, "instead of the table, find for each zoo: model and solver the largest training batch, up to `N`, that fits the profile's memory within one extra forward pass of cost (Checkmate §6.4, eq. 10)")
			return func(ctx context.Context, args []string, io *Streams) error {
				if len(args) == 0 {
					return usagef("bench needs at least one GRAPH: a model file, a zoo: model or " + layeredSpecHelp)
				}
				return runBench(ctx, o, args, io)
			}
		},
	}
}

// benchGraph is one graph of the run.
type benchGraph struct {
	name string
	p    *remat.Problem
	// family is the layered: spec with a seed range that the graph is
	// one seed of; empty otherwise.
	family string
}

// benchRow is one solver's outcome on one graph at one budget.
type benchRow struct {
	graph        string
	family       string // benchGraph.family
	nodes, edges int
	budget       string
	budgetBytes  int64
	basePeak     int64
	floorBytes   int64
	solver       string
	status       string      // optimal, feasible, over-budget, infeasible, none, timeout, error
	overhead     float64     // percent over checkpoint-all's cost; NaN without a plan
	peak         int64       // the plan's peak; the least peak reached when over budget
	toBest       float64     // seconds to the best plan
	total        float64     // seconds the solver ran
	gap          float64     // percent, from the solver's own bound; NaN when unknown
	bound        float64     // the solver's lower bound on the optimum, seconds; 0 when none
	bestGap      float64     // percent, to the best lower bound any solver proved on this graph and budget; NaN without a plan
	cost         float64     // seconds; NaN without a plan
	trivialBound float64     // seconds: every node computed once (Problem.LowerBoundSeconds)
	plan         *remat.Plan // the plan within the budget, when there is one
	note         string
}

func runBench(ctx context.Context, o *benchOptions, args []string, st *Streams) error {
	if o.timeLimit <= 0 {
		return usagef("-time-limit %v: want a positive duration such as 60s", o.timeLimit)
	}
	var budgets []remat.Budget // the zero Budget stands for min
	var budgetNames []string
	for _, s := range strings.Split(o.budgets, ",") {
		if strings.TrimSpace(s) == "min" {
			budgets, budgetNames = append(budgets, remat.Budget{}), append(budgetNames, "min")
			continue
		}
		b, err := parseBudget(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		if b.IsZero() {
			return usagef("-budgets %q: an empty budget; give percentages, bytes or min", o.budgets)
		}
		budgets, budgetNames = append(budgets, b), append(budgetNames, b.String())
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
	if o.maxBatch > 0 {
		return runMaxBatch(ctx, o, args, list, st)
	}
	var train *autodiff.Options
	if o.train {
		loss, err := autodiff.ParseLoss(o.loss)
		if err != nil {
			return usagef("-loss %q: %v", o.loss, err)
		}
		train = &autodiff.Options{Loss: loss}
	}
	var prof *profiles.Profile
	var graphs []benchGraph
	for _, a := range args {
		if spec, ok := strings.CutPrefix(a, "layered:"); ok {
			specs, err := layeredSeeds(spec)
			if err != nil {
				return err
			}
			for _, sp := range specs {
				p, err := parseLayered(sp)
				if err != nil {
					return err
				}
				gr := benchGraph{name: "layered:" + sp, p: p}
				if len(specs) > 1 {
					gr.family = a
				}
				graphs = append(graphs, gr)
			}
			continue
		}
		if prof == nil {
			var err error
			if prof, err = profiles.Load(o.profile); err != nil {
				return err
			}
		}
		lo, err := o.load.options(st, true)
		if err != nil {
			return err
		}
		m, err := pipeline.Load(ctx, a, lo)
		if err != nil {
			return err
		}
		name := a
		if train != nil {
			if err := m.Train(ctx, *train); err != nil {
				return err
			}
			name += " (training)"
		}
		p, _, _, err := remat.LowerCosted(m.Graph, prof, remat.LowerOptions{})
		if err != nil {
			return err
		}
		graphs = append(graphs, benchGraph{name: name, p: p})
	}

	var rows []benchRow
	for _, gr := range graphs {
		baseRes, err := remat.EvaluateNoRemat(gr.p)
		if err != nil {
			return fmt.Errorf("bench %s: internal error: %w", gr.name, err)
		}
		_, floor := remat.WorkingSetFloor(gr.p)
		edges := 0
		for _, d := range gr.p.Deps {
			edges += len(d)
		}
		for bi, b := range budgets {
			var bytes int64
			if b.IsZero() {
				bytes = smallestPeak(ctx, gr.p, list, floor, o.timeLimit)
				for _, r := range rows {
					if r.graph == gr.name && r.peak > 0 && (withinBudget(r.status) || r.status == "over-budget") {
						bytes = min(bytes, r.peak)
					}
				}
				fmt.Fprintf(st.Err, "bench: %s: the smallest peak the heuristics reach is %d bytes (working-set floor %d)\n", gr.name, bytes, floor)
			} else if bytes, err = b.Resolve(baseRes.PeakBytes, 0, 0); err != nil {
				return err
			}
			q := *gr.p
			q.BudgetBytes = bytes
			// The cheapest plan within the budget so far: checkmate-milp
			// starts from it (a MIP start), so that its row is the best
			// plan known when CBC improves on none in time.
			var start *remat.Plan
			startBy, startCost := "", math.Inf(1)
			for _, s := range list {
				if err := ctx.Err(); err != nil {
					return err
				}
				if o.exactMaxNodes > 0 && gr.p.N() > o.exactMaxNodes && solvers.Exact(s.Name) {
					rows = append(rows, benchRow{graph: gr.name, family: gr.family, nodes: gr.p.N(), edges: edges, budget: budgetNames[bi], budgetBytes: bytes,
						basePeak: baseRes.PeakBytes, floorBytes: floor, trivialBound: gr.p.LowerBoundSeconds(), solver: s.Name, status: "skipped",
						overhead: math.NaN(), gap: math.NaN(), bestGap: math.NaN(), cost: math.NaN(),
						note: fmt.Sprintf("%d nodes > -exact-max-nodes %d", gr.p.N(), o.exactMaxNodes)})
					fmt.Fprintf(st.Err, "bench: %s at %s: %s skipped (%d nodes > -exact-max-nodes %d)\n", gr.name, budgetNames[bi], s.Name, gr.p.N(), o.exactMaxNodes)
					continue
				}
				run := s
				if s.Name == checkmate.MILPName && start != nil && o.milpStart {
					run = checkmate.NewMILP(checkmate.Options{Start: start, Threads: 1})
				}
				r := benchOne(ctx, run, &q, baseRes.TotalSeconds, o.timeLimit)
				if run.Name == checkmate.MILPName && start != nil && o.milpStart {
					r.note = strings.TrimSpace("MIP start: " + startBy + "'s plan. " + r.note)
				}
				if r.plan != nil && withinBudget(r.status) && r.cost < startCost {
					start, startBy, startCost = r.plan, s.Name, r.cost
				}
				r.graph, r.family, r.nodes, r.edges = gr.name, gr.family, gr.p.N(), edges
				r.budget, r.budgetBytes = budgetNames[bi], bytes
				r.basePeak, r.floorBytes = baseRes.PeakBytes, floor
				r.trivialBound = gr.p.LowerBoundSeconds()
				rows = append(rows, r)
				fmt.Fprintf(st.Err, "bench: %s at %s: %s %s in %.1fs\n", gr.name, r.budget, s.Name, r.status, r.total)
			}
		}
	}
	bestBounds(rows)
	if err := printBench(st.Out, rows); err != nil {
		return err
	}
	if o.mdOut != "" {
		if err := atomicfile.Write(o.mdOut, func(w io.Writer) error { return writeBenchMarkdown(w, rows) }); err != nil {
			return err
		}
	}
	if o.csvOut != "" {
		if err := atomicfile.Write(o.csvOut, func(w io.Writer) error { return writeBenchCSV(w, rows) }); err != nil {
			return err
		}
	}
	if o.svgOut != "" {
		return atomicfile.Write(o.svgOut, func(w io.Writer) error { return writeBenchSVG(w, rows) })
	}
	return nil
}

// layeredSpecHelp describes the layered: graph spec.
const layeredSpecHelp = "layered:N:M[:SEED|:FIRST-LAST][:OPTION...] (a seed range gives one graph per seed and a table of means over them; OPTION = moccasin, layers=K, cost-decades=F, order=random|layers, sinks=free|outputs)"

// maxSeeds bounds a layered: seed range.
const maxSeeds = 1000

// layeredSeeds expands a seed range FIRST-LAST in the third field of a
// layered: spec into one spec per seed (the other fields kept as they
// are); any other spec is returned alone.
func layeredSeeds(spec string) ([]string, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 3 || !strings.Contains(parts[2], "-") || strings.Contains(parts[2], "=") {
		return []string{spec}, nil
	}
	a, b, _ := strings.Cut(parts[2], "-")
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || first > last {
		return nil, usagef("layered:%s: bad seed range %q: want FIRST-LAST, two non-negative integers with FIRST <= LAST, such as 1-6", spec, parts[2])
	}
	if last-first >= maxSeeds {
		return nil, usagef("layered:%s: the seed range %q holds %d seeds; at most %d are allowed", spec, parts[2], last-first+1, maxSeeds)
	}
	var out []string
	for seed := first; ; seed++ {
		parts[2] = strconv.FormatUint(seed, 10)
		out = append(out, strings.Join(parts, ":"))
		if seed == last {
			return out, nil
		}
	}
}

// parseLayered reads N:M[:SEED][:OPTION...]: the options of
// synth.LayeredOptions by name, and moccasin for
// synth.MoccasinCalibrated (options after it override it).
func parseLayered(spec string) (*remat.Problem, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 {
		return nil, usagef("layered:%s: want %s, for example layered:100:236 or layered:1000:5875:moccasin", spec, layeredSpecHelp)
	}
	var nums [3]int
	nums[2] = 1
	var o synth.LayeredOptions
	for i, s := range parts {
		if i < 3 && !strings.Contains(s, "=") && s != "moccasin" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 {
				return nil, usagef("layered:%s: %q is not a non-negative integer", spec, s)
			}
			nums[i] = v
			continue
		}
		if i < 2 {
			return nil, usagef("layered:%s: want %s", spec, layeredSpecHelp)
		}
		key, val, _ := strings.Cut(s, "=")
		var bad bool
		switch key {
		case "moccasin":
			o = synth.MoccasinCalibrated
			bad = val != ""
		case "layers":
			v, err := strconv.Atoi(val)
			o.Layers, bad = v, err != nil || v < 2
		case "cost-decades":
			v, err := strconv.ParseFloat(val, 64)
			o.CostDecades, bad = v, err != nil || !(v >= 0 && v <= 6)
		case "order":
			o.RandomOrder, bad = val == "random", val != "random" && val != "layers"
		case "sinks":
			o.FreeSinks, bad = val == "free", val != "free" && val != "outputs"
		default:
			return nil, usagef("layered:%s: unknown option %q; the options are moccasin, layers=K, cost-decades=F, order=random|layers and sinks=free|outputs", spec, s)
		}
		if bad {
			return nil, usagef("layered:%s: bad option %q: layers takes an integer of at least 2, cost-decades a number from 0 to 6, order random or layers, sinks free or outputs, moccasin no value", spec, s)
		}
	}
	p, err := synth.LayeredWith(uint64(nums[2]), nums[0], nums[1], o)
	if err != nil {
		return nil, usagef("layered:%s: %v", spec, err)
	}
	return p, nil
}

// benchOne runs one solver under the time limit and checks its plan.
func benchOne(ctx context.Context, s remat.Solver, p *remat.Problem, baseSeconds float64, limit time.Duration) benchRow {
	r := benchRow{solver: s.Name, overhead: math.NaN(), gap: math.NaN(), bestGap: math.NaN(), cost: math.NaN()}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	best, bestAt := math.Inf(1), 0.0
	progress := func(pr remat.Progress) {
		if pr.Incumbent < best {
			best, bestAt = pr.Incumbent, pr.Elapsed
		}
	}
	start := time.Now()
	plan, err := s.Solve(ctx, p, progress)
	r.total = time.Since(start).Seconds()
	timedOut := ctx.Err() != nil
	var be *remat.BudgetError
	switch {
	case err == nil && plan != nil:
		res, cerr := remat.Check(p, plan)
		if cerr != nil {
			r.status, r.note = "error", "plan fails Check (a solver bug): "+cerr.Error()
			return r
		}
		r.cost, r.peak, r.plan = res.TotalSeconds, res.PeakBytes, plan
		if baseSeconds > 0 {
			r.overhead = 100 * (res.TotalSeconds - baseSeconds) / baseSeconds
		}
		r.status = "feasible"
		switch {
		case plan.Optimal:
			r.status, r.gap, r.bound = "optimal", 0, res.TotalSeconds
		case plan.LowerBound > 0 && !math.IsNaN(plan.Gap) && !math.IsInf(plan.Gap, 0):
			r.gap, r.bound = 100*plan.Gap, plan.LowerBound
		}
		// Time to the best plan: when a progress report first showed its
		// cost; a solver that reports nothing found it at the end.
		r.toBest = r.total
		if !math.IsInf(best, 1) && best <= res.TotalSeconds*(1+1e-9) {
			r.toBest = bestAt
		}
	case errors.As(err, &be):
		r.peak = be.NeedBytes
		r.status = "over-budget"
		if be.Proven {
			r.status = "infeasible"
		}
		// The plan that reached NeedBytes, when the solver returned it:
		// its overhead is what MOCCASIN's tables list for rounding that
		// overshoots the budget.
		if be.Plan != nil {
			if res, eerr := remat.Evaluate(p, be.Plan); eerr == nil && baseSeconds > 0 {
				r.cost = res.TotalSeconds
				r.overhead = 100 * (res.TotalSeconds - baseSeconds) / baseSeconds
			}
		}
	case errors.Is(err, remat.ErrInfeasible):
		r.status = "infeasible"
	case timedOut:
		r.status, r.note = "timeout", "no plan within the time limit"
	default:
		r.status, r.note = "error", err.Error()
	}
	return r
}

// printBench writes the table, then each graph and budget's LP/MILP cost
// ratio.
func printBench(w io.Writer, rows []benchRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graph\t(n, m)\tbudget\tsolver\tstatus\toverhead %\tpeak\ttime to best s\tgap %\tgap to best bound %\t")
	var last string
	for _, r := range rows {
		key := r.graph + "\x00" + r.budget
		if key != last && last != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t")
		}
		last = key
		fmt.Fprintf(tw, "%s\t(%d, %d)\t%s = %d\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t\n",
			r.graph, r.nodes, r.edges, r.budget, r.budgetBytes, r.solver, r.status,
			fmtNaN(r.overhead, 2), benchPeak(r), r.toBest, fmtNaN(r.gap, 2), fmtNaN(r.bestGap, 2))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printRatios(w, rows); err != nil {
		return err
	}
	return printSeedMeans(w, rows)
}

// seedMean summarizes one solver at one budget over the seeds of a
// layered: seed range: how many seeds it has a plan within the budget
// for, and the mean, least and largest overhead and the mean time to the
// best plan over those.
type seedMean struct {
	family, budget, solver string
	seeds, plans           int
	mean, least, most      float64 // percent; NaN without plans
	toBest                 float64 // seconds; NaN without plans
}

// seedMeans gathers the rows of seed-range families by family, budget and
// solver, in the order they first appear.
func seedMeans(rows []benchRow) []seedMean {
	var out []seedMean
	at := map[[3]string]int{}
	for _, r := range rows {
		if r.family == "" {
			continue
		}
		k := [3]string{r.family, r.budget, r.solver}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, seedMean{family: r.family, budget: r.budget, solver: r.solver,
				least: math.Inf(1), most: math.Inf(-1)})
		}
		m := &out[i]
		m.seeds++
		if withinBudget(r.status) {
			m.plans++
			m.mean += r.overhead
			m.toBest += r.toBest
			m.least, m.most = min(m.least, r.overhead), max(m.most, r.overhead)
		}
	}
	for i := range out {
		m := &out[i]
		if m.plans == 0 {
			m.mean, m.least, m.most, m.toBest = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			continue
		}
		m.mean /= float64(m.plans)
		m.toBest /= float64(m.plans)
	}
	return out
}

// printSeedMeans writes the seedMeans table, when a seed range was run.
func printSeedMeans(w io.Writer, rows []benchRow) error {
	ms := seedMeans(rows)
	if len(ms) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nMeans over the seeds (over the seeds with a plan within the budget):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graphs\tbudget\tsolver\tplans\tmean overhead %\tleast %\tlargest %\tmean time to best s\t")
	for _, m := range ms {
		fmt.Fprintln(tw, strings.Join(m.cells(), "\t")+"\t")
	}
	return tw.Flush()
}

// cells is the means table's row for m, the same on the console and in
// Markdown.
func (m seedMean) cells() []string {
	return []string{m.family, m.budget, m.solver, fmt.Sprintf("%d of %d", m.plans, m.seeds),
		fmtNaN(m.mean, 2), fmtNaN(m.least, 2), fmtNaN(m.most, 2), fmtNaN(m.toBest, 1)}
}

// printRatios writes, per graph and budget, each solver's cost over
// checkmate-milp's, the approximation ratios of Checkmate Table 2 (which
// reports 1.00–1.06 for checkmate-lp); "-" where either has no plan within
// the budget. Each graph ends with Table 2's aggregate: the geometric mean
// of the ratios over the budgets where both have a plan (their count in
// parentheses).
func printRatios(w io.Writer, rows []benchRow) error {
	type key struct{ graph, budget string }
	var keys []key
	milp := map[key]*benchRow{}
	var solverNames []string
	for i := range rows {
		r := &rows[i]
		k := key{r.graph, r.budget}
		if len(keys) == 0 || keys[len(keys)-1] != k {
			keys = append(keys, k)
		}
		if r.solver == "checkmate-milp" {
			milp[k] = r
		} else if !slices.Contains(solverNames, r.solver) {
			solverNames = append(solverNames, r.solver)
		}
	}
	if len(milp) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cost / checkmate-milp cost (the MILP starts from the cheapest plan of the solvers before it; Checkmate Table 2 reports 1.00-1.06 for checkmate-lp):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "graph\tbudget\tmilp\t%s\t\n", strings.Join(solverNames, "\t"))
	// logSum and count accumulate, per graph and solver, the logarithms of
	// the ratios for the geometric mean over the budgets where both have a
	// plan (Table 2's aggregate).
	type gs struct{ graph, solver string }
	logSum, count := map[gs]float64{}, map[gs]int{}
	for ki, k := range keys {
		if m := milp[k]; m != nil {
			cells := []string{k.graph, k.budget, m.status}
			for _, name := range solverNames {
				cell := "-"
				for i := range rows {
					r := &rows[i]
					if r.graph == k.graph && r.budget == k.budget && r.solver == name &&
						withinBudget(r.status) && withinBudget(m.status) && m.cost > 0 {
						ratio := r.cost / m.cost
						cell = strconv.FormatFloat(ratio, 'f', 3, 64)
						logSum[gs{k.graph, name}] += math.Log(ratio)
						count[gs{k.graph, name}]++
					}
				}
				cells = append(cells, cell)
			}
			fmt.Fprintf(tw, "%s\t\n", strings.Join(cells, "\t"))
		}
		if ki+1 == len(keys) || keys[ki+1].graph != k.graph {
			cells := []string{k.graph, "geomean", ""}
			for _, name := range solverNames {
				cell := "-"
				if c := count[gs{k.graph, name}]; c > 0 {
					cell = fmt.Sprintf("%.3f (%d)", math.Exp(logSum[gs{k.graph, name}]/float64(c)), c)
				}
				cells = append(cells, cell)
			}
			fmt.Fprintf(tw, "%s\t\n", strings.Join(cells, "\t"))
		}
	}
	return tw.Flush()
}

func withinBudget(status string) bool { return status == "optimal" || status == "feasible" }

func fmtNaN(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func writeBenchCSV(w io.Writer, rows []benchRow) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"graph", "nodes", "edges", "budget", "budget_bytes", "no_remat_peak_bytes", "floor_bytes", "solver", "status", "overhead_percent", "peak_bytes", "cost_seconds", "time_to_best_seconds", "total_seconds", "gap_percent", "lower_bound_seconds", "gap_to_best_bound_percent", "note"})
	for _, r := range rows {
		cw.Write([]string{r.graph, strconv.Itoa(r.nodes), strconv.Itoa(r.edges), r.budget, strconv.FormatInt(r.budgetBytes, 10),
			strconv.FormatInt(r.basePeak, 10), strconv.FormatInt(r.floorBytes, 10), r.solver, r.status,
			fmtNaN(r.overhead, 4), strconv.FormatInt(r.peak, 10), fmtNaN(r.cost, 9),
			strconv.FormatFloat(r.toBest, 'f', 3, 64), strconv.FormatFloat(r.total, 'f', 3, 64), fmtNaN(r.gap, 4), fmtNaN(r.bound, 9), fmtNaN(r.bestGap, 4), r.note})
	}
	cw.Flush()
	return cw.Error()
}

// benchPeak formats a row's peak: "≥" marks the least peak of a solver
// that did not reach the budget.
func benchPeak(r benchRow) string {
	if r.peak <= 0 {
		return "-"
	}
	peak := strconv.FormatInt(r.peak, 10)
	if r.status == "over-budget" || r.status == "infeasible" {
		peak = "≥" + peak
	}
	return peak
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
		r := benchOne(ctx, s, &q, 0, limit)
		if r.peak > 0 && (withinBudget(r.status) || r.status == "over-budget") {
			least = min(least, r.peak)
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
func bestBounds(rows []benchRow) {
	type key struct{ graph, budget string }
	best := map[key]float64{}
	for _, r := range rows {
		k := key{r.graph, r.budget}
		if withinBudget(r.status) && r.bound > best[k] {
			best[k] = r.bound
		}
	}
	for i := range rows {
		r := &rows[i]
		if lb := best[key{r.graph, r.budget}]; withinBudget(r.status) && r.cost > 0 {
			lb = max(lb, r.trivialBound)
			r.bestGap = 100 * max(0, r.cost-lb) / r.cost
		}
	}
}

// writeBenchMarkdown writes the rows as a Markdown table (issue 5's
// benchmark format: one row per graph, budget and solver).
func writeBenchMarkdown(w io.Writer, rows []benchRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| graph | (n, m) | budget (bytes) | solver | status | overhead % | peak (bytes) | time to best s | gap % | gap to best bound % |")
	fmt.Fprintln(bw, "|---|---|---|---|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(bw, "| %s | (%d, %d) | %s = %d | %s | %s | %s | %s | %.2f | %s | %s |\n",
			r.graph, r.nodes, r.edges, r.budget, r.budgetBytes, r.solver, r.status,
			fmtNaN(r.overhead, 2), benchPeak(r), r.toBest, fmtNaN(r.gap, 2), fmtNaN(r.bestGap, 2))
	}
	if ms := seedMeans(rows); len(ms) > 0 {
		fmt.Fprint(bw, "\nMeans over the seeds (over the seeds with a plan within the budget):\n\n")
		fmt.Fprintln(bw, "| graphs | budget | solver | plans | mean overhead % | least % | largest % | mean time to best s |")
		fmt.Fprintln(bw, "|---|---|---|---:|---:|---:|---:|---:|")
		for _, m := range ms {
			fmt.Fprintln(bw, "| "+strings.Join(m.cells(), " | ")+" |")
		}
	}
	return bw.Flush()
}
