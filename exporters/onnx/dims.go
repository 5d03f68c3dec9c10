package onnx

import (
	"github.com/remat-compile/remat/ir"
)

// Which dimensions ONNX Runtime's shape inference knows in a graph exported
// with Options.HideShapes (hide.go): the rules of ONNX's inference
// functions for the ops training and inference graphs use, reduced to
// "known or not" per dimension. An op not listed loses every dimension
// when it reads a tainted value.

// dims returns, per dimension of v, whether ORT's shape inference knows
// it; h.mu is held.
func (h *shapeHider) dims(v *ir.Value) []bool {
	if d, ok := h.known[v]; ok {
		return d
	}
	r := max(v.Type.Rank(), 0)
	var d []bool
	switch n := v.Def; {
	case v.Data != nil:
		d = allDims(r, true)
	case n == nil:
		d = allDims(r, !h.taint(v))
	case !h.nodeTaint(n):
		d = allDims(r, true)
	default:
		d = h.infer(n, v.Index, r)
	}
	h.known[v] = d
	return d
}

func allDims(r int, known bool) []bool {
	d := make([]bool, r)
	for i := range d {
		d[i] = known
	}
	return d
}

// in returns the dimensions of n's input slot i as n reads it (a hidden
// graph input as its view, unless n is reshape-like), nil for an absent
// input.
func (h *shapeHider) in(n *ir.Node, i int) []bool {
	ins := n.AllInputs()
	if i >= len(ins) || ins[i] == nil {
		return nil
	}
	v := ins[i]
	root := n.Graph != nil && n.Graph.Parent == nil
	switch {
	case v.Def == nil && v.Data == nil && root && v.Graph == n.Graph && h.hidden(n.Graph)[v]:
		return allDims(max(v.Type.Rank(), 0), !h.readsTainted(n, i, v))
	case root && len(h.hidden(n.Graph)) > 0 && crossesFold(n, i, h.foldable):
		return allDims(v.Type.Rank(), false)
	}
	return h.dims(v)
}

