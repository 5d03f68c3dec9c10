package graphdef

import (
	"fmt"
	"slices"

	"github.com/remat-compile/remat/internal/tfpb"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/remat"
)

// Writing a rematerialized graph (Options.Remat).
//
// remat.Rewrite turns a graph into the static graph of a plan: every
// computation in plan order, recomputations as duplicated nodes named
// "<node>_rc<k>". Written as it is, TensorFlow.js would undo the plan
// (research note tfjs-execution.md): its executor does not follow the
// file but Kahn's algorithm over a LIFO stack, which schedules a node as
// soon as its last producer has been visited, so a recompute chain whose
// inputs are retained values runs as early as the original did and saves
// nothing. (It does no common-subexpression elimination, so the duplicates
// do run.) The exporter therefore holds a chain behind the node the plan
// runs it after ("after") with a control edge, in the one form that is
// safe in TensorFlow.js, which also hands control inputs to the op as
// ordinary inputs (and so silently changes what a ConcatV2 or an AddN
// computes):
//
//	gate = NoOp(^after)           # one per "after" node, right after it in the file
//	E(..., ^gate)                 # E: an entry node of the chain whose op reads every
//	                              # input at a fixed position (safeControl), where a
//	                              # trailing input is ignored
//	E(..., Identity(s, ^gate), …) # any other entry (ConcatV2, Pack, AddN, _Fused*,
//	                              # Einsum, …): its smallest input s goes through an
//	                              # Identity that carries the control edge
//
// The gate's only input is "after", so it runs as soon as "after" has and
// keeps after's outputs alive no longer than that; its own output (tfjs's
// NoOp returns a 4-byte scalar) lives until the entry runs. The Identity
// copies s (a Const's Identity is the weight itself: tfjs does not copy
// kept tensors).
//
// An entry node is a node of the chain that reads nothing the chain
// computes. With Options.RuntimeOrder (targets/tfjs simulates
// TensorFlow.js's executor) the exporter gates only what that order would
// run too early: while the order runs a duplicate before its chain's
// "after" node, it gates the entries that duplicate depends on of the first
// such chain in plan order, and simulates again (the new edges change the
// order). Each round gates at least one more entry, so the loop ends.
// Without RuntimeOrder every chain is gated. Options.Order's constraints
// are gated the same way (the constrained node is the entry), and the
// violations are checked again after them.
//
// The helpers are named "<after>_gate" and "<entry>_gate_in<j>" (made
// unique); they are not listed in the metadata.

// RematMetadataKey is the key of userDefinedMetadata in model.json under
// which a rematerialized TensorFlow.js model carries its plan (the
// contract with remat-compile verify). A binary GraphDef has no place for
// it and is written without.
const RematMetadataKey = "remat-compile.recompute"

// RematMetadataVersion is the version of the metadata this package writes.
const RematMetadataVersion = 1

// RematInfo holds the plan-level numbers of the metadata.
type RematInfo struct {
	// Solver names the solver that made the plan.
	Solver string
	// BudgetBytes is the budget the solver was given; PredictedPeakBytes
	// and OriginalPeakBytes the plan's and the original's peaks under the
	// solver's liveness model (0: unknown).
	BudgetBytes, PredictedPeakBytes, OriginalPeakBytes int64
	// TFJSPredictedPeakBytes and TFJSOriginalPeakBytes are the peaks the
	// tfjs target predicts for the written models (tf.profile's peak less
	// the weights and feeds; 0: unknown).
	TFJSPredictedPeakBytes, TFJSOriginalPeakBytes int64
}

// RematMetadata is the JSON value of RematMetadataKey.
type RematMetadata struct {
	Version                int              `json:"version"`
	Solver                 string           `json:"solver"`
	BudgetBytes            int64            `json:"budget_bytes"`
	PredictedPeakBytes     int64            `json:"predicted_peak_bytes"`
	OriginalPeakBytes      int64            `json:"original_peak_bytes"`
	TFJSPredictedPeakBytes int64            `json:"tfjs_predicted_peak_bytes,omitempty"`
	TFJSOriginalPeakBytes  int64            `json:"tfjs_original_peak_bytes,omitempty"`
	Recompute              []RecomputeEntry `json:"recompute"`
	// Gated lists the nodes that carry a gate ("NODE after SOURCE"), for
	// reports.
	Gated []string `json:"gated,omitempty"`
}

