package remat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/profiles"
)

// PassName is the name of the rematerialization pass.
const PassName = "remat"

// Budget is the memory budget of the pass: a number of bytes, or a
// fraction of the no-remat peak (the peak of checkpoint-all, computing
// every node once and keeping every value until its last use, under the
// same memory model). The zero Budget is the profile's memory capacity
// less the bytes of the graph's inputs and parameters that the memory
// model does not count (they stay resident on the device beside the
// activations).
type Budget struct {
	// Bytes, when positive, is the budget in bytes.
	Bytes int64
	// Fraction, when positive and Bytes is not, is the budget as a
	// fraction of the no-remat peak: 0.7 for "70%".
	Fraction float64
}

// BudgetBytes returns an absolute budget.
func BudgetBytes(n int64) Budget { return Budget{Bytes: n} }

// BudgetFraction returns a budget relative to the no-remat peak.
func BudgetFraction(f float64) Budget { return Budget{Fraction: f} }

// IsZero reports whether b is the zero Budget (the profile's capacity).
func (b Budget) IsZero() bool { return b.Bytes <= 0 && b.Fraction <= 0 }

// String formats the budget as -budget takes it: "1048576 B", "70%", or
// "device" for the zero Budget.
func (b Budget) String() string {
	switch {
	case b.Bytes > 0:
		return fmt.Sprintf("%d B", b.Bytes)
	case b.Fraction > 0:
		return fmt.Sprintf("%s%%", trimFloat(100*b.Fraction))
	}
	return "device"
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.4f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Resolve returns the budget in bytes, given the no-remat peak and, for
// the zero Budget, the device's capacity and the bytes resident beside
// the activations that the peak does not count.
func (b Budget) Resolve(noRematPeak, capacity, resident int64) (int64, error) {
	switch {
	case b.Bytes > 0:
		return b.Bytes, nil
	case b.Fraction > 0:
		if math.IsInf(b.Fraction, 0) || math.IsNaN(b.Fraction) {
			return 0, fmt.Errorf("remat: budget fraction %v is not a number", b.Fraction)
		}
		f := b.Fraction * float64(noRematPeak)
		if f >= math.MaxInt64 {
			return NoBudget, nil
		}
		return int64(math.Floor(f)), nil
	}
	if capacity <= 0 {
		return 0, errors.New("remat: no budget: give one, or a profile with a memory capacity")
	}
	if resident >= capacity {
		return 0, fmt.Errorf("remat: the model's inputs and parameters (%s) do not fit the device's memory (%s)", FormatBytes(resident), FormatBytes(capacity))
	}
	return capacity - resident, nil
}

// Options configure NewPass.
type Options struct {
	// Solver chooses the plan (required; the registry in
	// passes/remat/solvers has them all, its default is "auto").
	Solver Solver
	// Profile gives each node's compute time (Profile.Cost) and, for the
	// zero Budget, the memory capacity (required).
	Profile *profiles.Profile
	// Budget is the memory budget; see Budget.
	Budget Budget
	// TimeLimit bounds the solver (0: only the context given to
	// passes.Run bounds it). A solver that reaches it returns its best
	// plan so far.
	TimeLimit time.Duration
	// Progress, when not nil, receives the solver's progress reports.
	Progress func(Progress)
	// Memory says what the memory model counts (LowerOptions).
	Memory LowerOptions
	// Keep, when not nil, names the nodes the plan must not recompute:
	// the problem marks them not recomputable, as it does random and
	// stateful ops. A caller uses it to steer the plan away from
	// recomputations that its runtime would not turn into savings (see
	// cmd/remat-compile's ONNX Runtime refinement), a user to pin values.
	Keep func(*ir.Node) bool
	// Result, when not nil, is filled in by the pass: in full when it
	// succeeds, as far as it got when it fails (Problem is set as soon as
	// the problem is built, so that a caller can still write it out).
	Result *Result
}

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
	// ConstBytes), that of FloorNode.
	FloorBytes int64
	FloorNode  string
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

// InfeasibleBudgetError is the pass's error when no plan fits the budget:
// the solver's *BudgetError (Unwrap gives it, so errors.As finds it and a
// proven one matches ErrInfeasible) with what a user needs to pick a
// budget that works.
type InfeasibleBudgetError struct {
	*BudgetError
	// Budget is the budget as given; NoRematPeakBytes the peak without
	// rematerialization.
	Budget           Budget
	NoRematPeakBytes int64
	// Solver is the solver run; By the one that reached NeedBytes (Solver
	// itself for a single solver); Attempts what each solver of a
	// portfolio reached.
	Solver, By string
	Attempts   []Attempt
	// FloorBytes is the largest working set of a single node, FloorNode:
	// no plan peaks lower. When NeedBytes equals it, the budget is below
	// what that node alone needs.
	FloorBytes int64
	FloorNode  string
}

func (e *InfeasibleBudgetError) Unwrap() error { return e.BudgetError }

func (e *InfeasibleBudgetError) Error() string {
	var b strings.Builder
	budget := FormatBytes(e.HaveBytes)
	if e.Budget.Fraction > 0 && e.Budget.Bytes <= 0 {
		budget = fmt.Sprintf("%s of the no-remat peak (%s)", e.Budget, FormatBytes(e.HaveBytes))
	}
	switch {
	case e.Proven:
		fmt.Fprintf(&b, "remat: budget %s is below the smallest peak possible, %s (proved by %s)", budget, FormatBytes(e.NeedBytes), e.By)
	case len(e.Attempts) > 0:
		fmt.Fprintf(&b, "remat: budget %s is below the smallest peak any solver reached, %s (%s)", budget, FormatBytes(e.NeedBytes), e.By)
	default:
		fmt.Fprintf(&b, "remat: budget %s is below the smallest peak %s reached, %s", budget, e.Solver, FormatBytes(e.NeedBytes))
	}
	if e.FloorBytes > 0 && e.NeedBytes == e.FloorBytes {
		fmt.Fprintf(&b, "; no plan peaks lower: node %s alone needs %s for its inputs and outputs", e.FloorNode, FormatBytes(e.FloorBytes))
	}
	if len(e.Attempts) > 0 {
		b.WriteString("; per solver:")
		for k, a := range e.Attempts {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s ", a.Solver)
			switch {
			case a.PeakBytes > 0:
				b.WriteString(FormatBytes(a.PeakBytes))
			default:
				b.WriteString(a.Status)
			}
		}
	}
	return b.String()
}

// FormatBytes formats a byte count in binary units with three significant
// digits: "512 B", "23.4 MiB", "1.50 GiB".
func FormatBytes(n int64) string {
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, u := float64(n)/1024, 0
	for math.Abs(f) >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	switch {
	case math.Abs(f) >= 100:
		return fmt.Sprintf("%.0f %s", f, units[u])
	case math.Abs(f) >= 10:
		return fmt.Sprintf("%.1f %s", f, units[u])
	}
	return fmt.Sprintf("%.2f %s", f, units[u])
}

// NewPass returns the rematerialization pass. It
//
//  1. lowers the graph into a Problem (Lower, with opts.Memory), each
//     node costed in seconds by opts.Profile;
//  2. computes the no-remat peak (checkpoint-all: every node once, each
//     value kept until its last use) and resolves the budget;
//  3. runs the solver within opts.TimeLimit, and Checks its plan (a plan
//     that fails Check is an internal error: a bug in the solver);
//  4. rewrites the graph with Rewrite: each recomputation becomes a
//     duplicated node, and the nodes follow the plan's order.
//
// When no plan fits the budget it returns an *InfeasibleBudgetError
// (wrapping the solver's *BudgetError) that says the smallest peak
// reached, by which solver, and, for a portfolio, by each. It fills in
// opts.Result as it goes.
func NewPass(opts Options) *passes.Pass {
	return &passes.Pass{
		Name: PassName,
		Doc:  "Rematerialization: choose which values to keep and which to recompute so that the graph runs within a memory budget, and duplicate the recomputed nodes.",
		Run: func(st *passes.State, g *ir.Graph) (bool, error) {
			return run(st, g, opts)
		},
	}
}

func run(st *passes.State, g *ir.Graph, opts Options) (bool, error) {
	if opts.Solver.Solve == nil {
		return false, errors.New("remat: no solver")
	}
	if opts.Profile == nil {
		return false, errors.New("remat: no device profile: the cost model needs one")
	}
	res := opts.Result
	if res == nil {
		res = &Result{}
	}
	*res = Result{Solver: opts.Solver.Name, Profile: opts.Profile.Device.Name, Budget: opts.Budget, Gap: math.Inf(1)}

	// 1. Lower, costing each node once.
	p, m, sources, err := LowerCosted(g, opts.Profile, opts.Memory)
	if err != nil {
		return false, err
	}
	res.CostSources = map[string]int{}
	pinned := make([]bool, p.N())
	for i, n := range m.Nodes {
		res.CostSources[sources[n.ID]]++
		if opts.Keep != nil && opts.Keep(n) && p.Recomputable[i] {
			p.Recomputable[i] = false
			pinned[i] = true
		}
	}

	// 2. The no-remat peak and the budget.
	baseRes, err := EvaluateNoRemat(p)
	if err != nil {
		return false, &passes.InternalError{Pass: PassName, Err: err}
	}
	res.BeforePeakBytes = baseRes.PeakBytes
	res.BaseSeconds = baseRes.TotalSeconds
	if fl := p.Floor(); fl.Node >= 0 {
		res.FloorBytes, res.FloorNode = fl.Bytes, p.Name(fl.Node)
	}
	budget, err := opts.Budget.Resolve(baseRes.PeakBytes, opts.Profile.MemoryBytes(), UncountedResident(g, opts.Memory))
	if err != nil {
		return false, err
	}
	p.BudgetBytes = budget
	res.BudgetBytes = budget
	res.Problem, res.Mapping = p, m

	// 3. Solve and check.
	ctx := st.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.TimeLimit)
		defer cancel()
	}
	chosen := ""
	ctx = WithTrace(ctx, &Trace{
		Attempt: func(a Attempt) { res.Attempts = append(res.Attempts, a) },
		Chosen:  func(s string) { chosen = s },
	})
	start := time.Now()
	plan, err := opts.Solver.Solve(ctx, p, opts.Progress)
	res.SolveSeconds = time.Since(start).Seconds()
	if err != nil {
		return false, solveError(opts, res, err)
	}
	if plan == nil {
		return false, &passes.InternalError{Pass: PassName, Err: fmt.Errorf("solver %s returned neither a plan nor an error", opts.Solver.Name)}
	}
	check, err := Check(p, plan)
	if err != nil {
		return false, &passes.InternalError{Pass: PassName, Err: fmt.Errorf("solver %s returned a plan that fails Check: %w", opts.Solver.Name, err)}
	}
	res.PlanSolver = opts.Solver.Name
	if chosen != "" {
		res.PlanSolver = chosen
	}
	res.Plan, res.Check = plan, check
	res.AfterPeakBytes = check.PeakBytes
	res.PlanSeconds = check.TotalSeconds
	res.OverheadSeconds = max(check.TotalSeconds-res.BaseSeconds, 0)
	if res.BaseSeconds > 0 {
		res.OverheadPercent = 100 * res.OverheadSeconds / res.BaseSeconds
	}
	res.Optimal, res.LowerBoundSeconds = plan.Optimal, plan.LowerBound
	switch {
	case plan.Optimal:
		res.Gap = 0
	case plan.LowerBound > 0 && !math.IsNaN(plan.Gap):
		res.Gap = plan.Gap
	}
	res.Recomputations = check.Recomputations
	res.Decisions = decisions(p, m, plan, check, sources, pinned, ConstantFoldable(g))
	for _, d := range res.Decisions {
		if d.Recomputed() {
			res.RecomputedNodes++
		}
	}

	// 4. Rewrite the graph.
	rw, err := Rewrite(g, m, plan)
	if err != nil {
		return false, &passes.InternalError{Pass: PassName, Err: fmt.Errorf("rewriting the checked plan of %s: %w", res.PlanSolver, err)}
	}
	res.Rewrite = rw
	return check.Recomputations > 0, nil
}

