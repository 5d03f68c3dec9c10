package heuristic

// keep.go is the engine the heuristics share: which values each stage
// keeps, how a set of checkpoints becomes R (Algorithm 2's repairs), and
// the tracker that keeps the best plan found so far.

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// # From checkpoints to a plan
//
// The baselines of Checkmate §6.1 and App. B choose which values to keep
// (the checkpoint matrix S) and then "solve for the optimal recomputation
// plan R to restore correctness" (App. B.1) with the procedure of §5.2,
// Algorithm 2: start from R = I (8a), add R[t−1][i] wherever S[t][i] = 1
// but i is neither computed in stage t−1 nor retained into it (1c), then
// add R[t][i] wherever a node computed in stage t reads i and i is neither
// retained into stage t nor computed in it (1b). Every entry is set only
// when a constraint needs it, so R is the least one for that S.
//
// Here S is given as keep spans: span {from, to} of node i allows i to be
// retained into the stages from … to (S[t][i] for from ≤ t ≤ to; i < from).
// Spans are permissions, not obligations: after Algorithm 2 has built R,
// remat.ScheduleStages derives the least S and the hoisted FREE from R
// alone, so a value is kept only while something still reads it. What the
// spans decide is where recomputation happens: at the stage before a span
// that does not continue an earlier one (1c), and wherever a value is read
// outside every span (1b), recursively back to values inside a span. A
// last pass removes recomputations whose value nobody reads (possible when
// a span starts a recomputation that the reads inside it turn out not to
// need), and remat.Evaluate measures the result. Any spans give a legal
// plan; they only decide its cost and memory.
//
// Two rules depend on the recomputations themselves, so build applies them
// between rounds of the repairs, each round only extending spans (which
// only removes recomputations, so the rounds end):
//   - A checkpoint is kept "until its last reader", and recomputations are
//     readers too: a segment recomputed late in the backward pass reads
//     the checkpoint before it. Such spans are given with keepToLast, and
//     build extends each to the last stage whose R reads the value. One
//     round suffices, since no read moves later.
//   - Within a segment (keeps.group), a value recomputed in one stage and
//     again in a later one is kept between the two instead: a segment
//     recomputes a value at most once.

// span allows a node's value to be retained into stages from … to.
type span struct{ from, to int32 }

// keeps holds the spans of every node.
type keeps struct {
	spans [][]span
	// last[i] ≥ 0 is the start of a span of node i that runs to its last
	// reader, recomputations included (keepToLast); −1 when none.
	last []int32
	// group, when not nil, numbers the stages of each segment (−1: none).
	// A value that two stages of one segment would recompute is instead
	// kept from the first to the second (see build).
	group []int32
}

func newKeeps(n int) *keeps {
	k := &keeps{spans: make([][]span, n), last: make([]int32, n)}
	for i := range k.last {
		k.last[i] = -1
	}
	return k
}

// keep allows node i to be retained into stages from … to, clipped to
// the stages after i; an empty range is ignored.
func (k *keeps) keep(i, from, to int) {
	from, to = max(from, i+1), min(to, len(k.spans)-1)
	if from <= to {
		k.spans[i] = append(k.spans[i], span{int32(from), int32(to)})
	}
}

// keepToLast allows node i to be retained from stage from until its last
// reader: lastRead in the graph for now, extended by build to the
// recomputations that read it.
func (k *keeps) keepToLast(i, from, lastRead int) {
	k.keep(i, from, lastRead)
	k.last[i] = max(k.last[i], int32(from))
}

// normalize sorts each node's spans and merges those that overlap or touch
// (retained into stage t and into t+1 is one stretch of residency).
func (k *keeps) normalize() {
	for i, sp := range k.spans {
		if len(sp) < 2 {
			continue
		}
		slices.SortFunc(sp, func(a, b span) int { return int(a.from) - int(b.from) })
		out := sp[:1]
		for _, s := range sp[1:] {
			last := &out[len(out)-1]
			if s.from <= last.to+1 {
				last.to = max(last.to, s.to)
			} else {
				out = append(out, s)
			}
		}
		k.spans[i] = out
	}
}

// has reports whether node i may be retained into stage t (k normalized).
func (k *keeps) has(i, t int) bool {
	sp := k.spans[i]
	j, _ := slices.BinarySearchFunc(sp, int32(t), func(s span, t int32) int {
		switch {
		case s.to < t:
			return -1
		case s.from > t:
			return 1
		}
		return 0
	})
	return j < len(sp) && sp[j].from <= int32(t) && int32(t) <= sp[j].to
}

