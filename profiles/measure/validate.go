package measure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

// The targets the cost model is held to: the predicted whole-model time
// within WholeTargetPercent of ORT's, the predicted overhead within
// OverheadTargetPP percentage points of ORT's.
const (
	WholeTargetPercent = 20.0
	OverheadTargetPP   = 5.0
)

// Defaults of ValidateOptions' zero fields.
const (
	DefaultRounds        = 51
	DefaultValidateLimit = 10 * time.Second
)

// DefaultBudgets are the budgets ValidateCost compiles at when
// ValidateOptions.Budgets is empty.
func DefaultBudgets() []remat.Budget {
	return []remat.Budget{remat.BudgetFraction(0.9), remat.BudgetFraction(0.8), remat.BudgetFraction(0.7)}
}

// ValidateOptions configure ValidateCost. The zero value needs Profile;
// everything else has a default.
type ValidateOptions struct {
	// Load and InputValues are as in ProfileOptions.
	Load        pipeline.LoadOptions
	InputValues map[string]int64
	// Profile is the device profile to validate (usually one Profile
	// measured); ProfileName is how the table names it ("" for the
	// device's name).
	Profile     *profiles.Profile
	ProfileName string
	// Datasheet adds rows that predict with the profile's datasheet
	// section alone (no measured entries, no fitted roofline), for a
	// profile that has measurements.
	Datasheet bool
	// Budgets are the budgets each graph is compiled at (DefaultBudgets
	// when empty).
	Budgets []remat.Budget
	// Kinds are the graph kinds to compile, KindInference and
	// KindTraining (both when empty); Train builds the training graphs
	// (its zero value: the sum loss, every parameter trainable).
	Kinds []string
	Train autodiff.Options
	// Solver chooses the plans (the zero Solver: the default solver);
	// TimeLimit bounds each solve (0: DefaultValidateLimit).
	Solver    remat.Solver
	TimeLimit time.Duration
	// Rounds is the number of timed runs of each model, interleaved with
	// the other models of its batch (0: DefaultRounds); Warmup the untimed
	// runs first.
	Rounds, Warmup int
	// Level, Clock and Seed are as in ProfileOptions.
	Level, Clock string
	Seed         uint64
	// Progress, when not nil, is called before each plan is compiled and
	// before each batch is timed.
	Progress func(CostProgress)
}

// CostProgress reports ValidateCost's progress on one model and graph
// kind: compiling a plan (Profile and Budget set) or timing the batch
// (Timing models, Rounds rounds).
type CostProgress struct {
	Model, Kind string
	Profile     string
	Budget      remat.Budget
	Timing      int
	Rounds      int
}

// CostRow is one line of the table: one model, graph kind, profile and
// budget ("-" for the original, no rematerialization). Its JSON form
// writes the NaNs of a row without a plan as nulls.
type CostRow struct {
	Model   string `json:"model"`
	Kind    string `json:"kind"`
	Profile string `json:"profile"` // "measured" or "datasheet"
	Budget  string `json:"budget"`
	// BudgetBytes is the budget in bytes (0 for the original).
	BudgetBytes int64 `json:"budget_bytes"`
	// PredictedSeconds is the sum of the costs of the nodes the written
	// model runs: for the original every node once, for a rewrite the
	// plan's computations and the exporter's order-forcing helper nodes
	// (helperCost); MeasuredSeconds is ORT's median run time; ErrorPercent
	// their relative difference.
	PredictedSeconds float64 `json:"predicted_seconds"`
	MeasuredSeconds  float64 `json:"measured_seconds"`
	ErrorPercent     float64 `json:"error_percent"`
	// PlanSeconds and PlanOverheadPercent are the solver's: the plan's
	// cost, and its overhead over computing every node once (the remat
	// pass's Result); they leave out the helper nodes.
	PlanSeconds         float64 `json:"plan_seconds"`
	PlanOverheadPercent float64 `json:"plan_overhead_percent"`
	// HelperNodes counts the nodes of the written rewrite that are neither
	// the original's nor recomputations: the exporter's fake dependencies.
	HelperNodes int `json:"helper_nodes"`
	// The overheads of the written model over the original, in percent,
	// and their difference in percentage points (predicted − measured).
	PredictedOverheadPercent float64 `json:"predicted_overhead_percent"`
	MeasuredOverheadPercent  float64 `json:"measured_overhead_percent"`
	OverheadDiffPP           float64 `json:"overhead_diff_pp"`
	Recomputations           int     `json:"recomputations"`
	// Sources counts the nodes whose cost came from each source.
	Sources map[string]int `json:"cost_sources"`
	// NoPlan says why the budget has no plan; the numbers are then NaN
	// (null in JSON).
	NoPlan string `json:"no_plan,omitempty"`
}

