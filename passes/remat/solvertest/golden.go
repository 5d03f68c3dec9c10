package solvertest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// The brute-force references of the corpus are golden data: computing
// them takes seconds per case, and every solver package's conformance
// test needs them. testdata/references.json holds, per case (keyed by
// caseKey: its name and a hash of its problem and budgets), the least
// peak of any plan, checkpoint-all's peak, the budgets and the optimum at
// each feasible one. TestReferencesGolden recomputes them and compares;
// `go test ./passes/remat/solvertest -run TestReferencesGolden -update`
// rewrites the file after the corpus or the brute force changed. A case
// the file does not hold (opts.Cases, a changed case) is computed.

//go:embed testdata/references.json
var referencesJSON []byte

// goldenRef is one case's entry of references.json. Optima are keyed by
// the budget in decimal; an infeasible budget has none.
type goldenRef struct {
	MinPeak int64              `json:"min_peak"`
	CAPeak  int64              `json:"checkpoint_all_peak"`
	Budgets []int64            `json:"budgets"`
	Opt     map[string]float64 `json:"optimum"`
	Coarse  map[string]float64 `json:"coarse_optimum,omitempty"`
}

var golden = sync.OnceValues(func() (map[string]goldenRef, error) {
	var m map[string]goldenRef
	if err := json.Unmarshal(referencesJSON, &m); err != nil {
		return nil, fmt.Errorf("solvertest: testdata/references.json: %w", err)
	}
	return m, nil
})

// goldenReference returns c's reference from references.json.
func goldenReference(c Case, key string) (*reference, bool) {
	m, err := golden()
	if err != nil {
		return nil, false
	}
	g, ok := m[key]
	if !ok {
		return nil, false
	}
	r := &reference{c: c, minPeak: g.MinPeak, caPeak: g.CAPeak, budgets: slices.Clone(g.Budgets), opt: map[int64]float64{}, coarse: map[int64]float64{}}
	for k, v := range g.Opt {
		b, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, false
		}
		r.opt[b] = v
	}
	for k, v := range g.Coarse {
		b, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, false
		}
		r.coarse[b] = v
	}
	return r, true
}

// goldenOf is r as references.json stores it.
func goldenOf(r *reference) goldenRef {
	g := goldenRef{MinPeak: r.minPeak, CAPeak: r.caPeak, Budgets: r.budgets, Opt: map[string]float64{}}
	for b, v := range r.opt {
		g.Opt[strconv.FormatInt(b, 10)] = v
	}
	if len(r.coarse) > 0 {
		g.Coarse = map[string]float64{}
		for b, v := range r.coarse {
			g.Coarse[strconv.FormatInt(b, 10)] = v
		}
	}
	return g
}

// computeReferences computes the brute-force reference of every corpus case,
// as references.json stores them (keyed by caseKey).
func computeReferences() (map[string]goldenRef, error) {
	out := map[string]goldenRef{}
	for _, c := range Corpus() {
		r, err := newReference(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		out[caseKey(c)] = goldenOf(r)
	}
	return out, nil
}
