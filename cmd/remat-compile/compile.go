package main

// The compile command, remat-compile's main one: read a model, choose
// which values to keep and which to recompute under a memory budget, and
// write the rewritten model.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

type compileOptions struct {
	load      loadFlags
	training  trainFlags
	out       string
	budget    string
	solver    string
	profile   string
	target    string
	timeLimit time.Duration
	report    string
	emitMILP  string
	// keep names nodes never to recompute (-keep).
	keep string
	// order is -order (pipeline.Order); arena the -arena sidecar file.
	order string
	// tile is -tile (pipeline.Tile), tileMaxExtra -tile-max-extra and
	// ortBlock -ort-block (pipeline.ORTBlock).
	tile         string
	tileMaxExtra float64
	ortBlock     string
	// ortShapes is -ort-shapes (pipeline.ORTShapes).
	ortShapes string
	arena     string
	// sweepSVG is -sweep-svg; verify runs verify on the written model
	// (-verify).
	sweepSVG string
	verify   bool
}

func compileCmd() *command {
	return &command{
		name:  "compile",
		usage: "model.onnx|graph.pb|model.json -o out [-budget 70%|512MiB|device|sweep[:FROM-TO:STEP]] [-target ort|tfjs|liveness] [-solver auto|NAME] [-profile NAME|file.yaml] [-time-limit 60s] [-report plan.json|plan.html] [-verify] [-sweep-svg sweep.svg] [-emit-milp model.lp|.mps] [-train [-loss sum|mean|mse:TARGET|softmax-xent:LABEL] [-trainable all|NAME,...] [-optimizer sgd:LR]] [-keep NODE,...] [-order file|auto] [-tile auto|off] [-tile-max-extra F] [-ort-block 8|16] [-ort-shapes auto|shown|hidden] [-arena plan.json] [-input-shape name=DIMS] [-dim sym=N] [-d check,dump]",
		short: "Choose which values to keep and which to recompute so that the model runs within a memory budget, and write the rewritten model (the default command: `remat-compile model.onnx -o out.onnx -budget 70%`).",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &compileOptions{}
			o.load.register(fs)
			o.training.register(fs, "rematerialize the training graph (forward, loss and backward, built in standard ONNX ops) instead of the inference graph; with -solver checkpoint-all, write the plain training graph")
			fs.StringVar(&o.out, "o", "", "output `file` (required; never the input)")
			fs.StringVar(&o.budget, "budget", "", "memory `budget` for activations: bytes with a unit (512MiB, 1.5GB, 1000000) or a percentage of the peak without rematerialization (70%), or sweep[:FROM-TO:STEP] to solve a series of percentages (default sweep:100-5:5) down to the smallest feasible and print a table; device (the default): the profile's memory capacity less the model's inputs and parameters")
			fs.StringVar(&o.solver, "solver", solvers.Default, "`solver` (see `remat-compile solvers`)")
			fs.StringVar(&o.profile, "profile", pipeline.DefaultProfile, "device profile: a built-in `name` ("+strings.Join(profiles.Builtins(), ", ")+") or a .yaml file; gives each node's cost and the default budget")
			fs.StringVar(&o.target, "target", "", "the `runtime` to fit for: "+targetNames()+" (default ort for ONNX models, tfjs for TensorFlow graphs); its allocator's model predicts the peaks and its order is forced on the written model")
			fs.DurationVar(&o.timeLimit, "time-limit", pipeline.DefaultTimeLimit, "bound on the solver's `time`; it returns its best plan when the time is up")
			fs.StringVar(&o.report, "report", "", "write a report of the plan to `file`: plan.json (JSON: peaks, overhead, every node's decision with its reason, the memory timelines) or plan.html (one self-contained page with the timelines, the R matrix, the decisions and the sweep)")
			fs.StringVar(&o.sweepSVG, "sweep-svg", "", "with -budget sweep, draw the overhead-against-peak curve to `file` (.svg)")
			fs.BoolVar(&o.verify, "verify", false, "after writing, run the original and the rewrite in ONNX Runtime (as `remat-compile verify` does, at levels disabled and all) and add the measured memory per node to the report")
			fs.StringVar(&o.emitMILP, "emit-milp", "", "write the Checkmate MILP of the problem at the budget to `file` (.lp or .mps), for Gurobi, HiGHS or SCIP")
			fs.StringVar(&o.keep, "keep", "", "comma-separated `nodes` whose outputs the plan must never recompute (kept from their first computation to their last use)")
			fs.StringVar(&o.tile, "tile", string(pipeline.TileAuto), "`auto` (when rematerialization alone cannot reach the budget, split memory-heavy regions of spatially local ops into bands that recompute their halos, then rematerialize) or off")
			fs.Float64Var(&o.tileMaxExtra, "tile-max-extra", 0, "bound on the compute tiling may add, as a `fraction` of the model's (0.15 is 15%; 0: none)")
			fs.StringVar(&o.ortShapes, "ort-shapes", "shown", "for -target ort, the activations' shapes in the written model: shown (ONNX Runtime's planner writes unary ops in place and keeps a freed buffer for the next value of its shape, even across a recomputation's gap), hidden (it frees each buffer after its last reader; at level all its NCHWc convolutions can then give other bits: check with verify), or auto (fit both ways to the same budget, keep the plan of less compute)")
			fs.StringVar(&o.ortBlock, "ort-block", "8", "ONNX Runtime's NCHWc channel `block` on the machines the tiled model is for: 8 (AVX2; its outputs stay bitwise on AVX2 and AVX-512 machines) or 16 (AVX-512 only; tiles more freely)")
			fs.StringVar(&o.order, "order", string(pipeline.OrderFile), "execution `order`: file (the file's) or auto (the order of least peak under the target's memory model, chosen before the plan and forced on the runtime where that lowers its peak)")
			fs.StringVar(&o.arena, "arena", "", "also write a static arena plan of the written model to `file` (JSON, remat-arena/v1): an offset for every activation in one arena, the bytes an edge runtime must reserve")
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) != 1 {
					return usagef("compile takes one model file, got %d arguments", len(args))
				}
				if o.out == "" && !pipeline.IsSweep(o.budget) {
					return usagef("compile needs -o out.onnx")
				}
				return runCompile(ctx, o, args[0], st)
			}
		},
	}
}

