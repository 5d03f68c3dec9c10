package milp

import (
	"fmt"
	"math"
	"strings"
)

// Inf is +∞, for bounds.
var Inf = math.Inf(1)

// Sense is the relation of a constraint.
type Sense int8

// Constraint senses.
const (
	LE Sense = iota + 1 // expr <= rhs
	GE                  // expr >= rhs
	EQ                  // expr == rhs
)

func (s Sense) String() string {
	switch s {
	case LE:
		return "<="
	case GE:
		return ">="
	case EQ:
		return "="
	}
	return fmt.Sprintf("Sense(%d)", int8(s))
}

// Direction is the direction of optimisation.
type Direction int8

// Directions. The zero value minimises.
const (
	Minimize Direction = iota
	Maximize
)

func (d Direction) String() string {
	if d == Maximize {
		return "maximize"
	}
	return "minimize"
}

// Constr is a constraint of a [Model]: its index, in the order of
// AddConstr and AddRange calls.
type Constr int32

// Index returns the constraint's position in the model.
func (c Constr) Index() int { return int(c) }

type variable struct {
	name    string
	lo, hi  float64
	integer bool
}

// rowKind is how a constraint's bounds look; a range with equal sides is
// stored as EQ, with one infinite side as LE or GE.
type rowKind int8

const (
	rowLE rowKind = iota + 1
	rowGE
	rowEQ
	rowRange
	rowBad // a sense that is none of LE, GE, EQ, or a range with no finite side
)

type constraint struct {
	name   string
	terms  []Term // normalized
	lo, hi float64
	kind   rowKind
}

// Model is a mixed-integer linear program:
//
//	minimise or maximise  objective
//	subject to            lo_i <= a_i·x <= hi_i   for each constraint
//	                      lb_j <= x_j <= ub_j, x_j integer where marked.
//
// Build it with the Add methods and SetObjective. The builders never fail
// or panic: whatever is wrong (a NaN, an inverted bound, a variable of
// another model) is reported by [Model.Validate], which [Solve], WriteLP and
// WriteMPS call first. A Model is not safe for concurrent modification;
// Solve, WriteLP and WriteMPS only read it and may run concurrently with
// each other.
type Model struct {
	name string
	vars []variable
	rows []constraint
	obj  Expr // normalized
	dir  Direction
}

// NewModel returns an empty model. The name is used in LP and MPS files.
func NewModel(name string) *Model { return &Model{name: name} }

// Name returns the model's name.
func (m *Model) Name() string { return m.name }

// AddVar adds a variable with bounds lo <= x <= hi (use ±Inf for none),
// integral if integer. An empty name gets a default in files ("x" and the
// index).
func (m *Model) AddVar(name string, lo, hi float64, integer bool) Var {
	m.vars = append(m.vars, variable{name: name, lo: lo, hi: hi, integer: integer})
	return Var(len(m.vars) - 1)
}

// AddBinary adds a 0/1 variable.
func (m *Model) AddBinary(name string) Var { return m.AddVar(name, 0, 1, true) }

// AddInteger adds an integer variable with bounds lo <= x <= hi.
func (m *Model) AddInteger(name string, lo, hi float64) Var { return m.AddVar(name, lo, hi, true) }

// AddContinuous adds a continuous variable with bounds lo <= x <= hi.
func (m *Model) AddContinuous(name string, lo, hi float64) Var {
	return m.AddVar(name, lo, hi, false)
}

// SetBounds changes the bounds of v. An out-of-range v is ignored.
func (m *Model) SetBounds(v Var, lo, hi float64) {
	if m.hasVar(v) {
		m.vars[v].lo, m.vars[v].hi = lo, hi
	}
}

// SetInteger changes whether v is integral. An out-of-range v is ignored.
func (m *Model) SetInteger(v Var, integer bool) {
	if m.hasVar(v) {
		m.vars[v].integer = integer
	}
}

