package pipeline_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
)

// Example compiles an inference model (the built-in MobileNet v2 at 96×96
// pixels) for ONNX Runtime to half its peak, as
//
//	remat-compile zoo:mobilenet_v2:res=96 -o mbv2.remat.onnx -budget 50%
//
// does: rematerialization alone cannot go below the largest single-node
// working set, so Fit tiles the memory-heavy convolutions into bands that
// recompute their halos, and Export writes the rewritten model.
func Example() {
	ctx := context.Background()
	m, err := pipeline.Load(ctx, "zoo:mobilenet_v2:res=96", pipeline.LoadOptions{RequireStatic: true})
	if err != nil {
		log.Fatal(err)
	}
	fit, err := m.Fit(ctx, pipeline.FitOptions{Budget: remat.BudgetFraction(0.5)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("target:", fit.Target.Name())
	fmt.Println("peak before:", remat.FormatBytes(fit.Original.PeakBytes))
	fmt.Println("peak after: ", remat.FormatBytes(fit.Placement.PeakBytes))
	for _, r := range fit.Tiled.Regions {
		fmt.Printf("tiled %d nodes, %s … %s, into %d bands: +%.1f%% compute\n", len(r.Nodes), r.Nodes[0], r.Nodes[len(r.Nodes)-1], r.Bands, r.ExtraPercent)
	}
	dir, err := os.MkdirTemp("", "remat-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := m.Export(filepath.Join(dir, "mbv2.remat.onnx"), fit, true); err != nil {
		log.Fatal(err)
	}
	// Output:
	// target: ort
	// peak before: 952 KiB
	// peak after:  418 KiB
	// tiled 6 nodes, block2.expand … block2.dw.relu6, into 3 bands: +10.3% compute
}

// ExampleModel_Inspect measures a model as remat-compile inspect -floor
// does: its peak under ONNX Runtime's allocator, the node at the peak, the
// single-node floor no rematerialization goes below, and the peak tiling
// reaches below that floor.
func ExampleModel_Inspect() {
	ctx := context.Background()
	m, err := pipeline.Load(ctx, "zoo:mobilenet_v2:res=96", pipeline.LoadOptions{RequireStatic: true})
	if err != nil {
		log.Fatal(err)
	}
	in, err := m.Inspect(pipeline.InspectOptions{Floor: true, Context: ctx, Top: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d nodes; %s peak %s at %s (%s)\n", in.Nodes, in.MemoryModel, remat.FormatBytes(in.PeakBytes), in.PeakNode, in.PeakOp)
	for _, v := range in.LargestAtPeak {
		fmt.Printf("  live at the peak: %s %s\n", v.Value, remat.FormatBytes(v.Bytes))
	}
	fmt.Printf("single-node floor %s at %s\n", remat.FormatBytes(in.Floor.NodeBytes), in.Floor.Node)
	fmt.Printf("tiled floor %s at %s\n", remat.FormatBytes(in.Floor.TiledBytes), in.Floor.TiledNode)
	// Output:
	// 154 nodes; ort peak 952 KiB at block2.expand.bn (BatchNormalization)
	//   live at the peak: block2.expand.bn 520 KiB
	//   live at the peak: block2.expand 432 KiB
	// single-node floor 864 KiB at block2.expand.bn
	// tiled floor 334 KiB at block2.dw_t2_2_t1
}
