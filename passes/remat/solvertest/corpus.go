package solvertest

import (
	"fmt"
	"math/rand/v2"

	"github.com/remat-compile/remat/passes/remat"
)

// Case is one problem of the conformance corpus.
type Case struct {
	Name    string
	Problem *remat.Problem
	// Budgets lists the budgets, in bytes, to solve the problem at. When
	// nil the suite derives them from the problem: one byte below the least
	// peak of any plan (infeasible), the least peak, two budgets between it
	// and checkpoint-all's peak, and checkpoint-all's peak.
	Budgets []int64
}

// spec describes a small problem; nil slices take unit values.
type spec struct {
	names   []string
	deps    [][]int32
	seconds []float64 // nil: 1 second each
	bytes   []int64   // nil: 1 byte each
	nonrec  []int32
	outputs []int32 // nil: the last node
}

func (s spec) problem() *remat.Problem {
	n := len(s.deps)
	p := &remat.Problem{
		Deps:         s.deps,
		Seconds:      make([]float64, n),
		Bytes:        make([]int64, n),
		Recomputable: make([]bool, n),
		Outputs:      s.outputs,
		BudgetBytes:  remat.NoBudget,
		Names:        s.names,
	}
	for i := range n {
		p.Seconds[i], p.Bytes[i], p.Recomputable[i] = 1, 1, true
		if s.seconds != nil {
			p.Seconds[i] = s.seconds[i]
		}
		if s.bytes != nil {
			p.Bytes[i] = s.bytes[i]
		}
		if p.Deps[i] == nil {
			p.Deps[i] = []int32{}
		}
	}
	for _, i := range s.nonrec {
		p.Recomputable[i] = false
	}
	if p.Outputs == nil && n > 0 {
		p.Outputs = []int32{int32(n - 1)}
	}
	return p
}

// Chain is a path of n nodes, unit costs and sizes: node i reads i−1.
func Chain(n int) *remat.Problem {
	deps := make([][]int32, n)
	for i := 1; i < n; i++ {
		deps[i] = []int32{int32(i - 1)}
	}
	return spec{deps: deps}.problem()
}

// KumarFigure1 is the graph of Kumar et al. (2019) Figure 1: A→B, B→C,
// {B,C}→D, {A,D}→E, every output one byte. ⟨A,B,C,D,E⟩ peaks at 4 bytes,
// ⟨A,B,C,D,A,E⟩ at 3.
func KumarFigure1() *remat.Problem {
	return spec{
		names: []string{"A", "B", "C", "D", "E"},
		deps:  [][]int32{{}, {0}, {1}, {1, 2}, {0, 3}},
	}.problem()
}

// LinearNetwork is Checkmate's linear training graph of forward layers
// (gen_linear_graph in the Checkmate sources; §4.6 uses 8 layers, n = 17):
// forward nodes 0 … layers−1 in a chain, the loss node layers, then the
// backward nodes, each reading the one before it, and backward node
// 2·layers−i also reading forward node i. Unit costs and sizes; the last
// backward node is the output.
func LinearNetwork(layers int) *remat.Problem {
	n := 2*layers + 1
	deps := make([][]int32, n)
	names := make([]string, n)
	for i := range n {
		switch {
		case i < layers:
			names[i] = fmt.Sprintf("f%d", i)
		case i == layers:
			names[i] = "loss"
		default:
			names[i] = fmt.Sprintf("b%d", 2*layers-i)
		}
		if i > 0 {
			deps[i] = append(deps[i], int32(i-1))
		}
		if i > layers && 2*layers-i < i-1 {
			deps[i] = append([]int32{int32(2*layers - i)}, deps[i]...)
		}
	}
	return spec{names: names, deps: deps}.problem()
}

// RandomDAG is a seeded random problem of n nodes: each node reads one to
// three earlier nodes (mostly recent ones), sizes of 1 to 6 bytes, costs
// in halves of a second from 0.5 to 4 (sums are exact), about one node in
// ten not recomputable, and the last node plus some other sinks as
// outputs. The same seed always gives the same problem.
func RandomDAG(seed uint64, n int) *remat.Problem {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	s := spec{deps: make([][]int32, n), seconds: make([]float64, n), bytes: make([]int64, n)}
	used := make([]bool, n)
	for i := range n {
		s.seconds[i] = float64(1+r.IntN(8)) / 2
		s.bytes[i] = int64(1 + r.IntN(6))
		if i == 0 {
			continue
		}
		want := 1 + r.IntN(min(i, 3))
		picked := map[int32]bool{}
		for len(picked) < want {
			var d int
			if r.IntN(10) < 6 {
				d = i - 1 - r.IntN(min(i, 2))
			} else {
				d = r.IntN(i)
			}
			picked[int32(d)] = true
		}
		for d := range int32(i) {
			if picked[d] {
				s.deps[i] = append(s.deps[i], d)
				used[d] = true
			}
		}
		if r.IntN(10) == 0 {
			s.nonrec = append(s.nonrec, int32(i))
		}
	}
	for i := range n - 1 {
		if !used[i] && r.IntN(2) == 0 {
			s.outputs = append(s.outputs, int32(i))
		}
	}
	s.outputs = append(s.outputs, int32(n-1))
	return s.problem()
}

