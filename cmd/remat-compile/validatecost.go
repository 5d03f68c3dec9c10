package main

// The validate-cost command: how well the cost model predicts what ONNX
// Runtime measures (profiles/measure.ValidateCost; its package doc says
// what is compared and how it is timed), printed as a table or JSON.

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/profiles/measure"
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
			fs.DurationVar(&o.timeLimit, "time-limit", measure.DefaultValidateLimit, "the solver's `time` limit per plan")
			fs.IntVar(&o.rounds, "rounds", measure.DefaultRounds, "timed runs of each model, `N`, interleaved with the other models of its batch; the median counts")
			fs.IntVar(&o.warmup, "warmup", 3, "untimed runs of each model first, `N`")
			fs.StringVar(&o.level, "level", "disabled", "ONNX Runtime graph optimization `level`: disabled (ORT runs the graph's nodes as written, as the cost model counts them), basic, extended, layout or all")
			fs.Uint64Var(&o.seed, "seed", 1, "`seed` of the random inputs")
			fs.Var(&o.inputValues, "input-value", "`name=INT`: fill a graph input with this value instead of random ones (repeatable)")
			fs.StringVar(&o.loss, "loss", "sum", "the training graphs' `loss` (as for compile -train)")
			fs.BoolVar(&o.json, "json", false, "print JSON instead of a table")
			fs.StringVar(&o.clock, "clock", ort.ClockCPU, clockHelp)
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) == 0 {
					return usagef("validate-cost needs at least one MODEL: a model file, zoo:NAME or manifest:FILE")
				}
				if o.profile == "" {
					return usagef("validate-cost needs -profile: a profile measured by remat-compile profile")
				}
				return runValidateCost(ctx, o, args, st)
			}
		},
	}
}

func runValidateCost(ctx context.Context, o *validateOptions, args []string, st *Streams) error {
	if o.rounds < 1 || o.warmup < 0 {
		return usagef("-rounds %d, -warmup %d: want at least 1 and 0", o.rounds, o.warmup)
	}
	solver, err := solverFlags(o.solver, o.timeLimit)
	if err != nil {
		return err
	}
	vo := measure.ValidateOptions{Datasheet: o.datasheet, TimeLimit: o.timeLimit,
		Rounds: o.rounds, Warmup: o.warmup, Level: o.level, Clock: o.clock, Seed: o.seed, ProfileName: o.profile}
	for _, k := range strings.Split(o.kinds, ",") {
		vo.Kinds = append(vo.Kinds, strings.TrimSpace(k))
	}
	vo.Solver = solver
	for _, s := range strings.Split(o.budgets, ",") {
		b, err := parseBudget(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		vo.Budgets = append(vo.Budgets, b)
	}
	loss, err := autodiff.ParseLoss(o.loss)
	if err != nil {
		return usagef("-loss %q: %v", o.loss, err)
	}
	vo.Train = autodiff.Options{Loss: loss}
	if vo.InputValues, err = parseInputValues(o.inputValues); err != nil {
		return err
	}
	specs, err := pipeline.ParseModelArgs(args)
	if err != nil {
		return err
	}
	if vo.Load, err = o.load.options(st, true); err != nil {
		return err
	}
	if vo.Profile, err = profiles.Load(o.profile); err != nil {
		return err
	}
	vo.Progress = func(p measure.CostProgress) {
		if p.Timing > 0 {
			fmt.Fprintf(st.Err, "validate-cost: %s (%s): timing %d models, %d rounds\n", p.Model, p.Kind, p.Timing, p.Rounds)
		} else {
			fmt.Fprintf(st.Err, "validate-cost: %s (%s), %s profile, budget %s\n", p.Model, p.Kind, p.Profile, p.Budget)
		}
	}
	table, err := measure.ValidateCost(ctx, specs, vo)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(st.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(table)
	}
	return printCostTable(st.Out, table)
}

// printCostTable prints the rows, one block per profile, and a summary of
// the rows outside the targets.
func printCostTable(w io.Writer, t *measure.CostTable) error {
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
		for _, r := range t.Rows {
			if r.Profile != label {
				continue
			}
			if r.NoPlan != "" {
				fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t  %s\n", r.Model, r.Kind, r.Budget, r.NoPlan)
				continue
			}
			plan, ovh, movh, diff := "-", "-", "-", "-"
			if r.Budget != "-" {
				plan = fmt.Sprintf("%+.1f%%", r.PlanOverheadPercent)
				ovh, movh, diff = fmt.Sprintf("%+.1f%%", r.PredictedOverheadPercent), fmt.Sprintf("%+.1f%%", r.MeasuredOverheadPercent), fmt.Sprintf("%+.1f pp", r.OverheadDiffPP)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%+.1f%%\t%s\t%s\t%s\t%s\t%d\t%d\t  %s\n", r.Model, r.Kind, r.Budget,
				formatSeconds(r.PredictedSeconds), formatSeconds(r.MeasuredSeconds), r.ErrorPercent, plan, ovh, movh, diff, r.Recomputations, r.HelperNodes, formatSourceCounts(r.Sources))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		inWhole, nWhole, inOvh, nOvh := t.InTargets(label)
		fmt.Fprintf(w, "within %.0f%% of ORT's time: %d of %d rows; overhead within %.0f pp of ORT's: %d of %d plans\n",
			measure.WholeTargetPercent, inWhole, nWhole, measure.OverheadTargetPP, inOvh, nOvh)
	}
	return nil
}

// formatSourceCounts writes "40 measured, 2 fitted".
func formatSourceCounts(src map[string]int) string {
	order := []string{profiles.SourceMeasured, profiles.SourceFitted, profiles.SourceDatasheet}
	keys := slices.Sorted(maps.Keys(src))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(slices.Index(order, a), slices.Index(order, b)) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", src[k], k))
	}
	return strings.Join(parts, ", ")
}
