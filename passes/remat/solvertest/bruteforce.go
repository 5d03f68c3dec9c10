package solvertest

import (
	"context"
	"fmt"
	"math"
	"math/bits"

	"github.com/remat-compile/remat/passes/remat"
)

// BruteForce returns an optimal plan of p: the least total cost (1a) over
// every plan of the fixed-order, frontier-advancing problem (Checkmate
// §4.6: stage t computes t and may recompute earlier nodes; values are
// retained across stage boundaries) whose memory, as Check measures it,
// stays within p.BudgetBytes. When no plan fits it returns a
// *remat.BudgetError with Proven set and NeedBytes the least peak of any
// plan (with that plan, optimal at that budget).
//
// It is the conformance suite's reference, so it is written to be
// obviously correct first: a memoized search over (stage, retained set),
// exhaustive up to dominance, with branch-and-bound pruning that cannot
// cut an optimum. It is meant for problems of up to a dozen nodes; it
// accepts up to 64 nodes and 64 parts, and tight budgets keep even the
// 17-node linear network of Checkmate §4.6 quick.
//
// # Why the search is exhaustive
//
// The state between stages t−1 and t is the set of parts resident (S_t at
// part level, the memory model's unit). A stage is fixed by the set it
// hands on, S_{t+1}: given S_t and S_{t+1}, the least legal R_t is the
// closure of {t} ∪ (owners of S_{t+1} \ S_t) under "a dependency not in
// S_t must be computed", and any larger R_t costs more and holds more (an
// extra computation allocates its output and extends its inputs'
// lives), so it is dominated. The memory of stage t is then determined:
// a part retained or computed lives until its last reader in the stage,
// to the end of the stage when it is in S_{t+1}, or only its own step
// when nothing reads it. This accounting is at least the memory model's
// for the plan the path spells (a part in S_{t+1} that no later stage
// reads is counted to the end of stage t, where the model frees it after
// its last reader), and exactly it on the path that retains only what a
// later stage reads, which every plan has. So the search's optimum under
// the budget is the optimum over all plans. Candidates for S_{t+1} are
// the parts of nodes ≤ t that a later node reads or that are graph
// outputs, and, transitively, the parts their producers read, since a
// later stage may recompute a producer from them (retaining any other part
// is dominated); parts of nodes that cannot be recomputed and that a later
// node or the outputs still read must be retained.
func BruteForce(p *remat.Problem) (*remat.Plan, error) {
	return bruteForce(context.Background(), p)
}

// MaxBruteForceNodes bounds the problems BruteForce accepts (its sets are
// 64-bit masks of nodes and of parts).
const MaxBruteForceNodes = 64

func bruteForce(ctx context.Context, p *remat.Problem) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b, err := newSearch(ctx, p)
	if err != nil {
		return nil, err
	}
	plan, err := b.solve(p.BudgetBytes)
	if err != nil {
		return nil, err
	}
	if plan != nil {
		return plan, nil
	}
	// Infeasible: find the least budget any plan meets.
	need, at, err := b.minPeak(p.BudgetBytes)
	if err != nil {
		return nil, err
	}
	return nil, &remat.BudgetError{NeedBytes: need, HaveBytes: p.BudgetBytes, Plan: at, Proven: true}
}

// search is the state of one brute-force run.
type search struct {
	ctx       context.Context
	p         *remat.Problem
	n         int
	owner     []int     // part → node
	partBytes []int64   // part → bytes
	nodeParts []uint64  // node → its parts
	reads     []uint64  // node → the parts it reads
	outParts  uint64    // parts that are graph outputs
	nonrec    uint64    // nodes that are not recomputable
	cand      []uint64  // cand[t]: parts worth retaining into stage t+1
	forced    []uint64  // forced[t]: candidates that cannot be recomputed
	suffix    []float64 // suffix[t] = Σ_{j ≥ t} Seconds[j]
	budget    int64     // bytes available above ConstBytes
	memo      []map[uint64]entry
	steps     int
	stop      bool // the context is done: unwind without storing anything
}

// stopped polls the context every 1024 calls and latches.
func (b *search) stopped() bool {
	b.steps++
	if !b.stop && b.steps&1023 == 0 && b.ctx.Err() != nil {
		b.stop = true
	}
	return b.stop
}

