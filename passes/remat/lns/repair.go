package lns

// repair.go: the moves of the search, with an undo journal, and the
// greedy repair that brings every stage under the budget by cutting the
// retention of values across the first stage over it.

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// move is one journal entry: node i added to (or removed from) stage t.
type move struct {
	i, t  int32
	added bool
}

// journal records moves so that a rejected neighbourhood can be undone.
type journal struct{ moves []move }

func (s *state) doAdd(j *journal, i, t int32) {
	s.add(i, t)
	j.moves = append(j.moves, move{i, t, true})
}

func (s *state) doRemove(j *journal, i, t int32) {
	s.remove(i, t)
	j.moves = append(j.moves, move{i, t, false})
}

// revert undoes the moves after mark, newest first.
func (s *state) revert(j *journal, mark int) {
	for k := len(j.moves) - 1; k >= mark; k-- {
		m := j.moves[k]
		if m.added {
			s.remove(m.i, m.t)
		} else {
			s.add(m.i, m.t)
		}
	}
	j.moves = j.moves[:mark]
}

// firstOver returns the first stage at or after from whose peak exceeds
// the cap, or −1.
func (s *state) firstOver(from int) int {
	if s.nOver == 0 {
		return -1
	}
	for t := from; t < s.g.n; t++ {
		if s.cross[t]+s.local[t] > s.cap {
			return t
		}
	}
	return -1
}

// cut is a candidate repair (or an existing recomputation): compute node
// i again in stage at, so that its earlier instance is freed before the
// stage over the budget.
type cut struct {
	i, at int32
}

// cuts lists, for stage t over the cap, every recomputable node whose
// instance is held across all of stage t (allocated before it, freed after
// it), with the stages where computing it again frees that instance after
// its last reader at or before t: the stage of its first reader after t
// (for the last instance of a graph output that nothing reads after t,
// the last stage), and the few stages between t and that one listed
// below.
func (s *state) cuts(t int32, out []cut) []cut {
	g := s.g
	last := int32(g.n - 1)
	okAfter := t + 1 // the first stage after t within the cap
	for int(okAfter) < g.n && s.cross[okAfter]+s.local[okAfter] > s.cap {
		okAfter++
	}
	for i := range t {
		if !g.recomp[i] {
			continue
		}
		c := s.comp[i]
		k := latestAtMost(c, t)
		if c[k] == t {
			continue
		}
		np := g.parts(i)
		b := int32(g.n)
		if k+1 < len(c) {
			b = c[k+1]
		}
		first := b // the first stage after t reading the instance
		held := false
		for j := range np {
			if s.death(i, k, j).stage <= t {
				continue
			}
			held = true
			for _, r := range g.readers[g.partBase[i]+j] {
				if r >= first {
					break
				}
				for _, st := range s.comp[r] {
					if st > t {
						if st < first {
							first = st
						}
						break
					}
				}
			}
		}
		if !held {
			continue
		}
		if first == b {
			if b != int32(g.n) || !g.isOut[i] || t >= last {
				continue
			}
			first = last
		}
		out = append(out, cut{i, first})
		// Earlier stages after t free the instance over fewer stages but
		// may extend its dependencies less: the end of the run of stages
		// over the cap that t begins, and the stages where the
		// dependencies' instances are last read anyway.
		from := len(out) - 1
		add := func(st int32) {
			if st <= t || st >= first {
				return
			}
			for _, c := range out[from:] {
				if c.at == st {
					return
				}
			}
			out = append(out, cut{i, st})
		}
		add(okAfter)
		for _, d := range g.deps[i] {
			cd := s.comp[d]
			kd := latestAtMost(cd, first)
			np := int(g.parts(d))
			for q := range np {
				add(s.death(d, kd, int32(q)).stage)
			}
		}
	}
	return out
}