// RecomputeEntry is one duplicated node of the plan: its NodeDef name,
// the node it copies, its output tensors, and the nodes the plan runs it
// after and before ("" at the start or end).
type RecomputeEntry struct {
	Node     string   `json:"node"`
	Original string   `json:"original"`
	Outputs  []string `json:"outputs"`
	After    string   `json:"after"`
	Before   string   `json:"before"`
}

// force applies Options.Remat and Options.Order.
func (ex *exporter) force() error {
	rw := ex.opts.Remat
	if rw == nil && len(ex.opts.Order) == 0 {
		return nil
	}
	var chains []*remat.Chain
	if rw != nil {
		if rw.Graph != nil && rw.Graph != ex.g {
			return fmt.Errorf("graphdef export: Options.Remat rewrote graph %q, not the graph exported (%q)", rw.Graph.Name, ex.g.Name)
		}
		md := &RematMetadata{
			Version: RematMetadataVersion, Solver: ex.opts.RematInfo.Solver,
			BudgetBytes:            ex.opts.RematInfo.BudgetBytes,
			PredictedPeakBytes:     ex.opts.RematInfo.PredictedPeakBytes,
			OriginalPeakBytes:      ex.opts.RematInfo.OriginalPeakBytes,
			TFJSPredictedPeakBytes: ex.opts.RematInfo.TFJSPredictedPeakBytes,
			TFJSOriginalPeakBytes:  ex.opts.RematInfo.TFJSOriginalPeakBytes,
			Recompute:              []RecomputeEntry{},
		}
		for _, rc := range rw.Recomputes {
			for _, n := range []*ir.Node{rc.Node, rc.Original, rc.After, rc.Before} {
				if n != nil && ex.byNode[n] == nil {
					return fmt.Errorf("graphdef export: Options.Remat names node %q, which is not a node of the exported graph", n.String())
				}
			}
			if rc.Node == nil || rc.Original == nil {
				return fmt.Errorf("graphdef export: Options.Remat: a recompute entry lacks its node or original")
			}
			e := RecomputeEntry{Node: ex.nodeNames[rc.Node], Original: ex.nodeNames[rc.Original], Outputs: []string{}}
			for _, o := range rc.Node.Outputs {
				if o != nil {
					e.Outputs = append(e.Outputs, ex.tensorName(o))
				}
			}
			if rc.After != nil {
				e.After = ex.nodeNames[rc.After]
			}
			if rc.Before != nil {
				e.Before = ex.nodeNames[rc.Before]
			}
			md.Recompute = append(md.Recompute, e)
		}
		ex.meta = md
		for _, rcs := range rw.Chains() {
			c := remat.NewChain(rcs[0].After)
			for _, rc := range rcs {
				c.Add(rc.Node)
			}
			chains = append(chains, &c)
		}
	}
	for i, oc := range ex.opts.Order {
		if oc.Node == nil || oc.After == nil || ex.byNode[oc.Node] == nil || ex.byNode[oc.After] == nil {
			return fmt.Errorf("graphdef export: Options.Order[%d] names a node that is not a node of the exported graph", i)
		}
	}
	if ex.opts.RuntimeOrder == nil {
		for _, c := range chains {
			if c.After == nil {
				continue
			}
			for _, n := range c.Nodes {
				if c.IsEntry(n) {
					if err := ex.gate(c, n); err != nil {
						return err
					}
				}
			}
		}
	} else if err := ex.forceViolations(chains); err != nil {
		return err
	}
	if len(ex.opts.Order) == 0 {
		return nil
	}
	for _, oc := range ex.opts.Order {
		c := remat.NewChain(oc.After, oc.Node)
		if err := ex.gate(&c, oc.Node); err != nil {
			return err
		}
	}
	if ex.opts.RuntimeOrder != nil {
		return ex.forceViolations(chains)
	}
	return nil
}

// forceViolations gates, one chain at a time, what the runtime's order
// runs before its chain's "after" node.
func (ex *exporter) forceViolations(chains []*remat.Chain) error {
	for round := 0; ; round++ {
		if round > len(ex.entries)+1 {
			return fmt.Errorf("graphdef export: internal error: gating does not converge")
		}
		c, todo, err := ex.violation(chains)
		if err != nil || c == nil {
			return err
		}
		for _, e := range todo {
			if err := ex.gate(c, e); err != nil {
				return err
			}
		}
	}
}

