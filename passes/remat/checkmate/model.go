package checkmate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// NoVar marks an entry of Formulation.R or Formulation.S that is fixed
// rather than a variable, and the Var of a constant Affine.
const NoVar milp.Var = -1

// ModelOptions configure BuildMILP. The zero value is eq. (9) with the
// reductions described in the package documentation.
type ModelOptions struct {
	// Epsilon is the budget allowance of §5.3: the memory rows become
	// U_{t,k} ≤ (1−ε)·M_budget − M_const. 0 ≤ Epsilon ≤ 1.
	Epsilon float64
	// Free chooses the linearization of FREE (eq. 5–7). FreeAuto is
	// FreeAggregated for BuildMILP and WriteModel (the paper's model);
	// each solver documents its own choice.
	Free FreeForm
	// NoReductions keeps the R and S variables that optimality makes zero
	// (retaining a value that nothing reads any more, recomputing a value
	// that nothing reads): eq. (9) exactly as written.
	NoReductions bool
	// MinimizePeak replaces the objective by the peak memory: an integer
	// variable P, in units of the gcd of the M_i, at least the largest
	// working set of a single step, with U_{t,k} ≤ P for every step,
	// minimised, and no budget. The solvers use it to find the least peak
	// when no plan fits the budget.
	MinimizePeak bool
}

// FreeForm is a linearization of FREE_{t,i,k} = 1[num_hazards = 0]
// (eq. 6). Both forms keep (7b), 1 − FREE ≤ num_hazards, and are exact for
// the MILP; they differ in the LP relaxation.
type FreeForm uint8

const (
	// FreeAuto lets the builder choose (see ModelOptions.Free).
	FreeAuto FreeForm = iota
	// FreeAggregated is the paper's (7c): κ(1 − FREE) ≥ num_hazards, κ
	// the largest value of num_hazards. One row per FREE.
	FreeAggregated
	// FreePerFactor bounds FREE by each factor of the product (5):
	// FREE ≤ R_{t,k}, FREE ≤ 1 − S_{t+1,i}, FREE ≤ 1 − R_{t,j} for the
	// users j > k. A row per factor and a tighter LP relaxation (the
	// relaxation's FREE can no longer exceed any factor): on six 40-node
	// random DAGs at 80 % of checkpoint-all's peak CBC proved optimality
	// 1.1 to 6 times faster on the five it closed within 60 s, and left a
	// third of the aggregated form's gap on the sixth.
	FreePerFactor
)

func (f FreeForm) String() string {
	switch f {
	case FreeAuto:
		return "auto"
	case FreeAggregated:
		return "aggregated (7c)"
	case FreePerFactor:
		return "per factor"
	}
	return fmt.Sprintf("FreeForm(%d)", uint8(f))
}

// Affine is Const + Coef·Var, or the constant Const when Var is NoVar. It
// is how Formulation exposes a FREE_{t,i,k}: a binary variable (Coef 1,
// Const 0), a constant, or 1 − x for the one variable x its hazards depend
// on.
type Affine struct {
	Var   milp.Var
	Coef  float64
	Const float64
}

// Value is the affine function at x (indexed by Var).
func (a Affine) Value(x []float64) float64 {
	if a.Var == NoVar {
		return a.Const
	}
	return a.Const + a.Coef*x[a.Var]
}

func constant(c float64) Affine  { return Affine{Var: NoVar, Const: c} }
func variable(v milp.Var) Affine { return Affine{Var: v, Coef: 1} }

// Edge is the edge (v_I, v_K) of the data-flow graph: node K reads node I.
type Edge struct{ I, K int32 }

// Stats counts what BuildMILP made.
type Stats struct {
	Nodes, Edges int
	// Variables by kind. Entries fixed by (8a)–(8c), by non-recomputable
	// nodes or by the reductions are constants, not variables.
	RVars, SVars, UVars, FreeVars int
	// Rows by kind: (1b), (1c) (the outputs' row at t = n included), the
	// recurrence (2)–(3), (7b) with (7c) or the per-factor rows, and the
	// peak rows of ModelOptions.MinimizePeak.
	DepRows, RetainRows, MemRows, FreeRows, PeakRows int
}

