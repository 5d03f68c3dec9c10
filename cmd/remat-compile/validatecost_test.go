package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/profiles/measure"
)

func TestValidateCostUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate-cost", "-profile", "p.yaml"}, exitUsage, "needs at least one MODEL"},
		{[]string{"validate-cost", "zoo:unet"}, exitUsage, "needs -profile"},
		{[]string{"validate-cost", "-profile", "v100-16gb", "-kinds", "eval", "zoo:unet"}, exitUsage, `unknown kind "eval"`},
		{[]string{"validate-cost", "-profile", "v100-16gb", "-budgets", "lots", "zoo:unet"}, exitUsage, "lots"},
		{[]string{"validate-cost", "-profile", "v100-16gb", "-rounds", "0", "zoo:unet"}, exitUsage, "-rounds 0"},
		{[]string{"validate-cost", "-profile", "v100-16gb", "-solver", "magic", "zoo:unet"}, exitUsage, `-solver "magic"`},
		{[]string{"validate-cost", "-profile", "v100-16gb", "-clock", "sundial", "zoo:unet"}, exitUsage, `-clock "sundial"`},
		{[]string{"validate-cost", "-profile", "v100-16gb", "-time-limit", "0s", "zoo:unet"}, exitUsage, "-time-limit 0s"},
		{[]string{"validate-cost", "-profile", "tpu-v9", "zoo:unet"}, exitFailure, `unknown profile "tpu-v9"`},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// costRows is a table with one row in each target and one outside, and
// a budget without a plan.
func costRows() *measure.CostTable {
	nan := math.NaN()
	return &measure.CostTable{Profile: "dev.yaml", Level: "disabled", Clock: "cpu", Rounds: 5, ORTVersion: "1.30.0", Rows: []measure.CostRow{
		{Model: "m", Kind: "training", Profile: "measured", Budget: "-", PredictedSeconds: 0.010, MeasuredSeconds: 0.011, ErrorPercent: -9.09, Sources: map[string]int{"measured": 10}},
		{Model: "m", Kind: "training", Profile: "measured", Budget: "80%", PredictedSeconds: 0.012, MeasuredSeconds: 0.016, ErrorPercent: -25,
			PlanOverheadPercent: 15, PredictedOverheadPercent: 20, MeasuredOverheadPercent: 45.45, OverheadDiffPP: -25.45, Recomputations: 3, HelperNodes: 6,
			Sources: map[string]int{"measured": 9, "fitted": 1}},
		{Model: "m", Kind: "training", Profile: "measured", Budget: "70%", NoPlan: "no plan: node x alone needs 1 KiB > budget 512 B",
			PredictedSeconds: nan, MeasuredSeconds: nan, ErrorPercent: nan, PredictedOverheadPercent: nan, MeasuredOverheadPercent: nan, OverheadDiffPP: nan},
	}}
}

func TestPrintCostTable(t *testing.T) {
	var b bytes.Buffer
	if err := printCostTable(&b, costRows()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"median of 5 interleaved runs, cpu clock",
		"measured profile:",
		"-9.1%", "+15.0%", "+20.0%", "+45.5%", "-25.4 pp", "3        6", "9 measured, 1 fitted",
		"no plan: node x alone needs 1 KiB > budget 512 B",
		"within 20% of ORT's time: 1 of 2 rows; overhead within 5 pp of ORT's: 0 of 1 plans",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateCostCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("profiles and times models in ONNX Runtime; skipped in -short mode")
	}
	testmodels.RequireORT(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "dev.yaml")
	model := "zoo:unet"
	if code, stdout, stderr := run(t, "profile", "-train", "-repeat", "3", "-warmup", "1", "-o", prof, model); code != exitOK {
		t.Fatalf("profile: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, stderr := run(t, "validate-cost", "-profile", prof, "-kinds", "inference,training", "-budgets", "90%,1%",
		"-solver", "linearized-greedy", "-rounds", "3", "-warmup", "1", "-json", model, "zoo:lstm")
	if code != exitOK {
		t.Fatalf("validate-cost: exit %d: %s%s", code, stdout, stderr)
	}
	var table struct {
		Rows []struct {
			Model, Kind, Profile, Budget string
			NoPlan                       string         `json:"no_plan"`
			Predicted                    *float64       `json:"predicted_seconds"`
			Measured                     *float64       `json:"measured_seconds"`
			PredOvh                      *float64       `json:"predicted_overhead_percent"`
			MeasOvh                      *float64       `json:"measured_overhead_percent"`
			Recomputations               int            `json:"recomputations"`
			Sources                      map[string]int `json:"cost_sources"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(stdout), &table); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	// unet: 2 kinds × 2 profiles × (original + 2 budgets); lstm: its
	// inference rows, and one row per profile saying it has no training
	// graph.
	if len(table.Rows) != 2*2*3+2*3+2 {
		t.Fatalf("%d rows:\n%s", len(table.Rows), stdout)
	}
	plans := 0
	for _, r := range table.Rows {
		switch {
		case r.Model == "zoo:lstm" && r.Kind == "training":
			if !strings.Contains(r.NoPlan, "no training graph") {
				t.Errorf("lstm training row: %+v", r)
			}
		case r.Budget == "1%":
			if !strings.HasPrefix(r.NoPlan, "no plan") || r.Measured != nil {
				t.Errorf("a 1%% budget has a plan? %+v", r)
			}
		case r.NoPlan != "":
			// 90% of an inference graph may be below its floor.
		default:
			if r.Predicted == nil || r.Measured == nil || !(*r.Predicted > 0) || !(*r.Measured > 0) {
				t.Errorf("row without times: %+v", r)
			}
			if r.Budget == "-" && (*r.PredOvh != 0 || *r.MeasOvh != 0) {
				t.Errorf("the original has an overhead: %+v", r)
			}
			if r.Budget != "-" {
				plans++
			}
			// The profile measured unet's training graph: its rows cost from
			// measurements, lstm's (never measured) from the fitted roofline.
			switch {
			case r.Profile == "datasheet" && (r.Sources["datasheet"] == 0 || len(r.Sources) != 1):
				t.Errorf("datasheet row costed from %v", r.Sources)
			case r.Profile == "measured" && r.Model == "zoo:unet" && r.Kind == "training" && r.Sources["measured"] == 0,
				r.Profile == "measured" && r.Model == "zoo:lstm" && r.Sources["datasheet"] != 0:
				t.Errorf("%s row of %s (%s) costed from %v", r.Profile, r.Model, r.Kind, r.Sources)
			}
		}
	}
	if plans < 2 {
		t.Errorf("only %d plans were timed (the unet training graph fits 90%%):\n%s", plans, stdout)
	}
}
