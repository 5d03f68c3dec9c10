package heuristic

// xlagreedy.go is GreedyRemat, the baseline that Kumar et al. (2019)
// compare TWRemat with: XLA's rematerialization heuristic.

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

const xlaGreedyName = "xla-greedy"

// XLAGreedy is GreedyRemat, XLA's greedy rematerialization heuristic as
// Kumar et al. (2019) §4 describe their baseline (ii):
//
//	"Starting with a topological sort of all operations, it processes each
//	operation sequentially. At each stage, if the current memory usage is
//	over a specified memory limit, the algorithm attempts to rematerialize
//	an already scheduled operation. In particular, the operation whose
//	rematerialization maximizes the amount of reduction in memory usage is
//	chosen greedily at each step. If the memory usage cannot be reduced,
//	the algorithm moves on to the next operation."
//
// Here the topological sort is the problem's order and the operations
// are the frontier-advancing stages of the plan (stage t computes node t
// for the first time, after the recomputations placed in it). The walk:
//
//   - At stage t, the memory usage is the peak of the stage's steps in the
//     memory model, with the values retained into the stage (S[t]) as
//     remat.ScheduleStages derives them from the recomputations placed so
//     far.
//   - While it exceeds the budget, a candidate is a value retained into
//     stage t that the stage does not read (XLA's instructions "in use" by
//     the current one are not candidates), whose node may be recomputed.
//     Rematerializing it frees it after its last reader before stage t and
//     recomputes it in the stage of its next reader u (for a graph output
//     that nothing reads any more, the last stage, where it must be
//     resident). The recomputation reads the node's inputs at stage u, and
//     an input that would not be resident there has its life extended to
//     u, as XLA extends the live ranges of a rematerialized instruction's
//     operands, when its value lives to stage t or later. XLA also extends
//     an operand that is already dead at the current point, across the
//     points it has passed; here such an input is recomputed in stage u
//     with the node instead (recursively), so that no stage already passed
//     gains memory, and a candidate that would have to recompute a node
//     that may not be recomputed is skipped. The paper describes one
//     operation rematerialized at a time, and the walk first looks for a
//     candidate that recomputes the node alone; only when none reduces the
//     memory does it allow blocks of up to 2, then up to 4 nodes. (Without
//     blocks the walk stalls early on training graphs, whose backward pass
//     reads forward values whose inputs are long dead; with unbounded
//     blocks it cascades recomputation into later stages on the random
//     layered inference DAGs. The bound of 4 fitted the most budgets in
//     our trials on both kinds, synth.Layered graphs and the training
//     graphs of this package's tests.)
//   - The reduction of a candidate is its bytes less the bytes of the
//     inputs whose life it extends across the rest of stage t (those last
//     read in stage t): a lower bound on how much every step of the stage
//     drops. The candidate with the largest positive reduction is taken
//     (ties: the cheaper recomputation, then the smaller node), and the
//     stage is measured again.
//   - When no candidate reduces the memory, the walk moves on to stage
//     t+1; the plan may then exceed the budget, and Solve returns a
//     *remat.BudgetError carrying the plan of least peak, this one or the
//     plan without recomputation.
//
// Rematerializations only move memory to later stages, which the walk
// has not reached, so a stage that fitted when it was passed still fits
// at the end. The walk measures memory in the coarse model (each node one
// allocation of Bytes; Problem.Coarse), an upper bound of the exact one
// with Parts, and the returned plan is measured by remat.Evaluate. When
// the plan without recomputation already fits, it is returned as is.
var XLAGreedy = remat.Solver{
	Name:  xlaGreedyName,
	Doc:   "XLA's greedy rematerialization (Kumar et al. 2019 §4, GreedyRemat): walk the topological order and, while a stage's memory exceeds the budget, rematerialize the resident value whose recomputation reduces it most.",
	Solve: xlaGreedySolve,
}

func xlaGreedySolve(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	tr := newTracker(p, xlaGreedyName, progress)
	n := p.N()
	identity := make([][]int32, n)
	for t := range identity {
		identity[t] = []int32{int32(t)}
	}
	c, err := measure(p, identity)
	if err != nil {
		return nil, err
	}
	tr.offer(c, fmt.Sprintf("the topological order without recomputation peaks at %d bytes", c.res.PeakBytes))
	if tr.optimal() {
		return tr.result(nil)
	}
	if err := ctx.Err(); err != nil {
		return tr.result(err)
	}
	w := newXLAWalk(p)
	if err := w.walk(ctx); err != nil {
		return tr.result(err)
	}
	c, err = measure(p, w.stages())
	if err != nil {
		return nil, err
	}
	tr.offer(c, fmt.Sprintf("greedy walk: %d rematerializations, %d stages still over the budget, peak %d bytes",
		w.remats, w.over, c.res.PeakBytes))
	return tr.result(nil)
}

