package twremat

// schedule.go runs Algorithm 1 on the memoized separator hierarchy and
// turns the schedule it emits into frontier-advancing stages.

import (
	"context"
	"errors"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// errTooLong stops a run whose schedule exceeds the length limit.
var errTooLong = errors.New("twremat: the schedule exceeds the length limit")

// runner is one run of TWRemat(k).
type runner struct {
	ctx   context.Context
	p     *remat.Problem
	h     *hierarchy
	k     int32
	limit int64
	// emitted counts the computations of the schedule σ so far.
	emitted int64
	// pinned marks the nodes that may not be recomputed and have been
	// computed: they stay resident, so no call needs to compute them or
	// their ancestors again.
	pinned []bool
	mark   []uint32
	stamp  uint32
	conv   converter
	// sigma, when not nil, records σ itself (for tests).
	sigma *[]int32
}

// run emits TWRemat(k)'s schedule for the graph outputs (Algorithm 1's
// top-level call with S the outputs) and returns it as stages for
// remat.ScheduleStages, with the length of σ.
func run(ctx context.Context, p *remat.Problem, h *hierarchy, k int, limit int64) ([][]int32, int64, error) {
	n := p.N()
	r := &runner{
		ctx: ctx, p: p, h: h, k: int32(min(k, 1<<30)), limit: limit,
		pinned: make([]bool, n),
		mark:   make([]uint32, n),
		conv:   newConverter(p),
	}
	if n > 0 && len(p.Outputs) > 0 {
		if err := r.tw(0, p.Outputs); err != nil {
			return nil, r.emitted, err
		}
	}
	return r.conv.finish(), r.emitted, nil
}

func (r *runner) newStamp() uint32 {
	r.stamp++
	if r.stamp == 0 {
		clear(r.mark)
		r.stamp = 1
	}
	return r.stamp
}

// need returns, sorted, the nodes of component c that computing S takes:
// S and its ancestors along paths inside c's vertex set V'. Predecessors
// outside V' are resident when the call runs (Lemma 4's proof), and
// pinned nodes are resident for good, so the search stops at both.
func (r *runner) need(c int32, S []int32) []int32 {
	s := r.newStamp()
	var out []int32
	for _, x := range S {
		if r.mark[x] != s && !r.pinned[x] {
			r.mark[x] = s
			out = append(out, x)
		}
	}
	for q := 0; q < len(out); q++ {
		for _, d := range r.p.Deps[out[q]] {
			if r.mark[d] != s && !r.pinned[d] && r.h.inside(c, d) {
				r.mark[d] = s
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// tw is the function TWRemat(G, V', (X', T'), S) of Algorithm 1 for
// component c (which fixes V' and (X', T')), with the cut-off of
// TWRemat(k) (§4.3): a component of fewer than k bags is a base case,
// computed in topological order.
//
// Two refinements, both of which only drop computations: only the nodes
// S needs are computed (Algorithm 1 computes every node of X*, needed or
// not; the proof of Lemma 4 only uses the needed ones, so the schedule
// stays valid and Theorem 5's bounds still hold), and pinned nodes are
// never recomputed.
func (r *runner) tw(c int32, S []int32) error {
	need := r.need(c, S)
	if len(need) == 0 {
		return nil
	}
	comp := &r.h.comps[c]
	if comp.bags < r.k || len(comp.kids) == 0 {
		for _, x := range need {
			if err := r.emit(x); err != nil {
				return err
			}
		}
		return nil
	}
	// For each needed separator node v in topological order: compute
	// its inputs in each component, then v.
	for _, v := range need {
		if r.h.owner[v] != c {
			continue
		}
		if err := r.inKids(c, r.p.Deps[v]); err != nil {
			return err
		}
		if err := r.emit(v); err != nil {
			return err
		}
	}
	// Then the rest of S, component by component.
	return r.inKids(c, S)
}

// inKids makes the recursive calls for the nodes of list (sorted) that
// lie in c's components: one call per component with the nodes in it, the
// components taken in the order of their smallest such node (Algorithm 1
// leaves the order free; this one keeps first computations close to the
// problem's index order, which the frontier-advancing stages follow).
// Nodes of c's separator, nodes outside c and pinned nodes are skipped:
// they are resident.
func (r *runner) inKids(c int32, list []int32) error {
	var kids []int32
	var groups [][]int32
	for _, x := range list {
		if r.pinned[x] || r.h.owner[x] == c || !r.h.inside(c, x) {
			continue
		}
		k := r.h.kidOf(c, x)
		g := slices.Index(kids, k)
		if g < 0 {
			g = len(kids)
			kids = append(kids, k)
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], x)
	}
	for g, k := range kids {
		if err := r.tw(k, groups[g]); err != nil {
			return err
		}
	}
	return nil
}

// emit appends x to the schedule σ.
func (r *runner) emit(x int32) error {
	r.conv.add(x)
	if r.sigma != nil {
		*r.sigma = append(*r.sigma, x)
	}
	if !r.p.Recomputable[x] {
		r.pinned[x] = true
	}
	r.emitted++
	if r.emitted > r.limit {
		return errTooLong
	}
	if r.emitted&4095 == 0 {
		if err := r.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// converter turns the schedule σ of Algorithm 1, a sequence of node
// computations with repeats, into the frontier-advancing stages of a
// remat.Plan, as it is emitted:
//
//   - the first computation of node t in σ is stage t's (R[t][t], eq. 8a);
//   - every recomputation in σ goes to the stage of the next first
//     computation after it, so that the recomputations between the first
//     computations of t−1 and t belong to stage t; those after the last
//     first computation go to the last stage;
//   - within a stage, nodes run in increasing order (Algorithm 1 of
//     Checkmate, the plan's row-major scan), and a node computed twice
//     inside one stage is computed once, its value kept in between;
//   - a recomputation of a node numbered above the stage it would fall in
//     (possible only when σ's first computations leave the index order,
//     see below) is carried to the next first computation of a higher
//     node, the first stage that may hold it;
//   - nodes that may not be recomputed are never recomputed (their one
//     value is retained until its last reader), and nodes that no output
//     needs, which σ never computes, get a stage of their own.
//
// When σ computes nodes for the first time in the index order, the stages
// hold exactly σ's computations, grouped, with repeats inside a stage
// merged; otherwise the stages run its
// first computations in index order instead, each stage with the
// recomputations σ placed before it. Either way remat.ScheduleStages gives
// a legal plan, and its memory is what remat.Evaluate measures, not
// Theorem 5's bound.
type converter struct {
	p         *remat.Problem
	stages    [][]int32
	first     []bool
	pending   []int32 // recomputations since the last first computation
	inPending []int32 // inPending[x] == epoch: x is in pending
	epoch     int32
}

func newConverter(p *remat.Problem) converter {
	n := p.N()
	return converter{
		p:         p,
		stages:    make([][]int32, n),
		first:     make([]bool, n),
		inPending: make([]int32, n),
		epoch:     1,
	}
}

func (cv *converter) add(x int32) {
	if !cv.first[x] {
		cv.first[x] = true
		st := make([]int32, 0, len(cv.pending)+1)
		cv.epoch++
		kept := cv.pending[:0]
		for _, y := range cv.pending {
			switch {
			case y < x:
				st = append(st, y)
			case y > x:
				kept = append(kept, y)
				cv.inPending[y] = cv.epoch
			}
		}
		cv.pending = kept
		st = append(st, x)
		slices.Sort(st)
		cv.stages[x] = st
		return
	}
	if !cv.p.Recomputable[x] || cv.inPending[x] == cv.epoch {
		return
	}
	cv.inPending[x] = cv.epoch
	cv.pending = append(cv.pending, x)
}

// finish gives every node σ did not compute a stage of its own, puts the
// trailing recomputations in the last stage, and returns the stages.
func (cv *converter) finish() [][]int32 {
	n := len(cv.stages)
	for t := range cv.stages {
		if cv.stages[t] == nil {
			cv.stages[t] = []int32{int32(t)}
		}
	}
	if n > 0 && len(cv.pending) > 0 {
		last := cv.stages[n-1]
		for _, y := range cv.pending {
			if int(y) < n-1 && !slices.Contains(last, y) {
				last = append(last, y)
			}
		}
		slices.Sort(last)
		cv.stages[n-1] = last
	}
	return cv.stages
}
