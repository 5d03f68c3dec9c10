package remat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// InfeasibleBudgetError is the pass's error when no plan fits the budget:
// the solver's *BudgetError (Unwrap gives it, so errors.As finds it and a
// proven one matches ErrInfeasible) with what a user needs to pick a
// budget that works.
type InfeasibleBudgetError struct {
	*BudgetError
	// Budget is the budget as given; NoRematPeakBytes the peak without
	// rematerialization.
	Budget           Budget
	NoRematPeakBytes int64
	// Solver is the solver run; By the one that reached NeedBytes (Solver
	// itself for a single solver); Attempts what each solver of a
	// portfolio reached.
	Solver, By string
	Attempts   []Attempt
	// FloorBytes is the largest working set of a single node, FloorNode:
	// no plan peaks lower. When NeedBytes equals it, the budget is below
	// what that node alone needs.
	FloorBytes int64
	FloorNode  string
	// FloorWorkspace is the part of FloorBytes that is the node's kernel
	// workspace (Problem.Workspace).
	FloorWorkspace int64
	// ReuseFloorBytes and ReuseFloorNode are Result's: no plan peaks
	// lower under the allocator's buffer reuse (0 when that floor is
	// FloorBytes).
	ReuseFloorBytes int64
	ReuseFloorNode  string
}

// FloorClause says, after the sentence that the budget is below the
// smallest peak reached, what the floors prove: that no plan peaks lower
// than that peak, or that no plan fits the budget; "" when they prove
// neither.
func (e *InfeasibleBudgetError) FloorClause() string {
	switch {
	case e.FloorBytes > 0 && e.NeedBytes == e.FloorBytes:
		return fmt.Sprintf("; no plan can peak lower: node %s alone needs %s %s", e.FloorNode, FormatBytes(e.FloorBytes), FloorWhat(e.FloorWorkspace))
	case e.ReuseFloorBytes > 0 && e.NeedBytes == e.ReuseFloorBytes:
		return fmt.Sprintf("; no plan can peak lower under the allocator's buffer reuse: at node %s every plan holds %s, its working set and the freed buffers that wait for later values of their layout", e.ReuseFloorNode, FormatBytes(e.ReuseFloorBytes))
	case e.ReuseFloorBytes > e.HaveBytes:
		return fmt.Sprintf("; no plan fits the budget under the allocator's buffer reuse: at node %s every plan holds at least %s, its working set and the freed buffers that wait for later values of their layout", e.ReuseFloorNode, FormatBytes(e.ReuseFloorBytes))
	}
	return ""
}

// FloorWhat says what the floor node's working set holds: its inputs and
// outputs, and its kernel workspace when it has one.
func FloorWhat(workspace int64) string {
	if workspace > 0 {
		return fmt.Sprintf("for its inputs and outputs and its kernel's %s workspace", FormatBytes(workspace))
	}
	return "for its inputs and outputs"
}

func (e *InfeasibleBudgetError) Unwrap() error { return e.BudgetError }

func (e *InfeasibleBudgetError) Error() string {
	var b strings.Builder
	budget := FormatBytes(e.HaveBytes)
	if e.Budget.Fraction > 0 && e.Budget.Bytes <= 0 {
		budget = fmt.Sprintf("%s of %s (%s)", e.Budget, e.Budget.Reference(), FormatBytes(e.HaveBytes))
	}
	switch {
	case e.Proven:
		fmt.Fprintf(&b, "remat: budget %s is below the smallest peak possible, %s (proved by %s)", budget, FormatBytes(e.NeedBytes), e.By)
	case len(e.Attempts) > 0:
		fmt.Fprintf(&b, "remat: budget %s is below the smallest peak any solver reached, %s (%s)", budget, FormatBytes(e.NeedBytes), e.By)
	default:
		fmt.Fprintf(&b, "remat: budget %s is below the smallest peak %s reached, %s", budget, e.Solver, FormatBytes(e.NeedBytes))
	}
	b.WriteString(e.FloorClause())
	if len(e.Attempts) > 0 {
		b.WriteString("; per solver:")
		for k, a := range e.Attempts {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s ", a.Solver)
			switch {
			case a.PeakBytes > 0:
				b.WriteString(FormatBytes(a.PeakBytes))
			default:
				b.WriteString(a.Status)
			}
		}
	}
	return b.String()
}

// FormatBytes formats a byte count in binary units with three significant
// digits: "512 B", "23.4 MiB", "1.50 GiB".
func FormatBytes(n int64) string {
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, u := float64(n)/1024, 0
	for math.Abs(f) >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	switch {
	case math.Abs(f) >= 100:
		return fmt.Sprintf("%.0f %s", f, units[u])
	case math.Abs(f) >= 10:
		return fmt.Sprintf("%.1f %s", f, units[u])
	}
	return fmt.Sprintf("%.2f %s", f, units[u])
}

// solveError turns a solver's error into the pass's.
func solveError(opts Options, res *Result, err error) error {
	name := opts.Solver.Name
	var be *BudgetError
	if errors.As(err, &be) {
		by := name
		if len(res.Attempts) > 0 {
			by = bestAttempt(res.Attempts, be.NeedBytes, be.Proven)
		}
		return &InfeasibleBudgetError{
			BudgetError: be, Budget: opts.Budget, NoRematPeakBytes: res.BeforePeakBytes,
			Solver: name, By: by, Attempts: res.Attempts,
			FloorBytes: res.FloorBytes, FloorNode: res.FloorNode, FloorWorkspace: res.FloorWorkspace,
			ReuseFloorBytes: res.ReuseFloorBytes, ReuseFloorNode: res.ReuseFloorNode,
		}
	}
	if errors.Is(err, ErrInfeasible) {
		return fmt.Errorf("remat: budget %s: %w (solver %s)", FormatBytes(res.BudgetBytes), err, name)
	}
	if errors.Is(err, context.DeadlineExceeded) && opts.TimeLimit > 0 {
		return fmt.Errorf("remat: solver %s found no plan within the time limit of %v: %w", name, opts.TimeLimit, err)
	}
	return fmt.Errorf("remat: solver %s: %w", name, err)
}

// bestAttempt names the attempt that reached need: the first with that
// peak, preferring the one that proved it.
func bestAttempt(attempts []Attempt, need int64, proven bool) string {
	if proven {
		for _, a := range attempts {
			if a.Status == "infeasible" {
				return a.Solver
			}
		}
	}
	for _, a := range attempts {
		if a.PeakBytes == need {
			return a.Solver
		}
	}
	return attempts[0].Solver
}