// shape is what the baselines need to know about a problem: who reads
// each value, which values may never be dropped, and where the forward
// part ends.
//
// # Training and inference graphs
//
// Chen et al. (2016) and Griewank & Walther (2000) checkpoint training
// graphs: a forward pass, then a backward pass that reads the forward
// activations in reverse order. A Problem does not say which of its nodes
// are the backward pass, so shape infers it:
//
//   - A chain (every node after the first reads exactly its predecessor)
//     is an inference graph: no value is read after the next step.
//   - A training chain, the linear training graph of Checkmate §4.6 and
//     solvertest.LinearNetwork, is a chain 0 … ℓ (the forward pass and the
//     loss ℓ) followed by nodes that each read their predecessor (the
//     gradient) and otherwise only nodes up to ℓ (forward activations).
//     Its backward part is ℓ+1 … N−1.
//   - Any other graph has a backward part when, at the step after which
//     the most values are waiting for a later reader when every value is
//     kept until its last use (the loss, in a training graph), those
//     values are consumed mostly last-in first-out — the earlier a value
//     was produced, the later its last reader, as backpropagation
//     consumes the forward activations: at most a quarter of the pairs
//     in the other order (Kendall's τ ≥ 0.5), over at least three
//     distinct last readers. That step is ℓ. Otherwise the graph is an
//     inference graph and its forward part is the whole graph.
//
// An encoder–decoder network with long skips (a U-Net) meets the last
// test for inference too: its decoder consumes the encoder's activations
// exactly as a backward pass does, and the methods treat it as one, which
// is what they should do with that dataflow.
type shape struct {
	n int
	// fwdEnd is ℓ: the forward part is nodes 0 … fwdEnd; N−1 when the
	// graph has no backward part.
	fwdEnd int
	// training reports a backward part (fwdEnd < N−1).
	training bool
	// linear reports a chain or a training chain: the graphs Chen et al.
	// and Griewank & Walther define their methods on.
	linear bool
	// deps is the problem's Deps; readers[i] lists the nodes that read i,
	// increasing.
	deps, readers [][]int32
	// lastRead[i] is i's last reader, −1 when none.
	lastRead []int32
	// pinned marks the values that are never dropped: nodes that may not
	// be recomputed and graph outputs. They are checkpoints of every
	// method.
	pinned []bool
}

func analyze(p *remat.Problem) *shape {
	n := p.N()
	sh := &shape{n: n, deps: p.Deps, readers: make([][]int32, n), lastRead: make([]int32, n), pinned: make([]bool, n)}
	for i := range n {
		sh.lastRead[i] = -1
		sh.pinned[i] = !p.Recomputable[i]
	}
	for _, o := range p.Outputs {
		sh.pinned[o] = true
	}
	for i, deps := range p.Deps {
		for _, d := range deps {
			sh.readers[d] = append(sh.readers[d], int32(i))
			sh.lastRead[d] = int32(i)
		}
	}
	sh.fwdEnd, sh.training, sh.linear = n-1, false, true
	m := 0 // the chain prefix is 0 … m
	for m+1 < n && len(p.Deps[m+1]) == 1 && int(p.Deps[m+1][0]) == m {
		m++
	}
	if m+1 >= n {
		return sh // a chain
	}
	if trainingChain(p, m) {
		sh.fwdEnd, sh.training = m, true
		return sh
	}
	sh.linear = false
	if l, ok := lifoSplit(sh); ok {
		sh.fwdEnd, sh.training = l, true
	}
	return sh
}

// trainingChain reports whether the nodes after the chain prefix 0 … m
// each read their predecessor and otherwise only nodes up to m.
func trainingChain(p *remat.Problem, m int) bool {
	for i := m + 1; i < p.N(); i++ {
		deps := p.Deps[i]
		if len(deps) == 0 || int(deps[len(deps)-1]) != i-1 {
			return false
		}
		if len(deps) >= 2 && int(deps[len(deps)-2]) > m {
			return false
		}
	}
	return true
}

// lifoSplit finds the loss of a training graph that is not a chain (see
// shape): the last step after which the most values wait for a later
// reader, when those values are consumed in reverse order of production.
func lifoSplit(sh *shape) (int, bool) {
	n := sh.n
	delta := make([]int, n+1)
	for i, l := range sh.lastRead {
		if int(l) > i {
			delta[i]++
			delta[l]--
		}
	}
	best, at, cur := 0, -1, 0
	for t := range n {
		cur += delta[t]
		if cur >= best && cur > 0 {
			best, at = cur, t
		}
	}
	if best < 3 {
		return 0, false
	}
	var last []int32 // last readers of the values waiting after step at, by producer
	for i := 0; i <= at; i++ {
		if int(sh.lastRead[i]) > at {
			last = append(last, sh.lastRead[i])
		}
	}
	k := int64(len(last))
	ascending := ascendingPairs(slices.Clone(last))
	distinct := slices.Clone(last)
	slices.Sort(distinct)
	if len(slices.Compact(distinct)) < 3 || 4*ascending > k*(k-1)/2 {
		return 0, false
	}
	return at, true
}

