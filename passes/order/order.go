// Package order chooses the execution order of a graph's nodes that
// minimises its peak memory under a memory model's options (a target's
// preset, such as ort.Memory() of targets/ort).
//
// # Objectives
//
// The peak of an order is memory.Simulate's PeakBytes under the caller's
// memory.Options, and every order this package returns or compares is
// measured that way. The searches work on the downset objective: the
// peak that memory.Simulate gives under the same options with planner
// reuse, the arena replay and holds switched off (Options.Reuse, Arena,
// Holds). Under those options the bytes in use after a set of nodes has
// run depend only on that set (a downset of the dependency graph), not on
// the order it ran in:
//
//   - a value holds its buffer from its producer until its last reader,
//     a graph output to the end;
//   - views (Options.Aliasing) share their input's buffer, which is
//     allocated while any produced member of the buffer has a reader to
//     come; which values are views is fixed by the graph;
//   - an in-place write (Options.InPlace) happens when the input's other
//     readers have all run and no other member of its buffer is still
//     needed, both facts about the set of nodes done; the output then
//     holds a buffer of exactly its input's bytes, so the bytes after the
//     step are the same as with a fresh buffer, and only the step's own
//     bytes differ, again by a function of the set;
//   - alignment, the constant term and the per-node workspace
//     (Options.Workspace) do not depend on the order at all.
//
// So a step's bytes (memory.Result.During) are a function of the set
// before it and the node it runs, and the peak of an order is the largest
// of them along a path through the lattice of downsets: a bottleneck
// shortest-path problem over downsets. The exact search solves it (it is
// exact for the downset objective, Result.Optimal); the heuristic searches
// approximate it. What the downset objective leaves out depends on the
// history, not the set: ONNX Runtime's planner holds a freed buffer for
// the next output of the same shape (Reuse), the BFC arena hands out
// chunks that depend on every earlier allocation (Arena), and an
// exporter's helper nodes hold values (Holds). The candidates are
// therefore compared, and polished by local search, with memory.Simulate
// under the full options; Result.Peak is that number and Result.Bound the
// downset objective of the chosen order.
//
// # Method
//
//  1. The nodes are split at their sequence points, nodes that every other
//     node precedes or follows (in a CNN, every node on the trunk between
//     inception modules or residual blocks). The downset objective splits
//     there: each segment is ordered on its own (Kayaaslan et al. 2018 use
//     the same series decomposition for series-parallel graphs).
//  2. Each segment is ordered by a beam search over downsets (Options.Beam
//     states per depth, fewest bytes allocated and then least peak so far
//     first; width 1 is the greedy list scheduler), which is exact when no
//     state had to be cut, and, when it was cut, also by runs along chains
//     in the manner of Liu's tree algorithm (segmentsFirst); the lower
//     peak wins.
//  3. A segment whose beam was cut is searched exactly, best first over
//     its downsets (least peak so far first), each downset keeping only
//     its best path, and cut at the beam's peak: either an order strictly
//     better than the beam's is found (the first complete downset taken
//     is optimal) or the beam's order is proved optimal. The search gives
//     up after Options.MaxStates states in all.
//  4. The file order and the searched order are measured with
//     memory.Simulate under the full options; from the better of them a
//     local search moves blocks of nodes across the peak step (a value
//     allocated at the peak whose producer can run later, or whose last
//     reader can run earlier, moved with the nodes it drags along), and
//     keeps a move when the full-options profile improves (the steps'
//     bytes sorted from the highest down, compared lexicographically: the
//     peak first, then the next-highest step, and so on), for at most
//     Options.MaxEvals simulations.
//
// Every choice is deterministic: the same graph and options give the
// same order. Nodes whose op is random, stateful or unknown (opaque
// nodes) keep their relative file order; a node with subgraphs must run
// after everything its subgraphs capture (its implicit inputs). Constant
// nodes under memory.Options.ConstantsAsParams allocate nothing and run
// first, in file order, as ONNX Runtime does with them.
package order

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/memory"
)

