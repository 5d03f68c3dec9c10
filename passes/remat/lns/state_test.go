package lns

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
	"github.com/remat-compile/remat/passes/remat/synth"
)

// evalProblems are the problems the evaluator is cross-checked on: the
// conformance corpus (multi-output refinements and non-recomputable nodes
// included), random DAGs with a constant overhead, and layered graphs.
func evalProblems(t testing.TB) []solvertest.Case {
	cases := solvertest.Corpus()
	for seed := range uint64(3) {
		p := solvertest.RandomDAG(seed+1, 30)
		p.ConstBytes = int64(seed * 7)
		cases = append(cases, solvertest.Case{Name: fmt.Sprint("random-", seed), Problem: p})
	}
	for _, nm := range [][2]int{{30, 60}, {100, 236}} {
		p, err := synth.Layered(5, nm[0], nm[1])
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, solvertest.Case{Name: fmt.Sprintf("layered-%d-%d", nm[0], nm[1]), Problem: p})
	}
	return cases
}

// randomStages draws a random plan: each recomputable node is added to a
// few random later stages.
func randomStages(p *remat.Problem, rng *rand.Rand, density float64) [][]int32 {
	n := p.N()
	stages := make([][]int32, n)
	for t := range n {
		for i := range t {
			if p.Recomputable[i] && rng.Float64() < density {
				stages[t] = append(stages[t], int32(i))
			}
		}
		stages[t] = append(stages[t], int32(t))
	}
	return stages
}

