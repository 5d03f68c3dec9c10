// Package ort runs ONNX model files in ONNX Runtime (ORT) 1.30 on the CPU
// and measures them. It is the harness behind the tests and the `verify` and
// `profile` commands.
//
// The package talks to ORT through github.com/yalue/onnxruntime_go, which needs
// cgo. Built without cgo (CGO_ENABLED=0) the package still compiles, but Run,
// RandomInputs, ModelIO, ValueShapes and Version return an error; the pure-Go
// parts (Tensor, Options, the profile parser, RandomTensor, LibraryPath) work
// either way.
//
// # The library
//
// ORT is loaded at run time from the shared library that LibraryPath finds
// ($REMAT_ORT_LIB, else the copy that scripts/setup.sh installs from the npm
// package onnxruntime-node@1.30.0). The ORT environment is created once per
// process, on first use, and never destroyed; the package keeps no other
// mutable state, so any number of tests and goroutines may call it.
//
// # Measuring memory honestly
//
// The research note ort-execution.md (in shared/research beside the
// repository) records how ORT 1.30 executes graphs and how its memory can be
// measured. In short: ORT's defaults (arena on, memory pattern on) make the
// reported peak depend on the memory-pattern block rather than on the live
// activations; with the arena on and the memory pattern off, the profile's
// per-node mem_in_use_peak is the activation peak. MeasureOptions returns
// that configuration. From level "basic" up, ORT's
// CommonSubexpressionElimination merges duplicated (recomputed) node chains;
// add CSE to Options.DisabledOptimizers to keep them. ORT runs nodes in its
// own topological order, not the file's: read the order from the profile.
//
// # Limitations
//
// Only tensor inputs and outputs of the types listed at Tensor are supported
// (no strings, sequences or maps). onnxruntime_go v1.27.0 cannot hand back
// ORT-allocated float16/bfloat16 or rank-0 outputs, so Run allocates those
// itself (see Options.OutputShapes), and it cannot pass rank-0 or empty
// float16/bfloat16 inputs.
//
// # Profiles
//
// With Options.Profile set, ORT writes a Chrome-trace JSON file when the
// session is released (onnxruntime_go releases it in Destroy; the file is
// named <prefix>_<date>_<time>.json, the prefix being a temporary directory
// that Run removes afterwards). Run parses it into a Profile holding the
// kernel-time events of the first run only; see NodeEvent for the fields ORT
// 1.30 reports.
package ort

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// ORTVersion is the ONNX Runtime release the project measures against.
const ORTVersion = "1.30.0"

// CSE is the name of ORT's common-subexpression-elimination optimizer, the one
// that merges recomputed node chains back into their originals from level
// "basic" up (see the research note, Q2).
const CSE = "CommonSubexpressionElimination"

// LibraryPath returns the path of ORT's shared library libonnxruntime.so.1:
// $REMAT_ORT_LIB if it is set, else
// ${REMAT_CACHE:-$HOME/.cache/remat-compile}/ort/node_modules/onnxruntime-node/bin/napi-v6/<os>/<arch>/libonnxruntime.so.1,
// the file that scripts/setup.sh installs. If the file does not exist, the
// error says how to install it.
func LibraryPath() (string, error) {
	rel := filepath.Join("node_modules", "onnxruntime-node", "bin", "napi-v6", npmOS(), npmArch(), "libonnxruntime.so.1")
	if p := os.Getenv("REMAT_ORT_LIB"); p != "" {
		if err := checkFile(p); err != nil {
			return "", fmt.Errorf("ONNX Runtime library $REMAT_ORT_LIB=%s: %v\n"+
				"Install ONNX Runtime %s with\n"+
				"    npm install --ignore-scripts --prefix DIR onnxruntime-node@%s\n"+
				"and set REMAT_ORT_LIB=DIR/%s,\n"+
				"or unset REMAT_ORT_LIB and run the project's setup script scripts/setup.sh",
				p, err, ORTVersion, ORTVersion, filepath.ToSlash(rel))
		}
		return p, nil
	}
	dir, err := cacheDir()
	if err != nil {
		return "", fmt.Errorf("ONNX Runtime library: %v; set REMAT_ORT_LIB to the path of libonnxruntime.so.1 "+
			"(npm install --ignore-scripts --prefix DIR onnxruntime-node@%s installs it as DIR/%s)",
			err, ORTVersion, filepath.ToSlash(rel))
	}
	prefix := filepath.Join(dir, "ort")
	p := filepath.Join(prefix, rel)
	if err := checkFile(p); err != nil {
		return "", fmt.Errorf("ONNX Runtime library not found: %v\n"+
			"Run the project's setup script scripts/setup.sh, or install ONNX Runtime %s with\n"+
			"    npm install --ignore-scripts --prefix %s onnxruntime-node@%s\n"+
			"or set REMAT_ORT_LIB to an existing libonnxruntime.so.1",
			err, ORTVersion, prefix, ORTVersion)
	}
	return p, nil
}

