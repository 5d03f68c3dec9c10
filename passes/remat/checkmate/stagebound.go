package checkmate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// # A lower bound from the stages' last steps
//
// StageBound relaxes eq. (9) to what it requires at one step of each stage:
// the last, where stage t computes node t (§4.6). Write h_{v,t} for "a
// value of v is resident when stage t computes node t" and r_{v,t} for
// "stage t computes v before node t" (R_{t,v}, v < t). Every plan within
// the budget gives a point of
//
//	minimise   Σ_{v,t} C_v r_{v,t}                                   (1a)
//	subject to h_{v,t} ≤ h_{v,t−1} + r_{v,t}                          (1c)
//	           r_{v,t} ≤ h_{u,t−1} + r_{u,t}      (u, v) ∈ E            (1b)
//	           h_{v,v} = 1, h_{v,t} = 1 for every user t of v, and
//	           h_{o,n−1} = 1 for every graph output o
//	           M_const + Σ_v M_v h_{v,t} ≤ M_budget                  (2, 9)
//	           h, r ∈ {0, 1}
//
// (a value resident at stage t's last step was resident at stage t−1's,
// as S_{t,v} is, or was computed in stage t; a computation in stage t
// reads each input either from stage t−1's last step, kept until then, or
// from a computation earlier in stage t; node t's inputs and output are
// resident at its step, and so is everything the plan keeps past it.) The
// steps of a stage before its last, the frees inside a stage and the
// order of its computations are dropped, so the optimum of this model is
// at most the optimum of (9): a lower bound on the cost of every plan.
// It keeps what the covering bound of package lns leaves out, that a
// recomputation needs its inputs resident, and it is far smaller than
// (9): no U, and none of the O(n·|E|) FREE variables with their hazard
// rows (7a–7c).
//
// Two reductions keep it smaller and remain relaxations. Before the
// first stage a (stageWindow stages before the first whose working set
// and values in flight exceed the budget), nothing is constrained and
// every earlier node counts as resident at stage a−1 for free. Nodes
// that are neither computed nor read from stage a on, nor inputs of such
// nodes up to stageDepth steps back, count as resident at every step for
// free and take no bytes.
//
// # Cuts at the steps inside a stage
//
// A stage computes its nodes in increasing order (Evaluate: Ops scans
// R[t] in node order), so the memory at the step where stage t recomputes
// v < t is known in part from the model's variables. Resident there are
// v and its inputs W_v = {v} ∪ deps(v); every x < v resident at stage t's
// last step (computed earlier in stage t and kept, or kept through it:
// stage t computes x at most once, at x's position); and every x between
// v and t resident at the last step and not computed in stage t (kept
// through it). Hence, for each r_{v,t},
//
//	Σ_{x<v, x∉W_v} M_x h_{x,t} + Σ_{v<x<t} M_x (h_{x,t} − r_{x,t})
//	    + M(W_v) r_{v,t} ≤ M_budget − M_const                        (S)
//
// When r_{v,t} = 0 the left side is at most the memory at stage t's last
// step, so (S) cuts off no plan. Chains of prefix and suffix sums (one
// variable per node and stage) keep each row as short as W_v. (S) is
// added at the stages over the budget only. It hardly moves the LP
// relaxation (G1 at 80 %: 1.202 % → 1.208 %), but it closes most of the
// distance from the integer optimum to the best plan: on G1 at 80 % the
// optimum rises from 1.551 % to 2.297 %, the cost of auto's plan, which
// is thereby proved optimal. The relaxation's optimum keeps a small
// fraction of an input through the peak and shares it among small
// fractional recomputations of its reader in many stages, which (S)
// hardly sees; branching does, so StageBound adds (S) only in a second
// round, after branching has proved the optimum of the model without it
// within the time limit.
//
// The LP relaxation's optimum is a lower bound, and so is CBC's best bound
// when the time limit stops its branching. Measured on MOCCASIN's random
// layered graphs at 80 % (one run, this machine, one thread), as % of
// Σ C_i: G1 1.55 % proven the optimum without (S) within about 12 s, and
// 2.297 % with (S) within 75 s, where lns's Lagrangian bound is 1.06 %;
// G2 1.69 % for the relaxation and 1.99 % after 120 s or 300 s of
// branching (the first round does not end), lns's 1.35 %. From auto's
// plan (4.26 %) as CBC's incumbent, G2's bound is 2.08 % when CBC's root
// cuts end, after about 40 s, and stays there through 300 s of branching
// (about one node a second, diving). Tried instead, with less: a row
// bounding the objective by 2.30 % in place of the incumbent (the root
// ends at 2.04 %), and lift-and-project cuts at the root (not ended in
// 10 minutes).

