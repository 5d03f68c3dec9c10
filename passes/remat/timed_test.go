package remat

import (
	"errors"
	"strings"
	"testing"
)

// TestTimedStatus: every way a solve ends has its table status.
func TestTimedStatus(t *testing.T) {
	for _, tt := range []struct {
		t          Timed
		status     string
		noteSubstr string
	}{
		{Timed{Plan: &Plan{Optimal: true}}, "optimal", ""},
		{Timed{Plan: &Plan{}}, "feasible", ""},
		{Timed{Plan: &Plan{}, CheckErr: errors.New("stage 2 reads a freed value")}, "error", "fails Check"},
		{Timed{Err: &BudgetError{NeedBytes: 10}}, "over-budget", ""},
		{Timed{Err: &BudgetError{NeedBytes: 10, Proven: true}}, "infeasible", ""},
		{Timed{Err: ErrInfeasible}, "infeasible", ""},
		{Timed{Err: errors.New("context deadline exceeded"), TimedOut: true}, "timeout", "time limit"},
		{Timed{}, "error", "neither a plan nor an error"},
		{Timed{Err: errors.New("cbc crashed")}, "error", "cbc crashed"},
	} {
		status, note := tt.t.Status()
		if status != tt.status || (tt.noteSubstr == "" && note != "") || !strings.Contains(note, tt.noteSubstr) {
			t.Errorf("%+v: status %q, note %q; want %q with a note containing %q", tt.t, status, note, tt.status, tt.noteSubstr)
		}
	}
}
