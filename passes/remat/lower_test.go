package remat_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
)

func parse(t testing.TB, src string) *ir.Graph {
	t.Helper()
	g, err := irtext.Parse("test", src)
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	return g
}

func unitCost(*ir.Node) float64 { return 1 }

// segText is a SegNet-like graph: MaxPool's indices are read only by the
// MaxUnpool at the end, its values at once; a Constant shape feeds a
// Reshape; a Dropout's mask is never read.
const segText = `graph seg {
  opset 17
  input x:f32[1,2,4,4]
  param w = f32[2,2,1,1]{0.5, ...}
  c1:f32[1,2,4,4] = Conv(x, w) name="conv1"
  r1:f32[1,2,4,4] = Relu(c1) name="relu1"
  p:f32[1,2,2,2], idx:i64[1,2,2,2] = MaxPool(r1) {kernel_shape=[2,2], strides=[2,2]} name="pool"
  c2:f32[1,2,2,2] = Conv(p, w) name="conv2"
  d:f32[1,2,2,2], mask:bool[1,2,2,2] = Dropout(c2) name="drop"
  shape:i64[4] = Constant() {value=i64[4]{1, 2, 2, 2}} name="shape"
  rs:f32[1,2,2,2] = Reshape(d, shape) name="reshape"
  u:f32[1,2,4,4] = MaxUnpool(rs, idx) {kernel_shape=[2,2], strides=[2,2]} name="unpool"
  y:f32[1,2,4,4] = Add(u, r1) name="add"
  return y
}`

func TestLowerSeg(t *testing.T) {
	g := parse(t, segText)
	p, m, err := remat.Lower(g, unitCost, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"conv1", "relu1", "pool", "conv2", "drop", "reshape", "unpool", "add"}
	if !slices.Equal(p.Names, want) {
		t.Fatalf("nodes %v, want %v (the Constant is a parameter)", p.Names, want)
	}
	idx := func(name string) int32 { return int32(slices.Index(p.Names, name)) }
	// MaxPool: one node, two parts: 32 bytes of f32 values and 64 of i64
	// indices; Bytes is their sum.
	pool := idx("pool")
	if p.Bytes[pool] != 96 || !slices.Equal(p.Parts[pool], []int64{32, 64}) {
		t.Errorf("pool: Bytes %d, Parts %v; want 96, [32 64]", p.Bytes[pool], p.Parts[pool])
	}
	if got := p.Reads[idx("conv2")]; !slices.Equal(got, []remat.Part{{Node: pool, Index: 0}}) {
		t.Errorf("conv2 reads %v; want part 0 of pool", got)
	}
	if got := p.Reads[idx("unpool")]; !slices.Equal(got, []remat.Part{{Node: pool, Index: 1}, {Node: idx("reshape"), Index: 0}}) {
		t.Errorf("unpool reads %v; want pool's indices and reshape", got)
	}
	// Dropout: random, so never recomputed; its unread mask is a part.
	drop := idx("drop")
	if p.Recomputable[drop] || !p.Recomputable[idx("relu1")] {
		t.Errorf("Recomputable: drop %v, relu1 %v", p.Recomputable[drop], p.Recomputable[idx("relu1")])
	}
	if !slices.Equal(p.Parts[drop], []int64{32, 8}) {
		t.Errorf("drop parts %v, want [32 8]", p.Parts[drop])
	}
	// The Constant is no dependency of Reshape.
	if got := p.Deps[idx("reshape")]; !slices.Equal(got, []int32{drop}) {
		t.Errorf("reshape deps %v, want [drop]", got)
	}
	if !slices.Equal(p.Outputs, []int32{idx("add")}) || p.ConstBytes != 0 || p.BudgetBytes != remat.NoBudget {
		t.Errorf("Outputs %v, ConstBytes %d, Budget %d", p.Outputs, p.ConstBytes, p.BudgetBytes)
	}
	if m.Index(m.Nodes[3]) != 3 || m.Index(g.Nodes[5]) != -1 || m.Nodes[pool].Name != "pool" || len(m.Outputs[pool]) != 2 {
		t.Errorf("mapping is wrong")
	}

	// Counting parameters: the weight (16 B) and the Constant (32 B);
	// inputs: x (128 B).
	p2, _, err := remat.Lower(g, unitCost, remat.LowerOptions{CountParams: true, CountInputs: true})
	if err != nil {
		t.Fatal(err)
	}
	if p2.ConstBytes != 16+32+128 {
		t.Errorf("ConstBytes %d, want %d", p2.ConstBytes, 16+32+128)
	}
	// Constant nodes as nodes: one more node, a dependency of Reshape.
	p3, m3, err := remat.Lower(g, unitCost, remat.LowerOptions{ConstantNodes: true})
	if err != nil {
		t.Fatal(err)
	}
	sh := int32(slices.Index(p3.Names, "shape"))
	if p3.N() != 9 || sh < 0 || !slices.Contains(p3.Deps[slices.Index(p3.Names, "reshape")], sh) || !p3.Recomputable[sh] || m3.Index(g.Nodes[5]) != int(sh) {
		t.Errorf("ConstantNodes: %d nodes, names %v, deps %v", p3.N(), p3.Names, p3.Deps)
	}
}