// AddConstr adds the constraint e sense rhs. The expression's constant is
// moved to the right-hand side and its terms are merged, so the model keeps
// no reference to e.
func (m *Model) AddConstr(name string, e Expr, sense Sense, rhs float64) Constr {
	n := e.Normalized()
	r := rhs - n.Const
	c := constraint{name: name, terms: n.Terms}
	switch sense {
	case LE:
		c.lo, c.hi, c.kind = math.Inf(-1), r, rowLE
	case GE:
		c.lo, c.hi, c.kind = r, math.Inf(1), rowGE
	case EQ:
		c.lo, c.hi, c.kind = r, r, rowEQ
	default:
		c.lo, c.hi, c.kind = math.NaN(), math.NaN(), rowBad
	}
	m.rows = append(m.rows, c)
	return Constr(len(m.rows) - 1)
}

// AddRange adds the constraint lo <= e <= hi. An infinite side makes it a
// one-sided constraint, equal sides an equality.
func (m *Model) AddRange(name string, lo float64, e Expr, hi float64) Constr {
	n := e.Normalized()
	c := constraint{name: name, terms: n.Terms, lo: lo - n.Const, hi: hi - n.Const}
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 1) || math.IsInf(hi, -1):
		c.kind = rowBad
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		c.kind = rowBad
	case math.IsInf(lo, -1):
		c.lo, c.kind = math.Inf(-1), rowLE
	case math.IsInf(hi, 1):
		c.hi, c.kind = math.Inf(1), rowGE
	case c.lo == c.hi:
		c.kind = rowEQ
	default:
		c.kind = rowRange
	}
	m.rows = append(m.rows, c)
	return Constr(len(m.rows) - 1)
}

// SetObjective sets the objective (terms merged, constant kept) and the
// direction.
func (m *Model) SetObjective(e Expr, dir Direction) {
	m.obj = e.Normalized()
	m.dir = dir
}

// NumVars returns the number of variables.
func (m *Model) NumVars() int { return len(m.vars) }

// NumConstrs returns the number of constraints.
func (m *Model) NumConstrs() int { return len(m.rows) }

// NumIntegers returns the number of integer variables.
func (m *Model) NumIntegers() int {
	n := 0
	for _, v := range m.vars {
		if v.integer {
			n++
		}
	}
	return n
}

func (m *Model) hasVar(v Var) bool { return v >= 0 && int(v) < len(m.vars) }

// VarName returns the name v was given ("" if none or out of range).
func (m *Model) VarName(v Var) string {
	if !m.hasVar(v) {
		return ""
	}
	return m.vars[v].name
}

// Bounds returns the bounds of v (NaN, NaN if out of range).
func (m *Model) Bounds(v Var) (lo, hi float64) {
	if !m.hasVar(v) {
		return math.NaN(), math.NaN()
	}
	return m.vars[v].lo, m.vars[v].hi
}

// IsInteger reports whether v is integral.
func (m *Model) IsInteger(v Var) bool { return m.hasVar(v) && m.vars[v].integer }

// Objective returns a copy of the objective and its direction.
func (m *Model) Objective() (Expr, Direction) { return m.obj.Clone(), m.dir }

// Constraint returns constraint c as lo <= expr <= hi (infinite sides for
// one-sided constraints); ok is false if c is out of range.
func (m *Model) Constraint(c Constr) (name string, e Expr, lo, hi float64, ok bool) {
	if c < 0 || int(c) >= len(m.rows) {
		return "", Expr{}, 0, 0, false
	}
	r := m.rows[c]
	return r.name, Expr{Terms: append([]Term(nil), r.terms...)}, r.lo, r.hi, true
}

// ValidationError lists what is wrong with a model, in model order: the
// first ten problems and how many more there are.
type ValidationError struct {
	Problems []string
	More     int
}

func (e *ValidationError) Error() string {
	s := "milp: invalid model: " + strings.Join(e.Problems, "; ")
	if e.More > 0 {
		s += fmt.Sprintf("; and %d more", e.More)
	}
	return s
}

const maxProblems = 10

