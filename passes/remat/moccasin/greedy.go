package moccasin

import (
	"context"
	"math"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// This file is the native phase 1 (§2.4's "memory-feasible solution"):
// a greedy that splits retention intervals until the peak fits the budget.
// It works on stage lists (stages[t] = the nodes stage t computes, sorted,
// ending with t) and measures them with sim, an exact re-implementation of
// the memory model that Check uses (the tests compare them), fast enough
// to try every move at every step.

// sim measures a stage plan under the project's memory model (package
// remat, "Memory model"): every output (part) of every computation is
// allocated when the computation runs and freed right after the last step
// that reads that instance; the final instances of graph-output parts stay
// to the end; a step's memory is everything allocated and not yet freed
// while it runs, ConstBytes included.
type sim struct {
	p       *remat.Problem
	partsOf [][]int32 // parts of each node, as indices into bytes
	bytes   []int64
	reads   [][]int32 // the parts each node reads
	outPart []bool

	// Results of the last run.
	seq      []int32 // node of each step
	stage    []int32 // stage of each step
	base     []int32 // first instance of each step; instance k of step i is base[i]+k
	lastUse  []int32 // per instance: last step reading it (len(seq): kept to the end; −1: never read)
	during   []int64
	peak     int64
	peakStep int
	atPeak   int // steps whose memory equals the peak
	cost     float64
	// over is the total overflow Σ max(0, during − limit) for the limit
	// set before run; overSteps are the steps over it.
	limit     int64
	over      int64
	overSteps []int
}

func newSim(p *remat.Problem) *sim {
	s := &sim{p: p, partsOf: make([][]int32, p.N()), reads: make([][]int32, p.N())}
	for v := range p.N() {
		for k := range p.NumParts(v) {
			s.partsOf[v] = append(s.partsOf[v], int32(len(s.bytes)))
			s.bytes = append(s.bytes, p.PartBytes(v, k))
		}
	}
	s.outPart = make([]bool, len(s.bytes))
	for _, r := range p.OutputPartList() {
		s.outPart[s.partsOf[r.Node][r.Index]] = true
	}
	for u := range p.N() {
		p.ReadParts(u, func(r remat.Part) { s.reads[u] = append(s.reads[u], s.partsOf[r.Node][r.Index]) })
	}
	return s
}

// run measures stages: peak, peakStep, atPeak, cost, and the instance
// lifetimes. Every dependency must have been computed before it is read
// (true of any frontier-advancing stage plan).
func (s *sim) run(stages [][]int32) {
	s.seq, s.stage, s.base = s.seq[:0], s.stage[:0], s.base[:0]
	s.cost = 0
	ninst := int32(0)
	for t, st := range stages {
		for _, v := range st {
			s.seq = append(s.seq, v)
			s.stage = append(s.stage, int32(t))
			s.base = append(s.base, ninst)
			ninst += int32(len(s.partsOf[v]))
			s.cost += s.p.Seconds[v]
		}
	}
	L := len(s.seq)
	s.lastUse = slices.Grow(s.lastUse[:0], int(ninst))[:ninst]
	for i := range s.lastUse {
		s.lastUse[i] = -1
	}
	cur := make([]int32, len(s.bytes)) // current instance of each part
	for i, v := range s.seq {
		for _, q := range s.reads[v] {
			s.lastUse[cur[q]] = int32(i)
		}
		for k, q := range s.partsOf[v] {
			cur[q] = s.base[i] + int32(k)
		}
	}
	for q, out := range s.outPart {
		if out {
			s.lastUse[cur[q]] = int32(L)
		}
	}
	diff := make([]int64, L+1)
	for i, v := range s.seq {
		for k, q := range s.partsOf[v] {
			end := s.lastUse[s.base[i]+int32(k)]
			if end < int32(i) {
				end = int32(i)
			}
			diff[i] += s.bytes[q]
			if int(end)+1 <= L {
				diff[end+1] -= s.bytes[q]
			}
		}
	}
	s.during = slices.Grow(s.during[:0], L)[:L]
	s.peak, s.peakStep, s.atPeak = s.p.ConstBytes, -1, 0
	s.over, s.overSteps = 0, s.overSteps[:0]
	m := s.p.ConstBytes
	for i := range L {
		m += diff[i]
		s.during[i] = m
		if m > s.limit {
			s.over += m - s.limit
			s.overSteps = append(s.overSteps, i)
		}
		switch {
		case m > s.peak || s.peakStep < 0:
			s.peak, s.peakStep, s.atPeak = m, i, 1
		case m == s.peak:
			s.atPeak++
		}
	}
}

// counts returns how often each node is computed in stages.
func counts(n int, stages [][]int32) []int {
	c := make([]int, n)
	for _, st := range stages {
		for _, v := range st {
			c[v]++
		}
	}
	return c
}

// withNodes returns a copy of stages with the nodes add computed in stage
// t as well (kept sorted, without repeats).
func withNodes(stages [][]int32, t int, add []int32) [][]int32 {
	out := make([][]int32, len(stages))
	copy(out, stages)
	st := slices.Clone(stages[t])
	for _, v := range add {
		if i, found := slices.BinarySearch(st, v); !found {
			st = slices.Insert(st, i, v)
		}
	}
	out[t] = st
	return out
}

// greedy is the native phase 1: starting from no rematerialization it
// repeatedly makes the move that removes the most overflow (the bytes by
// which steps exceed the budget, summed over the steps) per second of
// added cost, until the peak fits the budget, no move removes overflow,
// or ctx is done. A move splits the retention interval of a value resident
// at an over-budget step (the peak step, and the first and last over the
// budget) but not used by it: the value is recomputed in the stage of its
// next use after that step, alone or with the inputs that would not be
// resident there otherwise (recursively). Then recomputations are
// dropped, dearest first, while the plan still fits. It returns the stage
// lists of the first plan that fits, or failing that of the least peak
// seen, and that peak; it respects the cap and never recomputes a node
// that is not recomputable. With a budget below every plan's peak it
// minimises the overflow, which also lowers the peak.
func greedy(ctx context.Context, p *remat.Problem, capC int) ([][]int32, int64) {
	n := p.N()
	s := newSim(p)
	s.limit = p.BudgetBytes
	stages := identity(n)
	s.run(stages)
	budget := p.BudgetBytes
	bestPeak := s.peak
	best := stages
	for iter := 0; s.peak > budget && iter < 8*n+64; iter++ {
		if ctx.Err() != nil {
			break
		}
		at := []int{s.peakStep}
		if k := s.overSteps; len(k) > 0 {
			for _, i := range []int{k[0], k[len(k)-1]} {
				if !slices.Contains(at, i) {
					at = append(at, i)
				}
			}
		}
		var moves []move
		for _, i := range at {
			moves = append(moves, s.moves(stages, capC, i)...)
		}
		curOver, curPeak, curCost := s.over, s.peak, s.cost
		var pick [][]int32
		pickScore, pickPeak := 0.0, int64(0)
		for _, mv := range moves {
			cand := mv.apply(stages)
			remat.DropSpurious(p, cand)
			s.run(cand)
			gain := curOver - s.over
			if gain <= 0 && !(gain == 0 && s.peak < curPeak) {
				continue
			}
			// Overflow removed per second added (a move that costs
			// nothing or saves time ranks first).
			score := math.Inf(1)
			if dc := s.cost - curCost; dc > 0 {
				score = float64(gain) / dc
			}
			if pick == nil || score > pickScore || score == pickScore && s.peak < pickPeak {
				pick, pickScore, pickPeak = cand, score, s.peak
			}
		}
		if pick == nil {
			s.run(stages)
			break
		}
		stages = pick
		s.run(stages)
		if s.peak < bestPeak {
			best, bestPeak = stages, s.peak
		}
	}
	if s.peak > budget {
		return best, bestPeak
	}
	// Drop recomputations, dearest first, while the plan fits.
	for {
		type rc struct {
			t int
			v int32
		}
		var rcs []rc
		for t, st := range stages {
			for _, v := range st {
				if int(v) != t {
					rcs = append(rcs, rc{t, v})
				}
			}
		}
		slices.SortStableFunc(rcs, func(a, b rc) int {
			switch ca, cb := p.Seconds[a.v], p.Seconds[b.v]; {
			case ca > cb:
				return -1
			case ca < cb:
				return 1
			}
			return 0
		})
		dropped := false
		for _, r := range rcs {
			if ctx.Err() != nil {
				break
			}
			cand := make([][]int32, n)
			copy(cand, stages)
			cand[r.t] = slices.DeleteFunc(slices.Clone(stages[r.t]), func(v int32) bool { return v == r.v })
			remat.DropSpurious(p, cand)
			s.run(cand)
			if s.peak <= budget {
				stages, dropped = cand, true
				break
			}
		}
		if !dropped {
			break
		}
	}
	s.run(stages)
	return stages, s.peak
}

// move recomputes nodes in a stage; when from ≥ 0 it also drops the
// recomputation of nodes[0] in stage from (it moves it).
type move struct {
	stage int
	nodes []int32
	from  int
}

// apply returns a copy of stages with the move made.
func (mv move) apply(stages [][]int32) [][]int32 {
	out := withNodes(stages, mv.stage, mv.nodes)
	if mv.from >= 0 {
		v := mv.nodes[0]
		out[mv.from] = slices.DeleteFunc(slices.Clone(out[mv.from]), func(x int32) bool { return x == v })
	}
	return out
}

// moves lists the interval splits at step i (see greedy), after
// s.run(stages). Each candidate comes alone and, when some input
// would not be resident, with the closure of such inputs; a node already
// computed C_v times instead moves the recomputation whose value is alive
// at the peak.
func (s *sim) moves(stages [][]int32, capC int, i int) []move {
	p := s.p
	if i < 0 {
		return nil
	}
	tStar, kStar := int(s.stage[i]), s.seq[i]
	count := counts(p.N(), stages)
	L := int32(len(s.seq))
	firstStep := make([]int32, len(stages)+1) // first step of each stage
	for j := len(s.seq) - 1; j >= 0; j-- {
		firstStep[s.stage[j]] = int32(j)
	}
	firstStep[len(stages)] = L
	readAtPeak := make(map[int32]bool)
	for _, q := range s.reads[kStar] {
		readAtPeak[q] = true
	}
	var out []move
	seen := make(map[[2]int32]bool)
	for j := 0; j < i; j++ {
		v := s.seq[j]
		from := -1
		if !p.Recomputable[v] {
			continue
		}
		if count[v] >= capC {
			// At the cap, a recomputation can only move: this one, when
			// the instance alive at the peak is a recomputation.
			if int(s.stage[j]) == int(v) {
				continue
			}
			from = int(s.stage[j])
		}
		// The instances of step j alive at the peak and not read by it.
		alive := false
		for k, q := range s.partsOf[v] {
			if lu := s.lastUse[s.base[j]+int32(k)]; lu >= int32(i) && !readAtPeak[q] {
				alive = true
			}
		}
		if !alive {
			continue
		}
		// The stage of the next read of this instance after the peak.
		next := L
		for j2 := i + 1; j2 < len(s.seq); j2++ {
			if s.seq[j2] == v {
				break // recomputed: not this instance any more
			}
			reads := false
			for _, q := range s.reads[s.seq[j2]] {
				if slices.Contains(s.partsOf[v], q) {
					reads = true
					break
				}
			}
			if reads {
				next = int32(j2)
				break
			}
		}
		var t2 int
		if next == L {
			t2 = len(stages) - 1 // a graph output needed at the end
		} else {
			t2 = int(s.stage[next])
		}
		if t2 < tStar || t2 == tStar && v < kStar {
			continue // a recomputation there would come before the peak
		}
		key := [2]int32{int32(t2), v}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, move{t2, []int32{v}, from})
		if from >= 0 {
			continue
		}
		// With the inputs that are not resident when stage t2 begins and
		// that it does not compute, recursively.
		closure := []int32{v}
		ok := true
		for x := 0; x < len(closure) && ok; x++ {
			for _, d := range p.Deps[closure[x]] {
				if slices.Contains(closure, d) || slices.Contains(stages[t2], d) || s.residentAt(d, firstStep[t2]) {
					continue
				}
				if !p.Recomputable[d] || count[d] >= capC {
					ok = false
					break
				}
				closure = append(closure, d)
			}
		}
		if ok && len(closure) > 1 {
			out = append(out, move{t2, closure, -1})
		}
	}
	return out
}

// residentAt reports whether some instance of node d produced before step
// j is still alive at step j.
func (s *sim) residentAt(d int32, j int32) bool {
	for i := int(j) - 1; i >= 0; i-- {
		if s.seq[i] == d {
			for k := range s.partsOf[d] {
				if s.lastUse[s.base[i]+int32(k)] >= j {
					return true
				}
			}
			return false
		}
	}
	return false
}
