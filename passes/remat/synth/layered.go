// Package synth builds seeded synthetic rematerialization problems for
// benchmarks: random layered DAGs of a chosen node and edge count, the
// kind of graph MOCCASIN (Bartan et al. 2023, §3.1, Table 3) uses to model
// inference graphs with complex interconnect, at the sizes it reports:
// (n, m) = (100, 236), (250, 944), (500, 2461), (1000, 5875).
//
// MOCCASIN takes its graphs from Gagrani et al. (2022, App. A), whose
// generator is not published with the paper; Layered is this project's
// own construction with the same shape (nodes in layers, every edge from
// an earlier layer to a later one, mostly short, some long skips), so
// costs and budgets are comparable in kind but not number for number.
package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/remat-compile/remat/passes/remat"
)

// Layered returns a seeded random layered DAG of n nodes and exactly m
// edges, as a remat.Problem in topological order (node IDs layer by
// layer):
//
//   - the nodes fall into L = ⌈√n⌉ layers of near-equal size;
//   - every node outside the first layer reads one node of the layer
//     before it (so the graph is connected layer to layer), and the other
//     m − (n − |layer 0|) edges join random pairs in different layers, the
//     layer distance d ≥ 1 drawn with probability ∝ 2^−d (mostly short,
//     some long skip connections, which hold memory across the graph);
//   - output sizes are uniform in [64, 1024] bytes, durations uniform in
//     [1, 10] ms, every node recomputable, and every sink an output.
//
// The same (seed, n, m) always gives the same problem. m must lie between
// n − |layer 0| and the number of cross-layer pairs.
func Layered(seed uint64, n, m int) (*remat.Problem, error) {
	if n < 2 {
		return nil, fmt.Errorf("synth: a layered graph needs at least 2 nodes, got %d", n)
	}
	layers := int(math.Ceil(math.Sqrt(float64(n))))
	layerOf := make([]int, n)
	start := make([]int, layers+1) // layer l holds nodes start[l] … start[l+1]−1
	for l := 0; l <= layers; l++ {
		start[l] = l * n / layers
	}
	for l := range layers {
		for i := start[l]; i < start[l+1]; i++ {
			layerOf[i] = l
		}
	}
	spine := n - start[1]
	pairs := 0
	for l := range layers {
		pairs += (start[l+1] - start[l]) * start[l]
	}
	if m < spine || m > pairs {
		return nil, fmt.Errorf("synth: %d nodes in %d layers take between %d and %d edges, got %d", n, layers, spine, pairs, m)
	}

	r := rand.New(rand.NewPCG(seed, uint64(n)<<32|uint64(m)))
	deps := make([][]int32, n)
	has := make(map[[2]int32]bool, m)
	add := func(u, v int) bool {
		k := [2]int32{int32(u), int32(v)}
		if has[k] {
			return false
		}
		has[k] = true
		deps[v] = append(deps[v], int32(u))
		return true
	}
	for v := start[1]; v < n; v++ {
		l := layerOf[v]
		add(start[l-1]+r.IntN(start[l]-start[l-1]), v)
	}
	for edges := spine; edges < m; {
		v := start[1] + r.IntN(n-start[1])
		l := layerOf[v]
		d := 1
		for d < l && r.IntN(2) == 0 {
			d++
		}
		ul := l - d
		if add(start[ul]+r.IntN(start[ul+1]-start[ul]), v) {
			edges++
			continue
		}
		// The pair exists: take the first free predecessor of v in any
		// earlier layer, nearest first, so dense requests still finish.
		for u := start[l] - 1; u >= 0; u-- {
			if add(u, v) {
				edges++
				break
			}
		}
	}

	p := &remat.Problem{
		Deps:         deps,
		Seconds:      make([]float64, n),
		Bytes:        make([]int64, n),
		Recomputable: make([]bool, n),
		BudgetBytes:  remat.NoBudget,
		Names:        make([]string, n),
	}
	read := make([]bool, n)
	for v := range n {
		if p.Deps[v] == nil {
			p.Deps[v] = []int32{}
		}
		slices.Sort(p.Deps[v])
		for _, u := range p.Deps[v] {
			read[u] = true
		}
		p.Seconds[v] = float64(1+r.IntN(10)) * 1e-3
		p.Bytes[v] = int64(64 + r.IntN(1024-64+1))
		p.Recomputable[v] = true
		p.Names[v] = fmt.Sprintf("L%d.%d", layerOf[v], v-start[layerOf[v]])
	}
	for v := range n {
		if !read[v] {
			p.Outputs = append(p.Outputs, int32(v))
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("synth: internal error: %w", err)
	}
	return p, nil
}
