package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
)

// parseKeep reads -keep: comma-separated names of nodes of g. An unknown
// name is an error that says how to list them.
func parseKeep(spec string, g *ir.Graph) (map[string]bool, error) {
	keep := map[string]bool{}
	if strings.TrimSpace(spec) == "" {
		return keep, nil
	}
	names := map[string]bool{}
	for _, n := range g.Nodes {
		names[n.Name] = true
	}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !names[name] {
			return nil, usagef("-keep %q: the graph has no node of that name (`remat-compile inspect` lists them)", name)
		}
		keep[name] = true
	}
	return keep, nil
}

// refineStep is one solve of the ONNX Runtime refinement, as -report
// lists it.
type refineStep struct {
	Solve int `json:"solve"`
	// KeptNodes are the nodes this solve was the first to keep (none for
	// the first solve, beyond -keep).
	KeptNodes       []string `json:"kept_nodes,omitempty"`
	PeakBytes       int64    `json:"peak_bytes,omitempty"`
	ORTPeakBytes    int64    `json:"ort_model_peak_bytes,omitempty"`
	OverheadPercent float64  `json:"overhead_percent"`
	Chosen          bool     `json:"chosen"`
	Note            string   `json:"note,omitempty"`
}

// ortRefiner steers the plan towards savings that ONNX Runtime's CPU
// allocator really makes.
//
// ORT's allocation planner does not return a dead buffer to the arena
// when a later value of the same element size and shape will take it: the
// buffer stays allocated in between (passes/memory, Options.Reuse). A
// recomputation therefore saves nothing under ORT where its value's
// buffer, or one of the same shape, waits across the peak for the
// recomputation itself to take it. U-Net's full-resolution activations are
// the example: their shape recurs only in the backward pass, so dropping
// them in the middle of the run frees nothing that ORT gives back. The
// solvers optimise the liveness model (Checkmate eq. 2–3) and cannot see
// this.
//
// The refiner checks each plan under memory.ORT() in the order ORT runs
// the export (forceORTOrder). When the predicted ORT peak keeps less than
// 80% of the plan's liveness saving (verify's bar, in proportion), it
// names the recomputations that do not pay at the ORT peak (heldAtPeak),
// marks them kept (remat.Options.Keep) and solves again on a fresh build
// of the graph, so that the solver looks for savings elsewhere. It stops
// when the bar is met, when nothing new is to be kept, after maxSolves
// extra solves, after timeLimit, or when the solver finds no plan with
// the new keeps; it returns the plan with the least predicted ORT peak
// (ties: the least overhead). The choice depends only on the plans, so it
// is as deterministic as the solver.
type ortRefiner struct {
	source    string
	ortBefore int64
	maxSolves int
	timeLimit time.Duration
	log       io.Writer
	rebuild   func() (*ir.Graph, error)
	solve     func(g *ir.Graph, keep map[string]bool) (*remat.Result, error)
}

func (r *ortRefiner) run(g *ir.Graph, res *remat.Result, keep map[string]bool) (*ir.Graph, *remat.Result, []refineStep, error) {
	keep = maps.Clone(keep)
	type cand struct {
		g    *ir.Graph
		res  *remat.Result
		ort  int64
		step int // its index in steps
	}
	var best *cand
	var steps []refineStep
	var added []string
	start := time.Now()
	for k := 0; ; k++ {
		ort, culprits, err := r.evaluate(g, res)
		if err != nil {
			return nil, nil, nil, err
		}
		steps = append(steps, refineStep{Solve: k, KeptNodes: added, PeakBytes: res.AfterPeakBytes, ORTPeakBytes: ort, OverheadPercent: res.OverheadPercent})
		if best == nil || ort < best.ort || ort == best.ort && res.OverheadSeconds < best.res.OverheadSeconds {
			best = &cand{g, res, ort, len(steps) - 1}
		}
		if r.enough(res, ort) {
			break
		}
		if k == 0 {
			fmt.Fprintf(r.log, "onnxruntime: the plan keeps %s of its predicted saving under ONNX Runtime's allocator (%s → %s); re-solving without the recomputations its planner would not free\n",
				keptShare(r.ortBefore, ort, res), formatBytes(r.ortBefore), formatBytes(ort))
		}
		added = added[:0:0]
		for _, name := range culprits {
			if !keep[name] {
				keep[name] = true
				added = append(added, name)
			}
		}
		switch {
		case k == r.maxSolves:
			steps[k].Note = fmt.Sprintf("stopped after %d re-solves (-ort-refine)", k)
		case time.Since(start) > r.timeLimit:
			steps[k].Note = "stopped: the refinement has used up -time-limit"
		case len(added) == 0:
			steps[k].Note = "stopped: no recomputation left that ORT's planner would not free at its peak"
		}
		if steps[k].Note != "" {
			break
		}
		g2, err := r.rebuild()
		var res2 *remat.Result
		if err == nil {
			res2, err = r.solve(g2, keep)
		}
		var ib *remat.InfeasibleBudgetError
		switch {
		case errors.As(err, &ib):
			steps = append(steps, refineStep{Solve: k + 1, KeptNodes: added, Note: "no plan within the budget with these nodes kept: " + err.Error()})
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			// Interrupted: the plans so far stand (the solvers are anytime).
			steps = append(steps, refineStep{Solve: k + 1, KeptNodes: added, Note: "interrupted: " + err.Error()})
		case err != nil:
			return nil, nil, nil, err
		}
		if err != nil {
			break
		}
		g, res = g2, res2
	}
	steps[best.step].Chosen = true
	if best.step > 0 {
		kept := 0
		for _, st := range steps[:best.step+1] {
			kept += len(st.KeptNodes)
		}
		fmt.Fprintf(r.log, "onnxruntime: re-solve %d of %d chosen, %d node(s) kept: %s predicted under ONNX Runtime's allocator\n", best.step, len(steps)-1, kept, formatBytes(best.ort))
	}
	return best.g, best.res, steps, nil
}

