package main

// The compile command, remat-compile's main one: read a model, choose
// which values to keep and which to recompute under a memory budget, and
// write the rewritten model.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/checkmate"
	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/profiles"
)

// defaultProfile is the device profile -profile defaults to: the
// V100-16GB of the papers (Checkmate, Chen et al.), so that predicted
// overheads compare with theirs. Its memory capacity is the default
// budget, which most inference models fit without rematerialization: give
// -budget for anything tighter.
const defaultProfile = "v100-16gb"

type compileOptions struct {
	load      loadOptions
	out       string
	budget    string
	solver    string
	profile   string
	timeLimit time.Duration
	report    string
	emitMILP  string
	// Training graphs (passes/autodiff): -train, -loss, -trainable,
	// -optimizer.
	train     bool
	loss      string
	trainable string
	optimizer string
	// keep names nodes never to recompute (-keep); ortRefine bounds the
	// extra solves of the ONNX Runtime refinement (-ort-refine, 0: off).
	keep      string
	ortRefine int
}

func compileCmd() *command {
	return &command{
		name:  "compile",
		usage: "model.onnx -o out.onnx [-budget 70%|512MiB] [-solver auto|NAME] [-profile NAME|file.yaml] [-time-limit 60s] [-report plan.json] [-emit-milp model.lp|.mps] [-train [-loss sum|mean|mse:TARGET|softmax-xent:LABEL] [-trainable all|NAME,...] [-optimizer sgd:LR]] [-keep NODE,...] [-ort-refine N] [-input-shape name=DIMS] [-dim sym=N] [-d check,dump]",
		short: "Choose which values to keep and which to recompute so that the model runs within a memory budget, and write the rewritten model (the default command: `remat-compile model.onnx -o out.onnx -budget 70%`).",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &compileOptions{}
			o.load.shapes.register(fs)
			fs.StringVar(&o.out, "o", "", "output `file` (required; never the input)")
			fs.StringVar(&o.budget, "budget", "", "memory `budget` for activations: bytes with a unit (512MiB, 1.5GB, 1000000) or a percentage of the peak without rematerialization (70%); default: the profile's memory capacity less the model's inputs and parameters")
			fs.StringVar(&o.solver, "solver", solvers.Default, "`solver` (see `remat-compile solvers`)")
			fs.StringVar(&o.profile, "profile", defaultProfile, "device profile: a built-in `name` ("+strings.Join(profiles.Builtins(), ", ")+") or a .yaml file; gives each node's cost and the default budget")
			fs.DurationVar(&o.timeLimit, "time-limit", 60*time.Second, "bound on the solver's `time`; it returns its best plan when the time is up")
			fs.StringVar(&o.report, "report", "", "write a JSON report of the plan to `file`: peaks, overhead, and every node's decision with its reason")
			fs.StringVar(&o.emitMILP, "emit-milp", "", "write the Checkmate MILP of the problem at the budget to `file` (.lp or .mps), for Gurobi, HiGHS or SCIP")
			fs.BoolVar(&o.train, "train", false, "rematerialize the training graph (forward, loss and backward, built in standard ONNX ops) instead of the inference graph; with -solver checkpoint-all, write the plain training graph")
			fs.StringVar(&o.loss, "loss", "sum", "with -train, the `loss`: sum, mean, mse:TARGET_INPUT or softmax-xent:LABEL_INPUT, each optionally :OUTPUT (default: the first graph output)")
			fs.StringVar(&o.trainable, "trainable", "all", "with -train, the `parameters` to differentiate: all (every floating-point initializer on a differentiable path) or NAME,NAME,...")
			fs.StringVar(&o.optimizer, "optimizer", "none", "with -train, `none` (outputs <param>_grad) or sgd:LR (outputs the updated parameters <param>_new)")
			fs.StringVar(&o.keep, "keep", "", "comma-separated `nodes` whose outputs the plan must never recompute (kept from their first computation to their last use)")
			fs.IntVar(&o.ortRefine, "ort-refine", 6, "when ONNX Runtime's allocator would keep less than 80% of the plan's predicted saving, re-solve up to `N` times, each time keeping the recomputed values that ORT's planner would hold at its peak anyway (0: off)")
			return func(ctx context.Context, args []string, io *Streams) error {
				if len(args) != 1 {
					return usagef("compile takes one model file, got %d arguments", len(args))
				}
				if o.out == "" {
					return usagef("compile needs -o out.onnx")
				}
				return runCompile(ctx, o, args[0], io)
			}
		},
	}
}

