package milp

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// goldenModel exercises every writer path: a general integer with default
// bounds, a bounded continuous variable whose name needs sanitising, a free
// variable, binaries with a name LP readers would take for a number and a
// duplicate, an integer with negative bounds and a leading digit, a fixed
// variable named like a keyword, an unnamed variable with a negative lower
// bound, an unused variable, a variable with only a negative upper bound;
// LE, GE, EQ and range rows, an objective constant, merged duplicate terms,
// expression constants moved to the right-hand side, and a constraint named
// like the objective row.
func goldenModel() (*Model, []Var) {
	m := NewModel("golden\ttest")
	x := m.AddInteger("x", 0, Inf)
	long := m.AddContinuous("long name[1]", 0, 1.5)
	z := m.AddContinuous("z", math.Inf(-1), Inf)
	b1 := m.AddBinary("e1")
	b2 := m.AddBinary("e1")
	n := m.AddInteger("3count", -5, 5)
	f := m.AddContinuous("free", 2, 2)
	w := m.AddContinuous("", -3, Inf)
	u := m.AddContinuous("unused", 0, Inf)
	neg := m.AddContinuous("neg", math.Inf(-1), -1)

	var obj Expr
	obj.AddTerm(x, 1).AddTerm(long, 2).AddTerm(z, -1).AddTerm(b1, 4).AddTerm(b2, -1).
		AddTerm(n, 0.5).AddTerm(w, 1).AddTerm(neg, 1).AddTerm(x, 2).AddConst(10)
	m.SetObjective(obj, Maximize)

	var cap Expr
	cap.AddTerm(x, 2).AddTerm(long, 1).AddTerm(b1, 1)
	m.AddConstr("cap", cap, LE, 7.5)
	m.AddRange("rng", 1, Sum(x, z, n), 5)
	eq := Sum(long, z)
	eq.AddTerm(w, -1).AddConst(1)
	m.AddConstr("eq", eq, EQ, 3)
	m.AddConstr("cap", Sum(b1, b2), GE, 1)
	m.AddConstr("", Sum(f, neg), LE, 0)
	var o Expr
	o.AddTerm(x, 1).AddTerm(w, -1)
	m.AddConstr("obj", o, GE, -10)
	m.AddRange("half", math.Inf(-1), VarExpr(z, 1e-7), 1e6)
	return m, []Var{x, long, z, b1, b2, n, f, w, u, neg}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestWriteLPGolden(t *testing.T) {
	m, _ := goldenModel()
	var buf bytes.Buffer
	if err := m.WriteLP(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "golden.lp", buf.Bytes())
	var again bytes.Buffer
	m.WriteLP(&again)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("WriteLP is not deterministic")
	}
}

func TestWriteMPSGolden(t *testing.T) {
	m, _ := goldenModel()
	var buf bytes.Buffer
	if err := m.WriteMPS(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "golden.mps", buf.Bytes())
	var again bytes.Buffer
	m.WriteMPS(&again)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("WriteMPS is not deterministic")
	}
}

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"x", "x"},
		{"", "d0"},
		{"a b", "a_b"},
		{"x[3,4]", "x_3_4_"},
		{"3x", "_3x"},
		{".x", "_.x"},
		{"e", "_e"},
		{"E12", "_E12"},
		{"ee", "_ee"},
		{"eel", "_eel"},
		{"edge", "edge"},
		{"st", "st_"},
		{"Free", "Free_"},
		{"END", "END_"},
		{"s.t.", "s.t._"},
		{"naïve", "na__ve"},
		{strings.Repeat("a", 300), strings.Repeat("a", 240)},
	} {
		if got := sanitize(tc.in, "d0"); got != tc.want {
			t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	names := []string{"a", "a", "a_2", "obj", "b", "a"}
	uniquify(names, "obj")
	want := []string{"a", "a_2", "a_2_2", "obj_2", "b", "a_3"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("uniquify = %v, want %v", names, want)
	}
}

func TestWriteLongExpression(t *testing.T) {
	m := NewModel("long")
	var e Expr
	for i := 0; i < 500; i++ {
		e.AddTerm(m.AddBinary(strings.Repeat("v", 20)+string(rune('a'+i%26))), float64(i+1))
	}
	m.AddConstr("big", e, LE, 100)
	m.SetObjective(e, Maximize)
	var buf bytes.Buffer
	if err := m.WriteLP(&buf); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(buf.String(), "\n") {
		if len(l) > 255 {
			t.Fatalf("line %d has %d characters", i+1, len(l))
		}
	}
}

func TestWriteInvalid(t *testing.T) {
	m := NewModel("bad")
	m.AddVar("x", 1, 0, false)
	var ve *ValidationError
	if err := m.WriteLP(&bytes.Buffer{}); !errors.As(err, &ve) {
		t.Errorf("WriteLP = %v, want *ValidationError", err)
	}
	if err := m.WriteMPS(&bytes.Buffer{}); !errors.As(err, &ve) {
		t.Errorf("WriteMPS = %v, want *ValidationError", err)
	}
	e := NewModel("novars")
	e.AddConstr("c", Expr{}, LE, 1)
	if err := e.WriteLP(&bytes.Buffer{}); err == nil {
		t.Error("WriteLP of constraints without variables succeeded")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteError(t *testing.T) {
	m, _ := goldenModel()
	if err := m.WriteLP(failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteLP to a failing writer = %v", err)
	}
	if err := m.WriteMPS(failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteMPS to a failing writer = %v", err)
	}
}
