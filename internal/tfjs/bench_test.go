package tfjs

import (
	"context"
	"testing"
	"time"
)

// benchmarkJobs runs jobs copies of the note's small graph (one execution
// each, wasm) per iteration in one Node process, and reports where the time
// went: Node's start-up, tfjs's load, the wasm backend's initialisation and
// the model's load, per process, besides ns/op for the whole call.
func benchmarkJobs(b *testing.B, jobs int) {
	dir := tfjsDir(b)
	model := handGraph(b, b.TempDir(), nil, []gnode{unary("out", "AddV2", "c3", "a")})
	in, err := SeededInputs([]InputSpec{{Name: "x", DType: Float32, Shape: []int64{1, 16, 16, 8}}}, 1)
	if err != nil {
		b.Fatal(err)
	}
	opts := make([]Options, jobs)
	for i := range opts {
		opts[i] = Options{Dir: dir, Model: model, Inputs: in}
	}
	var node, load, backend, loadModel, run time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := RunAll(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		node += res[0].Timing.NodeStart
		load += res[0].Timing.LoadTFJS
		backend += res[0].Timing.Backend
		loadModel += res[0].Timing.LoadModel
		run += res[0].MedianRunTime()
	}
	n := float64(b.N)
	b.ReportMetric(float64(node.Milliseconds())/n, "node-start-ms")
	b.ReportMetric(float64(load.Milliseconds())/n, "tfjs-load-ms")
	b.ReportMetric(float64(backend.Microseconds())/1e3/n, "wasm-init-ms")
	b.ReportMetric(float64(loadModel.Microseconds())/1e3/n, "model-load-ms")
	b.ReportMetric(float64(run.Microseconds())/1e3/n, "execute-ms")
}

// BenchmarkRun is one Run of a small model: the fixed cost of a Node
// process.
func BenchmarkRun(b *testing.B) { benchmarkJobs(b, 1) }

// BenchmarkRunAll8 runs eight jobs in one process; compare its ns/op with
// eight times BenchmarkRun's.
func BenchmarkRunAll8(b *testing.B) { benchmarkJobs(b, 8) }
