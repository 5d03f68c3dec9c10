package tile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

// Options configure Fit.
type Options struct {
	// Memory is the target's memory model (ort.Memory() of targets/ort for ONNX Runtime).
	Memory memory.Options
	// Budget is the peak to reach, in bytes. 0 asks for the lowest peak
	// the search finds.
	Budget int64
	// Cost is one run of a node, in seconds (a device profile's cost
	// model) or any unit; nil counts MACs (MACs). Extra compute is the
	// cost of the tiled graph less the cost of the graph before.
	Cost func(*ir.Node) float64
	// Order is the order the target runs a graph in; nil is file order.
	Order func(*ir.Graph) ([]*ir.Node, error)
	// Runtime holds the target's rules for region boundaries (ORT for
	// ONNX Runtime); nil means none (the rewrite is still exact op by
	// op, as at ONNX Runtime's level disabled).
	Runtime *Runtime
	// Axis is the spatial axis bands split: 2 (the rows of NCHW, the
	// default) or 3 for ONNX graphs; 1 or 2 for TensorFlow's NHWC.
	Axis int
	// GridAxis is the other spatial axis: Fit may split each band of a
	// region again along it, into a grid of tiles. 0 means 3 when Axis is
	// 2 and 2 when Axis is 3; -1 turns grids off.
	GridAxis int
	// MaxBands bounds the bands of one region (default 32).
	MaxBands int
	// MaxExtra bounds the extra compute, as a fraction of the graph's
	// cost (0.15 is 15%); 0 means no bound.
	MaxExtra float64
	// MaxRegions bounds the regions tiled (default 12).
	MaxRegions int
	// Written, when set, returns the peak (and the node at it) of a tiled
	// graph as the target writes it for a runtime that orders the graph
	// itself but takes order constraints (TensorFlow.js's gates): the
	// constraints make the runtime follow the graph's own order (g.Nodes)
	// where Order would lose its peak. When the search in Order does not
	// reach the budget, Fit searches again in the graph's own order and
	// keeps that plan if the graph as written peaks lower
	// (Result.Forced).
	Written func(g *ir.Graph) (peak int64, node string, err error)
}

// Result reports what Fit did.
type Result struct {
	// PeakBefore and PeakAfter are the graph's peak under the memory
	// model, before and after tiling; PeakNode names the node at the peak
	// after.
	PeakBefore, PeakAfter int64
	PeakNode              string
	// CostBefore and CostAfter are the graph's total cost.
	CostBefore, CostAfter float64
	// Regions lists the tiled regions in the order Fit chose them.
	Regions []RegionReport
	// Evaluated counts the candidate rewrites simulated.
	Evaluated int
	// Forced reports that the regions were chosen in the graph's own
	// order (Options.Written): PeakAfter is the peak as the target writes
	// the graph, the regions' peaks are in that order.
	Forced bool
	// Late lists the late outputs recomputed next to their readers before
	// the regions were chosen (lateOutput), in graph order.
	Late []LateReport
}

// LateReport describes one late output that Fit recomputes next to its
// readers: Node no longer produces Output, the Copies (Node's copy last)
// do, at the cost ExtraCost (in Options.Cost's unit), ExtraPercent of
// the original graph's cost.
type LateReport struct {
	Node, Output string
	Copies       []string
	ExtraCost    float64
	ExtraPercent float64
}

// RegionReport describes one tiled region.
type RegionReport struct {
	// Nodes names the region's nodes; Bands, Axis, Input, Reads and Halo
	// are Tiled's; Concat and Kept the region outputs concatenated from
	// the bands and those its bands recompute (Split.Keep). Cols, when
	// above 1, is the tiles each band was split into again along GridAxis
	// (a Bands × Cols grid).
	Nodes          []string
	Bands, Axis    int
	Cols, GridAxis int
	Input          string
	Reads          [][2]int64
	Halo           []int64
	Concat, Kept   []string
	// Pooled names the values of Kept computed in channel groups for the
	// global pool that reads them (Tiled.Pooled).
	Pooled []string
	// Added names the nodes the rewrite created (band copies, Slices and
	// Concats; Tiled.Added).
	Added []string
	// PeakBefore and PeakAfter are the graph's peak before and after this
	// region was tiled; ExtraCost the cost it added (in Options.Cost's
	// unit) and ExtraPercent that as a percentage of the original graph's
	// cost.
	PeakBefore, PeakAfter int64
	ExtraCost             float64
	ExtraPercent          float64
}

// Split says how the region was cut: "4 bands", or "2×3 grid" for 2
// bands of 3 tiles each.
func (r RegionReport) Split() string {
	if r.Cols > 1 {
		return fmt.Sprintf("%d×%d grid", r.Bands, r.Cols)
	}
	return fmt.Sprintf("%d bands", r.Bands)
}

// axes is the axis the bands split, and the grid's after it.
func (r RegionReport) axes() string {
	if r.Cols > 1 {
		return fmt.Sprintf("%d, %d", r.Axis, r.GridAxis)
	}
	return fmt.Sprint(r.Axis)
}

// BudgetError is returned, with the Result, when Fit cannot bring the peak
// under the budget: PeakBytes is the lowest peak it reached, at Node.
type BudgetError struct {
	PeakBytes, Budget int64
	Node              string
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("tile: the lowest peak found is %d bytes (at node %s), above the budget of %d bytes", e.PeakBytes, e.Node, e.Budget)
}