// feedsOnly reports whether dependency d of u is recomputable, not yet
// computed in stage at, and kept alive (some part of its instance before
// at) only to feed u there: computing d in stage at too then frees that
// instance earlier.
func (s *state) feedsOnly(d, u, at int32) bool {
	g := s.g
	if !g.recomp[d] || s.has(d, at) {
		return false
	}
	k := latestAtMost(s.comp[d], at)
	np := int(g.parts(d))
	for q := range np {
		if e := s.death(d, k, int32(q)); e.stage == at && e.node == u {
			return true
		}
	}
	return false
}

// grow extends a cut being evaluated (node u computed in stage at, the
// excess and recomputation cost before the cut being over0 and extra0):
// each dependency of u whose instance is now kept alive only to feed u
// there is computed in stage at as well when that raises the cut's
// reduction of the excess per second of cost, and then its own
// dependencies likewise, up to depth levels.
func (s *state) grow(j *journal, u, at int32, depth int, over0 int64, extra0, eps float64) {
	if depth == 0 {
		return
	}
	g := s.g
	for _, d := range g.deps[u] {
		if !s.feedsOnly(d, u, at) {
			continue
		}
		gain0, cost0 := float64(over0-s.over), s.extra-extra0
		mark := len(j.moves)
		s.doAdd(j, d, at)
		gain1, cost1 := float64(over0-s.over), s.extra-extra0
		if gain1 > 0 && gain1*(cost0+eps) > gain0*(cost1+eps) {
			s.grow(j, d, at, depth-1, over0, extra0, eps)
		} else {
			s.revert(j, mark)
		}
	}
}

// growCone is grow without its test: every recomputable dependency of u
// whose instance is now kept alive only to feed u in stage at is computed
// there as well, and so on for theirs, up to limit computations in all
// (it returns how many are left). Within the limit, a cut's inputs are
// then held no longer than before, whatever the chain costs: the cone of
// a value down to what is resident anyway, as a recomputation needs it
// (DTR's rematerialization of a value with its evicted ancestors,
// Kirisame et al. 2021). It adds no bytes over the stages before the cut,
// which the ratio-gated grow often must, so it helps where the memory is
// tight over a long run of stages.
func (s *state) growCone(j *journal, u, at int32, limit int) int {
	g := s.g
	for _, d := range g.deps[u] {
		if limit <= 0 {
			return 0
		}
		if !s.feedsOnly(d, u, at) {
			continue
		}
		s.doAdd(j, d, at)
		limit = s.growCone(j, d, at, limit-1)
	}
	return limit
}

// repairer holds the greedy repair's scratch space and settings.
type repairer struct {
	cands  []cut
	ranked []ranked
	top    []float64
	// noise randomizes the choice: each candidate's score is multiplied by
	// 1 + noise·U[0,1).
	noise float64
	// chainDepth bounds the dependency chains grown with a cut (grow).
	chainDepth int
	// costEps is added to costs in ratios (nodes may cost nothing).
	costEps float64
	// exact is how many of the best-ranked cuts are evaluated exactly.
	exact int
	// local scores cuts by what they fix of the stage being repaired
	// (see repairAt).
	local bool
	// failFast ends a repair at the first stage that no cut helps;
	// otherwise the other stages are still repaired (less excess).
	failFast bool
	// stop, when set, ends a repair (as failed).
	stop *atomic.Bool
	// cone, when positive, makes every cut also evaluated with its
	// dependency cone of at most cone computations (growCone).
	cone int
	// failed[t] == gen marks stage t as one that no cut helped in the
	// current repair.
	failed []int
	gen    int
}