// Options bound the searches. The zero value selects the defaults.
type Options struct {
	// MaxStates bounds the states the exact search creates over all
	// segments (default 200000; each holds one bit per node of its
	// segment). Negative: no exact search.
	MaxStates int
	// Beam is the beam search's width (default 16, narrowing on segments
	// of more than 512 nodes to 16·512/n, at least 2, so that the work
	// stays linear in the segment's size).
	Beam        int
	beamDefault bool
	// MaxEvals bounds the simulations of the local search (default 400;
	// negative: no local search).
	MaxEvals int
	// MaxExactNodes is the largest segment the exact search is tried on
	// (default 4096).
	MaxExactNodes int
}

func (o Options) withDefaults() Options {
	if o.MaxStates == 0 {
		o.MaxStates = 200000
	}
	if o.Beam <= 0 {
		o.Beam, o.beamDefault = 16, true
	}
	if o.MaxEvals == 0 {
		o.MaxEvals = 400
	}
	if o.MaxExactNodes == 0 {
		o.MaxExactNodes = 4096
	}
	return o
}

// Result is the chosen order.
type Result struct {
	// Seq is every node of the graph once, in a topological order.
	Seq []*ir.Node
	// Peak is memory.Simulate's PeakBytes of Seq under the options given
	// to Best; FilePeak that of the file order (g.Nodes). Peak <= FilePeak.
	Peak, FilePeak int64
	// Bound is the peak of Seq under the downset objective (the options
	// without Reuse, Arena and Holds; see the package doc), and Optimum
	// the least peak any order has under it when Optimal is set (else the
	// best found).
	Bound, Optimum int64
	// Optimal reports that the search proved Optimum minimal under the
	// downset objective. When the options have no Reuse, Arena or Holds,
	// the downset objective is the full one and Peak == Optimum.
	Optimal bool
	// Segments is the number of segments the graph split into, States the
	// search states used, Evals the local search's simulations and Moves
	// the moves it kept.
	Segments, States, Evals, Moves int
}

// Downset returns the options of the downset objective: opts without
// planner reuse, arena replay and holds, under which a step's bytes
// depend only on the set of nodes done before it.
func Downset(opts memory.Options) memory.Options {
	opts.Reuse, opts.Arena, opts.Holds = false, false, nil
	return opts
}

