package cbc

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Primary status codes returned by [Model.Status] (Cbc_status).
const (
	StatusNotStarted = -1 // before branch and bound
	StatusFinished   = 0  // search finished: check IsProvenOptimal/IsProvenInfeasible
	StatusStopped    = 1  // stopped on a node, solution or time limit
	StatusAbandoned  = 2  // numerical difficulties
	StatusUserEvent  = 5  // user event
)

// Secondary status codes returned by [Model.SecondaryStatus]
// (Cbc_secondaryStatus).
const (
	SecondaryUnset            = -1
	SecondaryCompleted        = 0 // search completed with a solution
	SecondaryLPInfeasible     = 1 // linear relaxation infeasible (or worse than cutoff)
	SecondaryStoppedOnGap     = 2
	SecondaryStoppedOnNodes   = 3
	SecondaryStoppedOnTime    = 4
	SecondaryStoppedOnEvent   = 5
	SecondaryStoppedOnSols    = 6
	SecondaryLPUnbounded      = 7 // linear relaxation unbounded
	SecondaryStoppedOnIterLim = 8
)

// ErrFreed is returned by methods of a model that has been freed.
var ErrFreed = errors.New("cbc: model already freed")

// Model is one Cbc_Model. Create it with [Lib.NewModel] and release it with
// [Model.Free]. A model is not safe for concurrent use (see the package
// documentation); CBC documents that a model should be solved once.
type Model struct {
	lib     *Lib
	ptr     uintptr
	cleanup runtime.Cleanup
	it      *Interrupt
	itKey   uintptr
}

// NewModel creates an empty CBC model with logging off (log level 0).
func (l *Lib) NewModel() (*Model, error) {
	p := l.cbcNewModel()
	if p == 0 {
		return nil, errors.New("cbc: Cbc_newModel returned NULL")
	}
	m := &Model{lib: l, ptr: p}
	del := l.cbcDeleteModel
	m.cleanup = runtime.AddCleanup(m, func(p uintptr) { del(p) }, p)
	l.cbcSetLogLevel(p, 0)
	return m, nil
}

// Free deletes the C model. It is safe to call more than once.
func (m *Model) Free() {
	if m == nil || m.ptr == 0 {
		return
	}
	m.cleanup.Stop()
	m.lib.cbcDeleteModel(m.ptr)
	m.ptr = 0
	if m.itKey != 0 {
		m.lib.unregister(m.itKey)
		m.itKey = 0
	}
	runtime.KeepAlive(m)
}

func (m *Model) live() error {
	if m == nil || m.ptr == 0 {
		return ErrFreed
	}
	return nil
}

// LoadProblem loads p (Cbc_loadProblem) after checking it with
// [Problem.Check]. CBC copies the arrays.
func (m *Model) LoadProblem(p *Problem) error {
	if err := m.live(); err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return err
	}
	a := p.cArrays()
	m.lib.cbcLoadProblem(m.ptr, int32(p.NumCols), int32(p.NumRows),
		&a.start[0], &a.index[0], &a.value[0], &a.collb[0], &a.colub[0], &a.obj[0], &a.rlb[0], &a.rub[0])
	runtime.KeepAlive(a)
	return nil
}

// ReadMps replaces the model with the contents of an MPS file
// (Cbc_readMps), fixed or free. CBC 2.10's reader ignores an OBJSENSE
// section; ReadMps applies it. COIN's reader reports malformed input on
// stdout.
func (m *Model) ReadMps(path string) error {
	if err := m.live(); err != nil {
		return err
	}
	sense, found, err := readMps(path, func(p string) int32 { return m.lib.cbcReadMps(m.ptr, p) }, "Cbc_readMps")
	if err == nil && found {
		m.SetObjSense(sense)
	}
	return err
}

// ReadLp replaces the model with the contents of a CPLEX LP file
// (Cbc_readLp). COIN's reader reports malformed input on stdout.
func (m *Model) ReadLp(path string) error {
	if err := m.live(); err != nil {
		return err
	}
	// The reader reports a missing file on stdout; check first.
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("cbc: %w", err)
	}
	if rc := m.lib.cbcReadLp(m.ptr, path); rc != 0 {
		return fmt.Errorf("cbc: Cbc_readLp(%q) returned %d", path, rc)
	}
	return nil
}

func (m *Model) checkCol(col int) error {
	if err := m.live(); err != nil {
		return err
	}
	if n := int(m.lib.cbcGetNumCols(m.ptr)); col < 0 || col >= n {
		return fmt.Errorf("cbc: column %d out of range [0, %d)", col, n)
	}
	return nil
}

// SetInteger marks a column as integer (Cbc_setInteger).
func (m *Model) SetInteger(col int) error {
	if err := m.checkCol(col); err != nil {
		return err
	}
	m.lib.cbcSetInteger(m.ptr, int32(col))
	return nil
}

// SetColName names a column (Cbc_setColName); CBC matches MIP starts by
// name.
func (m *Model) SetColName(col int, name string) error {
	if err := m.checkCol(col); err != nil {
		return err
	}
	m.lib.cbcSetColName(m.ptr, int32(col), name)
	return nil
}

