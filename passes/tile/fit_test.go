package tile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/memory"
)

// stem builds an image stem whose peak is its first, full-resolution
// layers: conv 3×3 to 32 channels, Relu, conv 3×3 stride 2, Relu, conv
// 3×3 stride 2, Relu, a 1×1 conv, then a global pool (which reads its
// input whole), on a 96×96 image.
func stem(t testing.TB) *ir.Graph { return stemOf(t, 96, 96) }

// stemOf is the stem on an h×w image.
func stemOf(t testing.TB, h, w int64) *ir.Graph {
	b := newGB(t, 9, 17)
	x := b.input(1, 3, h, w)
	y := b.op("Relu", []*ir.Value{b.conv(x, 32, 3, 1, 1, [4]int64{1, 1, 1, 1}, 1)})
	y = b.op("Relu", []*ir.Value{b.conv(y, 32, 3, 2, 1, [4]int64{1, 1, 1, 1}, 1)})
	y = b.op("Relu", []*ir.Value{b.conv(y, 16, 3, 2, 1, [4]int64{1, 1, 1, 1}, 1)})
	y = b.conv(y, 8, 1, 1, 1, [4]int64{}, 1)
	b.g.AddOutput(b.op("GlobalAveragePool", []*ir.Value{y}))
	return b.g
}

func peakOf(t *testing.T, g *ir.Graph) int64 {
	t.Helper()
	r, err := memory.Simulate(g, g.Nodes, ort.Memory())
	if err != nil {
		t.Fatal(err)
	}
	return r.PeakBytes
}

// TestFitReachesBudget asks for a third of the stem's peak: Fit must reach
// it with regions whose rewrite keeps every type shape inference derives,
// and report peaks and extra compute that agree with the graph.
func TestFitReachesBudget(t *testing.T) {
	g := stem(t)
	before := peakOf(t, g)
	res, err := Fit(g, Options{Memory: ort.Memory(), Budget: before / 3, Runtime: &ORT})
	if err != nil {
		t.Fatal(err)
	}
	checkTypes(t, g)
	after := peakOf(t, g)
	if after > before/3 || after != res.PeakAfter || res.PeakBefore != before {
		t.Fatalf("peak %d → %d (result says %d → %d), budget %d", before, after, res.PeakBefore, res.PeakAfter, before/3)
	}
	if len(res.Regions) == 0 || res.CostAfter <= res.CostBefore {
		t.Fatalf("regions %d, cost %g → %g: tiling recomputes halos, so it must cost something", len(res.Regions), res.CostBefore, res.CostAfter)
	}
	var extra float64
	for _, r := range res.Regions {
		if r.Bands < 2 || len(r.Halo) != r.Bands || len(r.Nodes) == 0 {
			t.Errorf("region report %+v", r)
		}
		extra += r.ExtraCost
	}
	if d := extra - (res.CostAfter - res.CostBefore); d > 1e-6*res.CostBefore || -d > 1e-6*res.CostBefore {
		t.Errorf("the regions' extra cost adds up to %g, the graph's to %g", extra, res.CostAfter-res.CostBefore)
	}
	if last := res.Regions[len(res.Regions)-1]; last.PeakAfter != after {
		t.Errorf("the last region reports peak %d, the graph has %d", last.PeakAfter, after)
	}
}

// TestFitDeterministic runs Fit twice on copies of one graph and compares
// the rewritten graphs node by node.
func TestFitDeterministic(t *testing.T) {
	g := stem(t)
	var dumps []string
	for range 2 {
		c := cloneGraph(g)
		if _, err := Fit(c, Options{Memory: ort.Memory(), Budget: peakOf(t, c) / 2, Runtime: &ORT}); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, n := range c.Nodes {
			fmt.Fprintf(&b, "%s %s", n.Name, n.Op)
			for _, v := range n.Inputs {
				if v != nil {
					fmt.Fprintf(&b, " %s%s", v.Name, v.Type)
				}
			}
			for _, a := range n.Attrs {
				fmt.Fprintf(&b, " %s=%v", a.Name, a.Ints)
			}
			b.WriteByte('\n')
		}
		dumps = append(dumps, b.String())
	}
	if dumps[0] != dumps[1] {
		t.Fatal("two runs of Fit on the same graph give different graphs")
	}
}