// Best returns the order of g's nodes (the root graph or a subgraph; the
// subgraphs of its nodes keep their own order) that has the least peak
// under mem among those it finds. It fails when a size is unknown
// (memory.SizeError), when the graph is not in a topological order, or
// when ctx is done (with the context's error).
func Best(ctx context.Context, g *ir.Graph, mem memory.Options, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	file, err := memory.Simulate(g, g.Nodes, mem)
	if err != nil {
		return nil, fmt.Errorf("order: %w", err)
	}
	down := Downset(mem)
	fileDown, err := memory.Simulate(g, g.Nodes, down)
	if err != nil {
		return nil, fmt.Errorf("order: %w", err)
	}
	p := newProblem(g, down, fileDown.ConstBytes)
	res := &Result{FilePeak: file.PeakBytes}

	// Segments: beam, then exact where the beam was cut.
	ends := p.segments()
	res.Segments = len(ends)
	seq := slices.Clone(p.pre)
	var peak, live int64
	optimal := true
	lo := int32(0)
	for _, hi := range ends {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w := p.window(lo, hi, live)
		width := opts.Beam
		if n := int(hi - lo); opts.beamDefault && n > 512 {
			width = max(2, width*512/n)
		}
		out := w.beam(width)
		res.States += out.states
		if !out.exact {
			if r := w.segmentsFirst(); r.peak < out.peak {
				out = r
			}
		}
		if out.peak <= w.floor() {
			out.exact = true
		}
		if budget := opts.MaxStates - res.States; !out.exact && budget > 0 && int(hi-lo) <= opts.MaxExactNodes {
			ex, ok := w.exact(out.peak, budget)
			res.States += ex.states
			switch {
			case ok && ex.seq != nil:
				out = ex // strictly better than the beam, and optimal
			case ok:
				out.exact = true // nothing beats the beam's order
			}
		}
		optimal = optimal && out.exact
		for _, v := range out.seq {
			seq = append(seq, p.nodes[v])
		}
		peak = max(peak, out.peak)
		live = out.live
		lo = hi
	}
	res.Optimal = optimal
	res.Optimum = p.constBytes + max(peak, p.preWS)

	// Full options: the searched order against the file order (with the
	// pre nodes first, which changes no step's bytes but theirs), then the
	// local searches from the better.
	fileSeq := slices.Clone(p.pre)
	fileSeq = append(fileSeq, p.nodes...)
	cur, curRes := fileSeq, file
	if r, err := memory.Simulate(g, fileSeq, mem); err != nil {
		return nil, fmt.Errorf("order: internal error: %w", err)
	} else if !better(file, r) {
		curRes = r
	} else {
		cur, curRes = g.Nodes, file
	}
	if r, err := memory.Simulate(g, seq, mem); err != nil {
		return nil, fmt.Errorf("order: internal error: the searched order does not simulate: %w", err)
	} else if better(r, curRes) {
		cur, curRes = seq, r
	}
	cur = slices.Clone(cur)
	if opts.MaxEvals > 0 && len(p.pre) == 0 || opts.MaxEvals > 0 && slices.Equal(cur[:len(p.pre)], p.pre) {
		var evals, moves int
		cur, curRes, evals, moves, err = permute(ctx, g, p, ends, cur, curRes, mem, opts.MaxEvals)
		if err != nil {
			return nil, err
		}
		res.Evals += evals
		res.Moves += moves
	}
	if left := opts.MaxEvals - res.Evals; left > 0 {
		var evals, moves int
		cur, curRes, evals, moves, err = improve(ctx, g, cur, curRes, mem, left)
		if err != nil {
			return nil, err
		}
		res.Evals += evals
		res.Moves += moves
	}
	res.Seq, res.Peak = cur, curRes.PeakBytes
	b, err := memory.Simulate(g, cur, down)
	if err != nil {
		return nil, fmt.Errorf("order: internal error: %w", err)
	}
	res.Bound = b.PeakBytes
	if res.Bound < res.Optimum {
		// The local search found an order that the searches missed; it can
		// only happen when they were not exact.
		if res.Optimal {
			return nil, errors.New("order: internal error: an order beats the proved optimum of the downset objective")
		}
		res.Optimum = res.Bound
	}
	return res, nil
}

// better orders simulation results by their steps' bytes sorted from
// the highest down, compared lexicographically (leximax): the lower peak
// first, then the lower next-highest step, and so on. When the peak is
// held by a step that no order changes (a trunk node), the order still
// improves the rest of the graph.
func better(a, b *memory.Result) bool {
	if a.PeakBytes != b.PeakBytes {
		return a.PeakBytes < b.PeakBytes
	}
	x := slices.Clone(a.During)
	y := slices.Clone(b.During)
	slices.Sort(x)
	slices.Sort(y)
	for i, j := len(x)-1, len(y)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
		if x[i] != y[j] {
			return x[i] < y[j]
		}
	}
	return len(x) < len(y)
}

// Pass returns the pass that puts each graph's root nodes in the order
// Best chooses under mem. It reports a change when the order differs from
// the file order.
func Pass(mem memory.Options, opts Options) *passes.Pass {
	return &passes.Pass{
		Name: "order",
		Doc:  "Reorder the nodes into the topological order of least peak memory under the target's memory model.",
		Run: func(st *passes.State, g *ir.Graph) (bool, error) {
			ctx := st.Ctx
			if ctx == nil {
				ctx = context.Background()
			}
			r, err := Best(ctx, g, mem, opts)
			if err != nil {
				return false, err
			}
			if slices.Equal(r.Seq, g.Nodes) {
				return false, nil
			}
			return true, g.SetOrder(r.Seq)
		},
	}
}
