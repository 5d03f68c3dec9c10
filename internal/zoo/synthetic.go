package zoo

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/remat-compile/remat/ir"
)

// Synthetic graphs work on small tensors of this shape.
const (
	synthChannels = 4
	synthSide     = 8
)

// Chain returns a linear chain of n nodes (n < 1 counts as 1) alternating a
// 3×3 Conv (4 to 4 channels, padded) and a Relu, on an input "input"
// float32 [1,4,8,8]; every value has the same 1 KiB size, the setting of
// Chen et al.'s and Griewank's checkpointing schedules. The conv weights
// are the identity kernel plus seeded uniform noise of ±0.005, so values
// keep their scale (and differ between seeds) however long the chain. The
// last node's value is "output".
func Chain(n int, seed uint64) *ir.Graph {
	n = max(n, 1)
	b := newBuilder(fmt.Sprintf("chain%d", n), "A linear chain of alternating Conv and Relu nodes.", seed)
	const c = synthChannels
	x := b.input("input", ir.Float32, 1, c, synthSide, synthSide)
	for i := range n {
		if i%2 == 1 {
			x = b.relu(fmt.Sprintf("chain.%d.relu", i), x)
			continue
		}
		name := fmt.Sprintf("chain.%d.conv", i)
		w := b.sym(name+".weight", 0.005, c, c, 3, 3)
		if w.Data.Raw != nil {
			// W[o][o][1][1] += 1: the centre tap of each channel's own kernel.
			for o := range c {
				off := 4 * (o*c*9 + o*9 + 4)
				bits := binary.LittleEndian.Uint32(w.Data.Raw[off:])
				binary.LittleEndian.PutUint32(w.Data.Raw[off:], math.Float32bits(math.Float32frombits(bits)+1))
			}
		}
		x = b.op("Conv", name, []*ir.Value{x, w}, ir.IntsAttr("kernel_shape", 3, 3),
			ir.IntsAttr("strides", 1, 1), ir.IntsAttr("pads", 1, 1, 1, 1))
	}
	g, _ := b.finish(x) // cannot fail: the weights are far below the limit
	return g
}

// LargeGraph returns a seeded random graph of exactly max(nodes, 1) nodes
// for benchmarks of passes and solvers on big graphs. It is a spine of
// motifs on float32 [1,4,8,8] tensors (1 KiB each), every motif reading the
// previous motif's output: a 3×3 Conv and Relu; an Add with an earlier
// value; a Concat with an earlier value and a 1×1 Conv back to 4 channels;
// or a Reshape to [1,256], Relu and Reshape back. Earlier values are drawn
// mostly from the last few motifs and sometimes from far back, so the graph
// has both short and long skip connections. Every value is used, and the
// last is "output".
func LargeGraph(nodes int, seed uint64) *ir.Graph {
	nodes = max(nodes, 1)
	b := newBuilder(fmt.Sprintf("large%d", nodes), "A seeded random Conv/Relu/Add/Concat/Reshape graph.", seed)
	const c = synthChannels
	x := b.input("input", ir.Float32, 1, c, synthSide, synthSide)
	outs := []*ir.Value{x} // motif outputs, all of shape [1,4,8,8]
	// earlier draws a motif output other than the current one: mostly
	// one of the last eight, one time in eight any of them.
	earlier := func() *ir.Value {
		k := len(outs) - 1 // outs[k] is x
		if k == 0 {
			return x
		}
		if b.rng.IntN(8) == 0 {
			return outs[b.rng.IntN(k)]
		}
		return outs[max(0, k-1-b.rng.IntN(8))]
	}
	// LeCun-scaled convs (variance 1/fan-in) shrink what the Adds grow, so
	// the values neither overflow nor vanish quickly when the graph runs.
	conv := func(name string, x *ir.Value, cin, k int) *ir.Value {
		w := b.sym(name+".weight", lecunUniform(cin*k*k), c, int64(cin), int64(k), int64(k))
		p := int64(k / 2)
		return b.op("Conv", name, []*ir.Value{x, w}, ir.IntsAttr("kernel_shape", int64(k), int64(k)),
			ir.IntsAttr("strides", 1, 1), ir.IntsAttr("pads", p, p, p, p))
	}
	count := 0
	for i := 0; count < nodes; i++ {
		p := fmt.Sprintf("m%d.", i)
		left := nodes - count
		switch motif := b.rng.IntN(4); {
		case left == 1 || left > 2 && motif == 1:
			x = b.op("Add", p+"add", []*ir.Value{x, earlier()})
			count++
		case left == 2 || motif == 0:
			x = b.relu(p+"relu", conv(p+"conv", x, c, 3))
			count += 2
		case motif == 2:
			x = b.op("Concat", p+"concat", []*ir.Value{x, earlier()}, ir.IntAttr("axis", 1))
			x = conv(p+"conv", x, 2*c, 1)
			count += 2
		default:
			x = b.op("Reshape", p+"flatten", []*ir.Value{x, b.ints("shape.flat", 1, c*synthSide*synthSide)})
			x = b.relu(p+"relu", x)
			x = b.op("Reshape", p+"unflatten", []*ir.Value{x, b.ints("shape.image", 1, c, synthSide, synthSide)})
			count += 3
		}
		outs = append(outs, x)
	}
	g, _ := b.finish(x) // cannot fail: 20k nodes hold a few MB of weights
	return g
}

