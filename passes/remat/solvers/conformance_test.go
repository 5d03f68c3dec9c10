package solvers_test

import (
	"testing"

	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

func TestAutoConformance(t *testing.T) {
	opts := solvertest.Options{}
	if testing.Short() {
		// auto runs the MILP on graphs of up to 30 nodes: CBC takes
		// seconds on each of the larger random DAGs.
		opts.MaxNodes = 9
	}
	solvertest.Run(t, solvers.Auto, opts)
}
