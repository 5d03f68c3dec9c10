package pipeline_test

import (
	"context"
	"fmt"
	"log"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
)

// ExampleModel_Sweep solves a model under 100%, 90%, … of its peak down to
// the smallest budget that fits, as compile -budget sweep:100-50:10 does,
// and prints the table: a tighter budget never costs less, and a budget
// that the looser plan fits reuses it.
func ExampleModel_Sweep() {
	ctx := context.Background()
	m, err := pipeline.Load(ctx, "../testdata/models/unet_like.onnx", pipeline.LoadOptions{RequireStatic: true})
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Sweep(ctx, pipeline.SweepOptions{Spec: pipeline.SweepSpec{From: 100, To: 50, Step: 10}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res.Sweep.Rows {
		plan := "solved"
		if r.ReusedFrom != "" {
			plan = "plan of " + r.ReusedFrom
		}
		fmt.Printf("%-5s %-8s peak %-8s ort %-8s overhead %5.2f%%  %s\n", r.Budget, remat.FormatBytes(r.BudgetBytes),
			remat.FormatBytes(r.PeakBytes), remat.FormatBytes(r.TargetPeakBytes), r.OverheadPercent, plan)
	}
	fmt.Println("no-remat peak:", remat.FormatBytes(res.Sweep.NoRematPeakBytes))
	// Rematerialization alone stops at 60%; the 50% row is met by tiling
	// (passes/tile) under ONNX Runtime's model, its overhead the bands'
	// extra compute (its peak under the solver's liveness model is above
	// the budget; ONNX Runtime's is within it).
	// The plan of the smallest feasible budget, which compile writes with -o.
	fmt.Println("last plan:", remat.FormatBytes(res.Fit.Remat.AfterPeakBytes))
	// Output:
	// 100%  1.25 MiB peak 1.25 MiB ort 1.25 MiB overhead  0.00%  solved
	// 90%   1.12 MiB peak 1.00 MiB ort 1.00 MiB overhead 11.02%  solved
	// 80%   1.00 MiB peak 1.00 MiB ort 1.00 MiB overhead 11.02%  plan of 90%
	// 70%   896 KiB  peak 768 KiB  ort 768 KiB  overhead 33.05%  solved
	// 60%   768 KiB  peak 768 KiB  ort 768 KiB  overhead 33.05%  plan of 70%
	// 50%   640 KiB  peak 668 KiB  ort 624 KiB  overhead 168.87%  solved
	// no-remat peak: 1.25 MiB
	// last plan: 668 KiB
}
