// Package passes runs compiler passes over an ir.Graph: the Pass type, the
// pipeline driver with its instrumentation (timing, verification between
// passes, dumps), diagnostics, and the internal-error path that turns a
// panic inside a pass into an error naming the pass.
package passes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/remat-compile/remat/ir"
)

// Pass is one transformation or analysis over a graph. Packages export their
// passes as values (shapes.Pass, remat.Pass); pipelines are slices of them.
type Pass struct {
	// Name is lower-case and hyphenated ("shape-inference"); it names the
	// pass in -d flags, dumps and internal errors.
	Name string
	// Doc's first sentence is the one-line summary.
	Doc string
	// Required passes cannot be switched off.
	Required bool
	// Run transforms g and reports whether it changed anything.
	Run func(st *State, g *ir.Graph) (changed bool, err error)
}

// Severity of a diagnostic.
type Severity uint8

const (
	Note Severity = iota
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "note"
}

// Diagnostic is a message a pass reports instead of printing.
type Diagnostic struct {
	Pos      ir.Pos
	Severity Severity
	Pass     string
	Message  string
}

func (d Diagnostic) String() string {
	p := d.Pos.String()
	if p != "" {
		p += ": "
	}
	return fmt.Sprintf("%s%s: %s", p, d.Severity, d.Message)
}

// Options configure a pipeline run.
type Options struct {
	// Verify runs ir.Verify before the first pass and after every pass
	// (always on in tests; -d=check in the CLI).
	Verify bool
	// Dump, when non-nil, receives the graph after each pass, printed by
	// DumpFunc.
	Dump     io.Writer
	DumpFunc func(w io.Writer, g *ir.Graph) error
	// Disabled names passes to skip; required passes cannot be skipped.
	Disabled map[string]bool
	// File names the input in diagnostics.
	File string
}

// Timing is how long one pass took.
type Timing struct {
	Pass     string
	Duration time.Duration
	Changed  bool
}

// State is what a pass sees of the driver: the context, the input's name,
// and the diagnostics sink.
type State struct {
	Ctx         context.Context
	File        string
	Diagnostics []Diagnostic
	Timings     []Timing
	pass        string
}

// Report records a diagnostic from the running pass.
func (st *State) Report(pos ir.Pos, sev Severity, format string, args ...any) {
	if pos.File == "" {
		pos.File = st.File
	}
	st.Diagnostics = append(st.Diagnostics, Diagnostic{Pos: pos, Severity: sev, Pass: st.pass, Message: fmt.Sprintf(format, args...)})
}

// InternalError is a broken invariant inside a pass: a panic, or a graph
// that fails ir.Verify after the pass ran. It is a bug in remat-compile, not
// in the user's input.
type InternalError struct {
	Pass  string
	Err   error
	Stack []byte
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("internal error in pass %s: %v (rerun with -d=check,dump and report a bug)", e.Pass, e.Err)
}

func (e *InternalError) Unwrap() error { return e.Err }

// IsInternal reports whether err is (or wraps) an *InternalError.
func IsInternal(err error) bool {
	var ie *InternalError
	return errors.As(err, &ie)
}

// Run runs the pipeline over g in order. It stops at the first error or when
// ctx is done, and returns the driver state with diagnostics and timings.
func Run(ctx context.Context, g *ir.Graph, pipeline []*Pass, opts Options) (*State, error) {
	st := &State{Ctx: ctx, File: opts.File}
	if opts.Verify {
		if err := ir.Verify(g); err != nil {
			return st, &InternalError{Pass: "input", Err: err}
		}
	}
	for _, p := range pipeline {
		if opts.Disabled[p.Name] && !p.Required {
			continue
		}
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("before pass %s: %w", p.Name, err)
		}
		st.pass = p.Name
		start := time.Now()
		changed, err := runOne(st, p, g)
		st.Timings = append(st.Timings, Timing{Pass: p.Name, Duration: time.Since(start), Changed: changed})
		if err != nil {
			return st, err
		}
		if opts.Verify {
			if err := ir.Verify(g); err != nil {
				return st, &InternalError{Pass: p.Name, Err: fmt.Errorf("graph fails verification after the pass: %w", err)}
			}
		}
		if opts.Dump != nil && opts.DumpFunc != nil {
			fmt.Fprintf(opts.Dump, "# after %s\n", p.Name)
			if err := opts.DumpFunc(opts.Dump, g); err != nil {
				return st, fmt.Errorf("dump after pass %s: %w", p.Name, err)
			}
		}
	}
	st.pass = ""
	return st, nil
}

func runOne(st *State, p *Pass, g *ir.Graph) (changed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &InternalError{Pass: p.Name, Err: fmt.Errorf("panic: %v", r), Stack: debug.Stack()}
		}
	}()
	return p.Run(st, g)
}

// Validate checks a pipeline's declarations: unique, non-empty names, a
// non-empty Doc and a non-nil Run for each pass.
func Validate(pipeline []*Pass) error {
	seen := map[string]bool{}
	var errs []error
	for i, p := range pipeline {
		switch {
		case p == nil:
			errs = append(errs, fmt.Errorf("pass %d is nil", i))
			continue
		case p.Name == "":
			errs = append(errs, fmt.Errorf("pass %d has no name", i))
		case p.Doc == "":
			errs = append(errs, fmt.Errorf("pass %s has no Doc", p.Name))
		case p.Run == nil:
			errs = append(errs, fmt.Errorf("pass %s has no Run", p.Name))
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("pass name %s appears twice", p.Name))
		}
		seen[p.Name] = true
	}
	return errors.Join(errs...)
}
