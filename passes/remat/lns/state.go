package lns

// state.go is the incremental evaluator: a plan held as the stages in
// which each node is computed, with the memory of every stage kept up to
// date as computations are added and removed.

import (
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// # The memory of a plan, stage by stage
//
// A frontier-advancing plan (Checkmate §4.6) is its compute sets X_t: stage
// t runs the nodes of X_t in increasing order, t last (Algorithm 1's
// row-major scan of R). Any such sets are legal (remat.ScheduleStages
// derives S and FREE), so a plan is nothing but, for every node i, the
// sorted list comp[i] of the stages that compute it, comp[i][0] = i.
//
// The memory model is remat's (passes/memory with zero options): every
// computation of node i creates a new instance of each of its parts; an
// instance is allocated at its step and freed right after the last step
// that reads it (a reader reads the most recent instance), or right after
// its own step when nothing reads it; the last instance of a graph-output
// part is kept to the end. The memory of a step is ConstBytes plus every
// instance allocated and not yet freed, the step's own outputs and inputs
// included: Checkmate's U_{t,k} of eq. (2)–(3) before the frees of step k
// (the "During" of package memory, and of MOCCASIN App. A.3).
//
// The instance of node i computed in stage a = comp[i][k] serves the
// readers computed in stages a … b−1, b = comp[i][k+1] (or the end). Its
// end is the last of them, a position (stage, node) in the sequence. The
// peak of stage t, the largest memory of its steps, then splits as
//
//	peak(t) = ConstBytes + cross(t) + local(t),
//
// cross(t) the bytes of the instances allocated before stage t and freed
// in stage t or later (what is resident when stage t begins: the bytes of
// S_t, eq. 2's U_{t,0} without M_0), and local(t) the largest, over the
// steps of stage t, of the bytes allocated in stage t and still held minus
// the bytes of crossing instances already freed in stage t. A crossing
// instance contributes to cross over the stage range (start, endStage], so
// changing an instance's end is a range update of cross over the stages
// between its old and its new end, and a recomputation of local at the few
// stages where it starts and ends.

// pos is a step of the sequence: node Node computed in stage Stage. A
// Stage equal to the number of stages is the end of the sequence (a kept
// graph output).
type pos struct{ stage, node int32 }

func (a pos) before(b pos) bool {
	return a.stage < b.stage || a.stage == b.stage && a.node < b.node
}

// graph is what the evaluator needs of a Problem, flattened to parts: a
// value of the memory model is one part of one node.
type graph struct {
	n        int
	slack    []int64 // stage → bytes added to its memory (Options.slack), nil: none
	constB   int64
	seconds  []float64
	recomp   []bool
	partBase []int32   // node → its first part; len n+1
	partNode []int32   // part → node
	bytes    []int64   // part → bytes
	readers  [][]int32 // part → the nodes reading it, increasing
	reads    [][]int32 // node → the parts it reads, in the order it reads them (ReadPartsInOrder)
	outPart  []bool    // part → a graph output
	users    [][]int32 // node → the nodes reading any of its parts, increasing
	deps     [][]int32 // node → the nodes it reads, increasing
	isOut    []bool    // node → has an output part
	// Under remat.Problem.Reuse (reuse.go): key is each part's reuse key
	// (−1: none), keyParts each key's parts, increasing.
	reuse    bool
	key      []int32
	keyParts [][]int32
	shared   []bool  // key → instances may take each other's buffers
	inPlace  []int32 // node → the part its first part may be written over, −1
	ws       []int64 // node → its workspace (remat.Problem.Workspace), nil: none
}

func newGraph(p *remat.Problem) *graph {
	n := p.N()
	g := &graph{n: n, constB: p.ConstBytes, seconds: p.Seconds, recomp: p.Recomputable, ws: p.Workspace,
		partBase: make([]int32, n+1), reads: make([][]int32, n), users: make([][]int32, n),
		deps: p.Deps, isOut: make([]bool, n)}
	for i := range n {
		g.partBase[i+1] = g.partBase[i] + int32(p.NumParts(i))
	}
	np := int(g.partBase[n])
	g.partNode = make([]int32, np)
	g.bytes = make([]int64, np)
	g.readers = make([][]int32, np)
	g.outPart = make([]bool, np)
	for i := range n {
		for k := range p.NumParts(i) {
			v := g.partBase[i] + int32(k)
			g.partNode[v] = int32(i)
			g.bytes[v] = p.PartBytes(i, k)
		}
	}
	for j := range n {
		p.ReadPartsInOrder(j, func(r remat.Part) {
			v := g.partBase[r.Node] + r.Index
			g.reads[j] = append(g.reads[j], v)
			g.readers[v] = append(g.readers[v], int32(j))
		})
		for _, d := range p.Deps[j] {
			g.users[d] = append(g.users[d], int32(j))
		}
	}
	for _, r := range p.OutputPartList() {
		g.outPart[g.partBase[r.Node]+r.Index] = true
		g.isOut[r.Node] = true
	}
	if p.Reuse != nil {
		g.initReuse(p)
	}
	return g
}

// parts is the number of parts of node i.
func (g *graph) parts(i int32) int32 { return g.partBase[i+1] - g.partBase[i] }

// state is a plan under evaluation. cap is the bound on cross+local that
// over measures against: the budget less ConstBytes.
type state struct {
	g   *graph
	cap int64

	comp [][]int32 // node → the stages computing it, increasing
	// ends[i][k·parts(i)+j] is the end of part j of the instance that
	// node i's k-th computation creates.
	ends  [][]pos
	x     [][]int32 // stage → the nodes it computes, increasing
	cross []int64
	local []int64
	// over is Σ_t max(0, cross+local − cap); nOver counts those stages.
	over  int64
	nOver int
	extra float64 // the cost of the recomputations
	nRec  int     // the number of recomputations

	// Under reuse (reuse.go): deaths[i] are the instances' deaths, laid
	// out as ends (whose entries are then their buffers' ends); held[t]
	// lists the instances whose buffer end lies in stage t and is not
	// their death; dirtyKeys the keys to match again at the end of a move.
	deaths    [][]pos
	held      [][]heldRef
	dirtyKeys []int32
	keyStamp  []uint32
	ev        []event // scratch for rematch
	buf       []int32 // scratch for rematch

	dirty   []int32 // stages whose local must be recomputed
	stamp   []uint32
	stampID uint32
	diff    []int64 // scratch for computeLocal
}

func newState(g *graph, capBytes int64) *state {
	s := &state{g: g, cap: capBytes,
		comp: make([][]int32, g.n), ends: make([][]pos, g.n), x: make([][]int32, g.n),
		cross: make([]int64, g.n), local: make([]int64, g.n), stamp: make([]uint32, g.n)}
	if g.reuse {
		s.deaths = make([][]pos, g.n)
		s.held = make([][]heldRef, g.n)
		s.keyStamp = make([]uint32, len(g.keyParts))
	}
	return s
}

// load sets the plan to the given compute sets (each sorted, ending with
// its own stage) and evaluates it from scratch.
func (s *state) load(stages [][]int32) {
	g := s.g
	for i := range g.n {
		s.comp[i] = s.comp[i][:0]
	}
	s.extra, s.nRec = 0, 0
	for t := range g.n {
		s.x[t] = append(s.x[t][:0], stages[t]...)
		for _, i := range stages[t] {
			s.comp[i] = append(s.comp[i], int32(t))
			if int(i) != t {
				s.extra += g.seconds[i]
				s.nRec++
			}
		}
	}
	// cross from a difference array: each instance adds its bytes over
	// the stages (start, end stage].
	clear(s.cross)
	if g.reuse {
		s.loadReuse()
	}
	for i := range g.n {
		np := int(g.parts(int32(i)))
		e := s.ends[i][:0]
		for k, a := range s.comp[i] {
			for j := range np {
				var end pos
				if g.reuse {
					end = s.ends[i][k*np+j]
				} else {
					end = s.instanceEnd(int32(i), k, int32(j))
				}
				e = append(e, end)
				if to := min(end.stage, int32(g.n-1)); to > a {
					b := g.bytes[g.partBase[i]+int32(j)]
					s.cross[a+1] += b
					if int(to)+1 < g.n {
						s.cross[to+1] -= b
					}
				}
			}
		}
		s.ends[i] = e
	}
	for t := 1; t < g.n; t++ {
		s.cross[t] += s.cross[t-1]
	}
	s.over, s.nOver = 0, 0
	for t := range g.n {
		s.local[t] = s.computeLocal(int32(t))
		if v := s.cross[t] + s.local[t] - s.cap; v > 0 {
			s.over += v
			s.nOver++
		}
	}
	s.dirty = s.dirty[:0]
}

// setCap changes the bound and recomputes over.
func (s *state) setCap(c int64) {
	s.cap = c
	s.over, s.nOver = 0, 0
	for t := range s.g.n {
		if v := s.cross[t] + s.local[t] - c; v > 0 {
			s.over += v
			s.nOver++
		}
	}
}

// excess is stage t's bytes over the cap (negative when under).
func (s *state) excess(t int) int64 { return s.cross[t] + s.local[t] - s.cap }

// bump adds b to cross over (a, e], keeping over up to date.
func (s *state) bump(a, e int32, b int64) {
	e = min(e, int32(s.g.n-1))
	if e <= a {
		return
	}
	// The hottest loop of the search: kept free of bounds checks and of
	// stores to s until it ends.
	cross := s.cross[a+1 : e+1]
	local := s.local[a+1 : e+1]
	local = local[:len(cross)]
	c, over, nOver := s.cap, s.over, s.nOver
	for q := range cross {
		old := cross[q] + local[q] - c
		cross[q] += b
		if old > 0 {
			over -= old
			nOver--
		}
		if now := old + b; now > 0 {
			over += now
			nOver++
		}
	}
	s.over, s.nOver = over, nOver
}

// account updates over for one stage whose excess went from old to now.
func (s *state) account(old, now int64) {
	if old > 0 {
		s.over -= old
		s.nOver--
	}
	if now > 0 {
		s.over += now
		s.nOver++
	}
}

// latestAtMost returns the index in c (increasing) of the last element at
// most t, or −1.
func latestAtMost(c []int32, t int32) int {
	k := len(c) - 1
	for k >= 0 && c[k] > t {
		k--
	}
	return k
}

// index returns the index of t in c (increasing), which must hold it.
func index(c []int32, t int32) int {
	k, _ := slices.BinarySearch(c, t)
	return k
}

// instanceEnd computes where part j of node i's k-th instance is freed:
// after its last reader among the computations in its stages a … b−1, at
// the end for the last instance of an output part, else right after its
// own step.
func (s *state) instanceEnd(i int32, k int, j int32) pos {
	g := s.g
	c := s.comp[i]
	a := c[k]
	b := int32(g.n)
	if k+1 < len(c) {
		b = c[k+1]
	}
	v := g.partBase[i] + j
	if g.outPart[v] && k+1 == len(c) {
		return pos{int32(g.n), 0}
	}
	end := pos{a, i}
	for _, r := range g.readers[v] {
		if r >= b {
			break // readers are increasing and compute no earlier than themselves
		}
		cr := s.comp[r]
		q := len(cr) - 1
		for q >= 0 && cr[q] >= b {
			q--
		}
		if q >= 0 && cr[q] >= a {
			if at := (pos{cr[q], r}); end.before(at) {
				end = at
			}
		}
	}
	return end
}

// markDirty queues stage t's local for recomputation.
func (s *state) markDirty(t int32) {
	if t < 0 || int(t) >= s.g.n || s.stamp[t] == s.stampID {
		return
	}
	s.stamp[t] = s.stampID
	s.dirty = append(s.dirty, t)
}

// beginMove starts a new set of dirty stages.
func (s *state) beginMove() {
	s.stampID++
	if s.stampID == 0 {
		clear(s.stamp)
		clear(s.keyStamp)
		s.stampID = 1
	}
	s.dirty = s.dirty[:0]
}

// endMove recomputes the local term of the dirty stages.
func (s *state) endMove() {
	if s.g.reuse {
		s.rematchDirty()
	}
	for _, t := range s.dirty {
		old := s.cross[t] + s.local[t] - s.cap
		s.local[t] = s.computeLocal(t)
		s.account(old, s.cross[t]+s.local[t]-s.cap)
	}
	s.dirty = s.dirty[:0]
}

// refresh recomputes the end of part j of node i's k-th instance and
// applies the change.
func (s *state) refresh(i int32, k int, j int32) {
	now := s.instanceEnd(i, k, j)
	if s.g.reuse {
		// The buffer's end follows at the end of the move (rematch).
		d := &s.deaths[i][k*int(s.g.parts(i))+int(j)]
		if *d != now {
			*d = now
			s.dirtyKey(i, j)
		}
		return
	}
	s.setEnd(i, k, j, now)
}

// setEnd moves the end of part j of node i's k-th instance to now,
// updating cross and marking the stages whose local changes.
func (s *state) setEnd(i int32, k int, j int32, now pos) {
	np := int(s.g.parts(i))
	e := &s.ends[i][k*np+int(j)]
	if now == *e {
		return
	}
	a := s.comp[i][k]
	b := s.g.bytes[s.g.partBase[i]+j]
	// Both ends are at or after a, so cross changes only between them:
	// a range as long as the move, not as the instance (the range updates
	// are most of the search's time on large graphs).
	if now.stage > e.stage {
		s.bump(e.stage, now.stage, b)
	} else {
		s.bump(now.stage, e.stage, -b)
	}
	s.markDirty(a)
	s.markDirty(e.stage)
	s.markDirty(now.stage)
	*e = now
}

// refreshReads recomputes the ends of the instances that node i's
// computation in stage t reads.
func (s *state) refreshReads(i, t int32) {
	g := s.g
	for _, v := range g.reads[i] {
		d := g.partNode[v]
		k := latestAtMost(s.comp[d], t)
		s.refresh(d, k, v-g.partBase[d])
	}
}

// has reports whether stage t computes node i.
func (s *state) has(i, t int32) bool {
	_, ok := slices.BinarySearch(s.comp[i], t)
	return ok
}

// add makes stage t (> i) compute node i as well.
func (s *state) add(i, t int32) {
	g := s.g
	s.beginMove()
	c := s.comp[i]
	k, _ := slices.BinarySearch(c, t)
	s.comp[i] = slices.Insert(c, k, t)
	np := int(g.parts(i))
	for range np {
		// No bytes held beyond its own step yet; refresh sets the end.
		s.ends[i] = slices.Insert(s.ends[i], k*np, pos{t, i})
		if g.reuse {
			s.deaths[i] = slices.Insert(s.deaths[i], k*np, pos{t, i})
		}
	}
	if g.reuse {
		for j := range int32(np) {
			s.dirtyKey(i, j)
		}
	}
	xt := s.x[t]
	q, _ := slices.BinarySearch(xt, i)
	s.x[t] = slices.Insert(xt, q, i)
	if g.reuse {
		s.touchNext(i, t)
	}
	s.markDirty(t)
	for j := range int32(np) {
		s.refresh(i, k-1, j)
		s.refresh(i, k, j)
	}
	s.refreshReads(i, t)
	s.extra += g.seconds[i]
	s.nRec++
	s.endMove()
}

// remove drops the computation of node i in stage t (> i).
func (s *state) remove(i, t int32) {
	g := s.g
	s.beginMove()
	c := s.comp[i]
	k := index(c, t)
	np := int(g.parts(i))
	for j := range np {
		e := s.ends[i][k*np+j]
		s.bump(t, e.stage, -g.bytes[g.partBase[i]+int32(j)])
		s.markDirty(e.stage)
		if g.reuse {
			s.unhold(i, t, int32(j), e.stage)
			s.dirtyKey(i, int32(j))
		}
	}
	s.comp[i] = slices.Delete(c, k, k+1)
	s.ends[i] = slices.Delete(s.ends[i], k*np, (k+1)*np)
	if g.reuse {
		s.deaths[i] = slices.Delete(s.deaths[i], k*np, (k+1)*np)
	}
	xt := s.x[t]
	q := index(xt, i)
	s.x[t] = slices.Delete(xt, q, q+1)
	if g.reuse {
		s.touchNext(i, t)
	}
	s.markDirty(t)
	for j := range int32(np) {
		s.refresh(i, k-1, j)
	}
	s.refreshReads(i, t)
	s.extra -= g.seconds[i]
	s.nRec--
	s.endMove()
}

// computeLocal is local(t): the largest, over the steps of stage t, of
// the bytes of the instances allocated in stage t and still held, less the
// bytes of the instances from earlier stages already freed in stage t.
func (s *state) computeLocal(t int32) int64 {
	g := s.g
	xt := s.x[t]
	m := len(xt)
	if cap(s.diff) < m+1 {
		s.diff = make([]int64, m+1, 2*m+2)
	}
	diff := s.diff[:m+1]
	clear(diff)
	// position of node j in xt
	at := func(j int32) int {
		q, _ := slices.BinarySearch(xt, j)
		return q
	}
	for p, i := range xt {
		if g.ws != nil {
			diff[p] += g.ws[i]
			diff[p+1] -= g.ws[i]
		}
		k := index(s.comp[i], t)
		np := int(g.parts(i))
		for j := range np {
			e := s.ends[i][k*np+j]
			q := m - 1
			if e.stage == t {
				q = at(e.node)
			}
			b := g.bytes[g.partBase[i]+int32(j)]
			diff[p] += b
			diff[q+1] -= b
		}
	}
	for q, r := range xt {
		for _, v := range g.reads[r] {
			d := g.partNode[v]
			k := latestAtMost(s.comp[d], t)
			if s.comp[d][k] == t {
				continue // allocated in this stage: counted above
			}
			np := int(g.parts(d))
			at := k*np + int(v-g.partBase[d])
			if e := s.ends[d][at]; e.stage == t && e.node == r && (s.deaths == nil || s.deaths[d][at] == e) {
				diff[q+1] -= g.bytes[v] // freed at its death (held ends: below)
			}
		}
	}
	if s.held != nil {
		for _, h := range s.held[t] {
			if h.at >= t {
				continue // allocated in this stage: counted above
			}
			np := int(g.parts(h.node))
			k := index(s.comp[h.node], h.at)
			e := s.ends[h.node][k*np+int(h.part)]
			diff[at(e.node)+1] -= g.bytes[g.partBase[h.node]+h.part]
		}
	}
	var run, best int64
	for p := range m {
		run += diff[p]
		if p == 0 || run > best {
			best = run
		}
	}
	if g.slack != nil {
		best += g.slack[t]
	}
	return best
}

// peak is the largest stage peak, ConstBytes included, and its stage.
func (s *state) peak() (int64, int) {
	best, at := int64(0), -1
	for t := range s.g.n {
		if v := s.cross[t] + s.local[t]; at < 0 || v > best {
			best, at = v, t
		}
	}
	return best + s.g.constB, at
}

// stages returns a copy of the compute sets.
func (s *state) stages() [][]int32 {
	out := make([][]int32, s.g.n)
	for t, xt := range s.x {
		out[t] = slices.Clone(xt)
	}
	return out
}
