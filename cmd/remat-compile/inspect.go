package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
)

type inspectOptions struct {
	load          loadFlags
	json          bool
	top           int
	memory        string
	profile       string
	floor, arena  bool
	floorMaxExtra float64
	ortBlock      string
}

func inspectCmd() *command {
	return &command{
		name:  "inspect",
		usage: "[-input-shape name=DIMS] [-dim sym=N] [-profile NAME|file.yaml] [-floor [-floor-max-extra F] [-ort-block 8|16]] [-arena] [-json] model.onnx|graph.pb|model.json",
		short: "Print a model's size, op histogram, parameter and activation bytes, and peak memory in its file order; with -profile, every node's predicted seconds and where the number comes from (measured, fitted, datasheet).",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &inspectOptions{}
			o.load.register(fs)
			fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
			fs.IntVar(&o.top, "top", 10, "how many of the largest values live at the peak to list")
			fs.StringVar(&o.memory, "memory", "", "memory model: ort (views and in-place reuse as ONNX Runtime; the default for ONNX models), tfjs (what tf.profile counts, in TensorFlow.js's order; the default for TensorFlow graphs) or liveness (every output its own buffer)")
			fs.BoolVar(&o.floor, "floor", false, "also print where the peak cannot go lower: the largest single-node working set (no rematerialization goes below it) and the lowest peak tiling reaches under the memory model, with its regions")
			fs.Float64Var(&o.floorMaxExtra, "floor-max-extra", 0, "with -floor, bound tiling's extra compute to this `fraction` of the model's (0: none)")
			fs.StringVar(&o.ortBlock, "ort-block", "8", "with -floor, ONNX Runtime's NCHWc channel `block` tiling stays exact for: 8 (AVX2 and AVX-512) or 16 (AVX-512 only)")
			fs.BoolVar(&o.arena, "arena", false, "also plan every activation at a static offset in one arena (file order) and print the arena's bytes, the live peak and the fragmentation")
			fs.StringVar(&o.profile, "profile", "", "also cost every node on a device profile: a built-in `name` ("+strings.Join(profiles.Builtins(), ", ")+") or a .yaml file (such as one remat-compile profile wrote)")
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) != 1 {
					return usagef("inspect takes one model file, got %d arguments", len(args))
				}
				return runInspect(ctx, o, args[0], st)
			}
		},
	}
}