func checkFile(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s does not exist", p)
		}
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	return nil
}

// cacheDir is ${REMAT_CACHE:-$HOME/.cache/remat-compile}.
func cacheDir() (string, error) {
	if d := os.Getenv("REMAT_CACHE"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("neither $REMAT_CACHE nor $HOME is set")
	}
	return filepath.Join(home, ".cache", "remat-compile"), nil
}

// npmOS and npmArch name the platform directories of the onnxruntime-node
// package (bin/napi-v6/<os>/<arch>).
func npmOS() string {
	if runtime.GOOS == "windows" {
		return "win32"
	}
	return runtime.GOOS
}

func npmArch() string {
	if runtime.GOARCH == "amd64" {
		return "x64"
	}
	return runtime.GOARCH
}

// Options configures an ORT session. The zero value means level "all", one
// thread, arena off, memory pattern off, no profiling, one run; ORT's own
// defaults are DefaultOptions, the measuring configuration MeasureOptions.
type Options struct {
	// Level is the graph optimization level: "disabled", "basic",
	// "extended", "layout" or "all" ("" means "all", ORT's default). At
	// "disabled" ORT runs the nodes of the file unchanged, so profile events
	// map one to one onto GraphProto.node (node_index is the position there).
	Level string
	// Threads is the number of intra-op threads (0 means 1). The execution
	// mode is always sequential with one inter-op thread.
	Threads int
	// Arena enables ORT's CPU memory arena. The profile's memory fields are
	// all zero without it.
	Arena bool
	// MemPattern enables ORT's memory pattern planning (one block reused from
	// the second run on), which distorts the measured peak.
	MemPattern bool
	// DisabledOptimizers names ORT graph transformers to switch off (for
	// example CSE). They are joined with ";" into the session config entry
	// optimization.disable_specified_optimizers (a "," would silently disable
	// nothing).
	DisabledOptimizers []string
	// Profile turns on ORT's profiler; Result.Profile then holds the first
	// run's kernel events.
	Profile bool
	// Runs is how many times the model is run in the one session (0 means
	// 1). Outputs and the profile come from the first run.
	Runs int
	// OptimizedModel asks ORT to write the graph it runs, after its
	// optimizers (session option optimized_model_filepath), and Run returns
	// it in Result.OptimizedModel: an ONNX model whose nodes are the ones
	// the profile's events name (fused nodes under the names ORT gave them,
	// constant-folded nodes gone, CSE-merged ones removed), with ORT's
	// inferred value_info. Graph inputs, outputs and every tensor an
	// optimizer kept carry their names from the input model.
	OptimizedModel bool
	// Config holds extra session config entries (key → value), set after
	// the ones above.
	Config map[string]string
	// OutputShapes gives the shapes of graph outputs that Run must allocate
	// itself: float16 and bfloat16 outputs (onnxruntime_go v1.27.0 cannot
	// copy ORT-allocated tensors of those types) and rank-0 outputs. Needed
	// only where the model's output shape is not static. Outputs that Run
	// allocates are caller-owned memory for ORT, so ORT's memory statistics
	// do not include them.
	OutputShapes map[string][]int64
}

