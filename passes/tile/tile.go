// Package tile splits memory-heavy regions of a graph into spatial bands:
// patch-based inference (MCUNetV2, Lin et al., NeurIPS 2021) as a
// graph-to-graph rewrite.
//
// Recomputing whole tensors cannot lower a peak below the largest
// single-node working set; in CNN inference the peak sits exactly there, in
// the high-resolution stages. A tiled region runs P times, once per band of
// rows along a spatial axis: each band slices the rows it needs from the
// region's inputs (its share plus the halo its receptive field reads,
// clamped at the image border), runs copies of the region's nodes with
// per-band padding (the node's own padding at the image border, real
// neighbouring rows elsewhere), and the bands' rows of each region output
// are concatenated. Only one band's intermediate values are live at a
// time; the halo rows are computed more than once, which is the extra
// compute.
//
// The rewrite is exact by construction: every output element is computed
// by the same op from the same input elements, with the same padding where
// the whole op would pad. The receptive-field rules are ir.Spatial's;
// ops whose kernels round differently on a band are not local there. Apply
// rewrites one region; Fit chooses the regions and band counts that bring
// a graph's peak under a budget at the least extra compute.
package tile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/remat-compile/remat/ir"
)

// Region is a set of nodes of a root graph to tile.
type Region struct {
	// Nodes are the region's nodes, in any order. Every one must have a
	// spatial rule along Axis (ir.Spatial) and static shapes, and a value
	// produced in the region must be read band-wise by every region node
	// that reads it.
	Nodes []*ir.Node
	// Axis is the spatial axis of the region's values that the bands
	// split: 2 (rows of NCHW; the default when 0) or 3 (columns); in a
	// TensorFlow graph's NHWC images, 1 (rows) or 2 (columns).
	Axis int
}

// Split says how to cut a region.
type Split struct {
	// Bands is the number of bands, at least 2 and at most the extent of
	// the smallest region output along the axis.
	Bands int
	// Cuts, when set, are the band boundaries on the smallest region
	// output's extent: Bands+1 increasing rows from 0 to that extent;
	// other outputs take them scaled to their extent. By default the bands
	// are as equal as the rows allow.
	Cuts []int64
	// Distinct, without Cuts, gives the bands pairwise different sizes
	// (DistinctCuts) on the largest region output's extent where it
	// allows, equal ones on the smallest's elsewhere; a band may then own
	// no row of a smaller output.
	Distinct bool
	// Keep lists values produced in the region and read outside it that
	// are not produced band-wise: their outside readers keep reading the
	// original nodes, which stay in the graph, and the bands recompute
	// them for the region's own readers. That is the recompute choice for
	// a skip connection; every other value read outside is concatenated
	// from the bands.
	Keep []*ir.Value
}

// Tiled describes one rewritten region.
type Tiled struct {
	// Nodes names the region's nodes (before the rewrite), in graph order.
	Nodes []string
	// Axis and Bands are the split.
	Axis, Bands int
	// Input names the region's largest banded input; Reads[b] is the rows
	// [lo, hi) band b reads of it and Halo[b] how many of those lie beyond
	// the band's share of its extent (the rows read again by a neighbour).
	Input string
	Reads [][2]int64
	Halo  []int64
	// Concat names the outputs concatenated from the bands, Kept those
	// left to the original nodes (Split.Keep), Pooled those of Kept that
	// Fit computes in channel groups for a global pool instead
	// (poolGroups).
	Concat, Kept, Pooled []string
	// Added are the nodes the rewrite created (band copies, Slices,
	// Concats); BandNodes[b] those of band b, in graph order (tiling each
	// band again along the other axis makes a grid). Removed counts the
	// original nodes it deleted.
	Added     []*ir.Node
	BandNodes [][]*ir.Node
	Removed   int
	// Copies maps each region node to its band copies.
	Copies map[*ir.Node][]*ir.Node
}

// span is a half-open row range; empty when lo >= hi.
type span struct{ lo, hi int64 }

func (s span) empty() bool { return s.lo >= s.hi }

func (s span) hull(t span) span {
	if s.empty() {
		return t
	}
	if t.empty() {
		return s
	}
	return span{min(s.lo, t.lo), max(s.hi, t.hi)}
}

// inKey identifies a banded region input: a value and the axis of it that
// follows the region's axis.
type inKey struct {
	v    *ir.Value
	axis int
}