// bandChoices are the band counts Fit tries.
var bandChoices = []int{2, 3, 4, 6, 8, 12, 16, 24, 32}

// Fit tiles regions of g, one at a time, until the peak under
// opts.Memory (in opts.Order) is within opts.Budget, choosing each time
// among candidate regions and band counts by simulating the rewritten
// graph: the candidates come from the values that hold memory at the
// current peak, grown along the spatially local ops around them (up
// through a region input to its producer, recomputing it band-wise when
// others read it too; down through a region output to its readers), and
// each is tried with every band count and with grids: bands split again
// into tiles along GridAxis (each band a region of its own, Apply on
// Tiled.BandNodes). Grids go where bands cannot: a band of few rows still
// spans the whole width, and ONNX Runtime's planner chains the buffers of
// bands of one size (see DistinctCuts), so bands need distinct sizes and
// the largest grows with their number, while a grid reaches as many
// tiles with fewer distinct extents per axis. Among the candidates that
// bring the peak under the budget Fit takes the cheapest; when none does,
// the cheapest of those within 2% of the lowest peak. When none lowers
// the peak, Fit takes the one of the same peak with the fewest bytes
// above the budget summed over the steps, per unit of extra compute
// (several steps can share the peak: a pyramid's levels); it stops when
// no candidate does either. When that search misses the budget (or with
// no budget), Fit searches again on graphs whose late outputs are
// recomputed next to their readers (lateOutput: a SegNet's pool indices,
// which keep the pool from being tiled and are live across the
// bottleneck), and keeps the first that reaches the budget, else the
// lowest (Result.Late).
//
// g is rewritten in place (every region through Apply); on a BudgetError
// the regions that lowered the peak stay. Other errors leave g unchanged.
func Fit(g *ir.Graph, opts Options) (*Result, error) {
	f, err := newFitter(g, opts)
	if err != nil {
		return nil, err
	}
	return f.run()
}

type fitter struct {
	g        *ir.Graph
	opts     Options
	cost     func(*ir.Node) float64
	baseCost float64
	debug    func(error) // tests: why a candidate failed
	// before is the untiled graph's peak in opts.Order.
	before int64
}

func newFitter(g *ir.Graph, opts Options) (*fitter, error) {
	if g == nil || g.Parent != nil {
		return nil, errors.New("tile: Fit needs a root graph")
	}
	if opts.Axis == 0 {
		opts.Axis = 2
	}
	if opts.Axis < 1 {
		return nil, fmt.Errorf("tile: axis %d is not spatial", opts.Axis)
	}
	if opts.GridAxis == 0 {
		switch opts.Axis {
		case 2:
			opts.GridAxis = 3
		case 3:
			opts.GridAxis = 2
		default:
			opts.GridAxis = -1
		}
	}
	if opts.MaxBands == 0 {
		opts.MaxBands = 32
	}
	if opts.MaxRegions == 0 {
		opts.MaxRegions = 12
	}
	if opts.Budget < 0 || opts.MaxBands < 2 || opts.MaxExtra < 0 {
		return nil, fmt.Errorf("tile: bad options: budget %d, max bands %d, max extra %g", opts.Budget, opts.MaxBands, opts.MaxExtra)
	}
	if opts.Order == nil {
		opts.Order = func(g *ir.Graph) ([]*ir.Node, error) { return g.Nodes, nil }
	}
	f := &fitter{g: g, opts: opts, cost: opts.Cost}
	if f.cost == nil {
		f.cost = MACs
	}
	f.baseCost = f.total(g)
	return f, nil
}

func (f *fitter) total(g *ir.Graph) float64 {
	var c float64
	for _, n := range g.Nodes {
		if n.Op != "Constant" {
			c += f.cost(n)
		}
	}
	return c
}

// peak simulates g in the target's order.
func (f *fitter) peak(g *ir.Graph) (*memory.Result, []*ir.Node, error) {
	seq, err := f.opts.Order(g)
	if err != nil {
		return nil, nil, err
	}
	r, err := memory.Simulate(g, seq, f.opts.Memory)
	if err != nil {
		return nil, nil, err
	}
	return r, seq, nil
}

// candidate is a region given by positions in the original graph's
// Nodes, with the region outputs (by producer position) its bands
// recompute.
type candidate struct {
	nodes []int
	keep  []int
}

func (c candidate) key() string {
	var b strings.Builder
	for _, i := range c.nodes {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
	}
	b.WriteByte('|')
	for _, i := range c.keep {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
	}
	return b.String()
}

// step is one region of a plan with its band count; under a memory model
// with the planner's reuse its bands have distinct sizes where the extent
// allows (Split.Distinct).
type step struct {
	cand  candidate
	bands int
	// cols, above 1, splits each band again along the grid axis.
	cols int
}

// state is a plan applied to a copy of the original graph.
type state struct {
	plan  []step
	g     *ir.Graph
	tiled []*Tiled
	peak  *memory.Result
	seq   []*ir.Node
	cost  float64
	// orig maps every node of g to the position in the original graph of
	// the node it is, or copies (-1 for a Slice or Concat of the rewrite);
	// node maps a position in the original graph to that original node in
	// g, nil once a region removed it.
	orig map[*ir.Node]int
	node []*ir.Node
}