// targetNames lists the -target names.
func targetNames() string {
	var names []string
	for _, t := range pipeline.Targets() {
		names = append(names, t.Name())
	}
	return strings.Join(names, ", ")
}

func runCompile(ctx context.Context, o *compileOptions, path string, st *Streams) error {
	sweep, budgetFlag, err := o.checkReportFlags()
	if err != nil {
		return err
	}
	budget, err := parseBudget(budgetFlag)
	if err != nil {
		return err
	}
	solver, err := solverFlags(o.solver, o.timeLimit)
	if err != nil {
		return err
	}
	if o.target != "" {
		if _, err := pipeline.LookupTarget(o.target); err != nil {
			return err
		}
	}
	order, err := pipeline.ParseOrder(o.order)
	if err != nil {
		return err
	}
	tiling, err := pipeline.ParseTile(o.tile)
	if err != nil {
		return err
	}
	if o.tileMaxExtra < 0 {
		return usagef("-tile-max-extra %v: want a fraction of at least 0, such as 0.15", o.tileMaxExtra)
	}
	block, err := pipeline.ParseORTBlock(o.ortBlock)
	if err != nil {
		return err
	}
	shapes, err := pipeline.ParseORTShapes(o.ortShapes)
	if err != nil {
		return err
	}
	if o.emitMILP != "" {
		if _, err := pipeline.MILPFormat(o.emitMILP); err != nil {
			return err
		}
	}
	train, err := o.training.options()
	if err != nil {
		return err
	}
	prof, err := profiles.Load(o.profile)
	if err != nil {
		return err
	}
	for _, out := range []string{o.out, o.report, o.emitMILP, o.arena} {
		if out != "" && pipeline.SamePath(out, path) {
			return fmt.Errorf("refusing to overwrite the input model %s: write the output to another path", path)
		}
	}
	lo, err := o.load.options(st, true)
	if err != nil {
		return err
	}
	// With -train the budget's percentage, the peaks and the target's
	// predictions are the training graph's.
	m, err := pipeline.Load(ctx, path, lo)
	if err != nil {
		return err
	}
	target, err := m.TargetFor(o.target)
	if err != nil {
		return err
	}
	if shapes != pipeline.ORTShapesShown && target.Name() != "ort" {
		return usagef("-ort-shapes %s: only the ort target has a planner to hide shapes from; the target is %s", shapes, target.Name())
	}
	if train != nil {
		if err := m.Train(ctx, *train); err != nil {
			return err
		}
	}
	fo := pipeline.FitOptions{
		Target: target, Profile: prof, Budget: budget, Solver: solver, TimeLimit: o.timeLimit,
		Keep: splitList(o.keep), Order: order, Tile: tiling, TileMaxExtra: o.tileMaxExtra, ORTBlock: block, ORTShapes: shapes, Timelines: o.report != "",
	}
	if sweep != nil {
		return runSweep(ctx, o, m, fo, *sweep, st)
	}
	pl := newProgressLine(st)
	fo.Progress = pl.report
	fit, runErr := m.Fit(ctx, fo)
	pl.done()
	// The MILP file is written whatever the solver found: it is how a user
	// takes an infeasible or slow problem to another solver.
	if o.emitMILP != "" && fit != nil && fit.Remat != nil && fit.Remat.Problem != nil {
		if err := fit.WriteMILP(o.emitMILP); err != nil {
			return fmt.Errorf("-emit-milp: %w", err)
		}
	}
	if runErr != nil {
		err := compileError(runErr, budget, prof)
		var te *pipeline.TileError
		if errors.As(runErr, &te) && err != runErr {
			try := "try -budget " + pipeline.SuggestBudget(te.Reached)
			if o.tileMaxExtra > 0 {
				// The bound is on compute as the profile prices it: a
				// profile of another device can price the bands dearer.
				try = fmt.Sprintf("try a larger -tile-max-extra (the extra compute is priced by the %s profile; -profile names the device the model runs on) or -budget %s", o.profile, pipeline.SuggestBudget(te.Reached))
			}
			err = fmt.Errorf("%w\ntiling cannot reach it either: %d region(s) lower the %s peak from %s to %s (at %s), above the budget of %s there; %s",
				err, te.Regions, te.Target, remat.FormatBytes(te.Original), remat.FormatBytes(te.Reached), te.Node, remat.FormatBytes(te.Budget), try)
		}
		return err
	}
	for _, note := range fit.Notes {
		fmt.Fprintln(st.Err, note)
	}
	if err := m.Export(o.out, fit, true); err != nil {
		return err
	}
	// The solvers are anytime: interrupted (Ctrl-C), the pass keeps the
	// best plan found, which is written and reported as such.
	interrupted := ctx.Err() != nil
	r := fit.Report(m, o.out, o.budget)
	r.Interrupted = interrupted
	if o.arena != "" {
		plan, err := m.WriteArena(o.arena, target)
		if err != nil {
			return fmt.Errorf("-arena: %w", err)
		}
		r.ArenaBytes, r.ArenaLivePeakBytes, r.ArenaFragmentationPercent = plan.ArenaBytes, plan.LivePeak, 100*plan.Fragmentation()
	}
	var verified string
	var verifyErr error
	if o.verify && !interrupted {
		verified, verifyErr = verifyFit(ctx, m, fit, o.out, r)
	}
	if err := writeReport(o.report, m, fit, r, st); err != nil {
		return err
	}
	if err := printCompile(st.Out, r, fit.Remat, fit.Budget); err != nil {
		return err
	}
	fmt.Fprint(st.Out, verified)
	if verifyErr != nil {
		return verifyErr
	}
	if interrupted {
		return errInterrupted(fmt.Sprintf("wrote the best plan found before the interrupt to %s", o.out))
	}
	return nil
}