// measure schedules and evaluates stages.
func measure(p *remat.Problem, stages [][]int32) (candidate, error) {
	plan, err := remat.ScheduleStages(p, stages)
	if err != nil {
		return candidate{}, fmt.Errorf("remat: internal error: %s produced illegal stages: %w", xlaGreedyName, err)
	}
	res, err := remat.Evaluate(p, plan)
	if err != nil {
		return candidate{}, fmt.Errorf("remat: internal error: %s produced an illegal plan: %w", xlaGreedyName, err)
	}
	return candidate{plan, res}, nil
}

// never is the stage of an event that does not happen.
const never = math.MaxInt32

// xlaMaxBlock is the largest block of nodes one rematerialization
// recomputes (see XLAGreedy).
const xlaMaxBlock = 4

// xlaWalk is the state of the greedy walk: the recomputations placed so
// far, and for each node the stages that read it and compute it, from
// which the values retained into any stage follow (as in
// remat.ScheduleStages: a read in stage s is served by the latest
// computation at or before s).
type xlaWalk struct {
	p     *remat.Problem
	n     int
	limit int64     // the budget less the constant overhead
	R     [][]int32 // the nodes each stage computes, t included
	reads [][]int32 // sorted stages that read each node
	comps [][]int32 // sorted stages that compute each node
	isOut []bool
	// live is S[t] for the current stage t, sorted; inLive marks it.
	live   []int32
	inLive []bool
	// Scratch of stagePeak and plan.
	lastIdx []int32
	lastAt  []int32
	inBlock []int32
	stamp   int32
	// remats counts the rematerializations; over the stages left over
	// the budget.
	remats, over int
}

func newXLAWalk(p *remat.Problem) *xlaWalk {
	n := p.N()
	w := &xlaWalk{
		p: p, n: n,
		limit:   p.BudgetBytes - p.ConstBytes,
		R:       make([][]int32, n),
		reads:   make([][]int32, n),
		comps:   make([][]int32, n),
		isOut:   make([]bool, n),
		inLive:  make([]bool, n),
		lastIdx: make([]int32, n),
		lastAt:  make([]int32, n),
		inBlock: make([]int32, n),
	}
	if p.BudgetBytes < p.ConstBytes {
		w.limit = -1
	}
	for t := range n {
		w.R[t] = []int32{int32(t)}
		w.comps[t] = []int32{int32(t)}
		for _, d := range p.Deps[t] {
			w.reads[d] = append(w.reads[d], int32(t)) // increasing t: sorted
		}
	}
	for _, o := range p.Outputs {
		w.isOut[o] = true
	}
	return w
}

// nextAt is the first stage of a sorted list at or after s.
func nextAt(list []int32, s int32) int32 {
	i, _ := slices.BinarySearch(list, s)
	if i == len(list) {
		return never
	}
	return list[i]
}

// lastBefore is the last stage of a sorted list before s, −1 when none.
func lastBefore(list []int32, s int32) int32 {
	i, _ := slices.BinarySearch(list, s)
	if i == 0 {
		return -1
	}
	return list[i-1]
}

// nextRead is the first stage at or after s that reads x; a graph output
// is read by a virtual stage n after the last.
func (w *xlaWalk) nextRead(x, s int32) int32 {
	r := nextAt(w.reads[x], s)
	if r == never && w.isOut[x] {
		return int32(w.n)
	}
	return r
}

// retained reports whether x's value is resident when stage s begins: a
// stage at or after s reads it before any recomputes it (eq. 1b–1c, the
// least S of remat.ScheduleStages).
func (w *xlaWalk) retained(x, s int32) bool {
	return w.nextRead(x, s) < nextAt(w.comps[x], s)
}

func (w *xlaWalk) computedAt(x, s int32) bool {
	_, ok := slices.BinarySearch(w.comps[x], s)
	return ok
}

func (w *xlaWalk) newStamp() int32 {
	w.stamp++
	return w.stamp
}

// stagePeak is the memory of stage t's largest step in the coarse
// memory model, ConstBytes excluded: the live values, plus those the
// stage computes, each freed right after its last reader in the stage
// unless it is retained into stage t+1.
func (w *xlaWalk) stagePeak(t int32) int64 {
	p := w.p
	comp := w.R[t]
	slices.Sort(comp)
	var cur int64
	for _, x := range w.live {
		cur += p.Bytes[x]
	}
	s := w.newStamp()
	for j, c := range comp {
		for _, d := range p.Deps[c] {
			w.lastIdx[d], w.lastAt[d] = int32(j), s
		}
	}
	var peak int64
	for j, c := range comp {
		cur += p.Bytes[c]
		peak = max(peak, cur)
		for _, d := range p.Deps[c] {
			if w.lastIdx[d] == int32(j) && !w.retained(d, t+1) {
				cur -= p.Bytes[d]
			}
		}
		if w.lastAt[c] != s && !w.retained(c, t+1) {
			cur -= p.Bytes[c]
		}
	}
	return peak
}

