package main

// compile's reports (-report plan.json|plan.html, -verify), its budget
// sweep (-budget sweep, -sweep-svg), and what an interrupt does.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/verify"
)

// interruptedError is the error of a command stopped by Ctrl-C after it
// printed (and, for a solve, wrote) what it had.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return "remat-compile: interrupted: " + e.msg }

func errInterrupted(msg string) error { return &interruptedError{msg} }

// reportFormat returns the format of a -report file by its extension:
// "json" or "html".
func reportFormat(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return "json", nil
	case ".html", ".htm":
		return "html", nil
	}
	return "", usagef("-report %q: want a file ending in .json (the JSON report, schema %s) or .html (one self-contained page with the figures)", path, report.Schema)
}

// checkReportFlags checks -report, -sweep-svg, -verify, -emit-milp and -arena
// against -budget before anything runs, and returns the sweep (nil for
// one budget) and the -budget value left to parse as one budget.
func (o *compileOptions) checkReportFlags() (*pipeline.SweepSpec, string, error) {
	if o.report != "" {
		if _, err := reportFormat(o.report); err != nil {
			return nil, "", err
		}
	}
	if !pipeline.IsSweep(o.budget) {
		if o.sweepSVG != "" {
			return nil, "", usagef("-sweep-svg draws a budget sweep: add -budget sweep (or sweep:FROM-TO:STEP)")
		}
		return nil, o.budget, nil
	}
	sp, err := pipeline.ParseSweep(o.budget)
	if err != nil {
		return nil, "", err
	}
	switch {
	case o.emitMILP != "":
		return nil, "", usagef("-emit-milp writes the MILP at one budget: give -budget a single value, not a sweep")
	case o.arena != "":
		return nil, "", usagef("-arena writes the arena plan of one model: give -budget a single value, not a sweep")
	case o.verify && o.out == "":
		return nil, "", usagef("-verify with a sweep verifies the plan written with -o: add -o out.onnx")
	case o.sweepSVG != "" && strings.ToLower(filepath.Ext(o.sweepSVG)) != ".svg":
		return nil, "", usagef("-sweep-svg %q: want a file ending in .svg", o.sweepSVG)
	}
	return &sp, "", nil
}

// invocation says how this run was made: the command line and the build.
func invocation(args []string) *report.Invocation {
	inv := &report.Invocation{CommandLine: args, Version: "(unknown)", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		inv.Version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				inv.VCSRevision = s.Value + inv.VCSRevision
			case "vcs.modified":
				if s.Value == "true" {
					inv.VCSRevision += "+modified"
				}
			}
		}
	}
	return inv
}

