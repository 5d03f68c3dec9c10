package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remat-compile/remat/exporters/report"
	onnximp "github.com/remat-compile/remat/importers/onnx"
)

var unetLike = filepath.Join("..", "..", "testdata", "models", "unet_like.onnx")

func TestReportFlagErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.onnx")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-report", filepath.Join(dir, "plan.txt")}, "want a file ending in .json (the JSON report, schema remat-compile.report/v1) or .html"},
		{[]string{"-budget", "70%", "-sweep-svg", filepath.Join(dir, "s.svg")}, "-sweep-svg draws a budget sweep: add -budget sweep"},
		{[]string{"-budget", "sweep:5-100:5"}, "FROM must be at least TO"},
		{[]string{"-budget", "sweep", "-emit-milp", filepath.Join(dir, "m.lp")}, "-emit-milp writes the MILP at one budget"},
		{[]string{"-budget", "sweep", "-sweep-svg", filepath.Join(dir, "s.png")}, "want a file ending in .svg"},
	} {
		code, _, stderr := run(t, append([]string{unetLike, "-o", out}, tt.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, exitUsage, tt.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a usage error wrote %d files", len(entries))
	}
}

func TestCompileReports(t *testing.T) {
	dir := t.TempDir()
	out, page, js := filepath.Join(dir, "o.onnx"), filepath.Join(dir, "plan.html"), filepath.Join(dir, "plan.json")
	if code, _, stderr := run(t, unetLike, "-o", out, "-budget", "70%", "-report", page); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(html), "<!DOCTYPE html>") || strings.Count(string(html), "<svg ") != 3 || strings.Contains(string(html), "<script") {
		t.Errorf("HTML report: %.300s…", html)
	}
	if code, _, stderr := run(t, unetLike, "-o", out, "-budget", "70%", "-report", js); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r report.Compile
	data, _ := os.ReadFile(js)
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Timelines) != 2 || len(r.PlanStages) != len(r.Nodes) || r.Invocation == nil || r.Invocation.CommandLine[0] != "remat-compile" ||
		r.Invocation.CommandLine[len(r.Invocation.CommandLine)-1] != js || r.Interrupted {
		t.Errorf("JSON report detail: %d timelines, %d stages, invocation %+v", len(r.Timelines), len(r.PlanStages), r.Invocation)
	}
}

func TestCompileSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a series of budgets; skipped in -short mode")
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "sweep.svg")
	// Rematerialization alone (-tile off): tiling fits this U-Net below
	// 55% too (pipeline's ExampleModel_Sweep).
	code, stdout, stderr := run(t, unetLike, "-budget", "sweep:100-40:5", "-tile", "off", "-sweep-svg", svg)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"sweep sweep:100-40:5: no-remat peak 1.25 MiB", "100%  1.25 MiB  1.25 MiB", "of 75%", "stopped at 55% (704 KiB)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); !strings.HasPrefix(strings.TrimSpace(lines[len(lines)-2]), "60%") {
		t.Errorf("the last row is not the smallest feasible budget, 60%%:\n%s", stdout)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a sweep without -o wrote %d files, want the SVG alone", len(entries))
	}
	if data, err := os.ReadFile(svg); err != nil || strings.Count(string(data), `<circle class="row"`) != 9 {
		t.Errorf("sweep SVG: %v\n%.300s", err, data)
	}
	out, page := filepath.Join(dir, "o.onnx"), filepath.Join(dir, "plan.html")
	code, stdout, stderr = run(t, unetLike, "-budget", "sweep:100-40:5", "-tile", "off", "-o", out, "-report", page)
	if code != exitOK || !strings.Contains(stdout, "the plan of the smallest feasible budget, 60%") {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	if _, err := onnximp.ImportFile(out, onnximp.Options{}); err != nil {
		t.Error(err)
	}
	if data, _ := os.ReadFile(page); !strings.Contains(string(data), `class="sweep"`) {
		t.Error("the HTML report of a sweep has no sweep figure")
	}
}

