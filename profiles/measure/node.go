package measure

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/ir"
)

// captureValues runs pm once with the steering values that its measured
// nodes read from the root graph (integer, bool and small tensors that
// nodes compute, Constant outputs) added as graph outputs, and returns
// them by value.
func captureValues(pm *preparedModel, entries []*sigEntry, level, dir string) (map[*ir.Value]ort.Tensor, error) {
	g := pm.graph
	isOut := map[*ir.Value]bool{}
	for _, v := range g.Outputs {
		isOut[v] = true
	}
	var extra []*ir.Value
	for _, e := range entries {
		if e.skip != "" || e.model != pm {
			continue
		}
		for _, v := range e.node.Inputs {
			// Root-graph values only (a body node may read one from the
			// outer scope): a body's own values cannot be outputs.
			if v == nil || v.Def == nil || v.Graph != g || isOut[v] || !steering(v) {
				continue
			}
			isOut[v] = true
			extra = append(extra, v)
		}
	}
	out := map[*ir.Value]ort.Tensor{}
	if len(extra) == 0 {
		return out, nil
	}
	saved := g.Outputs
	g.Outputs = append(slices.Clip(g.Outputs), extra...)
	path := filepath.Join(dir, "capture.onnx")
	err := onnxexp.ExportFile(g, path, onnxexp.Options{})
	g.Outputs = saved
	if err != nil {
		return nil, fmt.Errorf("%s: exporting the model with its steering values as outputs: %w", pm.spec.Name, err)
	}
	res, err := ort.Run(path, pm.inputs, ort.Options{Level: level, Threads: 1, Arena: true})
	if err != nil {
		return nil, fmt.Errorf("%s: running the model to capture its steering values: %w", pm.spec.Name, err)
	}
	for _, v := range extra {
		if t, ok := res.Outputs[v.Name]; ok {
			out[v] = t
		}
	}
	return out, nil
}

// steering reports whether v's value, rather than only its shape, may
// change what a node reading it does.
func steering(v *ir.Value) bool {
	if v.Def != nil && v.Def.Op == "Constant" {
		return true
	}
	if !v.Type.DType.IsFloat() {
		return true
	}
	dims, ok := v.Type.Dims()
	return ok && ort.NumElements(dims) <= capturedMaxElems
}

// singleNode builds the single-node model of e's node: its graph and the
// values of its graph inputs. With sink, every output of rank one or more
// is read by a sink (addSink) instead of being a graph output, except
// the outputs that are graph outputs of the model: ONNX Runtime
// allocates those afresh on every run of the model, and so of the
// single-node model. With
// withCold, the inputs e.cold marks are listed by name for the timing to
// keep out of the caches (ort.TimedModel.ColdInputs); parameters among
// them become graph inputs, whose data is then ours.
func singleNode(e *sigEntry, captured map[*ir.Value]ort.Tensor, seed uint64, sink, withCold bool) (*ir.Graph, map[string]ort.Tensor, []string, error) {
	n := e.node
	root := n.Graph.Root()
	g := ir.NewGraph("profile_" + n.Op)
	g.Opsets = slices.Clone(root.Opsets)
	inputs := map[string]ort.Tensor{}
	var cold []string
	vals := map[*ir.Value]*ir.Value{}
	ins := make([]*ir.Value, len(n.Inputs))
	for i, v := range n.Inputs {
		if v == nil {
			continue
		}
		if w, ok := vals[v]; ok {
			ins[i] = w
			continue
		}
		name := fmt.Sprintf("in%d", i)
		var w *ir.Value
		data, isConst := constantData(v, captured)
		isCold := withCold && i < len(e.cold) && e.cold[i] > inCache
		switch {
		case isConst && isCold:
			// A weight read cold: a graph input, so that its data is
			// ours to keep out of the caches (ort.TimedModel.ColdInputs).
			t, err := tensorFromIR(data)
			if err != nil {
				return nil, nil, nil, err
			}
			w = g.AddInput(name, v.Type)
			inputs[name] = t
			cold = append(cold, name)
		case isConst:
			w = g.AddParam(name, v.Type, data)
		default:
			t, err := inputValue(e, i, captured, seed)
			if err != nil {
				return nil, nil, nil, err
			}
			w = g.AddInput(name, v.Type)
			inputs[name] = t
			if isCold {
				cold = append(cold, name)
			}
		}
		vals[v], ins[i] = w, w
	}
	outs := make([]string, len(n.Outputs))
	for i, v := range n.Outputs {
		if v != nil {
			outs[i] = fmt.Sprintf("out%d", i)
		}
	}
	m := g.NewNode(n.Op, n.Domain, ins, outs)
	m.Name = "node"
	m.Attrs = slices.Clone(n.Attrs)
	for i, v := range n.Outputs {
		if v == nil {
			continue
		}
		m.Outputs[i].Type = v.Type
		if sink && !slices.Contains(root.Outputs, v) {
			addSink(g, m.Outputs[i])
		} else {
			g.AddOutput(m.Outputs[i])
		}
	}
	if len(g.Inputs) == 0 {
		// ONNX Runtime's binding needs a graph input: a node of
		// initializers alone takes its first one as an input instead.
		for i, v := range ins {
			if v != nil && v.Data != nil {
				t, err := tensorFromIR(v.Data)
				if err != nil {
					return nil, nil, nil, err
				}
				w := g.AddInput(v.Name+"_in", v.Type)
				m.SetInput(i, w)
				for j := i + 1; j < len(ins); j++ {
					if ins[j] == v {
						m.SetInput(j, w)
					}
				}
				g.Params = slices.DeleteFunc(g.Params, func(p *ir.Value) bool { return p == v })
				inputs[w.Name] = t
				break
			}
		}
	}
	return g, inputs, cold, nil
}

