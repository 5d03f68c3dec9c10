// Package cbc binds the C interfaces of COIN-OR CBC 2.10 (branch and cut,
// libCbcSolver.so.3, Debian package coinor-libcbc3) and CLP 1.17 (simplex,
// libClp.so.1, Debian package coinor-libclp1). The libraries are opened at
// run time with github.com/ebitengine/purego, so the package builds and runs
// with CGO_ENABLED=0; a machine without them gets an error from [Load] that
// names the packages to install.
//
// The binding is deliberately thin: [Model] wraps one Cbc_Model, [ClpModel]
// one Clp_Simplex, and [Problem] is the column-major (CSC) matrix both
// loadProblem functions take. Modelling, names and result interpretation live
// in internal/milp.
//
// # Functions bound
//
// CBC: Cbc_getVersion, Cbc_newModel, Cbc_deleteModel, Cbc_loadProblem,
// Cbc_readMps, Cbc_readLp, Cbc_setColName, Cbc_setInteger, Cbc_setObjSense,
// Cbc_setLogLevel, Cbc_setMaximumSeconds, Cbc_setAllowableFractionGap,
// Cbc_setParameter, Cbc_setMIPStartI, Cbc_addCutCallback, Cbc_solve,
// Cbc_status, Cbc_secondaryStatus, Cbc_isProvenOptimal,
// Cbc_isProvenInfeasible, Cbc_isContinuousUnbounded,
// Cbc_isSecondsLimitReached, Cbc_getObjValue, Cbc_getBestPossibleObjValue,
// Cbc_bestSolution, Cbc_getColSolution, Cbc_getNumCols, Cbc_getNumRows,
// Cbc_getNumIntegers, Cbc_getObjSense, Cbc_getNodeCount, and from the cut
// callback Osi_getNumCols, Osi_getColLower, Osi_getColUpper and
// OsiCuts_addRowCut.
//
// CLP: Clp_Version, Clp_newModel, Clp_deleteModel, Clp_loadProblem,
// Clp_readMps, Clp_setObjSense, Clp_setLogLevel, Clp_setMaximumSeconds,
// Clp_initialSolve, Clp_status, Clp_secondaryStatus, Clp_isProvenOptimal,
// Clp_isProvenPrimalInfeasible, Clp_isProvenDualInfeasible,
// Clp_primalFeasible, Clp_objectiveValue, Clp_getColSolution,
// Clp_getNumCols, Clp_numberIterations.
//
// CBC 2.10.8 exports no incumbent or progress callback (Cbc_addIncCallback
// and Cbc_addProgrCallback came later) and no event handler, and its message
// callback (Cbc_registerCallBack) only sees messages that pass the log level,
// which CBC then also prints to stdout. The one hook that runs inside branch
// and bound without printing is the cut callback; [Interrupt] uses it to stop
// a running solve (see there).
//
// # Concurrency
//
// A [Lib] is safe for concurrent use. A [Model] or [ClpModel] belongs to one
// goroutine at a time: build it, solve it, read it and free it from the same
// goroutine (or hand it over with proper synchronisation). Only
// [Interrupt.Stop] may be called from another goroutine while a solve runs.
// CBC's Cbc_solve runs the CbcMain1 driver, which in 2.10 still keeps some
// process-wide state (its command-line parser), so Lib serialises Cbc_solve
// calls across models; CLP solves of different models run in parallel.
//
// Every model must be freed with Free; a cleanup frees a model that became
// unreachable without it, but relying on that keeps C memory alive for
// longer than needed.
package cbc