// stageWindow is how many stages before the first stage over the budget
// the model begins.
const stageWindow = 8

// stageDepth is how many steps of inputs back from the nodes the window
// computes or reads the model keeps.
const stageDepth = 2

// stageMaxVars bounds the model: past it StageBound does not build it.
const stageMaxVars = 400_000

// StageBound returns a lower bound on the cost (in seconds, Σ C_i
// included) of every plan of p within its budget: the bound of the model
// above proved within about limit (its LP relaxation's optimum, raised by
// rounds of the cascade cuts of cascade.go and then by CBC's branching
// when time is left, which starts from incumbent, a plan of p within its
// budget, unless it is nil); when the model is too large, the largest
// bound of spans of its stages (spansBound); or Σ C_i when the model
// does not apply (a problem with parts, views, in-place writes,
// workspaces or an arena, after Problem.Relaxed) or its relaxation is
// not solved within limit. infeasible reports that the model has no point:
// no plan fits the budget. The error wraps remat.ErrUnavailable when CBC
// is not installed.
func StageBound(ctx context.Context, p *remat.Problem, limit time.Duration, incumbent *remat.Plan) (bound float64, infeasible bool, err error) {
	sum := p.LowerBoundSeconds()
	q := p.Relaxed()
	if q.Refined() || q.Reuse != nil || q.InPlace != nil || q.View != nil || q.Workspace != nil || q.Arena != nil || q.N() == 0 {
		return sum, false, nil
	}
	info := stageAnalyse(q)
	if info.first < 0 {
		return sum, false, nil
	}
	start := time.Now()
	deadline := start.Add(limit)
	if _, vars := info.spanNodes(q, info.fullSpan()); vars > stageMaxVars {
		b, infeasible, err := info.spansBound(ctx, q, deadline)
		if err != nil || infeasible {
			return sum, infeasible, err
		}
		b -= 1e-9 * math.Max(1, math.Abs(b))
		return sum + max(0, b), false, nil
	}
	sm, st := info.model(q, info.fullSpan(), false)
	switch st {
	case stageSkip:
		return sum, false, nil
	case stageInfeasible:
		return sum, true, nil
	}
	// The relaxation first, with CLP, which keeps to the time limit, and
	// the cascade cuts; then branching with CBC for the rest of it, when
	// the relaxation took at most a twentieth: CBC solves it again at its
	// root, with cuts, and cannot be stopped while it does (on G3 at
	// 80 %, CLP's relaxation takes 38 s and CBC's root about 8 minutes).
	b, lpTime, solved, infeasible, err := relax(ctx, sm, deadline)
	switch {
	case err != nil || infeasible:
		return sum, infeasible, err
	case !solved:
		return sum, false, nil // stopped by the time limit: no bound
	}
	if lpTime <= limit/20 && time.Until(deadline) > 0 {
		// Branching, and a second round with (S) when the first proved
		// its model's optimum in time.
		for _, cuts := range []bool{false, true} {
			if cuts {
				withS, _ := stageModel(q, true)
				withS.addCuts(sm.cuts)
				sm = withS
			}
			sol, err := branch(ctx, sm.m, deadline, limit/4, sm.start(incumbent))
			switch {
			case err != nil:
				return sum, false, err
			case sol.Status == milp.Infeasible:
				return sum, true, nil
			}
			b = max(b, sol.Bound)
			if sol.Status != milp.Optimal || time.Until(deadline) <= 0 {
				break
			}
		}
	}
	// Less a relative 1e-9 for the solvers' tolerances.
	b -= 1e-9 * math.Max(1, math.Abs(b))
	return sum + max(0, b), false, nil
}

