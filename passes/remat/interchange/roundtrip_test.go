package interchange_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// TestRoundTrip writes one graph in each interchange format, reads it back
// with Load, solves it with registered solvers at 80 % of its no-remat
// peak, writes each plan as schedule JSON and as TWRemat output, and then
// re-checks every schedule with an independent reader: refGraph parses
// the graph file on its own, and refSimulate replays the schedule text
// alone, checking that every computation finds its inputs resident, and
// recomputes the peak and the cost, which must equal remat.Check's. The
// computation sequence alone is also measured by MOCCASIN's own
// definition (its App. A.3, eq. 14–17), which must give the same peak.
func TestRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("solves each format's graph with four solvers; skipped in -short mode")
	}
	src, err := synth.LayeredWith(3, 60, 150, synth.MoccasinCalibrated)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"moccasin.json":  writeMoccasin(src),
		"checkmate.json": writeCheckmate(src),
		"graph.twremat":  writeTWRemat(src, 12000),
	}
	names := []string{"auto", "lns", "xla-greedy", "checkpoint-all"}
	for file, text := range files {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(file, func(t *testing.T) {
			p, format, err := interchange.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			ref := refGraph(t, path, format)
			base, err := remat.EvaluateNoRemat(p)
			if err != nil {
				t.Fatal(err)
			}
			if format != interchange.TWRematText {
				p.BudgetBytes = base.PeakBytes * 8 / 10
			} else if p.BudgetBytes != 12000 {
				t.Fatalf("memlimit read as %d, want 12000", p.BudgetBytes)
			}
			recomputing := 0
			for _, name := range names {
				s, ok := solvers.Lookup(name)
				if !ok {
					t.Fatalf("no solver %s", name)
				}
				q := *p
				if name == "checkpoint-all" {
					q.BudgetBytes = remat.NoBudget
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				plan, err := s.Solve(ctx, &q, nil)
				cancel()
				if err != nil {
					if name == "xla-greedy" {
						continue // a heuristic may miss the budget
					}
					t.Fatalf("%s: %v", name, err)
				}
				res, err := remat.Check(&q, plan)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.Recomputations > 0 {
					recomputing++
				}
				js, err := interchange.MarshalScheduleJSON(&q, plan, file)
				if err != nil {
					t.Fatal(err)
				}
				tw, err := interchange.MarshalTWRematSchedule(&q, plan)
				if err != nil {
					t.Fatal(err)
				}
				for kind, steps := range map[string][]refStep{"json": refParseJSON(t, js), "twremat": refParseTWRemat(t, tw)} {
					peak, cost, during := refSimulate(t, ref, steps)
					if peak != res.PeakBytes || !near(cost, res.TotalSeconds) {
						t.Errorf("%s %s: independent peak %d cost %v; remat.Check %d %v", name, kind, peak, cost, res.PeakBytes, res.TotalSeconds)
					}
					if peak17 := refMoccasinPeak(ref, steps); peak17 != res.PeakBytes {
						t.Errorf("%s %s: MOCCASIN's eq. 17 gives peak %d; remat.Check %d", name, kind, peak17, res.PeakBytes)
					}
					if kind == "json" {
						checkJSONFigures(t, js, peak, cost, during)
					}
				}
			}
			if recomputing < 2 {
				t.Errorf("only %d plans recompute anything; the round trip should exercise recomputation", recomputing)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// checkJSONFigures compares the document's own figures with the
// independent replay.
func checkJSONFigures(t *testing.T, js []byte, peak int64, cost float64, during []int64) {
	t.Helper()
	var d struct {
		Format  string  `json:"format"`
		Version int     `json:"version"`
		Peak    int64   `json:"peak_bytes"`
		Cost    float64 `json:"cost"`
		Steps   []struct {
			Memory *int64 `json:"memory_bytes"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatal(err)
	}
	if d.Format != "remat-compile schedule" || d.Version != 1 || d.Peak != peak || !near(d.Cost, cost) {
		t.Errorf("document says %s v%d peak %d cost %v; replay %d %v", d.Format, d.Version, d.Peak, d.Cost, peak, cost)
	}
	k := 0
	for _, s := range d.Steps {
		if s.Memory != nil {
			if k >= len(during) || *s.Memory != during[k] {
				t.Fatalf("memory of computation %d: document %d, replay %v", k, *s.Memory, during[k:min(k+1, len(during))])
			}
			k++
		}
	}
	if k != len(during) {
		t.Errorf("%d computations carry memory, the replay has %d", k, len(during))
	}
}

// The test's own writers of the three formats.

func writeMoccasin(p *remat.Problem) string {
	var nodes, links, order []string
	for i := range p.N() {
		nodes = append(nodes, fmt.Sprintf(`{"name": %d, "out_cost": %d, "duration": %g, "param_cost": 0}`, 100+i, p.Bytes[i], p.Seconds[i]*1000))
		order = append(order, strconv.Itoa(100+i))
		for _, d := range p.Deps[i] {
			links = append(links, fmt.Sprintf(`{"0": %d, "1": %d}`, 100+d, 100+i))
		}
	}
	return `{"directed": true, "multigraph": false, "graph": {"name": "rt", "order": [` + strings.Join(order, ", ") + `]},` +
		"\n\"nodes\": [" + strings.Join(nodes, ",\n") + "],\n\"links\": [" + strings.Join(links, ",\n") + "]}\n"
}

func writeCheckmate(p *remat.Problem) string {
	// Nodes listed in reverse: networkx's order must put them right.
	var nodes, links []string
	for i := p.N() - 1; i >= 0; i-- {
		nodes = append(nodes, fmt.Sprintf(`{"name": "n%d", "backward": false, "cost_cpu": %g, "cost_ram": %d, "id": %d}`, i, p.Seconds[i]*1000, p.Bytes[i], i))
	}
	for i := range p.N() {
		for _, d := range p.Deps[i] {
			links = append(links, fmt.Sprintf(`{"source": %d, "target": %d}`, d, i))
		}
	}
	return `{"directed": true, "multigraph": false, "graph": {"name": "rt_train"}, "nodes": [` + strings.Join(nodes, ",\n") + "],\n\"links\": [" + strings.Join(links, ",\n") + "]}\n"
}

func writeTWRemat(p *remat.Problem, memlimit int64) string {
	read := make([]bool, p.N())
	for _, ds := range p.Deps {
		for _, d := range ds {
			read[d] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "p remat2\nmemlimit %d\n", memlimit)
	// Lines from the last node to the first: not a topological order.
	for i := p.N() - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "node %d deps", 7*i)
		for _, d := range p.Deps[i] {
			fmt.Fprintf(&b, " %d", 7*d)
		}
		fmt.Fprintf(&b, " cpu %g mem %d", p.Seconds[i]*1000, p.Bytes[i])
		if !read[i] {
			b.WriteString(" target")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The independent reader: it parses the graph file and the schedule text
// on its own and replays the schedule.

type refGraphT struct {
	bytes   map[string]int64
	cost    map[string]float64
	preds   map[string][]string
	outputs map[string]bool // held after the last step
}

func refGraph(t *testing.T, path string, format interchange.Format) *refGraphT {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := &refGraphT{bytes: map[string]int64{}, cost: map[string]float64{}, preds: map[string][]string{}, outputs: map[string]bool{}}
	if format == interchange.TWRematText {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "node" {
				continue
			}
			id, k := f[1], 3
			for ; f[k] != "cpu"; k++ {
				g.preds[id] = append(g.preds[id], f[k])
			}
			c, _ := strconv.ParseFloat(f[k+1], 64)
			m, _ := strconv.ParseInt(f[k+3], 10, 64)
			g.cost[id], g.bytes[id] = c, m
			if f[len(f)-1] == "target" {
				g.outputs[id] = true
			}
		}
		return g
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	key := func(v any) string { return fmt.Sprint(v) }
	for _, n := range doc["nodes"].([]any) {
		m := n.(map[string]any)
		id, b, c := m["id"], m["cost_ram"], m["cost_cpu"]
		if id == nil {
			id, b, c = m["name"], m["out_cost"], m["duration"]
		}
		g.bytes[key(id)], g.cost[key(id)] = int64(b.(float64)), c.(float64)
	}
	for _, l := range doc["links"].([]any) {
		m := l.(map[string]any)
		s, d := m["source"], m["target"]
		if s == nil {
			s, d = m["0"], m["1"]
		}
		g.preds[key(d)] = append(g.preds[key(d)], key(s))
	}
	return g
}

type refStep struct {
	compute bool
	node    string
}

func refParseJSON(t *testing.T, js []byte) []refStep {
	var d struct {
		Steps []struct{ Op, Node string } `json:"steps"`
	}
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatal(err)
	}
	var out []refStep
	for _, s := range d.Steps {
		if s.Op != "compute" && s.Op != "free" {
			t.Fatalf("step op %q", s.Op)
		}
		out = append(out, refStep{s.Op == "compute", s.Node})
	}
	return out
}

func refParseTWRemat(t *testing.T, text []byte) []refStep {
	var out []refStep
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || (f[0] != "c" && f[0] != "f") {
			t.Fatalf("TWRemat output line %q", sc.Text())
		}
		out = append(out, refStep{f[0] == "c", f[1]})
	}
	return out
}

// refSimulate replays the steps: a computation holds everything resident
// plus its own output; a free releases a resident value.
func refSimulate(t *testing.T, g *refGraphT, steps []refStep) (peak int64, cost float64, during []int64) {
	t.Helper()
	resident := map[string]bool{}
	var mem int64
	for k, s := range steps {
		if _, ok := g.bytes[s.node]; !ok {
			t.Fatalf("step %d names node %s, which the graph does not have", k, s.node)
		}
		if !s.compute {
			if !resident[s.node] {
				t.Fatalf("step %d frees %s, which is not resident", k, s.node)
			}
			delete(resident, s.node)
			mem -= g.bytes[s.node]
			continue
		}
		for _, d := range g.preds[s.node] {
			if !resident[d] {
				t.Fatalf("step %d computes %s without its input %s", k, s.node, d)
			}
		}
		if resident[s.node] {
			t.Fatalf("step %d computes %s again while it is resident", k, s.node)
		}
		resident[s.node] = true
		mem += g.bytes[s.node]
		peak = max(peak, mem)
		during = append(during, mem)
		cost += g.cost[s.node]
	}
	for n := range g.bytes {
		if resident[n] != g.outputs[n] {
			t.Fatalf("after the last step %s resident = %v, output = %v", n, resident[n], g.outputs[n])
		}
	}
	return peak, cost, during
}

// refMoccasinPeak is MOCCASIN's App. A.3 on the computation sequence
// alone: M_i = m(s_i) + Σ m(v) over the output retention set ors_{i−1},
// the earlier computations whose value a later step reads from that very
// computation (the last one of its node before the reader, eq. 16), plus
// here the last computations of the graph outputs, held to the end.
func refMoccasinPeak(g *refGraphT, steps []refStep) int64 {
	var seq []string
	for _, s := range steps {
		if s.compute {
			seq = append(seq, s.node)
		}
	}
	// retainedUntil[j]: the last step that reads computation j.
	retainedUntil := make([]int, len(seq))
	last := map[string]int{}
	for k, v := range seq {
		retainedUntil[k] = -1
		for _, u := range g.preds[v] {
			retainedUntil[last[u]] = k
		}
		last[v] = k
	}
	for v, k := range last {
		if g.outputs[v] {
			retainedUntil[k] = len(seq)
		}
	}
	var peak int64
	for i, v := range seq {
		m := g.bytes[v]
		for j := range i {
			if retainedUntil[j] >= i {
				m += g.bytes[seq[j]]
			}
		}
		peak = max(peak, m)
	}
	return peak
}

// TestParseScheduleFormat: a named format wins; without one the output's
// extension decides; anything else is an error naming the choices.
func TestParseScheduleFormat(t *testing.T) {
	for _, tt := range []struct{ format, path, want string }{
		{"", "s.json", interchange.FormatJSON},
		{"", "s.TXT", interchange.FormatTWRemat},
		{"", "s.twremat", interchange.FormatTWRemat},
		{"", "", interchange.FormatJSON},
		{"json", "s.txt", interchange.FormatJSON},
		{"twremat", "s.json", interchange.FormatTWRemat},
	} {
		if got, err := interchange.ParseScheduleFormat(tt.format, tt.path); err != nil || got != tt.want {
			t.Errorf("ParseScheduleFormat(%q, %q) = %q, %v; want %q", tt.format, tt.path, got, err, tt.want)
		}
	}
	if _, err := interchange.ParseScheduleFormat("xml", "s.xml"); err == nil || !strings.Contains(err.Error(), "json or twremat") {
		t.Errorf("xml: %v", err)
	}
}
