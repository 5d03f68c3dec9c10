package onnx

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
	"google.golang.org/protobuf/proto"
)

// Writing a rematerialized graph (Options.Remat).
//
// remat.Rewrite turns a graph into the static graph of a plan: every
// computation in plan order, recomputations as duplicated nodes. Written
// as it is, ONNX Runtime would undo the plan (research note
// ort-execution.md): it runs nodes in its own depth-first order, which
// hoists a recompute chain to wherever its inputs are ready (Q1), and from
// level "basic" up its CommonSubexpressionElimination merges a duplicate
// that reads the same tensors as its original back into it (Q2). So the
// exporter
//
//  1. writes the nodes in plan order (the rewritten graph's order);
//  2. gives every chain whose duplicates read exactly the inputs of
//     another node with the same op and attributes (what CSE merges) a
//     zero-cost fake data dependency on L, the first output of the
//     chain's "after" node, on each of the chain's entry nodes (those
//     that read nothing the chain computes) that such a duplicate
//     depends on;
//  3. simulates the runtime's order on the written node list
//     (Options.RuntimeOrder; for ONNX Runtime, targets/ort), and
//     while it runs a duplicate before its chain's "after" node, gives
//     the first such chain, in plan order, the dependency on the entries
//     that duplicate depends on, and simulates again: the new nodes change
//     the indices and so ORT's order. Each round forces at least one more
//     entry, so the loop ends;
//  4. applies Options.Order, the caller's order constraints (targets/ort
//     chooses them by simulating ORT's order under its memory model):
//     each gives a node the same kind of dependency on another node's
//     output, never in the depbias form and never on an input that a Conv, ConvTranspose, Gemm or MatMul produces (unless
//     the node is one of those), so that ORT's fusions survive
//     (chooseOrderDep, CanForceOrder); a node that already has a
//     dependency gets one more empty tensor on its Concat. Step 3 runs
//     again after them, since they change the indices.
//
// The dependency (research note, Q4) is
//
//	Lf = Reshape(L, [-1])            # a view
//	Le = Slice(Lf, [0], [0])         # empty, of L's type
//	Li = Cast(Le, to=INT64)          # left out when L is int64
//
// shared by the chain, and per entry node E one of
//
//	depreshape: E reads Reshape(v, Concat(shape(v), Li)) instead of a data
//	            input v: a zero-copy view of v with the same shape (the
//	            shape is a constant when v's is static, else Shape(v));
//	depbias:    a Conv or ConvTranspose E reads Concat(B, Le) as its bias
//	            B (Le cast to B's type when L's differs);
//	depshape:   a Reshape E reads Concat(shape, Li) as its shape.
//
// depreshape is preferred: it is bitwise safe under ORT's NCHWc layout
// transformer, which depbias is not. Two Reshapes are never chained (a
// dynamic Reshape next to a static one breaks ORT's Reshape fusion at
// session creation): depreshape is used only on an input that no Reshape,
// Flatten, Squeeze or Unsqueeze produces and only when E is none of those
// ops; otherwise depbias, then depshape (when nothing reshape-like reads
// E), then depreshape on a parameter input (an initializer has no
// producer). An entry none of these fits is an error.
//
// The dependency keeps the chain after L at every optimization level,
// since it is data, and the chain's readers keep it before them; it also
// makes the chain's inputs differ from the original's, which defeats CSE.
// Chains that the simulation already places right and that CSE cannot
// merge (their entries read other recomputations' outputs) get none. The
// helper nodes are named after the chain's first node or the entry node,
// "<node>_dep_*", and are not listed in the metadata.

// RematMetadataKey is the ModelProto.metadata_props key under which a
// rematerialized model carries its plan (the contract with remat-compile
// verify).
const RematMetadataKey = "remat-compile.recompute"

// RematInfo holds the plan-level numbers of the metadata.
type RematInfo struct {
	// Solver names the solver that made the plan.
	Solver string
	// BudgetBytes is the memory budget the solver was given.
	BudgetBytes int64
	// PredictedPeakBytes is the plan's peak and OriginalPeakBytes the
	// original graph's, under the memory model, in activation bytes
	// (graph inputs and parameters excluded, graph outputs included); 0
	// means unknown.
	PredictedPeakBytes, OriginalPeakBytes int64
	// ORTPredictedPeakBytes and ORTOriginalPeakBytes are the same peaks
	// under the model of ONNX Runtime's CPU allocator (passes/memory ORT:
	// views, in-place, the planner's reuse, the arena), in the order ORT
	// runs the written models at level "disabled": comparable with the
	// activation peak verify measures. 0 means unknown.
	ORTPredictedPeakBytes, ORTOriginalPeakBytes int64
	// ORTDefaultPredictedPeakBytes and ORTDefaultOriginalPeakBytes are
	// those peaks under ORT's default session options (the memory pattern
	// on), over a session's runs. 0 means unknown.
	ORTDefaultPredictedPeakBytes, ORTDefaultOriginalPeakBytes int64
}

