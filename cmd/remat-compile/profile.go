package main

// The profile command: time every node of models on this machine in ONNX
// Runtime, each node alone, and write a device profile holding the
// measured time of every node signature and a roofline fitted to them
// (profiles/measure.Profile; its package doc says how a node is
// measured).

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/remat-compile/remat/internal/atomicfile"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/pipeline"
	"github.com/remat-compile/remat/profiles"
	"github.com/remat-compile/remat/profiles/measure"
	"github.com/remat-compile/remat/verify"
)

// clockHelp documents -clock of profile and validate-cost.
const clockHelp = "`clock` of the timings: cpu (the CPU time of the thread that runs the session, which with one intra-op thread runs every kernel: the time other processes take the core is left out; Linux only, else wall) or wall"

type profileOptions struct {
	load        loadFlags
	out         string
	repeat      int
	warmup      int
	base        string
	name        string
	seed        uint64
	level       string
	inputValues listFlag
	train       bool
	loss        string
	clock       string
	caches      string
}

func profileCmd() *command {
	return &command{
		name:  "profile",
		usage: "-o device.profile.yaml [-repeat N] [-warmup N] [-base NAME|file.yaml] [-name NAME] [-level disabled] [-train [-loss sum]] [-input-shape name=DIMS] [-input-value name=INT] [-seed S] [-caches L2,L3] MODEL...",
		short: "Time every node of models (MODEL = model.onnx, " + pipeline.ZooHelp + " or manifest:FILE.tsv) alone in ONNX Runtime on this machine and write a device profile: per-signature measured seconds and a roofline fitted to them.",
		setup: func(fs *flag.FlagSet) func(context.Context, []string, *Streams) error {
			o := &profileOptions{}
			o.load.register(fs)
			fs.StringVar(&o.out, "o", "", "output profile `file` (.yaml; required)")
			fs.IntVar(&o.repeat, "repeat", measure.DefaultRepeat, "timed runs of each node, `N`; the median counts")
			fs.IntVar(&o.warmup, "warmup", 3, "untimed runs of each node before the timed ones, `N`")
			fs.StringVar(&o.base, "base", measure.DefaultBase, "profile whose device (datasheet) section the output keeps, and whose measured entries it keeps where this run measures nothing: a built-in `name` ("+strings.Join(profiles.Builtins(), ", ")+") or a .yaml file")
			fs.StringVar(&o.name, "name", "", "device `name` of the written profile (default: the base's)")
			fs.Uint64Var(&o.seed, "seed", 1, "`seed` of the random inputs")
			fs.StringVar(&o.level, "level", "disabled", "ONNX Runtime graph optimization `level` of the sessions: disabled, basic, extended, layout or all")
			fs.Var(&o.inputValues, "input-value", "`name=INT`: fill a graph input with this value instead of random ones, e.g. a sample rate (repeatable)")
			fs.BoolVar(&o.train, "train", false, "profile the models' training graphs (passes/autodiff, as compile -train builds them) instead of their inference graphs")
			fs.StringVar(&o.loss, "loss", "sum", "with -train, the `loss` (as for compile)")
			fs.StringVar(&o.clock, "clock", ort.ClockCPU, clockHelp)
			fs.StringVar(&o.caches, "caches", "", "`L2,L3` cache sizes that decide which inputs a node reads cold, e.g. 2M,32M (default: this machine's, from "+measure.SysfsCacheDir+")")
			return func(ctx context.Context, args []string, st *Streams) error {
				if len(args) == 0 {
					return usagef("profile needs at least one MODEL: a model file, zoo:NAME or manifest:FILE")
				}
				if o.out == "" {
					return usagef("profile needs -o device.profile.yaml")
				}
				return runProfile(ctx, o, args, st)
			}
		},
	}
}

func runProfile(ctx context.Context, o *profileOptions, args []string, st *Streams) error {
	if o.repeat < 1 {
		return usagef("-repeat %d: want at least 1", o.repeat)
	}
	if ext := strings.ToLower(filepath.Ext(o.out)); ext != ".yaml" && ext != ".yml" {
		return usagef("-o %q: a profile file must end in .yaml or .yml (that is how -profile tells a file from a built-in name)", o.out)
	}
	mo := measure.ProfileOptions{Repeat: o.repeat, Warmup: o.warmup, Name: o.name, Seed: o.seed, Level: o.level, Clock: o.clock}
	var err error
	if mo.InputValues, err = parseInputValues(o.inputValues); err != nil {
		return err
	}
	if o.train {
		loss, err := autodiff.ParseLoss(o.loss)
		if err != nil {
			return usagef("-loss %q: %v", o.loss, err)
		}
		mo.Train = &autodiff.Options{Loss: loss}
	} else if o.loss != "sum" {
		return usagef("-loss applies to training graphs: add -train")
	}
	if o.caches != "" {
		l2, l3, ok := strings.Cut(o.caches, ",")
		var err2, err3 error
		mo.Caches.L2Bytes, err2 = measure.ParseCacheSize(l2)
		mo.Caches.L3Bytes, err3 = measure.ParseCacheSize(l3)
		if !ok || err2 != nil || err3 != nil {
			return usagef("-caches %q: want the L2 and L3 sizes such as 2M,32M", o.caches)
		}
		mo.Caches.Source = "given by -caches"
	}
	specs, err := pipeline.ParseModelArgs(args)
	if err != nil {
		return err
	}
	if mo.Load, err = o.load.options(st, true); err != nil {
		return err
	}
	for _, s := range specs {
		if pipeline.SamePath(o.out, s.Source) {
			return fmt.Errorf("refusing to overwrite the input model %s: write the profile to another path", s.Source)
		}
	}
	if mo.Base, err = profiles.Load(o.base); err != nil {
		return err
	}
	var bar *progressBar
	mo.Progress = func(p measure.Progress) {
		if bar == nil {
			bar = newProgressBar(st, "profile", p.Total)
		}
		note := ""
		if p.Op != "" {
			note = p.Op + " " + shapeSummary(p.Shapes)
		}
		bar.update(p.Done, note)
	}
	run, err := measure.Profile(ctx, specs, mo)
	if bar != nil {
		bar.done()
	}
	if err != nil {
		return err
	}
	data, err := run.Profile.Marshal()
	if err != nil {
		return fmt.Errorf("profile: internal error: the measured profile does not validate: %w", err)
	}
	if err := atomicfile.Write(o.out, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return err
	}
	return printProfile(st.Out, o, run)
}

