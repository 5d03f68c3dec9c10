package autodiff

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/internal/tfjs"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
)

// The gradient check of the TensorFlow rules, in TensorFlow.js: for each
// case (a small TensorFlow graph around one op and one configuration)
// the training graph Build writes in TensorFlow ops is exported as a
// TensorFlow.js model and run by tfjs's graph executor (on the wasm and
// the cpu backend);
// every gradient it returns is compared with central finite differences
// (L(v + h·eᵢ) − L(v − h·eᵢ)) / 2h of the loss graph (Forward), also run
// in tfjs. tfjs computes in float32: h = 1e-3 (the step actually taken
// after rounding to float32), tolerance 5e-3 + 2e-2·|numeric|; the loss
// is summed in float32, so its rounding error is about 1e-7·|L|/h, near
// 1e-4 here. Inputs are the same shuffled grids as the ONNX check
// (distinct values at least 2/n apart, none within 0.3/n of a kink at 0),
// so no Relu or max kink lies within h of an input. At most
// maxCheckedTF elements per input are checked (a seeded sample).

const maxCheckedTF = 12

// tfg builds a small TensorFlow graph; its values are typed by shape
// inference (Build runs it).
type tfg struct {
	g *ir.Graph
	n int
}

func newTFG() *tfg { return &tfg{g: ir.NewGraph("case")} }

func (b *tfg) in(name string, dims ...int64) *ir.Value {
	return b.g.AddInput(name, ir.TensorOf(ir.Float32, dims...))
}

func (b *tfg) i32(vals ...int64) *ir.Value {
	b.n++
	name := fmt.Sprintf("c%d", b.n)
	t := int32Tensor([]int64{int64(len(vals))}, vals...)
	t.Name = name
	return b.g.AddParam(name, t.Type(), t)
}

func (b *tfg) i32m(shape []int64, vals ...int64) *ir.Value {
	b.n++
	name := fmt.Sprintf("c%d", b.n)
	t := int32Tensor(shape, vals...)
	t.Name = name
	return b.g.AddParam(name, t.Type(), t)
}

func (b *tfg) f32(v float32) *ir.Value {
	b.n++
	name := fmt.Sprintf("c%d", b.n)
	t := ir.Float32Tensor(nil, v)
	t.Name = name
	return b.g.AddParam(name, t.Type(), t)
}

// op adds a TensorFlow node (T float unless attrs give it) and returns
// its first output.
func (b *tfg) op(op string, ins []*ir.Value, attrs ...ir.Attr) *ir.Value {
	return b.opN(op, 1, ins, attrs...)[0]
}

func (b *tfg) opN(op string, nout int, ins []*ir.Value, attrs ...ir.Attr) []*ir.Value {
	b.n++
	name := fmt.Sprintf("%s_%d", strings.ToLower(strings.TrimPrefix(op, "_")), b.n)
	outs := []string{name}
	for k := 1; k < nout; k++ {
		outs = append(outs, fmt.Sprintf("%s:%d", name, k))
	}
	n := b.g.NewNode(op, ir.TFDomain, ins, outs)
	n.Name = name
	if !hasAttr(attrs, "T") {
		n.SetAttr(tfType("T", ir.Float32))
	}
	for _, a := range attrs {
		n.SetAttr(a)
	}
	return n.Outputs
}

func (b *tfg) out(v *ir.Value) *ir.Graph { b.g.AddOutput(v); return b.g }

func nhwc() ir.Attr { return ir.StringAttr("data_format", "NHWC") }

func window(s, d int64, pad string) []ir.Attr {
	return []ir.Attr{nhwc(), ir.IntsAttr("strides", 1, s, s, 1), ir.IntsAttr("dilations", 1, d, d, 1), ir.StringAttr("padding", pad)}
}

func fused(ops ...string) []ir.Attr {
	a := ir.Attr{Name: "fused_ops", Kind: ir.AttrStrings}
	for _, o := range ops {
		a.Strs = append(a.Strs, []byte(o))
	}
	return []ir.Attr{a, ir.IntAttr("num_args", 1), ir.FloatAttr("epsilon", 0)}
}

type tfCase struct {
	name  string
	build func(b *tfg) *ir.Graph
	wrt   string
	loss  string
	// lo and span set the grid of an input ([lo, lo+span]; default −1, 2).
	lo, span map[string]float64
	// ints fixes int32 inputs (labels).
	ints map[string][]int64
	// ref, when set, builds the graph the finite differences run instead
	// of build's: the same function written in other ops (for an op
	// TensorFlow.js cannot run, which Build lowers).
	ref func(b *tfg) *ir.Graph
}

func tfConv(b *tfg, x, w *ir.Value, s, d int64, pad string, extra ...ir.Attr) *ir.Value {
	return b.op("Conv2D", []*ir.Value{x, w}, append(window(s, d, pad), extra...)...)
}

