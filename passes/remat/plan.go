package remat

import (
	"fmt"
	"math/bits"
)

// Bits is a dense bit set, one row of a plan matrix.
type Bits []uint64

// NewBits returns a set that can hold 0 … n−1.
func NewBits(n int) Bits { return make(Bits, (n+63)/64) }

// Has reports whether i is in the set; false for any i the set cannot
// hold.
func (b Bits) Has(i int) bool {
	w := i >> 6
	return i >= 0 && w < len(b) && b[w]>>(uint(i)&63)&1 != 0
}

// Set adds i, which must be less than 64·len(b).
func (b Bits) Set(i int) { b[i>>6] |= 1 << (uint(i) & 63) }

// Clear removes i (a no-op for any i the set cannot hold).
func (b Bits) Clear(i int) {
	if w := i >> 6; i >= 0 && w < len(b) {
		b[w] &^= 1 << (uint(i) & 63)
	}
}

// Count is the number of elements.
func (b Bits) Count() int {
	c := 0
	for _, w := range b {
		c += bits.OnesCount64(w)
	}
	return c
}

// Next returns the least element at least i, or −1.
func (b Bits) Next(i int) int {
	if i < 0 {
		i = 0
	}
	w := i >> 6
	if w >= len(b) {
		return -1
	}
	x := b[w] >> (uint(i) & 63)
	if x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; w < len(b); w++ {
		if b[w] != 0 {
			return w<<6 + bits.TrailingZeros64(b[w])
		}
	}
	return -1
}

// Elems returns the elements in increasing order.
func (b Bits) Elems() []int {
	var out []int
	for i := b.Next(0); i >= 0; i = b.Next(i + 1) {
		out = append(out, i)
	}
	return out
}

// OpKind says what an Op does.
type OpKind uint8

const (
	// OpCompute runs a node, allocating its output (Algorithm 1's
	// "%r = compute v_k").
	OpCompute OpKind = iota + 1
	// OpFree deallocates a node's value (Algorithm 1's "deallocate %r").
	OpFree
)

func (k OpKind) String() string {
	switch k {
	case OpCompute:
		return "compute"
	case OpFree:
		return "free"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one statement of the execution plan of Algorithm 1 (§4.9).
type Op struct {
	Kind  OpKind
	Stage int32 // the stage t whose row of R and FREE the op belongs to
	Node  int32
}

func (o Op) String() string { return fmt.Sprintf("%s %d (stage %d)", o.Kind, o.Node, o.Stage) }

// Plan is a rematerialization schedule in Checkmate's frontier-advancing
// form (§4.2, §4.6): T = N stages, stage t computing node t for the first
// time. The matrices are lower triangular and stored densely, one Bits row
// per stage: R[t] and Free[t] hold nodes 0 … t, S[t] nodes 0 … t−1 (eq. 8b,
// 8c).
//
// Ops is the execution plan that Algorithm 1 emits from the matrices: for
// each stage in order, the computes of R[t] in increasing node order (its
// row-major scan), each followed by the frees FREE_{t,i,k} = 1 of its
// dependencies and itself; the frees are hoisted to right after the last
// use of each value (§4.9). Sequence is the compute order alone.
type Plan struct {
	// R[t] has node i when stage t computes it (R_{t,i}); R[t][t] is
	// always set (8a) and R[t][i] with i > t never (8c).
	R []Bits
	// S[t] has node i when i's value is retained from stage t−1 into stage
	// t (S_{t,i}: resident when stage t begins); i < t (8b).
	S []Bits
	// Free[t] has node i when stage t deallocates i's value: the sum over
	// k of FREE_{t,i,k} (eq. 5), which Theorem 4.1 makes 0 or 1. After
	// which node k it happens is the position of the free in Ops.
	Free []Bits
	// Ops is the execution plan of Algorithm 1 with hoisted frees.
	Ops []Op

	// Optimal reports that the solver proved no cheaper plan exists
	// within the budget.
	Optimal bool
	// LowerBound is a lower bound on the cost of any plan within the
	// budget, in seconds (at least Problem.LowerBoundSeconds when known;
	// 0 when the solver knows none).
	LowerBound float64
	// Gap is the relative optimality gap (cost − LowerBound) / cost, 0
	// when Optimal.
	Gap float64
	// Solver names the solver that made the plan.
	Solver string
}

// NewPlan returns an empty plan for n nodes: the lower-triangular rows of
// R, S and Free allocated, no bits set, no ops.
func NewPlan(n int) *Plan {
	pl := &Plan{R: make([]Bits, n), S: make([]Bits, n), Free: make([]Bits, n)}
	for t := range n {
		pl.R[t] = NewBits(t + 1)
		pl.S[t] = NewBits(t)
		pl.Free[t] = NewBits(t + 1)
	}
	return pl
}

// Sequence returns the nodes that Ops computes, in order, repeats
// included: the execution order that the exporter writes and that the
// memory model runs (Mapping.Sequence gives the ir nodes).
func (pl *Plan) Sequence() []int32 {
	var seq []int32
	for _, op := range pl.Ops {
		if op.Kind == OpCompute {
			seq = append(seq, op.Node)
		}
	}
	return seq
}

// Cost is the objective (1a): the sum of C_i over every computation in
// Ops, in seconds.
func (pl *Plan) Cost(p *Problem) float64 {
	s := 0.0
	for _, op := range pl.Ops {
		if op.Kind == OpCompute && int(op.Node) < len(p.Seconds) && op.Node >= 0 {
			s += p.Seconds[op.Node]
		}
	}
	return s
}

// Stages returns, for each stage, the nodes that R computes in it, in
// increasing order.
func (pl *Plan) Stages() [][]int32 {
	out := make([][]int32, len(pl.R))
	for t, row := range pl.R {
		for i := row.Next(0); i >= 0; i = row.Next(i + 1) {
			out[t] = append(out[t], int32(i))
		}
	}
	return out
}
