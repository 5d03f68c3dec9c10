package shapes_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/remat-compile/remat/internal/tfjs"
)

// Small TensorFlow.js graph models that exercise, in TensorFlow.js, the
// ops and attributes the real models do not (the research note's other
// ops, both paddings, dilations, the StridedSlice masks, batch_dims,
// keep_dims, …), so that the rules for them are held to the runtime too.

// gn is one NodeDef of a test model.
type gn struct {
	name, op string
	in       []string
	attr     map[string]any
}

// gw is one Const of a test model, its value in the weight shard.
type gw struct {
	name  string
	shape []int64
	i32   []int64   // an int32 weight, or
	f32   []float32 // a float32 one
}

func aType(dt string) map[string]any { return map[string]any{"type": dt} }
func aInt(v int64) map[string]any    { return map[string]any{"i": strconv.FormatInt(v, 10)} }
func aBool(v bool) map[string]any    { return map[string]any{"b": v} }
func aFloat(v float32) map[string]any {
	return map[string]any{"f": v}
}
func aStr(s string) map[string]any {
	return map[string]any{"s": base64.StdEncoding.EncodeToString([]byte(s))}
}
func aInts(v ...int64) map[string]any {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return map[string]any{"list": map[string]any{"i": s}}
}
func aStrs(v ...string) map[string]any {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = base64.StdEncoding.EncodeToString([]byte(x))
	}
	return map[string]any{"list": map[string]any{"s": s}}
}

// attrs builds an attribute map from name, value pairs; T is float unless
// given.
func at(kv ...any) map[string]any {
	m := map[string]any{"T": aType("DT_FLOAT")}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func op(name, o string, in []string, kv ...any) gn { return gn{name, o, in, at(kv...)} }
func ins(s ...string) []string                     { return s }
func wi(name string, shape []int64, v ...int64) gw { return gw{name: name, shape: shape, i32: v} }
func vec(n int64) []int64                          { return []int64{n} }
func sc() []int64                                  { return []int64{} }

// convAttrs are a Conv2D's or a pool's NHWC attributes.
// dilations default to 1 (TensorFlow.js needs the attribute, which
// TensorFlow always writes).
func convAttrs(padding string, strides []int64, kv ...any) []any {
	a := []any{"padding", aStr(padding), "strides", aInts(strides...), "data_format", aStr("NHWC"), "dilations", aInts(1, 1, 1, 1)}
	return append(a, kv...)
}

// writeTFJS writes model.json and its shard into dir: the inputs as float32
// Placeholders, the weights as Consts (their values in the shard, in
// manifest order), then the nodes.
func writeTFJS(t *testing.T, dir string, inputs []tfjs.InputSpec, weights []gw, nodes []gn) string {
	t.Helper()
	var all []map[string]any
	for _, in := range inputs {
		dims := make([]any, len(in.Shape))
		for i, d := range in.Shape {
			dims[i] = map[string]any{"size": strconv.FormatInt(d, 10)}
		}
		dt := "DT_FLOAT"
		if in.DType == tfjs.Int32 {
			dt = "DT_INT32"
		}
		all = append(all, map[string]any{"name": in.Name, "op": "Placeholder",
			"attr": map[string]any{"dtype": aType(dt), "shape": map[string]any{"shape": map[string]any{"dim": dims}}}})
	}
	var specs []map[string]any
	var shard []byte
	for _, w := range weights {
		dt, mdt := "DT_INT32", "int32"
		if w.i32 == nil {
			dt, mdt = "DT_FLOAT", "float32"
			for _, v := range w.f32 {
				shard = binary.LittleEndian.AppendUint32(shard, math.Float32bits(v))
			}
		} else {
			for _, v := range w.i32 {
				shard = binary.LittleEndian.AppendUint32(shard, uint32(int32(v)))
			}
		}
		dims := make([]any, len(w.shape))
		for i, d := range w.shape {
			dims[i] = map[string]any{"size": strconv.FormatInt(d, 10)}
		}
		all = append(all, map[string]any{"name": w.name, "op": "Const", "attr": map[string]any{
			"dtype": aType(dt), "value": map[string]any{"tensor": map[string]any{"dtype": dt, "tensorShape": map[string]any{"dim": dims}}}}})
		specs = append(specs, map[string]any{"name": w.name, "shape": w.shape, "dtype": mdt})
	}
	for _, n := range nodes {
		m := map[string]any{"name": n.name, "op": n.op, "attr": n.attr}
		if len(n.in) > 0 {
			m["input"] = n.in
		}
		all = append(all, m)
	}
	model := map[string]any{
		"format": "graph-model", "generatedBy": "remat-compile passes/shapes tests", "convertedBy": "hand-written",
		"modelTopology":   map[string]any{"node": all, "library": map[string]any{}, "versions": map[string]any{"producer": 1}},
		"weightsManifest": []any{map[string]any{"paths": []string{"weights.bin"}, "weights": specs}},
	}
	data, err := json.MarshalIndent(model, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), shard, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func f32in(name string, shape ...int64) tfjs.InputSpec {
	return tfjs.InputSpec{Name: name, DType: tfjs.Float32, Shape: shape}
}

func fw(name string, shape ...int64) gw {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%7) / 7
	}
	return gw{name: name, shape: shape, f32: v}
}

