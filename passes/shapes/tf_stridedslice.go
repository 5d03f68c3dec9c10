package shapes

import (
	"fmt"
	"math/bits"

	"github.com/remat-compile/remat/ir"
)

// StridedSlice (input, begin, end, strides) with TensorFlow's five masks.
// begin, end and strides form a sparse spec of n entries; bit i of a mask
// applies to entry i:
//
//   - ellipsis_mask (at most one bit): the entry stands for as many full
//     axes as the input has beyond the other entries. A spec without one
//     ends with an implicit ellipsis, so trailing axes are kept whole.
//   - new_axis_mask: the entry inserts an axis of size 1 (and consumes no
//     input axis); an ellipsis bit at the same entry wins.
//   - shrink_axis_mask: the entry takes the single index begin (negative
//     counts from the end; it must lie inside the axis) and drops the axis;
//     a new-axis bit at the same entry wins.
//   - begin_mask, end_mask: the entry's begin (end) is ignored and the
//     range starts (ends) at the axis's first element in the direction of
//     the stride.
//
// Expanding the ellipsis gives a dense spec with one entry per input axis.
// On each axis of size d with stride s (not 0), a begin or end x that is not
// masked counts from the end when negative and is clamped to [0, d] for
// s > 0, [-1, d-1] for s < 0; the axis keeps ceil((end-begin)/s)
// elements, 0 when that is negative.
func tfStridedSlice(c *nctx) {
	for i, name := range []string{"input", "begin", "end", "strides"} {
		if !c.need(i, name) {
			return
		}
	}
	dt := c.inDType(0, "T")
	masks := make([]int64, 5)
	for k, name := range []string{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"} {
		masks[k] = c.attrInt(name, 0)
		if masks[k] < 0 || masks[k] >= 1<<32 {
			c.errf("attribute %s is %d, want a 32-bit mask", name, masks[k])
			return
		}
	}
	ellMask, newMask, shrinkMask := masks[2], masks[3], masks[4]
	if bits.OnesCount64(uint64(ellMask)) > 1 {
		c.errf("ellipsis_mask %#x has more than one bit: a slice has at most one ellipsis", ellMask)
		return
	}
	x, xok := c.shape(0)
	begin, bk := c.constInts(1)
	end, ek := c.constInts(2)
	stride, sk := c.constInts(3)
	n := -1
	for _, i := range []int{1, 2, 3} {
		if l := c.listLen(i); l >= 0 {
			if n >= 0 && l != n {
				c.errf("begin, end and strides must have the same length (%d and %d)", n, l)
				return
			}
			n = l
		}
	}
	if !xok || n < 0 || !bk || !ek || !sk {
		// The rank is known from the masks alone when the spec's length
		// is: every entry is an axis kept, dropped or added.
		if !xok || n < 0 {
			c.set(0, unknownType(dt))
			return
		}
		r := len(x)
		for i := range n {
			switch {
			case bit(ellMask, i):
			case bit(newMask, i):
				r++
			case bit(shrinkMask, i):
				r--
			}
		}
		if r < 0 {
			c.errf("the slice spec drops more axes than the input has (%s)", shapeString(x))
			return
		}
		c.set(0, tensorType(dt, unknownDims(r)))
		return
	}
	if len(begin) != n || len(end) != n || len(stride) != n {
		c.errf("begin, end and strides must have the same length")
		return
	}

	r := len(x)
	dense, final, err := expandStridedSpec(r, begin, end, stride, masks)
	if err != nil {
		if ae, ok := err.(specAxesError); ok {
			c.errf("the slice spec indexes %d axes, but the input has shape %s", int(ae), shapeString(x))
		} else {
			c.errf("%v", err)
		}
		return
	}

	// Each dense axis: its first index, stride and size.
	starts, steps, counts := make([]int64, r), make([]int64, r), make([]int64, r)
	sizes := make([]ir.Dim, r)
	allKnown := true
	for a, e := range dense {
		d := x[a]
		steps[a] = e.stride
		switch {
		case e.shrink:
			sizes[a] = ir.D(1)
			counts[a] = 1
			if !d.Known() {
				if e.begin >= 0 {
					starts[a] = e.begin
				} else {
					allKnown = false
				}
				continue
			}
			b, ok := e.shrinkIndex(d.Size)
			if !ok {
				c.errf("index %d is out of range for axis %d of size %d", e.begin, a, d.Size)
				return
			}
			starts[a] = b
		case !d.Known():
			allKnown = false
			if e.beginMasked && e.endMasked && e.stride == 1 || !e.fromSparse {
				sizes[a] = d // the whole axis
			} else if e.beginMasked && e.endMasked && e.stride == -1 {
				sizes[a] = d
			} else {
				sizes[a] = ir.UnknownDim
			}
		default:
			starts[a], counts[a] = e.resolve(d.Size)
			sizes[a] = ir.D(counts[a])
		}
	}

	var out []ir.Dim
	for _, f := range final {
		switch {
		case f == newAxis:
			out = append(out, ir.D(1))
		case f >= 0:
			out = append(out, sizes[f])
		}
	}
	c.set(0, tensorType(dt, out))
	cv := c.cstOfRank(0, r)
	if cv == nil || !allKnown {
		return
	}
	axes := make([]int, r)
	for a := range axes {
		axes[a] = a
	}
	sl := sliceConst(cv, axes, starts, steps, counts)
	if sl == nil {
		return
	}
	if outSizes, ok := tensorType(dt, out).Dims(); ok {
		c.setConst(0, reshaped(sl, outSizes))
	}
}