// TestFitBudgetError: a peak held by a node that reads its input whole
// (here a GlobalAveragePool of a big graph input) cannot be tiled away.
func TestFitBudgetError(t *testing.T) {
	b := newGB(t, 2, 17)
	x := b.input(1, 64, 64, 64)
	b.g.AddOutput(b.op("GlobalAveragePool", []*ir.Value{b.op("Relu", []*ir.Value{x})}))
	g := b.g
	nodes := len(g.Nodes)
	res, err := Fit(g, Options{Memory: ort.Memory(), Budget: 1024, Runtime: &ORT})
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != 1024 || res == nil || len(res.Regions) != 0 {
		t.Fatalf("Fit = %+v, %v; want a BudgetError and no region", res, err)
	}
	if len(g.Nodes) != nodes {
		t.Fatalf("the graph changed: %d nodes, had %d", len(g.Nodes), nodes)
	}
}

func TestFitBadOptions(t *testing.T) {
	g := stem(t)
	for _, o := range []Options{{Budget: -1}, {Axis: -1}, {MaxBands: 1}, {MaxExtra: -0.5}} {
		if _, err := Fit(g, o); err == nil {
			t.Errorf("Fit(%+v) accepted bad options", o)
		}
	}
	if _, err := Fit(g.NewSubgraph("s"), Options{}); err == nil {
		t.Error("Fit accepted a subgraph")
	}
}

// TestPass runs Fit through the pass driver (which verifies the graph
// after the pass) and checks its notes.
func TestPass(t *testing.T) {
	g := stem(t)
	var got *Result
	st, err := passes.Run(context.Background(), g, []*passes.Pass{NewPass(Options{Memory: ort.Memory(), Budget: peakOf(t, g) / 2, Runtime: &ORT}, func(r *Result) { got = r })},
		passes.Options{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || len(got.Regions) == 0 || len(st.Diagnostics) != len(got.Regions) {
		t.Fatalf("result %+v, diagnostics %v", got, st.Diagnostics)
	}
	if !strings.Contains(st.Diagnostics[0].Message, "bands along axis 2") {
		t.Errorf("note %q", st.Diagnostics[0].Message)
	}
}

// TestFitGrid: at the lowest peak Fit can reach (budget 0) on the stem of
// a wide image, whose few rows limit the bands, a grid (bands split again
// along the columns) goes below what bands alone reach, and the grid's
// rewrite gives the untiled graph's outputs bitwise in ONNX Runtime.
func TestFitGrid(t *testing.T) {
	requireORT(t)
	bandsOnly := stemOf(t, 8, 512)
	rb, err := Fit(bandsOnly, Options{Memory: ort.Memory(), Runtime: &ORT, GridAxis: -1})
	if err != nil {
		t.Fatal(err)
	}
	g := stemOf(t, 8, 512)
	orig := cloneGraph(g)
	rg, err := Fit(g, Options{Memory: ort.Memory(), Runtime: &ORT})
	if err != nil {
		t.Fatal(err)
	}
	grids := 0
	for _, r := range rg.Regions {
		if r.Cols > 1 {
			grids++
			if r.GridAxis != 3 || r.Split() != fmt.Sprintf("%d×%d grid", r.Bands, r.Cols) {
				t.Errorf("grid region %+v", r)
			}
		}
	}
	t.Logf("lowest peak: bands only %d bytes (%d regions), with grids %d bytes (%d regions, %d grids)", rb.PeakAfter, len(rb.Regions), rg.PeakAfter, len(rg.Regions), grids)
	if grids == 0 || rg.PeakAfter >= rb.PeakAfter {
		t.Fatalf("grids do not lower the stem's lowest peak: %d with, %d without", rg.PeakAfter, rb.PeakAfter)
	}
	checkTypes(t, g)
	if p := peakOf(t, g); p != rg.PeakAfter {
		t.Errorf("the result says peak %d, the graph has %d", rg.PeakAfter, p)
	}
	runBoth(t, orig, g, "the stem tiled by Fit with grids")
}

// TestMACsTF: the default cost counts TensorFlow convolutions and pools
// by their windows, as it does ONNX's.
func TestMACsTF(t *testing.T) {
	g := ir.NewGraph("tf")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 1, 8, 8, 4))
	node := func(op string, out ir.TensorType, in ...*ir.Value) *ir.Node {
		n := g.NewNode(op, ir.TFDomain, in, []string{op})
		n.Outputs[0].Type = out
		return n
	}
	conv := node("Conv2D", ir.TensorOf(ir.Float32, 1, 8, 8, 6), x, g.AddInput("w", ir.TensorOf(ir.Float32, 3, 3, 4, 6)))
	dwc := node("DepthwiseConv2dNative", ir.TensorOf(ir.Float32, 1, 8, 8, 4), x, g.AddInput("dw", ir.TensorOf(ir.Float32, 5, 5, 4, 1)))
	pool := node("MaxPool", ir.TensorOf(ir.Float32, 1, 4, 4, 4), x)
	pool.SetAttr(ir.IntsAttr("ksize", 1, 2, 2, 1))
	relu := node("Relu", x.Type, x)
	for _, c := range []struct {
		n    *ir.Node
		want float64
	}{{conv, 8 * 8 * 6 * 3 * 3 * 4}, {dwc, 8 * 8 * 4 * 25}, {pool, 4 * 4 * 4 * 4}, {relu, 8 * 8 * 4}} {
		if got := MACs(c.n); got != c.want {
			t.Errorf("MACs(%s) = %g, want %g", c.n.Op, got, c.want)
		}
	}
}

