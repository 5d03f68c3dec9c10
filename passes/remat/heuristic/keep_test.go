package heuristic

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

func TestKeeps(t *testing.T) {
	k := newKeeps(12)
	k.keep(2, 7, 9)
	k.keep(2, 3, 4)
	k.keep(2, 5, 6) // touches both neighbours: one stretch 3 … 9
	k.keep(2, 12, 11)
	k.keep(2, 10, 20) // clipped to the last stage, 11
	k.keep(0, 0, 0)   // clipped to the stages after node 0: empty
	k.keep(1, 4, 4)
	k.keep(1, 2, 2)
	k.normalize()
	if want := []span{{3, 11}}; !slices.Equal(k.spans[2], want) {
		t.Errorf("spans of node 2: %v, want %v", k.spans[2], want)
	}
	if want := []span{{2, 2}, {4, 4}}; !slices.Equal(k.spans[1], want) {
		t.Errorf("spans of node 1: %v, want %v", k.spans[1], want)
	}
	for _, c := range []struct {
		i, t int
		want bool
	}{{1, 1, false}, {1, 2, true}, {1, 3, false}, {1, 4, true}, {1, 5, false}, {2, 3, true}, {2, 11, true}, {2, 12, false}, {0, 0, false}, {0, 1, false}} {
		if got := k.has(c.i, c.t); got != c.want {
			t.Errorf("has(%d, %d) = %v, want %v", c.i, c.t, got, c.want)
		}
	}
}

func TestAscendingPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		a := make([]int32, r.IntN(30))
		for i := range a {
			a[i] = int32(r.IntN(8))
		}
		want := int64(0)
		for i := range a {
			for j := i + 1; j < len(a); j++ {
				if a[i] < a[j] {
					want++
				}
			}
		}
		if got := ascendingPairs(slices.Clone(a)); got != want {
			t.Fatalf("ascendingPairs(%v) = %d, want %d", a, got, want)
		}
	}
}

func TestAnalyze(t *testing.T) {
	corpus := map[string]*remat.Problem{}
	for _, c := range solvertest.Corpus() {
		corpus[c.Name] = c.Problem
	}
	for _, c := range []struct {
		name     string
		p        *remat.Problem
		fwdEnd   int // −1: the last node (no backward part)
		linear   bool
		training bool
	}{
		{"chain", solvertest.Chain(9), -1, true, false},
		{"linear network", solvertest.LinearNetwork(8), 8, true, true},
		{"corpus unet (a chain of levels)", corpus["unet"], 3, true, true},
		{"residual blocks", corpus["residual-blocks"], -1, false, false},
		{"diamond", corpus["diamond"], -1, false, false},
		{"layered DAG", layeredDAG(1, 250), -1, false, false},
		{"U-Net of three levels (a chain with long skips)", unet(3), 11, true, true},
		{"training U-Net", training(unet(3)), 24, false, true},
		// The forward DAG has one output, so its loss ends the forward part.
		{"training layered DAG", training(layeredDAG(4, 100)), 100, false, true},
	} {
		sh := analyze(c.p)
		want := c.fwdEnd
		if want < 0 {
			want = c.p.N() - 1
		}
		if sh.fwdEnd != want || sh.linear != c.linear || sh.training != c.training {
			t.Errorf("%s: forward part 0 … %d, linear %v, training %v; want 0 … %d, %v, %v",
				c.name, sh.fwdEnd, sh.linear, sh.training, want, c.linear, c.training)
		}
	}
}

// chainWithSkip is 0 → 1 → 2 → 3 → 4 → 5 with node 5 also reading node 1.
func chainWithSkip() *remat.Problem {
	p := solvertest.Chain(6)
	p.Deps[5] = []int32{1, 4}
	return p
}

func TestStagesRepairs(t *testing.T) {
	p := chainWithSkip()
	sh := analyze(p)
	// Node 1 may be kept only for node 2: node 5 must recompute it, and
	// node 0 with it (1b). Node 2 may be kept into stage 5 but not 4: (1c)
	// recomputes it, with 1 and 0, in stage 4, where nobody reads it, and
	// no later stage reads it either, so those recomputations are dropped.
	k := newKeeps(p.N())
	for i := range p.N() {
		k.keep(i, i+1, i+1)
	}
	k.keep(2, 5, 5)
	want := [][]int32{{0}, {1}, {2}, {3}, {4}, {0, 1, 5}}
	if got := sh.stages(p, k); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("stages = %v, want %v", got, want)
	}
}

