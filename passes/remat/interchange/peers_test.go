package interchange_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
	"github.com/remat-compile/remat/passes/remat/peerbench"
)

// peerDir is the directory of MOCCASIN's published graphs. They are data
// the tests need: missing, the test fails, except under -short.
func peerDir(t *testing.T) string {
	t.Helper()
	d, err := peerbench.FindDir()
	if err == nil {
		_, err = os.Stat(filepath.Join(d, peerbench.Table3[0].File))
	}
	if err != nil {
		if testing.Short() {
			t.Skipf("MOCCASIN's graphs are not at hand (-short): %v", err)
		}
		t.Fatalf("MOCCASIN's graphs are needed: %v", err)
	}
	return d
}

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

// TestPeerGraphs reads the six graphs of MOCCASIN's Table 3 and checks
// them against the published figures: node and edge counts, the no-remat
// peak of the input order (MOCCASIN's semantics) for G1–G4, and the
// Table 3 budgets ⌊0.9 × peak⌋ and ⌊0.8 × peak⌋ in GiB for CM 1 and CM 2,
// whose order is networkx's topological_sort (compared with the order
// networkx 3.6.1 printed, by digest).
func TestPeerGraphs(t *testing.T) {
	dir := peerDir(t)
	// sha256 of the ids in networkx.topological_sort order, joined by ",".
	nxOrder := map[string]string{
		"CM1": "1df73980f6ac8e1a1c65856dbd0278859ae0e003411f48fbff9331f6e2830d03",
		"CM2": "d5ca2484fe400eed5d7d5ec45f4b52881c3c6249ec6ab1a84e67a34b5f506f20",
	}
	for _, peer := range peerbench.Table3 {
		t.Run(peer.Key, func(t *testing.T) {
			path := filepath.Join(dir, peer.File)
			p, format, err := interchange.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := interchange.LoadWith(path, interchange.Options{Semantics: interchange.FreeSinks})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g.Problem.Names, p.Names) || len(g.Problem.Outputs) != 0 || g.Problem.ConstBytes != 0 {
				t.Errorf("the default semantics of node-link files is not free-sinks: outputs %v, const %d", g.Problem.Outputs, g.Problem.ConstBytes)
			}
			if p.N() != peer.Nodes || g.Edges != peer.Edges {
				t.Errorf("(n, m) = (%d, %d), Table 3 says (%d, %d)", p.N(), g.Edges, peer.Nodes, peer.Edges)
			}
			if p.BudgetBytes != remat.NoBudget {
				t.Errorf("budget %d; a node-link file has none", p.BudgetBytes)
			}
			base, err := remat.EvaluateNoRemat(p)
			if err != nil {
				t.Fatal(err)
			}
			ids := strings.Join(p.Names, ",")
			if strings.HasPrefix(peer.Key, "G") {
				if format != interchange.NodeLinkMoccasin {
					t.Errorf("format %v", format)
				}
				if base.PeakBytes != peer.NoRematPeak {
					t.Errorf("no-remat peak %d, the README says %d", base.PeakBytes, peer.NoRematPeak)
				}
				if want := graphOrder(t, path); ids != want {
					t.Errorf("the order is not graph.order")
				}
				return
			}
			if format != interchange.NodeLinkCheckmate {
				t.Errorf("format %v", format)
			}
			sum := sha256.Sum256([]byte(ids))
			if got := hex.EncodeToString(sum[:]); got != nxOrder[peer.Key] {
				t.Errorf("the order is not networkx's topological_sort (digest %s); it starts %.80s", got, ids)
			}
			for _, row := range peer.Rows {
				m := peerbench.Budget(row.Multiplier, base.PeakBytes)
				if got := fmt.Sprintf("%.1f GB", float64(m)/(1<<30)); got != row.Budget {
					t.Errorf("M at %v = %d B = %s; Table 3 prints %s", row.Multiplier, m, got, row.Budget)
				}
			}
		})
	}
}

// graphOrder reads graph.order of a MOCCASIN file on its own.
func graphOrder(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Graph struct {
			Order []int `json:"order"`
		} `json:"graph"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	s := make([]string, len(doc.Graph.Order))
	for k, v := range doc.Graph.Order {
		s[k] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

// TestHoldSinks reads G1 under Checkmate's semantics: every sink is held
// to the end, which can only raise the peak.
func TestHoldSinks(t *testing.T) {
	dir := peerDir(t)
	path := filepath.Join(dir, peerbench.Table3[0].File)
	free, err := interchange.LoadWith(path, interchange.Options{Semantics: interchange.FreeSinks})
	if err != nil {
		t.Fatal(err)
	}
	hold, err := interchange.LoadWith(path, interchange.Options{Semantics: interchange.HoldSinks})
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
	if !slices.Equal(hold.Problem.Outputs, sinks) || len(sinks) == 0 {
		t.Fatalf("outputs %v, want the sinks %v", hold.Problem.Outputs, sinks)
	}
	a, _ := remat.EvaluateNoRemat(free.Problem)
	b, _ := remat.EvaluateNoRemat(hold.Problem)
	if b.PeakBytes < a.PeakBytes || math.Abs(a.TotalSeconds-b.TotalSeconds) > 0 {
		t.Errorf("holding the sinks: peak %d → %d, cost %v → %v", a.PeakBytes, b.PeakBytes, a.TotalSeconds, b.TotalSeconds)
	}
}
