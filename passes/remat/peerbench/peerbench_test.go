package peerbench_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/peerbench"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

func graphsDir(t *testing.T) string {
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
	t.Setenv(peerbench.EnvDir, "/some/where")
	if d, err := peerbench.FindDir(); err != nil || d != "/some/where" {
		t.Errorf("FindDir with %s set: %q, %v", peerbench.EnvDir, d, err)
	}
}
