package twremat

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
	"github.com/remat-compile/remat/passes/remat/synth"
)

var tableMaxLength = flag.Int64("twremat.maxlen", DefaultMaxLength, "MaxLength of the runs TestTradeoffTable prints")

func TestConformance(t *testing.T) {
	solvertest.Run(t, Solver, solvertest.Options{})
}

// TWRemat(k) alone is not budget-aware: it may fail where the plain
// schedule fits.
func TestConformanceFixedK(t *testing.T) {
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			solvertest.Run(t, New(k), solvertest.Options{MayFail: true})
		})
	}
}

func TestInvalidK(t *testing.T) {
	for _, s := range []remat.Solver{New(0), New(-2), NewWith(Options{K: -1})} {
		if _, err := s.Solve(context.Background(), solvertest.Chain(4), nil); err == nil {
			t.Errorf("%s: no error", s.Name)
		}
	}
}

// sigma runs TWRemat(k) and returns Algorithm 1's schedule σ itself.
func sigma(t *testing.T, pr *Prepared, k int) []int32 {
	t.Helper()
	var sig []int32
	p := pr.p
	r := &runner{
		ctx: context.Background(), p: p, h: pr.h, k: int32(k), limit: math.MaxInt64,
		pinned: make([]bool, p.N()), mark: make([]uint32, p.N()), conv: newConverter(p), sigma: &sig,
	}
	if p.N() > 0 && len(p.Outputs) > 0 {
		if err := r.tw(0, p.Outputs); err != nil {
			t.Fatal(err)
		}
	}
	return sig
}

// sigmaPeak is Kumar et al.'s M(σ) (§2.1) with the graph outputs kept to
// the end: each computation's value lives from that step to the last
// step that reads it before the node is computed again.
func sigmaPeak(p *remat.Problem, seq []int32) int64 {
	cur := make([]int, p.N()) // the step of each node's latest computation
	for i := range cur {
		cur[i] = -1
	}
	lastUse := make([]int, len(seq))
	for s, x := range seq {
		for _, d := range p.Deps[x] {
			lastUse[cur[d]] = s
		}
		cur[x] = s
		lastUse[s] = s
	}
	for _, o := range p.Outputs {
		if cur[o] >= 0 {
			lastUse[cur[o]] = len(seq)
		}
	}
	delta := make([]int64, len(seq)+2)
	for s, x := range seq {
		delta[s] += p.Bytes[x]
		delta[lastUse[s]+1] -= p.Bytes[x]
	}
	var m, peak int64
	for s := range seq {
		m += delta[s]
		peak = max(peak, m)
	}
	return peak + p.ConstBytes
}

