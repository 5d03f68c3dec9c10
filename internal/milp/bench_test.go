package milp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// facilityLocation is a seeded capacitated facility location problem: open
// facilities (binary, fixed cost) and assign each customer's demand
// (continuous fractions) to open facilities within their capacity, paying
// distance × demand. nf facilities, nc customers: nf·(nc+1) variables,
// nc + nf + nf·nc constraints.
func facilityLocation(nf, nc int, seed uint64) *Model {
	r := rand.New(rand.NewPCG(seed, 2))
	m := NewModel(fmt.Sprintf("cfl-%dx%d", nf, nc))
	type pt struct{ x, y float64 }
	fac, cus := make([]pt, nf), make([]pt, nc)
	for i := range fac {
		fac[i] = pt{r.Float64() * 100, r.Float64() * 100}
	}
	demand, total := make([]float64, nc), 0.0
	for j := range cus {
		cus[j] = pt{r.Float64() * 100, r.Float64() * 100}
		demand[j] = float64(5 + r.IntN(30))
		total += demand[j]
	}
	var obj Expr
	open := make([]Var, nf)
	for i := range open {
		open[i] = m.AddBinary(fmt.Sprintf("open[%d]", i))
		obj.AddTerm(open[i], float64(300+r.IntN(400)))
	}
	assign := make([][]Var, nf)
	for i := range assign {
		assign[i] = make([]Var, nc)
		for j := range assign[i] {
			assign[i][j] = m.AddContinuous(fmt.Sprintf("x[%d,%d]", i, j), 0, 1)
			d := math.Hypot(fac[i].x-cus[j].x, fac[i].y-cus[j].y)
			obj.AddTerm(assign[i][j], math.Round(d*demand[j])/10)
		}
	}
	for j := 0; j < nc; j++ {
		var e Expr
		for i := 0; i < nf; i++ {
			e.AddTerm(assign[i][j], 1)
		}
		m.AddConstr(fmt.Sprintf("serve[%d]", j), e, EQ, 1)
	}
	capacity := math.Ceil(3 * total / float64(nf))
	for i := 0; i < nf; i++ {
		var e Expr
		for j := 0; j < nc; j++ {
			e.AddTerm(assign[i][j], demand[j])
			link := VarExpr(assign[i][j], 1)
			link.AddTerm(open[i], -1)
			m.AddConstr(fmt.Sprintf("link[%d,%d]", i, j), link, LE, 0)
		}
		e.AddTerm(open[i], -capacity)
		m.AddConstr(fmt.Sprintf("cap[%d]", i), e, LE, 0)
	}
	m.SetObjective(obj, Minimize)
	return m
}

// BenchmarkSolveFacilityLocation solves seeded facility location MILPs of
// growing size with CBC (single thread) to optimality and reports the
// solve time per op, the branch-and-bound nodes and the model size.
func BenchmarkSolveFacilityLocation(b *testing.B) {
	needLib(b)
	for _, size := range []struct{ nf, nc int }{{10, 40}, {15, 60}, {20, 80}} {
		m := facilityLocation(size.nf, size.nc, 7)
		b.Run(fmt.Sprintf("%dx%d", size.nf, size.nc), func(b *testing.B) {
			var s *Solution
			for b.Loop() {
				var err error
				s, err = Solve(context.Background(), m, Options{})
				if err != nil {
					b.Fatal(err)
				}
			}
			if s.Status != Optimal {
				b.Fatalf("status %v", s.Status)
			}
			b.ReportMetric(float64(s.Nodes), "nodes/op")
			b.ReportMetric(float64(m.NumVars()), "vars")
			b.ReportMetric(float64(m.NumConstrs()), "rows")
			b.ReportMetric(s.Objective, "objective")
		})
	}
}

// BenchmarkWriteMPS measures the MPS writer on the largest instance.
func BenchmarkWriteMPS(b *testing.B) {
	m := facilityLocation(20, 80, 7)
	var n countWriter
	for b.Loop() {
		if err := m.WriteMPS(&n); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(n) / int64(b.N))
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

func TestFacilityLocationSolves(t *testing.T) {
	needLib(t)
	m := facilityLocation(6, 20, 7)
	s := solve(t, context.Background(), m, Options{})
	if s.Status != Optimal || m.MaxViolation(s.Values) > 1e-9 {
		t.Fatalf("%v, violation %v", s.Status, m.MaxViolation(s.Values))
	}
	// The relaxation bounds the optimum from below.
	r := solve(t, context.Background(), m, Options{Relax: true})
	if r.Status != Optimal || r.Objective > s.Objective+1e-6 {
		t.Errorf("relaxation %v %v, MILP %v", r.Status, r.Objective, s.Objective)
	}
}
