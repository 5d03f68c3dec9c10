package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/pipeline"
)

// Exit statuses.
const (
	exitOK       = 0
	exitFailure  = 1 // bad input or an optimisation outcome the user must act on
	exitUsage    = 2
	exitInternal = 3 // a bug in remat-compile
)

// Streams are the command's standard streams; tests pass buffers.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	ErrTTY bool // progress output only on a terminal
	// Args is the command line as Main received it, the program name
	// first (Main sets it), for reports.
	Args []string
}

// command is one subcommand: its flags bind into an options struct, and run
// does the work.
type command struct {
	name  string
	usage string // the argument synopsis
	short string
	// setup registers the flags and returns the function that runs the
	// command on the positional arguments.
	setup func(fs *flag.FlagSet) func(ctx context.Context, args []string, st *Streams) error
}

func commands() []*command {
	return []*command{compileCmd(), inspectCmd(), convertCmd(), verifyCmd(), solveCmd(), solversCmd(), benchCmd(), profileCmd(), validateCostCmd()}
}

// defaultCommand is the command that runs when the first argument is a
// model path or a flag rather than a command name:
// `remat-compile model.onnx -o out.onnx -budget 70%`.
const defaultCommand = "compile"

// isModelArg reports whether a first argument that names no command is
// meant for the default command: a flag, a path (it has a dot or a
// slash), or an existing file. A bare word such as "frobnicate" is a
// mistyped command.
func isModelArg(arg string) bool {
	if strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "zoo:") || strings.ContainsAny(arg, `./\`) {
		return true
	}
	_, err := os.Stat(arg)
	return err == nil
}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Main runs remat-compile with args (without the program name) and returns
// the exit status.
func Main(ctx context.Context, args []string, st *Streams) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		printUsage(st.Out)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	var cmd *command
	rest := args[1:]
	for _, c := range commands() {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil && isModelArg(args[0]) {
		for _, c := range commands() {
			if c.name == defaultCommand {
				cmd, rest = c, args
			}
		}
	}
	if cmd == nil {
		fmt.Fprintf(st.Err, "remat-compile: unknown command %q\n", args[0])
		printUsage(st.Err)
		return exitUsage
	}
	fs := flag.NewFlagSet("remat-compile "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(st.Err)
	run := cmd.setup(fs)
	fs.Usage = func() {
		fmt.Fprintf(st.Err, "usage: remat-compile %s %s\n\n%s\n\nflags:\n", cmd.name, cmd.usage, cmd.short)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage // flag already printed the problem and the usage
	}
	st.Args = append([]string{"remat-compile"}, args...)
	err = run(ctx, pos, st)
	return exitStatus(st, cmd.name, err)
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("model.onnx -o out.onnx"), as the documented command lines do.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func exitStatus(st *Streams, name string, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var oe *pipeline.OptionError
	switch {
	case errors.As(err, &ue), errors.As(err, &oe):
		fmt.Fprintf(st.Err, "remat-compile %s: %v\n", name, err)
		return exitUsage
	case passes.IsInternal(err):
		fmt.Fprintf(st.Err, "remat-compile: %v\n", err)
		return exitInternal
	}
	fmt.Fprintln(st.Err, err)
	return exitFailure
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "remat-compile makes neural-network graphs fit in memory by tensor rematerialization.\n\nusage:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimSpace("remat-compile "+c.name+" "+c.usage), c.short)
	}
	fmt.Fprintf(w, "\nA model path in place of COMMAND runs %s: remat-compile model.onnx -o out.onnx -budget 70%%\n", defaultCommand)
	fmt.Fprintf(w, "Run `remat-compile COMMAND -h` for a command's flags.\n")
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// loadFlags are the flags shared by the commands that read a model: shape
// overrides and debugging.
type loadFlags struct {
	inputShapes listFlag
	dims        listFlag
	valueTypes  listFlag
	debug       string
}

func (lf *loadFlags) register(fs *flag.FlagSet) {
	fs.Var(&lf.inputShapes, "input-shape", "`name=1x3x224x224`: the shape of a graph input (repeatable; a dimension may be a symbol)")
	fs.Var(&lf.dims, "dim", "`sym=8`: the size of a symbolic dimension everywhere (repeatable)")
	fs.Var(&lf.valueTypes, "value-type", "`name=f32[1,64,56,56]`: the type of an output of a custom or data-dependent op (repeatable)")
	fs.StringVar(&lf.debug, "d", "", "debug `flags`, comma-separated: check (verify the IR after every pass), dump (print the IR after every pass to stderr)")
}

// options turns the flags into pipeline.LoadOptions; the IR dump goes to
// st.Err.
func (lf *loadFlags) options(st *Streams, requireStatic bool) (pipeline.LoadOptions, error) {
	lo := pipeline.LoadOptions{RequireStatic: requireStatic}
	var err error
	if lo.InputShapes, err = parseInputShapes(lf.inputShapes); err != nil {
		return lo, err
	}
	if lo.Dims, err = parseDims(lf.dims); err != nil {
		return lo, err
	}
	if lo.ValueTypes, err = parseValueTypes(lf.valueTypes); err != nil {
		return lo, err
	}
	for _, f := range strings.Split(lf.debug, ",") {
		switch f {
		case "":
		case "check":
			lo.Check = true
		case "dump":
			if st != nil {
				lo.Dump = st.Err
			}
		default:
			return lo, usagef("-d %q: unknown debug flag %q (want check or dump)", lf.debug, f)
		}
	}
	return lo, nil
}

// parseValueTypes parses -value-type name=TYPE.
func parseValueTypes(list listFlag) (map[string]ir.TensorType, error) {
	out := map[string]ir.TensorType{}
	for _, s := range list {
		name, spec, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, usagef("-value-type %q: want name=TYPE such as y=f32[1,64,56,56]", s)
		}
		t, err := irtext.ParseType(spec)
		if err != nil {
			return nil, usagef("-value-type %q: %v", s, err)
		}
		out[name] = t
	}
	return out, nil
}

// parseInputShapes parses -input-shape name=1x3x224x224 (a dimension may
// be a symbol; "scalar" or nothing is a scalar).
func parseInputShapes(list listFlag) (map[string][]ir.Dim, error) {
	shapes := map[string][]ir.Dim{}
	for _, s := range list {
		name, spec, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, usagef("-input-shape %q: want name=DIMxDIMx… such as input=1x3x224x224", s)
		}
		dims := []ir.Dim{}
		if spec != "" && spec != "scalar" {
			for _, d := range strings.Split(spec, "x") {
				if n, err := strconv.ParseInt(d, 10, 64); err == nil {
					if n < 0 {
						return nil, usagef("-input-shape %q: negative dimension %d", s, n)
					}
					dims = append(dims, ir.D(n))
				} else if d != "" && isIdent(d) {
					dims = append(dims, ir.SymDim(d))
				} else {
					return nil, usagef("-input-shape %q: bad dimension %q (want a size or a symbol name)", s, d)
				}
			}
		}
		shapes[name] = dims
	}
	return shapes, nil
}

// parseDims parses -dim sym=N.
func parseDims(list listFlag) (map[string]int64, error) {
	dims := map[string]int64{}
	for _, s := range list {
		name, val, ok := strings.Cut(s, "=")
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || name == "" || err != nil || n < 0 {
			return nil, usagef("-dim %q: want symbol=SIZE such as batch=8", s)
		}
		dims[name] = n
	}
	return dims, nil
}

// trainFlags are the flags that build a training graph (passes/autodiff):
// -train, -loss, -trainable, -optimizer.
type trainFlags struct {
	train     bool
	loss      string
	trainable string
	optimizer string
}

func (tf *trainFlags) register(fs *flag.FlagSet, trainDoc string) {
	fs.BoolVar(&tf.train, "train", false, trainDoc)
	fs.StringVar(&tf.loss, "loss", "sum", "with -train, the `loss`: sum, mean, mse:TARGET_INPUT or softmax-xent:LABEL_INPUT, each optionally :OUTPUT (default: the first graph output)")
	fs.StringVar(&tf.trainable, "trainable", "all", "with -train, the `parameters` to differentiate: all (every floating-point initializer on a differentiable path) or NAME,NAME,...")
	fs.StringVar(&tf.optimizer, "optimizer", "none", "with -train, `none` (outputs <param>_grad) or sgd:LR (outputs the updated parameters <param>_new)")
}

// options returns the autodiff options, nil without -train; the other
// flags without -train are a usage error.
func (tf *trainFlags) options() (*autodiff.Options, error) {
	if !tf.train {
		for _, f := range []struct{ name, val, def string }{{"loss", tf.loss, "sum"}, {"trainable", tf.trainable, "all"}, {"optimizer", tf.optimizer, "none"}} {
			if f.val != f.def {
				return nil, usagef("-%s applies to training graphs: add -train", f.name)
			}
		}
		return nil, nil
	}
	loss, err := autodiff.ParseLoss(tf.loss)
	if err != nil {
		return nil, usagef("-loss %q: %v", tf.loss, err)
	}
	trainable, err := autodiff.ParseTrainable(tf.trainable)
	if err != nil {
		return nil, usagef("-trainable %q: %v", tf.trainable, err)
	}
	opt, err := autodiff.ParseOptimizer(tf.optimizer)
	if err != nil {
		return nil, usagef("-optimizer %q: %v", tf.optimizer, err)
	}
	return &autodiff.Options{Loss: loss, Trainable: trainable, Optimizer: opt}, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r == '.' || r == ':' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}
