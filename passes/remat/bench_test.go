package remat_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

// bigProblem is a seeded random DAG of n nodes shaped like a network:
// each node reads its predecessor and, now and then, a node up to 64
// back (a skip connection).
func bigProblem(n int) *remat.Problem {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	p := &remat.Problem{
		Deps: make([][]int32, n), Seconds: make([]float64, n), Bytes: make([]int64, n),
		Recomputable: make([]bool, n), BudgetBytes: remat.NoBudget,
	}
	for i := range n {
		p.Seconds[i], p.Bytes[i], p.Recomputable[i] = 1e-3*float64(1+r.IntN(10)), int64(1+r.IntN(1<<20)), true
		if i > 0 {
			if j := i - 2 - r.IntN(64); j >= 0 && r.IntN(8) == 0 {
				p.Deps[i] = append(p.Deps[i], int32(j))
			}
			p.Deps[i] = append(p.Deps[i], int32(i-1))
		}
	}
	p.Outputs = []int32{int32(n - 1)}
	return p
}

// BenchmarkScheduleCheck measures Schedule and Check on plans with about
// one recomputation in ten stages, at sizes up to the 20k nodes of the
// largest graphs.
func BenchmarkScheduleCheck(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		p := bigProblem(n)
		r := rand.New(rand.NewPCG(2, 3))
		stages := make([][]int32, n)
		for t := range n {
			if t > 0 && r.IntN(10) == 0 {
				stages[t] = append(stages[t], int32(t-1))
			}
			stages[t] = append(stages[t], int32(t))
		}
		b.Run(fmt.Sprint("nodes=", n), func(b *testing.B) {
			var peak int64
			for b.Loop() {
				plan, err := remat.ScheduleStages(p, stages)
				if err != nil {
					b.Fatal(err)
				}
				res, err := remat.Check(p, plan)
				if err != nil {
					b.Fatal(err)
				}
				peak = res.PeakBytes
			}
			b.ReportMetric(float64(peak), "peak-bytes")
		})
	}
}
