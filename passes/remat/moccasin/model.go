package moccasin

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// NoVar marks a fixed entry (a constant) where a variable could be.
const NoVar milp.Var = -1

// NoCap is the ModelOptions.MaxComputations (and Options.MaxComputations)
// that puts no limit on the number of computations of a node.
const NoCap = -1

// ModelOptions configure Build.
type ModelOptions struct {
	// MaxComputations is C_v of eq. (1)–(8): the most retention intervals
	// (computations, the first included) of every node. 0 means the
	// paper's default, 2; NoCap means no limit. A node that is not
	// recomputable has C_v = 1 whatever this says.
	MaxComputations int
	// MinimizePeak builds the phase-1 model of §2.4 (eq. 12–13): no
	// budget; a peak variable P ≥ the budget (and ≥ the largest working
	// set of a single step) bounds every memory level, and the objective
	// is P. Its optimum is the budget exactly when some plan fits it, and
	// otherwise the least peak of any plan within the cap.
	MinimizePeak bool
}

// capFor returns C_v as an int: at least 1, at most n.
func (o ModelOptions) capFor(n int) int {
	switch c := o.MaxComputations; {
	case c == 0:
		return 2
	case c < 0 || c > n:
		return max(n, 1)
	default:
		return c
	}
}

func (o ModelOptions) check() error {
	if o.MaxComputations < 0 && o.MaxComputations != NoCap {
		return fmt.Errorf("moccasin: MaxComputations %d; want a positive cap, 0 (the default, 2) or NoCap", o.MaxComputations)
	}
	return nil
}

// part is one output of a node in the model: the node, its index among the
// node's outputs, its size in model units, and the nodes that read it.
type part struct {
	node    int32
	index   int32
	units   float64
	readers []int32 // sorted
	output  bool
}

// chain is the resident-through-reader chain of one part in one stage
// (see the package documentation, "Variables"): vars[j] is ℓ at reader
// pos[j], in increasing position order; NoVar entries are the constant 1.
type chain struct {
	stage int32
	part  int32
	pos   []int32
	vars  []milp.Var
}

// memVar is one level variable U of the recursion (eq. 4 as a running
// sum), defined by row def: U ≥ previous level + the change at the
// positions it covers. off is the largest constant added to it before the
// next level variable; the budget bounds U + off.
type memVar struct {
	v   milp.Var
	def milp.Constr
	off float64
}

// Formulation is the MILP of the package documentation for one problem,
// with what is needed to read plans out of its points and to write plans
// into points.
type Formulation struct {
	Model *milp.Model
	// MemUnit is the size of one memory unit of the model in bytes;
	// ObjUnit the seconds of one objective unit.
	MemUnit, ObjUnit float64
	// Peak is the phase-1 peak variable P (ModelOptions.MinimizePeak),
	// NoVar otherwise.
	Peak milp.Var
	// Cap is C_v as applied (every node, before the non-recomputable ones
	// are limited to 1). CapBinding reports whether it limits any node:
	// some node could be computed in more stages than it allows. When it
	// does not, the model's optimum is the problem's.
	Cap        int
	CapBinding bool
	// Stats count the model's parts.
	Stats Stats

	p     *remat.Problem
	n     int
	opts  ModelOptions
	parts []part
	// partsOf[v] are the indices into parts of v's outputs.
	partsOf [][]int32
	// R[t][v] (v < t) is the start of a retention interval of v in stage t
	// (a recomputation), NoVar when fixed to 0. last[v] is the last stage
	// that may compute v.
	R    [][]milp.Var
	last []int
	// S[t][q] is part q retained into stage t (the part crosses the
	// boundary t−1 → t inside a retention interval), NoVar when 0;
	// lastS[q] the last stage it may be retained into.
	S     [][]milp.Var
	lastS []int
	// chains and levels in creation order.
	chains []chain
	levels []memVar
	// scratch space of addStage, one entry per part.
	scratchChain []int32
	scratchNext  []int32
	// gcd and shift define MemUnit = gcd·2^shift; capUnits is the budget
	// less the constant overhead, in units.
	gcd      int64
	shift    uint
	capUnits float64
	// constLevel is the largest level that is a constant alone, in units.
	constLevel float64
	stepLB     int64 // the largest working set of one step, ConstBytes included
}

// Stats are the sizes of a Formulation.
type Stats struct {
	Nodes, Edges, Parts int
	// RVars are the recomputation starts; SVars the retentions; LVars the
	// resident-through-reader chain variables; UVars the memory levels.
	RVars, SVars, LVars, UVars int
	Rows                       int
}

