package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/verify"
)

// chromium returns the headless browser the HTML test renders with: the
// Debian package chromium (scripts/setup.sh installs it). Missing, the
// test skips under -short and fails otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("renders the report in headless Chromium; skipped in -short mode")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: install the Debian package chromium (scripts/setup.sh does), or use -short to skip the browser test")
	return ""
}

// runChromium runs headless Chromium on a local file with no network,
// no GPU and a fresh profile, with the extra arguments, and returns its
// standard output.
func runChromium(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	args = append(args, extra...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(extra, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// browserReport fits the U-Net-like test model as compile -budget
// sweep:100-50:10 -verify -report does: a sweep, the last plan's report
// with its detail, and ONNX Runtime's measured memory per node.
func browserReport(t *testing.T, dir string) *report.Compile {
	t.Helper()
	ctx := context.Background()
	m, err := pipeline.Load(ctx, "../../testdata/models/unet_like.onnx", pipeline.LoadOptions{RequireStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := m.Sweep(ctx, pipeline.SweepOptions{Fit: pipeline.FitOptions{Timelines: true}, Spec: pipeline.SweepSpec{From: 100, To: 50, Step: 10}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "unet_like.remat.onnx")
	if err := sw.Model.Export(out, sw.Fit, true); err != nil {
		t.Fatal(err)
	}
	last := sw.Sweep.Rows[len(sw.Sweep.Rows)-1]
	r := sw.Fit.Report(sw.Model, out, last.Budget)
	r.Sweep = sw.Sweep
	if err := sw.Fit.Detail(sw.Model, r); err != nil {
		t.Fatal(err)
	}
	vr, err := verify.Fitted(ctx, sw.Model, sw.Fit, out, verify.Options{Levels: []string{"disabled"}, Runs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Measured = vr.Measured("disabled"); r.Measured == nil {
		t.Fatal("verify recorded no memory per node at level disabled")
	}
	r.Invocation = &report.Invocation{CommandLine: []string{"remat-compile", "unet_like.onnx", "-budget", "sweep:100-50:10", "-verify", "-report", "plan.html"}, Version: "(test)", GoVersion: "go"}
	return r
}

// TestHTMLInBrowser renders the HTML report of a real fit in headless
// Chromium and checks, in the DOM the browser built, that every figure is
// there and that the numbers it shows are the JSON report's. With
// REMAT_SCREENSHOTS=DIR it also saves a screenshot there.
func TestHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	testmodels.RequireORT(t)
	dir := t.TempDir()
	r := browserReport(t, dir)
	page := filepath.Join(dir, "plan.html")
	var b bytes.Buffer
	if err := report.WriteHTML(&b, r, report.HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The JSON report, as compile writes it, read back generically: the
	// page's numbers are checked against it, not against the Go values.
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	field := func(path string) int64 {
		var v any = doc
		for _, k := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("JSON report has no %s", path)
			}
			v = m[k]
		}
		f, ok := v.(float64)
		if !ok {
			t.Fatalf("JSON report's %s is %v, not a number", path, v)
		}
		return int64(f)
	}

	dom := string(runChromium(t, bin, page, "--dump-dom"))
	if !strings.Contains(dom, "<h1>remat-compile plan for") {
		t.Fatalf("the browser's DOM is not the report:\n%.2000s", dom)
	}
	// Every figure, as the browser parsed it.
	for class, want := range map[string]int{"timeline": 2, "rmatrix": 1, "sweep": 1} {
		if got := len(regexp.MustCompile(`<svg [^>]*class="`+class+`"`).FindAllString(dom, -1)); got != want {
			t.Errorf("%d %s SVGs in the DOM, want %d", got, class, want)
		}
	}
	// The byte counts shown: each as the formatter writes its exact
	// count, and the summary's equal to the JSON report's fields.
	shown := map[string]int64{}
	span := regexp.MustCompile(`<span class="bytes" data-field="([a-z_.]+)" data-bytes="(-?\d+)" title="[^"]*">([^<]*)</span>`)
	for _, m := range span.FindAllStringSubmatch(dom, -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		if m[3] != remat.FormatBytes(n) {
			t.Errorf("%s shows %q for %d bytes, want %q", m[1], m[3], n, remat.FormatBytes(n))
		}
		if _, ok := shown[m[1]]; !ok {
			shown[m[1]] = n
		}
	}
	for _, f := range []string{"budget_bytes", "before_peak_bytes", "after_peak_bytes", "peak_floor_bytes",
		"ort_model_before_peak_bytes", "ort_model_after_peak_bytes", "ort_model_default_before_peak_bytes", "ort_model_default_after_peak_bytes",
		"measured.original.peak_bytes", "measured.rewrite.peak_bytes"} {
		got, ok := shown[f]
		if want := field(f); !ok || got != want {
			t.Errorf("the page shows %s = %d (shown: %v), the JSON report has %d", f, got, ok, want)
		}
	}
	pct := regexp.MustCompile(`data-field="overhead_percent" data-value="([0-9.]+)">([0-9.]+)%`).FindStringSubmatch(dom)
	if pct == nil || pct[1] != strconv.FormatFloat(doc["overhead_percent"].(float64), 'f', 2, 64) || pct[2] != pct[1] {
		t.Errorf("overhead shown as %v, JSON %v", pct, doc["overhead_percent"])
	}
	// The peaks marked on the timelines are the JSON timelines' peaks.
	tls := doc["timelines"].([]any)
	for i, tl := range tls {
		for _, s := range []string{"original", "rewrite"} {
			ser := tl.(map[string]any)[s].(map[string]any)
			want := fmt.Sprintf(`data-series="%s" data-bytes="%d" data-step="%d"`, s, int64(ser["peak_bytes"].(float64)), int64(ser["peak_step"].(float64)))
			if !strings.Contains(dom, want) {
				t.Errorf("timeline %d: no %s peak marked as %s", i, s, want)
			}
			label := regexp.MustCompile(regexp.QuoteMeta(want) + `[^>]*><title>[^<]*</title>` + s + ` peak ([^<]*)</text>`).FindStringSubmatch(dom)
			if label == nil || label[1] != remat.FormatBytes(int64(ser["peak_bytes"].(float64))) {
				t.Errorf("timeline %d: %s peak label %v", i, s, label)
			}
		}
	}
	if !strings.Contains(dom, fmt.Sprintf(`class="budget" data-bytes="%d"`, field("budget_bytes"))) {
		t.Error("no budget line at the JSON report's budget")
	}
	if n := len(regexp.MustCompile(`<g class="measured (original|rewrite)"`).FindAllString(dom, -1)); n != 2 {
		t.Errorf("%d measured series drawn, want 2", n)
	}
	if !strings.Contains(dom, fmt.Sprintf(`data-recomputations="%d"`, field("recomputations"))) {
		t.Error("the R matrix does not count the JSON report's recomputations")
	}
	rows := doc["sweep"].(map[string]any)["rows"].([]any)
	if got := len(regexp.MustCompile(`<circle class="row"`).FindAllString(dom, -1)); got != len(rows) {
		t.Errorf("%d sweep points, %d rows in the JSON report", got, len(rows))
	}
	// The decision table: a row per listed node, its bytes the JSON's.
	listed := report.Listed(r, report.HTMLOptions{}.Threshold(r))
	drows := regexp.MustCompile(`<tr class="decision" data-node="([^"]*)">.*?data-bytes="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(drows) != len(listed) || len(drows) == 0 {
		t.Fatalf("%d decision rows, want %d", len(drows), len(listed))
	}
	nodes := doc["nodes"].([]any)
	for k, m := range drows {
		n := nodes[listed[k]].(map[string]any)
		if m[1] != n["node"] || m[2] != fmt.Sprint(int64(n["bytes"].(float64))) {
			t.Errorf("decision row %d: %s %s B, the JSON report has %v %v B", k, m[1], m[2], n["node"], n["bytes"])
		}
	}

	// And it draws: a screenshot of the first screen is a real image.
	shot := filepath.Join(dir, "plan.png")
	runChromium(t, bin, page, "--hide-scrollbars", "--window-size=1200,2400", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 2400 {
		t.Errorf("screenshot %v, want 1200×2400", b)
	}
	if d := os.Getenv("REMAT_SCREENSHOTS"); d != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(filepath.Join(d, "browser-test-unet_like.png"), data, 0o644); err != nil {
			t.Error(err)
		}
	}
}
