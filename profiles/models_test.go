package profiles_test

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	onnximp "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/profiles"
)

// costGraph costs every node of g's root graph on p and returns the total.
// Every node must be costed without error, by a known formula (no Note
// about unknown ops), with a positive finite time.
func costGraph(t *testing.T, name string, g *ir.Graph, p *profiles.Profile) profiles.Cost {
	t.Helper()
	var total profiles.Cost
	for _, n := range g.Nodes {
		c, err := p.Cost(n)
		if err != nil {
			t.Fatalf("%s on %s: %v", name, p.Device.Name, err)
		}
		if !(c.Seconds > 0) || math.IsInf(c.Seconds, 0) || c.FLOPs < 0 || c.BytesRead < 0 || c.BytesWritten < 0 {
			t.Fatalf("%s on %s: node %s (%s): implausible cost %+v", name, p.Device.Name, n, n.Op, c)
		}
		if strings.Contains(c.Note, "unknown op") || strings.Contains(c.Note, "no FLOP formula") {
			t.Errorf("%s: node %s (%s): %s", name, n, n.Op, c.Note)
		}
		if c.Source != profiles.SourceDatasheet {
			t.Errorf("%s: node %s: source %q from a datasheet-only profile", name, n, c.Source)
		}
		total.Seconds += c.Seconds
		total.FLOPs += c.FLOPs
		total.BytesRead += c.BytesRead
		total.BytesWritten += c.BytesWritten
	}
	return total
}

func builtins(t *testing.T) []*profiles.Profile {
	var ps []*profiles.Profile
	for _, name := range profiles.Builtins() {
		ps = append(ps, load(t, name))
	}
	return ps
}

// TestZoo costs every node of every zoo model on every built-in device.
func TestZoo(t *testing.T) {
	ps := builtins(t)
	for _, m := range zoo.Models() {
		t.Run(m.Name, func(t *testing.T) {
			g, err := m.Build(m.Small)
			if err != nil {
				t.Fatal(err)
			}
			if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: m.Name}); err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if c := costGraph(t, m.Name, g, p); c.FLOPs <= 0 {
					t.Errorf("%s on %s: no FLOPs at all", m.Name, p.Device.Name)
				}
			}
		})
	}
}

// TestResNet50Default checks the totals of the paper's ResNet-50 (batch 1,
// 224×224) against the well-known figure of about 4.1 GMACs, and that the
// devices rank as they should.
func TestResNet50Default(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the full-size ResNet-50")
	}
	m, ok := zoo.Lookup("resnet50")
	if !ok {
		t.Fatal("no resnet50 in the zoo")
	}
	g, err := m.Build(m.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := shapes.Infer(g, shapes.Options{RequireStatic: true, File: m.Name}); err != nil {
		t.Fatal(err)
	}
	order := []string{"h100-80gb", "a100-80gb", "v100-16gb", "jetson-orin-nano-8gb", "rpi4-4gb", "stm32h7"}
	prev := 0.0
	for _, name := range order {
		c := costGraph(t, m.Name, g, load(t, name))
		if gmac := c.FLOPs / 2e9; gmac < 3.9 || gmac > 4.4 {
			t.Errorf("ResNet-50: %.2f GMACs, want about 4.1", gmac)
		}
		t.Logf("ResNet-50 on %-21s %9.3f ms, %.2f GFLOPs, %.0f MB moved", name, c.Seconds*1e3, c.FLOPs/1e9, float64(c.Bytes())/1e6)
		if c.Seconds <= prev {
			t.Errorf("ResNet-50 takes %g s on %s, not more than on the faster device before it (%g s)", c.Seconds, name, prev)
		}
		prev = c.Seconds
	}
}

// TestRealModels costs the third-party models of ../shared/models, listed
// in the manifest that $REMAT_MODELS names (scripts/setup.sh sets it).
func TestRealModels(t *testing.T) {
	manifest := os.Getenv("REMAT_MODELS")
	if manifest == "" {
		t.Skip("REMAT_MODELS is not set (scripts/setup.sh fetches the real models)")
	}
	f, err := os.Open(manifest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps := builtins(t)
	sc := bufio.NewScanner(f)
	models := 0
	for line := 0; sc.Scan(); line++ {
		cols := strings.Split(sc.Text(), "\t")
		if line == 0 || len(cols) < 5 {
			continue
		}
		models++
		name, path := cols[0], cols[1]
		t.Run(name, func(t *testing.T) {
			opts := shapes.Options{RequireStatic: true, File: filepath.Base(path),
				InputShapes: map[string][]ir.Dim{}, InputValues: map[string]*ir.Tensor{}}
			for _, spec := range strings.Fields(cols[4]) {
				input, rest, _ := strings.Cut(spec, ":")
				if v, ok := strings.CutPrefix(rest, "scalar:int64="); ok {
					x, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("manifest: %s: %v", spec, err)
					}
					opts.InputValues[input] = ir.Int64Tensor([]int64{}, x)
					continue
				}
				var dims []ir.Dim
				for _, d := range strings.Split(rest, "x") {
					x, err := strconv.ParseInt(d, 10, 64)
					if err != nil {
						t.Fatalf("manifest: %s: %v", spec, err)
					}
					dims = append(dims, ir.D(x))
				}
				opts.InputShapes[input] = dims
			}
			g, err := onnximp.ImportFile(path, onnximp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := shapes.Infer(g, opts); err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				c := costGraph(t, name, g, p)
				if p.Device.Name == "v100-16gb" {
					t.Logf("%s on %s: %.3f ms, %.3f GFLOPs, %.1f MB moved", name, p.Device.Name, c.Seconds*1e3, c.FLOPs/1e9, float64(c.Bytes())/1e6)
				}
			}
		})
	}
	if models < 5 {
		t.Errorf("manifest %s lists %d models, want the 5 of ../shared/models", manifest, models)
	}
}
