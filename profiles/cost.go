package profiles

import (
	"fmt"
	"math"

	"github.com/remat-compile/remat/ir"
)

// The sources of a Cost, from the most to the least trusted.
const (
	SourceMeasured  = "measured"  // the node's exact signature was measured on the device
	SourceFitted    = "fitted"    // the roofline fitted to measurements on the device
	SourceDatasheet = "datasheet" // the roofline of the datasheet figures
)

// The regimes of a roofline estimate (Cost.Bound).
const (
	BoundCompute  = "compute"  // FLOPs / peak rate is the larger term
	BoundMemory   = "memory"   // bytes / bandwidth is the larger term
	BoundOverhead = "overhead" // no FLOPs and no bytes: the fixed cost only
)

// Cost is the estimated cost of running one node once on a device.
type Cost struct {
	// Seconds is the estimated run time.
	Seconds float64
	// FLOPs counts arithmetic operations of any element type (a
	// multiply-add is two), from the node's inferred shapes.
	FLOPs float64
	// BytesRead and BytesWritten are the memory traffic: the bytes of the
	// inputs read (parameters included, each distinct value once) and of
	// the outputs written.
	BytesRead, BytesWritten int64
	// Source says where Seconds comes from: SourceMeasured, SourceFitted or
	// SourceDatasheet. For If, Loop and Scan it is the least trusted source
	// among the nodes of their bodies.
	Source string
	// Bound is which term of the roofline decided Seconds (BoundCompute,
	// BoundMemory, BoundOverhead); "" for measured times and control flow.
	Bound string
	// Note says why the estimate is rougher than usual ("unknown op: bytes
	// only", "loop trip count unknown: one iteration assumed"); "" when
	// the op's formula applied as documented.
	Note string
}

// Bytes is the total memory traffic, BytesRead + BytesWritten.
func (c Cost) Bytes() int64 { return c.BytesRead + c.BytesWritten }

// maxDepth bounds subgraph nesting, against malformed graphs.
const maxDepth = 64

// Cost estimates the time of one run of n on p's device, in this order:
//
//  1. measured: a measured entry with n's exact signature (NewMeasured)
//     gives Seconds as measured;
//  2. fitted: else, when p has a fitted section, Seconds =
//     overhead_seconds + max(FLOPs / flops_per_second, bytes /
//     bytes_per_second);
//  3. datasheet: else Seconds = launch_overhead_seconds + max(FLOPs /
//     peak rate, bytes / memory bandwidth), the peak rate of the node's
//     ComputeDType, from peak_matrix_flops for matrix work.
//
// An op this package does not know (a custom domain's) is costed by its
// bytes alone on the datasheet roofline, Source datasheet, with a Note.
// If, Loop and Scan cost their bodies node by node, each node by the same
// order (a measured entry never applies to the control-flow node itself):
// the costlier If branch (the taken one when the condition is a constant),
// the Loop or Scan body times its trip count, plus one overhead. n's inputs and outputs (and its bodies'
// values) must have static shapes: types are inferred before costing
// (passes/shapes); a node whose sizes are unknown is an error that names
// it.
func (p *Profile) Cost(n *ir.Node) (Cost, error) {
	if p == nil {
		return Cost{}, fmt.Errorf("profiles: Cost on a nil profile")
	}
	if n == nil {
		return Cost{}, fmt.Errorf("profiles: Cost of a nil node")
	}
	if err := p.usable(); err != nil {
		return Cost{}, err
	}
	return p.cost(n, 0)
}

// usable checks what Cost divides by, for profiles built in code and never
// validated.
func (p *Profile) usable() error {
	d := &p.Device
	if !(d.MemoryBandwidth > 0) || !(d.PeakFLOPs[ir.Float32] > 0) {
		return fmt.Errorf("profile %q has no positive memory bandwidth or f32 rate: Validate reports why", d.Name)
	}
	if f := p.Fitted; f != nil && (!(f.FLOPsPerSecond > 0) || !(f.BytesPerSecond > 0)) {
		return fmt.Errorf("profile %q: fitted rates must be positive: Validate reports why", d.Name)
	}
	return nil
}

func nodePos(n *ir.Node) ir.Pos { return ir.NodePos("", n) }

func nodeErr(n *ir.Node, format string, args ...any) error {
	return ir.Errorf(nodePos(n), format, args...)
}

