//go:build cgo

package ort

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	onnx "github.com/yalue/onnxruntime_go"
)

// TimeModels measures one Run call of each model, with every model's
// session open at once, and returns times[i], the times of model i, one
// per round. Each model first runs warmup times (not returned); then each of the rounds runs every model once, in forward
// order in even rounds and in reverse order in odd ones, so that a slow
// spell of the machine (other processes, frequency changes) falls on all
// models alike rather than on whichever ran last. Only Session.Run is
// timed: inputs are built before the first run, and outputs ORT allocates
// are released after the clock stops. Each run is timed by the wall clock
// and, on Linux, by the CPU time of the OS thread that runs it (the
// caller's, locked for the duration): with one intra-op thread and
// sequential execution ONNX Runtime runs every kernel on that thread, so
// its CPU time is the run's time without the spells in which other
// processes had the core. A model with TimedModel.ColdInputs is prepared
// before each timed run (not its warm-up runs) by evicting the caches and
// running it untimed on copies of those inputs; see TimedModel.
//
// opts configures every session as for Run (level, threads, arena, memory
// pattern, disabled optimizers, config entries, output shapes); Profile,
// Runs and OptimizedModel are ignored: timing never profiles, since ORT's
// profiler adds work to every kernel. Errors name the model path.
func TimeModels(models []TimedModel, opts Options, warmup, rounds int) (times []Timing, err error) {
	defer func() {
		// onnxruntime_go indexes slices without checking in places; report
		// anything it throws as an error rather than crash the caller.
		if r := recover(); r != nil {
			times, err = nil, fmt.Errorf("internal error in onnxruntime_go: %v", r)
		}
	}()
	if warmup < 0 || rounds < 1 {
		return nil, fmt.Errorf("TimeModels: want warmup >= 0 and rounds >= 1, got %d and %d", warmup, rounds)
	}
	if len(models) == 0 {
		return nil, errors.New("TimeModels: no models")
	}
	opts.Profile, opts.OptimizedModel, opts.Runs = false, false, 1
	threads, _, err := opts.check()
	if err != nil {
		return nil, err
	}
	if err := initEnv(); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	evict := 0
	for _, m := range models {
		if len(m.ColdInputs) > 0 {
			evict = max(evict, m.EvictBytes)
		}
	}
	var scratch []byte
	if evict > 0 {
		scratch = make([]byte, evict)
	}
	timers := make([]*timedSession, len(models))
	defer func() {
		for _, t := range timers {
			t.destroy()
		}
	}()
	for i, m := range models {
		t, err := newTimedSession(m, opts, threads)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Path, err)
		}
		timers[i] = t
	}
	for _, t := range timers {
		for range warmup {
			if _, _, _, err := t.run(); err != nil {
				return nil, fmt.Errorf("%s: warm-up run: %w", t.path, err)
			}
		}
	}
	times = make([]Timing, len(models))
	for r := range rounds {
		for k := range timers {
			i := k
			if r%2 == 1 {
				i = len(timers) - 1 - k
			}
			if err := timers[i].prepareCold(scratch, r); err != nil {
				return nil, fmt.Errorf("%s: run %d: %w", timers[i].path, r+1, err)
			}
			wall, cpu, cpuOK, err := timers[i].run()
			if err != nil {
				return nil, fmt.Errorf("%s: run %d: %w", timers[i].path, r+1, err)
			}
			times[i].Wall = append(times[i].Wall, wall)
			if cpuOK {
				times[i].CPU = append(times[i].CPU, cpu)
			}
		}
	}
	for i := range times {
		if len(times[i].CPU) != len(times[i].Wall) {
			times[i].CPU = nil // the clock failed on some run
		}
	}
	return times, nil
}

// timedSession is one open session with its inputs and output slots.
type timedSession struct {
	path     string
	so       *onnx.SessionOptions
	sess     *onnx.DynamicAdvancedSession
	inVals   []onnx.Value
	prealloc []onnx.Value
	// shadow holds the inputs of the untimed run before a cold one:
	// copies of the cold inputs, the others shared with inVals (nil when
	// the model has no cold inputs); evict is the bytes to evict first.
	shadow []onnx.Value
	copies []onnx.Value
	evict  int
}