// seTail builds the last stage of a segmentation net that squeezes and
// excites at full resolution (MediaPipe's selfie segmenter ends so): a
// skip s (a conv of the image) and a decoder value c (a conv of an
// upsampled quarter-size value) are summed, a global pool reads the sum
// whole, and s and c are both read again after it. Whatever the order,
// the sum, s and c are live together at the pool unless both of the
// sum's readers, before and after the pool, recompute s and c band by
// band from the image and the quarter-size value.
func seTail(t testing.TB) *ir.Graph {
	b := newGB(t, 5, 17)
	pad1 := [4]int64{1, 1, 1, 1}
	x := b.input(1, 3, 64, 64)
	s := b.op("Relu", []*ir.Value{b.conv(x, 16, 3, 1, 1, pad1, 1)})
	d := b.op("MaxPool", []*ir.Value{s}, ir.IntsAttr("kernel_shape", 2, 2), ir.IntsAttr("strides", 2, 2))
	d = b.op("Relu", []*ir.Value{b.conv(d, 16, 3, 1, 1, pad1, 1)})
	scales := b.g.AddParam(b.name("scales"), ir.TensorOf(ir.Float32, 4), ir.Float32Tensor([]int64{4}, 1, 1, 2, 2))
	u := b.op("Resize", []*ir.Value{d, nil, scales}, ir.StringAttr("mode", "nearest"),
		ir.StringAttr("coordinate_transformation_mode", "asymmetric"), ir.StringAttr("nearest_mode", "floor"))
	c := b.conv(u, 16, 3, 1, 1, pad1, 1)
	sum := b.op("Add", []*ir.Value{s, c})
	v := b.op("Sigmoid", []*ir.Value{b.conv(b.op("GlobalAveragePool", []*ir.Value{sum}), 16, 1, 1, 1, [4]int64{}, 1)})
	y := b.op("Add", []*ir.Value{b.op("Mul", []*ir.Value{s, v}), c})
	y = b.conv(b.op("Relu", []*ir.Value{b.conv(y, 16, 3, 1, 1, pad1, 1)}), 1, 3, 1, 1, pad1, 1)
	b.g.AddOutput(y)
	return b.g
}

