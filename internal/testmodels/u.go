// Package testmodels builds the small models that several packages' tests
// share: the U-shaped model of the research note ort-execution.md in the
// variants verify's tests run. It is for tests only.
package testmodels

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/ir"
)

// UVariant selects how UGraph builds the U-Net-like model U of the research
// note (ort-execution.md): four 1×1 Conv+Relu encoder blocks e1, e2, e3, b,
// decoder blocks d3 = B(b+e3), d2 = B(d3+e2), d1 = B(d2+e1), then
// y = Conv(d1); every activation is [1,16,64,64] float32 (256 KiB).
type UVariant struct {
	// Remat recomputes e1 and e2 (two Conv+Relu pairs, "_rc1" names) right
	// before dec2_add, so that e1 and e2 are not live across the decoder.
	Remat bool
	// Dep adds the depreshape fake dependency on d3 (research note, Q4):
	// without it ORT hoists the chain at "disabled" and merges it (CSE)
	// from "basic" up.
	Dep bool
	// Meta writes the remat-compile.recompute metadata; MetaJSON, when
	// set, is written as its value instead.
	Meta     bool
	MetaJSON string
	// Perturb changes one weight of the final conv.
	Perturb bool
	// ExtraOutput adds d2 as a second graph output.
	ExtraOutput bool
}

// UShape is the shape of every activation of U.
var UShape = []int64{1, 16, 64, 64}

// UChannels is U's channel count and UTensor the bytes of one activation.
const (
	UChannels = 16
	UTensor   = 1 * 16 * 64 * 64 * 4 // bytes of one activation
)

// UMetadata is the plan of the remat variant: ORT's 5 live activations at
// dec3_add become 4.
func UMetadata() onnxexp.RematMetadata {
	return onnxexp.RematMetadata{
		Version: 1, Solver: "hand", BudgetBytes: 4 * UTensor,
		PredictedPeakBytes: 4 * UTensor, OriginalPeakBytes: 5 * UTensor,
		Recompute: []onnxexp.RecomputeEntry{
			{Node: "enc1_conv_rc1", Original: "enc1_conv", Outputs: []string{"enc1_c_rc1"}, After: "dec3_relu", Before: "enc1_relu_rc1"},
			{Node: "enc1_relu_rc1", Original: "enc1_relu", Outputs: []string{"e1_rc1"}, After: "dec3_relu", Before: "enc2_conv_rc1"},
			{Node: "enc2_conv_rc1", Original: "enc2_conv", Outputs: []string{"enc2_c_rc1"}, After: "dec3_relu", Before: "enc2_relu_rc1"},
			{Node: "enc2_relu_rc1", Original: "enc2_relu", Outputs: []string{"e2_rc1"}, After: "dec3_relu", Before: "dec2_add"},
		},
	}
}

