// Package measure times models in ONNX Runtime on this machine and turns
// the times into device profiles (package profiles' format) and checks of
// the cost model:
//
//   - Profile times every node of a set of models, each node alone, and
//     returns a device profile holding the measured time of every node
//     signature and a roofline fitted to them, so that the cost model
//     (profiles.Profile.Cost) answers in seconds measured here rather
//     than from a datasheet;
//   - ValidateCost compiles models at several budgets as the compile
//     command does (pipeline), times the originals and the rewrites, and
//     compares the predicted times and overheads with the measured ones.
//
// The models come as pipeline.ModelSpec (pipeline.ParseModelArgs: files,
// zoo specs, manifests). Both functions need ONNX Runtime (internal/ort);
// they never print: progress goes to an optional callback, and the
// results carry everything a caller prints.
//
// # How a node is measured
//
// Each distinct signature (profiles.NewMeasured: op, attributes, compute
// element type, input shapes) is measured once, on the first node that
// has it, as a single-node model: the node with its attributes, its
// inputs as the model's graph inputs and its outputs as graph outputs.
// Parameters and the outputs of Constant nodes stay initializers, as in
// the model (kernels precompute from constant inputs: Conv prepacks its
// weights). Activation inputs get seeded random values of their inferred
// shapes (ort.RandomTensor), except the values that steer what a node
// does rather than what it computes on: integer and bool tensors and
// small ones (at most capturedMaxElems elements: Reshape's shape, Slice's
// bounds, Resize's scales). Those get the values the whole model
// computes, captured in one run of the model on the same seeded inputs.
// Nodes inside If, Loop and Scan bodies are measured the same way, but
// their steering values cannot be captured (a body's values are not
// graph outputs): Reshape, Expand, ConstantOfShape and Tile get shapes
// derived from their inferred outputs, others random small integers. A
// single-node run whose output shapes differ from the inferred ones is
// reported and skipped, never recorded.
//
// The session options are the verifier's (ort.MeasureOptions: one
// intra-op thread, sequential execution, the CPU arena on, the memory
// pattern off) at ProfileOptions.Level, without the profiler, which adds
// several microseconds to every kernel. Each single-node model runs
// Warmup times, then Repeat times; the entry is the median of those, less
// the fixed cost of one Session.Run (runOverhead, calibrated on chains of
// tiny nodes), so that the sum of the entries predicts a whole model's run
// rather than counting that fixed cost once per node. Three things make
// a node alone behave as it does inside its model:
//
//   - Outputs: an output that is not a graph output of the model is read
//     by a one-element Slice (addSink), so that ONNX Runtime allocates it
//     from its arena and frees it after use on every run, as inside the
//     model, rather than handing it to the caller (a fresh allocation,
//     page faults included, which is what graph outputs of the model do
//     pay, and so stay graph outputs).
//   - Caches: a node run again and again alone finds its inputs in the
//     caches; inside the model, the nodes that ran since an input was
//     last touched may have evicted it. Inputs that coldInputs finds out
//     of the L2 or the L3 by reuse distance (weights, activations saved
//     for the backward pass) are pushed out to that level before each
//     timed run (ort.TimedModel.ColdInputs), the rest stay warm. The
//     cache sizes are the machine's (MachineCaches reads them from
//     sysfs), or ProfileOptions.Caches.
//   - Clock: by default the CPU time of the thread that runs the session
//     (ort.ClockCPU): on a shared machine other processes take the core
//     for milliseconds at a time, which the median of microsecond-long
//     single-node runs never sees but every run of a whole model does.
//     ValidateCost times whole models with the same clock.
//
// Checkmate §4.10 builds its cost model the same way: the cost of each
// layer profiled on the target hardware with random inputs.
//
// # How the cost model is validated
//
// For every model, graph kind (inference, training), device profile (a
// measured one and, optionally, its datasheet section alone) and budget,
// ValidateCost compiles the model as the compile command does
// (pipeline.Model.Fit, the target's refinement and order forcing
// included, then Export), runs the original and every rewrite in ONNX
// Runtime, and compares
//
//   - the predicted time of a whole model (the sum of its nodes' costs,
//     Checkmate's additive cost model, §4.10) with ORT's measured time,
//     for the original and for each rewrite (the plan's cost plus the
//     exporter's helper nodes);
//   - the predicted compute overhead of the written rewrite over the
//     original with the run-time overhead ORT shows.
//
// Timing uses the same session options as Profile; the original and its
// rewrites run in one ort.TimeModels batch, interleaved round by round,
// and each time is the median of ValidateOptions.Rounds runs.
package measure
