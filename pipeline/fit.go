package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/remat-compile/remat/exporters/report"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/order"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/passes/tile"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/targets"
	"github.com/remat-compile/remat/targets/liveness"
	"github.com/remat-compile/remat/targets/ort"
	"github.com/remat-compile/remat/targets/tfjs"
)

// DefaultProfile is the device profile a zero FitOptions.Profile means:
// the V100-16GB of the papers (Checkmate, Chen et al.), so that predicted
// overheads compare with theirs. Its memory capacity is the default
// budget, which most inference models fit without rematerialization.
const DefaultProfile = "v100-16gb"

// DefaultTimeLimit bounds the solver when FitOptions.TimeLimit is 0.
const DefaultTimeLimit = 60 * time.Second

// Targets lists the targets, the default for ONNX models (ort) first;
// tfjs is the default for TensorFlow graphs (Model.DefaultTarget).
func Targets() []targets.Target {
	return []targets.Target{ort.Target{}, liveness.Target{}, tfjs.Target{}}
}

// LookupTarget returns the target of a -target name.
func LookupTarget(name string) (targets.Target, error) {
	var names []string
	for _, t := range Targets() {
		if t.Name() == name {
			return t, nil
		}
		names = append(names, t.Name())
	}
	return nil, optionErrorf("-target %q: unknown target; the targets are %s", name, strings.Join(names, ", "))
}

// FitOptions configure Fit. The zero value fits to the default profile's
// memory capacity for ONNX Runtime with the default solver.
type FitOptions struct {
	// Target is the runtime to fit for; nil means the model's default
	// (Model.DefaultTarget: ort, or tfjs for a TensorFlow graph).
	Target targets.Target
	// Profile gives each node's compute time and the default budget; nil
	// means DefaultProfile.
	Profile *profiles.Profile
	// Budget is the memory budget (the zero Budget: the profile's
	// capacity less the model's inputs and parameters).
	Budget remat.Budget
	// Solver chooses the plan; the zero Solver means solvers.Default.
	Solver remat.Solver
	// TimeLimit bounds each solve; 0 means DefaultTimeLimit.
	TimeLimit time.Duration
	// Keep names nodes whose outputs the plan must never recompute. An
	// unknown name is an *OptionError.
	Keep []string
	// ReachProbes bounds the fits of the search that a *TargetError runs
	// for the smallest peak the target reaches at a looser budget
	// (TargetError.Reach): 0 means DefaultReachProbes, a negative value
	// turns it off (a sweep's fits, whose looser budgets are that search
	// already).
	ReachProbes int
	// Progress, when not nil, receives the solver's progress reports.
	Progress func(remat.Progress)
	// Timelines records what Fit.Detail needs to draw the target's memory
	// timeline of the original graph (simulated before the fit rewrites
	// it).
	Timelines bool
	// Order chooses the execution order the plan is made in and forced in
	// (OrderFile by default).
	Order Order
	// Tile says whether Fit may tile (TileAuto by default: when
	// rematerialization alone cannot reach the budget); TileMaxExtra
	// bounds the extra compute tiling may add, as a fraction of the
	// graph's cost (0: no bound); ORTBlock is ONNX Runtime's channel
	// block tiling keeps exact for (0: DefaultORTBlock; see ORTBlock).
	Tile         Tile
	TileMaxExtra float64
	ORTBlock     ORTBlock
	// ORTShapes says whether a model fitted for ONNX Runtime is written
	// with its activations' shapes shown to ORT's allocation planner (the
	// default), hidden from it, or either (ORTShapesAuto: both are fitted
	// and the cheaper plan is kept); targets other than ort ignore it.
	ORTShapes ORTShapes
	// Start is the remat problem's hint (remat.Problem.Start): a plan of
	// the same graph at another budget for the search to start from
	// (Sweep passes each budget the previous one's).
	Start *remat.Plan
}

// Order is how Fit chooses the execution order.
type Order string

const (
	// OrderFile keeps the file's order: the plan is made in it, and the
	// runtime is made to follow it where the plan recomputes something.
	OrderFile Order = "file"
	// OrderAuto chooses the order with the least peak under the target's
	// memory model (passes/order) before the plan is made, and makes the
	// runtime follow it where that lowers the predicted peak.
	OrderAuto Order = "auto"
)