// Lemma 4: σ is a valid schedule for every cut-off: each node is computed
// after all of its inputs, every output is computed, a node that may not
// be recomputed is computed at most once. And Theorem 5's memory bound,
// from its charging argument, holds for Algorithm 1 (k = 1): M(σ) is at
// most depth·((w+1)·M_max + M_in), plus, outside the argument, the
// outputs (the paper has one final node) and the nodes that may not be
// recomputed (kept from their one computation).
func TestScheduleValidAndBounded(t *testing.T) {
	for name, p := range graphs(t) {
		pr, err := Prepare(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range pr.Cutoffs() {
			seq := sigma(t, pr, k)
			done := make([]int, p.N())
			for s, x := range seq {
				for _, d := range p.Deps[x] {
					if done[d] == 0 {
						t.Fatalf("%s, k=%d: step %d computes %d before its input %d", name, k, s, x, d)
					}
				}
				done[x]++
				if done[x] > 1 && !p.Recomputable[x] {
					t.Fatalf("%s, k=%d: node %d, not recomputable, computed again", name, k, x)
				}
			}
			for _, o := range p.Outputs {
				if done[o] == 0 {
					t.Fatalf("%s, k=%d: output %d never computed", name, k, o)
				}
			}
			if k != 1 {
				continue
			}
			var mMax, mIn, extra int64
			for i := range p.N() {
				mMax = max(mMax, p.Bytes[i])
				var in int64
				for _, d := range p.Deps[i] {
					in += p.Bytes[d]
				}
				mIn = max(mIn, in)
				if !p.Recomputable[i] {
					extra += p.Bytes[i]
				}
			}
			for _, o := range p.Outputs {
				extra += p.Bytes[o]
			}
			bound := int64(pr.Depth())*(int64(pr.Width()+1)*mMax+mIn) + extra + p.ConstBytes
			if got := sigmaPeak(p, seq); got > bound {
				t.Errorf("%s: M(σ) = %d, above Theorem 5's bound %d (depth %d, width %d)", name, got, bound, pr.Depth(), pr.Width())
			}
		}
	}
}

// On an inference chain every value is read once, right after it is
// computed: Algorithm 1 recomputes nothing at any cut-off, and the plan
// peaks at two values, as the plain schedule does.
func TestChain(t *testing.T) {
	p := solvertest.Chain(200)
	pr, err := Prepare(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range pr.Cutoffs() {
		_, res, length, err := pr.Run(context.Background(), k, 0)
		if err != nil {
			t.Fatal(err)
		}
		if length != 200 || res.Recomputations != 0 || res.PeakBytes != 2 {
			t.Errorf("k=%d: σ of %d, %d recomputations, peak %d; want 200, 0, 2", k, length, res.Recomputations, res.PeakBytes)
		}
	}
}

// On Checkmate's linear training graph of L = 2^j layers (a chain and its
// backward pass, unit sizes, n = 2L+1), full recursion peaks at exactly
// log₂ L + 2 values, against L + 2 for the plain schedule: the O(log n)
// memory of Theorem 5 at width 2. Its length stays within n·log₂ n, the
// O(n log n) of recursive checkpointing on chains (§6).
func TestLinearNetworkLogarithmicPeak(t *testing.T) {
	for j := 2; j <= 9; j++ {
		layers := 1 << j
		p := solvertest.LinearNetwork(layers)
		pr, err := Prepare(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		plan, res, _, err := pr.Run(context.Background(), 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := p.N()
		length := len(plan.Sequence())
		t.Logf("L=%d (n=%d): peak %d, plain %d, length %.2f·n", layers, n, res.PeakBytes, layers+2, float64(length)/float64(n))
		if want := int64(j + 2); res.PeakBytes != want {
			t.Errorf("L=%d: full recursion peaks at %d; want log₂ L + 2 = %d", layers, res.PeakBytes, want)
		}
		if limit := n * bits.Len(uint(n)); length > limit {
			t.Errorf("L=%d: length %d, above n·⌈log₂ n⌉ = %d", layers, length, limit)
		}
	}
}

// builder assembles a problem node by node (unit costs).
type builder struct{ p remat.Problem }

func (b *builder) add(bytes int64, deps ...int32) int32 {
	d := slices.Clone(deps)
	slices.Sort(d)
	d = slices.Compact(d)
	if d == nil {
		d = []int32{}
	}
	b.p.Deps = append(b.p.Deps, d)
	b.p.Seconds = append(b.p.Seconds, 1)
	b.p.Bytes = append(b.p.Bytes, bytes)
	b.p.Recomputable = append(b.p.Recomputable, true)
	return int32(len(b.p.Deps) - 1)
}

// training is a forward problem followed by its backward pass, as
// reverse-mode differentiation builds it: for each forward node, last
// first, a gradient reading the gradients of its readers and the forward
// values it read. The outputs are the gradients of the sources.
func training(fwd *remat.Problem) *remat.Problem {
	b := &builder{}
	n := fwd.N()
	for i := range n {
		b.add(fwd.Bytes[i], fwd.Deps[i]...)
	}
	loss := b.add(1, fwd.Outputs...)
	readers := make([][]int32, n)
	for i, ds := range fwd.Deps {
		for _, d := range ds {
			readers[d] = append(readers[d], int32(i))
		}
	}
	grad := make([]int32, n)
	var outs []int32
	for i := n - 1; i >= 0; i-- {
		var deps []int32
		for _, j := range readers[i] {
			deps = append(deps, grad[j])
		}
		if slices.Contains(fwd.Outputs, int32(i)) {
			deps = append(deps, loss)
		}
		grad[i] = b.add(fwd.Bytes[i], append(deps, fwd.Deps[i]...)...)
		if len(fwd.Deps[i]) == 0 {
			outs = append(outs, grad[i])
		}
	}
	slices.Sort(outs)
	b.p.Outputs = outs
	b.p.BudgetBytes = remat.NoBudget
	return &b.p
}

// resnet is an inference residual network of blocks of two layers and a
// skip: x' = x + f(g(x)), unit sizes.
func resnet(blocks int) *remat.Problem {
	b := &builder{}
	x := b.add(1)
	for range blocks {
		a := b.add(1, x)
		c := b.add(1, a)
		x = b.add(1, c, x)
	}
	b.p.Outputs = []int32{x}
	b.p.BudgetBytes = remat.NoBudget
	return &b.p
}

// On training graphs of small width, deeper recursion never raises the
// peak: along the cut-offs, from the plain schedule to Algorithm 1, each
// plan peaks at most as high as the one before, and full recursion ends
// well below the plain schedule.
func TestPeaksFallWithDepth(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *remat.Problem
	}{
		{"linear-100", solvertest.LinearNetwork(100)},
		{"linear-37", solvertest.LinearNetwork(37)},
		{"resnet-32-training", training(resnet(32))},
	} {
		pr, err := Prepare(context.Background(), c.p)
		if err != nil {
			t.Fatal(err)
		}
		var peaks []int64
		prev := int64(math.MaxInt64)
		for _, k := range pr.Cutoffs() {
			_, res, _, err := pr.Run(context.Background(), k, 0)
			if err != nil {
				t.Fatal(err)
			}
			peaks = append(peaks, res.PeakBytes)
			if res.PeakBytes > prev {
				t.Errorf("%s: TWRemat(%d) peaks at %d, above %d at the shallower cut-off", c.name, k, res.PeakBytes, prev)
			}
			prev = res.PeakBytes
		}
		t.Logf("%s (width %d): peaks %v", c.name, pr.Width(), peaks)
		if 3*peaks[len(peaks)-1] > peaks[0] {
			t.Errorf("%s: full recursion peaks at %d, not below a third of the plain schedule's %d", c.name, peaks[len(peaks)-1], peaks[0])
		}
	}
}

// On synth's random layered DAGs the min-fill width is large (21 and 53
// at 100 and 250 nodes), a separator holds more bytes than the plain
// schedule's peak, and no cut-off below the plain schedule peaks lower
// than it (the package doc): the peaks are logged, not required to fall.
// What must hold is that the sweep, which starts from the plain schedule,
// never reports more than the plain schedule's peak, and returns the plain
// schedule as optimal when it fits.
func TestSynthLayered(t *testing.T) {
	for _, c := range [][2]int{{100, 236}, {250, 944}} {
		p, err := synth.Layered(1, c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		pr, err := Prepare(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		var peaks []int64
		for _, k := range sweep(pr.Cutoffs()) {
			_, res, _, err := pr.Run(context.Background(), k, 0)
			if err != nil {
				t.Fatal(err)
			}
			peaks = append(peaks, res.PeakBytes)
		}
		t.Logf("n=%d (width %d): peaks from the plain schedule to full recursion %v", c[0], pr.Width(), peaks)
		plain := peaks[0]
		q := *p
		q.BudgetBytes = plain
		plan, err := Solver.Solve(context.Background(), &q, nil)
		if err != nil || !plan.Optimal || len(plan.Sequence()) != p.N() {
			t.Errorf("n=%d at the plain schedule's peak: %v; want the plain schedule, optimal", c[0], err)
		}
		q.BudgetBytes = plain * 3 / 4
		plan, err = Solver.Solve(context.Background(), &q, nil)
		var be *remat.BudgetError
		switch {
		case err == nil:
			if _, err := remat.Check(&q, plan); err != nil {
				t.Error(err)
			}
		case errors.As(err, &be):
			if be.NeedBytes > plain || be.NeedBytes != slices.Min(peaks) {
				t.Errorf("n=%d: BudgetError of %d bytes; the least peak of the sweep is %d, the plain schedule's %d", c[0], be.NeedBytes, slices.Min(peaks), plain)
			}
		default:
			t.Errorf("n=%d: %v", c[0], err)
		}
	}
}

// The default solver returns the cheapest plan within the budget among
// the cut-offs it sweeps: as the budget falls from the plain schedule's
// peak, the cost never falls, every plan fits, and below the least peak
// of the sweep it reports that peak.
func TestSolverBudgets(t *testing.T) {
	p := solvertest.LinearNetwork(60)
	pr, err := Prepare(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	least := int64(math.MaxInt64)
	for _, k := range sweep(pr.Cutoffs()) {
		_, res, _, err := pr.Run(context.Background(), k, 0)
		if err != nil {
			t.Fatal(err)
		}
		least = min(least, res.PeakBytes)
	}
	prevCost := 0.0
	for b := int64(62); b >= least; b-- {
		q := *p
		q.BudgetBytes = b
		plan, err := Solver.Solve(context.Background(), &q, nil)
		if err != nil {
			t.Fatalf("budget %d: %v", b, err)
		}
		res, err := remat.Check(&q, plan)
		if err != nil {
			t.Fatalf("budget %d: %v", b, err)
		}
		if res.TotalSeconds < prevCost {
			t.Errorf("budget %d: cost %v, below %v at a larger budget", b, res.TotalSeconds, prevCost)
		}
		prevCost = res.TotalSeconds
	}
	q := *p
	q.BudgetBytes = least - 1
	_, err = Solver.Solve(context.Background(), &q, nil)
	var be *remat.BudgetError
	if !errors.As(err, &be) || be.NeedBytes != least || be.Plan == nil {
		t.Errorf("budget %d: %v; want a *remat.BudgetError of %d bytes with its plan", least-1, err, least)
	}
}

// The same problem gives the same plan twice.
func TestDeterministic(t *testing.T) {
	p, err := synth.Layered(2, 100, 236)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []remat.Solver{Solver, New(1), New(5)} {
		a, errA := s.Solve(context.Background(), p, nil)
		b, errB := s.Solve(context.Background(), p, nil)
		if (errA == nil) != (errB == nil) || errA == nil && !slices.Equal(a.Sequence(), b.Sequence()) {
			t.Errorf("%s: two solves differ", s.Name)
		}
	}
}

// A deadline that has passed stops the solver promptly, with a plan that
// passes Check or the context's error.
func TestDeadline(t *testing.T) {
	p, err := synth.Layered(1, 1000, 5875)
	if err != nil {
		t.Fatal(err)
	}
	p.BudgetBytes = 60000
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	start := time.Now()
	plan, err := Solver.Solve(ctx, p, nil)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Solve took %v past its deadline", d)
	}
	switch {
	case err == nil:
		if _, err := remat.Check(p, plan); err != nil {
			t.Error(err)
		}
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("%v; want a plan or the context's error", err)
	}
}

// The sweep stops at the first run whose σ is over MaxLength, and keeps
// what it found before.
func TestMaxLength(t *testing.T) {
	p := solvertest.LinearNetwork(64)
	p.BudgetBytes = 40 // the plain schedule peaks at 66
	var notes []string
	plan, err := NewWith(Options{MaxLength: 200}).Solve(context.Background(), p, func(pr remat.Progress) { notes = append(notes, pr.Note) })
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Check(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Sequence()) > 200 {
		t.Errorf("plan of %d computations under MaxLength 200", len(plan.Sequence()))
	}
	if last := notes[len(notes)-1]; !strings.Contains(last, "exceeds 200 computations") {
		t.Errorf("last progress note %q; want the length limit", last)
	}
	t.Logf("peak %d, %d computations; %q", res.PeakBytes, len(plan.Sequence()), notes[len(notes)-1])
}

// outOfOrder counts the first computations in seq of a node numbered
// below one computed for the first time before it.
func outOfOrder(n int, seq []int32) int {
	seen := make([]bool, n)
	top, count := int32(-1), 0
	for _, x := range seq {
		if seen[x] {
			continue
		}
		seen[x] = true
		if x < top {
			count++
		}
		top = max(top, x)
	}
	return count
}

// TestTradeoffTable prints, for synth.Layered(1, 1000, 5875), a 200-node
// chain and Checkmate's linear training graph of 100 layers (201 nodes),
// the peak and the schedule length of TWRemat(k) across the cut-offs k:
// Algorithm 1's σ (its length and its own peak M(σ) of §2.1) and the
// frontier-advancing plan made from it (its computations and the peak
// remat.Evaluate measures), with the number of σ's first computations
// that leave the index order (see the package doc). Runs stop at the first σ over
// -twremat.maxlen computations.
func TestTradeoffTable(t *testing.T) {
	if testing.Short() {
		t.Skip("prints a table; slow")
	}
	layered, err := synth.Layered(1, 1000, 5875)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    *remat.Problem
	}{
		{"synth.Layered(1, 1000, 5875)", layered},
		{"solvertest.Chain(200)", solvertest.Chain(200)},
		{"solvertest.LinearNetwork(100)", solvertest.LinearNetwork(100)},
	} {
		start := time.Now()
		pr, err := Prepare(context.Background(), c.p)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(c.p.N())
		t.Logf("%s: n = %d, min-fill width %d, %d bags after Lemma 1, %d levels, decomposition in %v",
			c.name, c.p.N(), pr.Width(), pr.Bags(), pr.Depth(), time.Since(start).Round(time.Millisecond))
		t.Logf("  %8s %12s %10s %12s %12s %10s %10s %8s", "k", "σ/n", "M(σ)", "out-of-order", "plan/n", "peak", "peak/plain", "time")
		var plain int64
		for _, k := range pr.Cutoffs() {
			start := time.Now()
			plan, res, length, err := pr.Run(context.Background(), k, *tableMaxLength)
			if errors.Is(err, errTooLong) {
				t.Logf("  %8d σ over %d computations: stop", k, *tableMaxLength)
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if plain == 0 {
				plain = res.PeakBytes
			}
			took := time.Since(start).Round(time.Millisecond)
			seq := sigma(t, pr, k)
			t.Logf("  %8d %12.2f %10d %12d %12.2f %10d %10.3f %8v", k, float64(length)/n, sigmaPeak(c.p, seq), outOfOrder(c.p.N(), seq),
				float64(len(plan.Sequence()))/n, res.PeakBytes, float64(res.PeakBytes)/float64(plain), took)
		}
	}
}