// shapeSummary writes input shapes as [1,3,224,224] [64,3,7,7].
func shapeSummary(inputs [][]int64) string {
	var parts []string
	for _, s := range inputs {
		if s == nil {
			parts = append(parts, "-")
			continue
		}
		parts = append(parts, verify.FormatShape(s))
	}
	return strings.Join(parts, " ")
}

func printProfile(w io.Writer, o *profileOptions, run *measure.ProfileRun) error {
	p := run.Profile
	fmt.Fprintf(w, "profile: wrote %s (device %s, %d measured entries)\n", o.out, p.Device.Name, len(p.Measured))
	for _, m := range run.Models {
		fmt.Fprintf(w, "model: %s (%s graph, %d nodes)\n", m.Name, m.Kind, m.Nodes)
	}
	for _, s := range run.LeftOut {
		fmt.Fprintf(w, "left out: %s\n", s)
	}
	fmt.Fprintf(w, "measured: %d signatures covering %d of %d nodes (subgraph bodies included), ONNX Runtime level %s, median of %d runs after %d warm-ups, less a run overhead of %s\n",
		run.Signatures, run.MeasuredNodes, run.Nodes, run.Level, run.Repeat, run.Warmup, formatSeconds(run.Overhead.Seconds()))
	fmt.Fprintf(w, "caches: %s\n", run.Caches)
	if len(run.Skipped) > 0 {
		fmt.Fprintf(w, "not measured:\n")
		for _, s := range run.Skipped {
			fmt.Fprintf(w, "  %4d nodes: %s (e.g. %s)\n", s.Nodes, s.Reason, s.Example)
		}
	}
	if run.BaseKept+run.BaseReplaced > 0 {
		fmt.Fprintf(w, "base: %d measured entries of %s kept, %d measured again\n", run.BaseKept, o.base, run.BaseReplaced)
	}
	if f := run.Fit; f != nil {
		fmt.Fprintf(w, "fitted roofline: %s FLOP/s, %s B/s, %s per node (%d compute-bound, %d memory-bound signatures; |error| median %.0f%%, rms %.0f%%)\n",
			siRate(f.Fitted.FLOPsPerSecond), siRate(f.Fitted.BytesPerSecond), formatSeconds(f.Fitted.OverheadSeconds),
			f.ComputeBound, f.MemoryBound, 100*f.MedianRelError, 100*f.RMSRelError)
		if len(f.Fallback) > 0 {
			fmt.Fprintf(w, "  no measured node determined %s: the datasheet's is kept\n", strings.Join(f.Fallback, " and "))
		}
	}
	return nil
}

// siRate writes a rate with an SI prefix: 12.3G.
func siRate(x float64) string {
	for _, u := range []struct {
		f float64
		p string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if x >= u.f {
			return fmt.Sprintf("%.3g%s", x/u.f, u.p)
		}
	}
	return fmt.Sprintf("%.3g", x)
}

// progressBar draws "label [#####.....] 12/40 ETA 1m05s note" on
// stderr, rewritten in place, only when stderr is a terminal. The
// estimate of the time left assumes the remaining items take as long as
// the done ones did on average.
type progressBar struct {
	w     io.Writer
	on    bool
	label string
	total int
	start time.Time
	last  time.Time
	drawn bool
}

func newProgressBar(st *Streams, label string, total int) *progressBar {
	return &progressBar{w: st.Err, on: st.ErrTTY && total > 0, label: label, total: total, start: time.Now()}
}

// eta estimates the time left after done of total items took elapsed:
// "ETA 1m05s", or "" before the first item is done.
func eta(elapsed time.Duration, done, total int) string {
	if done <= 0 || done >= total {
		return ""
	}
	left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
	return "ETA " + left.Round(time.Second).String()
}

func (b *progressBar) update(done int, note string) {
	if !b.on {
		return
	}
	now := time.Now()
	if b.drawn && done < b.total && now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last, b.drawn = now, true
	const width = 30
	fill := width * done / b.total
	if e := eta(now.Sub(b.start), done, b.total); e != "" {
		note = e + " " + note
	}
	line := fmt.Sprintf("%s [%s%s] %d/%d %s", b.label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, b.total, note)
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	fmt.Fprintf(b.w, "\r\033[K%s", line)
}

func (b *progressBar) done() {
	if b.on && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
	b.drawn = false
}
