package arena

import (
	"cmp"
	"slices"
)

// item is one buffer to place: an aligned size and a closed step interval.
type item struct {
	size        int64
	first, last int
}

func (a item) meets(b item) bool { return a.first <= b.last && b.first <= a.last }

// solution is a placement of items.
type solution struct {
	offsets []int64
	arena   int64
	greedy  int64 // the greedy (largest first) arena
	optimal bool  // proved minimal
	method  string
}

// orderings are the placement orders the improving search tries, by name;
// each sorts indices of items (ties: the earlier index first). The first
// is the greedy planner's.
var orderings = []struct {
	name string
	less func(a, b item) int
}{
	{"largest-first", func(a, b item) int {
		return cmpChain(cmp.Compare(b.size, a.size), (b.last-b.first)-(a.last-a.first), a.first-b.first)
	}},
	{"longest-lived-first", func(a, b item) int {
		return cmpChain((b.last-b.first)-(a.last-a.first), cmp.Compare(b.size, a.size), a.first-b.first)
	}},
	{"earliest-first", func(a, b item) int {
		return cmpChain(a.first-b.first, cmp.Compare(b.size, a.size), b.last-a.last)
	}},
	{"largest-area-first", func(a, b item) int {
		return cmpChain(cmp.Compare(b.size*int64(b.last-b.first+1), a.size*int64(a.last-a.first+1)), cmp.Compare(b.size, a.size), a.first-b.first)
	}},
}

func cmpChain(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

// solve places every item: per cluster (items connected through meeting
// lifetimes) the greedy order, the other orderings, move-to-front rounds
// and, on small clusters, the branch and bound; the best per cluster wins.
func solve(items []item, opts Options) solution {
	sol := solution{offsets: make([]int64, len(items)), optimal: true}
	if len(items) == 0 {
		sol.method = orderings[0].name
		return sol
	}
	for _, cl := range clusters(items) {
		sub := make([]item, len(cl))
		for i, k := range cl {
			sub[i] = items[k]
		}
		lb, _ := livePeak(shift(sub), span(sub))
		var best []int64
		bestArena, greedy := int64(-1), int64(0)
		method := ""
		try := func(name string, order []int) []int64 {
			offs, top := place(sub, order)
			if bestArena < 0 || top < bestArena {
				best, bestArena, method = offs, top, name
			}
			return offs
		}
		for k, o := range orderings {
			if k > 0 && bestArena == lb {
				break // nothing is smaller than the live peak
			}
			try(o.name, sortedOrder(sub, o.less))
			if k == 0 {
				greedy = bestArena
			}
		}
		// Move to front: the buffer that ends highest goes first.
		order := sortedOrder(sub, orderings[0].less)
		for r := 0; r < opts.Rounds && bestArena > lb; r++ {
			offs := try("move-to-front", order)
			hi := 0
			for i, k := range order {
				if offs[k]+sub[k].size > offs[order[hi]]+sub[order[hi]].size {
					hi = i
				}
			}
			if hi == 0 {
				break
			}
			front := order[hi]
			rest := slices.Delete(slices.Clone(order), hi, hi+1)
			order = append([]int{front}, rest...)
		}
		proved := bestArena == lb
		if !proved && opts.ExactBuffers > 0 && len(sub) <= opts.ExactBuffers {
			offs, top, done := branchAndBound(sub, conflicts(sub), bestArena, lb, opts.MaxNodes)
			if offs != nil {
				best, bestArena, method = offs, top, "branch-and-bound"
			}
			proved = done || bestArena == lb
		}
		sol.optimal = sol.optimal && proved
		for i, k := range cl {
			sol.offsets[k] = best[i]
		}
		if bestArena > sol.arena || sol.method == "" {
			sol.arena, sol.method = max(sol.arena, bestArena), method
		}
		sol.greedy = max(sol.greedy, greedy)
	}
	return sol
}

// shift moves the items' steps to start at 0; span is the steps they
// cover.
func shift(items []item) []item {
	lo := items[0].first
	for _, it := range items {
		lo = min(lo, it.first)
	}
	out := make([]item, len(items))
	for i, it := range items {
		out[i] = item{it.size, it.first - lo, it.last - lo}
	}
	return out
}

func span(items []item) int {
	lo, hi := items[0].first, items[0].last
	for _, it := range items {
		lo, hi = min(lo, it.first), max(hi, it.last)
	}
	return hi - lo + 1
}

// clusters groups item indices whose lifetimes are connected through
// meeting intervals, by first step.
func clusters(items []item) [][]int {
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return items[a].first - items[b].first })
	var out [][]int
	end := -1
	for _, k := range idx {
		if len(out) == 0 || items[k].first > end {
			out = append(out, nil)
			end = items[k].last
		}
		out[len(out)-1] = append(out[len(out)-1], k)
		end = max(end, items[k].last)
	}
	return out
}

