package interchange_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
)

// A small graph in each format, the same DAG: 0 → 1, 0 → 2, 1 → 3, 2 → 3,
// 3 → 4, 1 → 4.
const (
	moccasinSmall = `{"directed": true, "multigraph": false,
 "graph": {"name": "small", "order": [0, 2, 1, 3, 4]},
 "nodes": [{"name": 0, "out_cost": 100, "duration": 0, "param_cost": 7},
           {"name": 1, "out_cost": 300, "duration": 5, "param_cost": 0},
           {"name": 2, "out_cost": 200, "duration": 3, "param_cost": 0},
           {"name": 3, "out_cost": 50, "duration": 2, "param_cost": 0},
           {"name": 4, "out_cost": 10, "duration": 1, "param_cost": 0}],
 "links": [{"0": 0, "1": 1}, {"0": 0, "1": 2}, {"0": 1, "1": 3}, {"0": 2, "1": 3}, {"0": 3, "1": 4}, {"0": 1, "1": 4}]}`
	checkmateSmall = `{"directed": true, "multigraph": false, "graph": {"name": "small_train"},
 "nodes": [{"name": "in", "backward": false, "cost_cpu": 1, "cost_ram": 100, "id": 10},
           {"name": "b", "backward": false, "cost_cpu": 5, "cost_ram": 300, "id": 11},
           {"name": "c", "backward": false, "cost_cpu": 3, "cost_ram": 200, "id": 12},
           {"name": "d", "backward": true, "cost_cpu": 2, "cost_ram": 50, "id": 13},
           {"name": "e", "backward": true, "cost_cpu": 1, "cost_ram": 10, "id": 14}],
 "links": [{"source": 10, "target": 11}, {"source": 10, "target": 12}, {"source": 11, "target": 13},
           {"source": 12, "target": 13}, {"source": 13, "target": 14}, {"source": 11, "target": 14}]}`
	twrematSmall = `p remat2
memlimit 1000
node 4 deps 3 1 cpu 1 mem 10 target
node 0 deps cpu 1 mem 100
node 1 deps 0 cpu 5 mem 300
node 2 deps 0 cpu 3 mem 200
node 3 deps 1 2 cpu 2 mem 50
`
)

