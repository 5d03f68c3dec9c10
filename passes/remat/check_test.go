package remat_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

// kumar is Kumar et al. (2019) Figure 1: A→B, B→C, {B,C}→D, {A,D}→E, every
// output one unit (one byte); E is the output.
func kumar() *remat.Problem {
	return &remat.Problem{
		Deps:         [][]int32{{}, {0}, {1}, {1, 2}, {0, 3}},
		Seconds:      []float64{1, 1, 1, 1, 1},
		Bytes:        []int64{1, 1, 1, 1, 1},
		Recomputable: []bool{true, true, true, true, true},
		Outputs:      []int32{4},
		BudgetBytes:  remat.NoBudget,
		Names:        []string{"A", "B", "C", "D", "E"},
	}
}

const (
	A = iota
	B
	C
	D
	E
)

// kumarRematPlan is ⟨A,B,C,D,A,E⟩ written out by hand: every matrix entry
// and every op, as Algorithm 1 emits them with hoisted frees.
func kumarRematPlan() *remat.Plan {
	pl := remat.NewPlan(5)
	for t := range 5 {
		pl.R[t].Set(t)
	}
	pl.R[4].Set(A) // stage 4 recomputes A right before E
	// S: A is dropped after B reads it; B and C are held for D.
	pl.S[2].Set(B)
	pl.S[3].Set(B)
	pl.S[3].Set(C)
	pl.S[4].Set(D)
	pl.S[1].Set(A)
	// FREE: A after B (stage 1), B and C after D (stage 3), A and D after E.
	pl.Free[1].Set(A)
	pl.Free[3].Set(B)
	pl.Free[3].Set(C)
	pl.Free[4].Set(A)
	pl.Free[4].Set(D)
	pl.Ops = []remat.Op{
		{Kind: remat.OpCompute, Stage: 0, Node: A},
		{Kind: remat.OpCompute, Stage: 1, Node: B},
		{Kind: remat.OpFree, Stage: 1, Node: A},
		{Kind: remat.OpCompute, Stage: 2, Node: C},
		{Kind: remat.OpCompute, Stage: 3, Node: D},
		{Kind: remat.OpFree, Stage: 3, Node: B},
		{Kind: remat.OpFree, Stage: 3, Node: C},
		{Kind: remat.OpCompute, Stage: 4, Node: A},
		{Kind: remat.OpCompute, Stage: 4, Node: E},
		{Kind: remat.OpFree, Stage: 4, Node: A},
		{Kind: remat.OpFree, Stage: 4, Node: D},
	}
	return pl
}

func identityR(n int) [][]bool {
	R := make([][]bool, n)
	for t := range R {
		R[t] = make([]bool, t+1)
		R[t][t] = true
	}
	return R
}