// evaluate measures the plan of the given compute sets with
// remat.Evaluate.
func evaluate(t *testing.T, p *remat.Problem, stages [][]int32) remat.CheckResult {
	t.Helper()
	plan, err := remat.ScheduleStages(p, stages)
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Evaluate(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// stagePeaks measures a plan with remat.Evaluate: the largest memory of
// each stage's steps.
func stagePeaks(t *testing.T, p *remat.Problem, stages [][]int32) ([]int64, int64) {
	t.Helper()
	res := evaluate(t, p, stages)
	peaks := make([]int64, p.N())
	k := 0
	for st, xs := range stages {
		for range xs {
			peaks[st] = max(peaks[st], res.During[k])
			k++
		}
	}
	return peaks, res.PeakBytes
}

// compare checks the evaluator's stage peaks, over and cost against
// remat.Evaluate.
func compare(t *testing.T, what string, p *remat.Problem, s *state, capBytes int64) {
	t.Helper()
	peaks, peak := stagePeaks(t, p, s.stages())
	var over int64
	nOver := 0
	for st := range p.N() {
		got := s.cross[st] + s.local[st] + p.ConstBytes
		if got != peaks[st] {
			t.Fatalf("%s: stage %d: evaluator %d bytes (cross %d, local %d), Evaluate %d; stages %v",
				what, st, got, s.cross[st], s.local[st], peaks[st], s.x)
		}
		if v := peaks[st] - p.ConstBytes - capBytes; v > 0 {
			over += v
			nOver++
		}
	}
	if got, _ := s.peak(); p.N() > 0 && got != peak {
		t.Fatalf("%s: peak %d, Evaluate %d", what, got, peak)
	}
	if s.over != over || s.nOver != nOver {
		t.Fatalf("%s: over %d in %d stages, want %d in %d", what, s.over, s.nOver, over, nOver)
	}
	recs := 0
	for _, xs := range s.stages() {
		recs += len(xs) - 1
	}
	if s.nRec != recs {
		t.Fatalf("%s: %d recomputations counted, %d in the plan", what, s.nRec, recs)
	}
}

// TestEvaluatorMatchesEvaluate loads random plans and checks every stage's
// peak against remat.Evaluate, then applies random additions and removals
// incrementally and checks again after each.
func TestEvaluatorMatchesEvaluate(t *testing.T) {
	for _, c := range evalProblems(t) {
		t.Run(c.Name, func(t *testing.T) { checkEvaluator(t, c.Problem) })
		t.Run(c.Name+"/reuse", func(t *testing.T) {
			checkEvaluator(t, withReuse(c.Problem, rand.New(rand.NewPCG(2, uint64(c.Problem.N())))))
		})
	}
}

// withReuse returns a copy of p under remat.Problem.Reuse: every part's
// bytes drawn from three sizes, and the parts of one size sharing a key
// (one in five without a key), so that freed buffers are taken often,
// random in-place writes (remat.Problem.InPlace) and workspaces.
func withReuse(p *remat.Problem, rng *rand.Rand) *remat.Problem {
	q := *p
	n := p.N()
	q.Bytes = make([]int64, n)
	q.Reuse = make([][]int32, n)
	if p.Parts != nil {
		q.Parts = make([][]int64, n)
	}
	for i := range n {
		np := p.NumParts(i)
		keys := make([]int32, np)
		parts := make([]int64, np)
		for k := range np {
			c := rng.IntN(3)
			parts[k] = 8 << c
			keys[k] = int32(c)
			if rng.IntN(5) == 0 {
				keys[k] = -1
			}
			q.Bytes[i] += parts[k]
		}
		if np >= 2 {
			q.Parts[i] = parts
		}
		q.Reuse[i] = keys
	}
	// Half of the nodes that read a part like their first may write over
	// it in place.
	q.InPlace = make([]remat.Part, n)
	for i := range n {
		q.InPlace[i] = remat.Part{Node: -1, Index: -1}
		q.ReadParts(i, func(r remat.Part) {
			if q.InPlace[i].Node < 0 && q.PartBytes(int(r.Node), int(r.Index)) == q.PartBytes(i, 0) &&
				q.Reuse[r.Node][r.Index] == q.Reuse[i][0] && rng.IntN(2) == 0 {
				q.InPlace[i] = r
			}
		})
	}
	// A workspace on one node in three.
	q.Workspace = make([]int64, n)
	for i := range n {
		if rng.IntN(3) == 0 {
			q.Workspace[i] = 4 << rng.IntN(3)
		}
	}
	// Half of the nodes read their parts in a shuffled order (the
	// in-place part first, as Lower gives it).
	q.ReadOrder = make([][]remat.Part, n)
	for i := range n {
		var rs []remat.Part
		q.ReadParts(i, func(r remat.Part) { rs = append(rs, r) })
		if len(rs) < 2 || rng.IntN(2) == 0 {
			continue
		}
		rng.Shuffle(len(rs), func(a, b int) { rs[a], rs[b] = rs[b], rs[a] })
		if ip := q.InPlace[i]; ip.Node >= 0 {
			k := slices.Index(rs, ip)
			copy(rs[1:k+1], rs[:k])
			rs[0] = ip
		}
		q.ReadOrder[i] = rs
	}
	if err := q.Validate(); err != nil {
		panic(err)
	}
	return &q
}

// checkEvaluator is TestEvaluatorMatchesEvaluate on one problem.
func checkEvaluator(t *testing.T, p *remat.Problem) {
	{
		{
			n := p.N()
			if n == 0 {
				t.Skip("empty")
			}
			g := newGraph(p)
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			_, caPeak := stagePeaks(t, p, identityStages(n))
			capBytes := caPeak*3/4 - p.ConstBytes
			s := newState(g, capBytes)
			moves := 60
			if testing.Short() {
				moves = 15
			}
			for trial := range 4 {
				s.load(randomStages(p, rng, []float64{0, 0.02, 0.1, 0.3}[trial]))
				compare(t, fmt.Sprintf("trial %d: load", trial), p, s, capBytes)
				for m := range moves {
					i := int32(rng.IntN(n))
					st := i + 1 + int32(rng.IntN(max(1, n-int(i)-1)))
					if int(st) >= n || !p.Recomputable[i] {
						continue
					}
					what := fmt.Sprintf("trial %d, move %d: ", trial, m)
					if s.has(i, st) {
						s.remove(i, st)
						what += fmt.Sprintf("remove %d from stage %d", i, st)
					} else {
						s.add(i, st)
						what += fmt.Sprintf("add %d to stage %d", i, st)
					}
					compare(t, what, p, s, capBytes)
				}
				// A fresh load of the same plan agrees with the moves.
				cross, local := slices.Clone(s.cross), slices.Clone(s.local)
				s.load(s.stages())
				if !slices.Equal(cross, s.cross) || !slices.Equal(local, s.local) {
					t.Fatalf("trial %d: reloading the plan changes cross or local", trial)
				}
			}
		}
	}
}
