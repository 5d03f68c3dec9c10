// Package tfjs runs TensorFlow.js graph models (model.json plus weight
// shards) in TensorFlow.js 4.22 under Node.js and measures them. It is the
// reference runtime for TensorFlow graphs: TensorFlow itself cannot be
// installed here, and tfjs is what web and edge users of these models deploy
// on. The package is the harness behind the tests, `verify` and `profile` on
// TensorFlow graphs.
//
// # The runtime
//
// Run starts one Node process per call (RunAll runs several jobs in one):
// `node -e <driver.js>`, the driver being embedded in the package, so nothing
// is written to disk. The request (options and input bytes) goes in on
// stdin as JSON, the result comes back as JSON on file descriptor 3; what
// the libraries print on stdout and stderr is kept only for error messages.
// The driver loads @tensorflow/tfjs-core, tfjs-converter, tfjs-backend-cpu
// and tfjs-backend-wasm 4.22.0 from the node_modules directory of
// Options.Dir ($REMAT_TFJS_DIR, printed by scripts/setup.sh, which installs
// them with `npm install --ignore-scripts`; never tfjs-node). The model is
// read from disk by the driver itself (model.json, then every shard of
// weightsManifest in manifest order, joined) and handed to loadGraphModel
// through tf.io.fromMemory, so no file or HTTP loader is involved.
//
// The wasm backend (the default) is SIMD, single-threaded; the cpu backend
// is tfjs's pure JavaScript one. The two differ in the last bits on the same
// graph: compare an original and a rewritten model on the same backend,
// where reruns and rewrites that keep each output's arithmetic are bitwise
// equal.
//
// # How tfjs orders and frees (tfjs-converter 4.22, src/executor)
//
// The research note tfjs-execution.md (shared/research beside the
// repository) records what was measured. In short: execute() runs the nodes
// reachable backwards from the requested outputs, in the order that
// GraphExecutor.compile(inputs, outputNodes).orderedNodes returns (Kahn's
// algorithm over a LIFO stack, model_analysis.ts); no CSE and no constant
// folding happen at load, so duplicated nodes both run. After the node at
// position k runs, the outputs of every node whose last consumer (control
// consumers included) is at k are disposed; graph outputs, weights, feeds
// and control-flow nodes are never freed during the call. Control inputs
// (^name) are honoured for ordering, extend lifetimes, and are also passed
// to the op as ordinary inputs unless their producer is a NoOp: see the
// note for the pitfall on variadic ops (AddN, ConcatV2) and the safe gating
// form. Result.OrderedNodes is that compile() list (it is not public API:
// the driver calls model.executor.compile with the inputs keyed by node
// name and the output Node objects, as execute() does).
//
// Models whose executed subgraph holds a dynamic op (NonMaxSuppression*,
// Where, control flow) cannot be compiled: compile throws, and the driver
// then runs executeAsync (Result.Async). That executor walks a stack at run
// time and frees by counting consumers, and disposes every intermediate
// left at the end; it has no static order, so OrderedNodes is nil and
// Result.Executed is the order it followed.
//
// # Measuring memory
//
// With Options.Profile, the first execution runs inside
// tf.profile(() => model.execute(feeds, outputs)) (executeAsync for a
// dynamic model: tf.profile awaits it and samples the same way). tfjs
// samples the engine's byte count (tf.memory().numBytes: every live
// tensor's bytes, counted per tensor rather than per buffer, weights and
// feeds included) after each kernel; peakBytes is the largest sample.
// Memory.PeakBytes is that peak minus numBytes taken just before the call
// (Memory.BaselineBytes: the weights, the feeds and nothing else, since the
// driver disposes every earlier output). Temporaries inside a kernel are
// invisible. The counts are the engine's, not the process's RSS;
// tf.memory() calls them unreliable on cpu (garbage collection) and
// reliable on wasm, and both are exact tensor byte counts.
//
// Per kernel the profile gives its name, the bytes and tensors it added, the
// totals after it and its time (Kernel). The driver also wraps the
// executor's per-node disposal step (an instance method execute() calls
// right after each node's op) to record, for every node that ran, the
// kernels it issued, the type and shape of each output, and the engine's
// bytes before and after the frees that follow it (Result.Executed), from
// which memory over time, per-node times and every value's type follow.
//
// Wall times (Result.RunTimes) are Options.Runs further executions, each
// timed from the call to execute until every output's data is read, after
// Options.Warmup untimed ones; the profiled execution is never timed.
//
// # Measuring settings
//
// The numbers the project reports come from Options{Backend: WASM,
// Profile: true, Order: true} with inputs from SeededInputs (seed 1 unless
// said otherwise), the original and its rewrite fed the same bytes and run
// on the same backend: Memory.PeakBytes is the measured peak, OrderedNodes
// the order checked against a plan, Digests[0] (or Outputs) the outputs
// compared bitwise. Times are the median of RunTimes with Runs ≥ 5 and
// Warmup ≥ 1 (the first wasm execution pays for warm-up), on an otherwise
// idle machine. The research note measured the same way (tfjs 4.22.0,
// Node 20).
//
// # Limits
//
// Inputs and outputs are float32, int32 or bool tensors. The kernel-to-node
// attribution counts the kernels recorded between two nodes' disposal
// steps; under executeAsync an op that returns a promise (the async
// NonMaxSuppression kernels) may finish after later nodes ran, so its
// kernels can be attributed to a neighbour. GraphExecutor.compile and the
// two disposal methods are internal to tfjs-converter: the driver checks
// they exist and fails with a message naming the version it needs.
package tfjs

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Version is the TensorFlow.js release the project measures against.
const Version = "4.22.0"

