package heuristic

// Test graphs and checks every heuristic family is held to, so that they
// meet the same checks and their benchmarks measure the same problems.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/remat/solvertest"
)

// withBudget returns a copy of p with budget b.
func withBudget(p *remat.Problem, b int64) *remat.Problem {
	q := *p
	q.BudgetBytes = b
	return &q
}

// checkpointAllPeak is the peak of computing every node once, in order.
func checkpointAllPeak(t testing.TB, p *remat.Problem) int64 {
	t.Helper()
	stages := make([][]int32, p.N())
	for i := range stages {
		stages[i] = []int32{int32(i)}
	}
	plan, err := remat.ScheduleStages(p, stages)
	if err != nil {
		t.Fatal(err)
	}
	res, err := remat.Evaluate(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	return res.PeakBytes
}

// outcome is a checked result of Solve: a plan that passes Check, or a
// *remat.BudgetError whose plan is legal and peaks at NeedBytes, above
// the budget.
type outcome struct {
	plan  *remat.Plan
	res   remat.CheckResult // of plan, or of the BudgetError's plan
	over  *remat.BudgetError
	notes []string
}

// solveChecked solves p with s and fails the test unless the outcome is
// one of the two that a heuristic may give (see outcome).
func solveChecked(t testing.TB, s remat.Solver, p *remat.Problem) outcome {
	t.Helper()
	var notes []string
	plan, err := s.Solve(context.Background(), p, func(pr remat.Progress) { notes = append(notes, pr.Note) })
	o := checkOutcome(t, s, p, plan, err)
	o.notes = notes
	return o
}

// checkOutcome checks what Solve returned (see outcome).
func checkOutcome(t testing.TB, s remat.Solver, p *remat.Problem, plan *remat.Plan, err error) outcome {
	t.Helper()
	var o outcome
	switch {
	case err == nil:
		res, err := remat.Check(p, plan)
		if err != nil {
			t.Fatalf("%s: the plan fails Check: %v", s.Name, err)
		}
		if plan.Solver != s.Name {
			t.Errorf("%s: plan.Solver = %q", s.Name, plan.Solver)
		}
		o.plan, o.res = plan, res
	case errors.As(err, &o.over):
		if o.over.Plan == nil {
			t.Fatalf("%s: BudgetError without a plan: %v", s.Name, err)
		}
		res, err := remat.Evaluate(p, o.over.Plan)
		if err != nil {
			t.Fatalf("%s: the BudgetError's plan is illegal: %v", s.Name, err)
		}
		if res.PeakBytes != o.over.NeedBytes || o.over.NeedBytes <= p.BudgetBytes || o.over.HaveBytes != p.BudgetBytes {
			t.Fatalf("%s: BudgetError{Need %d, Have %d} for a plan peaking at %d under a budget of %d", s.Name, o.over.NeedBytes, o.over.HaveBytes, res.PeakBytes, p.BudgetBytes)
		}
		o.res = res
	default:
		t.Fatalf("%s: %v", s.Name, err)
	}
	return o
}

// checkAgainstBruteForce solves p at every budget from the least peak of
// any plan to checkpoint-all's: every plan passes Check and costs no less
// than the optimum, and no BudgetError is claimed where checkpoint-all
// fits unless mayFail. It logs the costs for comparison.
func checkAgainstBruteForce(t *testing.T, s remat.Solver, p *remat.Problem, mayFail bool) {
	t.Helper()
	var least int64
	var be *remat.BudgetError
	if _, err := solvertest.BruteForce(withBudget(p, 0)); !errors.As(err, &be) {
		t.Fatalf("brute force at budget 0: %v", err)
	}
	least = be.NeedBytes
	ca := checkpointAllPeak(t, p)
	for b := least; b <= ca; b++ {
		q := withBudget(p, b)
		opt, err := bruteForceCached(q)
		if err != nil {
			t.Fatalf("brute force at %d: %v", b, err)
		}
		o := solveChecked(t, s, q)
		switch {
		case o.plan != nil && o.res.TotalSeconds < opt.Cost(q)-1e-9:
			t.Errorf("budget %d: %s costs %v, below the optimum %v", b, s.Name, o.res.TotalSeconds, opt.Cost(q))
		case o.plan != nil:
			t.Logf("budget %d: %s costs %v (peak %d), the optimum %v", b, s.Name, o.res.TotalSeconds, o.res.PeakBytes, opt.Cost(q))
		case b >= ca && !mayFail:
			t.Errorf("budget %d: %s found no plan, but checkpoint-all fits", b, s.Name)
		default:
			t.Logf("budget %d: %s found no plan (least peak %d), the optimum %v", b, s.Name, o.over.NeedBytes, opt.Cost(q))
		}
	}
}

// bruteForceCache holds solvertest.BruteForce's optimal plans by problem
// and budget: several solvers' tests compare against the same optima, and
// the exhaustive search takes minutes at the larger budgets of the 17-node
// linear network.
var bruteForceCache sync.Map

func bruteForceCached(p *remat.Problem) (*remat.Plan, error) {
	key := fmt.Sprint(p.Deps, p.Seconds, p.Bytes, p.Recomputable, p.Outputs, p.ConstBytes, p.Parts, p.Reads, p.BudgetBytes)
	if v, ok := bruteForceCache.Load(key); ok {
		return v.(*remat.Plan), nil
	}
	plan, err := solvertest.BruteForce(p)
	if err == nil {
		bruteForceCache.Store(key, plan)
	}
	return plan, err
}

// checkDeadline solves a 250-node problem under a context that has
// already expired (a 1 ns timeout): Solve returns promptly, with a plan
// that passes Check or with the context's error.
func checkDeadline(t *testing.T, s remat.Solver) {
	t.Helper()
	for _, p := range []*remat.Problem{layeredDAG(1, 250), training(layeredDAG(1, 124))} {
		q := withBudget(p, checkpointAllPeak(t, p)*3/4)
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		start := time.Now()
		plan, err := s.Solve(ctx, q, nil)
		d := time.Since(start)
		cancel()
		if d > time.Second {
			t.Errorf("%s: with a 1 ns deadline Solve took %v", s.Name, d)
		}
		switch {
		case err == nil:
			if _, err := remat.Check(q, plan); err != nil {
				t.Errorf("%s: with a 1 ns deadline the plan fails Check: %v", s.Name, err)
			}
		case !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("%s: with a 1 ns deadline: %v; want a plan or the context's error", s.Name, err)
		}
	}
}

// checkCancelMidway cancels the context from the progress callback at the
// first report: Solve stops there and returns the best plan so far if it
// fits the budget (with Optimal only when it computes nothing twice), the
// context's error if the search was cut short without one, or a
// *remat.BudgetError if the search had already ended.
func checkCancelMidway(t *testing.T, s remat.Solver) {
	t.Helper()
	p := training(layeredDAG(1, 124))
	for _, b := range []int64{remat.NoBudget, checkpointAllPeak(t, p) * 3 / 4} {
		q := withBudget(p, b)
		ctx, cancel := context.WithCancel(context.Background())
		reports := 0
		plan, err := s.Solve(ctx, q, func(remat.Progress) {
			reports++
			cancel()
		})
		cancel()
		if reports != 1 {
			t.Errorf("%s, budget %d: %d progress reports after cancelling at the first", s.Name, b, reports)
		}
		var be *remat.BudgetError
		switch {
		case err == nil:
			res, err := remat.Check(q, plan)
			if err != nil {
				t.Fatalf("%s, budget %d: cancelled midway, the plan fails Check: %v", s.Name, b, err)
			}
			if plan.Optimal != (res.Recomputations == 0) {
				t.Errorf("%s, budget %d: Optimal %v with %d recomputations", s.Name, b, plan.Optimal, res.Recomputations)
			}
		case errors.Is(err, context.Canceled), errors.As(err, &be):
		default:
			t.Errorf("%s, budget %d: cancelled midway: %v", s.Name, b, err)
		}
	}
}

// checkTiny solves problems of zero, one and two nodes.
func checkTiny(t *testing.T, s remat.Solver) {
	t.Helper()
	for n := range 3 {
		p := solvertest.Chain(n)
		if n == 0 {
			p.Outputs = nil
		}
		o := solveChecked(t, s, p)
		if o.plan == nil {
			t.Errorf("%s: no plan for a chain of %d nodes without a budget", s.Name, n)
		}
	}
}

// recomputed returns the nodes a plan computes more than once.
func recomputed(plan *remat.Plan) map[int32]int {
	count := map[int32]int{}
	for _, i := range plan.Sequence() {
		count[i]++
	}
	out := map[int32]int{}
	for i, c := range count {
		if c > 1 {
			out[i] = c - 1
		}
	}
	return out
}

// checkSqrtNLinearNetwork checks a √n solver on Checkmate's linear
// training graph of L layers (unit costs and sizes): the plan keeps about
// √L checkpoints, peaks at about 2√L values and
// recomputes each forward node at most once: at most one extra forward
// pass (Chen et al. §4.1).
func checkSqrtNLinearNetwork(t *testing.T, s remat.Solver) {
	t.Helper()
	for _, layers := range []int{16, 100, 400} {
		p := solvertest.LinearNetwork(layers)
		o := solveChecked(t, s, p)
		root := math.Sqrt(float64(layers))
		rc := recomputed(o.plan)
		checkpoints := 0
		for i := range layers {
			if rc[int32(i)] == 0 {
				checkpoints++
			}
			if rc[int32(i)] > 1 {
				t.Errorf("L=%d: forward node %d recomputed %d times", layers, i, rc[int32(i)])
			}
		}
		for i := layers; i < p.N(); i++ {
			if rc[int32(i)] > 0 {
				t.Errorf("L=%d: node %s recomputed", layers, p.Name(i))
			}
		}
		extra := o.res.TotalSeconds - p.LowerBoundSeconds()
		t.Logf("%s, L=%d: %d checkpoints, peak %d values, %v extra forward steps, checkpoint-all peaks at %d",
			s.Name, layers, checkpoints, o.res.PeakBytes, extra, checkpointAllPeak(t, p))
		if float64(checkpoints) > root+2 {
			t.Errorf("L=%d: %d forward nodes never recomputed; want about √L = %.1f", layers, checkpoints, root)
		}
		if float64(o.res.PeakBytes) > 2*root+3 {
			t.Errorf("L=%d: peak %d values; want at most 2√L + 3 = %.1f", layers, o.res.PeakBytes, 2*root+3)
		}
		if extra > float64(layers) {
			t.Errorf("L=%d: %v extra seconds; want at most one forward pass (%d)", layers, extra, layers)
		}
	}
}

// checkUNets solves U-Nets with long skips, for inference and for
// training, without a budget and at three quarters of checkpoint-all's
// peak: every plan passes Check (solveChecked), and without a budget there
// is one.
func checkUNets(t *testing.T, s remat.Solver) {
	t.Helper()
	var corpusUNet *remat.Problem
	for _, c := range solvertest.Corpus() {
		if c.Name == "unet" {
			corpusUNet = c.Problem
		}
	}
	for _, c := range []struct {
		name string
		p    *remat.Problem
	}{
		{"corpus-unet", corpusUNet}, {"unet-3", unet(3)}, {"unet-5", unet(5)},
		{"training-unet-3", training(unet(3))}, {"training-unet-5", training(unet(5))},
	} {
		ca := checkpointAllPeak(t, c.p)
		if o := solveChecked(t, s, c.p); o.plan == nil {
			t.Errorf("%s: %s found no plan without a budget", c.name, s.Name)
		}
		o := solveChecked(t, s, withBudget(c.p, ca*3/4))
		t.Logf("%s: %s at 3/4 of checkpoint-all's peak %d: fits %v, peak %d, cost %.4g (checkpoint-all %.4g)",
			c.name, s.Name, ca, o.plan != nil, o.res.PeakBytes, o.res.TotalSeconds, c.p.LowerBoundSeconds())
	}
}

// benchmarkSolver measures s on the 250-node random layered DAG and on a
// training graph of 249 nodes built from a 124-node one, at three
// quarters of checkpoint-all's peak, and reports the plan's peak and cost
// relative to checkpoint-all's, its recomputations, and whether it fits
// (for a *remat.BudgetError, those of the plan it carries).
func benchmarkSolver(b *testing.B, s remat.Solver) {
	for _, c := range []struct {
		name string
		p    *remat.Problem
	}{
		{"inference-n=250", layeredDAG(1, 250)},
		{"training-n=249", training(layeredDAG(1, 124))},
	} {
		b.Run(c.name, func(b *testing.B) {
			ca := checkpointAllPeak(b, c.p)
			p := withBudget(c.p, ca*3/4)
			var plan *remat.Plan
			var err error
			for b.Loop() {
				plan, err = s.Solve(context.Background(), p, nil)
			}
			o := checkOutcome(b, s, p, plan, err)
			fits := 0.0
			if o.plan != nil {
				fits = 1
			}
			b.ReportMetric(fits, "fits")
			b.ReportMetric(float64(o.res.PeakBytes)/float64(ca), "peak/ca")
			b.ReportMetric(o.res.TotalSeconds/p.LowerBoundSeconds(), "cost/ca")
			b.ReportMetric(float64(o.res.Recomputations), "recomputes")
		})
	}
}

// builder assembles a problem node by node.
type builder struct{ p *remat.Problem }

func newBuilder() *builder {
	return &builder{&remat.Problem{BudgetBytes: remat.NoBudget}}
}

// add appends a node reading deps (in any order) and returns its number.
func (b *builder) add(name string, seconds float64, bytes int64, deps ...int32) int32 {
	p := b.p
	d := slices.Clone(deps)
	slices.Sort(d)
	d = slices.Compact(d)
	if d == nil {
		d = []int32{}
	}
	p.Deps = append(p.Deps, d)
	p.Seconds = append(p.Seconds, seconds)
	p.Bytes = append(p.Bytes, bytes)
	p.Recomputable = append(p.Recomputable, true)
	p.Names = append(p.Names, name)
	return int32(len(p.Deps) - 1)
}

// done sets the outputs (the sinks when none are given) and returns the
// problem.
func (b *builder) done(outputs ...int32) *remat.Problem {
	p := b.p
	if len(outputs) == 0 {
		read := make([]bool, p.N())
		for _, deps := range p.Deps {
			for _, d := range deps {
				read[d] = true
			}
		}
		for i, r := range read {
			if !r {
				outputs = append(outputs, int32(i))
			}
		}
	}
	slices.Sort(outputs)
	p.Outputs = slices.Compact(outputs)
	return p
}

// layeredDAG is a seeded random layered DAG of n nodes, shaped like a
// network: layers of one to four nodes; every node of a layer is read by
// some node of the next, and each node also reads up to two random nodes
// of the two layers before; sizes of 1 to 64 KiB, costs of 0.5 to 4 ms,
// one node in twenty not recomputable, the last layer as outputs.
func layeredDAG(seed uint64, n int) *remat.Problem {
	r := rand.New(rand.NewPCG(seed, 0x1a7e))
	b := newBuilder()
	var layers [][]int32
	for b.p.N() < n {
		width := min(1+r.IntN(4), n-b.p.N())
		if len(layers) == 0 {
			width = 1
		}
		deps := make([][]int32, width)
		if k := len(layers); k > 0 {
			for m, v := range layers[k-1] {
				deps[m%width] = append(deps[m%width], v)
			}
			for i := range deps {
				for range r.IntN(3) {
					from := layers[max(0, k-1-r.IntN(2))]
					deps[i] = append(deps[i], from[r.IntN(len(from))])
				}
			}
		}
		var layer []int32
		for i := range width {
			v := b.add(fmt.Sprintf("n%d", b.p.N()), float64(1+r.IntN(8))*0.5e-3, int64(1+r.IntN(64))<<10, deps[i]...)
			b.p.Recomputable[v] = r.IntN(20) != 0
			layer = append(layer, v)
		}
		layers = append(layers, layer)
	}
	return b.done()
}

// unet is an inference U-Net of the given depth: per level two
// convolutions and a downsampling on the way down, an upsampling, a
// concatenation with the level's encoder output (the long skip) and two
// convolutions on the way up. Each level down halves the bytes.
func unet(levels int) *remat.Problem {
	b := newBuilder()
	size := func(k int) int64 { return 1 << (10 + levels - k) }
	cur := b.add("stem", 1e-3, size(0))
	var skips []int32
	for k := range levels {
		a := b.add(fmt.Sprintf("enc%d.a", k), 2e-3, size(k), cur)
		c := b.add(fmt.Sprintf("enc%d.b", k), 2e-3, size(k), a)
		skips = append(skips, c)
		cur = b.add(fmt.Sprintf("down%d", k), 0.5e-3, size(k+1), c)
	}
	cur = b.add("bottom", 2e-3, size(levels), cur)
	for k := levels - 1; k >= 0; k-- {
		up := b.add(fmt.Sprintf("up%d", k), 1e-3, size(k), cur)
		cat := b.add(fmt.Sprintf("cat%d", k), 0.5e-3, 2*size(k), up, skips[k])
		a := b.add(fmt.Sprintf("dec%d.a", k), 2e-3, size(k), cat)
		cur = b.add(fmt.Sprintf("dec%d.b", k), 2e-3, size(k), a)
	}
	return b.done(b.add("head", 1e-3, 64, cur))
}

// training appends to a forward problem a loss reading its outputs and a
// backward pass as reverse-mode differentiation builds it: for each
// forward node i, from the last to the first, a gradient node reading the
// gradients of i's readers (and the loss, when i is an output) and the
// forward values i read (its inputs), costing twice as much as i. The
// outputs are the loss and the gradients nobody reads.
func training(fwd *remat.Problem) *remat.Problem {
	b := newBuilder()
	n := fwd.N()
	for i := range n {
		v := b.add(fwd.Name(i), fwd.Seconds[i], fwd.Bytes[i], fwd.Deps[i]...)
		b.p.Recomputable[v] = fwd.Recomputable[i]
	}
	loss := b.add("loss", 1e-4, 4, fwd.Outputs...)
	readers := make([][]int32, n)
	for i, deps := range fwd.Deps {
		for _, d := range deps {
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
		deps = append(deps, fwd.Deps[i]...)
		grad[i] = b.add("grad."+fwd.Name(i), 2*fwd.Seconds[i], fwd.Bytes[i], deps...)
		if len(fwd.Deps[i]) == 0 {
			outs = append(outs, grad[i])
		}
	}
	return b.done(append(outs, loss)...)
}
