package solvers_test

import (
	"testing"

	"github.com/remat-compile/remat/passes/remat/solvers"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

func TestAutoConformance(t *testing.T) {
	solvertest.Run(t, solvers.Auto, solvertest.Options{})
}
