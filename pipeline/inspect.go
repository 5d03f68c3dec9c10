package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/remat-compile/remat/importers/graphdef"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/arena"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/targets"
	"github.com/remat-compile/remat/targets/liveness"
	"github.com/remat-compile/remat/targets/ort"
)

// Inspection is what Inspect finds in a model: sizes, the op histogram,
// the peak of the file's order under a target's memory model and what is
// live then, and, with a profile, every node's predicted time. It is
// inspect's JSON output; field names carry their units.
type Inspection struct {
	Model           string         `json:"model"`
	Graph           string         `json:"graph"`
	Opset           int64          `json:"opset"`
	Nodes           int            `json:"nodes"`
	Values          int            `json:"values"`
	Inputs          int            `json:"inputs"`
	Outputs         int            `json:"outputs"`
	Params          int            `json:"params"`
	ParamBytes      int64          `json:"param_bytes"`
	InputBytes      int64          `json:"input_bytes"`
	ActivationBytes int64          `json:"activation_bytes"`
	MemoryModel     string         `json:"memory_model"`
	PeakBytes       int64          `json:"peak_bytes"`
	PeakStep        int            `json:"peak_step"`
	PeakNode        string         `json:"peak_node"`
	PeakOp          string         `json:"peak_op"`
	Ops             map[string]int `json:"op_histogram"`
	// Note says why the memory model is not the one asked for (ONNX
	// Runtime's on a TensorFlow graph); absent when it is.
	Note          string      `json:"note,omitempty"`
	LargestAtPeak []LiveValue `json:"largest_at_peak"`
	// Costs is the cost of every node on -profile's device; absent
	// without -profile.
	Costs *CostReport `json:"costs,omitempty"`
	// Floor is where the peak cannot go lower (InspectOptions.Floor):
	// the single-node floor and what tiling reaches below it.
	Floor *Floor `json:"floor,omitempty"`
	// Arena is the static arena plan's summary (InspectOptions.Arena).
	Arena *ArenaSummary `json:"arena,omitempty"`
}

// ArenaSummary is a static arena plan in short: the bytes an edge runtime
// must reserve for every activation at a fixed offset, the live peak they
// hold, and the fragmentation between the two.
type ArenaSummary struct {
	ArenaBytes           int64   `json:"arena_bytes"`
	LivePeakBytes        int64   `json:"live_peak_bytes"`
	FragmentationPercent float64 `json:"fragmentation_percent"`
	Buffers              int     `json:"buffers"`
	Optimal              bool    `json:"optimal"`
}

// CostReport is inspect -profile: the predicted time of every node of
// the root graph that runs, with the source of each number.
type CostReport struct {
	Profile string `json:"profile"`
	File    string `json:"profile_file,omitempty"`
	// PredictedSeconds is the sum over Nodes: the additive cost model's
	// time of one run of the model (Checkmate §4.10).
	PredictedSeconds float64 `json:"predicted_seconds"`
	// Sources totals the nodes and seconds per source.
	Sources map[string]SourceTotal `json:"sources"`
	// ConstantNodes counts the Constant nodes left out: ONNX Runtime folds
	// them into initializers when it loads the model.
	ConstantNodes int        `json:"constant_nodes"`
	Nodes         []NodeCost `json:"nodes"`
}

// SourceTotal totals the nodes costed from one source.
type SourceTotal struct {
	Nodes   int     `json:"nodes"`
	Seconds float64 `json:"seconds"`
}

// NodeCost is one node's predicted time and where it comes from.
type NodeCost struct {
	Step    int     `json:"step"`
	Node    string  `json:"node"`
	Op      string  `json:"op"`
	Seconds float64 `json:"seconds"`
	// Source is measured, fitted or datasheet (profiles.Cost.Source);
	// Bound the roofline term that decided a fitted or datasheet time
	// (compute, memory, overhead).
	Source string  `json:"source"`
	Bound  string  `json:"bound,omitempty"`
	FLOPs  float64 `json:"flops"`
	Bytes  int64   `json:"bytes"`
	Note   string  `json:"note,omitempty"`
}

// NodeCosts costs every node of g's root graph on prof.
func NodeCosts(g *ir.Graph, prof *profiles.Profile) (*CostReport, error) {
	r := &CostReport{Profile: prof.Device.Name, File: prof.File(), Sources: map[string]SourceTotal{}, Nodes: []NodeCost{}}
	for i, n := range g.Nodes {
		if n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx") {
			r.ConstantNodes++
			continue
		}
		c, err := prof.Cost(n)
		if err != nil {
			return nil, fmt.Errorf("cost model %s: %w", prof.Device.Name, err)
		}
		r.Nodes = append(r.Nodes, NodeCost{
			Step: i, Node: n.String(), Op: n.OpName(), Seconds: c.Seconds, Source: c.Source, Bound: c.Bound,
			FLOPs: c.FLOPs, Bytes: c.Bytes(), Note: c.Note,
		})
		r.PredictedSeconds += c.Seconds
		t := r.Sources[c.Source]
		t.Nodes++
		t.Seconds += c.Seconds
		r.Sources[c.Source] = t
	}
	return r, nil
}