// plan is a validated region with its per-band geometry, computed before
// anything in the graph changes.
type plan struct {
	g     *ir.Graph
	axis  int
	nodes []*ir.Node // in graph order
	pos   map[*ir.Node]int
	rules map[*ir.Node]*ir.SpatialRule
	// concat and kept are the region outputs, in graph order.
	concat, kept []*ir.Value
	bands        int
	ref          int64   // the reference extent (smallest concatenated output)
	cuts         []int64 // band boundaries on ref
	// Per band: how each region node computes its band (geo), the rows
	// of each value it computes (comp), the rows of each region input
	// read (inRows).
	geo    []map[*ir.Node]ir.SpatialBand
	comp   []map[*ir.Value]span
	inRows []map[inKey]span
	inKeys []inKey // region inputs in first-read order
}

// Apply rewrites region r of g into s.Bands bands (see the package doc).
// It fails, leaving g unchanged, when a node has no spatial rule, when the
// region reads the whole of a value it produces, when it is not convex (a
// path leaves the region and comes back through a concatenated output),
// or when the split does not fit the extents.
func Apply(g *ir.Graph, r Region, s Split) (*Tiled, error) {
	p, err := newPlan(g, r, s)
	if err != nil {
		return nil, err
	}
	return p.rewrite(), nil
}

func newPlan(g *ir.Graph, r Region, s Split) (*plan, error) {
	if g.Parent != nil {
		return nil, errors.New("tile: regions must be in a root graph")
	}
	axis := r.Axis
	if axis == 0 {
		axis = 2
	}
	if len(r.Nodes) == 0 {
		return nil, errors.New("tile: empty region")
	}
	if s.Bands < 2 {
		return nil, fmt.Errorf("tile: %d bands; at least 2 are needed", s.Bands)
	}
	p := &plan{g: g, axis: axis, pos: map[*ir.Node]int{}, rules: map[*ir.Node]*ir.SpatialRule{}, bands: s.Bands}
	for i, n := range g.Nodes {
		p.pos[n] = i
	}
	inR := map[*ir.Node]bool{}
	for _, n := range r.Nodes {
		if _, ok := p.pos[n]; !ok {
			return nil, fmt.Errorf("tile: node %s is not in graph %q", n, g.Name)
		}
		if inR[n] {
			return nil, fmt.Errorf("tile: node %s is listed twice", n)
		}
		inR[n] = true
		p.nodes = append(p.nodes, n)
	}
	slices.SortFunc(p.nodes, func(a, b *ir.Node) int { return p.pos[a] - p.pos[b] })
	produced := map[*ir.Value]bool{}
	for _, n := range p.nodes {
		rule, err := ir.Spatial(n, axis)
		if err != nil {
			return nil, fmt.Errorf("tile: %w", err)
		}
		p.rules[n] = rule
		produced[n.Outputs[0]] = true
	}
	for _, n := range p.nodes {
		rule := p.rules[n]
		for i, v := range n.AllInputs() {
			if v == nil || !produced[v] {
				continue
			}
			k := slices.IndexFunc(rule.Inputs, func(in ir.SpatialInput) bool { return in.Slot == i })
			if k < 0 {
				return nil, fmt.Errorf("tile: node %s reads the whole of %s, which the region produces", n, v)
			}
			if rule.Inputs[k].Axis != axis {
				return nil, fmt.Errorf("tile: node %s reads %s along its axis %d, not %d", n, v, rule.Inputs[k].Axis, axis)
			}
		}
	}
	keep := map[*ir.Value]bool{}
	for _, v := range s.Keep {
		keep[v] = true
	}
	isOut := map[*ir.Value]bool{}
	for _, o := range g.Outputs {
		isOut[o] = true
	}
	for _, n := range p.nodes {
		v := n.Outputs[0]
		outside := isOut[v]
		for _, u := range v.Uses {
			if !inR[u.Node] {
				outside = true
			}
		}
		switch {
		case !outside && keep[v]:
			return nil, fmt.Errorf("tile: Keep lists %s, which nothing outside the region reads", v)
		case !outside:
		case keep[v]:
			p.kept = append(p.kept, v)
			delete(keep, v)
		default:
			p.concat = append(p.concat, v)
		}
	}
	for _, v := range s.Keep {
		if keep[v] {
			return nil, fmt.Errorf("tile: Keep lists %s, which the region does not produce", v)
		}
	}
	if len(p.concat) == 0 {
		return nil, errors.New("tile: the region has no output to produce band-wise")
	}
	if err := p.checkConvex(inR); err != nil {
		return nil, err
	}
	// The cuts are rows of the reference output: the smallest region
	// output, or with Distinct the largest, so that band sizes differ at
	// the finest resolution while staying close to equal.
	p.ref = -1
	for _, v := range p.concat {
		e := v.Type.Shape[axis].Size
		if p.ref < 0 || (e < p.ref) != (s.Distinct && s.Cuts == nil) {
			p.ref = e
		}
	}
	if int64(s.Bands) > p.ref {
		return nil, fmt.Errorf("tile: %d bands, but the region output (extent %d) has fewer rows", s.Bands, p.ref)
	}
	if s.Cuts != nil {
		if len(s.Cuts) != s.Bands+1 || s.Cuts[0] != 0 || s.Cuts[s.Bands] != p.ref {
			return nil, fmt.Errorf("tile: cuts %v: want %d increasing rows from 0 to %d", s.Cuts, s.Bands+1, p.ref)
		}
		for b := range s.Bands {
			if s.Cuts[b] >= s.Cuts[b+1] {
				return nil, fmt.Errorf("tile: cuts %v are not increasing", s.Cuts)
			}
		}
		p.cuts = slices.Clone(s.Cuts)
	} else if c := DistinctCuts(p.ref, s.Bands); s.Distinct && c != nil {
		p.cuts = c
	} else {
		if s.Distinct {
			for _, v := range p.concat {
				p.ref = min(p.ref, v.Type.Shape[axis].Size)
			}
			if int64(s.Bands) > p.ref {
				return nil, fmt.Errorf("tile: %d bands, but the smallest region output (extent %d) has fewer rows", s.Bands, p.ref)
			}
		}
		p.cuts = EqualCuts(p.ref, s.Bands)
	}
	if err := p.geometry(); err != nil {
		return nil, err
	}
	if s.Distinct && s.Cuts == nil {
		p.separate()
	}
	return p, nil
}