func TestSegmentKeepsInference(t *testing.T) {
	p := solvertest.Chain(7)
	p.Deps[3] = []int32{0, 2}
	p.Deps[5] = []int32{1, 3, 4}
	p.Deps[6] = []int32{1, 5}
	sh := analyze(p)
	if sh.training || sh.linear {
		t.Fatalf("analyze: linear %v, training %v; want an inference DAG", sh.linear, sh.training)
	}
	// Checkpoint 2: segments 0 … 2 and 3 … 6. Node 0 is read after its
	// segment by node 3: recomputed just before it. Node 1 is read after
	// its segment by 5 and 6: recomputed once, just before node 5, from
	// node 0, which segment 3 … 6 has recomputed already and so keeps from
	// stage 3 to 5 rather than recompute it twice; node 1 is kept for
	// node 6.
	ckpt := make([]bool, p.N())
	ckpt[2] = true
	c, err := sh.build(p, sh.segmentKeeps(ckpt))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{0}, {1}, {2}, {0, 3}, {4}, {1, 5}, {6}}
	if got := c.plan.Stages(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("stages = %v, want %v", got, want)
	}
}

func TestSegmentKeepsTraining(t *testing.T) {
	p := solvertest.LinearNetwork(8) // f0 … f7, loss 8, b7 = 9 … b0 = 16
	sh := analyze(p)
	// Checkpoints f2 and f5: segments f0 … f2, f3 … f5 and f6 … loss. The
	// last is where the forward pass ends: kept. The backward pass
	// recomputes f3 and f4 just before b4 (node 12), which reads f4, and
	// f0 and f1 just before b1 (node 15).
	ckpt := make([]bool, p.N())
	ckpt[2], ckpt[5] = true, true
	c, err := sh.build(p, sh.segmentKeeps(ckpt))
	if err != nil {
		t.Fatal(err)
	}
	got := c.plan.Stages()
	for t0, st := range got {
		var want []int32
		switch t0 {
		case 12:
			want = []int32{3, 4, 12}
		case 15:
			want = []int32{0, 1, 15}
		default:
			want = []int32{int32(t0)}
		}
		if !slices.Equal(st, want) {
			t.Errorf("stage %d computes %v, want %v", t0, st, want)
		}
	}
	// Checkpoint f2 is kept until f3 is recomputed from it (stage 12) and
	// b2 reads it (stage 14); f5 until b5 reads it (stage 11).
	for _, k := range []struct{ node, from, to int }{{2, 3, 14}, {5, 6, 11}} {
		for t0 := 1; t0 < p.N(); t0++ {
			if held, want := c.plan.S[t0].Has(k.node), k.from <= t0 && t0 <= k.to; held != want {
				t.Errorf("S[%d][%d] = %v, want %v", t0, k.node, held, want)
			}
		}
	}
}

// Every R that the repairs produce is legal, whatever the spans: random
// spans on random problems give plans that Evaluate accepts.
func TestRandomSpansGiveLegalPlans(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for seed := uint64(1); seed <= 60; seed++ {
		p := solvertest.RandomDAG(seed, 5+int(seed%20))
		if seed%3 == 0 {
			p = training(p)
		}
		sh := analyze(p)
		k := newKeeps(p.N())
		for i := range p.N() {
			for range r.IntN(3) {
				from := i + 1 + r.IntN(p.N())
				k.keep(i, from, from+r.IntN(4))
			}
			if r.IntN(4) == 0 {
				k.keepToLast(i, i+1+r.IntN(3), int(sh.lastRead[i]))
			}
		}
		if _, err := sh.build(p, k); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func TestSpread(t *testing.T) {
	for m := range 40 {
		got := spread(m)
		if m > 0 && got[0] != 0 {
			t.Errorf("spread(%d) starts at %d", m, got[0])
		}
		s := slices.Clone(got)
		slices.Sort(s)
		for i, v := range s {
			if v != i {
				t.Fatalf("spread(%d) = %v is not a permutation of 0 … %d", m, got, m-1)
			}
		}
		if len(s) != m {
			t.Fatalf("spread(%d) has %d entries", m, len(s))
		}
	}
	if got, want := spread(8), []int{0, 4, 2, 6, 1, 5, 3, 7}; !slices.Equal(got, want) {
		t.Errorf("spread(8) = %v, want %v", got, want)
	}
}

func TestDropDead(t *testing.T) {
	p := chainWithSkip()
	sh := analyze(p)
	// Stage 3 recomputes 0 and 1 for nobody; stage 5 recomputes 0 and 1
	// for node 5; stage 4 recomputes 2, which only a dropped computation
	// would read.
	stages := [][]int32{{0}, {1}, {2}, {0, 1, 3}, {2, 4}, {0, 1, 5}}
	sh.dropDead(p, stages)
	want := [][]int32{{0}, {1}, {2}, {3}, {4}, {0, 1, 5}}
	if !slices.EqualFunc(stages, want, slices.Equal) {
		t.Errorf("dropDead: %v, want %v", stages, want)
	}
}
