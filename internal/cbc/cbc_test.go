package cbc

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lib loads the libraries or fails with Load's error, which names the
// Debian packages; under -short a missing library skips instead.
func lib(t testing.TB) *Lib {
	t.Helper()
	l, err := Load()
	if err != nil {
		if testing.Short() {
			t.Skipf("COIN-OR libraries unavailable: %v", err)
		}
		t.Fatal(err)
	}
	return l
}

func TestNotInstalledMessage(t *testing.T) {
	want := "install Debian package coinor-libcbc3 (and coinor-libclp1) with apt-get"
	if !strings.Contains(ErrNotInstalled.Error(), want) {
		t.Errorf("ErrNotInstalled = %q, want it to contain %q", ErrNotInstalled, want)
	}
}

func TestLoad(t *testing.T) {
	l := lib(t)
	l2, err := Load()
	if err != nil || l2 != l {
		t.Fatalf("second Load = %p, %v; want the same *Lib %p", l2, err, l)
	}
	cbcV, clpV := l.Version()
	if !strings.HasPrefix(cbcV, "2.10") || !strings.HasPrefix(clpV, "1.17") {
		t.Errorf("versions CBC %q, CLP %q; want 2.10.x and 1.17.x", cbcV, clpV)
	}
	t.Logf("CBC %s (%s), CLP %s (%s)", cbcV, l.CBCPath, clpV, l.CLPPath)
}

// knapsack: max 5a + 4b + 3c  s.t. 2a + 3b + c <= 5, 4a + b + 2c <= 11,
// 3a + 4b + 2c <= 8, a,b,c in {0..10} integer. Optimum 13 at (2, 0, 1).
func knapsack() *Problem {
	return &Problem{
		NumCols:  3,
		NumRows:  3,
		Start:    []int32{0, 3, 6, 9},
		Index:    []int32{0, 1, 2, 0, 1, 2, 0, 1, 2},
		Value:    []float64{2, 4, 3, 3, 1, 4, 1, 2, 2},
		ColLower: []float64{0, 0, 0},
		ColUpper: []float64{10, 10, 10},
		Obj:      []float64{5, 4, 3},
		RowLower: []float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)},
		RowUpper: []float64{5, 11, 8},
	}
}

func TestCBCKnapsack(t *testing.T) {
	l := lib(t)
	m, err := l.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.LoadProblem(knapsack()); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 3; j++ {
		if err := m.SetInteger(j); err != nil {
			t.Fatal(err)
		}
	}
	m.SetObjSense(-1)
	if rc, err := m.Solve(); err != nil || rc != 0 {
		t.Fatalf("Solve = %d, %v", rc, err)
	}
	if !m.IsProvenOptimal() || m.Status() != StatusFinished || m.SecondaryStatus() != SecondaryCompleted {
		t.Fatalf("optimal=%v status=%d/%d", m.IsProvenOptimal(), m.Status(), m.SecondaryStatus())
	}
	if got := m.ObjValue(); math.Abs(got-13) > 1e-6 {
		t.Errorf("objective %v, want 13", got)
	}
	if got := m.BestPossibleObjValue(); math.Abs(got-13) > 1e-6 {
		t.Errorf("bound %v, want 13", got)
	}
	x := m.ColSolution()
	want := []float64{2, 0, 1}
	for j := range want {
		if math.Abs(x[j]-want[j]) > 1e-6 {
			t.Errorf("x = %v, want %v", x, want)
			break
		}
	}
	if b := m.BestSolution(); len(b) != 3 || !m.HasSolution() {
		t.Errorf("BestSolution = %v, HasSolution = %v", b, m.HasSolution())
	}
	if m.NumCols() != 3 || m.NumRows() != 3 || m.NumIntegers() != 3 || m.ObjSense() != -1 {
		t.Errorf("cols %d rows %d ints %d sense %v", m.NumCols(), m.NumRows(), m.NumIntegers(), m.ObjSense())
	}
}

