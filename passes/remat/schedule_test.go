package remat_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// opsAccounting replays a plan's ops literally, as Checkmate's eq. (2)–(3)
// do: U_{t,0} is the retained checkpoints, each compute adds its node's
// bytes (U_{t,k} is measured right after it), each free subtracts them. It
// returns U at every compute.
func opsAccounting(p *remat.Problem, plan *remat.Plan) []int64 {
	var u []int64
	cur := p.ConstBytes
	for _, op := range plan.Ops {
		switch op.Kind {
		case remat.OpCompute:
			cur += p.Bytes[op.Node]
			u = append(u, cur)
		case remat.OpFree:
			cur -= p.Bytes[op.Node]
		}
	}
	return u
}

func TestSchedule(t *testing.T) {
	var problems []*remat.Problem
	for _, c := range solvertest.Corpus() {
		problems = append(problems, c.Problem)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		problems = append(problems, solvertest.RandomDAG(seed, 10+int(seed)))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range problems {
		for k := range 10 {
			stages := randomStages(p, r, float64(k)/12)
			plan, err := remat.ScheduleStages(p, stages)
			if err != nil {
				t.Fatal(err)
			}
			res, err := remat.Evaluate(p, plan)
			if err != nil {
				t.Fatalf("Schedule gives an illegal plan: %v", err)
			}
			// R is what was asked.
			for t2, st := range stages {
				slices.Sort(st)
				if got := plan.Stages()[t2]; !slices.Equal(got, st) {
					t.Fatalf("stage %d computes %v, asked %v", t2, got, st)
				}
			}
			// S is the least S satisfying (1b) and (1c): retained into
			// stage t exactly when stage t reads it without computing it,
			// or it passes on to stage t+1 without being computed in t.
			n := p.N()
			for t2 := n - 1; t2 >= 0; t2-- {
				for i := range t2 {
					want := !plan.R[t2].Has(i) && (t2+1 < n && plan.S[t2+1].Has(i) || t2+1 == n && slices.Contains(p.Outputs, int32(i)))
					for k2 := plan.R[t2].Next(0); k2 >= 0; k2 = plan.R[t2].Next(k2 + 1) {
						if slices.Contains(p.Deps[k2], int32(i)) && !plan.R[t2].Has(i) {
							want = true
						}
					}
					if plan.S[t2].Has(i) != want {
						t.Fatalf("S[%d][%d] = %v, want %v", t2, i, plan.S[t2].Has(i), want)
					}
				}
			}
			// With hoisted frees, the literal eq. (2)–(3) accounting of
			// the ops is the memory model (coarse problems: one part per
			// node).
			if !p.Refined() {
				if u := opsAccounting(p, plan); !slices.Equal(u, res.During) {
					t.Fatalf("ops accounting %v, memory model %v", u, res.During)
				}
			}
			if c := plan.Cost(p); c != res.TotalSeconds {
				t.Fatalf("Cost %v, Check %v", c, res.TotalSeconds)
			}
		}
	}
}

func TestScheduleErrors(t *testing.T) {
	p := kumar()
	for _, tt := range []struct {
		name string
		edit func(R [][]bool) [][]bool
		msg  string
	}{
		{"frontier missing", func(R [][]bool) [][]bool { R[2][2] = false; return R }, "stage 2 does not compute node C (2); R[t][t] must be set (eq. 8a)"},
		{"beyond frontier", func(R [][]bool) [][]bool { R[1] = []bool{false, true, true}; return R }, "stage 1 computes node 2; a stage computes only nodes up to its own (eq. 8c)"},
		{"rows", func(R [][]bool) [][]bool { return R[:3] }, "R has 3 rows for 5 nodes"},
	} {
		_, err := remat.Schedule(p, tt.edit(identityR(5)))
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v; want %q", tt.name, err, tt.msg)
		}
	}
	p.Recomputable[A] = false
	R := identityR(5)
	R[4][A] = true
	if _, err := remat.Schedule(p, R); err == nil || !strings.Contains(err.Error(), "stage 4 recomputes node A (0), which is not recomputable") {
		t.Errorf("non-recomputable: %v", err)
	}
	if _, err := remat.ScheduleStages(p, [][]int32{{0}, {1}, {2, 2}, {3}, {4}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("repeat: %v", err)
	}
}

func TestEmptyProblem(t *testing.T) {
	p := &remat.Problem{BudgetBytes: 0}
	plan, err := remat.Schedule(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Check(p, plan)
	if err != nil || res.PeakBytes != 0 || res.PeakStep != -1 {
		t.Errorf("empty problem: %+v, %v", res, err)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(p *remat.Problem)
		msg  string
	}{
		{"lengths", func(p *remat.Problem) { p.Bytes = p.Bytes[:3] }, "lengths 5, 5, 3 and 5"},
		{"unsorted deps", func(p *remat.Problem) { p.Deps[3] = []int32{2, 1} }, "not sorted"},
		{"forward dep", func(p *remat.Problem) { p.Deps[2] = []int32{2} }, "not before it"},
		{"cost", func(p *remat.Problem) { p.Seconds[1] = -1 }, "finite, non-negative"},
		{"bytes", func(p *remat.Problem) { p.Bytes[1] = -1 }, "-1 bytes"},
		{"outputs", func(p *remat.Problem) { p.Outputs = []int32{4, 4} }, "Outputs is not sorted"},
		{"budget", func(p *remat.Problem) { p.BudgetBytes = -1 }, "BudgetBytes -1"},
		{"parts sum", func(p *remat.Problem) { p.Parts = make([][]int64, 5); p.Parts[1] = []int64{1, 1} }, "sum to 2 bytes, not Bytes 1"},
		{"reads", func(p *remat.Problem) {
			p.Reads = make([][]remat.Part, 5)
			p.Reads[3] = []remat.Part{{Node: 1, Index: 0}}
		}, "Reads[3] names nodes [1]; want exactly [1 2]"},
		{"output parts", func(p *remat.Problem) { p.OutputParts = []remat.Part{{Node: 4, Index: 1}} }, "does not exist"},
		{"read order", func(p *remat.Problem) {
			p.ReadOrder = make([][]remat.Part, 5)
			p.ReadOrder[3] = []remat.Part{{Node: 2, Index: 0}}
		}, "ReadOrder[3] [{2 0}] is not an order of the parts node 3 reads"},
		{"read order length", func(p *remat.Problem) { p.ReadOrder = make([][]remat.Part, 2) }, "ReadOrder has 2 entries for 5 nodes"},
		{"prepacked", func(p *remat.Problem) { p.Arena = &remat.Arena{Prepacked: []int64{0, 0, -4, 0, 0}} }, "Arena.Prepacked of node"},
		{"prepacked length", func(p *remat.Problem) { p.Arena = &remat.Arena{Prepacked: []int64{0}} }, "Arena.Prepacked has 1 entries for 5 nodes"},
		{"preamble", func(p *remat.Problem) {
			p.Arena = &remat.Arena{Preamble: []memory.ArenaRequest{{Bytes: 32}, {Free: 0}, {Free: 0}}}
		}, "Arena.Preamble: preamble request 2 releases request 0, which is not an earlier allocation still held"},
		{"workspace parts", func(p *remat.Problem) {
			p.Arena = &remat.Arena{WorkspaceParts: make([][]int64, 5)}
			p.Arena.WorkspaceParts[1] = []int64{8, 0}
		}, "workspace part of 0 bytes"},
	} {
		p := kumar()
		tt.edit(p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v; want %q", tt.name, err, tt.msg)
		}
	}
	if err := kumar().Validate(); err != nil {
		t.Errorf("kumar: %v", err)
	}
}
