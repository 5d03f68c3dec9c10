package shapes

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// The op cases are checked against an independent implementation: Debian's
// python3-onnx (onnx.shape_inference.infer_shapes, onnx 1.12, opsets up to
// 17). Every case that onnx can run must get, from onnx, the same element
// types and ranks, and every size onnx knows must be the one the case
// expects. Sizes onnx leaves unknown may be known here (constant folding,
// symbols).

const onnxRefScript = `
import json, sys
import onnx
from onnx import helper, AttributeProto, TensorProto

NAMES = {8:"string",1:"f32",2:"u8",3:"i8",4:"u16",5:"i16",6:"i32",7:"i64",9:"bool",10:"f16",11:"f64",12:"u32",13:"u64",16:"bf16"}

def tstr(vi):
    if vi is None or not vi.type.HasField("tensor_type"):
        return "none"
    tt = vi.type.tensor_type
    name = NAMES.get(tt.elem_type, "undef")
    if not tt.HasField("shape"):
        return name + "[*]"
    dims = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(str(d.dim_value))
        elif d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append("?")
    return name + "[" + ",".join(dims) + "]"

def mkattr(a):
    k, v, name = a["kind"], a["value"], a["name"]
    at = AttributeProto()
    at.name = name
    if k == "int":
        at.type = AttributeProto.INT; at.i = int(v)
    elif k == "float":
        at.type = AttributeProto.FLOAT; at.f = float(v)
    elif k == "string":
        at.type = AttributeProto.STRING; at.s = v.encode()
    elif k == "ints":
        at.type = AttributeProto.INTS; at.ints.extend([int(x) for x in v])
    elif k == "floats":
        at.type = AttributeProto.FLOATS; at.floats.extend([float(x) for x in v])
    elif k == "strings":
        at.type = AttributeProto.STRINGS; at.strings.extend([x.encode() for x in v])
    elif k == "tensor":
        at.type = AttributeProto.TENSOR
        at.t.CopyFrom(helper.make_tensor("value", v["elem"], v["dims"], v["data"]))
    return at

out = []
for c in json.load(sys.stdin):
    try:
        inputs, inits, names = [], [], []
        for a in c["inputs"]:
            if a["absent"]:
                names.append(""); continue
            names.append(a["name"])
            if a["data"] is not None:
                inits.append(helper.make_tensor(a["name"], a["elem"], a["dims"], a["data"]))
            else:
                inputs.append(helper.make_tensor_value_info(a["name"], a["elem"], a["dims"]))
        outs = ["y%d" % i for i in range(c["nout"])]
        node = helper.make_node(c["op"], names, outs)
        node.attribute.extend([mkattr(a) for a in c["attrs"]])
        g = helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name=o) for o in outs], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", c["opset"])])
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
        found = {vi.name: vi for vi in list(m.graph.output) + list(m.graph.value_info)}
        out.append({"types": [tstr(found.get(o)) for o in outs]})
    except Exception as e:
        out.append({"error": str(e).splitlines()[0] if str(e) else type(e).__name__})
json.dump(out, sys.stdout)
`

const python = "/usr/bin/python3"

func havePythonOnnx(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if err := exec.Command(python, "-c", "import onnx").Run(); err != nil {
		t.Skip("python3-onnx is not installed")
	}
}

var onnxCodes = func() map[ir.DType]int {
	m := map[ir.DType]int{}
	for code, dt := range onnxDTypes {
		if dt != ir.Undefined {
			m[dt] = code
		}
	}
	return m
}()

type refArg struct {
	Name   string `json:"name"`
	Elem   int    `json:"elem"`
	Dims   []any  `json:"dims"`
	Data   []any  `json:"data"`
	Absent bool   `json:"absent"`
}

type refAttr struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Value any    `json:"value"`
}

type refCase struct {
	Op     string    `json:"op"`
	Opset  int64     `json:"opset"`
	Inputs []refArg  `json:"inputs"`
	Attrs  []refAttr `json:"attrs"`
	Nout   int       `json:"nout"`
}

type refResult struct {
	Types []string `json:"types"`
	Error string   `json:"error"`
}

