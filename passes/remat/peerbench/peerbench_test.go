package peerbench_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
	"github.com/remat-compile/remat/passes/remat/peerbench"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

// graphsDir is the directory of MOCCASIN's published graphs. They are
// data the tests need: missing, the test fails, except under -short.
func graphsDir(t *testing.T) string {
	t.Helper()
	d, err := peerbench.FindDir()
	if err != nil && testing.Short() {
		t.Skipf("-short: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBudget checks ⌊multiplier × peak⌋ against every budget Table 3
// prints in bytes.
func TestBudget(t *testing.T) {
	for _, p := range peerbench.Table3 {
		if p.NoRematPeak == 0 {
			continue
		}
		for _, r := range p.Rows {
			want, err := strconv.ParseInt(strings.ReplaceAll(r.Budget, ",", ""), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := peerbench.Budget(r.Multiplier, p.NoRematPeak); got != want {
				t.Errorf("%s at %v: M = %d, Table 3 prints %d", p.Key, r.Multiplier, got, want)
			}
		}
	}
	if got := peerbench.Budget(0.8, 5); got != 4 {
		t.Errorf("⌊0.8 × 5⌋ = %d, want 4 (an exact product is not rounded down)", got)
	}
}

// TestRun runs auto on G1 and CM 1 at both budgets and checks the rows:
// one per graph and budget, each within its budget, its TDI at or below
// MOCCASIN's, its gap between 0 and its TDI, and the published numbers
// beside it.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("solves the peers' graphs; skipped in -short mode")
	}
	dir := graphsDir(t)
	var streamed []peerbench.Row
	rows, err := peerbench.Run(context.Background(), peerbench.Options{
		Dir: dir, Graphs: []string{"G1", "CM1"}, TimeLimit: 20 * time.Second,
		Progress: func(r peerbench.Row) { streamed = append(streamed, r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || len(streamed) != 4 {
		t.Fatalf("%d rows (%d streamed), want 4", len(rows), len(streamed))
	}
	for k, r := range rows {
		wantKey, wantM := []string{"G1", "CM1"}[k/2], []float64{0.9, 0.8}[k%2]
		if r.Peer.Key != wantKey || r.Multiplier != wantM || r.Solver != solvers.AutoName {
			t.Fatalf("row %d is %s at %v by %s, want %s at %v by auto", k, r.Peer.Key, r.Multiplier, r.Solver, wantKey, wantM)
		}
		if r.Status != "feasible" && r.Status != "optimal" {
			t.Errorf("%s at %v: status %s (%s)", r.Peer.Key, r.Multiplier, r.Status, r.Note)
			continue
		}
		if r.Budget != peerbench.Budget(r.Multiplier, r.NoRematPeak) || r.Peak > r.Budget || r.Note != "" {
			t.Errorf("%s at %v: budget %d of peak %d, plan peak %d, note %q", r.Peer.Key, r.Multiplier, r.Budget, r.NoRematPeak, r.Peak, r.Note)
		}
		if r.Published.Multiplier != r.Multiplier || !r.Published.Moccasin.Found || !r.Meets() {
			t.Errorf("%s at %v: TDI %.3f%%, MOCCASIN published %+v", r.Peer.Key, r.Multiplier, r.TDI, r.Published.Moccasin)
		}
		if math.IsNaN(r.TimeToPublished) || r.TimeToPublished > r.Seconds || r.TimeToBest > r.Seconds {
			t.Errorf("%s at %v: time to MOCCASIN's TDI %v, to best %v, of %v", r.Peer.Key, r.Multiplier, r.TimeToPublished, r.TimeToBest, r.Seconds)
		}
		if !(r.Gap >= 0 && r.Gap <= r.TDI+1e-9) || r.BestBound < r.NoRematCost || r.LowerBound > r.BestBound {
			t.Errorf("%s at %v: gap %v pp with TDI %v, bounds %v (own %v), no-remat cost %v", r.Peer.Key, r.Multiplier, r.Gap, r.TDI, r.BestBound, r.LowerBound, r.NoRematCost)
		}
		if pl := peerbench.RowPlan(r); pl == nil || len(pl.R) != r.Nodes {
			t.Errorf("%s at %v: the row keeps no plan of its %d nodes for the stage bound", r.Peer.Key, r.Multiplier, r.Nodes)
		}
		if r.Nodes != r.Peer.Nodes || r.Edges != r.Peer.Edges {
			t.Errorf("%s: (%d, %d), Table 3 says (%d, %d)", r.Peer.Key, r.Nodes, r.Edges, r.Peer.Nodes, r.Peer.Edges)
		}
	}
	var b bytes.Buffer
	if err := peerbench.WriteMarkdown(&b, rows); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != 6 || !strings.Contains(b.String(), "| RL G1 | (100, 236) | 41687 = 0.9 × 46319 | auto |") ||
		!strings.Contains(b.String(), "| 0.8 / 40,820 / 9.3 | 0.8 / 41,360 / 18.5 | yes |") {
		t.Errorf("markdown:\n%s", b.String())
	}
}

// TestCheapest checks which plan Run gives the stage bound: the one of the
// row with the least TDI, none when no row has a plan.
func TestCheapest(t *testing.T) {
	a, b := remat.NewPlan(1), remat.NewPlan(1)
	rows := []peerbench.Row{
		{TDI: math.NaN()},
		peerbench.WithPlan(peerbench.Row{TDI: 2.5}, a),
		peerbench.WithPlan(peerbench.Row{TDI: 1.5}, b),
		{TDI: 0.5}, // no plan: over the budget, say
	}
	if got := peerbench.Cheapest(rows); got != b {
		t.Errorf("Cheapest gives %p, want the plan of the 1.5%% row %p (the 2.5%% row's is %p)", got, b, a)
	}
	if got := peerbench.Cheapest(rows[:1]); got != nil {
		t.Errorf("Cheapest of a row without a plan gives %p, want nil", got)
	}
}

// TestRunStageBound runs G1 at 80 % with the stage bound: it is proved,
// sits between the no-remat cost and the plan's cost, raises the best
// bound above auto's own, and narrows the gap.
func TestRunStageBound(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a peer graph and a MILP; skipped in -short mode")
	}
	rows, err := peerbench.Run(context.Background(), peerbench.Options{
		Dir: graphsDir(t), Graphs: []string{"G1"}, Multipliers: []float64{0.8},
		TimeLimit: 10 * time.Second, BoundTime: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	cost := r.NoRematCost * (1 + r.TDI/100)
	if math.IsNaN(r.StageBound) || r.StageBound < r.NoRematCost || r.StageBound > cost*(1+1e-9) {
		t.Fatalf("stage bound %v outside [no-remat cost %v, plan cost %v]", r.StageBound, r.NoRematCost, cost)
	}
	if r.BestBound != r.StageBound || r.StageBound <= r.LowerBound {
		t.Errorf("best bound %v, stage bound %v, auto's bound %v: want the stage bound above auto's and best", r.BestBound, r.StageBound, r.LowerBound)
	}
	t.Logf("G1 at 80%%: TDI %.3f%%, auto's bound %.3f%%, stage bound %.3f%%, gap %.2f pp", r.TDI,
		100*(r.LowerBound/r.NoRematCost-1), 100*(r.StageBound/r.NoRematCost-1), r.Gap)
}

// TestRunStageBoundInfeasible: at a budget below G1's largest working
// set the stage bound proves that no plan fits, which agrees with the
// solvers (no plan): no error, and the rows keep their own bounds.
func TestRunStageBoundInfeasible(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a peer graph and a MILP; skipped in -short mode")
	}
	rows, err := peerbench.Run(context.Background(), peerbench.Options{
		Dir: graphsDir(t), Graphs: []string{"G1"}, Multipliers: []float64{0.05},
		TimeLimit: 10 * time.Second, BoundTime: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	if r := rows[0]; r.Status == "optimal" || r.Status == "feasible" || !math.IsNaN(r.StageBound) || r.BestBound != r.NoRematCost {
		t.Errorf("status %s, stage bound %v, best bound %v (no-remat cost %v): want no plan, no stage bound, the no-remat cost", r.Status, r.StageBound, r.BestBound, r.NoRematCost)
	}
}

// TestRunBadOptions: unknown graphs, multipliers out of range and a
// directory without the files are errors that say so.
func TestRunBadOptions(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		o    peerbench.Options
		want string
	}{
		{peerbench.Options{Dir: t.TempDir(), Graphs: []string{"G9"}}, `unknown graph "G9"`},
		{peerbench.Options{Dir: t.TempDir(), Multipliers: []float64{1.5}}, "not in (0, 1]"},
		{peerbench.Options{Dir: t.TempDir(), Graphs: []string{"G1"}, Solvers: []remat.Solver{solvers.Auto}}, "G1: open"},
	} {
		if _, err := peerbench.Run(ctx, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
	dir := graphsDir(t)
	t.Setenv(peerbench.EnvDir, dir)
	if d, err := peerbench.FindDir(); err != nil || d != dir {
		t.Errorf("FindDir with %s=%s: %q, %v", peerbench.EnvDir, dir, d, err)
	}
	empty := t.TempDir()
	t.Setenv(peerbench.EnvDir, empty)
	if _, err := peerbench.FindDir(); err == nil || !strings.Contains(err.Error(), "RL G1 (random_layered_n100") {
		t.Errorf("FindDir with %s=%s (empty): %v", peerbench.EnvDir, empty, err)
	}
}

// TestPeerGraphs reads the six graphs of MOCCASIN's Table 3 and checks
// them against the published figures: node and edge counts, the no-remat
// peak of the input order (MOCCASIN's semantics) for G1–G4, and the
// Table 3 budgets ⌊0.9 × peak⌋ and ⌊0.8 × peak⌋ in GiB for CM 1 and CM 2,
// whose order is networkx's topological_sort (compared with the order
// networkx 3.6.1 printed, by digest).
func TestPeerGraphs(t *testing.T) {
	dir := graphsDir(t)
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