// LowerCosted lowers g (Lower) with every node's seconds from prof's cost
// model, and returns with the problem the cost source of each node, by
// node ID (profiles.Cost.Source). Nodes with subgraphs (If, Loop, Scan)
// are not recomputable: Rewrite cannot duplicate them.
func LowerCosted(g *ir.Graph, prof *profiles.Profile, mo LowerOptions) (*Problem, *Mapping, []string, error) {
	sources := make([]string, g.NumNodes())
	var costErr error
	cost := func(n *ir.Node) float64 {
		c, err := prof.Cost(n)
		if err != nil {
			if costErr == nil {
				costErr = err
			}
			return 0
		}
		sources[n.ID] = c.Source
		return c.Seconds
	}
	p, m, err := Lower(g, cost, mo)
	if err != nil {
		return nil, nil, nil, err // unknown sizes (a *memory.SizeError listing them all) first
	}
	if costErr != nil {
		return nil, nil, nil, fmt.Errorf("remat: cost model %s: %w", prof.Device.Name, costErr)
	}
	for i, n := range m.Nodes {
		if len(n.Subgraphs()) > 0 {
			p.Recomputable[i] = false
		}
	}
	return p, m, sources, nil
}

// solveError turns a solver's error into the pass's.
func solveError(opts Options, res *Result, err error) error {
	name := opts.Solver.Name
	var be *BudgetError
	if errors.As(err, &be) {
		by := name
		if len(res.Attempts) > 0 {
			by = bestAttempt(res.Attempts, be.NeedBytes, be.Proven)
		}
		return &InfeasibleBudgetError{
			BudgetError: be, Budget: opts.Budget, NoRematPeakBytes: res.BeforePeakBytes,
			Solver: name, By: by, Attempts: res.Attempts,
			FloorBytes: res.FloorBytes, FloorNode: res.FloorNode,
		}
	}
	if errors.Is(err, ErrInfeasible) {
		return fmt.Errorf("remat: budget %s: %w (solver %s)", FormatBytes(res.BudgetBytes), err, name)
	}
	if errors.Is(err, context.DeadlineExceeded) && opts.TimeLimit > 0 {
		return fmt.Errorf("remat: solver %s found no plan within the time limit of %v: %w", name, opts.TimeLimit, err)
	}
	return fmt.Errorf("remat: solver %s: %w", name, err)
}