// MeasureOptions returns the configuration that measures ORT's activation
// memory honestly (research note, Q3): the CPU arena on, the memory pattern
// off, profiling on, one thread, sequential execution, one run, at the given
// optimization level. No optimizer is disabled; to compare a rematerialized
// model against its original at "basic" or above, add CSE to
// DisabledOptimizers for both. The peak is Result.Profile.PeakBytes().
func MeasureOptions(level string) Options {
	return Options{Level: level, Threads: 1, Arena: true, MemPattern: false, Profile: true, Runs: 1}
}

// DefaultOptions returns ORT's default session configuration (arena and
// memory pattern on) at the given level, with one thread and no profiling:
// how a deployment would run the model, not how to measure it.
func DefaultOptions(level string) Options {
	return Options{Level: level, Threads: 1, Arena: true, MemPattern: true, Runs: 1}
}

// SessionPeak runs the model twice in one session under opts, profiled,
// and returns the arena's peak over both runs (Profile.SessionPeakBytes)
// less the bytes it held before the first kernel: under DefaultOptions
// the activation peak of a deployed session, whose second run takes the
// memory pattern's block.
func SessionPeak(modelPath string, inputs map[string]Tensor, opts Options) (int64, error) {
	opts.Profile, opts.Runs = true, 2
	res, err := Run(modelPath, inputs, opts)
	if err != nil {
		return 0, err
	}
	if res.Profile == nil || len(res.Profile.Nodes) == 0 {
		return 0, fmt.Errorf("%s: ORT's profile has no kernel events", modelPath)
	}
	peak, err := res.Profile.SessionPeakBytes()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", modelPath, err)
	}
	first := res.Profile.Nodes[0]
	return peak - (first.MemBytesInUse - first.MemInUseDelta), nil
}

// levelCode maps Options.Level to ORT's GraphOptimizationLevel value.
func levelCode(level string) (int, error) {
	switch level {
	case "disabled":
		return 0, nil
	case "basic":
		return 1, nil
	case "extended":
		return 2, nil
	case "layout":
		return 3, nil
	case "all", "":
		return 99, nil
	}
	return 0, fmt.Errorf("unknown optimization level %q (want disabled, basic, extended, layout or all)", level)
}

// check validates the options and returns the normalised thread and run
// counts.
func (o Options) check() (threads, runs int, err error) {
	if _, err := levelCode(o.Level); err != nil {
		return 0, 0, err
	}
	threads, runs = o.Threads, o.Runs
	if threads < 0 || runs < 0 {
		return 0, 0, fmt.Errorf("negative Threads (%d) or Runs (%d)", o.Threads, o.Runs)
	}
	if threads == 0 {
		threads = 1
	}
	if runs == 0 {
		runs = 1
	}
	for _, name := range o.DisabledOptimizers {
		if name == "" || strings.ContainsAny(name, ";,") {
			return 0, 0, fmt.Errorf("bad optimizer name %q in DisabledOptimizers", name)
		}
	}
	return threads, runs, nil
}

// Tensor is a dense tensor in ORT's memory layout: row-major, little-endian
// raw element bytes. DType is the ONNX element type name: "float", "double",
// "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32",
// "int64", "uint32", "uint64" or "bool" (one byte, 0 or 1). An empty Shape is
// a scalar.
type Tensor struct {
	DType string
	Shape []int64
	Data  []byte
}

// dtypeInfo lists the supported element types with their ONNX
// TensorProto.DataType codes (which ORT's ONNXTensorElementDataType shares)
// and sizes in bytes.
var dtypeInfo = [...]struct {
	name string
	code int32
	size int
}{
	{"float", 1, 4},
	{"uint8", 2, 1},
	{"int8", 3, 1},
	{"uint16", 4, 2},
	{"int16", 5, 2},
	{"int32", 6, 4},
	{"int64", 7, 8},
	{"bool", 9, 1},
	{"float16", 10, 2},
	{"double", 11, 8},
	{"uint32", 12, 4},
	{"uint64", 13, 8},
	{"bfloat16", 16, 2},
}