// SetObjSense sets the direction: 1 minimises, -1 maximises
// (Cbc_setObjSense).
func (m *Model) SetObjSense(sense float64) {
	if m.live() == nil {
		m.lib.cbcSetObjSense(m.ptr, sense)
	}
}

// SetLogLevel sets CBC's log level (Cbc_setLogLevel); anything above 0
// makes CBC print to stdout. NewModel sets 0.
func (m *Model) SetLogLevel(level int) {
	if m.live() == nil {
		m.lib.cbcSetLogLevel(m.ptr, int32(level))
	}
}

// SetMaximumSeconds sets the time limit of the search in seconds
// (Cbc_setMaximumSeconds), measured in wall-clock time: it also passes
// "timeMode elapsed", since CBC counts CPU time by default.
func (m *Model) SetMaximumSeconds(seconds float64) {
	if m.live() != nil || math.IsNaN(seconds) {
		return
	}
	m.lib.cbcSetParameter(m.ptr, "timeMode", "elapsed")
	m.lib.cbcSetMaximumSeconds(m.ptr, math.Max(seconds, 0))
}

// SetAllowableFractionGap makes CBC stop once
// |incumbent − bound| <= gap·|incumbent| (Cbc_setAllowableFractionGap).
func (m *Model) SetAllowableFractionGap(gap float64) {
	if m.live() == nil && gap >= 0 {
		m.lib.cbcSetAllowableFractionGap(m.ptr, gap)
	}
}

// SetThreads sets the number of branch-and-bound threads ("threads"
// parameter); n <= 1 leaves CBC single-threaded and deterministic.
func (m *Model) SetThreads(n int) {
	if m.live() == nil && n > 1 {
		m.lib.cbcSetParameter(m.ptr, "threads", strconv.Itoa(n))
	}
}

// SetParameter passes "-name value" to CBC's command-line driver
// (Cbc_setParameter). An unknown name makes CBC print a complaint, so
// callers should stick to documented parameters.
func (m *Model) SetParameter(name, value string) {
	if m.live() == nil {
		m.lib.cbcSetParameter(m.ptr, name, value)
	}
}

// SetMIPStart gives CBC a starting solution (Cbc_setMIPStartI): values for
// the columns in cols. CBC fixes the integer columns to their values,
// solves for the continuous ones and keeps the result as the first
// incumbent if it is feasible; integer columns not listed are taken as 0.
func (m *Model) SetMIPStart(cols []int, values []float64) error {
	if err := m.live(); err != nil {
		return err
	}
	if len(cols) != len(values) {
		return fmt.Errorf("cbc: MIP start has %d columns and %d values", len(cols), len(values))
	}
	if len(cols) == 0 {
		return nil
	}
	n := int(m.lib.cbcGetNumCols(m.ptr))
	idx := make([]int32, len(cols))
	for k, c := range cols {
		if c < 0 || c >= n {
			return fmt.Errorf("cbc: MIP start column %d out of range [0, %d)", c, n)
		}
		if math.IsNaN(values[k]) || math.IsInf(values[k], 0) {
			return fmt.Errorf("cbc: MIP start value %v for column %d is not finite", values[k], c)
		}
		idx[k] = int32(c)
	}
	m.lib.cbcSetMIPStartI(m.ptr, int32(len(idx)), &idx[0], &values[0])
	runtime.KeepAlive(idx)
	runtime.KeepAlive(values)
	return nil
}

// Interrupt lets another goroutine stop a running [Model.Solve].
//
// CBC 2.10's C interface has no way to abort a solve, so an Interrupt works
// through a cut generator (Cbc_addCutCallback) that CBC calls while it
// processes nodes: once Stop has been called, the generator answers every
// call with a cut that contradicts a column bound, which makes that node's
// LP infeasible. The remaining tree is pruned within a few node solves and
// CBC returns normally, keeping the incumbents it found before. Because the
// pruning is not a proof, after a fired interrupt CBC's "optimal" or
// "infeasible" verdicts and its bound mean nothing: check [Interrupt.Fired]
// and treat the result as a time-limited one. Phases that generate no cuts
// (preprocessing, the root heuristics, a long LP) do not see the flag until
// they end.
type Interrupt struct {
	stop  atomic.Bool
	fired atomic.Int64
	calls atomic.Int64
}

// Stop asks the solve to stop. Safe to call from any goroutine, any number
// of times, before or during the solve.
func (it *Interrupt) Stop() { it.stop.Store(true) }

// Stopped reports whether Stop has been called.
func (it *Interrupt) Stopped() bool { return it.stop.Load() }

// Fired reports whether the interrupt has cut off at least one node, that
// is, whether the solver's verdict may have been changed by it.
func (it *Interrupt) Fired() bool { return it.fired.Load() > 0 }

// Calls reports how many times CBC has called the interrupt's cut
// generator so far.
func (it *Interrupt) Calls() int64 { return it.calls.Load() }

