package tile

import (
	"math"
	"path/filepath"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	ortt "github.com/remat-compile/remat/targets/ort"
)

// lateralGraph is a pyramid's lateral branch in miniature, in 1×1
// convolutions: b, a 2 MiB feature map, feeds a trunk of three nodes and
// a convolution to two channels (the lateral) that only the last node
// reads, joined to the trunk's output by a Concat (join "Concat") or an
// Add. The lateral is
// written before the trunk, so ONNX Runtime's depth-first order enters
// the trunk first and runs the lateral last, holding b across the trunk.
// The eager constraint makes the trunk's second node (wait), the first
// after b's other reader, wait for the lateral.
func lateralGraph(t *testing.T, join string) (g *ir.Graph, lateral, wait *ir.Node) {
	b := newGB(t, 11, 17)
	x := b.input(1, 8, 128, 128)
	conv := func(v *ir.Value, c int64) *ir.Value { return b.conv(v, c, 1, 1, 1, [4]int64{}, 1) }
	big := conv(x, 32)
	lat := conv(big, 2)
	t1 := conv(big, 8)
	t2 := conv(t1, 32)
	t3 := conv(t2, 2)
	var out *ir.Value
	if join == "Add" {
		out = b.op("Add", []*ir.Value{lat, t3})
	} else {
		out = b.op("Concat", []*ir.Value{lat, t3}, ir.IntAttr("axis", 1))
	}
	b.g.AddOutput(out)
	return b.g, lat.Def, t2.Def
}

// TestEagerConstraintsInORT checks targets/ort's eager constraints on
// lateralGraph: the lateral is made to run before the trunk goes on
// (the node after b's other reader waits for it), the predicted peak
// falls, and in ONNX Runtime 1.30 the written model's measured peak (at
// level disabled, as TestRealModels measures) is the predicted one and
// lower than the model's without the constraint, with bitwise the same
// outputs at levels disabled and all.
func TestEagerConstraintsInORT(t *testing.T) {
	g, lat, last := lateralGraph(t, "Concat")
	cons, err := ortt.EagerConstraints(g, onnxexp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cons) != 1 || cons[0].After != lat || cons[0].Node != last {
		t.Fatalf("eager constraints %v, want %s to wait for %s", cons, last, lat)
	}
	before, err := ortt.Target{}.Original(g, false)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := ortt.Target{}.PlaceTiled(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Writing.Order) != 1 || pl.PeakBytes >= before.PeakBytes {
		t.Fatalf("PlaceTiled: %d constraints, predicted peak %d against %d without", len(pl.Writing.Order), pl.PeakBytes, before.PeakBytes)
	}
	requireORT(t)
	dir := t.TempDir()
	po, pe := filepath.Join(dir, "plain.onnx"), filepath.Join(dir, "eager.onnx")
	if err := onnxexp.ExportFile(g, po, onnxexp.Options{ValueInfo: true}); err != nil {
		t.Fatal(err)
	}
	inputs, err := ort.RandomInputs(po, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	measuredBefore, _ := measureORT(t, g, po, inputs, onnxexp.Options{})
	measuredAfter, _ := measureORT(t, g, pe, inputs, onnxexp.Options{Order: pl.Writing.Order, Remat: &remat.RewriteResult{Graph: g}})
	if measuredBefore != before.PeakBytes || math.Abs(float64(measuredAfter-pl.PeakBytes)) > 0.01*float64(measuredAfter) || measuredAfter >= measuredBefore {
		t.Errorf("measured %d → %d, predicted %d → %d", measuredBefore, measuredAfter, before.PeakBytes, pl.PeakBytes)
	}
	for _, level := range levels {
		ro, err := ort.Run(po, inputs, ort.Options{Level: level})
		if err != nil {
			t.Fatal(err)
		}
		re, err := ort.Run(pe, inputs, ort.Options{Level: level})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range ro.OutputNames {
			if !ro.Outputs[name].Equal(re.Outputs[name]) {
				t.Errorf("output %s differs at level %s: %s", name, level, describeDiff(ro.Outputs[name], re.Outputs[name]))
			}
		}
	}
}

// TestEagerConstraintsKeepSumFusions checks that no eager constraint
// moves the lateral of lateralGraph when an Add joins it to the trunk's
// last convolution: ONNX Runtime fuses that Add into one of the two
// convolutions, chosen by their order, and moving the lateral changed the
// outputs in the last bit at level all (measured in ONNX Runtime 1.30
// before sumFusionRisk).
func TestEagerConstraintsKeepSumFusions(t *testing.T) {
	g, _, _ := lateralGraph(t, "Add")
	cons, err := ortt.EagerConstraints(g, onnxexp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cons) != 0 {
		t.Fatalf("eager constraints %v on a lateral that an Add sums with a convolution", cons)
	}
}
