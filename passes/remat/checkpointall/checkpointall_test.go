package checkpointall_test

import (
	"testing"

	"github.com/remat-compile/remat/passes/remat/checkpointall"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

func TestConformance(t *testing.T) {
	solvertest.Run(t, checkpointall.Solver, solvertest.Options{})
}
