package tfjs_test

import (
	"context"
	"path/filepath"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	rt "github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/targets/tfjs"
)

// TestMemoryTrainZoo holds the memory model to tf.profile on training
// graphs in TensorFlow ops (passes/autodiff, -loss sum) of the zoo's
// networks built as TensorFlow graphs, on the wasm backend: the predicted
// peak within 1% of the measured one, and every node's Workspace equal to
// what the profile shows of its kernels (the gradients' SelectV2 masks,
// Pack, Conv2DBackpropInput and the rest).
func TestMemoryTrainZoo(t *testing.T) {
	if testing.Short() {
		t.Skip("measures training graphs in TensorFlow.js; skipped in -short mode")
	}
	dir := testmodels.RequireTFJS(t)
	specs := []string{"unet:res=64:batch=4", "vgg16:res=64:batch=4", "mobilenet_v2:res=64:batch=4", "resnet50:res=64:batch=4", "fcn8:res=64:batch=4", "googlenet:small:batch=4"}
	var jobs []rt.Options
	var graphs []*ir.Graph
	for _, spec := range specs {
		m, err := pipeline.Load(context.Background(), "zoo:"+spec+":tf", pipeline.LoadOptions{RequireStatic: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Train(context.Background(), autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}}); err != nil {
			t.Fatal(err)
		}
		g := m.Graph
		path := filepath.Join(t.TempDir(), "model.json")
		if err := gdexp.ExportFile(g, path, gdexp.Options{}); err != nil {
			t.Fatal(err)
		}
		dims, _ := g.Inputs[0].Type.Dims()
		in, err := rt.SeededInputs([]rt.InputSpec{{Name: g.Inputs[0].Name, DType: rt.Float32, Shape: dims}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, rt.Options{Dir: dir, Model: path, Inputs: in, Profile: true})
		graphs = append(graphs, g)
	}
	res, err := rt.RunAll(context.Background(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		g, spec := graphs[i], specs[i]
		pl, err := tfjs.Target{}.Original(g, true)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		got, want := pl.PeakBytes, r.Memory.PeakBytes
		rel := float64(got-want) / float64(want)
		t.Logf("zoo:%s:tf training graph: predicted %d B, tf.profile %d B (%+.3f%%)", spec, got, want, 100*rel)
		if rel > 0.01 || rel < -0.01 {
			t.Errorf("zoo:%s:tf training graph: predicted peak %d B is %+.2f%% off tf.profile's %d B", spec, got, 100*rel, want)
		}
		checkWorkspaces(t, "zoo:"+spec+":tf training graph", g, r, map[string]int{})
	}
}
