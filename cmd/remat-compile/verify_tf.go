package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/verify"
)

// runVerifyTF verifies a TensorFlow graph and its rewrite in TensorFlow.js
// (verify.RunTF).
func runVerifyTF(ctx context.Context, o *verifyOptions, origPath, rematPath string, st *Streams) error {
	if !verify.IsTFModel(origPath) || !verify.IsTFModel(rematPath) {
		return usagef("verify: %s and %s are not both TensorFlow graphs (.pb or model.json) or both ONNX models", origPath, rematPath)
	}
	if o.backend != "wasm" && o.backend != "cpu" {
		return usagef("-backend %q: want wasm or cpu", o.backend)
	}
	if o.runs < 1 {
		return usagef("-runs %d: want at least 1", o.runs)
	}
	if len(o.inputValues) > 0 {
		return usagef("-input-value: not supported for TensorFlow graphs (their inputs are seeded)")
	}
	shapes, err := concreteShapes(o.inputShapes)
	if err != nil {
		return err
	}
	r, err := verify.RunTF(ctx, origPath, rematPath, verify.TFOptions{Backend: tfjs.Backend(o.backend), Runs: o.runs, Seed: o.seed, InputShapes: shapes})
	if err != nil {
		return err
	}
	return finishVerify(st, o.json, r, func() error { return printVerifyTF(st, r) }, r.PlacementNote, r.Failures)
}

func printVerifyTF(st *Streams, r *verify.TFReport) error {
	out := st.Out
	fmt.Fprintf(out, "original: %s\nremat:    %s\n", r.Original, r.Remat)
	fmt.Fprintf(out, "TensorFlow.js %s, %s backend, tf.profile on the first execution, 1 warm-up + %d timed execution(s) per model; inputs seeded with %d\n", r.TFJSVersion, r.Backend, r.Runs, r.Seed)
	if md := r.Metadata; md != nil {
		fmt.Fprintf(out, "plan: solver %q, budget %s, %d recompute node(s), %d gate(s)\n", md.Solver, formatBytes(md.BudgetBytes), len(md.Recompute), len(md.Gated))
	}
	w := printOutputs(out, r.Outputs)
	fmt.Fprintf(w, "\n  \toriginal\tremat\tchange\n")
	fmt.Fprintf(w, "  tf.profile peak\t%s\t%s\t%s (%s%%)\n", formatBytes(r.Orig.PeakBytes), formatBytes(r.Rematted.PeakBytes), signedBytes(-r.ReductionBytes), signed(-r.ReductionPercent))
	fmt.Fprintf(w, "  weights and feeds\t%s\t%s\t\n", formatBytes(r.Orig.BaselineBytes), formatBytes(r.Rematted.BaselineBytes))
	fmt.Fprintf(w, "  median run time\t%.3f ms\t%.3f ms\t%s%%\n", r.Orig.MedianRunTimeMS, r.Rematted.MedianRunTimeMS, signed(r.RunTimeChangePercent))
	fmt.Fprintf(w, "  fastest run\t%.3f ms\t%.3f ms\t%s%%\n", r.Orig.MinRunTimeMS, r.Rematted.MinRunTimeMS, signed(r.MinRunTimeChangePercent))
	fmt.Fprintf(w, "  nodes run\t%d\t%d\t\n", r.Orig.NodesRun, r.Rematted.NodesRun)
	w.Flush()
	if r.PredictedReductionBytes != nil {
		by := "tfjs target's model"
		if r.PredictedBy == "liveness" {
			by = "liveness model"
		}
		printPredicted(out, by, *r.PredictedReductionBytes, *r.PredictedReductionPercent, r.ReductionBytes, r.ReductionPercent, r.MeasuredOverPredictedPercent, r.MeetsAcceptanceBar)
	}
	if len(r.Recompute) > 0 {
		fmt.Fprintf(out, "\n")
		fmt.Fprintf(w, "  recompute node\tposition\tafter (position)\tbefore (position)\tresult\n")
		for _, p := range r.Recompute {
			res := "ok"
			if !p.OK {
				res = "FAIL: " + p.Problem
			}
			fmt.Fprintf(w, "  %s\t%d\t%s (%d)\t%s (%d)\t%s\n", p.Node, p.Position, p.After, p.AfterPosition, p.Before, p.BeforePosition, res)
		}
		w.Flush()
	}
	if r.OK {
		fmt.Fprintln(out, "ok")
	}
	return nil
}

// verifyFitTF is compile -verify for a TensorFlow graph: the original and
// the rewrite in TensorFlow.js (verify.FittedTF), summarised in a line.
func verifyFitTF(ctx context.Context, m *pipeline.Model, fit *pipeline.Fit, out string) (string, error) {
	vr, err := verify.FittedTF(ctx, m, fit, out, verify.TFOptions{Seed: 1})
	if err != nil {
		return "", fmt.Errorf("-verify: %w", err)
	}
	same := "bitwise identical outputs"
	for _, o := range vr.Outputs {
		if !o.Equal {
			same = "outputs DIFFER"
		}
	}
	s := fmt.Sprintf("verify (TensorFlow.js, %s): %s; tf.profile measured %s → %s (%+.1f%%)\n", vr.Backend, same,
		formatBytes(vr.Orig.PeakBytes), formatBytes(vr.Rematted.PeakBytes), -vr.ReductionPercent)
	if !vr.OK {
		return s, fmt.Errorf("-verify: %d check(s) failed:\n  %s", len(vr.Failures), strings.Join(vr.Failures, "\n  "))
	}
	return s, nil
}