// RematMetadataVersion is the version of the RematMetadataKey format this
// package writes (and remat-compile verify reads).
const RematMetadataVersion = 1

// RematMetadata is the JSON value of RematMetadataKey: the contract between
// the exporter, which writes it, and remat-compile verify, which reads it.
type RematMetadata struct {
	Version            int    `json:"version"`
	Solver             string `json:"solver"`
	BudgetBytes        int64  `json:"budget_bytes"`
	PredictedPeakBytes int64  `json:"predicted_peak_bytes"`
	OriginalPeakBytes  int64  `json:"original_peak_bytes"`
	// The peaks under the model of ORT's allocator (RematInfo), when known.
	ORTPredictedPeakBytes int64 `json:"ort_predicted_peak_bytes,omitempty"`
	ORTOriginalPeakBytes  int64 `json:"ort_original_peak_bytes,omitempty"`
	// The peaks under ORT's default options (RematInfo), when known.
	ORTDefaultPredictedPeakBytes int64            `json:"ort_default_predicted_peak_bytes,omitempty"`
	ORTDefaultOriginalPeakBytes  int64            `json:"ort_default_original_peak_bytes,omitempty"`
	Recompute                    []RecomputeEntry `json:"recompute"`
}

// RecomputeEntry is one duplicated node of the plan: its name, the node it
// copies, its output tensors, and the nodes the plan runs it after and
// before ("" at the start or end).
type RecomputeEntry struct {
	Node     string   `json:"node"`
	Original string   `json:"original"`
	Outputs  []string `json:"outputs"`
	After    string   `json:"after"`
	Before   string   `json:"before"`
}

