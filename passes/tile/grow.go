package tile

import (
	"slices"

	"github.com/remat-compile/remat/ir"
)

// grower builds candidate regions around seed nodes of one graph state.
type grower struct {
	g       *ir.Graph
	axis    int
	pos     map[*ir.Node]int
	rules   map[*ir.Node]*ir.SpatialRule // nil: not local
	checked map[*ir.Node]bool
	groups  map[*ir.Node]*ir.Node
	members map[*ir.Node][]*ir.Node
}

// maxGrowth bounds the growth steps from one seed.
const maxGrowth = 48

func newGrower(g *ir.Graph, opts Options) *grower {
	gr := &grower{g: g, axis: opts.Axis, pos: map[*ir.Node]int{}, rules: map[*ir.Node]*ir.SpatialRule{},
		checked: map[*ir.Node]bool{}, groups: map[*ir.Node]*ir.Node{}, members: map[*ir.Node][]*ir.Node{}}
	for i, n := range g.Nodes {
		gr.pos[n] = i
	}
	if opts.Runtime != nil && opts.Runtime.Groups != nil {
		gr.groups = opts.Runtime.Groups(g)
	}
	for _, n := range g.Nodes {
		if l := gr.groups[n]; l != nil {
			gr.members[l] = append(gr.members[l], n)
		}
	}
	return gr
}

// rule returns n's spatial rule along the axis, or nil when n is not
// local (or not a node of the root graph).
func (gr *grower) rule(n *ir.Node) *ir.SpatialRule {
	if !gr.checked[n] {
		gr.checked[n] = true
		if _, ok := gr.pos[n]; ok {
			// A value one row high is not split; it is read whole (a
			// squeeze-excitation vector).
			if r, err := ir.Spatial(n, gr.axis); err == nil && r.OutSize > 1 {
				gr.rules[n] = r
			}
		}
	}
	return gr.rules[n]
}

// unit returns n with the other members of its fusion group; ok is false
// when one of them is not local.
func (gr *grower) unit(n *ir.Node) ([]*ir.Node, bool) {
	u := []*ir.Node{n}
	if l := gr.groups[n]; l != nil {
		u = gr.members[l]
	}
	for _, m := range u {
		if gr.rule(m) == nil {
			return nil, false
		}
	}
	return u, true
}

func bytesOf(v *ir.Value) int64 {
	b, _ := v.Type.Bytes()
	return b
}

// grow returns the regions of a growth from seed: the seed's local nodes
// (with their fusion groups), then, step by step, the region grown through
// its largest boundary value: up to the value's producer (whose output
// the bands then recompute for readers outside the region, Split.Keep),
// or down to the value's local readers. Growth stops when the largest
// boundary value is under 1/64 of peak. Each region comes as two
// candidates: with the recomputed outputs kept by their original nodes,
// and with every output concatenated from the bands.
func (gr *grower) grow(seed []*ir.Node, peak int64) []candidate {
	in := map[*ir.Node]bool{}
	add := func(n *ir.Node) bool {
		u, ok := gr.unit(n)
		if !ok {
			return false
		}
		for _, m := range u {
			in[m] = true
		}
		return true
	}
	for _, s := range seed {
		add(s)
	}
	if len(in) == 0 {
		return nil
	}
	keep := map[*ir.Value]bool{}
	done := map[*ir.Value]bool{}
	var out []candidate
	lastBoundary := int64(-1)
	emit := func() {
		var c, plain candidate
		for i, n := range gr.g.Nodes {
			if !in[n] {
				continue
			}
			c.nodes = append(c.nodes, i)
			v := n.Outputs[0]
			if !keep[v] {
				continue
			}
			for _, u := range v.Uses {
				if !in[u.Node] {
					c.keep = append(c.keep, i)
					break
				}
			}
		}
		plain.nodes = c.nodes
		out = append(out, c)
		if len(c.keep) > 0 {
			out = append(out, plain)
		}
	}
	emit()
	for range maxGrowth {
		var best *ir.Value
		var bestBytes int64 = -1
		up := false
		for _, n := range gr.g.Nodes {
			if !in[n] {
				continue
			}
			r := gr.rule(n)
			for _, s := range r.Inputs {
				v := n.Inputs[s.Slot]
				if v.Def == nil || in[v.Def] || done[v] || gr.rule(v.Def) == nil {
					continue
				}
				if b := bytesOf(v); b > bestBytes {
					best, bestBytes, up = v, b, true
				}
			}
			v := n.Outputs[0]
			if done[v] {
				continue
			}
			for _, u := range v.Uses {
				if !in[u.Node] && gr.rule(u.Node) != nil {
					if b := bytesOf(v); b > bestBytes {
						best, bestBytes, up = v, b, false
					}
					break
				}
			}
		}
		if lastBoundary >= 0 {
			emit()
		}
		lastBoundary = bestBytes
		if best == nil || bestBytes*64 < peak {
			break
		}
		done[best] = true
		if up {
			if add(best.Def) {
				for _, u := range best.Uses {
					if !in[u.Node] {
						keep[best] = true
					}
				}
			}
		} else {
			readers := []*ir.Node{}
			for _, u := range best.Uses {
				if !in[u.Node] && !slices.Contains(readers, u.Node) {
					readers = append(readers, u.Node)
				}
			}
			for _, m := range readers {
				if add(m) {
				}
			}
		}
	}
	emit()
	return out
}

