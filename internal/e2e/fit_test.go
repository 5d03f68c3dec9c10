package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remat-compile/remat/targets/ort"

	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/arena"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/order"
	"github.com/remat-compile/remat/passes/shapes"
)

// fitCase is a graph, with its shapes inferred, for the fitting passes.
type fitCase struct {
	name  string
	build func() (*ir.Graph, error)
}

// TestOrderAndArena orders each model under ort.Memory() (passes/order)
// and plans its activations in one arena (passes/arena) in the file order
// and in the chosen one: every plan passes arena.Check, the arena is never
// below the live-bytes peak, the chosen order never peaks above the file
// order. It logs a table per model: the live-bytes peak, the arena, the
// fragmentation, the greedy placement's arena, and the peak ort.Memory()
// predicts for ONNX Runtime. The models: the zoo's MobileNet v2 (224×224,
// batch 1), U-Net, FCN8, SegNet and GoogLeNet at their default sizes (not
// under -short: FCN8 alone builds 0.5 GB of weights), and the real
// ppocrv4_det (1×3×640×640) and oww_embedding.
func TestOrderAndArena(t *testing.T) {
	var cases []fitCase
	if !testing.Short() {
		for _, name := range []string{"mobilenet_v2", "unet", "fcn8", "segnet", "googlenet"} {
			cases = append(cases, fitCase{"zoo/" + name, func() (*ir.Graph, error) {
				m, _ := zoo.Lookup(name)
				g, err := m.Build(m.Default)
				if err != nil {
					return nil, err
				}
				return g, shapes.Infer(g, shapes.Options{RequireStatic: true, File: name})
			}})
		}
	}
	for _, c := range realModels(t) {
		if c.name != "real/ppocrv4_det" && c.name != "real/oww_embedding" {
			continue
		}
		cases = append(cases, fitCase{c.name, func() (*ir.Graph, error) {
			g, err := onnximp.ImportFile(c.path, onnximp.Options{})
			if err != nil {
				return nil, err
			}
			return g, shapes.Infer(g, shapes.Options{InputShapes: c.inputShapes(), RequireStatic: true, File: filepath.Base(c.path)})
		}})
	}
	if len(cases) < 2 {
		t.Fatalf("%d models, want ppocrv4_det and oww_embedding at least", len(cases))
	}
	mem := ort.Memory()
	var rows []string
	for _, c := range cases {
		g, err := c.build()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		best, err := order.Best(context.Background(), g, mem, order.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if best.Peak > best.FilePeak {
			t.Errorf("%s: chosen order peaks at %d, the file order at %d", c.name, best.Peak, best.FilePeak)
		}
		for _, o := range []struct {
			name string
			seq  []*ir.Node
		}{{"file", g.Nodes}, {"chosen", best.Seq}} {
			p, err := arena.New(g, o.seq, mem, arena.Options{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if err := arena.Check(p); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if p.ArenaBytes < p.LivePeak {
				t.Fatalf("%s: arena %d below the live peak %d", c.name, p.ArenaBytes, p.LivePeak)
			}
			r, err := memory.Simulate(g, o.seq, mem)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s | %.2f%% | %s | %v | %s |", c.name, len(g.Nodes), o.name,
				sizeString(p.LivePeak), sizeString(p.ArenaBytes), 100*p.Fragmentation(), sizeString(p.GreedyBytes), p.Optimal, sizeString(r.PeakBytes)))
		}
	}
	t.Logf("\n| model | nodes | order | live peak | arena | fragmentation | greedy arena | optimal | ORT peak |\n|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// sizeString formats bytes as MiB, or KiB below 1 MiB.
func sizeString(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
}
