package interchange

import (
	"fmt"
	"strings"

	"github.com/remat-compile/remat/passes/remat"
)

// Format names an input format (see the package doc).
type Format uint8

const (
	// UnknownFormat is the zero Format.
	UnknownFormat Format = iota
	// NodeLinkMoccasin is networkx node-link JSON with MOCCASIN's node
	// attributes {name, out_cost, duration, param_cost}.
	NodeLinkMoccasin
	// NodeLinkCheckmate is networkx node-link JSON with Checkmate's node
	// attributes {id, name, cost_cpu, cost_ram, backward}.
	NodeLinkCheckmate
	// TWRematText is the text input of Kumar et al.'s TWRemat tool.
	TWRematText
)

func (f Format) String() string {
	switch f {
	case NodeLinkMoccasin:
		return "node-link JSON (MOCCASIN attributes)"
	case NodeLinkCheckmate:
		return "node-link JSON (Checkmate attributes)"
	case TWRematText:
		return "TWRemat text"
	}
	return "unknown format"
}

// Semantics says which values a problem read from another tool's graph
// holds to the end and what it adds to every step (see the package doc).
type Semantics uint8

const (
	// DefaultSemantics is the format's own: FreeSinks for node-link JSON,
	// the `target` nodes held for TWRemat text.
	DefaultSemantics Semantics = iota
	// FreeSinks is MOCCASIN's model: no graph outputs (every sink is
	// freed right after it is computed) and no constant term.
	FreeSinks
	// HoldSinks is Checkmate's model: every sink is a graph output held
	// to the end, and the parameters (MOCCASIN's param_cost) are the
	// constant term.
	HoldSinks
)

func (s Semantics) String() string {
	switch s {
	case DefaultSemantics:
		return "default"
	case FreeSinks:
		return "free-sinks"
	case HoldSinks:
		return "hold-sinks"
	}
	return fmt.Sprintf("Semantics(%d)", uint8(s))
}

// ParseSemantics reads a Semantics from its String form.
func ParseSemantics(s string) (Semantics, error) {
	for _, v := range []Semantics{DefaultSemantics, FreeSinks, HoldSinks} {
		if strings.EqualFold(s, v.String()) {
			return v, nil
		}
	}
	return 0, fmt.Errorf("interchange: unknown memory semantics %q; want default, free-sinks or hold-sinks", s)
}

// Options configure the readers. The zero value reads every format under
// its own semantics.
type Options struct {
	Semantics Semantics
}

// Graph is a graph read from another tool's file.
type Graph struct {
	// Problem is the rematerialization problem, nodes in the input order
	// (graph.order, the topological order networkx gives, or the file's);
	// its Names are the file's node ids. A node-link file sets no budget
	// (remat.NoBudget); a TWRemat file's memlimit becomes BudgetBytes.
	Problem *remat.Problem
	// Format is the format read.
	Format Format
	// Name is the graph's own name (node-link graph.name), or "".
	Name string
	// Edges counts the distinct dependencies (links) of the graph.
	Edges int
}

// Error lists what is wrong with an input file, in file order, up to
// maxProblems of them.
type Error struct {
	// File names the input ("" when read from a stream without a name).
	File string
	// Problems each say where (a JSON path or a line number) and what.
	Problems []string
	// More counts the problems found beyond those listed.
	More int
}

// maxProblems bounds Error.Problems.
const maxProblems = 10

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	for k, p := range e.Problems {
		if k > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more", e.More)
	}
	return b.String()
}

// issues collects the problems of one input.
type issues struct {
	e Error
}

// add records one problem; where is a JSON path or "line N" ("" for none).
func (is *issues) add(where, format string, args ...any) {
	if len(is.e.Problems) >= maxProblems {
		is.e.More++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	}
	is.e.Problems = append(is.e.Problems, msg)
}

func (is *issues) any() bool { return len(is.e.Problems) > 0 }

// err returns the problems as an *Error, or nil.
func (is *issues) err(file string) error {
	if !is.any() {
		return nil
	}
	e := is.e
	e.File = file
	return &e
}
