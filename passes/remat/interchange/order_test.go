package interchange_test

import (
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// TestNetworkxOrder checks the order against networkx 3.6.1's
// topological_sort on graphs where generation order, a depth-first stack
// and node order all differ (the expected orders were printed by networkx
// for DiGraphs built with add_nodes_from(nodes), add_edges_from(edges)).
func TestNetworkxOrder(t *testing.T) {
	for _, c := range []struct {
		nodes []int
		edges [][2]int
		want  []int
	}{
		{[]int{3, 1, 2, 0, 4}, [][2]int{{3, 0}, {1, 2}, {3, 2}, {2, 0}, {1, 4}, {4, 0}}, []int{3, 1, 2, 4, 0}},
		{[]int{0, 1, 2, 3, 4, 5, 6}, [][2]int{{0, 3}, {0, 1}, {1, 2}, {3, 2}, {2, 4}, {0, 5}, {5, 6}, {4, 6}, {1, 6}}, []int{0, 3, 1, 5, 2, 4, 6}},
		{[]int{5, 4, 3, 2, 1, 0}, [][2]int{{5, 0}, {4, 0}, {3, 1}, {2, 1}, {1, 0}, {5, 2}, {4, 3}}, []int{5, 4, 2, 3, 1, 0}},
	} {
		pos := map[int]int32{}
		for k, v := range c.nodes {
			pos[v] = int32(k)
		}
		succ := make([][]int32, len(c.nodes))
		for _, e := range c.edges {
			succ[pos[e[0]]] = append(succ[pos[e[0]]], pos[e[1]])
		}
		order, cycle := interchange.NetworkxOrder(len(c.nodes), succ)
		if cycle != nil {
			t.Fatalf("%v: cycle %v", c.nodes, cycle)
		}
		got := make([]int, len(order))
		for k, v := range order {
			got[k] = c.nodes[v]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("nodes %v edges %v: order %v, networkx gives %v", c.nodes, c.edges, got, c.want)
		}
	}
	// A cycle is found and shown in edge order.
	_, cycle := interchange.NetworkxOrder(4, [][]int32{{1}, {2}, {3}, {1}})
	if want := []int32{1, 2, 3, 1}; !slices.Equal(cycle, want) {
		t.Errorf("cycle %v, want %v", cycle, want)
	}
}

// TestHoldSinks reads a graph under Checkmate's semantics: every sink is
// held to the end, which can only raise the peak.
func TestHoldSinks(t *testing.T) {
	src, err := synth.LayeredWith(5, 40, 90, synth.MoccasinCalibrated)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(writeMoccasin(src))
	free, err := interchange.Read(data, "g.json", interchange.Options{Semantics: interchange.FreeSinks})
	if err != nil {
		t.Fatal(err)
	}
	hold, err := interchange.Read(data, "g.json", interchange.Options{Semantics: interchange.HoldSinks})
	if err != nil {
		t.Fatal(err)
	}
	var sinks []int32
	hasReader := make([]bool, free.Problem.N())
	for _, ds := range free.Problem.Deps {
		for _, d := range ds {
			hasReader[d] = true
		}
	}
	for i, r := range hasReader {
		if !r {
			sinks = append(sinks, int32(i))
		}
	}
	if !slices.Equal(hold.Problem.Outputs, sinks) || len(sinks) < 2 {
		t.Fatalf("outputs %v, want the sinks %v", hold.Problem.Outputs, sinks)
	}
	a, _ := remat.EvaluateNoRemat(free.Problem)
	b, _ := remat.EvaluateNoRemat(hold.Problem)
	if b.PeakBytes <= a.PeakBytes || a.TotalSeconds != b.TotalSeconds {
		t.Errorf("holding the sinks: peak %d → %d, cost %v → %v", a.PeakBytes, b.PeakBytes, a.TotalSeconds, b.TotalSeconds)
	}
}
