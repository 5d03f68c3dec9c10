package checkmate

import (
	"fmt"

	"github.com/remat-compile/remat/internal/milp"
)

// # Cascade cuts
//
// The relaxation of StageBound's model is weak where a recomputation
// needs an input that is gone: its optimum keeps a small fraction of the
// input resident and recomputes the reader in small fractions at many
// stages, each within (1b) since r_{v,t} ≤ h_{u,t−1} there. A plan cannot
// do that. Let v be resident at stage j's last step by force (j reads v,
// or v is a graph output and j = n−1), and s < j a stage where h_{v,s} is
// free. If v is not resident at s, some stage t in (s, j] computes v
// ((1c) from j down to s); its input u is resident there, so u was
// resident at s or some stage in (s, t] computed it ((1b), then (1c) from
// t−1 down to s). Every plan within the budget therefore satisfies
//
//	h_{v,s} + h_{u,s} + Σ_{s<t≤j} r_{u,t} ≥ 1         u ∈ deps(v)     (C)
//
// and, by the same step along a chain of inputs x_0 = v ← x_1 ← … ← x_k
// (each x_{i+1} an input of x_i: if none of x_0 … x_{k−1} is resident at
// s, each of them is computed in (s, j], the first because j reads it, the
// others because the one before reads them),
//
//	Σ_{i≤k} h_{x_i,s} + Σ_{s<t≤j} r_{x_k,t} ≥ 1.                      (C_k)
//
// (C) is C_1. Neither follows from the relaxation, which sums (1b) over
// the stages of (s, j] and so bounds 1 − h_{v,s} by Σ_t h_{u,t−1}, the
// fractions of u kept at each stage, rather than by u's at s. StageBound
// adds the ones its relaxation's optimum violates, for chains up to
// cascadeDepth, and solves it again, in rounds while the bound rises by
// more than cascadeRise. Measured on MOCCASIN's random layered graphs at
// 80 % (one run, this machine, CLP), as % of Σ C_i: G1 1.20 % → 1.52 %
// (the model's integer optimum without (S) is 1.55 %), G2 1.69 % →
// 3.32 % in seven rounds and about 6 s; with chains of one input only
// (cascadeDepth 1) G2 reaches 2.98 % and G3 1.03 % → 2.63 % in six rounds
// and 2.5 minutes.

// cascadeDepth is the longest chain of inputs (k in C_k) the cuts follow.
const cascadeDepth = 2

// cascadeRounds bounds the rounds of cuts; cascadeRise ends them when a
// round raises the bound by less than this fraction of it.
const (
	cascadeRounds = 30
	cascadeRise   = 0.002
)

// cascadeCut is the cut C_k of the chain path[0] ← path[1] ← … ←
// path[k] at stage s; need is the stage j that forces path[0].
type cascadeCut struct {
	s, need int32
	path    []int32
}

// hVar is h_{v,t}'s variable; −1 where h is constant (forced to 1, or v
// outside the model).
func (sm *stageMIP) hVar(v, t int) milp.Var {
	if sm.h[v] == nil || t < sm.base(v) {
		return -1
	}
	return sm.h[v][t-sm.base(v)]
}

// separate returns the cuts C_k (k ≤ cascadeDepth) that the point x
// violates, all of them when x is nil.
func (sm *stageMIP) separate(x []float64) []cascadeCut {
	const eps = 1e-6
	n := len(sm.h)
	val := func(v milp.Var) float64 {
		if x == nil || v < 0 {
			return 0
		}
		return x[v]
	}
	// pre[u][i]: Σ r_{u,t} over the stages base(u) ≤ t < base(u)+i.
	pre := make([][]float64, n)
	for u := range n {
		if sm.h[u] == nil {
			continue
		}
		p := make([]float64, len(sm.r[u])+1)
		for i, rv := range sm.r[u] {
			p[i+1] = p[i] + val(rv)
		}
		pre[u] = p
	}
	// rSum is Σ_{s<t≤j} r_{u,t}.
	rSum := func(u, s, j int) float64 {
		b := sm.base(u)
		return pre[u][j-b+1] - pre[u][s-b+1]
	}
	var out []cascadeCut
	path := make([]int32, 0, cascadeDepth+1)
	var walk func(s, j int, hs float64)
	walk = func(s, j int, hs float64) {
		last := path[len(path)-1]
		for _, u := range sm.deps[last] {
			hu := sm.hVar(int(u), s)
			if hu < 0 {
				continue // u resident at s by force: every cut through u holds
			}
			path = append(path, u)
			h := hs + val(hu)
			if h+rSum(int(u), s, j) < 1-eps {
				out = append(out, cascadeCut{s: int32(s), need: int32(j), path: append([]int32(nil), path...)})
			}
			if len(path) <= cascadeDepth && h < 1-eps {
				walk(s, j, h)
			}
			path = path[:len(path)-1]
		}
	}
	for v := range n {
		if sm.h[v] == nil {
			continue
		}
		b := sm.base(v)
		need := -1 // the first stage after s forcing v
		for s := b + len(sm.h[v]) - 1; s >= b; s-- {
			hv := sm.h[v][s-b]
			if hv < 0 {
				need = s
				continue
			}
			if need < 0 {
				continue
			}
			path = append(path[:0], int32(v))
			walk(s, need, val(hv))
		}
	}
	return out
}

// addCuts adds cuts to the model and keeps them in sm.cuts.
func (sm *stageMIP) addCuts(cuts []cascadeCut) {
	for _, c := range cuts {
		s, j := int(c.s), int(c.need)
		var e milp.Expr
		for _, x := range c.path {
			e.AddTerm(sm.hVar(int(x), s), 1)
		}
		u := int(c.path[len(c.path)-1])
		b := sm.base(u)
		for t := s + 1; t <= j; t++ {
			if rv := sm.r[u][t-b]; rv >= 0 {
				e.AddTerm(rv, 1)
			}
		}
		name := fmt.Sprintf("cascade_%d", s)
		for _, x := range c.path {
			name += fmt.Sprintf("_%d", x)
		}
		sm.m.AddConstr(name, e, milp.GE, 1)
	}
	sm.cuts = append(sm.cuts, cuts...)
}