// ParseOrder reads an -order flag value.
func ParseOrder(s string) (Order, error) {
	switch o := Order(s); o {
	case OrderFile, OrderAuto:
		return o, nil
	case "":
		return OrderFile, nil
	}
	return "", optionErrorf("-order %q: want file (the file's order) or auto (the order of least peak under the target's memory model)", s)
}

// Fit is what Fit did: the remat pass's result, the target's predictions
// and writing.
type Fit struct {
	// Remat is the remat pass's result for the chosen plan (its Problem
	// is set even when Fit fails, once the problem was built).
	Remat *remat.Result
	// Target is the target fitted for; TargetErr, when not nil, says why
	// it could predict nothing (then Original is nil and the fit was made
	// under the solver's liveness model alone).
	Target    targets.Target
	TargetErr error
	// Original is the target's prediction for the graph before the fit;
	// Placement the writing and prediction of the fitted graph.
	Original, Placement *targets.Placement
	// Reordered reports that the order pass changed the execution order
	// (FitOptions.Order auto): FilePeakBytes and OrderPeakBytes are the
	// peaks of the file's and the chosen order under the target's memory
	// model, before rematerialization.
	Reordered                     bool
	FilePeakBytes, OrderPeakBytes int64
	// Tiled is what tiling did, nil when it did not run: the regions, their
	// bands and halos, the peaks under the target's model and the extra
	// compute.
	Tiled      *tile.Result
	tileBudget int64 // the budget tiling was run with
	// targetPlanned: the solver planned under the target's memory model
	// (remat.Solver.TargetAware).
	targetPlanned bool
	// Rewrite is what the file is written with: the remat pass's rewrite
	// when it recomputes something or the order changed (an empty
	// rewrite then), nil when the graph is written unforced.
	Rewrite *remat.RewriteResult
	// Notes are messages for the user about what Fit did, in order.
	Notes []string
	// Budget is the budget the fit was made for: a percentage, as given,
	// of the target's peak of the original (Original) when the target
	// models a runtime.
	Budget remat.Budget
	// OtherShapes, under ORTShapesAuto, says what the writing Fit did not
	// keep gave (fitBoth): "+3.94% predicted compute, ORT peak 1.96 MiB",
	// or why it gave nothing.
	OtherShapes string
	// TimeLimit is the time limit each solve had.
	TimeLimit time.Duration

	detail fitDetail // what Detail needs (detail.go)
}

// ORTShapes is how Fit writes a model for ONNX Runtime: with its
// activations' shapes shown to ORT's allocation planner, or hidden from it
// (targets/ort Target.HideShapes), or whichever gives the cheaper plan.
type ORTShapes string

const (
	// ORTShapesAuto fits the model both ways, to the same budget, and
	// keeps the plan of less predicted compute (on a tie, the lower ORT
	// peak; on a tie again, the shapes shown).
	ORTShapesAuto ORTShapes = "auto"
	// ORTShapesShown writes value_info for every intermediate: ORT's
	// planner writes unary ops in place and keeps a freed buffer for the
	// next value of its shape, which can hold it across a
	// recomputation's gap.
	ORTShapesShown ORTShapes = "shown"
	// ORTShapesHidden hides the activations' shapes: no in-place writes
	// and no reuse by shape, so a buffer is freed after its last reader.
	// At level "all" ORT's NCHWc transformer converts only the
	// convolutions whose weights it sees constant, and a converted one
	// computes other bits: a writing that changes which are converted
	// changes the outputs (an earlier hiding of folded weights did, on the
	// zoo SegNet's training graph: one weight gradient, by up to 4.5e-7
	// relative). The export keeps folded weights constant, but that is a
	// property of ORT's optimizers, not a guarantee, so it is not the
	// default.
	ORTShapesHidden ORTShapes = "hidden"
)

