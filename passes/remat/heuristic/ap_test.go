package heuristic

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// The √n rule is not budget-aware: on a few random DAGs its plan peaks
// above checkpoint-all's, so it may fail where checkpoint-all fits.
func TestApConformanceSqrtN(t *testing.T) {
	solvertest.Run(t, APSqrtN, solvertest.Options{MayFail: true})
}

func TestApConformanceGreedy(t *testing.T) {
	solvertest.Run(t, APGreedy, solvertest.Options{})
}

func TestApLinearNetworkAgainstBruteForce(t *testing.T) {
	checkAgainstBruteForce(t, APSqrtN, solvertest.LinearNetwork(6), true)
	checkAgainstBruteForce(t, APGreedy, solvertest.LinearNetwork(6), false)
}

func TestApSqrtNLinearNetwork(t *testing.T) { checkSqrtNLinearNetwork(t, APSqrtN) }

// components counts the connected components of the undirected graph of
// nodes 0 … last without node skip.
func components(p *remat.Problem, last, skip int) int {
	parent := make([]int, last+1)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for v := 0; v <= last; v++ {
		for _, d := range p.Deps[v] {
			if v != skip && int(d) != skip {
				parent[find(v)] = find(int(d))
			}
		}
	}
	c := 0
	for v := 0; v <= last; v++ {
		if v != skip && find(v) == v {
			c++
		}
	}
	return c
}

func TestApArticulationPoints(t *testing.T) {
	corpus := map[string]*remat.Problem{}
	for _, c := range solvertest.Corpus() {
		corpus[c.Name] = c.Problem
	}
	twoChains := solvertest.Chain(6)
	twoChains.Deps[3] = []int32{}
	for _, c := range []struct {
		name string
		p    *remat.Problem
		want []int
	}{
		{"chain", solvertest.Chain(5), []int{1, 2, 3}},
		{"diamond", corpus["diamond"], nil},
		{"residual blocks", corpus["residual-blocks"], []int{3, 6}},
		{"two chains", twoChains, []int{1, 4}},
	} {
		var got []int
		for v, a := range articulationPoints(c.p, c.p.N()-1) {
			if a {
				got = append(got, v)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: articulation points %v, want %v", c.name, got, c.want)
		}
	}
	// Against the definition: removing a cut vertex adds components.
	r := rand.New(rand.NewPCG(5, 6))
	for seed := uint64(1); seed <= 200; seed++ {
		p := solvertest.RandomDAG(seed, 2+int(seed%30))
		if seed%2 == 0 {
			p = layeredDAG(seed, 2+r.IntN(40))
		}
		last := r.IntN(p.N())
		ap := articulationPoints(p, last)
		whole := components(p, last, -1)
		for v := 0; v <= last; v++ {
			if want := components(p, last, v) > whole; ap[v] != want {
				t.Fatalf("seed %d, nodes 0 … %d: node %d articulation point %v, want %v", seed, last, v, ap[v], want)
			}
		}
	}
}

func TestApUNets(t *testing.T) {
	checkUNets(t, APSqrtN)
	checkUNets(t, APGreedy)
}

func TestApDeadline(t *testing.T) {
	checkDeadline(t, APSqrtN)
	checkDeadline(t, APGreedy)
}

func TestApCancelMidway(t *testing.T) {
	checkCancelMidway(t, APSqrtN)
	checkCancelMidway(t, APGreedy)
}

func TestApTiny(t *testing.T) {
	checkTiny(t, APSqrtN)
	checkTiny(t, APGreedy)
}

func BenchmarkApSqrtN(b *testing.B)  { benchmarkSolver(b, APSqrtN) }
func BenchmarkApGreedy(b *testing.B) { benchmarkSolver(b, APGreedy) }