// repair adds recomputations until no stage exceeds the cap, greedily,
// one cut at a time at the first stage over it (repairAt). It fails,
// leaving its moves in the journal, when no cut at a stage over the cap
// reduces the excess (at once with r.failFast; else after trying the
// other stages over the cap), or when r.stop is set.
func (s *state) repair(j *journal, r *repairer, rng *rand.Rand) bool {
	// A stage where no cut helps is not tried again in this repair.
	if len(r.failed) < s.g.n {
		r.failed = make([]int, s.g.n)
	}
	r.gen++
	for s.nOver > 0 {
		if r.stop != nil && r.stop.Load() {
			return false
		}
		progressed := false
		for t := s.firstOver(0); t >= 0 && !progressed; t = s.firstOver(t + 1) {
			if r.failed[t] == r.gen {
				continue
			}
			if progressed = s.repairAt(j, r, rng, int32(t)); !progressed {
				if r.failFast {
					return false
				}
				r.failed[t] = r.gen
			}
		}
		if !progressed {
			return false
		}
	}
	return true
}

// repairAt applies the best cut for stage t; false when none reduces the
// excess. The cuts are scored, per second of added cost, by how much they
// reduce the total excess (r.local false: the greedy rule of weighted set
// cover, the excess of every stage being what is to be covered) or the
// excess of stage t itself (r.local true, the total excess breaking
// ties: the cheapest fix of the stage, blind to what it does for later
// stages); the search alternates the two. A cut must reduce the total
// excess either way, so a repair ends.
func (s *state) repairAt(j *journal, r *repairer, rng *rand.Rand, t int32) bool {
	r.cands = s.cuts(t, r.cands[:0])
	// Rank the cuts by an estimate first: the instance of node i stops
	// being held over the stages t … at−1, which reduces each stage's
	// excess by at most the bytes of its parts held there (stages before
	// t, the first stage over the cap, have none), and the dependencies
	// that the new computation keeps alive longer add theirs over the
	// stages they are extended across. Only the best few are evaluated
	// exactly, with their dependency chains grown.
	r.ranked = r.ranked[:0]
	g := s.g
	excessT := s.excess(int(t))
	exact := r.exact
	top := r.top[:0] // the best estimates so far, decreasing
	for k, c := range r.cands {
		var b int64
		ci := s.comp[c.i]
		q := latestAtMost(ci, t)
		np := int(g.parts(c.i))
		for p := range np {
			if s.death(c.i, q, int32(p)).stage > t {
				b += g.bytes[g.partBase[c.i]+int32(p)]
			}
		}
		var bound int64
		if r.local {
			bound = min(b, excessT)
		} else {
			for u := t; u < c.at; u++ {
				if e := s.cross[u] + s.local[u] - s.cap; e > 0 {
					bound += min(e, b)
				}
			}
		}
		if bound <= 0 {
			continue
		}
		cost := g.seconds[c.i] + r.costEps
		score := float64(bound) / cost
		// The estimate is at most the bound: a cut whose bound does not
		// beat the exact-th best estimate so far (earlier cuts win ties)
		// cannot be among the best by the estimate, and its estimate,
		// the costliest part of the ranking, is put off (−∞ until needed
		// to break a tie of the bound below).
		if exact > 0 && len(top) == exact && score <= top[exact-1] {
			r.ranked = append(r.ranked, ranked{k, score, math.Inf(-1), bound, true})
			continue
		}
		fe := float64(s.estimate(r, c, t, bound)) / cost
		r.ranked = append(r.ranked, ranked{k, score, fe, bound, false})
		if len(top) < exact || fe > top[exact-1] {
			q := len(top)
			if q == exact {
				q--
			} else {
				top = append(top, 0)
			}
			for q > 0 && top[q-1] < fe {
				top[q] = top[q-1]
				q--
			}
			top[q] = fe
		}
	}
	r.top = top
	// The best by the estimate, and a few by the bound alone (whose
	// dependencies the exact evaluation may recompute as well).
	// Both are picked by selection, which orders them as the stable sorts
	// by est and then (of the rest) by score would, in linear time.
	selectTop(r.ranked, exact, func(a, b *ranked) bool { return a.est > b.est })
	if len(r.ranked) > exact {
		rest := r.ranked[exact:]
		selectTop(rest, exact/2, func(a, b *ranked) bool {
			if a.score != b.score {
				return a.score > b.score
			}
			for _, x := range [2]*ranked{a, b} {
				if x.pending {
					x.pending = false
					x.est = float64(s.estimate(r, r.cands[x.k], t, x.bound)) / (g.seconds[r.cands[x.k].i] + r.costEps)
				}
			}
			return a.est > b.est
		})
		r.ranked = r.ranked[:min(len(r.ranked), exact+exact/2)]
	}
	var best []move
	bestScore := 0.0
	over0, extra0 := s.over, s.extra
	// consider scores the moves after mark and undoes them.
	consider := func(mark int) {
		gain := float64(over0 - s.over)
		cost := s.extra - extra0 + r.costEps
		if gain > 0 {
			score := gain / cost
			if r.local {
				fixed := float64(excessT - max(0, s.excess(int(t))))
				score = fixed/cost + 1e-6*score
			}
			if r.noise > 0 {
				score *= 1 + r.noise*rng.Float64()
			}
			if best == nil || score > bestScore {
				best, bestScore = append(best[:0], j.moves[mark:]...), score
			}
		}
		s.revert(j, mark)
	}
	for _, rk := range r.ranked {
		c := r.cands[rk.k]
		mark := len(j.moves)
		s.doAdd(j, c.i, c.at)
		s.grow(j, c.i, c.at, r.chainDepth, over0, extra0, r.costEps)
		consider(mark)
		if r.cone > 0 {
			// The same cut with its whole dependency cone.
			s.doAdd(j, c.i, c.at)
			if s.growCone(j, c.i, c.at, r.cone) < r.cone {
				consider(mark)
			} else {
				s.revert(j, mark) // no cone: evaluated above
			}
		}
	}
	if best == nil {
		return false
	}
	for _, m := range best {
		s.doAdd(j, m.i, m.t)
	}
	return true
}