// DistinctCuts returns the boundaries of n bands of extent rows whose
// sizes differ pairwise and are otherwise as equal as the rows allow
// (consecutive sizes, the remainder on the largest), or nil when extent is
// under 1+2+…+n.
//
// Bands of equal size give their copies of a value the same shape, and
// ONNX Runtime's allocation planner keeps a freed buffer for the next
// value of the same shape: every buffer of one band would stay allocated
// until the next band's copy of the value takes it, so a band would hold
// all its intermediate values at once instead of those live. Measured
// with the memory model on the zoo MobileNet v2 (conv0 to block3 in 4
// bands; the model predicts ORT's measured peaks of the original and the
// tiled graph to the byte): 11.40 MiB with equal bands, 4.26 MiB with
// sizes 12, 13, 14 and 17 rows.
func DistinctCuts(extent int64, n int) []int64 {
	p := int64(n)
	m := (extent - p*(p-1)/2) / p
	if m < 1 {
		return nil
	}
	r := extent - (p*m + p*(p-1)/2)
	cuts := make([]int64, n+1)
	for i := range n {
		size := m + int64(i)
		if int64(i) >= p-r {
			size++
		}
		cuts[i+1] = cuts[i] + size
	}
	return cuts
}

// separate moves the cuts a row at a time while two bands still give some
// value of the region the same extent (halos and the image border can make
// different band sizes meet), keeping the cuts with the fewest such
// collisions: ONNX Runtime's planner would hold one band's buffer of that
// value for the other (see DistinctCuts).
func (p *plan) separate() {
	best, bestCuts := p.collisions(), slices.Clone(p.cuts)
	for round := 0; round < 8 && best > 0; round++ {
		improved := false
		for b := 1; b < p.bands && best > 0; b++ {
			for _, d := range []int64{1, -1, 2, -2, 3, -3} {
				cuts := slices.Clone(bestCuts)
				cuts[b] += d
				if cuts[b] <= cuts[b-1] || cuts[b] >= cuts[b+1] {
					continue
				}
				p.cuts = cuts
				if p.geometry() != nil {
					continue
				}
				if c := p.collisions(); c < best {
					best, bestCuts, improved = c, cuts, true
					break
				}
			}
		}
		if !improved {
			break
		}
	}
	p.cuts = bestCuts
	if err := p.geometry(); err != nil {
		panic(fmt.Sprintf("tile: internal error: cuts that planned before fail: %v", err))
	}
}

// collisions counts, over the shapes of the values the bands compute, the
// bands beyond the first that compute a value of that shape: a buffer one
// band frees would wait, allocated, for the next band's value of the same
// shape.
func (p *plan) collisions() int {
	bands := map[string]map[int]bool{}
	for _, nd := range p.nodes {
		v := nd.Outputs[0]
		for b := range p.bands {
			r, ok := p.comp[b][v]
			if !ok {
				continue
			}
			key := withExtent(v.Type, p.axis, r.hi-r.lo).String()
			if bands[key] == nil {
				bands[key] = map[int]bool{}
			}
			bands[key][b] = true
		}
	}
	n := 0
	for _, bs := range bands {
		n += len(bs) - 1
	}
	return n
}

