// Package lns is a rematerialization solver by large-neighbourhood search
// ("lns"): pure Go, deterministic for a seed, anytime, and parallel. It is
// the search stage of the default solver, auto (passes/remat/solvers).
//
// # Plans and their memory
//
// The search works in Checkmate's frontier-advancing schedule space (Jain
// et al. 2020, §4.6): stage t computes node t for the first time and may
// recompute earlier nodes before it, in increasing order (Algorithm 1's
// scan of R). A plan is therefore just the set of stages computing each
// node; any such sets are legal, and remat.ScheduleStages derives the
// least S and FREE from them. The memory model is remat's (eq. 2–3 with
// Algorithm 1's frees hoisted to the last use, as in MOCCASIN App. A.3;
// multi-output parts, Reads and ConstBytes included), maintained
// incrementally per stage as computations are added and removed (state.go
// says how); a test checks it against remat.Evaluate on random plans. A
// recomputation of node i in stage s splits i's value into two retention
// intervals (MOCCASIN §2's view of a schedule): the earlier instance is
// freed after its last reader before s, and i's inputs must be resident
// at s.
//
// With remat.Problem.Reuse the memory is that of ONNX Runtime's allocation
// planner (remat.ReuseModel) instead: a freed buffer waits for a later
// value of its key and stays allocated in between, and in-place writes
// share a buffer (Problem.InPlace). reuse.go keeps, per key, the chains of
// instances that share a buffer, and the evaluator's ends become buffer
// ends; the same test checks it against remat.Evaluate. The search itself
// is unchanged: its cuts and estimates read the instances' deaths (the
// liveness view), and every move is evaluated under the planner's model,
// so a recomputation whose buffer the planner would hold anyway saves
// nothing and is not kept. Bounds and proofs are computed on the liveness
// relaxation (Problem.Relaxed), whose memory is at most the planner's.
//
// With remat.Problem.Arena the memory is counted in ONNX Runtime's BFC
// arena, which no move can be evaluated in incrementally: arena.go
// searches without it, replays each plan in it, and searches again with a
// per-stage slack where the arena put the plan over the budget. Views
// (Problem.View) go the same way: the search runs on Problem.Unviewed,
// where a view has no bytes and its readers hold the part it shares,
// and each plan is judged on the problem itself.
//
// # The search
//
//   - Repair (repair.go): while some stage exceeds the budget, take the
//     first such stage t and the values held across all of it; for each,
//     the candidate cut recomputes it after t — at the stage of its next
//     reader (the last stage for a graph output), at the end of the run of
//     stages over the budget, or where one of its inputs is read anyway.
//     Cuts are ranked by an estimate (bytes freed over the stages in
//     excess, less the excess that longer-held inputs add), the best few
//     are applied for real together with those of their inputs that are
//     kept alive only to feed them and are worth recomputing too, and
//     again together with their whole dependency cone (every input kept
//     alive only to feed the cut recomputed with it, and theirs, up to a
//     few computations: DTR's rematerialization of a value with its
//     evicted ancestors, Kirisame et al. 2021), which costs more but
//     holds no input longer, so helps where the memory is tight over a
//     long run of stages; the best by reduction of the excess per second
//     of added cost is kept:
//     the total excess Σ_t max(0, peak_t − budget) (the greedy rule of
//     weighted set cover) or the excess of stage t alone, alternately.
//     Recomputations whose value nothing reads are then dropped, and so is
//     every recomputation whose removal keeps the plan within the budget.
//   - Search: the plan from repairing checkpoint-all (and the start plan,
//     when given) with each rule is improved by destroy-and-repair steps
//     (Shaw 1998; Ropke and Pisinger 2006): drop the recomputations of a
//     window of stages, of one node, or a few at random, repair with
//     noisy scores, and accept the result by the simulated-annealing rule
//     (Kirkpatrick et al. 1983) on the cost.
//   - Parallelism and determinism: Options.Workers independent workers,
//     each with its own state and a PCG stream seeded by (Seed, round,
//     worker), run Options.Iterations steps per round on up to
//     Options.Threads goroutines; between rounds the best plan (ties to
//     the lowest worker) is taken, and every few rounds every worker
//     restarts from it. The plan therefore depends on the seed, Workers,
//     Iterations and the rounds run, never on timing or on how many
//     workers run at once — unless the context's deadline cuts the search,
//     which then returns the best plan so far (anytime; the same for a
//     cancellation). The search ends after Options.Patience rounds in a
//     row without a cheaper plan.
//   - No plan within the budget: the peak of checkpoint-all is lowered
//     step by step by the same repair at a falling cap (the step halved
//     when the repair and a few perturbed repairs fail), and the least
//     peak reached is returned as a *remat.BudgetError with its plan. The
//     caps tried do not depend on the budget, so a budget equal to that
//     least peak is met again. In the arena, the least plan is then
//     lowered further by searches at budgets just below it (descend) and
//     by a seeded walk of random moves judged by the arena's replay
//     (walkarena.go), which then takes most of the time left.
//
// # Bounds
//
// Every plan computes every node once, and bound.go derives two lower
// bounds on the recomputation cost on top of that: a per-stage knapsack
// (whatever exceeds the budget at a stage must be recomputed after it),
// and the Lagrangian dual of a covering relaxation in which keeping a
// value out of memory between two consecutive readers costs one
// recomputation; the latter is maximised by subgradient steps after the
// search and reported as the plan's LowerBound (its value equals that
// relaxation's LP optimum on the benchmark graphs). The relaxation
// ignores that a recomputation needs its inputs resident, so it is far
// weaker than Checkmate's LP relaxation (§5.1) on graphs with many inputs
// per node; auto adds the latter when COIN-OR CLP is installed. A stage
// whose working set and non-recomputable values alone exceed the budget
// proves that no plan fits.
package lns
