// Package checkmate implements the solvers of Checkmate (Jain et al.,
// "Checkmate: Breaking the Memory Wall with Optimal Tensor
// Rematerialization", MLSys 2020): the frontier-advancing mixed-integer
// linear program of §4 solved to optimality with COIN-OR CBC
// ("checkmate-milp", [MILP]), and the LP relaxation of §5.1 with the
// two-phase rounding of §5.2 (Algorithm 2) and the budget allowance ε of
// §5.3 and App. D, solved with CLP ("checkmate-lp", [LP]). [BuildMILP]
// exposes the model itself, and [WriteModel] writes it as an LP or MPS file
// for other solvers (remat-compile -emit-milp).
//
// # The formulation
//
// Nodes are numbered 0 … n−1 in the problem's fixed topological order and
// the schedule has T = n stages, stage t computing node t for the first
// time (§4.6). The paper numbers from 1; every equation below is the
// paper's, shifted to 0-based indices. The variables are
//
//	R_{t,i} ∈ {0,1}, i ≤ t   stage t computes node i            (1f, 8a, 8c)
//	S_{t,i} ∈ {0,1}, i < t   i's value is resident when t begins (1f, 8b)
//	FREE_{t,i,k} ∈ {0,1}     i is freed in stage t right after k, (i,k) ∈ E (7a)
//	U_{t,k} ≥ 0              bytes in use just after computing k in stage t
//
// and the model is eq. (9):
//
//	minimise   Σ_t Σ_{i≤t} C_i R_{t,i}                                 (1a)
//	subject to R_{t,j} ≤ R_{t,i} + S_{t,i}       (i,j) ∈ E, j ≤ t        (1b)
//	           S_{t,i} ≤ R_{t−1,i} + S_{t−1,i}   1 ≤ t, i < t           (1c)
//	           R_{t,t} = 1                                              (8a)
//	           S_{t,i} = 0 for i ≥ t, R_{t,i} = 0 for i > t             (8b, 8c)
//	           U_{t,0} = Σ_{i<t} M_i S_{t,i} + M_0 R_{t,0}              (2)
//	           U_{t,k} = U_{t,k−1} − Σ_{i∈DEPS[k−1]} M_i FREE_{t,i,k−1} + M_k R_{t,k}  (3, 4)
//	           1 − FREE_{t,i,k} ≤ h(t,i,k) ≤ κ (1 − FREE_{t,i,k})          (7b, 7c)
//	           U_{t,k} ≤ M_budget − M_const                             (9)
//
// with num_hazards h(t,i,k) = (1 − R_{t,k}) + S_{t+1,i} + Σ_{j∈USERS[i],
// k<j≤t} R_{t,j} (eq. 6) and κ its largest value. (1d) and (1e) are
// implied by (8a)–(8c). ModelOptions.Free may replace (7c) by one row per
// factor of the product (5) (FREE ≤ R_{t,k}, FREE ≤ 1 − S_{t+1,i},
// FREE ≤ 1 − R_{t,j}): the same integer points, a tighter relaxation;
// BuildMILP and WriteModel default to the paper's (7c), the MILP solver to
// the per-factor rows (faster to solve), the LP solver rounds both. The constant overhead of eq. (2), M_input +
// 2 M_param in the paper and Problem.ConstBytes here, is moved from U_{t,0}
// to the right-hand side of the budget constraint. The variables
// FREE_{t,k,k} are eliminated as §4.8 describes: (4) sums only over
// DEPS[k].
//
// This package's additions, each a consequence of the problem rather than
// a change of it:
//   - Graph outputs must be resident after the last stage. The paper has no
//     graph outputs beyond v_n; here a virtual row S_{n,o} = 1 for every
//     output o enters (1c) at t = n and the hazards of the last stage, so an
//     output is neither freed in the last stage nor missing at the end.
//     S_{n,i} = 0 for every other node.
//   - A node that is not recomputable has R_{t,i} = 0 for t ≠ i.
//   - Reductions implied by optimality (in the spirit of §4.8; switched off
//     by ModelOptions.NoReductions). Let need(i) be the last stage in which
//     a computation that is not spurious can read i: the largest user j of
//     i, or, where a user j may be recomputed, the last stage that can read
//     j (the last stage when j is an output). A value retained into, or
//     recomputed in, a stage after need(i) is never read: S_{t,i} = 0 and
//     R_{t,i} = 0 for need(i) < t, unless i is an output. Note that need(i)
//     is not the last user of i: a recomputation of an earlier reader in a
//     later stage reads its inputs there, so they may have to stay
//     resident long after their last first-time reader.
//   - Variables whose value the constraints determine are substituted: the
//     fixed R and S entries are constants, FREE_{t,i,k} is a constant or an
//     affine function of one variable when its hazards allow nothing else
//     (for k = t, FREE_{t,i,t} = 1 − S_{t+1,i}), and U_{t,k} is the same
//     variable as U_{t,k−1} when R_{t,k} is fixed to 0 and nothing is freed.
//     These substitutions are exact.
//   - Memory is counted in units of g·2^s bytes, g the greatest common
//     divisor of the M_i and 2^s a power of two that keeps coefficients
//     below about 2^11 (exact in floating point), and the right-hand side
//     is rounded down to a whole unit, which is exact at integral points;
//     the objective is in units of a power of two of seconds near the
//     largest C_i. Formulation records both scales.
//
// With n nodes and |E| edges the model has at most n(n−1)/2 R, n(n−1)/2 S,
// n(n+1)/2 U and Σ_t |{(i,k) ∈ E : k ≤ t}| ≤ n|E| FREE variables, and about
// as many rows per kind: O(n|E|) as §4.7 says.
//
// # Memory model
//
// DESIGN.md asks which of the definitions of a step's memory this follows:
// eq. (2)–(3), U_{t,k} after computing k and before the frees that follow
// it, which is the project's memory model (package remat, "Memory model")
// when the frees are hoisted to the last use. For a plan without spurious
// computations and with the least S (what remat.Schedule derives from R),
// U_{t,k} equals the memory Check measures at that step exactly: a value
// computed or retained in stage t is counted from its allocation until
// after its last reader in the stage, or to the end of the stage when it is
// retained into stage t+1, as Check's liveness does. For any other feasible
// (R, S, FREE) the model only over-counts (spurious checkpoints, the
// eliminated FREE_{t,k,k} of a spurious computation), so every plan decoded
// from a feasible point fits the budget under Check and the optimum of the
// model is the optimum of the problem. The decoder therefore keeps only R:
// it drops computations whose value nothing reads (remat.DropSpurious), and
// remat.Schedule derives the least S, FREE and the execution plan of
// Algorithm 1 with hoisted frees. Check, run on every decoded plan, is
// authoritative.
//
// # Solving
//
// MILPs are solved with CBC through internal/cbc directly, with CBC's
// preprocessing switched off: Debian's CBC 2.10.8 crashes the process in
// its preprocessing on infeasible budgets and on time-limited solves with
// a MIP start (cbcdriver.go). LP relaxations are solved with CLP through
// internal/milp.
//
// # Multi-output nodes
//
// The model is built on Problem.Coarse(): a node's outputs are one value of
// Bytes[i] bytes that lives until the last read of any of them. That is an
// upper bound of the refined memory model, so a plan that fits the model
// fits the refined problem under Check, whose true peak is what the plan
// reports. The coarse optimum may cost more than the refined problem's: on
// a refined problem the solvers therefore do not claim Optimal (unless the
// plan costs Problem.LowerBoundSeconds), report that sum as LowerBound, and
// report infeasibility as not Proven.
package checkmate
