// Package report is the schema of remat-compile's JSON report (compile
// -report plan.json) and its builder from the remat pass's result.
//
// # Schema remat-compile.report/v1
//
// The report is one JSON object; field names carry their units
// (peak_bytes, overhead_seconds, overhead_percent). Its "schema" field is
// Schema. A later version that renames or removes a field, or changes a
// field's meaning, gets a new schema string; adding fields keeps it.
//
// Peaks come from two models, each labelled: the solver's liveness model
// (before_peak_bytes, after_peak_bytes, memory_model: Checkmate's problem,
// activations allocated when computed and freed after their last use) and
// the target's model of its runtime's allocator (target, and for ONNX
// Runtime the ort_model_* fields: planner reuse, views, in-place ops, the
// arena, in the order the runtime runs the written model; the
// ort_model_default_* ones under ORT's default options, where the memory
// pattern holds the activations in one block from a session's second run
// on). nodes lists
// every node of the graph the plan was made for with its decision (kept,
// recomputed, or tiled: a node tiling created, with its region) and why;
// tiling, when the fit tiled, lists the regions and the budget they met
// in the target's terms.
//
// The optional fields (invocation, interrupted, timelines, plan_stages,
// measured, sweep) carry what the HTML report (WriteHTML) draws: the memory
// timelines of the original and the rewrite step by step, the plan's R
// matrix, ONNX Runtime's measured memory per node, and the budget sweep.
// Each figure says where its numbers come from: "predicted" (a memory
// model: the solver's liveness model or the target's model of its
// runtime's allocator) or "measured" (the runtime itself).
package report

import (
	"math"

	"github.com/remat-compile/remat/passes/remat"
)

// Schema is the value of Compile.Schema this package writes.
const Schema = "remat-compile.report/v1"

// LivenessModel describes the solver's memory model, as MemoryModel says
// it.
const LivenessModel = "liveness: activations allocated when computed and freed after their last use; inputs and parameters not counted"

// ReuseModel describes the solver's memory model when it plans under ONNX
// Runtime's allocation planner (remat.Problem.Reuse), as MemoryModel says
// it.
const ReuseModel = "planner reuse: " + plannerRule + "; inputs and parameters not counted"

// ArenaModel describes the solver's memory model when it also counts the
// buffers in ONNX Runtime's BFC arena (remat.Problem.Arena), as
// MemoryModel says it.
const ArenaModel = "planner reuse in the arena: " + plannerRule + ", each buffer and workspace counted as the chunk ONNX Runtime's BFC arena hands out for it (a multiple of 256 bytes; a free chunk less than twice the request is handed out whole); inputs and parameters not counted"

const plannerRule = "liveness, except that a freed buffer stays allocated until a later value of the same element size and shape takes it, and unary ops write over a dying input of their shape (ONNX Runtime's allocation planner)"

