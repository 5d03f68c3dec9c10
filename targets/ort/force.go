package ort

import (
	"fmt"
	"slices"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

// Peak returns g's peak under Memory() in the order ONNX Runtime runs the
// model that exporting g with opts writes.
func Peak(g *ir.Graph, opts onnxexp.Options) (int64, error) {
	r, _, err := Simulate(g, opts)
	if err != nil {
		return 0, err
	}
	return r.PeakBytes, nil
}

// Simulate simulates g under Memory() in the order ONNX Runtime runs the
// model that exporting g with opts writes, with the buffers the
// exporter's helper nodes keep (Run.Holds), and returns the result and the
// order.
//
// A graph that ORT runs through inserted float32 Casts (NeedsLowering: a
// float16 graph) is simulated as ORT runs it: the result and the order
// are those of its lowered graph (Lower), whose nodes are not g's. Such a
// graph can be predicted only as written without helper nodes (no
// rematerialization, no order constraints): the helpers would read float16
// values that ORT then materializes besides their float32 forms, which the
// lowering does not model; that is an error.
func Simulate(g *ir.Graph, opts onnxexp.Options) (*memory.Result, []*ir.Node, error) {
	return simulateWith(g, opts, memoryFor(opts))
}

// DefaultSessionPeak is the peak of a session that runs the model
// exporting g with opts writes under ONNX Runtime's default options (the
// memory pattern on) over its runs: the larger of Simulate's and the same
// simulation under DefaultMemory(), the runs after the first.
func DefaultSessionPeak(g *ir.Graph, opts onnxexp.Options) (int64, error) {
	first, _, err := simulateWith(g, opts, memoryFor(opts))
	if err != nil {
		return 0, err
	}
	dm := DefaultMemory()
	dm.Shapeless = memoryFor(opts).Shapeless
	later, _, err := simulateWith(g, opts, dm)
	if err != nil {
		return 0, err
	}
	return max(first.PeakBytes, later.PeakBytes), nil
}

// simulateWith is Simulate under the memory options mo (Memory() or
// DefaultMemory()).
func simulateWith(g *ir.Graph, opts onnxexp.Options, mo memory.Options) (*memory.Result, []*ir.Node, error) {
	if NeedsLowering(g) {
		return simulateLowered(g, opts, mo)
	}
	run, err := Schedule(g, opts)
	if err != nil {
		return nil, nil, err
	}
	mo.Holds = func(n *ir.Node) []*ir.Value { return run.Holds[n] }
	r, err := memory.Simulate(g, run.Seq, mo)
	if err != nil {
		return nil, nil, err
	}
	return r, run.Seq, nil
}

// simulateLowered is Simulate for a graph that needs lowering.
func simulateLowered(g *ir.Graph, opts onnxexp.Options, mo memory.Options) (*memory.Result, []*ir.Node, error) {
	opts.RuntimeOrder = Order
	nodes, err := onnxexp.Written(g, opts)
	if err != nil {
		return nil, nil, err
	}
	var order []*ir.Node
	for i := range nodes {
		w := &nodes[i]
		switch {
		case w.Node != nil:
			order = append(order, w.Node)
		case !w.Constant():
			return nil, nil, fmt.Errorf("ort: %s runs float16 graphs through float32 Casts it inserts (targets/ort Lower); predicting its memory for a float16 graph written with rematerialization or order dependencies (node %q) is not supported; convert the model to float32 or compile for another target", Target{}.Describe(), w.Name)
		}
	}
	lw, err := lower(g, order)
	if err != nil {
		return nil, nil, err
	}
	r, err := memory.Simulate(lw.Graph, lw.Graph.Nodes, mo)
	if err != nil {
		return nil, nil, err
	}
	return r, lw.Graph.Nodes, nil
}

// orderResult is what forceOrder chose.
type orderResult struct {
	Constraints []remat.OrderConstraint
	// Peaks under Memory(): in plan (file) order, in ORT's order
	// without the constraints, and with them.
	PlanPeak, UnforcedPeak, Peak int64
}

// forceOrder chooses the order constraints (exporters/onnx Options.Order)
// for the export of the rewritten graph g with opts (targets.ForceOrder):
// ONNX Runtime runs its own depth-first order (Schedule), which can run a
// node long before the plan does. A constraint never takes the depbias
// form and never breaks a fusion (CanForceOrder); Constant nodes, which
// ORT folds, neither wait nor are waited for; views, which ORT may run
// anywhere, are not waited for (isSource). The greedy search runs from no
// constraints and, for a training graph whose constant cone ORT runs out
// of the plan's place, from coneOrder's too; the lower peak wins.
func forceOrder(g *ir.Graph, opts onnxexp.Options) (*orderResult, error) {
	plan, err := memory.Simulate(g, g.Nodes, memoryFor(opts))
	if err != nil {
		return nil, err
	}
	unforced, seq, err := Simulate(g, opts)
	if err != nil {
		return nil, err
	}
	best, err := forceFrom(g, opts, nil, plan.PeakBytes, unforced.PeakBytes)
	if err != nil {
		return nil, err
	}
	// coneOrder's constraints can raise the peak on their own (ORT's
	// search then takes other paths) and still be the better start: on
	// FCN8's 930 KiB plan they alone give 1,225,216 B, and with the one
	// constraint the search adds, 967,168 B (1,039,872 B from none).
	if cone := coneOrder(g, seq); cone != nil {
		r, err := forceFrom(g, opts, cone, plan.PeakBytes, unforced.PeakBytes)
		if err == nil && r.Peak < best.Peak {
			best = r
		}
	}
	best.PlanPeak, best.UnforcedPeak = plan.PeakBytes, unforced.PeakBytes
	return best, nil
}

// forceFrom runs targets.ForceOrder for g with the constraints base
// always written; base is kept only when the result is at least minGain
// below unforced, ORT's peak without constraints.
//
// The simulation is of level "disabled". At other levels the optimizers
// renumber nodes and so move ORT's order in ways it does not predict, and
// each dependency perturbs that too: constraints are kept only for a
// predicted gain of at least minGain (on the FCN8 training graph, two
// constraints that promised 768 B at "disabled" cost 4.6 KB at "all").
// The search simulates at most orderCandidates candidates per round for
// orderRounds rounds, so that it stays within seconds on graphs of
// thousands of nodes (each simulation exports and replays the whole
// graph); the bound is on work, not time, so the output stays
// deterministic.
func forceFrom(g *ir.Graph, opts onnxexp.Options, base []remat.OrderConstraint, planPeak, unforced int64) (*orderResult, error) {
	simulate := func(cons []remat.OrderConstraint) (*memory.Result, []*ir.Node, error) {
		o := opts
		o.Order = append(slices.Clip(base), cons...)
		return Simulate(g, o)
	}
	minGain := max(unforced/orderMinGainDiv, 2*memory.ArenaAlign)
	r, err := targets.ForceOrder(g, planPeak, targets.ForceOptions{
		Simulate: simulate,
		CanForce: onnxexp.CanForceOrder,
		IsSource: isSource,
		Skip: func(n *ir.Node) bool {
			return n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx")
		},
		MinGain:    minGain,
		Candidates: orderCandidates,
		Rounds:     orderRounds,
	})
	if err != nil {
		return nil, err
	}
	if base != nil && r.Peak > unforced-minGain {
		return &orderResult{Peak: unforced}, nil
	}
	return &orderResult{Constraints: append(slices.Clip(base), r.Constraints...), Peak: r.Peak}, nil
}

// orderCandidates and orderRounds bound forceOrder's search: the
// candidates simulated per round and the rounds.
const (
	orderCandidates = 64
	orderRounds     = 48
)

// orderMinGainDiv sets the least predicted gain for which forceOrder
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

// sinksLast returns opts with SinksLast set (exporters/onnx: the sinks
// written last, in reverse order) when that lowers g's peak under
// Memory() in the order ONNX Runtime runs the export. In a training
// graph the parameter gradients are sinks, and ORT's search would
// otherwise compute them only after the whole data-gradient chain,
// holding the activations they read (zoo U-Net at 64×64, batch 4: 3.35 MB
// → 2.75 MB predicted for the rewrite at a 70% budget; FCN8 1.67 → 1.29
// MB).
func sinksLast(g *ir.Graph, opts onnxexp.Options) onnxexp.Options {
	before, err := Peak(g, opts)
	if err != nil {
		return opts
	}
	last := opts
	last.SinksLast = true
	if after, err := Peak(g, last); err != nil || after >= before {
		return opts
	}
	return last
}
