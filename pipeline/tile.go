package pipeline

import (
	"context"
	"errors"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/tile"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/targets"
)

// Tile is whether Fit may split memory-heavy regions into spatial bands.
type Tile string

const (
	// TileAuto tiles when rematerialization alone cannot reach the budget
	// (the budget is below the largest single-node working set, as on
	// CNN inference graphs): passes/tile brings the target's predicted
	// peak under the budget, and the remat pass then fits the tiled graph.
	TileAuto Tile = "auto"
	// TileOff never tiles.
	TileOff Tile = "off"
)

// ParseTile reads a -tile flag value.
func ParseTile(s string) (Tile, error) {
	switch t := Tile(s); t {
	case TileAuto, TileOff:
		return t, nil
	case "":
		return TileAuto, nil
	}
	return "", optionErrorf("-tile %q: want auto (tile when rematerialization alone cannot reach the budget) or off", s)
}

// runOrder is a target that can say the order its runtime runs a graph
// in (targets/ort).
type runOrder interface {
	RunOrder(g *ir.Graph) ([]*ir.Node, error)
}

// tiledPlacer is a target that can write a graph without a rewrite (a
// tiled graph) with order constraints where they lower the predicted peak:
// targets/ort's eager constraints, which make ONNX Runtime run nodes that
// shrink large values early, and targets/tfjs's, which make TensorFlow.js
// follow the graph's own order.
type tiledPlacer interface {
	PlaceTiled(g *ir.Graph) (*targets.Placement, error)
}

// ORTBlock is the channel block of ONNX Runtime's NCHWc layout on the
// machines a tiled model is for, which decides where a region may end
// (passes/tile.ORTBlocks): 8 on AVX2, 16 on AVX-512. A tiling exact under
// 8-channel blocks is exact under 16 as well, so 8 (DefaultORTBlock) keeps
// the written model bitwise on either kind of x86 machine; 16 tiles more
// freely and is bitwise on AVX-512 machines only.
type ORTBlock int

// DefaultORTBlock is the block tiling assumes unless told: AVX2's, exact
// on both.
const DefaultORTBlock ORTBlock = 8

// ParseORTBlock reads an -ort-block flag value ("" is the default).
func ParseORTBlock(s string) (ORTBlock, error) {
	switch s {
	case "", "8":
		return DefaultORTBlock, nil
	case "16":
		return 16, nil
	}
	return 0, optionErrorf("-ort-block %q: want 8 (AVX2; the tiled model stays bitwise on AVX2 and AVX-512 machines) or 16 (AVX-512 only; tiles more freely)", s)
}

// tileOptions are passes/tile's options for fitting g to budget bytes on
// target t with prof's costs; maxExtra bounds the extra compute (0: none),
// block is ONNX Runtime's channel block (0: DefaultORTBlock).
func tileOptions(g *ir.Graph, t targets.Target, prof *profiles.Profile, budget int64, maxExtra float64, block ORTBlock) tile.Options {
	rows, cols := tileAxes(g)
	o := tile.Options{
		Axis:     rows,
		GridAxis: cols,
		Memory:   t.Memory(),
		Budget:   budget,
		MaxExtra: maxExtra,
		Cost: func(n *ir.Node) float64 {
			c, err := prof.Cost(n)
			if err != nil {
				return 0
			}
			return c.Seconds
		},
	}
	if r, ok := t.(runOrder); ok {
		o.Order = r.RunOrder
	}
	if r, ok := t.(runtimeOrderer); ok {
		// TensorFlow.js: the order it runs the written graph in, and when
		// that does not reach the budget, the graph's own order, forced
		// where the runtime would leave it.
		o.Order = r.RuntimeOrder
		if p, ok := t.(tiledPlacer); ok {
			o.Written = func(g *ir.Graph) (int64, string, error) { return writtenPeak(t, p, g) }
		}
	}
	if _, ok := t.(onnxRuntime); ok {
		// ONNX Runtime: where a region may end without changing the
		// arithmetic (passes/tile's measured rules: fusion groups tiled
		// whole, the NCHWc blocked layout kept around a region) for the
		// block of the machines the model is for (see ORTBlock).
		if block == 0 {
			block = DefaultORTBlock
		}
		r := tile.ORTBlocks(int64(block))
		o.Runtime = &r
	}
	return o
}

