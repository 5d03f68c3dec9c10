package remat

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// Result is what the pass did, for reports.
type Result struct {
	// Solver is the solver the pass ran; PlanSolver the one whose plan it
	// used (for a portfolio such as auto, the one it chose; else Solver).
	Solver, PlanSolver string
	// Profile names the device profile; CostSources counts the problem
	// nodes whose cost came from each source (profiles.SourceMeasured,
	// SourceFitted, SourceDatasheet).
	Profile     string
	CostSources map[string]int
	// Budget is the budget as given, BudgetBytes as resolved.
	Budget      Budget
	BudgetBytes int64
	// BeforePeakBytes is the no-remat peak (checkpoint-all);
	// AfterPeakBytes the plan's. Both under the memory model of Memory,
	// ConstBytes included.
	BeforePeakBytes, AfterPeakBytes int64
	// FloorBytes is a floor under the peak of every plan: the largest
	// working set of a single node (its inputs and outputs, with
	// ConstBytes and its workspace), that of FloorNode; FloorWorkspace
	// the workspace's part of it.
	FloorBytes     int64
	FloorNode      string
	FloorWorkspace int64
	// ReuseFloorBytes, when above FloorBytes, is the floor under the
	// problem's buffer reuse (Problem.ReuseFloor), at the step of
	// ReuseFloorNode: freed buffers waiting for later values of their
	// layout hold the rest.
	ReuseFloorBytes int64
	ReuseFloorNode  string
	// BaseSeconds is the predicted compute time of computing every node
	// once; PlanSeconds the plan's; OverheadSeconds their difference and
	// OverheadPercent that as a percentage of BaseSeconds.
	BaseSeconds, PlanSeconds, OverheadSeconds, OverheadPercent float64
	// Optimal, Gap and LowerBoundSeconds are the plan's (Plan.Optimal,
	// Plan.Gap, Plan.LowerBound); Gap is +Inf when unknown.
	Optimal           bool
	Gap               float64
	LowerBoundSeconds float64
	// Recomputations counts computations beyond the first of each node;
	// RecomputedNodes the nodes computed more than once.
	Recomputations, RecomputedNodes int
	// SolveSeconds is how long the solver ran (wall clock).
	SolveSeconds float64
	// Attempts lists what each solver of a portfolio reached (empty for a
	// single solver).
	Attempts []Attempt
	// Decisions has one entry per problem node, in the problem's order.
	Decisions []Decision

	// Problem, Mapping and Plan are the lowered problem (with its
	// budget), its mapping to the graph, and the checked plan; Check is
	// what Check measured of it.
	Problem *Problem
	Mapping *Mapping
	Plan    *Plan
	Check   CheckResult
	// Rewrite describes the recompute nodes the pass added to the graph
	// (for the exporter).
	Rewrite *RewriteResult
}

// Decision says what the plan does with one problem node and why.
type Decision struct {
	// Node is the IR node (of the graph before the rewrite added copies);
	// Index its problem node.
	Node  *ir.Node
	Index int
	// Bytes is the size of its outputs; Seconds the cost of one
	// computation and CostSource where it comes from.
	Bytes      int64
	Seconds    float64
	CostSource string
	// Recomputable is false for nodes that may run only once.
	Recomputable bool
	// Computations is how many times the plan computes it: 1 when it is
	// kept until its last use, more when it is recomputed.
	Computations int
	// Why explains the decision in a sentence or two.
	Why string
}

// Recomputed reports whether the plan computes the node more than once.
func (d *Decision) Recomputed() bool { return d.Computations > 1 }

// Attempt is what one solver of a portfolio (auto) reached. A portfolio
// solver reports its attempts through the Trace in its context.
type Attempt struct {
	Solver string
	// Status is one of "fits" (a plan within the budget), "over-budget"
	// (only a plan over it: PeakBytes is the smallest peak it reached),
	// "infeasible" (proved that no plan fits), "not-applicable",
	// "unavailable" (e.g. no MILP library), "timeout" or "failed".
	Status string
	// PeakBytes and CostSeconds are those of its best plan (0 when it
	// returned none); Optimal, Gap (+Inf when unknown) and LowerBound as
	// the plan says.
	PeakBytes   int64
	CostSeconds float64
	Optimal     bool
	Gap         float64
	LowerBound  float64
	// ElapsedSeconds is how long it ran.
	ElapsedSeconds float64
	// Note says why it has no plan within the budget, or what it did.
	Note string
}

// Trace receives what a portfolio solver does inside Solve, in the manner
// of net/http/httptrace: install one with WithTrace; a solver that runs
// others reports each one's outcome through ContextTrace(ctx). Solvers
// that run no others ignore it.
type Trace struct {
	// Attempt is called after each solver the portfolio ran.
	Attempt func(Attempt)
	// Chosen is called with the solver whose plan the portfolio returns.
	Chosen func(solver string)
}

type traceKey struct{}

// WithTrace returns a context carrying t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// ContextTrace returns the Trace of ctx, or an empty one (whose hooks are
// nil-safe through its methods).
func ContextTrace(ctx context.Context) *Trace {
	if t, ok := ctx.Value(traceKey{}).(*Trace); ok && t != nil {
		return t
	}
	return &Trace{}
}

// ReportAttempt calls t.Attempt when set.
func (t *Trace) ReportAttempt(a Attempt) {
	if t != nil && t.Attempt != nil {
		t.Attempt(a)
	}
}

