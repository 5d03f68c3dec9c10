// Package remat is the rematerialization core of remat-compile: the
// problem a solver sees, the plan it returns, and the one oracle that
// every plan goes through before anything trusts it.
//
//	ir.Graph ──Lower──▶ Problem ──Solver.Solve──▶ Plan ──Check──▶ CheckResult
//	                      │                         │
//	                   Mapping ◀──── Sequence ──────┘   (back to ir nodes)
//
// # Problem
//
// A Problem is the fixed-order rematerialization problem of Checkmate
// (Jain et al. 2020) §4.1 with the frontier-advancing stages of §4.6: N
// nodes numbered in a topological order, each with its dependencies
// (DEPS[k] of eq. 4), its compute cost C_i in seconds, the bytes M_i of its
// output, and whether it may be computed more than once. Solvers see only
// this small dense DAG, never the IR, so they are testable on six-node
// problems (package solvertest). Lower builds one from an ir.Graph.
//
// # Plan
//
// A Plan holds Checkmate's decision matrices over T = N stages in the
// frontier-advancing form (§4.6, eq. 8a–8c): stage t computes node t for
// the first time (R[t][t] = 1), may recompute earlier nodes (R[t][i],
// i < t), starts with the values retained from stage t−1 (S[t][i], i < t)
// and frees values during the stage (FREE). It also holds the execution
// plan of Algorithm 1 (§4.9): the row-major scan of R as a list of compute
// and free operations, with the frees hoisted to right after the last use
// of each value (§4.9's code motion). Schedule derives S, FREE and the
// operations from R alone (the deterministic completion of Algorithm 2,
// §5.2, and App. B).
//
// # Memory model
//
// There is one memory model, package passes/memory's zero Options: a value
// is allocated when its producer runs and freed right after the last step
// that reads it; graph outputs stay to the end; the bytes of a step are
// everything allocated and not yet freed while it runs, its own outputs
// included. That is Checkmate's U_{t,k} of eq. (2)–(3) (the memory after
// computing node k of stage t, before the frees that follow it) when FREE
// is the hoisted one of Algorithm 1, and it is Kumar et al. (2019) §2.1's
// M(σ, i). Check computes it by running passes/memory.Simulate itself, on a
// shadow graph built from the Problem, so there is exactly one definition
// (see memory.go); the tests also compare Check with Simulate on real IR
// graphs lowered by Lower.
//
// The exported graph is the compute sequence; the runtime frees each value
// after its last reader whatever S says. So a plan's memory is that of its
// compute sequence, and S and FREE are the explanation of the plan (which
// value is kept across which stage boundary, and where it dies), which
// Check verifies for consistency (eq. 1b, 1c, 5 and Theorem 4.1). With the
// S and FREE that Schedule derives they agree exactly with eq. (2)–(3).
//
// # Multi-output nodes
//
// Checkmate gives every node one output of M_i bytes. A node of the IR may
// have several (Split, LSTM, Dropout with its mask). Lower makes one
// problem node per IR node, whose Bytes is the sum of its present outputs:
// that is what Checkmate assumes, and it is what solvers see. It is exact
// for the plan semantics: a node runs as a whole, so all of its outputs
// are allocated together when it runs, at every (re)computation, and
// eq. (2)'s M_k is exactly the bytes that step allocates. The outputs may
// die at different steps, though (one half of a Split read right away, the
// other much later; a Dropout mask nobody reads). Lower records that in the
// optional Parts, Reads and OutputParts of the Problem, and Check and the
// brute-force solver account each output separately, exactly as
// passes/memory does. A solver that ignores those fields treats a node's
// outputs as one allocation that lives until the last read of any of them:
// an upper bound of the exact model, so its plans only ever come out
// cheaper in memory under Check than the solver believed.
package remat
