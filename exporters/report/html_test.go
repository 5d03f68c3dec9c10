package report_test

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/passes/remat"
)

// sample is a small report with every optional part: four nodes, one
// recomputed twice, the timelines, the R matrix, a sweep and a
// measurement.
func sample() *report.Compile {
	r := &report.Compile{
		Schema: report.Schema, Model: "tiny<&>.onnx", Output: "out.onnx", Profile: "v100-16gb",
		Solver: "auto", PlanSolver: "lns", Budget: "70%", BudgetBytes: 700, Target: "ort",
		TargetModel: "ONNX Runtime", MemoryModel: report.LivenessModel,
		BeforePeakBytes: 1000, AfterPeakBytes: 640, PeakReductionPercent: 36,
		ORTBeforePeakBytes: 1024, ORTAfterPeakBytes: 768, ORTDefaultBeforePeakBytes: 2048, ORTDefaultAfterPeakBytes: 1536,
		BaseComputeSeconds: 1e-3, PlanComputeSeconds: 1.2e-3, OverheadSeconds: 2e-4, OverheadPercent: 20,
		Recomputations: 2, RecomputedNodes: 1, CostSources: map[string]int{"datasheet": 4},
		CostSecondsBySource: map[string]float64{"datasheet": 1e-3},
		Nodes: []report.Node{
			{Node: "a", Op: "Conv", Outputs: []string{"a_out"}, Bytes: 400, ComputeSeconds: 1e-4, Recomputable: true, Decision: "recomputed", Computations: 3, Why: "recomputed at step 2 for <b>"},
			{Node: "b", Op: "Relu", Outputs: []string{"b_out"}, Bytes: 5, ComputeSeconds: 1e-4, Recomputable: true, Decision: "kept", Computations: 1, Why: "kept"},
			{Node: "c", Op: "Dropout", Outputs: []string{"c_out"}, Bytes: 300, ComputeSeconds: 1e-4, Decision: "kept", Computations: 1, Why: "kept: random"},
			{Node: "d", Op: "Add", Outputs: []string{"d_out"}, Bytes: 200, ComputeSeconds: 1e-4, Recomputable: true, Decision: "kept", Computations: 1, Why: "kept: output"},
		},
		PlanStages: [][]int32{{0}, {1}, {0, 2}, {0, 3}},
		Invocation: &report.Invocation{CommandLine: []string{"remat-compile", "tiny.onnx", "-budget", "70%", "-report", "it's.html"}, Version: "(devel)", GoVersion: "go1.26"},
	}
	r.Timelines = []report.Timeline{
		{Model: report.ModelLiveness, Description: "liveness", Source: report.SourcePredicted, BudgetBytes: 700,
			Original: report.NewSeries([]string{"a", "b", "c", "d"}, []int64{400, 1000, 900, 600}),
			Rewrite:  report.NewSeries([]string{"a", "b", "a", "c", "a", "d"}, []int64{400, 405, 640, 640, 600, 600})},
		{Model: "ort", Description: "ORT", Source: report.SourcePredicted,
			Original: report.NewSeries([]string{"a", "b", "c", "d"}, []int64{512, 1024, 1024, 768}),
			Rewrite:  report.NewSeries([]string{"a", "b", "a_rc1", "c", "a_rc2", "d"}, []int64{512, 512, 768, 768, 768, 768})},
	}
	r.Measured = &report.Measured{Runtime: "ONNX Runtime 1.30.0", Level: "disabled", Source: report.SourceMeasured, OK: true, OutputsEqual: true,
		Original: report.MeasuredSeries{Nodes: []string{"a", "b", "c", "d"}, InUseBytes: []int64{512, 1024, 1000, 768}, PeakBytes: 1024, PeakNode: "b"},
		Rewrite:  report.MeasuredSeries{Nodes: []string{"a", "b", "a_rc1", "c", "a_rc2", "d"}, InUseBytes: []int64{512, 512, 768, 700, 768, 768}, PeakBytes: 768, PeakNode: "a_rc1"}}
	r.Sweep = &report.Sweep{Spec: "sweep:100-60:10", NoRematPeakBytes: 1000, Target: "ort", Stopped: "stopped at 50%", Rows: []report.SweepRow{
		{Budget: "100%", BudgetBytes: 1000, PeakBytes: 1000, OverheadPercent: 0, Solver: "auto"},
		{Budget: "90%", BudgetBytes: 900, PeakBytes: 800, OverheadPercent: 10, Solver: "auto"},
		{Budget: "80%", BudgetBytes: 800, PeakBytes: 800, OverheadPercent: 10, Solver: "auto", ReusedFrom: "90%"},
		{Budget: "70%", BudgetBytes: 700, PeakBytes: 640, OverheadPercent: 20, Solver: "auto"},
	}}
	return r
}

