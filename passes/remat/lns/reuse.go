package lns

// reuse.go extends the evaluator to remat.Problem.Reuse, the allocation
// planner's buffer reuse (remat.ReuseModel): a freed buffer waits on its
// key's free list for a later instance of the key, and stays allocated in
// between. The memory model is otherwise state.go's, with ends[i] holding
// each instance's buffer end instead of its death (deaths[i]):
//
//   - An instance's death is where liveness frees it (instanceEnd).
//   - Within one key, the instances form chains by the planner's rule: in
//     sequence order (a step's allocations in part order, then its deaths
//     in the order its node reads them, then its unread outputs), each
//     death pushes the instance's buffer onto the key's free list and each
//     allocation pops the most recently pushed buffer, if any. A chain is
//     the instances placed in one buffer.
//   - The buffer is allocated from its first instance to the last death of
//     a read instance in it; so an instance that a later one of its chain
//     follows holds its bytes up to the step before that one, and the
//     chain's read instance ends at its death. The instances after the
//     chain's last read one, and every instance of a chain that nothing
//     reads, hold it to the end of the sequence (the planner releases
//     nothing that nothing reads). The last instance of an output part has
//     a buffer of its own, kept to the end.
//
// A move changes the chains of the keys whose instances it adds, removes
// or frees elsewhere, and of the step after the one it inserts or removes
// (the step before a taker, where a waiting buffer ends, moves with it);
// endMove matches those keys again (rematch) and applies the changed ends
// as state.go applies any end: a range update of cross and the local term
// of the stages at both ends. computeLocal finds the instances that end
// at a held end, which no reader of theirs marks, in held.