func TestKumarFigure1Peaks(t *testing.T) {
	p := kumar()
	recompute := identityR(5)
	recompute[4][A] = true
	scheduled, err := remat.Schedule(p, recompute)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := remat.Schedule(p, identityR(5))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		plan   *remat.Plan
		seq    string
		peak   int64
		during []int64
		cost   float64
	}{
		{"⟨A,B,C,D,E⟩ scheduled", plain, "ABCDE", 4, []int64{1, 2, 3, 4, 3}, 5},
		{"⟨A,B,C,D,A,E⟩ by hand", kumarRematPlan(), "ABCDAE", 3, []int64{1, 2, 2, 3, 2, 3}, 6},
		{"⟨A,B,C,D,A,E⟩ scheduled", scheduled, "ABCDAE", 3, []int64{1, 2, 2, 3, 2, 3}, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := remat.Check(p, tt.plan)
			if err != nil {
				t.Fatal(err)
			}
			var seq strings.Builder
			for _, i := range tt.plan.Sequence() {
				seq.WriteString(p.Names[i])
			}
			if seq.String() != tt.seq || res.PeakBytes != tt.peak || res.TotalSeconds != tt.cost {
				t.Errorf("sequence %s, peak %d, cost %v; want %s, %d, %v", seq.String(), res.PeakBytes, res.TotalSeconds, tt.seq, tt.peak, tt.cost)
			}
			if !equal(res.During, tt.during) {
				t.Errorf("during %v, want %v", res.During, tt.during)
			}
			if res.Recomputations != len(tt.seq)-5 {
				t.Errorf("recomputations %d", res.Recomputations)
			}
			if res.PeakNode != D {
				t.Errorf("peak at node %d, want D (the caption: while computing D)", res.PeakNode)
			}
		})
	}
	// The hand-written plan is exactly what Schedule derives.
	hand := kumarRematPlan()
	for t2 := range 5 {
		if !equal(hand.R[t2], scheduled.R[t2]) || !equal(hand.S[t2], scheduled.S[t2]) || !equal(hand.Free[t2], scheduled.Free[t2]) {
			t.Errorf("stage %d: Schedule's R/S/FREE differ from the hand-written plan", t2)
		}
	}
	if !equal(hand.Ops, scheduled.Ops) {
		t.Errorf("Schedule's ops\n%v\ndiffer from the hand-written\n%v", scheduled.Ops, hand.Ops)
	}
	// Under a budget of 3 only the rematerializing plan passes.
	p.BudgetBytes = 3
	if _, err := remat.Check(p, scheduled); err != nil {
		t.Errorf("⟨A,B,C,D,A,E⟩ at budget 3: %v", err)
	}
	if _, err := remat.Check(p, plain); err == nil {
		t.Errorf("⟨A,B,C,D,E⟩ passes Check at budget 3")
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckRejects(t *testing.T) {
	for _, tt := range []struct {
		name   string
		budget int64
		edit   func(p *remat.Problem, pl *remat.Plan)
		kind   remat.ViolationKind
		stage  int
		node   int
		msg    string // a part of the message
	}{
		{
			name: "dependency missing",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				// Stage 4 no longer recomputes A, so E finds no A.
				pl.R[4].Clear(A)
				pl.Free[4].Clear(A)
				pl.Ops = without(pl.Ops, remat.Op{Kind: remat.OpCompute, Stage: 4, Node: A}, remat.Op{Kind: remat.OpFree, Stage: 4, Node: A})
			},
			kind: remat.MissingDep, stage: 4, node: E,
			msg: `stage 4: node E (4) reads node A (0), which is not resident: freed in stage 1`,
		},
		{
			name: "dependency never retained",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				// C's value is dropped at the stage boundary and D reads it.
				pl.S[3].Clear(C)
				pl.Free[2].Set(C)
				pl.Ops = insertAfter(pl.Ops, remat.Op{Kind: remat.OpCompute, Stage: 2, Node: C}, remat.Op{Kind: remat.OpFree, Stage: 2, Node: C})
				pl.Free[3].Clear(C)
				pl.Ops = without(pl.Ops, remat.Op{Kind: remat.OpFree, Stage: 3, Node: C})
			},
			kind: remat.MissingDep, stage: 3, node: D,
			msg: `stage 3: node D (3) reads node C (2), which is not resident`,
		},
		{
			name: "double free",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				pl.Ops = insertAfter(pl.Ops, remat.Op{Kind: remat.OpFree, Stage: 4, Node: D}, remat.Op{Kind: remat.OpFree, Stage: 4, Node: D})
			},
			kind: remat.DoubleFree, stage: 4, node: D,
			msg: `stage 4: node D (3) is freed twice: already freed in stage 4 and not computed since (Theorem 4.1)`,
		},
		{
			name: "double free across stages",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				pl.Free[2].Set(A)
				pl.Ops = insertAfter(pl.Ops, remat.Op{Kind: remat.OpCompute, Stage: 2, Node: C}, remat.Op{Kind: remat.OpFree, Stage: 2, Node: A})
			},
			kind: remat.DoubleFree, stage: 2, node: A,
			msg: `already freed in stage 1`,
		},
		{
			name: "non-recomputable recomputed",
			edit: func(p *remat.Problem, pl *remat.Plan) { p.Recomputable[A] = false },
			kind: remat.NotRecomputable, stage: 4, node: A,
			msg: `stage 4: node A (0) is not recomputable`,
		},
		{
			name: "output not resident",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				pl.Free[4].Set(E)
				pl.Ops = append(pl.Ops, remat.Op{Kind: remat.OpFree, Stage: 4, Node: E})
			},
			kind: remat.OutputNotResident, stage: 4, node: E,
			msg: `stage 4: graph output node E (4) is not resident after the last stage`,
		},
		{
			name:   "over budget",
			budget: 2,
			kind:   remat.OverBudget, stage: 3, node: D,
			msg: `stage 3: computing node D (3) brings memory to 3 bytes, over the budget of 2 bytes (resident: `,
		},
		{
			name: "retained but not resident",
			edit: func(p *remat.Problem, pl *remat.Plan) { pl.S[4].Set(B) },
			kind: remat.BadRetain, stage: 4, node: B,
			msg: `stage 4: S[4] retains node B (1), which is not resident at the end of stage 3 (eq. 1c)`,
		},
		{
			name: "resident but neither retained nor freed",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				pl.Free[3].Clear(C)
				pl.Ops = without(pl.Ops, remat.Op{Kind: remat.OpFree, Stage: 3, Node: C})
			},
			kind: remat.BadRetain, stage: 4, node: C,
			msg: `stage 4: node C (2) is resident at the end of stage 3 but neither retained`,
		},
		{
			name: "leak at the end",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				pl.Free[4].Clear(D)
				pl.Ops = without(pl.Ops, remat.Op{Kind: remat.OpFree, Stage: 4, Node: D})
			},
			kind: remat.Leak, stage: 4, node: D,
			msg: `node D (3) is still resident after the last stage`,
		},
		{
			name: "frontier not advanced",
			edit: func(p *remat.Problem, pl *remat.Plan) { pl.R[2].Clear(C) },
			kind: remat.Malformed, stage: 2, node: C,
			msg: `stage 2: R[2][2] is not set`,
		},
		{
			name: "ops out of order",
			edit: func(p *remat.Problem, pl *remat.Plan) {
				pl.Ops[7], pl.Ops[8] = pl.Ops[8], pl.Ops[7] // E before the recomputed A
			},
			kind: remat.Malformed, stage: 4, node: A,
			msg: `Algorithm 1 computes a stage's nodes in increasing order`,
		},
		{
			name: "op disagrees with FREE",
			edit: func(p *remat.Problem, pl *remat.Plan) { pl.Free[4].Clear(A) },
			kind: remat.Malformed, stage: 4, node: A,
			msg: `stage 4: op 9 frees node A (0) but FREE[4][0] = 0`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, pl := kumar(), kumarRematPlan()
			if tt.budget > 0 {
				p.BudgetBytes = tt.budget
			}
			if tt.edit != nil {
				tt.edit(p, pl)
			}
			_, err := remat.Check(p, pl)
			var ce *remat.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("Check = %v; want a *CheckError", err)
			}
			found := false
			for _, v := range ce.Violations {
				if v.Kind == tt.kind && v.Stage == tt.stage && v.Node == tt.node && strings.Contains(v.Msg, tt.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s violation at stage %d node %d containing %q; got %v", tt.kind, tt.stage, tt.node, tt.msg, err)
			}
			if !strings.Contains(err.Error(), "stage ") {
				t.Errorf("error %q names no stage", err)
			}
		})
	}
}

