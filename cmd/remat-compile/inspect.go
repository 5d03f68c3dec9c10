package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"text/tabwriter"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
)

type inspectOptions struct {
	load   loadOptions
	json   bool
	top    int
	memory string
}

func inspectCmd() *command {
	return &command{
		name:  "inspect",
		usage: "[-input-shape name=DIMS] [-dim sym=N] [-json] model.onnx",
		short: "Print a model's size, op histogram, parameter and activation bytes, and peak memory in its file order.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &inspectOptions{}
			o.load.shapes.register(fs)
			fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
			fs.IntVar(&o.top, "top", 10, "how many of the largest values live at the peak to list")
			fs.StringVar(&o.memory, "memory", "ort", "memory model: ort (views and in-place reuse as ONNX Runtime) or liveness (every output its own buffer)")
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
