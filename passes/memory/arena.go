package memory

import (
	"fmt"
	"slices"
)

// bfcArena replays allocations through a model of ONNX Runtime's CPU
// arena (BFCArena, bfc_arena.cc, default configuration: 1 MiB initial
// region, kNextPowerOfTwo growth, 128 MiB max dead bytes per chunk):
//
//   - a request is rounded up to a multiple of 256 bytes;
//   - it takes the smallest free chunk at least that large (ties: the lower
//     address; the bins BFCArena searches partition chunks by size, so its
//     bin-by-bin search finds the same chunk);
//   - the chunk is split, the rest staying free, only when it is at least
//     twice the rounded request or exceeds it by 128 MiB; otherwise the
//     whole chunk is handed out and counted in use;
//   - when no free chunk fits, the arena adds a region: the current region
//     size (starting at 1 MiB) doubled until it holds the request, and
//     doubled once more for the next region when it needed no doubling;
//   - a freed chunk merges with free neighbours in its region.
//
// Regions are separate system allocations, never merged; the model places
// each new region below the previous ones in the address space (glibc maps
// large blocks top-down), which decides only ties between equal-size free
// chunks of different regions.
type bfcArena struct {
	chunks []chunk
	free   []int32 // handles of free chunks
	cur    int64   // curr_region_allocation_bytes_
	inUse  int64
	nreg   int32
}

type chunk struct {
	region     int32
	off, size  int64
	inUse      bool
	prev, next int32 // neighbours in the region, -1 none
	dead       bool  // merged away
}

const (
	arenaInitialRegion = 1 << 20
	arenaMaxDeadBytes  = 128 << 20
)

func newBFCArena() *bfcArena { return &bfcArena{cur: arenaInitialRegion} }

func (a *bfcArena) clone() *bfcArena {
	c := *a
	c.chunks = slices.Clone(a.chunks)
	c.free = slices.Clone(a.free)
	return &c
}

// before orders chunks by address: later regions lie lower.
func (a *bfcArena) before(x, y int32) bool {
	cx, cy := &a.chunks[x], &a.chunks[y]
	if cx.region != cy.region {
		return cx.region > cy.region
	}
	return cx.off < cy.off
}

// alloc returns the chunk handed out for a request of n bytes (n > 0).
func (a *bfcArena) alloc(n int64) int32 {
	r := ArenaRound(n)
	best := a.bestFit(r)
	if best < 0 {
		a.extend(r)
		best = a.bestFit(r)
	}
	c := &a.chunks[a.free[best]]
	h := a.free[best]
	a.free = append(a.free[:best], a.free[best+1:]...)
	if c.size >= 2*r || c.size-r >= arenaMaxDeadBytes {
		rest := chunk{region: c.region, off: c.off + r, size: c.size - r, prev: h, next: c.next}
		c.size = r
		a.chunks = append(a.chunks, rest)
		nh := int32(len(a.chunks) - 1)
		c = &a.chunks[h]
		if rest.next >= 0 {
			a.chunks[rest.next].prev = nh
		}
		c.next = nh
		a.free = append(a.free, nh)
	}
	c.inUse = true
	a.inUse += c.size
	return h
}

// bestFit returns the index in a.free of the smallest free chunk of at
// least r bytes (ties: lowest address), or -1.
func (a *bfcArena) bestFit(r int64) int {
	best := -1
	for i, h := range a.free {
		c := &a.chunks[h]
		if c.size < r {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := &a.chunks[a.free[best]]
		if c.size < b.size || (c.size == b.size && a.before(h, a.free[best])) {
			best = i
		}
	}
	return best
}

func (a *bfcArena) extend(r int64) {
	grew := false
	for r > a.cur {
		a.cur *= 2
		grew = true
	}
	size := a.cur
	if !grew {
		a.cur *= 2
	}
	a.chunks = append(a.chunks, chunk{region: a.nreg, size: size, prev: -1, next: -1})
	a.nreg++
	a.free = append(a.free, int32(len(a.chunks)-1))
}

// release frees chunk h and merges it with free neighbours.
func (a *bfcArena) release(h int32) {
	c := &a.chunks[h]
	c.inUse = false
	a.inUse -= c.size
	if n := c.next; n >= 0 && !a.chunks[n].inUse {
		a.unfree(n)
		a.merge(h, n)
	}
	if p := a.chunks[h].prev; p >= 0 && !a.chunks[p].inUse {
		a.unfree(p)
		a.merge(p, h)
		h = p
	}
	a.free = append(a.free, h)
}

func (a *bfcArena) unfree(h int32) {
	for i, x := range a.free {
		if x == h {
			a.free = append(a.free[:i], a.free[i+1:]...)
			return
		}
	}
}

// merge folds chunk y into its left neighbour x.
func (a *bfcArena) merge(x, y int32) {
	cx, cy := &a.chunks[x], &a.chunks[y]
	cx.size += cy.size
	cx.next = cy.next
	if cy.next >= 0 {
		a.chunks[cy.next].prev = x
	}
	cy.dead = true
}

// CheckPreamble reports the first request of an Options.Preamble list
// that releases something other than an earlier allocation still held.
func CheckPreamble(reqs []ArenaRequest) error {
	held := make([]bool, len(reqs))
	for i, r := range reqs {
		if r.Bytes > 0 {
			held[i] = true
			continue
		}
		if r.Free < 0 || r.Free >= i || !held[r.Free] {
			return fmt.Errorf("preamble request %d releases request %d, which is not an earlier allocation still held", i, r.Free)
		}
		held[r.Free] = false
	}
	return nil
}

// preamble replays Options.Preamble's requests reqs through a.
func preamble(a *bfcArena, reqs []ArenaRequest) error {
	if err := CheckPreamble(reqs); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	handles := make([]int32, len(reqs))
	for i, r := range reqs {
		if r.Bytes > 0 {
			handles[i] = a.alloc(r.Bytes)
		} else {
			a.release(handles[r.Free])
		}
	}
	return nil
}
