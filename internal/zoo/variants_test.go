package zoo

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// typed builds a small float32 graph with every type given.
type typed struct{ g *ir.Graph }

func newTyped() (*typed, *ir.Value) {
	g := ir.NewGraph("t")
	g.Opsets = []ir.Opset{{Version: 17}}
	return &typed{g}, g.AddInput("x", ir.TensorOf(ir.Float32, 1, 2, 4, 4))
}

func (b *typed) param(name string, vals []float32, shape ...int64) *ir.Value {
	return b.g.AddParam(name, ir.TensorOf(ir.Float32, shape...), ir.Float32Tensor(shape, vals...))
}

func (b *typed) op(op, name string, t ir.TensorType, in ...*ir.Value) *ir.Value {
	n := b.g.NewNode(op, "", in, []string{name})
	n.Name = name
	n.Outputs[0].Type = t
	return n.Outputs[0]
}

func f32s(n int, f func(i int) float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

// summary lists the nodes as "name:op" and each Cast's target type.
func summary(g *ir.Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		s := n.Name + ":" + n.Op
		if n.Op == "Cast" {
			s += ">" + dtypeOf(n.AttrInt("to", 0)).String()
		}
		out = append(out, s)
	}
	return out
}

// reinfer checks that shape inference agrees with the types the
// conversion gave.
func reinfer(t *testing.T, g *ir.Graph) {
	t.Helper()
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	var before []ir.TensorType
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			before = append(before, o.Type.Clone())
		}
	}
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true}); err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if !o.Type.Equal(before[k]) {
				t.Errorf("%s: the conversion gave %v, shape inference %v", o.Name, before[k], o.Type)
			}
			k++
		}
	}
}

func TestFloat16(t *testing.T) {
	// x → conv0 → relu → Resize (blocked) → Max (blocked) → conv1 → output,
	// and a Resize that reads x directly.
	b, x := newTyped()
	t4 := ir.TensorOf(ir.Float32, 1, 2, 4, 4)
	t8 := ir.TensorOf(ir.Float32, 1, 2, 8, 8)
	w := b.param("w", f32s(36, func(i int) float32 { return float32(i) - 17.5 }), 2, 2, 3, 3)
	tiny := b.param("tiny", []float32{1e-9, -1e-9, 0, 3e4}, 2, 2, 1, 1)
	scales := b.param("scales", []float32{1, 1, 2, 2}, 4)
	c0 := b.op("Conv", "conv0", t4, x, w)
	c0.Def.SetAttr(ir.IntsAttr("pads", 1, 1, 1, 1))
	r := b.op("Relu", "relu", t4, c0)
	up := b.op("Resize", "resize", t8, r, nil, scales)
	upx := b.op("Resize", "resize_x", t8, x, nil, scales)
	m := b.op("Max", "max", t8, up, upx)
	b.g.AddOutput(b.op("Conv", "conv1", t8, m, tiny))
	if err := Float16(b.g, Float16Options{KeepIOTypes: true}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"x_cast_to_conv0:Cast>f16", "conv0:Conv", "relu:Relu", "resize_input_cast0:Cast>f32", "resize:Resize",
		"resize_x:Resize", "max:Max", "max_output_cast0:Cast>f16", "conv1:Conv", "conv1_cast_to_conv1:Cast>f32",
	}
	if got := summary(b.g); !slices.Equal(got, want) {
		t.Errorf("nodes\n got %v\nwant %v", got, want)
	}
	// The Resize reading x reads it directly (x's Cast to float16 for it
	// and its island's Cast back cancelled); so does Max read the Resizes
	// (resize's output Cast and max's input Casts cancelled).
	for _, n := range b.g.Nodes {
		switch n.Name {
		case "resize_x":
			if n.Inputs[0] != x {
				t.Errorf("resize_x reads %s, want x", n.Inputs[0].Name)
			}
		case "max":
			if n.Inputs[0].Name != "resize_output_cast_0" || n.Inputs[1].Name != "resize_x_output_cast_0" {
				t.Errorf("max reads %s, %s", n.Inputs[0].Name, n.Inputs[1].Name)
			}
		}
	}
	if w.Type.DType != ir.Float16 || tiny.Type.DType != ir.Float16 || scales.Type.DType != ir.Float32 {
		t.Errorf("parameter types w %v, tiny %v, scales %v; want f16, f16, f32 (scales is read by blocked nodes)", w.Type.DType, tiny.Type.DType, scales.Type.DType)
	}
	half := func(v *ir.Value, i int) float32 {
		return ir.HalfToFloat32(binary.LittleEndian.Uint16(v.Data.Raw[2*i:]))
	}
	if got := []float32{half(tiny, 0), half(tiny, 1), half(tiny, 2), half(tiny, 3)}; got[0] != ir.HalfToFloat32(ir.Float32ToHalf(1e-7)) ||
		got[1] != -got[0] || got[2] != 0 || got[3] != 1e4 {
		t.Errorf("clamped values %v, want ±1e-7 (as float16), 0, 1e4", got)
	}
	if half(w, 0) != -17.5 {
		t.Errorf("w[0] = %v, want -17.5", half(w, 0))
	}
	if out := b.g.Outputs[0]; out.Name != "conv1" || out.Type.DType != ir.Float32 || out.Def.Name != "conv1_cast_to_conv1" {
		t.Errorf("graph output %v written by %q, want conv1 (f32) written by conv1_cast_to_conv1", out, out.Def.Name)
	}
	reinfer(t, b.g)
}

