package measure

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

func TestOptionErrors(t *testing.T) {
	ctx := context.Background()
	models := []pipeline.ModelSpec{{Name: "zoo:unet", Source: "zoo:unet"}}
	dev, err := profiles.Load("v100-16gb")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"repeat", profileErr(ctx, models, ProfileOptions{Repeat: -1}), "-repeat -1"},
		{"warmup", profileErr(ctx, models, ProfileOptions{Warmup: -1}), "-warmup -1"},
		{"level", profileErr(ctx, models, ProfileOptions{Level: "max"}), `-level "max"`},
		{"clock", profileErr(ctx, models, ProfileOptions{Clock: "sundial"}), `-clock "sundial"`},
		{"caches", profileErr(ctx, models, ProfileOptions{Caches: CacheSizes{L2Bytes: 4 << 20, L3Bytes: 1 << 20}}), "an L3 at least as large"},
		{"no models", profileErr(ctx, nil, ProfileOptions{}), "at least one model"},
		{"no profile", validateErr(ctx, models, ValidateOptions{}), "needs a device profile"},
		{"kinds", validateErr(ctx, models, ValidateOptions{Profile: dev, Kinds: []string{"eval"}}), `unknown kind "eval"`},
		{"rounds", validateErr(ctx, models, ValidateOptions{Profile: dev, Rounds: -1}), "-rounds -1"},
		{"time limit", validateErr(ctx, models, ValidateOptions{Profile: dev, TimeLimit: -1}), "-time-limit"},
		{"validate level", validateErr(ctx, models, ValidateOptions{Profile: dev, Level: "max"}), `-level "max"`},
		{"validate no models", validateErr(ctx, nil, ValidateOptions{Profile: dev}), "at least one model"},
	} {
		var oe *pipeline.OptionError
		if !errors.As(tc.err, &oe) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an option error with %q", tc.name, tc.err, tc.want)
		}
	}
}

func profileErr(ctx context.Context, models []pipeline.ModelSpec, o ProfileOptions) error {
	_, err := Profile(ctx, models, o)
	return err
}

func validateErr(ctx context.Context, models []pipeline.ModelSpec, o ValidateOptions) error {
	_, err := ValidateCost(ctx, models, o)
	return err
}

func TestCostRowJSON(t *testing.T) {
	table := &CostTable{Profile: "dev.yaml", Level: "disabled", Clock: "cpu", Rounds: 5, Rows: []CostRow{
		{Model: "m", Kind: KindInference, Profile: "measured", Budget: "-", PredictedSeconds: 0.010, MeasuredSeconds: 0.011},
		{Model: "m", Kind: KindInference, Profile: "measured", Budget: "90%", PredictedSeconds: 0.012, MeasuredSeconds: 0.013, OverheadDiffPP: 1},
		noPlanRow(CostRow{Model: "m", Kind: KindInference, Profile: "measured", Budget: "10%", NoPlan: "no plan: the smallest peak is 2 KiB > budget 1 KiB"}),
	}}
	data, err := json.Marshal(table)
	if err != nil {
		t.Fatalf("NaNs must become nulls: %v", err)
	}
	var back struct {
		Clock string `json:"clock"`
		Rows  []struct {
			Budget          string   `json:"budget"`
			MeasuredSeconds *float64 `json:"measured_seconds"`
			PlanSeconds     *float64 `json:"plan_seconds"`
			NoPlan          string   `json:"no_plan"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Clock != "cpu" || len(back.Rows) != 3 || back.Rows[0].MeasuredSeconds == nil || *back.Rows[0].MeasuredSeconds != 0.011 ||
		back.Rows[2].MeasuredSeconds != nil || back.Rows[2].PlanSeconds != nil || back.Rows[2].NoPlan == "" {
		t.Errorf("JSON: %s", data)
	}
	if in, n, inOvh, nOvh := table.InTargets("measured"); in != 2 || n != 2 || inOvh != 1 || nOvh != 1 {
		t.Errorf("InTargets: %d of %d, %d of %d", in, n, inOvh, nOvh)
	}
}

// TestProfileAndValidate runs the library as a Go caller would: profile a
// model under given cache sizes, then validate the cost model with the
// result.
func TestProfileAndValidate(t *testing.T) {
	testmodels.RequireORT(t)
	g, _ := bigChain(t)
	path := filepath.Join(t.TempDir(), "chain.onnx")
	if err := onnxexp.ExportFile(g, path, onnxexp.Options{}); err != nil {
		t.Fatal(err)
	}
	models, err := pipeline.ParseModelArgs([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	var reports []Progress
	run, err := Profile(context.Background(), models, ProfileOptions{
		Repeat: 3, Warmup: 1, Name: "testcpu", Caches: testCaches,
		Progress: func(p Progress) { reports = append(reports, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Relu, Add (two activations), Add (with the bias): 3 signatures of
	// 13 nodes.
	if run.Signatures != 3 || run.MeasuredNodes != 13 || run.Nodes != 13 || len(run.Models) != 1 || run.Models[0].Kind != KindInference {
		t.Errorf("run: %d signatures covering %d of %d nodes, models %+v", run.Signatures, run.MeasuredNodes, run.Nodes, run.Models)
	}
	if len(reports) != 4 || reports[0].Op == "" || reports[0].Total != 3 || reports[3].Op != "" || reports[3].Done != 3 {
		t.Errorf("progress reports %+v", reports)
	}
	if run.Caches != testCaches || run.Repeat != 3 || run.Level != "disabled" || run.Clock != ort.ClockCPU || run.ORTVersion == "" {
		t.Errorf("settings: caches %+v, repeat %d, level %q, clock %q, ORT %q", run.Caches, run.Repeat, run.Level, run.Clock, run.ORTVersion)
	}
	p := run.Profile
	if p.Device.Name != "testcpu" || len(p.Measured) != 3 || p.Fitted == nil || !strings.Contains(p.Fitted.Source, "an L2 of 2.00 MiB and an L3 of 32.0 MiB") {
		t.Fatalf("profile: device %q, %d entries, fitted %+v", p.Device.Name, len(p.Measured), p.Fitted)
	}

	var steps []CostProgress
	table, err := ValidateCost(context.Background(), models, ValidateOptions{
		Profile: p, Datasheet: true, Kinds: []string{KindInference}, Budgets: []remat.Budget{remat.BudgetFraction(0.9)},
		Rounds: 3, Warmup: 1, Progress: func(c CostProgress) { steps = append(steps, c) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Two profiles × (the original + one budget).
	if table.Profile != "testcpu" || len(table.Rows) != 4 || table.Rows[0].Profile != "measured" || table.Rows[2].Profile != "datasheet" {
		t.Fatalf("table %+v", table)
	}
	for _, r := range table.Rows {
		if r.NoPlan == "" && !(r.MeasuredSeconds > 0 && r.PredictedSeconds > 0) {
			t.Errorf("row without times: %+v", r)
		}
	}
	if len(steps) == 0 || steps[len(steps)-1].Timing < 1 || steps[len(steps)-1].Rounds != 3 || steps[0].Model != "chain.onnx" {
		t.Errorf("progress %+v", steps)
	}
}
