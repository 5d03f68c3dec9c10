package profiles

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/remat-compile/remat/ir"
)

// FitSample is one measured node for Fit: its measured time and the work
// the cost model counts for it (Cost.FLOPs and Cost.Bytes of the node).
type FitSample struct {
	Seconds float64
	FLOPs   float64
	Bytes   float64
}

// FitResult is the roofline Fit found and how well it fits.
type FitResult struct {
	// Fitted holds the fitted rates and overhead; Source is left for the
	// caller to fill.
	Fitted Fitted
	// ComputeBound and MemoryBound count the samples on each side of the
	// fitted roofline's ridge point (FLOPs·(1/FLOPsPerSecond) > or <=
	// bytes·(1/BytesPerSecond)); samples with neither FLOPs nor bytes
	// are in neither.
	ComputeBound, MemoryBound int
	// MedianRelError and RMSRelError summarise |predicted − measured| /
	// measured over the samples.
	MedianRelError, RMSRelError float64
	// Fallback names the rates no sample determined, which were taken
	// from the datasheet ("flops_per_second", "bytes_per_second"); empty
	// when the samples determined both.
	Fallback []string
}

// Fit fits the roofline that Cost evaluates for a fitted profile,
//
//	t ≈ o + max(F·x, B·y),  o, x, y ≥ 0,
//
// to measured nodes (t their time, F their FLOPs, B their bytes), so
// that FLOPsPerSecond = 1/x, BytesPerSecond = 1/y and OverheadSeconds =
// o. This is the profile-based additive cost model of Checkmate §4.10
// (costs measured on the target hardware with random inputs) extended to
// nodes that were never measured.
//
// The error minimised is relative, Σ ((pred_i − t_i)/t_i)²: measured
// times span microseconds to seconds, and an absolute error would let
// the largest kernels decide the fit alone.
//
// The max makes the problem non-convex, but its regimes are a threshold
// on arithmetic intensity: node i is compute-bound exactly when F_i/B_i ≥
// y/x. So Fit sorts the samples by intensity and, for every split
// position, solves the non-negative least-squares problem in which the
// samples above the split are compute-bound (t ≈ o + F·x) and the others
// memory-bound (t ≈ o + B·y): a 3-variable weighted NNLS, solved exactly
// by trying every active set. Each split's solution is scored by the real
// (max) objective; the best one is then refined by alternating between
// re-deriving the regimes from its parameters and re-solving, while that
// improves the objective.
//
// A rate no sample determines (x = 0 when no sample is compute-bound,
// or no sample has FLOPs; likewise y) is taken from datasheet: its f32
// vector peak and its memory bandwidth, and named in Fallback. Samples
// must have positive finite times and non-negative finite work.
func Fit(samples []FitSample, datasheet *Device) (*FitResult, error) {
	if len(samples) == 0 {
		return nil, errors.New("profiles: Fit: no samples")
	}
	if datasheet == nil || !(datasheet.MemoryBandwidth > 0) || !(datasheet.PeakFLOPs[ir.Float32] > 0) {
		return nil, errors.New("profiles: Fit: the datasheet has no positive f32 rate or memory bandwidth")
	}
	for i, s := range samples {
		if !(s.Seconds > 0) || math.IsInf(s.Seconds, 0) {
			return nil, fmt.Errorf("profiles: Fit: sample %d: time %v is not positive and finite", i, s.Seconds)
		}
		if !(s.FLOPs >= 0) || !(s.Bytes >= 0) || math.IsInf(s.FLOPs, 0) || math.IsInf(s.Bytes, 0) {
			return nil, fmt.Errorf("profiles: Fit: sample %d: FLOPs %v and bytes %v must be non-negative and finite", i, s.FLOPs, s.Bytes)
		}
	}
	// Sort by intensity, FLOPs per byte (+Inf for FLOPs without bytes);
	// samples with no work at all only inform the overhead and sort first.
	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	intensity := func(s FitSample) float64 {
		switch {
		case s.FLOPs == 0:
			return 0
		case s.Bytes == 0:
			return math.Inf(1)
		}
		return s.FLOPs / s.Bytes
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ia, ib := intensity(samples[a]), intensity(samples[b])
		switch {
		case ia < ib:
			return -1
		case ia > ib:
			return 1
		}
		return 0
	})
	sorted := make([]FitSample, len(samples))
	for k, i := range order {
		sorted[k] = samples[i]
	}

	best := params{}
	bestObj := math.Inf(1)
	compute := make([]bool, len(sorted))
	for split := 0; split <= len(sorted); split++ {
		for k := range sorted {
			compute[k] = k >= split
		}
		p := solveRegimes(sorted, compute)
		if obj := objective(sorted, p); obj < bestObj {
			best, bestObj = p, obj
		}
	}
	// Refine: the regimes the best parameters imply, solved again.
	for range 100 {
		for k, s := range sorted {
			compute[k] = s.FLOPs*best.x > s.Bytes*best.y
		}
		p := solveRegimes(sorted, compute)
		obj := objective(sorted, p)
		if !(obj < bestObj*(1-1e-12)) {
			break
		}
		best, bestObj = p, obj
	}

	res := &FitResult{}
	f := &res.Fitted
	f.OverheadSeconds = best.o
	// A rate is determined when some sample lies in its regime with work
	// of that kind; else the datasheet's.
	var haveF, haveB bool
	for _, s := range sorted {
		if best.x > 0 && s.FLOPs > 0 && s.FLOPs*best.x > s.Bytes*best.y {
			haveF = true
		}
		if best.y > 0 && s.Bytes > 0 && s.FLOPs*best.x <= s.Bytes*best.y {
			haveB = true
		}
	}
	if haveF {
		f.FLOPsPerSecond = 1 / best.x
	} else {
		f.FLOPsPerSecond = datasheet.PeakFLOPs[ir.Float32]
		res.Fallback = append(res.Fallback, "flops_per_second")
	}
	if haveB {
		f.BytesPerSecond = 1 / best.y
	} else {
		f.BytesPerSecond = datasheet.MemoryBandwidth
		res.Fallback = append(res.Fallback, "bytes_per_second")
	}
	// The statistics of the roofline as written (fallback rates included).
	final := params{o: f.OverheadSeconds, x: 1 / f.FLOPsPerSecond, y: 1 / f.BytesPerSecond}
	rel := make([]float64, len(samples))
	var sq float64
	for i, s := range samples {
		c, m := s.FLOPs*final.x, s.Bytes*final.y
		switch {
		case c == 0 && m == 0:
		case c > m:
			res.ComputeBound++
		default:
			res.MemoryBound++
		}
		e := math.Abs(final.predict(s)-s.Seconds) / s.Seconds
		rel[i] = e
		sq += e * e
	}
	slices.Sort(rel)
	n := len(rel)
	res.MedianRelError = rel[n/2]
	if n%2 == 0 {
		res.MedianRelError = (rel[n/2-1] + rel[n/2]) / 2
	}
	res.RMSRelError = math.Sqrt(sq / float64(n))
	return res, nil
}