// Compile is the JSON report of one compile.
type Compile struct {
	Schema  string `json:"schema"`
	Model   string `json:"model"`
	Output  string `json:"output"`
	Profile string `json:"profile"`
	// CostSources counts the nodes whose cost came from each source of
	// the profile: measured, fitted, datasheet.
	CostSources map[string]int `json:"cost_sources"`
	// CostSecondsBySource and OverheadSecondsBySource split the base
	// compute seconds (every node once) and the recomputations' seconds by
	// where each node's cost comes from (measured, fitted, datasheet).
	CostSecondsBySource     map[string]float64 `json:"cost_seconds_by_source"`
	OverheadSecondsBySource map[string]float64 `json:"overhead_seconds_by_source"`
	// Solver is the solver asked for; PlanSolver the one whose plan was
	// used (for auto, the one it chose).
	Solver     string `json:"solver"`
	PlanSolver string `json:"plan_solver"`
	// Budget is the budget as given ("" for the default).
	Budget      string `json:"budget"`
	BudgetBytes int64  `json:"budget_bytes"`
	MemoryModel string `json:"memory_model"`
	// Target names the runtime the model was fitted for (ort, liveness,
	// tfjs) and TargetModel describes its model.
	Target          string `json:"target"`
	TargetModel     string `json:"target_model"`
	BeforePeakBytes int64  `json:"before_peak_bytes"`
	// PeakFloorBytes is the largest working set of one node
	// (PeakFloorNode): no plan peaks lower.
	PeakFloorBytes       int64     `json:"peak_floor_bytes"`
	PeakFloorNode        string    `json:"peak_floor_node"`
	AfterPeakBytes       int64     `json:"after_peak_bytes"`
	PeakReductionPercent float64   `json:"peak_reduction_percent"`
	BaseComputeSeconds   float64   `json:"base_compute_seconds"`
	PlanComputeSeconds   float64   `json:"plan_compute_seconds"`
	OverheadSeconds      float64   `json:"overhead_seconds"`
	OverheadPercent      float64   `json:"overhead_percent"`
	Optimal              bool      `json:"optimal"`
	GapPercent           *float64  `json:"gap_percent"` // null when unknown
	LowerBoundSeconds    float64   `json:"lower_bound_seconds"`
	Recomputations       int       `json:"recomputations"`
	RecomputedNodes      int       `json:"recomputed_nodes"`
	TimeLimitSeconds     float64   `json:"time_limit_seconds"`
	SolveSeconds         float64   `json:"solve_seconds"`
	Attempts             []Attempt `json:"attempts"`
	// ORTBeforePeakBytes and ORTAfterPeakBytes are the peaks of the
	// original and the rewrite under the target's model of ONNX Runtime's
	// CPU allocator (planner reuse, views, in-place ops, arena chunks,
	// workspace, parameters); 0 when not computed (another target, or
	// sizes unknown). Both are simulated in the order ONNX Runtime runs
	// the written models, not in file order.
	ORTBeforePeakBytes int64 `json:"ort_model_before_peak_bytes"`
	ORTAfterPeakBytes  int64 `json:"ort_model_after_peak_bytes"`
	// ORTPlanOrderPeakBytes is the rewrite's peak under the same model in
	// the plan's order, and ORTUnforcedPeakBytes in the order ORT would
	// run it without the order constraints; OrderConstraints counts the
	// constraints the target added.
	ORTPlanOrderPeakBytes int64 `json:"ort_model_plan_order_peak_bytes"`
	ORTUnforcedPeakBytes  int64 `json:"ort_model_unforced_peak_bytes"`
	OrderConstraints      int   `json:"order_constraints"`
	// ORTHiddenShapes reports that the model is written with its
	// activations' shapes hidden from ONNX Runtime's allocation planner
	// (exporters/onnx Options.HideShapes); ORTAfterPeakBytes is then of
	// that writing and ORTBeforePeakBytes of the original as given.
	ORTHiddenShapes bool `json:"ort_hidden_shapes,omitempty"`
	// ORTOtherShapes says what the other writing gave when compile fitted
	// both (-ort-shapes auto): its predicted compute and ORT peak, or
	// that it found no plan.
	ORTOtherShapes string `json:"ort_other_shapes,omitempty"`
	// ORTDefaultBeforePeakBytes and ORTDefaultAfterPeakBytes are the same
	// peaks under ONNX Runtime's default session options (the memory
	// pattern on: a session's runs after the first take one block for
	// the activations, laid out from the first run's allocations), over a
	// session's runs; 0 when not computed.
	ORTDefaultBeforePeakBytes int64 `json:"ort_model_default_before_peak_bytes,omitempty"`
	ORTDefaultAfterPeakBytes  int64 `json:"ort_model_default_after_peak_bytes,omitempty"`
	// TFJSBeforePeakBytes and TFJSAfterPeakBytes are the peaks the tfjs
	// target predicts for the original and the rewrite (tf.profile's peak
	// less weights and feeds, in the order TensorFlow.js's executor runs
	// the written models), TFJSPlanOrderPeakBytes the rewrite's in the
	// plan's order; 0 for other targets.
	TFJSBeforePeakBytes    int64 `json:"tfjs_model_before_peak_bytes,omitempty"`
	TFJSAfterPeakBytes     int64 `json:"tfjs_model_after_peak_bytes,omitempty"`
	TFJSPlanOrderPeakBytes int64 `json:"tfjs_model_plan_order_peak_bytes,omitempty"`
	// OrderedNodes lists them as "NODE after SOURCE".
	OrderedNodes []string `json:"ordered_nodes"`
	// Order is the execution-order mode (file, auto); with auto,
	// Reordered says whether the chosen order replaced the file's, whose
	// peaks under the target's memory model, before rematerialization,
	// are FileOrderPeakBytes and ChosenOrderPeakBytes.
	Order                string `json:"order"`
	Reordered            bool   `json:"reordered"`
	FileOrderPeakBytes   int64  `json:"file_order_peak_bytes,omitempty"`
	ChosenOrderPeakBytes int64  `json:"chosen_order_peak_bytes,omitempty"`
	// Tiling is what tiling did, nil when it did not run.
	Tiling *Tiling `json:"tiling,omitempty"`
	// ArenaBytes is the static arena plan's size (-arena), the live peak
	// it places and its fragmentation in percent; 0 without -arena.
	ArenaBytes                int64   `json:"arena_bytes,omitempty"`
	ArenaLivePeakBytes        int64   `json:"arena_live_peak_bytes,omitempty"`
	ArenaFragmentationPercent float64 `json:"arena_fragmentation_percent,omitempty"`
	Peak                      Peak    `json:"peak"`
	Nodes                     []Node  `json:"nodes"`

	// The fields below are optional (detail.go): what the HTML report
	// draws beyond the numbers above.

	// Invocation is the command line and the versions that made the
	// report.
	Invocation *Invocation `json:"invocation,omitempty"`
	// Interrupted says the solve was interrupted (Ctrl-C) and the plan is
	// the best the solver had found by then.
	Interrupted bool `json:"interrupted,omitempty"`
	// Timelines are the memory of the original and the rewrite step by
	// step, under the solver's liveness model and the target's.
	Timelines []Timeline `json:"timelines,omitempty"`
	// PlanStages is the plan's R matrix (Checkmate §4.2, Fig. 4): for each
	// stage t, the indices into Nodes of the nodes it computes, increasing
	// (stage t computes node t for the first time, and the others again).
	PlanStages [][]int32 `json:"plan_stages,omitempty"`
	// Measured is the runtime's measured memory per node (verify), when it
	// ran.
	Measured *Measured `json:"measured,omitempty"`
	// Sweep is the budget sweep the plan came from, when one ran.
	Sweep *Sweep `json:"sweep,omitempty"`
}

