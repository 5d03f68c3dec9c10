// Package solvers is the registry of rematerialization solvers: All lists
// every solver in the order `remat-compile solvers` prints them, Lookup
// finds one by name and Validate checks their declarations. Auto, the
// default, runs a portfolio of the others.
//
// The list is an explicit slice: a solver package registers nothing
// itself, so importing one has no side effects and the registry says in
// one place what there is.
package solvers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/remat-compile/remat/passes/remat"
)

// Default is the name of the solver the pass uses when none is named.
const Default = AutoName

// All lists every solver: the default first, then the baseline, the
// heuristics and the exact ones.
var All = allSolvers()

func allSolvers() []remat.Solver {
	out := []remat.Solver{Auto}
	out = append(out, heuristics...)
	out = append(out, searches...)
	out = append(out, kumar...)
	out = append(out, exact...)
	return out
}

// Lookup returns the solver called name (case-insensitively).
func Lookup(name string) (remat.Solver, bool) {
	for _, s := range All {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return remat.Solver{}, false
}

// Exact reports whether the solver called name is one of the exact ones
// on COIN-OR (checkmate-milp, checkmate-lp, moccasin), whose models grow
// with the square of the graph (or faster) and stall past a few hundred
// nodes.
func Exact(name string) bool {
	for _, s := range exact {
		if strings.EqualFold(s.Name, name) {
			return true
		}
	}
	return false
}

// Names returns the names of All, in order.
func Names() []string {
	names := make([]string, len(All))
	for i, s := range All {
		names[i] = s.Name
	}
	return names
}

// Validate checks a registry: every name lower-case letters and digits in
// hyphen-separated words ("checkpoint-all", "chen-sqrtn"), usable as a
// flag value, and unique; every Doc non-empty; every Solve set.
func Validate(all []remat.Solver) error {
	var errs []error
	seen := map[string]int{}
	for i, s := range all {
		label := s.Name
		if label == "" {
			label = fmt.Sprintf("solver %d", i)
		}
		if !validName(s.Name) {
			errs = append(errs, fmt.Errorf("solvers: %s: name %q is not lower-case words of letters and digits joined by hyphens", label, s.Name))
		}
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			errs = append(errs, fmt.Errorf("solvers: name %q is used by solvers %d and %d", s.Name, j, i))
		} else {
			seen[s.Name] = i
		}
		if strings.TrimSpace(s.Doc) == "" {
			errs = append(errs, fmt.Errorf("solvers: %s has no Doc", label))
		}
		if s.Solve == nil {
			errs = append(errs, fmt.Errorf("solvers: %s has no Solve", label))
		}
	}
	return errors.Join(errs...)
}

// validName reports whether s is hyphenated lower-case words: a letter
// first, then letters and digits, single hyphens between words.
func validName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' || strings.HasSuffix(s, "-") || strings.Contains(s, "--") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Summary returns the first sentence of a solver's Doc, for one-line
// listings: up to the first period followed by a space and a capital
// letter, except after an abbreviation ("et al. 2016", "App. B").
func Summary(s remat.Solver) string {
	words := strings.Fields(s.Doc)
	for i, w := range words[:max(len(words)-1, 0)] {
		next := words[i+1]
		if strings.HasSuffix(w, ".") && next[0] >= 'A' && next[0] <= 'Z' && !abbreviation(w) {
			return strings.Join(words[:i+1], " ")
		}
	}
	return strings.Join(words, " ")
}

// abbreviation reports whether a word ending in a period abbreviates.
func abbreviation(w string) bool {
	w = strings.TrimLeft(w, "([")
	switch strings.ToLower(strings.TrimSuffix(w, ".")) {
	case "al", "app", "eq", "eqs", "fig", "e.g", "i.e", "cf", "vs", "sec", "ch", "no", "ref", "alg":
		return true
	}
	return false
}
