package main

import (
	"context"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/remat-compile/remat/bench"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

// TestBench runs the heuristics on a small random layered graph and on a
// model: one row per (graph, budget, solver) in the table and in the CSV,
// with the same rows on a second run (the solvers are deterministic).
func TestBench(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "bench.csv")
	args := []string{"bench", "-budgets", "100%,90%", "-solvers", "checkpoint-all,chen-greedy,linearized-greedy", "-time-limit", "20s", "-csv", csvPath,
		"layered:30:60:3", filepath.Join("..", "..", "testdata", "models", "unet_like.onnx")}
	code, out, errOut := run(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Log(out)
	for _, want := range []string{"layered:30:60:3", "(30, 60)", "unet_like.onnx", "checkpoint-all", "linearized-greedy", "100% = ", "90% = "} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	recs := readCSV(t, csvPath)
	if len(recs) != 1+2*2*3 {
		t.Fatalf("%d CSV records, want a header and 12 rows", len(recs))
	}
	for _, r := range recs[1:] {
		// At 100% of the no-remat peak checkpoint-all fits with no overhead.
		if r[3] == "100%" && r[7] == "checkpoint-all" && (r[8] != "feasible" && r[8] != "optimal" || r[9] != "0.0000") {
			t.Errorf("checkpoint-all at 100%% on %s: status %s, overhead %s", r[0], r[8], r[9])
		}
		if r[8] == "error" {
			t.Errorf("%s on %s at %s: %s", r[7], r[0], r[3], r[len(r)-1])
		}
	}
	code, out2, _ := run(t, args...)
	if code != exitOK {
		t.Fatal("second run failed")
	}
	strip := func(s string) string { // the time column (third from the right) varies
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) > 3 {
				lines = append(lines, strings.Join(slices.Delete(f, len(f)-3, len(f)-2), " "))
			}
		}
		return strings.Join(lines, "\n")
	}
	if strip(out) != strip(out2) {
		t.Errorf("two runs differ:\n%s\n---\n%s", out, out2)
	}
}

// TestBenchBadArgs: bad graph specs and solver names are usage errors
// that say what to write.
func TestBenchBadArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "at least one GRAPH"},
		{[]string{"bench", "layered:100"}, "layered:N:M[:SEED|:FIRST-LAST]"},
		{[]string{"bench", "layered:100:5"}, "take between 90 and"},
		{[]string{"bench", "layered:x:5"}, "not a non-negative integer"},
		{[]string{"bench", "layered:100:236:1:shape=wide"}, "unknown option \"shape=wide\""},
		{[]string{"bench", "layered:100:236:layers=1"}, "bad option \"layers=1\""},
		{[]string{"bench", "layered:100:236:order=sorted"}, "bad option \"order=sorted\""},
		{[]string{"bench", "layered:100:236:cost-decades=9"}, "bad option \"cost-decades=9\""},
		{[]string{"bench", "layered:100:236:moccasin=1"}, "bad option \"moccasin=1\""},
		{[]string{"bench", "layered:100:236:3-1"}, "bad seed range \"3-1\""},
		{[]string{"bench", "layered:100:236:1-x:moccasin"}, "bad seed range \"1-x\""},
		{[]string{"bench", "layered:100:236:0-1000"}, "holds 1001 seeds; at most 1000 are allowed"},
		{[]string{"bench", "-solvers", "nope", "layered:10:12"}, "unknown solver"},
		{[]string{"bench", "-budgets", "abc", "layered:10:12"}, "budget"},
		{[]string{"bench", "-bound-time", "10s", "layered:10:12"}, "-bound-time applies to -peers only"},
		{[]string{"bench", "-peers", "-bound-time", "-1s"}, "want a positive duration"},
	} {
		code, _, errOut := run(t, c.args...)
		if code == exitOK || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error containing %q", c.args, code, errOut, c.want)
		}
	}
}

