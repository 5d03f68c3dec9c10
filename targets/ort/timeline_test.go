package ort

import (
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/targets"
)

// TestTimelineLeavesOutConstants checks that a Constant node, which ORT
// folds into an initializer, is no step of the timeline, and that the
// timeline's peak is the placement's.
func TestTimelineLeavesOutConstants(t *testing.T) {
	g := ir.NewGraph("c")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	f32 := ir.TensorOf(ir.Float32, 1, 16, 64, 64)
	x := g.AddInput("x", f32)
	k := g.NewNode("Constant", "", nil, []string{"k"})
	k.Name = "k"
	k.Outputs[0].Type = f32
	k.Attrs = append(k.Attrs, ir.Attr{Name: "value", Kind: ir.AttrTensor, Tensor: ir.Float32Tensor([]int64{1, 16, 64, 64}, make([]float32, 16*64*64)...)})
	a := g.NewNode("Add", "", []*ir.Value{x, k.Outputs[0]}, []string{"a"})
	a.Name, a.Outputs[0].Type = "a", f32
	r := g.NewNode("Relu", "", []*ir.Value{a.Outputs[0]}, []string{"r"})
	r.Name, r.Outputs[0].Type = "r", f32
	g.AddOutput(r.Outputs[0])
	pl, err := Target{}.Original(g, false)
	if err != nil {
		t.Fatal(err)
	}
	sim, steps, err := Target{}.Timeline(g, nil, pl.Writing)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range steps {
		names = append(names, n.Name)
	}
	if len(steps) != 2 || names[0] != "a" || names[1] != "r" || len(sim.During) != 2 {
		t.Errorf("timeline steps %v (%d During), want a, r", names, len(sim.During))
	}
	if sim.PeakBytes != pl.PeakBytes || sim.PeakStep < 0 || sim.During[sim.PeakStep] != sim.PeakBytes {
		t.Errorf("timeline peak %d at step %d, placement %d", sim.PeakBytes, sim.PeakStep, pl.PeakBytes)
	}
	var _ targets.Timeliner = Target{}
}
