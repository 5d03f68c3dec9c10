package ir

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos locates a problem in an input file: the file (and its line, for a
// text file), and the node (name and operator), value or field it
// concerns.
type Pos struct {
	File  string
	Line  int    // 1-based line of a text file; 0 when unknown
	Node  string // node name, or "" when the problem is not about a node
	Op    string // operator of the node
	Value string // value or tensor name, when the problem is about one
	// Field is a dotted path to a field of a structured file
	// ("device.peak_flops.f32", "measured[2].seconds").
	Field string
}

func (p Pos) String() string {
	var parts []string
	switch {
	case p.File != "" && p.Line > 0:
		parts = append(parts, fmt.Sprintf("%s:%d", p.File, p.Line))
	case p.File != "":
		parts = append(parts, p.File)
	case p.Line > 0:
		parts = append(parts, fmt.Sprintf("line %d", p.Line))
	}
	switch {
	case p.Node != "" || p.Op != "":
		s := fmt.Sprintf("node %q", p.Node)
		if p.Op != "" {
			s += " (" + p.Op + ")"
		}
		parts = append(parts, s)
	case p.Value != "":
		parts = append(parts, fmt.Sprintf("value %q", p.Value))
	}
	if p.Field != "" {
		parts = append(parts, p.Field)
	}
	return strings.Join(parts, ": ")
}

// NodePos is the position of node n in file.
func NodePos(file string, n *Node) Pos {
	name := n.Name
	if name == "" && len(n.Outputs) > 0 && n.Outputs[0] != nil {
		name = n.Outputs[0].Name
	}
	return Pos{File: file, Node: name, Op: n.OpName()}
}

// Error is one problem with a user's input, at a position.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string {
	if p := e.Pos.String(); p != "" {
		return p + ": " + e.Msg
	}
	return e.Msg
}

// Errorf builds an *Error.
func Errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// MaxErrors is how many errors an ErrorList reports before "too many errors".
const MaxErrors = 10

// ErrorList collects input errors, in the manner of go/scanner.ErrorList:
// sorted by position, duplicates removed, at most MaxErrors reported.
type ErrorList []*Error

// Add appends an error.
func (l *ErrorList) Add(pos Pos, format string, args ...any) {
	*l = append(*l, Errorf(pos, format, args...))
}

// Len is the number of errors collected.
func (l ErrorList) Len() int { return len(l) }

// Err returns nil for an empty list, else the list sorted and de-duplicated.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	s := slices.Clone(l)
	slices.SortStableFunc(s, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Node, b.Pos.Node),
			cmp.Compare(a.Pos.Value, b.Pos.Value),
			cmp.Compare(a.Pos.Field, b.Pos.Field),
			cmp.Compare(a.Msg, b.Msg))
	})
	s = slices.CompactFunc(s, func(a, b *Error) bool { return a.Pos == b.Pos && a.Msg == b.Msg })
	return s
}

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i == MaxErrors {
			fmt.Fprintf(&b, "\ntoo many errors (%d more)", len(l)-MaxErrors)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}
