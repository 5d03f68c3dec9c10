package milp

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remat-compile/remat/internal/cbc"
)

// needLib loads CBC/CLP or fails with the error naming the Debian
// packages; under -short a missing library skips the test instead.
func needLib(t testing.TB) *cbc.Lib {
	t.Helper()
	l, err := cbc.Load()
	if err != nil {
		if testing.Short() {
			t.Skipf("COIN-OR libraries unavailable: %v", err)
		}
		t.Fatal(err)
	}
	return l
}

func solve(t testing.TB, ctx context.Context, m *Model, opt Options) *Solution {
	t.Helper()
	s, err := Solve(ctx, m, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// p01 is Burkardt's knapsack instance P01: capacity 165, optimum 309 with
// items 1, 2, 3, 4 and 6.
var (
	p01Weights = []float64{23, 31, 29, 44, 53, 38, 63, 85, 89, 82}
	p01Profits = []float64{92, 57, 49, 68, 60, 43, 67, 84, 87, 72}
)

const p01Capacity = 165

func p01(integer bool) (*Model, []Var) {
	m := NewModel("p01")
	var obj, w Expr
	xs := make([]Var, len(p01Weights))
	for i := range xs {
		xs[i] = m.AddVar("item", 0, 1, integer)
		obj.AddTerm(xs[i], p01Profits[i])
		w.AddTerm(xs[i], p01Weights[i])
	}
	m.AddConstr("capacity", w, LE, p01Capacity)
	m.SetObjective(obj, Maximize)
	return m, xs
}

func TestSolveKnapsack(t *testing.T) {
	needLib(t)
	m, xs := p01(true)
	s := solve(t, context.Background(), m, Options{})
	if s.Status != Optimal || s.Solver != "cbc" || s.Limit != LimitNone {
		t.Fatalf("status %v solver %s limit %v", s.Status, s.Solver, s.Limit)
	}
	if !near(s.Objective, 309) || !near(s.Bound, 309) || s.Gap > 1e-9 {
		t.Errorf("objective %v bound %v gap %v, want 309", s.Objective, s.Bound, s.Gap)
	}
	want := []float64{1, 1, 1, 1, 0, 1, 0, 0, 0, 0}
	for i, v := range xs {
		if s.Value(v) != want[i] {
			t.Fatalf("x = %v, want %v", s.Values, want)
		}
	}
	if !math.IsNaN(s.Value(Var(99))) || !math.IsNaN((*Solution)(nil).Value(0)) {
		t.Error("Value out of range is not NaN")
	}
}

func TestSolveInfeasible(t *testing.T) {
	needLib(t)
	m := NewModel("infeasible")
	x, y := m.AddBinary("x"), m.AddBinary("y")
	m.AddConstr("three", Sum(x, y), GE, 3)
	m.SetObjective(Sum(x, y), Minimize)
	s := solve(t, context.Background(), m, Options{})
	if s.Status != Infeasible || s.Values != nil || !math.IsNaN(s.Objective) || !math.IsInf(s.Bound, 1) {
		t.Errorf("got %+v, want Infeasible without values, bound +Inf", s)
	}
	// The relaxation is infeasible too, and CLP says so.
	s = solve(t, context.Background(), m, Options{Relax: true})
	if s.Status != Infeasible || s.Solver != "clp" {
		t.Errorf("relaxation: %v by %s, want infeasible by clp", s.Status, s.Solver)
	}
}

func TestSolveUnbounded(t *testing.T) {
	needLib(t)
	for _, integer := range []bool{false, true} {
		m := NewModel("unbounded")
		x := m.AddVar("x", 0, Inf, integer)
		y := m.AddVar("y", 0, Inf, integer)
		d := VarExpr(x, 1)
		d.AddTerm(y, -1)
		m.AddConstr("diff", d, LE, 1)
		m.SetObjective(Sum(x, y), Maximize)
		s := solve(t, context.Background(), m, Options{})
		wantSolver := map[bool]string{false: "clp", true: "cbc"}[integer]
		if s.Status != Unbounded || s.Solver != wantSolver || !math.IsInf(s.Bound, 1) {
			t.Errorf("integer=%v: %v by %s bound %v, want unbounded by %s, bound +Inf", integer, s.Status, s.Solver, s.Bound, wantSolver)
		}
	}
}

func TestSolveLPRelaxation(t *testing.T) {
	needLib(t)
	// max x + y  s.t. 2x + y <= 4, x + 2y <= 4: optimum 8/3 at (4/3, 4/3).
	m := NewModel("lp")
	x := m.AddContinuous("x", 0, Inf)
	y := m.AddContinuous("y", 0, Inf)
	var a, b Expr
	a.AddTerm(x, 2).AddTerm(y, 1)
	b.AddTerm(x, 1).AddTerm(y, 2)
	m.AddConstr("a", a, LE, 4)
	m.AddConstr("b", b, LE, 4)
	m.SetObjective(Sum(x, y), Maximize)
	s := solve(t, context.Background(), m, Options{})
	if s.Status != Optimal || s.Solver != "clp" || !near(s.Objective, 8.0/3) || !near(s.Value(x), 4.0/3) || !near(s.Value(y), 4.0/3) {
		t.Errorf("got %v by %s objective %v x %v", s.Status, s.Solver, s.Objective, s.Values)
	}

	// The P01 relaxation: the greedy fractional knapsack is optimal.
	k, xs := p01(true)
	order := make([]int, len(p01Weights))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		return p01Profits[order[a]]/p01Weights[order[a]] > p01Profits[order[b]]/p01Weights[order[b]]
	})
	want, room := 0.0, float64(p01Capacity)
	fractional := -1
	for _, i := range order {
		take := math.Min(1, room/p01Weights[i])
		want += take * p01Profits[i]
		room -= take * p01Weights[i]
		if take > 0 && take < 1 {
			fractional = i
		}
		if room <= 0 {
			break
		}
	}
	s = solve(t, context.Background(), k, Options{Relax: true})
	if s.Status != Optimal || s.Solver != "clp" || !near(s.Objective, want) {
		t.Fatalf("relaxation %v by %s objective %v, want %v", s.Status, s.Solver, s.Objective, want)
	}
	if fractional < 0 || math.Abs(s.Value(xs[fractional])-math.Round(s.Value(xs[fractional]))) < 1e-6 {
		t.Errorf("relaxation values %v: item %d should be fractional (integer variables are not rounded under Relax)", s.Values, fractional)
	}
}

