//go:build cgo

package ort

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	onnx "github.com/yalue/onnxruntime_go"
)

// cgoEnabled tells the tests whether ORT can be used in this build.
const cgoEnabled = true

// envOnce guards the process-wide ORT environment; envErr is written only
// inside it.
var (
	envOnce sync.Once
	envErr  error
)

// initEnv loads ORT and creates its environment, once per process. ORT's own
// log output is limited to errors (failures are returned as errors anyway).
func initEnv() error {
	envOnce.Do(func() {
		if onnx.IsInitialized() {
			return // someone else in this process set it up
		}
		lib, err := LibraryPath()
		if err != nil {
			envErr = err
			return
		}
		onnx.SetSharedLibraryPath(lib)
		if err := onnx.InitializeEnvironment(onnx.WithLogLevelError()); err != nil {
			envErr = fmt.Errorf("initializing ONNX Runtime from %s: %w", lib, err)
		}
	})
	return envErr
}

// Version returns the version of the loaded ORT library, e.g. "1.30.0".
func Version() (string, error) {
	if err := initEnv(); err != nil {
		return "", err
	}
	return onnx.GetVersion(), nil
}

// ModelIO returns the graph inputs and outputs of a model as ORT sees them,
// in graph order. It creates (and releases) a session at level "disabled".
func ModelIO(modelPath string) (inputs, outputs []ValueInfo, err error) {
	if err := initEnv(); err != nil {
		return nil, nil, err
	}
	ins, outs, err := modelIO(modelPath)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", modelPath, err)
	}
	return convertInfo(ins), convertInfo(outs), nil
}

func modelIO(modelPath string) (ins, outs []onnx.InputOutputInfo, err error) {
	so, err := onnx.NewSessionOptions()
	if err != nil {
		return nil, nil, err
	}
	defer so.Destroy()
	if err := so.SetGraphOptimizationLevel(onnx.GraphOptimizationLevelDisableAll); err != nil {
		return nil, nil, err
	}
	if err := so.SetIntraOpNumThreads(1); err != nil {
		return nil, nil, err
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		return nil, nil, err
	}
	return onnx.GetInputOutputInfoWithOptions(modelPath, so)
}

// modelSignature loads the model at modelPath to learn its inputs and
// outputs, checks inputs against them (checkInputs), and returns the input
// names in the model's order, the outputs and their names. A model without
// graph inputs or outputs is refused: onnxruntime_go's Run needs at least
// one of each.
func modelSignature(modelPath string, inputs map[string]Tensor) (inNames []string, outs []ValueInfo, outNames []string, err error) {
	insInfo, outsInfo, err := modelIO(modelPath)
	if err != nil {
		return nil, nil, nil, err
	}
	if inNames, err = checkInputs(convertInfo(insInfo), inputs); err != nil {
		return nil, nil, nil, err
	}
	outs = convertInfo(outsInfo)
	outNames = make([]string, len(outs))
	for i, o := range outs {
		outNames[i] = o.Name
	}
	if len(outNames) == 0 || len(inNames) == 0 {
		return nil, nil, nil, errors.New("models without graph inputs or without graph outputs are not supported")
	}
	return inNames, outs, outNames, nil
}

func convertInfo(infos []onnx.InputOutputInfo) []ValueInfo {
	out := make([]ValueInfo, len(infos))
	for i, in := range infos {
		out[i] = ValueInfo{Name: in.Name, Shape: append([]int64{}, in.Dimensions...)}
		if in.OrtValueType == onnx.ONNXTypeTensor {
			out[i].DType = DTypeName(int32(in.DataType))
		}
	}
	return out
}

