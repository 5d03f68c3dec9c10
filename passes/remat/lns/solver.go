package lns

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remat-compile/remat/passes/remat"
)

// Name is the solver's name.
const Name = "lns"

// Options configure New. The zero value is the default solver.
type Options struct {
	// Seed seeds the search; the same seed gives the same plan whenever
	// the search is not cut short by the context.
	Seed uint64
	// Workers is the number of independent searches per round (default
	// 8). The plan depends on it, not on how many run at once.
	Workers int
	// Threads bounds how many workers run at once (default
	// runtime.GOMAXPROCS(0)).
	Threads int
	// Iterations is each worker's number of destroy-and-repair steps per
	// round (default 64).
	Iterations int
	// Rounds bounds the rounds (default 10000); Patience ends the search
	// after that many rounds in a row without a cheaper plan (default 8).
	Rounds, Patience int
	// Start, when not nil and legal, is the plan the search starts from
	// (repaired first when it exceeds the budget); otherwise it starts
	// from checkpoint-all, repaired.
	//
	// The problem's hint (remat.Problem.Start: a plan of the same graph at
	// another budget, such as a budget sweep's previous plan) is not a
	// start of this search: it would steer it. When the hint is legal,
	// the search runs as it would without it, then polishes the hint,
	// repaired to the budget, in rounds with a quarter of the patience
	// (hintPatience), and returns the cheaper of the two plans. Without a deadline the first search's plan is the plan of a
	// run without the hint, so the hint never makes the plan dearer; with
	// a deadline the first search's rounds stop halfway to it, leaving
	// the search from the hint the other half.
	Start *remat.Plan
	// TimeLimit bounds a Solve besides the context's deadline; 0 means
	// none.
	TimeLimit time.Duration
	// slack, when not nil, adds to each stage's memory what the arena is
	// expected to add to it (solveArena).
	slack []int64
	// relaxed, when not nil, is the problem the bounds are proven on
	// instead of the searched problem's Relaxed: solveArena's, whose
	// searched problem leaves out the arena and views.
	relaxed *remat.Problem
	// noDescent: solveArena returns the least peak its searches reached
	// without descend (descend's own searches).
	noDescent bool
}

// The search's fixed settings, chosen on the layered benchmark graphs and
// the zoo's training graphs.
const (
	// hottest is the temperature of the hottest worker, in mean costs of
	// a recomputable node; worker k of W anneals at (k+1)/W of it.
	hottest = 1.0
	// noise randomizes the workers' repairs (repairer.noise).
	noise = 0.5
	// exactCuts is how many of the best-ranked cuts a repair step
	// evaluates exactly (and half as many more ranked by the bound alone).
	exactCuts = 8
	// chainDepth bounds the dependency chains grown with a cut.
	chainDepth = 3
	// coneCuts bounds the computations of a cut's dependency cone
	// (growCone): each exactly evaluated cut is tried with it as well.
	coneCuts = 8
)

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Iterations <= 0 {
		o.Iterations = 64
	}
	if o.Rounds <= 0 {
		o.Rounds = 10000
	}
	if o.Patience <= 0 {
		o.Patience = 8
	}
	return o
}

// lagrangeIters bounds the subgradient steps of the final bound.
const lagrangeIters = 2000

// minPeakTries is how many perturbed repairs minPeak tries at a cap
// where the greedy repair fails.
const minPeakTries = 6

// resetEvery is how often (in rounds) every worker restarts from the best
// plan; in between each continues its own walk.
const resetEvery = 4

// Solver is the search with the default options.
var Solver = New(Options{})

// New returns the search as a remat.Solver with the given options.
func New(opts Options) remat.Solver {
	return remat.Solver{
		Name: Name,
		Doc: "Large-neighbourhood search over recomputation decisions: greedy repair of the stages over the budget, " +
			"then destroy-and-repair rounds by parallel seeded workers; pure Go, deterministic for a seed, anytime.",
		Exact:       false,
		TargetAware: true,
		Solve: func(ctx context.Context, p *remat.Problem, progress func(remat.Progress)) (*remat.Plan, error) {
			return solve(ctx, p, progress, opts.withDefaults())
		},
	}
}

// run is one Solve.
type run struct {
	p        *remat.Problem
	g        *graph
	opts     Options
	start    time.Time
	progress func(remat.Progress)
	// mu serializes progress reports: workers report the plans they find
	// in the middle of a round (improved).
	mu       sync.Mutex
	lastEl   float64
	reported float64 // the least recomputation cost reported so far
	base     float64 // Σ C_i: the cost of computing every node once
	bound    float64 // a lower bound on the cost of any plan within the budget
	// rp and rg are the problem and graph bounds are proven on (Relaxed).
	rp   *remat.Problem
	rg   *graph
	stop atomic.Bool
}