// compileError turns the pass's error into the command's: an infeasible
// budget says the smallest peak reached, by whom, and a budget to try.
func compileError(err error, budget remat.Budget, prof *profiles.Profile) error {
	var te *pipeline.TargetError
	if errors.As(err, &te) {
		switch r := te.Reach; {
		case r != nil && r.Found():
			return fmt.Errorf("remat-compile: %v; nothing written; try -budget %s (or -target liveness to fit the papers' model)", te, r.Budget)
		case r != nil:
			return fmt.Errorf("remat-compile: %v; nothing written; keep the original model, or try another -solver, a -budget below the single-node floor (`remat-compile inspect -floor`) so that -tile auto tiles, or -target liveness to fit the papers' model", te)
		}
		return fmt.Errorf("remat-compile: %v; nothing written; try another -budget or -solver, -target liveness to fit the papers' model, or keep the original model", te)
	}
	var ie *remat.InfeasibleBudgetError
	if !errors.As(err, &ie) {
		return err
	}
	var b strings.Builder
	have := describeBudget(ie.Budget, ie.HaveBytes, prof.Device.Name)
	switch {
	case ie.Proven:
		fmt.Fprintf(&b, "remat-compile: budget %s is below the smallest peak possible, %s (proved by %s)", have, remat.FormatBytes(ie.NeedBytes), ie.By)
	case len(ie.Attempts) > 0:
		fmt.Fprintf(&b, "remat-compile: budget %s is below the smallest peak any solver reached, %s (%s)", have, remat.FormatBytes(ie.NeedBytes), ie.By)
	default:
		fmt.Fprintf(&b, "remat-compile: budget %s is below the smallest peak %s reached, %s", have, ie.Solver, remat.FormatBytes(ie.NeedBytes))
	}
	b.WriteString(ie.FloorClause())
	fmt.Fprintf(&b, "; try -budget %s", pipeline.SuggestBudget(ie.NeedBytes))
	if ref := ie.Budget.ReferenceBytes(ie.NoRematPeakBytes); suggestPercent(ie.NeedBytes, ref) != "" {
		fmt.Fprintf(&b, " (or -budget %s of %s, %s)", suggestPercent(ie.NeedBytes, ref), ie.Budget.Reference(), remat.FormatBytes(ref))
	}
	var per []string
	for _, a := range ie.Attempts {
		switch {
		case a.PeakBytes > 0:
			per = append(per, fmt.Sprintf("%s %s", a.Solver, remat.FormatBytes(a.PeakBytes)))
		default:
			per = append(per, fmt.Sprintf("%s %s", a.Solver, a.Status))
		}
	}
	if len(per) > 1 {
		fmt.Fprintf(&b, "\nsmallest peak per solver: %s", strings.Join(per, ", "))
	}
	return errors.New(b.String())
}