// Packages are the npm packages of TensorFlow.js that the harness loads,
// all at Version.
var Packages = []string{"tfjs-core", "tfjs-converter", "tfjs-backend-cpu", "tfjs-backend-wasm"}

// DefaultTimeout bounds a call of Run or RunAll when Options.Timeout is 0.
const DefaultTimeout = 5 * time.Minute

//go:embed driver.js
var driverJS string

// FromEnv returns $REMAT_TFJS_DIR, the node_modules directory holding
// TensorFlow.js (scripts/setup.sh installs it and prints the variable). It
// checks that the directory holds every package of Packages at Version; the
// error says how to install them.
func FromEnv() (string, error) {
	dir := os.Getenv("REMAT_TFJS_DIR")
	if dir == "" {
		return "", errors.New("REMAT_TFJS_DIR is not set: run the project's setup script scripts/setup.sh, " +
			"which installs TensorFlow.js " + Version + " and prints REMAT_TFJS_DIR to export")
	}
	if err := CheckDir(dir); err != nil {
		return "", fmt.Errorf("$REMAT_TFJS_DIR: %w", err)
	}
	return dir, nil
}

// CheckDir reports whether dir is a node_modules directory holding every
// package of Packages at Version.
func CheckDir(dir string) error {
	for _, p := range Packages {
		file := filepath.Join(dir, "@tensorflow", p, "package.json")
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%s has no @tensorflow/%s (%v); install TensorFlow.js %s with scripts/setup.sh, or with\n"+
				"    npm install --ignore-scripts --prefix DIR %s\nand use DIR/node_modules",
				dir, p, err, Version, installSpecs())
		}
		var pkg struct{ Version string }
		if err := json.Unmarshal(data, &pkg); err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
		if pkg.Version != Version {
			return fmt.Errorf("%s holds @tensorflow/%s %s, the harness needs %s: run scripts/setup.sh", dir, p, pkg.Version, Version)
		}
	}
	return nil
}

func installSpecs() string {
	s := make([]string, len(Packages))
	for i, p := range Packages {
		s[i] = "@tensorflow/" + p + "@" + Version
	}
	return strings.Join(s, " ")
}

// DType is a tfjs tensor type. The harness passes float32, int32 and bool
// tensors; their bytes are little-endian, a bool one byte (0 or 1).
type DType string

// The tensor types of inputs and outputs.
const (
	Float32 DType = "float32"
	Int32   DType = "int32"
	Bool    DType = "bool"
)