func (p *Profile) cost(n *ir.Node, depth int) (Cost, error) {
	if depth > maxDepth {
		return Cost{}, nodeErr(n, "subgraphs nested more than %d deep", maxDepth)
	}
	if isControlFlow(n) {
		return p.controlFlow(n, depth)
	}
	w, err := nodeWork(n)
	if err != nil {
		return Cost{}, err
	}
	c := Cost{FLOPs: w.flops, BytesRead: w.read, BytesWritten: w.written, Note: w.note}
	if m, ok := p.lookup(n); ok {
		c.Seconds, c.Source = m.Seconds, SourceMeasured
		return c, nil
	}
	bytes := float64(w.read + w.written)
	switch {
	case w.class == classUnknown:
		c.Source = SourceDatasheet
		c.Seconds, c.Bound = roofline(p.Device.LaunchOverhead, 0, 1, bytes, p.Device.MemoryBandwidth)
	case p.Fitted != nil:
		f := p.Fitted
		c.Source = SourceFitted
		c.Seconds, c.Bound = roofline(f.OverheadSeconds, w.flops, f.FLOPsPerSecond, bytes, f.BytesPerSecond)
	default:
		d := &p.Device
		c.Source = SourceDatasheet
		c.Seconds, c.Bound = roofline(d.LaunchOverhead, w.flops, d.peak(ComputeDType(n), w.class == classMatrix), bytes, d.MemoryBandwidth)
	}
	return c, nil
}

// roofline is overhead + max(flops/rate, bytes/bandwidth) and the term
// that decided it.
func roofline(overhead, flops, rate, bytes, bandwidth float64) (float64, string) {
	compute, memory := flops/rate, bytes/bandwidth
	switch {
	case compute == 0 && memory == 0:
		return overhead, BoundOverhead
	case compute > memory:
		return overhead + compute, BoundCompute
	}
	return overhead + memory, BoundMemory
}

// peak is the arithmetic rate for work of element type dt: the matrix rate
// for matrix work when the device lists one, else the vector rate; 8-bit
// and 4-bit integers use the i8 rate when their own is not listed; any
// type still without a rate uses f32's.
func (d *Device) peak(dt ir.DType, matrix bool) float64 {
	keys := []ir.DType{dt}
	switch dt {
	case ir.Uint8, ir.Int4, ir.Uint4:
		keys = append(keys, ir.Int8)
	}
	tables := []map[ir.DType]float64{d.PeakFLOPs}
	if matrix {
		tables = []map[ir.DType]float64{d.PeakMatrixFLOPs, d.PeakFLOPs}
	}
	for _, t := range tables {
		for _, k := range keys {
			if r := t[k]; r > 0 {
				return r
			}
		}
	}
	for _, t := range tables {
		if r := t[ir.Float32]; r > 0 {
			return r
		}
	}
	return math.Inf(1) // unreachable for a usable profile
}

// sourceRank orders sources from the least to the most trusted.
func sourceRank(s string) int {
	switch s {
	case SourceMeasured:
		return 2
	case SourceFitted:
		return 1
	}
	return 0
}

// overhead is the fixed per-node cost and its source when no measurement
// applies.
func (p *Profile) overhead() (float64, string) {
	if p.Fitted != nil {
		return p.Fitted.OverheadSeconds, SourceFitted
	}
	return p.Device.LaunchOverhead, SourceDatasheet
}

// graphCost is the sum of the costs of g's nodes.
func (p *Profile) graphCost(g *ir.Graph, depth int) (Cost, error) {
	var total Cost
	total.Source = SourceMeasured
	for _, m := range g.Nodes {
		c, err := p.cost(m, depth)
		if err != nil {
			return Cost{}, err
		}
		total.Seconds += c.Seconds
		total.FLOPs += c.FLOPs
		total.BytesRead += c.BytesRead
		total.BytesWritten += c.BytesWritten
		if sourceRank(c.Source) < sourceRank(total.Source) {
			total.Source = c.Source
		}
		if total.Note == "" && c.Note != "" {
			total.Note = fmt.Sprintf("%s: %s", m, c.Note)
		}
	}
	if len(g.Nodes) == 0 {
		_, total.Source = p.overhead()
	}
	return total, nil
}

func isControlFlow(n *ir.Node) bool {
	if normDomain(n.Domain) != "" {
		return false
	}
	switch n.Op {
	case "If", "Loop", "Scan":
		return true
	}
	return false
}

func graphAttr(n *ir.Node, name string) *ir.Graph {
	if a := n.Attr(name); a != nil && a.Kind == ir.AttrGraph {
		return a.Graph
	}
	return nil
}

// constInt64 is the single value of v when it is a constant: a parameter
// or a Constant node's output.
func constInt64(v *ir.Value) (int64, bool) {
	if v == nil {
		return 0, false
	}
	t := v.Data
	if t == nil && v.Def != nil && v.Def.Op == "Constant" && normDomain(v.Def.Domain) == "" {
		if a := v.Def.Attr("value"); a != nil && a.Kind == ir.AttrTensor {
			t = a.Tensor
		}
	}
	if t == nil || t.NumElements() != 1 {
		return 0, false
	}
	xs, ok := t.Int64s()
	if !ok {
		return 0, false
	}
	return xs[0], true
}