// compileReport is the JSON form of -report. Field names carry their
// units.
type compileReport struct {
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
	// Budget is -budget as given ("" for the default).
	Budget          string `json:"budget"`
	BudgetBytes     int64  `json:"budget_bytes"`
	MemoryModel     string `json:"memory_model"`
	BeforePeakBytes int64  `json:"before_peak_bytes"`
	// PeakFloorBytes is the largest working set of one node
	// (PeakFloorNode): no plan peaks lower.
	PeakFloorBytes       int64           `json:"peak_floor_bytes"`
	PeakFloorNode        string          `json:"peak_floor_node"`
	AfterPeakBytes       int64           `json:"after_peak_bytes"`
	PeakReductionPercent float64         `json:"peak_reduction_percent"`
	BaseComputeSeconds   float64         `json:"base_compute_seconds"`
	PlanComputeSeconds   float64         `json:"plan_compute_seconds"`
	OverheadSeconds      float64         `json:"overhead_seconds"`
	OverheadPercent      float64         `json:"overhead_percent"`
	Optimal              bool            `json:"optimal"`
	GapPercent           *float64        `json:"gap_percent"` // null when unknown
	LowerBoundSeconds    float64         `json:"lower_bound_seconds"`
	Recomputations       int             `json:"recomputations"`
	RecomputedNodes      int             `json:"recomputed_nodes"`
	TimeLimitSeconds     float64         `json:"time_limit_seconds"`
	SolveSeconds         float64         `json:"solve_seconds"`
	Attempts             []attemptReport `json:"attempts"`
	// ORTBeforePeakBytes and ORTAfterPeakBytes are the peaks of the
	// original and the rewrite under passes/memory's model of ONNX
	// Runtime's CPU allocator (memory.ORT: planner reuse, views, in-place
	// ops, arena chunks, workspace, parameters); 0 when not computed.
	// Both are simulated in the order ONNX Runtime runs the written
	// models (exporters/onnx ORTSchedule), not in file order.
	ORTBeforePeakBytes int64 `json:"ort_model_before_peak_bytes"`
	ORTAfterPeakBytes  int64 `json:"ort_model_after_peak_bytes"`
	// ORTPlanOrderPeakBytes is the rewrite's peak under the same model in
	// the plan's order, and ORTUnforcedPeakBytes in the order ORT would
	// run it without the order constraints; OrderConstraints counts the
	// constraints forceORTOrder added (exporters/onnx Options.Order).
	ORTPlanOrderPeakBytes int64 `json:"ort_model_plan_order_peak_bytes"`
	ORTUnforcedPeakBytes  int64 `json:"ort_model_unforced_peak_bytes"`
	OrderConstraints      int   `json:"order_constraints"`
	// OrderedNodes lists them as "NODE after SOURCE".
	OrderedNodes []string `json:"ordered_nodes"`
	// ORTRefinement lists the solves of the ONNX Runtime refinement
	// (ortRefiner), the first solve included; empty when it did not run.
	ORTRefinement []refineStep `json:"ort_refinement,omitempty"`
	Peak          peakReport   `json:"peak"`
	Nodes         []nodeReport `json:"nodes"`
}

