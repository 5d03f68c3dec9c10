package moccasin

import (
	"fmt"
	"math"

	"github.com/remat-compile/remat/internal/milp"
	"github.com/remat-compile/remat/passes/remat"
)

// Plan reads a plan out of a point of the model: stage t computes t and
// every v with R[t][v] > ½, in increasing order (the events of stage t,
// §2.3). Computations whose value nothing reads are dropped (they only
// cost time and memory), and remat.ScheduleStages derives the least
// retention, the frees and the execution plan of Checkmate's Algorithm 1.
// The plan's Solver, Optimal, LowerBound and Gap are left to the caller.
func (f *Formulation) Plan(x []float64) (*remat.Plan, error) {
	if len(x) != f.Model.NumVars() {
		return nil, fmt.Errorf("moccasin: a point of %d values for a model of %d variables", len(x), f.Model.NumVars())
	}
	stages := make([][]int32, f.n)
	for t := range f.n {
		for v, r := range f.R[t] {
			if r != NoVar && x[r] > 0.5 {
				stages[t] = append(stages[t], int32(v))
			}
		}
		stages[t] = append(stages[t], int32(t))
	}
	remat.DropSpurious(f.p, stages)
	return remat.ScheduleStages(f.p, stages)
}

// Start returns a MIP start for the model from a plan: the values of the
// interval starts R (spurious recomputations dropped first), the only
// integer variables; CBC solves for the rest. It fails when the plan is not
// in the frontier-advancing form, recomputes a node that may not be, or
// computes a node more often than C_v allows.
func (f *Formulation) Start(plan *remat.Plan) (map[milp.Var]float64, error) {
	stages, err := f.stagesOf(plan, true)
	if err != nil {
		return nil, err
	}
	start := make(map[milp.Var]float64, f.Stats.RVars)
	for t := range f.n {
		for _, r := range f.R[t] {
			if r != NoVar {
				start[r] = 0
			}
		}
		for _, v := range stages[t] {
			if int(v) < t {
				start[f.R[t][v]] = 1
			}
		}
	}
	return start, nil
}

// stagesOf lists the computations of each stage of plan, checking that
// the model can represent them.
func (f *Formulation) stagesOf(plan *remat.Plan, drop bool) ([][]int32, error) {
	if plan == nil || len(plan.R) != f.n {
		return nil, fmt.Errorf("moccasin: the plan does not have %d stages", f.n)
	}
	stages := make([][]int32, f.n)
	for t, row := range plan.R {
		if !row.Has(t) {
			return nil, fmt.Errorf("moccasin: the plan's stage %d does not compute node %d", t, t)
		}
		for v := row.Next(0); v >= 0; v = row.Next(v + 1) {
			if v > t {
				return nil, fmt.Errorf("moccasin: the plan's stage %d computes node %d, after its own", t, v)
			}
			stages[t] = append(stages[t], int32(v))
		}
	}
	if drop {
		remat.DropSpurious(f.p, stages)
	}
	count := make([]int, f.n)
	for t, st := range stages {
		for _, v := range st {
			count[v]++
			switch {
			case int(v) == t:
			case !f.p.Recomputable[v]:
				return nil, fmt.Errorf("moccasin: the plan recomputes node %s (%d), which is not recomputable", f.p.Name(int(v)), v)
			case f.R[t][v] == NoVar:
				return nil, fmt.Errorf("moccasin: the plan recomputes node %s (%d) in stage %d, where nothing can read it", f.p.Name(int(v)), v, t)
			}
			if count[v] > f.Cap {
				return nil, fmt.Errorf("moccasin: the plan computes node %s (%d) %d times, more than C_v = %d", f.p.Name(int(v)), v, count[v], f.Cap)
			}
		}
	}
	return stages, nil
}

// Point returns the point of the model that represents plan exactly: R
// from the plan (which must not have spurious recomputations the model
// cannot hold; see Start), the least retention S (a part is retained into
// stage t when its value current then is read in stage t or later, before
// the node is computed again, or is a graph output's final value), the
// least chains ℓ (resident at a reader position exactly when a reader at
// or after it runs in the stage, or the part is retained into the next),
// and the levels U by their defining rows; in phase 1, P is the peak. It is
// what the package documentation's exactness argument constructs: its
// levels are the memory that remat.Check measures (PeakBytes says).
func (f *Formulation) Point(plan *remat.Plan) ([]float64, error) {
	stages, err := f.stagesOf(plan, false)
	if err != nil {
		return nil, err
	}
	x := make([]float64, f.Model.NumVars())
	for t, st := range stages {
		for _, v := range st {
			if int(v) < t {
				x[f.R[t][v]] = 1
			}
		}
	}
	// S, backward over the computations: need[q] says that the value of
	// part q current at the scan's position is read later.
	need := make([]bool, len(f.parts))
	for q, pt := range f.parts {
		need[q] = pt.output
	}
	for t := f.n - 1; t >= 0; t-- {
		st := stages[t]
		for k := len(st) - 1; k >= 0; k-- {
			v := int(st[k])
			for _, q := range f.partsOf[v] {
				need[q] = false
			}
			f.p.ReadParts(v, func(r remat.Part) { need[f.partsOf[r.Node][r.Index]] = true })
		}
		for q, pt := range f.parts {
			if int(pt.node) < t && need[q] {
				s := f.S[t][q]
				if s == NoVar {
					return nil, fmt.Errorf("moccasin: internal error: part %s is needed in stage %d, where the model cannot retain it", f.partName(q), t)
				}
				x[s] = 1
			}
		}
	}
	// ℓ, each chain from its tail.
	val := func(a aff) float64 {
		if a.v == NoVar {
			return a.c
		}
		return x[a.v] + a.c
	}
	for _, ch := range f.chains {
		cur := val(f.s(int(ch.stage)+1, int(ch.part)))
		for j := len(ch.pos) - 1; j >= 0; j-- {
			cur = math.Max(cur, val(f.r(int(ch.stage), int(ch.pos[j]))))
			if l := ch.vars[j]; l != NoVar {
				x[l] = cur
			}
		}
	}
	// The levels, in creation order: each is its row's least value.
	for _, lv := range f.levels {
		_, e, lo, _, _ := f.Model.Constraint(lv.def)
		x[lv.v] = 0
		x[lv.v] = lo - e.Eval(x)
	}
	if f.Peak != NoVar {
		x[f.Peak] = math.Max(f.constLevel, f.levelMax(x))
		lo, _ := f.Model.Bounds(f.Peak)
		x[f.Peak] = math.Max(x[f.Peak], lo)
	}
	return x, nil
}

// levelMax is the largest level of point x in model units: every level
// variable plus its constant, and the constant levels.
func (f *Formulation) levelMax(x []float64) float64 {
	m := f.constLevel
	for _, lv := range f.levels {
		m = math.Max(m, x[lv.v]+lv.off)
	}
	return m
}

// PeakBytes is the peak memory the model's levels give for point x, in
// bytes, ConstBytes included: for the point Point builds from a plan, the
// PeakBytes remat.Check measures. Levels are multiples of the unit up to
// the solver's tolerance, so the result is rounded to a whole unit.
func (f *Formulation) PeakBytes(x []float64) int64 {
	u := f.levelMax(x) * math.Ldexp(1, int(f.shift))
	return f.p.ConstBytes + int64(math.Round(u))*f.gcd
}

// Seconds converts an objective value of the phase-2 model into seconds.
func (f *Formulation) Seconds(obj float64) float64 { return obj * f.ObjUnit }