// Tiling is what tiling did: the budget it ran under in the target's terms
// (a percentage budget is of the target's peak of the original, since the
// solver's no-remat peak is that of the tiled graph), the target's
// predicted peak before and after, and each region split into bands.
type Tiling struct {
	BudgetBytes     int64        `json:"budget_bytes"`
	PeakBeforeBytes int64        `json:"peak_before_bytes"`
	PeakAfterBytes  int64        `json:"peak_after_bytes"`
	PeakNode        string       `json:"peak_node"`
	ExtraPercent    float64      `json:"extra_compute_percent"`
	Regions         []TileRegion `json:"regions"`
	// Late lists the outputs the fit moved next to their readers before
	// tiling (a pool's argmax indices that a decoder reads), each
	// recomputed there by copies of the nodes it depends on.
	Late []TileLate `json:"late,omitempty"`
}

// TileLate is one output moved next to its readers: Node no longer
// produces Output; Copies nodes (the first and last named, Node's copy
// last) recompute it where its readers run, for the compute they add.
type TileLate struct {
	Node         string  `json:"node"`
	Output       string  `json:"output"`
	Copies       int     `json:"copies"`
	FirstCopy    string  `json:"first_copy"`
	LastCopy     string  `json:"last_copy"`
	ExtraSeconds float64 `json:"extra_seconds"`
	ExtraPercent float64 `json:"extra_compute_percent"`
}

// TileRegion is one tiled region: its nodes (the first and last named),
// bands, the halo rows per band, the peak before and after it and the
// compute it adds. A grid splits each band again into TilesPerBand tiles
// along GridAxis (both absent for bands).
type TileRegion struct {
	Nodes        int    `json:"nodes"`
	FirstNode    string `json:"first_node"`
	LastNode     string `json:"last_node"`
	Bands        int    `json:"bands"`
	Axis         int    `json:"axis"`
	TilesPerBand int    `json:"tiles_per_band,omitempty"`
	GridAxis     int    `json:"grid_axis,omitempty"`
	// Split says it in words: "4 bands" or "2×3 grid".
	Split           string  `json:"split"`
	HaloRows        []int64 `json:"halo_rows"`
	PeakBeforeBytes int64   `json:"peak_before_bytes"`
	PeakAfterBytes  int64   `json:"peak_after_bytes"`
	ExtraSeconds    float64 `json:"extra_seconds"`
	ExtraPercent    float64 `json:"extra_compute_percent"`
	// PooledInGroups names the values the region's bands recompute that a
	// global pool reads whole, computed and pooled a channel group at a
	// time instead of whole.
	PooledInGroups []string `json:"pooled_in_groups,omitempty"`
}