// build applies plan to a copy of the original graph and simulates it;
// ok is false when a region does not apply or breaks the runtime's rules.
func (f *fitter) build(plan []step) (*state, bool) {
	cg := cloneGraph(f.g)
	st := &state{g: cg, orig: map[*ir.Node]int{}, node: slices.Clone(cg.Nodes)}
	for i, n := range cg.Nodes {
		st.orig[n] = i
	}
	for _, s := range plan {
		if !f.apply(st, s) {
			return nil, false
		}
	}
	return st, f.simulate(st)
}

// extend is build(cur.plan + s) for a step that overlaps none of cur's
// regions: s applied to a copy of cur's graph.
func (f *fitter) extend(cur *state, s step) (*state, bool) {
	cg := cloneGraph(cur.g)
	st := &state{plan: slices.Clone(cur.plan), g: cg, orig: make(map[*ir.Node]int, len(cur.orig)), tiled: slices.Clone(cur.tiled),
		node: make([]*ir.Node, len(cur.node))}
	at := make(map[*ir.Node]*ir.Node, len(cg.Nodes))
	for i, n := range cur.g.Nodes {
		at[n] = cg.Nodes[i]
		st.orig[cg.Nodes[i]] = cur.orig[n]
	}
	for i, n := range cur.node {
		if n != nil {
			st.node[i] = at[n]
		}
	}
	if !f.apply(st, s) {
		return nil, false
	}
	return st, f.simulate(st)
}

// apply applies step s to st's graph; false when the region does not
// apply or breaks the runtime's rules.
func (f *fitter) apply(st *state, s step) bool {
	cg := st.g
	var nodes []*ir.Node
	for _, i := range s.cand.nodes {
		if st.node[i] == nil {
			return false
		}
		nodes = append(nodes, st.node[i])
	}
	var keep []*ir.Value
	for _, i := range s.cand.keep {
		keep = append(keep, st.node[i].Outputs[0])
	}
	tl, inner, err := f.applyStep(cg, nodes, keep, s)
	if err != nil {
		if f.debug != nil {
			f.debug(err)
		}
		return false
	}
	for _, t := range append([]*Tiled{tl}, inner...) {
		for o, cs := range t.Copies {
			for _, c := range cs {
				st.orig[c] = st.orig[o]
			}
		}
		for _, n := range t.Added {
			if _, ok := st.orig[n]; !ok {
				st.orig[n] = -1
			}
		}
	}
	present := make(map[*ir.Node]bool, len(cg.Nodes))
	for _, n := range cg.Nodes {
		present[n] = true
	}
	for _, n := range nodes {
		if !present[n] {
			st.node[st.orig[n]] = nil
		}
	}
	st.plan = append(st.plan, s)
	st.tiled = append(st.tiled, gridTiled(tl, inner, present))
	return true
}

// applyStep rewrites the region of nodes (with the values keep) in g
// into s.bands bands, each split again into s.cols tiles along the grid
// axis when s.cols > 1, checking each rewrite against the runtime's
// rules. It returns the bands' rewrite and the tiles' (one per band).
func (f *fitter) applyStep(g *ir.Graph, nodes []*ir.Node, keep []*ir.Value, s step) (*Tiled, []*Tiled, error) {
	keep = readOutside(g, nodes, keep)
	// Distinct band sizes keep a planner that reuses a freed buffer for
	// the next value of its shape from chaining the bands' buffers; a
	// runtime without one (TensorFlow.js) takes equal bands.
	distinct := f.opts.Memory.Reuse
	tl, err := f.applyChecked(g, Region{Nodes: nodes, Axis: f.opts.Axis}, Split{Bands: s.bands, Distinct: distinct, Keep: keep})
	if err != nil {
		return nil, nil, err
	}
	if r := f.opts.Runtime; r != nil && r.PoolGroup > 0 {
		// A kept value that only a global pool reads: computed and
		// pooled a channel group at a time instead of whole.
		for _, v := range keep {
			if added := poolGroups(g, v, r.PoolGroup); added != nil {
				tl.Added = append(tl.Added, added...)
				tl.Removed += 2
				tl.Pooled = append(tl.Pooled, v.Name)
			}
		}
	}
	if s.cols < 2 {
		return tl, nil, nil
	}
	var inner []*Tiled
	for _, band := range tl.BandNodes {
		t, err := f.applyChecked(g, Region{Nodes: band, Axis: f.opts.GridAxis}, Split{Bands: s.cols, Distinct: distinct})
		if err != nil {
			return nil, nil, fmt.Errorf("a band split into %d tiles: %w", s.cols, err)
		}
		inner = append(inner, t)
	}
	return tl, inner, nil
}

// readOutside returns the values of keep that a node outside nodes, or
// g's outputs, read: when both regions of a pair (choose) recompute a
// skip, the second finds no reader of the original left.
func readOutside(g *ir.Graph, nodes []*ir.Node, keep []*ir.Value) []*ir.Value {
	in := make(map[*ir.Node]bool, len(nodes))
	for _, n := range nodes {
		in[n] = true
	}
	var out []*ir.Value
	for _, v := range keep {
		read := slices.Contains(g.Outputs, v)
		for _, u := range v.Uses {
			read = read || !in[u.Node]
		}
		if read {
			out = append(out, v)
		}
	}
	return out
}

