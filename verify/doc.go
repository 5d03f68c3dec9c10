// Package verify runs an original model and its rematerialized rewrite in
// the target's runtime (ONNX Runtime 1.30 CPU) and checks that the rewrite
// computes the same thing, that its recomputations survived the runtime's
// optimizers and ran where the plan put them, and how much memory it
// saved: Run returns a Report. TensorFlow graphs are verified in
// TensorFlow.js instead: RunTF returns a TFReport (tfjs.go says what it
// checks; the plan is read from model.json's userDefinedMetadata under the
// same key and in the same schema, with tfjs peaks in place of ORT's).
//
// # The metadata contract, version 1
//
// A rewritten model carries its plan in ModelProto.metadata_props under the
// key "remat-compile.recompute" (exporters/onnx RematMetadataKey). The
// value is a JSON object, whose "version" is 1 (RematMetadataVersion: a
// change that removes or renames a field, or changes its meaning, raises
// it; verify reads exactly the version it knows):
//
//	{"version": 1,
//	 "solver": "milp",                  // the solver that made the plan
//	 "budget_bytes": N,                 // the memory budget it was given
//	 "predicted_peak_bytes": N,         // the plan's peak, memory model
//	 "original_peak_bytes": N,          // the original's peak, same model
//	 "ort_predicted_peak_bytes": N,     // optional: the plan's peak under the
//	 "ort_original_peak_bytes": N,      // model of ORT's allocator, and the
//	                                    // original's (exporters/onnx RematInfo)
//	 "ort_default_predicted_peak_bytes": N, // optional: the same under
//	 "ort_default_original_peak_bytes": N,  // ORT's default session options
//	                                    // (memory pattern on), over a
//	                                    // session's runs
//	 "recompute": [
//	   {"node": "enc1_conv_rc1",        // the duplicated node (unique name)
//	    "original": "enc1_conv",        // the node it copies
//	    "outputs": ["enc1_c_rc1"],      // its output tensor names
//	    "after": "dec3_relu",           // the node the plan runs right
//	                                    // before this recompute chain ("":
//	                                    // the chain starts the graph)
//	    "before": "enc1_relu_rc1"}]}    // the first node reading its
//	                                    // outputs ("": none, e.g. a graph
//	                                    // output)
//
// All names are names of root-graph nodes and tensors of the rewritten
// model; node names must be non-empty and unique. Recompute nodes and their
// outputs carry traceable names: the original's name plus a suffix such as
// "_rc1". "after" is the same for every node of one chain. The helper
// nodes that force the order (the fake dependency, e.g. depreshape) are not
// listed. The byte counts are activation bytes, comparable with what verify
// measures: graph inputs and parameters excluded, graph outputs included; 0
// means unknown. A model without the key is verified for outputs and peaks
// only; a key whose value is not such an object, or whose version is not 1,
// is a failure.
//
// # Matching profile events to nodes
//
// ORT profiles kernels under node names, but its optimizers replace nodes:
// ConvActivationFusion keeps the Conv's name for the FusedConv that absorbs
// the Relu; the NCHWc transformer names its Conv after the fused group's
// output tensor plus "_nchwc" (e1_rc1_nchwc); CSE removes one of two equal
// chains. verify maps each first-run kernel event of the remat model to at
// most one root-graph node:
//
//  1. by name: the event name equals a node's name;
//  2. by output: the event name equals an output tensor name T of a node,
//     or starts with T+"_" (the longest such T wins).
//
// A node no event matches is present when an optimizer fused it into a
// neighbour. Since fused nodes are named after the group's first node (rule
// 1) or after its last output (rule 2), verify looks for a node matched by
// name upstream of it (producers, following edges whose tensor that one
// consumer alone reads) or for a node matched by output downstream of it
// (consumers, likewise), at most fusionHops edges away through unmatched
// nodes, and takes that node's event. Where several qualify, an event of a
// kernel ORT created or changed (another op type than the node's, or a
// node_index past the file's nodes) beats an untouched one, then the nearer
// wins. A node neither matched nor fused did not run: an optimizer merged it
// away.
//
// # The checks
//
// For each recompute entry, in the remat model's first-run profile:
//   - the recompute node is present (matched or fused);
//   - its original is present too, and at a different event: if CSE merges a
//     chain it may keep either copy's name;
//   - it ran no earlier than its "after" node's last event and no later than
//     its "before" node's first event, in ORT's execution order (the order
//     of the kernel events). A side whose node is absent from the profile is
//     not checked (the report says so).
//
// Outputs must be bitwise identical. Peaks are reported, not checked: the
// activation peak is the largest mem_in_use_peak of the first run's events
// minus the arena's bytes in use before the first kernel (load-time
// allocations such as prepacked weights), measured with the arena on and the
// memory pattern off (research note ort-execution.md, Q3). Both models run
// with the same options at each level: one intra-op thread, sequential,
// profiling on, no optimizer disabled (the rewrite must survive ORT's own
// optimizers, CSE included); one profiled warm-up run, then -runs timed runs
// whose median is the run time.
//
// Each model also runs twice in one session under ORT's default options
// (arena on, memory pattern on), at each level: from the second run on the
// activations other than the outputs live in one block laid out from the
// first run's allocations, which the arena hands out before the first
// kernel, often rounded up to a power-of-two region. Measure's
// DefaultPeakBytes is the arena's peak over both runs less its baseline,
// next to the metadata's prediction for those options
// (targets/ort.DefaultMemory) when it has one.
package verify
