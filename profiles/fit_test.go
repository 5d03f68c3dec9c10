package profiles

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
)

func fitDatasheet() *Device {
	return &Device{Name: "test", MemoryBytes: 1 << 30, MemoryBandwidth: 50e9, PeakFLOPs: map[ir.DType]float64{ir.Float32: 100e9}}
}

// syntheticSamples draws n nodes whose work spans six orders of
// magnitude on both sides of the ridge point and times them with the
// roofline (o, a, b), times a seeded multiplicative noise of ±noise.
func syntheticSamples(seed uint64, n int, o, a, b, noise float64) []FitSample {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]FitSample, 0, n)
	for i := range n {
		s := FitSample{Bytes: math.Pow(10, 3+6*rng.Float64())}
		switch i % 5 {
		case 0: // views: no work (a time of 0 without an overhead)
			if o > 0 {
				s.Bytes = 0
			}
		case 1: // data movement: bytes only
		default: // arithmetic intensity from 0.1 to 100 FLOPs per byte
			s.FLOPs = s.Bytes * math.Pow(10, -1+3*rng.Float64())
		}
		s.Seconds = o + max(s.FLOPs/a, s.Bytes/b)
		s.Seconds *= 1 + noise*(2*rng.Float64()-1)
		out = append(out, s)
	}
	return out
}

func relDiff(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestFitRecoversExactRoofline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o, a, b float64
	}{
		{"cpu", 2e-6, 60e9, 20e9},
		{"gpu", 8e-6, 12e12, 800e9},
		{"no-overhead", 0, 1e9, 4e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples := syntheticSamples(1, 300, tc.o, tc.a, tc.b, 0)
			res, err := Fit(samples, fitDatasheet())
			if err != nil {
				t.Fatal(err)
			}
			f := res.Fitted
			if relDiff(f.FLOPsPerSecond, tc.a) > 1e-6 || relDiff(f.BytesPerSecond, tc.b) > 1e-6 {
				t.Errorf("rates %g FLOP/s, %g B/s; want %g, %g", f.FLOPsPerSecond, f.BytesPerSecond, tc.a, tc.b)
			}
			if math.Abs(f.OverheadSeconds-tc.o) > 1e-6*max(tc.o, 1e-9) {
				t.Errorf("overhead %g s, want %g", f.OverheadSeconds, tc.o)
			}
			if res.MedianRelError > 1e-6 || res.RMSRelError > 1e-6 {
				t.Errorf("errors %g (median), %g (rms) on exact data", res.MedianRelError, res.RMSRelError)
			}
			if len(res.Fallback) != 0 {
				t.Errorf("Fallback = %v, want none", res.Fallback)
			}
			working := 0
			for _, s := range samples {
				if s.FLOPs > 0 || s.Bytes > 0 {
					working++
				}
			}
			if res.ComputeBound == 0 || res.MemoryBound == 0 || res.ComputeBound+res.MemoryBound != working {
				t.Errorf("regimes: %d compute-bound, %d memory-bound; want both, %d in all", res.ComputeBound, res.MemoryBound, working)
			}
		})
	}
}

func TestFitWithNoise(t *testing.T) {
	const o, a, b = 3e-6, 50e9, 25e9
	samples := syntheticSamples(2, 500, o, a, b, 0.1)
	res, err := Fit(samples, fitDatasheet())
	if err != nil {
		t.Fatal(err)
	}
	f := res.Fitted
	if relDiff(f.FLOPsPerSecond, a) > 0.05 || relDiff(f.BytesPerSecond, b) > 0.05 || relDiff(f.OverheadSeconds, o) > 0.1 {
		t.Errorf("fit (%g s, %g FLOP/s, %g B/s), want within 5-10%% of (%g, %g, %g)", f.OverheadSeconds, f.FLOPsPerSecond, f.BytesPerSecond, o, a, b)
	}
	// Uniform ±10% noise: the median |error| is about 5%.
	if res.MedianRelError > 0.07 || res.MedianRelError < 0.02 {
		t.Errorf("median relative error %g, want about 0.05", res.MedianRelError)
	}
}