// readCSV reads a CSV file that bench wrote.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestBenchSeedRange: a seed range runs one graph per seed, each the
// graph its single-seed spec names, and the means table averages each
// solver's overhead over the seeds where it has a plan within the budget.
func TestBenchSeedRange(t *testing.T) {
	dir := t.TempDir()
	csvPath, mdPath := filepath.Join(dir, "b.csv"), filepath.Join(dir, "b.md")
	code, out, errOut := run(t, "bench", "-budgets", "90%", "-solvers", "checkpoint-all,lns", "-time-limit", "10s",
		"-csv", csvPath, "-md", mdPath, "layered:30:60:1-3:moccasin")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs := readCSV(t, csvPath)
	peaks := map[string]string{}
	var sum float64
	plans := 0
	for _, r := range recs[1:] {
		peaks[r[0]] = r[5]
		if r[7] == "lns" && (r[8] == "optimal" || r[8] == "feasible") {
			v, err := strconv.ParseFloat(r[9], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
			plans++
		}
	}
	for seed := 1; seed <= 3; seed++ {
		name := fmt.Sprintf("layered:30:60:%d:moccasin", seed)
		one := filepath.Join(dir, "one.csv")
		if code, _, errOut := run(t, "bench", "-budgets", "100%", "-solvers", "checkpoint-all", "-csv", one, name); code != exitOK {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		row := readCSV(t, one)[1]
		if peaks[name] == "" || peaks[name] != row[5] {
			t.Errorf("%s: no-remat peak %q in the range, %q alone", name, peaks[name], row[5])
		}
	}
	if plans == 0 {
		t.Fatalf("lns found no plan on any seed:\n%s", out)
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("| layered:30:60:1-3:moccasin | 90%% | lns | %d of 3 | %.2f |", plans, sum/float64(plans))
	if !strings.Contains(string(md), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md)
	}
	if !strings.Contains(string(md), "| layered:30:60:1-3:moccasin | 90% | checkpoint-all | 0 of 3 | - | - | - | - |") {
		t.Errorf("markdown lacks checkpoint-all's row without plans:\n%s", md)
	}
	if !strings.Contains(out, "Means over the seeds") {
		t.Errorf("no means table on stdout:\n%s", out)
	}
}

// TestBenchLayeredOptions: the options of a layered: spec reach the
// generator: the calibrated set gives another graph (another no-remat
// peak) than the default at the same seed, and a later option overrides
// the set.
func TestBenchLayeredOptions(t *testing.T) {
	peak := func(spec string) string {
		code, out, errOut := run(t, "bench", "-budgets", "100%", "-solvers", "checkpoint-all", spec)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", spec, code, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 5 && f[0] == spec {
				return f[5] // the budget "100% = PEAK"
			}
		}
		t.Fatalf("%s: no row in\n%s", spec, out)
		return ""
	}
	def, cal, four := peak("layered:100:236"), peak("layered:100:236:moccasin"), peak("layered:100:236:moccasin:layers=4")
	if def == cal || cal == four {
		t.Errorf("no-remat peaks: default %s, moccasin %s, moccasin with 4 layers %s; want three different graphs", def, cal, four)
	}
}