// tile splits regions of m's graph into bands until the target's peak is
// within budget bytes. A *tile.BudgetError leaves the regions that lowered
// the peak in place and is returned with the result.
func (m *Model) tile(ctx context.Context, t targets.Target, prof *profiles.Profile, budget int64, maxExtra float64, block ORTBlock) (*tile.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return tile.Fit(m.Graph, tileOptions(m.Graph, t, prof, budget, maxExtra, block))
}

// tileAxes are the axes bands and grids split in g: the rows and the
// columns of its images. Those are axes 2 and 3 of ONNX's NCHW (0 and 0,
// passes/tile's defaults); a TensorFlow graph's images are NHWC (axes 1
// and 2) unless its first convolution or pool says data_format NCHW.
func tileAxes(g *ir.Graph) (rows, cols int) {
	for _, n := range g.Nodes {
		if n.Domain != ir.TFDomain || n.Attr("data_format") == nil || !ir.SpatialOp(n.Domain, n.Op) {
			continue
		}
		if h, w, err := ir.TFSpatialAxes(n); err == nil {
			return h, w
		}
	}
	for _, n := range g.Nodes {
		if n.Domain == ir.TFDomain {
			return 1, 2
		}
	}
	return 0, 0
}

// Floor is where a model's peak cannot go lower: the largest single-node
// working set (no rematerialization goes below it) and what tiling
// reaches below that.
type Floor struct {
	// NodeBytes is the largest working set of one node (its inputs and
	// outputs, liveness), that of Node.
	NodeBytes int64  `json:"single_node_floor_bytes"`
	Node      string `json:"single_node_floor_node"`
	// TargetBytes is the target's predicted peak of the graph as it is;
	// TiledBytes the lowest peak tiling reached under the target's
	// model, at TiledNode, with the regions it tiled.
	TargetBytes int64               `json:"target_peak_bytes"`
	TiledBytes  int64               `json:"tiled_floor_bytes"`
	TiledNode   string              `json:"tiled_floor_node"`
	Regions     []tile.RegionReport `json:"regions"`
	// Late lists the outputs tiling moved next to their readers first
	// (tile.Result.Late).
	Late []tile.LateReport `json:"late,omitempty"`
	// Note says why tiling found nothing, when it did not.
	Note string `json:"note,omitempty"`
}

// Floor measures m's floors (see Floor) on a fresh copy of its graph: the
// single-node floor under liveness, and the lowest peak passes/tile
// reaches under the target's model with at most maxExtra extra compute
// (0: no bound) and, on ONNX Runtime, ORT's channel block (0:
// DefaultORTBlock). m is not changed.
func (m *Model) Floor(ctx context.Context, t targets.Target, prof *profiles.Profile, maxExtra float64, block ORTBlock) (*Floor, error) {
	if t == nil {
		t = Targets()[0]
	}
	n, err := m.Rebuild(ctx)
	if err != nil {
		return nil, err
	}
	cost := func(x *ir.Node) float64 { c, _ := prof.Cost(x); return c.Seconds }
	p, _, err := remat.Lower(n.Graph, cost, remat.LowerOptions{})
	if err != nil {
		return nil, err
	}
	f := &Floor{}
	if fl := p.Floor(); fl.Node >= 0 {
		f.NodeBytes, f.Node = fl.Bytes, p.Name(fl.Node)
	}
	res, err := n.tile(ctx, t, prof, 0, maxExtra, block)
	var be *tile.BudgetError
	switch {
	case errors.As(err, &be):
	case err != nil:
		f.Note = err.Error()
		return f, nil
	}
	if res != nil {
		f.TargetBytes, f.TiledBytes, f.TiledNode, f.Regions, f.Late = res.PeakBefore, res.PeakAfter, res.PeakNode, res.Regions, res.Late
		if len(res.Regions) == 0 {
			f.Note = "no region of spatially local ops lowers the peak"
		}
	}
	return f, nil
}
