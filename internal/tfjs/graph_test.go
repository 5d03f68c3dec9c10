package tfjs

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// This file writes small TensorFlow.js graph models (model.json in the
// proto3 JSON form of a GraphDef, plus one weight shard) for the tests.

// gnode is one NodeDef of a test graph.
type gnode struct {
	name, op string
	inputs   []string
	attr     map[string]any
}

// weight is one float32 Const of a test graph, stored in the shard.
type weight struct {
	name  string
	shape []int64
	data  []byte // little-endian float32
}

func dtAttr(dt string) map[string]any { return map[string]any{"type": dt} }

func intsAttr(v ...int64) map[string]any {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return map[string]any{"list": map[string]any{"i": s}}
}

func strAttr(s string) map[string]any {
	return map[string]any{"s": base64.StdEncoding.EncodeToString([]byte(s))}
}

func shapeJSON(shape []int64) map[string]any {
	dims := make([]any, len(shape))
	for i, d := range shape {
		dims[i] = map[string]any{"size": strconv.FormatInt(d, 10)}
	}
	return map[string]any{"dim": dims}
}

func placeholder(name, dt string, shape []int64) gnode {
	return gnode{name: name, op: "Placeholder", attr: map[string]any{
		"dtype": dtAttr(dt), "shape": map[string]any{"shape": shapeJSON(shape)}}}
}

// conv is a stride-1 NHWC Conv2D with the given padding.
func conv(name, x, w, padding string, control ...string) gnode {
	return gnode{name: name, op: "Conv2D", inputs: append([]string{x, w}, control...), attr: map[string]any{
		"T": dtAttr("DT_FLOAT"), "strides": intsAttr(1, 1, 1, 1), "dilations": intsAttr(1, 1, 1, 1),
		"padding": strAttr(padding), "data_format": strAttr("NHWC"),
		"explicit_paddings": map[string]any{"list": map[string]any{}}, "use_cudnn_on_gpu": map[string]any{"b": true}}}
}

// unary is a one-input op of type T=float (Relu, Identity, ...), or any
// op whose only attribute is T.
func unary(name, op string, inputs ...string) gnode {
	return gnode{name: name, op: op, inputs: inputs, attr: map[string]any{"T": dtAttr("DT_FLOAT")}}
}

func addN(name string, inputs ...string) gnode {
	n := 0
	for _, in := range inputs {
		if in[0] != '^' {
			n++
		}
	}
	return gnode{name: name, op: "AddN", inputs: inputs, attr: map[string]any{
		"T": dtAttr("DT_FLOAT"), "N": map[string]any{"i": strconv.Itoa(n)}}}
}

func noOp(name string, control ...string) gnode {
	return gnode{name: name, op: "NoOp", inputs: control}
}

// seededWeight returns a float32 weight filled by SeededInputs.
func seededWeight(t testing.TB, name string, shape ...int64) weight {
	t.Helper()
	in, err := SeededInputs([]InputSpec{{Name: name, DType: Float32, Shape: shape}}, 7)
	if err != nil {
		t.Fatal(err)
	}
	return weight{name: name, shape: shape, data: in[name].Data}
}

// writeModel writes model.json and weights.bin into dir: a Const node per
// weight (first, as converters write them), then nodes. It returns the
// model.json path.
func writeModel(t testing.TB, dir string, nodes []gnode, weights []weight) string {
	t.Helper()
	var all []map[string]any
	var specs []map[string]any
	var shard []byte
	for _, w := range weights {
		all = append(all, map[string]any{"name": w.name, "op": "Const", "attr": map[string]any{
			"dtype": dtAttr("DT_FLOAT"),
			"value": map[string]any{"tensor": map[string]any{"dtype": "DT_FLOAT", "tensorShape": shapeJSON(w.shape)}}}})
		specs = append(specs, map[string]any{"name": w.name, "shape": w.shape, "dtype": "float32"})
		shard = append(shard, w.data...)
	}
	for _, n := range nodes {
		m := map[string]any{"name": n.name, "op": n.op}
		if len(n.inputs) > 0 {
			m["input"] = n.inputs
		}
		if n.attr != nil {
			m["attr"] = n.attr
		}
		all = append(all, m)
	}
	model := map[string]any{
		"format":      "graph-model",
		"generatedBy": "remat-compile internal/tfjs tests",
		"convertedBy": "hand-written",
		"modelTopology": map[string]any{
			"node": all, "library": map[string]any{}, "versions": map[string]any{"producer": 1994}},
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