func TestReadSmall(t *testing.T) {
	for _, c := range []struct {
		name, data string
		format     interchange.Format
		names      []string
		deps       [][]int32
		outputs    []int32
		budget     int64
	}{
		// graph.order puts node 2 before node 1.
		{"small.json", moccasinSmall, interchange.NodeLinkMoccasin, []string{"0", "2", "1", "3", "4"},
			[][]int32{nil, {0}, {0}, {1, 2}, {2, 3}}, nil, remat.NoBudget},
		// networkx's order: 10; then 11, 12 (its children in link order); 13; 14.
		{"small_train.json", checkmateSmall, interchange.NodeLinkCheckmate, []string{"10", "11", "12", "13", "14"},
			[][]int32{nil, {0}, {0}, {1, 2}, {1, 3}}, nil, remat.NoBudget},
		// The file's order is not topological (node 4 first): networkx's.
		{"small.twremat", twrematSmall, interchange.TWRematText, []string{"0", "1", "2", "3", "4"},
			[][]int32{nil, {0}, {0}, {1, 2}, {1, 3}}, []int32{4}, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := interchange.Read([]byte(c.data), c.name, interchange.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := g.Problem
			if g.Format != c.format || !slices.Equal(p.Names, c.names) || !slices.Equal(p.Outputs, c.outputs) || p.BudgetBytes != c.budget || g.Edges != 6 {
				t.Errorf("format %v names %v outputs %v budget %d edges %d", g.Format, p.Names, p.Outputs, p.BudgetBytes, g.Edges)
			}
			for i := range c.deps {
				if !slices.Equal(p.Deps[i], c.deps[i]) {
					t.Errorf("Deps[%d] = %v, want %v", i, p.Deps[i], c.deps[i])
				}
			}
			if err := p.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestTWRematWeights checks the mapping of TWRemat's weights: effectful
// nodes run once and hold nothing, pointers hold nothing but keep what
// they view resident for their readers, through chains of pointers.
func TestTWRematWeights(t *testing.T) {
	const in = `p remat2
node 0 deps cpu 4 mem 100
node 1 deps effectful
node 2 deps 0 1 pointer
node 3 deps 2 pointer
node 4 deps 3 cpu 2 mem 30 target
`
	g, err := interchange.Read([]byte(in), "w.txt", interchange.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := g.Problem
	if !slices.Equal(p.Recomputable, []bool{true, false, true, true, true}) ||
		!slices.Equal(p.Bytes, []int64{100, 0, 0, 0, 30}) || !slices.Equal(p.Seconds, []float64{4, 0, 0, 0, 2}) {
		t.Errorf("recomputable %v bytes %v seconds %v", p.Recomputable, p.Bytes, p.Seconds)
	}
	// Node 4 reads the pointer 3, which views 2, which views 0 and 1.
	if want := []int32{0, 1, 2, 3}; !slices.Equal(p.Deps[4], want) {
		t.Errorf("Deps[4] = %v, want %v", p.Deps[4], want)
	}
	if p.BudgetBytes != remat.NoBudget || !slices.Equal(p.Outputs, []int32{4}) {
		t.Errorf("budget %d outputs %v", p.BudgetBytes, p.Outputs)
	}
	// Node 0's 100 bytes stay while node 4 runs: the peak is 130.
	res, err := remat.EvaluateNoRemat(p)
	if err != nil || res.PeakBytes != 130 {
		t.Errorf("no-remat peak %d (%v), want 130", res.PeakBytes, err)
	}
	// Under the other semantics: no outputs (free-sinks), the sink held
	// (hold-sinks).
	for sem, want := range map[interchange.Semantics][]int32{interchange.FreeSinks: nil, interchange.HoldSinks: {4}} {
		g, err := interchange.Read([]byte(in), "w.txt", interchange.Options{Semantics: sem})
		if err != nil || !slices.Equal(g.Problem.Outputs, want) {
			t.Errorf("%v: outputs %v (%v), want %v", sem, g.Problem.Outputs, err, want)
		}
	}
}

// TestReadErrors feeds malformed inputs and checks that each gives an
// *interchange.Error that names the file and says what is wrong.
func TestReadErrors(t *testing.T) {
	node := func(id, rest string) string { return `{"id": ` + id + `, "cost_cpu": 1, "cost_ram": 8` + rest + `}` }
	cm := func(nodes, links string) string {
		return `{"directed": true, "multigraph": false, "graph": {}, "nodes": [` + nodes + `], "links": [` + links + `]}`
	}
	three := node("0", "") + "," + node("1", "") + "," + node("2", "")
	for _, c := range []struct {
		name, file, data, want string
	}{
		{"truncated JSON", "g.json", `{"nodes": [`, "ends early"},
		{"bad JSON", "g.json", "{\n \"nodes\": [}", "not valid JSON at line 2, column 12"},
		{"not an object", "g.json", `[1, 2]`, "is a JSON array"},
		{"trailing data", "g.json", cm(node("0", ""), "") + " {}", "more data after the JSON document"},
		{"no nodes", "g.json", `{"directed": true, "links": []}`, "nodes: missing or empty"},
		{"undirected", "g.json", `{"directed": false, "nodes": [` + node("0", "") + `], "links": []}`, "undirected"},
		{"links and edges", "g.json", `{"nodes": [` + node("0", "") + `], "links": [], "edges": []}`, `both "links" and "edges"`},
		{"no cost attributes", "g.json", cm(`{"id": 0, "flops": 3}`, ""), "neither cost_ram"},
		{"missing field", "g.json", cm(node("0", "")+`, {"id": 1, "cost_cpu": 2}`, ""), `nodes[1]: has no "cost_ram"`},
		{"missing id", "g.json", cm(node("0", "")+`, {"cost_cpu": 2, "cost_ram": 3}`, ""), `nodes[1]: has no "id"`},
		{"negative cost", "g.json", cm(`{"id": 0, "cost_cpu": -1, "cost_ram": 8}`, ""), "nodes[0].cost_cpu: cost -1 is not a finite non-negative number"},
		{"negative bytes", "g.json", cm(`{"id": 0, "cost_cpu": 1, "cost_ram": -8}`, ""), "nodes[0].cost_ram: -8 bytes is negative"},
		{"fractional bytes", "g.json", cm(`{"id": 0, "cost_cpu": 1, "cost_ram": 8.5}`, ""), "8.5 is not a non-negative integer number of bytes"},
		{"string cost", "g.json", cm(`{"id": 0, "cost_cpu": "1", "cost_ram": 8}`, ""), `"1" is not a number`},
		{"fractional id", "g.json", cm(node("1.5", ""), ""), "id 1.5 is not an integer"},
		{"duplicate ids", "g.json", cm(node("0", "")+","+node("0", ""), ""), "node 0 appears twice (first as nodes[0])"},
		{"link to a missing node", "g.json", cm(three, `{"source": 0, "target": 7}`), "links[0].target: node 7 is not in nodes"},
		{"link keys differ", "g.json", cm(three, `{"source": 0, "target": 1}, {"0": 1, "1": 2}`), `links[1]: has no "source"`},
		{"self loop", "g.json", cm(three, `{"source": 1, "target": 1}`), "node 1 depends on itself"},
		{"cycle", "g.json", cm(three, `{"source": 0, "target": 1}, {"source": 1, "target": 2}, {"source": 2, "target": 0}`), "the graph has a cycle: 0 → 1 → 2 → 0"},
		{"order misses a node", "g.json", strings.Replace(moccasinSmall, `[0, 2, 1, 3, 4]`, `[0, 2, 1, 3]`, 1), "graph.order: lists 4 of the 5 nodes; node 4 is missing"},
		{"order repeats a node", "g.json", strings.Replace(moccasinSmall, `[0, 2, 1, 3, 4]`, `[0, 2, 1, 3, 3]`, 1), "graph.order[4]: node 3 is listed twice"},
		{"order not topological", "g.json", strings.Replace(moccasinSmall, `[0, 2, 1, 3, 4]`, `[0, 3, 1, 2, 4]`, 1), "graph.order: is not a topological order: node 1 comes after 3, which reads it"},
		{"order names a stranger", "g.json", strings.Replace(moccasinSmall, `[0, 2, 1, 3, 4]`, `[0, 2, 1, 3, 9]`, 1), "graph.order[4]: 9 is not a node"},
		{"empty file", "g.json", "  \n", "the file is empty"},
		{"unknown format", "g.dat", "hello world\n", `cannot tell the format: the file starts with "hello world"`},
		{"twremat: wrong problem", "g.txt", "p remat3\nnode 0 deps cpu 1 mem 1\n", "line 1: problem line \"p remat3\""},
		{"twremat: unknown line", "g.txt", "p remat2\nedge 0 1\n", `line 2: unknown line "edge 0 1"`},
		{"twremat: no weight", "g.txt", "p remat2\nnode 0 deps 1 2\n", "line 2: node 0 has no weight"},
		{"twremat: bad weight", "g.txt", "p remat2\nnode 0 deps cpu 1 memory 3\n", `found "memory" after the cost`},
		{"twremat: negative mem", "g.txt", "p remat2\nnode 0 deps cpu 1 mem -3\n", `mem "-3" is not a non-negative integer`},
		{"twremat: negative cpu", "g.txt", "p remat2\nnode 0 deps cpu -1 mem 3\n", `cpu "-1" is not a finite non-negative number`},
		{"twremat: junk after weight", "g.txt", "p remat2\nnode 0 deps pointer target loss\n", `unexpected "loss" after the weight`},
		{"twremat: duplicate node", "g.txt", "p remat2\nnode 0 deps cpu 1 mem 1\nnode 0 deps cpu 1 mem 1\n", "line 3: node 0 is defined twice (first on line 2)"},
		{"twremat: missing dep", "g.txt", "p remat2\nnode 0 deps 5 cpu 1 mem 1\n", "line 2: node 0 depends on node 5, which no `node` line defines"},
		{"twremat: cycle", "g.txt", "node 0 deps 1 cpu 1 mem 1\nnode 1 deps 0 cpu 1 mem 1\n", "the graph has a cycle: 0 → 1 → 0"},
		{"twremat: bad memlimit", "g.txt", "p remat2\nmemlimit lots\nnode 0 deps cpu 1 mem 1\n", `memlimit "lots" is not a non-negative integer`},
		{"twremat: no nodes", "g.txt", "p remat2\nmemlimit 10\n", "no `node` lines"},
		{"twremat: bad id", "g.txt", "p remat2\nnode x deps cpu 1 mem 1\n", `node id "x" is not an integer`},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := interchange.Read([]byte(c.data), c.file, interchange.Options{})
			if err == nil {
				t.Fatalf("no error; read %d nodes", g.Problem.N())
			}
			var ie *interchange.Error
			if !errors.As(err, &ie) || ie.File != c.file {
				t.Fatalf("error %T %v is not an *interchange.Error naming %s", err, err, c.file)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to say %q", err, c.want)
			}
		})
	}
}

// TestReadErrorsCapped checks that a file with many problems lists ten
// and counts the rest.
func TestReadErrorsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("p remat2\n")
	for range 15 {
		b.WriteString("node 1 deps cpu -1 mem 1\n")
	}
	_, err := interchange.Read([]byte(b.String()), "many.txt", interchange.Options{})
	var ie *interchange.Error
	if !errors.As(err, &ie) || len(ie.Problems) != 10 || ie.More != 5 || !strings.HasSuffix(err.Error(), "and 5 more") {
		t.Fatalf("error %v", err)
	}
}

// TestLoad reads files by path: the format comes from the content, the
// extension only when the content cannot tell; a missing file is the
// operating system's error.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a.json": moccasinSmall, "b.graph": checkmateSmall, "c.json": twrematSmall, "d": twrematSmall,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]interchange.Format{
		"a.json": interchange.NodeLinkMoccasin, "b.graph": interchange.NodeLinkCheckmate,
		"c.json": interchange.TWRematText, "d": interchange.TWRematText,
	} {
		p, f, err := interchange.Load(filepath.Join(dir, name))
		if err != nil || f != want || p.N() != 5 {
			t.Errorf("%s: %v, %v", name, f, err)
		}
	}
	if _, _, err := interchange.Load(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseSemantics(t *testing.T) {
	for _, s := range []interchange.Semantics{interchange.DefaultSemantics, interchange.FreeSinks, interchange.HoldSinks} {
		if got, err := interchange.ParseSemantics(s.String()); err != nil || got != s {
			t.Errorf("%v: %v, %v", s, got, err)
		}
	}
	if _, err := interchange.ParseSemantics("outputs"); err == nil || !strings.Contains(err.Error(), "free-sinks or hold-sinks") {
		t.Errorf("bad semantics: %v", err)
	}
}