func (p *Profile) controlFlow(n *ir.Node, depth int) (Cost, error) {
	// The node's own values must have known sizes, like any other node's.
	if _, err := nodeSizes(n); err != nil {
		return Cost{}, err
	}
	var body Cost
	var err error
	iters, note := 1.0, ""
	switch n.Op {
	case "If":
		body, note, err = p.ifCost(n, depth)
	case "Loop":
		g := graphAttr(n, "body")
		if g == nil {
			return Cost{}, nodeErr(n, "no body graph")
		}
		var known bool
		if iters, known = loopTrips(n); !known {
			note = "loop trip count unknown: one iteration assumed"
		}
		body, err = p.graphCost(g, depth+1)
		err = wrapBody(n, "body", err)
	case "Scan":
		g := graphAttr(n, "body")
		if g == nil {
			return Cost{}, nodeErr(n, "no body graph")
		}
		var known bool
		if iters, known = scanTrips(n); !known {
			note = "scan length unknown: one iteration assumed"
		}
		body, err = p.graphCost(g, depth+1)
		err = wrapBody(n, "body", err)
	}
	if err != nil {
		return Cost{}, err
	}
	overhead, src := p.overhead()
	c := Cost{
		Seconds:      overhead + iters*body.Seconds,
		FLOPs:        iters * body.FLOPs,
		BytesRead:    scaleBytes(body.BytesRead, iters),
		BytesWritten: scaleBytes(body.BytesWritten, iters),
		Source:       body.Source,
		Note:         note,
	}
	if sourceRank(src) < sourceRank(c.Source) {
		c.Source = src
	}
	if c.Note == "" {
		c.Note = body.Note
	}
	return c, nil
}

func scaleBytes(b int64, iters float64) int64 {
	x := float64(b) * iters
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(x)
}

func wrapBody(n *ir.Node, attr string, err error) error {
	if err == nil {
		return nil
	}
	return ir.Errorf(nodePos(n), "%s: %v", attr, err)
}

// ifCost costs the branch that runs: the taken one when the condition is a
// constant, else the costlier one. A branch whose sizes are unknown is
// skipped when the other one can be costed: shape inference leaves the
// values of a branch it proved dead untyped.
func (p *Profile) ifCost(n *ir.Node, depth int) (Cost, string, error) {
	thenG, elseG := graphAttr(n, "then_branch"), graphAttr(n, "else_branch")
	if thenG == nil || elseG == nil {
		return Cost{}, "", nodeErr(n, "If without then_branch and else_branch graphs")
	}
	if len(n.Inputs) > 0 {
		if cond, ok := constInt64(n.Inputs[0]); ok {
			g, name := elseG, "else_branch"
			if cond != 0 {
				g, name = thenG, "then_branch"
			}
			c, err := p.graphCost(g, depth+1)
			return c, "", wrapBody(n, name, err)
		}
	}
	tc, terr := p.graphCost(thenG, depth+1)
	ec, eerr := p.graphCost(elseG, depth+1)
	switch {
	case terr != nil && eerr != nil:
		return Cost{}, "", wrapBody(n, "then_branch", terr)
	case terr != nil:
		return ec, "then_branch has unknown sizes (never taken?): else_branch costed", nil
	case eerr != nil:
		return tc, "else_branch has unknown sizes (never taken?): then_branch costed", nil
	case ec.Seconds > tc.Seconds:
		return ec, "", nil
	}
	return tc, "", nil
}

// loopTrips is a Loop's iteration count: its constant trip count M, or the
// length of its first scan output.
func loopTrips(n *ir.Node) (float64, bool) {
	if len(n.Inputs) > 0 {
		if m, ok := constInt64(n.Inputs[0]); ok && m >= 0 && m < 1<<40 {
			return float64(m), true
		}
	}
	carried := len(n.Inputs) - 2
	if carried >= 0 && carried < len(n.Outputs) {
		if v := n.Outputs[carried]; v != nil {
			if dims, ok := v.Type.Dims(); ok && len(dims) > 0 {
				return float64(dims[0]), true
			}
		}
	}
	return 1, false
}

// scanTrips is the length of a Scan's first scan input along its scan axis
// (the opset 9 and later form).
func scanTrips(n *ir.Node) (float64, bool) {
	m := int(n.AttrInt("num_scan_inputs", 0))
	first := len(n.Inputs) - m
	if m <= 0 || first < 0 || first >= len(n.Inputs) || n.Inputs[first] == nil {
		return 1, false
	}
	dims, ok := n.Inputs[first].Type.Dims()
	if !ok {
		return 1, false
	}
	axis := int64(0)
	if axes, ok := n.AttrInts("scan_input_axes"); ok && len(axes) > 0 {
		axis = axes[0]
	}
	if axis < 0 {
		axis += int64(len(dims))
	}
	if axis < 0 || axis >= int64(len(dims)) {
		return 1, false
	}
	return float64(dims[axis]), true
}