// CostTable is ValidateCost's result.
type CostTable struct {
	Profile    string    `json:"profile"`
	Level      string    `json:"level"`
	Clock      string    `json:"clock"`
	Rounds     int       `json:"rounds"`
	ORTVersion string    `json:"ort_version"`
	Rows       []CostRow `json:"rows"`
}

// MarshalJSON writes r with its NaNs (a row without a plan) as nulls:
// JSON has no NaN.
func (r CostRow) MarshalJSON() ([]byte, error) {
	type plain CostRow // without this method
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		plain
		PredictedSeconds         *float64 `json:"predicted_seconds"`
		MeasuredSeconds          *float64 `json:"measured_seconds"`
		ErrorPercent             *float64 `json:"error_percent"`
		PredictedOverheadPercent *float64 `json:"predicted_overhead_percent"`
		MeasuredOverheadPercent  *float64 `json:"measured_overhead_percent"`
		OverheadDiffPP           *float64 `json:"overhead_diff_pp"`
		PlanSeconds              *float64 `json:"plan_seconds"`
		PlanOverheadPercent      *float64 `json:"plan_overhead_percent"`
	}{plain(r),
		num(r.PredictedSeconds), num(r.MeasuredSeconds), num(r.ErrorPercent),
		num(r.PredictedOverheadPercent), num(r.MeasuredOverheadPercent),
		num(r.OverheadDiffPP), num(r.PlanSeconds), num(r.PlanOverheadPercent)})
}

// InTargets counts the rows with times whose predicted time is within
// WholeTargetPercent of ORT's (inWhole of nWhole), and the plans whose
// predicted overhead is within OverheadTargetPP of ORT's (inOvh of nOvh),
// among the rows of one profile label.
func (t *CostTable) InTargets(profile string) (inWhole, nWhole, inOvh, nOvh int) {
	for _, r := range t.Rows {
		if r.Profile != profile || r.NoPlan != "" {
			continue
		}
		nWhole++
		if math.Abs(r.ErrorPercent) <= WholeTargetPercent {
			inWhole++
		}
		if r.Budget != "-" {
			nOvh++
			if math.Abs(r.OverheadDiffPP) <= OverheadTargetPP {
				inOvh++
			}
		}
	}
	return
}

// namedProfile is one of the profiles the rows compare.
type namedProfile struct {
	label string
	p     *profiles.Profile
}

// validator is one ValidateCost call's state.
type validator struct {
	o     ValidateOptions
	profs []namedProfile
	dir   string
}

