package tile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/memory"
	"github.com/remat-compile/remat/passes/shapes"
)

// realModel is one of the models of the table: how to build its
// graph with static shapes, and the input shapes.
type realModel struct {
	name  string
	build func(t testing.TB) *ir.Graph
}

func zooModel(name string) realModel {
	return realModel{name: "zoo:" + name, build: func(t testing.TB) *ir.Graph {
		m, ok := zoo.Lookup(name)
		if !ok {
			t.Fatalf("zoo has no %s", name)
		}
		g, err := m.Build(m.Default)
		if err != nil {
			t.Fatal(err)
		}
		if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: name}); err != nil {
			t.Fatal(err)
		}
		return g
	}}
}

// manifestModel reads a model of the REMAT_MODELS manifest with the input
// shapes it lists.
func manifestModel(name string) realModel {
	return realModel{name: name, build: func(t testing.TB) *ir.Graph {
		path, shp := manifestEntry(t, name)
		g, err := onnximp.ImportFile(path, onnximp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := shapes.Infer(g, shapes.Options{InputShapes: shp, RequireStatic: true, File: filepath.Base(path)}); err != nil {
			t.Fatal(err)
		}
		return g
	}}
}

func manifestEntry(t testing.TB, name string) (string, map[string][]ir.Dim) {
	manifest := os.Getenv("REMAT_MODELS")
	if manifest == "" {
		t.Fatalf("REMAT_MODELS is not set: run scripts/setup.sh and export it")
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		cols := strings.Split(line, "\t")
		if len(cols) < 5 || cols[0] != name {
			continue
		}
		shp := map[string][]ir.Dim{}
		for _, spec := range strings.Fields(cols[4]) {
			parts := strings.Split(spec, ":")
			var d []ir.Dim
			for _, x := range strings.Split(parts[1], "x") {
				var n int64
				fmt.Sscan(x, &n)
				d = append(d, ir.D(n))
			}
			shp[parts[0]] = d
		}
		return cols[1], shp
	}
	t.Fatalf("%s is not in %s", name, manifest)
	return "", nil
}

// ortOrder is the order ONNX Runtime runs g in (exporters/onnx).
func ortOrder(g *ir.Graph) ([]*ir.Node, error) { return onnxexp.ORTSchedule(g, onnxexp.Options{}) }

func TestPrintModelPeaks(t *testing.T) {
	if os.Getenv("TILE_PRINT") == "" {
		t.Skip("set TILE_PRINT")
	}
	for _, m := range []realModel{zooModel("mobilenet_v2"), zooModel("unet"), zooModel("fcn8"), zooModel("segnet"), manifestModel("ppocrv4_det"), manifestModel("oww_embedding")} {
		g := m.build(t)
		seq, err := ortOrder(g)
		if err != nil {
			t.Fatal(err)
		}
		r, err := memory.Simulate(g, seq, memory.ORT())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s: %d nodes, ORT peak %.2f MiB at %s (%s)\n", m.name, len(g.Nodes), float64(r.PeakBytes)/(1<<20), seq[r.PeakStep], seq[r.PeakStep].Op)
		for i, l := range r.AtPeak {
			if i > 5 {
				break
			}
			fmt.Printf("   %8.2f MiB %s %s\n", float64(l.Bytes)/(1<<20), l.Value, l.Value.Type)
		}
	}
}

func TestFitModelsDebug(t *testing.T) {
	names := os.Getenv("TILE_FIT")
	if names == "" {
		t.Skip("set TILE_FIT")
	}
	all := map[string]realModel{}
	for _, m := range []realModel{zooModel("mobilenet_v2"), zooModel("unet"), zooModel("fcn8"), zooModel("segnet"), manifestModel("ppocrv4_det"), manifestModel("oww_embedding")} {
		all[m.name] = m
	}
	for _, name := range strings.Split(names, ",") {
		m := all[name]
		g := m.build(t)
		start := time.Now()
		var budgetFrac, maxExtra float64
		fmt.Sscan(os.Getenv("TILE_BUDGET"), &budgetFrac)
		fmt.Sscan(os.Getenv("TILE_EXTRA"), &maxExtra)
		opts := Options{Memory: memory.ORT(), Order: ortOrder, Runtime: &ORT, MaxExtra: maxExtra}
		if budgetFrac > 0 {
			seq, _ := ortOrder(g)
			r, _ := memory.Simulate(g, seq, memory.ORT())
			opts.Budget = int64(float64(r.PeakBytes) * budgetFrac)
		}
		res, err := Fit(g, opts)
		if res == nil {
			t.Fatal(err)
		}
		fmt.Printf("%s: %v, %d evaluations in %v\n", name, err, res.Evaluated, time.Since(start))
		fmt.Printf("  peak %.2f → %.2f MiB at %s; cost +%.1f%%\n", mib(res.PeakBefore), mib(res.PeakAfter), res.PeakNode, 100*(res.CostAfter-res.CostBefore)/res.CostBefore)
		if seq, err := ortOrder(g); err == nil {
			if r, err := memory.Simulate(g, seq, memory.ORT()); err == nil {
				for i, l := range r.AtPeak {
					if i < 8 {
						fmt.Printf("    at peak: %.2f MiB %s %s (step %d of %d)\n", mib(l.Bytes), l.Value, l.Value.Type, l.Step, len(seq))
					}
				}
			}
		}
		for _, r := range res.Regions {
			fmt.Printf("  region %d nodes (%s .. %s), %d bands, halo %v, kept %v: %.2f → %.2f MiB, +%.1f%%\n", len(r.Nodes), r.Nodes[0], r.Nodes[len(r.Nodes)-1], r.Bands, r.Halo, r.Kept, mib(r.PeakBefore), mib(r.PeakAfter), r.ExtraPercent)
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// measureORT exports g (with value_info, as internal/memcheck does), runs
// it once in ORT at level disabled with the arena on and the memory
// pattern off, and returns the activation peak: the largest
// mem_in_use_peak less the bytes in use before the first kernel.
func measureORT(t testing.TB, g *ir.Graph, path string, inputs map[string]ort.Tensor) (peak int64, out *ort.Result) {
	t.Helper()
	if err := onnxexp.ExportFile(g, path, onnxexp.Options{ValueInfo: true}); err != nil {
		t.Fatal(err)
	}
	res, err := ort.Run(path, inputs, ort.MeasureOptions("disabled"))
	if err != nil {
		t.Fatal(err)
	}
	first := res.Profile.Nodes[0]
	base := first.MemBytesInUse - first.MemInUseDelta
	return res.Profile.PeakBytes() - base, res
}
