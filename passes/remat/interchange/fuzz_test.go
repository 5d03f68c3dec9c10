package interchange_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
)

// checkRead is what every reader promises for any input: an *Error, or a
// valid problem that reads the same again and whose no-remat plan
// evaluates.
func checkRead(t *testing.T, data []byte, read func([]byte) (*interchange.Graph, error)) {
	g, err := read(data)
	if err != nil {
		var ie *interchange.Error
		if !errors.As(err, &ie) || len(ie.Problems) == 0 {
			t.Fatalf("error %T %v is not an *interchange.Error with problems", err, err)
		}
		return
	}
	p := g.Problem
	if err := p.Validate(); err != nil {
		t.Fatalf("the problem read is invalid: %v", err)
	}
	if p.N() == 0 || len(p.Names) != p.N() {
		t.Fatalf("%d nodes, %d names", p.N(), len(p.Names))
	}
	if _, err := remat.EvaluateNoRemat(p); err != nil {
		t.Fatalf("checkpoint-all: %v", err)
	}
	again, err := read(data)
	if err != nil || !slices.Equal(again.Problem.Names, p.Names) || !slices.Equal(again.Problem.Outputs, p.Outputs) {
		t.Fatalf("a second read differs: %v", err)
	}
}

func FuzzReadNodeLink(f *testing.F) {
	for _, s := range []string{moccasinSmall, checkmateSmall, `{"nodes": [{"id": "a", "cost_cpu": 1, "cost_ram": 2}], "edges": []}`,
		`{"nodes": [{"id": 0, "cost_cpu": 1, "cost_ram": 2}, {"id": 1, "cost_cpu": 1, "cost_ram": 2}], "links": [{"source": 1, "target": 0}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sem := range []interchange.Semantics{interchange.DefaultSemantics, interchange.HoldSinks} {
			checkRead(t, data, func(d []byte) (*interchange.Graph, error) {
				return interchange.ReadNodeLink(bytes.NewReader(d), "fuzz.json", interchange.Options{Semantics: sem})
			})
		}
	})
}

func FuzzReadTWRemat(f *testing.F) {
	for _, s := range []string{twrematSmall, "p remat2\nnode 0 deps effectful\nnode 1 deps 0 pointer target\nnode 2 deps 1 cpu 3 mem 4\n",
		"node 7 deps 3 cpu 1.5 mem 2\nnode 3 deps cpu 0 mem 0 target\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data, func(d []byte) (*interchange.Graph, error) {
			return interchange.ReadTWRemat(bytes.NewReader(d), "fuzz.txt", interchange.Options{})
		})
	})
}