// denseEntry is one input axis of a StridedSlice's dense spec.
type denseEntry struct {
	begin, end, stride     int64
	beginMasked, endMasked bool
	shrink, fromSparse     bool
}

// newAxis marks an inserted axis in expandStridedSpec's final list.
const newAxis = -1

// specAxesError is expandStridedSpec's error for a spec that indexes
// more axes than the input has: how many it indexes.
type specAxesError int

func (e specAxesError) Error() string {
	return fmt.Sprintf("the slice spec indexes %d axes, more than the input has", int(e))
}

func bit(m int64, i int) bool { return m>>uint(i)&1 != 0 }

// expandStridedSpec expands the sparse spec (begin, end, stride; masks
// begin, end, ellipsis, new-axis, shrink) of a StridedSlice over an input
// of rank r into the dense spec, one entry per input axis, and final, the
// output's axes in order: the dense axis behind each, newAxis for an
// inserted one, and -2-a for a dense axis a shrunk away. A bad spec gives
// an error.
func expandStridedSpec(r int, begin, end, stride []int64, masks []int64) ([]denseEntry, []int, error) {
	beginMask, endMask, ellMask, newMask, shrinkMask := masks[0], masks[1], masks[2], masks[3], masks[4]
	n := len(begin)
	dense := make([]denseEntry, r)
	var final []int
	nSparse, implicit := n, ellMask == 0
	if implicit {
		nSparse++
	}
	addAfter := 0
	if !implicit {
		after := false
		for i := range n {
			if bit(ellMask, i) {
				after = true
			} else if after && bit(newMask, i) {
				addAfter++
			}
		}
	}
	full := 0
	for i := range nSparse {
		switch {
		case i == n || bit(ellMask, i):
			next := min(r-(nSparse-i)+1+addAfter, r)
			for ; full < next; full++ {
				dense[full] = denseEntry{stride: 1, beginMasked: true, endMasked: true}
				final = append(final, full)
			}
		case bit(newMask, i):
			final = append(final, newAxis)
		default:
			if full >= r {
				return nil, nil, specAxesError(full + 1)
			}
			e := denseEntry{begin: begin[i], end: end[i], stride: stride[i], beginMasked: bit(beginMask, i),
				endMasked: bit(endMask, i), shrink: bit(shrinkMask, i), fromSparse: true}
			if e.stride == 0 {
				return nil, nil, fmt.Errorf("strides %v has a 0 at entry %d", stride, i)
			}
			if e.shrink && e.stride < 0 {
				return nil, nil, fmt.Errorf("entry %d shrinks an axis with a negative stride %d; an index takes stride 1", i, e.stride)
			}
			dense[full] = e
			if e.shrink {
				final = append(final, -2-full)
			} else {
				final = append(final, full)
			}
			full++
		}
	}

	return dense, final, nil
}