// Vars is the number of variables.
func (s Stats) Vars() int { return s.RVars + s.SVars + s.UVars + s.FreeVars }

// Rows is the number of constraints.
func (s Stats) Rows() int { return s.DepRows + s.RetainRows + s.MemRows + s.FreeRows + s.PeakRows }

// Formulation is the MILP of eq. (9) for one problem, with the handles of
// its variables. Build it with BuildMILP; solve Model with milp.Solve, turn
// a solution into a plan with Plan, and a plan into a MIP start with
// Start. A Formulation is not safe for concurrent use (SetLimit changes
// Model).
type Formulation struct {
	// Model is the MILP. Solving it as is solves the problem; its
	// objective is in units of ObjUnit seconds, its memory in units of
	// MemUnit bytes.
	Model *milp.Model
	// Options are the options it was built with (Free resolved).
	Options ModelOptions

	// R[t][i] (i ≤ t) is the variable R_{t,i}, or NoVar when the entry is
	// fixed: R[t][t] to 1 (8a), the others to 0.
	R [][]milp.Var
	// S[t][i] (i < t) is the variable S_{t,i}, or NoVar when fixed to 0.
	// The virtual row S_{n,·} (the outputs, 1) is not stored.
	S [][]milp.Var
	// U[t][k] (k ≤ t) is the variable U_{t,k}, memory in units of MemUnit
	// bytes without the constant overhead; consecutive entries of a row
	// share a variable where nothing is allocated or freed in between.
	U [][]milp.Var
	// Edges lists the edges sorted by K, then I. The edges with K ≤ t are
	// Edges[:len(Free[t])].
	Edges []Edge
	// Free[t][e] is FREE_{t,I,K} of edge Edges[e].
	Free [][]Affine
	// Peak is the variable P of ModelOptions.MinimizePeak (in units of
	// PeakUnit bytes, the constant overhead excluded), else NoVar.
	Peak milp.Var

	// MemUnit is the bytes per unit of U; ObjUnit the seconds per unit of
	// the objective. Both are products of powers of two and integers, so
	// scaled coefficients are exact. PeakUnit is the bytes per unit of
	// Peak: the gcd of the M_i.
	MemUnit, ObjUnit, PeakUnit float64
	// Stats counts variables and rows.
	Stats Stats

	full, coarse *remat.Problem
	n            int
	users        [][]int32
	need         []int // the last stage that can read each node (lastReads)
	isOut        []bool
	memUnits     []float64 // M_i in units
	gcd          int64     // memory units are gcd·2^shift bytes (scaleMemory)
	shift        uint
	uvars        []milp.Var // distinct U variables
	freeVars     []freeVar  // the FREE variables
	scratch      []milp.Term
}

// freeVar is a FREE_{t,i,k} with a variable of its own: stage t, edge e.
type freeVar struct {
	t, e int
	v    milp.Var
}

