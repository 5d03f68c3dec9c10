package synth

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

// TestLayeredSizes: MOCCASIN's sizes come out with exactly n nodes and m
// edges, every edge from an earlier layer to a later one, valid problems.
func TestLayeredSizes(t *testing.T) {
	for _, c := range []struct{ n, m int }{{100, 236}, {250, 944}, {500, 2461}, {1000, 5875}, {2, 1}} {
		p, err := Layered(1, c.n, c.m)
		if err != nil {
			t.Fatalf("(%d, %d): %v", c.n, c.m, err)
		}
		edges := 0
		for v, ds := range p.Deps {
			edges += len(ds)
			for _, u := range ds {
				if int(u) >= v {
					t.Fatalf("(%d, %d): edge %d → %d goes backwards", c.n, c.m, u, v)
				}
			}
		}
		if p.N() != c.n || edges != c.m {
			t.Errorf("(%d, %d): got %d nodes and %d edges", c.n, c.m, p.N(), edges)
		}
		if len(p.Outputs) == 0 {
			t.Errorf("(%d, %d): no outputs", c.n, c.m)
		}
	}
}

// TestLayeredDeterministic: the same arguments give the same problem; a
// different seed gives another.
func TestLayeredDeterministic(t *testing.T) {
	a, _ := Layered(7, 100, 236)
	b, _ := Layered(7, 100, 236)
	c, _ := Layered(8, 100, 236)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave different problems")
	}
	if reflect.DeepEqual(a.Deps, c.Deps) {
		t.Error("seeds 7 and 8 gave the same edges")
	}
}

// TestLayeredBadSizes: impossible edge counts are errors that name the
// admissible range.
func TestLayeredBadSizes(t *testing.T) {
	for _, c := range []struct{ n, m int }{{1, 0}, {100, 10}, {10, 1000}} {
		if _, err := Layered(1, c.n, c.m); err == nil {
			t.Errorf("(%d, %d): no error", c.n, c.m)
		} else {
			t.Log(err)
		}
	}
}

// TestLayeredWithOptions: each option does what it says, and the graph
// keeps its n nodes and m edges under all of them.
func TestLayeredWithOptions(t *testing.T) {
	base, err := Layered(3, 250, 944)
	if err != nil {
		t.Fatal(err)
	}
	p, err := LayeredWith(3, 250, 944, LayeredOptions{Layers: 8, CostDecades: 2, RandomOrder: true, FreeSinks: true})
	if err != nil {
		t.Fatal(err)
	}
	edges := 0
	for v, ds := range p.Deps {
		edges += len(ds)
		for _, u := range ds {
			if int(u) >= v {
				t.Fatalf("edge %d → %d goes backwards", u, v)
			}
		}
	}
	if p.N() != 250 || edges != 944 {
		t.Errorf("got %d nodes and %d edges, want 250 and 944", p.N(), edges)
	}
	if len(p.Outputs) != 0 {
		t.Errorf("FreeSinks: %d outputs, want none", len(p.Outputs))
	}
	for v, s := range p.Seconds {
		if s < 1e-3 || s > 0.1 {
			t.Fatalf("CostDecades 2: node %d takes %g s, outside [1 ms, 100 ms]", v, s)
		}
	}
	layers := map[string]bool{}
	for _, name := range p.Names {
		layers[strings.Split(name, ".")[0]] = true
	}
	if len(layers) != 8 {
		t.Errorf("Layers 8: the names show %d layers", len(layers))
	}
	// The random order must differ from the layer-by-layer one, which
	// numbers the layers' nodes in increasing layer.
	sorted := slices.IsSortedFunc(p.Names, func(a, b string) int {
		la, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(a, ".")[0], "L"))
		lb, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(b, ".")[0], "L"))
		return la - lb
	})
	if sorted {
		t.Error("RandomOrder: the nodes are still numbered layer by layer")
	}
	// RandomOrder only renumbers: the same seed without it gives the same
	// edges between the same names.
	q, _ := LayeredWith(3, 250, 944, LayeredOptions{Layers: 8, CostDecades: 2, FreeSinks: true})
	if edgeNames(p) == nil || !reflect.DeepEqual(edgeNames(p), edgeNames(q)) {
		t.Error("RandomOrder changed the graph, not only its numbering")
	}
	if reflect.DeepEqual(base.Deps, q.Deps) {
		t.Error("Layers 8 gave the default graph")
	}
}

func edgeNames(p *remat.Problem) map[[2]string]bool {
	e := map[[2]string]bool{}
	for v, ds := range p.Deps {
		for _, u := range ds {
			e[[2]string{p.Names[u], p.Names[v]}] = true
		}
	}
	return e
}

// TestLayeredPeakGrowth: with a fixed number of layers the no-remat peak
// grows about linearly in n from G1 to G4, as MOCCASIN's published peaks
// do (×13.1); with ⌈√n⌉ layers it grows far less.
func TestLayeredPeakGrowth(t *testing.T) {
	peak := func(o LayeredOptions, n, m int) int64 {
		p, err := LayeredWith(1, n, m, o)
		if err != nil {
			t.Fatal(err)
		}
		res, err := remat.EvaluateNoRemat(p)
		if err != nil {
			t.Fatal(err)
		}
		return res.PeakBytes
	}
	growth := func(o LayeredOptions) float64 {
		return float64(peak(o, 1000, 5875)) / float64(peak(o, 100, 236))
	}
	if g := growth(MoccasinCalibrated); g < 10 || g > 16 {
		t.Errorf("MoccasinCalibrated: the peak grows ×%.1f from G1 to G4, want about ×13", g)
	}
	if g := growth(LayeredOptions{}); g > 6 {
		t.Errorf("default: the peak grows ×%.1f from G1 to G4, want about √10", g)
	}
}

// TestLayeredBadOptions: out-of-range options are errors.
func TestLayeredBadOptions(t *testing.T) {
	for _, o := range []LayeredOptions{{Layers: 1}, {Layers: 101}, {CostDecades: -1}, {CostDecades: 7}} {
		if _, err := LayeredWith(1, 100, 236, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
