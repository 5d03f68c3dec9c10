package arena

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/order"
	"github.com/remat-compile/remat/passes/shapes"
)

// modelCase is a graph with its shapes inferred.
type modelCase struct {
	name  string
	build func() (*ir.Graph, error)
}

func zooCase(name string, c func(zoo.Model) zoo.Config) modelCase {
	return modelCase{name, func() (*ir.Graph, error) {
		m, ok := zoo.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("no zoo model %q", name)
		}
		g, err := m.Build(c(m))
		if err != nil {
			return nil, err
		}
		return g, shapes.Infer(g, shapes.Options{RequireStatic: true, File: name})
	}}
}

// realCases reads the real-model manifest ($REMAT_MODELS: name, path,
// sha256, source, input specs such as x:1x3x640x640) and returns the
// named models.
func realCases(t *testing.T, names ...string) []modelCase {
	path := os.Getenv("REMAT_MODELS")
	if path == "" {
		if testing.Short() {
			t.Skip("REMAT_MODELS is not set (-short)")
		}
		t.Fatal("REMAT_MODELS is not set: run scripts/setup.sh and source its environment")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) >= 5 {
			rows[cols[0]] = cols
		}
	}
	var out []modelCase
	for _, name := range names {
		cols, ok := rows[name]
		if !ok {
			t.Fatalf("%s: not in the manifest %s", name, path)
		}
		dims := map[string][]ir.Dim{}
		for _, spec := range strings.Fields(cols[4]) {
			parts := strings.Split(spec, ":")
			if len(parts) != 2 {
				t.Fatalf("%s: input spec %q: want name:shape", name, spec)
			}
			for _, d := range strings.Split(parts[1], "x") {
				n, err := strconv.ParseInt(d, 10, 64)
				if err != nil {
					t.Fatalf("%s: input spec %q: %v", name, spec, err)
				}
				dims[parts[0]] = append(dims[parts[0]], ir.D(n))
			}
		}
		file := cols[1]
		out = append(out, modelCase{name, func() (*ir.Graph, error) {
			g, err := onnximp.ImportFile(file, onnximp.Options{})
			if err != nil {
				return nil, err
			}
			return g, shapes.Infer(g, shapes.Options{InputShapes: dims, RequireStatic: true, File: filepath.Base(file)})
		}})
	}
	return out
}

// planModels plans each model under memory.ORT() in its file order and in
// the order passes/order chooses, checks every plan, and logs a table:
// the live-bytes peak, the arena, the fragmentation, the greedy
// placement's arena, and the peak memory.ORT() predicts for ONNX Runtime
// in that order.
func planModels(t *testing.T, cases []modelCase) {
	mem := memory.ORT()
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
		for _, o := range []struct {
			name string
			seq  []*ir.Node
		}{{"file", g.Nodes}, {"order", best.Seq}} {
			p, err := New(g, o.seq, mem, Options{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if err := Check(p); err != nil {
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
				mib(p.LivePeak), mib(p.ArenaBytes), 100*p.Fragmentation(), mib(p.GreedyBytes), p.Optimal, mib(r.PeakBytes)))
		}
	}
	t.Logf("\n| model | nodes | order | live peak | arena | fragmentation | greedy arena | optimal | ORT() peak |\n|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// mib formats bytes as MiB, or KiB below 1 MiB.
func mib(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
}

// TestZooModels plans the zoo's inference graphs at their default sizes
// (FCN8 alone builds 0.5 GB of weights: not under -short).
func TestZooModels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the zoo models at their default sizes")
	}
	def := func(m zoo.Model) zoo.Config { return m.Default }
	planModels(t, []modelCase{
		zooCase("mobilenet_v2", def), zooCase("unet", def), zooCase("fcn8", def), zooCase("segnet", def), zooCase("googlenet", def),
	})
}

// TestZooSmall plans every zoo model at its Small size.
func TestZooSmall(t *testing.T) {
	var cases []modelCase
	for _, m := range zoo.Models() {
		cases = append(cases, zooCase(m.Name, func(m zoo.Model) zoo.Config { return m.Small }))
	}
	planModels(t, cases)
}

// TestRealModels plans ppocrv4_det (1×3×640×640) and oww_embedding.
func TestRealModels(t *testing.T) {
	planModels(t, realCases(t, "ppocrv4_det", "oww_embedding"))
}
