//go:build linux && (amd64 || arm64)

package cbc

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ebitengine/purego"
)

const (
	cbcSoname = "libCbcSolver.so.3"
	clpSoname = "libClp.so.1"
)

// libDirs lists the directories tried after the loader's own search path.
func libDirs() []string {
	return []string{
		"/usr/lib/x86_64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu",
		"/lib/x86_64-linux-gnu",
		"/lib/aarch64-linux-gnu",
		"/usr/lib64",
		"/usr/lib",
		"/usr/local/lib",
	}
}

// open dlopens soname, first bare (LD_LIBRARY_PATH, ld.so.cache), then in
// each of libDirs.
func open(soname string) (handle uintptr, path string, err error) {
	var first error
	for _, p := range append([]string{soname}, joinAll(libDirs(), soname)...) {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, p, nil
		}
		if first == nil {
			first = err
		}
	}
	return 0, "", fmt.Errorf("cbc: %w; dlopen %v (also tried %s)", ErrNotInstalled, first, strings.Join(libDirs(), ", "))
}

func joinAll(dirs []string, name string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Join(d, name)
	}
	return out
}

type binder struct {
	handle  uintptr
	missing []string
}

func (b *binder) bind(fptr any, name string) {
	sym, err := purego.Dlsym(b.handle, name)
	if err != nil || sym == 0 {
		b.missing = append(b.missing, name)
		return
	}
	purego.RegisterFunc(fptr, sym)
}

func load() (*Lib, error) {
	cbcH, cbcPath, err := open(cbcSoname)
	if err != nil {
		return nil, err
	}
	clpH, clpPath, err := open(clpSoname)
	if err != nil {
		return nil, err
	}
	l := &Lib{CBCPath: cbcPath, CLPPath: clpPath}

	b := &binder{handle: cbcH}
	b.bind(&l.cbcGetVersion, "Cbc_getVersion")
	b.bind(&l.cbcNewModel, "Cbc_newModel")
	b.bind(&l.cbcDeleteModel, "Cbc_deleteModel")
	b.bind(&l.cbcLoadProblem, "Cbc_loadProblem")
	b.bind(&l.cbcReadMps, "Cbc_readMps")
	b.bind(&l.cbcReadLp, "Cbc_readLp")
	b.bind(&l.cbcSetColName, "Cbc_setColName")
	b.bind(&l.cbcSetInteger, "Cbc_setInteger")
	b.bind(&l.cbcSetObjSense, "Cbc_setObjSense")
	b.bind(&l.cbcSetLogLevel, "Cbc_setLogLevel")
	b.bind(&l.cbcSetMaximumSeconds, "Cbc_setMaximumSeconds")
	b.bind(&l.cbcSetAllowableFractionGap, "Cbc_setAllowableFractionGap")
	b.bind(&l.cbcSetParameter, "Cbc_setParameter")
	b.bind(&l.cbcSetMIPStartI, "Cbc_setMIPStartI")
	b.bind(&l.cbcAddCutCallback, "Cbc_addCutCallback")
	b.bind(&l.cbcSolve, "Cbc_solve")
	b.bind(&l.cbcStatus, "Cbc_status")
	b.bind(&l.cbcSecondaryStatus, "Cbc_secondaryStatus")
	b.bind(&l.cbcIsProvenOptimal, "Cbc_isProvenOptimal")
	b.bind(&l.cbcIsProvenInfeasible, "Cbc_isProvenInfeasible")
	b.bind(&l.cbcIsContinuousUnbounded, "Cbc_isContinuousUnbounded")
	b.bind(&l.cbcIsSecondsLimitReached, "Cbc_isSecondsLimitReached")
	b.bind(&l.cbcGetObjValue, "Cbc_getObjValue")
	b.bind(&l.cbcGetBestPossibleObjValue, "Cbc_getBestPossibleObjValue")
	b.bind(&l.cbcBestSolution, "Cbc_bestSolution")
	b.bind(&l.cbcGetColSolution, "Cbc_getColSolution")
	b.bind(&l.cbcGetNumCols, "Cbc_getNumCols")
	b.bind(&l.cbcGetNumRows, "Cbc_getNumRows")
	b.bind(&l.cbcGetNumIntegers, "Cbc_getNumIntegers")
	b.bind(&l.cbcGetObjSense, "Cbc_getObjSense")
	b.bind(&l.cbcGetNodeCount, "Cbc_getNodeCount")
	b.bind(&l.osiGetNumCols, "Osi_getNumCols")
	b.bind(&l.osiGetColLower, "Osi_getColLower")
	b.bind(&l.osiGetColUpper, "Osi_getColUpper")
	b.bind(&l.osiCutsAddRowCut, "OsiCuts_addRowCut")
	if len(b.missing) > 0 {
		return nil, fmt.Errorf("cbc: %s lacks %s; CBC 2.10 (Debian coinor-libcbc3) is required", cbcPath, strings.Join(b.missing, ", "))
	}

	b = &binder{handle: clpH}
	b.bind(&l.clpVersion, "Clp_Version")
	b.bind(&l.clpNewModel, "Clp_newModel")
	b.bind(&l.clpDeleteModel, "Clp_deleteModel")
	b.bind(&l.clpLoadProblem, "Clp_loadProblem")
	b.bind(&l.clpReadMps, "Clp_readMps")
	b.bind(&l.clpSetObjSense, "Clp_setObjSense")
	b.bind(&l.clpSetLogLevel, "Clp_setLogLevel")
	b.bind(&l.clpSetMaximumSeconds, "Clp_setMaximumSeconds")
	b.bind(&l.clpInitialSolve, "Clp_initialSolve")
	b.bind(&l.clpStatus, "Clp_status")
	b.bind(&l.clpSecondaryStatus, "Clp_secondaryStatus")
	b.bind(&l.clpIsProvenOptimal, "Clp_isProvenOptimal")
	b.bind(&l.clpIsProvenPrimalInfeasible, "Clp_isProvenPrimalInfeasible")
	b.bind(&l.clpIsProvenDualInfeasible, "Clp_isProvenDualInfeasible")
	b.bind(&l.clpPrimalFeasible, "Clp_primalFeasible")
	b.bind(&l.clpObjectiveValue, "Clp_objectiveValue")
	b.bind(&l.clpGetColSolution, "Clp_getColSolution")
	b.bind(&l.clpGetNumCols, "Clp_getNumCols")
	b.bind(&l.clpNumberIterations, "Clp_numberIterations")
	if len(b.missing) > 0 {
		return nil, fmt.Errorf("cbc: %s lacks %s; CLP 1.17 (Debian coinor-libclp1) is required", clpPath, strings.Join(b.missing, ", "))
	}

	l.cutCallback = purego.NewCallback(l.onCut)
	return l, nil
}
