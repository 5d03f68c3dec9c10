// Package irtest holds helpers for tests of code that works on ir graphs:
// building a graph from IR text and comparing graphs by their text form
// (see package irtext).
//
//	g := irtest.MustParse(t, `
//	graph g {
//	  input x:f32[4]
//	  y:f32[4] = Relu(x)
//	  return y
//	}`)
//	... run a pass on g ...
//	irtest.Equal(t, g, irtest.MustParse(t, want))
package irtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
)

// MustParse parses IR text, checks it with ir.Verify and returns the graph;
// it stops the test on an error. Error positions start with the test's name.
func MustParse(t testing.TB, src string) *ir.Graph {
	t.Helper()
	g, err := irtext.Parse(t.Name(), src)
	if err != nil {
		t.Fatalf("irtest.MustParse: %v", err)
	}
	if err := ir.Verify(g); err != nil {
		t.Fatalf("irtest.MustParse: %v", err)
	}
	return g
}

// Equal reports whether got and want print as the same IR text; when they
// do not, it fails the test (without stopping it) with a line diff.
func Equal(t testing.TB, got, want *ir.Graph) bool {
	t.Helper()
	g, err := format(got)
	if err != nil {
		t.Errorf("irtest.Equal: got: %v", err)
	}
	w, err := format(want)
	if err != nil {
		t.Errorf("irtest.Equal: want: %v", err)
	}
	if g == w {
		return true
	}
	t.Errorf("graphs differ (-want +got):\n%s", Diff(w, g))
	return false
}

func format(g *ir.Graph) (string, error) {
	var b strings.Builder
	err := irtext.Print(&b, g)
	return b.String(), err
}

// context is the number of unchanged lines Diff shows around a change.
const context = 3

// Diff returns a line diff from want to got in unified style: hunks headed
// "@@ -line,count +line,count @@", lines prefixed "-" (only in want), "+"
// (only in got) or " " (in both). It returns "" when they are equal.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	ops := diffLines(a, b)

	var out strings.Builder
	// Walk the edit script, printing each run of changes with context.
	ai, bi := make([]int, len(ops)+1), make([]int, len(ops)+1) // line numbers before op i
	for i, op := range ops {
		ai[i+1], bi[i+1] = ai[i], bi[i]
		if op.kind != '+' {
			ai[i+1]++
		}
		if op.kind != '-' {
			bi[i+1]++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-context)
		end := i // extend while another change lies within 2*context lines
		for j := i; j < len(ops) && j <= end+2*context; j++ {
			if ops[j].kind != ' ' {
				end = j
			}
		}
		end = min(len(ops), end+context+1)
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ai[start]+1, ai[end]-ai[start], bi[start]+1, bi[end]-bi[start])
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

type edit struct {
	kind byte // ' ', '-', '+'
	line string
}

// maxDiffCells bounds the LCS table; past it the changed middle is shown as
// removed and re-added in full.
const maxDiffCells = 1 << 22

// diffLines returns an edit script from a to b: common prefix and suffix,
// and a longest common subsequence of the middle.
func diffLines(a, b []string) []edit {
	var pre, suf int
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []edit
	for _, l := range a[:pre] {
		ops = append(ops, edit{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	if n*m > maxDiffCells {
		for _, l := range ma {
			ops = append(ops, edit{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, edit{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				v := max(at(i+1, j), at(i, j+1))
				if ma[i] == mb[j] {
					v = at(i+1, j+1) + 1
				}
				lcs[i*(m+1)+j] = v
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, edit{' ', ma[i]})
				i, j = i+1, j+1
			case i < n && (j == m || at(i+1, j) >= at(i, j+1)):
				ops = append(ops, edit{'-', ma[i]})
				i++
			default:
				ops = append(ops, edit{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, edit{' ', l})
	}
	return ops
}