// Size returns the bytes of one element, or 0 for a type the harness does
// not support.
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Bool:
		return 1
	}
	return 0
}

// Tensor is a dense tensor: its type, its shape (a nil or empty shape is a
// scalar) and its elements' bytes in row-major order.
type Tensor struct {
	DType DType
	Shape []int64
	Data  []byte
}

// Elements returns the number of elements of a shape (1 for a scalar).
func Elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Check reports whether t is well formed: a supported type, no negative
// dimension, and exactly as many bytes as its shape needs.
func (t Tensor) Check() error {
	size := t.DType.Size()
	if size == 0 {
		return fmt.Errorf("dtype %q is not supported (want float32, int32 or bool)", t.DType)
	}
	n, err := checkShape(t.Shape)
	if err != nil {
		return err
	}
	if int64(len(t.Data)) != n*int64(size) {
		return fmt.Errorf("shape %v of %s needs %d bytes, the data has %d", t.Shape, t.DType, n*int64(size), len(t.Data))
	}
	return nil
}

// checkShape returns the number of elements of a shape, or an error for a
// negative dimension or more than 2^31-1 elements (tfjs's limit).
func checkShape(shape []int64) (int64, error) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v: dimension %d is negative", shape, i)
		}
		if d > 0 && n > math.MaxInt32/d {
			return 0, fmt.Errorf("shape %v: too many elements", shape)
		}
		n *= d
	}
	return n, nil
}

