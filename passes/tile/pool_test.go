package tile

import (
	"bytes"
	"errors"
	"testing"

	"github.com/remat-compile/remat/ir"
	ortt "github.com/remat-compile/remat/targets/ort"
)

// seBlock builds an image through a squeeze-and-excitation block as
// PP-OCR's RSE-FPN has it: x = Conv(in); out = x + x·HardSigmoid(Conv(
// Relu(Conv(GlobalAveragePool(x))))), then a 3×3 Conv. It returns the
// builder and x.
func seBlock(t *testing.T, cin, c, hw int64) (*gb, *ir.Value) {
	b := newGB(t, 3, 17)
	in := b.op("Relu", []*ir.Value{b.input(1, cin, hw, hw)})
	x := b.conv(in, c, 1, 1, 1, [4]int64{}, 1)
	s := b.op("GlobalAveragePool", []*ir.Value{x})
	s = b.op("Relu", []*ir.Value{b.conv(s, c/4, 1, 1, 1, [4]int64{}, 1)})
	s = b.op("HardSigmoid", []*ir.Value{b.conv(s, c, 1, 1, 1, [4]int64{}, 1)})
	out := b.op("Add", []*ir.Value{x, b.op("Mul", []*ir.Value{x, s})})
	b.g.AddOutput(b.conv(out, 8, 3, 1, 1, [4]int64{1, 1, 1, 1}, 1))
	return b, x
}

func TestPoolGroups(t *testing.T) {
	// In the SE block x has three readers: nothing to split.
	b, x := seBlock(t, 8, 48, 12)
	if poolGroups(b.g, x, 16) != nil {
		t.Fatal("split a convolution that more than the pool reads")
	}
	// A Conv that only the pool reads, as Split.Keep leaves it.
	g2 := ir.NewGraph("se")
	g2.Opsets = b.g.Opsets
	in := g2.AddInput("in", ir.TensorOf(ir.Float32, 1, 8, 12, 12))
	w := g2.AddParam("w", ir.TensorOf(ir.Float32, 48, 8, 3, 3), ir.Float32Tensor([]int64{48, 8, 3, 3}, make([]float32, 48*8*9)...))
	for i := range w.Data.Raw {
		w.Data.Raw[i] = byte(i * 7)
	}
	bias := g2.AddParam("bias", ir.TensorOf(ir.Float32, 48), ir.Float32Tensor([]int64{48}, make([]float32, 48)...))
	c := g2.NewNode("Conv", "", []*ir.Value{in, w, bias}, []string{"x"})
	c.Name = "conv"
	c.SetAttr(ir.IntsAttr("kernel_shape", 3, 3))
	c.SetAttr(ir.IntsAttr("pads", 1, 1, 1, 1))
	c.Outputs[0].Type = ir.TensorOf(ir.Float32, 1, 48, 12, 12)
	p := g2.NewNode("GlobalAveragePool", "", []*ir.Value{c.Outputs[0]}, []string{"s"})
	p.Name = "pool"
	p.Outputs[0].Type = ir.TensorOf(ir.Float32, 1, 48, 1, 1)
	r := g2.NewNode("Relu", "", []*ir.Value{p.Outputs[0]}, []string{"out"})
	r.Outputs[0].Type = p.Outputs[0].Type.Clone()
	g2.AddOutput(r.Outputs[0])

	for _, size := range []int64{0, 48, 64, 20} {
		if poolGroups(g2, c.Outputs[0], size) != nil {
			t.Fatalf("split 48 channels into groups of %d", size)
		}
	}
	added := poolGroups(g2, c.Outputs[0], 16)
	if len(added) != 7 {
		t.Fatalf("added %d nodes, want 3 convolutions, 3 pools and a Concat", len(added))
	}
	if err := ir.Verify(g2); err != nil {
		t.Fatal(err)
	}
	checkTypes(t, g2)
	for _, n := range g2.Nodes {
		if n == c || n == p {
			t.Fatalf("%s is still in the graph", n.Name)
		}
	}
	if r.Inputs[0].Def.Op != "Concat" {
		t.Fatalf("the pool's reader reads %s", r.Inputs[0].Def.Op)
	}
	per := int64(8 * 9 * 4)
	for k := int64(0); k < 3; k++ {
		gc := added[2*k]
		if gc.Op != "Conv" || gc.Inputs[0] != in {
			t.Fatalf("node %d is %s reading %s", 2*k, gc.Op, gc.Inputs[0])
		}
		got := gc.Inputs[1].Data
		if !bytes.Equal(got.Raw, w.Data.Raw[16*k*per:16*(k+1)*per]) || got.Shape[0] != 16 {
			t.Fatalf("group %d's weights are not rows %d… of the Conv's", k, 16*k)
		}
	}
}

// TestFitPoolsInGroups: under ONNX Runtime's rules, Fit bands the SE
// block's tail and computes the convolution that only the pool still
// reads in 16-channel groups; the whole convolution output never exists,
// and ORT computes the same bits at levels disabled and all.
func TestFitPoolsInGroups(t *testing.T) {
	b, _ := seBlock(t, 16, 64, 48)
	g := b.g
	orig := cloneGraph(g)
	mem := ortt.Memory()
	before := ortPeak(t, g)
	// The lowest peak without channel groups, and a budget below it.
	noPool := ORT
	noPool.PoolGroup = 0
	plain, err := Fit(cloneGraph(g), Options{Memory: mem, Budget: 1, Order: ortOrder, Runtime: &noPool})
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("Fit without channel groups: %v", err)
	}
	budget := plain.PeakAfter - 1
	res, err := Fit(g, Options{Memory: mem, Budget: budget, Order: ortOrder, Runtime: &ORT})
	if err != nil {
		t.Fatal(err)
	}
	var pooled []string
	for _, r := range res.Regions {
		pooled = append(pooled, r.Pooled...)
	}
	if len(pooled) == 0 {
		t.Fatalf("no value pooled in groups; regions %+v", res.Regions)
	}
	checkTypes(t, g)
	if res.PeakAfter > budget {
		t.Fatalf("peak %d, budget %d", res.PeakAfter, budget)
	}
	t.Logf("peak %d → %d B (%d without channel groups), pooled in groups: %v", before, res.PeakAfter, plain.PeakAfter, pooled)
	if testing.Short() {
		return
	}
	requireORT(t)
	runBoth(t, orig, g, "SE block pooled in groups")
}