// report sends a progress report with the cost of sol as the incumbent.
// It may be called from several goroutines.
func (r *run) report(sol *solution, note string) {
	if r.progress == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(sol, note)
}

// emit is report with r.mu held.
func (r *run) emit(sol *solution, note string) {
	r.reported = min(r.reported, sol.extra)
	el := max(time.Since(r.start).Seconds(), r.lastEl)
	r.lastEl = el
	inc := sol.total
	gap := 0.0
	if inc > 0 {
		gap = max(0, (inc-r.bound)/inc)
	}
	r.progress(remat.Progress{Elapsed: el, Incumbent: inc, Bound: min(r.bound, inc), Gap: gap, Note: note})
}

func identityStages(n int) [][]int32 {
	st := make([][]int32, n)
	for t := range n {
		st[t] = []int32{int32(t)}
	}
	return st
}

// startStages returns the compute sets of a legal start plan, or nil.
func startStages(p *remat.Problem, pl *remat.Plan) [][]int32 {
	if pl == nil {
		return nil
	}
	if _, err := remat.Evaluate(p, pl); err != nil {
		return nil
	}
	st := make([][]int32, p.N())
	for t, row := range pl.R {
		for i := row.Next(0); i >= 0 && i <= t; i = row.Next(i + 1) {
			st[t] = append(st[t], int32(i))
		}
	}
	return st
}

func solve(ctx context.Context, p *remat.Problem, progress func(remat.Progress), opts Options) (*remat.Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Arena != nil || p.View != nil {
		return solveArena(ctx, p, progress, opts)
	}
	if opts.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.TimeLimit)
		defer cancel()
	}
	n := p.N()
	r := &run{p: p, opts: opts, start: time.Now(), progress: progress, base: p.LowerBoundSeconds(), reported: math.Inf(1)}
	r.bound = r.base
	r.g = newGraph(p)
	r.g.slack = opts.slack
	stopWatch := context.AfterFunc(ctx, func() { r.stop.Store(true) })
	defer stopWatch()

	capBytes := p.BudgetBytes - p.ConstBytes
	if p.BudgetBytes == remat.NoBudget {
		capBytes = math.MaxInt64 / 2
	}
	s := newState(r.g, capBytes)
	s.load(identityStages(n))
	if s.nOver == 0 {
		sol := s.snapshot()
		r.report(sol, "checkpoint-all fits")
		return r.finish(sol)
	}
	var j journal
	rep := &repairer{chainDepth: chainDepth, costEps: 1e-6 * meanCost(r.g), stop: &r.stop, exact: exactCuts, cone: coneCuts}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	// Bounds are proven on the liveness relaxation (remat.Problem
	// Relaxed): p itself unless the plans are made under Reuse.
	r.rp, r.rg = p.Relaxed(), r.g
	if opts.relaxed != nil {
		r.rp = opts.relaxed
	}
	if r.rp != p || r.g.slack != nil {
		r.rg = newGraph(r.rp)
	}
	lb, infeasible := lowerBound(r.rp, r.rg)
	r.bound = r.base + lb
	if infeasible {
		// No plan fits: some step's working set and the values that may
		// not be recomputed exceed the budget (see lowerBound).
		floor := p.Floor().Bytes
		st, _ := r.minPeak(s, &j, rep, rng, identityStages(n), floor)
		return nil, r.budgetError(st, true)
	}
	// The first plan: the start plan and checkpoint-all, each repaired
	// with both scores (repairAt), the cheapest after pruning.
	var best *solution
	sources := [][][]int32{identityStages(n)}
	if st := startStages(p, opts.Start); st != nil {
		sources = append([][][]int32{st}, sources...)
	}
	for _, src := range sources {
		if sol := repairFrom(s, &j, rep, rng, src); sol != nil && (best == nil || sol.better(best)) {
			best = sol
		}
	}
	if best == nil && ctx.Err() != nil {
		return nil, ctx.Err() // cut short before any plan within the budget
	}
	if best == nil {
		// Lower the peak step by step from checkpoint-all instead.
		if best = r.lowered(s, &j, rep, rng, identityStages(n), capBytes); best == nil {
			return nil, r.budgetError(s.stages(), false)
		}
	}
	r.report(best, fmt.Sprintf("greedy repair: %d recomputations", best.nRec))
	if r.stop.Load() {
		return r.finish(best)
	}

	workers := make([]*worker, opts.Workers)
	for k := range workers {
		workers[k] = newWorker(r.g, capBytes, &r.stop)
	}
	hint := startStages(p, p.Start)
	resume := r.halve(ctx, hint != nil)
	best = r.rounds(workers, best, lb, opts.Seed, opts.Patience, "", r.report)
	resume()
	// The hint's search (see Options.Start): its own random stream, its
	// first plan the hint repaired as the first plan above is.
	if hint == nil || r.stop.Load() || best.extra <= lb*(1+1e-9) {
		return r.finish(best)
	}
	rng = rand.New(rand.NewPCG(opts.Seed^hintSeed, 0x5eed))
	from := repairFrom(s, &j, rep, rng, hint)
	if from == nil && !r.stop.Load() {
		from = r.lowered(s, &j, rep, rng, hint, capBytes)
	}
	if from == nil || r.stop.Load() {
		return r.finish(best)
	}
	r.report(best, fmt.Sprintf("searching from the hint, repaired to %d recomputations", from.nRec))
	if warm := r.rounds(workers, from, lb, opts.Seed^hintSeed, max(1, opts.Patience/hintPatience), "from the hint, ", r.reportCheaper); warm.better(best) {
		best = warm
		// Reported again: it may be as cheap as the first search's plan
		// (with fewer recomputations), which the last report then was.
		r.report(best, fmt.Sprintf("from the hint: %d recomputations", best.nRec))
	}
	return r.finish(best)
}