// cancelOnWrite is a terminal that Ctrl-C's the command once its
// progress output mentions a word: the context is cancelled mid-solve,
// as signal.NotifyContext does on an interrupt.
type cancelOnWrite struct {
	mu     sync.Mutex
	word   string
	cancel context.CancelFunc
	seen   strings.Builder
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen.Write(p)
	if strings.Contains(string(p), c.word) {
		c.cancel()
	}
	return len(p), nil
}

// TestCompileInterrupted interrupts a solve once the search (lns) runs,
// after the heuristics found plans: compile writes and prints the best
// plan found, says it was interrupted, and exits with status 1 (fitted
// for the liveness target: the interrupt, not the target, is under test).
func TestCompileInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a training graph; skipped in -short mode")
	}
	dir := t.TempDir()
	out, js := filepath.Join(dir, "o.onnx"), filepath.Join(dir, "plan.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tty := &cancelOnWrite{word: "lns", cancel: cancel}
	var stdout strings.Builder
	start := time.Now()
	code := Main(ctx, []string{"-train", "zoo:unet", "-budget", "70%", "-time-limit", "60s", "-target", "liveness", "-o", out, "-report", js},
		&Streams{In: strings.NewReader(""), Out: &stdout, Err: tty, ErrTTY: true})
	if ctx.Err() == nil {
		t.Fatalf("the solve never reported lns progress; stderr:\n%s", tty.seen.String())
	}
	stderr := tty.seen.String()
	if code != exitFailure || !strings.Contains(stderr, "remat-compile: interrupted: wrote the best plan found before the interrupt to "+out) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "peak after:") {
		t.Errorf("the plan is not printed:\n%s", stdout.String())
	}
	if time.Since(start) > 50*time.Second {
		t.Errorf("the interrupted solve ran %v: the interrupt did not stop it", time.Since(start))
	}
	var r report.Compile
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil || !r.Interrupted || r.AfterPeakBytes > r.BudgetBytes {
		t.Errorf("report: interrupted %v, peak %d, budget %d, %v", r.Interrupted, r.AfterPeakBytes, r.BudgetBytes, err)
	}
	if _, err := onnximp.ImportFile(out, onnximp.Options{}); err != nil {
		t.Errorf("the written plan: %v", err)
	}
	// No temporary files left behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in the output directory, want the model and the report", len(entries))
	}
}

// TestSweepInterrupted interrupts a sweep mid-way: it prints the rows so
// far and writes nothing.
func TestSweepInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a training graph; skipped in -short mode")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tty := &cancelOnWrite{word: "solving 95%", cancel: cancel}
	var stdout strings.Builder
	code := Main(ctx, []string{"-train", "zoo:unet", "-budget", "sweep", "-time-limit", "20s",
		"-o", filepath.Join(dir, "o.onnx"), "-report", filepath.Join(dir, "p.html"), "-sweep-svg", filepath.Join(dir, "s.svg")},
		&Streams{In: strings.NewReader(""), Out: &stdout, Err: tty, ErrTTY: true})
	stderr := tty.seen.String()
	if code != exitFailure || !strings.Contains(stderr, "interrupted: the sweep's rows so far are above; no file written") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "100%") || !strings.Contains(stdout.String(), "interrupted") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an interrupted sweep wrote %d files", len(entries))
	}
	if !strings.Contains(stderr, "sweep [") || !strings.Contains(stderr, "ETA") {
		t.Errorf("no progress bar with an estimate of the time left:\n%q", stderr)
	}
}

func TestETA(t *testing.T) {
	for _, tt := range []struct {
		elapsed     time.Duration
		done, total int
		want        string
	}{
		{10 * time.Second, 1, 4, "ETA 30s"},
		{90 * time.Second, 3, 5, "ETA 1m0s"},
		{time.Second, 0, 4, ""},
		{time.Second, 4, 4, ""},
	} {
		if got := eta(tt.elapsed, tt.done, tt.total); got != tt.want {
			t.Errorf("eta(%v, %d, %d) = %q, want %q", tt.elapsed, tt.done, tt.total, got, tt.want)
		}
	}
}