// TestFitRecomputesSkipsAroundGlobalPool fits seTail in its own order
// below the three full-resolution values the pool's step holds: no single
// region lowers that step (a region recomputing the skips for one of
// their readers leaves the originals held for the other), so Fit needs
// its pairs of closures and the move past them. The rewrite must keep
// its types, reach the budget and compute the same outputs in ONNX
// Runtime at level disabled. (Without Runtime rules: under ORT's layout
// optimizer the pool read from a Concat would change layout, and the
// ORT rules refuse the region that does that; TensorFlow.js has no such
// rule, and selfie fits so in cmd's tests.)
func TestFitRecomputesSkipsAroundGlobalPool(t *testing.T) {
	g := seTail(t)
	orig := cloneGraph(g)
	mem := memory.Options{}
	peak := func(g *ir.Graph) int64 {
		r, err := memory.Simulate(g, g.Nodes, mem)
		if err != nil {
			t.Fatal(err)
		}
		return r.PeakBytes
	}
	before := peak(g)
	const full = 16 * 64 * 64 * 4 // one full-resolution value
	budget := before - full/2
	if before < 3*full {
		t.Fatalf("the pool's step holds %d B, want at least three full-resolution values (%d B)", before, 3*full)
	}
	res, err := Fit(g, Options{Memory: mem, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	checkTypes(t, g)
	if after := peak(g); after > budget || after != res.PeakAfter {
		t.Fatalf("peak %d → %d (result says %d), budget %d", before, after, res.PeakAfter, budget)
	}
	kept := 0
	for _, r := range res.Regions {
		kept += len(r.Kept)
	}
	if kept == 0 {
		t.Errorf("no region recomputes a skip for its readers (%d regions)", len(res.Regions))
	}
	t.Logf("peak %d → %d B, %d regions, +%.1f%% compute", before, res.PeakAfter, len(res.Regions), 100*(res.CostAfter-res.CostBefore)/res.CostBefore)
	if testing.Short() {
		return
	}
	requireORT(t)
	if !sameInORT(t, orig, g, "disabled") {
		t.Error("the fitted graph's outputs differ at level disabled")
	}
}

// TestFitPlateau tiles a graph whose peak two steps share: two blocks of
// two convolutions with the same working set (16 channels at 48×48, 64
// at 24×24), pooled, separated by a Transpose, which ends a region. No
// one region lowers the peak; Fit first takes a region that leaves the
// peak where it was but lowers the bytes above the budget (a plateau
// move), then the other block.
func TestFitPlateau(t *testing.T) {
	b := newGB(t, 3, 17)
	pads := [4]int64{1, 1, 1, 1}
	block := func(x *ir.Value, c int64) *ir.Value {
		y := b.op("Relu", []*ir.Value{b.conv(x, c, 3, 1, 1, pads, 1)})
		y = b.conv(y, c, 3, 1, 1, pads, 1)
		return b.op("MaxPool", []*ir.Value{y}, ir.IntsAttr("kernel_shape", 2, 2), ir.IntsAttr("strides", 2, 2))
	}
	x := b.input(1, 16, 48, 48)
	y := b.op("Transpose", []*ir.Value{block(x, 16)}, ir.IntsAttr("perm", 0, 1, 3, 2))
	b.g.AddOutput(block(y, 64))
	g := b.g
	mem := memory.Options{}
	before, err := memory.Simulate(g, g.Nodes, mem)
	if err != nil {
		t.Fatal(err)
	}
	budget := before.PeakBytes * 3 / 4
	res, err := Fit(g, Options{Memory: mem, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Regions) < 2 || res.Regions[0].PeakAfter != res.Regions[0].PeakBefore {
		t.Fatalf("regions %+v: want a first region that leaves the peak (%d) where it was, then another", res.Regions, before.PeakBytes)
	}
	if res.PeakAfter > budget {
		t.Fatalf("peak %d → %d, budget %d", before.PeakBytes, res.PeakAfter, budget)
	}
	checkTypes(t, g)
}

// TestFitTriesOtherBandCounts: when no candidate lowers the peak at the
// screen's band counts, Fit tries the others before giving up. With the
// screen at 16 bands, which an 8-row image cannot take, only that
// fallback reaches the budget.
func TestFitTriesOtherBandCounts(t *testing.T) {
	b := newGB(t, 5, 17)
	x := b.op("Relu", []*ir.Value{b.input(1, 16, 8, 64)})
	y := b.op("Relu", []*ir.Value{b.conv(x, 32, 3, 1, 1, [4]int64{1, 1, 1, 1}, 1)})
	b.g.AddOutput(b.op("MaxPool", []*ir.Value{b.conv(y, 16, 3, 1, 1, [4]int64{1, 1, 1, 1}, 1)},
		ir.IntsAttr("kernel_shape", 8, 64)))
	g := b.g
	saved := screenBands
	defer func() { screenBands = saved }()
	screenBands = []int{16}
	mem := ort.Memory()
	before := ortPeak(t, g)
	budget := before * 9 / 10
	res, err := Fit(g, Options{Memory: mem, Budget: budget, Order: ortOrder, Runtime: &ORT})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Regions) == 0 || res.Regions[0].Bands >= 16 {
		t.Fatalf("regions %+v", res.Regions)
	}
	t.Logf("peak %d → %d B in %s", before, res.PeakAfter, res.Regions[0].Split())
}
