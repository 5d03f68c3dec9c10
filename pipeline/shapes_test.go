package pipeline

import (
	"errors"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets"
)

// TestBetter: how -ort-shapes auto picks between the fit with the shapes
// hidden (a) and the one with them shown (b).
func TestBetter(t *testing.T) {
	fit := func(seconds float64, peak int64) *Fit {
		return &Fit{Remat: &remat.Result{PlanSeconds: seconds}, Placement: &targets.Placement{PeakBytes: peak}}
	}
	refused := func(reached int64) error {
		return &remat.InfeasibleBudgetError{BudgetError: &remat.BudgetError{NeedBytes: reached}}
	}
	other := errors.New("no plan")
	for _, c := range []struct {
		name string
		a    *Fit
		aerr error
		b    *Fit
		berr error
		want bool
	}{
		{"hidden computes less", fit(1.0, 200), nil, fit(1.1, 100), nil, true},
		{"hidden computes more", fit(1.1, 100), nil, fit(1.0, 200), nil, false},
		{"a tie keeps the shapes shown, whatever the peaks", fit(1.0, 100), nil, fit(1.0, 200), nil, false},
		{"only hidden fits", fit(2.0, 100), nil, nil, refused(300), true},
		{"only shown fits", nil, refused(100), fit(2.0, 300), nil, false},
		{"both refused, hidden reaches lower", nil, refused(100), nil, refused(200), true},
		{"both refused, shown reaches lower", nil, refused(300), nil, refused(200), false},
		{"both refused, hidden says nothing", nil, other, nil, refused(200), false},
	} {
		if got := better(c.a, c.aerr, c.b, c.berr); got != c.want {
			t.Errorf("%s: better = %v, want %v", c.name, got, c.want)
		}
	}
}
