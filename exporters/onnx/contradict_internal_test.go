package onnx

import (
	"testing"

	"github.com/remat-compile/remat/ir"
)

// TestContradicted: a declaration is rewritten only where the graph's type
// contradicts it, and then only in the contradicted parts.
func TestContradicted(t *testing.T) {
	f32 := func(dims ...ir.Dim) ir.TensorType {
		return ir.TensorType{Kind: ir.KindTensor, DType: ir.Float32, Shape: dims}
	}
	d, n := ir.D, ir.SymDim("N")
	for _, c := range []struct {
		name      string
		read, now ir.TensorType
		want      ir.TensorType
		ok        bool
	}{
		{"same", f32(d(1), d(3)), f32(d(1), d(3)), f32(d(1), d(3)), false},
		{"narrowed, not contradicted", f32(n, d(3)), f32(d(2), d(3)), f32(n, d(3)), false},
		{"static size overridden", f32(d(1), d(3), d(32)), f32(d(2), d(3), d(64)), f32(d(2), d(3), d(64)), true},
		{"dynamic kept beside an overridden size", f32(n, d(3), d(32)), f32(d(2), d(3), d(64)), f32(n, d(3), d(64)), true},
		{"rank", f32(d(1), d(3)), f32(d(3)), f32(d(3)), true},
		{"element type", f32(d(1)), ir.TensorType{Kind: ir.KindTensor, DType: ir.Float16, Shape: []ir.Dim{d(1)}}, ir.TensorType{Kind: ir.KindTensor, DType: ir.Float16, Shape: []ir.Dim{d(1)}}, true},
		{"unknown now", f32(d(1)), ir.TensorType{}, f32(d(1)), false},
	} {
		got, ok := contradicted(c.read, c.now)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("%s: contradicted(%v, %v) = %v, %v; want %v, %v", c.name, c.read, c.now, got, ok, c.want, c.ok)
		}
	}
}