// estimate is repairAt's estimate of cut c for stage t, whose bound
// (the excess it removes at most) is given: the bound less the excess
// that the inputs of the new computation add over the stages they are
// now held across (with r.local, less the bytes of those held from before
// stage t).
func (s *state) estimate(r *repairer, c cut, t int32, bound int64) int64 {
	g := s.g
	est := bound
	for _, v := range g.reads[c.i] {
		d := g.partNode[v]
		cd := s.comp[d]
		kd := latestAtMost(cd, c.at)
		e := s.death(d, kd, v-g.partBase[d])
		if !e.before(pos{c.at, c.i}) {
			continue
		}
		bd := g.bytes[v]
		if r.local {
			if e.stage < t {
				est -= bd
			}
			continue
		}
		for u := e.stage + 1; u <= c.at; u++ {
			x := s.cross[u] + s.local[u] - s.cap
			est -= max(0, x+bd) - max(0, x)
		}
	}
	return est
}

// selectTop moves the k best elements of rs by better (a strict order)
// to its front, best first, the earliest first among equals, keeping the
// others in their order: the first k of a stable sort, in O(k·len(rs)).
func selectTop(rs []ranked, k int, better func(a, b *ranked) bool) {
	for q := 0; q < k && q < len(rs); q++ {
		b := q
		for p := q + 1; p < len(rs); p++ {
			if better(&rs[p], &rs[b]) {
				b = p
			}
		}
		if b != q {
			x := rs[b]
			copy(rs[q+1:b+1], rs[q:b])
			rs[q] = x
		}
	}
}

// ranked is a cut (an index into repairer.cands) with its bound (score,
// per second of cost) and estimate (est, per second; when pending, −∞ and
// not computed yet).
type ranked struct {
	k          int
	score, est float64
	bound      int64
	pending    bool
}