// ValidateCost compiles every model at every budget for every graph kind
// and profile, times the originals and the rewrites in ONNX Runtime, and
// returns the table of predicted against measured times (see the package
// doc). A model without a training graph gets rows that say so.
func ValidateCost(ctx context.Context, models []pipeline.ModelSpec, o ValidateOptions) (*CostTable, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if len(models) == 0 {
		return nil, optionErrorf("validate-cost needs at least one model")
	}
	v := &validator{o: o, profs: []namedProfile{{"measured", o.Profile}}}
	switch {
	case len(o.Profile.Measured) == 0 && o.Profile.Fitted == nil:
		// A datasheet profile (a built-in): one set of rows.
		v.profs[0].label = "datasheet"
	case o.Datasheet:
		v.profs = append(v.profs, namedProfile{"datasheet", &profiles.Profile{Format: profiles.FormatV1, Device: o.Profile.Device}})
	}
	version, err := ort.Version()
	if err != nil {
		return nil, fmt.Errorf("validate-cost needs ONNX Runtime: %w", err)
	}
	if v.dir, err = os.MkdirTemp("", "remat-validate-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(v.dir)

	table := &CostTable{Profile: o.ProfileName, Level: o.Level, Clock: o.Clock, Rounds: o.Rounds, ORTVersion: version}
	for _, spec := range models {
		for _, kind := range o.Kinds {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var train *autodiff.Options
			if kind == KindTraining {
				train = &o.Train
			}
			pm, err := prepareModel(ctx, spec, o.Load, train, o.Seed, o.InputValues, v.dir)
			var nt *noTrainingGraphError
			if errors.As(err, &nt) {
				for _, np := range v.profs {
					table.Rows = append(table.Rows, noPlanRow(CostRow{Model: spec.Name, Kind: kind, Profile: np.label, Budget: "-",
						NoPlan: strings.TrimPrefix(nt.Error(), spec.Name+": ")}))
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			rows, err := v.model(ctx, pm)
			if err != nil {
				return nil, fmt.Errorf("validate-cost: %s (%s): %w", spec.Name, kind, err)
			}
			table.Rows = append(table.Rows, rows...)
			os.Remove(pm.file)
		}
	}
	return table, nil
}

// defaults checks o and fills in its defaults.
func (o *ValidateOptions) defaults() error {
	if o.Profile == nil {
		return optionErrorf("validate-cost needs a device profile: one measured by Profile (remat-compile profile)")
	}
	if o.ProfileName == "" {
		o.ProfileName = o.Profile.Device.Name
	}
	if len(o.Budgets) == 0 {
		o.Budgets = DefaultBudgets()
	}
	var kinds []string
	for _, k := range o.Kinds {
		if k != KindInference && k != KindTraining {
			return optionErrorf("-kinds: unknown kind %q (want %s, %s)", k, KindInference, KindTraining)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		kinds = []string{KindInference, KindTraining}
	}
	o.Kinds = kinds
	if o.TimeLimit == 0 {
		o.TimeLimit = DefaultValidateLimit
	}
	if o.TimeLimit < 0 {
		return optionErrorf("-time-limit %v: want a positive duration such as 10s", o.TimeLimit)
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
	}
	if o.Rounds < 0 || o.Warmup < 0 {
		return optionErrorf("-rounds %d, -warmup %d: want at least 1 and 0", o.Rounds, o.Warmup)
	}
	return checkSession(&o.Level, &o.Clock)
}

// noPlanRow is r with NaN for every number: a row without a plan.
func noPlanRow(r CostRow) CostRow {
	nan := math.NaN()
	r.PredictedSeconds, r.MeasuredSeconds, r.ErrorPercent = nan, nan, nan
	r.PredictedOverheadPercent, r.MeasuredOverheadPercent, r.OverheadDiffPP = nan, nan, nan
	r.PlanSeconds, r.PlanOverheadPercent = nan, nan
	return r
}

// model compiles one prepared model with every profile at every budget,
// times the original with all its rewrites, and returns the rows.
func (v *validator) model(ctx context.Context, pm *preparedModel) ([]CostRow, error) {
	o := v.o
	progress := func(p CostProgress) {
		if o.Progress != nil {
			p.Model, p.Kind = pm.spec.Name, pm.kind
			o.Progress(p)
		}
	}
	timed := []ort.TimedModel{{Path: pm.file, Inputs: pm.inputs}}
	var rows []CostRow
	rowModel := map[int]int{} // row → index into timed
	for _, np := range v.profs {
		p, _, srcs, err := remat.LowerCosted(pm.graph, np.p, remat.LowerOptions{})
		if err != nil {
			return nil, err
		}
		baseRes, err := remat.EvaluateNoRemat(p)
		if err != nil {
			return nil, fmt.Errorf("internal error: %w", err)
		}
		origPred := baseRes.TotalSeconds
		rowModel[len(rows)] = 0
		rows = append(rows, CostRow{
			Model: pm.spec.Name, Kind: pm.kind, Profile: np.label, Budget: "-",
			PredictedSeconds: origPred, PlanSeconds: baseRes.TotalSeconds, Sources: countSources(srcs),
		})
		fl := p.Floor()
		floorNode, floor := fl.Node, fl.Bytes
		for _, b := range o.Budgets {
			row := CostRow{Model: pm.spec.Name, Kind: pm.kind, Profile: np.label, Budget: b.String()}
			if bytes, err := b.Resolve(baseRes.PeakBytes, 0, 0); err == nil && floorNode >= 0 && bytes < floor {
				// No solver can help: one node's inputs and outputs alone
				// exceed the budget (the pass would prove it, slowly).
				row.BudgetBytes = bytes
				row.NoPlan = fmt.Sprintf("no plan: node %s alone needs %s > budget %s", p.Name(floorNode), remat.FormatBytes(floor), remat.FormatBytes(bytes))
				rows = append(rows, row)
				continue
			}
			progress(CostProgress{Profile: np.label, Budget: b})
			path, res, err := v.compile(ctx, pm, np.p, b, len(timed))
			var ie *remat.InfeasibleBudgetError
			switch {
			case errors.As(err, &ie):
				row.BudgetBytes = ie.HaveBytes
				row.NoPlan = noPlanReason(ie)
			case err != nil:
				return nil, err
			default:
				row.BudgetBytes = res.BudgetBytes
				row.PlanSeconds, row.PlanOverheadPercent = res.PlanSeconds, res.OverheadPercent
				row.Recomputations = res.Recomputations
				helpers, err := helperCost(path, res.Rewrite.Graph, np.p)
				if err != nil {
					return nil, fmt.Errorf("costing the written rewrite: %w", err)
				}
				row.Sources = map[string]int{}
				for src, n := range res.CostSources {
					row.Sources[src] += n
				}
				for src, n := range helpers.sources {
					row.Sources[src] += n
				}
				row.HelperNodes = helpers.nodes
				row.PredictedSeconds = res.PlanSeconds + helpers.seconds
				row.PredictedOverheadPercent = 100 * (row.PredictedSeconds/origPred - 1)
				rowModel[len(rows)] = len(timed)
				timed = append(timed, ort.TimedModel{Path: path, Inputs: pm.inputs})
			}
			rows = append(rows, row)
		}
	}
	progress(CostProgress{Timing: len(timed), Rounds: o.Rounds})
	times, err := ort.TimeModels(timed, ort.MeasureOptions(o.Level), o.Warmup, o.Rounds)
	if err != nil {
		return nil, err
	}
	for _, m := range timed[1:] {
		os.Remove(m.Path)
	}
	origSec := ort.Median(times[0].Times(o.Clock)).Seconds()
	for i := range rows {
		r := &rows[i]
		k, ok := rowModel[i]
		if !ok {
			*r = noPlanRow(*r)
			continue
		}
		r.MeasuredSeconds = ort.Median(times[k].Times(o.Clock)).Seconds()
		r.ErrorPercent = 100 * (r.PredictedSeconds/r.MeasuredSeconds - 1)
		r.MeasuredOverheadPercent = 100 * (r.MeasuredSeconds/origSec - 1)
		if k == 0 {
			r.MeasuredOverheadPercent = 0
		}
		r.OverheadDiffPP = r.PredictedOverheadPercent - r.MeasuredOverheadPercent
	}
	return rows, nil
}

// compile fits a fresh copy of pm's model at one budget and writes the
// rewrite as compile does (pipeline: the target's refinement and order
// forcing included); it returns the written file and the pass's result.
func (v *validator) compile(ctx context.Context, pm *preparedModel, prof *profiles.Profile, b remat.Budget, k int) (string, *remat.Result, error) {
	m, err := pm.model.Rebuild(ctx)
	if err != nil {
		return "", nil, err
	}
	fit, err := m.Fit(ctx, pipeline.FitOptions{Profile: prof, Budget: b, Solver: v.o.Solver, TimeLimit: v.o.TimeLimit})
	if err != nil {
		var res *remat.Result
		if fit != nil {
			res = fit.Remat
		}
		return "", res, err
	}
	path := filepath.Join(v.dir, fmt.Sprintf("%s.%s.remat%d.onnx", safeName(pm.spec.Name), pm.kind, k))
	if err := m.Export(path, fit, true); err != nil {
		return "", nil, err
	}
	return path, fit.Remat, nil
}

// helperCosts is the predicted time of the nodes the exporter added to
// a rewrite.
type helperCosts struct {
	seconds float64
	nodes   int
	sources map[string]int
}

// helperCost costs the nodes of the written rewrite at path that the
// rewritten graph g does not have: the exporter's fake dependencies that
// hold recomputations and order-constrained nodes in place (Reshape,
// Concat, Slice, Cast and Shape of empty or shape-sized tensors). Their
// outputs may have no static shape (a Reshape to a shape computed at run
// time), so each is costed by prof where shape inference types it and
// as one node's fixed cost (a view: no FLOPs, no bytes) where it does
// not.
func helperCost(path string, g *ir.Graph, prof *profiles.Profile) (helperCosts, error) {
	hc := helperCosts{sources: map[string]int{}}
	w, err := onnximp.ImportFile(path, onnximp.Options{})
	if err != nil {
		return hc, err
	}
	// Types where inference finds them; errors leave values untyped.
	_ = shapes.Infer(w, shapes.Options{File: filepath.Base(path)})
	known := map[string]bool{}
	for _, n := range g.Nodes {
		known[n.Name] = true
	}
	fixed, fixedSrc := prof.Device.LaunchOverhead, profiles.SourceDatasheet
	if prof.Fitted != nil {
		fixed, fixedSrc = prof.Fitted.OverheadSeconds, profiles.SourceFitted
	}
	for _, n := range w.Nodes {
		if known[n.Name] || n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx") {
			continue
		}
		hc.nodes++
		if c, err := prof.Cost(n); err == nil {
			hc.seconds += c.Seconds
			hc.sources[c.Source]++
			continue
		}
		hc.seconds += fixed
		hc.sources[fixedSrc]++
	}
	return hc, nil
}

// noPlanReason says in a line why a budget has no plan.
func noPlanReason(ie *remat.InfeasibleBudgetError) string {
	s := fmt.Sprintf("no plan: the smallest peak is %s > budget %s", remat.FormatBytes(ie.NeedBytes), remat.FormatBytes(ie.HaveBytes))
	if ie.FloorBytes > 0 && ie.NeedBytes == ie.FloorBytes {
		s += fmt.Sprintf(" (node %s alone needs %s)", ie.FloorNode, remat.FormatBytes(ie.FloorBytes))
	} else if ie.NoRematPeakBytes > 0 {
		s += fmt.Sprintf(" (%.0f%% of the no-remat peak)", 100*float64(ie.NeedBytes)/float64(ie.NoRematPeakBytes))
	}
	return s
}

// countSources counts the nodes of each cost source.
func countSources(srcs []string) map[string]int {
	out := map[string]int{}
	for _, s := range srcs {
		if s != "" {
			out[s]++
		}
	}
	return out
}
