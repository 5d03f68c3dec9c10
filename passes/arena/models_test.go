package arena

import (
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/passes/shapes"
)

// TestZooSmall plans every zoo model at its Small size under ort.Memory()
// in its file order. internal/e2e plans the default sizes and the real
// models.
func TestZooSmall(t *testing.T) {
	for _, m := range zoo.Models() {
		g, err := m.Build(m.Small)
		if err != nil {
			t.Fatal(err)
		}
		if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: m.Name}); err != nil {
			t.Fatal(err)
		}
		p, err := New(g, g.Nodes, ort.Memory(), Options{})
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if err := Check(p); err != nil || p.ArenaBytes < p.LivePeak || p.LivePeak <= 0 {
			t.Fatalf("%s: arena %d, live peak %d: %v", m.Name, p.ArenaBytes, p.LivePeak, err)
		}
		t.Logf("%s: %d buffers, live peak %d, arena %d (greedy %d, %s, optimal %v)", m.Name, len(p.Buffers), p.LivePeak, p.ArenaBytes, p.GreedyBytes, p.Method, p.Optimal)
	}
}
