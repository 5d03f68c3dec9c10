package autodiff

import (
	"github.com/remat-compile/remat/ir"
)

// The normalisations are written out in primitive ops before
// differentiation, so that their gradients follow from the rules of those
// ops (ReduceMean, Sub, Mul, Add, Sqrt, Reciprocal) and the forward pass
// computes exactly what the backward pass differentiates. With A the
// normalised axes and m = Π_A |x_a|:
//
//	μ = mean_A x,  xc = x − μ,  σ² = mean_A xc²,  r = 1/√(σ² + ε),
//	y = xc·r·scale + bias
//
// The rules then give the textbook gradient
// dx = r·(dx̂ − mean_A dx̂ − x̂·mean_A(dx̂·x̂)) with x̂ = xc·r, dx̂ = dy·scale.

// normalize emits x̂ = (x − mean_A x)/√(var_A x + ε) (biased variance).
func (d *differ) normalize(x *ir.Value, axes []int64, eps float64) *ir.Value {
	b := d.b
	dt := x.Type.DType
	mu := b.reduce("ReduceMean", x, axes, true)
	xc := b.sub(x, mu)
	v := b.reduce("ReduceMean", b.mul(xc, xc), axes, true)
	r := b.unary("Reciprocal", b.unary("Sqrt", b.addv(v, b.scalar(dt, eps))))
	return b.mul(xc, r)
}

// replace makes y stand for n's output 0 (uses, graph outputs and name) and
// removes n, whose other outputs must be unused.
func (d *differ) replace(n *ir.Node, y *ir.Value) error {
	for i, o := range n.Outputs {
		if i > 0 && o != nil && len(o.Uses) > 0 {
			return d.errorf(n, "output %d (%s) is read by other nodes; only output 0 is supported in the training graph", i, o)
		}
		for _, go_ := range d.g.Outputs {
			if i > 0 && go_ == o {
				return d.errorf(n, "output %d (%s) is a graph output; only output 0 is supported in the training graph", i, o)
			}
		}
	}
	old := n.Outputs[0]
	name := old.Name
	old.ReplaceUses(y)
	d.g.RemoveNode(n)
	delete(d.b.names, name)
	d.b.rename(y, name)
	return nil
}

// channelShape is [1, C, 1, …] for a tensor of rank r.
func channelShape(c int64, r int) []int64 {
	s := ones(r)
	s[1] = c
	return s
}