// halve, when split is set and ctx has a deadline, stops the search
// (r.stop) halfway to the deadline, so that the first search's rounds
// leave the search from the hint half the time left. The function it
// returns ends that: it clears the stop unless ctx itself is done.
func (r *run) halve(ctx context.Context, split bool) func() {
	dl, ok := ctx.Deadline()
	if !split || !ok {
		return func() {}
	}
	half, cancel := context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
	fired := make(chan struct{})
	stop := context.AfterFunc(half, func() {
		r.stop.Store(true)
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired // it ran or is running: wait until it has stored
		}
		cancel()
		if ctx.Err() == nil {
			r.stop.Store(false)
			if ctx.Err() != nil { // ctx ended meanwhile; its AfterFunc may have run before the Store
				r.stop.Store(true)
			}
		}
	}
}

// repairFrom loads the compute sets src into s and repairs them to the
// budget with both scores (repairAt), each result pruned and descended,
// and returns the cheapest, or nil when both repairs fail.
func repairFrom(s *state, j *journal, rep *repairer, rng *rand.Rand, src [][]int32) *solution {
	defer func() { rep.local = false }()
	var best *solution
	for _, local := range []bool{false, true} {
		s.load(src)
		if local && s.nOver == 0 {
			continue // nothing to repair: the same plan again
		}
		rep.local = local
		ok := s.repair(j, rep, rng)
		j.moves = j.moves[:0]
		if !ok {
			continue
		}
		s.prune(j)
		s.descend(j, s.recomputations(nil), rng)
		j.moves = j.moves[:0]
		if sol := s.snapshot(); best == nil || sol.better(best) {
			best = sol
		}
	}
	return best
}

// lowered lowers the peak of the plan with compute sets from step by
// step (minPeak) until it fits the budget, and returns that plan pruned
// and descended under the budget's cap, or nil with s holding the plan of
// the least peak reached. The steps do not depend on the budget, so a
// budget set to the least peak that this reaches on a smaller budget is
// met again.
func (r *run) lowered(s *state, j *journal, rep *repairer, rng *rand.Rand, from [][]int32, capBytes int64) *solution {
	st, peak := r.minPeak(s, j, rep, rng, from, r.p.BudgetBytes)
	s.load(st)
	if peak > r.p.BudgetBytes {
		return nil
	}
	s.setCap(capBytes)
	s.prune(j)
	s.descend(j, s.recomputations(nil), rng)
	j.moves = j.moves[:0]
	return s.snapshot()
}

// hintPatience divides the search's patience for its rounds from the
// problem's hint: they start near a good plan (the hint is one of a
// looser budget), and a short polish there finds what the hint offers.
const hintPatience = 4

// hintSeed is xored into the seed of the search from the problem's hint,
// so that its random streams differ from the first search's.
const hintSeed = 0x68696e74

// rounds runs the search's destroy-and-repair rounds from best until
// opts.Rounds, patience rounds in a row without a cheaper plan, the
// lower bound lb, or a stop, and returns the best plan found; it reports
// each round's cheaper plan through report, its note prefixed by label.
func (r *run) rounds(workers []*worker, best *solution, lb float64, seed uint64, patience int, label string, report func(*solution, string)) *solution {
	opts := r.opts
	temp := hottest * meanCost(r.g)
	stale := 0
	for round := 0; round < opts.Rounds && stale < patience && best.extra > lb*(1+1e-9) && !r.stop.Load(); round++ {
		reset := round%resetEvery == 0
		sols := runRound(workers, best, reset, opts.Iterations, seed, round, opts.Threads, temp, r.improved)
		if b := bestOf(sols); b.better(best) {
			best = b
			stale = 0
			report(best, fmt.Sprintf("%sround %d: %d recomputations", label, round+1, best.nRec))
		} else {
			stale++
		}
	}
	return best
}

