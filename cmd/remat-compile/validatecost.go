package main

// The validate-cost command: how well the cost model predicts what ONNX
// Runtime measures. For every model, graph kind (inference, training),
// device profile (a measured one and its datasheet section alone) and
// budget it compiles the model as compile does, runs the original and
// every rewrite in ONNX Runtime, and compares
//
//   - the predicted time of a whole model (the sum of its nodes' costs,
//     Checkmate's additive cost model, §4.10) with ORT's measured time,
//     for the original and for each rewrite (the plan's cost);
//   - the plan's predicted compute overhead (plan cost over the original's
//     cost, less one) with the run-time overhead ORT shows for the
//     rewrite against the original.
//
// Timing uses the verifier's session options (ort.MeasureOptions at
// -level: one intra-op thread, sequential, arena on, memory pattern off)
// without the profiler; the original and its rewrites run in one
// ort.TimeModels batch, interleaved round by round, and each time is the
// median of -rounds runs.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/verify"
)

// The targets validate-cost reports against: the predicted whole-model
// time within wholeTargetPercent of ORT's, the predicted overhead within
// overheadTargetPP percentage points of ORT's.
const (
	wholeTargetPercent = 20.0
	overheadTargetPP   = 5.0
)

type validateOptions struct {
	load        loadFlags
	profile     string
	datasheet   bool
	budgets     string
	kinds       string
	solver      string
	timeLimit   time.Duration
	rounds      int
	warmup      int
	level       string
	seed        uint64
	inputValues listFlag
	loss        string
	json        bool
	clock       string
}

func validateCostCmd() *command {
	return &command{
		name:  "validate-cost",
		usage: "-profile device.profile.yaml [-budgets 90%,80%,70%] [-kinds inference,training] [-solver auto] [-time-limit 10s] [-rounds N] [-level disabled] [-datasheet=false] [-json] MODEL...",
		short: "Compare the cost model with ONNX Runtime on this machine (MODEL = model.onnx, " + pipeline.ZooHelp + " or manifest:FILE.tsv): predicted vs measured whole-model seconds and predicted vs measured remat overhead per model, graph kind and budget, with the measured profile and with its datasheet section alone.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &validateOptions{}
			o.load.register(fs)
			fs.StringVar(&o.profile, "profile", "", "the measured device profile (`file` written by remat-compile profile, or a built-in name); required")
			fs.BoolVar(&o.datasheet, "datasheet", true, "also predict with the profile's datasheet section alone (no measured entries, no fitted roofline)")
			fs.StringVar(&o.budgets, "budgets", "90%,80%,70%", "comma-separated `budgets`: percentages of the no-remat peak or bytes with a unit")
			fs.StringVar(&o.kinds, "kinds", "inference,training", "comma-separated graph `kinds`: inference, training (passes/autodiff with -loss)")
			fs.StringVar(&o.solver, "solver", solvers.Default, "`solver` of the plans (see remat-compile solvers)")
			fs.DurationVar(&o.timeLimit, "time-limit", 10*time.Second, "the solver's `time` limit per plan")
			fs.IntVar(&o.rounds, "rounds", 51, "timed runs of each model, `N`, interleaved with the other models of its batch; the median counts")
			fs.IntVar(&o.warmup, "warmup", 3, "untimed runs of each model first, `N`")
			fs.StringVar(&o.level, "level", "disabled", "ONNX Runtime graph optimization `level`: disabled (ORT runs the graph's nodes as written, as the cost model counts them), basic, extended, layout or all")
			fs.Uint64Var(&o.seed, "seed", 1, "`seed` of the random inputs")
			fs.Var(&o.inputValues, "input-value", "`name=INT`: fill a graph input with this value instead of random ones (repeatable)")
			fs.StringVar(&o.loss, "loss", "sum", "the training graphs' `loss` (as for compile -train)")
			fs.BoolVar(&o.json, "json", false, "print JSON instead of a table")
			fs.StringVar(&o.clock, "clock", ort.ClockCPU, clockHelp)
			return func(ctx context.Context, args []string, io *Streams) error {
				if len(args) == 0 {
					return usagef("validate-cost needs at least one MODEL: a model file, zoo:NAME or manifest:FILE")
				}
				if o.profile == "" {
					return usagef("validate-cost needs -profile: a profile measured by remat-compile profile")
				}
				return runValidateCost(ctx, o, args, io)
			}
		},
	}
}