// The fitted roofline, written into a profile, gives Cost the fitted
// times: Fit and Cost agree on the formula.
func TestFitMatchesCost(t *testing.T) {
	g := ir.NewGraph("m")
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 64, 256))
	w := g.AddParam("w", ir.TensorOf(ir.Float32, 256, 128), nil)
	mm := g.NewNode("MatMul", "", []*ir.Value{x, w}, []string{"y"})
	mm.Outputs[0].Type = ir.TensorOf(ir.Float32, 64, 128)
	relu := g.NewNode("Relu", "", []*ir.Value{mm.Outputs[0]}, []string{"z"})
	relu.Outputs[0].Type = ir.TensorOf(ir.Float32, 64, 128)

	const o, a, b = 1e-6, 40e9, 10e9
	plain := &Profile{Format: FormatV1, Device: *fitDatasheet()}
	var samples []FitSample
	for _, n := range []*ir.Node{mm, relu} {
		c, err := plain.Cost(n)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, FitSample{Seconds: o + max(c.FLOPs/a, float64(c.Bytes())/b), FLOPs: c.FLOPs, Bytes: float64(c.Bytes())})
	}
	// Two nodes cannot determine three unknowns: add the synthetic ones.
	samples = append(samples, syntheticSamples(3, 100, o, a, b, 0)...)
	res, err := Fit(samples, &plain.Device)
	if err != nil {
		t.Fatal(err)
	}
	fitted := &Profile{Format: FormatV1, Device: plain.Device, Fitted: &res.Fitted}
	for i, n := range []*ir.Node{mm, relu} {
		c, err := fitted.Cost(n)
		if err != nil {
			t.Fatal(err)
		}
		if c.Source != SourceFitted || relDiff(c.Seconds, samples[i].Seconds) > 1e-6 {
			t.Errorf("%s: Cost = %g s (%s), want %g s (fitted)", n.Op, c.Seconds, c.Source, samples[i].Seconds)
		}
	}
}

func TestFitFallsBackToDatasheet(t *testing.T) {
	// Only data movement: nothing determines the FLOP rate.
	var samples []FitSample
	for i := range 50 {
		bytes := float64(1000 * (i + 1))
		samples = append(samples, FitSample{Seconds: 1e-6 + bytes/5e9, Bytes: bytes})
	}
	res, err := Fit(samples, fitDatasheet())
	if err != nil {
		t.Fatal(err)
	}
	if res.Fitted.FLOPsPerSecond != 100e9 || len(res.Fallback) != 1 || res.Fallback[0] != "flops_per_second" {
		t.Errorf("FLOP rate %g, Fallback %v; want the datasheet's 1e11 and [flops_per_second]", res.Fitted.FLOPsPerSecond, res.Fallback)
	}
	if relDiff(res.Fitted.BytesPerSecond, 5e9) > 1e-6 || relDiff(res.Fitted.OverheadSeconds, 1e-6) > 1e-6 {
		t.Errorf("fit %g B/s, %g s; want 5e9, 1e-6", res.Fitted.BytesPerSecond, res.Fitted.OverheadSeconds)
	}
	// Views alone: the overhead is the only unknown.
	res, err = Fit([]FitSample{{Seconds: 2e-6}, {Seconds: 4e-6}}, fitDatasheet())
	if err != nil {
		t.Fatal(err)
	}
	if relDiff(res.Fitted.OverheadSeconds, 2.4e-6) > 1e-9 || len(res.Fallback) != 2 {
		// min Σ((o−t)/t)² has o = Σ(1/t) / Σ(1/t²) = 7.5e5 / 3.125e11.
		t.Errorf("overhead %g, Fallback %v; want 2.4e-6 and both rates from the datasheet", res.Fitted.OverheadSeconds, res.Fallback)
	}
}

func TestFitErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []FitSample
		dev     *Device
		want    string
	}{
		{"none", nil, fitDatasheet(), "no samples"},
		{"zero time", []FitSample{{Seconds: 0, Bytes: 1}}, fitDatasheet(), "sample 0: time 0"},
		{"nan work", []FitSample{{Seconds: 1, FLOPs: math.NaN()}}, fitDatasheet(), "must be non-negative"},
		{"no datasheet", []FitSample{{Seconds: 1}}, nil, "datasheet"},
		{"no bandwidth", []FitSample{{Seconds: 1}}, &Device{PeakFLOPs: map[ir.DType]float64{ir.Float32: 1}}, "datasheet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Fit(tc.samples, tc.dev)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Fit error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func BenchmarkFit(b *testing.B) {
	samples := syntheticSamples(4, 1000, 2e-6, 60e9, 20e9, 0.1)
	for b.Loop() {
		if _, err := Fit(samples, fitDatasheet()); err != nil {
			b.Fatal(err)
		}
	}
}