// UGraph builds the model U in the given variant.
func UGraph(v UVariant) *ir.Graph {
	g := ir.NewGraph("u")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	act := ir.TensorOf(ir.Float32, UShape...)
	x := g.AddInput("x", act)
	param := paramMaker(g)
	node := nodeMaker(g)
	// block is Conv1x1+Relu; a recomputation reads the very same weights.
	weights := map[string][2]*ir.Value{}
	block := func(p, suffix string, in *ir.Value, out string) *ir.Value {
		w, ok := weights[p]
		if !ok {
			w = [2]*ir.Value{param(p+".weight", []int64{UChannels, UChannels, 1, 1}, 0.4), param(p+".bias", []int64{UChannels}, 0.1)}
			weights[p] = w
		}
		c := node("Conv", p+"_conv"+suffix, []*ir.Value{in, w[0], w[1]}, p+"_c"+suffix, act, ir.IntsAttr("kernel_shape", 1, 1))
		return node("Relu", p+"_relu"+suffix, []*ir.Value{c}, out+suffix, act)
	}
	e1 := block("enc1", "", x, "e1")
	e2 := block("enc2", "", e1, "e2")
	e3 := block("enc3", "", e2, "e3")
	b := block("bott", "", e3, "b")
	s3 := node("Add", "dec3_add", []*ir.Value{b, e3}, "s3", act)
	d3 := block("dec3", "", s3, "d3")
	if v.Remat {
		in := x
		if v.Dep {
			// x_rc1 = Reshape(x, Concat([1,16,64,64],
			//                 Cast(Slice(Reshape(d3, [-1]), [0], [0]))))
			i64 := func(n int64) ir.TensorType { return ir.TensorOf(ir.Int64, n) }
			flat := node("Reshape", "dep_rc1_flat", []*ir.Value{d3, g.AddParam("dep_rc1_minus1", i64(1), ir.Int64Tensor([]int64{1}, -1))}, "d3_rc1_flat", ir.TensorOf(ir.Float32, UTensor/4))
			zero := g.AddParam("dep_rc1_zero", i64(1), ir.Int64Tensor([]int64{1}, 0))
			empty := node("Slice", "dep_rc1_slice", []*ir.Value{flat, zero, zero}, "d3_rc1_empty", ir.TensorOf(ir.Float32, 0))
			cast := node("Cast", "dep_rc1_cast", []*ir.Value{empty}, "d3_rc1_empty_i64", ir.TensorOf(ir.Int64, 0), ir.IntAttr("to", 7))
			shape := g.AddParam("dep_rc1_shape", i64(4), ir.Int64Tensor([]int64{4}, UShape...))
			s := node("Concat", "dep_rc1_concat", []*ir.Value{shape, cast}, "x_rc1_shape", i64(4), ir.IntAttr("axis", 0))
			in = node("Reshape", "dep_rc1_reshape", []*ir.Value{x, s}, "x_rc1", act)
		}
		e1 = block("enc1", "_rc1", in, "e1")
		e2 = block("enc2", "_rc1", e1, "e2")
	}
	s2 := node("Add", "dec2_add", []*ir.Value{d3, e2}, "s2", act)
	d2 := block("dec2", "", s2, "d2")
	s1 := node("Add", "dec1_add", []*ir.Value{d2, e1}, "s1", act)
	d1 := block("dec1", "", s1, "d1")
	w := param("out.weight", []int64{UChannels, UChannels, 1, 1}, 0.4)
	if v.Perturb {
		raw := w.Data.Raw
		f := math.Float32frombits(binary.LittleEndian.Uint32(raw))
		binary.LittleEndian.PutUint32(raw, math.Float32bits(f+0.25))
	}
	y := node("Conv", "out_conv", []*ir.Value{d1, w, param("out.bias", []int64{UChannels}, 0.1)}, "y", act, ir.IntsAttr("kernel_shape", 1, 1))
	g.AddOutput(y)
	if v.ExtraOutput {
		g.AddOutput(d2)
	}
	meta := v.MetaJSON
	if v.Meta && meta == "" {
		js, _ := json.Marshal(UMetadata()) // plain data: cannot fail
		meta = string(js)
	}
	if meta != "" {
		g.Ext = &onnximp.ModelInfo{ProducerName: "remat-compile verify test", MetadataProps: []onnximp.Prop{{Key: onnxexp.RematMetadataKey, Value: meta}}}
	}
	return g
}

// WriteU writes the variant to dir/name.onnx and returns the path.
func WriteU(dir, name string, v UVariant) (string, error) {
	p := filepath.Join(dir, name+".onnx")
	return p, onnxexp.ExportFile(UGraph(v), p, onnxexp.Options{})
}

// paramMaker returns a function adding float32 parameters of g with
// deterministic values in [-scale, scale), the same sequence for every g.
func paramMaker(g *ir.Graph) func(name string, shape []int64, scale float32) *ir.Value {
	seed := uint64(1)
	return func(name string, shape []int64, scale float32) *ir.Value {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		raw := make([]byte, 4*n)
		for i := range n {
			seed = seed*6364136223846793005 + 1442695040888963407
			f := (float32(seed>>40)/(1<<24)*2 - 1) * scale
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
		}
		return g.AddParam(name, ir.TensorOf(ir.Float32, shape...), &ir.Tensor{Name: name, DType: ir.Float32, Shape: shape, Raw: raw})
	}
}

// nodeMaker returns a function adding a node of g with one output of type
// typ.
func nodeMaker(g *ir.Graph) func(op, name string, in []*ir.Value, out string, typ ir.TensorType, attrs ...ir.Attr) *ir.Value {
	return func(op, name string, in []*ir.Value, out string, typ ir.TensorType, attrs ...ir.Attr) *ir.Value {
		n := g.NewNode(op, "", in, []string{out})
		n.Name = name
		for _, a := range attrs {
			n.SetAttr(a)
		}
		n.Outputs[0].Type = typ
		return n.Outputs[0]
	}
}