// applyChecked is Apply followed by the runtime's check.
func (f *fitter) applyChecked(g *ir.Graph, r Region, s Split) (*Tiled, error) {
	var check func(*ir.Graph, *Tiled) error
	if f.opts.Runtime != nil && f.opts.Runtime.Check != nil {
		check = f.opts.Runtime.Check(g)
	}
	tl, err := Apply(g, r, s)
	if err == nil && check != nil {
		err = check(g, tl)
	}
	return tl, err
}

// gridTiled folds the tiles' rewrites into the bands' for a report: the
// nodes added are those still in the graph (present) of either rewrite.
func gridTiled(tl *Tiled, inner []*Tiled, present map[*ir.Node]bool) *Tiled {
	if len(inner) == 0 {
		return tl
	}
	out := *tl
	out.Added = nil
	for _, t := range append([]*Tiled{tl}, inner...) {
		for _, n := range t.Added {
			if present[n] {
				out.Added = append(out.Added, n)
			}
		}
	}
	return &out
}

// gridAxis is the axis s splits its bands along, 0 for no grid.
func (f *fitter) gridAxis(s step) int {
	if s.cols < 2 {
		return 0
	}
	return f.opts.GridAxis
}

// simulate fills st's peak, order and cost.
func (f *fitter) simulate(st *state) bool {
	r, seq, err := f.peak(st.g)
	if err != nil {
		return false
	}
	st.peak, st.seq, st.cost = r, seq, f.total(st.g)
	return true
}

// planned is the outcome of a search: the fitter that ran it (its graph
// and order), its best state, and the peak as the target runs it, at node.
type planned struct {
	f      *fitter
	cur    *state
	peak   int64
	node   string
	forced bool
}

// run searches for a plan and applies it to f.g.
func (f *fitter) run() (*Result, error) {
	res := &Result{CostBefore: f.baseCost}
	pl, err := f.plan(res)
	if err != nil {
		return nil, err
	}
	if f.opts.Budget == 0 || pl.peak > f.opts.Budget {
		if pl, err = f.late(pl, res); err != nil {
			return nil, err
		}
	}
	res.Forced = pl.forced
	return pl.f.finish(pl.cur, res, pl.peak, pl.node)
}

// plan searches in the target's order and, when that misses the budget
// and Options.Written is set, in the graph's own order (see Written).
func (f *fitter) plan(res *Result) (*planned, error) {
	cur, err := f.search(res)
	if err != nil {
		return nil, err
	}
	res.PeakBefore = f.before
	pl := &planned{f: f, cur: cur, peak: cur.peak.PeakBytes}
	if cur.peak.PeakStep >= 0 {
		pl.node = cur.seq[cur.peak.PeakStep].String()
	}
	if o := f.opts; o.Written != nil && o.Budget > 0 && pl.peak > o.Budget {
		// The runtime's own order does not reach the budget: search again
		// in the graph's order, which the target forces when it writes
		// the graph, and keep that plan when the graph as written peaks
		// lower.
		o.Order, o.Written = nil, nil
		pf, err := newFitter(f.g, o)
		if err != nil {
			return nil, err
		}
		pf.baseCost = f.baseCost
		alt, err := pf.search(res)
		if err != nil {
			return nil, err
		}
		if len(alt.plan) > 0 {
			if wp, wn, err := f.opts.Written(alt.g); err == nil && wp < pl.peak {
				if wn == "" && alt.peak.PeakStep >= 0 {
					wn = alt.seq[alt.peak.PeakStep].String()
				}
				pl = &planned{f: pf, cur: alt, peak: wp, node: wn, forced: true}
			}
		}
	}
	return pl, nil
}

// late searches again on graphs whose late outputs (lateOutput) are
// recomputed next to their readers, the first k of them in graph order
// for k = 1, 2, …, while their recomputation stays within MaxExtra, and
// returns the first plan that reaches the budget (with no budget, the
// lowest peak is the aim), else the one of least peak (pl when none is
// lower). A chosen graph's late outputs are then
// moved on f.g itself, and Result.Late reports them.
func (f *fitter) late(pl *planned, res *Result) (*planned, error) {
	cands := lateCandidates(f.g)
	best, bestK := pl, 0
	for k := 1; k <= len(cands); k++ {
		h := cloneGraph(f.g)
		if _, ok := moveLate(h, cands[:k]); !ok {
			break
		}
		if f.opts.MaxExtra > 0 && f.total(h)-f.baseCost > f.opts.MaxExtra*f.baseCost {
			break
		}
		hf, err := newFitter(h, f.opts)
		if err != nil {
			return nil, err
		}
		hf.baseCost = f.baseCost
		before := res.PeakBefore
		alt, err := hf.plan(res)
		res.PeakBefore = before
		if err != nil {
			return nil, err
		}
		if alt.peak < best.peak {
			best, bestK = alt, k
		}
		if f.opts.Budget > 0 && best.peak <= f.opts.Budget {
			break
		}
	}
	if bestK == 0 {
		return pl, nil
	}
	// Apply the same moves to f.g: its nodes are h's before the moves,
	// position for position, so the moves give h's graph again and the
	// plan's positions mean the same nodes.
	copies, ok := moveLate(f.g, cands[:bestK])
	if !ok {
		return nil, errors.New("tile: internal error: late outputs that moved on a copy do not move on the graph")
	}
	for i, c := range cands[:bestK] {
		lr := LateReport{Node: c.node, Output: c.output}
		for _, n := range copies[i] {
			lr.Copies = append(lr.Copies, n.Name)
			lr.ExtraCost += f.cost(n)
		}
		if f.baseCost > 0 {
			lr.ExtraPercent = 100 * lr.ExtraCost / f.baseCost
		}
		res.Late = append(res.Late, lr)
	}
	best.f.g = f.g
	return best, nil
}