// attemptReport is one solver of a portfolio.
type attemptReport struct {
	Solver         string   `json:"solver"`
	Status         string   `json:"status"`
	PeakBytes      int64    `json:"peak_bytes,omitempty"`
	CostSeconds    float64  `json:"cost_seconds,omitempty"`
	Optimal        bool     `json:"optimal"`
	GapPercent     *float64 `json:"gap_percent"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	Note           string   `json:"note,omitempty"`
}

// peakReport says where the plan peaks and what is resident then.
type peakReport struct {
	Step int          `json:"step"`
	Node string       `json:"node"`
	Live []liveReport `json:"live"`
}

type liveReport struct {
	Node  string `json:"node"`
	Bytes int64  `json:"bytes"`
}

// nodeReport is the decision for one node.
type nodeReport struct {
	Node           string   `json:"node"`
	Op             string   `json:"op"`
	Outputs        []string `json:"outputs"`
	Bytes          int64    `json:"bytes"`
	ComputeSeconds float64  `json:"compute_seconds"`
	CostSource     string   `json:"cost_source"`
	Recomputable   bool     `json:"recomputable"`
	// Decision is "kept" (computed once, held until its last use) or
	// "recomputed"; Computations counts how often the plan runs it.
	Decision     string `json:"decision"`
	Computations int    `json:"computations"`
	Why          string `json:"why"`
}

func runCompile(ctx context.Context, o *compileOptions, path string, st *Streams) error {
	budget, err := parseBudget(o.budget)
	if err != nil {
		return err
	}
	solver, ok := solvers.Lookup(o.solver)
	if !ok {
		return usagef("-solver %q: unknown solver; the solvers are %s (see `remat-compile solvers`)", o.solver, strings.Join(solvers.Names(), ", "))
	}
	if o.timeLimit <= 0 {
		return usagef("-time-limit %v: want a positive duration such as 60s", o.timeLimit)
	}
	milpFormat := ""
	if o.emitMILP != "" {
		switch strings.ToLower(filepath.Ext(o.emitMILP)) {
		case ".lp":
			milpFormat = "lp"
		case ".mps":
			milpFormat = "mps"
		default:
			return usagef("-emit-milp %q: want a file ending in .lp or .mps", o.emitMILP)
		}
	}
	var train *autodiff.Options
	if o.train {
		loss, err := autodiff.ParseLoss(o.loss)
		if err != nil {
			return usagef("-loss %q: %v", o.loss, err)
		}
		trainable, err := autodiff.ParseTrainable(o.trainable)
		if err != nil {
			return usagef("-trainable %q: %v", o.trainable, err)
		}
		opt, err := autodiff.ParseOptimizer(o.optimizer)
		if err != nil {
			return usagef("-optimizer %q: %v", o.optimizer, err)
		}
		train = &autodiff.Options{Loss: loss, Trainable: trainable, Optimizer: opt}
	} else {
		for name, v := range map[string]string{"loss": o.loss, "trainable": o.trainable, "optimizer": o.optimizer} {
			if def := map[string]string{"loss": "sum", "trainable": "all", "optimizer": "none"}[name]; v != def {
				return usagef("-%s applies to training graphs: add -train", name)
			}
		}
	}
	prof, err := profiles.Load(o.profile)
	if err != nil {
		return err
	}
	for _, out := range []string{o.out, o.report, o.emitMILP} {
		if out != "" && onnxexp.SamePath(out, path) {
			return fmt.Errorf("refusing to overwrite the input model %s: write the output to another path", path)
		}
	}

	o.load.requireStatic = true
	check, dump, err := o.load.shapes.debugFlags()
	if err != nil {
		return err
	}
	popts := passes.Options{Verify: check, File: filepath.Base(path)}
	if dump {
		popts.Dump, popts.DumpFunc = st.Err, irtext.Print
	}
	// build loads the model and, with -train, builds its training graph:
	// the budget's percentage, the peaks and the ORT model below are the
	// training graph's. The ONNX Runtime refinement builds it afresh for
	// each solve (the pass rewrites the graph it is given), quietly.
	build := func(warn io.Writer, popts passes.Options) (*ir.Graph, error) {
		g, _, err := loadModel(ctx, path, &o.load, warn)
		if err != nil {
			return nil, err
		}
		if train != nil {
			if _, err := passes.Run(ctx, g, []*passes.Pass{autodiff.NewPass(*train)}, popts); err != nil {
				return nil, err
			}
		}
		return g, nil
	}
	g, err := build(st.Err, popts)
	if err != nil {
		return err
	}
	keep, err := parseKeep(o.keep, g)
	if err != nil {
		return err
	}
	// ONNX Runtime's allocator, as passes/memory models it (views,
	// in-place ops, the planner's buffer reuse, the arena), before the
	// pass, in the order ORT runs the graph as written: compared below
	// with the same model of the rewrite.
	ortBefore, ortErr := ortPeak(g, onnxexp.Options{ValueInfo: true})
	if train != nil && ortErr == nil {
		// The plain training graph is ours to write too: it is written as
		// the rewrite is (sinksLast) and compared as written.
		ortBefore, ortErr = ortPeak(g, sinksLast(g, onnxexp.Options{ValueInfo: true}))
	}
	// solve runs the pass on g, no node of keep recomputed.
	solve := func(g *ir.Graph, keep map[string]bool, popts passes.Options) (*remat.Result, error) {
		res := &remat.Result{}
		pl := newProgressLine(st)
		pass := remat.NewPass(remat.Options{
			Solver: solver, Profile: prof, Budget: budget, TimeLimit: o.timeLimit,
			Progress: pl.report, Result: res,
			Keep: func(n *ir.Node) bool { return keep[n.Name] },
		})
		_, err := passes.Run(ctx, g, []*passes.Pass{pass}, popts)
		pl.done()
		return res, err
	}
	res, runErr := solve(g, keep, popts)

	// The MILP file is written whatever the solver found: it is how a user
	// takes an infeasible or slow problem to another solver.
	if o.emitMILP != "" && res.Problem != nil {
		if err := writeFileAtomic(o.emitMILP, func(w io.Writer) error { return writeMILP(w, res.Problem, milpFormat) }); err != nil {
			return fmt.Errorf("-emit-milp: %w", err)
		}
	}
	if runErr != nil {
		return compileError(runErr, budget, res, prof)
	}
	var refined []refineStep
	if ortErr != nil {
		ortBefore = 0
	} else if o.ortRefine > 0 && res.Recomputations > 0 {
		quiet := popts
		quiet.Dump = nil
		ref := ortRefiner{
			source: path, ortBefore: ortBefore, maxSolves: o.ortRefine, timeLimit: o.timeLimit, log: st.Err,
			rebuild: func() (*ir.Graph, error) { return build(io.Discard, quiet) },
			solve:   func(g *ir.Graph, keep map[string]bool) (*remat.Result, error) { return solve(g, keep, quiet) },
		}
		if g, res, refined, err = ref.run(g, res, keep); err != nil {
			return err
		}
	}
	// The order constraints that bring ORT's order of the rewrite closer
	// to the plan's, where that lowers the predicted peak.
	ord, err := orderAndExport(g, o.out, path, res, ortBefore)
	if err != nil {
		return err
	}
	r := buildReport(path, o, res)
	r.ORTRefinement = refined
	if ortErr == nil && ord != nil {
		r.ORTBeforePeakBytes, r.ORTAfterPeakBytes = ortBefore, ord.Peak
		r.ORTPlanOrderPeakBytes, r.ORTUnforcedPeakBytes = ord.PlanPeak, ord.UnforcedPeak
		r.OrderConstraints = len(ord.Constraints)
		for _, c := range ord.Constraints {
			r.OrderedNodes = append(r.OrderedNodes, c.Node.Name+" after "+c.After.Name)
		}
	}
	if o.report != "" {
		if err := writeFileAtomic(o.report, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}); err != nil {
			return fmt.Errorf("-report: %w", err)
		}
	}
	return printCompile(st.Out, r, res, budget)
}

// orderAndExport writes the rewritten graph g to out as compile does: with
// the sinks last where ONNX Runtime then runs it with less memory
// (sinksLast), with the order
// constraints that bring ORT's order closer to the plan's where that
// lowers the predicted peak (forceORTOrder; nil when nothing is
// recomputed), value_info for every intermediate (so that ONNX Runtime
// plans with static shapes, as internal/memcheck found), the rewriting
// exporter's order-forcing dependencies, and the plan in the metadata that
// verify reads, with the peak predicted for ORT's allocator and, when
// ortBefore is positive, the original's.
func orderAndExport(g *ir.Graph, out, source string, res *remat.Result, ortBefore int64) (*orderResult, error) {
	opts := sinksLast(g, rematOptions(source, res, nil))
	var ord *orderResult
	var err error
	if res.Rewrite != nil && res.Recomputations > 0 {
		if ord, err = forceORTOrder(g, opts); err != nil {
			return nil, err
		}
		opts.Order = ord.Constraints
		opts.RematInfo.ORTPredictedPeakBytes = ord.Peak
	} else if opts.RematInfo.ORTPredictedPeakBytes, err = ortPeak(g, opts); err != nil {
		opts.RematInfo.ORTPredictedPeakBytes = 0
	}
	if opts.RematInfo.ORTPredictedPeakBytes > 0 {
		opts.RematInfo.ORTOriginalPeakBytes = max(ortBefore, 0)
	}
	return ord, onnxexp.ExportFile(g, out, opts)
}

// rematOptions are the export options of orderAndExport.
func rematOptions(source string, res *remat.Result, order []onnxexp.OrderConstraint) onnxexp.Options {
	return onnxexp.Options{
		ValueInfo: true,
		Source:    source,
		Remat:     res.Rewrite,
		RematInfo: onnxexp.RematInfo{
			Solver:             planSolver(res),
			BudgetBytes:        res.BudgetBytes,
			PredictedPeakBytes: res.AfterPeakBytes,
			OriginalPeakBytes:  res.BeforePeakBytes,
		},
		Order: order,
	}
}

// ortPeak returns g's peak under memory.ORT() in the order ONNX Runtime
// runs the model that exporting g with opts writes.
func ortPeak(g *ir.Graph, opts onnxexp.Options) (int64, error) {
	r, _, err := ortSimulate(g, opts)
	if err != nil {
		return 0, err
	}
	return r.PeakBytes, nil
}

// ortSimulate simulates g under memory.ORT() in the order ONNX Runtime
// runs the model that exporting g with opts writes, with the buffers the
// exporter's helper nodes keep (exporters/onnx ORTRun), and returns the
// result and the order.
func ortSimulate(g *ir.Graph, opts onnxexp.Options) (*memory.Result, []*ir.Node, error) {
	run, err := onnxexp.ORTRun(g, opts)
	if err != nil {
		return nil, nil, err
	}
	mo := memory.ORT()
	mo.Holds = func(n *ir.Node) []*ir.Value { return run.Holds[n] }
	r, err := memory.Simulate(g, run.Seq, mo)
	if err != nil {
		return nil, nil, err
	}
	return r, run.Seq, nil
}

// orderResult is what forceORTOrder chose.
type orderResult struct {
	Constraints []onnxexp.OrderConstraint
	// Peaks under memory.ORT(): in plan (file) order, in ORT's order
	// without the constraints, and with them.
	PlanPeak, UnforcedPeak, Peak int64
}

// forceORTOrder chooses the order constraints (exporters/onnx
// Options.Order) for the export of the rewritten graph g with opts. ONNX
// Runtime runs its own depth-first order (exporters/onnx ORTSchedule),
// which can run a node long before the plan does and keep its output, or
// what it reads, live across the gap the plan meant to free. Greedily,
// while the peak under memory.ORT() in ORT's order exceeds the peak in
// the plan's order: among the nodes ORT runs before their plan
// predecessor (the nearest earlier node of the plan that is no Constant
// and no view, and has a tensor output) and that a constraint can hold
// back (CanForceOrder: no depbias, no broken fusion), take the one whose
// constraint "after its plan predecessor" lowers the predicted ORT-order
// peak most, and stop when none lowers it. Each node gets at most one
// constraint, so the loop ends.
func forceORTOrder(g *ir.Graph, opts onnxexp.Options) (*orderResult, error) {
	plan, err := memory.Simulate(g, g.Nodes, memory.ORT())
	if err != nil {
		return nil, err
	}
	// score simulates the export with constraints cons: the peak, the
	// excess (the bytes above the plan-order peak, summed over the steps)
	// and ORT's order.
	score := func(cons []onnxexp.OrderConstraint) (int64, int64, []*ir.Node, error) {
		o := opts
		o.Order = cons
		r, seq, err := ortSimulate(g, o)
		if err != nil {
			return 0, 0, nil, err
		}
		var excess int64
		for _, d := range r.During {
			excess += max(0, d-plan.PeakBytes)
		}
		return r.PeakBytes, excess, seq, nil
	}
	peak, excess, seq, err := score(nil)
	if err != nil {
		return nil, err
	}
	res := &orderResult{PlanPeak: plan.PeakBytes, UnforcedPeak: peak, Peak: peak}
	// pred[n] is n's plan predecessor, the node a constraint holds n
	// behind.
	pred := map[*ir.Node]*ir.Node{}
	var last *ir.Node
	for _, n := range g.Nodes {
		if n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx") {
			continue
		}
		if last != nil {
			pred[n] = last
		}
		if isSource(n) {
			last = n
		}
	}
	// The simulation is of level "disabled". At other levels the
	// optimizers renumber nodes and so move ORT's order in ways it does
	// not predict, and each dependency perturbs that too: constraints are
	// kept only for a predicted gain of at least minGain (on the FCN8
	// training graph, two constraints that promised 768 B at "disabled"
	// cost 4.6 KB at "all").
	minGain := max(res.UnforcedPeak/orderMinGainDiv, 2*memory.ArenaAlign)
	done := map[*ir.Node]bool{}
	var cons []onnxexp.OrderConstraint
	rounds := 0
	for peak > res.PlanPeak {
		pos := make(map[*ir.Node]int, len(seq))
		for i, n := range seq {
			pos[n] = i
		}
		// The candidates, most promising first: the bytes a node
		// outputs times how far ahead of its plan predecessor ORT runs
		// it. Only the first orderCandidates are simulated each round,
		// and at most orderRounds rounds run, so that the search stays
		// within seconds on graphs of thousands of nodes (each simulation
		// exports and replays the whole graph); the bound is on work, not
		// time, so the output stays deterministic.
		type cand struct {
			n, s  *ir.Node
			score int64
		}
		var cands []cand
		for _, n := range g.Nodes {
			s := pred[n]
			if s == nil || done[n] || pos[n] > pos[s] || !onnxexp.CanForceOrder(n) {
				continue
			}
			var out int64
			for _, o := range n.Outputs {
				if o != nil {
					if b, ok := o.Type.Bytes(); ok {
						out += b
					}
				}
			}
			cands = append(cands, cand{n, s, out * int64(pos[s]-pos[n])})
		}
		slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
		cands = cands[:min(len(cands), orderCandidates)]
		if rounds++; rounds > orderRounds {
			break
		}
		var best onnxexp.OrderConstraint
		bestPeak, bestExcess, bestSeq := peak, excess, seq
		for _, cd := range cands {
			c := onnxexp.OrderConstraint{Node: cd.n, After: cd.s}
			p, e, q, err := score(append(slices.Clip(cons), c))
			if err != nil {
				continue // the exporter cannot place it (a depbias in the way)
			}
			if p < bestPeak || p == bestPeak && e < bestExcess {
				best, bestPeak, bestExcess, bestSeq = c, p, e, q
			}
		}
		if best.Node == nil {
			break
		}
		done[best.Node] = true
		cons = append(cons, best)
		if bestPeak <= res.Peak-minGain {
			// Keep the constraints up to the last that lowered the peak
			// by minGain; those after it lowered only the excess or the
			// peak by less.
			res.Constraints, res.Peak = slices.Clone(cons), bestPeak
		}
		peak, excess, seq = bestPeak, bestExcess, bestSeq
	}
	return res, nil
}

// orderCandidates and orderRounds bound forceORTOrder's search: the
// candidates simulated per round and the rounds.
const (
	orderCandidates = 64
	orderRounds     = 48
)

// orderMinGainDiv sets the least predicted gain for which forceORTOrder
// keeps order constraints: 1/200 (0.5%) of the unforced peak.
const orderMinGainDiv = 200

// isSource reports whether an order constraint may hold a node behind n:
// n runs as a node of its own in ORT (no Constant), computes something (no
// view, which ORT may run anywhere) and has a tensor output to depend on.
func isSource(n *ir.Node) bool {
	if info := n.Info(); info != nil && info.Flags&ir.Alias != 0 {
		return false
	}
	for _, o := range n.Outputs {
		if o != nil && o.Type.Kind == ir.KindTensor {
			return true
		}
	}
	return false
}

// planSolver names the solver of the plan: "checkmate-milp", or "auto
// (checkmate-milp)" when a portfolio chose it.
func planSolver(res *remat.Result) string {
	if res.PlanSolver == "" || res.PlanSolver == res.Solver {
		return res.Solver
	}
	return res.Solver + " (" + res.PlanSolver + ")"
}

// writeMILP writes Checkmate's MILP of p, at p's budget, as an LP or MPS
// file.
func writeMILP(w io.Writer, p *remat.Problem, format string) error {
	return checkmate.WriteModel(w, p, format)
}

// compileError turns the pass's error into the command's: an infeasible
// budget says the smallest peak reached, by whom, and a budget to try.
func compileError(err error, budget remat.Budget, res *remat.Result, prof *profiles.Profile) error {
	var ie *remat.InfeasibleBudgetError
	if !errors.As(err, &ie) {
		return err
	}
	var b strings.Builder
	have := describeBudget(budget, ie.HaveBytes, prof.Device.Name)
	switch {
	case ie.Proven:
		fmt.Fprintf(&b, "remat-compile: budget %s is below the smallest peak possible, %s (proved by %s)", have, remat.FormatBytes(ie.NeedBytes), ie.By)
	case len(ie.Attempts) > 0:
		fmt.Fprintf(&b, "remat-compile: budget %s is below the smallest peak any solver reached, %s (%s)", have, remat.FormatBytes(ie.NeedBytes), ie.By)
	default:
		fmt.Fprintf(&b, "remat-compile: budget %s is below the smallest peak %s reached, %s", have, ie.Solver, remat.FormatBytes(ie.NeedBytes))
	}
	if ie.FloorBytes > 0 && ie.NeedBytes == ie.FloorBytes {
		fmt.Fprintf(&b, "; no plan can peak lower: node %s alone needs %s for its inputs and outputs", ie.FloorNode, remat.FormatBytes(ie.FloorBytes))
	}
	fmt.Fprintf(&b, "; try -budget %s", suggestBudget(ie.NeedBytes))
	if p := suggestPercent(ie.NeedBytes, ie.NoRematPeakBytes); p != "" {
		fmt.Fprintf(&b, " (or -budget %s of the no-remat peak, %s)", p, remat.FormatBytes(ie.NoRematPeakBytes))
	}
	var per []string
	for _, a := range ie.Attempts {
		switch {
		case a.PeakBytes > 0:
			per = append(per, fmt.Sprintf("%s %s", a.Solver, remat.FormatBytes(a.PeakBytes)))
		default:
			per = append(per, fmt.Sprintf("%s %s", a.Solver, a.Status))
		}
	}
	if len(per) > 1 {
		fmt.Fprintf(&b, "\nsmallest peak per solver: %s", strings.Join(per, ", "))
	}
	return errors.New(b.String())
}

func buildReport(path string, o *compileOptions, res *remat.Result) *compileReport {
	r := &compileReport{
		Model: filepath.Base(path), Output: o.out, Profile: res.Profile, CostSources: res.CostSources,
		Solver: res.Solver, PlanSolver: res.PlanSolver, Budget: o.budget, BudgetBytes: res.BudgetBytes,
		MemoryModel:     "liveness: activations allocated when computed and freed after their last use; inputs and parameters not counted",
		BeforePeakBytes: res.BeforePeakBytes, AfterPeakBytes: res.AfterPeakBytes,
		PeakFloorBytes: res.FloorBytes, PeakFloorNode: res.FloorNode,
		BaseComputeSeconds: res.BaseSeconds, PlanComputeSeconds: res.PlanSeconds,
		OverheadSeconds: res.OverheadSeconds, OverheadPercent: res.OverheadPercent,
		Optimal: res.Optimal, GapPercent: percentOrNil(res.Gap), LowerBoundSeconds: res.LowerBoundSeconds,
		Recomputations: res.Recomputations, RecomputedNodes: res.RecomputedNodes,
		TimeLimitSeconds: o.timeLimit.Seconds(), SolveSeconds: res.SolveSeconds,
		Attempts: []attemptReport{}, Nodes: []nodeReport{},
	}
	if res.BeforePeakBytes > 0 {
		r.PeakReductionPercent = 100 * float64(res.BeforePeakBytes-res.AfterPeakBytes) / float64(res.BeforePeakBytes)
	}
	for _, a := range res.Attempts {
		r.Attempts = append(r.Attempts, attemptReport{
			Solver: a.Solver, Status: a.Status, PeakBytes: a.PeakBytes, CostSeconds: a.CostSeconds,
			Optimal: a.Optimal, GapPercent: percentOrNil(a.Gap), ElapsedSeconds: a.ElapsedSeconds, Note: a.Note,
		})
	}
	c := res.Check
	r.Peak = peakReport{Step: c.PeakStep, Live: []liveReport{}}
	if c.PeakNode >= 0 {
		r.Peak.Node = res.Problem.Name(c.PeakNode)
	}
	for _, l := range c.Live {
		r.Peak.Live = append(r.Peak.Live, liveReport{Node: res.Problem.Name(int(l.Node)), Bytes: res.Problem.PartBytes(int(l.Node), int(l.Index))})
	}
	r.CostSecondsBySource, r.OverheadSecondsBySource = map[string]float64{}, map[string]float64{}
	for _, d := range res.Decisions {
		r.CostSecondsBySource[d.CostSource] += d.Seconds
		if d.Computations > 1 {
			r.OverheadSecondsBySource[d.CostSource] += float64(d.Computations-1) * d.Seconds
		}
		nr := nodeReport{
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

func percentOrNil(gap float64) *float64 {
	if math.IsInf(gap, 0) || math.IsNaN(gap) {
		return nil
	}
	p := 100 * gap
	return &p
}

func printCompile(w io.Writer, r *compileReport, res *remat.Result, budget remat.Budget) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model:\t%s → %s\n", r.Model, r.Output)
	fmt.Fprintf(tw, "budget:\t%s\n", describeBudget(budget, r.BudgetBytes, r.Profile))
	fmt.Fprintf(tw, "peak before:\t%s (no rematerialization)\n", formatBytes(r.BeforePeakBytes))
	fmt.Fprintf(tw, "peak after:\t%s (%.1f%% less)\n", formatBytes(r.AfterPeakBytes), r.PeakReductionPercent)
	fmt.Fprintf(tw, "overhead:\t%+.2f%% predicted compute (%s of %s, %s)\n",
		r.OverheadPercent, formatSeconds(r.OverheadSeconds), formatSeconds(r.BaseComputeSeconds), describeSources(r.Profile, r.CostSources, r.CostSecondsBySource))
	fmt.Fprintf(tw, "recomputed:\t%d nodes, %d recomputations\n", r.RecomputedNodes, r.Recomputations)
	solver := r.Solver
	if r.PlanSolver != "" && r.PlanSolver != r.Solver {
		solver += " (plan by " + r.PlanSolver + ")"
	}
	fmt.Fprintf(tw, "solver:\t%s, %s in %.2fs\n", solver, describeOptimality(res), r.SolveSeconds)
	if r.ORTBeforePeakBytes > 0 && r.Recomputations > 0 {
		fmt.Fprintf(tw, "onnxruntime:\t%s → %s predicted for ONNX Runtime's CPU allocator (planner reuse, arena, parameters) in the order it runs the models\n",
			formatBytes(r.ORTBeforePeakBytes), formatBytes(r.ORTAfterPeakBytes))
		fmt.Fprintf(tw, "order:\t%d constraint(s) forced (%s in ORT's own order, %s in the plan's)\n",
			r.OrderConstraints, formatBytes(r.ORTUnforcedPeakBytes), formatBytes(r.ORTPlanOrderPeakBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.ORTBeforePeakBytes > 0 && r.Recomputations > 0 && r.ORTAfterPeakBytes >= r.ORTBeforePeakBytes {
		// The plan is right under the liveness model, but ORT's planner
		// hands a recomputation the buffer its original freed (same
		// shape), which then stays allocated across the gap the plan
		// meant to free, or ORT's own execution order loses the gain.
		fmt.Fprintf(w, "warning: ONNX Runtime would not lower this model's peak (%s → %s under its allocator's model, in the order it runs the models; %s in the plan's order): its planner gives each recomputation the buffer its original freed, which stays allocated in between, or its execution order differs from the plan's; other runtimes may gain, but for ONNX Runtime try another -budget or -solver, or keep the original model\n",
			formatBytes(r.ORTBeforePeakBytes), formatBytes(r.ORTAfterPeakBytes), formatBytes(r.ORTPlanOrderPeakBytes))
	}
	return nil
}

func describeOptimality(res *remat.Result) string {
	switch {
	case res.Optimal:
		return "optimal"
	case math.IsInf(res.Gap, 0) || math.IsNaN(res.Gap):
		return "optimality unknown"
	}
	return fmt.Sprintf("gap %.2f%% (lower bound %s)", 100*res.Gap, formatSeconds(res.LowerBoundSeconds))
}

// describeSources says where the costs come from: "v100-16gb datasheet
// costs", or with several sources their seconds and node counts: "costs
// from dev: 1.07 ms measured on 770 nodes, 1.29 ms fitted on 1734 nodes".
func describeSources(profile string, src map[string]int, secs map[string]float64) string {
	keys := sortedKeys(src)
	order := []string{profiles.SourceMeasured, profiles.SourceFitted, profiles.SourceDatasheet}
	slices.SortStableFunc(keys, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	if len(keys) == 1 {
		return profile + " " + keys[0] + " costs"
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s on %d nodes", formatSeconds(secs[k]), k, src[k]))
	}
	return "costs from " + profile + ": " + strings.Join(parts, ", ")
}

// formatSeconds prints a duration in seconds with an SI prefix.
func formatSeconds(s float64) string {
	switch a := math.Abs(s); {
	case a == 0:
		return "0 s"
	case a < 1e-6:
		return fmt.Sprintf("%.3g ns", s*1e9)
	case a < 1e-3:
		return fmt.Sprintf("%.3g µs", s*1e6)
	case a < 1:
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.3g s", s)
}

// writeFileAtomic writes a file through a temporary file in its directory
// renamed into place: never a partial file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// progressLine draws the solver's progress on stderr, on one line
// rewritten in place, only when stderr is a terminal.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	last  time.Time
	drawn bool
}

func newProgressLine(io *Streams) *progressLine {
	return &progressLine{w: io.Err, on: io.ErrTTY}
}

// report is the pass's Progress callback (nil-safe to pass when off).
func (pl *progressLine) report(p remat.Progress) {
	if !pl.on {
		return
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	now := time.Now()
	if pl.drawn && now.Sub(pl.last) < 100*time.Millisecond {
		return
	}
	pl.last, pl.drawn = now, true
	inc, bound, gap := "-", "-", "-"
	if !math.IsInf(p.Incumbent, 0) {
		inc = formatSeconds(p.Incumbent)
	}
	if p.Bound > 0 && !math.IsInf(p.Bound, 0) {
		bound = formatSeconds(p.Bound)
	}
	if !math.IsInf(p.Gap, 0) {
		gap = fmt.Sprintf("%.2f%%", 100*p.Gap)
	}
	line := fmt.Sprintf("solving %5.1fs  cost %s  bound %s  gap %s  %s", p.Elapsed, inc, bound, gap, p.Note)
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	fmt.Fprintf(pl.w, "\r\033[K%s", line)
}

// done clears the line.
func (pl *progressLine) done() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.on && pl.drawn {
		fmt.Fprint(pl.w, "\r\033[K")
	}
	pl.drawn = false
}

// sinksLast returns opts with SinksLast set (exporters/onnx: the sinks
// written last, in reverse order) when that lowers g's peak under
// memory.ORT() in the order ONNX Runtime runs the export. In a training
// graph the parameter gradients are sinks, and ORT's search would
// otherwise compute them only after the whole data-gradient chain,
// holding the activations they read (zoo U-Net at 64×64, batch 4: 3.35 MB
// → 2.75 MB predicted for the rewrite at a 70% budget; FCN8 1.67 → 1.29
// MB).
func sinksLast(g *ir.Graph, opts onnxexp.Options) onnxexp.Options {
	before, err := ortPeak(g, opts)
	if err != nil {
		return opts
	}
	last := opts
	last.SinksLast = true
	if after, err := ortPeak(g, last); err != nil || after >= before {
		return opts
	}
	return last
}
