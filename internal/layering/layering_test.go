// Package layering holds the test that enforces DESIGN.md's import rules:
// which of the module's packages may import which, in the manner of the
// standard library's go/build deps test.
package layering

import (
	"os/exec"
	"path"
	"slices"
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
	{".", nil}, // the module root: documentation only
	{"ir", nil},
	{"ir/irtext", []string{"ir"}},
	{"ir/irtest", []string{"ir", "ir/irtext"}},
	{"internal/onnxpb", []string{"google.golang.org/protobuf/*"}},
	{"internal/tfpb", []string{"google.golang.org/protobuf/*"}},
	{"internal/pbcheck", []string{"google.golang.org/protobuf/*"}},
	{"internal/pbtest", []string{"google.golang.org/protobuf/*"}}, // tests only
	{"importers/*", []string{"ir", "internal/onnxpb", "internal/tfpb", "internal/pbcheck", "google.golang.org/protobuf/*"}},
	{"exporters/onnx", []string{"ir", "internal/onnxpb", "internal/atomicfile", "passes/remat", "google.golang.org/protobuf/*"}},
	{"exporters/graphdef", []string{"ir", "internal/tfpb", "internal/atomicfile", "passes/remat", "google.golang.org/protobuf/*"}},
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
	{"targets", []string{"ir", "passes/memory", "passes/remat"}},
	{"targets/ort", []string{"ir", "passes/memory", "passes/remat", "targets", "exporters/onnx"}},
	{"targets/tfjs", []string{"ir", "passes/memory", "passes/remat", "targets", "exporters/graphdef", "internal/tfpb"}},
	{"targets/liveness", []string{"ir", "passes/memory", "passes/remat", "targets"}},
	{"pipeline", []string{"ir", "ir/irtext", "importers/*", "passes", "passes/*", "passes/remat/*", "targets", "targets/*", "exporters/*", "profiles", "internal/zoo", "internal/zoo/tfgraph", "internal/atomicfile"}},
	{"internal/atomicfile", nil},
	{"bench", []string{"ir", "pipeline", "passes/autodiff", "passes/remat", "passes/remat/*", "profiles"}},
	{"verify", []string{"ir", "pipeline", "targets", "targets/*", "importers/*", "exporters/*", "internal/onnxpb", "internal/ort", "internal/tfjs", "google.golang.org/protobuf/*"}},
	{"profiles/measure", []string{"ir", "pipeline", "profiles", "internal/ort", "exporters/onnx", "importers/onnx", "passes/autodiff", "passes/remat", "passes/shapes", "verify"}},
	{"internal/onnxtest", []string{"internal/onnxpb", "google.golang.org/protobuf/*"}},                           // tests only
	{"internal/testmodels", []string{"ir", "importers/onnx", "exporters/onnx", "internal/ort", "internal/tfjs"}}, // tests only
	{"internal/milp", []string{"internal/cbc", "github.com/ebitengine/purego"}},
	{"internal/cbc", []string{"github.com/ebitengine/purego"}},
	{"internal/ort", []string{"github.com/yalue/onnxruntime_go"}},
	{"internal/tfjs", nil},
	{"internal/zoo", []string{"ir"}},
	{"internal/zoo/tfgraph", []string{"ir", "passes/shapes"}},
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

// testOnly are the packages only tests may import.
var testOnly = []string{"internal/testmodels", "internal/onnxtest", "internal/e2e", "internal/memcheck", "internal/pbtest"}

// pkgImports is one package of the module as go list describes it.
type pkgImports struct {
	rel               string // the path relative to the module
	imports, testOnly []string
}

// listPackages lists the module's packages with their imports and their
// tests' imports.
func listPackages(t *testing.T) []pkgImports {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgImports
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		rel, ok := strings.CutPrefix(f[0], module+"/")
		if f[0] == module {
			rel, ok = ".", true // the module root
		}
		if !ok {
			continue
		}
		pkgs = append(pkgs, pkgImports{rel: rel, imports: strings.Fields(f[1]), testOnly: strings.Fields(f[2])})
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	checked := 0
	for _, p := range pkgs {
		rel := p.rel
		allow, ok := rule(rel)
		if !ok {
			t.Errorf("package %s has no import rule; add it to rules and to DESIGN.md", rel)
			continue
		}
		checked++
		for _, imp := range p.imports {
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
		t.Fatalf("checked only %d packages; go list output looks wrong", checked)
	}
}

// TestTestImports checks what tests may import: anything but the command
// (nothing imports cmd), and the test-only packages are imported by tests
// alone.
func TestTestImports(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.testOnly {
			if target, ok := strings.CutPrefix(imp, module+"/"); ok && strings.HasPrefix(target, "cmd/") && !strings.HasPrefix(p.rel, "cmd/") {
				t.Errorf("the tests of %s import %s: nothing imports the command", p.rel, target)
			}
		}
		if slices.Contains(testOnly, p.rel) {
			continue
		}
		for _, imp := range p.imports {
			if target, ok := strings.CutPrefix(imp, module+"/"); ok && slices.Contains(testOnly, target) {
				t.Errorf("%s imports %s, which is for tests only", p.rel, target)
			}
		}
	}
}

// TestRulesMatchPackages fails on a rule that matches no package of the
// module: a rule for a package that is gone, or one not written yet, is
// not a rule the test enforces.
func TestRulesMatchPackages(t *testing.T) {
	pkgs := listPackages(t)
	for _, r := range rules {
		found := false
		for _, p := range pkgs {
			if match(r.pkg, p.rel) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("rule %q matches no package of the module: remove it (and its DESIGN.md row) or add the package", r.pkg)
		}
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
