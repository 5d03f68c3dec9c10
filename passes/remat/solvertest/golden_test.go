package solvertest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/references.json from the brute force")

// TestReferencesGolden recomputes the corpus's brute-force references and
// compares them with testdata/references.json (-update rewrites it).
func TestReferencesGolden(t *testing.T) {
	if testing.Short() && !*update {
		t.Skip("recomputing the brute-force references takes seconds per case; skipped in -short mode")
	}
	got, err := computeReferences()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	path := filepath.Join("testdata", "references.json")
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(data, referencesJSON) {
		t.Errorf("%s is stale: the corpus or the brute force changed (run go test ./passes/remat/solvertest -run TestReferencesGolden -update)", path)
	}
	for _, c := range Corpus() {
		if _, ok := goldenReference(c, caseKey(c)); !ok {
			t.Errorf("case %s has no golden reference", c.Name)
		}
	}
}