// stridedSlice is a StridedSlice of x with int32 begin, end and strides
// and the five masks (begin, end, ellipsis, new axis, shrink).
func stridedSlice(b *tfg, x *ir.Value, begin, end, strides []int64, masks ...int64) *ir.Value {
	attrs := []ir.Attr{tfType("Index", ir.Int32)}
	for k, name := range []string{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"} {
		attrs = append(attrs, ir.IntAttr(name, masks[k]))
	}
	return b.op("StridedSlice", []*ir.Value{x, b.i32(begin...), b.i32(end...), b.i32(strides...)}, attrs...)
}

// dilatedFilter is w [kh, kw, C, O] with d − 1 zeros between its taps on
// both spatial axes, [(kh−1)·d + 1, (kw−1)·d + 1, C, O]: a convolution by
// it is the convolution by w with dilation d.
func dilatedFilter(b *tfg, w *ir.Value, kh, kw, c, o, d int64) *ir.Value {
	reshape := func(x *ir.Value, dims ...int64) *ir.Value {
		return b.op("Reshape", []*ir.Value{x, b.i32(dims...)}, tfType("Tshape", ir.Int32))
	}
	pad := func(x *ir.Value, pads ...int64) *ir.Value {
		return b.op("Pad", []*ir.Value{x, b.i32m([]int64{int64(len(pads) / 2), 2}, pads...)}, tfType("Tpaddings", ir.Int32))
	}
	t := pad(reshape(w, kh, 1, kw*c*o), 0, 0, 0, d-1, 0, 0)   // [kh, d, kw·C·O]
	t = reshape(t, kh*d*kw, 1, c*o)                           // rows (i, r, j)
	t = reshape(pad(t, 0, 0, 0, d-1, 0, 0), kh*d, kw*d, c, o) // [kh·d, kw·d, C, O]
	return b.op("Slice", []*ir.Value{t, b.i32(0, 0, 0, 0), b.i32((kh-1)*d+1, (kw-1)*d+1, c, o)}, tfType("Index", ir.Int32))
}

