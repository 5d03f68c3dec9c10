package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

func solversCmd() *command {
	return &command{
		name:  "solvers",
		usage: "",
		short: "List the rematerialization solvers that -solver takes, one line each.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) != 0 {
					return usagef("solvers takes no arguments, got %d", len(args))
				}
				return runSolvers(st)
			}
		},
	}
}

// runSolvers prints the registry: name, kind (exact or heuristic, and the
// default), and the first sentence of its Doc.
func runSolvers(st *Streams) error {
	w := tabwriter.NewWriter(st.Out, 0, 0, 2, ' ', 0)
	for _, s := range solvers.All {
		kind := "heuristic"
		if s.Exact {
			kind = "exact"
		}
		if s.Name == solvers.Default {
			kind = "default"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, kind, solvers.Summary(s))
	}
	return w.Flush()
}

// solverFlags checks -solver and -time-limit, as compile, solve and
// validate-cost take them.
func solverFlags(name string, limit time.Duration) (remat.Solver, error) {
	s, ok := solvers.Lookup(name)
	if !ok {
		return remat.Solver{}, usagef("-solver %q: unknown solver; the solvers are %s (see `remat-compile solvers`)", name, strings.Join(solvers.Names(), ", "))
	}
	return s, timeLimitFlag(limit)
}

// timeLimitFlag checks -time-limit.
func timeLimitFlag(limit time.Duration) error {
	if limit <= 0 {
		return usagef("-time-limit %v: want a positive duration such as 60s", limit)
	}
	return nil
}
