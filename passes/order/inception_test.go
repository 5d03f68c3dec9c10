package order

import (
	"context"
	"fmt"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/shapes"
	ortt "github.com/remat-compile/remat/targets/ort"
)

// inception builds modules inception-style modules on float32
// [1,4c,side,side]: each has four branches, branch b a 1×1 Conv expanding
// to e_b channels, a Relu and a 1×1 Conv projecting to c channels, joined
// by a Concat. The branches differ in width (e = 2c, 8c, c, 4c), and the
// file lists the nodes breadth first, level by level across the branches,
// as a breadth-first exporter writes them: the file order holds every
// expansion at once. ONNX Runtime's order (a depth-first search from the
// Concat into the producer of highest index first) runs the branches one
// by one in reverse, which is not the best order of the branches either.
func inception(t testing.TB, modules, c, side int) *ir.Graph {
	t.Helper()
	g := ir.NewGraph(fmt.Sprintf("inception%d", modules))
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	in := int64(4 * c)
	x := g.AddInput("input", ir.TensorOf(ir.Float32, 1, in, int64(side), int64(side)))
	conv := func(name string, x *ir.Value, cin, cout int64) *ir.Node {
		w := g.AddParam(name+".weight", ir.TensorOf(ir.Float32, cout, cin, 1, 1), ir.Float32Tensor([]int64{cout, cin, 1, 1}, make([]float32, cout*cin)...))
		n := g.CreateNode("Conv", "", []*ir.Value{x, w}, []string{name})
		n.Name = name
		n.SetAttr(ir.IntsAttr("kernel_shape", 1, 1))
		return n
	}
	for m := 0; m < modules; m++ {
		var levels [3][]*ir.Node
		var outs []*ir.Value
		for b := 0; b < 4; b++ {
			p := fmt.Sprintf("m%d.b%d.", m, b)
			e := int64(c) * []int64{2, 8, 1, 4}[b]
			expand := conv(p+"expand", x, in, e)
			relu := g.CreateNode("Relu", "", []*ir.Value{expand.Outputs[0]}, []string{p + "relu"})
			relu.Name = p + "relu"
			project := conv(p+"project", relu.Outputs[0], e, int64(c))
			levels[0] = append(levels[0], expand)
			levels[1] = append(levels[1], relu)
			levels[2] = append(levels[2], project)
			outs = append(outs, project.Outputs[0])
		}
		for _, l := range levels {
			for _, n := range l {
				g.Insert(len(g.Nodes), n)
			}
		}
		cat := g.NewNode("Concat", "", outs, []string{fmt.Sprintf("m%d.concat", m)})
		cat.Name = fmt.Sprintf("m%d.concat", m)
		cat.SetAttr(ir.IntAttr("axis", 1))
		x = cat.Outputs[0]
	}
	g.AddOutput(x)
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	return g
}

// ortPeak is the peak under mem of the order ONNX Runtime runs g in
// (targets/ort Schedule, with what the exporter's helper nodes hold).
func ortPeak(t testing.TB, g *ir.Graph, mem memory.Options) int64 {
	t.Helper()
	run, err := ortt.Schedule(g, onnxexp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem.Holds = func(n *ir.Node) []*ir.Value { return run.Holds[n] }
	return peakOf(t, g, run.Seq, mem)
}

const kib = 1024

// TestInception: the synthetic inception DAG, where the file order is bad
// and ONNX Runtime's own order is not the best either.
func TestInception(t *testing.T) {
	g := inception(t, 3, 16, 32)
	for _, tc := range []struct {
		name string
		mem  memory.Options
	}{{"ort", ortt.Memory()}, {"liveness", memory.Options{}}} {
		r, err := Best(context.Background(), g, tc.mem, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ort := ortPeak(t, g, tc.mem)
		t.Logf("%s under %s: file order %d KiB, ONNX Runtime's order %d KiB, chosen %d KiB (optimal under the downset objective: %v, %d KiB; %d segments, %d states, %d simulations)",
			g.Name, tc.name, r.FilePeak/kib, ort/kib, r.Peak/kib, r.Optimal, r.Optimum/kib, r.Segments, r.States, r.Evals)
		if !r.Optimal {
			t.Errorf("%s: the exact search did not finish on a graph of %d nodes", tc.name, len(g.Nodes))
		}
		// Module inputs are 64 channels (256 KiB), the branch outputs 16
		// (64 KiB), the expansions 32, 128, 16 and 64 (128, 512, 64 and
		// 256 KiB).
		if r.Peak*100 > r.FilePeak*85 || r.Peak >= ort {
			t.Errorf("%s: chosen peak %d is not 15%% below the file order's %d and below ONNX Runtime's %d", tc.name, r.Peak, r.FilePeak, ort)
		}
		checkOrder(t, g, r.Seq)
	}
}

// TestGoogLeNet compares the chosen order of the zoo GoogLeNet (224×224,
// batch 1) with the file order and ONNX Runtime's order under ortt.Memory()
// and under plain liveness.
func TestGoogLeNet(t *testing.T) {
	m, _ := zoo.Lookup("googlenet")
	g, err := m.Build(m.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	run, err := ortt.Schedule(g, onnxexp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mem  memory.Options
	}{{"ort", ortt.Memory()}, {"liveness", memory.Options{}}} {
		mem := tc.mem
		r, err := Best(context.Background(), g, mem, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ortMem := mem
		ortMem.Holds = func(n *ir.Node) []*ir.Value { return run.Holds[n] }
		// The stem (conv1 to pool2) is a chain that every order runs the same
		// way, and it holds the peak (norm2, an LRN with its workspace); the
		// inception modules after it are where the orders differ.
		modules := func(seq []*ir.Node, mem memory.Options) (peak, rest int64) {
			res, err := memory.Simulate(g, seq, mem)
			if err != nil {
				t.Fatal(err)
			}
			after := false
			for i, n := range seq {
				if after {
					rest = max(rest, res.During[i])
				}
				after = after || n.Name == "pool2"
			}
			return res.PeakBytes, rest
		}
		filePeak, fileRest := modules(g.Nodes, mem)
		ortPeak, ortRest := modules(run.Seq, ortMem)
		peak, rest := modules(r.Seq, mem)
		t.Logf("googlenet under %s, peak (peak after the stem): file order %d KiB (%d KiB), ONNX Runtime's order %d KiB (%d KiB), chosen %d KiB (%d KiB); downset objective: chosen %d KiB, optimum %d KiB (proved: %v; %d segments, %d states, %d simulations, %d moves kept)", tc.name,
			filePeak/kib, fileRest/kib, ortPeak/kib, ortRest/kib, peak/kib, rest/kib, r.Bound/kib, r.Optimum/kib, r.Optimal, r.Segments, r.States, r.Evals, r.Moves)
		if peak != r.Peak || filePeak != r.FilePeak {
			t.Errorf("peaks %d and %d, Best says %d and %d", peak, filePeak, r.Peak, r.FilePeak)
		}
		if r.Peak > r.FilePeak || r.Peak > ortPeak || rest > fileRest || rest > ortRest {
			t.Errorf("chosen peak %d (%d after the stem) above the file order's %d (%d) or ONNX Runtime's %d (%d)", r.Peak, rest, r.FilePeak, fileRest, ortPeak, ortRest)
		}
		checkOrder(t, g, r.Seq)
	}
}