// Float32s returns the elements of a float32 tensor.
func (t Tensor) Float32s() []float32 {
	v := make([]float32, len(t.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return v
}

// Equal reports whether a and b have the same type, shape and bytes.
func Equal(a, b Tensor) bool {
	return a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && bytes.Equal(a.Data, b.Data)
}

// Backend names a tfjs backend.
type Backend string

// The backends the harness runs on.
const (
	WASM Backend = "wasm" // the default: WebAssembly with SIMD, one thread
	CPU  Backend = "cpu"  // tfjs's pure JavaScript kernels
)

// Options configures one run of a model.
type Options struct {
	// Dir is the node_modules directory holding TensorFlow.js; "" means
	// FromEnv().
	Dir string
	// Node is the Node.js executable; "" means "node" on $PATH.
	Node string
	// Model is the path of the model.json; its weight shards are read from
	// its directory.
	Model string
	// Backend is WASM ("" means WASM) or CPU.
	Backend Backend
	// Inputs are the values fed to the model, keyed by input node name (or
	// by the signature's input key). Every input of the model needs one.
	Inputs map[string]Tensor
	// Outputs names the tensors to compute ("node" or "node:index");
	// empty means the model's outputs (its signature's, else the nodes
	// nothing reads).
	Outputs []string
	// Runs is the number of timed executions after the profiled one (0
	// means 1).
	Runs int
	// Warmup is the number of untimed executions before the timed ones.
	Warmup int
	// Profile runs the first execution under tf.profile: Result.Memory and
	// Result.Kernels are then set.
	Profile bool
	// Order asks for Result.OrderedNodes.
	Order bool
	// ShapesOnly returns every output's DType and Shape without its Data
	// (nil) and computes no Digests, so that a caller can ask for every
	// value of a model (each node's outputs as Outputs) and compare types
	// without transferring the tensors. DType is then whatever tfjs
	// reports, string and complex64 included.
	ShapesOnly bool
	// Timeout bounds the whole call (0 means DefaultTimeout; RunAll allows
	// the sum of its jobs' timeouts); the Node process is killed when it or
	// the context expires.
	Timeout time.Duration
}

// Output is one output tensor of a model, under the name it was asked for.
type Output struct {
	Name string
	Tensor
}

// Memory is what tf.profile measured of one execution.
type Memory struct {
	// PeakBytes is the measure: the profile's peak minus BaselineBytes.
	PeakBytes int64
	// BaselineBytes is tf.memory().numBytes just before the execution:
	// the weights and the feeds.
	BaselineBytes int64
	// BaselineTensors is tf.memory().numTensors at the same moment.
	BaselineTensors int
	// ProfilePeakBytes is tfjs's peakBytes as it reports it (absolute).
	ProfilePeakBytes int64
	// NewBytes and NewTensors are what the execution left allocated (its
	// outputs, unless something leaked).
	NewBytes   int64
	NewTensors int
	// Unreliable is tf.memory().unreliable (true on the cpu backend).
	Unreliable bool
}

// Kernel is one kernel call that tf.profile recorded, in call order.
type Kernel struct {
	// Name is the kernel's name (Conv2D, FusedConv2D, Add, ...), not the
	// node's.
	Name string
	// Node is the graph node that issued the kernel ("" if none did).
	Node string
	// BytesAdded and TensorsAdded are the change of the engine's counts
	// across the kernel; TotalBytes and TotalTensors the counts after it
	// (absolute: subtract Memory.BaselineBytes).
	BytesAdded, TotalBytes     int64
	TensorsAdded, TotalTensors int
	// OutputShapes are the shapes of the kernel's outputs.
	OutputShapes [][]int64
	// Time is the kernel's time as tfjs measured it; HasTime is false
	// where the backend gave none.
	Time    time.Duration
	HasTime bool
}

// Executed is one node that the first execution ran, in the order it ran.
type Executed struct {
	Name, Op string
	// Kernels is the range [Kernels[0], Kernels[1]) of Result.Kernels the
	// node issued (empty without Profile).
	Kernels [2]int
	// BytesBeforeFree is the engine's byte count after the node's op,
	// BytesAfterFree after the executor disposed the values whose last
	// consumer the node was; TensorsAfterFree the tensor count then. All
	// absolute: subtract Memory.BaselineBytes.
	BytesBeforeFree, BytesAfterFree int64
	TensorsAfterFree                int
	// Outputs are the type and shape of each tensor the node's op
	// returned, in output order (a nil Shape for an output it left
	// undefined).
	Outputs []TensorInfo
}

// TensorInfo is the element type and shape of a tensor.
type TensorInfo struct {
	DType DType
	Shape []int64
}

// Timing is where the time of a call went, as the driver measured it.
type Timing struct {
	// NodeStart is Node.js's own start-up (process start to the driver's
	// first line); LoadTFJS is the require() of the four packages; Backend
	// is the backend's initialisation (the wasm module's compilation, on
	// first use in the process); LoadModel is reading and loading the model.
	NodeStart, LoadTFJS, Backend, LoadModel time.Duration
	// Total is the wall time of the whole call as Go saw it (for RunAll,
	// the whole batch).
	Total time.Duration
}

// Result is what one run of a model gave.
type Result struct {
	// TFJSVersion is tfjs-core's version as loaded.
	TFJSVersion string
	// Backend is the backend the model ran on.
	Backend Backend
	// Outputs are the tensors of the first execution, in the order of
	// Options.Outputs (or of the model's outputs).
	Outputs []Output
	// Async reports that the model needed executeAsync (dynamic ops).
	Async bool
	// OrderedNodes is compile().orderedNodes when Options.Order is set and
	// the model is not Async: every node execute() visits, feeds and
	// weights included, in its order.
	OrderedNodes []string
	// Executed is the nodes the first execution ran (feeds and weights
	// are not run), in order.
	Executed []Executed
	// Memory and Kernels are the profile of the first execution; nil
	// without Options.Profile.
	Memory  *Memory
	Kernels []Kernel
	// RunTimes are the wall times of the timed executions.
	RunTimes []time.Duration
	// Digests are SHA-256 digests (hex) of the outputs of every execution
	// (none with Options.ShapesOnly)
	// after the warm-up ones, the first execution's first: equal digests
	// mean bitwise-equal outputs.
	Digests []string
	// Timing is where the call's time went.
	Timing Timing
}

// MedianRunTime returns the median of RunTimes (0 if there are none).
func (r *Result) MedianRunTime() time.Duration {
	if len(r.RunTimes) == 0 {
		return 0
	}
	t := slices.Clone(r.RunTimes)
	slices.Sort(t)
	if len(t)%2 == 1 {
		return t[len(t)/2]
	}
	return (t[len(t)/2-1] + t[len(t)/2]) / 2
}

// Output returns the output of the given name.
func (r *Result) Output(name string) (Tensor, bool) {
	for _, o := range r.Outputs {
		if o.Name == name {
			return o.Tensor, true
		}
	}
	return Tensor{}, false
}

// Run runs one model in TensorFlow.js in a fresh Node process and returns
// what it computed and measured. Errors name the problem: Node or tfjs
// missing, a model that does not load (tfjs's own message passed through),
// a bad input name, shape or type.
func Run(ctx context.Context, opts Options) (*Result, error) {
	res, err := RunAll(ctx, []Options{opts})
	if err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) == 1 {
			return nil, j.Unwrap()[0] // the job's *JobError
		}
		return nil, err
	}
	return res[0], nil
}

