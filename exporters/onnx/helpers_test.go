package onnx_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	importer "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
)

func mustImport(t testing.TB, b []byte) *ir.Graph {
	t.Helper()
	g, err := importer.Import(b, importer.Options{File: "model.onnx"})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return g
}

func mustExport(t testing.TB, g *ir.Graph, opts exporter.Options) []byte {
	t.Helper()
	b, err := exporter.Export(g, opts)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	return b
}

// dump prints everything the IR says about g, subgraphs included, in a
// stable text form for comparing graphs.
func dump(g *ir.Graph) string {
	var b strings.Builder
	dumpGraph(&b, g, "")
	return b.String()
}

func dumpGraph(b *strings.Builder, g *ir.Graph, indent string) {
	fmt.Fprintf(b, "%sgraph %q doc=%q opsets=%v\n", indent, g.Name, g.Doc, g.Opsets)
	for _, v := range g.Inputs {
		fmt.Fprintf(b, "%s  input %s %v doc=%q param=%v\n", indent, v.Name, v.Type, v.Doc, v.Data != nil)
	}
	for _, v := range g.Params {
		fmt.Fprintf(b, "%s  param %s %v %s\n", indent, v.Name, v.Type, tensorString(v.Data))
	}
	for _, n := range g.Nodes {
		fmt.Fprintf(b, "%s  node %q %s domain=%q doc=%q in=%v implicit=%v\n", indent, n.Name, n.Op, n.Domain, n.Doc, valueNames(n.Inputs), valueNames(n.Implicit))
		for _, o := range n.Outputs {
			if o == nil {
				fmt.Fprintf(b, "%s    out -\n", indent)
				continue
			}
			fmt.Fprintf(b, "%s    out %s %v doc=%q\n", indent, o.Name, o.Type, o.Doc)
		}
		for _, a := range n.Attrs {
			fmt.Fprintf(b, "%s    attr %s %v doc=%q ", indent, a.Name, a.Kind, a.Doc)
			switch a.Kind {
			case ir.AttrInt:
				fmt.Fprintf(b, "%d\n", a.Int)
			case ir.AttrFloat:
				fmt.Fprintf(b, "%v\n", math.Float32bits(a.Float))
			case ir.AttrString:
				fmt.Fprintf(b, "%q\n", a.Str)
			case ir.AttrInts:
				fmt.Fprintf(b, "%v\n", a.Ints)
			case ir.AttrFloats:
				fmt.Fprintf(b, "%v\n", a.Floats)
			case ir.AttrStrings:
				fmt.Fprintf(b, "%q\n", a.Strs)
			case ir.AttrTensor:
				fmt.Fprintf(b, "%s\n", tensorString(a.Tensor))
			case ir.AttrTensors:
				for _, t := range a.Tensors {
					fmt.Fprintf(b, "%s ", tensorString(t))
				}
				b.WriteString("\n")
			case ir.AttrGraph:
				b.WriteString("\n")
				dumpGraph(b, a.Graph, indent+"      ")
			case ir.AttrGraphs:
				b.WriteString("\n")
				for _, sg := range a.Graphs {
					dumpGraph(b, sg, indent+"      ")
				}
			default:
				b.WriteString("(other)\n")
			}
		}
	}
	for _, v := range g.Outputs {
		fmt.Fprintf(b, "%s  output %s %v\n", indent, v.Name, v.Type)
	}
}

func valueNames(vs []*ir.Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if v == nil {
			out[i] = "-"
		} else {
			out[i] = v.Name
		}
	}
	return out
}

func tensorString(t *ir.Tensor) string {
	if t == nil {
		return "<nil>"
	}
	h := sha256.New()
	h.Write(t.Raw)
	for _, s := range t.Strs {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return fmt.Sprintf("tensor(%q %v%v doc=%q %x)", t.Name, t.DType, t.Shape, t.Doc, h.Sum(nil)[:8])
}

// pythonONNX returns a Python interpreter that can import onnx, skipping the
// test in -short mode when there is none and failing it otherwise.
func pythonONNX(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import onnx").Run() == nil {
			return path
		}
	}
	if testing.Short() {
		t.Skip("python3 with onnx not found; skipped in -short mode")
	}
	t.Fatal("python3 with the onnx module not found: install the Debian package python3-onnx (apt-get install python3-onnx)")
	return ""
}

// requireSameOutputs runs models a and b in ONNX Runtime on inputs at
// levels disabled and all, and fails on every output of b that is not
// bitwise a's (what names b's rewrite, for the message).
func requireSameOutputs(t *testing.T, a, b string, inputs map[string]ort.Tensor, what string) {
	t.Helper()
	for _, level := range []string{"disabled", "all"} {
		ra, err := ort.Run(a, inputs, ort.MeasureOptions(level))
		if err != nil {
			t.Fatal(err)
		}
		rb, err := ort.Run(b, inputs, ort.MeasureOptions(level))
		if err != nil {
			t.Fatalf("level %s: %v", level, err)
		}
		for _, name := range ra.OutputNames {
			if !bytes.Equal(ra.Outputs[name].Data, rb.Outputs[name].Data) {
				t.Errorf("level %s: output %s differs %s", level, name, what)
			}
		}
	}
}
