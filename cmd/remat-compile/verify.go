package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/remat-compile/remat/verify"
)

// The verify command: flags, and the text form of package verify's report.

type verifyOptions struct {
	levels      string
	runs        int
	seed        uint64
	inputShapes listFlag
	inputValues listFlag
	json        bool
	backend     string
}

func verifyCmd() *command {
	return &command{
		name:  "verify",
		usage: "[-levels disabled,all] [-backend wasm|cpu] [-runs N] [-seed S] [-input-shape name=DIMS] [-input-value name=INT] [-json] orig.onnx|orig.pb|model.json remat.onnx|remat.pb|remat.json",
		short: "Run a model and its rematerialized rewrite in ONNX Runtime (ONNX models) or TensorFlow.js (TensorFlow graphs): check bitwise-identical outputs and that every recomputation survived and ran where the plan put it; report both activation peaks and run times.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &verifyOptions{}
			fs.StringVar(&o.levels, "levels", "disabled,all", "comma-separated ORT optimization `levels` to verify at: disabled, basic, extended, layout, all")
			fs.IntVar(&o.runs, "runs", 5, "`N` timed runs of each model per level, after one profiled warm-up run; run time is their median")
			fs.Uint64Var(&o.seed, "seed", 1, "`seed` of the random inputs")
			fs.Var(&o.inputShapes, "input-shape", "`name=1x3x224x224`: the shape of a graph input with dynamic dimensions (repeatable)")
			fs.Var(&o.inputValues, "input-value", "`name=INT`: fill a graph input with this value instead of random ones, e.g. a sample rate (repeatable)")
			fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
			fs.StringVar(&o.backend, "backend", "wasm", "TensorFlow.js `backend` for TensorFlow graphs: wasm or cpu (both models run on it)")
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) != 2 {
					return usagef("verify takes two model files (the original and the rematerialized one), got %d arguments", len(args))
				}
				return runVerify(ctx, o, args[0], args[1], st)
			}
		},
	}
}

func runVerify(ctx context.Context, o *verifyOptions, origPath, rematPath string, st *Streams) error {
	if verify.IsTFModel(origPath) || verify.IsTFModel(rematPath) {
		return runVerifyTF(ctx, o, origPath, rematPath, st)
	}
	levels, err := parseLevels(o.levels)
	if err != nil {
		return err
	}
	if o.runs < 1 {
		return usagef("-runs %d: want at least 1", o.runs)
	}
	shapes, err := concreteShapes(o.inputShapes)
	if err != nil {
		return err
	}
	values, err := parseInputValues(o.inputValues)
	if err != nil {
		return err
	}
	r, err := verify.Run(ctx, origPath, rematPath, verify.Options{Levels: levels, Runs: o.runs, Seed: o.seed, InputShapes: shapes, InputValues: values})
	if err != nil {
		return err
	}
	return finishVerify(st, o.json, r, func() error { return printVerify(st, r) }, r.PlacementNote, r.Failures)
}

