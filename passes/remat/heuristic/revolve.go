// The griewank solvers: implements binomial checkpointing, the REVOLVE
// procedure of Griewank & Walther (2000), "Algorithm 799: Revolve", as the
// baseline "Griewank et al. log n" of Checkmate (Jain et al. 2020) Table 1
// and §6.1: reversing a chain of l steps with s checkpoint slots at the
// least number of recomputed steps, with s = ⌈log₂ l⌉ slots, so O(log n)
// memory for O(log n) recomputations of each step at most.
//
// # Which graphs qualify
//
// Revolve reverses a forward pass: it is defined on training chains, the
// linear training graphs of Checkmate §4.6 (solvertest.LinearNetwork): a
// forward chain 0 … ℓ ending in the loss ℓ, each node reading only its
// predecessor, then backward nodes ℓ+1 … N−1, each reading its predecessor
// (the gradient) and otherwise only forward nodes. The steps reversed are
// the forward nodes, the state before step 0 being the graph's inputs
// (always resident, so recomputation may start there); the first backward
// node that reads a forward node is when that node's reversal is due.
// When the backward pass reads the forward nodes in reverse order, as
// backpropagation does, the plan recomputes exactly revolve's optimal
// number of steps for its slots; in another order it is still legal.
//
// On other graphs the solver does what still makes sense:
//   - A chain or any graph without a backward part (an inference graph, as
//     the shared shape analysis in keep.go decides) has nothing to
//     reverse: every node is computed once and kept until its last reader
//     (on a chain, two values at a time), and the plan is returned if it
//     fits the budget.
//   - A training graph that is not a chain is reversed along its
//     topological order, the linearized form of Checkmate App. B.2: a
//     recomputation that needs values other than its predecessor
//     recomputes them too (Algorithm 2's repairs, §5.2), so the plan is
//     legal but the step counts are no longer Griewank & Walther's.
//
// The progress note says which case applied. Nodes that may not be
// recomputed and graph outputs are always kept, outside the slot count.

package heuristic

import (
	"context"
	"fmt"
	"math"
	"math/bits"

	"github.com/remat-compile/remat/passes/remat"
)

// Name is the solver's name.
const revolveName = "griewank-logn"

// Revolve is binomial checkpointing with ⌈log₂ l⌉ slots.
var Revolve = remat.Solver{
	Name:  revolveName,
	Doc:   "Griewank & Walther (2000) REVOLVE: binomial checkpointing of a training chain with ⌈log₂ n⌉ checkpoint slots, O(log n) memory (other training graphs via their topological order).",
	Solve: revolveSolve,
}

func revolveSolve(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", revolveName, err)
	}
	sh := analyze(p)
	tr := newTracker(p, revolveName, progress)
	k := newKeeps(sh.n)
	var note string
	if !sh.training {
		for v := range sh.n {
			k.keep(v, v+1, int(sh.lastRead[v]))
		}
		note = "no backward part to reverse: every value kept until its last reader"
	} else {
		rv := newRevolver(sh)
		rv.reverse(0, rv.l, rv.slots, true)
		rv.keeps(k)
		note = fmt.Sprintf("%d forward steps reversed with %d checkpoint slots", rv.l-1, rv.slots)
		if !sh.linear {
			note += " along the topological order (not a training chain: the linearized form, Checkmate App. B.2)"
		}
	}
	c, err := sh.build(p, k)
	if err != nil {
		return nil, err
	}
	tr.offer(c, note)
	return tr.result(nil)
}

// none marks a position no backward node reads.
const none = math.MaxInt32

// revolver holds the state of one reversal. Positions 0 … l−1 are the
// states of the forward pass: position 0 is the graph's inputs, position
// q ≥ 1 the value of forward node q−1.
type revolver struct {
	sh    *shape
	l     int
	slots int
	// first[q] is the first backward node that reads position q (none when
	// no backward node does): the stage at which its reversal is due.
	first []int32
	// stored[q] is the stage at which position q is (re)computed and
	// stored for its reversal, none when never.
	stored []int32
}

