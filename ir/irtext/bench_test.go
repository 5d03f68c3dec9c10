package irtext_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir/irtext"
)

// chainText is a seeded random DAG of n nodes in IR text: each node adds an
// earlier value to the previous one, and every tenth multiplies by a
// small weight.
func chainText(n int) string {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	var b strings.Builder
	b.WriteString("graph bench {\n  opset 17\n  input x:f32[N,64]\n")
	for i := 9; i < n; i += 10 {
		fmt.Fprintf(&b, "  param w%d = f32[4]{1, 2.5, -3, %d}\n", i, i)
	}
	for i := range n {
		op, a, c := "Add", "x", "x"
		if i > 0 {
			a, c = fmt.Sprintf("t%d", r.IntN(i)), fmt.Sprintf("t%d", i-1)
		}
		if i%10 == 9 {
			op, a = "Mul", fmt.Sprintf("w%d", i)
		}
		fmt.Fprintf(&b, "  t%d:f32[N,64] = %s(%s, %s) name=\"n%d\"\n", i, op, a, c, i)
	}
	fmt.Fprintf(&b, "  return t%d\n}\n", n-1)
	return b.String()
}

func BenchmarkParse(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, 100000} {
		src := chainText(n)
		b.Run(fmt.Sprint("nodes=", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := irtext.Parse("bench", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFormat(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, 100000} {
		g, err := irtext.Parse("bench", chainText(n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint("nodes=", n), func(b *testing.B) {
			for b.Loop() {
				irtext.Format(g)
			}
		})
	}
}