// resolve is the first index and the number of elements an entry takes
// from an axis of size d (not shrunk).
func (e denseEntry) resolve(d int64) (start, count int64) {
	lo, hi := int64(0), d
	if e.stride < 0 {
		lo, hi = -1, d-1
	}
	canon := func(v int64, masked, isEnd bool) int64 {
		if masked {
			if (e.stride > 0) != isEnd {
				return lo
			}
			return hi
		}
		if v < 0 {
			v += d
		}
		return min(max(v, lo), hi)
	}
	b := canon(e.begin, e.beginMasked, false)
	en := canon(e.end, e.endMasked, true)
	length := en - b
	if length != 0 && (length < 0) == (e.stride < 0) {
		count = ceilDiv(length, e.stride)
	}
	return b, count
}

// shrinkIndex is the index a shrinking entry takes from an axis of size d
// (negative counts from the end), false when it lies outside.
func (e denseEntry) shrinkIndex(d int64) (int64, bool) {
	b := e.begin
	if b < 0 {
		b += d
	}
	return b, b >= 0 && b < d
}

// StridedSliceAxis is how a StridedSlice reads one axis of its input:
// Count elements from Start, Stride apart (Stride may be negative); a
// Shrink axis reads the one element Start and is dropped from the output.
type StridedSliceAxis struct {
	Start, Stride, Count int64
	Shrink               bool
}

// ResolveStridedSlice resolves the spec of the TensorFlow StridedSlice
// node n (constant begin, end and strides; its masks) over an input of
// static shape dims, as shape inference does: one StridedSliceAxis per
// input axis. The output is those axes' counts, shrunk axes left out and
// the new axes' 1s inserted, in the same element order (a reshape of the
// counts). Non-constant inputs or a bad spec are an error.
func ResolveStridedSlice(n *ir.Node, dims []int64) ([]StridedSliceAxis, error) {
	if len(n.Inputs) != 4 {
		return nil, fmt.Errorf("StridedSlice has %d inputs, want 4", len(n.Inputs))
	}
	var spec [3][]int64
	for k := range spec {
		v := n.Inputs[1+k]
		ok := v != nil && v.Data != nil
		if ok {
			spec[k], ok = v.Data.Int64s()
		}
		if !ok {
			return nil, fmt.Errorf("StridedSlice's %s is not a constant", []string{"begin", "end", "strides"}[k])
		}
	}
	if len(spec[1]) != len(spec[0]) || len(spec[2]) != len(spec[0]) {
		return nil, fmt.Errorf("begin, end and strides must have the same length")
	}
	masks := make([]int64, 5)
	for k, name := range []string{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"} {
		masks[k] = n.AttrInt(name, 0)
	}
	if bits.OnesCount64(uint64(masks[2])) > 1 {
		return nil, fmt.Errorf("ellipsis_mask %#x has more than one bit", masks[2])
	}
	dense, _, err := expandStridedSpec(len(dims), spec[0], spec[1], spec[2], masks)
	if err != nil {
		return nil, err
	}
	out := make([]StridedSliceAxis, len(dims))
	for a, e := range dense {
		out[a].Stride = e.stride
		if e.shrink {
			b, ok := e.shrinkIndex(dims[a])
			if !ok {
				return nil, fmt.Errorf("index %d is out of range for axis %d of size %d", e.begin, a, dims[a])
			}
			out[a] = StridedSliceAxis{Start: b, Stride: 1, Count: 1, Shrink: true}
			continue
		}
		out[a].Start, out[a].Count = e.resolve(dims[a])
	}
	return out, nil
}
