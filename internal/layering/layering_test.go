// Package layering holds the test that enforces DESIGN.md's import rules:
// which of the module's packages may import which, in the manner of the
// standard library's go/build deps test.
package layering

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

const module = "github.com/remat-compile/remat"

// Tests may import more (test helpers, other layers as fixtures); the rules
// govern the packages themselves.
//
// rules maps a package pattern (a package path relative to the module, or
// a prefix ending in "/*" for its subpackages) to the patterns it may
// import besides the standard library. The most specific pattern wins.
// Keep this table and ../../../shared/DESIGN.md ("Packages and who may
// import whom") in step.
var rules = []struct {
	pkg   string
	allow []string
}{
	{"ir", nil},
	{"ir/irtext", []string{"ir"}},
	{"ir/irtest", []string{"ir", "ir/irtext"}},
	{"internal/onnxpb", []string{"google.golang.org/protobuf/*"}},
	{"internal/tfpb", []string{"google.golang.org/protobuf/*"}},
	{"importers/*", []string{"ir", "internal/onnxpb", "internal/tfpb", "google.golang.org/protobuf/*"}},
	{"exporters/onnx", []string{"ir", "internal/onnxpb", "passes/remat", "google.golang.org/protobuf/*"}},
	{"exporters/graphdef", []string{"ir", "internal/tfpb", "passes/remat", "google.golang.org/protobuf/*"}},
	{"exporters/report", []string{"ir", "passes/remat"}},
	{"profiles", []string{"ir", "gopkg.in/yaml.v3"}},
	{"passes", []string{"ir"}},
	{"passes/*", []string{"passes", "ir", "passes/memory"}},
	{"passes/remat", []string{"passes", "ir", "passes/memory", "profiles"}},
	{"passes/autodiff", []string{"passes", "ir", "passes/shapes"}},
	{"passes/remat/*", []string{"passes/remat", "internal/milp", "internal/cbc"}},
	{"passes/remat/solvers", []string{"passes/remat", "passes/remat/*"}},
	{"passes/remat/peerbench", []string{"passes/remat", "passes/remat/*"}},
	{"passes/remat/solvertest", []string{"passes/remat"}},
	{"internal/milp", []string{"internal/cbc", "github.com/ebitengine/purego"}},
	{"internal/cbc", []string{"github.com/ebitengine/purego"}},
	{"internal/ort", []string{"github.com/yalue/onnxruntime_go"}},
	{"internal/zoo", []string{"ir"}},
	{"internal/layering", nil},
	{"internal/e2e", nil},      // tests only
	{"internal/memcheck", nil}, // tests only
	{"cmd/*", []string{"*"}},
}

// rule returns the allow list of the most specific pattern matching pkg.
func rule(pkg string) ([]string, bool) {
	best, bestLen, found := []string(nil), -1, false
	for _, r := range rules {
		if match(r.pkg, pkg) && len(r.pkg) > bestLen {
			best, bestLen, found = r.allow, len(r.pkg), true
		}
	}
	return best, found
}

func match(pattern, pkg string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(pkg, prefix+"/")
	}
	return pattern == pkg
}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			continue
		}
		allow, ok := rule(rel)
		if !ok {
			t.Errorf("package %s has no import rule; add it to rules and to DESIGN.md", rel)
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			if isStd(imp) {
				continue
			}
			target := strings.TrimPrefix(imp, module+"/")
			permitted := false
			for _, a := range allow {
				if match(a, target) {
					permitted = true
				}
			}
			if !permitted {
				t.Errorf("%s imports %s, which DESIGN.md does not allow", rel, target)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d packages; go list output looks wrong:\n%s", checked, out)
	}
}

// isStd reports whether an import path belongs to the standard library (its
// first element has no dot).
func isStd(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".") && path.Clean(imp) == imp && first != "C"
}

func TestRuleMatching(t *testing.T) {
	for _, tt := range []struct {
		pkg  string
		want string
	}{
		{"passes/remat", "passes/remat"},
		{"passes/remat/milp", "passes/remat/*"},
		{"passes/shapes", "passes/*"},
		{"passes/remat/solvers", "passes/remat/solvers"},
	} {
		allow, _ := rule(tt.pkg)
		var want []string
		for _, r := range rules {
			if r.pkg == tt.want {
				want = r.allow
			}
		}
		if strings.Join(allow, ",") != strings.Join(want, ",") {
			t.Errorf("rule(%s) = %v, want the rule of %s", tt.pkg, allow, tt.want)
		}
	}
}
