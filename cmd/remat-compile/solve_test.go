package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A diamond with a long skip, in MOCCASIN's node-link convention: the
// skip's source is worth recomputing at a tight budget (16 B, the
// no-remat peak being 20 B under MOCCASIN's semantics).
const nodeLink = `{"directed": true, "multigraph": false, "graph": {"order": ["a", "b", "c", "d", "e"]},
 "nodes": [{"name": "a", "out_cost": 4, "duration": 1, "param_cost": 0},
           {"name": "b", "out_cost": 8, "duration": 1, "param_cost": 0},
           {"name": "c", "out_cost": 8, "duration": 1, "param_cost": 0},
           {"name": "d", "out_cost": 8, "duration": 1, "param_cost": 0},
           {"name": "e", "out_cost": 1, "duration": 1, "param_cost": 0}],
 "links": [{"0": "a", "1": "b"}, {"0": "b", "1": "c"}, {"0": "c", "1": "d"}, {"0": "a", "1": "e"}, {"0": "d", "1": "e"}]}`

// TestSolve runs solve on a node-link graph and a TWRemat graph and reads
// the schedules back: JSON with the peak and cost, TWRemat's c/f lines.
func TestSolve(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "g.json")
	if err := os.WriteFile(in, []byte(nodeLink), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "s.json")
	code, stdout, stderr := run(t, "solve", "-budget", "16B", "-solver", "checkmate-milp", "-o", out, in)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	var doc struct {
		Format         string `json:"format"`
		PeakBytes      int64  `json:"peak_bytes"`
		Recomputations int    `json:"recomputations"`
		Steps          []struct{ Op, Node string }
	}
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != "remat-compile schedule" || doc.PeakBytes > 16 || doc.Recomputations != 1 || len(doc.Steps) < 6 {
		t.Errorf("schedule %+v, want a plan within 16 B that recomputes a once:\n%s", doc, data)
	}
	if !strings.Contains(stdout, "5 nodes, 5 edges") || !strings.Contains(stdout, "1 recomputations") {
		t.Errorf("summary:\n%s", stdout)
	}
	// TWRemat in, c/f lines out.
	tw := filepath.Join(dir, "g.twremat")
	os.WriteFile(tw, []byte("p remat2\nnode 1 deps cpu 1 mem 4\nnode 2 deps 1 cpu 1 mem 8\nnode 3 deps 2 cpu 1 mem 8 target\n"), 0o644)
	txt := filepath.Join(dir, "s.txt")
	if code, stdout, stderr := run(t, "solve", "-o", txt, tw); code != exitOK {
		t.Fatalf("twremat: exit %d: %s%s", code, stdout, stderr)
	}
	if data, _ := os.ReadFile(txt); !strings.HasPrefix(string(data), "c 1\nc 2\n") {
		t.Errorf("TWRemat schedule:\n%s", data)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"solve", in, in}, exitUsage, "solve takes one GRAPH"},
		{[]string{"solve", "-format", "xml", in}, exitUsage, `-format "xml"`},
		{[]string{"solve", "-semantics", "odd", in}, exitUsage, "unknown memory semantics"},
		{[]string{"solve", "-budget", "1B", in}, exitFailure, "no plan within the budget"},
		{[]string{"solve", "-o", in, in}, exitFailure, "refusing to overwrite the input"},
	} {
		if code, stdout, stderr := run(t, tt.args...); code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("%v: exit %d %s%s; want exit %d and %q", tt.args, code, stdout, stderr, tt.code, tt.want)
		}
	}
}

// TestBenchPeers reproduces MOCCASIN's Table 3 rows of G1 with auto and
// prints the published numbers beside them; a graph from a node-link
// file is benchmarked like any other.
func TestBenchPeers(t *testing.T) {
	code, stdout, stderr := run(t, "bench", "-peers", "-time-limit", "1s", "G1")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "| RL G1 | (100, 236) | 41687 = 0.9 × 46319 | auto |") || !strings.Contains(stdout, "0.8 / 40,820 / 9.3") {
		t.Errorf("table:\n%s", stdout)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "g.json")
	os.WriteFile(in, []byte(nodeLink), 0o644)
	if code, stdout, stderr := run(t, "bench", "-solvers", "checkpoint-all,chen-greedy", "-budgets", "90%", in); code != exitOK || !strings.Contains(stdout, "g.json") {
		t.Errorf("bench of a node-link file: exit %d:\n%s%s", code, stdout, stderr)
	}
}