// relax solves sm's relaxation with CLP until deadline, then adds the
// cascade cuts (C_k) that its optimum violates and solves it again, in
// rounds while they raise it. It returns the last optimum, the time the
// first solve took, whether that solve ended (solved; no bound
// otherwise), and whether the relaxation has no point (infeasible).
func relax(ctx context.Context, sm *stageMIP, deadline time.Time) (b float64, first time.Duration, solved, infeasible bool, err error) {
	start := time.Now()
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	lp, err := solve(cctx, sm.m, milp.Options{Relax: true}, nil)
	switch {
	case err != nil:
		return 0, 0, false, false, err
	case lp.Status == milp.Infeasible:
		return 0, 0, false, true, nil
	case lp.Status != milp.Optimal:
		return 0, 0, false, false, nil
	}
	b, first = lp.Objective, time.Since(start)
	for range cascadeRounds {
		cuts := sm.separate(lp.Values)
		if len(cuts) == 0 {
			break
		}
		sm.addCuts(cuts)
		next, err := solve(cctx, sm.m, milp.Options{Relax: true}, nil)
		if err != nil {
			return 0, 0, false, false, err
		}
		if next.Status == milp.Infeasible {
			return 0, 0, false, true, nil
		}
		if next.Status != milp.Optimal {
			break // stopped by the time limit: the last round's bound stands
		}
		rise := next.Objective - b
		lp, b = next, max(b, next.Objective)
		if rise <= cascadeRise*math.Abs(b) {
			break
		}
	}
	return b, first, true, false, nil
}

// spans cuts the stages from the full span's first to the last over the
// budget into the fewest spans of equal length whose models have at most
// stageMaxVars/2 variables each (nil when 64 are not enough).
func (info *stageInfo) spans(p *remat.Problem) []stageSpan {
	a0 := info.fullSpan().a
	l := info.lastOver - a0 + 1
	for k := 2; k <= min(64, l); k++ {
		out := make([]stageSpan, 0, k)
		for i := range k {
			sp := stageSpan{a: a0 + i*l/k, e: a0 + (i+1)*l/k - 1}
			if _, vars := info.spanNodes(p, sp); vars > stageMaxVars/2 {
				break
			}
			out = append(out, sp)
		}
		if len(out) == k {
			return out
		}
	}
	return nil
}

// spansBound bounds the recomputation cost of p's plans, when its whole
// model is too large, by the largest of its spans' bounds (stageSpan):
// each relaxation with its cascade cuts, within an equal share of the
// time to deadline. (The bounds of spans do not add up: a recomputation
// after one span's end may be another span's. Without the terminal cost
// they would, but they are then about nothing: on G4 at 80 % each span
// drops the values that a later stage reads at no cost.) Measured on G4
// at 80 % (one run, this machine), as % of Σ C_i, in four spans of 108
// stages: 0.08 %, 0.24 %, 0.90 % (in 40 s) and 0.57 %, where lns's
// Lagrangian bound is 0.78 %.
func (info *stageInfo) spansBound(ctx context.Context, p *remat.Problem, deadline time.Time) (b float64, infeasible bool, err error) {
	sps := info.spans(p)
	left := time.Until(deadline)
	start := time.Now()
	for i, sp := range sps {
		sm, st := info.model(p, sp, false)
		switch st {
		case stageInfeasible:
			return 0, true, nil
		case stageSkip:
			continue
		}
		share := start.Add(left * time.Duration(i+1) / time.Duration(len(sps)))
		x, _, solved, infeasible, err := relax(ctx, sm, share)
		if err != nil || infeasible {
			return 0, infeasible, err
		}
		if solved {
			b = max(b, x)
		}
	}
	return b, false, nil
}

// branch solves m with CBC from start (none when nil) until deadline and
// returns its solution, whose Bound is −Inf when nothing is proved. CBC's
// own time limit ends the search with its bound; the context's deadline,
// grace later, stops a root that overruns it (then nothing is proved).
func branch(ctx context.Context, m *milp.Model, deadline time.Time, grace time.Duration, start map[milp.Var]float64) (*milp.Solution, error) {
	bctx, cancel := context.WithDeadline(ctx, deadline.Add(grace))
	defer cancel()
	sol, err := solve(bctx, m, milp.Options{TimeLimit: time.Until(deadline), MIPStart: start}, nil)
	switch {
	case errors.Is(err, errBadPoint):
		// The bound holds without the point (CM 2 at 90 %, from auto's
		// plan: CBC stops on its time limit with neither its current
		// point nor its incumbent within the model).
	case err != nil:
		return nil, err
	}
	if math.IsNaN(sol.Bound) || math.IsInf(sol.Bound, 0) {
		sol.Bound = math.Inf(-1)
	}
	return sol, nil
}