// infer is dims for output k (of rank r) of n, a node that reads a
// tainted value.
func (h *shapeHider) infer(n *ir.Node, k, r int) []bool {
	unknown := allDims(r, false)
	if h.rewritten(n) {
		return unknown
	}
	for i, in := range n.AllInputs() {
		if in != nil && valueSlot(n, i) && h.readsTainted(n, i, in) {
			return unknown
		}
	}
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return unknown
	}
	x := h.in(n, 0)
	fit := func(d []bool) []bool {
		if len(d) != r {
			return unknown
		}
		return append([]bool(nil), d...)
	}
	switch n.Op {
	case "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf", "Not",
		"Cast", "CastLike", "Identity", "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "Celu",
		"ThresholdedRelu", "Sin", "Cos", "Clip", "Dropout", "Softmax", "LogSoftmax", "BatchNormalization", "InstanceNormalization",
		"LayerNormalization", "LRN", "IsNaN", "IsInf", "Trilu", "Pad", "Resize", "Upsample", "ScatterElements", "ScatterND", "Scatter", "CumSum":
		return fit(x)
	}
	if broadcasts(n) {
		return h.broadcast(n, r)
	}
	switch n.Op {
	case "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool":
		if len(x) != r || r < 2 {
			return unknown
		}
		out := allDims(r, false)
		out[0] = x[0]
		switch n.Op {
		case "Conv", "ConvTranspose":
			out[1] = allKnown(h.in(n, 1))
		default:
			out[1] = x[1]
		}
		for i := 2; i < r; i++ {
			out[i] = x[i] || n.Op == "GlobalAveragePool" || n.Op == "GlobalMaxPool"
		}
		return out
	case "Gemm":
		a, b := h.in(n, 0), h.in(n, 1)
		if len(a) != 2 || len(b) != 2 || r != 2 {
			return unknown
		}
		ta, tb := n.AttrInt("transA", 0) != 0, n.AttrInt("transB", 0) != 0
		return []bool{a[pick(ta, 1, 0)], b[pick(tb, 0, 1)]}
	case "MatMul":
		a, b := h.in(n, 0), h.in(n, 1)
		if len(a) < 2 || len(b) < 2 || r < 2 {
			return unknown
		}
		out := allDims(r, false)
		out[r-2], out[r-1] = a[len(a)-2], b[len(b)-1]
		for i := 0; i < r-2; i++ { // batch dimensions broadcast
			ai, bi := i-(r-len(a)), i-(r-len(b))
			out[i] = (ai < 0 || a[ai]) && (bi < 0 || b[bi])
		}
		return out
	case "Transpose":
		if len(x) != r {
			return unknown
		}
		perm, ok := n.AttrInts("perm")
		out := allDims(r, false)
		for i := range out {
			j := r - 1 - i
			if ok && i < len(perm) {
				j = int(perm[i])
			}
			if j < 0 || j >= r {
				return unknown
			}
			out[i] = x[j]
		}
		return out
	case "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin":
		axes, ok := h.axes(n)
		keep := n.AttrInt("keepdims", 1) != 0
		if n.Op == "ArgMax" || n.Op == "ArgMin" {
			axes, ok = []int64{n.AttrInt("axis", 0)}, true
		}
		if !ok { // every axis
			return allDims(r, true)
		}
		red := map[int]bool{}
		for _, a := range axes {
			if a < 0 {
				a += int64(len(x))
			}
			red[int(a)] = true
		}
		var out []bool
		for i, d := range x {
			switch {
			case red[i] && keep:
				out = append(out, true)
			case !red[i]:
				out = append(out, d)
			}
		}
		return fit(out)
	case "Concat":
		if len(x) != r {
			return unknown
		}
		axis := int(n.AttrInt("axis", 0))
		if axis < 0 {
			axis += r
		}
		out := allDims(r, false)
		for i := range out {
			out[i] = i == axis
			for j := range n.Inputs {
				d := h.in(n, j)
				if len(d) != r {
					return unknown
				}
				if i == axis {
					out[i] = out[i] && d[i]
				} else {
					out[i] = out[i] || d[i]
				}
			}
		}
		return out
	case "Slice", "Split":
		return fit(x) // sliced axes need the input's size; the others keep it
	case "Flatten":
		if r != 2 {
			return unknown
		}
		axis := int(n.AttrInt("axis", 1))
		if axis < 0 {
			axis += len(x)
		}
		if axis < 0 || axis > len(x) {
			return unknown
		}
		return []bool{allKnown(x[:axis]), allKnown(x[axis:])}
	case "Squeeze", "Unsqueeze":
		axes, ok := h.axes(n)
		if !ok {
			return unknown
		}
		set := map[int]bool{}
		rank := len(x)
		if n.Op == "Unsqueeze" {
			rank = r
		}
		for _, a := range axes {
			if a < 0 {
				a += int64(rank)
			}
			set[int(a)] = true
		}
		var out []bool
		if n.Op == "Squeeze" {
			for i, d := range x {
				if !set[i] {
					out = append(out, d)
				}
			}
			return fit(out)
		}
		for i, j := 0, 0; i < r; i++ {
			if set[i] {
				out = append(out, true)
				continue
			}
			if j >= len(x) {
				return unknown
			}
			out = append(out, x[j])
			j++
		}
		return fit(out)
	case "Gather":
		idx := h.in(n, 1)
		axis := int(n.AttrInt("axis", 0))
		if axis < 0 {
			axis += len(x)
		}
		if axis < 0 || axis >= len(x) {
			return unknown
		}
		out := append(append(append([]bool(nil), x[:axis]...), idx...), x[axis+1:]...)
		return fit(out)
	case "Shape":
		return allDims(r, true)
	}
	return unknown
}

// broadcast is ONNX's multidirectional broadcasting per dimension: known
// when an input has a known size other than 1 there, or every input that
// reaches it knows its size.
func (h *shapeHider) broadcast(n *ir.Node, r int) []bool {
	out := allDims(r, false)
	for i := range out {
		all, big := true, false
		for j, v := range n.Inputs {
			if v == nil {
				continue
			}
			d := h.in(n, j)
			p := i - (r - len(d))
			if p < 0 || p >= len(d) {
				continue
			}
			if !d[p] {
				all = false
				continue
			}
			if p < len(v.Type.Shape) && v.Type.Shape[p].Size != 1 {
				big = true
			}
		}
		out[i] = all || big
	}
	return out
}

// axes returns the axes of a reduction, Squeeze or Unsqueeze: its "axes"
// attribute or its constant second input; ok false when it has none.
func (h *shapeHider) axes(n *ir.Node) ([]int64, bool) {
	if a, ok := n.AttrInts("axes"); ok {
		return a, true
	}
	if len(n.Inputs) < 2 || n.Inputs[1] == nil {
		return nil, false
	}
	v := n.Inputs[1]
	if v.Data != nil {
		return v.Data.Int64s()
	}
	if v.Def != nil && isConstantNode(v.Def) {
		if a := v.Def.Attr("value"); a != nil && a.Tensor != nil {
			return a.Tensor.Int64s()
		}
	}
	return nil, false
}

func allKnown(d []bool) bool {
	for _, k := range d {
		if !k {
			return false
		}
	}
	return len(d) > 0 || d != nil
}

func pick(c bool, a, b int) int {
	if c {
		return a
	}
	return b
}