// ParseORTShapes reads an -ort-shapes flag value.
func ParseORTShapes(s string) (ORTShapes, error) {
	switch v := ORTShapes(s); v {
	case ORTShapesAuto, ORTShapesShown, ORTShapesHidden:
		return v, nil
	case "":
		return ORTShapesShown, nil
	}
	return "", optionErrorf("-ort-shapes %q: want auto (fit both ways, keep the cheaper plan), shown or hidden (the activations' shapes, for ONNX Runtime's allocation planner)", s)
}

// Fit makes m's graph fit the budget on the target: it lowers the graph to
// the remat problem, solves it, rewrites the graph with the plan's
// recomputations (m.Graph is the rewrite afterwards), and chooses how the
// target's runtime is made to follow the plan. The returned Fit is not nil
// once the problem was built, even with an error (so that a caller can
// still write the problem out).
//
// For ONNX Runtime, FitOptions.ORTShapes says whether the model is
// written with its activations' shapes hidden from ORT's planner; under
// ORTShapesAuto Fit fits a fresh build of m (Rebuild) both ways, to the
// same budget, and keeps the better fit (fitBoth).
func (m *Model) Fit(ctx context.Context, o FitOptions) (*Fit, error) {
	if o.Target == nil {
		o.Target = m.DefaultTarget()
	}
	if err := m.checkTarget(o.Target); err != nil {
		return nil, err
	}
	shapes, err := ParseORTShapes(string(o.ORTShapes))
	if err != nil {
		return nil, err
	}
	t, isORT := o.Target.(ort.Target)
	switch {
	case !isORT || t.HideShapes:
	case shapes == ORTShapesHidden:
		o.Target = ort.Target{HideShapes: true}
	case shapes == ORTShapesAuto:
		return m.fitBoth(ctx, o)
	}
	return m.fit(ctx, o)
}