// EqualCuts returns the boundaries of n bands of extent rows as equal as
// the rows allow.
func EqualCuts(extent int64, n int) []int64 {
	cuts := make([]int64, n+1)
	for b := range cuts {
		cuts[b] = (int64(b)*extent + int64(n)/2) / int64(n)
	}
	cuts[n] = extent
	return cuts
}

// checkConvex fails when a path leaves the region through a concatenated
// output and comes back: the Concat would then depend on the region.
func (p *plan) checkConvex(inR map[*ir.Node]bool) error {
	reached := map[*ir.Node]*ir.Value{} // outside node → the region output it depends on
	var stack []*ir.Node
	for _, v := range p.concat {
		for _, u := range v.Uses {
			if !inR[u.Node] && reached[u.Node] == nil {
				reached[u.Node] = v
				stack = append(stack, u.Node)
			}
		}
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, o := range n.Outputs {
			if o == nil {
				continue
			}
			for _, u := range o.Uses {
				if inR[u.Node] {
					return fmt.Errorf("tile: the region is not convex: node %s reads %s, which depends on the region's output %s", u.Node, o, reached[n])
				}
				if reached[u.Node] == nil {
					reached[u.Node] = reached[n]
					stack = append(stack, u.Node)
				}
			}
		}
	}
	return nil
}

// own returns the rows of region output v that band b writes.
func (p *plan) own(v *ir.Value, b int) span {
	e := v.Type.Shape[p.axis].Size
	return span{p.cuts[b] * e / p.ref, p.cuts[b+1] * e / p.ref}
}

// geometry plans every band. Backwards through the region, the rows each
// value must hold exactly (need: the hull of what its readers in the band
// read, the band's own rows for a region output). Forwards, the rows each
// band node computes (comp, at least need) and how (geo).
//
// A node with several banded inputs (a residual Add, a Concat) gets inputs
// that cover different rows when its paths have different halos. Slicing
// the wider one would be exact, but a runtime's layout optimizer can then
// treat the node differently than in the untiled graph (ONNX Runtime only
// fuses an Add into the Conv before it when every operand comes from a
// layout-converted node, and a Slice is not one: measured at level all, a
// tiled residual block changed up to 39% of its outputs by up to 5.7e-6).
// So the narrower paths are widened instead: a stride-1 window op
// computes extra rows at the band's edges with padding there. Those rows
// hold wrong values, but no row any band keeps depends on them: every
// needed row's window lies inside the rows read exactly.
func (p *plan) geometry() error {
	p.geo = make([]map[*ir.Node]ir.SpatialBand, p.bands)
	p.comp = make([]map[*ir.Value]span, p.bands)
	p.inRows = make([]map[inKey]span, p.bands)
	seen := map[inKey]bool{}
	var order []inKey
	for b := range p.bands {
		need := map[*ir.Value]span{}
		for _, v := range p.concat {
			need[v] = p.own(v, b)
		}
		geo := map[*ir.Node]ir.SpatialBand{}
		inRows := map[inKey]span{}
		for i := len(p.nodes) - 1; i >= 0; i-- {
			n := p.nodes[i]
			want := need[n.Outputs[0]]
			if want.empty() {
				continue
			}
			rule := p.rules[n]
			bd, err := rule.Band(want.lo, want.hi)
			if err != nil {
				return fmt.Errorf("tile: band %d of %d: node %s: %w", b, p.bands, n, err)
			}
			if rule.Kind == ir.SpatialPoint {
				bd.OutLo, bd.OutHi = want.lo, want.hi
			}
			geo[n] = bd
			for _, in := range rule.Inputs {
				v := n.Inputs[in.Slot]
				rows := span{bd.Lo, bd.Hi}
				if p.produced(v) {
					need[v] = need[v].hull(rows)
					continue
				}
				k := inKey{v, in.Axis}
				inRows[k] = inRows[k].hull(rows)
				if !seen[k] {
					seen[k] = true
					order = append(order, k)
				}
			}
		}
		p.geo[b], p.inRows[b] = geo, inRows
		p.forward(b)
	}
	// Region inputs in graph order of their first reader.
	first := map[inKey]int{}
	for _, n := range p.nodes {
		for _, in := range p.rules[n].Inputs {
			k := inKey{n.Inputs[in.Slot], in.Axis}
			if _, ok := first[k]; !ok && seen[k] {
				first[k] = p.pos[n]
			}
		}
	}
	slices.SortStableFunc(order, func(a, b inKey) int { return first[a] - first[b] })
	p.inKeys = order
	return nil
}

