package report

import "github.com/remat-compile/remat/passes/remat"

// The sources a figure's numbers come from.
const (
	// SourcePredicted labels numbers from a memory model.
	SourcePredicted = "predicted"
	// SourceMeasured labels numbers measured in the runtime.
	SourceMeasured = "measured"
)

// ModelLiveness is Timeline.Model for the solver's liveness model.
const ModelLiveness = "liveness"

// Invocation says how a report was made.
type Invocation struct {
	// CommandLine is the command's arguments, the program name first.
	CommandLine []string `json:"command_line"`
	// Version is remat-compile's module version ("(devel)" for a build
	// from a source tree), VCSRevision the commit it was built from when
	// known, GoVersion the Go release that built it.
	Version     string `json:"version"`
	VCSRevision string `json:"vcs_revision,omitempty"`
	GoVersion   string `json:"go_version"`
}

// Timeline is the memory of the original graph and of its rewrite, step
// by step, under one memory model.
type Timeline struct {
	// Model is ModelLiveness (the solver's model, Checkmate eq. 2–3, in
	// the plan's order) or the target's name (its model of the runtime's
	// allocator, in the order the runtime runs the written model);
	// Description says what it counts.
	Model       string `json:"model"`
	Description string `json:"description"`
	// Source is SourcePredicted.
	Source string `json:"source"`
	// BudgetBytes is the budget when it bounds this model's peak (the
	// liveness model's), else 0.
	BudgetBytes int64  `json:"budget_bytes,omitempty"`
	Original    Series `json:"original"`
	Rewrite     Series `json:"rewrite"`
}

// Series is one graph's memory step by step: step k runs Nodes[k] and
// holds DuringBytes[k] while it runs (its working set and everything
// else held: passes/memory's During).
type Series struct {
	Nodes       []string `json:"nodes"`
	DuringBytes []int64  `json:"during_bytes"`
	// PeakBytes is the largest DuringBytes, PeakStep the first step
	// reaching it (−1 for no steps).
	PeakBytes int64 `json:"peak_bytes"`
	PeakStep  int   `json:"peak_step"`
}

// NewSeries returns the series of the steps nodes with their During
// bytes, its peak found.
func NewSeries(nodes []string, during []int64) Series {
	s := Series{Nodes: nodes, DuringBytes: during, PeakStep: -1}
	for k, b := range during {
		if s.PeakStep < 0 || b > s.PeakBytes {
			s.PeakBytes, s.PeakStep = b, k
		}
	}
	return s
}

// Measured is what the runtime measured while running the original and
// the rewrite (verify), node by node.
type Measured struct {
	// Runtime names the runtime and its version, Level the optimization
	// level the per-node series come from ("disabled": the runtime runs
	// the written nodes, one kernel each, so its events line up with the
	// target's timeline by node name), Settings the session options.
	Runtime  string `json:"runtime"`
	Level    string `json:"level"`
	Settings string `json:"settings"`
	// Source is SourceMeasured.
	Source   string         `json:"source"`
	Original MeasuredSeries `json:"original"`
	Rewrite  MeasuredSeries `json:"rewrite"`
	// OutputsEqual says whether every output of the rewrite was bitwise
	// equal to the original's; OK whether every check of verify passed.
	OutputsEqual bool `json:"outputs_equal"`
	OK           bool `json:"ok"`
}

// MeasuredSeries is one model's measured memory per kernel, in the order
// the runtime ran them.
type MeasuredSeries struct {
	// Nodes are the kernels' node names; InUseBytes the bytes in use once
	// each kernel has run (its outputs allocated, its scratch memory
	// released), less what the arena held before the first kernel.
	Nodes      []string `json:"nodes"`
	InUseBytes []int64  `json:"in_use_bytes"`
	// PeakBytes is the activation peak (the largest running peak of the
	// run, less the same baseline), reached at PeakNode.
	PeakBytes int64  `json:"peak_bytes"`
	PeakNode  string `json:"peak_node"`
}

// Sweep is a series of solves of one model under decreasing budgets
// (compile -budget sweep).
type Sweep struct {
	// Spec is the sweep as given ("sweep:100-5:5"); NoRematPeakBytes the
	// peak without rematerialization that percentages are of.
	Spec             string `json:"spec"`
	NoRematPeakBytes int64  `json:"no_remat_peak_bytes"`
	// Target names the target whose peaks TargetPeakBytes are.
	Target string     `json:"target"`
	Rows   []SweepRow `json:"rows"`
	// Stopped says why the sweep ended: the first infeasible budget (and
	// the smallest peak reached there), the end of the range, or an
	// interruption.
	Stopped string `json:"stopped"`
	// Interrupted says the sweep was interrupted before its end.
	Interrupted bool `json:"interrupted,omitempty"`
}

// SweepRow is one budget of a sweep: a plan within it.
type SweepRow struct {
	// Budget is the budget as a percentage of the no-remat peak ("70%")
	// or, for the row at the smallest peak reached, in bytes.
	Budget      string `json:"budget"`
	BudgetBytes int64  `json:"budget_bytes"`
	// PeakBytes is the plan's peak under the solver's liveness model,
	// TargetPeakBytes under the target's model (0 when it predicts none).
	PeakBytes       int64 `json:"peak_bytes"`
	TargetPeakBytes int64 `json:"target_peak_bytes"`
	// OverheadPercent and OverheadSeconds are the plan's predicted compute
	// overhead; Recomputations counts its recomputations.
	OverheadPercent float64 `json:"overhead_percent"`
	OverheadSeconds float64 `json:"overhead_seconds"`
	Recomputations  int     `json:"recomputations"`
	// Solver is the solver whose plan the row has; Optimal whether it is
	// proved optimal.
	Solver  string `json:"solver"`
	Optimal bool   `json:"optimal"`
	// Seconds is the wall time of the row: rebuilding the graph and
	// fitting it (0 for a reused plan).
	Seconds float64 `json:"seconds"`
	// ReusedFrom, when set, is the looser budget whose plan the row
	// reuses: it fits this budget too, and a tighter budget never
	// reports a lower overhead than a looser one.
	ReusedFrom string `json:"reused_from,omitempty"`
	// Note says more: a plan carried back from a tighter budget, an
	// interrupted solve.
	Note string `json:"note,omitempty"`
}

// PercentOf returns b as a percentage of whole (0 when whole is not
// positive).
func PercentOf(b, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(b) / float64(whole)
}

// formatBytes is remat.FormatBytes, the one byte formatter of reports.
func formatBytes(n int64) string { return remat.FormatBytes(n) }