func TestCLPRelaxation(t *testing.T) {
	l := lib(t)
	m, err := l.NewClpModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	// max x + y  s.t. 2x + y <= 4, x + 2y <= 4: optimum 8/3 at (4/3, 4/3).
	p := &Problem{
		NumCols: 2, NumRows: 2,
		Start: []int32{0, 2, 4}, Index: []int32{0, 1, 0, 1}, Value: []float64{2, 1, 1, 2},
		ColLower: []float64{0, 0}, ColUpper: []float64{math.Inf(1), math.Inf(1)},
		Obj:      []float64{1, 1},
		RowLower: []float64{math.Inf(-1), math.Inf(-1)}, RowUpper: []float64{4, 4},
	}
	if err := m.LoadProblem(p); err != nil {
		t.Fatal(err)
	}
	m.SetObjSense(-1)
	if _, err := m.InitialSolve(); err != nil {
		t.Fatal(err)
	}
	if m.Status() != ClpOptimal || !m.IsProvenOptimal() {
		t.Fatalf("status %d", m.Status())
	}
	if got := m.ObjectiveValue(); math.Abs(got-8.0/3) > 1e-9 {
		t.Errorf("objective %v, want 8/3", got)
	}
	x := m.ColSolution()
	if len(x) != 2 || math.Abs(x[0]-4.0/3) > 1e-9 || math.Abs(x[1]-4.0/3) > 1e-9 {
		t.Errorf("x = %v, want [4/3 4/3]", x)
	}
}

func TestCLPUnboundedAndInfeasible(t *testing.T) {
	l := lib(t)
	for _, tc := range []struct {
		name   string
		rowLo  float64
		rowHi  float64
		colHi  float64
		status int
	}{
		{"unbounded", 1, math.Inf(1), math.Inf(1), ClpDualInfeasible}, // min -x s.t. x >= 1
		{"infeasible", 2, math.Inf(1), 1, ClpPrimalInfeasible},        // x >= 2, x <= 1
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := l.NewClpModel()
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			p := &Problem{NumCols: 1, NumRows: 1, Start: []int32{0, 1}, Index: []int32{0}, Value: []float64{1},
				ColLower: []float64{0}, ColUpper: []float64{tc.colHi}, Obj: []float64{-1},
				RowLower: []float64{tc.rowLo}, RowUpper: []float64{tc.rowHi}}
			if err := m.LoadProblem(p); err != nil {
				t.Fatal(err)
			}
			if _, err := m.InitialSolve(); err != nil {
				t.Fatal(err)
			}
			if m.Status() != tc.status {
				t.Errorf("status %d, want %d", m.Status(), tc.status)
			}
		})
	}
}

func TestProblemCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p *Problem)
		want string
	}{
		{"ok", func(p *Problem) {}, ""},
		{"start length", func(p *Problem) { p.Start = p.Start[:2] }, "len(Start)"},
		{"start zero", func(p *Problem) { p.Start[0] = 1 }, "Start[0]"},
		{"decreasing", func(p *Problem) { p.Start[1] = 7 }, "decreases"},
		{"row range", func(p *Problem) { p.Index[4] = 3 }, "out of range"},
		{"nan value", func(p *Problem) { p.Value[0] = math.NaN() }, "not finite"},
		{"bounds length", func(p *Problem) { p.ColUpper = p.ColUpper[:1] }, "len(ColUpper)"},
		{"nan bound", func(p *Problem) { p.RowUpper[1] = math.NaN() }, "NaN"},
		{"inf objective", func(p *Problem) { p.Obj[1] = math.Inf(1) }, "infinite"},
		{"negative size", func(p *Problem) { p.NumCols = -1 }, "out of range"},
	} {
		p := knapsack()
		tc.edit(p)
		err := p.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Check() = %v, want error containing %q", tc.name, err, tc.want)
		}
	}
	var nilP *Problem
	if nilP.Check() == nil {
		t.Error("nil problem passed Check")
	}
}

func TestFreedModel(t *testing.T) {
	l := lib(t)
	m, err := l.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	m.Free()
	m.Free()
	if err := m.LoadProblem(knapsack()); !errors.Is(err, ErrFreed) {
		t.Errorf("LoadProblem after Free = %v, want ErrFreed", err)
	}
	if _, err := m.Solve(); !errors.Is(err, ErrFreed) {
		t.Errorf("Solve after Free = %v, want ErrFreed", err)
	}
	if m.ColSolution() != nil || m.HasSolution() || !math.IsNaN(m.ObjValue()) {
		t.Error("queries on a freed model returned data")
	}
	c, err := l.NewClpModel()
	if err != nil {
		t.Fatal(err)
	}
	c.Free()
	c.Free()
	if _, err := c.InitialSolve(); !errors.Is(err, ErrFreed) {
		t.Errorf("InitialSolve after Free = %v, want ErrFreed", err)
	}
}

