package shapes

import (
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes"
)

// NewPass returns the shape-inference pass configured with opts. It changes
// only value types, never the graph's structure.
func NewPass(opts Options) *passes.Pass {
	return &passes.Pass{
		Name:     "shape-inference",
		Doc:      "Infer the dtype and shape of every value, folding constant shape computations.",
		Required: true,
		Run: func(st *passes.State, g *ir.Graph) (bool, error) {
			if opts.File == "" {
				opts.File = st.File
			}
			return true, Infer(g, opts)
		},
	}
}