// ReportChosen calls t.Chosen when set.
func (t *Trace) ReportChosen(solver string) {
	if t != nil && t.Chosen != nil {
		t.Chosen(solver)
	}
}

// decisions explains the plan node by node. A node computed once is kept
// until its last reader; one that may not be recomputed says why not
// (notRecomputableWhy). For a recomputed node, each recomputation at
// step r replaces keeping the value from its last read before r (step f)
// to r: the explanation gives the bytes that would hold across steps
// f+1 … r−1 and the highest memory there, the peak the recomputation
// relieves, with its step and node, which keeping it would raise by its
// size (an estimate: dropping the recomputation also changes when its
// inputs die). pinned marks the nodes Options.Keep made not
// recomputable; foldable is ConstantFoldable of the graph.
func decisions(p *Problem, m *Mapping, plan *Plan, check CheckResult, sources []string, pinned []bool, foldable map[*ir.Node]bool) []Decision {
	seq := plan.Sequence()
	n := p.N()
	out := make([]Decision, n)
	for i := range n {
		nd := m.Nodes[i]
		out[i] = Decision{
			Node: nd, Index: i, Bytes: p.Bytes[i], Seconds: p.Seconds[i],
			CostSource: sources[nd.ID], Recomputable: p.Recomputable[i],
		}
	}
	first := make([]int, n)    // step of the first computation
	lastRead := make([]int, n) // last step that read the value (or computed it)
	reader := make([]int32, n) // the node of that step
	whys := make([][]string, n)
	for i := range first {
		first[i] = -1
	}
	for s, i := range seq {
		d := &out[i]
		if d.Computations > 0 {
			f := lastRead[i]
			var peak int64
			peakAt := -1
			for k := f + 1; k < s; k++ {
				if check.During[k] > peak {
					peak, peakAt = check.During[k], k
				}
			}
			why := fmt.Sprintf("recomputed at step %d for %s", s, readerAt(p, seq, s, int32(i)))
			if peakAt >= 0 {
				kept := peak + p.Bytes[i]
				verdict := "within the budget: the solver's choice, not forced by this value alone"
				if kept > p.BudgetBytes {
					verdict = fmt.Sprintf("over the budget of %d B", p.BudgetBytes)
				}
				why += fmt.Sprintf(": keeping it from step %d (read by %s) would hold %d B over steps %d–%d, whose peak is %d B at step %d (%s): about %d B, %s",
					f, p.Name(int(reader[i])), p.Bytes[i], f+1, s-1, peak, peakAt, p.Name(int(seq[peakAt])), kept, verdict)
			}
			whys[i] = append(whys[i], why)
		} else {
			first[i] = s
		}
		d.Computations++
		lastRead[i], reader[i] = s, int32(i)
		for _, dep := range p.Deps[i] {
			lastRead[dep], reader[dep] = s, int32(i)
		}
	}
	for i := range out {
		d := &out[i]
		switch {
		case d.Computations > 1:
			d.Why = strings.Join(whys[i], "; ")
		case !d.Recomputable:
			d.Why = fmt.Sprintf("kept: computed once at step %d; it may not be recomputed: %s", first[i], notRecomputableWhy(d.Node, pinned[i], foldable[d.Node]))
		case slices.Contains(p.Outputs, int32(i)):
			d.Why = fmt.Sprintf("kept: computed once at step %d; a graph output", first[i])
		default:
			d.Why = fmt.Sprintf("kept: computed once at step %d and held until its last reader, %s, at step %d", first[i], p.Name(int(reader[i])), lastRead[i])
		}
	}
	return out
}

// WhyPinned ends the Why of a node that Options.Keep pinned; a caller
// that knows why it pinned the node may replace it with its reason.
const WhyPinned = "pinned by the caller (Options.Keep)"

// notRecomputableWhy says why the plan may not recompute n: the caller
// pinned it (Options.Keep), or the op table or the graph forbids it.
func notRecomputableWhy(n *ir.Node, pinned, foldable bool) string {
	info := n.Info()
	switch {
	case pinned:
		return WhyPinned
	case info == nil:
		return fmt.Sprintf("the op table does not know %s, so a replay is not known to give the same result", n.OpName())
	case info.Flags&ir.Random != 0:
		return fmt.Sprintf("%s is a random op: a replay would draw different numbers", n.OpName())
	case info.Flags&ir.Stateful != 0:
		return fmt.Sprintf("%s is a stateful op: a replay would read or change its state again", n.OpName())
	case len(n.Subgraphs()) > 0 && !n.Recomputable():
		return fmt.Sprintf("control flow (%s) whose subgraphs hold a random, stateful or unknown op", n.OpName())
	case len(n.Subgraphs()) > 0:
		return fmt.Sprintf("control flow (%s), whose subgraphs the rewrite does not duplicate", n.OpName())
	case foldable:
		return "its value depends on constants only: ONNX Runtime folds it into an initializer when it loads the model"
	}
	return "the problem marks it not recomputable"
}

// readerAt names the node that reads the value of i recomputed at step s:
// the first later step in the sequence that reads it.
func readerAt(p *Problem, seq []int32, s int, i int32) string {
	for k := s + 1; k < len(seq); k++ {
		if _, ok := slices.BinarySearch(p.Deps[seq[k]], i); ok {
			return p.Name(int(seq[k]))
		}
	}
	return "a graph output"
}