// ascendingPairs counts the pairs i < j with a[i] < a[j], by merge sort in
// O(k log k); it sorts a into decreasing order.
func ascendingPairs(a []int32) int64 {
	if len(a) < 2 {
		return 0
	}
	mid := len(a) / 2
	c := ascendingPairs(a[:mid]) + ascendingPairs(a[mid:])
	merged := make([]int32, 0, len(a))
	i, j := 0, mid
	for i < mid && j < len(a) {
		if a[i] >= a[j] {
			merged = append(merged, a[i])
			i++
		} else {
			// a[j] exceeds every a[i…mid), all before it.
			c += int64(mid - i)
			merged = append(merged, a[j])
			j++
		}
	}
	merged = append(merged, a[i:mid]...)
	merged = append(merged, a[j:]...)
	copy(a, merged)
	return c
}

// stages turns keep spans into R with Algorithm 2's repairs (see the top
// of this file): the rows of R as lists, each sorted. Pinned nodes are
// kept from their computation to the end, so they are never recomputed.
func (sh *shape) stages(p *remat.Problem, k *keeps) [][]int32 {
	n := sh.n
	for i := range n {
		if sh.pinned[i] {
			k.keep(i, i+1, n-1)
		}
	}
	k.normalize()
	stages := make([][]int32, n)
	for t := range n {
		stages[t] = []int32{int32(t)}
	}
	// (1c): a span that does not start right after the node's own stage
	// needs the value computed in the stage before it.
	for i, sp := range k.spans {
		for _, s := range sp {
			if int(s.from) > i+1 {
				stages[s.from-1] = append(stages[s.from-1], int32(i))
			}
		}
	}
	// (1b): close each stage under "a dependency neither retained into the
	// stage nor computed in it is computed in it".
	mark := make([]int32, n) // t+1 while stage t holds the node
	for t := range n {
		st := stages[t]
		for _, i := range st {
			mark[i] = int32(t) + 1
		}
		for q := 0; q < len(st); q++ {
			for _, d := range p.Deps[st[q]] {
				if mark[d] != int32(t)+1 && !k.has(int(d), t) {
					mark[d] = int32(t) + 1
					st = append(st, d)
				}
			}
		}
		slices.Sort(st)
		stages[t] = st
	}
	sh.dropDead(p, stages)
	return stages
}

// dropDead removes, in place, every recomputation whose value no later
// computation reads before the value is computed again (and that is not
// a graph output's last computation). It walks the execution order
// backward with the set of values some later step reads.
func (sh *shape) dropDead(p *remat.Problem, stages [][]int32) {
	wanted := make([]bool, sh.n)
	for _, o := range p.Outputs {
		wanted[o] = true
	}
	for t := sh.n - 1; t >= 0; t-- {
		st := stages[t]
		w := len(st)
		for q := len(st) - 1; q >= 0; q-- {
			i := st[q]
			if int(i) != t && !wanted[i] {
				continue
			}
			wanted[i] = false
			for _, d := range p.Deps[i] {
				wanted[d] = true
			}
			w--
			st[w] = i
		}
		stages[t] = st[w:]
	}
}

// candidate is one plan a method produced, measured.
type candidate struct {
	plan *remat.Plan
	res  remat.CheckResult
}

// maxRounds bounds the rounds of build's extensions within segments, a
// safety net: R only shrinks from round to round, so a second round
// normally finds nothing left to do.
const maxRounds = 16

// build completes the spans into a plan and measures it. Between rounds
// of Algorithm 2's repairs it extends spans where the rule they state
// says a value should stay: a keepToLast span to the last recomputation
// that reads the value (see the top of this file), and, within a segment
// (keeps.group), a value recomputed in one stage and again in a later one
// is kept from the first to the second instead, so that a segment
// recomputes a value at most once. An error is a bug in the method: every
// R the repairs produce is legal.
func (sh *shape) build(p *remat.Problem, k *keeps) (candidate, error) {
	st := sh.stages(p, k)
	readAt := make([]int32, sh.n) // the last stage that reads each value
	for t, row := range st {
		for _, i := range row {
			for _, d := range p.Deps[i] {
				readAt[d] = int32(t)
			}
		}
	}
	again := false
	for i, from := range k.last {
		if from >= 0 && readAt[i] > sh.lastRead[i] && !k.has(i, int(readAt[i])) {
			k.keep(i, int(from), int(readAt[i]))
			again = true
		}
	}
	if again {
		st = sh.stages(p, k)
	}
	if k.group != nil {
		prev := make([]int32, sh.n) // the stage that last recomputed each value, −1 when none
		for round := 0; round < maxRounds; round++ {
			for i := range prev {
				prev[i] = -1
			}
			again = false
			for t, row := range st {
				g := k.group[t]
				for _, i := range row {
					if int(i) == t {
						continue
					}
					if r := prev[i]; r >= 0 && g >= 0 && k.group[r] == g {
						k.keep(int(i), int(r)+1, t)
						again = true
					}
					prev[i] = int32(t)
				}
			}
			if !again {
				break
			}
			st = sh.stages(p, k)
		}
	}
	plan, err := remat.ScheduleStages(p, st)
	if err != nil {
		return candidate{}, fmt.Errorf("remat: internal error: checkpointing produced an illegal R: %w", err)
	}
	res, err := remat.Evaluate(p, plan)
	if err != nil {
		return candidate{}, fmt.Errorf("remat: internal error: checkpointing produced an illegal plan: %w", err)
	}
	return candidate{plan, res}, nil
}