// xlaRemat is a candidate: recompute nodes (x first, then the inputs it
// needs recomputed with it) at stage u, which reduces stage t's memory by
// reduce bytes at least.
type xlaRemat struct {
	x, u    int32
	nodes   []int32
	reduce  int64
	seconds float64
}

// plan works out the rematerialization of live value x at stage t as a
// block of at most block nodes; ok is false when x is not a candidate.
func (w *xlaWalk) plan(x, t int32, block int) (xlaRemat, bool) {
	p := w.p
	if !p.Recomputable[x] {
		return xlaRemat{}, false
	}
	u := w.nextRead(x, t)
	if u == t {
		return xlaRemat{}, false // in use by the current stage
	}
	if u >= int32(w.n) {
		u = int32(w.n) - 1
	}
	if u <= t {
		return xlaRemat{}, false
	}
	r := xlaRemat{x: x, u: u, nodes: []int32{x}, reduce: p.Bytes[x], seconds: p.Seconds[x]}
	s := w.newStamp()
	w.inBlock[x] = s
	for q := 0; q < len(r.nodes); q++ {
		for _, d := range p.Deps[r.nodes[q]] {
			if w.inBlock[d] == s || w.inBlock[d] == -s {
				continue
			}
			if w.computedAt(d, u) || w.retained(d, u) {
				w.inBlock[d] = -s // resident at u as things stand
				continue
			}
			// d's latest value before u, and its last reader.
			c := lastBefore(w.comps[d], u)
			last := max(lastBefore(w.reads[d], u), c)
			if last >= t {
				// Alive in stage t or later: extend its life to u.
				w.inBlock[d] = -s
				if last == t {
					r.reduce -= p.Bytes[d]
				}
				continue
			}
			// Dead before stage t: recompute it in the block.
			if !p.Recomputable[d] || len(r.nodes) >= block {
				return xlaRemat{}, false
			}
			w.inBlock[d] = s
			r.nodes = append(r.nodes, d)
			r.seconds += p.Seconds[d]
		}
	}
	return r, r.reduce > 0
}

// apply places a rematerialization and drops x from the live values.
func (w *xlaWalk) apply(r xlaRemat) {
	for _, y := range r.nodes {
		w.comps[y] = insertStage(w.comps[y], r.u)
		w.R[r.u] = append(w.R[r.u], y)
		for _, d := range w.p.Deps[y] {
			w.reads[d] = insertStage(w.reads[d], r.u)
		}
	}
	w.inLive[r.x] = false
	w.live = slices.DeleteFunc(w.live, func(y int32) bool { return y == r.x })
	w.remats++
}

func insertStage(list []int32, s int32) []int32 {
	i, found := slices.BinarySearch(list, s)
	if found {
		return list
	}
	return slices.Insert(list, i, s)
}

// advance moves the live values from stage t to stage t+1: those of S[t]
// and of R[t] still retained.
func (w *xlaWalk) advance(t int32) {
	next := w.live[:0]
	for _, x := range w.live {
		if w.retained(x, t+1) {
			next = append(next, x)
		} else {
			w.inLive[x] = false
		}
	}
	for _, x := range w.R[t] {
		if !w.inLive[x] && w.retained(x, t+1) {
			w.inLive[x] = true
			next = append(next, x)
		}
	}
	slices.Sort(next)
	w.live = next
}

// walk runs the greedy over every stage, stopping early only when ctx is
// done.
func (w *xlaWalk) walk(ctx context.Context) error {
	for t := int32(0); t < int32(w.n); t++ {
		if t&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for w.stagePeak(t) > w.limit {
			best, found := xlaRemat{}, false
			for block := 1; !found && block <= xlaMaxBlock; block *= 2 {
				for _, x := range w.live {
					r, ok := w.plan(x, t, block)
					if !ok {
						continue
					}
					if !found || r.reduce > best.reduce ||
						r.reduce == best.reduce && (r.seconds < best.seconds || r.seconds == best.seconds && r.x < best.x) {
						best, found = r, true
					}
				}
			}
			if !found {
				w.over++
				break
			}
			w.apply(best)
		}
		w.advance(t)
	}
	return nil
}

// stages returns the walk's compute lists, each sorted.
func (w *xlaWalk) stages() [][]int32 {
	for t := range w.R {
		slices.Sort(w.R[t])
	}
	return w.R
}

// coarsePeak replays the finished walk's stages and returns the largest
// stage peak, ConstBytes included: the coarse memory model's peak of the
// plan, which equals remat.Evaluate's on a problem without Parts (tests).
func (w *xlaWalk) coarsePeak() int64 {
	for _, x := range w.live {
		w.inLive[x] = false
	}
	w.live = w.live[:0]
	var peak int64
	for t := int32(0); t < int32(w.n); t++ {
		peak = max(peak, w.stagePeak(t))
		w.advance(t)
	}
	return peak + w.p.ConstBytes
}