// RandomDAG returns a seeded random branching graph of exactly max(nodes,
// 1) nodes for property tests of ordering and memory planning: every node
// reads values chosen among all earlier ones (mostly the last few), so the
// graph has many topological orders. Values are float32 [1,C,16,16] with
// C in {4, 8, 16}, at most 32 after a Concat. The ops are 1×1 and 3×3
// Convs (to a random C), Relu (written in place by ONNX Runtime), Add of
// two values of the same C, Concat of two values, Reshape to the same
// shape (a view), and MaxPool 3×3 with its Indices output, which nobody
// reads. The last node is a Concat of every value nobody reads, "output"
// (a Relu of the one such value when there is one).
func RandomDAG(nodes int, seed uint64) *ir.Graph {
	nodes = max(nodes, 1)
	b := newBuilder(fmt.Sprintf("random%d", nodes), "A seeded random branching Conv/Relu/Add/Concat/Reshape/MaxPool graph.", seed)
	const side = 16
	x := b.input("input", ir.Float32, 1, synthChannels, side, side)
	type val struct {
		v *ir.Value
		c int
	}
	vals := []val{{x, synthChannels}}
	read := map[*ir.Value]bool{}
	pick := func() val {
		k := len(vals)
		if b.rng.IntN(4) == 0 {
			return vals[b.rng.IntN(k)]
		}
		return vals[max(0, k-1-b.rng.IntN(3))]
	}
	widths := []int{4, 8, 16}
	for i := 0; i < nodes-1; i++ {
		name := fmt.Sprintf("n%d", i)
		a := pick()
		read[a.v] = true
		var out val
		switch op := b.rng.IntN(8); op {
		case 0, 1:
			k := 1 + 2*(op%2)
			c := widths[b.rng.IntN(len(widths))]
			out = val{b.conv(name, a.v, a.c, c, k, 1, k/2, 1, false), c}
		case 2, 3:
			out = val{b.relu(name, a.v), a.c}
		case 4:
			var same []val
			for _, w := range vals {
				if w.c == a.c && w.v != a.v {
					same = append(same, w)
				}
			}
			if len(same) == 0 {
				out = val{b.relu(name, a.v), a.c}
				break
			}
			o := same[b.rng.IntN(len(same))]
			read[o.v] = true
			out = val{b.op("Add", name, []*ir.Value{a.v, o.v}), a.c}
		case 5:
			o := pick()
			if o.v == a.v || a.c+o.c > 32 {
				out = val{b.relu(name, a.v), a.c}
				break
			}
			read[o.v] = true
			out = val{b.op("Concat", name, []*ir.Value{a.v, o.v}, ir.IntAttr("axis", 1)), a.c + o.c}
		case 6:
			shape := b.ints(fmt.Sprintf("shape.%d", a.c), 1, int64(a.c), side, side)
			out = val{b.op("Reshape", name, []*ir.Value{a.v, shape}), a.c}
		default:
			n := b.opN("MaxPool", name, []*ir.Value{a.v}, []string{name, name + ".indices"},
				ir.IntsAttr("kernel_shape", 3, 3), ir.IntsAttr("pads", 1, 1, 1, 1))
			out = val{n.Outputs[0], a.c}
		}
		vals = append(vals, out)
	}
	var sinks []*ir.Value
	for _, w := range vals[1:] {
		if !read[w.v] {
			sinks = append(sinks, w.v)
		}
	}
	var y *ir.Value
	switch len(sinks) {
	case 0:
		y = b.relu("join", x)
	case 1:
		y = b.relu("join", sinks[0])
	default:
		y = b.op("Concat", "join", sinks, ir.IntAttr("axis", 1))
	}
	g, _ := b.finish(y) // cannot fail: the weights are small
	return g
}