import (
	"cmp"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// heldRef names an instance whose buffer end is not its death: part part
// of node node's computation in stage at.
type heldRef struct{ node, at, part int32 }

// event is an allocation or a death of an instance of one key, ordered as
// the planner sees them (before): by step, allocations first, then deaths
// at a reader in its read order, then unread outputs in part order.
type event struct {
	at    pos
	phase int8  // 0 allocation, 1 death at a reader, 2 death of an unread instance
	sub   int32 // part index, or the read slot
	inst  int32 // index into the key's instances
}

func (a event) cmp(b event) int {
	if a.at != b.at {
		if a.at.before(b.at) {
			return -1
		}
		return 1
	}
	if a.phase != b.phase {
		return cmp.Compare(a.phase, b.phase)
	}
	return cmp.Compare(a.sub, b.sub)
}

// initReuse numbers the problem's reuse keys: shared keys keep theirs,
// each part without one gets a key of its own that no other part takes,
// or the key of the part it is written over in place (remat.Problem
// InPlace: both without a key).
func (g *graph) initReuse(p *remat.Problem) {
	g.reuse = true
	np := int(g.partBase[g.n])
	g.key = make([]int32, np)
	g.inPlace = make([]int32, g.n)
	ids := map[int32]int32{}
	for i := range g.n {
		g.inPlace[i] = -1
		if p.InPlace != nil && p.InPlace[i].Node >= 0 {
			r := p.InPlace[i]
			g.inPlace[i] = g.partBase[r.Node] + r.Index
		}
		for j := range p.NumParts(i) {
			v := g.partBase[i] + int32(j)
			k := p.Reuse[i][j]
			id, ok := ids[k]
			switch {
			case k < 0 && j == 0 && g.inPlace[i] >= 0:
				id = g.key[g.inPlace[i]]
			case k < 0 || !ok:
				id = int32(len(g.keyParts))
				g.keyParts = append(g.keyParts, nil)
				g.shared = append(g.shared, k >= 0)
				if k >= 0 {
					ids[k] = id
				}
			}
			g.key[v] = id
			g.keyParts[id] = append(g.keyParts[id], v)
		}
	}
}

// death returns the death of part j of node i's k-th instance.
func (s *state) death(i int32, k int, j int32) pos {
	np := int(s.g.parts(i))
	if s.g.reuse {
		return s.deaths[i][k*np+int(j)]
	}
	return s.ends[i][k*np+int(j)]
}

// loadReuse sets every instance's death and buffer end from scratch
// (load, before cross is summed from the ends).
func (s *state) loadReuse() {
	g := s.g
	for i := range g.n {
		np := int(g.parts(int32(i)))
		d := s.deaths[i][:0]
		for k := range s.comp[i] {
			for j := range np {
				d = append(d, s.instanceEnd(int32(i), k, int32(j)))
			}
		}
		s.deaths[i] = d
		s.ends[i] = append(s.ends[i][:0], d...)
	}
	for t := range s.held {
		s.held[t] = s.held[t][:0]
	}
	for key := range g.keyParts {
		s.rematch(int32(key), true)
	}
}

// dirtyKey queues the key of part j of node i for rematch.
func (s *state) dirtyKey(i, j int32) {
	key := s.g.key[s.g.partBase[i]+j]
	if s.keyStamp[key] == s.stampID {
		return
	}
	s.keyStamp[key] = s.stampID
	s.dirtyKeys = append(s.dirtyKeys, key)
}

// touchNext queues the keys of the step after node i's place in stage t,
// where a move has just inserted or removed i: the step before that one,
// where a buffer waiting for it to take it ends, has changed.
func (s *state) touchNext(i, t int32) {
	xt := s.x[t]
	q, found := slices.BinarySearch(xt, i)
	if found {
		q++
	}
	if q < len(xt) {
		for j := range s.g.parts(xt[q]) {
			s.dirtyKey(xt[q], j)
		}
	}
}

// unhold removes the instance from held[stage]; it reports whether it was
// there.
func (s *state) unhold(i, at, j, stage int32) bool {
	if int(stage) >= s.g.n {
		return false
	}
	hs := s.held[stage]
	for q, h := range hs {
		if h == (heldRef{i, at, j}) {
			s.held[stage] = slices.Delete(hs, q, q+1)
			return true
		}
	}
	return false
}

// rematchDirty matches the queued keys again.
func (s *state) rematchDirty() {
	for _, key := range s.dirtyKeys {
		s.rematch(key, false)
	}
	s.dirtyKeys = s.dirtyKeys[:0]
}

// prev is the step before p in the sequence (p is not the first step).
func (s *state) prev(p pos) pos {
	xt := s.x[p.stage]
	if q := index(xt, p.node); q > 0 {
		return pos{p.stage, xt[q-1]}
	}
	return pos{p.stage - 1, p.stage - 1} // a stage ends with its own node
}

// keyInst is an instance of a key under rematch.
type keyInst struct {
	node, part int32
	k          int
	alloc      pos
	death      pos
	read       bool // something reads it, or it is a kept output
	pinned     bool
}

// rematch computes the chains of key and sets its instances' buffer ends:
// directly (load, before cross exists) or through setEnd.
func (s *state) rematch(key int32, direct bool) {
	g := s.g
	var insts []keyInst
	first := map[int32]int32{} // part → the index of its first instance
	ev := s.ev[:0]
	for _, v := range g.keyParts[key] {
		i := g.partNode[v]
		j := v - g.partBase[i]
		c := s.comp[i]
		first[v] = int32(len(insts))
		for k, a := range c {
			d := s.deaths[i][k*int(g.parts(i))+int(j)]
			at := pos{a, i}
			pinned := g.outPart[v] && k+1 == len(c)
			q := int32(len(insts))
			insts = append(insts, keyInst{node: i, part: j, k: k, alloc: at, death: d, read: d != at, pinned: pinned})
			ev = append(ev, event{at: at, phase: 0, sub: j, inst: q})
			switch {
			case pinned:
			case d == at:
				ev = append(ev, event{at: d, phase: 2, sub: j, inst: q})
			default:
				ev = append(ev, event{at: d, phase: 1, sub: int32(slices.Index(g.reads[d.node], v)), inst: q})
			}
		}
	}
	slices.SortFunc(ev, event.cmp)
	s.ev = ev
	// Chains: chains[b] lists the instances placed in buffer b, in order.
	bufOf := make([]int32, len(insts))
	taken := make([]bool, len(insts)) // written over in place: never listed
	var chains [][]int32
	free := s.buf[:0]
	for _, e := range ev {
		in := insts[e.inst]
		if e.phase != 0 {
			if g.shared[key] && !taken[e.inst] {
				free = append(free, bufOf[e.inst])
			}
			continue
		}
		b := int32(-1)
		if u := g.inPlace[in.node]; u >= 0 && in.part == 0 && !in.pinned {
			// The instance of u that this computation reads, when it
			// dies here.
			du := g.partNode[u]
			if ku := latestAtMost(s.comp[du], in.alloc.stage); ku >= 0 {
				x := first[u] + int32(ku)
				if insts[x].death == in.alloc {
					b, taken[x] = bufOf[x], true
				}
			}
		}
		if b < 0 && !in.pinned && g.shared[key] && len(free) > 0 {
			b = free[len(free)-1]
			free = free[:len(free)-1]
		}
		if b < 0 {
			b = int32(len(chains))
			chains = append(chains, nil)
		}
		bufOf[e.inst] = b
		chains[b] = append(chains[b], e.inst)
	}
	s.buf = free
	for _, ch := range chains {
		s.chainEnds(insts, ch, direct)
	}
}

// chainEnds sets the buffer ends of the instances of one chain. The buffer
// is allocated from its first instance to the last death of a read one
// (lastRead); when a later instance is written after that (it and those
// after it unread), the buffer is allocated again from that write to the
// end of the sequence. Each instance holds it up to the step before the
// next one's write, the one holding it at lastRead up to lastRead, and the
// last one to the end of the interval it is in.
func (s *state) chainEnds(insts []keyInst, ch []int32, direct bool) {
	n := int32(s.g.n)
	lastRead, anyRead := pos{}, false
	for _, x := range ch {
		if in := insts[x]; in.read {
			if !anyRead || lastRead.before(in.death) {
				lastRead, anyRead = in.death, true
			}
		}
	}
	// split: the first instance written after lastRead (len(ch): none).
	split := len(ch)
	if anyRead {
		for q, x := range ch {
			if lastRead.before(insts[x].alloc) {
				split = q
				break
			}
		}
	}
	for q, x := range ch {
		var end pos
		switch {
		case anyRead && q == split-1:
			end = lastRead
		case q+1 < len(ch):
			end = s.prev(insts[ch[q+1]].alloc)
		default:
			end = pos{n, 0}
		}
		s.place(insts[x], end, direct)
	}
}

// place sets an instance's buffer end and its entry in held.
func (s *state) place(in keyInst, end pos, direct bool) {
	d := in.death
	np := int(s.g.parts(in.node))
	e := &s.ends[in.node][in.k*np+int(in.part)]
	a := in.alloc.stage
	if direct {
		*e = end
	} else {
		old := *e
		was := s.unhold(in.node, a, in.part, old.stage)
		s.setEnd(in.node, in.k, in.part, end)
		if was != (end != d) {
			s.markDirty(old.stage)
			s.markDirty(end.stage)
		}
	}
	if end != d && int(end.stage) < s.g.n {
		s.held[end.stage] = append(s.held[end.stage], heldRef{in.node, a, in.part})
	}
}
