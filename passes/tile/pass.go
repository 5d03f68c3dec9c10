package tile

import (
	"errors"
	"fmt"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
)

// NewPass returns Fit as a pass. It reports each tiled region as a note,
// and hands the Result to report (when not nil). A peak left above the
// budget is not an error of the pass: the regions that lowered it stay,
// a warning says where the peak remains, and the passes after it (remat)
// go on from there.
func NewPass(opts Options, report func(*Result)) *passes.Pass {
	return &passes.Pass{
		Name: "tile",
		Doc:  "Tile spatially local regions into bands that recompute their halos, until the peak fits the budget (patch-based inference).",
		Run: func(st *passes.State, g *ir.Graph) (bool, error) {
			if err := st.Ctx.Err(); err != nil {
				return false, err
			}
			res, err := Fit(g, opts)
			var be *BudgetError
			if err != nil && !errors.As(err, &be) {
				return false, err
			}
			for _, r := range res.Regions {
				st.Report(ir.Pos{}, passes.Note, "tiled %d nodes (%s … %s) into %s along axis %s: peak %d → %d bytes, %+.1f%% compute",
					len(r.Nodes), r.Nodes[0], r.Nodes[len(r.Nodes)-1], r.Split(), r.axes(), r.PeakBefore, r.PeakAfter, r.ExtraPercent)
			}
			if be != nil {
				st.Report(ir.Pos{}, passes.Warning, "%v", fmt.Sprint(be))
			}
			if report != nil {
				report(res)
			}
			return len(res.Regions) > 0, nil
		},
	}
}
