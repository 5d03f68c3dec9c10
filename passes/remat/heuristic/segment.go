package heuristic

// segment.go turns checkpoint sets into segment plans for the segmenting
// baselines (chen, ap, linearized): the √n and greedy rules and the search
// over the greedy budget b.

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// # Segments
//
// Chen et al. (2016) §4.1 split a chain into segments, keep only the
// segment boundaries (the checkpoints) during the forward pass and, during
// the backward pass, recompute one segment at a time from the checkpoint
// before it. Checkmate applies the same rule to the candidates of a DAG:
// articulation points (App. B.1) or every node in topological order
// (App. B.2). Given the checkpoints, segmentKeeps states the rule as keep
// spans (keep.go) over the forward part 0 … ℓ (see shape):
//
//   - A checkpoint, a pinned value (a node that may not be recomputed, a
//     graph output) and every node of the backward part are kept from
//     their computation until their last reader, recomputations included.
//     Pinned values are checkpoints in that sense, but they do not cut
//     segments: a boundary is where the method drops what it does not
//     keep, and keeping a value that must be kept anyway is no reason to
//     drop the others.
//   - Segment k is the nodes after checkpoint c_{k−1} up to and including
//     checkpoint c_k; the nodes after the last checkpoint form a last,
//     open segment. A value that is not a checkpoint is kept until the end
//     of its segment, for the readers inside it.
//   - Forward readers after the segment (a DAG's edges that cross a
//     boundary, which a chain does not have): a value is kept past its
//     segment only when it is a checkpoint, so a later segment that reads
//     it recomputes it, from the nearest values still kept, just before
//     its first reader in that segment, and keeps it until its last reader
//     there; so does a value recomputed on the way, when the segment needs
//     it again. That is also the whole rule for an inference graph, which
//     has no backward part: recomputation happens just before use, at most
//     once per segment that uses the value.
//   - Backward readers (training graphs only): Chen's backward pass. The
//     values of segment k are recomputed together, once, just before the
//     first backward node that reads them (and no other segment's), and
//     each is then kept until its last reader, recomputations included;
//     the backward pass thus recomputes each segment once, in reverse
//     order, at the cost of at most one extra forward pass. A backward
//     node that reads values of several segments — a loss reading outputs
//     scattered over the forward pass, a gradient whose inputs straddle a
//     boundary — is not the backward pass of any one segment: like a
//     reader in an inference graph, it recomputes what it reads just
//     before use, and opens no segment early. The values of the last
//     segment, the one the forward pass ends in, are still resident when
//     the backward pass begins and are kept, not recomputed.
//
// All of this only places recomputations; legality comes from Algorithm
// 2's repairs (keep.go), which recompute whatever else a recomputation
// reads, back to kept values.

// segmentKeeps returns the keep spans of Chen's rule for checkpoints ckpt
// (indexed by node; only the forward part is consulted).
func (sh *shape) segmentKeeps(ckpt []bool) *keeps {
	n, l := sh.n, sh.fwdEnd
	k := newKeeps(n)
	// seg[v] numbers v's segment; end[s] is its last node.
	seg := make([]int32, l+1)
	var end []int32
	for v := 0; v <= l; v++ {
		seg[v] = int32(len(end))
		if ckpt[v] || v == l {
			end = append(end, int32(v))
		}
	}
	// window[s]: the first backward node that reads non-checkpoint values
	// of segment s and of no other segment, where the backward pass
	// recomputes the segment.
	window := make([]int32, len(end))
	for s := range window {
		window[s] = math.MaxInt32
	}
	k.group = make([]int32, n)
	for t := range n {
		k.group[t] = -1
		if t <= l {
			k.group[t] = seg[t]
		}
	}
	isCkpt := func(v int) bool { return v > l || ckpt[v] || sh.pinned[v] }
	for j := l + 1; j < n; j++ {
		s := int32(-1)
		for _, v := range sh.deps[j] {
			if int(v) > l || isCkpt(int(v)) {
				continue
			}
			if s >= 0 && seg[v] != s {
				s = -2
				break
			}
			s = seg[v]
		}
		if s >= 0 {
			window[s] = min(window[s], int32(j))
		}
	}
	for v := range n {
		if isCkpt(v) {
			k.keepToLast(v, v+1, int(sh.lastRead[v]))
			continue
		}
		s := seg[v]
		if sh.training && int(s) == len(end)-1 {
			k.keepToLast(v, v+1, int(sh.lastRead[v]))
			continue
		}
		e := int(end[s])
		k.keep(v, v+1, e)
		rd := sh.readers[v]
		for q := 0; q < len(rd); {
			j := int(rd[q])
			switch {
			case j <= e:
				q++
			case j <= l: // a later segment: recompute before its first reader there
				s2, last := seg[j], j
				for q < len(rd) && int(rd[q]) <= l && seg[rd[q]] == s2 {
					last = int(rd[q])
					q++
				}
				k.keep(v, j+1, last)
			default: // the backward pass: recompute with the segment
				if window[s] != math.MaxInt32 {
					k.keepToLast(v, int(window[s])+1, int(sh.lastRead[v]))
				}
				q = len(rd)
			}
		}
	}
	return k
}

// candidates returns the forward nodes in cand that are not pinned (pinned
// nodes are checkpoints anyway), in order.
func (sh *shape) candidates(cand func(v int) bool) []int32 {
	var out []int32
	for v := 0; v <= sh.fwdEnd; v++ {
		if !sh.pinned[v] && cand(v) {
			out = append(out, int32(v))
		}
	}
	return out
}

