package interchange_test

import (
	"errors"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/interchange"
)

// The small MOCCASIN graph (read_test.go) in its order 0, 2, 1, 3, 4, with
// node 0 (duration 0) recomputed in stage 2 so that it is not held while
// node 2 is: the schedule documents of this plan, byte for byte.
const (
	smallScheduleJSON = `{
  "format": "remat-compile schedule",
  "version": 1,
  "graph": "small",
  "solver": "hand",
  "nodes": 5,
  "budget_bytes": 600,
  "const_bytes": 0,
  "peak_bytes": 600,
  "cost": 11,
  "no_remat_cost": 11,
  "recomputations": 1,
  "outputs": [],
  "steps": [
    {"op":"compute","node":"0","stage":0,"memory_bytes":100},
    {"op":"compute","node":"2","stage":1,"memory_bytes":300},
    {"op":"free","node":"0","stage":1},
    {"op":"compute","node":"0","stage":2,"memory_bytes":300},
    {"op":"compute","node":"1","stage":2,"memory_bytes":600},
    {"op":"free","node":"0","stage":2},
    {"op":"compute","node":"3","stage":3,"memory_bytes":550},
    {"op":"free","node":"2","stage":3},
    {"op":"compute","node":"4","stage":4,"memory_bytes":360},
    {"op":"free","node":"1","stage":4},
    {"op":"free","node":"3","stage":4},
    {"op":"free","node":"4","stage":4}
  ]
}
`
	smallScheduleTWRemat = "c 0\nc 2\nf 0\nc 0\nc 1\nf 0\nc 3\nf 2\nc 4\nf 1\nf 3\nf 4\n"
)

func smallPlan(t *testing.T) (*remat.Problem, *remat.Plan) {
	t.Helper()
	g, err := interchange.Read([]byte(moccasinSmall), "small.json", interchange.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := g.Problem
	p.BudgetBytes = 600
	pl, err := remat.ScheduleStages(p, [][]int32{{0}, {1}, {0, 2}, {3}, {4}})
	if err != nil {
		t.Fatal(err)
	}
	pl.Solver = "hand"
	return p, pl
}

func TestScheduleFormats(t *testing.T) {
	p, pl := smallPlan(t)
	js, err := interchange.MarshalScheduleJSON(p, pl, "small")
	if err != nil {
		t.Fatal(err)
	}
	if string(js) != smallScheduleJSON {
		t.Errorf("schedule JSON:\n%s\nwant:\n%s", js, smallScheduleJSON)
	}
	tw, err := interchange.MarshalTWRematSchedule(p, pl)
	if err != nil {
		t.Fatal(err)
	}
	if string(tw) != smallScheduleTWRemat {
		t.Errorf("TWRemat schedule:\n%s\nwant:\n%s", tw, smallScheduleTWRemat)
	}
	// Ids that are not all integers: TWRemat output numbers the nodes by
	// position.
	p.Names = []string{"a", "c", "b", "d", "e"}
	tw, err = interchange.MarshalTWRematSchedule(p, pl)
	if err != nil || string(tw) != "c 0\nc 1\nf 0\nc 0\nc 2\nf 0\nc 3\nf 1\nc 4\nf 2\nf 3\nf 4\n" {
		t.Errorf("by position: %q, %v", tw, err)
	}
}

// TestScheduleChecked: a plan over the budget, or an illegal one, is not
// written.
func TestScheduleChecked(t *testing.T) {
	p, pl := smallPlan(t)
	p.BudgetBytes = 599
	var ce *remat.CheckError
	if _, err := interchange.MarshalScheduleJSON(p, pl, "small"); !errors.As(err, &ce) || !ce.Has(remat.OverBudget) {
		t.Errorf("over budget, JSON: %v", err)
	}
	if _, err := interchange.MarshalTWRematSchedule(p, pl); !errors.As(err, &ce) || !ce.Has(remat.OverBudget) {
		t.Errorf("over budget, TWRemat: %v", err)
	}
	p.BudgetBytes = 600
	pl.Ops = pl.Ops[:len(pl.Ops)-1] // the last free is missing
	if _, err := interchange.MarshalScheduleJSON(p, pl, "small"); !errors.As(err, &ce) {
		t.Errorf("illegal plan: %v", err)
	}
}
