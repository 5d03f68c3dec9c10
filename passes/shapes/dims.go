package shapes

import "github.com/remat-compile/remat/ir"

// Dimension arithmetic. A dimension is known (Size >= 0, no symbol), a named
// symbol, or unknown. Symbols stand for one run-time size each, so two equal
// symbols are equal sizes; nothing is assumed about two different symbols.

// unknownType is the type of a value about which nothing is known but,
// perhaps, its element type.
func unknownType(dt ir.DType) ir.TensorType { return ir.TensorType{DType: dt, Unranked: true} }

// tensorType builds a ranked tensor type; dims is used as is.
func tensorType(dt ir.DType, dims []ir.Dim) ir.TensorType {
	if dims == nil {
		dims = []ir.Dim{}
	}
	return ir.TensorType{DType: dt, Shape: dims}
}

func unknownDims(r int) []ir.Dim {
	d := make([]ir.Dim, r)
	for i := range d {
		d[i] = ir.UnknownDim
	}
	return d
}

func staticDims(sizes ...int64) []ir.Dim {
	d := make([]ir.Dim, len(sizes))
	for i, s := range sizes {
		d[i] = ir.D(s)
	}
	return d
}

func cloneDims(d []ir.Dim) []ir.Dim { return append([]ir.Dim{}, d...) }

// isOne reports whether d is known to be 1.
func isOne(d ir.Dim) bool { return d.Known() && d.Size == 1 }

// sameDim reports whether a and b are known to be equal.
func sameDim(a, b ir.Dim) bool {
	if a.Known() && b.Known() {
		return a.Size == b.Size
	}
	return a.Sym != "" && a.Sym == b.Sym
}

// conflict reports whether a and b are known to differ.
func conflict(a, b ir.Dim) bool { return a.Known() && b.Known() && a.Size != b.Size }

// unify combines two dimensions that must be equal at run time: the more
// specific one wins (known over symbol over unknown).
func unify(a, b ir.Dim) ir.Dim {
	switch {
	case a.Known():
		return a
	case b.Known():
		return b
	case a.Sym != "":
		return a
	}
	return b
}

// join is the dimension that describes both a and b, of which either may
// occur (the two branches of an If, successive loop iterations).
func join(a, b ir.Dim) ir.Dim {
	if sameDim(a, b) {
		return a
	}
	return ir.UnknownDim
}

func dimAdd(a, b ir.Dim) ir.Dim {
	switch {
	case a.Known() && b.Known():
		return ir.D(a.Size + b.Size)
	case b.Known() && b.Size == 0:
		return a
	case a.Known() && a.Size == 0:
		return b
	}
	return ir.UnknownDim
}

// dimAddConst adds k to a, keeping a symbol when k is 0.
func dimAddConst(a ir.Dim, k int64) ir.Dim {
	if a.Known() {
		return ir.D(a.Size + k)
	}
	if k == 0 {
		return a
	}
	return ir.UnknownDim
}

func dimMul(a, b ir.Dim) ir.Dim {
	switch {
	case a.Known() && b.Known():
		if a.Size != 0 && b.Size > (1<<62)/a.Size {
			return ir.UnknownDim
		}
		return ir.D(a.Size * b.Size)
	case (a.Known() && a.Size == 0) || (b.Known() && b.Size == 0):
		return ir.D(0)
	case isOne(b):
		return a
	case isOne(a):
		return b
	}
	return ir.UnknownDim
}

func dimProd(ds []ir.Dim) ir.Dim {
	p := ir.D(1)
	for _, d := range ds {
		p = dimMul(p, d)
	}
	return p
}

// dimDivExact divides a by k > 0; ok is false when a is known and k does not
// divide it.
func dimDivExact(a ir.Dim, k int64) (ir.Dim, bool) {
	switch {
	case k == 1:
		return a, true
	case a.Known():
		if a.Size%k != 0 {
			return ir.UnknownDim, false
		}
		return ir.D(a.Size / k), true
	}
	return ir.UnknownDim, true
}

func ceilDiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	q := a / b
	if (a%b != 0) && ((a < 0) == (b < 0)) {
		q++
	}
	return q
}

// broadcast applies multidirectional (numpy) broadcasting to shapes. It
// reports the positions (counted from the right) of two known, different,
// non-1 sizes.
func broadcast(shapes ...[]ir.Dim) (out []ir.Dim, bad bool, a, b ir.Dim) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out = make([]ir.Dim, r)
	for i := range r {
		var cur ir.Dim
		have := false
		for _, s := range shapes {
			j := len(s) - r + i
			if j < 0 {
				continue
			}
			d := s[j]
			if !have {
				cur, have = d, true
				continue
			}
			nd, ok := broadcastDim(cur, d)
			if !ok {
				return nil, true, cur, d
			}
			cur = nd
		}
		out[i] = cur
	}
	return out, false, ir.Dim{}, ir.Dim{}
}

func broadcastDim(a, b ir.Dim) (ir.Dim, bool) {
	switch {
	case isOne(a):
		return b, true
	case isOne(b):
		return a, true
	case a.Known() && b.Known():
		if a.Size != b.Size {
			return ir.Dim{}, false
		}
		return a, true
	case a.Known():
		return a, true // b is 1 or a
	case b.Known():
		return b, true
	case a.Sym != "" && b.Sym != "":
		if a.Sym == b.Sym {
			return a, true
		}
		return ir.UnknownDim, true // either may be 1
	case a.Sym != "":
		return a, true // b is 1 or a
	case b.Sym != "":
		return b, true
	}
	return ir.UnknownDim, true
}

// shapeString prints dims as the text form does.
func shapeString(d []ir.Dim) string { return tensorType(ir.Undefined, d).String()[len("undef"):] }