// produced reports whether the region computes v.
func (p *plan) produced(v *ir.Value) bool { return v != nil && v.Def != nil && p.rules[v.Def] != nil }

// forward computes the rows every node of band b computes, widening the
// narrower inputs of nodes with several banded inputs (see geometry). It
// repeats until nothing widens: widening only ever adds rows.
func (p *plan) forward(b int) {
	geo, inRows := p.geo[b], p.inRows[b]
	for {
		comp := map[*ir.Value]span{}
		rows := func(n *ir.Node, in ir.SpatialInput) span {
			v := n.Inputs[in.Slot]
			if p.produced(v) {
				return comp[v]
			}
			return inRows[inKey{v, in.Axis}]
		}
		widened := false
		for _, n := range p.nodes {
			g, ok := geo[n]
			if !ok {
				continue
			}
			rule := p.rules[n]
			if rule.Kind != ir.SpatialPoint {
				comp[n.Outputs[0]] = span{g.OutLo, g.OutHi}
				continue
			}
			all := span{}
			common := span{-1 << 62, 1 << 62}
			for _, in := range rule.Inputs {
				r := rows(n, in)
				all = all.hull(r)
				common = span{max(common.lo, r.lo), min(common.hi, r.hi)}
			}
			if common != all {
				for _, in := range rule.Inputs {
					if rows(n, in) != all && p.widen(b, n.Inputs[in.Slot], in.Axis, all, comp) {
						widened = true
					}
				}
				if widened {
					break
				}
			}
			comp[n.Outputs[0]] = common
		}
		if !widened {
			p.comp[b] = comp
			return
		}
	}
}

// widen makes band b compute rows t of v (a banded input read along
// axis), if the path to it allows: a region input is read over more rows,
// a pointwise producer widens its own inputs, a stride-1 window producer
// computes the extra rows with padding at the band's edges. It reports
// whether it changed anything.
func (p *plan) widen(b int, v *ir.Value, axis int, t span, comp map[*ir.Value]span) bool {
	if !p.produced(v) {
		k := inKey{v, axis}
		old := p.inRows[b][k]
		t = span{max(0, t.lo), min(v.Type.Shape[axis].Size, t.hi)}
		p.inRows[b][k] = old.hull(t)
		return p.inRows[b][k] != old
	}
	n := v.Def
	rule := p.rules[n]
	g := p.geo[b][n]
	t = t.hull(span{g.OutLo, g.OutHi})
	t = span{max(0, t.lo), min(rule.OutSize, t.hi)}
	switch {
	case rule.Kind == ir.SpatialPoint:
		changed := false
		for _, in := range rule.Inputs {
			if p.widen(b, n.Inputs[in.Slot], in.Axis, t, comp) {
				changed = true
			}
		}
		return changed
	case rule.Kind == ir.SpatialWindow && rule.Stride == 1 && rule.Kernel == 1 && rule.PadBegin == 0 && rule.PadEnd == 0 && n.Op != "Slice":
		// A 1×1 window passes the widening on to its input, like a
		// pointwise op: padding it would move MLAS's pointwise Conv onto
		// another kernel (measured at level all: a residual block whose
		// 1×1 projection a band padded changed 930 of 1000 outputs).
		if !p.widen(b, n.Inputs[rule.Inputs[0].Slot], rule.Inputs[0].Axis, t, comp) {
			return false
		}
		p.geo[b][n] = ir.SpatialBand{Lo: t.lo, Hi: t.hi, OutLo: t.lo, OutHi: t.hi}
		return true
	case rule.Kind == ir.SpatialWindow && rule.Stride == 1 && !rule.CeilMode && n.Op != "Slice" && n.Op != "SpaceToDepth" &&
		(rule.PadBegin > 0 || rule.PadEnd > 0):
		// Only an op that pads in the whole graph gets band-edge padding.
		if t == (span{g.OutLo, g.OutHi}) {
			return false
		}
		in := rule.Inputs[0]
		avail := comp[n.Inputs[in.Slot]]
		if !p.produced(n.Inputs[in.Slot]) {
			avail = p.inRows[b][inKey{n.Inputs[in.Slot], in.Axis}]
		}
		ext := (rule.Kernel-1)*rule.Dilation + 1
		lo := max(0, t.lo-rule.PadBegin, avail.lo)
		hi := min(rule.InSize, t.hi-1-rule.PadBegin+ext, avail.hi)
		w := ir.SpatialBand{Lo: lo, Hi: hi, PadBegin: lo - (t.lo - rule.PadBegin), PadEnd: t.hi - 1 - rule.PadBegin + ext - hi, OutLo: t.lo, OutHi: t.hi}
		if w.Lo > g.Lo || w.Hi < g.Hi || w.PadBegin < 0 || w.PadEnd < 0 || !rule.BandOK(w) {
			return false
		}
		if n.Op != "Conv" && n.Op != "ConvInteger" && n.Op != "QLinearConv" && n.Op != "Pad" && (w.PadBegin >= rule.Kernel || w.PadEnd >= rule.Kernel) {
			return false // pools take pads smaller than the kernel only
		}
		p.geo[b][n] = w
		return true
	}
	return false
}