// fit is Fit for one target.
func (m *Model) fit(ctx context.Context, o FitOptions) (*Fit, error) {
	var err error
	if o.Profile == nil {
		if o.Profile, err = profiles.Load(DefaultProfile); err != nil {
			return nil, err
		}
	}
	if o.Solver.Solve == nil {
		o.Solver, _ = solvers.Lookup(solvers.Default)
	}
	if o.TimeLimit == 0 {
		o.TimeLimit = DefaultTimeLimit
	}
	if o.TimeLimit < 0 {
		return nil, optionErrorf("-time-limit %v: want a positive duration such as 60s", o.TimeLimit)
	}
	keep, err := keepSet(o.Keep, m.Graph)
	if err != nil {
		return nil, err
	}
	order, err := ParseOrder(string(o.Order))
	if err != nil {
		return nil, err
	}
	f := &Fit{Target: o.Target, TimeLimit: o.TimeLimit, targetPlanned: o.Solver.TargetAware}
	// The target's peak of the graph before the fit, as the runtime runs
	// the written model: a training graph is ours to write too, so it is
	// written as the rewrite is and compared as written.
	f.Original, f.TargetErr = o.Target.Original(m.Graph, m.Training != nil)
	if b := o.Budget; b.Fraction > 0 && b.Bytes <= 0 && b.Of <= 0 && f.TargetErr == nil && f.Original.PeakBytes > 0 && o.Target.Name() != "liveness" {
		// A percentage is of what the runtime uses for the model as
		// given, which the user measures against; the no-remat peak in
		// the plan's order is only the solver's (under liveness, the
		// two are the same).
		o.Budget.Of, o.Budget.OfWhat = f.Original.PeakBytes, fmt.Sprintf("the %s peak of the original", o.Target.Name())
	}
	f.Budget = o.Budget
	f.detail.record(m, f, o)
	if order == OrderAuto {
		if err := m.reorder(ctx, f, o.Target); err != nil {
			return nil, err
		}
	} else if err := useRuntimeOrder(m.Graph, o.Target); err != nil {
		return nil, err
	}

	tiling, err := ParseTile(string(o.Tile))
	if err != nil {
		return nil, err
	}
	f.Remat, err = m.solve(ctx, m.Graph, keep, o, m.passOptions())
	var ie *remat.InfeasibleBudgetError
	if errors.As(err, &ie) && tiling == TileAuto && f.TargetErr == nil {
		// Rematerialization alone cannot reach the budget (typically the
		// largest single-node working set is above it): tile under the
		// target's model, to the same bytes.
		tb := ie.HaveBytes
		n, rerr := m.Rebuild(ctx)
		if rerr == nil && f.Reordered {
			rerr = n.reorder(ctx, &Fit{}, f.Target)
		}
		if rerr != nil {
			return f, rerr
		}
		res, terr := n.tile(ctx, o.Target, o.Profile, tb, o.TileMaxExtra, o.ORTBlock)
		var tbe *tile.BudgetError
		tiled := res != nil && len(res.Regions) > 0 && (terr == nil || errors.As(terr, &tbe))
		reached, node := int64(0), ""
		if tiled {
			reached, node = res.PeakAfter, res.PeakNode
			reached, node = eagerPeak(o.Target, n.Graph, reached, node)
		}
		switch {
		case tiled && reached <= tb:
			// The tiled graph runs within the budget on the target: it
			// is the fit, without recomputations.
			f.Tiled, f.tileBudget = res, tb
			m.Graph = n.Graph
			o.Budget = remat.BudgetFraction(1)
			f.Remat, err = m.solve(ctx, m.Graph, keep, o, m.passOptions())
		case errors.As(terr, &tbe) || terr == nil:
			// Tiling does not reach the budget either: the remat pass's
			// error stands, with what tiling reached.
			if res != nil && len(res.Regions) > 0 {
				return f, &TileError{Err: err, Target: o.Target.Name(), Original: res.PeakBefore, Reached: reached, Node: node, Budget: tb, Regions: len(res.Regions)}
			}
		default:
			return f, terr
		}
	}
	if err != nil {
		return f, err
	}
	f.Rewrite = f.Remat.Rewrite
	switch {
	case f.Rewrite != nil && len(f.Rewrite.Recomputes) == 0 && !f.Reordered:
		f.Rewrite = nil // nothing to force
	case f.Rewrite == nil && f.Reordered:
		f.Rewrite = &remat.RewriteResult{Graph: m.Graph}
	}
	if f.Placement, err = o.Target.Place(m.Graph, f.Rewrite); err != nil {
		return f, err
	}
	if ep, ok := o.Target.(tiledPlacer); ok && f.Tiled != nil && f.Rewrite == nil {
		// A tiled graph, nothing recomputed: its runtime's order can
		// still hold a large value long after the node that shrinks it
		// could have run (ONNX Runtime and a pyramid's lateral branch),
		// or run a band's Slice of a feed long before the band
		// (TensorFlow.js's stack); written with the target's order
		// constraints where they lower the peak.
		if f.Placement, err = ep.PlaceTiled(m.Graph); err != nil {
			return f, err
		}
	}
	if err := f.checkTarget(); err != nil {
		return f, m.reach(ctx, f, o, err)
	}
	return f, nil
}

// TargetError says that the fitted graph would not run within the budget
// on the target, or not lower than the original, although the solver's
// liveness model says it fits: the target's allocator does not deliver the
// plan's saving. The command exits 1 with it and writes nothing.
type TargetError struct {
	Target string
	// OriginalBytes and PeakBytes are the target's predicted peaks of the
	// original and the fitted graph; BudgetBytes the budget.
	OriginalBytes, PeakBytes, BudgetBytes int64
	// Reach is what the search for the smallest peak the target reaches
	// at a looser budget found (reach.go); nil when it did not run.
	Reach *Reach
	// OverBudget reports that the target's peak is below the original's
	// but above the budget (overBudget: a target whose predicted bytes
	// are the budget's own).
	OverBudget bool
}

func (e *TargetError) Error() string {
	if e.OverBudget {
		return e.overBudgetError()
	}
	s := fmt.Sprintf("the plan fits the budget of %s under the solver's memory model but does not lower the peak on the %s target: %s there against the original's %s (its allocator does not turn these recomputations into savings)",
		remat.FormatBytes(e.BudgetBytes), e.Target, remat.FormatBytes(e.PeakBytes), remat.FormatBytes(e.OriginalBytes))
	if e.Reach != nil {
		s += "; " + e.Reach.describe(e.Target)
	}
	return s
}

