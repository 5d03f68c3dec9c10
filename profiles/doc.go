// Package profiles holds device profiles and the cost model that turns a
// node of a typed graph into seconds and bytes on a device.
//
// A profile describes one device: its memory capacity (the default budget
// of the rematerialization pass), its peak arithmetic rates by element
// type, its memory bandwidth and the fixed cost of running one kernel. It
// may also carry a roofline fitted to measurements and measured times of
// exact node signatures, which `remat-compile profile` writes in the same
// format. Built-in profiles (Builtins) cover the V100-16GB of the papers,
// the A100-80GB, the H100-80GB, the Jetson Orin Nano 8GB, the Raspberry Pi 4
// (4 GB), an STM32H7-class microcontroller and one core of a generic x86-64
// CPU (cpu-generic, the default datasheet of `remat-compile profile`); their files under
// profiles/data cite where each figure comes from. -profile takes a built-in
// name or a file (Load).
//
// # Cost model
//
// Cost counts a node's FLOPs from its inferred shapes and its bytes moved
// (every distinct input read once, parameters included, every output
// written once), then looks its time up in this order, and reports which
// source answered:
//
//  1. measured: the node's exact signature (op, domain, canonical
//     attributes, compute element type, input shapes) has a measured entry;
//  2. fitted: the profile has a fitted roofline: overhead_seconds +
//     max(FLOPs / flops_per_second, bytes / bytes_per_second);
//  3. datasheet: launch_overhead_seconds + max(FLOPs / peak rate, bytes /
//     memory_bandwidth_bytes_per_second), where the peak rate is the one of
//     the node's compute element type, from peak_matrix_flops for matrix
//     work (Conv, ConvTranspose, ConvInteger, QLinearConv, Gemm, MatMul,
//     MatMulInteger, QLinearMatMul, Einsum, LSTM, GRU, RNN) when listed,
//     else from peak_flops; uint8 and 4-bit integers fall back to i8, and
//     any type still without a rate to f32.
//
// FLOPs count arithmetic operations of any element type, a multiply-add
// being two:
//
//   - Conv, ConvInteger, QLinearConv: 2·N·Cout·∏out_spatial·(Cin/group)·∏kernel,
//     plus one per output element for a bias and 3 for the QLinear
//     rescale; ConvTranspose: 2·|X|·(Cout/group)·∏kernel.
//   - Gemm, MatMul, MatMulInteger, QLinearMatMul: 2·|Y|·K, broadcast batch
//     dimensions included; Einsum: its naive loop nest, one operation per
//     operand per point of the joint index space.
//   - LSTM, GRU, RNN: per time step and direction, the gates' input and
//     recurrent matrix products (2·batch·gates·hidden·(input+hidden)), the
//     biases, and the gates' pointwise work with the default activations.
//   - Elementwise ops: 1 per output element (+, −, ×, ÷, √, compare,
//     select, cast), a few for piecewise activations, TranscendentalFLOPs
//     for exp, log, tanh, erf, sin, pow…, more for composites (Sigmoid,
//     Gelu, Softplus, Mish).
//   - Reductions: 1 or 2 per input element plus a finishing step per output
//     element; Softmax and LogSoftmax: SoftmaxFLOPs per element;
//     normalizations that compute statistics: NormFLOPs per element;
//     BatchNormalization in inference mode: 2 (folded scale and shift).
//   - Pooling: the kernel's size per output element (global pools: one per
//     input element); Resize, Upsample, GridSample: 1 per output element
//     for nearest, 2·2^d for linear and 2·4^d for cubic over d axes.
//   - Data movement (Concat, Split, Slice, Transpose, Gather, Pad, Expand,
//     Tile, …): no FLOPs, bytes only; Gather and Slice read only as much of
//     their data as they return.
//   - Views and metadata (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
//     Shape, Size, Constant, …): no FLOPs, no bytes, the overhead only.
//   - If, Loop, Scan: their bodies (the taken If branch when the condition
//     is constant, else the costlier one; Loop and Scan bodies times the
//     trip count when it is known, else once, with a Note), plus one
//     overhead; Source is the least trusted source of the body nodes
//     (measured entries apply to body nodes, never to If, Loop or Scan).
//   - An op of another domain, or one the IR does not know: its bytes alone
//     on the datasheet roofline, Source "datasheet", with a Note.
//
// A node whose inputs or outputs have no static size is an error that names
// it: shapes are inferred (passes/shapes) before costing.
//
// # File format
//
// A profile is one YAML document. Numbers are plain YAML numbers (900e9,
// 5e-6, 17179869184); rates are per second and sizes in bytes. Unknown
// fields are errors, so that a typo is never silently ignored.
//
//	format: remat-profile/v1          # required, exactly this
//	device:                           # required: the datasheet roofline
//	  name: v100-16gb                 # required: letters, digits, . _ + -
//	  description: NVIDIA Tesla V100-SXM2-16GB, datasheet figures
//	  memory_bytes: 17179869184       # required, > 0: capacity, the default budget
//	  memory_bandwidth_bytes_per_second: 900e9   # required, > 0
//	  launch_overhead_seconds: 5e-6   # optional, >= 0 (default 0): per node
//	  peak_flops:                     # required, f32 required: vector rate per element type
//	    f64: 7.8e12
//	    f32: 15.7e12
//	    f16: 31.4e12
//	  peak_matrix_flops:              # optional: tensor-core / matrix-unit rate per element type
//	    f16: 125e12
//	fitted:                           # optional: a roofline fitted to measurements
//	  flops_per_second: 11.2e12       # required in fitted, > 0: effective rate
//	  bytes_per_second: 780e9         # required in fitted, > 0: effective bandwidth
//	  overhead_seconds: 7.5e-6        # optional, >= 0: effective cost per node
//	  source: remat-compile profile, ONNX Runtime 1.30 CUDA, 412 kernels
//	measured:                         # optional: times of exact node signatures
//	  - op: Conv                      # required
//	    domain: ""                    # optional, "" is the standard ONNX domain
//	    attrs: 'kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]'  # CanonicalAttrs
//	    dtype: f32                    # required: ComputeDType
//	    shapes: [[1, 64, 56, 56], [64, 64, 3, 3], null]  # one per input slot; null: absent; []: scalar
//	    seconds: 1.9e-4               # required, > 0: one run
//	    repeats: 100                  # required, >= 1: runs the time comes from
//
// Element types are the IR's short names: f64, f32, f16, bf16, f8e4m3fn,
// f8e5m2, i8, u8, i16, i32, i64, … (ir.DType.String). Marshal writes this
// format deterministically; Parse reports every problem with its file,
// line and field.
package profiles