// LiveValue is one value live at the peak.
type LiveValue struct {
	Value    string `json:"value"`
	Type     string `json:"type"`
	Bytes    int64  `json:"bytes"`
	Producer string `json:"producer"`
	Op       string `json:"op"`
	Step     int    `json:"step"`
}

// InspectOptions say what Inspect computes.
type InspectOptions struct {
	// Target's memory model gives the peak; nil means the model's default
	// target (Model.DefaultTarget).
	Target targets.Target
	// Top bounds how many of the largest values live at the peak are
	// listed.
	Top int
	// Profile, when set, costs every node.
	Profile *profiles.Profile
	// Floor measures the single-node floor and the tiled floor (with
	// Profile's costs, DefaultProfile's without; FloorMaxExtra bounds
	// tiling's extra compute, 0: none). It needs a Context.
	Floor         bool
	FloorMaxExtra float64
	// ORTBlock is ONNX Runtime's channel block the floor's tiling
	// assumes (0: DefaultORTBlock).
	ORTBlock ORTBlock
	Context  context.Context
	// Arena plans the activations in one arena (passes/arena).
	Arena bool
}

// Inspect measures m's graph (see Inspection).
func (m *Model) Inspect(o InspectOptions) (*Inspection, error) {
	if o.Target == nil {
		o.Target = m.DefaultTarget()
	}
	g := m.Graph
	note := ""
	if _, tf := g.Ext.(*graphdef.ModelInfo); tf && o.Target.Name() == (ort.Target{}).Name() {
		o.Target = liveness.Target{}
		note = "ONNX Runtime's memory model (ort) does not apply to a TensorFlow graph; the peak is under the liveness model"
	}
	r := &Inspection{
		Model: m.Name, Graph: g.Name, Opset: g.Opset(""),
		Nodes: len(g.Nodes), Inputs: len(g.Inputs), Outputs: len(g.Outputs), Params: len(g.Params),
		Ops: map[string]int{}, MemoryModel: o.Target.Name(), Note: note,
	}
	seen := map[*ir.Value]bool{}
	for _, v := range slices.Concat(g.Inputs, g.Params) {
		if seen[v] {
			continue
		}
		seen[v] = true
		r.Values++
		b, _ := v.Type.Bytes()
		if v.Data != nil {
			r.ParamBytes += b
		} else {
			r.InputBytes += b
		}
	}
	for _, n := range g.Nodes {
		r.Ops[n.OpName()]++
		for _, v := range n.Outputs {
			if v == nil {
				continue
			}
			r.Values++
			b, _ := v.Type.Bytes()
			r.ActivationBytes += b
		}
	}
	// The file's order, or the order the target's runtime runs the file
	// in where the file does not fix one (TensorFlow.js).
	seq := g.Nodes
	var res *memory.Result
	var err error
	if rs, ok := o.Target.(runtimeSimulator); ok {
		res, seq, err = rs.SimulateWritten(g)
	} else {
		res, err = memory.Simulate(g, seq, o.Target.Memory())
	}
	if err != nil {
		return nil, err
	}
	r.PeakBytes, r.PeakStep = res.PeakBytes, res.PeakStep
	if res.PeakStep >= 0 {
		r.PeakNode, r.PeakOp = seq[res.PeakStep].String(), seq[res.PeakStep].OpName()
	}
	for i, l := range res.AtPeak {
		if i == o.Top {
			break
		}
		r.LargestAtPeak = append(r.LargestAtPeak, LiveValue{
			Value: l.Value.String(), Type: l.Value.Type.String(), Bytes: l.Bytes,
			Producer: l.Value.Def.String(), Op: l.Value.Def.OpName(), Step: l.Step,
		})
	}
	if o.Profile != nil {
		if r.Costs, err = NodeCosts(g, o.Profile); err != nil {
			return nil, err
		}
	}
	if o.Arena {
		p, err := m.Arena(o.Target, arena.Options{})
		if err != nil {
			return nil, err
		}
		r.Arena = &ArenaSummary{ArenaBytes: p.ArenaBytes, LivePeakBytes: p.LivePeak, FragmentationPercent: 100 * p.Fragmentation(), Buffers: len(p.Buffers), Optimal: p.Optimal}
	}
	if o.Floor {
		ctx, prof := o.Context, o.Profile
		if ctx == nil {
			ctx = context.Background()
		}
		if prof == nil {
			if prof, err = profiles.Load(DefaultProfile); err != nil {
				return nil, err
			}
		}
		if r.Floor, err = m.Floor(ctx, o.Target, prof, o.FloorMaxExtra, o.ORTBlock); err != nil {
			return nil, err
		}
	}
	return r, nil
}