type entry struct {
	val   float64 // the least cost-to-go, or a lower bound on it
	exact bool
	next  uint64 // with exact: the S_{t+1} that achieves val
}

func newSearch(ctx context.Context, p *remat.Problem) (*search, error) {
	n := p.N()
	if n > MaxBruteForceNodes {
		return nil, fmt.Errorf("solvertest: BruteForce: %d nodes; it handles at most %d", n, MaxBruteForceNodes)
	}
	b := &search{ctx: ctx, p: p, n: n, nodeParts: make([]uint64, n), reads: make([]uint64, n)}
	first := make([]int, n)
	for i := range n {
		first[i] = len(b.owner)
		for k := range p.NumParts(i) {
			if len(b.owner) == 64 {
				return nil, fmt.Errorf("solvertest: BruteForce: more than 64 parts")
			}
			b.nodeParts[i] |= 1 << len(b.owner)
			b.owner = append(b.owner, i)
			b.partBytes = append(b.partBytes, p.PartBytes(i, k))
		}
		if !p.Recomputable[i] {
			b.nonrec |= 1 << i
		}
	}
	for i := range n {
		p.ReadParts(i, func(r remat.Part) { b.reads[i] |= 1 << (first[r.Node] + int(r.Index)) })
	}
	for _, r := range p.OutputPartList() {
		b.outParts |= 1 << (first[r.Node] + int(r.Index))
	}
	b.cand = make([]uint64, n)
	b.forced = make([]uint64, n)
	var readLater uint64 // parts read by some node after t
	for t := n - 1; t >= 0; t-- {
		var upto uint64 // parts of nodes ≤ t
		for i := 0; i <= t; i++ {
			upto |= b.nodeParts[i]
		}
		// A later stage may need a part directly (a later node or a graph
		// output reads it) or to recompute a producer of such a part: the
		// candidates are the direct needs and, transitively, what their
		// producers read (reads point to lower nodes, so one descending
		// pass closes the set). Only direct needs of nodes that cannot be
		// recomputed are forced.
		direct := upto & (readLater | b.outParts)
		useful := readLater | b.outParts
		for i := n - 1; i >= 0; i-- {
			if b.nodeParts[i]&useful != 0 {
				useful |= b.reads[i]
			}
		}
		b.cand[t] = upto & useful
		for k := direct; k != 0; k &= k - 1 {
			if b.nonrec>>b.owner[bits.TrailingZeros64(k)]&1 != 0 {
				b.forced[t] |= k & -k
			}
		}
		readLater |= b.reads[t]
	}
	b.suffix = make([]float64, n+1)
	for t := n - 1; t >= 0; t-- {
		b.suffix[t] = b.suffix[t+1] + p.Seconds[t]
	}
	return b, nil
}

func (b *search) bytesOf(parts uint64) int64 {
	var s int64
	for ; parts != 0; parts &= parts - 1 {
		s += b.partBytes[bits.TrailingZeros64(parts)]
	}
	return s
}