// lowerBatchNorm writes BatchNormalization out in training semantics:
// statistics over the batch and spatial axes A = {0, 2, 3, …} of the
// current batch (the running mean and variance inputs are not used, and the
// running-statistics outputs are not produced).
func (d *differ) lowerBatchNorm(n *ir.Node) error {
	b := d.b
	x := n.Inputs[0]
	if n.AttrInt("spatial", 1) == 0 {
		return d.errorf(n, "BatchNormalization with spatial=0 is not supported")
	}
	xd, ok := x.Type.Dims()
	if !ok || !x.Type.DType.IsFloat() {
		return d.errorf(n, "autodiff needs a static floating-point input, not %v", x.Type)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	xh := d.normalize(x, spatialAndBatch(len(xd)), eps)
	cs := channelShape(xd[1], len(xd))
	y := b.addv(b.mul(xh, b.reshape(n.Inputs[1], cs)), b.reshape(n.Inputs[2], cs))
	return d.replace(n, y)
}

// lowerInstanceNorm writes InstanceNormalization out: statistics over the
// spatial axes A = {2, 3, …} of each sample and channel.
func (d *differ) lowerInstanceNorm(n *ir.Node) error {
	b := d.b
	x := n.Inputs[0]
	xd, ok := x.Type.Dims()
	if !ok || !x.Type.DType.IsFloat() {
		return d.errorf(n, "autodiff needs a static floating-point input, not %v", x.Type)
	}
	var axes []int64
	for i := 2; i < len(xd); i++ {
		axes = append(axes, int64(i))
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	xh := d.normalize(x, axes, eps)
	cs := channelShape(xd[1], len(xd))
	y := b.addv(b.mul(xh, b.reshape(n.Inputs[1], cs)), b.reshape(n.Inputs[2], cs))
	return d.replace(n, y)
}

// lowerLayerNorm writes LayerNormalization out: statistics over the axes
// from axis (default −1) on; scale and bias broadcast from the right.
func (d *differ) lowerLayerNorm(n *ir.Node) error {
	b := d.b
	x := n.Inputs[0]
	xd, ok := x.Type.Dims()
	if !ok || !x.Type.DType.IsFloat() {
		return d.errorf(n, "autodiff needs a static floating-point input, not %v", x.Type)
	}
	r := int64(len(xd))
	axis := n.AttrInt("axis", -1)
	if axis < 0 {
		axis += r
	}
	var axes []int64
	for a := axis; a < r; a++ {
		axes = append(axes, a)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	y := b.mul(d.normalize(x, axes, eps), n.Inputs[1])
	if len(n.Inputs) > 2 && n.Inputs[2] != nil {
		y = b.addv(y, n.Inputs[2])
	}
	return d.replace(n, y)
}

// prepareDropout switches a Dropout to training mode (opset 12 and up,
// unless Options.KeepDropoutMode) by giving it a constant true
// training_mode input.
func (d *differ) prepareDropout(n *ir.Node) error {
	if d.opts.KeepDropoutMode || d.b.opset < 12 {
		return nil
	}
	for len(n.Inputs) < 2 {
		n.SetInput(len(n.Inputs), nil)
	}
	t := &ir.Tensor{DType: ir.Bool, Raw: []byte{1}}
	n.SetInput(2, d.b.constant(t))
	return nil
}

// lowerLRN writes LRN out in primitive ops, so that its gradient follows
// from those of Mul, Conv, Add and Pow. With n = size, lo = ⌊(n−1)/2⌋,
// hi = ⌈(n−1)/2⌉:
//
//	s[c] = bias + (α/n)·Σ_{i = c−lo}^{c+hi} x[i]²  (channels outside [0, C) count 0)
//	y    = x · s^(−β)
//
// The window sum over channels is a Conv of x² viewed as [N, 1, C, Π
// spatial] with a ones kernel [1, 1, n, 1] and pads (lo, hi) on the channel
// axis.
func (d *differ) lowerLRN(n *ir.Node) error {
	b := d.b
	x := n.Inputs[0]
	xd, ok := x.Type.Dims()
	if !ok || !x.Type.DType.IsFloat() || len(xd) < 3 {
		return d.errorf(n, "autodiff needs a static floating-point input of rank 3 or more, not %v", x.Type)
	}
	size := n.AttrInt("size", 0)
	if size <= 0 {
		return d.errorf(n, "LRN needs a positive size")
	}
	alpha := float64(n.AttrFloat("alpha", 1e-4))
	beta := float64(n.AttrFloat("beta", 0.75))
	bias := float64(n.AttrFloat("bias", 1))
	dt := x.Type.DType
	lo, hi := (size-1)/2, size-1-(size-1)/2
	view := []int64{xd[0], 1, xd[1], prod(xd[2:])}
	sq := b.reshape(b.mul(x, x), view)
	w := make([]float64, size)
	for i := range w {
		w[i] = 1
	}
	kernel := b.constant(floatTensor(dt, []int64{1, 1, size, 1}, w))
	win := b.add("Conv", tensorType(dt, view), []*ir.Value{sq, kernel},
		ir.IntsAttr("kernel_shape", size, 1), ir.IntsAttr("pads", lo, 0, hi, 0))
	s := b.addv(b.scale(b.reshape(win, xd), alpha/float64(size)), b.scalar(dt, bias))
	y := b.mul(x, b.binary("Pow", s, b.scalar(dt, -beta)))
	return d.replace(n, y)
}
