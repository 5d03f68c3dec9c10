package synth

import (
	"reflect"
	"testing"
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
