package milp

import (
	"bufio"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
)

// num formats a finite number in the shortest form that reads back
// exactly; -0 prints as 0.
func num(x float64) string {
	if x == 0 {
		return "0"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// commentText keeps s on one comment line.
func commentText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// lpLineLimit is where the LP writer breaks a long expression: CPLEX
// truncates lines beyond 510 characters and a term is at most ~270.
const lpLineLimit = 200

type lpWriter struct {
	w    *bufio.Writer
	line int // length of the current line
}

func (lw *lpWriter) str(s string) {
	lw.w.WriteString(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		lw.line = len(s) - i - 1
	} else {
		lw.line += len(s)
	}
}

// term writes one signed term; first is whether it starts the expression.
func (lw *lpWriter) term(coef float64, name string, first bool) {
	if lw.line > lpLineLimit {
		lw.str("\n   ")
	}
	var s string
	switch {
	case first && coef < 0:
		s = "- "
	case !first && coef < 0:
		s = " - "
	case !first:
		s = " + "
	}
	if a := math.Abs(coef); a != 1 {
		s += num(a) + " "
	}
	lw.str(s + name)
}

// expr writes terms (and a constant, for the objective), or "0 <first
// variable>" for an expression with neither, which LP readers need.
func (lw *lpWriter) expr(terms []Term, constant float64, vnames []string) {
	for k, t := range terms {
		lw.term(t.Coef, vnames[t.Var], k == 0)
	}
	switch {
	case constant != 0 && len(terms) == 0:
		lw.str(num(constant))
	case constant != 0 && constant < 0:
		lw.str(" - " + num(-constant))
	case constant != 0:
		lw.str(" + " + num(constant))
	case len(terms) == 0 && len(vnames) > 0:
		lw.str("0 " + vnames[0])
	case len(terms) == 0:
		lw.str("0")
	}
}

// WriteLP writes the model in CPLEX LP format: the objective (with its
// constant, which CPLEX 12.6+, Gurobi, HiGHS, SCIP and CBC accept), the
// constraints (a two-sided range as two rows <name>_lo and <name>_hi), the
// bounds that differ from [0, +inf), then Generals and Binaries (integer
// variables with bounds [0, 1]). Names are sanitised and made unique (see
// names.go); the output depends only on the model. It validates the model
// first and returns the first write error.
func (m *Model) WriteLP(w io.Writer) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if len(m.vars) == 0 && len(m.rows) > 0 {
		return errors.New("milp: the LP format cannot hold constraints without variables")
	}
	vnames := m.varNames()
	rnames, first := m.lpRowNames()
	lw := &lpWriter{w: bufio.NewWriter(w)}

	lw.str("\\ Model " + commentText(m.name) + "\n")
	lw.str("\\ " + strconv.Itoa(len(m.vars)) + " variables (" + strconv.Itoa(m.NumIntegers()) + " integer), " +
		strconv.Itoa(len(m.rows)) + " constraints\n")
	if m.dir == Maximize {
		lw.str("Maximize\n")
	} else {
		lw.str("Minimize\n")
	}
	lw.str(" " + objName + ": ")
	lw.expr(m.obj.Terms, m.obj.Const, vnames)
	lw.str("\nSubject To\n")
	row := func(name string, terms []Term, op string, rhs float64) {
		lw.str(" " + name + ": ")
		lw.expr(terms, 0, vnames)
		lw.str(" " + op + " " + num(rhs) + "\n")
	}
	for i, r := range m.rows {
		name := rnames[first[i]]
		switch r.kind {
		case rowLE:
			row(name, r.terms, "<=", r.hi)
		case rowGE:
			row(name, r.terms, ">=", r.lo)
		case rowEQ:
			row(name, r.terms, "=", r.lo)
		case rowRange:
			row(name, r.terms, ">=", r.lo)
			row(rnames[first[i]+1], r.terms, "<=", r.hi)
		}
	}

	used := m.usedVars()
	var bounds, generals, binaries []string
	for j, v := range m.vars {
		name := vnames[j]
		binary := v.integer && v.lo == 0 && v.hi == 1
		switch {
		case binary:
			binaries = append(binaries, name)
			continue
		case v.integer:
			generals = append(generals, name)
		}
		loInf, hiInf := math.IsInf(v.lo, -1), math.IsInf(v.hi, 1)
		switch {
		case v.lo == v.hi:
			bounds = append(bounds, name+" = "+num(v.lo))
		case loInf && hiInf:
			bounds = append(bounds, name+" free")
		case loInf:
			bounds = append(bounds, "-inf <= "+name+" <= "+num(v.hi))
		case hiInf && v.lo != 0:
			bounds = append(bounds, name+" >= "+num(v.lo))
		case hiInf:
			// The default [0, +inf): say it only for a variable that
			// appears nowhere else, so that it is not lost.
			if !used[j] && !v.integer {
				bounds = append(bounds, name+" >= 0")
			}
		default:
			bounds = append(bounds, num(v.lo)+" <= "+name+" <= "+num(v.hi))
		}
	}
	for _, s := range []struct {
		head  string
		lines []string
	}{{"Bounds", bounds}, {"Generals", generals}, {"Binaries", binaries}} {
		if len(s.lines) == 0 {
			continue
		}
		lw.str(s.head + "\n")
		for _, l := range s.lines {
			lw.str(" " + l + "\n")
		}
	}
	lw.str("End\n")
	return lw.w.Flush()
}

// usedVars reports which variables appear in the objective or a
// constraint.
func (m *Model) usedVars() []bool {
	used := make([]bool, len(m.vars))
	for _, t := range m.obj.Terms {
		used[t.Var] = true
	}
	for _, r := range m.rows {
		for _, t := range r.terms {
			used[t.Var] = true
		}
	}
	return used
}

// WriteMPS writes the model in free MPS format: fields separated by
// blanks, names up to 255 bytes. The objective is the N row "obj"; its
// constant is written as the negated right-hand side of that row, the
// usual convention. A maximisation gets an OBJSENSE MAX section (read by
// CPLEX, Gurobi, HiGHS and SCIP; CBC 2.10's reader ignores it: pass -max).
// Integer columns sit between MARKER INTORG/INTEND lines and always carry
// explicit bounds (BV for [0, 1], otherwise LO/MI and UP/PL), because some
// readers make a bare marked column binary. A two-sided range is a G row
// with its lower side as RHS and the width in RANGES. Every column appears
// in COLUMNS (with "obj 0" if it has no entries). Names are sanitised as
// for WriteLP; the output depends only on the model. It validates the model
// first and returns the first write error.
func (m *Model) WriteMPS(w io.Writer) error {
	if err := m.Validate(); err != nil {
		return err
	}
	vnames, rnames := m.varNames(), m.rowNames()
	c := m.compile()
	p := &c.prob
	b := bufio.NewWriter(w)
	line := func(fields ...string) {
		b.WriteString(strings.Join(fields, "  "))
		b.WriteByte('\n')
	}

	name := sanitize(m.name, "model")
	b.WriteString("* " + commentText(m.name) + ": " + strconv.Itoa(len(m.vars)) + " variables (" +
		strconv.Itoa(m.NumIntegers()) + " integer), " + strconv.Itoa(len(m.rows)) + " constraints\n")
	line("NAME", name)
	if m.dir == Maximize {
		line("OBJSENSE")
		line("    MAX")
	}
	line("ROWS")
	line(" N", objName)
	for i, r := range m.rows {
		t := " G" // rowGE and rowRange (lower side in RHS, width in RANGES)
		switch r.kind {
		case rowLE:
			t = " L"
		case rowEQ:
			t = " E"
		}
		line(t, rnames[i])
	}

	line("COLUMNS")
	inInt := false
	for j, v := range m.vars {
		if v.integer != inInt {
			if v.integer {
				line("    MARKER", "'MARKER'", "'INTORG'")
			} else {
				line("    MARKER", "'MARKER'", "'INTEND'")
			}
			inInt = v.integer
		}
		wrote := false
		if p.Obj[j] != 0 {
			line("    "+vnames[j], objName, num(p.Obj[j]))
			wrote = true
		}
		for k := p.Start[j]; k < p.Start[j+1]; k++ {
			line("    "+vnames[j], rnames[p.Index[k]], num(p.Value[k]))
			wrote = true
		}
		if !wrote {
			line("    "+vnames[j], objName, "0")
		}
	}
	if inInt {
		line("    MARKER", "'MARKER'", "'INTEND'")
	}

	line("RHS")
	if m.obj.Const != 0 {
		line("    RHS", objName, num(-m.obj.Const))
	}
	for i, r := range m.rows {
		rhs := r.lo
		if r.kind == rowLE {
			rhs = r.hi
		}
		if rhs != 0 {
			line("    RHS", rnames[i], num(rhs))
		}
	}
	ranges := false
	for i, r := range m.rows {
		if r.kind != rowRange {
			continue
		}
		if !ranges {
			line("RANGES")
			ranges = true
		}
		line("    RNG", rnames[i], num(r.hi-r.lo))
	}

	var bounds [][]string
	bound := func(fields ...string) { bounds = append(bounds, fields) }
	for j, v := range m.vars {
		n := vnames[j]
		loInf, hiInf := math.IsInf(v.lo, -1), math.IsInf(v.hi, 1)
		switch {
		case v.integer && v.lo == 0 && v.hi == 1:
			bound(" BV", "BND", n)
		case v.lo == v.hi:
			bound(" FX", "BND", n, num(v.lo))
		case loInf && hiInf:
			bound(" FR", "BND", n)
		default:
			if loInf {
				bound(" MI", "BND", n)
			} else if v.lo != 0 || v.integer {
				bound(" LO", "BND", n, num(v.lo))
			}
			if !hiInf {
				bound(" UP", "BND", n, num(v.hi))
			} else if v.integer {
				bound(" PL", "BND", n)
			}
		}
	}
	if len(bounds) > 0 {
		line("BOUNDS")
		for _, f := range bounds {
			line(f...)
		}
	}
	line("ENDATA")
	return b.Flush()
}
