package verify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/verify"
)

// Example compiles a zoo model's training graph through the library alone
// (load, build the training graph, fit to 70% of its no-remat peak for
// ONNX Runtime, export) and verifies the rewrite in ONNX Runtime against
// the plain training graph at level disabled (Run's default levels are
// disabled and all): bitwise-identical outputs and every recomputation
// run where the plan put it.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "remat-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	load := pipeline.LoadOptions{RequireStatic: true}
	train := autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}}
	orig, err := pipeline.Load(ctx, "zoo:mobilenet_v2:res=32", load)
	if err == nil {
		err = orig.Train(ctx, train)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	origPath := filepath.Join(dir, "unet.onnx")
	if err := orig.Export(origPath, nil, true); err != nil {
		fmt.Println(err)
		return
	}

	m, err := pipeline.Load(ctx, "zoo:mobilenet_v2:res=32", load)
	if err == nil {
		err = m.Train(ctx, train)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fit, err := m.Fit(ctx, pipeline.FitOptions{Budget: remat.BudgetFraction(0.75), TimeLimit: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	rematPath := filepath.Join(dir, "unet.remat.onnx")
	if err := m.Export(rematPath, fit, true); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("within the budget:", fit.Remat.AfterPeakBytes <= fit.Remat.BudgetBytes)
	fmt.Println("recomputes:", fit.Remat.Recomputations > 0)

	r, err := verify.Run(ctx, origPath, rematPath, verify.Options{Levels: []string{"disabled"}, Runs: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range r.Levels {
		same := true
		for _, o := range l.Outputs {
			same = same && o.Equal
		}
		placed := true
		for _, p := range l.Recompute {
			placed = placed && p.OK
		}
		fmt.Printf("level %s: outputs bitwise identical %v, recomputations placed %v\n", l.Level, same, placed)
	}
	fmt.Println("verify ok:", r.OK)
	// Output:
	// within the budget: true
	// recomputes: true
	// level disabled: outputs bitwise identical true, recomputations placed true
	// verify ok: true
}
