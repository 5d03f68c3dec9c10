package tfjs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realModel is one row of the real TensorFlow.js model manifest.
type realModel struct {
	name, path string
	inputs     []InputSpec
}

// realModels reads the manifest that ../shared/models/fetch-tf.sh writes:
// $REMAT_TF_MODELS, else ~/.cache/remat-compile/models/MANIFEST-tf.tsv
// (where scripts/setup.sh fetches the models). A missing manifest fails
// the test.
func realModels(t *testing.T) []realModel {
	t.Helper()
	manifest := os.Getenv("REMAT_TF_MODELS")
	if manifest == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("neither REMAT_TF_MODELS nor HOME is set: %v", err)
		}
		manifest = filepath.Join(home, ".cache", "remat-compile", "models", "MANIFEST-tf.tsv")
	}
	f, err := os.Open(manifest)
	if err != nil {
		t.Fatalf("%v\nRun scripts/setup.sh, which fetches the real TensorFlow.js models of ../shared/models and prints REMAT_TF_MODELS to export.", err)
	}
	defer f.Close()
	var models []realModel
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 || strings.TrimSpace(sc.Text()) == "" {
			continue // header
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 5 {
			t.Fatalf("%s:%d: %d columns, want 5", manifest, line, len(cols))
		}
		specs, err := ParseInputSpecs(cols[4])
		if err != nil {
			t.Fatalf("%s:%d: %v", manifest, line, err)
		}
		models = append(models, realModel{name: cols[0], path: cols[1], inputs: specs})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(models) == 0 {
		t.Fatalf("%s lists no models", manifest)
	}
	return models
}

// modelFile is what the tests read of a model.json themselves.
type modelFile struct {
	ModelTopology struct {
		Node []struct {
			Name, Op string
		}
	}
	WeightsManifest []struct {
		Weights []struct {
			Name  string
			Shape []int64
			DType string
		}
	}
}

func readModelFile(t *testing.T, path string) *modelFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m modelFile
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &m
}

// TestRealModels runs every real model of the manifest on wasm and on cpu
// (one Node process per backend, the two in parallel), profiled, then once
// more on cpu and twice more on wasm, and checks for each: every execution
// gives bitwise the same outputs; OrderedNodes lists each node once and the
// nodes that ran are exactly its non-weight, non-feed nodes in its order;
// every kernel is attributed to a node; the baseline is the weights (as
// float32/int32 after dequantization) plus the feeds; the profile's peak is
// the largest kernel snapshot; what an execution leaves allocated is its
// outputs. The cpu backend takes most of the time (efficientpose and
// posenet run for seconds per execution there), hence fewer reruns on it.
func TestRealModels(t *testing.T) {
	dir := tfjsDir(t)
	models := realModels(t)
	for _, c := range []struct {
		backend Backend
		runs    int
	}{{WASM, 2}, {CPU, 1}} {
		t.Run(string(c.backend), func(t *testing.T) {
			t.Parallel()
			var jobs []Options
			for _, m := range models {
				in, err := SeededInputs(m.inputs, 1)
				if err != nil {
					t.Fatalf("%s: %v", m.name, err)
				}
				jobs = append(jobs, Options{Dir: dir, Model: m.path, Backend: c.backend, Inputs: in, Profile: true, Order: true, Runs: c.runs})
			}
			res, err := RunAll(context.Background(), jobs)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Node start-up %v, tfjs load %v, %d models in %v",
				res[0].Timing.NodeStart, res[0].Timing.LoadTFJS, len(jobs), res[0].Timing.Total)
			for i, m := range models {
				r := res[i]
				name := fmt.Sprintf("%s/%s", m.name, c.backend)
				t.Logf("%-24s peak %9d B above baseline %9d B, %3d nodes, %3d kernels, median run %v, load %v",
					name, r.Memory.PeakBytes, r.Memory.BaselineBytes, len(r.Executed), len(r.Kernels), r.MedianRunTime(), r.Timing.LoadModel)
				if r.Backend != c.backend || r.Async || r.TFJSVersion != Version {
					t.Errorf("%s: backend %s, async %v, tfjs %s", name, r.Backend, r.Async, r.TFJSVersion)
				}
				checkDigests(t, name, r)
				if len(r.Digests) != 1+c.runs || len(r.RunTimes) != c.runs {
					t.Errorf("%s: %d digests and %d run times, want %d and %d", name, len(r.Digests), len(r.RunTimes), 1+c.runs, c.runs)
				}
				file := readModelFile(t, m.path)
				checkOrder(t, name, r, file)
				checkMemory(t, name, r, file.weightBytes()+feedBytes(m.inputs))
			}
		})
	}
}

