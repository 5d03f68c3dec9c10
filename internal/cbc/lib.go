package cbc

import (
	"errors"
	"sync"
)

// ErrNotInstalled is wrapped by the error [Load] returns when the COIN-OR
// libraries cannot be opened.
var ErrNotInstalled = errors.New("COIN-OR CBC/CLP libraries not found: install Debian package coinor-libcbc3 (and coinor-libclp1) with apt-get (apt-get install coinor-libcbc3 coinor-libclp1)")

// Lib is the opened pair of libraries with their functions resolved. It is
// created once per process by [Load] and never closed.
type Lib struct {
	// CBCPath and CLPPath are the names the libraries were opened by.
	CBCPath, CLPPath string

	// CBC.
	cbcGetVersion              func() string
	cbcNewModel                func() uintptr
	cbcDeleteModel             func(m uintptr)
	cbcLoadProblem             func(m uintptr, ncols, nrows int32, start, index *int32, value, collb, colub, obj, rowlb, rowub *float64)
	cbcReadMps                 func(m uintptr, filename string) int32
	cbcReadLp                  func(m uintptr, filename string) int32
	cbcSetColName              func(m uintptr, col int32, name string)
	cbcSetInteger              func(m uintptr, col int32)
	cbcSetObjSense             func(m uintptr, sense float64)
	cbcSetLogLevel             func(m uintptr, level int32)
	cbcSetMaximumSeconds       func(m uintptr, seconds float64)
	cbcSetAllowableFractionGap func(m uintptr, gap float64)
	cbcSetParameter            func(m uintptr, name, value string)
	cbcSetMIPStartI            func(m uintptr, count int32, idx *int32, values *float64)
	cbcAddCutCallback          func(m uintptr, cb uintptr, name string, appData uintptr)
	cbcSolve                   func(m uintptr) int32
	cbcStatus                  func(m uintptr) int32
	cbcSecondaryStatus         func(m uintptr) int32
	cbcIsProvenOptimal         func(m uintptr) int32
	cbcIsProvenInfeasible      func(m uintptr) int32
	cbcIsContinuousUnbounded   func(m uintptr) int32
	cbcIsSecondsLimitReached   func(m uintptr) int32
	cbcGetObjValue             func(m uintptr) float64
	cbcGetBestPossibleObjValue func(m uintptr) float64
	cbcBestSolution            func(m uintptr) *float64
	cbcGetColSolution          func(m uintptr) *float64
	cbcGetNumCols              func(m uintptr) int32
	cbcGetNumRows              func(m uintptr) int32
	cbcGetNumIntegers          func(m uintptr) int32
	cbcGetObjSense             func(m uintptr) float64
	cbcGetNodeCount            func(m uintptr) int32
	osiGetNumCols              func(osi uintptr) int32
	osiGetColLower             func(osi uintptr) *float64
	osiGetColUpper             func(osi uintptr) *float64
	osiCutsAddRowCut           func(cuts uintptr, nz int32, idx *int32, coef *float64, sense byte, rhs float64)

	// CLP.
	clpVersion                  func() string
	clpNewModel                 func() uintptr
	clpDeleteModel              func(m uintptr)
	clpLoadProblem              func(m uintptr, ncols, nrows int32, start, index *int32, value, collb, colub, obj, rowlb, rowub *float64)
	clpReadMps                  func(m uintptr, filename string, keepNames, ignoreErrors int32) int32
	clpSetObjSense              func(m uintptr, sense float64)
	clpSetLogLevel              func(m uintptr, level int32)
	clpSetMaximumSeconds        func(m uintptr, seconds float64)
	clpInitialSolve             func(m uintptr) int32
	clpStatus                   func(m uintptr) int32
	clpSecondaryStatus          func(m uintptr) int32
	clpIsProvenOptimal          func(m uintptr) int32
	clpIsProvenPrimalInfeasible func(m uintptr) int32
	clpIsProvenDualInfeasible   func(m uintptr) int32
	clpPrimalFeasible           func(m uintptr) int32
	clpObjectiveValue           func(m uintptr) float64
	clpGetColSolution           func(m uintptr) *float64
	clpGetNumCols               func(m uintptr) int32
	clpNumberIterations         func(m uintptr) int32

	// cutCallback is the C function pointer of [Lib.onCut], made once.
	cutCallback uintptr

	// solveMu serialises Cbc_solve (see the package documentation).
	solveMu sync.Mutex

	// mu guards the interrupt registry: the cut callback receives an
	// integer key as its appData, never a Go pointer.
	mu         sync.Mutex
	interrupts map[uintptr]*Interrupt
	nextKey    uintptr
}

var (
	loadOnce sync.Once
	loaded   *Lib
	loadErr  error
)

// Load opens libCbcSolver.so.3 and libClp.so.1 (first by soname through the
// dynamic loader's search path, then in the usual Debian and /usr/local
// directories) and resolves the functions this package uses. It does the
// work once per process; later calls return the same result. A missing
// library is an error wrapping [ErrNotInstalled]; a library that lacks a
// function this package needs is an error naming the function.
func Load() (*Lib, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

// Version reports the CBC and CLP versions the libraries announce.
func (l *Lib) Version() (cbc, clp string) {
	return l.cbcGetVersion(), l.clpVersion()
}

// register records an interrupt and returns the key the cut callback will
// receive for it.
func (l *Lib) register(it *Interrupt) uintptr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.interrupts == nil {
		l.interrupts = make(map[uintptr]*Interrupt)
	}
	l.nextKey++
	l.interrupts[l.nextKey] = it
	return l.nextKey
}

func (l *Lib) unregister(key uintptr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.interrupts, key)
}

func (l *Lib) lookup(key uintptr) *Interrupt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.interrupts[key]
}

// coinInfinity is the value CBC and CLP use for an infinite bound
// (COIN_DBL_MAX); anything at least this large in magnitude is infinite.
const coinInfinity = 1.7976931348623157e308

// onCut is the cut callback installed by [Model.SetInterrupt]. It runs on
// the solver's thread (CBC's worker threads when threads > 1) in the middle
// of branch and bound, so it does nothing but read an atomic flag and, once
// the interrupt is stopped, add a cut that makes the node infeasible.
func (l *Lib) onCut(osi, cuts, key uintptr) {
	defer func() { _ = recover() }() // never unwind through C frames
	it := l.lookup(key)
	if it == nil {
		return
	}
	it.calls.Add(1)
	if !it.stop.Load() {
		return
	}
	if l.osiGetNumCols(osi) < 1 {
		return
	}
	lo, hi := *l.osiGetColLower(osi), *l.osiGetColUpper(osi)
	idx, coef := int32(0), 1.0
	switch {
	case hi < coinInfinity/2: // x0 >= ub+1
		l.osiCutsAddRowCut(cuts, 1, &idx, &coef, 'G', hi+1)
	case lo > -coinInfinity/2: // x0 <= lb-1
		l.osiCutsAddRowCut(cuts, 1, &idx, &coef, 'L', lo-1)
	default: // x0 >= 1 and x0 <= -1
		l.osiCutsAddRowCut(cuts, 1, &idx, &coef, 'G', 1)
		l.osiCutsAddRowCut(cuts, 1, &idx, &coef, 'L', -1)
	}
	it.fired.Add(1)
}