// builder creates the rewrite's nodes and parameters with unique names.
type builder struct {
	g *ir.Graph
	// domain is the domain of the nodes created: ir.TFDomain for a
	// TensorFlow graph (tf.go), the standard domain otherwise.
	domain string
	names  map[string]bool
	added  []*ir.Node
	params map[string]*ir.Value // int64 parameters by content
}

func newBuilder(g *ir.Graph, domain string) *builder {
	b := &builder{g: g, domain: domain, names: map[string]bool{}, params: map[string]*ir.Value{}}
	g.Walk(func(sg *ir.Graph) {
		for _, v := range sg.Inputs {
			b.names[v.Name] = true
		}
		for _, v := range sg.Params {
			b.names[v.Name] = true
		}
		for _, n := range sg.Nodes {
			b.names[n.Name] = true
			for _, o := range n.Outputs {
				if o != nil {
					b.names[o.Name] = true
				}
			}
		}
	})
	return b
}

// unique returns name, or name with a numeric suffix, unused so far.
func (b *builder) unique(name string) string {
	if name == "" {
		name = "tile"
	}
	cand := name
	for k := 2; b.names[cand]; k++ {
		cand = name + "_" + strconv.Itoa(k)
	}
	b.names[cand] = true
	return cand
}

// node creates a node with one output of type t, not yet placed.
func (b *builder) node(op, name string, ins []*ir.Value, out string, t ir.TensorType) *ir.Node {
	n := b.g.CreateNode(op, b.domain, ins, []string{b.unique(out)})
	n.Name = b.unique(name)
	n.Outputs[0].Type = t
	b.added = append(b.added, n)
	return n
}

// copyNode creates a band copy of n, not yet placed: a node of n's op
// whose first output has type t. A TensorFlow op, whose outputs are
// fixed in number, gets the others too, of n's types (nothing reads
// them: ir.Spatial requires it).
func (b *builder) copyNode(n *ir.Node, name, out string, t ir.TensorType) *ir.Node {
	outs := []string{b.unique(out)}
	if n.Domain == ir.TFDomain {
		for i := 1; i < len(n.Outputs); i++ {
			outs = append(outs, b.unique(out+":"+strconv.Itoa(i)))
		}
	}
	c := b.g.CreateNode(n.Op, n.Domain, nil, outs)
	c.Name = b.unique(name)
	c.Outputs[0].Type = t
	for i := 1; i < len(outs); i++ {
		c.Outputs[i].Type = n.Outputs[i].Type.Clone()
	}
	b.added = append(b.added, c)
	return c
}

// ints returns an int64 parameter holding vals (shared by content).
func (b *builder) ints(vals ...int64) *ir.Value {
	key := fmt.Sprint(vals)
	if v := b.params[key]; v != nil {
		return v
	}
	name := "tile_const"
	for _, x := range vals {
		name += "_" + strconv.FormatInt(x, 10)
	}
	shape := []int64{int64(len(vals))}
	v := b.g.AddParam(b.unique(name), ir.TensorOf(ir.Int64, shape...), ir.Int64Tensor(shape, vals...))
	b.params[key] = v
	return v
}

// withExtent returns t with axis's extent set to n.
func withExtent(t ir.TensorType, axis int, n int64) ir.TensorType {
	t = t.Clone()
	t.Shape[axis] = ir.D(n)
	return t
}

// slice returns rows [lo, hi) of v along axis, named after base.
func (b *builder) slice(v *ir.Value, axis int, lo, hi int64, base string) *ir.Value {
	if b.domain == ir.TFDomain {
		return b.sliceTF(v, axis, lo, hi, base)
	}
	t := withExtent(v.Type, axis, hi-lo)
	if b.g.Opset("") != 0 && b.g.Opset("") < 10 {
		n := b.node("Slice", base, []*ir.Value{v}, base, t)
		n.SetAttr(ir.IntsAttr("starts", lo))
		n.SetAttr(ir.IntsAttr("ends", hi))
		n.SetAttr(ir.IntsAttr("axes", int64(axis)))
		return n.Outputs[0]
	}
	n := b.node("Slice", base, []*ir.Value{v, b.ints(lo), b.ints(hi), b.ints(int64(axis))}, base, t)
	return n.Outputs[0]
}