// RunAll runs several jobs one after another in one Node process, which
// saves Node's start-up and tfjs's load per job (Timing). Every job must
// name the same Dir and Node. Each job gets a fresh model; jobs share the
// process's tfjs engine, so a job runs with what earlier jobs left behind
// disposed. The results are in the order of jobs; a job that failed has a
// nil result and its *JobError, naming its model, is joined into the error
// (errors.Join: the error's Unwrap() []error lists them). Errors that stop
// every job (Node or tfjs missing, a bad option, the timeout) are returned
// alone, with no results.
func RunAll(ctx context.Context, jobs []Options) ([]*Result, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	start := time.Now()
	dir, node := jobs[0].Dir, jobs[0].Node
	timeout := time.Duration(0)
	req := request{Jobs: make([]jobRequest, len(jobs))}
	for i, o := range jobs {
		if o.Dir != dir || o.Node != node {
			return nil, errors.New("tfjs.RunAll: every job must name the same Dir and Node")
		}
		if o.Timeout > 0 {
			timeout += o.Timeout
		} else {
			timeout += DefaultTimeout
		}
		j, err := newJob(o)
		if err != nil {
			return nil, err
		}
		req.Jobs[i] = j
	}
	if dir == "" {
		var err error
		if dir, err = FromEnv(); err != nil {
			return nil, err
		}
	} else if err := CheckDir(dir); err != nil {
		return nil, err
	}
	req.Dir = dir
	if node == "" {
		node = "node"
	}
	nodePath, err := exec.LookPath(node)
	if err != nil {
		return nil, fmt.Errorf("Node.js (%s) not found: %v; install Node.js 18 or later (Debian: apt-get install nodejs)", node, err)
	}
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := runDriver(ctx, nodePath, reqJSON, timeout)
	if err != nil {
		return nil, err
	}
	if len(resp.Results) != len(jobs) {
		return nil, fmt.Errorf("tfjs driver returned %d results for %d jobs", len(resp.Results), len(jobs))
	}
	total := time.Since(start)
	out := make([]*Result, len(jobs))
	var errs []error
	for i, jr := range resp.Results {
		if jr.Error != "" {
			errs = append(errs, &JobError{Index: i, Model: jobs[i].Model, Backend: req.Jobs[i].Backend, Msg: jr.Error})
			continue
		}
		r, err := jr.result(resp, jobs[i].ShapesOnly)
		if err != nil {
			errs = append(errs, &JobError{Index: i, Model: jobs[i].Model, Backend: req.Jobs[i].Backend, Msg: err.Error()})
			continue
		}
		r.Timing.Total = total
		out[i] = r
	}
	return out, errors.Join(errs...)
}

// JobError is the error of one job of RunAll (and of Run) that reached
// tfjs: Msg is the driver's message, tfjs's own text included.
type JobError struct {
	// Index is the job's position in RunAll's jobs.
	Index   int
	Model   string
	Backend Backend
	Msg     string
}

func (e *JobError) Error() string {
	return fmt.Sprintf("tfjs (%s backend) on %s: %s", e.Backend, e.Model, e.Msg)
}

