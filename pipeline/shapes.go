package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/targets/ort"
)

// fitBoth is Fit under ORTShapesAuto: it fits m for ONNX Runtime with the
// activations' shapes shown to its planner and a fresh build of m with
// them hidden, to the same budget (a percentage is of the original's ORT
// peak either way: targets/ort predicts the original as given), and keeps
// the better of the two (better): m then holds that fit's graph.
//
// Neither writing is better on every graph. Hidden, ORT's planner can
// neither hold a freed buffer for the next value of its shape (which in a
// training graph keeps a dropped activation's memory until the backward
// value of its shape takes it) nor write a unary op in place (which saves
// a buffer at every Relu of an inference graph).
func (m *Model) fitBoth(ctx context.Context, o FitOptions) (*Fit, error) {
	n, err := m.Rebuild(ctx)
	if err != nil {
		return nil, err
	}
	o.Target = ort.Target{}
	shown, serr := m.fit(ctx, o)
	if ctx.Err() != nil {
		return shown, serr // interrupted: the first fit's best stands
	}
	if shown != nil {
		o.Budget = shown.Budget
	}
	o.Target = ort.Target{HideShapes: true}
	hidden, herr := n.fit(ctx, o)
	if !better(hidden, herr, shown, serr) {
		if shown != nil {
			shown.OtherShapes = describeFit(hidden, herr)
		}
		return shown, serr
	}
	*m = *n
	if hidden != nil {
		hidden.OtherShapes = describeFit(shown, serr)
	}
	return hidden, herr
}

// better reports whether fit a (error aerr), the shapes hidden, is better
// than fit b (berr), the shapes shown: a succeeded and b did not; both did
// and a's plan computes less (on a tie the model is written as it is,
// with its shapes); neither did and a got closer (reachedBytes).
func better(a *Fit, aerr error, b *Fit, berr error) bool {
	switch {
	case aerr != nil && berr != nil:
		ra, rb := reachedBytes(aerr), reachedBytes(berr)
		return ra > 0 && (rb <= 0 || ra < rb)
	case aerr != nil:
		return false
	case berr != nil:
		return true
	}
	const rel = 1e-9
	return a.Remat.PlanSeconds < b.Remat.PlanSeconds*(1-rel)
}

// reachedBytes is the smallest peak a failed fit reached, from its error
// (0 when the error says none).
func reachedBytes(err error) int64 {
	var te *TargetError
	var tle *TileError
	var ie *remat.InfeasibleBudgetError
	switch {
	case errors.As(err, &tle):
		return tle.Reached
	case errors.As(err, &ie):
		return ie.NeedBytes
	case errors.As(err, &te):
		if te.Reach != nil && te.Reach.Found() {
			return te.Reach.PeakBytes
		}
		return te.PeakBytes
	}
	return 0
}

// describeFit says what a fit (error err) gives, for Fit.OtherShapes: its
// predicted compute and its peak on the target, or what it reached.
func describeFit(f *Fit, err error) string {
	if err == nil && f != nil {
		s := fmt.Sprintf("%+.2f%% predicted compute", f.Remat.OverheadPercent)
		if t := f.Tiled; t != nil {
			extra := 0.0
			for _, g := range t.Regions {
				extra += g.ExtraPercent
			}
			for _, l := range t.Late {
				extra += l.ExtraPercent
			}
			s = fmt.Sprintf("tiled (%+.1f%% compute), then %s", extra, s)
		}
		if f.Placement != nil {
			s += ", ORT peak " + remat.FormatBytes(f.Placement.PeakBytes)
		}
		return s
	}
	if r := reachedBytes(err); r > 0 {
		return "no plan within the budget; the smallest peak reached " + remat.FormatBytes(r)
	}
	return "no plan within the budget"
}
