package milp

import (
	"strconv"
	"strings"
)

// File names: LP and MPS readers disagree on what a name may contain, so
// the writers use the intersection. A name keeps ASCII letters, digits, '_'
// and '.', and every other byte becomes '_'; a name that would start with a
// digit or '.', or with 'e'/'E' followed by nothing, a digit or another
// 'e' (which LP readers take for an exponent), gets a '_' prefix; a name
// that is an LP keyword gets a '_' suffix; names are cut to 240 bytes; an
// empty name becomes x<index> (variables) or c<index> (constraints). Then
// names are made unique within variables and within constraints, first come
// first served, by appending _2, _3, …; "obj" is reserved for the objective
// row. The mapping depends only on the model, so files are deterministic.

const maxNameLen = 240

func sanitize(name, def string) string {
	if name == "" {
		name = def
	}
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	s := string(b)
	switch c := s[0]; {
	case c >= '0' && c <= '9' || c == '.':
		s = "_" + s
	case (c == 'e' || c == 'E') && (len(s) == 1 || s[1] >= '0' && s[1] <= '9' || s[1] == 'e' || s[1] == 'E'):
		s = "_" + s
	}
	if isKeyword(strings.ToLower(s)) {
		s += "_"
	}
	if len(s) > maxNameLen {
		s = s[:maxNameLen]
	}
	return s
}

// isKeyword reports whether s (lower case) is a section or bound keyword of
// the LP or MPS formats.
func isKeyword(s string) bool {
	switch s {
	case "min", "max", "minimize", "maximize", "minimise", "maximise", "minimum", "maximum",
		"subject", "to", "such", "that", "st", "s.t.", "st.",
		"bound", "bounds", "free", "inf", "infinity",
		"gen", "general", "generals", "int", "integer", "integers",
		"bin", "binary", "binaries", "semi", "semis", "semi-continuous",
		"sos", "sos1", "sos2", "end", "marker":
		return true
	}
	return false
}

// uniquify makes names unique (in place), skipping the reserved ones.
func uniquify(names []string, reserved ...string) {
	used := make(map[string]bool, len(names)+len(reserved))
	for _, r := range reserved {
		used[r] = true
	}
	for i, n := range names {
		if used[n] {
			for k := 2; ; k++ {
				c := n + "_" + strconv.Itoa(k)
				if !used[c] {
					n = c
					break
				}
			}
		}
		used[n] = true
		names[i] = n
	}
}

// objName is the name of the objective (its LP label and its MPS N row).
const objName = "obj"

// varNames returns the file names of the variables.
func (m *Model) varNames() []string {
	names := make([]string, len(m.vars))
	for j, v := range m.vars {
		names[j] = sanitize(v.name, "x"+strconv.Itoa(j))
	}
	uniquify(names)
	return names
}

// rowNames returns the file names of the constraints, one per constraint
// (MPS).
func (m *Model) rowNames() []string {
	names := make([]string, len(m.rows))
	for i, r := range m.rows {
		names[i] = sanitize(r.name, "c"+strconv.Itoa(i))
	}
	uniquify(names, objName)
	return names
}

// lpRowNames returns the LP file's row names: one per constraint, except
// that a two-sided range becomes two rows, <name>_lo (>=) and <name>_hi
// (<=), since the LP format has no portable ranged row. first[i] is the
// index in the result of constraint i's first row.
func (m *Model) lpRowNames() (names []string, first []int) {
	first = make([]int, len(m.rows))
	for i, r := range m.rows {
		first[i] = len(names)
		base := sanitize(r.name, "c"+strconv.Itoa(i))
		if r.kind == rowRange {
			lo, hi := base+"_lo", base+"_hi"
			if len(lo) > maxNameLen {
				lo, hi = base[:maxNameLen-3]+"_lo", base[:maxNameLen-3]+"_hi"
			}
			names = append(names, lo, hi)
		} else {
			names = append(names, base)
		}
	}
	uniquify(names, objName)
	return names, first
}
