package passes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

func tiny() *ir.Graph {
	g := ir.NewGraph("g")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 4))
	n := g.NewNode("Relu", "", []*ir.Value{x}, []string{"y"})
	g.AddOutput(n.Outputs[0])
	return g
}

func TestRunTurnsPanicIntoInternalError(t *testing.T) {
	boom := &Pass{Name: "boom", Doc: "Panics.", Run: func(*State, *ir.Graph) (bool, error) { panic("index out of range") }}
	_, err := Run(context.Background(), tiny(), []*Pass{boom}, Options{})
	var ie *InternalError
	if !errors.As(err, &ie) || ie.Pass != "boom" || !strings.Contains(err.Error(), "internal error in pass boom: panic: index out of range") {
		t.Fatalf("Run = %v, want an InternalError naming pass boom", err)
	}
}

func TestRunVerifiesBetweenPasses(t *testing.T) {
	breaker := &Pass{Name: "breaker", Doc: "Breaks use lists.", Run: func(_ *State, g *ir.Graph) (bool, error) {
		g.Inputs[0].Uses = nil
		return true, nil
	}}
	_, err := Run(context.Background(), tiny(), []*Pass{breaker}, Options{Verify: true})
	if !IsInternal(err) || !strings.Contains(err.Error(), "breaker") {
		t.Fatalf("Run = %v, want an internal error naming pass breaker", err)
	}
	// Without Verify, the broken graph goes unnoticed by the driver.
	if _, err := Run(context.Background(), tiny(), []*Pass{breaker}, Options{}); err != nil {
		t.Fatalf("Run without Verify = %v", err)
	}
}

func TestRunStopsOnCancelAndSkipsDisabled(t *testing.T) {
	ran := 0
	count := &Pass{Name: "count", Doc: "Counts.", Run: func(st *State, g *ir.Graph) (bool, error) {
		ran++
		st.Report(ir.Pos{Node: "n"}, Warning, "ran %d", ran)
		return false, nil
	}}
	st, err := Run(context.Background(), tiny(), []*Pass{count, count}, Options{File: "m.onnx"})
	if err != nil || ran != 2 || len(st.Timings) != 2 {
		t.Fatalf("Run = %v, ran %d, %d timings; want nil, 2, 2", err, ran, len(st.Timings))
	}
	if got := st.Diagnostics[1].String(); got != `m.onnx: node "n": warning: ran 2` {
		t.Fatalf("diagnostic = %q", got)
	}
	if _, err := Run(context.Background(), tiny(), []*Pass{count}, Options{Disabled: map[string]bool{"count": true}}); err != nil || ran != 2 {
		t.Fatalf("disabled pass ran (ran=%d, err=%v)", ran, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, tiny(), []*Pass{count}, Options{}); !errors.Is(err, context.Canceled) || ran != 2 {
		t.Fatalf("Run after cancel = %v (ran=%d), want context.Canceled", err, ran)
	}
}

func TestValidate(t *testing.T) {
	ok := &Pass{Name: "a", Doc: "A.", Run: func(*State, *ir.Graph) (bool, error) { return false, nil }}
	if err := Validate([]*Pass{ok}); err != nil {
		t.Fatal(err)
	}
	err := Validate([]*Pass{ok, ok, {Name: "b"}})
	if err == nil || !strings.Contains(err.Error(), "appears twice") || !strings.Contains(err.Error(), "pass b has no Doc") {
		t.Fatalf("Validate = %v", err)
	}
}