// overBudgetError is a *TargetError's message when the target's peak is
// below the original's but above the budget.
func (e *TargetError) overBudgetError() string {
	s := fmt.Sprintf("the plan fits the budget of %s under the solver's memory model, but the %s target's order of the written model peaks at %s, above the budget (the original's: %s)",
		remat.FormatBytes(e.BudgetBytes), e.Target, remat.FormatBytes(e.PeakBytes), remat.FormatBytes(e.OriginalBytes))
	if e.Reach != nil {
		s += "; " + e.Reach.describe(e.Target)
	}
	return s
}

// checkTarget refuses a fit whose recomputations do not lower the
// target's predicted peak: its allocator does not turn them into savings.
func (f *Fit) checkTarget() error {
	if f.TargetErr != nil || f.Original == nil || f.Placement == nil || f.Remat.Recomputations == 0 {
		return nil
	}
	te := &TargetError{Target: f.Target.Name(), OriginalBytes: f.Original.PeakBytes, PeakBytes: f.Placement.PeakBytes, BudgetBytes: f.Remat.BudgetBytes}
	if f.Placement.PeakBytes >= f.Original.PeakBytes {
		return te
	}
	if f.overBudget() {
		te.OverBudget = true
		return te
	}
	return nil
}

// overBudget reports whether the target's predicted peak of the written
// rewrite exceeds the budget (a tiled fit's: the budget tiling reached).
// A runtime's bytes are the activations the budget bounds (TensorFlow.js:
// tf.profile's peak less the weights and feeds; ONNX Runtime: its arena's
// bytes in use less what it held before the first kernel), so a peak
// above the budget is the runtime's order of the written file departing
// from the plan's where the writing could not force it, or a solver that
// plans without the target's model. TensorFlow.js refuses both. ONNX
// Runtime refuses the first only: its arena's bytes are far above a
// liveness plan's (rounding, prepacked weights, shape-keyed reuse), so a
// solver that is not TargetAware never fits its budget in them, and such
// a plan stands when it lowers ORT's peak (checkTarget). The liveness
// target's peak is the plan's own.
func (f *Fit) overBudget() bool {
	budget := f.Remat.BudgetBytes
	if f.Tiled != nil && f.tileBudget > 0 {
		budget = f.tileBudget
	}
	if f.Placement.PeakBytes <= budget {
		return false
	}
	if _, ok := f.Target.(tfRuntime); ok {
		return true
	}
	return f.Target.Name() != "liveness" && f.targetPlanned
}

// eagerPeak is the peak, and the node at it, of the tiled graph g as the
// target writes it (PlaceTiled: with order constraints where they lower
// the peak), when that is below peak, tiling's own prediction at node;
// otherwise peak and node.
func eagerPeak(t targets.Target, g *ir.Graph, peak int64, node string) (int64, string) {
	p, ok := t.(tiledPlacer)
	if !ok {
		return peak, node
	}
	wp, wn, err := writtenPeak(t, p, g)
	if err != nil || wp >= peak {
		return peak, node
	}
	if wn == "" {
		wn = node
	}
	return wp, wn
}

// writtenPeak is the peak of the tiled graph g as target t (placing it
// with p) writes it, and the node at it when the target can say.
func writtenPeak(t targets.Target, p tiledPlacer, g *ir.Graph) (int64, string, error) {
	pl, err := p.PlaceTiled(g)
	if err != nil {
		return 0, "", err
	}
	node := ""
	if tl, ok := t.(targets.Timeliner); ok {
		if sim, steps, err := tl.Timeline(g, nil, pl.Writing); err == nil && sim.PeakStep >= 0 {
			node = steps[sim.PeakStep].String()
		}
	}
	return pl.PeakBytes, node, nil
}

// TileError is the remat pass's error (Err: the budget is below what
// rematerialization alone reaches) when tiling did not reach the budget
// either: it lowered the target's peak from Original to Reached (at Node)
// with Regions regions, above Budget, the budget in the target's terms.
type TileError struct {
	Err                       error
	Target                    string
	Original, Reached, Budget int64
	Node                      string
	Regions                   int
}