func sortedOrder(items []item, less func(a, b item) int) []int {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return less(items[a], items[b]) })
	return order
}

// conflicts lists, for each item, the items whose lifetimes meet its own
// (a sweep by first step).
func conflicts(items []item) [][]int {
	out := make([][]int, len(items))
	byFirst := sortedOrder(items, func(a, b item) int { return a.first - b.first })
	var active []int
	for _, k := range byFirst {
		active = slices.DeleteFunc(active, func(j int) bool { return items[j].last < items[k].first })
		for _, j := range active {
			out[k] = append(out[k], j)
			out[j] = append(out[j], k)
		}
		active = append(active, k)
	}
	return out
}

// place puts the items in the given order, each at the lowest offset
// where it overlaps no placed item whose lifetime meets its own; sizes
// are aligned, so offsets are too. It returns the offsets by item and the
// top. The placed items are kept sorted by offset, so each placement is
// one scan.
func place(items []item, order []int) ([]int64, int64) {
	offs := make([]int64, len(items))
	byOffset := make([]int, 0, len(items))
	var top int64
	for _, k := range order {
		it := items[k]
		var at int64
		for _, j := range byOffset {
			if !items[j].meets(it) {
				continue
			}
			if at+it.size <= offs[j] {
				break
			}
			at = max(at, offs[j]+items[j].size)
		}
		offs[k] = at
		i, _ := slices.BinarySearchFunc(byOffset, at, func(j int, at int64) int { return cmp.Compare(offs[j], at) })
		byOffset = slices.Insert(byOffset, i, k)
		top = max(top, at+it.size)
	}
	return offs, top
}

// lowest returns the lowest offset at which size bytes overlap none of the
// conflicting placed items (their offsets in offs); conf is reordered.
func lowest(items []item, offs []int64, conf []int, size int64) int64 {
	slices.SortFunc(conf, func(a, b int) int { return cmp.Compare(offs[a], offs[b]) })
	var at int64
	for _, j := range conf {
		if at+size <= offs[j] {
			break
		}
		at = max(at, offs[j]+items[j].size)
	}
	return at
}

// branchAndBound searches placement orders depth first, each item at its
// lowest feasible offset, for a top below ub; lb is a lower bound (the
// live peak), reaching it ends the search. It returns the best placement
// found below ub (nil when none), its top, and whether the search
// finished (then the result, or ub when none, is optimal).
func branchAndBound(items []item, confs [][]int, ub, lb int64, maxNodes int) ([]int64, int64, bool) {
	n := len(items)
	offs := make([]int64, n)
	used := make([]bool, n)
	placed := make([]int, 0, n) // in placement order
	var best []int64
	bestTop := ub
	nodes := 0
	aborted := false
	// Items in the greedy order first: good plans come early.
	order := sortedOrder(items, orderings[0].less)
	rank := make([]int, n)
	for i, k := range order {
		rank[k] = i
	}
	var conf []int
	var rec func(top int64)
	rec = func(top int64) {
		if aborted || bestTop <= lb {
			return
		}
		if len(placed) == n {
			if top < bestTop {
				best, bestTop = slices.Clone(offs), top
			}
			return
		}
		for _, k := range order {
			if used[k] {
				continue
			}
			// Two items whose lifetimes do not meet get the same offsets
			// in either order: place such neighbours in rank order only.
			if p := len(placed) - 1; p >= 0 && !items[k].meets(items[placed[p]]) && rank[k] < rank[placed[p]] {
				continue
			}
			if nodes++; nodes > maxNodes {
				aborted = true
				return
			}
			conf = conf[:0]
			for _, j := range confs[k] {
				if used[j] {
					conf = append(conf, j)
				}
			}
			at := lowest(items, offs, conf, items[k].size)
			t := max(top, at+items[k].size)
			if t >= bestTop {
				continue
			}
			offs[k] = at
			used[k] = true
			placed = append(placed, k)
			rec(t)
			placed = placed[:len(placed)-1]
			used[k] = false
			if aborted || bestTop <= lb {
				return
			}
		}
	}
	rec(0)
	if aborted {
		return best, bestTop, false
	}
	return best, bestTop, true
}
