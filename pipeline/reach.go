package pipeline

// The search that a *TargetError runs: when the plan at the user's budget
// does not lower the target's peak, which looser budget does, and how low
// the target's peak gets there.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/remat-compile/remat/passes/remat"
)

// DefaultReachProbes bounds the fits of the search for the smallest peak
// the target reaches when FitOptions.ReachProbes is 0.
const DefaultReachProbes = 6

// Reach is what the search for the smallest peak the target reaches found
// after a *TargetError: the fits it made at looser budgets, and the one of
// them whose target peak is lowest and below the original's.
type Reach struct {
	// Probes is the number of budgets fitted.
	Probes int
	// FromBytes is the budget that failed, the tight end of the search;
	// NoRematPeakBytes the peak without rematerialization under the
	// solver's liveness model, its loose end.
	FromBytes, NoRematPeakBytes int64
	// PeakBytes is the smallest peak the target reached: the original's
	// when no probe lowered it (then BudgetBytes is 0 and Budget empty).
	PeakBytes int64
	// BudgetBytes is the solver's budget that reached PeakBytes, in the
	// liveness model's bytes, and Budget the -budget value that gives
	// exactly that budget (ParseBudget reads it back as BudgetBytes).
	BudgetBytes int64
	Budget      string
	// Interrupted reports that the context was cancelled before the
	// search was done; the probes before it stand.
	Interrupted bool
}

// Found reports whether a probed budget lowered the target's peak.
func (r *Reach) Found() bool { return r.BudgetBytes > 0 }

// Fraction is BudgetBytes as a fraction of the no-remat peak.
func (r *Reach) Fraction() float64 {
	if r.NoRematPeakBytes <= 0 {
		return 0
	}
	return float64(r.BudgetBytes) / float64(r.NoRematPeakBytes)
}

// describe says what the search found, for TargetError's message.
func (r *Reach) describe(target string) string {
	var s string
	if r.Found() {
		s = fmt.Sprintf("the smallest peak the %s target reached at a looser budget is %s, at %s (%.1f%% of the no-remat peak of %s; %d fit(s) probed)",
			target, remat.FormatBytes(r.PeakBytes), remat.FormatBytes(r.BudgetBytes), 100*r.Fraction(), remat.FormatBytes(r.NoRematPeakBytes), r.Probes)
	} else {
		s = fmt.Sprintf("no looser budget probed lowered the %s peak below the original's either (%d fit(s) between %s and the no-remat peak, %s)",
			target, r.Probes, remat.FormatBytes(r.FromBytes), remat.FormatBytes(r.NoRematPeakBytes))
	}
	if r.Interrupted {
		s += ", the search interrupted"
	}
	return s
}

// reachGranularity is how close the search's two ends may come before it
// stops: 1 KiB or 0.5% of the no-remat peak, whichever is larger.
func reachGranularity(noRematPeak int64) int64 {
	return max(1024, noRematPeak/200)
}