// remat applies Options.Remat to mp, the model just built from g: the
// order-forcing dependencies and the metadata.
func (ex *exporter) remat(g *ir.Graph, mp *onnxpb.ModelProto) error {
	rw := ex.opts.Remat
	if rw.Graph != nil && rw.Graph != g {
		return fmt.Errorf("onnx export: Options.Remat rewrote graph %q, not the graph exported (%q)", rw.Graph.Name, g.Name)
	}
	gp := mp.Graph
	if len(gp.Node) != len(g.Nodes) {
		return fmt.Errorf("onnx export: internal error: %d nodes written for %d", len(gp.Node), len(g.Nodes))
	}
	f := &forcer{ex: ex, g: g, gp: gp, protoOf: map[*ir.Node]*onnxpb.NodeProto{}, nodeNames: map[string]int{}, irVersion: mp.GetIrVersion()}
	for i, n := range g.Nodes {
		f.protoOf[n] = gp.Node[i]
		if n.Name != "" {
			f.nodeNames[n.Name]++
		}
	}
	// Every node the metadata names must be a uniquely named node of g.
	check := func(role string, n *ir.Node) error {
		switch {
		case n == nil:
			return nil
		case f.protoOf[n] == nil:
			return fmt.Errorf("onnx export: Options.Remat: %s node %q is not a node of the exported graph's root", role, n.String())
		case n.Name == "":
			return fmt.Errorf("onnx export: Options.Remat: a %s node (%s) has no name; the metadata names nodes (remat.Rewrite names them)", role, n.OpName())
		case f.nodeNames[n.Name] > 1:
			return fmt.Errorf("onnx export: Options.Remat: %d nodes are named %q; the metadata needs unique names", f.nodeNames[n.Name], n.Name)
		}
		return nil
	}
	md := RematMetadata{
		Version:                      RematMetadataVersion,
		Solver:                       ex.opts.RematInfo.Solver,
		BudgetBytes:                  ex.opts.RematInfo.BudgetBytes,
		PredictedPeakBytes:           ex.opts.RematInfo.PredictedPeakBytes,
		OriginalPeakBytes:            ex.opts.RematInfo.OriginalPeakBytes,
		ORTPredictedPeakBytes:        ex.opts.RematInfo.ORTPredictedPeakBytes,
		ORTOriginalPeakBytes:         ex.opts.RematInfo.ORTOriginalPeakBytes,
		ORTDefaultPredictedPeakBytes: ex.opts.RematInfo.ORTDefaultPredictedPeakBytes,
		ORTDefaultOriginalPeakBytes:  ex.opts.RematInfo.ORTDefaultOriginalPeakBytes,
		Recompute:                    []RecomputeEntry{},
	}
	// A chain runs after the node the plan runs before it, unless ORT
	// folds that node into a constant (it reads parameters alone: the
	// first gradients of a sum loss): then after the last node before it
	// in g's order that ORT runs, which the chain's dependency and the
	// metadata name instead.
	pos := make(map[*ir.Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		pos[n] = i
	}
	foldMemo := map[*ir.Node]bool{}
	anchor := func(after *ir.Node) *ir.Node {
		if after == nil || !constantFoldable(after, foldMemo) {
			return after
		}
		for i := pos[after] - 1; i >= 0; i-- {
			if n := g.Nodes[i]; !isConstantNode(n) && !constantFoldable(n, foldMemo) {
				return n
			}
		}
		return nil
	}
	for _, rc := range rw.Recomputes {
		if rc.Node == nil || rc.Original == nil {
			return fmt.Errorf("onnx export: Options.Remat: a recompute entry lacks its node or original")
		}
		for _, c := range []struct {
			role string
			n    *ir.Node
		}{{"recompute", rc.Node}, {"original", rc.Original}, {"after", rc.After}, {"before", rc.Before}} {
			if err := check(c.role, c.n); err != nil {
				return err
			}
		}
		e := RecomputeEntry{Node: rc.Node.Name, Original: rc.Original.Name, Outputs: []string{}}
		for _, o := range rc.Node.Outputs {
			if o != nil {
				e.Outputs = append(e.Outputs, ex.name(o))
			}
		}
		if a := anchor(rc.After); a != nil {
			e.After = a.Name
		}
		if rc.Before != nil {
			e.Before = rc.Before.Name
		}
		md.Recompute = append(md.Recompute, e)
	}
	for _, rcs := range rw.Chains() {
		c := &chain{Chain: remat.NewChain(anchor(rcs[0].After))}
		for _, rc := range rcs {
			c.Add(rc.Node)
		}
		f.chains = append(f.chains, c)
	}
	for i, oc := range ex.opts.Order {
		for _, c := range []struct {
			role string
			n    *ir.Node
		}{{"constrained", oc.Node}, {"after", oc.After}} {
			if c.n == nil || f.protoOf[c.n] == nil {
				return fmt.Errorf("onnx export: Options.Order[%d]: the %s node is not a node of the exported graph's root", i, c.role)
			}
		}
	}
	if err := f.force(); err != nil {
		return err
	}
	js, err := json.Marshal(md)
	if err != nil {
		return fmt.Errorf("onnx export: %w", err)
	}
	mp.MetadataProps = slices.DeleteFunc(mp.MetadataProps, func(p *onnxpb.StringStringEntryProto) bool {
		return p.GetKey() == RematMetadataKey
	})
	mp.MetadataProps = append(mp.MetadataProps, &onnxpb.StringStringEntryProto{Key: proto.String(RematMetadataKey), Value: proto.String(string(js))})
	return nil
}

// forcer adds the fake dependencies.
type forcer struct {
	ex        *exporter
	g         *ir.Graph
	gp        *onnxpb.GraphProto
	protoOf   map[*ir.Node]*onnxpb.NodeProto
	nodeNames map[string]int
	irVersion int64
	chains    []*chain
	// keys counts the written nodes by cseKey.
	keys map[string]int
	// deps records the dependency of each entry node given one.
	deps map[*ir.Node]*dep
}

// dep is the fake dependency of one entry node: the Concat that carries
// the empty tensors (one per node it depends on) and the first helper node
// written for it, before which the helpers of a further source go.
type dep struct {
	kind   depKind
	concat *onnxpb.NodeProto
	first  *onnxpb.NodeProto
	// dtype is the element type of the empty tensors the Concat takes.
	dtype ir.DType
}

// chain is one recompute chain: the duplicates one stage of the plan
// runs, right after the node after.
type chain struct {
	remat.Chain // Forced: the entries given a dependency
	// Names of the shared dependency tensors, once written: le is the
	// empty slice of L, li its int64 form.
	le, li string
	leType ir.DType
	prefix string
	// at is the node the shared helpers are written before; nil: the
	// chain's first node.
	at *onnxpb.NodeProto
	// order marks a chain made for an order constraint (Options.Order):
	// its dependencies never take the depbias form.
	order bool
}

// anchor returns the node the chain's shared helpers go before.
func (c *chain) anchor(f *forcer) *onnxpb.NodeProto {
	if c.at != nil {
		return c.at
	}
	return f.protoOf[c.Nodes[0]]
}

// force adds the dependencies: first wherever CSE could merge a
// duplicate (that does not depend on the order), then, one chain at a
// time, wherever the simulated order runs a duplicate too early.
func (f *forcer) force() error {
	if len(f.chains) == 0 && len(f.ex.opts.Order) == 0 {
		return nil
	}
	if v := f.g.Opset(""); v < 10 {
		return fmt.Errorf("onnx export: Options.Remat: forcing ONNX Runtime's order needs Slice with inputs (default-domain opset 10 or later); the graph imports opset %d", v)
	}
	// CSE keys of the written nodes; addDependency keeps them current for
	// the entries it rewires. Helper nodes read tensors of their own, so
	// they cannot match anything and are not counted.
	f.keys = map[string]int{}
	for _, np := range f.gp.Node {
		if !isConstantProto(np) {
			f.keys[cseKey(np)]++
		}
	}
	for _, c := range f.chains {
		for _, n := range c.Nodes {
			np := f.protoOf[n]
			if isConstantProto(np) || f.keys[cseKey(np)] < 2 {
				continue
			}
			if c.After == nil {
				return fmt.Errorf("onnx export: recompute node %q starts the graph: no node runs before it to depend on, and ORT's CSE could merge it", n.Name)
			}
			if err := f.addDependencies(c, c.Entries(n)); err != nil {
				return err
			}
			if f.keys[cseKey(np)] > 1 && !c.Forced[n] {
				// Another recomputation of the same node reads the very
				// same tensors (both copies read values the plan retains
				// between them): a dependency on the chain's entries does
				// not reach n's own inputs, so n gets one itself.
				if err := f.addDependency(c, n); err != nil {
					return err
				}
			}
			if f.keys[cseKey(np)] > 1 {
				return fmt.Errorf("onnx export: internal error: recompute node %q still reads the same inputs as another node after its chain got a dependency", n.Name)
			}
		}
	}
	// Every other entry gets one too where it can take one: the simulated
	// order is level "disabled"'s, and from level "basic" up ORT's graph
	// transformers renumber the nodes, so a chain that the simulation
	// places right may still run before its "after" node there (measured:
	// a Relu recomputation reading an earlier chain's Conv, in a U-Net
	// training graph at level "all").
	for _, c := range f.chains {
		if c.After == nil {
			continue
		}
		for _, n := range c.Nodes {
			for _, e := range c.Entries(n) {
				if c.Forced[e] {
					continue
				}
				if _, _, err := chooseDepFor(c, e); err != nil {
					continue // forceChains below insists where the order needs it
				}
				if err := f.addDependency(c, e); err != nil {
					return err
				}
			}
		}
	}
	if err := f.forceChains(); err != nil {
		return err
	}
	if len(f.ex.opts.Order) == 0 {
		return nil
	}
	for _, oc := range f.ex.opts.Order {
		if err := f.forceOrder(oc); err != nil {
			return err
		}
	}
	// The new helpers change the node indices and so ORT's order: the
	// recompute chains are checked again.
	return f.forceChains()
}

// forceChains gives dependencies, one chain at a time, wherever the
// simulated order runs a duplicate before its chain's "after" node.
func (f *forcer) forceChains() error {
	for round := 0; ; round++ {
		if round > len(f.protoOf) {
			return fmt.Errorf("onnx export: internal error: forcing the recompute order does not converge")
		}
		c, entries, err := f.violation()
		if err != nil || c == nil {
			return err
		}
		if err := f.addDependencies(c, entries); err != nil {
			return err
		}
	}
}

// CanForceOrder reports whether an order constraint (Options.Order) can
// hold n back without a depbias and without breaking a fusion (see
// Options.Order). It refuses nodes that read nothing but parameters,
// directly or through other nodes: from level "basic" up ORT folds them
// into initializers, and a dependency would stop that and change the
// kernels after them (measured: the gradient seed of a training graph).
// A node that a recompute chain's dependency already reaches through a
// depbias is refused only at export time.
func CanForceOrder(n *ir.Node) bool {
	return CanWait(n) && !constantFoldable(n, map[*ir.Node]bool{})
}

// CanWait reports whether an order constraint can hold n back at all: n
// is a root-graph node other than a Constant, and an input takes the
// dependency without a depbias or a broken fusion. Unlike CanForceOrder
// it takes a node that ORT would fold; the caller decides what a
// dependency on such a node costs (targets/ort, cone.go).
func CanWait(n *ir.Node) bool {
	if n == nil || n.Graph == nil || n.Graph.Parent != nil || isConstantNode(n) {
		return false
	}
	_, _, err := chooseOrderDep(n)
	return err == nil
}

// constantFoldable reports whether n reads only parameters, Constants and
// the outputs of nodes that do (ORT's constant folding); memo caches the
// answers.
func constantFoldable(n *ir.Node, memo map[*ir.Node]bool) bool {
	if r, ok := memo[n]; ok {
		return r
	}
	memo[n] = true // no cycles in a graph; the value is set below
	r := true
	for _, v := range n.AllInputs() {
		switch {
		case v == nil || v.IsConst():
		case v.Def == nil || v.Def.Graph != n.Graph:
			r = false // a graph input or an outer-scope value
		case isConstantNode(v.Def):
		default:
			r = constantFoldable(v.Def, memo)
		}
		if !r {
			break
		}
	}
	memo[n] = r
	return r
}

// fusesForward reports whether ORT may fuse the node that produces v with
// a node that reads v: a Conv, ConvTranspose, Gemm or MatMul (Conv +
// activation, Conv + Add, MatMul + Add → Gemm, Gemm + activation).
func fusesForward(v *ir.Value) bool {
	if v == nil || v.Def == nil || normDomain(v.Def.Domain) != "" {
		return false
	}
	switch v.Def.Op {
	case "Conv", "ConvTranspose", "Gemm", "MatMul":
		return true
	}
	return false
}

// chooseOrderDep picks the dependency form for an order constraint on e:
// depreshape on a data input (not a parameter, not produced by a Constant
// or a reshape-like op, and not by a node ORT could fuse with e), or
// depshape on a Reshape's shape.
func chooseOrderDep(e *ir.Node) (depKind, int, error) {
	fusable := false
	if normDomain(e.Domain) == "" {
		switch e.Op {
		case "Conv", "ConvTranspose", "Gemm", "MatMul":
		default:
			fusable = true
		}
	}
	if !isReshapeLike(e) {
		for j, v := range e.Inputs {
			if v == nil || v.Type.Kind != ir.KindTensor || v.IsConst() {
				continue
			}
			if v.Def != nil && (isConstantNode(v.Def) || isReshapeLike(v.Def)) {
				continue
			}
			if fusable && fusesForward(v) {
				continue
			}
			return depReshape, j, nil
		}
	}
	if kind, j, err := chooseDep(e); err == nil && kind == depShape {
		return kind, j, nil
	}
	return 0, 0, fmt.Errorf("onnx export: cannot hold node %q (%s) back: no input takes a fake dependency without a depbias, a Reshape pair or a broken fusion", e.Name, e.OpName())
}

// forceOrder applies one order constraint.
func (f *forcer) forceOrder(oc remat.OrderConstraint) error {
	n := oc.Node
	c := &chain{Chain: remat.NewChain(oc.After, n), order: true}
	if d := f.deps[n]; d != nil {
		if d.kind == depBias {
			return fmt.Errorf("onnx export: cannot hold node %q back after %q: its recompute chain's dependency is a depbias", n.Name, oc.After.Name)
		}
		return f.addSource(c, n, d)
	}
	return f.addDependency(c, n)
}

// addSource adds chain c's "after" node as one more node that entry e,
// which has dependency d, depends on: the chain's empty tensor, of d's
// element type, becomes one more input of d's Concat (an empty tensor adds
// nothing). The new helpers go before d's first one.
func (f *forcer) addSource(c *chain, e *ir.Node, d *dep) error {
	c.at = d.first
	if err := f.addShared(c); err != nil {
		return err
	}
	var empty string
	switch {
	case d.dtype == ir.Int64:
		empty = f.int64Dep(c)
	case d.dtype == c.leType:
		empty = c.le
	default:
		dt, ok := DataType(d.dtype)
		if !ok {
			return fmt.Errorf("onnx export: cannot force node %q: its dependency has element type %v", e.Name, d.dtype)
		}
		empty = f.value(c.prefix + "_empty_cast")
		f.gp.Node = slices.Insert(f.gp.Node, slices.Index(f.gp.Node, d.first), f.node("Cast", c.prefix+"_cast", []string{c.le}, empty, []*onnxpb.AttributeProto{intAttr("to", int64(dt))}))
		f.valueInfo(empty, ir.TensorOf(d.dtype, 0))
	}
	d.concat.Input = append(d.concat.Input, empty)
	return nil
}

// addDependencies gives each entry of c that lacks one its dependency.
func (f *forcer) addDependencies(c *chain, entries []*ir.Node) error {
	for _, e := range entries {
		if !c.Forced[e] {
			if err := f.addDependency(c, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// violation finds the first recompute node, in plan order, that the
// runtime (Options.RuntimeOrder) would run before its chain's "after" node, and returns its chain and the entry
// nodes to give a dependency; nil when there is none.
func (f *forcer) violation() (*chain, []*ir.Node, error) {
	if f.ex.opts.RuntimeOrder == nil {
		return nil, nil, nil // the runtime follows the file, which has the plan's order
	}
	nodes := f.gp.Node
	if f.ex.opts.SinksLast {
		nodes = sinksLast(nodes) // as the model will be written
	}
	order := f.ex.opts.RuntimeOrder(writtenNodes(nodes, nil))
	rank := make(map[*onnxpb.NodeProto]int, len(order))
	for r, p := range order {
		if p < 0 || p >= len(nodes) {
			return nil, nil, fmt.Errorf("onnx export: Options.RuntimeOrder returned position %d of %d nodes", p, len(nodes))
		}
		rank[nodes[p]] = r
	}
	chains := make([]*remat.Chain, len(f.chains))
	for i, c := range f.chains {
		chains[i] = &c.Chain
	}
	// A node without a rank is a Constant: ORT makes it an initializer.
	i, n, todo := remat.Early(chains, func(n *ir.Node) (int, bool) { r, ok := rank[f.protoOf[n]]; return r, ok })
	switch {
	case i < 0:
		return nil, nil, nil
	case len(todo) == 0:
		return nil, nil, fmt.Errorf("onnx export: internal error: cannot force recompute node %q: every entry of its chain depends on %q, yet ORT would run it first", n.Name, chains[i].After.Name)
	}
	return f.chains[i], todo, nil
}

// cseKey identifies what ORT's CSE compares: op, domain, attributes and
// input tensors.
func cseKey(np *onnxpb.NodeProto) string {
	var b strings.Builder
	b.WriteString(np.GetDomain())
	b.WriteByte(0)
	b.WriteString(np.GetOpType())
	for _, in := range np.GetInput() {
		b.WriteByte(0)
		b.WriteString(in)
	}
	fmt.Fprintf(&b, "\x00%d", len(np.GetOutput()))
	for _, a := range np.GetAttribute() {
		ab, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a)
		b.WriteByte(0)
		b.Write(ab)
	}
	return b.String()
}

// depKind is the form of a fake dependency on one entry node.
type depKind uint8

const (
	depReshape depKind = iota + 1 // Reshape of input Input
	depBias                       // Concat onto the Conv's bias
	depShape                      // Concat onto the Reshape's shape
)

var reshapeLike = []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze"}

func isReshapeLike(n *ir.Node) bool {
	return n != nil && normDomain(n.Domain) == "" && slices.Contains(reshapeLike, n.Op)
}

// paramLike reports whether v has no producing node in ORT: a graph input,
// a parameter or a Constant's output.
func paramLike(v *ir.Value) bool {
	return v.Def == nil || isConstantNode(v.Def)
}

func isConstantNode(n *ir.Node) bool {
	return n.Op == "Constant" && normDomain(n.Domain) == ""
}

// chooseDep picks the form of the dependency of entry node e (see the top
// of the file) and the input it goes on.
func chooseDep(e *ir.Node) (depKind, int, error) {
	tensorIn := func(j int) bool {
		v := e.Inputs[j]
		return v != nil && v.Type.Kind == ir.KindTensor
	}
	if !isReshapeLike(e) {
		for j, v := range e.Inputs {
			if tensorIn(j) && !v.IsConst() && (v.Def == nil || !isConstantNode(v.Def) && !isReshapeLike(v.Def)) {
				return depReshape, j, nil
			}
		}
	}
	if (e.Op == "Conv" || e.Op == "ConvTranspose") && normDomain(e.Domain) == "" && len(e.Inputs) > 2 && tensorIn(2) {
		return depBias, 2, nil
	}
	if e.Op == "Reshape" && normDomain(e.Domain) == "" && len(e.Inputs) > 1 && tensorIn(1) {
		ok := true
		for _, o := range e.Outputs {
			if o == nil {
				continue
			}
			for _, u := range o.Uses {
				if isReshapeLike(u.Node) {
					ok = false
				}
			}
		}
		if ok {
			return depShape, 1, nil
		}
	}
	if !isReshapeLike(e) {
		for j, v := range e.Inputs {
			if tensorIn(j) && paramLike(v) {
				return depReshape, j, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("onnx export: cannot force recompute node %q (%s) into place: a fake dependency would put two Reshapes in a row (its inputs come from reshape-like ops or it is one), and it has no Conv bias or Reshape shape to carry one", e.Name, e.OpName())
}

// chooseDepFor picks the dependency form for entry e of chain c:
// chooseOrderDep for an order constraint's chain, else chooseDep.
func chooseDepFor(c *chain, e *ir.Node) (depKind, int, error) {
	if c.order {
		return chooseOrderDep(e)
	}
	return chooseDep(e)
}

// addDependency gives entry e of chain c its fake dependency on L.
func (f *forcer) addDependency(c *chain, e *ir.Node) error {
	kind, j, err := chooseDepFor(c, e)
	if err != nil {
		return err
	}
	if c.le == "" {
		if err := f.addShared(c); err != nil {
			return err
		}
	}
	np := f.protoOf[e]
	oldKey := cseKey(np)
	base := e.Name + "_dep"
	var nodes []*onnxpb.NodeProto
	d := &dep{kind: kind, dtype: ir.Int64}
	switch kind {
	case depReshape:
		v := e.Inputs[j]
		var shape string
		if dims, ok := v.Type.Dims(); ok {
			shape = f.addInit(base+"_shape_const", dims)
		} else {
			shape = f.value(base + "_shapeof")
			nodes = append(nodes, f.node("Shape", base+"_shapeof", []string{f.ex.name(v)}, shape, nil))
			rank := ir.UnknownDim
			if r := v.Type.Rank(); r >= 0 {
				rank = ir.D(int64(r))
			}
			f.valueInfo(shape, ir.TensorType{DType: ir.Int64, Shape: []ir.Dim{rank}})
		}
		s := f.value(base + "_shape")
		nodes = append(nodes, f.node("Concat", base+"_concat", []string{shape, f.int64Dep(c)}, s, []*onnxpb.AttributeProto{intAttr("axis", 0)}))
		if r := v.Type.Rank(); r >= 0 {
			f.valueInfo(s, ir.TensorOf(ir.Int64, int64(r)))
		}
		out := f.value(base + "_in" + strconv.Itoa(j))
		nodes = append(nodes, f.node("Reshape", base+"_reshape", []string{f.ex.name(v), s}, out, nil))
		f.valueInfo(out, v.Type)
		np.Input[j] = out
	case depBias:
		b := e.Inputs[j]
		le := c.le
		if b.Type.DType != c.leType {
			dt, ok := DataType(b.Type.DType)
			if !ok {
				return fmt.Errorf("onnx export: cannot force recompute node %q: its bias %q has element type %v", e.Name, f.ex.name(b), b.Type.DType)
			}
			le = f.value(base + "_empty")
			nodes = append(nodes, f.node("Cast", base+"_cast", []string{c.le}, le, []*onnxpb.AttributeProto{intAttr("to", int64(dt))}))
			f.valueInfo(le, ir.TensorOf(b.Type.DType, 0))
		}
		out := f.value(base + "_bias")
		nodes = append(nodes, f.node("Concat", base+"_concat", []string{f.ex.name(b), le}, out, []*onnxpb.AttributeProto{intAttr("axis", 0)}))
		f.valueInfo(out, b.Type)
		np.Input[j] = out
		d.dtype = b.Type.DType
	case depShape:
		s := e.Inputs[j]
		out := f.value(base + "_shape")
		nodes = append(nodes, f.node("Concat", base+"_concat", []string{f.ex.name(s), f.int64Dep(c)}, out, []*onnxpb.AttributeProto{intAttr("axis", 0)}))
		f.valueInfo(out, s.Type)
		np.Input[j] = out
	}
	for _, h := range nodes {
		if h.GetOpType() == "Concat" {
			d.concat = h
		}
	}
	d.first = nodes[0]
	if f.deps == nil {
		f.deps = map[*ir.Node]*dep{}
	}
	f.deps[e] = d
	f.gp.Node = slices.Insert(f.gp.Node, slices.Index(f.gp.Node, np), nodes...)
	f.keys[oldKey]--
	f.keys[cseKey(np)]++
	c.Forced[e] = true
	return nil
}

// addShared writes the chain's part of the dependency: Lf, Le and Li, from
// the first present tensor output L of the chain's "after" node, right
// before the chain's first node.
func (f *forcer) addShared(c *chain) error {
	var l *ir.Value
	for _, o := range c.After.Outputs {
		if o != nil && o.Type.Kind == ir.KindTensor {
			l = o
			break
		}
	}
	if l == nil {
		return fmt.Errorf("onnx export: cannot force the recompute chain of %q after node %q: that node has no tensor output to depend on", c.Nodes[0].Name, c.After.Name)
	}
	c.prefix = c.Nodes[0].Name + "_dep"
	at := slices.Index(f.gp.Node, c.anchor(f))
	lname := f.ex.name(l)
	minus1 := f.addInit(c.prefix+"_minus1", []int64{-1})
	zero := f.addInit(c.prefix+"_zero", []int64{0})
	lf := f.value(c.prefix + "_flat")
	le := f.value(c.prefix + "_empty")
	nodes := []*onnxpb.NodeProto{
		f.node("Reshape", c.prefix+"_flat", []string{lname, minus1}, lf, nil),
		f.node("Slice", c.prefix+"_slice", []string{lf, zero, zero}, le, nil),
	}
	if n, ok := l.Type.NumElements(); ok {
		f.valueInfo(lf, ir.TensorOf(l.Type.DType, n))
	} else {
		f.valueInfo(lf, ir.TensorType{DType: l.Type.DType, Shape: []ir.Dim{ir.UnknownDim}})
	}
	f.valueInfo(le, ir.TensorOf(l.Type.DType, 0))
	c.le, c.leType = le, l.Type.DType
	f.gp.Node = slices.Insert(f.gp.Node, at, nodes...)
	return nil
}

// int64Dep returns Li, the chain's empty int64 tensor, writing the Cast
// the first time (right before the chain; Le itself when L is int64).
func (f *forcer) int64Dep(c *chain) string {
	if c.li != "" {
		return c.li
	}
	if c.leType == ir.Int64 {
		c.li = c.le
		return c.li
	}
	c.li = f.value(c.prefix + "_empty_i64")
	np := f.node("Cast", c.prefix+"_cast", []string{c.le}, c.li, []*onnxpb.AttributeProto{intAttr("to", int64(onnxpb.TensorProto_INT64))})
	f.valueInfo(c.li, ir.TensorOf(ir.Int64, 0))
	f.gp.Node = slices.Insert(f.gp.Node, slices.Index(f.gp.Node, c.anchor(f)), np)
	return c.li
}

// value reserves a unique tensor name.
func (f *forcer) value(base string) string {
	name := base
	for k := 2; f.ex.used[name]; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	f.ex.used[name] = true
	return name
}

// node makes a helper node with a unique name.
func (f *forcer) node(op, base string, inputs []string, output string, attrs []*onnxpb.AttributeProto) *onnxpb.NodeProto {
	name := base
	for k := 2; f.nodeNames[name] > 0; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	f.nodeNames[name]++
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: inputs, Output: []string{output}, Attribute: attrs}
}

// addInit writes a 1-D int64 initializer and returns its name.
func (f *forcer) addInit(base string, vals []int64) string {
	name := f.value(base)
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	tp := &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{int64(len(vals))}, DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), RawData: raw}
	f.gp.Initializer = append(f.gp.Initializer, tp)
	if f.irVersion < 4 {
		f.gp.Input = append(f.gp.Input, &onnxpb.ValueInfoProto{Name: proto.String(name), Type: typeProto(ir.TensorOf(ir.Int64, int64(len(vals))), nil)})
	}
	return name
}

// valueInfo declares a helper tensor when the export writes value_info
// and hides no shapes (a declared helper would give a hidden value its
// shape back).
func (f *forcer) valueInfo(name string, t ir.TensorType) {
	if !f.ex.opts.ValueInfo || f.ex.opts.HideShapes || t.DType == ir.Undefined {
		return
	}
	if tp := typeProto(t, nil); tp != nil {
		f.gp.ValueInfo = append(f.gp.ValueInfo, &onnxpb.ValueInfoProto{Name: proto.String(name), Type: tp})
	}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}