// sqrtN is Chen et al.'s √n rule (§4.1; Checkmate Table 1, "Chen et al.
// √n") on a candidate sequence of length c: every ⌊√c⌋-th candidate is a
// checkpoint, which cuts the sequence into about √c segments of about √c
// candidates each.
func (sh *shape) sqrtN(cands []int32) []bool {
	ckpt := make([]bool, sh.n)
	k := max(1, int(math.Sqrt(float64(len(cands)))))
	for q := k - 1; q < len(cands); q += k {
		ckpt[cands[q]] = true
	}
	return ckpt
}

// greedy is Chen et al.'s greedy rule with segment budget b (§4.2, the
// "memory planning with budget" search; Checkmate Table 1, "Chen et al.
// greedy"): walking the forward part in order, add each node's bytes to
// the running size of the current segment; a candidate at which that size
// exceeds b closes the segment as a checkpoint. A negative b makes every
// candidate a checkpoint.
func (sh *shape) greedy(p *remat.Problem, cand []bool, b int64) []bool {
	ckpt := make([]bool, sh.n)
	var run int64
	for v := 0; v <= sh.fwdEnd; v++ {
		run += p.Bytes[v]
		if cand[v] && run > b {
			ckpt[v] = true
			run = 0
		}
	}
	return ckpt
}

// maxGreedyTries bounds the plans a greedy search measures.
const maxGreedyTries = 128

// greedyBudgets returns the values of b worth trying, increasing: −1
// (every candidate a checkpoint) and every sum of the bytes of a run of
// consecutive forward nodes ending at a candidate, the only values at
// which the greedy rule's choices change; on a forward part of more than
// 200 nodes, 1024 evenly spaced budgets instead.
func (sh *shape) greedyBudgets(p *remat.Problem, cand []bool) []int64 {
	l := sh.fwdEnd
	bs := []int64{-1}
	if l < 200 {
		for i := 0; i <= l; i++ {
			var sum int64
			for j := i; j <= l; j++ {
				sum += p.Bytes[j]
				if cand[j] {
					bs = append(bs, sum)
				}
			}
		}
	} else {
		var total int64
		for v := 0; v <= l; v++ {
			total += p.Bytes[v]
		}
		const steps = 1024
		for s := int64(0); s <= steps; s++ {
			bs = append(bs, total/steps*s+total%steps*s/steps)
		}
	}
	slices.Sort(bs)
	return slices.Compact(bs)
}

// spread returns 0 … m−1 coarse to fine (0, then the van der Corput
// sequence: m/2, m/4, 3m/4, …), so that the first entries of a search cut
// short cover the whole range.
func spread(m int) []int {
	if m == 0 {
		return nil
	}
	bits := 0
	for 1<<bits < m {
		bits++
	}
	out := make([]int, 0, m)
	for x := range 1 << bits {
		r := 0
		for b := range bits {
			if x>>b&1 != 0 {
				r |= 1 << (bits - 1 - b)
			}
		}
		if r < m {
			out = append(out, r)
		}
	}
	return out
}

// sqrtNPlan builds the √n plan over cands and returns it through Check.
func sqrtNPlan(ctx context.Context, p *remat.Problem, sh *shape, cands []int32, tr *tracker, what string) (*remat.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", tr.name, err)
	}
	ckpt := sh.sqrtN(cands)
	c, err := sh.build(p, sh.segmentKeeps(ckpt))
	if err != nil {
		return nil, err
	}
	tr.offer(c, fmt.Sprintf("%d of %d %s as checkpoints (%s)", countTrue(ckpt), len(cands), what, sh.describe()))
	return tr.result(nil)
}

// greedyPlan runs the greedy rule over cands for each segment budget b of
// greedyBudgets that gives a different checkpoint set (at most
// maxGreedyTries of them, spread over the range, the all-candidates set
// first) and returns the cheapest plan within the budget.
func greedyPlan(ctx context.Context, p *remat.Problem, sh *shape, cands []int32, tr *tracker, what string) (*remat.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", tr.name, err)
	}
	cand := make([]bool, sh.n)
	for _, v := range cands {
		cand[v] = true
	}
	type choice struct {
		b    int64
		ckpt []bool
	}
	var choices []choice
	seen := map[string]bool{}
	key := make([]byte, sh.fwdEnd/8+1) // the checkpoint set, one bit a node
	for _, b := range sh.greedyBudgets(p, cand) {
		ckpt := sh.greedy(p, cand, b)
		clear(key)
		for v := 0; v <= sh.fwdEnd; v++ {
			if ckpt[v] {
				key[v/8] |= 1 << (v % 8)
			}
		}
		if !seen[string(key)] {
			seen[string(key)] = true
			choices = append(choices, choice{b, ckpt})
		}
	}
	order := spread(len(choices))
	if len(order) > maxGreedyTries {
		order = order[:maxGreedyTries]
	}
	var cut error
	for _, q := range order {
		if cut = ctx.Err(); cut != nil || tr.optimal() {
			break
		}
		ch := choices[q]
		c, err := sh.build(p, sh.segmentKeeps(ch.ckpt))
		if err != nil {
			return nil, err
		}
		tr.offer(c, fmt.Sprintf("b=%d: %d of %d %s as checkpoints (%s)", ch.b, countTrue(ch.ckpt), len(cands), what, sh.describe()))
	}
	return tr.result(cut)
}

func countTrue(b []bool) int {
	c := 0
	for _, x := range b {
		if x {
			c++
		}
	}
	return c
}

// describe says how the method sees the graph, for progress notes.
func (sh *shape) describe() string {
	kind := "inference graph"
	if sh.training {
		kind = fmt.Sprintf("training graph, backward from node %d", sh.fwdEnd+1)
	}
	if sh.linear {
		return "linear " + kind
	}
	return kind
}