// BuildMILP builds the frontier-advancing MILP (9) of p on its fixed
// topological order, with the memory terms of p.Coarse() (see the package
// documentation). It fails only on an invalid problem or options.
func BuildMILP(p *remat.Problem, opts ModelOptions) (*Formulation, error) {
	if p == nil {
		return nil, errors.New("checkmate: nil problem")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !(opts.Epsilon >= 0 && opts.Epsilon <= 1) {
		return nil, fmt.Errorf("checkmate: budget allowance ε = %v; want 0 ≤ ε ≤ 1", opts.Epsilon)
	}
	switch opts.Free {
	case FreeAuto:
		opts.Free = FreeAggregated
	case FreeAggregated, FreePerFactor:
	default:
		return nil, fmt.Errorf("checkmate: unknown FREE linearization %v", opts.Free)
	}
	q := p.Coarse()
	n := q.N()
	f := &Formulation{Options: opts, Peak: NoVar, full: p, coarse: q, n: n}
	f.users = make([][]int32, n)
	for k, ds := range q.Deps {
		for _, i := range ds {
			f.users[i] = append(f.users[i], int32(k))
			f.Edges = append(f.Edges, Edge{i, int32(k)})
		}
	}
	f.isOut = make([]bool, n)
	for _, o := range q.Outputs {
		f.isOut[o] = true
	}
	f.lastReads()
	f.scaleMemory()
	f.scaleObjective()
	f.Model = milp.NewModel(fmt.Sprintf("checkmate: %d nodes; memory in units of %g bytes, objective in units of %g seconds", n, f.MemUnit, f.ObjUnit))
	f.Stats.Nodes, f.Stats.Edges = n, len(f.Edges)

	f.addRS()
	if err := f.addDeps(); err != nil {
		return nil, err
	}
	if err := f.addRetain(); err != nil {
		return nil, err
	}
	f.addFree()
	f.addMemory()
	f.setObjective()
	if !opts.MinimizePeak {
		f.SetLimit((1 - opts.Epsilon) * float64(q.BudgetBytes))
	}
	return f, nil
}

// scaleMemory picks the memory unit: g = gcd of the nonzero M_i, then a
// power of two 2^s that brings the largest M_i/g below 2^11. Dividing an
// integer below 2^53 by a power of two is exact in float64.
func (f *Formulation) scaleMemory() {
	g, shift := milp.MemoryScale(f.coarse.Bytes, 11)
	f.gcd, f.shift = g, shift
	f.PeakUnit = float64(g)
	f.MemUnit = float64(g) * math.Ldexp(1, int(f.shift))
	f.memUnits = make([]float64, f.n)
	for i, b := range f.coarse.Bytes {
		f.memUnits[i] = math.Ldexp(float64(b/g), -int(f.shift))
	}
}

// scaleObjective picks the objective unit: the power of two nearest below
// the largest C_i (1 when every cost is 0).
func (f *Formulation) scaleObjective() {
	f.ObjUnit = milp.ObjectiveUnit(f.coarse.Seconds)
}

// lastReads computes need[i], the last stage in which node i's value can
// be read by a computation that is not spurious: a user j reads i in stage
// j, and, when j may be recomputed, in any later stage up to the last in
// which j's own value can be read (n−1 when j is an output, whose
// recomputation in the last stage is useful). −1 when nothing reads i.
// Users come after i, so one backward pass computes it.
func (f *Formulation) lastReads() {
	n := f.n
	f.need = make([]int, n)
	for i := n - 1; i >= 0; i-- {
		f.need[i] = -1
		for _, j := range f.users[i] {
			f.need[i] = max(f.need[i], int(j))
			if f.coarse.Recomputable[j] {
				if f.isOut[j] {
					f.need[i] = n - 1
				} else {
					f.need[i] = max(f.need[i], f.need[j])
				}
			}
		}
	}
}

// canRecompute reports whether R_{t,i}, t > i, is a variable: i may be
// recomputed and its value can be read in stage t or later, or it is an
// output (the reduction of the package documentation).
func (f *Formulation) canRecompute(t, i int) bool {
	if !f.coarse.Recomputable[i] {
		return false
	}
	return f.Options.NoReductions || f.isOut[i] || t <= f.need[i]
}

// canRetain reports whether S_{t,i}, t > i, is a variable: i's value can
// be read in stage t or later (by a first computation or by a
// recomputation of a reader), or it is an output.
func (f *Formulation) canRetain(t, i int) bool {
	return f.Options.NoReductions || f.isOut[i] || t <= f.need[i]
}

func (f *Formulation) addRS() {
	n := f.n
	f.R = make([][]milp.Var, n)
	f.S = make([][]milp.Var, n)
	for t := range n {
		f.R[t] = make([]milp.Var, t+1)
		f.S[t] = make([]milp.Var, t)
		ts := strconv.Itoa(t)
		for i := range t {
			f.R[t][i], f.S[t][i] = NoVar, NoVar
			is := strconv.Itoa(i)
			if f.canRecompute(t, i) {
				f.R[t][i] = f.Model.AddBinary("R_" + ts + "_" + is)
				f.Stats.RVars++
			}
			if f.canRetain(t, i) {
				f.S[t][i] = f.Model.AddBinary("S_" + ts + "_" + is)
				f.Stats.SVars++
			}
		}
		f.R[t][t] = NoVar
	}
}

// r is R_{t,i} as an Affine (constants for fixed entries and i > t).
func (f *Formulation) r(t, i int) Affine {
	switch {
	case i > t:
		return constant(0)
	case i == t:
		return constant(1)
	case f.R[t][i] != NoVar:
		return variable(f.R[t][i])
	}
	return constant(0)
}

// s is S_{t,i} as an Affine; row t = n is the virtual row of the outputs.
func (f *Formulation) s(t, i int) Affine {
	switch {
	case t == f.n:
		if f.isOut[i] {
			return constant(1)
		}
		return constant(0)
	case i >= t:
		return constant(0)
	case f.S[t][i] != NoVar:
		return variable(f.S[t][i])
	}
	return constant(0)
}

// lin accumulates a linear expression of Affines.
type lin struct {
	terms []milp.Term
	c     float64
}

func (l *lin) add(a Affine, k float64) {
	l.c += k * a.Const
	if a.Var != NoVar && a.Coef != 0 && k != 0 {
		l.terms = append(l.terms, milp.Term{Var: a.Var, Coef: k * a.Coef})
	}
}

func (l *lin) reset() { l.terms, l.c = l.terms[:0], 0 }

// expr returns the variable part as a milp.Expr (the model copies it).
func (l *lin) expr() milp.Expr { return milp.Expr{Terms: l.terms} }

// addDeps adds (1b): R_{t,k} ≤ R_{t,i} + S_{t,i} for every edge (i, k),
// k ≤ t.
func (f *Formulation) addDeps() error {
	var l lin
	for t := range f.n {
		ts := strconv.Itoa(t)
		for _, e := range f.Edges {
			k, i := int(e.K), int(e.I)
			if k > t {
				break
			}
			rk := f.r(t, k)
			if rk.Var == NoVar && rk.Const == 0 {
				continue
			}
			l.reset()
			l.add(rk, 1)
			l.add(f.r(t, i), -1)
			l.add(f.s(t, i), -1)
			if len(l.terms) == 0 {
				if l.c > 0 {
					return fmt.Errorf("checkmate: internal error: stage %d cannot compute node %d, which reads node %d (1b)", t, k, i)
				}
				continue
			}
			f.Model.AddConstr("dep_"+ts+"_"+strconv.Itoa(i)+"_"+strconv.Itoa(k), l.expr(), milp.LE, -l.c)
			f.Stats.DepRows++
		}
	}
	return nil
}

// addRetain adds (1c): S_{t,i} ≤ R_{t−1,i} + S_{t−1,i}, for 1 ≤ t ≤ n;
// at t = n, S_{n,o} = 1 for the outputs keeps them resident at the end.
func (f *Formulation) addRetain() error {
	var l lin
	for t := 1; t <= f.n; t++ {
		ts := strconv.Itoa(t)
		for i := 0; i < t-1; i++ { // i = t−1: R_{t−1,t−1} = 1 (8a)
			st := f.s(t, i)
			if st.Var == NoVar && st.Const == 0 {
				continue
			}
			l.reset()
			l.add(st, 1)
			l.add(f.r(t-1, i), -1)
			l.add(f.s(t-1, i), -1)
			if len(l.terms) == 0 {
				if l.c > 0 {
					return fmt.Errorf("checkmate: internal error: node %d cannot be resident at stage %d (1c)", i, t)
				}
				continue
			}
			name := "keep_" + ts + "_" + strconv.Itoa(i)
			if t == f.n {
				name = "out_" + strconv.Itoa(i)
			}
			f.Model.AddConstr(name, l.expr(), milp.LE, -l.c)
			f.Stats.RetainRows++
		}
	}
	return nil
}

// hazards builds num_hazards(t, i, k) of eq. (6) for edge e = (i, k):
// (1 − R_{t,k}) + S_{t+1,i} + Σ_{j∈USERS[i], k<j≤t} R_{t,j}, into l.
func (f *Formulation) hazards(l *lin, t int, e Edge) {
	i, k := int(e.I), int(e.K)
	l.reset()
	l.c = 1
	l.add(f.r(t, k), -1)
	l.add(f.s(t+1, i), 1)
	for _, j := range f.users[i] {
		if int(j) > k && int(j) <= t {
			l.add(f.r(t, int(j)), 1)
		}
	}
}

// addFree defines FREE_{t,i,k} for every stage t and edge (i, k), k ≤ t,
// by eq. (6)–(7) (§4.5 of the paper's text). Lemma 4.2 makes FREE the
// indicator of num_hazards = 0; where num_hazards is a constant or a single
// binary, FREE is substituted (a constant, or 1 − that binary) instead of
// getting a variable.
func (f *Formulation) addFree() {
	var l lin
	f.Free = make([][]Affine, f.n)
	ne := 0
	for t := range f.n {
		for ne < len(f.Edges) && int(f.Edges[ne].K) <= t {
			ne++
		}
		f.Free[t] = make([]Affine, ne)
		ts := strconv.Itoa(t)
		for ei, e := range f.Edges[:ne] {
			rk := f.r(t, int(e.K))
			if rk.Var == NoVar && rk.Const == 0 {
				f.Free[t][ei] = constant(0) // (5): nothing computed, nothing freed
				continue
			}
			f.hazards(&l, t, e)
			lo, hi := l.c, l.c
			for _, tm := range l.terms {
				lo += min(tm.Coef, 0)
				hi += max(tm.Coef, 0)
			}
			switch {
			case lo >= 1: // a hazard is certain: FREE = 0
				f.Free[t][ei] = constant(0)
			case len(l.terms) == 0: // lo = hi = c = 0: no hazard
				f.Free[t][ei] = constant(1)
			case len(l.terms) == 1 && lo == 0 && hi == 1: // h ∈ {0, 1}: FREE = 1 − h
				tm := l.terms[0]
				f.Free[t][ei] = Affine{Var: tm.Var, Coef: -tm.Coef, Const: 1 - l.c}
			default:
				name := ts + "_" + strconv.Itoa(int(e.I)) + "_" + strconv.Itoa(int(e.K))
				v := f.Model.AddBinary("FREE_" + name) // (7a)
				f.Stats.FreeVars++
				f.Free[t][ei] = variable(v)
				f.freeVars = append(f.freeVars, freeVar{t, ei, v})
				// (7b): 1 − FREE ≤ num_hazards.
				ex := milp.Expr{Terms: append(append(f.scratch[:0], l.terms...), milp.Term{Var: v, Coef: 1})}
				f.Model.AddConstr("free_lo_"+name, ex, milp.GE, 1-l.c)
				f.scratch = ex.Terms
				f.Stats.FreeRows++
				if f.Options.Free == FreePerFactor && lo == 0 {
					// FREE ≤ each factor of (5): FREE ≤ R_{t,k} (the −1
					// term) and FREE ≤ 1 − x for every other hazard x.
					for _, tm := range l.terms {
						if tm.Coef < 0 {
							f.Model.AddConstr("free_r_"+name, milp.Expr{Terms: []milp.Term{{Var: v, Coef: 1}, {Var: tm.Var, Coef: -1}}}, milp.LE, 0)
						} else {
							f.Model.AddConstr("free_h_"+name+"_"+strconv.Itoa(int(tm.Var)), milp.Expr{Terms: []milp.Term{{Var: v, Coef: 1}, {Var: tm.Var, Coef: 1}}}, milp.LE, 1)
						}
						f.Stats.FreeRows++
					}
				} else {
					// (7c): κ (1 − FREE) ≥ num_hazards, κ its largest value.
					ex := milp.Expr{Terms: append(append(f.scratch[:0], l.terms...), milp.Term{Var: v, Coef: hi})}
					f.Model.AddConstr("free_hi_"+name, ex, milp.LE, hi-l.c)
					f.scratch = ex.Terms
					f.Stats.FreeRows++
				}
			}
		}
	}
}

// addMemory adds the memory recurrence (2)–(3) with the frees of (4)
// (over DEPS[k] only, §4.8). The budget is the variables' upper bound
// (SetLimit).
func (f *Formulation) addMemory() {
	var l lin
	f.U = make([][]milp.Var, f.n)
	ne := 0 // edges with K < k, in stage t
	for t := range f.n {
		f.U[t] = make([]milp.Var, t+1)
		ts := strconv.Itoa(t)
		ne = 0
		for k := 0; k <= t; k++ {
			l.reset()
			if k == 0 {
				// (2): U_{t,0} = Σ_i M_i S_{t,i} + M_0 R_{t,0}.
				for i := range t {
					l.add(f.s(t, i), f.memUnits[i])
				}
			} else {
				// (3): U_{t,k} = U_{t,k−1} − mem_freed_t(v_{k−1}) + M_k R_{t,k}.
				for ne < len(f.Edges) && int(f.Edges[ne].K) == k-1 {
					e := f.Edges[ne]
					l.add(f.Free[t][ne], -f.memUnits[e.I])
					ne++
				}
			}
			l.add(f.r(t, k), f.memUnits[k])
			if k > 0 && len(l.terms) == 0 && l.c == 0 {
				f.U[t][k] = f.U[t][k-1] // nothing allocated or freed
				continue
			}
			u := f.Model.AddContinuous("U_"+ts+"_"+strconv.Itoa(k), 0, milp.Inf)
			f.U[t][k] = u
			f.uvars = append(f.uvars, u)
			f.Stats.UVars++
			ex := milp.Expr{Terms: append(f.scratch[:0], milp.Term{Var: u, Coef: 1})}
			if k > 0 {
				ex.Terms = append(ex.Terms, milp.Term{Var: f.U[t][k-1], Coef: -1})
			}
			for _, tm := range l.terms {
				ex.Terms = append(ex.Terms, milp.Term{Var: tm.Var, Coef: -tm.Coef})
			}
			f.Model.AddConstr("mem_"+ts+"_"+strconv.Itoa(k), ex, milp.EQ, l.c)
			f.scratch = ex.Terms
			f.Stats.MemRows++
		}
	}
}

// setObjective sets (1a), Σ_t Σ_i C_i R_{t,i} (the fixed R_{t,t} = 1 as
// the constant Σ_t C_t), or the peak P under MinimizePeak.
func (f *Formulation) setObjective() {
	if f.Options.MinimizePeak {
		// P counts whole units of g bytes (g = gcd of the M_i): at an
		// integral point every U_{t,k} is such a multiple (it is 2^-s
		// times an integer in U's units), so P may be an integer, which
		// lets CBC round its bound up. Every step's working set, the
		// node's output and its inputs (eq. 3), bounds it below.
		var lb int64
		for k, ds := range f.coarse.Deps {
			w := f.coarse.Bytes[k]
			for _, d := range ds {
				w += f.coarse.Bytes[d]
			}
			lb = max(lb, w/f.gcd)
		}
		f.Peak = f.Model.AddInteger("P", float64(lb), milp.Inf)
		scale := math.Ldexp(1, -int(f.shift)) // U units per unit of P
		for _, u := range f.uvars {
			f.Model.AddConstr("peak_"+f.Model.VarName(u), milp.Expr{Terms: []milp.Term{{Var: u, Coef: 1}, {Var: f.Peak, Coef: -scale}}}, milp.LE, 0)
			f.Stats.PeakRows++
		}
		f.Model.SetObjective(milp.VarExpr(f.Peak, 1), milp.Minimize)
		return
	}
	var obj milp.Expr
	for t := range f.n {
		obj.Const += f.coarse.Seconds[t] / f.ObjUnit
		for i, v := range f.R[t][:t] {
			if v != NoVar && f.coarse.Seconds[i] != 0 {
				obj.Terms = append(obj.Terms, milp.Term{Var: v, Coef: f.coarse.Seconds[i] / f.ObjUnit})
			}
		}
	}
	f.Model.SetObjective(obj, milp.Minimize)
}

// SetLimit sets the memory constraint of (9) to U_{t,k} + M_const ≤
// limitBytes at every step (+Inf: none), rounded down to a whole memory
// unit. BuildMILP sets (1−ε)·BudgetBytes; the solvers tighten it to
// recover from solver tolerances.
func (f *Formulation) SetLimit(limitBytes float64) {
	hi := f.capUnits(limitBytes)
	lo := min(0, hi)
	for _, u := range f.uvars {
		f.Model.SetBounds(u, lo, hi)
	}
}

// capUnits converts a limit in bytes (constant overhead included) to the
// largest whole number of memory units of U it allows.
func (f *Formulation) capUnits(limitBytes float64) float64 {
	if math.IsInf(limitBytes, 1) || limitBytes >= float64(remat.NoBudget) {
		return milp.Inf
	}
	capBytes := math.Floor(limitBytes) - float64(f.coarse.ConstBytes)
	return math.Ldexp(math.Floor(capBytes/float64(f.gcd)), -int(f.shift))
}

// Seconds converts an objective value of Model to seconds.
func (f *Formulation) Seconds(obj float64) float64 { return obj * f.ObjUnit }

// Plan decodes a point of Model (a solution's Values) into a plan of the
// problem BuildMILP was given: R is read from the point (entries above
// one half), computations whose value nothing reads are dropped, and
// remat.Schedule derives the least S, FREE and the execution plan of
// Algorithm 1 (see the package documentation). The plan's Solver,
// Optimal, LowerBound and Gap are left for the caller.
func (f *Formulation) Plan(x []float64) (*remat.Plan, error) {
	if len(x) != f.Model.NumVars() {
		return nil, fmt.Errorf("checkmate: a point of %d values for a model of %d variables", len(x), f.Model.NumVars())
	}
	stages := make([][]int32, f.n)
	for t := range f.n {
		for i, v := range f.R[t][:t] {
			if v != NoVar && x[v] > 0.5 {
				stages[t] = append(stages[t], int32(i))
			}
		}
		stages[t] = append(stages[t], int32(t))
	}
	remat.DropSpurious(f.coarse, stages)
	return remat.ScheduleStages(f.full, stages)
}

// Start encodes a plan as a point of Model, for a MIP start: R from the
// plan (spurious computations dropped as Plan does), the least S that
// remat.Schedule derives, FREE by eq. (5) and U by (2)–(3). It returns an
// error when the plan does not have the frontier-advancing form or
// recomputes a node that may not be. The point may exceed the memory
// limit (Feasible says); CBC drops an infeasible start.
func (f *Formulation) Start(plan *remat.Plan) (map[milp.Var]float64, error) {
	x, err := f.Point(plan)
	if err != nil {
		return nil, err
	}
	start := make(map[milp.Var]float64, len(x))
	for v, val := range x {
		start[milp.Var(v)] = val
	}
	return start, nil
}

// Point is Start as a dense vector indexed by Var.
func (f *Formulation) Point(plan *remat.Plan) ([]float64, error) {
	if plan == nil || len(plan.R) != f.n {
		return nil, fmt.Errorf("checkmate: the plan does not have %d stages", f.n)
	}
	stages := make([][]int32, f.n)
	for t, row := range plan.R {
		if !row.Has(t) {
			return nil, fmt.Errorf("checkmate: the plan's stage %d does not compute node %d (8a)", t, t)
		}
		for i := row.Next(0); i >= 0; i = row.Next(i + 1) {
			switch {
			case i > t:
				return nil, fmt.Errorf("checkmate: the plan's stage %d computes node %d (8c)", t, i)
			case i == t:
			case !f.coarse.Recomputable[i]:
				return nil, fmt.Errorf("checkmate: the plan's stage %d recomputes node %d, which is not recomputable", t, i)
			case f.R[t][i] == NoVar:
				// A recomputation of a value nothing reads: spurious.
				continue
			}
			stages[t] = append(stages[t], int32(i))
		}
	}
	remat.DropSpurious(f.coarse, stages)
	least, err := remat.ScheduleStages(f.coarse, stages)
	if err != nil {
		return nil, err
	}
	x := make([]float64, f.Model.NumVars())
	for t := range f.n {
		for _, i := range stages[t] {
			if int(i) < t {
				x[f.R[t][i]] = 1
			}
		}
		for i := least.S[t].Next(0); i >= 0; i = least.S[t].Next(i + 1) {
			if f.S[t][i] == NoVar {
				return nil, fmt.Errorf("checkmate: internal error: stage %d retains node %d, fixed to 0 in the model", t, i)
			}
			x[f.S[t][i]] = 1
		}
	}
	// FREE variables: 1 exactly when num_hazards = 0 (eq. 6).
	var l lin
	for _, fv := range f.freeVars {
		f.hazards(&l, fv.t, f.Edges[fv.e])
		h := l.c
		for _, tm := range l.terms {
			h += tm.Coef * x[tm.Var]
		}
		if math.Abs(h) < 0.5 {
			x[fv.v] = 1
		}
	}
	// U by the recurrence (2)–(3).
	peak := 0.0
	for t := range f.n {
		u, ne := 0.0, 0
		for i := range t {
			u += f.memUnits[i] * f.s(t, i).Value(x)
		}
		for k := 0; k <= t; k++ {
			if k > 0 {
				for ne < len(f.Edges) && int(f.Edges[ne].K) == k-1 {
					u -= f.memUnits[f.Edges[ne].I] * f.Free[t][ne].Value(x)
					ne++
				}
			}
			u += f.memUnits[k] * f.r(t, k).Value(x)
			x[f.U[t][k]] = u
			peak = max(peak, u)
		}
	}
	if f.Peak != NoVar {
		x[f.Peak] = math.Round(math.Ldexp(peak, int(f.shift)))
	}
	return x, nil
}

// Feasible reports whether a point satisfies Model (bounds, rows and
// integrality, to 1e-9).
func (f *Formulation) Feasible(x []float64) bool { return f.Model.MaxViolation(x) <= 1e-9 }

// WriteModel writes the MILP (9) of p (BuildMILP with the default
// options) in format "lp" (CPLEX LP) or "mps" (free MPS), for
// remat-compile -emit-milp and solvers such as Gurobi, HiGHS or SCIP. The
// objective is in units of the model's ObjUnit seconds and the memory in
// units of MemUnit bytes; the model's name, written in the file's header,
// says both.
func WriteModel(w io.Writer, p *remat.Problem, format string) error {
	switch format {
	case "lp", "mps":
	default:
		return fmt.Errorf("checkmate: unknown model format %q; want \"lp\" or \"mps\"", format)
	}
	f, err := BuildMILP(p, ModelOptions{})
	if err != nil {
		return err
	}
	if format == "lp" {
		return f.Model.WriteLP(w)
	}
	return f.Model.WriteMPS(w)
}