// Corpus returns the conformance problems, in a stable order: chains,
// diamonds, residual blocks, U-Net-like long skips, Kumar et al.'s
// Figure 1, Checkmate's linear networks (§4.6), non-recomputable nodes,
// multi-output nodes (the Parts refinement), zero costs and sizes, several
// outputs, and seeded random DAGs of up to 12 nodes.
func Corpus() []Case {
	var cs []Case
	add := func(name string, p *remat.Problem, budgets ...int64) {
		cs = append(cs, Case{Name: name, Problem: p, Budgets: budgets})
	}
	add("chain-8", Chain(8))
	add("chain-weighted", spec{
		deps:    [][]int32{{}, {0}, {1}, {2}, {3}, {4}},
		seconds: []float64{4, 1, 3, 0.5, 2, 1},
		bytes:   []int64{2, 5, 1, 4, 3, 2},
	}.problem())
	add("diamond", spec{
		deps:  [][]int32{{}, {0}, {0}, {1, 2}},
		bytes: []int64{2, 3, 1, 2},
	}.problem())
	add("residual-blocks", spec{
		// Two residual blocks: add1 = x + b(a(x)), add2 = add1 + d(c(add1)).
		names:   []string{"x", "a", "b", "add1", "c", "d", "add2", "out"},
		deps:    [][]int32{{}, {0}, {1}, {0, 2}, {3}, {4}, {3, 5}, {6}},
		seconds: []float64{1, 2, 2, 0.5, 2, 2, 0.5, 1},
		bytes:   []int64{2, 2, 2, 2, 2, 2, 2, 1},
	}.problem())
	add("unet", spec{
		names: []string{"e1", "e2", "e3", "mid", "d3", "d2", "d1", "out"},
		// Encoder halves, decoder doubles; each decoder level reads the
		// encoder level of the same size (long skips).
		deps:    [][]int32{{}, {0}, {1}, {2}, {2, 3}, {1, 4}, {0, 5}, {6}},
		seconds: []float64{1, 1, 1, 1, 1, 1, 1, 1},
		bytes:   []int64{8, 4, 2, 1, 2, 4, 8, 1},
	}.problem())
	add("kumar-figure1", KumarFigure1(), 2, 3, 4)
	add("linear-4", LinearNetwork(4))
	add("checkmate-linear-8", LinearNetwork(8), 4, 5, 6)
	add("nonrec-chain", spec{
		deps:   [][]int32{{}, {0}, {1}, {2}, {3}, {1, 4}},
		bytes:  []int64{1, 3, 1, 1, 1, 1},
		nonrec: []int32{1},
	}.problem())
	add("nonrec-source", spec{
		deps:   [][]int32{{}, {0}, {1}, {2}, {0, 3}},
		nonrec: []int32{0},
	}.problem())
	add("split", spec{
		// Node 1 has two outputs of 3 bytes: part 0 is read at once, part 1
		// only by the last node.
		names: []string{"x", "split", "a", "b", "c", "join"},
		deps:  [][]int32{{}, {0}, {1}, {2}, {3}, {1, 4}},
		bytes: []int64{2, 6, 2, 2, 2, 1},
	}.refine([][]int64{1: {3, 3}}, map[int][]remat.Part{2: {pt(1, 0)}, 5: {pt(1, 1), pt(4, 0)}}, nil))
	add("dropout-mask", spec{
		// A random node with an output and a mask; the mask is read only by
		// the backward-like node 4, the output is also a graph output.
		names:   []string{"x", "dropout", "h", "y", "grad"},
		deps:    [][]int32{{}, {0}, {1}, {2}, {1, 3}},
		bytes:   []int64{2, 5, 2, 2, 2},
		nonrec:  []int32{1},
		outputs: []int32{3, 4},
	}.refine([][]int64{1: {4, 1}}, map[int][]remat.Part{2: {pt(1, 0)}, 4: {pt(1, 1), pt(3, 0)}}, nil))
	add("zeros", spec{
		deps:    [][]int32{{}, {0}, {1}, {0, 2}, {3}, {1, 4}},
		seconds: []float64{0, 1, 0, 2, 0, 1},
		bytes:   []int64{3, 0, 2, 0, 1, 2},
	}.problem())
	add("two-outputs", spec{
		deps:    [][]int32{{}, {0}, {1}, {0}, {3}, {2, 4}},
		bytes:   []int64{1, 2, 1, 2, 1, 1},
		outputs: []int32{2, 5},
	}.problem())
	add("training-3", spec{
		// LinearNetwork(3) with layers of different costs and sizes.
		deps:    LinearNetwork(3).Deps,
		seconds: []float64{3, 1, 2, 0.5, 1, 2, 4},
		bytes:   []int64{4, 1, 3, 1, 2, 2, 1},
	}.problem())
	for seed := uint64(1); seed <= 14; seed++ {
		n := 5 + int(seed)%8
		add(fmt.Sprintf("random-%d-n%d", seed, n), RandomDAG(seed, n))
	}
	// Costs that are not exact binary fractions, to exercise tolerances.
	irr := RandomDAG(99, 9)
	for i := range irr.Seconds {
		irr.Seconds[i] = 0.1 * float64(i+3) / 3
	}
	add("random-irrational-costs", irr)
	return cs
}

// refine adds the multi-output refinement: parts per node, the parts each
// node reads (others read every part), and the output parts (nil: all).
func (s spec) refine(parts [][]int64, reads map[int][]remat.Part, outParts []remat.Part) *remat.Problem {
	p := s.problem()
	p.Parts = make([][]int64, p.N())
	copy(p.Parts, parts)
	p.Reads = make([][]remat.Part, p.N())
	for i, r := range reads {
		p.Reads[i] = r
	}
	p.OutputParts = outParts
	return p
}

func pt(node, index int32) remat.Part { return remat.Part{Node: node, Index: index} }
