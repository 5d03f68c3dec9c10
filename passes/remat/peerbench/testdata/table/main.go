// Command table prints MOCCASIN's Table 3 reproduced by peerbench, as
// Markdown:
//
//	go run ./passes/remat/peerbench/testdata/table [-time-limit 60s] [-solvers auto,lns] [-graphs G1,CM1] [-budgets 0.9,0.8]
//
// It lives under testdata so that it is no part of the module's packages;
// the CLI's bench command is the supported way to run the same function.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/peerbench"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

func main() {
	limit := flag.Duration("time-limit", 60*time.Second, "time limit of each solve")
	names := flag.String("solvers", "auto", "comma-separated solvers")
	graphs := flag.String("graphs", "", "comma-separated graphs (G1-G4, CM1, CM2); empty for all")
	budgets := flag.String("budgets", "0.9,0.8", "comma-separated budget multipliers")
	flag.Parse()
	o := peerbench.Options{TimeLimit: *limit}
	for _, n := range strings.Split(*names, ",") {
		s, ok := solvers.Lookup(n)
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown solver %q\n", n)
			os.Exit(2)
		}
		o.Solvers = append(o.Solvers, s)
	}
	if *graphs != "" {
		o.Graphs = strings.Split(*graphs, ",")
	}
	for _, b := range strings.Split(*budgets, ",") {
		m, err := strconv.ParseFloat(b, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad budget %q\n", b)
			os.Exit(2)
		}
		o.Multipliers = append(o.Multipliers, m)
	}
	o.Progress = func(r peerbench.Row) {
		fmt.Fprintf(os.Stderr, "%s %.0f%% %s: %s TDI %.2f%% peak %d (%s) in %.1f s (MOCCASIN's TDI at %.1f s), gap %.2f pp\n",
			r.Peer.Key, 100*r.Multiplier, r.Solver, r.Status, r.TDI, r.Peak, remat.FormatBytes(r.Peak), r.TimeToBest, r.TimeToPublished, r.Gap)
	}
	rows, err := peerbench.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := peerbench.WriteMarkdown(os.Stdout, rows); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