// reach runs the search for the smallest peak the target reaches when err
// is a *TargetError (and the search is on: FitOptions.ReachProbes), and
// records its result in the error's Reach. It returns err.
//
// The failed budget is too tight, or at least not good, for the target;
// the no-remat peak is a budget at which nothing is recomputed. The
// search bisects between the two under the solver's liveness model: it
// fits a fresh build of m (Rebuild) at a budget halfway between, with the
// same options as the failed fit, tightens towards the failed budget when
// that fit succeeds and loosens when it does not, and keeps the fit whose
// target peak is lowest and below the original's (ties: the least
// overhead, then the tighter budget). It stops after ReachProbes fits, when the two ends are
// closer than reachGranularity, or when ctx is cancelled (a fit
// interrupted mid-solve is not kept: its plan would not be found again).
//
// Each probed budget is a -budget value in bytes read back as exactly the
// bytes probed (budgetIn), so that compile given Reach.Budget fits the
// very budget the search found, on the same build of the model; the
// solver then finds the same plan again where it is deterministic (the
// heuristics are; a time-limited search may find another).
func (m *Model) reach(ctx context.Context, f *Fit, o FitOptions, err error) error {
	var te *TargetError
	if !errors.As(err, &te) || o.ReachProbes < 0 || f.Remat == nil || f.Tiled != nil {
		return err
	}
	probes := o.ReachProbes
	if probes == 0 {
		probes = DefaultReachProbes
	}
	o.ReachProbes = -1 // the probes do not search in turn
	o.Timelines = false
	lo, hi := f.Remat.BudgetBytes, f.Remat.BeforePeakBytes
	r := &Reach{FromBytes: lo, NoRematPeakBytes: hi, PeakBytes: te.OriginalBytes}
	te.Reach = r
	step := reachGranularity(hi)
	var bestOverhead float64
	for r.Probes < probes && hi-lo > step {
		if ctx.Err() != nil {
			r.Interrupted = true
			break
		}
		s := budgetIn(lo+(hi-lo)/2, hi)
		b, perr := remat.ParseBudget(s)
		if perr != nil || b.Bytes <= lo || b.Bytes >= hi {
			break // cannot happen: budgetIn stays within its bounds
		}
		n, rerr := m.Rebuild(ctx)
		if rerr != nil {
			break
		}
		o.Budget = remat.BudgetBytes(b.Bytes)
		pf, ferr := n.Fit(ctx, o)
		r.Probes++
		if ctx.Err() != nil {
			r.Interrupted = true
			break
		}
		var ib *remat.InfeasibleBudgetError
		var pte *TargetError
		switch {
		case ferr == nil:
			// The plan fits and does not raise the target's peak (or
			// recomputes nothing): try tighter.
			hi = b.Bytes
			if pf.Tiled != nil || pf.Original == nil || pf.Placement == nil {
				continue
			}
			peak := pf.Placement.PeakBytes
			if peak < r.PeakBytes || peak == r.PeakBytes && r.Found() && pf.Remat.OverheadSeconds <= bestOverhead {
				r.PeakBytes, r.BudgetBytes, r.Budget = peak, b.Bytes, s
				bestOverhead = pf.Remat.OverheadSeconds
			}
		case errors.As(ferr, &ib), errors.As(ferr, &pte):
			lo = b.Bytes
		default:
			// Another failure would recur at every budget: the search
			// stops with what it found.
			return err
		}
	}
	return err
}

// SuggestBudget returns a -budget value of at least need bytes, short
// enough to type: need rounded up to two or three significant digits of
// the largest binary unit it fills ("24MiB", "1.3GiB", "96KiB").
func SuggestBudget(need int64) string {
	return budgetIn(need, 0)
}

// budgetIn returns the shortest -budget value that ParseBudget reads as
// at least lo bytes and, when hi is positive, below hi: lo rounded up in
// the largest binary unit it fills, to one decimal below 10 units and to
// whole units above, and with more decimals where that is not below hi;
// lo in bytes when no figure in a unit is. The caller ensures lo < hi.
func budgetIn(lo, hi int64) string {
	plain := strconv.FormatInt(lo, 10)
	if lo < 1024 {
		return plain
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	u, mult := 0, int64(1024)
	for u < len(units)-1 && lo >= mult*1024 {
		u++
		mult *= 1024
	}
	f := float64(lo) / float64(mult)
	scale := 10.0 // one decimal below 10 units
	if f >= 10 {
		scale = 1
	}
	for ; scale <= 1e6; scale *= 10 {
		v := math.Ceil(f*scale) / scale
		s := strconv.FormatFloat(v, 'f', -1, 64) + units[u]
		if b, err := remat.ParseBudget(s); err == nil && b.Bytes >= lo && (hi <= 0 || b.Bytes < hi) {
			return s
		}
	}
	return plain
}