// Validate reports every way the model cannot be solved or written: bounds
// that are NaN, inverted or infinite on the wrong side, non-finite
// coefficients or right-hand sides, an invalid sense, a range with no
// finite side, a term naming a variable that is not in the model, or a
// model too large for the solver's 32-bit indices. Its error is a
// *ValidationError.
func (m *Model) Validate() error {
	ve := &ValidationError{}
	add := func(format string, args ...any) {
		if len(ve.Problems) < maxProblems {
			ve.Problems = append(ve.Problems, fmt.Sprintf(format, args...))
		} else {
			ve.More++
		}
	}
	if len(m.vars) >= math.MaxInt32 || len(m.rows) >= math.MaxInt32 {
		add("%d variables and %d constraints exceed the solver's limit of %d", len(m.vars), len(m.rows), math.MaxInt32-1)
	}
	for j, v := range m.vars {
		switch {
		case math.IsNaN(v.lo) || math.IsNaN(v.hi):
			add("variable %d %q: NaN bound", j, v.name)
		case math.IsInf(v.lo, 1) || math.IsInf(v.hi, -1):
			add("variable %d %q: bounds [%g, %g] leave no finite value", j, v.name, v.lo, v.hi)
		case v.lo > v.hi:
			add("variable %d %q: lower bound %g > upper bound %g", j, v.name, v.lo, v.hi)
		}
	}
	checkTerms := func(what string, ts []Term) {
		for _, t := range ts {
			if !m.hasVar(t.Var) {
				add("%s: variable %d is not in the model (%d variables)", what, t.Var, len(m.vars))
			} else if math.IsNaN(t.Coef) || math.IsInf(t.Coef, 0) {
				add("%s: coefficient %g of variable %d %q", what, t.Coef, t.Var, m.vars[t.Var].name)
			}
		}
	}
	checkTerms("objective", m.obj.Terms)
	if math.IsNaN(m.obj.Const) || math.IsInf(m.obj.Const, 0) {
		add("objective: constant %g", m.obj.Const)
	}
	if m.dir != Minimize && m.dir != Maximize {
		add("objective: invalid direction %d", m.dir)
	}
	for i, r := range m.rows {
		what := fmt.Sprintf("constraint %d %q", i, r.name)
		switch r.kind {
		case rowBad:
			add("%s: invalid sense, or a range with no finite side (bounds [%g, %g])", what, r.lo, r.hi)
		case rowLE:
			if !finite(r.hi) {
				add("%s: right-hand side %g", what, r.hi)
			}
		case rowGE, rowEQ:
			if !finite(r.lo) {
				add("%s: right-hand side %g", what, r.lo)
			}
		case rowRange:
			if !finite(r.lo) || !finite(r.hi) {
				add("%s: range sides [%g, %g]", what, r.lo, r.hi)
			} else if r.lo > r.hi {
				add("%s: range lower side %g > upper side %g", what, r.lo, r.hi)
			}
		}
		checkTerms(what, r.terms)
	}
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// MaxViolation returns how far x (indexed by Var) is from satisfying the
// model: the largest of its bound violations, its distances from
// integrality for integer variables, and its constraint violations divided
// by max(1 + Σ|a_ij·x_j|, |side|), which keeps rounding in rows with large
// coefficients from counting as infeasibility. It is 0 for a feasible point
// and +Inf if x has the wrong length or a NaN.
func (m *Model) MaxViolation(x []float64) float64 { return m.maxViolation(x, true) }

// maxViolation is MaxViolation, with integrality checked or not.
func (m *Model) maxViolation(x []float64, integrality bool) float64 {
	if len(x) != len(m.vars) {
		return math.Inf(1)
	}
	worst := 0.0
	up := func(v float64) {
		if math.IsNaN(v) {
			v = math.Inf(1)
		}
		worst = math.Max(worst, v)
	}
	for j, v := range m.vars {
		up(v.lo - x[j])
		up(x[j] - v.hi)
		if v.integer && integrality {
			up(math.Abs(x[j] - math.Round(x[j])))
		}
	}
	for _, r := range m.rows {
		ax, mag := 0.0, 1.0
		for _, t := range r.terms {
			if m.hasVar(t.Var) {
				ax += t.Coef * x[t.Var]
				mag += math.Abs(t.Coef * x[t.Var])
			}
		}
		if !math.IsInf(r.lo, -1) {
			up((r.lo - ax) / math.Max(mag, math.Abs(r.lo)))
		}
		if !math.IsInf(r.hi, 1) {
			up((ax - r.hi) / math.Max(mag, math.Abs(r.hi)))
		}
	}
	return worst
}

// ObjectiveValue returns the objective at x, its constant included.
func (m *Model) ObjectiveValue(x []float64) float64 { return m.obj.Eval(x) }

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