func tfGradCases() []tfCase {
	explicit := ir.IntsAttr("explicit_paddings", 0, 0, 1, 2, 2, 0, 0, 0)
	return []tfCase{
		{name: "AddV2/bcast", wrt: "a,b", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("AddV2", []*ir.Value{b.in("a", 2, 3, 4), b.in("b", 3, 1)}))
		}},
		{name: "Sub/Mul/RealDiv", wrt: "a,b,c", lo: map[string]float64{"c": 0.5}, span: map[string]float64{"c": 1}, build: func(b *tfg) *ir.Graph {
			a, bb, c := b.in("a", 2, 3), b.in("b", 3), b.in("c", 2, 1)
			return b.out(b.op("RealDiv", []*ir.Value{b.op("Mul", []*ir.Value{b.op("Sub", []*ir.Value{a, bb}), bb}), c}))
		}},
		{name: "AddN/Square/Rsqrt/Sqrt", wrt: "a,b", lo: map[string]float64{"b": 0.5}, span: map[string]float64{"b": 1}, build: func(b *tfg) *ir.Graph {
			a, bb := b.in("a", 2, 3), b.in("b", 2, 3)
			return b.out(b.op("AddN", []*ir.Value{b.op("Square", []*ir.Value{a}), b.op("Rsqrt", []*ir.Value{bb}), b.op("Sqrt", []*ir.Value{bb})}, ir.IntAttr("N", 3)))
		}},
		{name: "Relu", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("Relu", []*ir.Value{b.in("x", 2, 3, 4)}))
		}},
		{name: "Relu6", wrt: "x", lo: map[string]float64{"x": -3}, span: map[string]float64{"x": 12}, build: func(b *tfg) *ir.Graph {
			return b.out(b.op("Relu6", []*ir.Value{b.in("x", 2, 3, 4)}))
		}},
		{name: "BiasAdd", wrt: "x,bias", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("BiasAdd", []*ir.Value{b.in("x", 2, 3, 3, 4), b.in("bias", 4)}, nhwc()))
		}},
		{name: "Mean/keep", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("Mean", []*ir.Value{b.in("x", 2, 3, 3, 4), b.i32(1, 2)}, ir.IntAttr("keep_dims", 1), tfType("Tidx", ir.Int32)))
		}},
		{name: "Sum/Reshape/Transpose", wrt: "x", build: func(b *tfg) *ir.Graph {
			x := b.in("x", 2, 3, 4)
			t := b.op("Transpose", []*ir.Value{x, b.i32(2, 0, 1)}, tfType("Tperm", ir.Int32))
			r := b.op("Reshape", []*ir.Value{t, b.i32(4, 6)}, tfType("Tshape", ir.Int32))
			s := b.op("Sum", []*ir.Value{r, b.i32(-1)}, ir.IntAttr("keep_dims", 0), tfType("Tidx", ir.Int32))
			return b.out(b.op("Mul", []*ir.Value{s, s}))
		}},
		{name: "ConcatV2/Slice/PadV2", wrt: "a,b", build: func(b *tfg) *ir.Graph {
			a, bb := b.in("a", 2, 3, 3, 2), b.in("b", 2, 3, 3, 3)
			cc := b.op("ConcatV2", []*ir.Value{a, bb, b.i32m(nil, 3)}, ir.IntAttr("N", 2), tfType("Tidx", ir.Int32))
			s := b.op("Slice", []*ir.Value{cc, b.i32(0, 1, 0, 1), b.i32(2, 2, 3, -1)}, tfType("Index", ir.Int32))
			p := b.op("PadV2", []*ir.Value{s, b.i32m([]int64{4, 2}, 0, 0, 1, 0, 0, 2, 1, 0), b.f32(0.5)}, tfType("Tpaddings", ir.Int32))
			return b.out(p)
		}},
		{name: "MatMul/ta", wrt: "a,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("MatMul", []*ir.Value{b.in("a", 4, 3), b.in("w", 4, 5)}, ir.IntAttr("transpose_a", 1), ir.IntAttr("transpose_b", 0)))
		}},
		{name: "MatMul/tb", wrt: "a,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("MatMul", []*ir.Value{b.in("a", 3, 4), b.in("w", 5, 4)}, ir.IntAttr("transpose_a", 0), ir.IntAttr("transpose_b", 1)))
		}},
		{name: "_FusedMatMul/BiasAdd,Relu", wrt: "a,w,bias", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("_FusedMatMul", []*ir.Value{b.in("a", 3, 4), b.in("w", 4, 5), b.in("bias", 5)},
				append(fused("BiasAdd", "Relu"), ir.IntAttr("transpose_a", 0), ir.IntAttr("transpose_b", 0))...))
		}},
		{name: "Conv2D/SAME/s1", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 2, 5, 5, 3), b.in("w", 3, 3, 3, 4), 1, 1, "SAME"))
		}},
		{name: "Conv2D/SAME/s2/odd", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 2, 7, 6, 3), b.in("w", 3, 3, 3, 2), 2, 1, "SAME"))
		}},
		{name: "Conv2D/VALID/s2", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 2, 7, 8, 2), b.in("w", 2, 3, 2, 3), 2, 1, "VALID"))
		}},
		{name: "Conv2D/EXPLICIT", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 1, 5, 6, 2), b.in("w", 3, 3, 2, 2), 1, 1, "EXPLICIT", explicit))
		}},
		{name: "Conv2D/dilated", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 2, 7, 7, 2), b.in("w", 3, 3, 2, 3), 1, 2, "SAME"))
		}},
		// Strides and dilations both above 1: Build lowers the node
		// (TensorFlow.js runs neither); the finite differences run the
		// convolution by the explicitly dilated filter at stride 2.
		{name: "Conv2D/SAME/s2/d2", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 2, 9, 8, 2), b.in("w", 3, 2, 2, 3), 2, 2, "SAME"))
		}, ref: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 2, 9, 8, 2), dilatedFilter(b, b.in("w", 3, 2, 2, 3), 3, 2, 2, 3, 2), 2, 1, "SAME"))
		}},
		{name: "_FusedConv2D/BiasAdd,Relu/VALID/s2/d3", wrt: "x,w,bias", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("_FusedConv2D", []*ir.Value{b.in("x", 1, 10, 9, 2), b.in("w", 2, 2, 2, 3), b.in("bias", 3)}, append(window(2, 3, "VALID"), fused("BiasAdd", "Relu")...)...))
		}, ref: func(b *tfg) *ir.Graph {
			w := dilatedFilter(b, b.in("w", 2, 2, 2, 3), 2, 2, 2, 3, 3)
			return b.out(b.op("_FusedConv2D", []*ir.Value{b.in("x", 1, 10, 9, 2), w, b.in("bias", 3)}, append(window(2, 1, "VALID"), fused("BiasAdd", "Relu")...)...))
		}},
		{name: "DepthwiseConv2dNative/M2/SAME/s2/d2", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 1, 9, 9, 2), b.in("w", 3, 3, 2, 2)}, window(2, 2, "SAME")...))
		}, ref: func(b *tfg) *ir.Graph {
			w := dilatedFilter(b, b.in("w", 3, 3, 2, 2), 3, 3, 2, 2, 2)
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 1, 9, 9, 2), w}, window(2, 1, "SAME")...))
		}},
		{name: "_FusedConv2D/BiasAdd,Relu6", wrt: "x,w,bias", lo: map[string]float64{"x": -3}, span: map[string]float64{"x": 8}, build: func(b *tfg) *ir.Graph {
			return b.out(b.op("_FusedConv2D", []*ir.Value{b.in("x", 2, 6, 6, 2), b.in("w", 3, 3, 2, 3), b.in("bias", 3)}, append(window(2, 1, "SAME"), fused("BiasAdd", "Relu6")...)...))
		}},
		{name: "DepthwiseConv2dNative/SAME/s1", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 2, 5, 5, 3), b.in("w", 3, 3, 3, 1)}, window(1, 1, "SAME")...))
		}},
		{name: "DepthwiseConv2dNative/SAME/s2/odd", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 2, 7, 6, 3), b.in("w", 3, 3, 3, 1)}, window(2, 1, "SAME")...))
		}},
		{name: "DepthwiseConv2dNative/VALID/s2", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 1, 8, 7, 2), b.in("w", 3, 2, 2, 1)}, window(2, 1, "VALID")...))
		}},
		{name: "DepthwiseConv2dNative/EXPLICIT/s2/even", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 2, 8, 8, 3), b.in("w", 3, 3, 3, 1)}, append(window(2, 1, "EXPLICIT"), ir.IntsAttr("explicit_paddings", 0, 0, 1, 1, 1, 1, 0, 0))...))
		}},
		{name: "Conv2D/EXPLICIT/s2/even", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(tfConv(b, b.in("x", 2, 8, 8, 2), b.in("w", 3, 3, 2, 3), 2, 1, "EXPLICIT", ir.IntsAttr("explicit_paddings", 0, 0, 1, 1, 1, 1, 0, 0)))
		}},
		{name: "DepthwiseConv2dNative/dilated", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 1, 7, 7, 2), b.in("w", 3, 3, 2, 1)}, window(1, 2, "SAME")...))
		}},
		{name: "DepthwiseConv2dNative/M3/SAME/s2", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 2, 7, 6, 2), b.in("w", 3, 3, 2, 3)}, window(2, 1, "SAME")...))
		}},
		{name: "DepthwiseConv2dNative/M2/dilated", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("DepthwiseConv2dNative", []*ir.Value{b.in("x", 1, 7, 7, 3), b.in("w", 3, 2, 3, 2)}, window(1, 2, "VALID")...))
		}},
		{name: "FusedDepthwiseConv2dNative/BiasAdd,Relu", wrt: "x,w,bias", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("FusedDepthwiseConv2dNative", []*ir.Value{b.in("x", 2, 6, 6, 2), b.in("w", 3, 3, 2, 1), b.in("bias", 2)}, append(window(1, 1, "SAME"), fused("BiasAdd", "Relu")...)...))
		}},
		{name: "Conv2DBackpropInput/VALID/s2", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("Conv2DBackpropInput", []*ir.Value{b.i32(2, 8, 8, 3), b.in("w", 2, 2, 3, 4), b.in("x", 2, 4, 4, 4)}, window(2, 1, "VALID")...))
		}},
		{name: "Conv2DBackpropInput/SAME/s2", wrt: "x,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("Conv2DBackpropInput", []*ir.Value{b.i32(1, 7, 7, 2), b.in("w", 3, 3, 2, 3), b.in("x", 1, 4, 4, 3)}, window(2, 1, "SAME")...))
		}},
		{name: "MaxPool/SAME/3x3/s2", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("MaxPool", []*ir.Value{b.in("x", 2, 7, 6, 3)}, nhwc(), ir.IntsAttr("ksize", 1, 3, 3, 1), ir.IntsAttr("strides", 1, 2, 2, 1), ir.StringAttr("padding", "SAME")))
		}},
		{name: "MaxPool/VALID/2x2/s2", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("MaxPool", []*ir.Value{b.in("x", 2, 6, 7, 2)}, nhwc(), ir.IntsAttr("ksize", 1, 2, 2, 1), ir.IntsAttr("strides", 1, 2, 2, 1), ir.StringAttr("padding", "VALID")))
		}},
		{name: "MaxPool/SAME/3x3/s1", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("MaxPool", []*ir.Value{b.in("x", 1, 5, 5, 2)}, nhwc(), ir.IntsAttr("ksize", 1, 3, 3, 1), ir.IntsAttr("strides", 1, 1, 1, 1), ir.StringAttr("padding", "SAME")))
		}},
		{name: "AvgPool/SAME/3x3/s2", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("AvgPool", []*ir.Value{b.in("x", 2, 7, 6, 3)}, nhwc(), ir.IntsAttr("ksize", 1, 3, 3, 1), ir.IntsAttr("strides", 1, 2, 2, 1), ir.StringAttr("padding", "SAME")))
		}},
		{name: "AvgPool/VALID/2x2/s2", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("AvgPool", []*ir.Value{b.in("x", 2, 6, 7, 2)}, nhwc(), ir.IntsAttr("ksize", 1, 2, 2, 1), ir.IntsAttr("strides", 1, 2, 2, 1), ir.StringAttr("padding", "VALID")))
		}},
		{name: "LRN", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("LRN", []*ir.Value{b.in("x", 2, 3, 3, 6)}, ir.IntAttr("depth_radius", 2), ir.FloatAttr("bias", 1), ir.FloatAttr("alpha", 0.3), ir.FloatAttr("beta", 0.75)))
		}},
		{name: "ResizeBilinear/half", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("ResizeBilinear", []*ir.Value{b.in("x", 2, 3, 4, 2), b.i32(6, 7)}, ir.IntAttr("align_corners", 0), ir.IntAttr("half_pixel_centers", 1)))
		}},
		{name: "ResizeBilinear/align", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("ResizeBilinear", []*ir.Value{b.in("x", 1, 4, 3, 2), b.i32(7, 5)}, ir.IntAttr("align_corners", 1), ir.IntAttr("half_pixel_centers", 0)))
		}},
		{name: "ResizeBilinear/plain/down", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("ResizeBilinear", []*ir.Value{b.in("x", 1, 6, 5, 2), b.i32(4, 3)}, ir.IntAttr("align_corners", 0), ir.IntAttr("half_pixel_centers", 0)))
		}},
		{name: "ResizeNearestNeighbor/half", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("ResizeNearestNeighbor", []*ir.Value{b.in("x", 2, 3, 4, 2), b.i32(6, 7)}, ir.IntAttr("align_corners", 0), ir.IntAttr("half_pixel_centers", 1)))
		}},
		{name: "ResizeNearestNeighbor/align", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("ResizeNearestNeighbor", []*ir.Value{b.in("x", 1, 4, 3, 2), b.i32(7, 5)}, ir.IntAttr("align_corners", 1), ir.IntAttr("half_pixel_centers", 0)))
		}},
		{name: "FusedBatchNormV3", wrt: "x,scale,offset", build: func(b *tfg) *ir.Graph {
			x, sc, of := b.in("x", 2, 3, 3, 4), b.in("scale", 4), b.in("offset", 4)
			outs := b.opN("FusedBatchNormV3", 6, []*ir.Value{x, sc, of, b.in("mean", 4), b.in("var", 4)},
				nhwc(), tfType("U", ir.Float32), ir.FloatAttr("epsilon", 1e-3), ir.IntAttr("is_training", 0))
			return b.out(outs[0])
		}},
		{name: "GatherNd/slices/dup", wrt: "x", build: func(b *tfg) *ir.Graph {
			// Rows (0, 1) twice: the gradient there is the sum of both reads.
			idx := b.i32m([]int64{4, 2}, 0, 1, 2, 1, 0, 1, 1, 0)
			return b.out(b.op("GatherNd", []*ir.Value{b.in("x", 3, 2, 2), idx}, tfType("Tparams", ir.Float32), tfType("Tindices", ir.Int32)))
		}},
		{name: "GatherNd/elements/dup", wrt: "x", build: func(b *tfg) *ir.Graph {
			// Element (0, 0, 1) three times, (2, 1, 0) twice.
			idx := b.i32m([]int64{2, 3, 3}, 0, 0, 1, 2, 1, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1, 2, 1, 0)
			return b.out(b.op("GatherNd", []*ir.Value{b.in("x", 3, 2, 2), idx}, tfType("Tparams", ir.Float32), tfType("Tindices", ir.Int32)))
		}},
		{name: "Pack/Unpack", wrt: "a,b,x", build: func(b *tfg) *ir.Graph {
			a, bb, x := b.in("a", 2, 3), b.in("b", 2, 3), b.in("x", 2, 3, 4)
			p := b.op("Pack", []*ir.Value{a, bb}, ir.IntAttr("N", 2), ir.IntAttr("axis", 1))
			// Two of x's four slices along the last axis reach the output.
			u := b.opN("Unpack", 4, []*ir.Value{x}, ir.IntAttr("num", 4), ir.IntAttr("axis", -1))
			q := b.op("Pack", []*ir.Value{u[3], u[1]}, ir.IntAttr("N", 2), ir.IntAttr("axis", -1))
			return b.out(b.op("Mul", []*ir.Value{p, b.op("Transpose", []*ir.Value{q, b.i32(0, 2, 1)}, tfType("Tperm", ir.Int32))}))
		}},
		{name: "Maximum/Minimum/bcast", wrt: "a,b", build: func(b *tfg) *ir.Graph {
			a, bb := b.in("a", 2, 3, 4), b.in("b", 3, 1)
			mx := b.op("Maximum", []*ir.Value{a, bb})
			return b.out(b.op("Minimum", []*ir.Value{bb, b.op("Mul", []*ir.Value{mx, a})}))
		}},
		{name: "Prelu", wrt: "x,alpha", lo: map[string]float64{"alpha": 0.1}, span: map[string]float64{"alpha": 0.5}, build: func(b *tfg) *ir.Graph {
			return b.out(b.op("Prelu", []*ir.Value{b.in("x", 2, 3, 4), b.in("alpha", 4)}))
		}},
		// TensorFlow.js 4.22 broadcasts batch axes right only where each
		// operand's batch is a suffix of the output's batch after its
		// leading 1s (it indexes the flattened batch modulo each
		// operand's): a [1, 3] against [2, 3] is right, [2, 1] against
		// [3] is not, so the cases broadcast the leading axes.
		{name: "BatchMatMulV2/adj_x/bcast", wrt: "a,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("BatchMatMulV2", []*ir.Value{b.in("a", 1, 3, 3, 4), b.in("w", 2, 3, 3, 5)}, ir.IntAttr("adj_x", 1), ir.IntAttr("adj_y", 0)))
		}},
		{name: "BatchMatMulV2/adj_y/bcast", wrt: "a,w", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("BatchMatMulV2", []*ir.Value{b.in("a", 3, 2, 4), b.in("w", 5, 4)}, ir.IntAttr("adj_x", 0), ir.IntAttr("adj_y", 1)))
		}},
		{name: "StridedSlice/masks/strides", wrt: "x", build: func(b *tfg) *ir.Graph {
			// x[1:3, ::2, 5::-2] (axis 1 begin and end masked, axis 2 end
			// masked, a negative stride).
			return b.out(stridedSlice(b, b.in("x", 4, 5, 6), []int64{1, 7, -1}, []int64{3, 0, 0}, []int64{1, 2, -2}, 2, 6, 0, 0, 0))
		}},
		{name: "StridedSlice/ellipsis/new/shrink", wrt: "x", build: func(b *tfg) *ir.Graph {
			// x[..., newaxis, 2]: [3, 4, 1].
			return b.out(stridedSlice(b, b.in("x", 3, 4, 5), []int64{0, 0, 2}, []int64{0, 0, 3}, []int64{1, 1, 1}, 0, 0, 1, 2, 4))
		}},
		// TensorFlow.js 4.22 reads other elements than TensorFlow where a
		// shrunk axis meets a stride other than 1 (x[0:3:2, 2] on [3, 7, 4]
		// reads x[0, 0, 2:6] first, both backends), so the shrinking cases
		// keep strides 1.
		{name: "StridedSlice/shrink/negative", wrt: "x", build: func(b *tfg) *ir.Graph {
			// x[1:, -2] on [3, 7, 4]: [2, 4].
			return b.out(stridedSlice(b, b.in("x", 3, 7, 4), []int64{1, -2}, []int64{0, -1}, []int64{1, 1}, 0, 1, 0, 0, 2))
		}},
		{name: "StridedSlice/stride3/negative-begin", wrt: "x", build: func(b *tfg) *ir.Graph {
			// x[:, 1:6:3, -3:] on [3, 7, 4]: [3, 2, 3].
			return b.out(stridedSlice(b, b.in("x", 3, 7, 4), []int64{0, 1, -3}, []int64{3, 6, 0}, []int64{1, 3, 1}, 0, 4, 0, 0, 0))
		}},
		{name: "loss/sum", wrt: "x", loss: "sum", build: func(b *tfg) *ir.Graph {
			x := b.in("x", 2, 3)
			return b.out(b.op("Mul", []*ir.Value{x, x}))
		}},
		{name: "loss/mean", wrt: "x", loss: "mean", build: func(b *tfg) *ir.Graph {
			x := b.in("x", 2, 3)
			return b.out(b.op("Mul", []*ir.Value{x, x}))
		}},
		{name: "loss/softmax-xent", wrt: "a,w", loss: "softmax-xent:label", ints: map[string][]int64{"label": {2, 0, 4}}, build: func(b *tfg) *ir.Graph {
			return b.out(b.op("MatMul", []*ir.Value{b.in("a", 3, 4), b.in("w", 4, 5)}, ir.IntAttr("transpose_a", 0), ir.IntAttr("transpose_b", 0)))
		}},
		{name: "Softmax", wrt: "x", build: func(b *tfg) *ir.Graph {
			return b.out(b.op("Softmax", []*ir.Value{b.in("x", 2, 5)}))
		}},
	}
}