// hardKnapsack is a multi-dimensional 0/1 knapsack with profits correlated
// to weights: n = 40, m = 5 takes CBC seconds and ~10^5 nodes to prove.
func hardKnapsack(n, k int, seed uint64) (*Model, []Var) {
	r := rand.New(rand.NewPCG(seed, 1))
	m := NewModel("mdknap")
	xs := make([]Var, n)
	for j := range xs {
		xs[j] = m.AddBinary("x")
	}
	w := make([][]float64, k)
	for i := range w {
		w[i] = make([]float64, n)
		var row Expr
		sum := 0.0
		for j := range w[i] {
			w[i][j] = float64(r.IntN(1000) + 1)
			sum += w[i][j]
			row.AddTerm(xs[j], w[i][j])
		}
		m.AddConstr("dim", row, LE, math.Floor(sum/2))
	}
	var obj Expr
	for j := range xs {
		s := 0.0
		for i := range w {
			s += w[i][j]
		}
		obj.AddTerm(xs[j], math.Floor(s/float64(k))+float64(r.IntN(50)))
	}
	m.SetObjective(obj, Maximize)
	return m, xs
}

// greedyStart fills the knapsack item by item while every dimension fits.
func greedyStart(m *Model, xs []Var) map[Var]float64 {
	start := map[Var]float64{}
	x := make([]float64, m.NumVars())
	for _, v := range xs {
		x[v] = 1
		if m.MaxViolation(x) > 0 {
			x[v] = 0
		}
		start[v] = x[v]
	}
	return start
}

