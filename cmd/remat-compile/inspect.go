package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/profiles"
)

type inspectOptions struct {
	load    loadOptions
	json    bool
	top     int
	memory  string
	profile string
}

func inspectCmd() *command {
	return &command{
		name:  "inspect",
		usage: "[-input-shape name=DIMS] [-dim sym=N] [-profile NAME|file.yaml] [-json] model.onnx",
		short: "Print a model's size, op histogram, parameter and activation bytes, and peak memory in its file order; with -profile, every node's predicted seconds and where the number comes from (measured, fitted, datasheet).",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &inspectOptions{}
			o.load.shapes.register(fs)
			fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
			fs.IntVar(&o.top, "top", 10, "how many of the largest values live at the peak to list")
			fs.StringVar(&o.memory, "memory", "ort", "memory model: ort (views and in-place reuse as ONNX Runtime) or liveness (every output its own buffer)")
			fs.StringVar(&o.profile, "profile", "", "also cost every node on a device profile: a built-in `name` ("+strings.Join(profiles.Builtins(), ", ")+") or a .yaml file (such as one remat-compile profile wrote)")
			return func(ctx context.Context, args []string, io *Streams) error {
				if len(args) != 1 {
					return usagef("inspect takes one model file, got %d arguments", len(args))
				}
				return runInspect(ctx, o, args[0], io)
			}
		},
	}
}

// inspectReport is the JSON form of inspect's output. Field names carry
// their units.
type inspectReport struct {
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
	LargestAtPeak   []liveValue    `json:"largest_at_peak"`
	// Costs is the cost of every node on -profile's device; absent
	// without -profile.
	Costs *costReport `json:"costs,omitempty"`
}

// costReport is inspect -profile: the predicted time of every node of
// the root graph that runs, with the source of each number.
type costReport struct {
	Profile string `json:"profile"`
	File    string `json:"profile_file,omitempty"`
	// PredictedSeconds is the sum over Nodes: the additive cost model's
	// time of one run of the model (Checkmate §4.10).
	PredictedSeconds float64 `json:"predicted_seconds"`
	// Sources totals the nodes and seconds per source.
	Sources map[string]sourceTotal `json:"sources"`
	// ConstantNodes counts the Constant nodes left out: ONNX Runtime folds
	// them into initializers when it loads the model.
	ConstantNodes int        `json:"constant_nodes"`
	Nodes         []nodeCost `json:"nodes"`
}

type sourceTotal struct {
	Nodes   int     `json:"nodes"`
	Seconds float64 `json:"seconds"`
}