func newTimedSession(m TimedModel, opts Options, threads int) (t *timedSession, err error) {
	inNames, outs, outNames, err := modelSignature(m.Path, m.Inputs)
	if err != nil {
		return nil, err
	}
	t = &timedSession{path: m.Path}
	defer func() {
		if err != nil {
			t.destroy()
			t = nil
		}
	}()
	if t.so, err = sessionOptions(opts, threads); err != nil {
		return t, err
	}
	t.inVals = make([]onnx.Value, len(inNames))
	for i, name := range inNames {
		if t.inVals[i], err = newInputValue(m.Inputs[name]); err != nil {
			return t, fmt.Errorf("input %q: %w", name, err)
		}
	}
	if m.EvictBytes > 0 && len(m.ColdInputs) > 0 {
		t.evict = m.EvictBytes
		t.shadow = slices.Clone(t.inVals)
		for _, name := range m.ColdInputs {
			k := slices.Index(inNames, name)
			if k < 0 {
				return t, fmt.Errorf("ColdInputs names %q, which is not a graph input", name)
			}
			in := m.Inputs[name]
			c, err := newInputValue(Tensor{DType: in.DType, Shape: in.Shape, Data: slices.Clone(in.Data)})
			if err != nil {
				return t, fmt.Errorf("input %q: %w", name, err)
			}
			t.copies = append(t.copies, c)
			t.shadow[k] = c
		}
	}
	t.prealloc = make([]onnx.Value, len(outs))
	for i, o := range outs {
		if m.PreallocOutputs {
			t.prealloc[i], err = preallocAny(o, opts.OutputShapes)
		} else {
			t.prealloc[i], err = preallocOutput(o, opts.OutputShapes)
		}
		if err != nil {
			return t, fmt.Errorf("output %q: %w", o.Name, err)
		}
	}
	if t.sess, err = onnx.NewDynamicAdvancedSession(m.Path, inNames, outNames, t.so); err != nil {
		return t, err
	}
	return t, nil
}

// prepareCold gets a model with cold inputs ready for a timed run:
// the caches evicted, then an untimed run on the copies of the cold
// inputs. It does nothing for other models.
func (t *timedSession) prepareCold(scratch []byte, round int) error {
	if t.shadow == nil || t.evict <= 0 || len(scratch) < t.evict {
		return nil
	}
	evictCaches(scratch[:t.evict], round)
	vals := make([]onnx.Value, len(t.prealloc))
	copy(vals, t.prealloc)
	err := t.sess.Run(t.shadow, vals)
	for i := range vals {
		if t.prealloc[i] == nil {
			destroyValue(vals[i])
		}
	}
	return err
}

// run times one Session.Run by the wall clock and the thread's CPU
// clock (cpuOK false when that cannot be read).
func (t *timedSession) run() (wall, cpu time.Duration, cpuOK bool, err error) {
	vals := make([]onnx.Value, len(t.prealloc))
	copy(vals, t.prealloc)
	cpu0, ok0 := threadCPUTime()
	start := time.Now()
	err = t.sess.Run(t.inVals, vals)
	wall = time.Since(start)
	cpu1, ok1 := threadCPUTime()
	for i := range vals {
		if t.prealloc[i] == nil {
			destroyValue(vals[i])
		}
	}
	return wall, cpu1 - cpu0, ok0 && ok1, err
}

func (t *timedSession) destroy() {
	if t == nil {
		return
	}
	if t.sess != nil {
		t.sess.Destroy()
		t.sess = nil
	}
	destroyAll(t.inVals)
	destroyAll(t.prealloc)
	destroyAll(t.copies)
	t.inVals, t.prealloc, t.copies, t.shadow = nil, nil, nil, nil
	if t.so != nil {
		t.so.Destroy()
		t.so = nil
	}
}

// preallocAny allocates output o with its static shape (from given, else
// as the model declares it); rank-0 and empty outputs go through
// preallocOutput's rules.
func preallocAny(o ValueInfo, given map[string][]int64) (onnx.Value, error) {
	code, ok := DTypeCode(o.DType)
	if !ok {
		return nil, fmt.Errorf("unsupported element type %q", describeType(o.DType))
	}
	g, have := given[o.Name]
	shape, err := resolveShape(o, g, have)
	if err != nil {
		return nil, fmt.Errorf("%w; Options.OutputShapes[%q] must give its shape to preallocate it", err, o.Name)
	}
	size, _ := ElemSize(o.DType)
	n := NumElements(shape)
	if len(shape) == 0 || n == 0 {
		return preallocOutput(ValueInfo{Name: o.Name, DType: o.DType, Shape: shape}, map[string][]int64{o.Name: shape})
	}
	return onnx.NewCustomDataTensor(onnx.Shape(shape), make([]byte, n*int64(size)), onnx.TensorElementDataType(code))
}

// evictCaches writes one byte per 64-byte cache line of buf, a different
// value each round so that the writes are never elided.
func evictCaches(buf []byte, round int) {
	v := byte(round)
	for i := 0; i < len(buf); i += 64 {
		buf[i] = v
	}
}
