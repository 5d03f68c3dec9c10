package testmodels

import (
	"path/filepath"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
)

// SEGraph builds an image through a squeeze-and-excitation block as
// PP-OCR's RSE-FPN has it: from x [1,16,48,48], a = Relu(x), c = Conv1×1(a)
// with 64 channels, s = HardSigmoid(Conv(Relu(Conv(GlobalAveragePool(c)))))
// (16 then 64 channels), y = Conv3×3(c + c·s) with 8 channels.
func SEGraph() *ir.Graph {
	g := ir.NewGraph("se")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	param, node := paramMaker(g), nodeMaker(g)
	img := func(c, hw int64) ir.TensorType { return ir.TensorOf(ir.Float32, 1, c, hw, hw) }
	x := g.AddInput("x", img(16, 48))
	a := node("Relu", "in_relu", []*ir.Value{x}, "a", img(16, 48))
	c := node("Conv", "se_conv", []*ir.Value{a, param("se_conv.weight", []int64{64, 16, 1, 1}, 0.4), param("se_conv.bias", []int64{64}, 0.1)}, "c", img(64, 48),
		ir.IntsAttr("kernel_shape", 1, 1))
	s := node("GlobalAveragePool", "se_pool", []*ir.Value{c}, "pooled", img(64, 1))
	s = node("Conv", "se_squeeze", []*ir.Value{s, param("se_squeeze.weight", []int64{16, 64, 1, 1}, 0.4), param("se_squeeze.bias", []int64{16}, 0.1)}, "squeezed", img(16, 1),
		ir.IntsAttr("kernel_shape", 1, 1))
	s = node("Relu", "se_relu", []*ir.Value{s}, "squeezed_relu", img(16, 1))
	s = node("Conv", "se_excite", []*ir.Value{s, param("se_excite.weight", []int64{64, 16, 1, 1}, 0.4), param("se_excite.bias", []int64{64}, 0.1)}, "excited", img(64, 1),
		ir.IntsAttr("kernel_shape", 1, 1))
	s = node("HardSigmoid", "se_gate", []*ir.Value{s}, "gate", img(64, 1))
	m := node("Mul", "se_mul", []*ir.Value{c, s}, "scaled", img(64, 48))
	r := node("Add", "se_add", []*ir.Value{c, m}, "se_out", img(64, 48))
	y := node("Conv", "out_conv", []*ir.Value{r, param("out.weight", []int64{8, 64, 3, 3}, 0.2), param("out.bias", []int64{8}, 0.1)}, "y", img(8, 48),
		ir.IntsAttr("kernel_shape", 3, 3), ir.IntsAttr("pads", 1, 1, 1, 1))
	g.AddOutput(y)
	return g
}

// WriteSE writes SEGraph to dir/name.onnx and returns the path.
func WriteSE(dir, name string) (string, error) {
	p := filepath.Join(dir, name+".onnx")
	return p, onnxexp.ExportFile(SEGraph(), p, onnxexp.Options{})
}
