package onnx_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	onnx "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/ir"
)

// pythonONNX returns a Python interpreter that can import onnx and numpy,
// skipping the test in -short mode when there is none and failing it
// otherwise.
func pythonONNX(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import onnx, numpy").Run() == nil {
			return path
		}
	}
	if testing.Short() {
		t.Skip("python3 with onnx not found; skipped in -short mode")
	}
	t.Fatal("python3 with the onnx module not found: install the Debian package python3-onnx (apt-get install python3-onnx)")
	return ""
}

// TestDecodeMatchesPythonONNX builds tensors with onnx.helper and
// onnx.numpy_helper, the reference implementation: for every element type
// the typed field (make_tensor) and raw_data (numpy bytes) must decode to the
// same bytes, and float values must match numpy's.
func TestDecodeMatchesPythonONNX(t *testing.T) {
	py := pythonONNX(t)
	dir := t.TempDir()
	script := `
import json, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T

cases = [
    ("f32", T.FLOAT, np.float32, [1.5, -2.0, 3.25, 1e-30]),
    ("f64", T.DOUBLE, np.float64, [1.5, -2.0, 1e300]),
    ("f16", T.FLOAT16, np.float16, [1.0, -2.0, 0.333251953125, 65504.0, 5.960464477539063e-08]),
    ("i8", T.INT8, np.int8, [-128, -1, 0, 127]),
    ("u8", T.UINT8, np.uint8, [0, 1, 255]),
    ("i16", T.INT16, np.int16, [-32768, -1, 300]),
    ("u16", T.UINT16, np.uint16, [0, 65535]),
    ("i32", T.INT32, np.int32, [-2147483648, -1, 7]),
    ("i64", T.INT64, np.int64, [-9223372036854775808, -1, 1 << 40]),
    ("u32", T.UINT32, np.uint32, [0, 4294967295]),
    ("u64", T.UINT64, np.uint64, [0, 18446744073709551615]),
    ("bool", T.BOOL, np.bool_, [True, False, True]),
    ("c64", T.COMPLEX64, np.complex64, [1 + 2j, -3.5 - 0.5j]),
    ("c128", T.COMPLEX128, np.complex128, [1 + 2j, -3.5 - 0.5j]),
]
inits, expect = [], {}
for name, dt, npt, vals in cases:
    arr = np.array(vals, dtype=npt).reshape(len(vals))
    inits.append(helper.make_tensor(name + "_typed", dt, [len(vals)], arr.tolist() if dt not in (T.FLOAT16,) else arr))
    inits.append(numpy_helper.from_array(arr, name + "_raw"))
    if npt in (np.float32, np.float64, np.float16):
        expect[name] = [float(v) for v in arr.astype(np.float64)]
# bfloat16: values exactly representable, so rounding cannot matter.
bf = [1.0, -2.5, 0.15625, 3.0]
inits.append(helper.make_tensor("bf16_typed", T.BFLOAT16, [4], bf))
raw = np.array(bf, dtype=np.float32).view(np.uint32) >> 16
inits.append(helper.make_tensor("bf16_raw", T.BFLOAT16, [4], raw.astype("<u2").tobytes(), raw=True))
expect["bf16"] = bf
inits.append(helper.make_tensor("str_typed", T.STRING, [2], [b"ab", b"\xff"]))
inits.append(numpy_helper.from_array(np.array([b"ab", b"\xff"], dtype=object), "str_raw"))

outs = []
nodes = []
for t in inits:
    nodes.append(helper.make_node("Identity", [t.name], [t.name + "_out"]))
    outs.append(helper.make_tensor_value_info(t.name + "_out", t.data_type, list(t.dims)))
g = helper.make_graph(nodes, "dtypes", [], outs, initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/dtypes.onnx")
json.dump(expect, open(sys.argv[1] + "/expect.json", "w"))
`
	cmd := exec.Command(py, "-c", script, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	g, err := onnx.ImportFile(filepath.Join(dir, "dtypes.onnx"), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var expect map[string][]float64
	data, err := os.ReadFile(filepath.Join(dir, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &expect); err != nil {
		t.Fatal(err)
	}
	params := map[string]*ir.Tensor{}
	for _, p := range g.Params {
		params[p.Name] = p.Data
	}
	checked := 0
	for name, typed := range params {
		base, ok := strings.CutSuffix(name, "_typed")
		if !ok {
			continue
		}
		raw := params[base+"_raw"]
		if raw == nil {
			t.Fatalf("%s_raw missing", base)
		}
		if typed.DType != raw.DType {
			t.Errorf("%s: dtypes %v and %v", base, typed.DType, raw.DType)
		}
		enc := typed.Ext.(*onnx.TensorInfo).Encoding
		if base != "str" && enc == onnx.EncRaw {
			t.Errorf("%s_typed came from raw_data; the test wants a typed field", base)
		}
		if !bytes.Equal(typed.Raw, raw.Raw) || len(typed.Strs) != len(raw.Strs) {
			t.Errorf("%s: typed field decodes to % x, raw_data to % x", base, typed.Raw, raw.Raw)
		}
		for i := range typed.Strs {
			if !bytes.Equal(typed.Strs[i], raw.Strs[i]) {
				t.Errorf("%s: string %d differs", base, i)
			}
		}
		if want, ok := expect[base]; ok {
			got, _ := typed.Float64s()
			if !slices.Equal(got, want) {
				t.Errorf("%s values = %v, want %v", base, got, want)
			}
		}
		checked++
	}
	if checked != 16 {
		t.Errorf("checked %d element types, want 16", checked)
	}
}
