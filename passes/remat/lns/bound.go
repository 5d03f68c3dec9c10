package lns

import (
	"math"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// # A lower bound
//
// Take the step at which stage t computes node t (its first computation).
// Its working set is resident: ConstBytes, node t's outputs and the parts
// it reads (eq. 2–3). So is every part of an earlier node v that a later
// first computation j > t reads, or that is a graph output, unless some
// stage after t computes v again: the instance that j reads (the end
// keeps) was otherwise created at or before stage t — recomputations in
// stage t run before node t — and lives from there to j. Let E_t be the
// bytes by which all of that exceeds the budget. Any plan within the
// budget then recomputes, after stage t, a set of such nodes holding at
// least E_t bytes, each at least once and at the cost C_v: at least the
// least cost of a fractional knapsack that covers E_t (items taken by
// increasing C_v/bytes). The largest of these over t, added to Σ C_i,
// bounds the cost of every plan from below; a stage whose excess the
// nodes that may not be recomputed alone cause proves that no plan fits.
// (Nodes that t itself reads are left out of the knapsack: their parts
// that t reads are in the working set, and ignoring their other parts
// only weakens the bound.)

// lowerBound returns the bound on the recomputation cost (beyond Σ C_i) of
// any plan of p within its budget, and whether the bound proves that no
// plan fits.
func lowerBound(p *remat.Problem, g *graph) (extra float64, infeasible bool) {
	n := g.n
	// need[v] is the last first-computation reading part v, or n for an
	// output part.
	need := make([]int32, len(g.bytes))
	for v := range need {
		need[v] = int32(g.partNode[v])
		if k := len(g.readers[v]); k > 0 {
			need[v] = g.readers[v][k-1]
		}
		if g.outPart[v] {
			need[v] = int32(n)
		}
	}
	type item struct {
		bytes int64
		cost  float64
	}
	var items []item
	isDep := make([]int32, n) // t+1 when node v is a dependency of t
	var active []int32        // nodes with a part needed after the current stage
	for t := range n {
		for _, d := range g.deps[t] {
			isDep[d] = int32(t) + 1
		}
		work := g.constB
		for v := g.partBase[t]; v < g.partBase[t+1]; v++ {
			work += g.bytes[v]
		}
		for _, v := range g.reads[t] {
			work += g.bytes[v]
		}
		items = items[:0]
		var fixed, free int64
		keep := active[:0]
		for _, v := range active {
			var b int64
			for q := g.partBase[v]; q < g.partBase[v+1]; q++ {
				if need[q] > int32(t) {
					b += g.bytes[q]
				}
			}
			if b == 0 {
				continue // nothing of v is needed after t, nor later
			}
			keep = append(keep, v)
			switch {
			case isDep[v] == int32(t)+1:
			case !g.recomp[v]:
				fixed += b
			default:
				free += b
				items = append(items, item{b, g.seconds[v]})
			}
		}
		active = keep
		if excess := work + fixed + free - p.BudgetBytes; excess > 0 {
			if work+fixed > p.BudgetBytes {
				return 0, true
			}
			slices.SortFunc(items, func(a, b item) int {
				// increasing cost per byte: a.cost/a.bytes < b.cost/b.bytes
				x, y := a.cost*float64(b.bytes), b.cost*float64(a.bytes)
				switch {
				case x < y:
					return -1
				case x > y:
					return 1
				}
				return 0
			})
			cost := 0.0
			for _, it := range items {
				if excess <= 0 {
					break
				}
				if it.bytes <= excess {
					cost += it.cost
				} else {
					cost += it.cost * float64(excess) / float64(it.bytes)
				}
				excess -= it.bytes
			}
			extra = max(extra, cost)
		}
		// Node t joins the active nodes when some part of it is needed
		// after its own step.
		for v := g.partBase[t]; v < g.partBase[t+1]; v++ {
			if need[v] > int32(t) {
				active = append(active, int32(t))
				break
			}
		}
	}
	return extra, false
}

// # A stronger bound: the gaps between reads
//
// The bound above pays for one recomputation per stage; but a node v is
// needed again after each of its readers, so keeping it out of memory at
// stages between different pairs of consecutive readers costs a
// recomputation for each such gap. Number v's first-computation readers
// r_1 < r_2 < … (and, for a graph output, the end as a last reader), r_0 =
// v, and call the stages strictly between r_k and r_{k+1} gap k of v. If
// no stage in (r_k, r_{k+1}] computes v again, the instance that r_{k+1}
// reads is resident at every stage of the gap (as above). So any plan
// within the budget is a point of the covering problem
//
//	minimise   Σ_{v,k} C_v x_{v,k}
//	subject to Σ_{(v,k) ∋ t} b_{v,k} x_{v,k} ≥ E_t   for every stage t
//	           x_{v,k} ∈ {0, 1}
//
// (x_{v,k} = 1: some stage in the gap's window recomputes v; b_{v,k} the
// bytes of the parts of v needed after the gap; E_t as above), whose LP
// relaxation's Lagrangian dual gives, for every y ≥ 0,
//
//	L(y) = Σ_t E_t y_t − Σ_{v,k} max(0, b_{v,k} Σ_{t ∈ gap} y_t − C_v),
//
// a lower bound on the recomputation cost (weak duality). lagrangeBound
// maximises L by projected subgradient steps (Polyak's rule towards the
// cost of the best plan found) from y concentrated on the stage of the
// largest excess, and returns the larger of it and the knapsack bound.

// gap is one gap of a node: stages from … to, bytes needed after it.
type gap struct {
	from, to int32
	bytes    int64
	cost     float64
}

// gaps lists the gaps of every recomputable node, and E_t (the excess of
// each stage when nothing is dropped; the non-recomputable nodes' bytes
// included).
func gaps(p *remat.Problem, g *graph) ([]gap, []int64) {
	n := g.n
	excess := make([]int64, n)
	for t := range n {
		excess[t] = g.constB - p.BudgetBytes
		for v := g.partBase[t]; v < g.partBase[t+1]; v++ {
			excess[t] += g.bytes[v]
		}
		for _, v := range g.reads[t] {
			excess[t] += g.bytes[v]
		}
	}
	var out []gap
	diff := make([]int64, n+1)
	for v := range n {
		rs := g.users[v]
		last := len(rs)
		if g.isOut[v] {
			last++ // the end reads the outputs
		}
		prev := int32(v)
		for k := range last {
			next := int32(n)
			if k < len(rs) {
				next = rs[k]
			}
			// Parts of v needed by a reader at or after next (or kept).
			var b int64
			for q := g.partBase[v]; q < g.partBase[v+1]; q++ {
				rq := g.readers[q]
				if g.outPart[q] || len(rq) > 0 && rq[len(rq)-1] >= next {
					b += g.bytes[q]
				}
			}
			from, to := prev+1, min(next-1, int32(n-1))
			if b > 0 && from <= to {
				if g.recomp[v] {
					out = append(out, gap{from, to, b, g.seconds[v]})
				}
				diff[from] += b
				diff[to+1] -= b
			}
			prev = next
		}
	}
	var run int64
	for t := range n {
		run += diff[t]
		excess[t] += run
	}
	return out, excess
}

// lagrangeBound returns max(start, the best L(y) found), a lower bound on
// the recomputation cost of any plan within the budget; ub is the cost of
// a plan found (the target of the step rule).
func lagrangeBound(p *remat.Problem, g *graph, start, ub float64, iters int) float64 {
	n := g.n
	gs, excess := gaps(p, g)
	if n == 0 || ub <= start {
		return start
	}
	// y starts on the stage with the largest excess.
	y := make([]float64, n)
	pre := make([]float64, n+1)
	grad := make([]float64, n+1)
	eval := func() float64 {
		for t := range n {
			pre[t+1] = pre[t] + y[t]
		}
		l := 0.0
		for t := range n {
			l += float64(excess[t]) * y[t]
		}
		clear(grad)
		for _, q := range gs {
			s := pre[q.to+1] - pre[q.from]
			if over := float64(q.bytes)*s - q.cost; over > 0 {
				l -= over
				grad[q.from] -= float64(q.bytes)
				grad[q.to+1] += float64(q.bytes)
			}
		}
		var run float64
		for t := range n {
			run += grad[t]
			grad[t] = run + float64(excess[t])
		}
		return l
	}
	tMax := 0
	for t := range n {
		if excess[t] > excess[tMax] {
			tMax = t
		}
	}
	if excess[tMax] <= 0 {
		return start
	}
	// Its height: the breakpoint C/b of a gap covering it where L is
	// largest.
	bestY := slices.Clone(y)
	bestL := math.Inf(-1)
	for _, q := range gs {
		if int(q.from) <= tMax && tMax <= int(q.to) {
			y[tMax] = q.cost / float64(q.bytes)
			if l := eval(); l > bestL {
				bestL = l
				copy(bestY, y)
			}
		}
	}
	copy(y, bestY)
	theta := 1.0
	stale := 0
	for range iters {
		l := eval()
		if l > bestL+1e-12*math.Abs(bestL) {
			bestL = l
			stale = 0
		} else if stale++; stale >= 20 {
			theta /= 2
			stale = 0
			if theta < 1e-4 {
				break
			}
		}
		norm := 0.0
		for t := range n {
			if y[t] > 0 || grad[t] > 0 {
				norm += grad[t] * grad[t]
			}
		}
		if norm == 0 {
			break
		}
		step := theta * (ub - l) / norm
		for t := range n {
			y[t] = max(0, y[t]+step*grad[t])
		}
	}
	return max(start, bestL)
}