func TestLowerErrors(t *testing.T) {
	g := parse(t, `graph bad {
  input x:f32[N,4]
  a:f32[N,4] = Relu(x) name="a"
  b:f32[2,2] = Neg(a) name="b"
  c:f32[?] = custom.Op(b) name="c"
  return c
}`)
	_, _, err := remat.Lower(g, unitCost, remat.LowerOptions{})
	var se *memory.SizeError
	if !errors.As(err, &se) || len(se.Values) != 2 || se.Values[0].Name != "a" || se.Values[1].Name != "c" {
		t.Fatalf("Lower = %v; want a *memory.SizeError listing a and c", err)
	}
	if !strings.Contains(err.Error(), `"a" f32[N,4] from node "a" (Relu)`) {
		t.Errorf("error %q does not name the value, its type and its node", err)
	}
	_, _, err = remat.Lower(g, unitCost, remat.LowerOptions{CountInputs: true})
	if !errors.As(err, &se) || len(se.Values) != 3 {
		t.Errorf("with CountInputs, Lower = %v; want x listed too", err)
	}

	ok := parse(t, `graph ok {
  input x:f32[4]
  a:f32[4] = Relu(x) name="a"
  b:f32[4] = custom.Op(a) name="b"
  return b
}`)
	p, _, err := remat.Lower(ok, unitCost, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Recomputable[1] {
		t.Errorf("an op the op table does not know is recomputable")
	}
	if p.Parts != nil || p.Reads != nil || p.OutputParts != nil {
		t.Errorf("a graph without multi-output nodes has the refinement")
	}
	for _, c := range []float64{math.NaN(), -1, math.Inf(1)} {
		if _, _, err := remat.Lower(ok, func(*ir.Node) float64 { return c }, remat.LowerOptions{}); err == nil || !strings.Contains(err.Error(), `node "a" (Relu)`) {
			t.Errorf("cost %v: Lower = %v", c, err)
		}
	}
	if _, _, err := remat.Lower(ok, nil, remat.LowerOptions{}); err == nil {
		t.Errorf("Lower with no cost function succeeded")
	}
}

// TestLowerOutputParts: a multi-output node whose outputs are partly graph
// outputs keeps only those parts to the end.
func TestLowerOutputParts(t *testing.T) {
	g := parse(t, `graph outs {
  input x:f32[8]
  a:f32[4], b:f32[4] = Split(x) {axis=0, num_outputs=2} name="split"
  c:f32[4] = Neg(a) name="neg"
  return c, b
}`)
	p, _, err := remat.Lower(g, unitCost, remat.LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Outputs, []int32{0, 1}) || !slices.Equal(p.OutputParts, []remat.Part{{Node: 0, Index: 1}, {Node: 1, Index: 0}}) {
		t.Errorf("Outputs %v, OutputParts %v", p.Outputs, p.OutputParts)
	}
}

// TestLowerConstantFoldable: nodes computed from parameters and Constants
// alone (ORT folds them into initializers from level "basic" up) are not
// recomputable; a node that also reads a graph input is.
func TestLowerConstantFoldable(t *testing.T) {
	g := parse(t, `graph fold {
  opset 17
  input x:f32[2,4]
  param table = f32[8,4]{0.5, ...}
  ids:i64[2] = Constant() {value=i64[2]{1, 3}} name="ids"
  pos:f32[2,4] = Gather(table, ids) name="pos"
  posr:f32[2,4] = Relu(pos) name="posr"
  a:f32[2,4] = Add(x, posr) name="add"
  y:f32[2,4] = Relu(a) name="relu"
  return y
}`)
	fold := remat.ConstantFoldable(g)
	var names []string
	for _, n := range g.Nodes {
		if fold[n] {
			names = append(names, n.Name)
		}
	}
	if !slices.Equal(names, []string{"pos", "posr"}) {
		t.Errorf("ConstantFoldable = %v, want [pos posr]", names)
	}
	for _, o := range []remat.LowerOptions{{}, {ConstantNodes: true}} {
		p, _, err := remat.Lower(g, unitCost, o)
		if err != nil {
			t.Fatal(err)
		}
		rec := map[string]bool{}
		for i, name := range p.Names {
			rec[name] = p.Recomputable[i]
		}
		want := map[string]bool{"pos": false, "posr": false, "add": true, "relu": true}
		if o.ConstantNodes {
			want["ids"] = true // an ordinary node on purpose
		}
		for name, w := range want {
			if got, ok := rec[name]; !ok || got != w {
				t.Errorf("ConstantNodes=%v: %s recomputable %v (lowered %v), want %v", o.ConstantNodes, name, got, ok, w)
			}
		}
	}
}
