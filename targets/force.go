package targets

import (
	"cmp"
	"slices"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
)

// A runtime that orders a graph itself (ONNX Runtime's depth-first
// search, TensorFlow.js's Kahn over a LIFO stack) can run a node long
// before the plan does and keep its output, or what it reads, live across
// the gap the plan meant to free. ForceOrder chooses order constraints
// ("node runs after its plan predecessor") that bring the runtime's order
// closer to the plan's where that lowers the runtime's predicted peak;
// each target forces them in its format's way (exporters/onnx: fake data
// dependencies; exporters/graphdef: NoOp gates).

// ForceOptions configure ForceOrder with what the target knows.
type ForceOptions struct {
	// Simulate predicts the runtime's memory when the graph is written with
	// the constraints cons, and returns the runtime's order. An error means
	// the constraints cannot be written; a candidate that gives one is
	// skipped.
	Simulate func(cons []remat.OrderConstraint) (*memory.Result, []*ir.Node, error)
	// CanForce reports whether a constraint can hold n back; nil means
	// always.
	CanForce func(n *ir.Node) bool
	// IsSource reports whether a constraint may hold a node behind n
	// (n runs as a node of its own and has an output to wait for).
	IsSource func(n *ir.Node) bool
	// Skip reports nodes that have no plan predecessor and are no source
	// (ONNX Constants, which ONNX Runtime folds); nil means none.
	Skip func(n *ir.Node) bool
	// MinGain is the least predicted gain for which constraints are kept.
	MinGain int64
	// Latest also tries to hold a node behind its latest plan
	// predecessor: of the sources the plan runs before it, the one the
	// runtime runs last, when that is another than its plan predecessor
	// and the runtime runs it after the node. A runtime that dives depth
	// first (TensorFlow.js's LIFO stack) can run a node after its plan
	// predecessor and still long before a node the plan runs earlier,
	// which then holds its inputs across the dive; holding the node
	// behind its plan predecessor does not reach that.
	Latest bool
	// Candidates and Rounds bound the search (0: 64 and 48): the
	// candidates simulated per round and the rounds.
	Candidates, Rounds int
}

// ForceResult is what ForceOrder chose.
type ForceResult struct {
	Constraints []remat.OrderConstraint
	// UnforcedPeak is the runtime's peak without constraints, Peak with
	// them.
	UnforcedPeak, Peak int64
}

// ForceOrder chooses order constraints for g, whose order (g.Nodes) is the
// plan's and whose peak in that order is planPeak. Greedily, while the
// runtime's predicted peak exceeds planPeak: among the nodes the runtime
// runs before their plan predecessor (the nearest earlier source in g's
// order) and that a constraint can hold back, take the one whose
// constraint "after its plan predecessor" lowers the predicted peak most
// (ties: the excess, the bytes above planPeak summed over the steps), and
// stop when none lowers it (with Latest, "after its latest plan
// predecessor" is a candidate too). Constraints are kept
// up to the last that lowered the peak by MinGain. Each node gets at most
// one constraint, and the candidates and rounds are bounded, so the search
// ends, deterministically.
func ForceOrder(g *ir.Graph, planPeak int64, o ForceOptions) (*ForceResult, error) {
	if o.Candidates <= 0 {
		o.Candidates = 64
	}
	if o.Rounds <= 0 {
		o.Rounds = 48
	}
	score := func(cons []remat.OrderConstraint) (int64, int64, []*ir.Node, error) {
		r, seq, err := o.Simulate(cons)
		if err != nil {
			return 0, 0, nil, err
		}
		var excess int64
		for _, d := range r.During {
			excess += max(0, d-planPeak)
		}
		return r.PeakBytes, excess, seq, nil
	}
	peak, excess, seq, err := score(nil)
	if err != nil {
		return nil, err
	}
	res := &ForceResult{UnforcedPeak: peak, Peak: peak}
	// pred[n] is n's plan predecessor, the node a constraint holds n
	// behind.
	pred := map[*ir.Node]*ir.Node{}
	var last *ir.Node
	for _, n := range g.Nodes {
		if o.Skip != nil && o.Skip(n) {
			continue
		}
		if last != nil {
			pred[n] = last
		}
		if o.IsSource(n) {
			last = n
		}
	}
	done := map[*ir.Node]bool{}
	var cons []remat.OrderConstraint
	rounds := 0
	for peak > planPeak {
		pos := make(map[*ir.Node]int, len(seq))
		for i, n := range seq {
			pos[n] = i
		}
		// The candidates, most promising first: the bytes a node outputs
		// times how far ahead of its plan predecessor the runtime runs
		// it.
		type cand struct {
			n, s  *ir.Node
			score int64
		}
		var cands []cand
		var latest *ir.Node // the source of g's order so far that the runtime runs last
		for _, n := range g.Nodes {
			s := pred[n]
			pn, inN := pos[n]
			l := latest
			if o.IsSource(n) && inN && (o.Skip == nil || !o.Skip(n)) && (latest == nil || pn > pos[latest]) {
				latest = n
			}
			if s == nil || done[n] || !inN || o.CanForce != nil && !o.CanForce(n) {
				continue
			}
			var out int64
			for _, v := range n.Outputs {
				if v != nil {
					if b, ok := v.Type.Bytes(); ok {
						out += b
					}
				}
			}
			if ps, inS := pos[s]; inS && pn < ps {
				cands = append(cands, cand{n, s, out * int64(ps-pn)})
			}
			if o.Latest && l != nil && l != s && pos[l] > pn {
				cands = append(cands, cand{n, l, out * int64(pos[l]-pn)})
			}
		}
		slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
		cands = cands[:min(len(cands), o.Candidates)]
		if rounds++; rounds > o.Rounds {
			break
		}
		var best remat.OrderConstraint
		bestPeak, bestExcess, bestSeq := peak, excess, seq
		for _, cd := range cands {
			c := remat.OrderConstraint{Node: cd.n, After: cd.s}
			p, e, q, err := score(append(slices.Clip(cons), c))
			if err != nil {
				continue
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
		if bestPeak <= res.Peak-o.MinGain {
			res.Constraints, res.Peak = slices.Clone(cons), bestPeak
		}
		peak, excess, seq = bestPeak, bestExcess, bestSeq
	}
	return res, nil
}
