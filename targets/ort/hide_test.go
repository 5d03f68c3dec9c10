package ort_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/targets"
	ortt "github.com/remat-compile/remat/targets/ort"
)

// trainGraph builds the training graph (sum loss) of a zoo model at its
// Small size.
func trainGraph(t *testing.T, name string) *ir.Graph {
	t.Helper()
	m, ok := zoo.Lookup(name)
	if !ok {
		t.Fatalf("zoo has no %s", name)
	}
	g, err := m.Build(m.Small)
	if err != nil {
		t.Fatal(err)
	}
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: name}); err != nil {
		t.Fatal(err)
	}
	if _, err := passes.Run(context.Background(), g, []*passes.Pass{autodiff.NewPass(autodiff.Options{Loss: autodiff.Loss{Kind: autodiff.LossSum}})}, passes.Options{File: name}); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestHiddenShapesMatchORT exports training graphs with their shapes
// hidden (exporters/onnx Options.HideShapes) and checks, in ONNX Runtime
// at level disabled, that
//   - after every kernel, ORT holds the bytes that the model of the
//     hidden export (Memory with onnxexp.Shapeless, in ORT's order)
//     predicts, within 10% of the peak (the model has the head's
//     shape tensors, Memory's Preamble, but not the 256-byte chunks the
//     Concat helpers before the body's nodes take for a moment, which
//     can move the arena's later chunks);
//   - the outputs are bitwise those of the export with shapes, at levels
//     disabled and all;
//   - the measured activation peak is the one Peak predicts for the
//     hidden export, within 3%, and on U-Net lower than the export with
//     shapes, where the planner's reuse holds freed buffers.
func TestHiddenShapesMatchORT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training graphs in ONNX Runtime; skipped in -short mode")
	}
	testmodels.RequireORT(t)
	dir := t.TempDir()
	for _, name := range []string{"unet", "vgg16", "mobilenet_v2", "resnet50"} {
		t.Run(name, func(t *testing.T) {
			g := trainGraph(t, name)
			shown := onnxexp.Options{ValueInfo: true}
			hidden := onnxexp.Options{ValueInfo: true, HideShapes: true}
			paths := map[bool]string{}
			for _, hide := range []bool{false, true} {
				opts := shown
				if hide {
					opts = hidden
				}
				b, err := onnxexp.Export(g, opts)
				if err != nil {
					t.Fatal(err)
				}
				paths[hide] = filepath.Join(dir, name+map[bool]string{false: ".onnx", true: ".hidden.onnx"}[hide])
				if err := os.WriteFile(paths[hide], b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in, err := ort.RandomInputs(paths[false], 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			peaks := map[bool]int64{}
			for _, level := range []string{"disabled", "all"} {
				opts := ort.MeasureOptions(level)
				a, err := ort.Run(paths[false], in, opts)
				if err != nil {
					t.Fatal(err)
				}
				b, err := ort.Run(paths[true], in, opts)
				if err != nil {
					t.Fatalf("level %s: the hidden export: %v", level, err)
				}
				for _, o := range a.OutputNames {
					if !bytes.Equal(a.Outputs[o].Data, b.Outputs[o].Data) {
						t.Errorf("level %s: output %s differs with the shapes hidden", level, o)
					}
				}
				if level != "disabled" {
					continue
				}
				peaks[false], peaks[true] = activationPeak(a.Profile), activationPeak(b.Profile)
				dev, worst := inUseDeviation(t, g, hidden, b.Profile)
				t.Logf("bytes in use after each kernel: the hidden model is off by at most %d bytes (at %s)", dev, worst)
				if 10*dev > peaks[true] {
					t.Errorf("the model of the hidden export is off by %d bytes at %s, more than 10%% of the peak %d (internal/memcheck's tolerance)", dev, worst, peaks[true])
				}
			}
			pred := map[bool]int64{}
			for hide, opts := range map[bool]onnxexp.Options{false: shown, true: hidden} {
				if pred[hide], err = ortt.Peak(g, opts); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("activation peak at level disabled: with shapes %d (predicted %d), hidden %d (predicted %d)", peaks[false], pred[false], peaks[true], pred[true])
			if d := pred[true] - peaks[true]; 100*d > 3*peaks[true] || -100*d > 3*peaks[true] {
				t.Errorf("hidden: predicted %d, measured %d: more than 3%% apart", pred[true], peaks[true])
			}
			// U-Net's backward values take the buffers of the forward
			// values of their shapes, which the planner then holds:
			// hidden, the peak is lower.
			if name == "unet" && peaks[true] >= peaks[false] {
				t.Errorf("hidden: the peak %d is not below the %d with the shapes shown", peaks[true], peaks[false])
			}
		})
	}
}

// activationPeak is the profile's peak less what the arena held before
// the first kernel, as remat-compile verify measures it.
func activationPeak(p *ort.Profile) int64 {
	first := p.Nodes[0]
	return p.PeakBytes() - (first.MemBytesInUse - first.MemInUseDelta)
}

// inUseDeviation compares, kernel by kernel, the bytes ORT had in use
// after each of g's nodes ran (the profile's mem_bytes_in_use less the
// bytes before the first kernel; the export's helper nodes are skipped)
// with the model's During less the workspace for the export with opts,
// and returns the largest difference and the node where it is.
func inUseDeviation(t *testing.T, g *ir.Graph, opts onnxexp.Options, p *ort.Profile) (int64, string) {
	t.Helper()
	sim, seq, err := ortt.Simulate(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	step := map[string]int{}
	for i, n := range seq {
		step[n.Name] = i
	}
	first := p.Nodes[0]
	base := first.MemBytesInUse - first.MemInUseDelta
	var dev int64
	worst := ""
	for _, e := range p.Nodes {
		i, ok := step[e.Name]
		if !ok {
			continue
		}
		d := e.MemBytesInUse - base - (sim.During[i] - sim.Workspace[i])
		if d < 0 {
			d = -d
		}
		if d > dev {
			dev, worst = d, e.Name
		}
	}
	return dev, worst
}

// TestTimelineHidesShapes: the timeline of a writing with the shapes
// hidden is simulated with them hidden, whatever the Target's own
// HideShapes (the pipeline's auto writing is placed by another Target
// value than the one that draws it).
func TestTimelineHidesShapes(t *testing.T) {
	g := trainGraph(t, "unet")
	hidden := onnxexp.Options{ValueInfo: true, HideShapes: true, RuntimeOrder: ortt.Order}
	want, err := ortt.Peak(g, hidden)
	if err != nil {
		t.Fatal(err)
	}
	shown, err := ortt.Peak(g, onnxexp.Options{ValueInfo: true, RuntimeOrder: ortt.Order})
	if err != nil {
		t.Fatal(err)
	}
	if want == shown {
		t.Fatalf("the hidden and the shown writing both peak at %d: the test needs a graph where they differ", want)
	}
	sim, _, err := ortt.Target{}.Timeline(g, nil, targets.Writing{HideShapes: true})
	if err != nil {
		t.Fatal(err)
	}
	if sim.PeakBytes != want {
		t.Errorf("timeline peak %d, want the hidden writing's %d (shown: %d)", sim.PeakBytes, want, shown)
	}
}
