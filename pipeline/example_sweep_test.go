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
		fmt.Printf("%-5s peak %-8s overhead %5.2f%%  %s\n", r.Budget, remat.FormatBytes(r.PeakBytes), r.OverheadPercent, plan)
	}
	// Rematerialization alone stops at 60%; the 50% row is met by tiling
	// (passes/tile), its overhead the bands' extra compute.
	// The plan of the smallest feasible budget, which compile writes with -o.
	fmt.Println("last plan:", remat.FormatBytes(res.Fit.Remat.AfterPeakBytes))
	// Output:
	// 100%  peak 1.25 MiB overhead  0.00%  solved
	// 90%   peak 1.00 MiB overhead 11.02%  solved
	// 80%   peak 1.00 MiB overhead 11.02%  plan of 90%
	// 70%   peak 768 KiB  overhead 33.05%  solved
	// 60%   peak 768 KiB  overhead 33.05%  plan of 70%
	// 50%   peak 668 KiB  overhead 168.87%  solved
	// last plan: 668 KiB
}