// violation finds the first recompute node, in plan order, that the
// runtime runs before its chain's "after" node, and returns its chain and
// the entries to gate; nil when there is none.
func (ex *exporter) violation(chains []*remat.Chain) (*remat.Chain, []*ir.Node, error) {
	w := ex.written()
	order, err := ex.opts.RuntimeOrder(w)
	if err != nil {
		return nil, nil, err
	}
	rank := make(map[*ir.Node]int, len(order))
	for r, p := range order {
		if p < 0 || p >= len(w.Nodes) {
			return nil, nil, fmt.Errorf("graphdef export: Options.RuntimeOrder returned position %d of %d nodes", p, len(w.Nodes))
		}
		if n := w.Nodes[p].Node; n != nil {
			rank[n] = r
		}
	}
	i, n, todo := remat.Early(chains, func(n *ir.Node) (int, bool) { r, ok := rank[n]; return r, ok })
	switch {
	case i < 0:
		return nil, nil, nil
	case len(todo) == 0:
		return nil, nil, fmt.Errorf("graphdef export: internal error: recompute node %q runs before %q although every entry of its chain is gated", n.Name, chains[i].After.Name)
	}
	return chains[i], todo, nil
}

// SafeControl reports whether a control input on a node of op is safe in
// TensorFlow.js 4.22: the op reads each of its inputs at a fixed,
// non-negative position (tfjs-converter's op lists), so an extra trailing
// input, which tfjs hands the op along with its data inputs, is ignored.
// Ops that read a list of inputs to the end (AddN, ConcatV2's values with
// its axis last, Pack, Einsum, IdentityN, _FusedConv2D's, _FusedMatMul's
// and FusedDepthwiseConv2dNative's args) or are control flow are not safe.
func SafeControl(op string) bool {
	_, ok := slices.BinarySearch(safeControlOps, op)
	return ok
}

// safeControlOps are the ops of TensorFlow.js 4.22's op lists whose every
// input has a fixed position (start ≥ 0, no list), control flow, tables and
// tensor arrays left out; sorted.
var safeControlOps = []string{
	"Abs", "Acos", "Acosh", "Add", "AddV2", "All", "Any", "ArgMax", "ArgMin", "Asin", "Asinh",
	"Atan", "Atan2", "Atanh", "AvgPool", "AvgPool3D", "BatchMatMul", "BatchMatMulV2",
	"BatchToSpaceND", "BiasAdd", "Bincount", "BitwiseAnd", "BroadcastArgs", "BroadcastTo", "Cast",
	"Ceil", "ClipByValue", "Complex", "ComplexAbs", "Conv1D", "Conv2D", "Conv2DBackpropInput",
	"Conv3D", "Cos", "Cosh", "CropAndResize", "Cumprod", "Cumsum", "DenseBincount", "DepthToSpace",
	"DepthwiseConv2d", "DepthwiseConv2dNative", "Dilation2D", "Div", "DivNoNan", "Elu",
	"EnsureShape", "Equal", "Erf", "EuclideanNorm", "Exp", "ExpandDims", "Expm1", "FFT", "Fill",
	"Floor", "FloorDiv", "FloorMod", "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3",
	"Gather", "GatherNd", "GatherV2", "Greater", "GreaterEqual", "IFFT", "IRFFT", "Identity",
	"Imag", "IsFinite", "IsInf", "IsNan", "LRN", "LeakyRelu", "Less", "LessEqual", "LinSpace",
	"Log", "Log1p", "LogSoftmax", "LogicalAnd", "LogicalNot", "LogicalOr", "LowerBound", "MatMul",
	"MatrixBandPart", "Max", "MaxPool", "MaxPool3D", "Maximum", "Mean", "Min", "Minimum",
	"MirrorPad", "Mod", "Mul", "Neg", "NotEqual", "OneHot", "OnesLike", "Pad", "PadV2", "Pow",
	"Prelu", "Prod", "RFFT", "Range", "Rank", "Real", "RealDiv", "Reciprocal", "Relu", "Relu6",
	"Reshape", "ResizeBilinear", "ResizeNearestNeighbor", "Reverse", "ReverseV2", "Round", "Rsqrt",
	"ScatterNd", "Select", "SelectV2", "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Sinh", "Size",
	"Slice", "Snapshot", "Softmax", "Softplus", "SpaceToBatchND", "Split", "SplitV", "Sqrt",
	"Square", "SquaredDifference", "Squeeze", "StopGradient", "StridedSlice", "Sub", "Sum", "Tan",
	"Tanh", "TensorScatterUpdate", "Tile", "TopKV2", "Transpose", "Unpack", "UpperBound",
	"ZerosLike",
}