// ElemSize returns the size in bytes of one element of the ONNX type dtype.
func ElemSize(dtype string) (int, error) {
	for _, d := range dtypeInfo {
		if d.name == dtype {
			return d.size, nil
		}
	}
	return 0, fmt.Errorf("unsupported element type %q", dtype)
}

// DTypeCode returns the ONNX TensorProto.DataType code of dtype.
func DTypeCode(dtype string) (int32, bool) {
	for _, d := range dtypeInfo {
		if d.name == dtype {
			return d.code, true
		}
	}
	return 0, false
}

// DTypeName returns the ONNX name of a TensorProto.DataType code, or
// "type<code>" for types this package does not support.
func DTypeName(code int32) string {
	for _, d := range dtypeInfo {
		if d.code == code {
			return d.name
		}
	}
	return fmt.Sprintf("type%d", code)
}

// NumElements returns the product of the dimensions (1 for a scalar).
func NumElements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// NumElements returns the number of elements of t.
func (t Tensor) NumElements() int64 { return NumElements(t.Shape) }

// Validate checks that the type is supported, no dimension is negative and
// Data holds exactly the bytes the shape needs.
func (t Tensor) Validate() error {
	size, err := ElemSize(t.DType)
	if err != nil {
		return err
	}
	n := int64(1)
	for i, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("shape %v: dim %d is negative", t.Shape, i)
		}
		if d > 0 && n > math.MaxInt64/d {
			return fmt.Errorf("shape %v overflows", t.Shape)
		}
		n *= d
	}
	if n > math.MaxInt64/int64(size) || int64(len(t.Data)) != n*int64(size) {
		return fmt.Errorf("%s%v needs %d bytes, Data has %d", t.DType, t.Shape, n*int64(size), len(t.Data))
	}
	return nil
}