// banded is a band's copy of a value: the copy and the rows of the
// original it holds.
type banded struct {
	v    *ir.Value
	rows span
}

func (p *plan) rewrite() *Tiled {
	g, axis := p.g, p.axis
	domain := ""
	if p.nodes[0].Domain == ir.TFDomain {
		domain = ir.TFDomain
	}
	bl := newBuilder(g, domain)
	t := &Tiled{Axis: axis, Bands: p.bands}
	for _, n := range p.nodes {
		t.Nodes = append(t.Nodes, n.String())
	}
	for _, v := range p.concat {
		t.Concat = append(t.Concat, v.String())
	}
	for _, v := range p.kept {
		t.Kept = append(t.Kept, v.String())
	}
	p.report(t)
	t.Copies = map[*ir.Node][]*ir.Node{}
	pieces := map[*ir.Value][]*ir.Value{}
	for b := range p.bands {
		start := len(bl.added)
		suffix := "_t" + strconv.Itoa(b)
		copies := map[*ir.Value]banded{}
		cut := map[[3]any]*ir.Value{} // (value, lo, hi) → its slice
		sliceOf := func(src banded, axis int, want span, base string) *ir.Value {
			if src.rows == want {
				return src.v
			}
			key := [3]any{src.v, want.lo, want.hi}
			if s := cut[key]; s != nil {
				return s
			}
			s := bl.slice(src.v, axis, want.lo-src.rows.lo, want.hi-src.rows.lo, base+suffix+"_rows"+strconv.FormatInt(want.lo, 10))
			cut[key] = s
			return s
		}
		inputs := map[inKey]banded{}
		for _, k := range p.inKeys {
			rows, ok := p.inRows[b][k]
			if !ok {
				continue
			}
			whole := banded{k.v, span{0, k.v.Type.Shape[k.axis].Size}}
			inputs[k] = banded{sliceOf(whole, k.axis, rows, k.v.String()), rows}
		}
		for _, n := range p.nodes {
			bd, ok := p.geo[b][n]
			if !ok {
				continue
			}
			rule := p.rules[n]
			out := n.Outputs[0]
			rows := p.comp[b][out]
			ins := slices.Clone(n.Inputs)
			for _, in := range rule.Inputs {
				v := n.Inputs[in.Slot]
				src, ok := copies[v]
				if !ok {
					src = inputs[inKey{v, in.Axis}]
				}
				want := span{bd.Lo, bd.Hi}
				if rule.Kind == ir.SpatialPoint {
					want = rows
				}
				ins[in.Slot] = sliceOf(src, in.Axis, want, v.String())
			}
			c := bl.copyNode(n, n.String()+suffix, out.String()+suffix, withExtent(out.Type, axis, rows.hi-rows.lo))
			c.Domain, c.Doc, c.Ext = n.Domain, n.Doc, n.Ext
			for i, v := range ins {
				c.SetInput(i, v)
			}
			c.Attrs = make([]ir.Attr, 0, len(n.Attrs))
			for _, a := range n.Attrs {
				c.SetAttr(copyAttr(a, g, nil))
			}
			p.adjust(bl, c, rule, bd)
			copies[out] = banded{c.Outputs[0], rows}
			t.Copies[n] = append(t.Copies[n], c)
		}
		for _, v := range p.concat {
			if own := p.own(v, b); !own.empty() {
				pieces[v] = append(pieces[v], sliceOf(copies[v], axis, own, v.String()))
			}
		}
		t.BandNodes = append(t.BandNodes, slices.Clone(bl.added[start:]))
	}
	for _, v := range p.concat {
		if domain == ir.TFDomain {
			bl.concatTF(v, pieces[v], axis)
			continue
		}
		name := v.String()
		v.Name = bl.unique(name + "_untiled")
		bl.names[name] = false
		c := bl.node("Concat", name+"_concat", pieces[v], name, v.Type.Clone())
		c.SetAttr(ir.IntAttr("axis", int64(axis)))
		c.Outputs[0].Doc = v.Doc
		v.ReplaceUses(c.Outputs[0])
	}
	// Place the new nodes after the region's last node, delete the
	// originals nothing reads any more, and restore a topological order.
	last := p.pos[p.nodes[len(p.nodes)-1]]
	nodes := make([]*ir.Node, 0, len(g.Nodes)+len(bl.added))
	nodes = append(nodes, g.Nodes[:last+1]...)
	nodes = append(nodes, bl.added...)
	nodes = append(nodes, g.Nodes[last+1:]...)
	g.Nodes = nodes
	for i := len(p.nodes) - 1; i >= 0; i-- {
		n := p.nodes[i]
		dead := true
		for _, o := range n.Outputs {
			if o != nil && (len(o.Uses) > 0 || slices.Contains(g.Outputs, o)) {
				dead = false
			}
		}
		if dead {
			g.RemoveNode(n)
			t.Removed++
		}
	}
	if err := g.Sort(); err != nil {
		panic(fmt.Sprintf("tile: internal error: the rewrite made a cycle: %v", err))
	}
	t.Added = bl.added
	return t
}

