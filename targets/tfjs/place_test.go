package tfjs_test

import (
	"context"
	"path/filepath"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	rt "github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets/tfjs"
)

// branches builds y = MatMul(MatMul(x, Wa1), Wa2) + MatMul(MatMul(x,
// Wb1), Wb2): each branch widens x [1,16] to [1,4096] and narrows it back,
// in the plan's order branch a, then branch b. TensorFlow.js readies both
// wide MatMuls when x is visited and runs them one after the other, so
// both wide values are live at once; the plan's order holds one.
func branches() *ir.Graph {
	g := ir.NewGraph("branches")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 16))
	weight := func(name string, r, c int64) *ir.Value {
		raw := make([]byte, 4*r*c)
		for i := 0; i < len(raw); i += 4 {
			raw[i+2], raw[i+3] = 0x80, 0x3b // 1/256
		}
		return g.AddParam(name, ir.TensorOf(ir.Float32, r, c), &ir.Tensor{Name: name, DType: ir.Float32, Shape: []int64{r, c}, Raw: raw})
	}
	mm := func(name string, a, w *ir.Value, cols int64) *ir.Node {
		n := g.NewNode("MatMul", ir.TFDomain, []*ir.Value{a, w}, []string{name})
		n.Name = name
		n.Outputs[0].Type = ir.TensorOf(ir.Float32, 1, cols)
		n.SetAttr(ir.StringAttr("T", "DT_FLOAT"))
		n.SetAttr(ir.IntAttr("transpose_a", 0))
		n.SetAttr(ir.IntAttr("transpose_b", 0))
		return n
	}
	a1 := mm("a1", x, weight("wa1", 16, 4096), 4096)
	a2 := mm("a2", a1.Outputs[0], weight("wa2", 4096, 16), 16)
	b1 := mm("b1", x, weight("wb1", 16, 4096), 4096)
	b2 := mm("b2", b1.Outputs[0], weight("wb2", 4096, 16), 16)
	y := g.NewNode("AddV2", ir.TFDomain, []*ir.Value{a2.Outputs[0], b2.Outputs[0]}, []string{"y"})
	y.Name = "y"
	y.Outputs[0].Type = ir.TensorOf(ir.Float32, 1, 16)
	y.SetAttr(ir.StringAttr("T", "DT_FLOAT"))
	g.AddOutput(y.Outputs[0])
	return g
}

// TestPlaceForcesOrder places a graph whose plan order TensorFlow.js does
// not follow: Place constrains it, predicts the plan-order peak, and
// tf.profile measures what it predicts, with and without the constraints.
func TestPlaceForcesOrder(t *testing.T) {
	dir := testmodels.RequireTFJS(t)
	g := branches()
	pl, err := tfjs.Target{}.Place(g, &remat.RewriteResult{Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Writing.Order) == 0 || pl.PeakBytes != pl.PlanOrderPeakBytes || pl.PeakBytes >= pl.UnforcedPeakBytes {
		t.Fatalf("placement %+v: want constraints that bring the peak from the unforced %d B down to the plan order's %d B", pl, pl.UnforcedPeakBytes, pl.PlanOrderPeakBytes)
	}
	tmp := t.TempDir()
	forced, plain := filepath.Join(tmp, "forced.json"), filepath.Join(tmp, "plain.json")
	if err := gdexp.ExportFile(g, forced, gdexp.Options{RuntimeOrder: tfjs.Order, Order: pl.Writing.Order}); err != nil {
		t.Fatal(err)
	}
	if err := gdexp.ExportFile(g, plain, gdexp.Options{}); err != nil {
		t.Fatal(err)
	}
	in, _ := rt.SeededInputs([]rt.InputSpec{{Name: "x", DType: rt.Float32, Shape: []int64{1, 16}}}, 1)
	res, err := rt.RunAll(context.Background(), []rt.Options{{Dir: dir, Model: forced, Inputs: in, Profile: true}, {Dir: dir, Model: plain, Inputs: in, Profile: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Memory.PeakBytes; got != pl.PeakBytes {
		t.Errorf("forced: tf.profile %d B, predicted %d B", got, pl.PeakBytes)
	}
	if got := res[1].Memory.PeakBytes; got != pl.UnforcedPeakBytes {
		t.Errorf("unforced: tf.profile %d B, predicted %d B", got, pl.UnforcedPeakBytes)
	}
	if res[0].Digests[0] != res[1].Digests[0] {
		t.Error("the constrained graph computes another result")
	}
	t.Logf("%v: %d B → %d B (plan order %d B)", pl.Writing.Strings(), pl.UnforcedPeakBytes, pl.PeakBytes, pl.PlanOrderPeakBytes)
}
