package cbc

import (
	"errors"
	"math"
	"runtime"
)

// CLP status codes returned by [ClpModel.Status] (Clp_status).
const (
	ClpOptimal          = 0
	ClpPrimalInfeasible = 1
	ClpDualInfeasible   = 2 // the primal is unbounded (if feasible)
	ClpStopped          = 3 // on iterations or time
	ClpErrors           = 4
	ClpEvent            = 5
)

// ClpModel is one Clp_Simplex, for linear programs. Create it with
// [Lib.NewClpModel] and release it with [ClpModel.Free]; it is not safe for
// concurrent use.
type ClpModel struct {
	lib     *Lib
	ptr     uintptr
	cleanup runtime.Cleanup
}

// NewClpModel creates an empty CLP model with logging off.
func (l *Lib) NewClpModel() (*ClpModel, error) {
	p := l.clpNewModel()
	if p == 0 {
		return nil, errors.New("cbc: Clp_newModel returned NULL")
	}
	m := &ClpModel{lib: l, ptr: p}
	del := l.clpDeleteModel
	m.cleanup = runtime.AddCleanup(m, func(p uintptr) { del(p) }, p)
	l.clpSetLogLevel(p, 0)
	return m, nil
}

// Free deletes the C model. It is safe to call more than once.
func (m *ClpModel) Free() {
	if m == nil || m.ptr == 0 {
		return
	}
	m.cleanup.Stop()
	m.lib.clpDeleteModel(m.ptr)
	m.ptr = 0
	runtime.KeepAlive(m)
}

func (m *ClpModel) live() error {
	if m == nil || m.ptr == 0 {
		return ErrFreed
	}
	return nil
}

// LoadProblem loads p (Clp_loadProblem) after checking it.
func (m *ClpModel) LoadProblem(p *Problem) error {
	if err := m.live(); err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return err
	}
	a := p.cArrays()
	m.lib.clpLoadProblem(m.ptr, int32(p.NumCols), int32(p.NumRows),
		&a.start[0], &a.index[0], &a.value[0], &a.collb[0], &a.colub[0], &a.obj[0], &a.rlb[0], &a.rub[0])
	runtime.KeepAlive(a)
	return nil
}

// ReadMps replaces the model with an MPS file (Clp_readMps, keeping
// names), applying an OBJSENSE section, which COIN's reader ignores.
// Integer markers are read but CLP ignores integrality.
func (m *ClpModel) ReadMps(path string) error {
	if err := m.live(); err != nil {
		return err
	}
	sense, found, err := readMps(path, func(p string) int32 { return m.lib.clpReadMps(m.ptr, p, 1, 0) }, "Clp_readMps")
	if err == nil && found {
		m.SetObjSense(sense)
	}
	return err
}

// SetObjSense sets the direction: 1 minimises, -1 maximises.
func (m *ClpModel) SetObjSense(sense float64) {
	if m.live() == nil {
		m.lib.clpSetObjSense(m.ptr, sense)
	}
}

// SetLogLevel sets CLP's log level; above 0 CLP prints to stdout.
func (m *ClpModel) SetLogLevel(level int) {
	if m.live() == nil {
		m.lib.clpSetLogLevel(m.ptr, int32(level))
	}
}

// SetMaximumSeconds sets the time limit, counted from this call
// (Clp_setMaximumSeconds).
func (m *ClpModel) SetMaximumSeconds(seconds float64) {
	if m.live() == nil && !math.IsNaN(seconds) {
		m.lib.clpSetMaximumSeconds(m.ptr, math.Max(seconds, 0))
	}
}

// InitialSolve runs CLP's general solve with presolve (Clp_initialSolve)
// and returns its result code.
func (m *ClpModel) InitialSolve() (int, error) {
	if err := m.live(); err != nil {
		return -1, err
	}
	return int(m.lib.clpInitialSolve(m.ptr)), nil
}

func (m *ClpModel) intQuery(fn func(uintptr) int32) int {
	if m.live() != nil {
		return -1
	}
	return int(fn(m.ptr))
}

// Status is Clp_status (see the Clp constants).
func (m *ClpModel) Status() int { return m.intQuery(m.lib.clpStatus) }

// SecondaryStatus is Clp_secondaryStatus.
func (m *ClpModel) SecondaryStatus() int { return m.intQuery(m.lib.clpSecondaryStatus) }

// IsProvenOptimal is Clp_isProvenOptimal.
func (m *ClpModel) IsProvenOptimal() bool { return m.intQuery(m.lib.clpIsProvenOptimal) == 1 }

// IsProvenPrimalInfeasible is Clp_isProvenPrimalInfeasible.
func (m *ClpModel) IsProvenPrimalInfeasible() bool {
	return m.intQuery(m.lib.clpIsProvenPrimalInfeasible) == 1
}

// IsProvenDualInfeasible is Clp_isProvenDualInfeasible (unbounded primal).
func (m *ClpModel) IsProvenDualInfeasible() bool {
	return m.intQuery(m.lib.clpIsProvenDualInfeasible) == 1
}

// PrimalFeasible is Clp_primalFeasible: the current point satisfies the
// constraints within tolerance.
func (m *ClpModel) PrimalFeasible() bool { return m.intQuery(m.lib.clpPrimalFeasible) == 1 }

// NumCols is Clp_getNumCols.
func (m *ClpModel) NumCols() int { return m.intQuery(m.lib.clpGetNumCols) }

// Iterations is Clp_numberIterations.
func (m *ClpModel) Iterations() int { return m.intQuery(m.lib.clpNumberIterations) }

// ObjectiveValue is Clp_objectiveValue, in the model's own sense.
func (m *ClpModel) ObjectiveValue() float64 {
	if m.live() != nil {
		return math.NaN()
	}
	return fromCoin(m.lib.clpObjectiveValue(m.ptr))
}

// ColSolution returns a copy of the primal column solution
// (Clp_getColSolution).
func (m *ClpModel) ColSolution() []float64 {
	if m.live() != nil {
		return nil
	}
	return copyC(m.lib.clpGetColSolution(m.ptr), int(m.lib.clpGetNumCols(m.ptr)))
}