// nodeCost is one node's predicted time and where it comes from.
type nodeCost struct {
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

// nodeCosts costs every node of g's root graph on prof.
func nodeCosts(g *ir.Graph, prof *profiles.Profile) (*costReport, error) {
	r := &costReport{Profile: prof.Device.Name, File: prof.File(), Sources: map[string]sourceTotal{}, Nodes: []nodeCost{}}
	for i, n := range g.Nodes {
		if n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx") {
			r.ConstantNodes++
			continue
		}
		c, err := prof.Cost(n)
		if err != nil {
			return nil, fmt.Errorf("cost model %s: %w", prof.Device.Name, err)
		}
		r.Nodes = append(r.Nodes, nodeCost{
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

type liveValue struct {
	Value    string `json:"value"`
	Type     string `json:"type"`
	Bytes    int64  `json:"bytes"`
	Producer string `json:"producer"`
	Op       string `json:"op"`
	Step     int    `json:"step"`
}

func memoryOptions(name string) (memory.Options, error) {
	switch name {
	case "ort":
		return memory.ORT(), nil
	case "liveness":
		return memory.Options{}, nil
	}
	return memory.Options{}, usagef("-memory %q: want ort or liveness", name)
}

func runInspect(ctx context.Context, o *inspectOptions, path string, io *Streams) error {
	mopts, err := memoryOptions(o.memory)
	if err != nil {
		return err
	}
	var prof *profiles.Profile
	if o.profile != "" {
		if prof, err = profiles.Load(o.profile); err != nil {
			return err
		}
	}
	o.load.requireStatic = true
	g, _, err := loadModel(ctx, path, &o.load, io.Err)
	if err != nil {
		return err
	}
	r := &inspectReport{
		Model: filepath.Base(path), Graph: g.Name, Opset: g.Opset(""),
		Nodes: len(g.Nodes), Inputs: len(g.Inputs), Outputs: len(g.Outputs), Params: len(g.Params),
		Ops: map[string]int{}, MemoryModel: o.memory,
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
	res, err := memory.Simulate(g, g.Nodes, mopts)
	if err != nil {
		return err
	}
	r.PeakBytes, r.PeakStep = res.PeakBytes, res.PeakStep
	if res.PeakStep >= 0 {
		r.PeakNode, r.PeakOp = g.Nodes[res.PeakStep].String(), g.Nodes[res.PeakStep].OpName()
	}
	for i, l := range res.AtPeak {
		if i == o.top {
			break
		}
		r.LargestAtPeak = append(r.LargestAtPeak, liveValue{
			Value: l.Value.String(), Type: l.Value.Type.String(), Bytes: l.Bytes,
			Producer: l.Value.Def.String(), Op: l.Value.Def.OpName(), Step: l.Step,
		})
	}
	if prof != nil {
		if r.Costs, err = nodeCosts(g, prof); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	w := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "model:\t%s (graph %q, opset %d)\n", r.Model, r.Graph, r.Opset)
	fmt.Fprintf(w, "nodes:\t%d\n", r.Nodes)
	fmt.Fprintf(w, "values:\t%d (%d inputs, %d parameters, %d outputs)\n", r.Values, r.Inputs, r.Params, r.Outputs)
	fmt.Fprintf(w, "parameter bytes:\t%s\n", formatBytes(r.ParamBytes))
	fmt.Fprintf(w, "input bytes:\t%s\n", formatBytes(r.InputBytes))
	fmt.Fprintf(w, "activation bytes:\t%s (all node outputs)\n", formatBytes(r.ActivationBytes))
	fmt.Fprintf(w, "peak memory:\t%s at step %d, node %q (%s); file order, %s memory model, activations only\n", formatBytes(r.PeakBytes), r.PeakStep, r.PeakNode, r.PeakOp, r.MemoryModel)
	w.Flush()
	fmt.Fprintf(io.Out, "\nops:\n")
	ops := sortedKeys(r.Ops)
	slices.SortStableFunc(ops, func(a, b string) int { return r.Ops[b] - r.Ops[a] })
	for _, op := range ops {
		fmt.Fprintf(w, "  %s\t%d\n", op, r.Ops[op])
	}
	w.Flush()
	fmt.Fprintf(io.Out, "\nlargest values live at the peak:\n")
	fmt.Fprintf(w, "  bytes\tvalue\ttype\tproducer\n")
	for _, l := range r.LargestAtPeak {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s (%s), step %d\n", formatBytes(l.Bytes), l.Value, l.Type, l.Producer, l.Op, l.Step)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if r.Costs != nil {
		return printCosts(io.Out, r.Costs)
	}
	return nil
}

// printCosts writes inspect -profile's part: the totals per source, then
// every node.
func printCosts(out io.Writer, c *costReport) error {
	name := c.Profile
	if c.File != "" {
		name += " (" + c.File + ")"
	}
	fmt.Fprintf(out, "\npredicted time on %s: %s per run, the sum of %d node costs", name, formatSeconds(c.PredictedSeconds), len(c.Nodes))
	if c.ConstantNodes > 0 {
		fmt.Fprintf(out, " (%d Constant nodes not costed: ONNX Runtime folds them into initializers)", c.ConstantNodes)
	}
	fmt.Fprintf(out, "\n")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, src := range []string{profiles.SourceMeasured, profiles.SourceFitted, profiles.SourceDatasheet} {
		if t, ok := c.Sources[src]; ok {
			fmt.Fprintf(w, "  %s\t%d nodes\t%s\t%.1f%%\n", src, t.Nodes, formatSeconds(t.Seconds), 100*t.Seconds/max(c.PredictedSeconds, 1e-300))
		}
	}
	w.Flush()
	fmt.Fprintf(out, "\nnode costs:\n")
	fmt.Fprintf(w, "  step\tnode\top\tseconds\tsource\tbound\tFLOPs\tbytes\tnote\n")
	for _, n := range c.Nodes {
		fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\t%s\t%.4g\t%d\t%s\n", n.Step, n.Node, n.Op, formatSeconds(n.Seconds), n.Source, n.Bound, n.FLOPs, n.Bytes, n.Note)
	}
	return w.Flush()
}

// formatBytes prints a byte count exactly and, from 1 KiB on, in binary
// units too: "1572864 (1.50 MiB)".
func formatBytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n)/1024, 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	return fmt.Sprintf("%d (%.2f %s)", n, f, units[u])
}