// Equal reports whether t and u have the same type, shape and bytes: bitwise
// identity, so NaNs with equal bits are equal and 0 differs from -0.
func (t Tensor) Equal(u Tensor) bool {
	return t.DType == u.DType && equalShape(t.Shape, u.Shape) && bytes.Equal(t.Data, u.Data)
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Element is the set of Go types NewTensor accepts.
type Element interface {
	~float32 | ~float64 | ~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~int64 | ~uint32 | ~uint64 | ~bool
}

// NewTensor builds a Tensor from Go values; the ONNX type follows from T
// (float32 is "float", float64 "double", and so on).
func NewTensor[T Element](shape []int64, data []T) (Tensor, error) {
	var dtype string
	var zero T
	switch any(zero).(type) {
	case float32:
		dtype = "float"
	case float64:
		dtype = "double"
	case int8:
		dtype = "int8"
	case uint8:
		dtype = "uint8"
	case int16:
		dtype = "int16"
	case uint16:
		dtype = "uint16"
	case int32:
		dtype = "int32"
	case int64:
		dtype = "int64"
	case uint32:
		dtype = "uint32"
	case uint64:
		dtype = "uint64"
	case bool:
		dtype = "bool"
	default:
		return Tensor{}, fmt.Errorf("NewTensor: named type %T is not supported", zero)
	}
	buf, err := binary.Append(nil, binary.LittleEndian, data)
	if err != nil {
		return Tensor{}, err
	}
	t := Tensor{DType: dtype, Shape: append([]int64(nil), shape...), Data: buf}
	return t, t.Validate()
}

// Float64s decodes the elements of t into float64 values: exact for every
// supported type except 64-bit integers above 2^53. bool gives 0 or 1.
func (t Tensor) Float64s() ([]float64, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	size, _ := ElemSize(t.DType)
	n := len(t.Data) / size
	out := make([]float64, n)
	le := binary.LittleEndian
	for i := range out {
		b := t.Data[i*size:]
		var v float64
		switch t.DType {
		case "float":
			v = float64(math.Float32frombits(le.Uint32(b)))
		case "double":
			v = math.Float64frombits(le.Uint64(b))
		case "float16":
			v = float64(HalfToFloat32(le.Uint16(b)))
		case "bfloat16":
			v = float64(math.Float32frombits(uint32(le.Uint16(b)) << 16))
		case "int8":
			v = float64(int8(b[0]))
		case "uint8", "bool":
			v = float64(b[0])
		case "int16":
			v = float64(int16(le.Uint16(b)))
		case "uint16":
			v = float64(le.Uint16(b))
		case "int32":
			v = float64(int32(le.Uint32(b)))
		case "uint32":
			v = float64(le.Uint32(b))
		case "int64":
			v = float64(int64(le.Uint64(b)))
		case "uint64":
			v = float64(le.Uint64(b))
		}
		out[i] = v
	}
	return out, nil
}

// Int64s decodes the elements of an integer or bool tensor (uint64 values
// above 2^63-1 wrap).
func (t Tensor) Int64s() ([]int64, error) {
	switch t.DType {
	case "float", "double", "float16", "bfloat16":
		return nil, fmt.Errorf("Int64s: %s is not an integer type", t.DType)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	size, _ := ElemSize(t.DType)
	out := make([]int64, len(t.Data)/size)
	le := binary.LittleEndian
	for i := range out {
		b := t.Data[i*size:]
		switch t.DType {
		case "int8":
			out[i] = int64(int8(b[0]))
		case "uint8", "bool":
			out[i] = int64(b[0])
		case "int16":
			out[i] = int64(int16(le.Uint16(b)))
		case "uint16":
			out[i] = int64(le.Uint16(b))
		case "int32":
			out[i] = int64(int32(le.Uint32(b)))
		case "uint32":
			out[i] = int64(le.Uint32(b))
		case "int64", "uint64":
			out[i] = int64(le.Uint64(b))
		}
	}
	return out, nil
}

// ValueInfo describes a graph input or output as the ORT session reports it.
type ValueInfo struct {
	Name string
	// DType is the ONNX element type name ("type<code>" for unsupported
	// element types, "" for values that are not tensors).
	DType string
	// Shape has -1 for every dynamic (symbolic or unknown) dimension; an
	// empty Shape is a scalar. ORT fills in output shapes the file omits
	// where its shape inference can.
	Shape []int64
}

// Result is what Run returns.
type Result struct {
	// OutputNames lists the graph outputs in graph order.
	OutputNames []string
	// Outputs maps each graph output name to its value after the first run.
	Outputs map[string]Tensor
	// Profile holds the first run's kernel events; nil unless
	// Options.Profile.
	Profile *Profile
	// RunTimes is the wall-clock time of each Run call on the session, in
	// order (with the profiler's overhead when profiling).
	RunTimes []time.Duration
	// OptimizedModel is the serialized ModelProto of the graph ORT ran
	// (Options.OptimizedModel); nil unless asked for.
	OptimizedModel []byte
}

// ValueShapes runs the model once at level "disabled" with profiling on (the
// other options as given) and returns every node output's actual shape and
// type, read from the profile's output_type_shape.
//
// ORT 1.30's profile does not name output tensors, so the key is the node's
// name as ORT reports it (the ONNX node name; ORT names an unnamed node
// "<OpType>_<index>") and the output's position among the outputs the node
// produced. At "disabled" NodeIndex is the node's position in GraphProto.node,
// so callers holding the model can map a key to its tensor name as
// GraphProto.node[NodeIndex].output[Output]. Absent optional outputs are not
// reported; for a node with an omitted optional output in the middle the
// positions after it shift. Callers needing a particular tensor by name can
// instead add it to the graph outputs themselves and read Result.Outputs;
// this function rewrites nothing.
func ValueShapes(modelPath string, inputs map[string]Tensor, opts Options) (map[NodeOutput]ValueShape, error) {
	opts.Level = "disabled"
	opts.Profile = true
	opts.Runs = 1
	res, err := Run(modelPath, inputs, opts)
	if err != nil {
		return nil, err
	}
	shapes, err := res.Profile.ValueShapes()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", modelPath, err)
	}
	return shapes, nil
}