// bestAttempt names the attempt that reached need: the first with that
// peak, preferring the one that proved it.
func bestAttempt(attempts []Attempt, need int64, proven bool) string {
	if proven {
		for _, a := range attempts {
			if a.Status == "infeasible" {
				return a.Solver
			}
		}
	}
	for _, a := range attempts {
		if a.PeakBytes == need {
			return a.Solver
		}
	}
	return attempts[0].Solver
}

// Floor is the working-set floor of a problem: the largest working set
// of one node, every part it outputs and every part it reads, plus
// ConstBytes. Whatever the plan, the step that computes the node holds at
// least that much, so no plan peaks lower (eq. (3) at that step).
type Floor struct {
	// Bytes is the floor (ConstBytes for a problem without nodes).
	Bytes int64
	// Node is the node whose working set it is; −1 without nodes.
	Node int
}

// Floor returns p's working-set floor.
func (p *Problem) Floor() Floor {
	f := Floor{Bytes: p.ConstBytes, Node: -1}
	for i := range p.N() {
		b := p.ConstBytes + p.Bytes[i]
		p.ReadParts(i, func(r Part) { b += p.PartBytes(int(r.Node), int(r.Index)) })
		if f.Node < 0 || b > f.Bytes {
			f.Node, f.Bytes = i, b
		}
	}
	return f
}