func writeHTML(t *testing.T, r *report.Compile) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteHTML(&b, r, report.HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteHTMLSelfContainedAndDeterministic(t *testing.T) {
	r := sample()
	page := writeHTML(t, r)
	if again := writeHTML(t, sample()); again != page {
		t.Error("two writes of the same report differ")
	}
	for _, banned := range []string{"<script", "@import", "url(", "<link", "src=", "https://"} {
		if strings.Contains(page, banned) {
			t.Errorf("page contains %q: it must load nothing", banned)
		}
	}
	// The only URL is the SVG namespace.
	if n, m := strings.Count(page, "http://"), strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`); n != m {
		t.Errorf("page has %d http:// URLs, %d of them SVG namespaces", n, m)
	}
	for class, want := range map[string]int{"timeline": 2, "rmatrix": 1, "sweep": 1} {
		if got := strings.Count(page, `<svg xmlns="http://www.w3.org/2000/svg" class="`+class+`"`); got != want {
			t.Errorf("%d %s figures, want %d", got, class, want)
		}
	}
	// Names are escaped, never markup.
	if strings.Contains(page, "tiny<&>") || strings.Contains(page, "for <b>") || !strings.Contains(page, "tiny&lt;&amp;&gt;.onnx") {
		t.Error("the model name or a reason is not escaped")
	}
	if !strings.Contains(page, html.EscapeString(`'it'\''s.html'`)) {
		t.Error("the command line is not shell-quoted")
	}
}