// closures returns seed's closure candidates (closure) at the thresholds
// of closureDivs.
func (gr *grower) closures(seed []*ir.Node, peak int64) []candidate {
	var out []candidate
	for _, div := range closureDivs {
		if c, ok := gr.closure(seed, peak/div); ok {
			out = append(out, c)
		}
	}
	return out
}

// closureDivs give the thresholds of closure candidates: peak/4 and
// peak/8.
var closureDivs = []int64{4, 8}

// closure returns the region that seed grows into when every boundary
// value of at least least bytes is taken in: up to its producer (the value
// then kept for readers outside, Split.Keep, and the producer's own
// inputs followed up in turn, never its other readers) or down to its
// local readers. It is the region that recomputes, band by band, the
// large skips a stage reads from earlier stages, back to values under
// least or the feeds: a greedy growth (grow) takes one boundary at a time
// and can stop between two regions that only lower the peak together.
func (gr *grower) closure(seed []*ir.Node, least int64) (candidate, bool) {
	in := map[*ir.Node]bool{}
	up := map[*ir.Node]bool{}
	add := func(n *ir.Node, isUp bool) bool {
		u, ok := gr.unit(n)
		if !ok {
			return false
		}
		for _, m := range u {
			in[m] = true
			up[m] = isUp
		}
		return true
	}
	for _, s := range seed {
		add(s, false)
	}
	if len(in) == 0 || least <= 0 {
		return candidate{}, false
	}
	for range maxGrowth {
		grew := false
		for _, n := range gr.g.Nodes {
			if !in[n] {
				continue
			}
			for _, s := range gr.rule(n).Inputs {
				v := n.Inputs[s.Slot]
				if v.Def != nil && !in[v.Def] && gr.rule(v.Def) != nil && bytesOf(v) >= least && add(v.Def, true) {
					grew = true
				}
			}
			if v := n.Outputs[0]; !up[n] && bytesOf(v) >= least {
				for _, u := range v.Uses {
					if !in[u.Node] && gr.rule(u.Node) != nil && add(u.Node, false) {
						grew = true
					}
				}
			}
		}
		if !grew {
			break
		}
	}
	var c candidate
	for i, n := range gr.g.Nodes {
		if !in[n] {
			continue
		}
		c.nodes = append(c.nodes, i)
		if !up[n] {
			continue
		}
		for _, u := range n.Outputs[0].Uses {
			if !in[u.Node] {
				c.keep = append(c.keep, i)
				break
			}
		}
	}
	return c, true
}