// costRow is one line of the table: one model, graph kind, profile and
// budget ("-" for the original, no rematerialization).
type costRow struct {
	Model   string `json:"model"`
	Kind    string `json:"kind"`
	Profile string `json:"profile"` // "measured" or "datasheet"
	Budget  string `json:"budget"`
	// BudgetBytes is the budget in bytes (0 for the original).
	BudgetBytes int64 `json:"budget_bytes"`
	// PredictedSeconds is the sum of the costs of the nodes the written
	// model runs: for the original every node once, for a rewrite the
	// plan's computations and the exporter's order-forcing helper nodes
	// (helperCost); MeasuredSeconds is ORT's median run time; ErrorPercent
	// their relative difference.
	PredictedSeconds float64 `json:"predicted_seconds"`
	MeasuredSeconds  float64 `json:"measured_seconds"`
	ErrorPercent     float64 `json:"error_percent"`
	// PlanSeconds and PlanOverheadPercent are the solver's: the plan's
	// cost, and its overhead over computing every node once (the remat
	// pass's Result); they leave out the helper nodes.
	PlanSeconds         float64 `json:"plan_seconds"`
	PlanOverheadPercent float64 `json:"plan_overhead_percent"`
	// HelperNodes counts the nodes of the written rewrite that are neither
	// the original's nor recomputations: the exporter's fake dependencies.
	HelperNodes int `json:"helper_nodes"`
	// The overheads of the written model over the original, in percent,
	// and their difference in percentage points (predicted − measured).
	PredictedOverheadPercent float64 `json:"predicted_overhead_percent"`
	MeasuredOverheadPercent  float64 `json:"measured_overhead_percent"`
	OverheadDiffPP           float64 `json:"overhead_diff_pp"`
	Recomputations           int     `json:"recomputations"`
	// Sources counts the nodes whose cost came from each source.
	Sources map[string]int `json:"cost_sources"`
	// NoPlan says why the budget has no plan; the numbers are then NaN
	// (null in JSON).
	NoPlan string `json:"no_plan,omitempty"`
}

// costTable is the JSON form of validate-cost's output.
type costTable struct {
	Profile    string    `json:"profile"`
	Level      string    `json:"level"`
	Clock      string    `json:"clock"`
	Rounds     int       `json:"rounds"`
	ORTVersion string    `json:"ort_version"`
	Rows       []costRow `json:"rows"`
}

// namedProfile is one of the profiles the rows compare.
type namedProfile struct {
	label string
	p     *profiles.Profile
}