// weightBytes is what the model's weights take in tfjs: 4 bytes an element
// (float32, also after dequantization, or int32).
func (m *modelFile) weightBytes() int64 {
	n := int64(0)
	for _, g := range m.WeightsManifest {
		for _, w := range g.Weights {
			n += 4 * Elements(w.Shape)
		}
	}
	return n
}

func feedBytes(specs []InputSpec) int64 {
	n := int64(0)
	for _, s := range specs {
		n += int64(s.DType.Size()) * Elements(s.Shape)
	}
	return n
}

// checkOrder checks OrderedNodes against the nodes that ran.
func checkOrder(t *testing.T, name string, r *Result, file *modelFile) {
	t.Helper()
	op := map[string]string{}
	for _, n := range file.ModelTopology.Node {
		op[n.Name] = n.Op
	}
	seen := map[string]bool{}
	var mustRun []string
	for _, n := range r.OrderedNodes {
		if seen[n] {
			t.Errorf("%s: OrderedNodes lists %s twice", name, n)
		}
		seen[n] = true
		o, ok := op[n]
		if !ok {
			t.Errorf("%s: OrderedNodes lists %s, which the model does not have", name, n)
		}
		if o != "Const" && o != "Placeholder" {
			mustRun = append(mustRun, n)
		}
	}
	ran := executedNames(r)
	if strings.Join(ran, ",") != strings.Join(mustRun, ",") {
		t.Errorf("%s: the nodes that ran (%d) are not OrderedNodes' non-Const, non-Placeholder nodes (%d) in order",
			name, len(ran), len(mustRun))
	}
	if len(ran) == 0 {
		t.Errorf("%s: no node ran", name)
	}
}

// checkMemory checks the profile's numbers against each other.
func checkMemory(t *testing.T, name string, r *Result, baseline int64) {
	t.Helper()
	m := r.Memory
	if m.BaselineBytes != baseline {
		t.Errorf("%s: baseline %d B, want the weights and feeds, %d B", name, m.BaselineBytes, baseline)
	}
	if m.PeakBytes <= 0 || m.ProfilePeakBytes != m.PeakBytes+m.BaselineBytes {
		t.Errorf("%s: peak %d B above a baseline of %d, tfjs's peakBytes %d", name, m.PeakBytes, m.BaselineBytes, m.ProfilePeakBytes)
	}
	maxSnap := int64(0)
	for i, k := range r.Kernels {
		maxSnap = max(maxSnap, k.TotalBytes)
		if k.Node == "" {
			t.Errorf("%s: kernel %d (%s) has no node", name, i, k.Name)
		}
		if !k.HasTime {
			t.Errorf("%s: kernel %d (%s) has no time", name, i, k.Name)
		}
	}
	if maxSnap != m.ProfilePeakBytes {
		t.Errorf("%s: the largest kernel snapshot is %d B, tfjs's peakBytes %d", name, maxSnap, m.ProfilePeakBytes)
	}
	outBytes := int64(0)
	for _, o := range r.Outputs {
		outBytes += int64(len(o.Data))
	}
	if m.NewBytes != outBytes || m.NewTensors != len(r.Outputs) {
		t.Errorf("%s: the execution left %d B in %d tensors, its outputs are %d B in %d", name, m.NewBytes, m.NewTensors, outBytes, len(r.Outputs))
	}
	if last := r.Executed[len(r.Executed)-1]; last.BytesAfterFree < m.BaselineBytes+outBytes {
		t.Errorf("%s: %d B after the last node, less than the baseline and the outputs", name, last.BytesAfterFree)
	}
}
