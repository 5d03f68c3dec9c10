package tile

import (
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

// TestApplyChain tiles a Conv → Relu → Conv chain into bands and checks the
// band geometry the issue describes: a 3×3 Conv with pads [1,1] becomes
// pads [1,0] / [0,0] / [0,1] along the rows.
func TestApplyChain(t *testing.T) {
	b := newGB(t, 1, 17)
	x := b.input(1, 2, 12, 10)
	c1 := b.conv(x, 3, 3, 1, 1, [4]int64{1, 1, 1, 1}, 1)
	r := b.op("Relu", []*ir.Value{c1})
	c2 := b.conv(r, 2, 3, 1, 1, [4]int64{1, 1, 1, 1}, 1)
	b.g.AddOutput(c2)
	outName := c2.Name
	region := Region{Nodes: b.g.Nodes}
	tl, err := Apply(b.g, region, Split{Bands: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkTypes(t, b.g)
	var pads []string
	for _, n := range b.g.Nodes {
		if n.Op == "Conv" && strings.HasPrefix(n.Name, "Conv") {
			p, _ := n.AttrInts("pads")
			pads = append(pads, n.Name+":"+fmtInts(p))
		}
	}
	want := "Conv5_t0:1,1,0,1 Conv11_t0:1,1,0,1 Conv5_t1:0,1,0,1 Conv11_t1:0,1,0,1 Conv5_t2:0,1,1,1 Conv11_t2:0,1,1,1"
	if got := strings.Join(pads, " "); got != want {
		t.Errorf("band pads:\n got %s\nwant %s", got, want)
	}
	// Bands own rows 0–4, 4–8, 8–12 of the output; two 3×3 convs read two
	// rows beyond each interior edge.
	if got := fmtRows(tl.Reads); got != "0-6 2-10 6-12" {
		t.Errorf("rows read of the input: %s, want 0-6 2-10 6-12", got)
	}
	if got := fmtInts(tl.Halo); got != "2,4,2" {
		t.Errorf("halo rows: %s, want 2,4,2", got)
	}
	if b.g.Outputs[0].Name != outName || b.g.Outputs[0].Def.Op != "Concat" {
		t.Errorf("graph output %s (%s), want the Concat named %s", b.g.Outputs[0], b.g.Outputs[0].Def.Op, outName)
	}
}

func fmtInts(v []int64) string {
	var s []string
	for _, x := range v {
		s = append(s, itoa(x))
	}
	return strings.Join(s, ",")
}

func fmtRows(v [][2]int64) string {
	var s []string
	for _, r := range v {
		s = append(s, itoa(r[0])+"-"+itoa(r[1]))
	}
	return strings.Join(s, " ")
}