type tfCheck struct {
	checked    int
	worst      float64
	mismatches []string
}

func f32Tensor(dims []int64, vals []float64) tfjs.Tensor {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(v)))
	}
	return tfjs.Tensor{DType: tfjs.Float32, Shape: slices.Clone(dims), Data: raw}
}

// checkTF runs one case (see the file comment); grad, when set, edits the
// training graph before it is written (to test that the check fails).
func checkTF(t *testing.T, dir string, backend tfjs.Backend, c tfCase, edit func(*ir.Graph)) (*tfCheck, error) {
	const h, atol, rtol = 1e-3, 5e-3, 2e-2
	loss := c.loss
	if loss == "" {
		loss = "mse:target"
	}
	l, err := ParseLoss(loss)
	if err != nil {
		return nil, err
	}
	opts := Options{Loss: l, Trainable: strings.Split(c.wrt, ",")}
	tg, fg := c.build(newTFG()), c.build(newTFG())
	if c.ref != nil {
		fg = c.ref(newTFG())
	}
	if err := Build(tg, opts); err != nil {
		return nil, fmt.Errorf("Build: %w", err)
	}
	for _, n := range tg.Nodes {
		if n.Domain != ir.TFDomain {
			return nil, fmt.Errorf("the training graph has a %s node %s in domain %q", n.Op, n.Name, n.Domain)
		}
	}
	if edit != nil {
		edit(tg)
		if err := shapes.Infer(tg, shapes.Options{}); err != nil {
			return nil, err
		}
	}
	if err := Forward(fg, opts); err != nil {
		return nil, fmt.Errorf("Forward: %w", err)
	}
	tmp := t.TempDir()
	tpath, fpath := filepath.Join(tmp, "train", "model.json"), filepath.Join(tmp, "fwd", "model.json")
	if err := gdexp.ExportFile(tg, tpath, gdexp.Options{}); err != nil {
		return nil, err
	}
	if err := gdexp.ExportFile(fg, fpath, gdexp.Options{}); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
	values := map[string][]float64{}
	shapesOf := map[string][]int64{}
	inputs := map[string]tfjs.Tensor{}
	for _, in := range fg.Inputs {
		dims := dimsOf(in)
		if v, ok := c.ints[in.Name]; ok {
			raw := make([]byte, 4*len(v))
			for i, x := range v {
				binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(x)))
			}
			inputs[in.Name] = tfjs.Tensor{DType: tfjs.Int32, Shape: dims, Data: raw}
			continue
		}
		n := int(prod(dims))
		lo, span := -1.0, 2.0
		if v, ok := c.lo[in.Name]; ok {
			lo = v
		}
		if v, ok := c.span[in.Name]; ok {
			span = v
		}
		perm := rng.Perm(n)
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(float32(lo + span*(float64(perm[i])+0.3)/float64(n) + 1e-3*rng.Float64()/float64(n)))
		}
		values[in.Name], shapesOf[in.Name] = vals, dims
		inputs[in.Name] = f32Tensor(dims, vals)
	}
	outs := []string{LossName}
	for _, w := range opts.Trainable {
		outs = append(outs, w+"_grad")
	}
	jobs := []tfjs.Options{{Dir: dir, Backend: backend, Model: tpath, Inputs: inputs, Outputs: outs}, {Dir: dir, Backend: backend, Model: fpath, Inputs: inputs, Outputs: []string{LossName}}}
	type probe struct {
		name  string
		i     int
		step  float64
		index int // of the +h job; −h is the next
	}
	var probes []probe
	for _, name := range opts.Trainable {
		vals := values[name]
		for _, i := range sampleIndices(rng, len(vals), maxCheckedTF) {
			p := probe{name: name, i: i, index: len(jobs)}
			for _, s := range []float64{1, -1} {
				pert := slices.Clone(vals)
				pert[i] = float64(float32(vals[i] + s*h))
				in := map[string]tfjs.Tensor{}
				for k, v := range inputs {
					in[k] = v
				}
				in[name] = f32Tensor(shapesOf[name], pert)
				jobs = append(jobs, tfjs.Options{Dir: dir, Backend: backend, Model: fpath, Inputs: in, Outputs: []string{LossName}})
			}
			p.step = (float64(float32(vals[i]+h)) - float64(float32(vals[i]-h))) / 2
			probes = append(probes, p)
		}
	}
	res, err := tfjs.RunAll(context.Background(), jobs)
	if err != nil {
		return nil, err
	}
	scalar := func(r *tfjs.Result) float64 { return float64(r.Outputs[0].Float32s()[0]) }
	out := &tfCheck{}
	lt, l0 := scalar(res[0]), scalar(res[1])
	if d := math.Abs(lt - l0); d > atol+rtol*math.Abs(l0) {
		out.mismatches = append(out.mismatches, fmt.Sprintf("loss: training graph %g, forward graph %g", lt, l0))
	}
	grads := map[string][]float32{}
	for k, w := range opts.Trainable {
		grads[w] = res[0].Outputs[1+k].Float32s()
		if len(grads[w]) != len(values[w]) {
			return nil, fmt.Errorf("%s_grad has %d elements, want %d", w, len(grads[w]), len(values[w]))
		}
	}
	for _, p := range probes {
		num := (scalar(res[p.index]) - scalar(res[p.index+1])) / (2 * p.step)
		g := float64(grads[p.name][p.i])
		out.checked++
		ratio := math.Abs(g-num) / (atol + rtol*math.Abs(num))
		out.worst = max(out.worst, ratio)
		if ratio > 1 {
			out.mismatches = append(out.mismatches, fmt.Sprintf("%s_grad[%d] = %.6g, finite differences %.6g", p.name, p.i, g, num))
		}
	}
	return out, nil
}

