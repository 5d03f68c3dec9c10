package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

// TestBudgetIn checks the search's budgets: the shortest figure that reads
// back as at least lo bytes and below hi, more decimals where the short
// one is not below hi, bytes where no figure in a unit fits.
func TestBudgetIn(t *testing.T) {
	for _, tt := range []struct {
		lo, hi int64
		want   string
	}{
		{130414, 0, "128KiB"},
		{130414, 132828, "128KiB"},
		{128512, 129024, "125.5KiB"},
		{1025, 1026, "1.001KiB"},
		{1<<20 + 1, 0, "1.1MiB"},
		{1<<20 + 1, 1<<20 + 1000, "1.0001MiB"},
		{1<<40 + 1, 1<<40 + 2, "1099511627777"},
		{1000, 0, "1000"},
	} {
		got := budgetIn(tt.lo, tt.hi)
		if got != tt.want {
			t.Errorf("budgetIn(%d, %d) = %q, want %q", tt.lo, tt.hi, got, tt.want)
		}
		b, err := remat.ParseBudget(got)
		if err != nil || b.Bytes < tt.lo || tt.hi > 0 && b.Bytes >= tt.hi {
			t.Errorf("budgetIn(%d, %d) = %q reads as %d bytes, %v: not within the bounds", tt.lo, tt.hi, got, b.Bytes, err)
		}
	}
}

// TestFitReachesSmallestTargetPeak: GoogLeNet's training graph at 123 KiB
// gets a plan from xla-greedy that raises ONNX Runtime's predicted peak
// (cmd/remat-compile's TestCompileRefusesPlanTheTargetDoesNotGainFrom);
// the *TargetError's search finds a looser budget whose plan lowers it, a
// fresh fit at the budget it names reaches the same peak, and with the
// search off the error has no Reach.
func TestFitReachesSmallestTargetPeak(t *testing.T) {
	ctx := context.Background()
	load := func() *Model {
		t.Helper()
		m, err := Load(ctx, "zoo:googlenet", LoadOptions{RequireStatic: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Train(ctx, autodiff.Options{}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	greedy, ok := solvers.Lookup("xla-greedy")
	if !ok {
		t.Fatal("no xla-greedy solver")
	}
	// With the shapes shown: hidden, the plan does lower ORT's peak.
	o := FitOptions{Solver: greedy, Budget: remat.BudgetBytes(123 << 10), ORTShapes: ORTShapesShown}

	m := load()
	_, err := m.Fit(ctx, o)
	var te *TargetError
	if !errors.As(err, &te) {
		t.Fatalf("Fit at 123 KiB: %v; want a *TargetError (the premise no longer holds: choose another budget)", err)
	}
	r := te.Reach
	if r == nil || !r.Found() {
		t.Fatalf("the search found no budget that lowers ORT's peak: %v", err)
	}
	t.Logf("%v", err)
	if r.PeakBytes >= te.OriginalBytes || r.BudgetBytes <= te.BudgetBytes || r.BudgetBytes >= r.NoRematPeakBytes ||
		r.FromBytes != te.BudgetBytes || r.Probes < 1 || r.Probes > DefaultReachProbes {
		t.Errorf("Reach %+v for a failed budget of %d and an original peak of %d", *r, te.BudgetBytes, te.OriginalBytes)
	}
	if f := r.Fraction(); f <= 0 || f >= 1 {
		t.Errorf("Reach.Fraction() = %v, want within (0, 1)", f)
	}
	if want := "the smallest peak the ort target reached at a looser budget is " + remat.FormatBytes(r.PeakBytes); !strings.Contains(err.Error(), want) {
		t.Errorf("the error does not say %q: %v", want, err)
	}
	b, perr := remat.ParseBudget(r.Budget)
	if perr != nil || b.Bytes != r.BudgetBytes {
		t.Fatalf("Reach.Budget %q reads as %+v, %v; want exactly %d bytes", r.Budget, b, perr, r.BudgetBytes)
	}

	// The budget named fits, on a fresh build, with the peak found.
	o2 := o
	o2.Budget = b
	f, err := load().Fit(ctx, o2)
	if err != nil {
		t.Fatalf("Fit at the budget the search named, %s: %v", r.Budget, err)
	}
	if f.Placement.PeakBytes != r.PeakBytes || f.Placement.PeakBytes >= f.Original.PeakBytes || f.Remat.Recomputations == 0 {
		t.Errorf("Fit at %s: ORT peak %d (original %d, %d recomputations); the search reported %d",
			r.Budget, f.Placement.PeakBytes, f.Original.PeakBytes, f.Remat.Recomputations, r.PeakBytes)
	}

	// With the search off (a sweep's fits), the error stands alone.
	o.ReachProbes = -1
	if _, err := load().Fit(ctx, o); !errors.As(err, &te) || te.Reach != nil {
		t.Errorf("Fit with ReachProbes -1: %v; want a *TargetError without Reach", err)
	}
}

// TestTargetErrorSaysWhatTheSearchFound checks the message for each
// outcome of the search.
func TestTargetErrorSaysWhatTheSearchFound(t *testing.T) {
	base := TargetError{Target: "ort", OriginalBytes: 190 << 10, PeakBytes: 195 << 10, BudgetBytes: 125 << 10}
	for _, tt := range []struct {
		reach *Reach
		want  []string
		not   string
	}{
		{nil, []string{"does not lower the peak on the ort target: 195 KiB there against the original's 190 KiB"}, "looser"},
		{&Reach{Probes: 3, FromBytes: 125 << 10, NoRematPeakBytes: 130 << 10, PeakBytes: 188 << 10, BudgetBytes: 126 << 10, Budget: "126KiB"},
			[]string{"the smallest peak the ort target reached at a looser budget is 188 KiB, at 126 KiB (96.9% of the no-remat peak of 130 KiB; 3 fit(s) probed)"}, "interrupted"},
		{&Reach{Probes: 6, FromBytes: 125 << 10, NoRematPeakBytes: 130 << 10, PeakBytes: 190 << 10},
			[]string{"no looser budget probed lowered the ort peak below the original's either (6 fit(s) between 125 KiB and the no-remat peak, 130 KiB)"}, "smallest peak"},
		{&Reach{Probes: 1, FromBytes: 125 << 10, NoRematPeakBytes: 130 << 10, PeakBytes: 190 << 10, Interrupted: true},
			[]string{"no looser budget probed", ", the search interrupted"}, "smallest peak"},
	} {
		e := base
		e.Reach = tt.reach
		msg := e.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("TargetError with Reach %+v says %q; want %q in it", tt.reach, msg, w)
			}
		}
		if strings.Contains(msg, tt.not) {
			t.Errorf("TargetError with Reach %+v says %q; want no %q", tt.reach, msg, tt.not)
		}
	}
}
