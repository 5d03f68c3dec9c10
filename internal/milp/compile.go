package milp

import (
	"github.com/remat-compile/remat/internal/cbc"
)

// compiled is the model in the solver's column-major form.
type compiled struct {
	prob     cbc.Problem
	integers []int   // indices of integer columns
	sense    float64 // 1 minimise, -1 maximise
}

// compile lays the (validated) model out column by column: the entries of
// each column in constraint order.
func (m *Model) compile() *compiled {
	n, nr := len(m.vars), len(m.rows)
	c := &compiled{sense: 1}
	if m.dir == Maximize {
		c.sense = -1
	}
	p := &c.prob
	p.NumCols, p.NumRows = n, nr
	p.Start = make([]int32, n+1)
	for _, r := range m.rows {
		for _, t := range r.terms {
			p.Start[t.Var+1]++
		}
	}
	for j := 0; j < n; j++ {
		p.Start[j+1] += p.Start[j]
	}
	nnz := p.Start[n]
	p.Index = make([]int32, nnz)
	p.Value = make([]float64, nnz)
	next := append([]int32(nil), p.Start[:n]...)
	for i, r := range m.rows {
		for _, t := range r.terms {
			k := next[t.Var]
			p.Index[k], p.Value[k] = int32(i), t.Coef
			next[t.Var]++
		}
	}
	p.ColLower = make([]float64, n)
	p.ColUpper = make([]float64, n)
	p.Obj = make([]float64, n)
	for j, v := range m.vars {
		p.ColLower[j], p.ColUpper[j] = v.lo, v.hi
		if v.integer {
			c.integers = append(c.integers, j)
		}
	}
	for _, t := range m.obj.Terms {
		p.Obj[t.Var] = t.Coef
	}
	p.RowLower = make([]float64, nr)
	p.RowUpper = make([]float64, nr)
	for i, r := range m.rows {
		p.RowLower[i], p.RowUpper[i] = r.lo, r.hi
	}
	return c
}

// CBCProblem lays a validated model out in CBC's column-major form, for
// drivers that run CBC with settings of their own (internal/cbc): the
// problem, the integer columns, and the objective's sense (1 minimise, −1
// maximise; CBC minimises, so the objective is to be multiplied by it).
// The objective's constant is left out: recompute objective values with
// ObjectiveValue.
func (m *Model) CBCProblem() (p *cbc.Problem, integers []int, sense float64) {
	c := m.compile()
	return &c.prob, c.integers, c.sense
}

// Round returns a copy of x with the integer variables rounded and every
// value clamped to its bounds: a solver's point made exact before it is
// checked with MaxViolation.
func (m *Model) Round(x []float64) []float64 { return m.polish(x, true) }

// NewCBCModel creates a CBC model of a problem laid out by CBCProblem: the
// columns and rows loaded, the integer columns marked and the objective
// sense set. The caller sets its own parameters and frees it.
func NewCBCModel(lib *cbc.Lib, p *cbc.Problem, integers []int, sense float64) (*cbc.Model, error) {
	mod, err := lib.NewModel()
	if err != nil {
		return nil, err
	}
	if err := mod.LoadProblem(p); err != nil {
		mod.Free()
		return nil, err
	}
	for _, j := range integers {
		if err := mod.SetInteger(j); err != nil {
			mod.Free()
			return nil, err
		}
	}
	mod.SetObjSense(sense)
	return mod, nil
}