// TestBenchTrainSVG benchmarks the zoo U-Net's training graph at three
// budgets and draws the curves: the SVG parses, names the graph, and has
// a polyline for each solver that found plans at two budgets or more.
func TestBenchTrainSVG(t *testing.T) {
	svgPath := filepath.Join(t.TempDir(), "curves.svg")
	code, out, errOut := run(t, "bench", "-train", "-budgets", "100%,95%,90%", "-solvers", "checkpoint-all,chen-greedy,ap-greedy", "-time-limit", "20s", "-svg", svgPath, "zoo:unet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "zoo:unet (training)") {
		t.Errorf("the table does not name the training graph:\n%s", out)
	}
	data, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Polylines []struct{} `xml:"polyline"`
		Texts     []string   `xml:"text"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the SVG does not parse: %v", err)
	}
	// chen-greedy and ap-greedy find plans at 100% and 95% at least;
	// checkpoint-all only at 100%.
	if len(doc.Polylines) < 2 {
		t.Errorf("%d polylines, want one per solver with two or more plans", len(doc.Polylines))
	}
	if !slices.Contains(doc.Texts, "zoo:unet (training)") {
		t.Errorf("the SVG's titles are %q", doc.Texts)
	}
	if code, _, errOut := run(t, "bench", "zoo:nope"); code == exitOK || !strings.Contains(errOut, "unknown model") {
		t.Errorf("zoo:nope: exit %d, %s", code, errOut)
	}
}

// TestBenchMaxBatch: the largest U-Net training batch within an STM32H7's
// memory. checkpoint-all's answer is the largest batch whose no-remat peak
// fits; chen-greedy, within one extra forward pass of cost, reaches at
// least as far.
func TestBenchMaxBatch(t *testing.T) {
	code, out, errOut := run(t, "bench", "-max-batch", "64", "-profile", "stm32h7", "-solvers", "checkpoint-all,chen-greedy", "-time-limit", "20s", "zoo:unet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Log(out)
	batch := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == "zoo:unet" {
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			batch[f[1]] = n
		}
	}
	ca := batch["checkpoint-all"]
	if ca < 1 || batch["chen-greedy"] < ca {
		t.Fatalf("max batch: %v; want checkpoint-all ≥ 1 and chen-greedy at least as large", batch)
	}
	prof, err := profiles.Load("stm32h7")
	if err != nil {
		t.Fatal(err)
	}
	loss, _ := autodiff.ParseLoss("sum")
	for _, b := range []int{ca, ca + 1} {
		bp := bench.BuildBatch(context.Background(), "unet:batch="+strconv.Itoa(b), prof, loss)
		if bp.Err != nil {
			t.Fatal(bp.Err)
		}
		plan, err := remat.NoRematPlan(bp.Problem)
		if err != nil {
			t.Fatal(err)
		}
		res, err := remat.Evaluate(bp.Problem, plan)
		if err != nil {
			t.Fatal(err)
		}
		if fits := res.PeakBytes <= bp.Budget; fits != (b == ca) {
			t.Errorf("batch %d: no-remat peak %d, budget %d; checkpoint-all said %d is the largest", b, res.PeakBytes, bp.Budget, ca)
		}
	}
	if code, _, errOut := run(t, "bench", "-max-batch", "8", "layered:10:12"); code != exitUsage || !strings.Contains(errOut, "zoo:NAME") {
		t.Errorf("-max-batch on a layered graph: exit %d, %s", code, errOut)
	}
}

// TestBenchMinBudgetMarkdown checks the budget "min" (the smallest peak a
// solver of the run reached, so at least one of them fits it and none goes
// below the working-set floor) and the Markdown table, whose gaps to the
// best bound are never negative.
func TestBenchMinBudgetMarkdown(t *testing.T) {
	md := filepath.Join(t.TempDir(), "bench.md")
	code, out, errOut := run(t, "bench", "-budgets", "90%,min", "-solvers", "checkpoint-all,chen-greedy,linearized-greedy",
		"-time-limit", "20s", "-md", md, "layered:40:90:2")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2+2*3 {
		t.Fatalf("%d Markdown lines, want a header, a rule and 6 rows:\n%s", len(lines), data)
	}
	fits := 0
	for _, l := range lines[2:] {
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) != 10 {
			t.Fatalf("row %q has %d cells, want 10", l, len(cells))
		}
		if strings.HasPrefix(cells[2], "min = ") && (cells[4] == "feasible" || cells[4] == "optimal") {
			fits++
		}
		if g := cells[9]; g != "-" {
			if v, err := strconv.ParseFloat(g, 64); err != nil || v < 0 {
				t.Errorf("row %q: gap to the best bound %q", l, g)
			}
		}
	}
	if fits == 0 {
		t.Errorf("no solver fits the budget min, which is the least peak one of them reached:\n%s\n%s", data, out)
	}
}

// TestZooSpecs checks the zoo: model syntax every command accepts: a
// configuration that builds, and errors that name the bad part.
func TestZooSpecs(t *testing.T) {
	g, err := pipeline.BuildZoo("unet:res=32:batch=2:width=0.0625:seed=3")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Inputs[0].Type.String(); !strings.Contains(got, "[2,") || !strings.Contains(got, "32,32]") {
		t.Errorf("input type %s, want batch 2 at 32×32", got)
	}
	for spec, want := range map[string]string{
		"nosuch":           "unknown model",
		"unet:res=0":       "res=N with 1",
		"unet:width=-1":    "width=F",
		"unet:bogus":       "small, default, fp16, dynquant, tf or KEY=VALUE",
		"unet:colour=blue": "one of batch, res",
		"vgg16:res=33":     "multiple of 32",
	} {
		if _, err := pipeline.BuildZoo(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("zoo:%s: error %v, want one containing %q", spec, err, want)
		}
	}
	// The variants: float16 weights behind float32 inputs and outputs,
	// ConvInteger in place of Conv.
	for spec, want := range map[string]string{"unet:fp16": "Cast", "unet:dynquant": "ConvInteger"} {
		g, err := pipeline.BuildZoo(spec)
		if err != nil {
			t.Fatalf("zoo:%s: %v", spec, err)
		}
		ops := map[string]bool{}
		for _, n := range g.Nodes {
			ops[n.Op] = true
		}
		if !ops[want] || g.Inputs[0].Type.DType != ir.Float32 || g.Outputs[0].Type.DType != ir.Float32 {
			t.Errorf("zoo:%s: ops %v, input %v, output %v; want %s and float32 input and output", spec, ops, g.Inputs[0].Type, g.Outputs[0].Type, want)
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "unet.train.onnx")
	if code, _, errOut := run(t, "compile", "-train", "-solver", "checkpoint-all", "-o", out, "zoo:unet:res=32"); code != exitOK {
		t.Fatalf("compile zoo:unet:res=32: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error(err)
	}
}

// TestBenchMILPStart: checkmate-milp starts from the cheapest plan of the
// solvers before it, so its row never costs more than that plan and names
// where its start came from; -milp-start=false runs CBC from scratch.
func TestBenchMILPStart(t *testing.T) {
	for _, warm := range []bool{true, false} {
		csvPath := filepath.Join(t.TempDir(), "bench.csv")
		code, _, errOut := run(t, "bench", "-budgets", "90%", "-solvers", "chen-greedy,linearized-greedy,checkmate-milp",
			"-milp-start="+strconv.FormatBool(warm), "-time-limit", "20s", "-csv", csvPath, filepath.Join("..", "..", "testdata", "models", "unet_like.onnx"))
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		recs := readCSV(t, csvPath)
		cost := map[string]float64{}
		var milpNote string
		for _, r := range recs[1:] {
			if r[8] == "feasible" || r[8] == "optimal" {
				cost[r[7]], _ = strconv.ParseFloat(r[11], 64)
			}
			if r[7] == "checkmate-milp" {
				milpNote = r[len(r)-1]
			}
		}
		if !warm {
			if strings.Contains(milpNote, "MIP start") {
				t.Errorf("-milp-start=false: checkmate-milp's note %q", milpNote)
			}
			continue
		}
		best := min(cost["chen-greedy"], cost["linearized-greedy"])
		if cost["chen-greedy"] == 0 || !strings.HasPrefix(milpNote, "MIP start: chen-greedy") {
			t.Errorf("checkmate-milp's note %q; want a MIP start from chen-greedy, the first cheapest plan (costs %v)", milpNote, cost)
		}
		if c, ok := cost["checkmate-milp"]; !ok || c > best*(1+1e-9) {
			t.Errorf("checkmate-milp costs %v (ok %v), more than its start's %v", c, ok, best)
		}
	}
}

// TestBenchExactMaxNodes: past -exact-max-nodes the exact solvers are
// skipped, with a row that says why; the others still run.
func TestBenchExactMaxNodes(t *testing.T) {
	csvPath := filepath.Join(t.TempDir(), "b.csv")
	code, _, errOut := run(t, "bench", "-budgets", "90%", "-solvers", "checkpoint-all,checkmate-lp,moccasin",
		"-exact-max-nodes", "20", "-time-limit", "10s", "-csv", csvPath, "layered:30:60:3")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"checkmate-lp", "moccasin"} {
		if !regexp.MustCompile(s + `,skipped,.*30 nodes > -exact-max-nodes 20`).Match(data) {
			t.Errorf("%s not skipped:\n%s", s, data)
		}
	}
	if strings.Contains(string(data), "checkpoint-all,skipped") {
		t.Errorf("checkpoint-all skipped:\n%s", data)
	}
}
