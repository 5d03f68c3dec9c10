// Package moccasin implements MOCCASIN (Bartan, Li, Teague, Lott, Dilkina,
// "MOCCASIN: Efficient Tensor Rematerialization for Neural Networks", ICML
// 2023): rematerialization as retention intervals, at most C_v of them per
// node (§2, eq. 1–8; C_v = 2 by default, as in all of the paper's
// experiments), with the input topological order enforced (§2.3), solved in
// two phases (§2.4). The paper solves a constraint program with CP-SAT;
// there is no CP-SAT for Go, so this package states the same model as a
// mixed-integer linear program over the same event domain and solves it
// with COIN-OR CBC (internal/milp builds it, internal/cbc runs it).
//
// # Events and stages (§2.3)
//
// With the order fixed, the event domain (11) has n(n+1)/2 events grouped
// into n stages: stage t (0-based) holds the events (t, 0), …, (t, t) in
// this order; event (t, t) is the first computation of node t, and event
// (t, v), v < t, is a possible recomputation of v. A node can be computed
// only at its own events, so (6), "no two computations at one event", holds
// by construction, as §2.3 says. This is exactly Checkmate's
// frontier-advancing form that remat.Plan uses: a solution maps to
// R[t] = {t} ∪ {v : an interval of v starts at event (t, v)}, executed in
// increasing node order within the stage (Algorithm 1's row-major scan),
// each node at most once per stage; remat.ScheduleStages completes S, FREE
// and the operations from R. Nothing else is read from a solution.
//
// # Variables
//
// The i-th retention interval of node v is [s_v^i, e_v^i] with its activity
// a_v^i (eq. 8). In the MILP:
//
//   - Starts. s_v^1 is fixed to event (v, v) (§2.3) and a_v^1 = 1 (7). The
//     later starts are binaries R[t][v] = Σ_i [s_v^i = (t, v)] for v < t:
//     the intervals of a node do not overlap (3), so they are ordered and
//     the i-th active one starts at the i-th stage with R = 1; the copy
//     index carries no information and is summed out. The number of
//     intervals is capped by one row, Σ_{t>v} R[t][v] ≤ C_v − 1 (C_v = 1
//     for a node that is not recomputable). A MILP needs these
//     time-indexed starts where CP-SAT has one integer s_v^i: the memory
//     (4) and precedence (5) constraints are not linear in s and e (the
//     paper models them with cumulative and reservoir constraints).
//   - Ends. An interval is open from its start to its end e_v^i, the event
//     of the last computation that reads that copy (the end of the
//     schedule for a graph output's last copy): Appendix A.3's "retain the
//     output only until the last occurring successor". It is represented
//     by where the interval is open: S[t][q] ∈ [0,1], part q of the node's
//     outputs crosses the boundary into stage t inside an interval, and,
//     within stage t, the chain ℓ_{q,t,u} ∈ [0,1], q's interval is open at
//     the event (t, u) of a reader u of q. Each output of a node (a Part of
//     a multi-output node) has its own interval ends, all starting at the
//     node's computation, as the memory model frees each output after its
//     own last reader.
//
// For part q of node v and stage t ≥ v, with u_1 < … < u_r the readers of q
// that stage t can compute (u ≤ t; u = t or R[t][u] a variable):
//
//	R[t][v] + S[t][q] ≥ ℓ_{q,t,u_1} ≥ … ≥ ℓ_{q,t,u_r} ≥ S[t+1][q]   (2), (3)
//	ℓ_{q,t,u_j} ≥ R[t][u_j]                                       (5)
//
// The chain says that an interval is open at an event only if it started
// there or earlier in the stage or was open when the stage began (2, 3: it
// ends after it starts and continues only itself), and (5) that a reader
// computed at (t, u) finds an open interval of each part it reads. S[n][q]
// is 1 for the graph's output parts (open at the end) and 0 otherwise.
// ℓ_{q,t,t} = 1 (the first computation of t reads its inputs), and so is
// every ℓ before it in the chain.
//
// # Memory (4)
//
// The memory of event (t, k) is the project's memory model, the one that
// remat.Check measures: ConstBytes, plus the outputs of the running node,
// plus every output allocated earlier whose copy is read at or after the
// event or kept to the end (which includes the running node's inputs).
// That is eq. (4) with intervals from the start event to the last reader's
// event inclusive, and it is eq. (17) of Appendix A.3 (the output retention
// set before the event plus the running node's output). Part q of node v
// contributes m_q times
//
//	S[t][q]                    at events (t, k), k < v
//	S[t][q] + R[t][v]          at (t, v)
//	λ_q(t, k)                  at (t, k), k > v: ℓ_{q,t,u} at the first
//	                           reader u ≥ k of the chain, or S[t+1][q]
//
// and eq. (4) becomes, per stage, a running sum of levels U (continuous):
// the level before position 0 is Σ_{v(q)<t} m_q S[t][q], and from position
// k−1 to k it grows by m_k R[t][k] (k's outputs allocated), falls by
// m_q (S[t][q] + R[t][k−1] − λ_q(t, k)) for k−1's own outputs and by
// m_q (ℓ_{q,t,k−1} − λ_q(t, k)) for the parts k−1 reads (inputs whose last
// reader in the stage is k−1). Every level is at most M − ConstBytes, in
// units of the gcd of the output sizes (exact). Nothing asks whether node
// k actually runs at event (t, k): where it does not, the level counts
// what is open between two events, which is at most the level of the next
// event that runs (the stage's last, (t, t), always does).
//
// # Exactness
//
// For any feasible point, every level is at least the memory Check
// measures at that event of the decoded plan: each part counted by Check
// is open there, and an open part forces its chain variables to 1 (by (5)
// at its later readers, by the tail S[t+1][q] when kept, and S back to
// the stage that computed it through the presence rows). Conversely, for
// any R, setting S and ℓ to their least values (a part is retained into
// stage t exactly when its current copy is read later before the node is
// computed again or is an output; ℓ is 1 exactly when a reader at or after
// the event runs in the stage or the part is retained into the next)
// makes every level equal to Check's memory. So the MILP's feasible plans
// are exactly the plans that fit the budget, each at its true cost, and
// its optimum is the problem's optimum among plans with at most C_v
// computations per node. S and ℓ may be continuous: the least values are
// integral and feasible whenever any values are. TestPointIsExact and
// TestLevelsAreSound check both directions on random plans (multi-output
// nodes included), against remat.Evaluate.
//
// # Two phases (§2.4)
//
// Phase 1 finds a memory-feasible plan. By default (Phase1Greedy) it is a
// native greedy (greedy.go) that splits retention intervals: it recomputes
// a value that is resident at an over-budget event but not used there, at
// the stage of its next use (with the inputs that would otherwise have to
// stay resident, if need be), taking each time the move that removes the
// most overflow per second of added cost, and finally drops the
// recomputations the budget does not need. It measures plans with its own
// copy of the memory model (TestSimMatchesCheck compares it with Check).
// When it does not reach the budget, phase 2 starts without a plan and
// CBC's heuristics, guided by the cost, look for the first one. Phase1MILP
// instead solves the paper's phase-1 model, eq. (12)–(13): the same rows
// with the budget replaced by a peak variable P ≥ M, minimising P
// (max(M_var, M) linearized as a bound). Its optimum is M exactly when
// some plan with at most C_v computations per node fits, and otherwise the
// least peak of such plans; the solver also uses it for the least peak a
// *remat.BudgetError reports. (With CBC the greedy is the better phase 1:
// the phase-1 model's LP optimum is P = M at once, which leaves CBC no
// guidance towards an integral plan; a 40-node graph at 80 % took it over
// a minute where phase 2 alone found a plan in a second.) Options.Start
// replaces phase 1 with a given plan.
//
// Phase 2 minimises eq. (1), Σ_v C_v · (computations of v), from phase 1's
// plan as a MIP start. CBC 2.10's C interface reports no incumbents while
// it runs, so phase 2 is a series of CBC solves, each stopping at its first
// solution better than its start (CBC's maxSolutions; an accepted MIP
// start counts as one) and the next starting from it; every incumbent goes
// to the progress callback with the elapsed time, its cost, the bound and
// the gap ("solutions over time"), with a heartbeat every second in
// between, and the last solve runs until it proves optimality or the time
// is up. Each restart solves the root LP again, which is the price of
// reporting incumbents when they are found.
//
// # The cap and exactness
//
// C_v = 2 may exclude the optimum (a plan may need a node three times), so
// Solver (C_v = 2) is not marked Exact; New(Options{MaxComputations:
// NoCap}) is, since without a cap every frontier-advancing plan is in the
// model (a node is computed at most once per stage). Under a cap that
// limits some node, CBC's optimum and bound hold within the cap only: the
// solver then claims Optimal only for a plan that costs
// Problem.LowerBoundSeconds, reports that sum as LowerBound, and reports
// infeasibility under the cap as an unproven *remat.BudgetError. The
// progress notes carry the bound within the cap.
//
// # Size
//
// The model has n(n−1)/2 binary starts at most (fewer where a
// recomputation could not be read: Formulation.lastStages), O(n·#parts)
// retention and level variables and O(n·|E|) chain variables and rows:
// the paper's O(Cn) integer variables of the CP become time-indexed in a
// MILP, and the memory within a stage needs, per edge, where each interval
// ends. Checkmate's MILP (passes/remat/checkmate) has the same order of
// rows but binary S and FREE; here only the starts are integral.
package moccasin