// adjust writes a band's geometry into its copy c of a region node.
func (p *plan) adjust(bl *builder, c *ir.Node, rule *ir.SpatialRule, bd ir.SpatialBand) {
	if c.Domain == ir.TFDomain {
		p.adjustTF(bl, c, rule, bd)
		return
	}
	if rule.Kind == ir.SpatialPoint {
		return
	}
	nd := len(rule.Pads) / 2
	k := p.axis - 2
	bandPads := func() []int64 {
		pads := slices.Clone(rule.Pads)
		pads[k], pads[k+nd] = bd.PadBegin, bd.PadEnd
		return pads
	}
	switch c.Op {
	case "Conv", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool":
		c.DelAttr("auto_pad")
		c.SetAttr(ir.IntsAttr("pads", bandPads()...))
	case "ConvTranspose":
		c.SetAttr(ir.IntsAttr("pads", bandPads()...))
		op := make([]int64, nd)
		if o, ok := c.AttrInts("output_padding"); ok {
			copy(op, o)
		}
		op[k] = bd.OutputPadding
		c.SetAttr(ir.IntsAttr("output_padding", op...))
	case "Pad":
		rank := len(rule.Pads) / 2
		pads := slices.Clone(rule.Pads)
		pads[p.axis], pads[rank+p.axis] = bd.PadBegin, bd.PadEnd
		if len(c.Inputs) < 2 {
			c.SetAttr(ir.IntsAttr("pads", pads...))
			return
		}
		c.SetInput(1, bl.ints(pads...))
		if len(c.Inputs) > 3 {
			c.SetInput(3, nil)
		}
	case "Slice":
		rank := len(c.Outputs[0].Type.Shape)
		starts, ends, axes, _, err := ir.SliceParams(c, rank)
		if err != nil {
			panic(fmt.Sprintf("tile: internal error: %v", err)) // Spatial read them
		}
		j := slices.Index(axes, int64(p.axis))
		starts, ends = slices.Clone(starts), slices.Clone(ends)
		starts[j], ends[j] = 0, bd.Hi-bd.Lo
		if len(c.Inputs) == 1 {
			c.SetAttr(ir.IntsAttr("starts", starts...))
			c.SetAttr(ir.IntsAttr("ends", ends...))
			return
		}
		c.SetInput(1, bl.ints(starts...))
		c.SetInput(2, bl.ints(ends...))
	case "Resize":
		// Sizes, when given, are the band's; scales stay as they are.
		if t := (*ir.Tensor)(nil); len(c.Inputs) > 3 && c.Inputs[3] != nil {
			t = ir.ConstTensor(c.Inputs[3])
			if t == nil {
				return
			}
			sizes, _ := t.Int64s()
			sizes = slices.Clone(sizes)
			sizes[p.axis] = bd.OutHi - bd.OutLo
			c.SetInput(3, bl.ints(sizes...))
		}
	}
}

// report fills the halo figures of t: per band, the rows read of the
// largest banded region input and how many lie beyond the band's share.
func (p *plan) report(t *Tiled) {
	var best inKey
	var bestBytes int64 = -1
	for _, k := range p.inKeys {
		if b, ok := k.v.Type.Bytes(); ok && b > bestBytes {
			best, bestBytes = k, b
		}
	}
	if bestBytes < 0 {
		return
	}
	t.Input = best.v.String()
	e := best.v.Type.Shape[best.axis].Size
	for b := range p.bands {
		rows := p.inRows[b][best]
		t.Reads = append(t.Reads, [2]int64{rows.lo, rows.hi})
		share := span{p.cuts[b] * e / p.ref, p.cuts[b+1] * e / p.ref}
		halo := max(0, share.lo-rows.lo) + max(0, rows.hi-share.hi)
		if rows.empty() {
			halo = 0
		}
		t.Halo = append(t.Halo, halo)
	}
}