func runInspect(ctx context.Context, o *inspectOptions, path string, st *Streams) error {
	if o.memory != "" {
		if _, err := pipeline.LookupTarget(o.memory); err != nil {
			return usagef("-memory %q: want ort, tfjs or liveness", o.memory)
		}
	}
	var err error
	var prof *profiles.Profile
	if o.profile != "" {
		if prof, err = profiles.Load(o.profile); err != nil {
			return err
		}
	}
	lo, err := o.load.options(st, true)
	if err != nil {
		return err
	}
	m, err := pipeline.Load(ctx, path, lo)
	if err != nil {
		return err
	}
	target, err := m.TargetFor(o.memory)
	if err != nil {
		return err
	}
	block, err := pipeline.ParseORTBlock(o.ortBlock)
	if err != nil {
		return err
	}
	r, err := m.Inspect(pipeline.InspectOptions{Target: target, Top: o.top, Profile: prof, Floor: o.floor, FloorMaxExtra: o.floorMaxExtra, ORTBlock: block, Context: ctx, Arena: o.arena})
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(st.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	w := tabwriter.NewWriter(st.Out, 0, 0, 2, ' ', 0)
	if r.Opset > 0 {
		fmt.Fprintf(w, "model:\t%s (graph %q, opset %d)\n", r.Model, r.Graph, r.Opset)
	} else { // a TensorFlow graph
		fmt.Fprintf(w, "model:\t%s (graph %q)\n", r.Model, r.Graph)
	}
	fmt.Fprintf(w, "nodes:\t%d\n", r.Nodes)
	fmt.Fprintf(w, "values:\t%d (%d inputs, %d parameters, %d outputs)\n", r.Values, r.Inputs, r.Params, r.Outputs)
	fmt.Fprintf(w, "parameter bytes:\t%s\n", formatBytes(r.ParamBytes))
	fmt.Fprintf(w, "input bytes:\t%s\n", formatBytes(r.InputBytes))
	fmt.Fprintf(w, "activation bytes:\t%s (all node outputs)\n", formatBytes(r.ActivationBytes))
	fmt.Fprintf(w, "peak memory:\t%s at step %d, node %q (%s); %s, %s memory model, activations only\n", formatBytes(r.PeakBytes), r.PeakStep, r.PeakNode, r.PeakOp, describeOrder(r.MemoryModel), r.MemoryModel)
	if r.Note != "" {
		fmt.Fprintf(w, "note:\t%s\n", r.Note)
	}
	w.Flush()
	fmt.Fprintf(st.Out, "\nops:\n")
	ops := slices.Sorted(maps.Keys(r.Ops))
	slices.SortStableFunc(ops, func(a, b string) int { return r.Ops[b] - r.Ops[a] })
	for _, op := range ops {
		fmt.Fprintf(w, "  %s\t%d\n", op, r.Ops[op])
	}
	w.Flush()
	fmt.Fprintf(st.Out, "\nlargest values live at the peak:\n")
	fmt.Fprintf(w, "  bytes\tvalue\ttype\tproducer\n")
	for _, l := range r.LargestAtPeak {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s (%s), step %d\n", formatBytes(l.Bytes), l.Value, l.Type, l.Producer, l.Op, l.Step)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if a := r.Arena; a != nil {
		fmt.Fprintf(st.Out, "\narena: %s for %d buffers at static offsets (live peak %s, fragmentation %.1f%%%s), %s memory model, file order\n",
			formatBytes(a.ArenaBytes), a.Buffers, formatBytes(a.LivePeakBytes), a.FragmentationPercent, map[bool]string{true: ", optimal", false: ""}[a.Optimal], r.MemoryModel)
	}
	if f := r.Floor; f != nil {
		fmt.Fprintf(st.Out, "\nfloor:\n")
		fmt.Fprintf(w, "  single node\t%s\tnode %s's inputs and outputs (liveness): no rematerialization goes lower\n", formatBytes(f.NodeBytes), f.Node)
		if f.TiledBytes > 0 {
			fmt.Fprintf(w, "  tiled\t%s\tat %s, from %s under the %s memory model, %d region(s)\n", formatBytes(f.TiledBytes), f.TiledNode, formatBytes(f.TargetBytes), r.MemoryModel, len(f.Regions))
			for _, l := range f.Late {
				fmt.Fprintf(w, "    late\t%s (of %s)\trecomputed next to its readers by %d nodes, %+.1f%% compute\n", l.Output, l.Node, len(l.Copies), l.ExtraPercent)
			}
			for _, g := range f.Regions {
				fmt.Fprintf(w, "    region\t%d nodes %s … %s\t%s, halo rows %v, %+.1f%% compute%s\n", len(g.Nodes), g.Nodes[0], g.Nodes[len(g.Nodes)-1], g.Split(), g.Halo, g.ExtraPercent, pooledNote(g.Pooled))
			}
		}
		if f.Note != "" {
			fmt.Fprintf(w, "  note\t%s\n", f.Note)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if r.Costs != nil {
		return printCosts(st.Out, r.Costs)
	}
	return nil
}

// printCosts writes inspect -profile's part: the totals per source, then
// every node.
func printCosts(out io.Writer, c *pipeline.CostReport) error {
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
// units too (remat.FormatBytes): "1572864 (1.50 MiB)".
func formatBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d (%s)", n, remat.FormatBytes(n))
}

// describeOrder names the order inspect simulates under a memory model.
func describeOrder(model string) string {
	if model == "tfjs" {
		return "TensorFlow.js's execution order"
	}
	return "file order"
}
