package irtext_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtest"
	"github.com/remat-compile/remat/ir/irtext"
)

var update = flag.Bool("update", false, "rewrite testdata/*.txt with the printed form")

// splitHeader separates a golden file's leading comment lines, a
// description that Print cannot reproduce, from the IR text.
func splitHeader(src string) (header, body string) {
	for strings.HasPrefix(src[len(header):], "#") {
		i := strings.IndexByte(src[len(header):], '\n')
		if i < 0 {
			break
		}
		header = src[:len(header)+i+1]
	}
	return header, src[len(header):]
}

// TestGolden parses each testdata file and prints it back: the text must
// not change. Leading comment lines are a description and are skipped.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			header, body := splitHeader(string(data))
			g, err := irtext.Parse(file, string(data))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := irtext.Print(&b, g); err != nil {
				t.Errorf("Print: %v", err)
			}
			got := b.String()
			if got != irtext.Format(g) {
				t.Errorf("Print and Format disagree")
			}
			if *update {
				if got != body {
					if err := os.WriteFile(file, []byte(header+got), 0o666); err != nil {
						t.Fatal(err)
					}
					t.Logf("updated %s", file)
				}
				return
			}
			if got != body {
				t.Errorf("Format(Parse(%s)) differs from the file (-file +printed):\n%s", file, irtest.Diff(body, got))
			}
			if err := ir.Verify(g); err != nil {
				t.Errorf("Verify: %v", err)
			}
			g2, err := irtext.Parse(file, got)
			if err != nil {
				t.Fatalf("reparse: %v", err)
			}
			compareGraphs(t, g, g2)
		})
	}
}