func runValidateCost(ctx context.Context, o *validateOptions, args []string, st *Streams) error {
	if o.rounds < 1 || o.warmup < 0 {
		return usagef("-rounds %d, -warmup %d: want at least 1 and 0", o.rounds, o.warmup)
	}
	if !slices.Contains(verify.LevelNames(), o.level) {
		return usagef("-level %q: want one of %s", o.level, strings.Join(verify.LevelNames(), ", "))
	}
	if o.clock != ort.ClockCPU && o.clock != ort.ClockWall {
		return usagef("-clock %q: want cpu or wall", o.clock)
	}
	if o.timeLimit <= 0 {
		return usagef("-time-limit %v: want a positive duration such as 10s", o.timeLimit)
	}
	solver, ok := solvers.Lookup(o.solver)
	if !ok {
		return usagef("-solver %q: unknown solver; the solvers are %s", o.solver, strings.Join(solvers.Names(), ", "))
	}
	var budgets []remat.Budget
	for _, s := range strings.Split(o.budgets, ",") {
		b, err := parseBudget(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		budgets = append(budgets, b)
	}
	var kinds []string
	for _, k := range strings.Split(o.kinds, ",") {
		k = strings.TrimSpace(k)
		if k != "inference" && k != "training" {
			return usagef("-kinds %q: unknown kind %q (want inference, training)", o.kinds, k)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	loss, err := autodiff.ParseLoss(o.loss)
	if err != nil {
		return usagef("-loss %q: %v", o.loss, err)
	}
	values, err := parseInputValues(o.inputValues)
	if err != nil {
		return err
	}
	specs, err := parseModelArgs(args)
	if err != nil {
		return err
	}
	lo, err := o.load.options(st, true)
	if err != nil {
		return err
	}
	measured, err := profiles.Load(o.profile)
	if err != nil {
		return err
	}
	profs := []namedProfile{{"measured", measured}}
	switch {
	case len(measured.Measured) == 0 && measured.Fitted == nil:
		// A datasheet profile (a built-in): one set of rows.
		profs[0].label = "datasheet"
	case o.datasheet:
		profs = append(profs, namedProfile{"datasheet", &profiles.Profile{Format: profiles.FormatV1, Device: measured.Device}})
	}
	version, err := ort.Version()
	if err != nil {
		return fmt.Errorf("validate-cost needs ONNX Runtime: %w", err)
	}
	dir, err := os.MkdirTemp("", "remat-validate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	table := &costTable{Profile: o.profile, Level: o.level, Clock: o.clock, Rounds: o.rounds, ORTVersion: version}
	for _, spec := range specs {
		for _, kind := range kinds {
			if err := ctx.Err(); err != nil {
				return err
			}
			var train *autodiff.Options
			if kind == "training" {
				train = &autodiff.Options{Loss: loss}
			}
			pm, err := prepareModel(ctx, spec, lo, train, o.seed, values, dir, st.Err)
			var nt *noTrainingGraphError
			if errors.As(err, &nt) {
				for _, np := range profs {
					table.Rows = append(table.Rows, costRow{Model: spec.name, Kind: kind, Profile: np.label, Budget: "-",
						NoPlan: strings.TrimPrefix(nt.Error(), spec.name+": "), PredictedSeconds: math.NaN(), MeasuredSeconds: math.NaN(),
						ErrorPercent: math.NaN(), PredictedOverheadPercent: math.NaN(), MeasuredOverheadPercent: math.NaN(), OverheadDiffPP: math.NaN(),
						PlanSeconds: math.NaN(), PlanOverheadPercent: math.NaN()})
				}
				continue
			}
			if err != nil {
				return err
			}
			rows, err := validateModel(ctx, o, pm, profs, budgets, solver, dir, st)
			if err != nil {
				return fmt.Errorf("validate-cost: %s (%s): %w", spec.name, kind, err)
			}
			table.Rows = append(table.Rows, rows...)
			os.Remove(pm.file)
		}
	}
	if o.json {
		enc := json.NewEncoder(st.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(jsonSafe(table))
	}
	return printCostTable(st.Out, table)
}

// validateModel compiles one prepared model with every profile at every
// budget, times the original with all its rewrites, and returns the rows.
func validateModel(ctx context.Context, o *validateOptions, pm *preparedModel, profs []namedProfile, budgets []remat.Budget, solver remat.Solver, dir string, st *Streams) ([]costRow, error) {
	timed := []ort.TimedModel{{Path: pm.file, Inputs: pm.inputs}}
	var rows []costRow
	rowModel := map[int]int{} // row → index into timed
	for _, np := range profs {
		p, _, srcs, err := remat.LowerCosted(pm.graph, np.p, remat.LowerOptions{})
		if err != nil {
			return nil, err
		}
		baseRes, err := remat.EvaluateNoRemat(p)
		if err != nil {
			return nil, fmt.Errorf("internal error: %w", err)
		}
		origPred := baseRes.TotalSeconds
		rowModel[len(rows)] = 0
		rows = append(rows, costRow{
			Model: pm.spec.name, Kind: pm.kind, Profile: np.label, Budget: "-",
			PredictedSeconds: origPred, PlanSeconds: baseRes.TotalSeconds, Sources: countSources(srcs),
		})
		fl := p.Floor()
		floorNode, floor := fl.Node, fl.Bytes
		for _, b := range budgets {
			row := costRow{Model: pm.spec.name, Kind: pm.kind, Profile: np.label, Budget: b.String()}
			if bytes, err := b.Resolve(baseRes.PeakBytes, 0, 0); err == nil && floorNode >= 0 && bytes < floor {
				// No solver can help: one node's inputs and outputs alone
				// exceed the budget (the pass would prove it, slowly).
				row.BudgetBytes = bytes
				row.NoPlan = fmt.Sprintf("no plan: node %s alone needs %s > budget %s", p.Name(floorNode), remat.FormatBytes(floor), remat.FormatBytes(bytes))
				rows = append(rows, row)
				continue
			}
			fmt.Fprintf(st.Err, "validate-cost: %s (%s), %s profile, budget %s\n", pm.spec.name, pm.kind, np.label, b)
			path, res, err := compileFor(ctx, pm, np.p, b, solver, o.timeLimit, dir, len(timed))
			var ie *remat.InfeasibleBudgetError
			switch {
			case errors.As(err, &ie):
				row.BudgetBytes = ie.HaveBytes
				row.NoPlan = noPlanReason(ie)
			case err != nil:
				return nil, err
			default:
				row.BudgetBytes = res.BudgetBytes
				row.PlanSeconds, row.PlanOverheadPercent = res.PlanSeconds, res.OverheadPercent
				row.Recomputations = res.Recomputations
				helpers, err := helperCost(path, res.Rewrite.Graph, np.p)
				if err != nil {
					return nil, fmt.Errorf("costing the written rewrite: %w", err)
				}
				row.Sources = map[string]int{}
				for src, n := range res.CostSources {
					row.Sources[src] += n
				}
				for src, n := range helpers.sources {
					row.Sources[src] += n
				}
				row.HelperNodes = helpers.nodes
				row.PredictedSeconds = res.PlanSeconds + helpers.seconds
				row.PredictedOverheadPercent = 100 * (row.PredictedSeconds/origPred - 1)
				rowModel[len(rows)] = len(timed)
				timed = append(timed, ort.TimedModel{Path: path, Inputs: pm.inputs})
			}
			rows = append(rows, row)
		}
	}
	fmt.Fprintf(st.Err, "validate-cost: %s (%s): timing %d models, %d rounds\n", pm.spec.name, pm.kind, len(timed), o.rounds)
	times, err := ort.TimeModels(timed, ort.MeasureOptions(o.level), o.warmup, o.rounds)
	if err != nil {
		return nil, err
	}
	for _, m := range timed[1:] {
		os.Remove(m.Path)
	}
	origSec := ort.Median(times[0].Times(o.clock)).Seconds()
	for i := range rows {
		r := &rows[i]
		k, ok := rowModel[i]
		if !ok {
			r.PredictedSeconds, r.MeasuredSeconds, r.ErrorPercent = math.NaN(), math.NaN(), math.NaN()
			r.PredictedOverheadPercent, r.MeasuredOverheadPercent, r.OverheadDiffPP = math.NaN(), math.NaN(), math.NaN()
			r.PlanSeconds, r.PlanOverheadPercent = math.NaN(), math.NaN()
			continue
		}
		r.MeasuredSeconds = ort.Median(times[k].Times(o.clock)).Seconds()
		r.ErrorPercent = 100 * (r.PredictedSeconds/r.MeasuredSeconds - 1)
		r.MeasuredOverheadPercent = 100 * (r.MeasuredSeconds/origSec - 1)
		if k == 0 {
			r.MeasuredOverheadPercent = 0
		}
		r.OverheadDiffPP = r.PredictedOverheadPercent - r.MeasuredOverheadPercent
	}
	return rows, nil
}

// compileFor fits a fresh copy of pm's model at one budget and writes
// the rewrite as compile does (pipeline: the target's refinement and
// order forcing included); it returns the written file and the pass's
// result.
func compileFor(ctx context.Context, pm *preparedModel, prof *profiles.Profile, b remat.Budget, solver remat.Solver, limit time.Duration, dir string, k int) (string, *remat.Result, error) {
	m, err := pm.model.Rebuild(ctx)
	if err != nil {
		return "", nil, err
	}
	fit, err := m.Fit(ctx, pipeline.FitOptions{Profile: prof, Budget: b, Solver: solver, TimeLimit: limit})
	if err != nil {
		var res *remat.Result
		if fit != nil {
			res = fit.Remat
		}
		return "", res, err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s.%s.remat%d.onnx", safeName(pm.spec.name), pm.kind, k))
	if err := m.Export(path, fit, true); err != nil {
		return "", nil, err
	}
	return path, fit.Remat, nil
}

// helperCosts is the predicted time of the nodes the exporter added to
// a rewrite.
type helperCosts struct {
	seconds float64
	nodes   int
	sources map[string]int
}

// helperCost costs the nodes of the written rewrite at path that the
// rewritten graph g does not have: the exporter's fake dependencies that
// hold recomputations and order-constrained nodes in place (Reshape,
// Concat, Slice, Cast and Shape of empty or shape-sized tensors). Their
// outputs may have no static shape (a Reshape to a shape computed at run
// time), so each is costed by prof where shape inference types it and
// as one node's fixed cost (a view: no FLOPs, no bytes) where it does
// not.
func helperCost(path string, g *ir.Graph, prof *profiles.Profile) (helperCosts, error) {
	hc := helperCosts{sources: map[string]int{}}
	w, err := onnximp.ImportFile(path, onnximp.Options{})
	if err != nil {
		return hc, err
	}
	// Types where inference finds them; errors leave values untyped.
	_ = shapes.Infer(w, shapes.Options{File: filepath.Base(path)})
	known := map[string]bool{}
	for _, n := range g.Nodes {
		known[n.Name] = true
	}
	fixed, fixedSrc := prof.Device.LaunchOverhead, profiles.SourceDatasheet
	if prof.Fitted != nil {
		fixed, fixedSrc = prof.Fitted.OverheadSeconds, profiles.SourceFitted
	}
	for _, n := range w.Nodes {
		if known[n.Name] || n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx") {
			continue
		}
		hc.nodes++
		if c, err := prof.Cost(n); err == nil {
			hc.seconds += c.Seconds
			hc.sources[c.Source]++
			continue
		}
		hc.seconds += fixed
		hc.sources[fixedSrc]++
	}
	return hc, nil
}

// noPlanReason says in a line why a budget has no plan.
func noPlanReason(ie *remat.InfeasibleBudgetError) string {
	s := fmt.Sprintf("no plan: the smallest peak is %s > budget %s", remat.FormatBytes(ie.NeedBytes), remat.FormatBytes(ie.HaveBytes))
	if ie.FloorBytes > 0 && ie.NeedBytes == ie.FloorBytes {
		s += fmt.Sprintf(" (node %s alone needs %s)", ie.FloorNode, remat.FormatBytes(ie.FloorBytes))
	} else if ie.NoRematPeakBytes > 0 {
		s += fmt.Sprintf(" (%.0f%% of the no-remat peak)", 100*float64(ie.NeedBytes)/float64(ie.NoRematPeakBytes))
	}
	return s
}

func countSources(srcs []string) map[string]int {
	out := map[string]int{}
	for _, s := range srcs {
		if s != "" {
			out[s]++
		}
	}
	return out
}

// jsonSafe replaces NaNs (rows without a plan) by nulls: JSON has no NaN.
func jsonSafe(t *costTable) any {
	type row struct {
		costRow
		PredictedSeconds         *float64 `json:"predicted_seconds"`
		MeasuredSeconds          *float64 `json:"measured_seconds"`
		ErrorPercent             *float64 `json:"error_percent"`
		PredictedOverheadPercent *float64 `json:"predicted_overhead_percent"`
		MeasuredOverheadPercent  *float64 `json:"measured_overhead_percent"`
		OverheadDiffPP           *float64 `json:"overhead_diff_pp"`
		PlanSeconds              *float64 `json:"plan_seconds"`
		PlanOverheadPercent      *float64 `json:"plan_overhead_percent"`
	}
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	rows := make([]row, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = row{costRow: r,
			PredictedSeconds: num(r.PredictedSeconds), MeasuredSeconds: num(r.MeasuredSeconds), ErrorPercent: num(r.ErrorPercent),
			PredictedOverheadPercent: num(r.PredictedOverheadPercent), MeasuredOverheadPercent: num(r.MeasuredOverheadPercent),
			OverheadDiffPP: num(r.OverheadDiffPP), PlanSeconds: num(r.PlanSeconds), PlanOverheadPercent: num(r.PlanOverheadPercent)}
	}
	return struct {
		*costTable
		Rows []row `json:"rows"`
	}{t, rows}
}

// printCostTable prints the rows, one block per profile, and a summary of
// the rows outside the targets.
func printCostTable(w io.Writer, t *costTable) error {
	fmt.Fprintf(w, "cost model vs ONNX Runtime %s (level %s, 1 thread, arena on, memory pattern off; median of %d interleaved runs, %s clock); profile %s\n",
		t.ORTVersion, t.Level, t.Rounds, t.Clock, t.Profile)
	var labels []string
	for _, r := range t.Rows {
		if !slices.Contains(labels, r.Profile) {
			labels = append(labels, r.Profile)
		}
	}
	for _, label := range labels {
		fmt.Fprintf(w, "\n%s profile:\n", label)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "model\tgraph\tbudget\tpredicted\tORT\terror\tplan ovh\tpred ovh\tORT ovh\tdiff\trecomp\thelpers\t  cost sources\n")
		inWhole, inOvh, nWhole, nOvh := 0, 0, 0, 0
		for _, r := range t.Rows {
			if r.Profile != label {
				continue
			}
			if r.NoPlan != "" {
				fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t  %s\n", r.Model, r.Kind, r.Budget, r.NoPlan)
				continue
			}
			nWhole++
			if math.Abs(r.ErrorPercent) <= wholeTargetPercent {
				inWhole++
			}
			plan, ovh, movh, diff := "-", "-", "-", "-"
			if r.Budget != "-" {
				nOvh++
				if math.Abs(r.OverheadDiffPP) <= overheadTargetPP {
					inOvh++
				}
				plan = fmt.Sprintf("%+.1f%%", r.PlanOverheadPercent)
				ovh, movh, diff = fmt.Sprintf("%+.1f%%", r.PredictedOverheadPercent), fmt.Sprintf("%+.1f%%", r.MeasuredOverheadPercent), fmt.Sprintf("%+.1f pp", r.OverheadDiffPP)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%+.1f%%\t%s\t%s\t%s\t%s\t%d\t%d\t  %s\n", r.Model, r.Kind, r.Budget,
				formatSeconds(r.PredictedSeconds), formatSeconds(r.MeasuredSeconds), r.ErrorPercent, plan, ovh, movh, diff, r.Recomputations, r.HelperNodes, formatSourceCounts(r.Sources))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "within %.0f%% of ORT's time: %d of %d rows; overhead within %.0f pp of ORT's: %d of %d plans\n",
			wholeTargetPercent, inWhole, nWhole, overheadTargetPP, inOvh, nOvh)
	}
	return nil
}

// formatSourceCounts writes "40 measured, 2 fitted".
func formatSourceCounts(src map[string]int) string {
	order := []string{profiles.SourceMeasured, profiles.SourceFitted, profiles.SourceDatasheet}
	keys := sortedKeys(src)
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(slices.Index(order, a), slices.Index(order, b)) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", src[k], k))
	}
	return strings.Join(parts, ", ")
}
