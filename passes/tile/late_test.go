package tile

import (
	"testing"

	"github.com/remat-compile/remat/ir"
	ortt "github.com/remat-compile/remat/targets/ort"
)

// TestLateOutput moves the first pool's indices of the small zoo SegNet
// next to the decoder's unpool: the pool then has one output and is
// spatially local, a copy of the encoder's first stage computes the
// indices, and ONNX Runtime runs the copies after the bottleneck.
func TestLateOutput(t *testing.T) {
	g := zooSized("segnet", true).build(t)
	cands := lateCandidates(g)
	if len(cands) != 5 {
		t.Fatalf("%d late outputs, want the indices of SegNet's 5 pools: %+v", len(cands), cands)
	}
	pool := g.Nodes[cands[0].pos]
	copies, ok := moveLate(g, cands[:1])
	if !ok {
		t.Fatal("the first pool's indices are not late")
	}
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	checkTypes(t, g)
	if pool.NumOutputs() != 1 {
		t.Errorf("the pool still has %d outputs", pool.NumOutputs())
	}
	if _, err := ir.Spatial(pool, 2); err != nil {
		t.Errorf("the pool without indices is not local: %v", err)
	}
	var names []string
	for _, n := range copies[0] {
		names = append(names, n.Name)
	}
	// Stage one of the encoder, from the image: conv, bn, relu twice and the pool.
	if len(copies[0]) != 7 || copies[0][6].Op != "MaxPool" || copies[0][0].Inputs[0] != g.Inputs[0] {
		t.Fatalf("copies %v: want the first stage from the image and the pool", names)
	}
	seq, err := ortOrder(g)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, n := range seq {
		at[n.Name] = i
	}
	for _, n := range copies[0] {
		if at[n.Name] < at["enc5.pool"] {
			t.Errorf("ONNX Runtime runs %s at step %d, before the bottleneck (enc5.pool, step %d)", n.Name, at[n.Name], at["enc5.pool"])
		}
	}
	if _, ok := lateOutput(g, pool, 1); ok {
		t.Error("a pool without indices still has a late output")
	}
}

// TestFitMovesLateOutputs fits the small zoo SegNet to 88% of its ONNX
// Runtime peak, which tiling alone does not reach (the pools' inputs and
// indices are whole tensors held across the bottleneck), and checks that
// the fit moves indices late and stays bitwise exact.
func TestFitMovesLateOutputs(t *testing.T) {
	g := zooSized("segnet", true).build(t)
	orig := cloneGraph(g)
	mem := ortt.Memory()
	before := ortPeak(t, g)
	budget := before * 88 / 100
	opts := Options{Memory: mem, Budget: budget, Order: ortOrder, Runtime: &ORT, MaxExtra: 0.5}
	f, err := newFitter(cloneGraph(g), opts)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := f.plan(&Result{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.peak <= budget {
		t.Fatalf("tiling alone reaches the budget (%d ≤ %d): the test shows nothing", plain.peak, budget)
	}
	res, err := Fit(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Late) == 0 {
		t.Fatalf("no late outputs moved; peak %d → %d", res.PeakBefore, res.PeakAfter)
	}
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	checkTypes(t, g)
	if after := ortPeak(t, g); after != res.PeakAfter || after > budget {
		t.Fatalf("peak %d → %d (result says %d), budget %d", before, after, res.PeakAfter, budget)
	}
	var extra float64
	for _, l := range res.Late {
		extra += l.ExtraCost
	}
	if extra <= 0 || extra > res.CostAfter-res.CostBefore {
		t.Errorf("late recomputation costs %g of the %g extra", extra, res.CostAfter-res.CostBefore)
	}
	t.Logf("peak %d → %d B; late %+v; %d regions; %+.1f%% compute", before, res.PeakAfter, res.Late, len(res.Regions), 100*(res.CostAfter-res.CostBefore)/res.CostBefore)
	if testing.Short() {
		return
	}
	requireORT(t)
	runBoth(t, orig, g, "late SegNet")
}