// TestTFJSAgreementOps checks the rules of ops and attributes beyond the
// real models against TensorFlow.js, as TestTFJSAgreement does.
func TestTFJSAgreementOps(t *testing.T) {
	dir := tfjsDirOrSkip(t)
	type model struct {
		name    string
		inputs  []tfjs.InputSpec
		weights []gw
		nodes   []gn
	}
	i32 := "DT_INT32"
	models := []model{
		{name: "elementwise", inputs: []tfjs.InputSpec{f32in("x", 2, 3, 4), f32in("y", 3, 1)},
			weights: []gw{fw("alpha", 4), wi("two", sc(), 2)},
			nodes: []gn{
				op("max", "Maximum", ins("x", "y")), op("min", "Minimum", ins("y", "x")), op("prelu", "Prelu", ins("x", "alpha")),
				op("leaky", "LeakyRelu", ins("x"), "alpha", aFloat(0.2)), op("tanh", "Tanh", ins("x")), op("abs", "Abs", ins("x")),
				op("elu", "Elu", ins("x")), op("selu", "Selu", ins("x")), op("sq", "Square", ins("y")), op("rsqrt", "Rsqrt", ins("abs")),
				op("clip", "ClipByValue", ins("x", "alpha", "alpha")), op("softmax", "Softmax", ins("x")), op("lsm", "LogSoftmax", ins("x")),
				op("gt", "Greater", ins("x", "y")), op("and", "LogicalAnd", ins("gt", "gt")), op("not", "LogicalNot", ins("and")),
				op("sel", "Select", ins("gt", "x", "max")), op("sel2", "SelectV2", ins("gt", "y", "alpha")),
				op("cast", "Cast", ins("gt"), "SrcT", aType("DT_BOOL"), "DstT", aType("DT_INT32")),
				op("castf", "Cast", ins("x"), "SrcT", aType("DT_FLOAT"), "DstT", aType("DT_INT64")),
				op("fdiv", "FloorDiv", ins("cast", "two"), "T", aType(i32)), op("fmod", "FloorMod", ins("x", "y")),
				op("div", "RealDiv", ins("x", "y")), op("pow", "Pow", ins("abs", "y")), op("sqd", "SquaredDifference", ins("y", "x")),
				op("zeros", "ZerosLike", ins("y")), op("ones", "OnesLike", ins("cast"), "T", aType(i32)),
				op("addn", "AddN", ins("x", "max", "min"), "N", aInt(3)), op("isnan", "IsNan", ins("x")),
				op("cumsum", "Cumsum", ins("x", "two"), "Tidx", aType(i32)),
			}},
		{name: "shapes", inputs: []tfjs.InputSpec{f32in("x", 2, 6, 4, 3)},
			weights: []gw{
				wi("perm", vec(4), 0, 3, 1, 2), wi("m1", vec(1), -1), wi("ax0", sc(), 0), wi("ax1", sc(), 1), wi("ax3", sc(), 3),
				wi("idx", []int64{2, 2}, 0, 1, 1, 0), wi("bidx", []int64{2, 3}, 0, 1, 2, 3, 2, 1), wi("pads", []int64{4, 2}, 0, 0, 1, 2, 2, 1, 0, 0),
				wi("mult", vec(4), 1, 2, 1, 4), wi("begin", vec(4), 0, 1, 0, 0), wi("size", vec(4), -1, 3, 2, -1),
				wi("splits", vec(3), 1, -1, 2), wi("red", vec(2), 1, 2), wi("depth", sc(), 5), wi("on", sc(), 1), wi("off", sc(), 0),
				wi("k", sc(), 2), wi("gndidx", []int64{3, 2}, 0, 1, 1, 5, 0, 0), wi("bshape", vec(3), 2, 4, 3), wi("tbr", vec(2), 1, 2),
				wi("two", vec(1), 2), wi("bpads", []int64{2, 2}, 0, 0, 0, 2), wi("bshape4", vec(4), 3, 2, 6, 4),
			},
			nodes: []gn{
				op("shape", "Shape", ins("x"), "out_type", aType(i32)), op("nelem", "Size", ins("x"), "out_type", aType(i32)),
				op("rank", "Rank", ins("x")),
				op("tr", "Transpose", ins("x", "perm"), "Tperm", aType(i32)),
				op("flat", "Reshape", ins("x", "m1"), "Tshape", aType(i32)),
				op("ed", "ExpandDims", ins("x", "ax1"), "Tdim", aType(i32)),
				op("sq", "Squeeze", ins("ed"), "squeeze_dims", aInts(1)),
				op("g1", "GatherV2", ins("x", "idx", "ax1"), "Tparams", aType("DT_FLOAT"), "Tindices", aType(i32), "Taxis", aType(i32), "batch_dims", aInt(0)),
				op("g2", "GatherV2", ins("x", "bidx", "ax1"), "Tparams", aType("DT_FLOAT"), "Tindices", aType(i32), "Taxis", aType(i32), "batch_dims", aInt(1)),
				op("gnd", "GatherNd", ins("x", "gndidx"), "Tparams", aType("DT_FLOAT"), "Tindices", aType(i32)),
				op("pad", "Pad", ins("x", "pads"), "Tpaddings", aType(i32)),
				op("mpad", "MirrorPad", ins("x", "pads"), "Tpaddings", aType(i32), "mode", aStr("REFLECT")),
				op("tile", "Tile", ins("x", "mult"), "Tmultiples", aType(i32)),
				op("slice", "Slice", ins("x", "begin", "size"), "Index", aType(i32)),
				{name: "split", op: "Split", in: ins("ax1", "x"), attr: at("num_split", aInt(3))},
				{name: "splitv", op: "SplitV", in: ins("x", "splits", "ax3"), attr: at("num_split", aInt(3), "Tlen", aType(i32))},
				op("concat", "ConcatV2", ins("split", "split:1", "split:2", "ax3"), "N", aInt(3), "Tidx", aType(i32)),
				op("pack", "Pack", ins("split", "split:2"), "N", aInt(2), "axis", aInt(-1)),
				{name: "unpack", op: "Unpack", in: ins("x"), attr: at("num", aInt(3), "axis", aInt(3))},
				op("mean", "Mean", ins("x", "red"), "Tidx", aType(i32), "keep_dims", aBool(false)),
				op("sum", "Sum", ins("x", "red"), "Tidx", aType(i32), "keep_dims", aBool(true)),
				op("maxr", "Max", ins("x", "ax3"), "Tidx", aType(i32), "keep_dims", aBool(false)),
				op("prod", "Prod", ins("shape", "ax0"), "T", aType(i32), "Tidx", aType(i32), "keep_dims", aBool(false)),
				op("argmin", "ArgMin", ins("x", "ax1"), "Tidx", aType(i32), "output_type", aType("DT_INT32")),
				op("argmax", "ArgMax", ins("x", "ax3"), "Tidx", aType(i32)),
				{name: "topk", op: "TopKV2", in: ins("x", "k"), attr: at("sorted", aBool(true))},
				op("onehot", "OneHot", ins("argmin", "depth", "on", "off"), "T", aType(i32), "TI", aType(i32), "axis", aInt(-1)),
				op("fill", "Fill", ins("bshape", "on"), "T", aType(i32), "index_type", aType(i32)),
				op("range", "Range", ins("ax0", "prod", "ax1"), "Tidx", aType(i32)),
				op("bcast", "BroadcastTo", ins("unpack", "bshape4"), "Tidx", aType(i32)),
				op("rev", "ReverseV2", ins("x", "tbr"), "Tidx", aType(i32)),
				op("d2s", "DepthToSpace", ins("tile"), "block_size", aInt(2), "data_format", aStr("NHWC")),
				op("s2b", "SpaceToBatchND", ins("x", "tbr", "bpads"), "Tblock_shape", aType(i32), "Tpaddings", aType(i32)),
				op("b2s", "BatchToSpaceND", ins("s2b", "tbr", "bpads"), "Tblock_shape", aType(i32), "Tcrops", aType(i32)),
			}},
		{name: "strided slices", inputs: []tfjs.InputSpec{f32in("x", 5, 6, 7)},
			weights: []gw{
				wi("b0", vec(2), 1, -1), wi("e0", vec(2), 4, 0), wi("s1", vec(2), 1, 1), wi("s2", vec(3), 2, -1, 3),
				wi("b3", vec(3), 0, 0, 1), wi("e3", vec(3), 0, 0, 5), wi("s3", vec(3), 1, 1, 2), wi("z3", vec(3), 0, 0, 0), wi("o3", vec(3), 1, 1, 1),
				wi("bneg", vec(1), -2), wi("eneg", vec(1), -6), wi("sneg", vec(1), -2), wi("big", vec(2), -100, 100),
			},
			nodes: []gn{
				op("shrink", "StridedSlice", ins("x", "b0", "e0", "s1"), "Index", aType(i32), "shrink_axis_mask", aInt(2)),
				op("masks", "StridedSlice", ins("x", "b3", "e3", "s2"), "Index", aType(i32), "begin_mask", aInt(3), "end_mask", aInt(1)),
				op("ellipsis", "StridedSlice", ins("x", "b3", "e3", "s3"), "Index", aType(i32), "ellipsis_mask", aInt(1), "new_axis_mask", aInt(2)),
				op("newaxis", "StridedSlice", ins("x", "z3", "z3", "o3"), "Index", aType(i32), "new_axis_mask", aInt(1), "begin_mask", aInt(6), "end_mask", aInt(6)),
				op("negstride", "StridedSlice", ins("x", "bneg", "eneg", "sneg"), "Index", aType(i32)),
				op("clamped", "StridedSlice", ins("x", "big", "big", "s1"), "Index", aType(i32), "begin_mask", aInt(1), "end_mask", aInt(2)),
				op("reversed", "StridedSlice", ins("x", "bneg", "bneg", "sneg"), "Index", aType(i32), "begin_mask", aInt(1), "end_mask", aInt(1)),
			}},
		{name: "nn", inputs: []tfjs.InputSpec{f32in("x", 1, 15, 13, 4), f32in("v", 2, 3, 5)},
			weights: []gw{
				fw("w", 3, 3, 4, 6), fw("wd", 3, 3, 4, 2), fw("b6", 6), fw("b8", 8), fw("m", 4, 5), fw("bm", 2, 3, 4),
				wi("size", vec(2), 20, 9), wi("isz", vec(4), 1, 15, 13, 4), fw("wt", 3, 3, 4, 6), wi("cropsize", vec(2), 4, 4),
				fw("boxes", 3, 4), wi("bidx", vec(3), 0, 0, 0), wi("vshape", vec(2), 6, 5),
			},
			nodes: []gn{
				op("conv_same", "Conv2D", ins("x", "w"), convAttrs("SAME", []int64{1, 2, 2, 1})...),
				op("conv_valid", "Conv2D", ins("x", "w"), convAttrs("VALID", []int64{1, 2, 3, 1})...),
				op("conv_dil", "Conv2D", ins("x", "w"), convAttrs("VALID", []int64{1, 1, 1, 1}, "dilations", aInts(1, 2, 3, 1))...),
				op("conv_explicit", "Conv2D", ins("x", "w"), convAttrs("EXPLICIT", []int64{1, 2, 1, 1}, "explicit_paddings", aInts(0, 0, 1, 2, 3, 0, 0, 0))...),
				op("fused", "_FusedConv2D", ins("x", "w", "b6"), convAttrs("SAME", []int64{1, 1, 1, 1}, "fused_ops", aStrs("BiasAdd", "Relu6"), "num_args", aInt(1))...),
				op("dw", "DepthwiseConv2dNative", ins("x", "wd"), convAttrs("SAME", []int64{1, 2, 2, 1})...),
				op("fdw", "FusedDepthwiseConv2dNative", ins("x", "wd", "b8"), convAttrs("VALID", []int64{1, 1, 1, 1}, "fused_ops", aStrs("BiasAdd", "Relu"), "num_args", aInt(1))...),
				op("deconv", "Conv2DBackpropInput", ins("isz", "wt", "conv_same"), convAttrs("SAME", []int64{1, 2, 2, 1})...),
				op("maxpool", "MaxPool", ins("x"), convAttrs("SAME", []int64{1, 2, 2, 1}, "ksize", aInts(1, 3, 3, 1))...),
				op("avgpool", "AvgPool", ins("x"), convAttrs("VALID", []int64{1, 3, 2, 1}, "ksize", aInts(1, 3, 2, 1))...),
				op("bilinear", "ResizeBilinear", ins("x", "size"), "align_corners", aBool(true), "half_pixel_centers", aBool(false)),
				op("nearest", "ResizeNearestNeighbor", ins("x", "size"), "align_corners", aBool(false), "half_pixel_centers", aBool(true)),
				op("crop", "CropAndResize", ins("x", "boxes", "bidx", "cropsize"), "method", aStr("bilinear"), "extrapolation_value", aFloat(0)),
				op("v2d", "Reshape", ins("v", "vshape"), "Tshape", aType(i32)),
				op("mm", "MatMul", ins("v2d", "m"), "transpose_a", aBool(false), "transpose_b", aBool(true)),
				op("bmm", "BatchMatMulV2", ins("v", "bm"), "adj_x", aBool(true), "adj_y", aBool(false)),
				op("biasadd", "BiasAdd", ins("conv_valid", "b6"), "data_format", aStr("NHWC")),
			}},
	}
	models = append(models, model{name: "data-dependent", inputs: []tfjs.InputSpec{f32in("boxes", 10, 4), f32in("scores", 10)},
		weights: []gw{wi("maxout", sc(), 5), {name: "iou", shape: sc(), f32: []float32{0.5}}, {name: "thr", shape: sc(), f32: []float32{0}},
			{name: "sigma", shape: sc(), f32: []float32{0}}, {name: "zero", shape: sc(), f32: []float32{0}}},
		nodes: []gn{
			{name: "nms5", op: "NonMaxSuppressionV5", in: ins("boxes", "scores", "maxout", "iou", "thr", "sigma"), attr: at("pad_to_max_output_size", aBool(false))},
			op("pos", "Greater", ins("boxes", "zero")),
			{name: "where", op: "Where", in: ins("pos"), attr: at("T", aType("DT_BOOL"))},
			{name: "unique", op: "Unique", in: ins("scores"), attr: at("out_idx", aType("DT_INT32"))},
		}})
	var am []agreeModel
	for _, m := range models {
		path := writeTFJS(t, filepath.Join(t.TempDir(), m.name), m.inputs, m.weights, m.nodes)
		am = append(am, agreeModel{name: m.name, path: path, inputs: m.inputs})
	}
	// The sizes of the last model depend on the data; tfjs 4.22's
	// NonMaxSuppressionV5 returns two of TensorFlow's three outputs (no
	// valid_outputs). (Its NonMaxSuppressionV4 cannot run at all in
	// execute(), which the harness uses for models its compile() accepts.)
	am[len(am)-1].dynamic = true
	am[len(am)-1].notInTFJS = []string{"nms5:2"}
	rows := checkAgreement(t, dir, am)
	if len(rows) != len(models) {
		t.Errorf("%d of %d models checked", len(rows), len(models))
	}
	t.Log(agreementTable(rows))
}