// finishVerify ends the verify command for report r (ONNX Runtime's or
// TensorFlow.js's): it prints r as JSON with -json, else through print,
// says the placement note on stderr, and returns the failed checks as the
// command's error.
func finishVerify(st *Streams, asJSON bool, r any, print func() error, note string, failures []string) error {
	if asJSON {
		enc := json.NewEncoder(st.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := print(); err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintf(st.Err, "remat-compile verify: %s\n", note)
	}
	if len(failures) > 0 {
		return fmt.Errorf("remat-compile verify: %d check(s) failed:\n  %s", len(failures), strings.Join(failures, "\n  "))
	}
	return nil
}

func parseLevels(s string) ([]string, error) {
	var out []string
	for _, l := range strings.Split(s, ",") {
		l = strings.TrimSpace(l)
		if !slices.Contains(verify.LevelNames(), l) {
			return nil, usagef("-levels %q: unknown level %q (want a comma-separated list of %s)", s, l, strings.Join(verify.LevelNames(), ", "))
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// concreteShapes parses -input-shape name=1x3x224x224 into concrete
// shapes (verify runs the model, so no dimension may stay symbolic).
func concreteShapes(list listFlag) (map[string][]int64, error) {
	dims, err := parseInputShapes(list)
	if err != nil {
		return nil, err
	}
	out := map[string][]int64{}
	for name, ds := range dims {
		shape := make([]int64, len(ds))
		for i, d := range ds {
			if !d.Known() {
				return nil, usagef("-input-shape %s: dimension %d is the symbol %q; verify runs the model and needs sizes", name, i, d.Sym)
			}
			shape[i] = d.Size
		}
		out[name] = shape
	}
	return out, nil
}

// parseInputValues parses -input-value name=INT.
func parseInputValues(list listFlag) (map[string]int64, error) {
	out := map[string]int64{}
	for _, s := range list {
		name, val, ok := strings.Cut(s, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if !ok || name == "" || err != nil {
			return nil, usagef("-input-value %q: want name=INT such as sr=16000", s)
		}
		out[name] = n
	}
	return out, nil
}

// printVerify writes the text report.
func printVerify(st *Streams, r *verify.Report) error {
	out := st.Out
	fmt.Fprintf(out, "original: %s\nremat:    %s\n", r.Original, r.Remat)
	fmt.Fprintf(out, "ONNX Runtime %s, CPU, arena on, memory pattern off, profiling on, 1 thread, sequential; 1 warm-up + %d timed run(s) per model and level; inputs seeded with %d\n", r.ORTVersion, r.Runs, r.Seed)
	if md := r.Metadata; md != nil {
		fmt.Fprintf(out, "plan: solver %q, budget %s, %d recompute node(s)\n", md.Solver, formatBytes(md.BudgetBytes), len(md.Recompute))
	} else if r.PlacementNote != "" {
		fmt.Fprintf(out, "%s\n", r.PlacementNote)
	}
	for _, lr := range r.Levels {
		fmt.Fprintf(out, "\nlevel %s:\n", lr.Level)
		w := printOutputs(out, lr.Outputs)
		fmt.Fprintf(w, "\n  \toriginal\tremat\tchange\n")
		fmt.Fprintf(w, "  activation peak\t%s\t%s\t%s (%s%%)\n", formatBytes(lr.Orig.PeakBytes), formatBytes(lr.Rematted.PeakBytes), signedBytes(-lr.ReductionBytes), signed(-lr.ReductionPercent))
		fmt.Fprintf(w, "  peak, ORT defaults\t%s\t%s\t%s (%s%%)\n", formatBytes(lr.Orig.DefaultPeakBytes), formatBytes(lr.Rematted.DefaultPeakBytes),
			signedBytes(-lr.DefaultReductionBytes), signed(-lr.DefaultReductionPercent))
		fmt.Fprintf(w, "  arena baseline\t%s\t%s\t\n", formatBytes(lr.Orig.BaselineBytes), formatBytes(lr.Rematted.BaselineBytes))
		fmt.Fprintf(w, "  median run time\t%.3f ms\t%.3f ms\t%s%%\n", lr.Orig.MedianRunTimeMS, lr.Rematted.MedianRunTimeMS, signed(lr.RunTimeChangePercent))
		fmt.Fprintf(w, "  kernels run\t%d\t%d\t\n", lr.Orig.Kernels, lr.Rematted.Kernels)
		w.Flush()
		if lr.PredictedReductionBytes != nil {
			by := "ORT allocator model"
			if lr.PredictedBy == "liveness" {
				by = "liveness model"
			}
			printPredicted(out, by, *lr.PredictedReductionBytes, *lr.PredictedReductionPercent, lr.ReductionBytes, lr.ReductionPercent, lr.MeasuredOverPredictedPercent, lr.MeetsAcceptanceBar)
			if lr.PredictedBy == "ort" && lr.LivenessReductionBytes != nil {
				fmt.Fprintf(out, "  the solver's liveness model predicted a reduction of %s\n", formatBytes(*lr.LivenessReductionBytes))
			}
		}
		fmt.Fprintf(out, "  ORT defaults: arena on, memory pattern on, the peak over two runs of one session; measured reduction %s", formatBytes(lr.DefaultReductionBytes))
		if p := lr.PredictedDefaultReductionBytes; p != nil {
			fmt.Fprintf(out, ", predicted %s", formatBytes(*p))
		}
		fmt.Fprintln(out)
		if len(lr.Recompute) > 0 {
			fmt.Fprintf(out, "\n")
			fmt.Fprintf(w, "  recompute node\tran as (position)\tafter (position)\tbefore (position)\tresult\n")
			for _, pr := range lr.Recompute {
				res := "ok"
				if !pr.OK {
					res = "FAIL: " + pr.Problem
				}
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", pr.Node, eventPos(pr.Event, pr.Position), sidePos(pr.After, pr.AfterEvent, pr.AfterPosition), sidePos(pr.Before, pr.BeforeEvent, pr.BeforePosition), res)
			}
			w.Flush()
		}
		if lr.OK {
			fmt.Fprintf(out, "  level %s: ok\n", lr.Level)
		} else {
			fmt.Fprintf(out, "  level %s: FAILED (%d problem(s))\n", lr.Level, len(lr.Failures))
		}
	}
	if r.OK {
		fmt.Fprintf(out, "\nverify: ok\n")
	} else {
		fmt.Fprintf(out, "\nverify: FAILED\n")
	}
	return nil
}

func eventPos(event string, pos int) string {
	if pos < 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", event, pos)
}

func sidePos(name, event string, pos int) string {
	if name == "" {
		return "-"
	}
	if pos < 0 {
		return name + " " + verify.NotRun
	}
	if event == name {
		return fmt.Sprintf("%s (%d)", name, pos)
	}
	return fmt.Sprintf("%s as %s (%d)", name, event, pos)
}

func signed(x float64) string {
	if x == 0 {
		return "0.00"
	}
	if x > 0 {
		return fmt.Sprintf("+%.2f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func signedBytes(n int64) string {
	if n == 0 {
		return "0 B"
	}
	if n < 0 {
		return "-" + formatBytes(-n)
	}
	return "+" + formatBytes(n)
}

// printPredicted prints the predicted reduction (by a model named by),
// the measured one and, when known, their ratio against the bar.
func printPredicted(out io.Writer, by string, predicted int64, predictedPercent float64, measured int64, measuredPercent float64, ratio *float64, meets *bool) {
	fmt.Fprintf(out, "  predicted reduction (%s): %s (%.2f%%); measured %s (%.2f%%)", by, formatBytes(predicted), predictedPercent, formatBytes(measured), measuredPercent)
	if ratio != nil {
		verdict := "meets"
		if !*meets {
			verdict = "BELOW"
		}
		fmt.Fprintf(out, "; measured/predicted drop %.1f%% (%s the %.0f%% bar)", *ratio, verdict, 100*verify.AcceptanceBar)
	}
	fmt.Fprintln(out)
}

// printOutputs prints the output comparison table and returns its
// tabwriter (flushed) for the tables that follow.
func printOutputs(out io.Writer, outputs []verify.OutputReport) *tabwriter.Writer {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "  output\ttype\tresult\n")
	for _, o := range outputs {
		res := "bitwise identical"
		if !o.Equal {
			res = "DIFFERS: " + verify.DescribeDiff(o)
		}
		fmt.Fprintf(w, "  %s\t%s%s\t%s\n", o.Name, o.DType, verify.FormatShape(o.Shape), res)
	}
	w.Flush()
	return w
}
