package lns

// search.go: the large-neighbourhood search, its workers and rounds.

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// solution is a plan found by the search: its compute sets, the cost of
// its recomputations, and its total cost summed in execution order (as
// remat.Check sums it, so that the progress reports show the cost Check
// finds to the last bit).
type solution struct {
	stages [][]int32
	extra  float64
	total  float64
	nRec   int
}

// better reports whether a is cheaper than b beyond rounding, or as cheap
// with fewer recomputations.
func (a *solution) better(b *solution) bool {
	tol := 1e-9 * math.Max(1, math.Abs(b.extra))
	if a.extra < b.extra-tol {
		return true
	}
	return a.extra <= b.extra+tol && a.nRec < b.nRec
}

// worker is one independent search: its own state, journal and random
// stream.
type worker struct {
	s    *state
	j    journal
	rep  repairer
	rng  *rand.Rand
	list []cut
	temp float64 // the annealing temperature, in seconds
	// loaded reports that s holds the worker's current plan.
	loaded bool

	stop *atomic.Bool
}

func newWorker(g *graph, capBytes int64, stop *atomic.Bool) *worker {
	w := &worker{s: newState(g, capBytes), stop: stop}
	w.rep = repairer{chainDepth: chainDepth, costEps: 1e-6 * meanCost(g), failFast: true,
		stop: stop, exact: exactCuts, noise: noise, cone: coneCuts}
	return w
}

// iterate runs one destroy-and-repair step from the current plan, keeps
// it when the annealing rule accepts it, and returns whether it did.
func (w *worker) iterate() bool {
	s := w.s
	w.list = s.recomputations(w.list[:0])
	if len(w.list) == 0 {
		return false
	}
	before := s.extra
	mark := len(w.j.moves)
	w.rep.local = w.rng.IntN(2) == 0
	w.destroy()
	ok := s.repair(&w.j, &w.rep, w.rng)
	if ok {
		s.prune(&w.j)
		w.list = s.recomputations(w.list[:0])
		s.descend(&w.j, w.list, w.rng)
	}
	delta := s.extra - before
	accept := ok && (delta <= 1e-12*math.Max(1, before) ||
		w.temp > 0 && w.rng.Float64() < math.Exp(-delta/w.temp))
	if !accept {
		s.revert(&w.j, mark)
	}
	w.j.moves = w.j.moves[:0]
	return accept
}

// destroy removes a neighbourhood of recomputations (w.list holds them
// all): those of a window of stages, those of one node, or a few at
// random.
func (w *worker) destroy() {
	s, rng, list := w.s, w.rng, w.list
	switch rng.IntN(4) {
	case 0, 1: // a window of stages around a random recomputation
		c := list[rng.IntN(len(list))]
		width := int32(1 + rng.IntN(max(2, s.g.n/25)))
		lo := c.at - int32(rng.IntN(int(width)))
		for _, d := range list {
			if d.at >= lo && d.at < lo+width && s.has(d.i, d.at) {
				s.doRemove(&w.j, d.i, d.at)
			}
		}
	case 2: // every recomputation of one node
		i := list[rng.IntN(len(list))].i
		for _, d := range list {
			if d.i == i && s.has(d.i, d.at) {
				s.doRemove(&w.j, d.i, d.at)
			}
		}
	default: // one to three at random
		k := 1 + rng.IntN(3)
		for range k {
			d := list[rng.IntN(len(list))]
			if s.has(d.i, d.at) {
				s.doRemove(&w.j, d.i, d.at)
			}
		}
	}
}

// runRound runs iters iterations on each worker (in parallel, on at most
// threads goroutines) and returns each worker's best plan, or best when
// none of its plans is better. Each worker continues from its current plan
// (a walk that the annealing rule lets stray from the best), or, with
// reset, from best. Worker k's random stream depends on seed, round and
// k only. improved, when not nil, is told of every plan a worker finds
// that is better than its best so far (from the worker's goroutine).
func runRound(workers []*worker, best *solution, reset bool, iters int, seed uint64, round int, threads int, temp float64,
	improved func(*solution, int)) []*solution {
	out := make([]*solution, len(workers))
	var wg sync.WaitGroup
	next := atomic.Int32{}
	for range min(threads, len(workers)) {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(workers) {
					return
				}
				w := workers[k]
				w.rng = rand.New(rand.NewPCG(seed, uint64(round)<<16|uint64(k)))
				w.temp = temp * float64(k+1) / float64(len(workers))
				if reset || !w.loaded {
					w.s.load(best.stages)
					w.loaded = true
				}
				mine := best
				for range iters {
					if w.stop.Load() {
						break
					}
					if w.iterate() && w.s.extra < mine.extra {
						if cand := w.s.snapshot(); cand.better(mine) {
							mine = cand
							if improved != nil {
								improved(cand, round)
							}
						}
					}
				}
				out[k] = mine
			}
		})
	}
	wg.Wait()
	return out
}

// snapshot returns the current plan as a solution, its cost summed
// afresh (the state's running sum drifts by rounding).
func (s *state) snapshot() *solution {
	sol := &solution{stages: s.stages(), nRec: s.nRec}
	for t, xt := range sol.stages {
		for _, i := range xt {
			sol.total += s.g.seconds[i]
			if int(i) != t {
				sol.extra += s.g.seconds[i]
			}
		}
	}
	return sol
}

// bestOf returns the best of the solutions, the earliest on ties.
func bestOf(sols []*solution) *solution {
	var best *solution
	for _, s := range sols {
		if s != nil && (best == nil || s.better(best)) {
			best = s
		}
	}
	return best
}