// writeReport writes -report (nothing when it is empty) in the format of
// its extension, with the detail the figures need.
func writeReport(path string, m *pipeline.Model, fit *pipeline.Fit, r *report.Compile, st *Streams) error {
	if path == "" {
		return nil
	}
	format, err := reportFormat(path)
	if err != nil {
		return err
	}
	if err := fit.Detail(m, r); err != nil {
		return err
	}
	r.Invocation = invocation(st.Args)
	err = atomicfile.Write(path, func(w io.Writer) error {
		if format == "html" {
			return report.WriteHTML(w, r, report.HTMLOptions{})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
	if err != nil {
		return fmt.Errorf("-report: %w", err)
	}
	return nil
}

// verifyFit runs verify on the written rewrite (-verify) and adds ORT's
// measured memory per node to r; it returns the summary lines to print
// and an error when verify could not run or a check failed.
func verifyFit(ctx context.Context, m *pipeline.Model, fit *pipeline.Fit, out string, r *report.Compile) (string, error) {
	if m.IsTF() {
		return verifyFitTF(ctx, m, fit, out)
	}
	vr, err := verify.Fitted(ctx, m, fit, out, verify.Options{Seed: 1})
	if err != nil {
		return "", fmt.Errorf("-verify: %w", err)
	}
	r.Measured = vr.Measured("disabled")
	var b strings.Builder
	for _, lr := range vr.Levels {
		same := "bitwise identical outputs"
		for _, o := range lr.Outputs {
			if !o.Equal {
				same = "outputs DIFFER"
			}
		}
		fmt.Fprintf(&b, "verify %s: %s; ONNX Runtime measured %s → %s (%+.1f%%); under its default options (memory pattern on) %s → %s (%+.1f%%)\n", lr.Level, same,
			formatBytes(lr.Orig.PeakBytes), formatBytes(lr.Rematted.PeakBytes), -lr.ReductionPercent,
			formatBytes(lr.Orig.DefaultPeakBytes), formatBytes(lr.Rematted.DefaultPeakBytes), -lr.DefaultReductionPercent)
	}
	if !vr.OK {
		return b.String(), fmt.Errorf("-verify: %d check(s) failed:\n  %s", len(vr.Failures), strings.Join(vr.Failures, "\n  "))
	}
	return b.String(), nil
}

// runSweep fits m to each budget of the sweep (pipeline.Sweep), prints
// the table and writes what was asked: -o the last row's plan (the
// smallest feasible budget), -report its report with the sweep,
// -sweep-svg the curve. Interrupted, it prints the rows so far and writes
// nothing.
func runSweep(ctx context.Context, o *compileOptions, m *pipeline.Model, fo pipeline.FitOptions, spec pipeline.SweepSpec, st *Streams) error {
	bar := newProgressBar(st, "sweep", len(spec.Percents()))
	res, err := m.Sweep(ctx, pipeline.SweepOptions{Fit: fo, Spec: spec, Progress: func(done, total int, budget string) {
		note := ""
		if budget != "" {
			note = "solving " + budget
		}
		bar.update(min(done, total), note)
	}})
	bar.done()
	if err != nil {
		return err
	}
	sw := res.Sweep
	if err := printSweep(st.Out, sw); err != nil {
		return err
	}
	if sw.Interrupted {
		return errInterrupted("the sweep's rows so far are above; no file written")
	}
	if len(sw.Rows) == 0 {
		return fmt.Errorf("remat-compile: no budget of %s fits: %s", sw.Spec, sw.Stopped)
	}
	last := sw.Rows[len(sw.Rows)-1]
	if o.out != "" {
		if err := res.Model.Export(o.out, res.Fit, true); err != nil {
			return err
		}
		fmt.Fprintf(st.Out, "wrote %s: the plan of the smallest feasible budget, %s\n", o.out, last.Budget)
	}
	r := res.Fit.Report(res.Model, o.out, last.Budget)
	r.Sweep = sw
	var verified string
	var verifyErr error
	if o.verify {
		verified, verifyErr = verifyFit(ctx, res.Model, res.Fit, o.out, r)
	}
	if err := writeReport(o.report, res.Model, res.Fit, r, st); err != nil {
		return err
	}
	if o.sweepSVG != "" {
		if err := atomicfile.Write(o.sweepSVG, func(w io.Writer) error { return report.WriteSweepSVG(w, sw) }); err != nil {
			return fmt.Errorf("-sweep-svg: %w", err)
		}
	}
	fmt.Fprint(st.Out, verified)
	return verifyErr
}

// printSweep prints a sweep's table.
func printSweep(w io.Writer, sw *report.Sweep) error {
	fmt.Fprintf(w, "sweep %s: no-remat peak %s; peaks under the solver's model and %s\n", sw.Spec, remat.FormatBytes(sw.NoRematPeakBytes), sw.Target)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "budget\tbytes\tpeak\t%s peak\toverhead\trecomputations\tsolver\ttime\tplan\t\n", sw.Target)
	for _, r := range sw.Rows {
		solver := r.Solver
		if r.Optimal {
			solver += ", optimal"
		}
		tpeak := "-"
		if r.TargetPeakBytes > 0 {
			tpeak = remat.FormatBytes(r.TargetPeakBytes)
		}
		plan := "solved"
		if r.ReusedFrom != "" {
			plan = "of " + r.ReusedFrom
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f%%\t%d\t%s\t%.1fs\t%s\t\n", r.Budget, remat.FormatBytes(r.BudgetBytes), remat.FormatBytes(r.PeakBytes), tpeak, r.OverheadPercent, r.Recomputations, solver, r.Seconds, plan)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range sw.Rows {
		if r.Note != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.Budget, r.Note)
		}
	}
	fmt.Fprintln(w, sw.Stopped)
	return nil
}