// search runs Fit's greedy search from the untiled graph and returns its
// best state; res counts the candidates it evaluates.
func (f *fitter) search(res *Result) (*state, error) {
	cur, ok := f.build(nil)
	if !ok {
		_, _, err := f.peak(cloneGraph(f.g))
		if err == nil {
			err = errors.New("tile: internal error: the untiled graph does not simulate")
		}
		return nil, err
	}
	f.before = cur.peak.PeakBytes
	for iter := 0; iter < 4*f.opts.MaxRegions; iter++ {
		if f.opts.Budget > 0 && cur.peak.PeakBytes <= f.opts.Budget {
			break
		}
		next := f.choose(cur, res, true)
		if next == nil || len(next.plan) > f.opts.MaxRegions {
			break
		}
		cur = next
	}
	return cur, nil
}

// finish reports cur's plan region by region and applies it to f.g;
// peak is the graph's peak as the target runs it, at node.
func (f *fitter) finish(cur *state, res *Result, peak int64, node string) (*Result, error) {
	// Each region's effect (plan prefixes on copies), then the plan on g.
	prev, _ := f.build(nil)
	for k, s := range cur.plan {
		after, ok := f.build(cur.plan[:k+1])
		if !ok {
			return nil, errors.New("tile: internal error: a plan prefix does not rebuild")
		}
		tl := after.tiled[k]
		rep := RegionReport{Nodes: tl.Nodes, Bands: s.bands, Axis: tl.Axis, Cols: s.cols, GridAxis: f.gridAxis(s), Input: tl.Input, Reads: tl.Reads, Halo: tl.Halo,
			Concat: tl.Concat, Kept: tl.Kept, Pooled: tl.Pooled, PeakBefore: prev.peak.PeakBytes, PeakAfter: after.peak.PeakBytes, ExtraCost: after.cost - prev.cost}
		for _, n := range tl.Added {
			rep.Added = append(rep.Added, n.Name)
		}
		if f.baseCost > 0 {
			rep.ExtraPercent = 100 * rep.ExtraCost / f.baseCost
		}
		res.Regions = append(res.Regions, rep)
		prev = after
	}
	nodes := slices.Clone(f.g.Nodes)
	for _, s := range cur.plan {
		var region []*ir.Node
		var keep []*ir.Value
		for _, i := range s.cand.nodes {
			region = append(region, nodes[i])
		}
		for _, i := range s.cand.keep {
			keep = append(keep, nodes[i].Outputs[0])
		}
		if _, _, err := f.applyStep(f.g, region, keep, s); err != nil {
			return nil, fmt.Errorf("tile: internal error: a region that applied to a copy fails on the graph: %w", err)
		}
	}
	res.PeakAfter, res.PeakNode, res.CostAfter = peak, node, cur.cost
	if f.opts.Budget > 0 && res.PeakAfter > f.opts.Budget {
		return res, &BudgetError{PeakBytes: res.PeakAfter, Budget: f.opts.Budget, Node: res.PeakNode}
	}
	return res, nil
}

// pairBands are the band counts pairs of closures are tried with; choose
// looks one move past the pair of least peak at each, when that pair does
// not raise the peak.
var pairBands = []int{2, 4, 8}