func TestWriteHTMLNumbers(t *testing.T) {
	r := sample()
	page := writeHTML(t, r)
	span := regexp.MustCompile(`data-field="([a-z_.]+)" data-bytes="(-?\d+)" title="[^"]*">([^<]*)<`)
	got := map[string]string{}
	for _, m := range span.FindAllStringSubmatch(page, -1) {
		if m[3] != remat.FormatBytes(mustInt(t, m[2])) {
			t.Errorf("%s: text %q, want %q for %s bytes", m[1], m[3], remat.FormatBytes(mustInt(t, m[2])), m[2])
		}
		if _, dup := got[m[1]]; !dup {
			got[m[1]] = m[2]
		}
	}
	for field, want := range map[string]int64{
		"budget_bytes": 700, "before_peak_bytes": 1000, "after_peak_bytes": 640,
		"ort_model_before_peak_bytes": 1024, "ort_model_after_peak_bytes": 768,
		"ort_model_default_before_peak_bytes": 2048, "ort_model_default_after_peak_bytes": 1536,
		"measured.original.peak_bytes": 1024, "measured.rewrite.peak_bytes": 768,
	} {
		if got[field] != fmt.Sprint(want) {
			t.Errorf("%s = %s, want %d", field, got[field], want)
		}
	}
	// The decision table lists a (recomputed), c and d (≥ 1% of 1000 B =
	// 10 B), not b (5 B), largest first.
	rows := regexp.MustCompile(`<tr class="decision" data-node="([^"]*)"`).FindAllStringSubmatch(page, -1)
	var names []string
	for _, m := range rows {
		names = append(names, m[1])
	}
	if strings.Join(names, ",") != "a,c,d" {
		t.Errorf("decision rows %v, want a,c,d", names)
	}
	if !strings.Contains(page, "recomputed ×2") || !strings.Contains(page, "kept (not recomputable)") {
		t.Error("decisions not labelled")
	}
	// Peaks marked on both timelines.
	for _, want := range []string{`data-series="original" data-bytes="1000" data-step="1"`, `data-series="rewrite" data-bytes="640" data-step="2"`,
		`data-series="original" data-bytes="1024" data-step="1"`, `data-series="rewrite" data-bytes="768" data-step="2"`} {
		if !strings.Contains(page, want) {
			t.Errorf("no peak label %s", want)
		}
	}
	if !strings.Contains(page, `class="budget" data-bytes="700"`) {
		t.Error("no budget line on the liveness timeline")
	}
	if n := strings.Count(page, `<g class="measured `); n != 2 {
		t.Errorf("%d measured series, want 2 (over the target's timeline only)", n)
	}
	if !strings.Contains(page, `data-recomputations="2"`) || strings.Count(page, `<circle class="row"`) != 4 {
		t.Error("R matrix or sweep points missing")
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRMatrixThinned checks that a plan of more stages than
// MaxRasterCells is drawn with cells covering several stages and nodes,
// and that every recomputation still counts.
func TestRMatrixThinned(t *testing.T) {
	r := sample()
	n := 3*report.MaxRasterCells + 7
	r.Nodes = make([]report.Node, n)
	r.PlanStages = make([][]int32, n)
	recomputed := 0
	for i := range n {
		r.Nodes[i] = report.Node{Node: fmt.Sprint("n", i), Decision: "kept", Computations: 1}
		if i%100 == 50 {
			r.PlanStages[i] = append(r.PlanStages[i], int32(i-40))
			recomputed++
		}
		r.PlanStages[i] = append(r.PlanStages[i], int32(i))
	}
	page := writeHTML(t, r)
	if !strings.Contains(page, fmt.Sprintf(`data-stages="%d" data-nodes="%d" data-bin="4"`, n, n)) {
		t.Errorf("R matrix not thinned to 4×4 cells")
	}
	if !strings.Contains(page, fmt.Sprintf(`data-recomputations="%d"`, recomputed)) {
		t.Errorf("recomputations not counted")
	}
	// One rect per row of cells on the diagonal at most, plus the
	// recomputations: far fewer than one per stage and node.
	if k := strings.Count(page, `<rect class="r`); k > 2*report.MaxRasterCells {
		t.Errorf("%d rects for %d stages: not thinned", k, n)
	}
}

func TestWriteSweepSVG(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteSweepSVG(&b, sample().Sweep); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if !strings.HasPrefix(s, "<?xml") || strings.Count(s, `<circle class="row"`) != 4 || !strings.Contains(s, `data-budget="80%"`) {
		t.Errorf("sweep SVG:\n%s", s)
	}
}

func TestListed(t *testing.T) {
	r := sample()
	if got := report.Listed(r, 1000); len(got) != 1 || got[0] != 0 {
		t.Errorf("Listed(1000) = %v, want only the recomputed node", got)
	}
	if got := report.Listed(r, 1); fmt.Sprint(got) != "[0 2 3 1]" {
		t.Errorf("Listed(1) = %v, want [0 2 3 1] (largest first)", got)
	}
}

// TestWriteHTMLTiling: a tiled fit's report has the tiling section (the
// target's peaks, the budget it met, each region) and marks the nodes the
// bands consist of as tiled, with their region; without tiling there is
// no such section.
func TestWriteHTMLTiling(t *testing.T) {
	if page := writeHTML(t, sample()); strings.Contains(page, `id="tiling"`) {
		t.Error("a report without tiling has a tiling section")
	}
	r := sample()
	r.Tiling = &report.Tiling{BudgetBytes: 600, PeakBeforeBytes: 1024, PeakAfterBytes: 512, PeakNode: "d", ExtraPercent: 12.5,
		Regions: []report.TileRegion{{Nodes: 2, FirstNode: "a", LastNode: "b", Bands: 3, Axis: 2, Split: "3 bands", HaloRows: []int64{0, 1, 1}, PeakBeforeBytes: 1024, PeakAfterBytes: 512, ExtraSeconds: 1e-4, ExtraPercent: 12.5},
			{Nodes: 1, FirstNode: "b", LastNode: "b", Bands: 2, Axis: 2, TilesPerBand: 3, GridAxis: 3, Split: "2×3 grid", HaloRows: []int64{1, 1}, PeakBeforeBytes: 512, PeakAfterBytes: 512}}}
	r.Nodes = append(r.Nodes, report.Node{Node: "a_t3_1", Op: "Conv", Outputs: []string{"a_t3_1_out"}, Bytes: 500, ComputeSeconds: 1e-4, Recomputable: true,
		Decision: "tiled", Computations: 1, Why: "tiled: created by tiling region 1", TiledRegion: 1})
	page := writeHTML(t, r)
	for _, want := range []string{
		`<h2 id="tiling">Tiling</h2>`,
		` (70%), met by tiling</td><td>ort</td><td>given</td>`,
		`data-field="tiling.budget_bytes" data-bytes="600"`,
		`data-field="tiling.peak_after_bytes" data-bytes="512"`,
		`<td>1</td><td><code>a</code> … <code>b</code> (2)</td><td>3 bands</td><td>2</td>`,
		`<td>2</td><td><code>b</code> … <code>b</code> (1)</td><td>2×3 grid</td><td>2, 3</td>`,
		`[0 1 1]`,
		`<td class="tiled">tiled (region 1)</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