// stage evaluates stage t that starts with parts S resident and hands on
// S2: the nodes it computes (the least closure), their cost, and whether
// it is legal and within the budget.
func (b *search) stage(t int, S, S2 uint64) (C uint64, cost float64, ok bool) {
	C = 1 << t
	for need := S2 &^ S; need != 0; need &= need - 1 {
		C |= 1 << b.owner[bits.TrailingZeros64(need)]
	}
	for x := t; x >= 0; x-- {
		if C>>x&1 == 0 {
			continue
		}
		for need := b.reads[x] &^ S; need != 0; need &= need - 1 {
			C |= 1 << b.owner[bits.TrailingZeros64(need)]
		}
	}
	if C&^(1<<t)&b.nonrec != 0 {
		return 0, 0, false
	}
	// Memory: live intervals of parts over the stage's steps.
	var computedParts uint64
	for c := C; c != 0; c &= c - 1 {
		computedParts |= b.nodeParts[bits.TrailingZeros64(c)]
	}
	var start, end [64]int8
	retained := S &^ computedParts // parts resident from the stage start and not recomputed
	for k := retained; k != 0; k &= k - 1 {
		i := bits.TrailingZeros64(k)
		start[i], end[i] = 0, -1
	}
	m := 0
	for c := C; c != 0; c &= c - 1 {
		x := bits.TrailingZeros64(c)
		for r := b.reads[x]; r != 0; r &= r - 1 {
			end[bits.TrailingZeros64(r)] = int8(m)
		}
		for k := b.nodeParts[x]; k != 0; k &= k - 1 {
			i := bits.TrailingZeros64(k)
			start[i], end[i] = int8(m), int8(m)
		}
		cost += b.p.Seconds[x]
		m++
	}
	for k := S2; k != 0; k &= k - 1 {
		end[bits.TrailingZeros64(k)] = int8(m - 1)
	}
	var delta [66]int64
	for k := retained | computedParts; k != 0; k &= k - 1 {
		i := bits.TrailingZeros64(k)
		if end[i] >= start[i] {
			delta[start[i]] += b.partBytes[i]
			delta[end[i]+1] -= b.partBytes[i]
		}
	}
	var cur int64
	for s := range m {
		cur += delta[s]
		if cur > b.budget {
			return 0, 0, false
		}
	}
	return C, cost, true
}

// best returns the least cost of stages t … N−1 from retained set S, when
// it is below bound (exact = true), or a lower bound on it that is at
// least bound (exact = false).
func (b *search) best(t int, S uint64, bound float64) (float64, bool) {
	if t == b.n {
		return 0, true
	}
	if e, ok := b.memo[t][S]; ok && (e.exact || e.val >= bound) {
		return e.val, e.exact
	}
	if b.stopped() {
		return math.Inf(1), false
	}
	bestVal, bestNext := math.Inf(1), uint64(0)
	try := func(S2 uint64) {
		_, cost, ok := b.stage(t, S, S2)
		if !ok || b.stop {
			return
		}
		cur := min(bestVal, bound)
		if cost+b.suffix[t+1] >= cur {
			return
		}
		v, exact := b.best(t+1, S2, cur-cost)
		if exact && cost+v < cur {
			bestVal, bestNext = cost+v, S2
		}
	}
	if b.forced[t]&^S&^b.nodeParts[t] != 0 {
		// A part that cannot be recomputed is needed later but was dropped.
		b.memo[t][S] = entry{val: math.Inf(1), exact: true}
		return math.Inf(1), true
	}
	switch {
	case t == b.n-1:
		try(b.outParts)
	default:
		b.subsets(t, S, try)
	}
	if b.stop {
		return math.Inf(1), false
	}
	if bestVal < bound || math.IsInf(bound, 1) {
		b.memo[t][S] = entry{bestVal, true, bestNext}
		return bestVal, true
	}
	if e, ok := b.memo[t][S]; !ok || e.val < bound {
		b.memo[t][S] = entry{val: bound}
	}
	return bound, false
}

// subsets calls try for every candidate S_{t+1}: the forced parts plus any
// subset of the other candidates, larger sets first, skipping those that
// cannot fit beside node t's outputs at the stage's last step.
func (b *search) subsets(t int, S uint64, try func(uint64)) {
	free := b.cand[t] &^ b.forced[t]
	var list []int
	for k := free; k != 0; k &= k - 1 {
		list = append(list, bits.TrailingZeros64(k))
	}
	own := b.nodeParts[t]
	var rec func(j int, set uint64, bytes int64)
	rec = func(j int, set uint64, bytes int64) {
		if bytes > b.budget {
			return
		}
		if j < 0 {
			try(set)
			return
		}
		k := list[j]
		add := b.partBytes[k]
		if own>>k&1 != 0 {
			add = 0 // counted already
		}
		rec(j-1, set|1<<k, bytes+add)
		rec(j-1, set, bytes)
	}
	base := b.forced[t]
	rec(len(list)-1, base, b.bytesOf(base|own))
}

