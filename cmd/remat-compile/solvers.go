package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

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
