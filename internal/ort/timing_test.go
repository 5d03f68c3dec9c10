package ort

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{ms(5), 5 * time.Millisecond},
		{ms(9, 1, 5), 5 * time.Millisecond},
		{ms(4, 1, 3, 2), 2500 * time.Microsecond},
	} {
		in := append([]time.Duration(nil), tc.in...)
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("Median reordered its argument: %v", tc.in)
			}
		}
	}
	tm := Timing{Wall: ms(3), CPU: ms(2)}
	if tm.Times(ClockCPU)[0] != 2*time.Millisecond || tm.Times(ClockWall)[0] != 3*time.Millisecond {
		t.Errorf("Times picks the wrong clock")
	}
	if (Timing{Wall: ms(3)}).Times(ClockCPU)[0] != 3*time.Millisecond {
		t.Errorf("without CPU times, Times(cpu) must fall back to the wall clock")
	}
}

func TestTimeModels(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	in := mustInputs(t, path, 1, nil)
	models := []TimedModel{
		{Path: path, Inputs: in},
		{Path: path, Inputs: in, PreallocOutputs: true},
		{Path: path, Inputs: in, ColdInputs: []string{"x"}, EvictBytes: 4 << 20},
	}
	const rounds = 5
	times, err := TimeModels(models, MeasureOptions("disabled"), 2, rounds)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != len(models) {
		t.Fatalf("%d timings for %d models", len(times), len(models))
	}
	for i, tm := range times {
		if len(tm.Wall) != rounds {
			t.Errorf("model %d: %d wall times, want %d", i, len(tm.Wall), rounds)
		}
		if runtime.GOOS == "linux" && len(tm.CPU) != rounds {
			t.Errorf("model %d: %d CPU times on Linux, want %d", i, len(tm.CPU), rounds)
		}
		for _, d := range append(tm.Wall, tm.CPU...) {
			if d <= 0 || d > time.Minute {
				t.Errorf("model %d: time %v", i, d)
			}
		}
	}
	// The run after a cold preparation is timed on the original inputs
	// and gives the same outputs: check through Run that the model is fine.
	if _, err := Run(path, in, MeasureOptions("disabled")); err != nil {
		t.Fatal(err)
	}
}

func TestTimeModelsErrors(t *testing.T) {
	requireORT(t)
	path := model(t, "twoconv")
	in := mustInputs(t, path, 1, nil)
	for _, tc := range []struct {
		name           string
		models         []TimedModel
		warmup, rounds int
		want           string
	}{
		{"no rounds", []TimedModel{{Path: path, Inputs: in}}, 0, 0, "rounds >= 1"},
		{"no models", nil, 0, 1, "no models"},
		{"missing input", []TimedModel{{Path: path, Inputs: map[string]Tensor{}}}, 0, 1, `no value for graph input "x"`},
		{"bad cold input", []TimedModel{{Path: path, Inputs: in, ColdInputs: []string{"w"}, EvictBytes: 1 << 20}}, 0, 1, `ColdInputs names "w"`},
		{"bad model", []TimedModel{{Path: path + ".missing", Inputs: in}}, 0, 1, ".missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TimeModels(tc.models, MeasureOptions("disabled"), tc.warmup, tc.rounds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
