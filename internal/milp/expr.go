package milp

import (
	"cmp"
	"slices"
)

// Var is a variable of a [Model]: its index, in the order of AddVar calls.
type Var int32

// Index returns the variable's position in the model (and in
// [Solution.Values]).
func (v Var) Index() int { return int(v) }

// Term is coef·Var.
type Term struct {
	Var  Var
	Coef float64
}

// Expr is a linear expression: a sum of terms plus a constant. Terms may
// repeat a variable; the model merges them when it stores an expression.
// The zero value is the expression 0.
//
// The methods with pointer receivers modify the expression in place and
// return it, so calls chain:
//
//	var e milp.Expr
//	e.AddTerm(x, 3).AddTerm(y, -1).AddConst(2)
type Expr struct {
	Terms []Term
	Const float64
}

// Constant returns the expression c.
func Constant(c float64) Expr { return Expr{Const: c} }

// Sum returns the expression v1 + v2 + … .
func Sum(vs ...Var) Expr {
	e := Expr{Terms: make([]Term, len(vs))}
	for i, v := range vs {
		e.Terms[i] = Term{v, 1}
	}
	return e
}

// VarExpr returns the expression coef·v.
func VarExpr(v Var, coef float64) Expr { return Expr{Terms: []Term{{v, coef}}} }

// AddTerm adds coef·v.
func (e *Expr) AddTerm(v Var, coef float64) *Expr {
	e.Terms = append(e.Terms, Term{v, coef})
	return e
}

// AddConst adds the constant c.
func (e *Expr) AddConst(c float64) *Expr {
	e.Const += c
	return e
}

// Add adds f.
func (e *Expr) Add(f Expr) *Expr { return e.AddScaled(f, 1) }

// AddScaled adds k·f.
func (e *Expr) AddScaled(f Expr, k float64) *Expr {
	for _, t := range f.Terms {
		e.Terms = append(e.Terms, Term{t.Var, k * t.Coef})
	}
	e.Const += k * f.Const
	return e
}

// Scale multiplies every coefficient and the constant by k.
func (e *Expr) Scale(k float64) *Expr {
	for i := range e.Terms {
		e.Terms[i].Coef *= k
	}
	e.Const *= k
	return e
}

// Clone returns a copy that shares no memory with e.
func (e Expr) Clone() Expr {
	return Expr{Terms: slices.Clone(e.Terms), Const: e.Const}
}

// Eval returns the value of e at x (indexed by Var); variables outside x
// count as 0.
func (e Expr) Eval(x []float64) float64 {
	s := e.Const
	for _, t := range e.Terms {
		if int(t.Var) >= 0 && int(t.Var) < len(x) {
			s += t.Coef * x[t.Var]
		}
	}
	return s
}

// Normalized returns a copy of e with its terms sorted by variable,
// repeated variables merged and zero coefficients dropped.
func (e Expr) Normalized() Expr {
	ts := slices.Clone(e.Terms)
	slices.SortStableFunc(ts, func(a, b Term) int { return cmp.Compare(a.Var, b.Var) })
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].Var == t.Var {
			out[n-1].Coef += t.Coef
			continue
		}
		out = append(out, t)
	}
	kept := out[:0]
	for _, t := range out {
		if t.Coef != 0 {
			kept = append(kept, t)
		}
	}
	return Expr{Terms: slices.Clip(kept), Const: e.Const}
}
