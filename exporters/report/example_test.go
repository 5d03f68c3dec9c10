package report_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
)

// ExampleWriteHTML fits a model to 70% of its peak, as compile -budget 70%
// does, and writes the HTML report of the plan: the fit's report with the
// detail the figures need (Fit.Detail), then WriteHTML.
func ExampleWriteHTML() {
	ctx := context.Background()
	m, err := pipeline.Load(ctx, "../../testdata/models/unet_like.onnx", pipeline.LoadOptions{RequireStatic: true})
	if err != nil {
		log.Fatal(err)
	}
	fit, err := m.Fit(ctx, pipeline.FitOptions{Budget: remat.BudgetFraction(0.7), Timelines: true})
	if err != nil {
		log.Fatal(err)
	}
	r := fit.Report(m, "unet_like.remat.onnx", "70%")
	if err := fit.Detail(m, r); err != nil {
		log.Fatal(err)
	}
	var page strings.Builder // an os.File in practice
	if err := report.WriteHTML(&page, r, report.HTMLOptions{}); err != nil {
		log.Fatal(err)
	}
	for _, tl := range r.Timelines {
		fmt.Printf("%s: %s → %s (%s)\n", tl.Model, remat.FormatBytes(tl.Original.PeakBytes), remat.FormatBytes(tl.Rewrite.PeakBytes), tl.Source)
	}
	fmt.Printf("R matrix: %d stages, %d recomputations\n", len(r.PlanStages), r.Recomputations)
	fmt.Printf("figures: %d, decision rows: %d\n", strings.Count(page.String(), "<svg "), strings.Count(page.String(), `<tr class="decision"`))
	// Output:
	// liveness: 1.25 MiB → 768 KiB (predicted)
	// ort: 1.25 MiB → 768 KiB (predicted)
	// R matrix: 18 stages, 6 recomputations
	// figures: 3, decision rows: 18
}