// spurious reports whether node i's computation in stage t (> i) creates
// an instance that nothing reads and that is not a kept output.
func (s *state) spurious(i, t int32) bool {
	k := index(s.comp[i], t)
	np := int(s.g.parts(i))
	for q := range np {
		if e := s.death(i, k, int32(q)); e.stage != t || e.node != i {
			return false
		}
	}
	return true
}

// prune removes spurious recomputations until none is left: they cost
// time and never lower the memory.
func (s *state) prune(j *journal) {
	for changed := true; changed; {
		changed = false
		for t := s.g.n - 1; t >= 0; t-- {
			xt := s.x[t]
			for q := len(xt) - 2; q >= 0; q-- {
				if i := xt[q]; s.spurious(i, int32(t)) {
					s.doRemove(j, i, int32(t))
					changed = true
					xt = s.x[t]
				}
			}
		}
	}
}

// recomputations lists the (node, stage) pairs of every recomputation.
func (s *state) recomputations(out []cut) []cut {
	for t, xt := range s.x {
		for _, i := range xt[:len(xt)-1] {
			out = append(out, cut{i, int32(t)})
		}
	}
	return out
}

// descend removes, in a random order, every recomputation whose removal
// keeps every stage under the cap. Those that needed proves indispensable
// are not tried: in a tight plan that is most of them, and a removal and
// its undoing cost two range updates over the gap the recomputation
// closes.
func (s *state) descend(j *journal, list []cut, rng *rand.Rand) {
	rng.Shuffle(len(list), func(a, b int) { list[a], list[b] = list[b], list[a] })
	for _, c := range list {
		if !s.has(c.i, c.at) || s.needed(c.i, c.at) {
			continue
		}
		mark := len(j.moves)
		s.doRemove(j, c.i, c.at)
		if s.nOver > 0 {
			s.revert(j, mark)
		}
	}
}

// needed reports, without changing the plan, that dropping node i's
// computation in stage t (> i) would leave some stage over the cap. The
// earlier instance of i then serves the readers of the dropped one, so
// each part read (or kept) after the dropped step is held from the end of
// its earlier instance on: over the stages strictly between the latest of
// those ends and t, every such part adds its bytes, and nothing else
// changes there but those of i's inputs that it reads last, each of
// which may be freed earlier and so lowers a stage's peak by at most its
// bytes (through cross, or through local at the stage of its new end). A
// stage whose excess plus the parts' bytes less the inputs' is positive
// therefore stays over.
func (s *state) needed(i, t int32) bool {
	g := s.g
	k := index(s.comp[i], t)
	np := int(g.parts(i))
	var gain int64
	lo := int32(-1)
	for q := range np {
		if e := s.death(i, k, int32(q)); e.stage == t && e.node == i {
			continue // nothing reads this part: its earlier instance stays as it is
		}
		gain += g.bytes[g.partBase[i]+int32(q)]
		lo = max(lo, s.death(i, k-1, int32(q)).stage)
	}
	if gain == 0 {
		return false
	}
	var loss int64
	for _, v := range g.reads[i] {
		d := g.partNode[v]
		kd := latestAtMost(s.comp[d], t)
		if s.comp[d][kd] == t {
			continue // computed in stage t as well: no earlier stage holds it
		}
		if e := s.death(d, kd, v-g.partBase[d]); e.stage == t && e.node == i {
			loss += g.bytes[v] // read last here: may be freed earlier
		}
	}
	if gain <= loss {
		return false
	}
	for u := lo + 1; u < t; u++ {
		if s.cross[u]+s.local[u]-s.cap > loss-gain {
			return true
		}
	}
	return false
}

// meanCost is the mean cost of the recomputable nodes (1 when there are
// none or they cost nothing).
func meanCost(g *graph) float64 {
	sum, k := 0.0, 0
	for i, c := range g.seconds {
		if g.recomp[i] {
			sum += c
			k++
		}
	}
	if k == 0 || sum <= 0 || math.IsInf(sum, 0) {
		return 1
	}
	return sum / float64(k)
}