// Attempt is one solver of a portfolio.
type Attempt struct {
	Solver         string   `json:"solver"`
	Status         string   `json:"status"`
	PeakBytes      int64    `json:"peak_bytes,omitempty"`
	CostSeconds    float64  `json:"cost_seconds,omitempty"`
	Optimal        bool     `json:"optimal"`
	GapPercent     *float64 `json:"gap_percent"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	Note           string   `json:"note,omitempty"`
}

// Peak says where the plan peaks and what is resident then.
type Peak struct {
	Step int    `json:"step"`
	Node string `json:"node"`
	Live []Live `json:"live"`
}

// Live is one value resident at the peak.
type Live struct {
	Node  string `json:"node"`
	Bytes int64  `json:"bytes"`
}

// Node is the decision for one node.
type Node struct {
	Node           string   `json:"node"`
	Op             string   `json:"op"`
	Outputs        []string `json:"outputs"`
	Bytes          int64    `json:"bytes"`
	ComputeSeconds float64  `json:"compute_seconds"`
	CostSource     string   `json:"cost_source"`
	Recomputable   bool     `json:"recomputable"`
	// Decision is "kept" (computed once, held until its last use),
	// "recomputed", "tiled" (a node tiling created, a band copy or the
	// Slice or Concat of a band, computed once) or "late" (a copy that
	// recomputes a late output next to its readers, Tiling.Late);
	// Computations counts how
	// often the plan runs it.
	Decision     string `json:"decision"`
	Computations int    `json:"computations"`
	Why          string `json:"why"`
	// TiledRegion is the 1-based index in Tiling.Regions of the region
	// whose rewrite created the node; 0 for the graph's own nodes.
	TiledRegion int `json:"tiled_region,omitempty"`
}

// FromResult builds the report's solver part from the remat pass's
// result: peaks under the solver's model, costs, the attempts, the peak's residents
// and every node's decision. The caller fills in the model, the output,
// the budget as given, the time limit and the target's part.
func FromResult(res *remat.Result) *Compile {
	r := &Compile{
		Schema: Schema, Profile: res.Profile, CostSources: res.CostSources,
		Solver: res.Solver, PlanSolver: res.PlanSolver, BudgetBytes: res.BudgetBytes,
		MemoryModel:     LivenessModel,
		BeforePeakBytes: res.BeforePeakBytes, AfterPeakBytes: res.AfterPeakBytes,
		PeakFloorBytes: res.FloorBytes, PeakFloorNode: res.FloorNode,
		BaseComputeSeconds: res.BaseSeconds, PlanComputeSeconds: res.PlanSeconds,
		OverheadSeconds: res.OverheadSeconds, OverheadPercent: res.OverheadPercent,
		Optimal: res.Optimal, GapPercent: PercentOrNil(res.Gap), LowerBoundSeconds: res.LowerBoundSeconds,
		Recomputations: res.Recomputations, RecomputedNodes: res.RecomputedNodes,
		SolveSeconds: res.SolveSeconds,
		Attempts:     []Attempt{}, Nodes: []Node{},
	}
	switch {
	case res.Problem != nil && res.Problem.Reuse != nil && res.Problem.Arena != nil:
		r.MemoryModel = ArenaModel
	case res.Problem != nil && res.Problem.Reuse != nil:
		r.MemoryModel = ReuseModel
	}
	if res.BeforePeakBytes > 0 {
		r.PeakReductionPercent = 100 * float64(res.BeforePeakBytes-res.AfterPeakBytes) / float64(res.BeforePeakBytes)
	}
	for _, a := range res.Attempts {
		r.Attempts = append(r.Attempts, Attempt{
			Solver: a.Solver, Status: a.Status, PeakBytes: a.PeakBytes, CostSeconds: a.CostSeconds,
			Optimal: a.Optimal, GapPercent: PercentOrNil(a.Gap), ElapsedSeconds: a.ElapsedSeconds, Note: a.Note,
		})
	}
	c := res.Check
	r.Peak = Peak{Step: c.PeakStep, Live: []Live{}}
	if c.PeakNode >= 0 {
		r.Peak.Node = res.Problem.Name(c.PeakNode)
	}
	for _, l := range c.Live {
		r.Peak.Live = append(r.Peak.Live, Live{Node: res.Problem.Name(int(l.Node)), Bytes: res.Problem.PartBytes(int(l.Node), int(l.Index))})
	}
	r.CostSecondsBySource, r.OverheadSecondsBySource = map[string]float64{}, map[string]float64{}
	for _, d := range res.Decisions {
		r.CostSecondsBySource[d.CostSource] += d.Seconds
		if d.Computations > 1 {
			r.OverheadSecondsBySource[d.CostSource] += float64(d.Computations-1) * d.Seconds
		}
		nr := Node{
			Node: d.Node.String(), Op: d.Node.OpName(), Outputs: []string{}, Bytes: d.Bytes,
			ComputeSeconds: d.Seconds, CostSource: d.CostSource, Recomputable: d.Recomputable,
			Decision: "kept", Computations: d.Computations, Why: d.Why,
		}
		if d.Recomputed() {
			nr.Decision = "recomputed"
		}
		for _, v := range res.Mapping.Outputs[d.Index] {
			nr.Outputs = append(nr.Outputs, v.String())
		}
		r.Nodes = append(r.Nodes, nr)
	}
	return r
}

// PercentOrNil is 100 × gap, or nil when the gap is unknown (infinite or
// NaN).
func PercentOrNil(gap float64) *float64 {
	if math.IsInf(gap, 0) || math.IsNaN(gap) {
		return nil
	}
	p := 100 * gap
	return &p
}
