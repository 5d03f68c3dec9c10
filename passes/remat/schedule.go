package remat

import (
	"fmt"
	"slices"
)

// Schedule completes a plan from its recomputation matrix alone. R[t][i]
// says that stage t computes node i; R[t][t] must be set and R[t][i] with
// i > t must not (the frontier-advancing form, eq. 8a and 8c), and a node
// that is not recomputable may be computed only in its own stage. Rows may
// be shorter than N (missing entries are false).
//
// Given R, the cheapest-memory legal S and FREE are determined (Checkmate
// Algorithm 2's second phase, §5.2, and App. B, which solve for the rest of
// the schedule once part of it is fixed): a value is retained into stage t
// exactly when stage t or a later one reads it before recomputing it, or it
// is a graph output that no later stage recomputes (the least S satisfying
// 1b and 1c), and it is freed right after its last reader in the last
// stage that holds it (eq. 5 with that S; Algorithm 1's frees, hoisted).
// Any such R gives a legal plan: each dependency is either computed
// earlier in the same stage or retained from the stage that last computed
// it. Whether the plan fits the budget is for Check to say.
func Schedule(p *Problem, R [][]bool) (*Plan, error) {
	if len(R) != p.N() {
		return nil, fmt.Errorf("remat: Schedule: R has %d rows for %d nodes", len(R), p.N())
	}
	stages := make([][]int32, len(R))
	for t, row := range R {
		for i, on := range row {
			if on {
				stages[t] = append(stages[t], int32(i))
			}
		}
	}
	return ScheduleStages(p, stages)
}

// ScheduleStages is Schedule with R given sparsely: stages[t] lists the
// nodes stage t computes (in any order, without repeats), which must
// include t and nothing after it. Heuristics on large graphs, whose R is
// mostly the identity, should prefer it to a dense R.
func ScheduleStages(p *Problem, stages [][]int32) (*Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := p.N()
	if len(stages) != n {
		return nil, fmt.Errorf("remat: Schedule: %d stages for %d nodes (frontier-advancing plans have one stage per node)", len(stages), n)
	}
	comp := make([][]int32, n)
	for t, st := range stages {
		c := slices.Clone(st)
		slices.Sort(c)
		for k, i := range c {
			switch {
			case i < 0 || int(i) > t:
				return nil, fmt.Errorf("remat: Schedule: stage %d computes node %d; a stage computes only nodes up to its own (eq. 8c)", t, i)
			case k > 0 && c[k-1] == i:
				return nil, fmt.Errorf("remat: Schedule: stage %d lists node %s (%d) twice", t, p.Name(int(i)), i)
			case int(i) < t && !p.Recomputable[i]:
				return nil, fmt.Errorf("remat: Schedule: stage %d recomputes node %s (%d), which is not recomputable", t, p.Name(int(i)), i)
			}
		}
		if len(c) == 0 || int(c[len(c)-1]) != t {
			return nil, fmt.Errorf("remat: Schedule: stage %d does not compute node %s (%d); R[t][t] must be set (eq. 8a)", t, p.Name(t), t)
		}
		comp[t] = c
	}

	pl := NewPlan(n)
	inStage := make([]int32, n) // t+1 while stage t is processed, for the nodes it computes
	// Backward over the stages: live is the set resident at the start of
	// stage t+1 (S[t+1]; after the last stage, the outputs). A node that
	// stage t holds (computes, or reads from S[t]) and stage t+1 does not
	// is freed in stage t.
	live := NewBits(n)
	for _, o := range p.Outputs {
		live.Set(int(o))
	}
	for t := n - 1; t >= 0; t-- {
		for _, i := range comp[t] {
			inStage[i] = int32(t) + 1
			pl.R[t].Set(int(i))
		}
		for _, i := range comp[t] {
			if !live.Has(int(i)) {
				pl.Free[t].Set(int(i))
			}
			for _, d := range p.Deps[i] {
				if inStage[d] != int32(t)+1 && !live.Has(int(d)) {
					pl.Free[t].Set(int(d))
				}
			}
		}
		for _, i := range comp[t] {
			live.Clear(int(i))
		}
		for _, i := range comp[t] {
			for _, d := range p.Deps[i] {
				if inStage[d] != int32(t)+1 {
					live.Set(int(d))
				}
			}
		}
		// live now holds only nodes before t: S[t].
		copy(pl.S[t], live[:len(pl.S[t])])
	}
	// Forward: the ops of Algorithm 1, each free right after the last
	// reader of the value in its stage, or after its own computation when
	// nothing in the stage reads it.
	last := make([]int32, n)
	for t := range n {
		for _, k := range comp[t] {
			last[k] = k
			for _, d := range p.Deps[k] {
				last[d] = k
			}
		}
		for _, k := range comp[t] {
			pl.Ops = append(pl.Ops, Op{OpCompute, int32(t), k})
			for _, d := range p.Deps[k] {
				if last[d] == k && pl.Free[t].Has(int(d)) {
					pl.Ops = append(pl.Ops, Op{OpFree, int32(t), d})
				}
			}
			if last[k] == k && pl.Free[t].Has(int(k)) {
				pl.Ops = append(pl.Ops, Op{OpFree, int32(t), k})
			}
		}
	}
	return pl, nil
}

// DropSpurious removes from stages (each sorted, ending with its own node)
// every recomputation that no kept computation after it reads before the
// node is computed again, and that is not the last computation of a graph
// output. One backward scan suffices: whether a computation is read
// depends only on what comes after it. Such computations are spurious
// (Checkmate §4.8): dropping them lowers the cost and never raises the
// memory.
func DropSpurious(p *Problem, stages [][]int32) {
	n := p.N()
	// wanted[v]: the value of v current at the scan's position is read
	// later (or is a graph output's final value).
	wanted := make([]bool, n)
	for _, o := range p.Outputs {
		wanted[o] = true
	}
	for t := n - 1; t >= 0; t-- {
		st := stages[t]
		keep := make([]bool, len(st))
		for x := len(st) - 1; x >= 0; x-- {
			v := st[x]
			if int(v) != t && !wanted[v] {
				continue
			}
			keep[x] = true
			wanted[v] = false
			for _, d := range p.Deps[v] {
				wanted[d] = true
			}
		}
		out := st[:0]
		for x, v := range st {
			if keep[x] {
				out = append(out, v)
			}
		}
		stages[t] = out
	}
}