// NoRematPlan is checkpoint-all: every node computed once in its own
// stage.
func NoRematPlan(p *Problem) (*Plan, error) {
	stages := make([][]int32, p.N())
	for t := range stages {
		stages[t] = []int32{int32(t)}
	}
	return ScheduleStages(p, stages)
}

// EvaluateNoRemat evaluates NoRematPlan: its PeakBytes is the no-remat
// peak that budgets are fractions of, its TotalSeconds the cost that
// overheads are measured against.
func EvaluateNoRemat(p *Problem) (CheckResult, error) {
	pl, err := NoRematPlan(p)
	if err != nil {
		return CheckResult{}, err
	}
	res, err := Evaluate(p, pl)
	if err != nil {
		return CheckResult{}, fmt.Errorf("checkpoint-all fails Evaluate: %w", err)
	}
	return res, nil
}

// UncountedResident is the bytes of the graph inputs and parameters that
// the memory model leaves out of the peak (LowerOptions) but that occupy
// the device all the same.
func UncountedResident(g *ir.Graph, o LowerOptions) int64 {
	var n int64
	seen := map[*ir.Value]bool{}
	add := func(v *ir.Value) {
		if v == nil || seen[v] {
			return
		}
		seen[v] = true
		if b, ok := v.Type.Bytes(); ok {
			n += b
		}
	}
	if !o.CountInputs {
		for _, v := range g.Inputs {
			add(v)
		}
	}
	if !o.CountParams {
		for _, v := range g.Params {
			add(v)
		}
		if !o.ConstantNodes {
			for _, nd := range g.Nodes {
				if nd.Op == "Constant" && (nd.Domain == "" || nd.Domain == "ai.onnx") {
					for _, v := range nd.Outputs {
						add(v)
					}
				}
			}
		}
	}
	return n
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