// newJob checks one job's options and turns them into the driver's form.
func newJob(o Options) (jobRequest, error) {
	if o.Model == "" {
		return jobRequest{}, errors.New("tfjs: no model given (Options.Model)")
	}
	model, err := filepath.Abs(o.Model)
	if err != nil {
		return jobRequest{}, err
	}
	if st, err := os.Stat(model); err != nil {
		return jobRequest{}, fmt.Errorf("tfjs: model %s: %w", o.Model, err)
	} else if st.IsDir() {
		return jobRequest{}, fmt.Errorf("tfjs: model %s is a directory; give the path of its model.json", o.Model)
	}
	b := o.Backend
	if b == "" {
		b = WASM
	}
	if b != WASM && b != CPU {
		return jobRequest{}, fmt.Errorf("tfjs: backend %q is not supported (want wasm or cpu)", b)
	}
	if o.Runs < 0 || o.Warmup < 0 {
		return jobRequest{}, fmt.Errorf("tfjs: Runs (%d) and Warmup (%d) must not be negative", o.Runs, o.Warmup)
	}
	runs := o.Runs
	if runs == 0 {
		runs = 1
	}
	j := jobRequest{Model: model, Backend: b, Outputs: o.Outputs, Runs: runs, Warmup: o.Warmup,
		Profile: o.Profile, Order: o.Order, ShapesOnly: o.ShapesOnly, Inputs: map[string]tensorJSON{}}
	if j.Outputs == nil {
		j.Outputs = []string{}
	}
	names := make([]string, 0, len(o.Inputs))
	for name := range o.Inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := o.Inputs[name]
		if err := t.Check(); err != nil {
			return jobRequest{}, fmt.Errorf("tfjs: input %q: %v", name, err)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		j.Inputs[name] = tensorJSON{DType: t.DType, Shape: shape, Data: base64.StdEncoding.EncodeToString(t.Data)}
	}
	return j, nil
}

// runDriver runs the driver on one request and decodes its response. The
// response comes on file descriptor 3; stdout and stderr are kept (their
// tail) for the error message of a process that fails.
func runDriver(ctx context.Context, node string, req []byte, timeout time.Duration) (*response, error) {
	errTimeout := fmt.Errorf("tfjs: Node.js killed after %v (the timeout)", timeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	cmd := exec.CommandContext(ctx, node, "-e", driverJS)
	cmd.Stdin = bytes.NewReader(req)
	log := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{pw}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, fmt.Errorf("starting Node.js (%s): %v", node, err)
	}
	pw.Close()
	type readResult struct {
		data []byte
		err  error
	}
	got := make(chan readResult, 1)
	go func() {
		data, err := io.ReadAll(pr)
		got <- readResult{data, err}
	}()
	waitErr := cmd.Wait()
	// The process is gone, so the pipe's last writer is closed (a
	// grandchild holding it would be bounded by WaitDelay).
	var rr readResult
	select {
	case rr = <-got:
	case <-time.After(cmd.WaitDelay):
		pr.Close()
		rr = <-got
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if cause := context.Cause(ctx); cause == errTimeout {
			return nil, fmt.Errorf("%w%s", errTimeout, log.describe())
		}
		return nil, fmt.Errorf("tfjs: Node.js killed: %w%s", ctxErr, log.describe())
	}
	if waitErr != nil {
		return nil, fmt.Errorf("tfjs: Node.js failed: %v%s", waitErr, log.describe())
	}
	if rr.err != nil {
		return nil, fmt.Errorf("tfjs: reading the driver's result: %v", rr.err)
	}
	if len(rr.data) == 0 {
		return nil, fmt.Errorf("tfjs: the driver exited without a result%s", log.describe())
	}
	var resp response
	if err := json.Unmarshal(rr.data, &resp); err != nil {
		return nil, fmt.Errorf("tfjs: decoding the driver's result: %v", err)
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("tfjs: %s", resp.Error)
	}
	return &resp, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// describe returns the output's tail as an error message's suffix.
func (t *tailBuffer) describe() string {
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; Node.js printed:\n" + s
}