// choose tries the candidates around cur's peak, each merged with the
// plan's regions it overlaps, and returns the best new state, or nil when
// none lowers the peak. The best lowers the peak (down to the budget) the
// most per unit of extra compute; candidates adding nothing count a
// thousandth of the graph's cost.
//
// With look set, choose also looks one move past the most promising
// pairs of closures (pair): a skip read whole by a global pool and again
// after it holds the peak until both readers recompute it, and even then
// the originals kept for earlier readers hold it, so no single move
// lowers it.
func (f *fitter) choose(cur *state, res *Result, look bool) *state {
	var best, flat *state
	var bestScore, flatScore float64
	// Plateau moves: where several steps share the peak (a pyramid's
	// levels can), no one region lowers it; a state of the same peak
	// with fewer bytes above the budget summed over the steps (excess)
	// is taken when nothing lowers the peak, scored by those bytes per
	// unit of extra compute.
	plateau := f.opts.Budget > 0 && cur.peak.PeakBytes > f.opts.Budget
	var curExcess int64
	if plateau {
		curExcess = f.excess(cur)
	}
	flatGain := func(s *state) float64 {
		if !plateau || s.peak.PeakBytes != cur.peak.PeakBytes {
			return 0
		}
		if f.opts.MaxExtra > 0 && s.cost-f.baseCost > f.opts.MaxExtra*f.baseCost {
			return 0
		}
		d := curExcess - f.excess(s)
		if d <= 0 {
			return 0
		}
		return float64(d) / (max(s.cost-cur.cost, 0) + f.baseCost/100)
	}
	consider := func(s *state) {
		if g := flatGain(s); g > 0 {
			if flat == nil || g > flatScore {
				flat, flatScore = s, g
			}
			return
		}
		if s.peak.PeakBytes >= cur.peak.PeakBytes {
			return
		}
		if f.opts.MaxExtra > 0 && s.cost-f.baseCost > f.opts.MaxExtra*f.baseCost {
			return
		}
		score := f.score(cur, s)
		if best == nil || score > bestScore || (score == bestScore && s.peak.PeakBytes < best.peak.PeakBytes) {
			best, bestScore = s, score
		}
	}
	inPlan := map[int]bool{}
	for _, st := range cur.plan {
		for _, i := range st.cand.nodes {
			inPlan[i] = true
		}
	}
	// Every region of the plan at every other split.
	for k, st := range cur.plan {
		for _, sp := range f.splits(bandChoices, true) {
			if sp == [2]int{st.bands, st.cols} {
				continue
			}
			plan := slices.Clone(cur.plan)
			plan[k].bands, plan[k].cols = sp[0], sp[1]
			res.Evaluated++
			if s, ok := f.build(plan); ok {
				consider(s)
			}
		}
	}
	// Each candidate at two band counts, then the most promising ones at
	// every band count.
	type scored struct {
		c     candidate
		score float64
	}
	var ranked []scored
	cands, closures := f.candidates(cur)
	// Pairs of closures that recompute a skip in common: a skip read
	// whole before a global pool and band-wise after it is freed only
	// when both readers recompute it. The original producers the pair
	// keeps for earlier readers then hold the peak, so with look set
	// the pair of least peak at each band count, when it does not raise
	// the peak, is looked one move ahead (there without pairs).
	pairs := make([]*state, len(pairBands)) // the least peak per band count
	for i, a := range closures {
		for _, b := range closures[i+1:] {
			if !look || !shareKept(a, b) {
				continue
			}
			for k, p := range pairBands {
				if p > f.opts.MaxBands {
					continue
				}
				if s := f.pair(cur, inPlan, a, b, p, res); s != nil {
					consider(s)
					if lp := pairs[k]; lp == nil || s.peak.PeakBytes < lp.peak.PeakBytes ||
						s.peak.PeakBytes == lp.peak.PeakBytes && f.excess(s) < f.excess(lp) {
						pairs[k] = s
					}
				}
			}
		}
	}
	if look {
		for _, s := range pairs {
			if s == nil || s.peak.PeakBytes > cur.peak.PeakBytes {
				continue
			}
			if next := f.choose(s, res, false); next != nil {
				consider(next)
			}
		}
	}
	for _, c := range cands {
		sc := -1.0
		for _, p := range screenBands {
			if p > f.opts.MaxBands {
				continue
			}
			for _, s := range f.trial(cur, inPlan, c, p, 0, res) {
				consider(s)
				if s.peak.PeakBytes < cur.peak.PeakBytes {
					sc = max(sc, f.score(cur, s))
				} else if g := flatGain(s); g > 0 {
					// Below every candidate that lowers the peak.
					sc = max(sc, 1e-12*g/(1+g))
				}
			}
		}
		if sc > 0 {
			ranked = append(ranked, scored{c, sc})
		}
	}
	slices.SortStableFunc(ranked, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	for i, r := range ranked {
		if i == refineCandidates {
			break
		}
		for _, sp := range f.splits(bandChoices, i < gridCandidates) {
			if sp[1] > 0 || !slices.Contains(screenBands, sp[0]) {
				for _, s := range f.trial(cur, inPlan, r.c, sp[0], sp[1], res) {
					consider(s)
				}
			}
		}
	}
	if best == nil && look {
		// Stuck at the screen's band counts: a region can lower the peak
		// at another count only (ppocrv4_det's 160×160 stage in 2 bands,
		// where 4 and 16 raise the peak elsewhere), so the candidates not
		// refined are tried at every other count before a plateau move
		// (not in a look ahead: one move past a pair).
		refined := map[string]bool{}
		for i, r := range ranked {
			if i < refineCandidates {
				refined[r.c.key()] = true
			}
		}
		for _, c := range cands {
			if refined[c.key()] {
				continue
			}
			for _, p := range bandChoices {
				if p <= f.opts.MaxBands && !slices.Contains(screenBands, p) {
					for _, s := range f.trial(cur, inPlan, c, p, 0, res) {
						consider(s)
					}
				}
			}
		}
	}
	if best == nil {
		return flat
	}
	return best
}

// excess is the bytes of st's steps above the budget, summed over the
// steps (above one byte under the peak when Fit has no budget: the
// number of steps at the peak): among states of one peak, the one
// nearer the budget.
func (f *fitter) excess(st *state) int64 {
	line := f.opts.Budget
	if line <= 0 {
		line = st.peak.PeakBytes - 1
	}
	var e int64
	for _, d := range st.peak.During {
		e += max(0, d-line)
	}
	return e
}

// score is what choose maximises: the peak lowered (down to the budget)
// per unit of extra compute, extra compute counting at least a hundredth
// of the graph's cost.
func (f *fitter) score(cur, s *state) float64 {
	gain := float64(cur.peak.PeakBytes - max(s.peak.PeakBytes, f.opts.Budget))
	extra := max(s.cost-cur.cost, 0) + f.baseCost/100
	return gain / extra
}

// trial builds cur's plan with candidate c at p bands: c merged with the
// regions it overlaps (inPlan holds their nodes), or added to a copy of
// cur's graph when it overlaps none. A candidate that overlaps the plan's
// regions only in nodes they left in the graph (the producers of values
// kept for outside readers, Split.Keep, which the bands recompute) is
// also tried added as a region of its own: the kept originals are then
// tiled apart from the bands' copies, as where a pair of regions
// recomputes a skip late in the graph and its original is tiled where it
// is computed first. It returns the states that built.
func (f *fitter) trial(cur *state, inPlan map[int]bool, c candidate, p, q int, res *Result) []*state {
	overlap, removed := false, false
	for _, i := range c.nodes {
		if inPlan[i] {
			overlap = true
			removed = removed || cur.node[i] == nil
		}
	}
	var out []*state
	if overlap {
		res.Evaluated++
		plan := merge(cur.plan, c)
		plan[len(plan)-1].bands, plan[len(plan)-1].cols = p, q
		if s, ok := f.build(plan); ok {
			out = append(out, s)
		}
	}
	if !overlap || !removed {
		res.Evaluated++
		if s, ok := f.extend(cur, step{cand: c, bands: p, cols: q}); ok {
			out = append(out, s)
		}
	}
	return out
}

// shareKept reports whether candidates a and b both keep the value of a
// node (both recompute it for readers outside them).
func shareKept(a, b candidate) bool {
	for _, i := range a.keep {
		if slices.Contains(b.keep, i) {
			return true
		}
	}
	return false
}

// pair adds candidates a and b to cur's plan at p bands each, a first,
// or returns nil when either shares a node with the plan's regions or
// the two do not apply together. They may share the originals a keeps
// (the producers of skips both recompute).
func (f *fitter) pair(cur *state, inPlan map[int]bool, a, b candidate, p int, res *Result) *state {
	for _, i := range slices.Concat(a.nodes, b.nodes) {
		if inPlan[i] {
			return nil
		}
	}
	res.Evaluated++
	st, ok := f.extend(cur, step{cand: a, bands: p})
	if !ok {
		return nil
	}
	if st, ok = f.extend(st, step{cand: b, bands: p}); !ok {
		return nil
	}
	return st
}

// splits lists the splits of a region Fit tries: each band count of
// bands within MaxBands, then, when grids is set and the grid axis is on,
// the grids of gridChoices (band count and tiles per band).
func (f *fitter) splits(bands []int, grids bool) [][2]int {
	var out [][2]int
	for _, p := range bands {
		if p <= f.opts.MaxBands {
			out = append(out, [2]int{p, 0})
		}
	}
	if grids && f.opts.GridAxis > 0 {
		for _, g := range gridChoices {
			if g[0]*g[1] <= f.opts.MaxBands {
				out = append(out, g)
			}
		}
	}
	return out
}

// gridChoices are the grids Fit tries: bands × tiles per band.
var gridChoices = [][2]int{{2, 2}, {3, 2}, {4, 2}, {2, 3}, {3, 3}, {4, 3}, {6, 2}, {6, 3}, {4, 4}, {8, 2}, {8, 3}, {8, 4}}

// screenBands are the band counts every candidate is tried with;
// refineCandidates of the best are then tried with every count.
var screenBands = []int{4, 16}

const refineCandidates = 6

// gridCandidates of the refined candidates are also tried as every grid
// (the regions of the plan are, at every step).
const gridCandidates = 2

// merge returns plan with c added: the regions c overlaps are removed and
// their nodes joined to c's (the merged region last, its bands to be set).
func merge(plan []step, c candidate) []step {
	nodes := map[int]bool{}
	keep := map[int]bool{}
	for _, i := range c.nodes {
		nodes[i] = true
	}
	for _, i := range c.keep {
		keep[i] = true
	}
	var out []step
	for _, s := range plan {
		overlap := false
		for _, i := range s.cand.nodes {
			if nodes[i] {
				overlap = true
				break
			}
		}
		if !overlap {
			out = append(out, s)
			continue
		}
		for _, i := range s.cand.nodes {
			nodes[i] = true
		}
		for _, i := range s.cand.keep {
			keep[i] = true
		}
	}
	var m candidate
	for i := range nodes {
		m.nodes = append(m.nodes, i)
	}
	for i := range keep {
		m.keep = append(m.keep, i)
	}
	slices.Sort(m.nodes)
	slices.Sort(m.keep)
	return append(out, step{cand: m})
}

// MACs is Fit's default cost: multiply-accumulates of convolutions and
// pools, ONNX's and TensorFlow's (output elements times the window), one
// per output element for every other node.
func MACs(n *ir.Node) float64 {
	if len(n.Outputs) == 0 || n.Outputs[0] == nil {
		return 0
	}
	out, ok := n.Outputs[0].Type.NumElements()
	if !ok {
		return 0
	}
	o := float64(out)
	switch n.Op {
	case "Conv", "ConvInteger", "QLinearConv":
		_, wi := convLike(n.Op)
		if wi < len(n.Inputs) && n.Inputs[wi] != nil {
			if w, ok := n.Inputs[wi].Type.Dims(); ok && len(w) > 1 {
				return o * float64(prod(w[1:]))
			}
		}
	case "ConvTranspose":
		if in, ok := n.Inputs[0].Type.NumElements(); ok {
			if w, ok := n.Inputs[1].Type.Dims(); ok && len(w) > 1 {
				return float64(in) * float64(prod(w[1:]))
			}
		}
	case "MaxPool", "AveragePool", "LpPool":
		if k, ok := n.AttrInts("kernel_shape"); ok {
			return o * float64(prod(k))
		}
	}
	if n.Domain == ir.TFDomain {
		return o * tfWindow(n)
	}
	return o
}

// tfWindow is the MACs per output element of a TensorFlow convolution or
// pool (filters are HWIO, depthwise filters HW·in·multiplier, pool
// windows ksize), 1 for other ops.
func tfWindow(n *ir.Node) float64 {
	switch n.Op {
	case "Conv2D", "_FusedConv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative", "_FusedDepthwiseConv2dNative":
		if len(n.Inputs) > 1 && n.Inputs[1] != nil {
			if w, ok := n.Inputs[1].Type.Dims(); ok && len(w) == 4 {
				if strings.Contains(n.Op, "Depthwise") {
					return float64(w[0] * w[1])
				}
				return float64(w[0] * w[1] * w[2])
			}
		}
	case "MaxPool", "AvgPool":
		if k, ok := n.AttrInts("ksize"); ok {
			return float64(prod(k))
		}
	}
	return 1
}

func convLike(op string) (x, w int) {
	if op == "QLinearConv" {
		return 0, 3
	}
	return 0, 1
}

func prod(d []int64) int64 {
	p := int64(1)
	for _, x := range d {
		p *= x
	}
	return p
}

// candidates returns the regions to try around cur's peak, as sets of
// nodes of the original graph: grown from the node at the peak and from
// the producers and readers of the largest buffers live there (band
// copies stand for their originals; the rewrite's Slices and Concats for
// the nodes they connect).
func (f *fitter) candidates(cur *state) (cands, closures []candidate) {
	gr := newGrower(f.g, f.opts)
	seen := map[string]bool{}
	orig := func(n *ir.Node) []*ir.Node {
		if i, ok := cur.orig[n]; ok && i >= 0 {
			return []*ir.Node{f.g.Nodes[i]}
		}
		// A Slice or Concat of the rewrite: the originals around it.
		var around []*ir.Node
		for _, v := range n.Inputs {
			if v != nil && v.Def != nil {
				if i, ok := cur.orig[v.Def]; ok && i >= 0 {
					around = append(around, f.g.Nodes[i])
				}
			}
		}
		for _, u := range n.Outputs[0].Uses {
			if i, ok := cur.orig[u.Node]; ok && i >= 0 {
				around = append(around, f.g.Nodes[i])
			}
		}
		return around
	}
	var seeds, single [][]*ir.Node
	pk := cur.peak
	if pk.PeakStep >= 0 {
		seeds = append(seeds, orig(cur.seq[pk.PeakStep]))
	}
	for i, l := range pk.AtPeak {
		if i >= 6 || l.Bytes*16 < pk.PeakBytes {
			break
		}
		v := l.Value
		if v.Def != nil && v.Def.Graph == cur.g {
			seeds = append(seeds, orig(v.Def))
		}
		var readers []*ir.Node
		for _, u := range v.Uses {
			if u.Node.Graph == cur.g {
				readers = append(readers, orig(u.Node)...)
			}
		}
		if len(readers) > 0 {
			seeds = append(seeds, readers)
		}
		if len(readers) > 1 {
			// Each reader alone, for closures: the readers of a skip
			// before and after a global pool cannot share a region.
			for _, r := range readers {
				single = append(single, []*ir.Node{r})
			}
		}
		// A freed buffer waits for a later value of its shape (ONNX
		// Runtime's planner): tiling that value frees the buffer.
		for j := pk.PeakStep + 1; j < len(cur.seq); j++ {
			n := cur.seq[j]
			if o := n.Outputs; len(o) > 0 && o[0] != nil && o[0].Type.Equal(v.Type) {
				seeds = append(seeds, orig(n))
				break
			}
		}
	}
	closed := map[string]bool{}
	for _, s := range slices.Concat(seeds, single) {
		for _, c := range gr.closures(s, pk.PeakBytes) {
			if k := c.key(); !closed[k] {
				closed[k] = true
				closures = append(closures, c)
			}
		}
	}
	for _, s := range seeds {
		for _, c := range gr.grow(s, pk.PeakBytes) {
			if k := c.key(); !seen[k] {
				seen[k] = true
				cands = append(cands, c)
			}
		}
	}
	for _, c := range closures {
		if k := c.key(); !seen[k] {
			seen[k] = true
			cands = append(cands, c)
		}
	}
	return cands, closures
}