// RandomInputs returns seeded random values (see RandomTensor) for every
// graph input of the model, each seeded from seed and the input's name. A
// dynamic dimension must be given by shapes[name], the whole shape of that
// input; shapes may also fix inputs whose shape is static (it must agree).
func RandomInputs(modelPath string, seed uint64, shapes map[string][]int64) (map[string]Tensor, error) {
	if err := initEnv(); err != nil {
		return nil, err
	}
	ins, _, err := modelIO(modelPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", modelPath, err)
	}
	known := make(map[string]bool, len(ins))
	out := make(map[string]Tensor, len(ins))
	for _, in := range convertInfo(ins) {
		known[in.Name] = true
		if _, ok := DTypeCode(in.DType); !ok {
			return nil, fmt.Errorf("%s: input %q has unsupported type %q", modelPath, in.Name, describeType(in.DType))
		}
		given, have := shapes[in.Name]
		shape, err := resolveShape(in, given, have)
		if err != nil {
			return nil, fmt.Errorf("%s: input %q: %w; shapes[%q] must give its shape", modelPath, in.Name, err, in.Name)
		}
		t, err := RandomTensor(in.DType, shape, inputSeed(seed, in.Name))
		if err != nil {
			return nil, fmt.Errorf("%s: input %q: %w", modelPath, in.Name, err)
		}
		out[in.Name] = t
	}
	for name := range shapes {
		if !known[name] {
			return nil, fmt.Errorf("%s: shapes names %q, which is not a graph input", modelPath, name)
		}
	}
	return out, nil
}

func describeType(dtype string) string {
	if dtype == "" {
		return "non-tensor"
	}
	return dtype
}

// resolveShape combines a value's declared shape (-1 = dynamic) with a shape
// the caller gave (if haveGiven).
func resolveShape(info ValueInfo, given []int64, haveGiven bool) ([]int64, error) {
	if haveGiven {
		if len(info.Shape) != 0 && len(given) != len(info.Shape) {
			return nil, fmt.Errorf("given shape %v has rank %d, the model declares %v", given, len(given), info.Shape)
		}
		for i, d := range given {
			if d < 0 {
				return nil, fmt.Errorf("given shape %v has a negative dim", given)
			}
			if i < len(info.Shape) && info.Shape[i] >= 0 && info.Shape[i] != d {
				return nil, fmt.Errorf("given shape %v disagrees with the model's %v in dim %d", given, info.Shape, i)
			}
		}
		return append([]int64{}, given...), nil
	}
	for i, d := range info.Shape {
		if d < 0 {
			return nil, fmt.Errorf("dim %d of %v is dynamic", i, info.Shape)
		}
	}
	return append([]int64{}, info.Shape...), nil
}

// Run creates an ORT session for the model with opts, runs it opts.Runs
// times (at least once) with the given inputs (one per graph input), and
// returns the first run's outputs and, if opts.Profile, the first run's
// profile. ORT allocates the outputs itself, except float16/bfloat16 and
// rank-0 outputs, which Run allocates (see Options.OutputShapes). Errors,
// from ORT or from checking the arguments, name the model path.
func Run(modelPath string, inputs map[string]Tensor, opts Options) (*Result, error) {
	res, err := run(modelPath, inputs, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", modelPath, err)
	}
	return res, nil
}