func TestSolveTimeLimited(t *testing.T) {
	needLib(t)
	m, _ := hardKnapsack(40, 5, 1)
	begin := time.Now()
	s := solve(t, context.Background(), m, Options{TimeLimit: time.Millisecond})
	el := time.Since(begin)
	t.Logf("1ms limit: %v objective %v bound %v gap %v nodes %d in %v", s.Status, s.Objective, s.Bound, s.Gap, s.Nodes, el)
	if s.Status != Feasible && s.Status != NoSolution {
		t.Errorf("status %v, want feasible or no solution", s.Status)
	}
	if s.Limit != LimitTime {
		t.Errorf("limit %v, want time limit", s.Limit)
	}
	if s.Status == Feasible && (m.MaxViolation(s.Values) > 0 || !(s.Gap > 0) || s.Bound < s.Objective) {
		t.Errorf("feasible result: violation %v gap %v bound %v objective %v", m.MaxViolation(s.Values), s.Gap, s.Bound, s.Objective)
	}
	if el > 3*time.Second {
		t.Errorf("a 1ms time limit took %v", el)
	}
}

func TestSolveMIPStart(t *testing.T) {
	needLib(t)
	m, xs := hardKnapsack(40, 5, 1)
	start := greedyStart(m, xs)
	x := make([]float64, m.NumVars())
	for v, val := range start {
		x[v] = val
	}
	startObj := m.ObjectiveValue(x)
	// A feasible start makes every result feasible, the start or better.
	// The limit leaves CBC time to read the start on a loaded machine: at
	// 1 ms, a CI run stopped before it and found no solution.
	s := solve(t, context.Background(), m, Options{TimeLimit: 500 * time.Millisecond, MIPStart: start})
	t.Logf("start %v, result %v %v (bound %v)", startObj, s.Status, s.Objective, s.Bound)
	if s.Status != Feasible && s.Status != Optimal {
		t.Fatalf("status %v with a feasible MIP start", s.Status)
	}
	if s.Objective < startObj-1e-9 {
		t.Errorf("objective %v is worse than the start's %v", s.Objective, startObj)
	}
	// An infeasible start is dropped, not trusted.
	p, _ := p01(true)
	s = solve(t, context.Background(), p, Options{MIPStart: map[Var]float64{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}})
	if s.Status != Optimal || !near(s.Objective, 309) {
		t.Errorf("P01 with an infeasible start: %v %v, want optimal 309", s.Status, s.Objective)
	}
}

func TestSolveGap(t *testing.T) {
	needLib(t)
	m, _ := hardKnapsack(40, 5, 1)
	s := solve(t, context.Background(), m, Options{Gap: 0.05, TimeLimit: 20 * time.Second})
	if s.Status != Optimal || s.Gap > 0.05+1e-9 || s.Limit != LimitNone {
		t.Errorf("gap 5%%: %v gap %v limit %v", s.Status, s.Gap, s.Limit)
	}
}

func TestSolveCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs branch and bound for a second or two")
	}
	needLib(t)
	m, _ := hardKnapsack(60, 10, 2)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	begin := time.Now()
	s := solve(t, ctx, m, Options{})
	el := time.Since(begin)
	t.Logf("cancelled at 200ms: %v objective %v bound %v in %v", s.Status, s.Objective, s.Bound, el)
	if el > 200*time.Millisecond+cancelGrace+500*time.Millisecond {
		t.Errorf("Solve returned %v after a cancellation at 200ms", el)
	}
	if s.Status != Feasible && s.Status != NoSolution || s.Limit != LimitContext {
		t.Errorf("got %v, limit %v; want feasible or no solution, limit context", s.Status, s.Limit)
	}
	if s.Status == Feasible && (m.MaxViolation(s.Values) > 0 || !math.IsInf(s.Bound, 1) || !math.IsInf(s.Gap, 1)) {
		t.Errorf("after cancellation: violation %v bound %v gap %v; want a feasible point and an unknown bound", m.MaxViolation(s.Values), s.Bound, s.Gap)
	}

	// Already cancelled: no solve at all.
	s = solve(t, ctx, m, Options{})
	if s.Status != NoSolution || s.Limit != LimitContext || s.Solver != "none" {
		t.Errorf("cancelled context: %+v", s)
	}
}