func TestBadArguments(t *testing.T) {
	l := lib(t)
	m, err := l.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.LoadProblem(knapsack()); err != nil {
		t.Fatal(err)
	}
	if err := m.SetInteger(3); err == nil {
		t.Error("SetInteger(3) on 3 columns succeeded")
	}
	if err := m.SetColName(-1, "x"); err == nil {
		t.Error("SetColName(-1) succeeded")
	}
	if err := m.SetMIPStart([]int{0}, []float64{1, 2}); err == nil {
		t.Error("SetMIPStart with mismatched lengths succeeded")
	}
	if err := m.SetMIPStart([]int{5}, []float64{1}); err == nil {
		t.Error("SetMIPStart with column 5 succeeded")
	}
	if err := m.SetMIPStart([]int{0}, []float64{math.NaN()}); err == nil {
		t.Error("SetMIPStart with NaN succeeded")
	}
	if err := m.ReadMps(filepath.Join(t.TempDir(), "missing.mps")); err == nil {
		t.Error("ReadMps of a missing file succeeded")
	}
	if err := m.SetInterrupt(nil); err == nil {
		t.Error("SetInterrupt(nil) succeeded")
	}
}

func TestReadMps(t *testing.T) {
	l := lib(t)
	// The knapsack above as an MPS file; markers without explicit bounds
	// would make CoinMpsIO treat a, b, c as binaries, so bounds are given.
	// COIN's reader ignores OBJSENSE; ReadMps applies it.
	const mps = `NAME knap
OBJSENSE
    MAX
ROWS
 N  obj
 L  r0
 L  r1
 L  r2
COLUMNS
    MARKER  'MARKER'  'INTORG'
    a  obj  5  r0  2
    a  r1  4  r2  3
    b  obj  4  r0  3
    b  r1  1  r2  4
    c  obj  3  r0  1
    c  r1  2  r2  2
    MARKER  'MARKER'  'INTEND'
RHS
    RHS  r0  5  r1  11
    RHS  r2  8
BOUNDS
 UP BND a 10
 UP BND b 10
 UP BND c 10
ENDATA
`
	path := filepath.Join(t.TempDir(), "knap.mps")
	if err := os.WriteFile(path, []byte(mps), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := l.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.ReadMps(path); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Solve(); err != nil { // ReadMps applied OBJSENSE
		t.Fatal(err)
	}
	if m.ObjSense() != -1 {
		t.Errorf("sense %v after reading OBJSENSE MAX", m.ObjSense())
	}
	if !m.IsProvenOptimal() || math.Abs(m.ObjValue()-13) > 1e-6 {
		t.Errorf("optimal=%v objective %v, want 13", m.IsProvenOptimal(), m.ObjValue())
	}

	c, err := l.NewClpModel()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	if err := c.ReadMps(path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InitialSolve(); err != nil {
		t.Fatal(err)
	}
	// LP relaxation: b = 0, a = 2.5 from r0 gives 12.5 + ...; just check it
	// is at least the integer optimum.
	if c.Status() != ClpOptimal || c.ObjectiveValue() < 13-1e-9 {
		t.Errorf("relaxation status %d objective %v, want optimal >= 13", c.Status(), c.ObjectiveValue())
	}
}

// hardKnapsack is a correlated multi-dimensional knapsack that CBC needs
// many seconds (and ~10^5+ nodes) to close.
func hardKnapsack(n, m int) *Problem {
	seed := uint64(12345)
	rnd := func(k int) float64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64((seed>>33)%uint64(k)) + 1
	}
	p := &Problem{NumCols: n, NumRows: m, Start: make([]int32, n+1)}
	w := make([][]float64, m)
	for i := range w {
		w[i] = make([]float64, n)
		sum := 0.0
		for j := range w[i] {
			w[i][j] = rnd(1000)
			sum += w[i][j]
		}
		p.RowLower = append(p.RowLower, math.Inf(-1))
		p.RowUpper = append(p.RowUpper, math.Floor(sum/2))
	}
	for j := 0; j < n; j++ {
		s := 0.0
		for i := 0; i < m; i++ {
			p.Index = append(p.Index, int32(i))
			p.Value = append(p.Value, w[i][j])
			s += w[i][j]
		}
		p.Start[j+1] = int32(len(p.Index))
		p.ColLower = append(p.ColLower, 0)
		p.ColUpper = append(p.ColUpper, 1)
		p.Obj = append(p.Obj, math.Floor(s/float64(m))+rnd(50))
	}
	return p
}

func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs branch and bound for about a second")
	}
	l := lib(t)
	m, err := l.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	p := hardKnapsack(60, 10)
	if err := m.LoadProblem(p); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < p.NumCols; j++ {
		m.SetInteger(j)
	}
	m.SetObjSense(-1)
	it := &Interrupt{}
	if err := m.SetInterrupt(it); err != nil {
		t.Fatal(err)
	}
	if err := m.SetInterrupt(it); err == nil {
		t.Error("second SetInterrupt succeeded")
	}
	m.SetMaximumSeconds(60) // safety net only
	time.AfterFunc(500*time.Millisecond, it.Stop)
	start := time.Now()
	if _, err := m.Solve(); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("stopped after %v: calls %d fired %d nodes %d incumbent %v", el, it.Calls(), it.fired.Load(), m.NodeCount(), m.ObjValue())
	if el > 10*time.Second {
		t.Errorf("solve took %v after an interrupt at 0.5s", el)
	}
	if !it.Fired() {
		t.Skip("CBC finished before the interrupt could fire")
	}
	if !m.HasSolution() {
		t.Error("no incumbent kept after interrupt")
	}
}