func (e *TileError) Error() string {
	return fmt.Sprintf("%v; tiling cannot reach it either: %d region(s) lower the %s peak from %s to %s (at %s), above the budget of %s there",
		e.Err, e.Regions, e.Target, remat.FormatBytes(e.Original), remat.FormatBytes(e.Reached), e.Node, remat.FormatBytes(e.Budget))
}

func (e *TileError) Unwrap() error { return e.Err }

// redo applies to m, a fresh build, what Fit did to the graph before the
// remat pass: the same order and the same tiling (both deterministic).
func (m *Model) redo(ctx context.Context, f *Fit, o FitOptions) error {
	if f.Reordered {
		if err := m.reorder(ctx, &Fit{}, f.Target); err != nil {
			return err
		}
	}
	if f.Tiled != nil {
		var be *tile.BudgetError
		if _, err := m.tile(ctx, f.Target, o.Profile, f.tileBudget, o.TileMaxExtra, o.ORTBlock); err != nil && !errors.As(err, &be) {
			return err
		}
	}
	return nil
}

// reorder sets m's execution order to the one of least peak under the
// target's memory model (passes/order) when it is lower than the file's.
func (m *Model) reorder(ctx context.Context, f *Fit, t targets.Target) error {
	r, err := order.Best(ctx, m.Graph, t.Memory(), order.Options{})
	if err != nil {
		return err
	}
	f.FilePeakBytes, f.OrderPeakBytes = r.FilePeak, r.Peak
	if r.Peak >= r.FilePeak {
		return nil
	}
	if err := m.Graph.SetOrder(r.Seq); err != nil {
		return fmt.Errorf("order: %w", err)
	}
	f.Reordered = true
	return nil
}

// solve runs the remat pass on g, no node of keep recomputed.
func (m *Model) solve(ctx context.Context, g *ir.Graph, keep map[string]bool, o FitOptions, po passes.Options) (*remat.Result, error) {
	res := &remat.Result{}
	pass := remat.NewPass(remat.Options{
		Solver: o.Solver, Profile: o.Profile, Budget: o.Budget, TimeLimit: o.TimeLimit,
		Progress: o.Progress, Result: res, Start: o.Start,
		Memory: planMemory(o.Target),
		Keep:   func(n *ir.Node) bool { return keep[n.Name] },
	})
	_, err := passes.Run(ctx, g, []*passes.Pass{pass}, po)
	return res, err
}

// planMemory is what the remat problem models of the target's allocator:
// for a runtime whose planner reuses buffers (ONNX Runtime) the planner's
// reuse, views and in-place writes, its kernels' workspaces and its arena's
// chunks (remat.LowerOptions); otherwise liveness, with the bytes a node
// holds besides its outputs while it runs where the target counts any
// (TensorFlow.js: the intermediate tensors of its composite ops, such as
// the three operands SelectV2 broadcasts, which tf.profile counts).
func planMemory(t targets.Target) remat.LowerOptions {
	tm := t.Memory()
	if !tm.Reuse {
		return remat.LowerOptions{Workspace: tm.Workspace}
	}
	return remat.LowerOptions{Reuse: true, Aliasing: tm.Aliasing, Shapeless: tm.Shapeless, Workspace: tm.Workspace, Arena: tm.Arena, Prepacked: tm.Prepacked, Preamble: tm.Preamble, WorkspaceParts: tm.WorkspaceParts, WorkspaceFirst: tm.WorkspaceFirst}
}

// keepSet checks the names of FitOptions.Keep against g's nodes.
func keepSet(names []string, g *ir.Graph) (map[string]bool, error) {
	keep := map[string]bool{}
	if len(names) == 0 {
		return keep, nil
	}
	have := map[string]bool{}
	for _, n := range g.Nodes {
		have[n.Name] = true
	}
	for _, name := range names {
		if !have[name] {
			return nil, optionErrorf("-keep %q: the graph has no node of that name (`remat-compile inspect` lists them)", name)
		}
		keep[name] = true
	}
	return keep, nil
}

