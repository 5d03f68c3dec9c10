package order

import (
	"context"
	"fmt"
	"slices"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// improve is the local search under the full options: it tries the moves
// of moves on the current order, keeps the first whose simulation is
// better, and starts over, until no move helps or maxEvals simulations
// have run.
func improve(ctx context.Context, g *ir.Graph, cur []*ir.Node, r *memory.Result, mem memory.Options, maxEvals int) ([]*ir.Node, *memory.Result, int, int, error) {
	preds, succs := dependencies(g.Nodes)
	file := make(map[*ir.Node]int32, len(g.Nodes))
	for i, n := range g.Nodes {
		file[n] = int32(i)
	}
	evals, kept := 0, 0
	for evals < maxEvals {
		if err := ctx.Err(); err != nil {
			return nil, nil, 0, 0, err
		}
		improved := false
		for _, cand := range moves(cur, r, file, preds, succs) {
			if evals >= maxEvals {
				break
			}
			evals++
			c, err := memory.Simulate(g, cand, mem)
			if err != nil {
				return nil, nil, 0, 0, fmt.Errorf("order: internal error: a local move broke the order: %w", err)
			}
			if better(c, r) {
				cur, r = cand, c
				kept++
				improved = true
				break
			}
		}
		if !improved {
			break
		}
	}
	return cur, r, evals, kept, nil
}

// moves lists the candidate orders one move away from cur (whose
// simulation is r), most promising first. Each moves a block of nodes
// across the peak step p and stays topological:
//
//   - for a buffer allocated at the peak whose producer runs at s < p: the
//     producer and its descendants among steps s..p run right after p
//     (unless the peak node is one of them), so the buffer is allocated
//     after the peak;
//   - for a value allocated at the peak with readers after p: those
//     readers and their ancestors among steps p..end run right before p
//     (unless the peak node is one of them), so the value is released
//     before the peak;
//   - the peak node itself runs as early, and as late, as its
//     dependencies allow.
func moves(cur []*ir.Node, r *memory.Result, file map[*ir.Node]int32, preds, succs [][]int32) [][]*ir.Node {
	p := r.PeakStep
	if p < 0 {
		return nil
	}
	n := len(cur)
	at := make([]int, len(cur)) // step of each node by file index
	for i, nd := range cur {
		at[file[nd]] = i
	}
	var out [][]*ir.Node
	emit := func(seq []*ir.Node) {
		for _, o := range out {
			if slices.Equal(o, seq) {
				return
			}
		}
		out = append(out, seq)
	}
	// closure marks the nodes among steps [from, to] reachable from the
	// marked seeds along edges (succs forward from the seeds when forward,
	// preds backward otherwise).
	closure := func(seeds []int, from, to int, forward bool) []bool {
		in := make([]bool, n)
		for _, s := range seeds {
			in[s] = true
		}
		if forward {
			for i := from; i <= to; i++ {
				if in[i] {
					continue
				}
				for _, q := range preds[file[cur[i]]] {
					if j := at[q]; j >= from && in[j] {
						in[i] = true
						break
					}
				}
			}
		} else {
			for i := to; i >= from; i-- {
				if in[i] {
					continue
				}
				for _, q := range succs[file[cur[i]]] {
					if j := at[q]; j <= to && in[j] {
						in[i] = true
						break
					}
				}
			}
		}
		return in
	}
	// after moves the marked steps of [from, p] to right after p; before
	// the marked steps of [p, to] to right before p.
	after := func(in []bool, from int) []*ir.Node {
		seq := make([]*ir.Node, 0, n)
		seq = append(seq, cur[:from]...)
		for i := from; i <= p; i++ {
			if !in[i] {
				seq = append(seq, cur[i])
			}
		}
		for i := from; i <= p; i++ {
			if in[i] {
				seq = append(seq, cur[i])
			}
		}
		return append(seq, cur[p+1:]...)
	}
	before := func(in []bool, to int) []*ir.Node {
		seq := make([]*ir.Node, 0, n)
		seq = append(seq, cur[:p]...)
		for i := p; i <= to; i++ {
			if in[i] {
				seq = append(seq, cur[i])
			}
		}
		for i := p; i <= to; i++ {
			if !in[i] {
				seq = append(seq, cur[i])
			}
		}
		return append(seq, cur[to+1:]...)
	}
	for _, l := range r.AtPeak {
		if l.Bytes == 0 {
			continue // shares a buffer counted elsewhere
		}
		if s := l.Step; s < p {
			if in := closure([]int{s}, s, p, true); !in[p] {
				emit(after(in, s))
			}
		}
		var readers []int
		last := -1
		for _, u := range l.Value.Uses {
			if j, ok := file[u.Node]; ok && at[j] > p {
				readers = append(readers, at[j])
				last = max(last, at[j])
			}
		}
		if len(readers) > 0 {
			if in := closure(readers, p, last, false); !in[p] {
				emit(before(in, last))
			}
		}
	}
	// The peak node as early and as late as it may run.
	v := file[cur[p]]
	lo, hi := 0, n-1
	for _, q := range preds[v] {
		lo = max(lo, at[q]+1)
	}
	for _, q := range succs[v] {
		hi = min(hi, at[q]-1)
	}
	for _, to := range []int{lo, hi} {
		if to != p {
			emit(moveTo(cur, p, to))
		}
	}
	return out
}

// moveTo returns cur with the node at step from moved to step to.
func moveTo(cur []*ir.Node, from, to int) []*ir.Node {
	seq := make([]*ir.Node, 0, len(cur))
	x := cur[from]
	for i, nd := range cur {
		if i == from {
			continue
		}
		if i == to && to < from {
			seq = append(seq, x)
		}
		seq = append(seq, nd)
		if i == to && to > from {
			seq = append(seq, x)
		}
	}
	return seq
}

// permute is the first local search under the full options. Each segment
// of p (ends as from problem.segments) runs contiguously in every
// topological order; within one, the nodes other than a closing sequence
// point fall into independent components (the branches of an inception
// module). For segments of two to maxPerm components it tries every order
// of running the components one after another (each keeping its current
// inner order), and otherwise the components by decreasing and by
// increasing size, and keeps a candidate when its full simulation is
// better. cur must list p.pre first, then the segments in order.
func permute(ctx context.Context, g *ir.Graph, p *problem, ends []int32, cur []*ir.Node, r *memory.Result, mem memory.Options, maxEvals int) ([]*ir.Node, *memory.Result, int, int, error) {
	const maxPerm = 5
	evals, kept := 0, 0
	lo := int32(0)
	for _, hi := range ends {
		if err := ctx.Err(); err != nil {
			return nil, nil, 0, 0, err
		}
		seg := int32(hi - lo)
		closing := p.isSequencePoint(hi - 1)
		free := seg
		if closing {
			free--
		}
		comps := p.components(lo, lo+free)
		start := len(p.pre) + int(lo)
		var cands [][][]int32
		switch k := len(comps); {
		case k < 2:
		case k <= maxPerm:
			for _, perm := range permutations(k) {
				c := make([][]int32, k)
				for i, j := range perm {
					c[i] = comps[j]
				}
				cands = append(cands, c)
			}
		default:
			bySize := slices.Clone(comps)
			slices.SortStableFunc(bySize, func(a, b []int32) int { return len(b) - len(a) })
			cands = append(cands, bySize, slices.Clone(bySize))
			slices.Reverse(cands[1])
		}
		// Members of each component in their current order.
		at := map[*ir.Node]int{}
		for i := start; i < start+int(seg); i++ {
			at[cur[i]] = i
		}
		for _, c := range cands {
			if evals >= maxEvals {
				return cur, r, evals, kept, nil
			}
			seq := slices.Clone(cur)
			k := start
			for _, comp := range c {
				nodes := make([]*ir.Node, len(comp))
				for i, v := range comp {
					nodes[i] = p.nodes[v]
				}
				slices.SortFunc(nodes, func(a, b *ir.Node) int { return at[a] - at[b] })
				k += copy(seq[k:], nodes)
			}
			if slices.Equal(seq, cur) {
				continue
			}
			evals++
			cr, err := memory.Simulate(g, seq, mem)
			if err != nil {
				return nil, nil, 0, 0, fmt.Errorf("order: internal error: a permutation broke the order: %w", err)
			}
			if better(cr, r) {
				cur, r = seq, cr
				kept++
				for i := start; i < start+int(seg); i++ {
					at[cur[i]] = i
				}
			}
		}
		lo = hi
	}
	return cur, r, evals, kept, nil
}

// permutations lists the permutations of 0..k-1 in lexicographic order.
func permutations(k int) [][]int {
	var out [][]int
	perm := make([]int, k)
	used := make([]bool, k)
	var rec func(i int)
	rec = func(i int) {
		if i == k {
			out = append(out, slices.Clone(perm))
			return
		}
		for j := 0; j < k; j++ {
			if !used[j] {
				used[j] = true
				perm[i] = j
				rec(i + 1)
				used[j] = false
			}
		}
	}
	rec(0)
	return out
}