func TestFloat16NeedsTypes(t *testing.T) {
	g, err := Models()[0].Build(Models()[0].Small)
	if err != nil {
		t.Fatal(err)
	}
	if err := Float16(g, Float16Options{}); err == nil || !strings.Contains(err.Error(), "infer shapes first") {
		t.Errorf("Float16 of an untyped graph: %v", err)
	}
	if err := QuantizeDynamic(g); err == nil || !strings.Contains(err.Error(), "infer shapes first") {
		t.Errorf("QuantizeDynamic of an untyped graph: %v", err)
	}
}

func TestQuantizeDynamic(t *testing.T) {
	// x → conv0 (bias) → relu → conv1 and conv2 (no bias, both read relu)
	// → Add → Flatten → MatMul(W) → output.
	b, x := newTyped()
	t4 := ir.TensorOf(ir.Float32, 1, 2, 4, 4)
	w := b.param("w", f32s(36, func(i int) float32 { return float32(i) - 17.5 }), 2, 2, 3, 3)
	w1 := b.param("w1", f32s(4, func(i int) float32 { return float32(i + 1) }), 2, 2, 1, 1)
	bias := b.param("bias", []float32{0.5, -0.5}, 2)
	mw := b.param("mw", f32s(96, func(i int) float32 { return float32(i%7) - 3 }), 32, 3)
	c0 := b.op("Conv", "conv0", t4, x, w, bias)
	c0.Def.SetAttr(ir.IntsAttr("pads", 1, 1, 1, 1))
	r := b.op("Relu", "relu", t4, c0)
	c1 := b.op("Conv", "conv1", t4, r, w1)
	c2 := b.op("Conv", "conv2", t4, r, w1)
	a := b.op("Add", "add", t4, c1, c2)
	f := b.op("Flatten", "flat", ir.TensorOf(ir.Float32, 1, 32), a)
	b.g.AddOutput(b.op("MatMul", "mm", ir.TensorOf(ir.Float32, 1, 3), f, mw))
	if err := QuantizeDynamic(b.g); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"x_QuantizeLinear:DynamicQuantizeLinear", "conv0_quant:ConvInteger", "conv0_output_quantized_cast:Cast>f32",
		"conv0_quant_scales_mul:Mul", "conv0_quant_output_scale_mul:Mul", ":Reshape", "conv0_bias_add:Add", "relu:Relu",
		"relu_QuantizeLinear:DynamicQuantizeLinear", "conv1_quant:ConvInteger", "conv1_output_quantized_cast:Cast>f32",
		"conv1_quant_scales_mul:Mul", "conv1_quant_output_scale_mul:Mul",
		"conv2_quant:ConvInteger", "conv2_output_quantized_cast:Cast>f32", "conv2_quant_scales_mul:Mul", "conv2_quant_output_scale_mul:Mul",
		"add:Add", "flat:Flatten",
		"flat_QuantizeLinear:DynamicQuantizeLinear", "mm_quant:MatMulInteger", "mm_output_quantized_cast:Cast>f32",
		"mm_quant_scales_mul:Mul", "mm_quant_output_scale_mul:Mul",
	}
	if got := summary(b.g); !slices.Equal(got, want) {
		t.Errorf("nodes\n got %v\nwant %v", got, want)
	}
	var names []string
	params := map[string]*ir.Value{}
	for _, p := range b.g.Params {
		names = append(names, p.Name)
		params[p.Name] = p
	}
	slices.Sort(names)
	wantParams := []string{"bias", "conv0_bias_reshape_shape", "mw_quantized", "mw_scale", "mw_zero_point",
		"w1_quantized", "w1_scale", "w1_zero_point", "w_quantized", "w_scale", "w_zero_point"}
	if !slices.Equal(names, wantParams) {
		t.Errorf("parameters %v, want %v (the float weights removed, w1 quantized once)", names, wantParams)
	}
	scale := func(name string) float64 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(params[name].Data.Raw)))
	}
	// Conv weights: max |w| = 17.5 over 127; MatMul's: 3 over 64.
	if s := scale("w_scale"); math.Abs(s-17.5/127) > 1e-7 {
		t.Errorf("w_scale %v, want 17.5/127", s)
	}
	if s := scale("mw_scale"); math.Abs(s-3.0/64) > 1e-7 {
		t.Errorf("mw_scale %v, want 3/64", s)
	}
	if q := int8(params["w_quantized"].Data.Raw[0]); q != -127 {
		t.Errorf("w_quantized[0] = %d, want -127", q)
	}
	if sh, _ := params["conv0_bias_reshape_shape"].Data.Int64s(); !slices.Equal(sh, []int64{1, -1, 1, 1}) {
		t.Errorf("bias reshape shape %v", sh)
	}
	if out := b.g.Outputs[0]; out.Name != "mm" || out.Def.Name != "mm_quant_output_scale_mul" {
		t.Errorf("graph output %q written by %q, want mm written by mm_quant_output_scale_mul", out.Name, out.Def.Name)
	}
	reinfer(t, b.g)
}

func TestQuantizeDynamicNeedsOpset11(t *testing.T) {
	b, x := newTyped()
	b.g.Opsets = []ir.Opset{{Version: 9}}
	b.g.AddOutput(b.op("Conv", "c", ir.TensorOf(ir.Float32, 1, 2, 4, 4), x, b.param("w", make([]float32, 4), 2, 2, 1, 1)))
	if err := QuantizeDynamic(b.g); err == nil || !strings.Contains(err.Error(), "opset 9") {
		t.Errorf("opset 9: %v", err)
	}
}

func TestConvertNamesItsVariants(t *testing.T) {
	b, _ := newTyped()
	if err := Convert(b.g, "int4"); err == nil || !strings.Contains(err.Error(), "fp16") {
		t.Errorf("Convert(int4): %v", err)
	}
}
