package ort

import (
	"slices"
	"time"
)

// TimedModel is one model for TimeModels: the file and a value for each
// of its graph inputs.
type TimedModel struct {
	Path   string
	Inputs map[string]Tensor
	// PreallocOutputs makes TimeModels allocate every graph output once,
	// with its declared static shape, and hand the same buffers to every
	// run, so that ORT writes the outputs into warm memory the way a
	// node inside a model writes into a buffer its allocation planner
	// reuses. Otherwise ORT allocates the outputs on every run.
	PreallocOutputs bool
	// ColdInputs names graph inputs whose data should come from main
	// memory, as a model's weights do when its other nodes have filled the
	// caches since their last use. Before each run TimeModels evicts the
	// caches by writing EvictBytes bytes of a buffer of its own, then runs
	// the model once untimed on copies of the cold inputs (which warms
	// the code, the session's structures, the output buffers and the
	// other inputs), then runs it timed on the originals, which nothing
	// has touched since the eviction. Ignored unless EvictBytes > 0.
	ColdInputs []string
	EvictBytes int
}

// Timing is what TimeModels measured of one model: one entry per round.
type Timing struct {
	// Wall is the wall-clock time of each run.
	Wall []time.Duration
	// CPU is the CPU time of the thread that ran it, nil where that
	// clock is not available (outside Linux).
	CPU []time.Duration
}

// Clock names a clock of Timing: ClockCPU or ClockWall.
const (
	ClockCPU  = "cpu"
	ClockWall = "wall"
)

// Times returns the runs by the named clock: the CPU times when clock is
// ClockCPU and they are available, else the wall-clock times.
func (t Timing) Times(clock string) []time.Duration {
	if clock == ClockCPU && t.CPU != nil {
		return t.CPU
	}
	return t.Wall
}

// Median returns the median of ds (the mean of the two middle values for
// an even count), 0 for none. ds is not changed.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