// gate holds entry e of chain c behind c.After (see the top of the file).
func (ex *exporter) gate(c *remat.Chain, e *ir.Node) error {
	if c.Forced[e] {
		return nil
	}
	ge, err := ex.gateOf(c.After)
	if err != nil {
		return err
	}
	ref := "^" + ge.name()
	ee := ex.byNode[e]
	if SafeControl(e.Op) {
		if !slices.Contains(ee.nd.Input, ref) {
			ee.nd.Input = append(ee.nd.Input, ref)
		}
	} else if err := ex.gateThroughIdentity(ee, e, ref); err != nil {
		return err
	}
	c.Forced[e] = true
	if ex.meta != nil {
		ex.meta.Gated = append(ex.meta.Gated, ex.nodeNames[e]+" after "+ex.nodeNames[c.After])
	}
	return nil
}

// gateOf returns the gate NoOp(^after), writing it right after after's
// NodeDef the first time.
func (ex *exporter) gateOf(after *ir.Node) (*entry, error) {
	if g := ex.gates[after]; g != nil {
		return g, nil
	}
	ae := ex.byNode[after]
	if ae == nil {
		return nil, fmt.Errorf("graphdef export: cannot gate after node %q: it is not written", after.String())
	}
	g := &entry{helper: "gate", nd: &tfpb.NodeDef{Name: ex.fresh(ae.name() + "_gate"), Op: "NoOp", Input: []string{"^" + ae.name()}}}
	ex.insertAfter(ae, g)
	ex.gates[after] = g
	return g, nil
}

// gateThroughIdentity routes the smallest input of the entry e (its
// entry ee) through Identity(input, ref), or adds ref to the Identity that
// an earlier gate put there.
func (ex *exporter) gateThroughIdentity(ee *entry, e *ir.Node, ref string) error {
	best := -1
	var bestBytes int64
	for j, v := range e.Inputs {
		// An input that an earlier gate routed already takes the new edge.
		if src := ex.entryNamed(nodeOfRef(ee.nd.Input[j])); src != nil && src.helper == "identity" {
			if !slices.Contains(src.nd.Input, ref) {
				src.nd.Input = append(src.nd.Input, ref)
			}
			return nil
		}
		b, ok := v.Type.Bytes()
		if !ok {
			b = 1 << 62
		}
		if best < 0 || b < bestBytes || b == bestBytes && v.IsConst() {
			best, bestBytes = j, b
		}
	}
	if best < 0 {
		return fmt.Errorf("graphdef export: cannot gate node %q (%s): it has no input to carry a control edge, and %s takes no control input safely in TensorFlow.js", ex.nodeNames[e], e.Op, e.Op)
	}
	v := e.Inputs[best]
	id := &tfpb.NodeDef{Name: ex.fresh(fmt.Sprintf("%s_gate_in%d", ee.name(), best)), Op: "Identity", Input: []string{ee.nd.Input[best], ref}}
	if dt, err := dataType(v.Type.DType); err == nil {
		id.Attr = map[string]*tfpb.AttrValue{"T": {Value: &tfpb.AttrValue_Type{Type: dt}}}
	}
	ie := &entry{helper: "identity", nd: id}
	ee.nd.Input[best] = id.Name
	ex.insertBefore(ee, ie)
	return nil
}

// entryNamed returns the entry of the NodeDef called name, or nil.
func (ex *exporter) entryNamed(name string) *entry {
	for _, e := range ex.entries {
		if e.name() == name {
			return e
		}
	}
	return nil
}

func (ex *exporter) insertAfter(at, e *entry) {
	i := slices.Index(ex.entries, at)
	ex.entries = slices.Insert(ex.entries, i+1, e)
}

func (ex *exporter) insertBefore(at, e *entry) {
	i := slices.Index(ex.entries, at)
	ex.entries = slices.Insert(ex.entries, i, e)
}
