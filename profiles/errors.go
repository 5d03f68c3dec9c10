package profiles

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem with a profile: the file, the line (when the profile
// was parsed from text), the field as a dotted path
// ("device.peak_flops.f32", "measured[2].seconds") and what is wrong.
type Error struct {
	File  string // the file name given to Parse; "" for a profile built in code
	Line  int    // 1-based line; 0 when unknown
	Field string // "" when the problem is not about one field
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxErrors is how many errors an Errors value prints.
const maxErrors = 10

// Errors is every problem found in one profile, sorted by line.
type Errors []*Error

func (l Errors) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i == maxErrors {
			fmt.Fprintf(&b, "\ntoo many errors (%d more)", len(l)-maxErrors)
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
func (l Errors) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// err returns nil for an empty list, else the list sorted by line and
// de-duplicated.
func (l Errors) err() error {
	if len(l) == 0 {
		return nil
	}
	s := slices.Clone(l)
	slices.SortStableFunc(s, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Msg, b.Msg))
	})
	s = slices.CompactFunc(s, func(a, b *Error) bool { return *a == *b })
	return s
}