func toRef(t *testing.T, tc opCase) refCase {
	rc := refCase{Op: tc.op, Opset: tc.opset, Nout: max(tc.nout, 1), Attrs: []refAttr{}, Inputs: []refArg{}}
	for _, a := range tc.in {
		if a.absent {
			rc.Inputs = append(rc.Inputs, refArg{Absent: true})
			continue
		}
		tt := parseType(t, a.typ)
		ra := refArg{Name: a.name, Elem: onnxCodes[tt.DType]}
		if tt.Unranked {
			ra.Dims = nil
		} else {
			ra.Dims = []any{}
			for _, d := range tt.Shape {
				switch {
				case d.Known():
					ra.Dims = append(ra.Dims, d.Size)
				case d.Sym != "":
					ra.Dims = append(ra.Dims, d.Sym)
				default:
					ra.Dims = append(ra.Dims, nil)
				}
			}
		}
		if a.isConst {
			ra.Data = []any{}
			for _, v := range a.ints {
				ra.Data = append(ra.Data, v)
			}
			for _, v := range a.floats {
				ra.Data = append(ra.Data, v)
			}
		}
		rc.Inputs = append(rc.Inputs, ra)
	}
	for _, a := range tc.attrs {
		ra := refAttr{Name: a.Name}
		switch a.Kind {
		case ir.AttrInt:
			ra.Kind, ra.Value = "int", a.Int
		case ir.AttrFloat:
			ra.Kind, ra.Value = "float", a.Float
		case ir.AttrString:
			ra.Kind, ra.Value = "string", string(a.Str)
		case ir.AttrInts:
			ra.Kind, ra.Value = "ints", a.Ints
		case ir.AttrFloats:
			ra.Kind, ra.Value = "floats", a.Floats
		case ir.AttrStrings:
			var ss []string
			for _, s := range a.Strs {
				ss = append(ss, string(s))
			}
			ra.Kind, ra.Value = "strings", ss
		case ir.AttrTensor:
			var data []any
			if fs, ok := a.Tensor.Float64s(); ok && a.Tensor.DType.IsFloat() {
				for _, f := range fs {
					data = append(data, f)
				}
			} else if is, ok := a.Tensor.Int64s(); ok {
				for _, v := range is {
					data = append(data, v)
				}
			}
			ra.Kind = "tensor"
			ra.Value = map[string]any{"elem": onnxCodes[a.Tensor.DType], "dims": a.Tensor.Shape, "data": data}
		default:
			t.Fatalf("attribute kind %s not supported by the reference harness", a.Kind)
		}
		rc.Attrs = append(rc.Attrs, ra)
	}
	return rc
}

func runOnnxRef(t *testing.T, cases []refCase) []refResult {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", onnxRefScript)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, stderr.String())
	}
	var res []refResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python3 output: %v", err)
	}
	if len(res) != len(cases) {
		t.Fatalf("python3 answered %d cases, want %d", len(res), len(cases))
	}
	return res
}

// agrees reports whether want (ours) is consistent with ref (onnx's):
// same element type and rank, and every size onnx knows equal.
func agrees(t *testing.T, want, ref string, inputSyms map[string]bool) bool {
	if ref == "none" {
		return false
	}
	w, r := parseType(t, want), parseType(t, ref)
	if w.DType != r.DType {
		return false
	}
	if r.Unranked {
		return true
	}
	if w.Unranked || len(w.Shape) != len(r.Shape) {
		return false
	}
	for i, rd := range r.Shape {
		wd := w.Shape[i]
		switch {
		case rd.Known():
			if !wd.Known() || wd.Size != rd.Size {
				return false
			}
		case rd.Sym != "" && inputSyms[rd.Sym]:
			if wd.Sym != rd.Sym && !wd.Known() {
				return false
			}
		}
	}
	return true
}

func TestOpsAgainstOnnx(t *testing.T) {
	havePythonOnnx(t)
	var cases []opCase
	var refs []refCase
	for _, tc := range opCases {
		if tc.noPy != "" || tc.opset > 17 || strings.HasPrefix(tc.want[0], "err:") {
			continue
		}
		cases = append(cases, tc)
		refs = append(refs, toRef(t, tc))
	}
	res := runOnnxRef(t, refs)
	checked := 0
	for i, tc := range cases {
		syms := map[string]bool{}
		for _, a := range tc.in {
			if a.typ != "" && !a.absent {
				for _, d := range parseType(t, a.typ).Shape {
					if d.Sym != "" {
						syms[d.Sym] = true
					}
				}
			}
		}
		if res[i].Error != "" {
			t.Errorf("%s: onnx fails: %s", tc.name, res[i].Error)
			continue
		}
		for j, w := range tc.want {
			if j >= len(res[i].Types) || !agrees(t, w, res[i].Types[j], syms) {
				t.Errorf("%s: output %d: want %s, onnx infers %v", tc.name, j, w, res[i].Types)
			}
		}
		checked++
	}
	t.Logf("%d op cases agree with onnx %s shape inference", checked, "1.12")
}

// The comparison must be able to fail.
func TestAgrees(t *testing.T) {
	syms := map[string]bool{"batch": true}
	for _, tc := range []struct {
		want, ref string
		ok        bool
	}{
		{"f32[1,2]", "f32[1,2]", true},
		{"f32[1,2]", "f32[1,3]", false},
		{"f32[1,2]", "f16[1,2]", false},
		{"f32[1,2]", "f32[1,2,1]", false},
		{"f32[1,2]", "f32[?,unk__0]", true},
		{"f32[batch,2]", "f32[batch,2]", true},
		{"f32[?,2]", "f32[batch,2]", false},
		{"f32[?,2]", "f32[2]", false},
		{"f32[1,2]", "none", false},
	} {
		if got := agrees(t, tc.want, tc.ref, syms); got != tc.ok {
			t.Errorf("agrees(%s, %s) = %v, want %v", tc.want, tc.ref, got, tc.ok)
		}
	}
}