// reportCheaper reports sol when it is cheaper than every plan reported
// so far: a worker's plan mid-round (improved), and the rounds from the
// hint, which may walk above the first search's plan without the
// incumbent of the progress reports rising.
func (r *run) reportCheaper(sol *solution, note string) {
	if r.progress == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if sol.extra < r.reported-1e-9*math.Max(1, math.Abs(r.reported)) {
		r.emit(sol, note)
	}
}

// improved reports a plan that a worker found in the middle of a round
// when it is cheaper than every plan reported so far (reportCheaper): the
// round's best, which the search keeps, is at least as cheap, so a
// progress report says as soon as a plan of that cost exists (the plans do
// not depend on it).
func (r *run) improved(sol *solution, round int) {
	if r.progress != nil {
		r.reportCheaper(sol, fmt.Sprintf("round %d: %d recomputations", round+1, sol.nRec))
	}
}

// finish turns a solution into a checked plan, with the Lagrangian bound
// (lagrangeBound) towards its cost as LowerBound.
func (r *run) finish(sol *solution) (*remat.Plan, error) {
	if lb := r.bound - r.base; sol.extra > lb*(1+1e-9) {
		r.bound = r.base + lagrangeBound(r.rp, r.rg, lb, sol.extra, lagrangeIters)
	}
	pl, err := remat.ScheduleStages(r.p, sol.stages)
	if err != nil {
		return nil, fmt.Errorf("lns: internal error: %w", err)
	}
	res, err := remat.Check(r.p, pl)
	if err != nil {
		return nil, fmt.Errorf("lns: internal error: the plan fails Check: %w", err)
	}
	pl.Solver = Name
	// The bound is a sum of many rounded terms: a cost within a relative
	// 1e-9 of it is taken as optimal, and the bound reported is lowered by
	// as much.
	cost := res.TotalSeconds
	if cost <= r.bound*(1+1e-9) {
		pl.Optimal, pl.LowerBound, pl.Gap = true, cost, 0
	} else {
		pl.LowerBound = max(min(r.bound*(1-1e-9), cost), r.base)
		pl.Gap = max(0, (cost-pl.LowerBound)/cost)
	}
	return pl, nil
}

// minPeak lowers the peak of the plan with compute sets from
// (checkpoint-all, or the problem's hint) as far as the greedy repair
// can, or until it is at most target: the cap is set a step below the
// peak reached, the step halved whenever the repair fails. The caps tried
// do not depend on target (only when to stop does), so with target set
// to the peak that a run with a smaller target reached, the same plan is
// reached again. It returns the plan with the least peak reached and its
// peak, and leaves s's cap changed.
func (r *run) minPeak(s *state, j *journal, rep *repairer, rng *rand.Rand, from [][]int32, target int64) ([][]int32, int64) {
	s.load(from)
	bestSt := s.stages()
	bestPeak, _ := s.peak()
	step := max(1, bestPeak/32)
	saved := *rep
	rep.failFast = true
	defer func() { rep.failFast, rep.local, rep.noise = saved.failFast, saved.local, saved.noise }()
	var list []cut
	for step >= 1 && bestPeak > target && !r.stop.Load() {
		c := bestPeak - step - r.p.ConstBytes
		ok := false
		// The greedy repair, then perturbed ones: a random share of the
		// recomputations dropped, the other score, noisy choices.
		for try := 0; try <= minPeakTries && !ok && !r.stop.Load(); try++ {
			s.setCap(c)
			j.moves = j.moves[:0]
			rep.local, rep.noise = false, saved.noise
			if try > 0 {
				rep.local, rep.noise = try%2 == 1, 1
				list = s.recomputations(list[:0])
				frac := 0.1 + 0.3*rng.Float64()
				for _, d := range list {
					if rng.Float64() < frac {
						s.doRemove(j, d.i, d.at)
					}
				}
			}
			if ok = s.repair(j, rep, rng); ok {
				s.prune(j)
				bestSt = s.stages()
				bestPeak, _ = s.peak()
			} else {
				s.revert(j, 0)
			}
		}
		if !ok {
			step /= 2
		}
	}
	j.moves = j.moves[:0]
	return bestSt, bestPeak
}

// budgetError is the *remat.BudgetError for the plan with the least peak
// found.
func (r *run) budgetError(st [][]int32, proven bool) error {
	pl, err := remat.ScheduleStages(r.p, st)
	if err != nil {
		return fmt.Errorf("lns: internal error: %w", err)
	}
	res, err := remat.Evaluate(r.p, pl)
	if err != nil {
		return fmt.Errorf("lns: internal error: the plan fails Evaluate: %w", err)
	}
	pl.Solver = Name
	return &remat.BudgetError{NeedBytes: res.PeakBytes, HaveBytes: r.p.BudgetBytes, Plan: pl, Proven: proven}
}