// TestErrors checks that bad text is rejected with a positioned message
// that says what was expected.
func TestErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown value", "graph g {\n  y = Relu(x)\n}", `t.ir:2:12: undefined value "x"`},
		{"unknown unnamed value", "graph g {\n  input x:f32[2]\n  return v9\n}", `t.ir:3:10: undefined value "v9"`},
		{"redefinition", "graph g {\n  input x:f32[2]\n  x = Relu(x)\n}", `t.ir:3:3: value x already defined at 2:9`},
		{"redefinition in subgraph", "graph g {\n  input c:bool[]\n  y = If(c) {then_branch=graph t {\n    y = Identity(c)\n    return y\n  }, else_branch=graph e {\n    return c\n  }}\n  return y\n}",
			`t.ir:4:5: value y already defined at 3:3`},
		{"own output in subgraph", "graph g {\n  input c:bool[]\n  y = If(c) {then_branch=graph t {\n    return y\n  }}\n}",
			`t.ir:4:12: value "y" is an output of the node being defined (at 3:3) and cannot be used inside it`},
		{"sibling scope", "graph g {\n  input c:bool[]\n  y = If(c) {then_branch=graph t {\n    z = Identity(c)\n    return z\n  }, else_branch=graph e {\n    return z\n  }}\n}",
			`t.ir:7:12: value "z" of graph t is not visible here`},
		{"redefined unnamed", "graph g {\n  input v1:f32[2]\n  v1 = Relu(v1)\n}", `t.ir:3:3: value v1 already defined at 2:9`},
		{"bad dtype", "graph g {\n  input x:float[2]\n}", `t.ir:2:11: unknown element type "float" (expected a type such as f32[1,3,224,224])`},
		{"bad dim", "graph g {\n  input x:f32[2,-1]\n}", `t.ir:2:17: expected a dimension (a size, a symbol or ?), found "-1"`},
		{"missing type bracket", "graph g {\n  input x:f32\n}", `t.ir:2:14: expected "[" after the element type, found end of line`},
		{"unclosed kind", "graph g {\n  input x:seq<f32[2]\n}", `t.ir:2:21: expected ">" to close the seq type, found end of line`},
		{"unbalanced graph brace", "graph g {\n  input x:f32[2]\n  return x\n", `t.ir:4:1: expected "}" to close graph g opened at 1:9, found end of file`},
		{"extra brace", "graph g {\n}\n}\n", `t.ir:3:1: expected end of file after the graph, found "}"`},
		{"unbalanced attr brace", "graph g {\n  input x:f32[2]\n  y = Relu(x) {alpha=1.0\n  return y\n}", `t.ir:4:3: expected "," or "}" in the attributes opened at 3:15, found "return"`},
		{"unbalanced paren", "graph g {\n  input x:f32[2]\n  y = Relu(x\n  return y\n}", `t.ir:4:3: expected "," or ")" in the inputs of Relu opened at 3:11, found "return"`},
		{"unbalanced subgraph", "graph g {\n  input c:bool[]\n  y = If(c) {then_branch=graph t {\n    return c\n  }\n}", `t.ir:6:2: expected "}" to close graph g opened at 1:9, found end of file`},
		{"arity", "graph g {\n  input x:f32[2]\n  y = Add(x)\n}", `t.ir:3:7: Add takes exactly 2 inputs, found 1`},
		{"outputs arity", "graph g {\n  input x:f32[2]\n  y, z = Relu(x)\n}", `t.ir:3:10: Relu produces exactly 1 outputs, found 2`},
		{"missing equals", "graph g {\n  input x:f32[2]\n  y Relu(x)\n}", `t.ir:3:5: expected "," or "=" after output "y", found "Relu"`},
		{"not a graph", "node g {}", `t.ir:1:1: expected "graph", found "node"`},
		{"unterminated string", "graph \"g {\n}", `t.ir:1:7: string literal not terminated`},
		{"bad character", "graph g {\n  input x:f32[2] @\n}", `t.ir:2:18: unexpected character '@'`},
		{"input after node", "graph g {\n  input x:f32[2]\n  y = Relu(x)\n  input z:f32[2]\n}", `t.ir:4:3: input declaration after the first node; opsets, inputs and params come first`},
		{"statement after return", "graph g {\n  input x:f32[2]\n  return x\n  y = Relu(x)\n}", `t.ir:4:3: expected "}" after return, found "y"`},
		{"trailing junk", "graph g {\n  input x:f32[2] x\n}", `t.ir:2:18: expected end of line, found "x"`},
		{"absent graph output", "graph g {\n  return _\n}", `t.ir:2:10: expected a value name, found "_"`},
		{"param without data", "graph g {\n  param w:f32[2]\n}", `t.ir:2:17: expected "=" and the parameter's data, found end of line`},
		{"bare param", "graph g {\n  input w:f32[2]\n  param w\n}", `t.ir:3:9: param "w": expected "=" and the parameter's data`},
		{"too few elements", "graph g {\n  param w = f32[3]{1, 2}\n}", `t.ir:2:19: f32[3] needs 3 elements, found 2`},
		{"too many elements", "graph g {\n  param w = f32[1]{1, 2}\n}", `t.ir:2:23: too many elements: f32[1] has 1`},
		{"element range", "graph g {\n  param w = i8[1]{200}\n}", `t.ir:2:19: 200 is out of range for i8`},
		{"float range", "graph g {\n  param w = f16[1]{70000}\n}", `t.ir:2:20: 70000 is out of range for f16`},
		{"raw only dtype", "graph g {\n  param w = f8e5m2[1]{1}\n}", `t.ir:2:22: f8e5m2 tensors have no element syntax; write raw"hex"`},
		{"bad hex", "graph g {\n  param w = u8[1] raw\"zz\"\n}", `t.ir:2:22: invalid hex data`},
		{"not a nan", "graph g {\n  param w = f32[1]{nan(0x3f800000)}\n}", `t.ir:2:24: 0x3f800000 is not the bit pattern of a f32 NaN`},
		{"huge splat", "graph g {\n  param w = f32[1000000000]{0, ...}\n}", `t.ir:2:28: tensor f32[1000000000] is too large for a literal`},
		{"empty list", "graph g {\n  input x:f32[2]\n  y = Relu(x) {a=[]}\n}", `t.ir:3:18: an empty list needs its kind`},
		{"mixed list", "graph g {\n  input x:f32[2]\n  y = Relu(x) {a=[1, \"s\"]}\n}", `t.ir:3:22: expected an element of ints, found "s"`},
		{"repeated attr", "graph g {\n  input x:f32[2]\n  y = Relu(x) {a=1, a=2}\n}", `t.ir:3:21: attribute a repeated (first at 3:16)`},
		{"int range attr", "graph g {\n  input x:f32[2]\n  y = Relu(x) {a=99999999999999999999}\n}", `t.ir:3:18: integer 99999999999999999999 out of range`},
		{"huge unnamed id", "graph g {\n  input v99999999:f32[2]\n}", `t.ir:2:9: unnamed value v99999999: IDs above 4194303 are not supported`},
		{"empty op", "graph g {\n  input x:f32[2]\n  y = \"\"(x)\n}", `t.ir:3:7: empty operator name`},
		{"empty name", "graph g {\n  input \"\":f32[2]\n}", `t.ir:2:9: empty value name (an unnamed value is written v<ID>)`},
		{"control forward", "graph g {\n  input x:f32[2]\n  y = Relu(x) after(n)\n  NoOp() name=\"n\"\n}", `t.ir:3:21: after("n"): no node of that name comes before this one in graph g`},
		{"control position", "graph g {\n  input x:f32[2]\n  y = Relu(x) after(0)\n}", `t.ir:3:21: after(0): graph g has only 0 nodes before this one`},
		{"control ambiguous", "graph g {\n  NoOp() name=\"n\"\n  NoOp() name=\"n\"\n  NoOp() after(n)\n}", `t.ir:4:16: after("n"): two earlier nodes bear that name; refer to one by its position`},
		{"control twice", "graph g {\n  NoOp() name=\"n\"\n  NoOp() after(n, 0)\n}", `t.ir:3:19: after(...) lists node "0" twice`},
		{"control bad ref", "graph g {\n  NoOp()\n  NoOp() after(-1)\n}", `t.ir:3:16: expected a node name or position in after(...), found "-1"`},
		{"control unclosed", "graph g {\n  NoOp()\n  NoOp() after(0\n}", `t.ir:4:1: expected "," or ")" in the after(...) opened at 3:15, found "}"`},
		{"duplicate param line", "graph g {\n  input w = f32[1]{1}\n  param w\n  param w\n}", `t.ir:4:9: param "w" listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := irtext.Parse("t.ir", tt.src)
			if err == nil {
				t.Fatalf("Parse = nil error, want %q; printed:\n%s", tt.want, irtext.Format(g))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %q, want it to contain %q", err, tt.want)
			}
			if _, ok := err.(*irtext.Error); !ok {
				t.Errorf("error is %T, want *irtext.Error", err)
			}
		})
	}
}

// TestLenient checks inputs that parse but print differently: the printed
// form is canonical.
func TestLenient(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"spacing and comments", "# c\n\ngraph g{ # c\n input x : f32 [ 2 , N ] # c\n\n\n return x }",
			"graph g {\n  input x:f32[2,N]\n  return x\n}\n"},
		{"captures inferred", "graph g {\n input c:bool[]\n input a:f32[2]\n y = If(c) {then_branch=graph t {\n z = Neg(a)\n return z\n }, else_branch=graph e {\n return a\n }}\n return y\n}",
			"graph g {\n  input c:bool[]\n  input a:f32[2]\n  y = If(c) captures(a) {\n    then_branch=graph t {\n      z = Neg(a)\n      return z\n    },\n    else_branch=graph e {\n      return a\n    },\n  }\n  return y\n}\n"},
		{"list kinds", "graph g {\n input x:f32[2]\n y = Relu(x) {a=[1, 2.5], b=floats[1, 2], c=ints[], d=[\n 1,\n 2,\n]}\n}",
			"graph g {\n  input x:f32[2]\n  y = Relu(x) {a=[1.0,2.5], b=[1.0,2.0], c=ints[], d=[1,2]}\n}\n"},
		{"numbers", "graph g {\n param a = f32[3]{+1, 1.50, 0x1p-2}\n param b = i64[2]{+7, -0}\n param c = f16[1]{0.1}\n}",
			"graph g {\n  param a = f32[3]{1, 1.5, 0.25}\n  param b = i64[2]{7, 0}\n  param c = f16[1]{0.099975586}\n}\n"},
		{"splat and zero type", "graph g {\n input x:undef[]\n param s = u8[3]{9, ...}\n return x\n}",
			"graph g {\n  input x\n  param s = u8[3]{9, 9, 9}\n  return x\n}\n"},
		{"quoted names", "graph \"g\" {\n input \"x\":f32[2]\n \"y\" = \"Relu\"(\"x\")\n return \"y\"\n}",
			"graph g {\n  input x:f32[2]\n  y = Relu(x)\n  return y\n}\n"},
		{"empty return", "graph g {\n return\n}", "graph g {\n}\n"},
		{"default domain written out", "graph g {\n input x:f32[2]\n y = ai.onnx.Relu(x)\n}", "graph g {\n  input x:f32[2]\n  y = ai.onnx.Relu(x)\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := irtext.Parse("t.ir", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := irtext.Format(g); got != tt.want {
				t.Errorf("Format(Parse(%q)):\n%s", tt.src, irtest.Diff(tt.want, got))
			}
		})
	}
}

// TestDocExample parses the example in the package documentation.
func TestDocExample(t *testing.T) {
	data, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	in := false
	for line := range strings.Lines(string(data)) {
		text, ok := strings.CutPrefix(line, "//\t")
		switch {
		case ok && strings.HasPrefix(text, "graph resnet"):
			in = true
		case !ok:
			in = false
		}
		if in {
			src.WriteString(text)
		}
	}
	if src.Len() == 0 {
		t.Fatal("no example found in doc.go")
	}
	g, err := irtext.Parse("doc.go example", src.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, src.String())
	}
	if got := g.Nodes[1].Outputs[2].ID; got != 7 {
		t.Errorf("v7 has ID %d", got)
	}
}

func TestParseType(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "f32[1,3,224,224]", want: "f32[1,3,224,224]"},
		{in: "i64[batch,?]", want: "i64[batch,?]"},
		{in: "f32[*]", want: "f32[*]"},
		{in: "seq<f16[?,4]>", want: "seq<f16[?,4]>"},
		{in: "f32[]", want: "f32[]"},
		{in: "f33[1]", err: "f33"},
		{in: "f32[1,2", err: "type:1:"},
		{in: "f32[1] junk", err: "after the type"},
	} {
		got, err := irtext.ParseType(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseType(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseType(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}