// enough reports whether the ORT-model peak ort keeps at least 80% of the
// plan's liveness saving, in proportion to the original's ORT peak.
func (r *ortRefiner) enough(res *remat.Result, ort int64) bool {
	if res.BeforePeakBytes <= 0 || res.AfterPeakBytes >= res.BeforePeakBytes {
		return true
	}
	want := 0.8 * float64(r.ortBefore) * float64(res.BeforePeakBytes-res.AfterPeakBytes) / float64(res.BeforePeakBytes)
	return float64(r.ortBefore-ort) >= want
}

// keptShare says which share of the plan's liveness saving the ORT-model
// peak ort keeps.
func keptShare(ortBefore, ort int64, res *remat.Result) string {
	want := float64(ortBefore) * float64(res.BeforePeakBytes-res.AfterPeakBytes) / float64(max(res.BeforePeakBytes, 1))
	if want <= 0 {
		return "all"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(ortBefore-ort)/want)
}

// evaluate returns the rewrite's peak under memory.ORT() in the order ORT
// runs its export (as orderAndExport writes it), and the names of the
// recomputed nodes that do not pay at that peak (heldAtPeak).
func (r *ortRefiner) evaluate(g *ir.Graph, res *remat.Result) (int64, []string, error) {
	opts := sinksLast(g, rematOptions(r.source, res, nil))
	ord, err := forceORTOrder(g, opts)
	if err != nil {
		return 0, nil, err
	}
	opts.Order = ord.Constraints
	sim, seq, err := ortSimulate(g, opts)
	if err != nil {
		return 0, nil, err
	}
	return sim.PeakBytes, heldAtPeak(g, seq, sim, res.Rewrite), nil
}

// heldAtPeak names, sorted, the recomputed nodes (their originals) whose
// recomputation saves nothing at the peak of sim, the simulation of
// sequence seq under memory.ORT():
//
//   - the original's output holds a buffer at the peak (ORT runs it, or a
//     reader of it, on the other side of the peak than the plan); or
//   - a buffer at the peak holds no live value but waits for a later
//     value of its element size and shape, and the recomputation is such
//     a value, its original run before the peak: dropping the original
//     across the peak freed a buffer that the planner keeps for the
//     recomputation (or for another value of the shape).
func heldAtPeak(g *ir.Graph, seq []*ir.Node, sim *memory.Result, rw *remat.RewriteResult) []string {
	if rw == nil || sim.PeakStep < 0 {
		return nil
	}
	pos := make(map[*ir.Node]int, len(seq))
	for i, n := range seq {
		pos[n] = i
	}
	lastRead := map[*ir.Value]int{}
	for i, n := range seq {
		for _, in := range n.Inputs {
			if in != nil {
				lastRead[in] = i
			}
		}
	}
	for _, o := range g.Outputs {
		lastRead[o] = len(seq) // read by the caller, after the run
	}
	recomputed := map[*ir.Node]bool{}
	for _, rc := range rw.Recomputes {
		recomputed[rc.Original] = true
	}
	held := map[string]bool{} // element size and shape of the buffers waiting at the peak
	names := map[string]bool{}
	for _, l := range sim.AtPeak {
		if l.Value == nil || l.Bytes == 0 {
			continue
		}
		if d := l.Value.Def; d != nil && recomputed[d] {
			names[d.Name] = true
		}
		if last, ok := lastRead[l.Value]; ok && last < sim.PeakStep {
			held[layoutKey(l.Value)] = true
		}
	}
	for _, rc := range rw.Recomputes {
		p, q := pos[rc.Original], pos[rc.Node]
		if p >= sim.PeakStep || q <= sim.PeakStep {
			continue
		}
		for _, o := range rc.Node.Outputs {
			if o != nil && held[layoutKey(o)] {
				names[rc.Original.Name] = true
			}
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// layoutKey is a value's element size and static shape, the key of ORT's
// buffer reuse ("" when it has none).
func layoutKey(v *ir.Value) string {
	dims, ok := v.Type.Dims()
	if !ok || len(dims) == 0 || v.Type.Kind != ir.KindTensor {
		return ""
	}
	return fmt.Sprint(v.Type.DType.Bits(), dims)
}