// TestGradientsTF checks every TensorFlow rule's gradient in TensorFlow.js
// against finite differences (see the file comment).
func TestGradientsTF(t *testing.T) {
	if testing.Short() {
		t.Skip("runs TensorFlow.js; skipped in -short mode")
	}
	dir := testmodels.RequireTFJS(t)
	covered := map[string]bool{}
	for _, c := range tfGradCases() {
		for _, n := range c.build(newTFG()).Nodes {
			covered[n.Op] = true
		}
		for _, backend := range []tfjs.Backend{tfjs.WASM, tfjs.CPU} {
			t.Run(c.name+"/"+string(backend), func(t *testing.T) {
				r, err := checkTF(t, dir, backend, c, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range r.mismatches {
					t.Error(m)
				}
				t.Logf("%d elements checked, worst error %.3f of the tolerance", r.checked, r.worst)
				if r.checked == 0 {
					t.Error("nothing checked")
				}
			})
		}
	}
	// The ops of the zoo's TensorFlow graphs each have a case.
	for _, op := range []string{"Conv2D", "_FusedConv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative", "FusedBatchNormV3",
		"Relu", "Relu6", "AddV2", "MaxPool", "Mean", "Reshape", "MatMul", "_FusedMatMul", "PadV2", "BiasAdd", "ConcatV2", "Slice", "Conv2DBackpropInput", "LRN", "AvgPool",
		"GatherNd", "Pack", "Unpack", "StridedSlice", "Maximum", "Minimum", "Prelu", "BatchMatMulV2"} {
		if !covered[op] {
			t.Errorf("no gradient check case for %s", op)
		}
	}
}

// TestWrongGradientFailsTF: the check catches a wrong gradient: for one
// case of each kind of rule, the training graph's gradient of one input
// scaled by a factor (1.1 where the gradients are large against the
// absolute tolerance, 5e-3; 1.5 on the small cases, whose gradients are
// near 0.05).
func TestWrongGradientFailsTF(t *testing.T) {
	if testing.Short() {
		t.Skip("runs TensorFlow.js; skipped in -short mode")
	}
	dir := testmodels.RequireTFJS(t)
	type mutation struct {
		input  string // whose gradient is scaled
		factor float64
	}
	wrong := map[string]mutation{
		"Conv2D/SAME/s2/odd":               {"w", 1.1},
		"GatherNd/slices/dup":              {"x", 1.5},
		"Pack/Unpack":                      {"x", 1.5},
		"Conv2D/SAME/s2/d2":                {"w", 1.1},
		"DepthwiseConv2dNative/M3/SAME/s2": {"w", 1.1},
		"StridedSlice/masks/strides":       {"x", 1.5},
		"Maximum/Minimum/bcast":            {"b", 1.5},
		"Prelu":                            {"alpha", 1.5},
		"BatchMatMulV2/adj_x/bcast":        {"w", 1.5},
	}
	cases := map[string]tfCase{}
	for _, k := range tfGradCases() {
		cases[k.name] = k
	}
	var names []string
	for name := range wrong {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c, ok := cases[name]
		if !ok {
			t.Fatalf("no case %s", name)
		}
		m := wrong[name]
		grad := m.input + "_grad"
		t.Run(name, func(t *testing.T) {
			r, err := checkTF(t, dir, tfjs.WASM, c, func(g *ir.Graph) {
				for i, o := range g.Outputs {
					if o.Name != grad {
						continue
					}
					o.Name = grad + "_right"
					if o.Def != nil {
						o.Def.Name = o.Name
					}
					b := newBuilder(g, 0)
					b.tf = true
					g.Outputs[i] = b.identity(b.scale(o, m.factor), grad)
					return
				}
				t.Fatalf("no %s output", grad)
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.mismatches) == 0 {
				t.Fatalf("%s scaled by %g passed the check (worst %.3f of the tolerance)", grad, m.factor, r.worst)
			}
		})
	}
}

// TestTFRulesInOpTable: every op with a TensorFlow rule is in the
// TensorFlow op table, and an op on an active path without a rule is a
// *NoGradientError naming it.
func TestTFRulesInOpTable(t *testing.T) {
	for op := range tfRules {
		if ir.LookupOp(ir.TFDomain, op) == nil {
			t.Errorf("tfRules names %s, which the TensorFlow op table lacks", op)
		}
	}
	b := newTFG()
	x := b.in("x", 2, 4, 4, 3)
	g := b.out(b.op("Atan", []*ir.Value{b.op("Relu", []*ir.Value{x})}))
	err := Build(g, Options{Loss: Loss{Kind: LossSum}, Trainable: []string{"x"}})
	var ng *NoGradientError
	if !errors.As(err, &ng) || !strings.Contains(err.Error(), "no gradient for tf.Atan") {
		t.Fatalf("Build of a graph with Atan on the active path: %v, want a NoGradientError naming Atan", err)
	}
}