// Report builds the JSON report of the fit of m written to output; budget
// is the budget as the user gave it.
func (f *Fit) Report(m *Model, output, budget string) *report.Compile {
	r := report.FromResult(f.Remat)
	r.Model, r.Output, r.Budget = m.Name, output, budget
	r.TimeLimitSeconds = f.TimeLimit.Seconds()
	r.Target, r.TargetModel = f.Target.Name(), f.Target.Describe()
	if t := f.Tiled; t != nil {
		r.Tiling = &report.Tiling{BudgetBytes: f.tileBudget, PeakBeforeBytes: t.PeakBefore, PeakAfterBytes: t.PeakAfter, PeakNode: t.PeakNode}
		if t.CostBefore > 0 {
			r.Tiling.ExtraPercent = 100 * (t.CostAfter - t.CostBefore) / t.CostBefore
		}
		region := map[string]int{} // a node tiling created → its region, from 1
		for k, g := range t.Regions {
			r.Tiling.Regions = append(r.Tiling.Regions, report.TileRegion{
				Nodes: len(g.Nodes), FirstNode: g.Nodes[0], LastNode: g.Nodes[len(g.Nodes)-1], Bands: g.Bands, Axis: g.Axis,
				TilesPerBand: g.Cols, GridAxis: g.GridAxis, Split: g.Split(), HaloRows: g.Halo, PeakBeforeBytes: g.PeakBefore, PeakAfterBytes: g.PeakAfter, ExtraSeconds: g.ExtraCost, ExtraPercent: g.ExtraPercent,
				PooledInGroups: g.Pooled,
			})
			for _, name := range g.Added {
				region[name] = k + 1
			}
		}
		late := map[string]string{} // a copy → why
		for _, l := range t.Late {
			r.Tiling.Late = append(r.Tiling.Late, report.TileLate{Node: l.Node, Output: l.Output, Copies: len(l.Copies),
				FirstCopy: l.Copies[0], LastCopy: l.Copies[len(l.Copies)-1], ExtraSeconds: l.ExtraCost, ExtraPercent: l.ExtraPercent})
			for _, c := range l.Copies {
				late[c] = fmt.Sprintf("late: recomputes %s, which %s no longer produces, next to its readers", l.Output, l.Node)
			}
		}
		for i := range r.Nodes {
			n := &r.Nodes[i]
			if why, ok := late[n.Node]; ok && n.Decision == "kept" {
				n.Decision, n.Why = "late", why
			}
			k := region[n.Node]
			if k == 0 {
				continue
			}
			g := r.Tiling.Regions[k-1]
			where := fmt.Sprintf("created by tiling region %d (%s … %s in %s, halo rows %v), which lowers the %s peak from %s to %s",
				k, g.FirstNode, g.LastNode, g.Split, g.HaloRows, r.Target, remat.FormatBytes(g.PeakBeforeBytes), remat.FormatBytes(g.PeakAfterBytes))
			n.TiledRegion = k
			if n.Decision == "kept" {
				n.Decision, n.Why = "tiled", "tiled: "+where
			} else {
				n.Why += "; " + where
			}
		}
	}
	r.Order = string(OrderFile)
	if f.FilePeakBytes > 0 {
		r.Order = string(OrderAuto)
		r.Reordered, r.FileOrderPeakBytes, r.ChosenOrderPeakBytes = f.Reordered, f.FilePeakBytes, f.OrderPeakBytes
	}
	if _, ok := f.Target.(onnxRuntime); ok && f.TargetErr == nil && f.Placement != nil {
		r.ORTBeforePeakBytes, r.ORTAfterPeakBytes = f.Original.PeakBytes, f.Placement.PeakBytes
		r.ORTPlanOrderPeakBytes, r.ORTUnforcedPeakBytes = f.Placement.PlanOrderPeakBytes, f.Placement.UnforcedPeakBytes
		r.ORTDefaultBeforePeakBytes, r.ORTDefaultAfterPeakBytes = f.Original.DefaultPeakBytes, f.Placement.DefaultPeakBytes
		r.OrderConstraints = len(f.Placement.Writing.Order)
		r.ORTHiddenShapes, r.ORTOtherShapes = f.Placement.Writing.HideShapes, f.OtherShapes
		r.OrderedNodes = f.Placement.Writing.Strings()
	}
	f.tfjsReport(r)
	return r
}
