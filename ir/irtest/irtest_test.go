package irtest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir/irtest"
)

// recorder is a testing.TB that records failures instead of reporting them.
type recorder struct {
	testing.TB
	failed bool
	msgs   []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine, so that Fatalf can stop it.
func run(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

const src = `
graph g {
  input x:f32[2]
  y:f32[2] = Relu(x)
  return y
}`

func TestMustParse(t *testing.T) {
	g := irtest.MustParse(t, src)
	if len(g.Nodes) != 1 || g.Nodes[0].Op != "Relu" {
		t.Errorf("MustParse built %d nodes, want one Relu", len(g.Nodes))
	}
	r := run(t, func(tb testing.TB) { irtest.MustParse(tb, "graph g {\n  y = Relu(x)\n}") })
	if !r.failed || !strings.Contains(strings.Join(r.msgs, "\n"), `TestMustParse:2:12: undefined value "x"`) {
		t.Errorf("MustParse of bad text reported %q, want a positioned error", r.msgs)
	}
}

func TestEqual(t *testing.T) {
	a, b := irtest.MustParse(t, src), irtest.MustParse(t, src)
	if !irtest.Equal(t, a, b) {
		t.Fatal("Equal of the same text = false")
	}
	c := irtest.MustParse(t, strings.Replace(src, "Relu", "Neg", 1))
	r := run(t, func(tb testing.TB) { irtest.Equal(tb, c, a) })
	want := "graphs differ (-want +got):\n@@ -1,5 +1,5 @@\n graph g {\n   input x:f32[2]\n-  y:f32[2] = Relu(x)\n+  y:f32[2] = Neg(x)\n   return y\n }\n"
	if !r.failed || len(r.msgs) != 1 || r.msgs[0] != want {
		t.Errorf("Equal reported %q, want %q", r.msgs, want)
	}
}

func TestDiff(t *testing.T) {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	a := lines(20, func(i int) string { return fmt.Sprint("line ", i) })
	b := lines(20, func(i int) string {
		if i == 2 || i == 15 {
			return fmt.Sprint("changed ", i)
		}
		return fmt.Sprint("line ", i)
	})
	want := `@@ -1,6 +1,6 @@
 line 0
 line 1
-line 2
+changed 2
 line 3
 line 4
 line 5
@@ -13,7 +13,7 @@
 line 12
 line 13
 line 14
-line 15
+changed 15
 line 16
 line 17
 line 18
`
	if got := irtest.Diff(a, b); got != want {
		t.Errorf("Diff =\n%s\nwant\n%s", got, want)
	}
	if got := irtest.Diff(a, a); got != "" {
		t.Errorf("Diff of equal texts = %q, want empty", got)
	}
	if got := irtest.Diff("a\n", "a\nb\n"); got != "@@ -1,1 +1,2 @@\n a\n+b\n" {
		t.Errorf("Diff of an appended line = %q", got)
	}
}