// solve runs the search at budget and returns an optimal plan, or nil when
// none fits.
func (b *search) solve(budget int64) (*remat.Plan, error) {
	b.budget = budget - b.p.ConstBytes
	b.memo = make([]map[uint64]entry, b.n)
	for t := range b.memo {
		b.memo[t] = map[uint64]entry{}
	}
	if err := b.ctx.Err(); err != nil {
		return nil, err
	}
	if b.budget < 0 {
		return nil, nil
	}
	v, exact := b.best(0, 0, math.Inf(1))
	if err := b.ctx.Err(); err != nil {
		return nil, err
	}
	if !exact {
		return nil, fmt.Errorf("solvertest: BruteForce: internal error: the root search ended with a bound")
	}
	if math.IsInf(v, 1) {
		return nil, nil
	}
	stages := make([][]int32, b.n)
	S := uint64(0)
	for t := range b.n {
		e, ok := b.memo[t][S]
		if !ok || !e.exact {
			return nil, fmt.Errorf("solvertest: BruteForce: internal error: no exact entry for stage %d on the optimal path", t)
		}
		C, _, ok := b.stage(t, S, e.next)
		if !ok {
			return nil, fmt.Errorf("solvertest: BruteForce: internal error: stage %d of the optimal path is illegal", t)
		}
		for c := C; c != 0; c &= c - 1 {
			stages[t] = append(stages[t], int32(bits.TrailingZeros64(c)))
		}
		S = e.next
	}
	plan, err := remat.ScheduleStages(b.p, stages)
	if err != nil {
		return nil, fmt.Errorf("solvertest: BruteForce: internal error: %w", err)
	}
	q := *b.p
	q.BudgetBytes = budget
	res, err := remat.Check(&q, plan)
	if err != nil {
		return nil, fmt.Errorf("solvertest: BruteForce: internal error: its optimal plan fails Check: %w", err)
	}
	if d := math.Abs(res.TotalSeconds - v); d > 1e-9*max(1, math.Abs(v)) {
		return nil, fmt.Errorf("solvertest: BruteForce: internal error: the plan costs %v, the search said %v", res.TotalSeconds, v)
	}
	plan.Optimal, plan.LowerBound, plan.Gap, plan.Solver = true, res.TotalSeconds, 0, bruteForceName
	return plan, nil
}

// minPeak returns the least budget at which some plan exists (above
// infeasible, which has none), with an optimal plan at it. Checkpoint-all
// is always a plan, so its peak bounds the search from above.
func (b *search) minPeak(infeasible int64) (int64, *remat.Plan, error) {
	p := b.p
	identity := make([][]int32, b.n)
	for t := range identity {
		identity[t] = []int32{int32(t)}
	}
	ca, err := remat.ScheduleStages(p, identity)
	if err != nil {
		return 0, nil, err
	}
	res, err := remat.Evaluate(p, ca)
	if err != nil {
		return 0, nil, fmt.Errorf("solvertest: BruteForce: internal error: checkpoint-all fails Evaluate: %w", err)
	}
	lo, hi := infeasible+1, res.PeakBytes // lo … hi holds the answer; hi is feasible
	if lo > hi {
		return 0, nil, fmt.Errorf("solvertest: BruteForce: internal error: no plan at %d bytes, but checkpoint-all peaks at %d", infeasible, hi)
	}
	var at *remat.Plan
	for lo < hi {
		mid := lo + (hi-lo)/2
		plan, err := b.solve(mid)
		if err != nil {
			return 0, nil, err
		}
		if plan != nil {
			hi, at = mid, plan
		} else {
			lo = mid + 1
		}
	}
	if at == nil {
		if at, err = b.solve(hi); err != nil {
			return 0, nil, err
		}
		if at == nil {
			return 0, nil, fmt.Errorf("solvertest: BruteForce: internal error: no plan at checkpoint-all's peak %d", hi)
		}
	}
	return hi, at, nil
}

const bruteForceName = "brute-force"

// BruteForceSolver is BruteForce as an exact remat.Solver, for problems of
// a dozen nodes. It stops, returning the context's error, when ctx is
// done.
var BruteForceSolver = remat.Solver{
	Name:  bruteForceName,
	Doc:   "Exhaustive search over stages and retained sets; the reference for tiny problems.",
	Exact: true,
	Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
		plan, err := bruteForce(ctx, p)
		if err == nil && progress != nil {
			c := plan.Cost(p)
			progress(remat.Progress{Incumbent: c, Bound: c, Note: "optimal"})
		}
		return plan, err
	},
}