// addSink makes v an intermediate value, as a node's output is inside a
// model: ONNX Runtime then allocates it from its arena on every run and
// frees it after its last reader, as it does in the model, instead of
// handing it to the caller as a graph output (a fresh allocation, often
// page faults, on every run). The reader is a Slice of v's first element
// along every axis, whose one-element output is the graph output: it
// depends on v's data, so no optimizer folds it away, and it costs next
// to nothing (the run overhead that runOverhead calibrates includes one).
// An empty or rank-0 v stays a graph output.
func addSink(g *ir.Graph, v *ir.Value) {
	dims, _ := v.Type.Dims()
	if len(dims) == 0 || ort.NumElements(dims) == 0 {
		g.AddOutput(v)
		return
	}
	r := len(dims)
	zeros, ones, axes := make([]int64, r), make([]int64, r), make([]int64, r)
	out := make([]ir.Dim, r)
	for k := range r {
		ones[k], axes[k], out[k] = 1, int64(k), ir.D(1)
	}
	var sl *ir.Node
	if g.Opset("") >= 10 {
		vec := func(name string, xs []int64) *ir.Value {
			return g.AddParam(v.Name+"_"+name, ir.TensorOf(ir.Int64, int64(r)), ir.Int64Tensor([]int64{int64(r)}, xs...))
		}
		sl = g.NewNode("Slice", "", []*ir.Value{v, vec("starts", zeros), vec("ends", ones), vec("axes", axes)}, []string{v.Name + "_sink"})
	} else {
		sl = g.NewNode("Slice", "", []*ir.Value{v}, []string{v.Name + "_sink"})
		sl.Attrs = []ir.Attr{ir.IntsAttr("starts", zeros...), ir.IntsAttr("ends", ones...), ir.IntsAttr("axes", axes...)}
	}
	sl.Name = v.Name + "_sink"
	sl.Outputs[0].Type = ir.TensorType{DType: v.Type.DType, Shape: out}
	g.AddOutput(sl.Outputs[0])
}

// constantData is the data of an input that the model holds as a
// constant: a parameter, or a Constant node's output (its tensor
// attribute, or the value captured from the model).
func constantData(v *ir.Value, captured map[*ir.Value]ort.Tensor) (*ir.Tensor, bool) {
	if v.Data != nil {
		return v.Data, true
	}
	if v.Def == nil || v.Def.Op != "Constant" {
		return nil, false
	}
	if a := v.Def.Attr("value"); a != nil && a.Kind == ir.AttrTensor && a.Tensor != nil {
		return a.Tensor, true
	}
	if t, ok := captured[v]; ok {
		return &ir.Tensor{DType: v.Type.DType, Shape: slices.Clone(t.Shape), Raw: t.Data}, true
	}
	return nil, false
}

// tensorFromIR converts constant data to a tensor the binding passes.
func tensorFromIR(t *ir.Tensor) (ort.Tensor, error) {
	name, ok := ortTypeName(t.DType)
	if !ok {
		return ort.Tensor{}, fmt.Errorf("element type %s is not supported", t.DType)
	}
	out := ort.Tensor{DType: name, Shape: slices.Clone(t.Shape), Data: t.Raw}
	if out.Shape == nil {
		out.Shape = []int64{}
	}
	return out, out.Validate()
}

// inputValue is the value of input slot i of e's node: the model's own
// graph input, the captured value, a shape derived from the node's
// outputs, or seeded random values.
func inputValue(e *sigEntry, i int, captured map[*ir.Value]ort.Tensor, seed uint64) (ort.Tensor, error) {
	n := e.node
	v := n.Inputs[i]
	if t, ok := captured[v]; ok {
		return t, nil
	}
	if v.Def == nil && v.Graph == e.model.graph {
		if t, ok := e.model.inputs[v.Name]; ok {
			return t, nil
		}
	}
	dims, _ := v.Type.Dims()
	if t, ok := derivedShape(n, i, dims); ok {
		return t, nil
	}
	name, _ := ortTypeName(v.Type.DType)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d", e.key, i)
	return ort.RandomTensor(name, dims, seed^h.Sum64())
}

// derivedShape gives the shape inputs of Reshape, Expand,
// ConstantOfShape and Tile from the node's inferred output shape, for
// nodes whose inputs cannot be captured (inside subgraph bodies).
func derivedShape(n *ir.Node, i int, dims []int64) (ort.Tensor, bool) {
	if n.Domain != "" && n.Domain != "ai.onnx" || len(n.Outputs) == 0 || n.Outputs[0] == nil || n.Inputs[i].Type.DType != ir.Int64 {
		return ort.Tensor{}, false
	}
	out, ok := n.Outputs[0].Type.Dims()
	if !ok {
		return ort.Tensor{}, false
	}
	var vals []int64
	switch {
	case (n.Op == "Reshape" || n.Op == "Expand") && i == 1, n.Op == "ConstantOfShape" && i == 0:
		vals = slices.Clone(out)
	case n.Op == "Tile" && i == 1:
		in, ok := n.Inputs[0].Type.Dims()
		if !ok || len(in) != len(out) {
			return ort.Tensor{}, false
		}
		for k := range in {
			if in[k] == 0 {
				vals = append(vals, 1)
			} else {
				vals = append(vals, out[k]/in[k])
			}
		}
	default:
		return ort.Tensor{}, false
	}
	if vals == nil {
		vals = []int64{}
	}
	if int64(len(vals)) != ort.NumElements(dims) {
		return ort.Tensor{}, false
	}
	t, err := ort.NewTensor(dims, vals)
	return t, err == nil
}
