// Package remat is the root of remat-compile, a compiler pass that makes
// neural-network graphs fit in memory. It holds no code; this page says
// where to start.
//
// The command remat-compile (cmd/remat-compile) reads an ONNX model or a
// TensorFlow graph (GraphDef .pb, TensorFlow.js model.json), optionally
// builds its training graph, fits it to a memory budget on a target
// runtime by rematerialization (recomputing values instead of keeping
// them), spatial tiling and execution order, and writes the rewritten
// graph in the input's format:
//
//	remat-compile model.onnx -o model.remat.onnx -budget 70%
//
// A Go program calls the same job through the library:
//
//   - pipeline: Load a model (a file or a zoo: spec), Train it, Fit it
//     to a budget on a target, Export the rewrite, Inspect its peak and
//     floors, Sweep a series of budgets. Start here; its Example
//     functions compile, inspect and sweep a model.
//   - verify: run the original and the rewrite in ONNX Runtime or
//     TensorFlow.js, compare outputs bitwise, and measure their peaks.
//   - targets, targets/ort, targets/tfjs, targets/liveness: the runtimes
//     a plan is made for (their execution order, allocator model and
//     order forcing).
//   - passes/remat and its solver packages (passes/remat/solvers lists
//     them): the rematerialization problem, its plans and the solvers of
//     Checkmate, MOCCASIN, TWRemat, the classic heuristics and LNS.
//   - passes/tile, passes/order, passes/arena: spatial tiling below the
//     single-node floor, the execution order of least peak, and static
//     arena offsets.
//   - passes/memory: the one memory model every peak is computed with.
//   - exporters/report: the JSON and HTML reports of a compile.
//   - bench, profiles, profiles/measure: benchmarks, device cost
//     profiles, and measuring a profile on this machine.
//   - ir, importers/*, exporters/*: the typed graph IR and its ONNX and
//     GraphDef readers and writers.
//
// DESIGN.md in the project's shared directory gives the architecture and
// the import rules internal/layering enforces; the README lists the
// commands, flags and dependencies.
package remat