// tracker keeps the best plans a search has measured and reports
// progress: the cheapest within the budget (ties: the lower peak, then the
// earlier found) and the one with the least peak (ties: the cheaper).
type tracker struct {
	p        *remat.Problem
	name     string
	progress func(remat.Progress)
	start    time.Time
	fit, low *candidate
	tried    int
}

func newTracker(p *remat.Problem, name string, progress func(remat.Progress)) *tracker {
	return &tracker{p: p, name: name, progress: progress, start: time.Now()}
}

// offer records a measured plan and reports progress with note.
func (tr *tracker) offer(c candidate, note string) {
	tr.tried++
	better := func(a, b candidate) bool {
		return a.res.TotalSeconds < b.res.TotalSeconds ||
			a.res.TotalSeconds == b.res.TotalSeconds && a.res.PeakBytes < b.res.PeakBytes
	}
	if c.res.PeakBytes <= tr.p.BudgetBytes && (tr.fit == nil || better(c, *tr.fit)) {
		tr.fit = &c
	}
	if tr.low == nil || c.res.PeakBytes < tr.low.res.PeakBytes ||
		c.res.PeakBytes == tr.low.res.PeakBytes && c.res.TotalSeconds < tr.low.res.TotalSeconds {
		tr.low = &c
	}
	if tr.progress != nil {
		lb := tr.p.LowerBoundSeconds()
		inc, gap := math.Inf(1), math.Inf(1)
		if tr.fit != nil {
			inc, gap = tr.fit.res.TotalSeconds, gapOf(tr.fit.res.TotalSeconds, lb)
		}
		tr.progress(remat.Progress{Elapsed: time.Since(tr.start).Seconds(), Incumbent: inc, Bound: lb, Gap: gap, Note: note})
	}
}

// optimal reports that the plan within the budget computes nothing twice
// at a cost no plan can beat, so the search may stop.
func (tr *tracker) optimal() bool {
	return tr.fit != nil && tr.fit.res.TotalSeconds <= tr.p.LowerBoundSeconds()
}

func gapOf(cost, lb float64) float64 {
	if cost <= lb || cost <= 0 {
		return 0
	}
	return (cost - lb) / cost
}

// result is what Solve returns: the cheapest plan within the budget, after
// remat.Check; otherwise, when the search ran to its end (cut is nil), a
// *remat.BudgetError carrying the plan of least peak (not Proven: a
// heuristic proves nothing); otherwise cut, the context's error that
// stopped it.
func (tr *tracker) result(cut error) (*remat.Plan, error) {
	p := tr.p
	if tr.fit == nil {
		if cut != nil {
			return nil, fmt.Errorf("%s: %w before any plan within the budget was found (%d tried)", tr.name, cut, tr.tried)
		}
		if tr.low == nil {
			return nil, fmt.Errorf("remat: internal error: %s produced no plan", tr.name)
		}
		plan := tr.low.plan
		tr.label(plan, tr.low.res, false)
		return nil, &remat.BudgetError{NeedBytes: tr.low.res.PeakBytes, HaveBytes: p.BudgetBytes, Plan: plan}
	}
	plan := tr.fit.plan
	tr.label(plan, tr.fit.res, true)
	if _, err := remat.Check(p, plan); err != nil {
		return nil, fmt.Errorf("remat: internal error: %s: the plan it measured within the budget fails Check: %w", tr.name, err)
	}
	return plan, nil
}

// label fills in the plan's solver name and bounds: no plan costs less
// than computing every node once, and a plan within the budget that does
// no more is optimal.
func (tr *tracker) label(plan *remat.Plan, res remat.CheckResult, fits bool) {
	lb := tr.p.LowerBoundSeconds()
	plan.Solver = tr.name
	plan.LowerBound = lb
	plan.Gap = gapOf(res.TotalSeconds, lb)
	plan.Optimal = fits && res.TotalSeconds <= lb
}