func (s Stats) String() string {
	return fmt.Sprintf("%d nodes, %d edges: %d binary R, %d S, %d ℓ, %d U, %d rows",
		s.Nodes, s.Edges, s.RVars, s.SVars, s.LVars, s.UVars, s.Rows)
}

// Build returns the MILP of the package documentation for p: phase 2's
// (eq. 1–8 on the stage domain of §2.3) or, with MinimizePeak, phase 1's
// (eq. 12–13).
func Build(p *remat.Problem, opts ModelOptions) (*Formulation, error) {
	if p == nil {
		return nil, errors.New("moccasin: nil problem")
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := p.N()
	f := &Formulation{p: p, n: n, opts: opts, Peak: NoVar, Cap: opts.capFor(n)}
	f.Stats.Nodes = n
	f.collectParts()
	f.scale()
	f.Model = milp.NewModel(fmt.Sprintf("moccasin: %d nodes, C_v = %d; memory in units of %g bytes, objective in units of %g seconds", n, f.Cap, f.MemUnit, f.ObjUnit))
	f.lastStages()
	f.addStarts()
	f.addRetention()
	if opts.MinimizePeak {
		lb := math.Max(f.capUnits, f.units(f.stepLB-p.ConstBytes))
		f.Peak = f.Model.AddContinuous("P", lb, milp.Inf)
	}
	f.scratchChain = make([]int32, len(f.parts))
	f.scratchNext = make([]int32, len(f.parts))
	for t := range n {
		f.addStage(t)
	}
	f.scratchChain, f.scratchNext = nil, nil
	f.addCaps()
	f.setObjective()
	f.Stats.Rows = f.Model.NumConstrs()
	return f, nil
}

// collectParts lists every output of every node with its readers.
func (f *Formulation) collectParts() {
	p := f.p
	f.partsOf = make([][]int32, f.n)
	base := make([]int32, f.n)
	for v := range f.n {
		base[v] = int32(len(f.parts))
		for k := range p.NumParts(v) {
			f.partsOf[v] = append(f.partsOf[v], int32(len(f.parts)))
			f.parts = append(f.parts, part{node: int32(v), index: int32(k)})
		}
	}
	for u := range f.n {
		p.ReadParts(u, func(r remat.Part) {
			q := &f.parts[base[r.Node]+r.Index]
			q.readers = append(q.readers, int32(u))
			f.Stats.Edges++
		})
	}
	for _, r := range p.OutputPartList() {
		f.parts[base[r.Node]+r.Index].output = true
	}
	f.Stats.Parts = len(f.parts)
}

// scale picks the memory unit (the gcd of the part sizes, times a power of
// two that keeps the largest coefficient below 2^12: exact in float64) and
// the objective unit (a power of two near the largest cost).
func (f *Formulation) scale() {
	p := f.p
	var sizes []int64
	for v := range f.n {
		for k := range p.NumParts(v) {
			sizes = append(sizes, p.PartBytes(v, k))
		}
	}
	g, shift := milp.MemoryScale(sizes, 12)
	f.shift = shift
	f.gcd = g
	f.MemUnit = math.Ldexp(float64(g), int(f.shift))
	for q := range f.parts {
		pt := &f.parts[q]
		pt.units = f.units(p.PartBytes(int(pt.node), int(pt.index)))
	}
	// The budget, less the constant overhead, rounded down to whole
	// multiples of the gcd: every level is such a multiple, so this is
	// exact.
	f.capUnits = math.Inf(1)
	if p.BudgetBytes != remat.NoBudget {
		f.capUnits = f.units(p.BudgetBytes - p.ConstBytes)
		if p.BudgetBytes < p.ConstBytes {
			f.capUnits = -1
		}
	}
	f.stepLB = p.Floor().Bytes

	f.ObjUnit = milp.ObjectiveUnit(p.Seconds)
}

// units converts bytes (a multiple of the gcd, or rounded down to one)
// into model units.
func (f *Formulation) units(b int64) float64 {
	if b < 0 {
		return -math.Ldexp(float64((-b+f.gcd-1)/f.gcd), -int(f.shift))
	}
	return math.Ldexp(float64(b/f.gcd), -int(f.shift))
}

// lastStages computes, backward over the nodes, last[v], the last stage in
// which computing v can be of use, and lastS[q], the last stage part q can
// usefully be retained into. A computation of v in stage t is read only by
// readers computed in stage t or later, and a reader u is computed no
// later than last[u]; an output part is needed after the last stage. So
// lastS[q] is the largest last[u] over the readers of q (n, past the last
// stage, for an output part), and last[v] is the largest lastS over v's
// parts, capped at n−1 and at least v; when v may not be computed again
// (not recomputable, or C_v = 1) it is v. Recomputing or retaining later
// is spurious: it is never read. CapBinding is set when some node could
// be computed in more than C_v stages.
func (f *Formulation) lastStages() {
	n := f.n
	f.last = make([]int, n)
	f.lastS = make([]int, len(f.parts))
	for v := n - 1; v >= 0; v-- {
		useful := v
		for _, q := range f.partsOf[v] {
			pt := &f.parts[q]
			ls := -1
			if pt.output {
				ls = n
			}
			for _, u := range pt.readers {
				ls = max(ls, f.last[u])
			}
			f.lastS[q] = ls
			useful = max(useful, min(ls, n-1))
		}
		f.last[v] = v
		if f.p.Recomputable[v] {
			if useful-v+1 > f.Cap {
				f.CapBinding = true
			}
			if f.Cap > 1 {
				f.last[v] = useful
			}
		}
	}
}

// addStarts adds the binary interval starts R[t][v], v < t ≤ last[v]
// (§2.3: in stage t the events before t's own are recomputations of
// earlier nodes, in node order). The first interval of v starts in stage
// v (eq. 7 and §2.3's fixed s_v^1): R[v][v] = 1 is a constant.
func (f *Formulation) addStarts() {
	f.R = make([][]milp.Var, f.n)
	for t := range f.n {
		f.R[t] = make([]milp.Var, t)
		for v := range t {
			f.R[t][v] = NoVar
			if t <= f.last[v] {
				f.R[t][v] = f.Model.AddBinary("R_" + strconv.Itoa(t) + "_" + strconv.Itoa(v))
				f.Stats.RVars++
			}
		}
	}
}

// addRetention adds S[t][q] ∈ [0, 1] for v(q) < t ≤ lastS[q]: continuous,
// since for integral R the least retention is integral and every other
// feasible one is larger (see the package documentation).
func (f *Formulation) addRetention() {
	f.S = make([][]milp.Var, f.n+1)
	for t := range f.n + 1 {
		f.S[t] = make([]milp.Var, len(f.parts))
		for q, pt := range f.parts {
			f.S[t][q] = NoVar
			if int(pt.node) < t && t <= f.lastS[q] && t < f.n {
				f.S[t][q] = f.Model.AddContinuous("S_"+strconv.Itoa(t)+"_"+f.partName(q), 0, 1)
				f.Stats.SVars++
			}
		}
	}
}

func (f *Formulation) partName(q int) string {
	pt := f.parts[q]
	if f.p.NumParts(int(pt.node)) == 1 {
		return strconv.Itoa(int(pt.node))
	}
	return strconv.Itoa(int(pt.node)) + "." + strconv.Itoa(int(pt.index))
}

// aff is a variable (coefficient 1) plus a constant, or a constant alone
// (v = NoVar).
type aff struct {
	v milp.Var
	c float64
}

func (a aff) isConst(c float64) bool { return a.v == NoVar && a.c == c }

// r is the start indicator of v in stage t, v ≤ t.
func (f *Formulation) r(t, v int) aff {
	if v == t {
		return aff{NoVar, 1}
	}
	if x := f.R[t][v]; x != NoVar {
		return aff{x, 0}
	}
	return aff{NoVar, 0}
}

// s is the retention of part q into stage t (t = n: after the last stage,
// 1 for an output part).
func (f *Formulation) s(t, q int) aff {
	if t == f.n {
		if f.parts[q].output {
			return aff{NoVar, 1}
		}
		return aff{NoVar, 0}
	}
	if x := f.S[t][q]; x != NoVar {
		return aff{x, 0}
	}
	return aff{NoVar, 0}
}

// expr accumulates a linear expression from affs.
type expr struct{ e milp.Expr }

func (x *expr) add(a aff, k float64) {
	if k == 0 {
		return
	}
	if a.v != NoVar {
		x.e.AddTerm(a.v, k)
	}
	x.e.Const += k * a.c
}

// addStage adds, for stage t, the chains of every part present in it and
// the memory levels of its positions 0 … t.
//
// Chains (eq. 2, 3 and 5 on the stage domain): for part q of node v ≤ t
// with readers u_1 < … < u_r that stage t may compute, and tail
// S[t+1][q],
//
//	R[t][v] + S[t][q] ≥ ℓ_1 ≥ ℓ_2 ≥ … ≥ ℓ_r ≥ S[t+1][q],   ℓ_j ≥ R[t][u_j],
//
// ℓ_j meaning "q is resident when u_j runs". When t itself reads q, every
// ℓ_j is the constant 1 (R[t][t] = 1 and the chain only decreases), and so
// is every ℓ_j before an ℓ that is 1 for any other reason.
//
// Levels (eq. 4): with λ_q(k) part q's chain at its first reader at or
// after position k (its tail past the last),
//
//	level(−1) = Σ_{q: v(q) < t} m_q S[t][q]
//	level(k)  = level(k−1) + Σ_{q of k} m_q R[t][k]              (k's outputs allocated)
//	                       − Σ_{q of k−1} m_q (S[t][q] + R[t][k−1] − λ_q(k))  (k−1's outputs dying)
//	                       − Σ_{q read by k−1} m_q (ℓ_q(k−1) − λ_q(k))        (inputs last read at k−1)
//
// as level variables U ≥ the previous level plus the change (constant
// changes are carried as an offset instead of a new variable).
func (f *Formulation) addStage(t int) {
	m := f.Model
	ts := strconv.Itoa(t)
	// chainOf[q] is the index into f.chains of q's chain in this stage,
	// −1 when it has none; nextJ[q] the index of its first position not
	// yet passed by the scan of the levels.
	chainOf, nextJ := f.scratchChain, f.scratchNext
	for q := range chainOf {
		chainOf[q], nextJ[q] = -1, 0
	}
	// The chains of the parts of nodes ≤ t.
	for v := 0; v <= t; v++ {
		for _, q := range f.partsOf[v] {
			pt := f.parts[q]
			var pos []int32
			for _, u := range pt.readers {
				if int(u) <= t && (int(u) == t || f.R[t][u] != NoVar) {
					pos = append(pos, u)
				}
			}
			tail := f.s(t+1, int(q))
			if len(pos) == 0 && tail.isConst(0) {
				continue
			}
			ch := chain{stage: int32(t), part: q, pos: pos, vars: make([]milp.Var, len(pos))}
			cur := tail
			for j := len(pos) - 1; j >= 0; j-- {
				u := int(pos[j])
				ru := f.r(t, u)
				if ru.isConst(1) || cur.isConst(1) {
					ch.vars[j] = NoVar
					cur = aff{NoVar, 1}
					continue
				}
				l := m.AddContinuous("L_"+ts+"_"+f.partName(int(q))+"_"+strconv.Itoa(u), 0, 1)
				f.Stats.LVars++
				ch.vars[j] = l
				if cur.v != NoVar {
					var e expr
					e.add(aff{l, 0}, 1)
					e.add(cur, -1)
					m.AddConstr("chain_"+ts+"_"+f.partName(int(q))+"_"+strconv.Itoa(u), e.e, milp.GE, 0)
				}
				var e expr
				e.add(aff{l, 0}, 1)
				e.add(ru, -1)
				m.AddConstr("read_"+ts+"_"+f.partName(int(q))+"_"+strconv.Itoa(u), e.e, milp.GE, 0)
				cur = aff{l, 0}
			}
			// Presence: the chain's head needs the part computed in the
			// stage or retained into it (eq. 5; Checkmate's 1b and 1c).
			if v < t && !cur.isConst(0) {
				var e expr
				e.add(f.r(t, v), 1)
				e.add(f.s(t, int(q)), 1)
				e.add(cur, -1)
				m.AddConstr("present_"+ts+"_"+f.partName(int(q)), e.e, milp.GE, 0)
			}
			f.chains = append(f.chains, ch)
			chainOf[q] = int32(len(f.chains) - 1)
		}
	}
	// lambda returns λ_q(k): q's chain value at its first position at or
	// after k, or the tail past the last. Calls for one part come with
	// non-decreasing k.
	lambda := func(q int32, k int) aff {
		c := chainOf[q]
		if c < 0 {
			return f.s(t+1, int(q))
		}
		ch := &f.chains[c]
		j := nextJ[q]
		for j < int32(len(ch.pos)) && int(ch.pos[j]) < k {
			j++
		}
		nextJ[q] = j
		if j == int32(len(ch.pos)) {
			return f.s(t+1, int(q))
		}
		if x := ch.vars[j]; x != NoVar {
			return aff{x, 0}
		}
		return aff{NoVar, 1}
	}

	// The levels: the level at the current position is a level variable
	// plus a constant.
	var start expr
	for q, pt := range f.parts {
		if int(pt.node) < t {
			start.add(f.s(t, q), pt.units)
		}
	}
	cur := NoVar // the current level variable (NoVar: none yet in this stage)
	off := 0.0   // the constant added to it since
	push := func(delta expr, k int) {
		if len(delta.e.Terms) == 0 {
			off += delta.e.Const
			if cur == NoVar {
				f.constLevel = max(f.constLevel, off)
			} else {
				lv := &f.levels[len(f.levels)-1]
				lv.off = max(lv.off, off)
			}
			return
		}
		u := m.AddContinuous("U_"+ts+"_"+strconv.Itoa(k), math.Inf(-1), milp.Inf)
		f.Stats.UVars++
		var e expr
		e.add(aff{u, 0}, 1)
		if cur != NoVar {
			e.add(aff{cur, 0}, -1)
		}
		for _, tm := range delta.e.Terms {
			e.e.AddTerm(tm.Var, -tm.Coef)
		}
		def := m.AddConstr("level_"+ts+"_"+strconv.Itoa(k), e.e, milp.GE, off+delta.e.Const)
		cur, off = u, 0
		f.levels = append(f.levels, memVar{v: u, def: def})
	}
	// Position −1: the retained parts.
	push(start, -1)
	for k := 0; k <= t; k++ {
		var d expr
		for _, q := range f.partsOf[k] {
			d.add(f.r(t, k), f.parts[q].units)
		}
		if k > 0 {
			for _, q := range f.partsOf[k-1] {
				u := f.parts[q].units
				d.add(f.r(t, k-1), -u)
				d.add(f.s(t, int(q)), -u)
				d.add(lambda(q, k), u)
			}
			if !f.r(t, k-1).isConst(0) {
				// k−1 runs in stage t (its reads are chain positions).
				f.p.ReadParts(k-1, func(r remat.Part) {
					q := f.partsOf[r.Node][r.Index]
					u := f.parts[q].units
					// k−1 is a position of q's chain (it reads q and
					// may run in stage t), so λ_q(k−1) is ℓ_q(k−1).
					d.add(lambda(q, k-1), -u)
					d.add(lambda(q, k), u)
				})
			}
		}
		push(d, k)
	}
}

// addCaps adds the C_v rows (the number of intervals of eq. 1–8):
// Σ_{t > v} R[t][v] ≤ C_v − 1, where it can bind. CapBinding records
// whether any node could be computed more often than C_v allows.
func (f *Formulation) addCaps() {
	for v := range f.n {
		var e milp.Expr
		for t := v + 1; t < f.n; t++ {
			if x := f.R[t][v]; x != NoVar {
				e.AddTerm(x, 1)
			}
		}
		if len(e.Terms) > f.Cap-1 {
			f.CapBinding = true
			f.Model.AddConstr("cap_"+strconv.Itoa(v), e, milp.LE, float64(f.Cap-1))
		}
	}
	// The budget (phase 2) or the peak P (phase 1) bounds every level: a
	// level variable plus the largest constant added to it, and the
	// levels that are constants alone.
	for _, lv := range f.levels {
		if f.opts.MinimizePeak {
			var e expr
			e.add(aff{f.Peak, 0}, 1)
			e.add(aff{lv.v, 0}, -1)
			f.Model.AddConstr("peak_"+f.Model.VarName(lv.v), e.e, milp.GE, lv.off)
		} else {
			f.Model.SetBounds(lv.v, math.Inf(-1), f.capUnits-lv.off)
		}
	}
	if f.opts.MinimizePeak {
		lo, _ := f.Model.Bounds(f.Peak)
		f.Model.SetBounds(f.Peak, math.Max(lo, f.constLevel), milp.Inf)
	} else if f.constLevel > f.capUnits {
		// A level no choice changes is over the budget: the model is
		// infeasible, as a row with no variables states.
		f.Model.AddConstr("budget_const", milp.Constant(f.constLevel), milp.LE, f.capUnits)
	}
}

// setObjective sets eq. (1), Σ w_v a_v^i: the recomputations' costs (the
// first computations are a constant), or P in phase 1 (eq. 12).
func (f *Formulation) setObjective() {
	if f.opts.MinimizePeak {
		f.Model.SetObjective(milp.VarExpr(f.Peak, 1), milp.Minimize)
		return
	}
	var e milp.Expr
	for t := range f.n {
		for v, x := range f.R[t] {
			if x != NoVar && f.p.Seconds[v] != 0 {
				e.AddTerm(x, f.p.Seconds[v]/f.ObjUnit)
			}
		}
	}
	e.Const = f.p.LowerBoundSeconds() / f.ObjUnit
	f.Model.SetObjective(e, milp.Minimize)
}
