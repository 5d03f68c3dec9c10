package ir

import (
	"errors"
	"testing"
)

// tfNode builds a graph with one TensorFlow node of op on an input of
// shape in (output of shape out), with extra inputs of the given shapes
// (int32 Consts when vals are given) and attributes.
func tfNode(op string, in, out []int64, extra []*Tensor, attrs ...Attr) *Node {
	g := NewGraph(op)
	ins := []*Value{g.AddInput("x", TensorOf(Float32, in...))}
	for i, t := range extra {
		ins = append(ins, g.AddParam("c"+string(rune('0'+i)), t.Type(), t))
	}
	n := g.NewNode(op, TFDomain, ins, []string{"y"})
	for _, a := range attrs {
		n.SetAttr(a)
	}
	n.Outputs[0].Type = TensorOf(Float32, out...)
	g.AddOutput(n.Outputs[0])
	return n
}

func int32T(shape []int64, vals ...int64) *Tensor {
	t := Int64Tensor(shape, vals...)
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	t.DType, t.Raw = Int32, raw
	return t
}

func zeros(shape ...int64) *Tensor {
	t := TensorOf(Float32, shape...)
	n, _ := t.NumElements()
	return Float32Tensor(shape, make([]float32, n)...)
}

// TestSpatialTF checks the TensorFlow rules' geometry (SAME resolved as
// TensorFlow does, EXPLICIT pads, NCHW's axes) and the nodes that must not
// be local.
func TestSpatialTF(t *testing.T) {
	win := func(s, pad string) []Attr {
		return []Attr{StringAttr("padding", pad), IntsAttr("strides", 1, 2, 2, 1), StringAttr("data_format", s)}
	}
	cases := []struct {
		name   string
		n      *Node
		axis   int
		local  bool
		kind   SpatialKind
		k, s   int64
		pb, pe int64
	}{
		// in 10, k 3, s 2: out 5, pad_total = 4·2+3−10 = 1: 0 before, 1 after.
		{"conv SAME", tfNode("Conv2D", []int64{1, 10, 9, 3}, []int64{1, 5, 5, 4}, []*Tensor{zeros(3, 3, 3, 4)}, win("NHWC", "SAME")...), 1, true, SpatialWindow, 3, 2, 0, 1},
		// in 9 along W: pad_total = 4·2+3−9 = 2: 1 and 1.
		{"conv SAME cols", tfNode("Conv2D", []int64{1, 10, 9, 3}, []int64{1, 5, 5, 4}, []*Tensor{zeros(3, 3, 3, 4)}, win("NHWC", "SAME")...), 2, true, SpatialWindow, 3, 2, 1, 1},
		{"conv EXPLICIT", tfNode("Conv2D", []int64{1, 10, 10, 3}, []int64{1, 6, 5, 4}, []*Tensor{zeros(3, 3, 3, 4)},
			append(win("NHWC", "EXPLICIT"), IntsAttr("explicit_paddings", 0, 0, 2, 1, 0, 0, 0, 0))...), 1, true, SpatialWindow, 3, 2, 2, 1},
		{"conv NCHW", tfNode("Conv2D", []int64{1, 3, 10, 10}, []int64{1, 4, 8, 8}, []*Tensor{zeros(3, 3, 3, 4)},
			StringAttr("padding", "VALID"), IntsAttr("strides", 1, 1, 1, 1), StringAttr("data_format", "NCHW")), 2, true, SpatialWindow, 3, 1, 0, 0},
		{"conv NCHW channel axis", tfNode("Conv2D", []int64{1, 3, 10, 10}, []int64{1, 4, 8, 8}, []*Tensor{zeros(3, 3, 3, 4)},
			StringAttr("padding", "VALID"), IntsAttr("strides", 1, 1, 1, 1), StringAttr("data_format", "NCHW")), 1, false, 0, 0, 0, 0, 0},
		{"batch axis", tfNode("Relu", []int64{2, 4, 4, 3}, []int64{2, 4, 4, 3}, nil), 0, false, 0, 0, 0, 0, 0},
		{"dilated depthwise", tfNode("DepthwiseConv2dNative", []int64{1, 12, 12, 3}, []int64{1, 12, 12, 3}, []*Tensor{zeros(3, 3, 3, 1)},
			StringAttr("padding", "SAME"), IntsAttr("strides", 1, 1, 1, 1), IntsAttr("dilations", 1, 2, 2, 1)), 1, true, SpatialWindow, 3, 1, 2, 2},
		{"fused per-channel bias", tfNode("_FusedConv2D", []int64{1, 8, 8, 3}, []int64{1, 8, 8, 4}, []*Tensor{zeros(1, 1, 3, 4), zeros(4)},
			StringAttr("padding", "SAME"), IntsAttr("strides", 1, 1, 1, 1), Attr{Name: "fused_ops", Kind: AttrStrings, Strs: [][]byte{[]byte("BiasAdd"), []byte("Relu6")}}), 1, true, SpatialWindow, 1, 1, 0, 0},
		{"fused PReLU per position", tfNode("_FusedConv2D", []int64{1, 8, 8, 3}, []int64{1, 8, 8, 4}, []*Tensor{zeros(1, 1, 3, 4), zeros(4), zeros(8, 8, 4)},
			StringAttr("padding", "SAME"), IntsAttr("strides", 1, 1, 1, 1), Attr{Name: "fused_ops", Kind: AttrStrings, Strs: [][]byte{[]byte("BiasAdd"), []byte("Prelu")}}), 1, false, 0, 0, 0, 0, 0},
		{"max pool SAME", tfNode("MaxPool", []int64{1, 9, 9, 3}, []int64{1, 5, 5, 3}, nil, append(win("NHWC", "SAME"), IntsAttr("ksize", 1, 3, 3, 1))...), 1, true, SpatialWindow, 3, 2, 1, 1},
		{"avg pool VALID", tfNode("AvgPool", []int64{1, 9, 9, 3}, []int64{1, 4, 4, 3}, nil, append(win("NHWC", "VALID"), IntsAttr("ksize", 1, 3, 3, 1))...), 1, true, SpatialWindow, 3, 2, 0, 0},
		{"avg pool SAME without padding", tfNode("AvgPool", []int64{1, 8, 8, 3}, []int64{1, 4, 4, 3}, nil, append(win("NHWC", "SAME"), IntsAttr("ksize", 1, 2, 2, 1))...), 1, true, SpatialWindow, 2, 2, 0, 0},
		{"avg pool SAME padding", tfNode("AvgPool", []int64{1, 9, 9, 3}, []int64{1, 5, 5, 3}, nil, append(win("NHWC", "SAME"), IntsAttr("ksize", 1, 3, 3, 1))...), 1, false, 0, 0, 0, 0, 0},
		{"pad", tfNode("Pad", []int64{1, 6, 6, 3}, []int64{1, 9, 6, 3}, []*Tensor{int32T([]int64{4, 2}, 0, 0, 1, 2, 0, 0, 0, 0)}), 1, true, SpatialWindow, 1, 1, 1, 2},
		{"mirror pad along the axis", tfNode("MirrorPad", []int64{1, 6, 6, 3}, []int64{1, 9, 6, 3}, []*Tensor{int32T([]int64{4, 2}, 0, 0, 1, 2, 0, 0, 0, 0)}, StringAttr("mode", "REFLECT")), 1, false, 0, 0, 0, 0, 0},
		{"mirror pad across", tfNode("MirrorPad", []int64{1, 6, 6, 3}, []int64{1, 9, 6, 3}, []*Tensor{int32T([]int64{4, 2}, 0, 0, 1, 2, 0, 0, 0, 0)}, StringAttr("mode", "REFLECT")), 2, true, SpatialWindow, 1, 1, 0, 0},
		{"channel concat", tfNode("ConcatV2", []int64{1, 6, 6, 3}, []int64{1, 6, 6, 6}, []*Tensor{zeros(1, 6, 6, 3), int32T(nil, -1)}), 1, true, SpatialPoint, 0, 0, 0, 0},
		{"row concat", tfNode("ConcatV2", []int64{1, 6, 6, 3}, []int64{1, 12, 6, 3}, []*Tensor{zeros(1, 6, 6, 3), int32T(nil, 1)}), 1, false, 0, 0, 0, 0, 0},
		{"batch norm inference", tfNode("FusedBatchNormV3", []int64{1, 6, 6, 3}, []int64{1, 6, 6, 3}, []*Tensor{zeros(3), zeros(3), zeros(3), zeros(3)}, IntAttr("is_training", 0)), 1, true, SpatialPoint, 0, 0, 0, 0},
		{"batch norm training", tfNode("FusedBatchNormV3", []int64{1, 6, 6, 3}, []int64{1, 6, 6, 3}, []*Tensor{zeros(3), zeros(3), zeros(3), zeros(3)}), 1, false, 0, 0, 0, 0, 0},
		{"bilinear ×2 half-pixel", tfNode("ResizeBilinear", []int64{1, 6, 6, 3}, []int64{1, 12, 12, 3}, []*Tensor{int32T([]int64{2}, 12, 12)}, IntAttr("half_pixel_centers", 1)), 1, true, SpatialUpsample, 0, 0, 0, 0},
		{"bilinear ×3", tfNode("ResizeBilinear", []int64{1, 6, 6, 3}, []int64{1, 18, 18, 3}, []*Tensor{int32T([]int64{2}, 18, 18)}), 1, false, 0, 0, 0, 0, 0},
		{"nearest align_corners", tfNode("ResizeNearestNeighbor", []int64{1, 6, 6, 3}, []int64{1, 12, 12, 3}, []*Tensor{int32T([]int64{2}, 12, 12)}, IntAttr("align_corners", 1)), 1, false, 0, 0, 0, 0, 0},
		{"global mean", tfNode("Mean", []int64{1, 6, 6, 3}, []int64{1, 1, 1, 3}, []*Tensor{int32T([]int64{2}, 1, 2)}), 1, false, 0, 0, 0, 0, 0},
		{"slice across", tfNode("Slice", []int64{1, 6, 6, 3}, []int64{1, 6, 4, 3}, []*Tensor{int32T([]int64{4}, 0, 0, 1, 0), int32T([]int64{4}, 1, -1, 4, 3)}), 1, true, SpatialPoint, 0, 0, 0, 0},
		{"slice along", tfNode("Slice", []int64{1, 6, 6, 3}, []int64{1, 6, 4, 3}, []*Tensor{int32T([]int64{4}, 0, 0, 1, 0), int32T([]int64{4}, 1, -1, 4, 3)}), 2, false, 0, 0, 0, 0, 0},
		{"per-channel mul", tfNode("Mul", []int64{1, 6, 6, 3}, []int64{1, 6, 6, 3}, []*Tensor{zeros(3)}), 1, true, SpatialPoint, 0, 0, 0, 0},
	}
	for _, c := range cases {
		r, err := Spatial(c.n, c.axis)
		if !c.local {
			if !errors.Is(err, ErrNotSpatial) {
				t.Errorf("%s: rule %+v, err %v; want not spatially local", c.name, r, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.Kind != c.kind || (c.kind == SpatialWindow && (r.Kernel != c.k || r.Stride != c.s || r.PadBegin != c.pb || r.PadEnd != c.pe)) {
			t.Errorf("%s: kind %d kernel %d stride %d pads %d/%d; want %d, %d, %d, %d/%d", c.name, r.Kind, r.Kernel, r.Stride, r.PadBegin, r.PadEnd, c.kind, c.k, c.s, c.pb, c.pe)
		}
		if c.kind == SpatialPoint && (len(r.Inputs) == 0 || r.Inputs[0].Slot != 0) {
			t.Errorf("%s: banded inputs %v", c.name, r.Inputs)
		}
	}
}

// TestTFBandPadding checks when a band keeps padding SAME: where
// TensorFlow's SAME padding of the band's extents gives its pads.
func TestTFBandPadding(t *testing.T) {
	for _, c := range []struct {
		stride, a, b int64
		want         string
	}{
		// 3×3 stride 1 on 16 rows pads 1 and 1; SAME keeps a band's
		// extent, which a band with a halo does not.
		{1, 0, 8, ""}, {1, 4, 12, ""}, {1, 8, 16, ""},
		// Stride 2: 8 outputs, pad_total 1 (0 before, 1 after). The top
		// band reads rows [0, 9) for 4 outputs (SAME would give 5); the
		// bottom one rows [8, 16) and 1 row of padding, as SAME does.
		{2, 0, 4, ""}, {2, 4, 8, "SAME"},
	} {
		out := 16 / c.stride
		n := tfNode("Conv2D", []int64{1, 16, 16, 3}, []int64{1, out, out, 4}, []*Tensor{zeros(3, 3, 3, 4)}, StringAttr("padding", "SAME"), IntsAttr("strides", 1, c.stride, c.stride, 1))
		r, err := Spatial(n, 1)
		if err != nil {
			t.Fatal(err)
		}
		bd, err := r.Band(c.a, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.TFBandPadding(n, bd); got != c.want {
			t.Errorf("stride %d, rows [%d,%d) (band %+v): %q, want %q", c.stride, c.a, c.b, bd, got, c.want)
		}
	}
}