func TestSolveDeadline(t *testing.T) {
	needLib(t)
	m, _ := hardKnapsack(60, 10, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	s := solve(t, ctx, m, Options{TimeLimit: time.Hour})
	el := time.Since(begin)
	t.Logf("deadline 300ms: %v objective %v bound %v gap %v in %v", s.Status, s.Objective, s.Bound, s.Gap, el)
	if el > 2*time.Second {
		t.Errorf("Solve returned %v after a 300ms deadline", el)
	}
	if s.Limit != LimitContext || s.Status != Feasible && s.Status != NoSolution {
		t.Errorf("got %v limit %v", s.Status, s.Limit)
	}
	// With the deadline as time limit CBC stops by itself and its bound
	// holds.
	if s.Status == Feasible && (s.Bound < s.Objective || math.IsInf(s.Bound, 0)) {
		t.Errorf("bound %v objective %v", s.Bound, s.Objective)
	}
}

func TestSolveProgress(t *testing.T) {
	needLib(t)
	m, _ := hardKnapsack(60, 10, 2)
	var reports []Progress
	s := solve(t, context.Background(), m, Options{TimeLimit: 1200 * time.Millisecond, Progress: func(p Progress) { reports = append(reports, p) }})
	if len(reports) < 2 {
		t.Fatalf("%d progress reports, want heartbeats and a final one", len(reports))
	}
	last := reports[len(reports)-1]
	if !last.Final || last.Incumbent != s.Objective && !(math.IsNaN(last.Incumbent) && math.IsNaN(s.Objective)) || last.Bound != s.Bound {
		t.Errorf("final report %+v, solution %v/%v", last, s.Objective, s.Bound)
	}
	for _, p := range reports[:len(reports)-1] {
		if p.Final || p.Elapsed <= 0 {
			t.Errorf("heartbeat %+v", p)
		}
	}
}

func TestSolveThreads(t *testing.T) {
	needLib(t)
	m, _ := p01(true)
	s := solve(t, context.Background(), m, Options{Threads: 2})
	if s.Status != Optimal || !near(s.Objective, 309) {
		t.Errorf("threads 2: %v %v", s.Status, s.Objective)
	}
}

func TestSolveConcurrent(t *testing.T) {
	needLib(t)
	var wg sync.WaitGroup
	errs := make(chan string, 6)
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			m, _ := p01(true)
			s, err := Solve(context.Background(), m, Options{Relax: g%2 == 1})
			if err != nil {
				errs <- err.Error()
				return
			}
			if g%2 == 0 && !near(s.Objective, 309) || g%2 == 1 && s.Objective < 309 {
				errs <- s.Status.String()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// The MPS and LP files, read back by CBC, give the same optimum as
// solving the model directly.
func TestRoundTrip(t *testing.T) {
	lib := needLib(t)
	m, _ := goldenModel()
	direct := solve(t, context.Background(), m, Options{})
	if direct.Status != Optimal {
		t.Fatalf("golden model: %v", direct.Status)
	}
	t.Logf("golden model optimum %v", direct.Objective)
	dir := t.TempDir()
	for _, format := range []string{"mps", "lp"} {
		var buf bytes.Buffer
		var err error
		if format == "mps" {
			err = m.WriteMPS(&buf)
		} else {
			err = m.WriteLP(&buf)
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "golden."+format)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := lib.NewModel()
		if err != nil {
			t.Fatal(err)
		}
		if format == "mps" {
			err = c.ReadMps(path) // applies OBJSENSE, which CBC's reader ignores
		} else {
			err = c.ReadLp(path)
		}
		if err != nil {
			c.Free()
			t.Fatal(err)
		}
		if c.NumCols() != m.NumVars() || c.NumIntegers() != m.NumIntegers() {
			t.Errorf("%s: %d columns, %d integers", format, c.NumCols(), c.NumIntegers())
		}
		if _, err := c.Solve(); err != nil {
			t.Fatal(err)
		}
		if c.ObjSense() != -1 {
			t.Errorf("%s: sense %v, want -1 (maximise)", format, c.ObjSense())
		}
		if !c.IsProvenOptimal() || !near(c.ObjValue(), direct.Objective) {
			t.Errorf("%s read back: optimal=%v objective %v, want %v", format, c.IsProvenOptimal(), c.ObjValue(), direct.Objective)
		}
		c.Free()
	}
}

func TestSolveEmptyModel(t *testing.T) {
	m := NewModel("empty")
	m.SetObjective(Constant(4), Maximize)
	s := solve(t, context.Background(), m, Options{})
	if s.Status != Optimal || s.Objective != 4 || len(s.Values) != 0 {
		t.Errorf("empty model: %+v", s)
	}
	m.AddConstr("impossible", Constant(1), LE, 0)
	s = solve(t, context.Background(), m, Options{})
	if s.Status != Infeasible {
		t.Errorf("empty model with 1 <= 0: %v", s.Status)
	}
}

func TestSolveBadInput(t *testing.T) {
	m := NewModel("bad")
	x := m.AddVar("x", 2, 1, false)
	y := m.AddVar("y", math.NaN(), 1, true)
	m.AddVar("z", Inf, Inf, false)
	m.AddConstr("nan", VarExpr(x, math.NaN()), LE, 1)
	m.AddConstr("foreign", VarExpr(Var(42), 1), LE, 1)
	m.AddConstr("sense", VarExpr(y, 1), Sense(9), 1)
	m.AddConstr("rhs", VarExpr(y, 1), LE, Inf)
	m.AddRange("range", 3, VarExpr(y, 1), 2)
	m.AddRange("void", math.Inf(-1), VarExpr(y, 1), Inf)
	m.SetObjective(VarExpr(x, Inf), Direction(7))
	_, err := Solve(context.Background(), m, Options{})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Solve = %v, want *ValidationError", err)
	}
	for _, want := range []string{"lower bound 2 > upper bound 1", "NaN bound", "no finite value", "coefficient NaN",
		"variable 42 is not in the model", "invalid sense", "right-hand side +Inf", "range lower side 3 > upper side 2", "objective: coefficient +Inf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(ve.Problems) != maxProblems || ve.More == 0 || !strings.Contains(err.Error(), "more") {
		t.Errorf("%d problems, %d more: %v", len(ve.Problems), ve.More, err)
	}
	if _, err := Solve(context.Background(), nil, Options{}); err == nil {
		t.Error("Solve(nil) succeeded")
	}
}

func TestSolveBadOptions(t *testing.T) {
	m, _ := p01(true)
	for _, o := range []Options{
		{TimeLimit: -time.Second},
		{Gap: -0.1},
		{Gap: math.NaN()},
		{Threads: -1},
		{MIPStart: map[Var]float64{Var(10): 1}},
		{MIPStart: map[Var]float64{0: math.Inf(1)}},
	} {
		if _, err := Solve(context.Background(), m, o); err == nil {
			t.Errorf("Solve with %+v succeeded", o)
		}
	}
}

// TestQuiet runs solves in a child process and checks that neither CBC nor
// CLP wrote anything to stdout or stderr.
func TestQuiet(t *testing.T) {
	if os.Getenv("MILP_QUIET_CHILD") == "1" {
		needLib(t)
		m, xs := hardKnapsack(40, 5, 1)
		Solve(context.Background(), m, Options{TimeLimit: 100 * time.Millisecond, MIPStart: greedyStart(m, xs)})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		Solve(ctx, m, Options{})
		g, _ := goldenModel()
		Solve(context.Background(), g, Options{})
		Solve(context.Background(), g, Options{Relax: true})
		u := NewModel("u")
		x := u.AddVar("x", 0, Inf, true)
		u.SetObjective(VarExpr(x, 1), Maximize)
		Solve(context.Background(), u, Options{})
		// Reading our own files back, OBJSENSE included.
		dir := t.TempDir()
		var buf bytes.Buffer
		g.WriteMPS(&buf)
		os.WriteFile(filepath.Join(dir, "g.mps"), buf.Bytes(), 0o644)
		buf.Reset()
		g.WriteLP(&buf)
		os.WriteFile(filepath.Join(dir, "g.lp"), buf.Bytes(), 0o644)
		lib := needLib(t)
		c, _ := lib.NewModel()
		c.ReadMps(filepath.Join(dir, "g.mps"))
		c.Solve()
		c.Free()
		c, _ = lib.NewModel()
		c.ReadLp(filepath.Join(dir, "g.lp"))
		c.Solve()
		c.Free()
		return
	}
	needLib(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestQuiet$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MILP_QUIET_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	out := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(stdout.String()), "PASS"))
	if out != "" || stderr.Len() > 0 {
		t.Errorf("solver output leaked:\nstdout: %q\nstderr: %q", out, stderr.String())
	}
}

func TestExpr(t *testing.T) {
	var e Expr
	e.AddTerm(2, 1).AddTerm(0, 3).AddTerm(2, -1).AddConst(1)
	f := Sum(0, 1)
	f.Scale(2)
	e.Add(f).AddScaled(Constant(5), 2)
	n := e.Normalized()
	if len(n.Terms) != 2 || n.Terms[0] != (Term{0, 5}) || n.Terms[1] != (Term{1, 2}) || n.Const != 11 {
		t.Errorf("normalized %+v", n)
	}
	if got := e.Eval([]float64{1, 2, 3}); got != 5+4+11 {
		t.Errorf("Eval = %v", got)
	}
	c := n.Clone()
	c.Terms[0].Coef = 99
	if n.Terms[0].Coef != 5 {
		t.Error("Clone shares terms")
	}
	e.Add(e) // adding an expression to itself doubles it
	if got := e.Normalized(); got.Const != 22 || got.Terms[0].Coef != 10 {
		t.Errorf("e + e = %+v", got)
	}
}

func TestModelAccessors(t *testing.T) {
	m, vs := goldenModel()
	if m.Name() != "golden\ttest" || m.NumVars() != 10 || m.NumConstrs() != 7 || m.NumIntegers() != 4 {
		t.Errorf("name %q vars %d constrs %d ints %d", m.Name(), m.NumVars(), m.NumConstrs(), m.NumIntegers())
	}
	if lo, hi := m.Bounds(vs[5]); lo != -5 || hi != 5 || !m.IsInteger(vs[5]) || m.VarName(vs[1]) != "long name[1]" {
		t.Errorf("var 5 bounds %v %v", lo, hi)
	}
	m.SetBounds(vs[1], 0, 2)
	m.SetInteger(vs[1], true)
	if lo, hi := m.Bounds(vs[1]); lo != 0 || hi != 2 || !m.IsInteger(vs[1]) {
		t.Error("SetBounds/SetInteger had no effect")
	}
	m.SetBounds(Var(-1), 0, 0) // ignored, no panic
	if lo, _ := m.Bounds(Var(99)); !math.IsNaN(lo) || m.VarName(Var(99)) != "" || m.IsInteger(-3) {
		t.Error("out-of-range accessors")
	}
	name, e, lo, hi, ok := m.Constraint(2)
	if !ok || name != "eq" || lo != 2 || hi != 2 || len(e.Terms) != 3 {
		t.Errorf("constraint 2: %q %+v [%v, %v] %v", name, e, lo, hi, ok)
	}
	if _, _, _, _, ok := m.Constraint(7); ok {
		t.Error("Constraint(7) ok")
	}
	obj, dir := m.Objective()
	if dir != Maximize || obj.Const != 10 || dir.String() != "maximize" || Minimize.String() != "minimize" {
		t.Errorf("objective %+v %v", obj, dir)
	}
	for _, s := range []Status{NoSolution, Optimal, Feasible, Infeasible, Unbounded, 9} {
		if s.String() == "" {
			t.Errorf("Status(%d) has no name", s)
		}
	}
	if LE.String() != "<=" || Sense(0).String() != "Sense(0)" || LimitContext.String() != "context" {
		t.Error("String methods")
	}
	if m.MaxViolation([]float64{1}) != math.Inf(1) {
		t.Error("MaxViolation of a short point")
	}
}
