package graphdef

import (
	"fmt"
	"slices"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
)

// The IR's attribute kinds are ONNX's; TensorFlow's AttrValue cases map onto
// them as follows, and every ir.Attr keeps the AttrValue as read in its Ext
// (*AttrInfo), which says what the mapping loses:
//
//	s              AttrString
//	i              AttrInt
//	f              AttrFloat
//	b              AttrInt (0 or 1)
//	type           AttrString, the DataType name ("DT_FLOAT")
//	shape          AttrInts, the dims (-1 for an unknown one); AttrOther for unknown rank
//	tensor         AttrTensor
//	list(string)   AttrStrings
//	list(int)      AttrInts
//	list(float)    AttrFloats
//	list(bool)     AttrInts (0 or 1)
//	list(type)     AttrStrings of DataType names
//	list(tensor)   AttrTensors
//	empty list     AttrInts, empty (the AttrValue does not say the element kind)
//	list(shape), list(func), func, placeholder, a list mixing kinds, no value: AttrOther

// attrs converts a NodeDef's attribute map into IR attributes sorted by
// name (map order must not leak into the IR).
func (im *importer) attrs(nd *tfpb.NodeDef, pos ir.Pos) []ir.Attr {
	names := make([]string, 0, len(nd.GetAttr()))
	for k := range nd.GetAttr() {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]ir.Attr, 0, len(names))
	for _, name := range names {
		if name == "" {
			im.errorf(pos, "has an attribute with an empty name")
			continue
		}
		a, err := im.attr(name, nd.GetAttr()[name])
		if err != nil {
			im.errorf(pos, "attribute %q: %v", name, err)
			continue
		}
		out = append(out, a)
	}
	return out
}

func (im *importer) attr(name string, av *tfpb.AttrValue) (ir.Attr, error) {
	a := ir.Attr{Name: name, Kind: ir.AttrOther, Ext: &AttrInfo{Value: av}}
	switch v := av.GetValue().(type) {
	case *tfpb.AttrValue_S:
		a.Kind, a.Str = ir.AttrString, v.S
		if a.Str == nil {
			a.Str = []byte{}
		}
	case *tfpb.AttrValue_I:
		a.Kind, a.Int = ir.AttrInt, v.I
	case *tfpb.AttrValue_F:
		a.Kind, a.Float = ir.AttrFloat, v.F
	case *tfpb.AttrValue_B:
		a.Kind, a.Int = ir.AttrInt, boolInt(v.B)
	case *tfpb.AttrValue_Type:
		if err := checkDType(v.Type); err != nil {
			return a, err
		}
		a.Kind, a.Str = ir.AttrString, []byte(v.Type.String())
	case *tfpb.AttrValue_Shape:
		dims, ok, err := shapeDims(v.Shape)
		if err != nil {
			return a, err
		}
		if ok {
			a.Kind, a.Ints = ir.AttrInts, dims
		}
	case *tfpb.AttrValue_Tensor:
		t, err := decodeTensor("", v.Tensor, im.maxTensorBytes())
		if err != nil {
			return a, err
		}
		a.Kind, a.Tensor = ir.AttrTensor, t
	case *tfpb.AttrValue_List:
		return im.listAttr(a, v.List)
	}
	return a, nil
}

func (im *importer) listAttr(a ir.Attr, l *tfpb.AttrValue_ListValue) (ir.Attr, error) {
	kinds := 0
	for _, n := range []int{len(l.S), len(l.I), len(l.F), len(l.B), len(l.Type), len(l.Shape), len(l.Tensor), len(l.Func)} {
		if n > 0 {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		a.Kind, a.Ints = ir.AttrInts, []int64{}
	case kinds > 1:
		// Not a valid TensorFlow list; kept as read.
	case len(l.S) > 0:
		a.Kind, a.Strs = ir.AttrStrings, l.S
	case len(l.I) > 0:
		a.Kind, a.Ints = ir.AttrInts, l.I
	case len(l.F) > 0:
		a.Kind, a.Floats = ir.AttrFloats, l.F
	case len(l.B) > 0:
		a.Kind = ir.AttrInts
		for _, b := range l.B {
			a.Ints = append(a.Ints, boolInt(b))
		}
	case len(l.Type) > 0:
		a.Kind = ir.AttrStrings
		for _, t := range l.Type {
			if err := checkDType(t); err != nil {
				return a, err
			}
			a.Strs = append(a.Strs, []byte(t.String()))
		}
	case len(l.Tensor) > 0:
		a.Kind = ir.AttrTensors
		for i, tp := range l.Tensor {
			t, err := decodeTensor("", tp, im.maxTensorBytes())
			if err != nil {
				return a, fmt.Errorf("tensor %d: %v", i, err)
			}
			a.Tensors = append(a.Tensors, t)
		}
	case len(l.Shape) > 0:
		for i, sp := range l.Shape {
			if _, _, err := shapeDims(sp); err != nil {
				return a, fmt.Errorf("shape %d: %v", i, err)
			}
		}
	}
	return a, nil
}

// shapeDims returns the dims of a shape (-1 for an unknown dimension) and
// whether the rank is known; a dimension below -1 is an error.
func shapeDims(sp *tfpb.TensorShapeProto) ([]int64, bool, error) {
	if sp.GetUnknownRank() {
		if len(sp.GetDim()) > 0 {
			return nil, false, fmt.Errorf("shape has unknown rank and %d dimensions", len(sp.GetDim()))
		}
		return nil, false, nil
	}
	dims := make([]int64, len(sp.GetDim()))
	for i, d := range sp.GetDim() {
		if d.GetSize() < -1 {
			return nil, false, fmt.Errorf("negative dimension %d in shape %s (-1 is the only negative size: unknown)", d.GetSize(), shapeString(sp))
		}
		dims[i] = d.GetSize()
	}
	return dims, true, nil
}

// shapeType is the IR type of a value of element type dt and shape sp
// (unknown dimensions as ir.UnknownDim, or as a symbol when TensorFlow names
// them).
func shapeType(dt ir.DType, sp *tfpb.TensorShapeProto) (ir.TensorType, error) {
	dims, ranked, err := shapeDims(sp)
	if err != nil {
		return ir.TensorType{}, err
	}
	t := ir.TensorType{DType: dt, Unranked: !ranked}
	if ranked {
		t.Shape = make([]ir.Dim, len(dims))
		for i, d := range dims {
			switch name := sp.GetDim()[i].GetName(); {
			case d >= 0:
				t.Shape[i] = ir.D(d)
			case name != "":
				t.Shape[i] = ir.SymDim(name)
			default:
				t.Shape[i] = ir.UnknownDim
			}
		}
	}
	return t, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