func TestInterruptBeforeSolve(t *testing.T) {
	l := lib(t)
	m, err := l.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.LoadProblem(knapsack()); err != nil {
		t.Fatal(err)
	}
	it := &Interrupt{}
	it.Stop()
	if err := m.SetInterrupt(it); err != nil {
		t.Fatal(err)
	}
	if rc, err := m.Solve(); err != nil || rc != StatusNotStarted {
		t.Errorf("Solve = %d, %v; want StatusNotStarted", rc, err)
	}
}

// Independent models solved from several goroutines at once.
func TestConcurrentModels(t *testing.T) {
	l := lib(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			if g%2 == 0 {
				m, err := l.NewModel()
				if err != nil {
					errs <- err
					return
				}
				defer m.Free()
				m.LoadProblem(knapsack())
				for j := 0; j < 3; j++ {
					m.SetInteger(j)
				}
				m.SetObjSense(-1)
				m.Solve()
				if v := m.ObjValue(); math.Abs(v-13) > 1e-6 {
					errs <- errors.New("concurrent CBC solve got a wrong objective")
				}
				return
			}
			c, err := l.NewClpModel()
			if err != nil {
				errs <- err
				return
			}
			defer c.Free()
			c.LoadProblem(knapsack())
			c.SetObjSense(-1)
			c.InitialSolve()
			if c.Status() != ClpOptimal {
				errs <- errors.New("concurrent CLP solve not optimal")
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestStripObjSense(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		sense   float64
		found   bool
		bad     bool
	}{
		{"NAME x\nROWS\n N obj\nENDATA\n", "NAME x\nROWS\n N obj\nENDATA\n", 1, false, false},
		{"NAME x\nOBJSENSE\n    MAX\nROWS\n", "NAME x\nROWS\n", -1, true, false},
		{"NAME x\nobjsense\n* comment\n  minimize\nROWS\n", "NAME x\n* comment\nROWS\n", 1, true, false},
		{"NAME x\nOBJSENSE MAXIMIZE\nROWS\n", "NAME x\nROWS\n", -1, true, false},
		{"NAME x\nOBJSENSE\nROWS\n", "", 0, false, true},
		{"NAME x\nOBJSENSE SIDEWAYS\n", "", 0, false, true},
		{"    OBJSENSE  obj  1\n", "    OBJSENSE  obj  1\n", 1, false, false}, // a column named OBJSENSE
	} {
		out, sense, found, err := stripObjSense([]byte(tc.in))
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil || string(out) != tc.out || sense != tc.sense || found != tc.found {
			t.Errorf("%q: got %q %v %v %v, want %q %v %v", tc.in, out, sense, found, err, tc.out, tc.sense, tc.found)
		}
	}
}