func run(modelPath string, inputs map[string]Tensor, opts Options) (res *Result, err error) {
	defer func() {
		// onnxruntime_go indexes slices without checking in places; report
		// anything it throws as an error rather than crash the caller.
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("internal error in onnxruntime_go: %v", r)
		}
	}()
	threads, runs, err := opts.check()
	if err != nil {
		return nil, err
	}
	if err := initEnv(); err != nil {
		return nil, err
	}
	// Load the model once without profiling to learn its inputs and
	// outputs; a bad model fails here.
	inNames, outs, outNames, err := modelSignature(modelPath, inputs)
	if err != nil {
		return nil, err
	}
	for name := range opts.OutputShapes {
		if !contains(outNames, name) {
			return nil, fmt.Errorf("Options.OutputShapes names %q, which is not a graph output", name)
		}
	}

	so, err := sessionOptions(opts, threads)
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	var profDir string
	if opts.Profile {
		profDir, err = os.MkdirTemp("", "remat-ort-profile-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(profDir)
		if err := so.EnableProfiling(filepath.Join(profDir, "ort")); err != nil {
			return nil, fmt.Errorf("enabling profiling: %w", err)
		}
	}

	var optPath string
	if opts.OptimizedModel {
		dir, err := os.MkdirTemp("", "remat-ort-optimized-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		optPath = filepath.Join(dir, "optimized.onnx")
		if err := so.SetOptimizedModelFilePath(optPath); err != nil {
			return nil, fmt.Errorf("setting the optimized model file path: %w", err)
		}
	}

	inVals := make([]onnx.Value, len(inNames))
	defer func() { destroyAll(inVals) }()
	for i, name := range inNames {
		if inVals[i], err = newInputValue(inputs[name]); err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
	}
	prealloc := make([]onnx.Value, len(outs))
	defer func() { destroyAll(prealloc) }()
	for i, o := range outs {
		if prealloc[i], err = preallocOutput(o, opts.OutputShapes); err != nil {
			return nil, fmt.Errorf("output %q: %w", o.Name, err)
		}
	}

	sess, err := onnx.NewDynamicAdvancedSession(modelPath, inNames, outNames, so)
	if err != nil {
		return nil, err
	}
	// The profile file is complete only once the session is released.
	released := false
	release := func() {
		if !released {
			released = true
			sess.Destroy()
		}
	}
	defer release()

	res = &Result{OutputNames: outNames, Outputs: make(map[string]Tensor, len(outs))}
	for r := 0; r < runs; r++ {
		vals := make([]onnx.Value, len(outs))
		copy(vals, prealloc)
		start := time.Now()
		err := sess.Run(inVals, vals)
		res.RunTimes = append(res.RunTimes, time.Since(start))
		if err == nil && r == 0 {
			for i, o := range outs {
				var t Tensor
				if t, err = tensorFromValue(vals[i]); err != nil {
					err = fmt.Errorf("output %q: %w", o.Name, err)
					break
				}
				res.Outputs[o.Name] = t
			}
		}
		for i := range vals {
			if prealloc[i] == nil {
				destroyValue(vals[i])
			}
		}
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", r+1, err)
		}
	}
	release()

	if opts.OptimizedModel {
		// ORT writes the file while it creates the session.
		if res.OptimizedModel, err = os.ReadFile(optPath); err != nil {
			return nil, fmt.Errorf("reading the optimized model ORT wrote: %w", err)
		}
	}
	if opts.Profile {
		res.Profile, err = readProfile(profDir)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkInputs checks that inputs has exactly the graph inputs, with the
// declared types and compatible shapes, and returns the names in graph order.
func checkInputs(infos []ValueInfo, inputs map[string]Tensor) ([]string, error) {
	names := make([]string, len(infos))
	for i, in := range infos {
		names[i] = in.Name
		t, ok := inputs[in.Name]
		if !ok {
			return nil, fmt.Errorf("no value for graph input %q (%s%v)", in.Name, describeType(in.DType), in.Shape)
		}
		if t.DType != in.DType {
			return nil, fmt.Errorf("input %q: got %s, the model wants %s", in.Name, t.DType, describeType(in.DType))
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		if _, err := resolveShape(in, t.Shape, true); err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
	}
	var extra []string
	for name := range inputs {
		if !contains(names, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("inputs %q are not graph inputs (the graph has %q)", extra, names)
	}
	return names, nil
}

func sessionOptions(opts Options, threads int) (*onnx.SessionOptions, error) {
	so, err := onnx.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	level, _ := levelCode(opts.Level)
	steps := []struct {
		what string
		err  error
	}{
		{"optimization level", so.SetGraphOptimizationLevel(onnx.GraphOptimizationLevel(level))},
		{"execution mode", so.SetExecutionMode(onnx.ExecutionModeSequential)},
		{"intra-op threads", so.SetIntraOpNumThreads(threads)},
		{"inter-op threads", so.SetInterOpNumThreads(1)},
		{"CPU arena", so.SetCpuMemArena(opts.Arena)},
		{"memory pattern", so.SetMemPattern(opts.MemPattern)},
	}
	if len(opts.DisabledOptimizers) > 0 {
		steps = append(steps, struct {
			what string
			err  error
		}{"disabled optimizers", so.AddSessionConfigEntry("optimization.disable_specified_optimizers", strings.Join(opts.DisabledOptimizers, ";"))})
	}
	keys := make([]string, 0, len(opts.Config))
	for k := range opts.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		steps = append(steps, struct {
			what string
			err  error
		}{"config " + k, so.AddSessionConfigEntry(k, opts.Config[k])})
	}
	for _, s := range steps {
		if s.err != nil {
			so.Destroy()
			return nil, fmt.Errorf("setting %s: %w", s.what, s.err)
		}
	}
	return so, nil
}

// readProfile parses the one profile file ORT wrote into dir.
func readProfile(dir string) (*Profile, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("expected one ORT profile file in %s, found %d", dir, len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return nil, err
	}
	return ParseProfile(data)
}

// ORT element type codes (ONNX TensorProto.DataType) used below.
const (
	codeFloat    = 1
	codeUint8    = 2
	codeInt8     = 3
	codeUint16   = 4
	codeInt16    = 5
	codeInt32    = 6
	codeInt64    = 7
	codeBool     = 9
	codeFloat16  = 10
	codeDouble   = 11
	codeUint32   = 12
	codeUint64   = 13
	codeBfloat16 = 16
)

// newInputValue wraps t as an ORT value. Non-empty tensors share t.Data
// (ORT only reads inputs); empty and rank-0 ones are built from typed Go
// values, which onnxruntime_go supports only for its native types.
func newInputValue(t Tensor) (onnx.Value, error) {
	code, _ := DTypeCode(t.DType)
	if len(t.Shape) > 0 && len(t.Data) > 0 {
		return onnx.NewCustomDataTensor(onnx.Shape(append([]int64{}, t.Shape...)), t.Data, onnx.TensorElementDataType(code))
	}
	switch code {
	case codeFloat:
		return typedInput[float32](t)
	case codeDouble:
		return typedInput[float64](t)
	case codeInt8:
		return typedInput[int8](t)
	case codeUint8:
		return typedInput[uint8](t)
	case codeInt16:
		return typedInput[int16](t)
	case codeUint16:
		return typedInput[uint16](t)
	case codeInt32:
		return typedInput[int32](t)
	case codeInt64:
		return typedInput[int64](t)
	case codeUint32:
		return typedInput[uint32](t)
	case codeUint64:
		return typedInput[uint64](t)
	case codeBool:
		return typedInput[bool](t)
	}
	return nil, fmt.Errorf("onnxruntime_go cannot pass a rank-0 or empty %s tensor", t.DType)
}

func typedInput[T onnx.TensorData](t Tensor) (onnx.Value, error) {
	vals := make([]T, t.NumElements())
	if _, err := binary.Decode(t.Data, binary.LittleEndian, vals); err != nil {
		return nil, err
	}
	if len(t.Shape) == 0 {
		return onnx.NewScalar(vals[0])
	}
	return onnx.NewTensor(onnx.Shape(append([]int64{}, t.Shape...)), vals)
}

// preallocOutput returns nil for outputs ORT should allocate, and a value
// Run allocates for outputs onnxruntime_go v1.27.0 cannot copy out of ORT:
// float16/bfloat16 ones (it copies one byte per element) and rank-0 ones (it
// rejects their empty shape).
func preallocOutput(o ValueInfo, given map[string][]int64) (onnx.Value, error) {
	code, _ := DTypeCode(o.DType)
	custom := code == codeFloat16 || code == codeBfloat16
	if !custom && len(o.Shape) != 0 {
		return nil, nil
	}
	g, have := given[o.Name]
	shape, err := resolveShape(o, g, have)
	if err != nil {
		return nil, fmt.Errorf("%w; Options.OutputShapes[%q] must give its shape (onnxruntime_go cannot return ORT-allocated %s%v outputs, so Run allocates them)", err, o.Name, o.DType, o.Shape)
	}
	if len(shape) == 0 {
		switch code {
		case codeFloat:
			return onnx.NewEmptyScalar[float32]()
		case codeDouble:
			return onnx.NewEmptyScalar[float64]()
		case codeInt8:
			return onnx.NewEmptyScalar[int8]()
		case codeUint8:
			return onnx.NewEmptyScalar[uint8]()
		case codeInt16:
			return onnx.NewEmptyScalar[int16]()
		case codeUint16:
			return onnx.NewEmptyScalar[uint16]()
		case codeInt32:
			return onnx.NewEmptyScalar[int32]()
		case codeInt64:
			return onnx.NewEmptyScalar[int64]()
		case codeUint32:
			return onnx.NewEmptyScalar[uint32]()
		case codeUint64:
			return onnx.NewEmptyScalar[uint64]()
		case codeBool:
			return onnx.NewEmptyScalar[bool]()
		}
		return nil, fmt.Errorf("onnxruntime_go cannot return a rank-0 %s output", describeType(o.DType))
	}
	size, _ := ElemSize(o.DType)
	n := NumElements(shape)
	if n == 0 {
		return nil, fmt.Errorf("onnxruntime_go cannot return an empty %s output", o.DType)
	}
	return onnx.NewCustomDataTensor(onnx.Shape(shape), make([]byte, n*int64(size)), onnx.TensorElementDataType(code))
}

// tensorFromValue copies an ORT value into a Tensor.
func tensorFromValue(v onnx.Value) (Tensor, error) {
	if isNil(v) {
		return Tensor{}, errors.New("ORT returned no value")
	}
	if v.GetONNXType() != onnx.ONNXTypeTensor {
		return Tensor{}, fmt.Errorf("%s values are not supported", v.GetONNXType())
	}
	code := int32(v.DataType())
	dtype := DTypeName(code)
	if _, ok := DTypeCode(dtype); !ok {
		return Tensor{}, fmt.Errorf("element type %s is not supported", dtype)
	}
	var data any
	switch t := v.(type) {
	case *onnx.CustomDataTensor:
		data = t.GetData()
	case *onnx.Tensor[float32]:
		data = t.GetData()
	case *onnx.Tensor[float64]:
		data = t.GetData()
	case *onnx.Tensor[int8]:
		data = t.GetData()
	case *onnx.Tensor[uint8]:
		data = t.GetData()
	case *onnx.Tensor[int16]:
		data = t.GetData()
	case *onnx.Tensor[uint16]:
		data = t.GetData()
	case *onnx.Tensor[int32]:
		data = t.GetData()
	case *onnx.Tensor[int64]:
		data = t.GetData()
	case *onnx.Tensor[uint32]:
		data = t.GetData()
	case *onnx.Tensor[uint64]:
		data = t.GetData()
	case *onnx.Tensor[bool]:
		data = t.GetData()
	case *onnx.Scalar[float32]:
		data = t.GetData()
	case *onnx.Scalar[float64]:
		data = t.GetData()
	case *onnx.Scalar[int8]:
		data = t.GetData()
	case *onnx.Scalar[uint8]:
		data = t.GetData()
	case *onnx.Scalar[int16]:
		data = t.GetData()
	case *onnx.Scalar[uint16]:
		data = t.GetData()
	case *onnx.Scalar[int32]:
		data = t.GetData()
	case *onnx.Scalar[int64]:
		data = t.GetData()
	case *onnx.Scalar[uint32]:
		data = t.GetData()
	case *onnx.Scalar[uint64]:
		data = t.GetData()
	case *onnx.Scalar[bool]:
		data = t.GetData()
	default:
		return Tensor{}, fmt.Errorf("unexpected value %T", v)
	}
	buf, err := binary.Append(nil, binary.LittleEndian, data)
	if err != nil {
		return Tensor{}, err
	}
	shape := []int64(v.GetShape())
	if shape == nil {
		shape = []int64{}
	}
	t := Tensor{DType: dtype, Shape: append([]int64{}, shape...), Data: buf}
	if err := t.Validate(); err != nil {
		return Tensor{}, fmt.Errorf("copying from ORT: %w", err)
	}
	return t, nil
}

// isNil reports whether v is nil or a typed nil pointer (onnxruntime_go can
// store one in an output slot when converting the value fails).
func isNil(v onnx.Value) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func destroyValue(v onnx.Value) {
	if !isNil(v) {
		v.Destroy()
	}
}

func destroyAll(vs []onnx.Value) {
	for _, v := range vs {
		destroyValue(v)
	}
}