func without(ops []remat.Op, drop ...remat.Op) []remat.Op {
	var out []remat.Op
	for _, o := range ops {
		keep := true
		for _, d := range drop {
			if o == d {
				keep = false
			}
		}
		if keep {
			out = append(out, o)
		}
	}
	return out
}

func insertAfter(ops []remat.Op, at, op remat.Op) []remat.Op {
	for k, o := range ops {
		if o == at {
			return append(ops[:k+1:k+1], append([]remat.Op{op}, ops[k+1:]...)...)
		}
	}
	panic("insertAfter: no such op")
}

func TestCheckMalformedShapes(t *testing.T) {
	p := kumar()
	pl := kumarRematPlan()
	pl.R = pl.R[:4]
	if _, err := remat.Check(p, pl); err == nil || !strings.Contains(err.Error(), "one stage per node") {
		t.Errorf("short R: %v", err)
	}
	pl = kumarRematPlan()
	pl.S[2] = remat.NewBits(64)
	pl.S[2].Set(B)
	pl.S[2].Set(C) // C is computed in stage 2; S[2] may hold only 0, 1
	if _, err := remat.Check(p, pl); err == nil || !strings.Contains(err.Error(), "eq. 8b") {
		t.Errorf("S beyond the frontier: %v", err)
	}
	bad := kumar()
	bad.Deps[1] = []int32{3}
	if _, err := remat.Check(bad, kumarRematPlan()); err == nil || !strings.Contains(err.Error(), "not before it") {
		t.Errorf("invalid problem: %v", err)
	}
}