// SetInterrupt installs it on the model (see [Interrupt]). Call it once,
// before Solve.
func (m *Model) SetInterrupt(it *Interrupt) error {
	if err := m.live(); err != nil {
		return err
	}
	if it == nil || m.it != nil {
		return errors.New("cbc: SetInterrupt needs a non-nil interrupt, once per model")
	}
	m.it = it
	m.itKey = m.lib.register(it)
	m.lib.cbcAddCutCallback(m.ptr, m.lib.cutCallback, "interrupt", m.itKey)
	return nil
}

// Solve runs CBC (Cbc_solve) and returns its result code. Solves of
// different models are serialised process-wide (see the package
// documentation). If the model's interrupt was stopped before the solve
// could start, Solve returns [StatusNotStarted] without calling CBC.
func (m *Model) Solve() (int, error) {
	if err := m.live(); err != nil {
		return StatusNotStarted, err
	}
	m.lib.solveMu.Lock()
	defer m.lib.solveMu.Unlock()
	if m.it != nil && m.it.Stopped() {
		return StatusNotStarted, nil
	}
	return int(m.lib.cbcSolve(m.ptr)), nil
}

func (m *Model) intQuery(fn func(uintptr) int32) int {
	if m.live() != nil {
		return -1
	}
	return int(fn(m.ptr))
}

// Status is Cbc_status (see the Status constants).
func (m *Model) Status() int { return m.intQuery(m.lib.cbcStatus) }

// SecondaryStatus is Cbc_secondaryStatus (see the Secondary constants).
func (m *Model) SecondaryStatus() int { return m.intQuery(m.lib.cbcSecondaryStatus) }

// IsProvenOptimal is Cbc_isProvenOptimal.
func (m *Model) IsProvenOptimal() bool { return m.intQuery(m.lib.cbcIsProvenOptimal) == 1 }

// IsProvenInfeasible is Cbc_isProvenInfeasible.
func (m *Model) IsProvenInfeasible() bool { return m.intQuery(m.lib.cbcIsProvenInfeasible) == 1 }

// IsContinuousUnbounded is Cbc_isContinuousUnbounded: the LP relaxation is
// unbounded.
func (m *Model) IsContinuousUnbounded() bool {
	return m.intQuery(m.lib.cbcIsContinuousUnbounded) == 1
}

// IsSecondsLimitReached is Cbc_isSecondsLimitReached.
func (m *Model) IsSecondsLimitReached() bool {
	return m.intQuery(m.lib.cbcIsSecondsLimitReached) == 1
}

// NumCols is Cbc_getNumCols.
func (m *Model) NumCols() int { return m.intQuery(m.lib.cbcGetNumCols) }

// NumRows is Cbc_getNumRows.
func (m *Model) NumRows() int { return m.intQuery(m.lib.cbcGetNumRows) }

// NumIntegers is Cbc_getNumIntegers.
func (m *Model) NumIntegers() int { return m.intQuery(m.lib.cbcGetNumIntegers) }

// NodeCount is Cbc_getNodeCount.
func (m *Model) NodeCount() int { return m.intQuery(m.lib.cbcGetNodeCount) }

// ObjSense is Cbc_getObjSense.
func (m *Model) ObjSense() float64 {
	if m.live() != nil {
		return math.NaN()
	}
	return m.lib.cbcGetObjSense(m.ptr)
}

// ObjValue is Cbc_getObjValue, the objective of the best solution, in the
// model's own sense; ±Inf when there is none.
func (m *Model) ObjValue() float64 {
	if m.live() != nil {
		return math.NaN()
	}
	return fromCoin(m.lib.cbcGetObjValue(m.ptr))
}

// BestPossibleObjValue is Cbc_getBestPossibleObjValue, the proven bound;
// ±Inf when there is none.
func (m *Model) BestPossibleObjValue() float64 {
	if m.live() != nil {
		return math.NaN()
	}
	return fromCoin(m.lib.cbcGetBestPossibleObjValue(m.ptr))
}

// HasSolution reports whether CBC holds an integer-feasible solution
// (Cbc_bestSolution is not NULL).
func (m *Model) HasSolution() bool {
	return m.live() == nil && m.lib.cbcBestSolution(m.ptr) != nil
}

// ColSolution returns a copy of Cbc_getColSolution: after a MILP solve
// with a solution, the best solution; nil if CBC has none.
func (m *Model) ColSolution() []float64 {
	if m.live() != nil {
		return nil
	}
	return copyC(m.lib.cbcGetColSolution(m.ptr), int(m.lib.cbcGetNumCols(m.ptr)))
}

// BestSolution returns a copy of Cbc_bestSolution, or nil if CBC found no
// integer-feasible solution.
func (m *Model) BestSolution() []float64 {
	if m.live() != nil {
		return nil
	}
	return copyC(m.lib.cbcBestSolution(m.ptr), int(m.lib.cbcGetNumCols(m.ptr)))
}

// copyC copies n doubles from C memory.
func copyC(p *float64, n int) []float64 {
	if p == nil || n <= 0 {
		return nil
	}
	return append([]float64(nil), unsafe.Slice(p, n)...)
}