// params are the roofline's overhead o and inverse rates x = 1/FLOP rate
// and y = 1/byte rate.
type params struct{ o, x, y float64 }

func (p params) predict(s FitSample) float64 { return p.o + max(s.FLOPs*p.x, s.Bytes*p.y) }

// objective is Σ ((pred − t)/t)² under the max roofline.
func objective(samples []FitSample, p params) float64 {
	var sum float64
	for _, s := range samples {
		e := (p.predict(s) - s.Seconds) / s.Seconds
		sum += e * e
	}
	return sum
}

// solveRegimes solves min Σ ((o + c_i·F_i·x + (1−c_i)·B_i·y − t_i)/t_i)²
// over o, x, y ≥ 0, where c_i says sample i is compute-bound: a weighted
// linear least-squares problem with three non-negative unknowns. The
// non-negative optimum is the unconstrained optimum on some subset of
// the unknowns (the others zero) that is itself non-negative, and, the
// problem being convex, the best such subset solution is the optimum: so
// every one of the 8 subsets is tried.
func solveRegimes(samples []FitSample, compute []bool) params {
	// Normal equations of rows a_i = [1, c·F, (1−c)·B]/t, rhs 1.
	var ata [3][3]float64
	var atb [3]float64
	for i, s := range samples {
		w := 1 / s.Seconds
		a := [3]float64{w, 0, 0}
		if compute[i] {
			a[1] = s.FLOPs * w
		} else {
			a[2] = s.Bytes * w
		}
		for r := range 3 {
			atb[r] += a[r]
			for c := range 3 {
				ata[r][c] += a[r] * a[c]
			}
		}
	}
	// Scale the unknowns to unit diagonal: the columns differ by many
	// orders of magnitude (1/t against F/t).
	var sc [3]float64
	for k := range 3 {
		sc[k] = math.Sqrt(ata[k][k])
	}
	for r := range 3 {
		for c := range 3 {
			if sc[r] > 0 && sc[c] > 0 {
				ata[r][c] /= sc[r] * sc[c]
			}
		}
		if sc[r] > 0 {
			atb[r] /= sc[r]
		}
	}
	best := params{}
	bestObj := math.Inf(1)
	for mask := 1; mask < 8; mask++ {
		var idx []int
		usable := true
		for k := range 3 {
			if mask&(1<<k) != 0 {
				idx = append(idx, k)
				usable = usable && sc[k] > 0
			}
		}
		if !usable {
			continue // an unknown no row constrains
		}
		sol, ok := solveSub(ata, atb, idx)
		if !ok {
			continue
		}
		var z [3]float64
		feasible := true
		for j, k := range idx {
			if sol[j] < 0 || math.IsNaN(sol[j]) || math.IsInf(sol[j], 0) {
				feasible = false
			}
			z[k] = sol[j]
		}
		if !feasible {
			continue
		}
		// The least-squares objective up to a constant: zᵀMz − 2zᵀb.
		var obj float64
		for r := range 3 {
			for c := range 3 {
				obj += z[r] * ata[r][c] * z[c]
			}
			obj -= 2 * z[r] * atb[r]
		}
		if obj < bestObj {
			var v [3]float64
			for k := range 3 {
				if sc[k] > 0 {
					v[k] = z[k] / sc[k]
				}
			}
			best, bestObj = params{o: v[0], x: v[1], y: v[2]}, obj
		}
	}
	return best
}

// solveSub solves the (scaled) normal equations restricted to the
// unknowns idx by Gauss-Jordan elimination with partial pivoting; ok is
// false when they are singular.
func solveSub(ata [3][3]float64, atb [3]float64, idx []int) ([]float64, bool) {
	n := len(idx)
	m := make([][]float64, n)
	for r, i := range idx {
		m[r] = make([]float64, n+1)
		for c, j := range idx {
			m[r][c] = ata[i][j]
		}
		m[r][n] = atb[i]
	}
	for col := range n {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[piv][col]) {
				piv = r
			}
		}
		// The matrix has a unit diagonal (solveRegimes scales it).
		if math.Abs(m[piv][col]) <= 1e-12 {
			return nil, false
		}
		m[col], m[piv] = m[piv], m[col]
		for r := range n {
			if r == col {
				continue
			}
			f := m[r][col] / m[col][col]
			for c := col; c <= n; c++ {
				m[r][c] -= f * m[col][c]
			}
		}
	}
	out := make([]float64, n)
	for r := range n {
		out[r] = m[r][n] / m[r][r]
	}
	return out, true
}