// change says how far after is below (or above) before, as the runtime
// lines print it next to the plan's own "peak after": the runtime's
// original runs in its own order, so its drop can differ from the plan's.
func change(before, after int64) string {
	if before <= 0 {
		return ""
	}
	d := 100 * float64(before-after) / float64(before)
	switch {
	case after < before:
		return fmt.Sprintf("(%.1f%% less)", d)
	case after > before:
		return fmt.Sprintf("(%.1f%% more)", -d)
	}
	return "(no change)"
}

func printCompile(w io.Writer, r *report.Compile, res *remat.Result, budget remat.Budget) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model:\t%s → %s\n", r.Model, r.Output)
	before := "no rematerialization"
	switch t := r.Tiling; {
	case t != nil && budget.Fraction > 0 && budget.Bytes <= 0:
		// Tiling met the budget, a share of the target's peak; the
		// solver's peaks below are the tiled graph's.
		fmt.Fprintf(tw, "budget:\t%s, met by tiling\n", describeBudget(budget, t.BudgetBytes, r.Profile))
		before = "the tiled graph, no rematerialization"
	case t != nil:
		fmt.Fprintf(tw, "budget:\t%s, met by tiling\n", remat.FormatBytes(t.BudgetBytes))
		before = "the tiled graph, no rematerialization"
	default:
		fmt.Fprintf(tw, "budget:\t%s\n", describeBudget(budget, r.BudgetBytes, r.Profile))
	}
	fmt.Fprintf(tw, "peak before:\t%s (%s)\n", formatBytes(r.BeforePeakBytes), before)
	fmt.Fprintf(tw, "peak after:\t%s (%.1f%% less)\n", formatBytes(r.AfterPeakBytes), r.PeakReductionPercent)
	fmt.Fprintf(tw, "overhead:\t%+.2f%% predicted compute (%s of %s, %s)\n",
		r.OverheadPercent, formatSeconds(r.OverheadSeconds), formatSeconds(r.BaseComputeSeconds), describeSources(r.Profile, r.CostSources, r.CostSecondsBySource))
	fmt.Fprintf(tw, "recomputed:\t%d nodes, %d recomputations\n", r.RecomputedNodes, r.Recomputations)
	solver := r.Solver
	if r.PlanSolver != "" && r.PlanSolver != r.Solver {
		solver += " (plan by " + r.PlanSolver + ")"
	}
	fmt.Fprintf(tw, "solver:\t%s, %s in %.2fs\n", solver, describeOptimality(res.Optimal, res.Gap, formatSeconds(res.LowerBoundSeconds)), r.SolveSeconds)
	if r.ORTBeforePeakBytes > 0 && (r.Recomputations > 0 || r.Reordered || r.Tiling != nil) {
		planner := "planner reuse"
		if r.ORTHiddenShapes {
			planner = "the shapes hidden from its planner"
		}
		fmt.Fprintf(tw, "onnxruntime:\t%s → %s %s predicted for ONNX Runtime's CPU allocator (%s, arena, parameters) in the order it runs the models\n",
			formatBytes(r.ORTBeforePeakBytes), formatBytes(r.ORTAfterPeakBytes), change(r.ORTBeforePeakBytes, r.ORTAfterPeakBytes), planner)
		if r.ORTDefaultBeforePeakBytes > 0 {
			fmt.Fprintf(tw, "ort default:\t%s → %s predicted under ONNX Runtime's default options (memory pattern on), over a session's runs\n",
				formatBytes(r.ORTDefaultBeforePeakBytes), formatBytes(r.ORTDefaultAfterPeakBytes))
		}
		fmt.Fprintf(tw, "order:\t%d constraint(s) forced (%s in ORT's own order, %s in the plan's)\n",
			r.OrderConstraints, formatBytes(r.ORTUnforcedPeakBytes), formatBytes(r.ORTPlanOrderPeakBytes))
		if r.ORTHiddenShapes {
			other := ""
			if r.ORTOtherShapes != "" {
				other = "; with them shown: " + r.ORTOtherShapes
			}
			fmt.Fprintf(tw, "ort shapes:\thidden from ORT's planner, which frees each buffer after its last reader%s\n", other)
		}
	}
	if r.TFJSBeforePeakBytes > 0 && (r.Recomputations > 0 || r.Tiling != nil) {
		fmt.Fprintf(tw, "tensorflow.js:\t%s → %s %s predicted for tf.profile in the order TensorFlow.js's executor runs the models (%s in the plan's order)\n",
			formatBytes(r.TFJSBeforePeakBytes), formatBytes(r.TFJSAfterPeakBytes), change(r.TFJSBeforePeakBytes, r.TFJSAfterPeakBytes), formatBytes(r.TFJSPlanOrderPeakBytes))
	}
	if t := r.Tiling; t != nil {
		fmt.Fprintf(tw, "tiled:\t%d region(s): %s → %s predicted for %s, %+.1f%% compute\n",
			len(t.Regions), formatBytes(t.PeakBeforeBytes), formatBytes(t.PeakAfterBytes), r.Target, t.ExtraPercent)
		for _, l := range t.Late {
			fmt.Fprintf(tw, "  late:\t%s (of %s) recomputed next to its readers by %d nodes %s … %s, %+.1f%% compute\n",
				l.Output, l.Node, l.Copies, l.FirstCopy, l.LastCopy, l.ExtraPercent)
		}
		for _, g := range t.Regions {
			fmt.Fprintf(tw, "  region:\t%d nodes %s … %s in %s (halo rows %v): peak %s → %s, %+.1f%% compute%s\n",
				g.Nodes, g.FirstNode, g.LastNode, g.Split, g.HaloRows, formatBytes(g.PeakBeforeBytes), formatBytes(g.PeakAfterBytes), g.ExtraPercent, pooledNote(g.PooledInGroups))
		}
	}
	if r.Order == string(pipeline.OrderAuto) {
		verdict := "the file's order kept"
		if r.Reordered {
			verdict = "the chosen order replaces the file's"
		}
		fmt.Fprintf(tw, "execution order:\t%s → %s before rematerialization under the %s memory model; %s\n",
			formatBytes(r.FileOrderPeakBytes), formatBytes(r.ChosenOrderPeakBytes), r.Target, verdict)
	}
	if r.ArenaBytes > 0 {
		fmt.Fprintf(tw, "arena:\t%s for every activation at a static offset (live peak %s, fragmentation %.1f%%)\n",
			formatBytes(r.ArenaBytes), formatBytes(r.ArenaLivePeakBytes), r.ArenaFragmentationPercent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.ORTBeforePeakBytes > 0 && r.Recomputations > 0 && r.ORTAfterPeakBytes >= r.ORTBeforePeakBytes {
		// The plan is right under the liveness model, but ORT's planner
		// hands a recomputation the buffer its original freed (same
		// shape), which then stays allocated across the gap the plan
		// meant to free, or ORT's own execution order loses the gain.
		fmt.Fprintf(w, "warning: ONNX Runtime would not lower this model's peak (%s → %s under its allocator's model, in the order it runs the models; %s in the plan's order): its planner gives each recomputation the buffer its original freed, which stays allocated in between, or its execution order differs from the plan's; other runtimes may gain, but for ONNX Runtime try another -budget or -solver, or keep the original model\n",
			formatBytes(r.ORTBeforePeakBytes), formatBytes(r.ORTAfterPeakBytes), formatBytes(r.ORTPlanOrderPeakBytes))
	}
	return nil
}

// describeOptimality says whether a plan is optimal, or its gap to the
// lower bound (named when bound is not empty).
func describeOptimality(optimal bool, gap float64, bound string) string {
	switch {
	case optimal:
		return "optimal"
	case math.IsInf(gap, 0) || math.IsNaN(gap) || gap < 0:
		return "optimality unknown"
	case bound != "":
		return fmt.Sprintf("gap %.2f%% (lower bound %s)", 100*gap, bound)
	}
	return fmt.Sprintf("gap %.2f%%", 100*gap)
}

// describeSources says where the costs come from: "v100-16gb datasheet
// costs", or with several sources their seconds and node counts: "costs
// from dev: 1.07 ms measured on 770 nodes, 1.29 ms fitted on 1734 nodes".
func describeSources(profile string, src map[string]int, secs map[string]float64) string {
	keys := slices.Sorted(maps.Keys(src))
	order := []string{profiles.SourceMeasured, profiles.SourceFitted, profiles.SourceDatasheet}
	slices.SortStableFunc(keys, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	if len(keys) == 1 {
		return profile + " " + keys[0] + " costs"
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s on %d nodes", formatSeconds(secs[k]), k, src[k]))
	}
	return "costs from " + profile + ": " + strings.Join(parts, ", ")
}

// formatSeconds prints a duration in seconds with an SI prefix.
func formatSeconds(s float64) string { return report.FormatSeconds(s) }

// progressLine draws the solver's progress on stderr, on one line
// rewritten in place, only when stderr is a terminal.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	last  time.Time
	drawn bool
}

func newProgressLine(st *Streams) *progressLine {
	return &progressLine{w: st.Err, on: st.ErrTTY}
}

// report is the pass's Progress callback (nil-safe to pass when off).
func (pl *progressLine) report(p remat.Progress) {
	if !pl.on {
		return
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	now := time.Now()
	if pl.drawn && now.Sub(pl.last) < 100*time.Millisecond {
		return
	}
	pl.last, pl.drawn = now, true
	inc, bound, gap := "-", "-", "-"
	if !math.IsInf(p.Incumbent, 0) {
		inc = formatSeconds(p.Incumbent)
	}
	if p.Bound > 0 && !math.IsInf(p.Bound, 0) {
		bound = formatSeconds(p.Bound)
	}
	if !math.IsInf(p.Gap, 0) {
		gap = fmt.Sprintf("%.2f%%", 100*p.Gap)
	}
	line := fmt.Sprintf("solving %5.1fs  cost %s  bound %s  gap %s  %s", p.Elapsed, inc, bound, gap, p.Note)
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	fmt.Fprintf(pl.w, "\r\033[K%s", line)
}

// done clears the line.
func (pl *progressLine) done() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.on && pl.drawn {
		fmt.Fprint(pl.w, "\r\033[K")
	}
	pl.drawn = false
}

// pooledNote names the values a region's bands recompute that a global
// pool reads whole, computed and pooled in channel groups instead ("" for
// none).
func pooledNote(pooled []string) string {
	if len(pooled) == 0 {
		return ""
	}
	return "; pooled in channel groups: " + strings.Join(pooled, ", ")
}