func newRevolver(sh *shape) *revolver {
	l := sh.fwdEnd + 2
	rv := &revolver{sh: sh, l: l, slots: max(1, bits.Len(uint(l-1))), first: make([]int32, l), stored: make([]int32, l)}
	for q := range l {
		rv.first[q], rv.stored[q] = none, none
		if q == 0 {
			continue
		}
		for _, j := range sh.readers[q-1] {
			if int(j) > sh.fwdEnd {
				rv.first[q] = j
				break
			}
		}
	}
	return rv
}

// due is the first stage at which some position in [a, b) is read by the
// backward pass, none when none is.
func (rv *revolver) due(a, b int) int32 {
	d := int32(none)
	for q := a; q < b; q++ {
		d = min(d, rv.first[q])
	}
	return d
}

// store records that position q is computed and kept at stage t: on the
// spine (the first forward sweep) that is its own stage, else the stage at
// which the reversal of its range is due.
func (rv *revolver) store(q int, t int32) {
	if t != none {
		rv.stored[q] = t
	}
}

// reverse reverses positions [a, b) with s free slots; position a is
// stored (or is the inputs). spine reports that the positions are being
// computed for the first time by the forward sweep, so advancing through
// them costs nothing extra. As in revolve, the procedure advances from a
// to a+j (j from split), stores a+j, reverses [a+j, b) with s−1 slots and
// then [a, a+j) with s; with no free slot, each position from b−1 down to
// a+1 is advanced to from a when its reversal is due.
func (rv *revolver) reverse(a, b, s int, spine bool) {
	for b-a >= 2 {
		if !spine && rv.due(a+1, b) == none {
			return
		}
		if s == 0 {
			for q := b - 1; q > a; q-- {
				if spine && q == b-1 {
					rv.store(q, int32(q-1))
				} else {
					rv.store(q, rv.first[q])
				}
			}
			return
		}
		m := a + split(b-a, s)
		if spine {
			rv.store(m, int32(m-1))
		} else {
			rv.store(m, rv.due(m, b))
		}
		rv.reverse(m, b, s-1, spine)
		b, spine = m, false
	}
}

// keeps states the reversal as keep spans: forward node v = q−1 is kept
// for its forward readers, and from the stage at which it is stored until
// its last reader (recomputations included); backward nodes are kept
// until their last reader.
func (rv *revolver) keeps(k *keeps) {
	sh := rv.sh
	for v := range sh.n {
		if v > sh.fwdEnd {
			k.keepToLast(v, v+1, int(sh.lastRead[v]))
			continue
		}
		lastFwd := -1
		for _, j := range sh.readers[v] {
			if int(j) <= sh.fwdEnd {
				lastFwd = int(j)
			}
		}
		k.keep(v, v+1, lastFwd)
		if t := rv.stored[v+1]; t != none {
			k.keepToLast(v, int(t)+1, int(sh.lastRead[v]))
		}
	}
}

// binom is β(s, r) = C(s+r, s), the number of steps that s checkpoints
// reverse with at most r recomputations of each (Griewank & Walther
// 2000), saturating at 2⁴⁰; 0 for negative arguments.
func binom(s, r int) int {
	if s < 0 || r < 0 {
		return 0
	}
	k, c := min(s, r), 1
	for i := 1; i <= k; i++ {
		c = c * (s + r - k + i) / i
		if c >= 1<<40 {
			return 1 << 40
		}
	}
	return c
}

// split returns how far revolve advances before storing, for a range of l
// ≥ 2 positions (one stored) and s ≥ 1 free slots: with r the least
// repetition number such that β(s+1, r) ≥ l, the largest j with
// j + T(l−j, s−1) + T(j, s) = T(l, s), T the least number of recomputed
// steps, which is min(β(s+1, r−1), l − β(s, r−1)). (TestSplitIsOptimal
// checks it against the dynamic program for T.)
func split(l, s int) int {
	r := 0
	for binom(s+1, r) < l {
		r++
	}
	j := min(binom(s+1, r-1), l-binom(s, r-1))
	return min(max(j, 1), l-1)
}