// stageStatus is what stageModel made of a problem.
type stageStatus int8

const (
	stageOK         stageStatus = iota
	stageSkip                   // no stage over the budget, or too large
	stageInfeasible             // a stage's forced bytes exceed the budget
)

// stageMIP is StageBound's model with its variables: h[v][t−base(v)] and
// r[v][t−base(v)] for the nodes in the model, −1 where h is forced to 1
// or r is absent.
type stageMIP struct {
	m    *milp.Model
	a    int // the first stage
	h, r [][]milp.Var
	deps [][]int32
	// cuts are the cascade cuts (C) added so far.
	cuts []cascadeCut
}

func (s *stageMIP) base(v int) int { return max(s.a, v) }

// start returns the point of the model that plan gives (h_{v,t}: v is
// resident at the step where stage t computes node t; r_{v,t} = R_{t,v}),
// for CBC's first incumbent; nil when plan is nil or not a plan of the
// model's problem. From an incumbent CBC's root ends higher: on G2 at
// 80 % (auto's plan at 4.26 %) at 2.08 % in about 40 s, where without
// one 120 s of branching reach 1.99 %.
func (s *stageMIP) start(plan *remat.Plan) map[milp.Var]float64 {
	n := len(s.h)
	if plan == nil || len(plan.R) != n {
		return nil
	}
	// resident[t]: the values resident at stage t's step of node t.
	resident := make([]remat.Bits, n)
	live := remat.NewBits(n)
	for _, op := range plan.Ops {
		if op.Node < 0 || int(op.Node) >= n {
			return nil
		}
		if op.Kind != remat.OpCompute {
			live.Clear(int(op.Node))
			continue
		}
		live.Set(int(op.Node))
		if op.Node == op.Stage {
			resident[op.Node] = slices.Clone(live)
		}
	}
	x := make(map[milp.Var]float64)
	for v := range s.h {
		for i, hv := range s.h[v] {
			t := s.base(v) + i
			if resident[t] == nil {
				return nil
			}
			if hv >= 0 {
				x[hv] = b2f(resident[t].Has(v))
			}
			if rv := s.r[v][i]; rv >= 0 {
				x[rv] = b2f(plan.R[t].Has(v))
			}
		}
	}
	return x
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// stageInfo is what StageBound's models need of a problem: each node's
// readers, the last step that reads it (n−1 for an output), which
// stages are over the budget when every value lives from its
// computation to its last reader, and the first and last of those (−1
// when none).
type stageInfo struct {
	users           [][]int32
	last            []int
	isOut, over     []bool
	first, lastOver int
}

func stageAnalyse(p *remat.Problem) *stageInfo {
	n := p.N()
	info := &stageInfo{users: make([][]int32, n), last: make([]int, n), isOut: make([]bool, n), over: make([]bool, n), first: -1, lastOver: -1}
	for v := range n {
		info.last[v] = v
	}
	for j, ds := range p.Deps {
		for _, d := range ds {
			info.users[d] = append(info.users[d], int32(j))
			info.last[d] = max(info.last[d], j)
		}
	}
	for _, o := range p.Outputs {
		info.isOut[o] = true
		info.last[o] = n - 1
	}
	live := make([]int64, n+1)
	for v := range n {
		live[v] += p.Bytes[v]
		live[info.last[v]+1] -= p.Bytes[v]
	}
	var run int64
	for t := range n {
		run += live[t]
		info.over[t] = p.ConstBytes+run > p.BudgetBytes
		if info.over[t] {
			if info.first < 0 {
				info.first = t
			}
			info.lastOver = t
		}
	}
	return info
}

// stageSpan is the stages a model covers, a to e. Everything computed
// before a counts as resident at stage a−1 for free, and only the
// memory of stages a to e is constrained. A value read after e (a graph
// output, when e < n−1) that is not resident at e's last step is
// computed again after e, at least once: that costs C_v in the model,
// which is still a relaxation of (9).
type stageSpan struct{ a, e int }

// fullSpan is the span of StageBound's model: from stageWindow stages
// before the first stage over the budget to the last stage.
func (info *stageInfo) fullSpan() stageSpan {
	return stageSpan{a: max(0, info.first-stageWindow), e: len(info.last) - 1}
}

// spanNodes returns the nodes a span's model keeps (computed or read
// from stage a on and computed by stage e, and their inputs stageDepth
// steps back) and its number of variables.
func (info *stageInfo) spanNodes(p *remat.Problem, sp stageSpan) ([]bool, int) {
	n := p.N()
	keep := make([]bool, n)
	for v := range min(n, sp.e+1) {
		keep[v] = v >= sp.a || info.last[v] >= sp.a
	}
	for range stageDepth {
		var add []int32
		for v := range n {
			if keep[v] {
				for _, d := range p.Deps[v] {
					if !keep[d] {
						add = append(add, d)
					}
				}
			}
		}
		for _, d := range add {
			keep[d] = true
		}
	}
	vars := 0
	for v := range n {
		if keep[v] {
			vars += 2 * (sp.e + 1 - max(sp.a, v))
		}
	}
	return keep, vars
}

// stageModel builds the model of StageBound for a problem without parts,
// with the cuts (S) at the stages over the budget when cuts is set.
func stageModel(p *remat.Problem, cuts bool) (*stageMIP, stageStatus) {
	info := stageAnalyse(p)
	if info.first < 0 {
		return nil, stageSkip
	}
	return info.model(p, info.fullSpan(), cuts)
}

// model builds the model of span sp (see stageModel).
func (info *stageInfo) model(p *remat.Problem, sp stageSpan, cuts bool) (*stageMIP, stageStatus) {
	n := p.N()
	users, isOut, over := info.users, info.isOut, info.over
	a, N := sp.a, sp.e+1
	in, vars := info.spanNodes(p, sp)
	if vars > stageMaxVars {
		return nil, stageSkip
	}

	sm := &stageMIP{m: milp.NewModel("stage-bound"), a: a, h: make([][]milp.Var, n), r: make([][]milp.Var, n), deps: p.Deps}
	m, h, r, base := sm.m, sm.h, sm.r, sm.base
	for v := range n {
		if !in[v] {
			continue
		}
		b := base(v)
		h[v] = make([]milp.Var, N-b)
		r[v] = make([]milp.Var, N-b)
		for t := b; t < N; t++ {
			h[v][t-b], r[v][t-b] = -1, -1
			if t != v && !(isOut[v] && t == n-1) {
				h[v][t-b] = m.AddBinary(fmt.Sprintf("h_%d_%d", v, t))
			}
			if t > v && t > a && p.Recomputable[v] {
				r[v][t-b] = m.AddContinuous(fmt.Sprintf("r_%d_%d", v, t), 0, 1)
			}
		}
		for _, j := range users[v] {
			if int(j) >= b && int(j) < N {
				h[v][int(j)-b] = -1
			}
		}
	}
	// term adds k·h_{v,t} to e: a constant 1 before stage a, for a node
	// outside the model, or where h is forced.
	term := func(e *milp.Expr, v, t int, k float64) {
		if !in[v] || t < a {
			e.AddConst(k)
			return
		}
		if t < v {
			return
		}
		if x := h[v][t-base(v)]; x >= 0 {
			e.AddTerm(x, k)
		} else {
			e.AddConst(k)
		}
	}
	var obj milp.Expr
	// A value read after e: a value that may not be recomputed stays
	// resident; one that may costs C_v (1 − h_{v,e}).
	for v := range N {
		if !in[v] || info.last[v] <= sp.e {
			continue
		}
		hv := h[v][sp.e-base(v)]
		switch {
		case hv < 0:
		case !p.Recomputable[v]:
			m.SetBounds(hv, 1, 1)
		default:
			obj.AddTerm(hv, -p.Seconds[v])
			obj.AddConst(p.Seconds[v])
		}
	}
	for v := range n {
		if !in[v] {
			continue
		}
		b := base(v)
		for t := b; t < N; t++ {
			rv := r[v][t-b]
			if rv >= 0 {
				obj.AddTerm(rv, p.Seconds[v])
			}
			if t == v || t == a {
				continue // h_{v,v} = 1; everything is resident at a−1
			}
			// (1c): h_{v,t} ≤ h_{v,t−1} + r_{v,t}.
			var e milp.Expr
			term(&e, v, t-1, 1)
			term(&e, v, t, -1)
			if rv >= 0 {
				e.AddTerm(rv, 1)
			}
			if len(e.Terms) > 0 {
				m.AddConstr(fmt.Sprintf("keep_%d_%d", v, t), e, milp.GE, 0)
			}
			if rv < 0 {
				continue
			}
			// (1b): r_{v,t} ≤ h_{u,t−1} + r_{u,t} for each input u.
			for _, u := range p.Deps[v] {
				var d milp.Expr
				term(&d, int(u), t-1, 1)
				if d.Const >= 1 {
					continue
				}
				if ru := r[u][t-base(int(u))]; ru >= 0 {
					d.AddTerm(ru, 1)
				}
				d.AddTerm(rv, -1)
				m.AddConstr(fmt.Sprintf("dep_%d_%d_%d", u, v, t), d, milp.GE, 0)
			}
		}
	}
	if cuts {
		for t := a + 1; t < N; t++ {
			if over[t] {
				stepCuts(m, p, t, in, h, r, base, term)
			}
		}
	}
	// (2), (9) at each stage's last step.
	for t := a; t < N; t++ {
		var e milp.Expr
		for v := 0; v <= t; v++ {
			if in[v] {
				term(&e, v, t, float64(p.Bytes[v]))
			}
		}
		if float64(p.ConstBytes)+e.Const > float64(p.BudgetBytes) {
			return nil, stageInfeasible
		}
		m.AddConstr(fmt.Sprintf("mem_%d", t), e, milp.LE, float64(p.BudgetBytes-p.ConstBytes))
	}
	m.SetObjective(obj, milp.Minimize)
	return sm, stageOK
}

// stepCuts adds the rows (S) of stage t, one for each r_{v,t}, with
// P_{v,t} = Σ_{x<v} M_x h_{x,t} and Q_{v,t} = Σ_{v<x<t} M_x (h_{x,t} −
// r_{x,t}) as chains of variables.
func stepCuts(m *milp.Model, p *remat.Problem, t int, in []bool, h, r [][]milp.Var, base func(int) int, term func(*milp.Expr, int, int, float64)) {
	rv := func(x int) milp.Var {
		if !in[x] {
			return -1
		}
		return r[x][t-base(x)]
	}
	recomputes := false
	for v := range t {
		recomputes = recomputes || rv(v) >= 0
	}
	if !recomputes {
		return
	}
	P := make([]milp.Var, t) // P[0] = 0
	Q := make([]milp.Var, t) // Q[t−1] = 0
	P[0], Q[t-1] = -1, -1
	chain := func(name string, at int, prev milp.Var, x int, withR bool) milp.Var {
		lo := 0.0 // P ≥ 0; Q is not bounded
		if withR {
			lo = math.Inf(-1)
		}
		c := m.AddContinuous(fmt.Sprintf("%s_%d_%d", name, at, t), lo, math.Inf(1))
		var e milp.Expr
		e.AddTerm(c, 1)
		if prev >= 0 {
			e.AddTerm(prev, -1)
		}
		if in[x] {
			term(&e, x, t, -float64(p.Bytes[x]))
			if rx := rv(x); withR && rx >= 0 {
				e.AddTerm(rx, float64(p.Bytes[x]))
			}
		}
		m.AddConstr(fmt.Sprintf("%sdef_%d_%d", name, at, t), e, milp.EQ, 0)
		return c
	}
	for v := 1; v < t; v++ {
		P[v] = chain("P", v, P[v-1], v-1, false)
	}
	for v := t - 2; v >= 0; v-- {
		Q[v] = chain("Q", v, Q[v+1], v+1, true)
	}
	for v := range t {
		x := rv(v)
		if x < 0 {
			continue
		}
		var e milp.Expr
		for _, c := range []milp.Var{P[v], Q[v]} {
			if c >= 0 {
				e.AddTerm(c, 1)
			}
		}
		w := float64(p.Bytes[v])
		for _, u := range p.Deps[v] {
			w += float64(p.Bytes[u])
			if in[u] {
				term(&e, int(u), t, -float64(p.Bytes[u]))
			}
		}
		e.AddTerm(x, w)
		m.AddConstr(fmt.Sprintf("step_%d_%d", v, t), e, milp.LE, float64(p.BudgetBytes-p.ConstBytes))
	}
}
