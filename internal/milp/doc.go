// Package milp is a small modelling layer for mixed-integer linear
// programs: build a [Model] from variables, linear expressions and
// constraints, write it as a CPLEX LP or free MPS file for any solver
// (Gurobi, HiGHS, SCIP, CPLEX, CBC), or [Solve] it in-process with COIN-OR
// CBC (MILPs) and CLP (LPs and relaxations) through internal/cbc.
//
// The package never prints (CBC and CLP run at log level 0), never panics
// on bad input (problems are collected by [Model.Validate]), and keeps no
// package state; the solver libraries are opened once per process by
// internal/cbc. A missing library is an error telling the user to install
// Debian's coinor-libcbc3 and coinor-libclp1.
//
// Progress and cancellation: CBC 2.10's C API has no incumbent callback,
// so [Options.Progress] gets heartbeats with the elapsed time during the
// search and the full picture at the end. A context deadline becomes the
// solver's time limit (exact, with CBC's incumbent and bound); a context
// cancellation interrupts CBC through a cut callback that prunes the rest
// of the tree (the incumbent survives, the bound does not), and Solve stops
// waiting one second after the context is done.
package milp
