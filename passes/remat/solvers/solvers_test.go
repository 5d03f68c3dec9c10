package solvers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvers"
)

func TestRegistryValidates(t *testing.T) {
	if err := solvers.Validate(solvers.All); err != nil {
		t.Fatal(err)
	}
	if solvers.All[0].Name != solvers.Default {
		t.Errorf("All[0] = %s, want the default %s first", solvers.All[0].Name, solvers.Default)
	}
	for _, s := range solvers.All {
		got, ok := solvers.Lookup(s.Name)
		if !ok || got.Name != s.Name {
			t.Errorf("Lookup(%q) = %q, %v", s.Name, got.Name, ok)
		}
		if up, ok := solvers.Lookup(strings.ToUpper(s.Name)); !ok || up.Name != s.Name {
			t.Errorf("Lookup(%q) = %q, %v; want a case-insensitive match", strings.ToUpper(s.Name), up.Name, ok)
		}
		if sum := solvers.Summary(s); sum == "" || strings.Contains(sum, "\n") {
			t.Errorf("Summary(%s) = %q; want one line", s.Name, sum)
		}
	}
	if _, ok := solvers.Lookup("no-such-solver"); ok {
		t.Error("Lookup found no-such-solver")
	}
}

func TestSummary(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"One sentence.", "One sentence."},
		{"First. Second.", "First."},
		{"Chen et al. (2016) greedy: b searched. More here.", "Chen et al. (2016) greedy: b searched."},
		{"On articulation points (Checkmate App. B), as §6.1 says. Rest.", "On articulation points (Checkmate App. B), as §6.1 says."},
		{"No period", "No period"},
		{"Spread\n\tover lines. Next.", "Spread over lines."},
		{"", ""},
	} {
		if got := solvers.Summary(remat.Solver{Doc: tt.doc}); got != tt.want {
			t.Errorf("Summary(%q) = %q, want %q", tt.doc, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	solve := func(context.Context, *remat.Problem, func(remat.Progress)) (*remat.Plan, error) { return nil, nil }
	ok := remat.Solver{Name: "chen-sqrtn", Doc: "Chen.", Solve: solve}
	for _, tt := range []struct {
		name string
		all  []remat.Solver
		want string // "" for valid
	}{
		{"valid", []remat.Solver{ok, {Name: "checkmate-milp2", Doc: "x", Solve: solve}}, ""},
		{"empty name", []remat.Solver{{Doc: "x", Solve: solve}}, `name ""`},
		{"upper case", []remat.Solver{{Name: "Chen", Doc: "x", Solve: solve}}, `name "Chen"`},
		{"underscore", []remat.Solver{{Name: "chen_greedy", Doc: "x", Solve: solve}}, `name "chen_greedy"`},
		{"space", []remat.Solver{{Name: "chen greedy", Doc: "x", Solve: solve}}, `name "chen greedy"`},
		{"leading digit", []remat.Solver{{Name: "2chen", Doc: "x", Solve: solve}}, `name "2chen"`},
		{"double hyphen", []remat.Solver{{Name: "chen--greedy", Doc: "x", Solve: solve}}, `name "chen--greedy"`},
		{"trailing hyphen", []remat.Solver{{Name: "chen-", Doc: "x", Solve: solve}}, `name "chen-"`},
		{"duplicate", []remat.Solver{ok, ok}, `name "chen-sqrtn" is used by solvers 0 and 1`},
		{"no doc", []remat.Solver{{Name: "a", Doc: " ", Solve: solve}}, "a has no Doc"},
		{"no solve", []remat.Solver{{Name: "a", Doc: "x"}}, "a has no Solve"},
	} {
		err := solvers.Validate(tt.all)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// chain is a linear network of n unit nodes of one byte each.
func chain(n int, budget int64) *remat.Problem {
	p := &remat.Problem{BudgetBytes: budget}
	for i := range n {
		var deps []int32
		if i > 0 {
			deps = []int32{int32(i - 1)}
		}
		p.Deps = append(p.Deps, deps)
		p.Seconds = append(p.Seconds, 1)
		p.Bytes = append(p.Bytes, 1)
		p.Recomputable = append(p.Recomputable, true)
	}
	p.Outputs = []int32{int32(n - 1)}
	return p
}

// TestAutoInfeasible checks the error of a budget no plan meets: a
// BudgetError with the smallest peak reached and its plan, and one
// attempt per solver run in the trace.
func TestAutoInfeasible(t *testing.T) {
	p := chain(6, 1) // every step holds an input and an output: 2 bytes at least
	var attempts []remat.Attempt
	ctx := remat.WithTrace(context.Background(), &remat.Trace{Attempt: func(a remat.Attempt) { attempts = append(attempts, a) }})
	_, err := solvers.Auto.Solve(ctx, p, nil)
	var be *remat.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("Solve = %v, want a *remat.BudgetError", err)
	}
	if be.NeedBytes != 2 || be.HaveBytes != 1 {
		t.Errorf("NeedBytes %d, HaveBytes %d; want 2, 1", be.NeedBytes, be.HaveBytes)
	}
	if be.Plan != nil {
		if res, err := remat.Evaluate(p, be.Plan); err != nil || res.PeakBytes != be.NeedBytes {
			t.Errorf("BudgetError.Plan: peak %d, %v; want %d", res.PeakBytes, err, be.NeedBytes)
		}
	}
	if len(attempts) == 0 || attempts[0].Solver != "checkpoint-all" || attempts[0].Status != "over-budget" {
		t.Errorf("attempts %+v; want checkpoint-all over budget first", attempts)
	}
}

// TestAutoProgress checks that Auto reports progress with a monotone
// clock and names the chosen solver.
func TestAutoProgress(t *testing.T) {
	p := chain(8, 4)
	var reports []remat.Progress
	chosen := ""
	ctx := remat.WithTrace(context.Background(), &remat.Trace{Chosen: func(s string) { chosen = s }})
	plan, err := solvers.Auto.Solve(ctx, p, func(pr remat.Progress) { reports = append(reports, pr) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remat.Check(p, plan); err != nil {
		t.Fatal(err)
	}
	if plan.Solver != solvers.AutoName || chosen == "" || chosen == solvers.AutoName {
		t.Errorf("plan.Solver %q, chosen %q; want auto and the solver whose plan it is", plan.Solver, chosen)
	}
	if len(reports) == 0 {
		t.Fatal("no progress reports")
	}
	for k := 1; k < len(reports); k++ {
		if reports[k].Elapsed < reports[k-1].Elapsed {
			t.Errorf("report %d: Elapsed %v after %v", k, reports[k].Elapsed, reports[k-1].Elapsed)
		}
	}
}
