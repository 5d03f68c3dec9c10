package cbc

import (
	"fmt"
	"math"
)

// Problem is a linear program in the form both Cbc_loadProblem and
// Clp_loadProblem take:
//
//	optimise Obj·x  subject to  RowLower <= A x <= RowUpper,
//	                            ColLower <= x <= ColUpper,
//
// with A in compressed sparse column form: the entries of column j are
// Index[Start[j]:Start[j+1]] (row numbers) and Value[Start[j]:Start[j+1]].
// Infinite bounds are ±math.Inf or ±math.MaxFloat64 (COIN's infinity); the
// loaders translate the former.
type Problem struct {
	NumCols, NumRows int
	Start            []int32 // len NumCols+1, Start[0] == 0, non-decreasing
	Index            []int32 // len Start[NumCols], each in [0, NumRows)
	Value            []float64
	ColLower         []float64 // len NumCols
	ColUpper         []float64
	Obj              []float64
	RowLower         []float64 // len NumRows
	RowUpper         []float64
}

// Check reports the first structural problem with p: wrong lengths, a
// malformed Start, a row index out of range, NaN anywhere, or a size that
// does not fit the C API's int.
func (p *Problem) Check() error {
	if p == nil {
		return fmt.Errorf("cbc: nil problem")
	}
	if p.NumCols < 0 || p.NumRows < 0 || p.NumCols >= math.MaxInt32 || p.NumRows >= math.MaxInt32 {
		return fmt.Errorf("cbc: problem size %d columns × %d rows out of range", p.NumCols, p.NumRows)
	}
	if len(p.Start) != p.NumCols+1 {
		return fmt.Errorf("cbc: len(Start) = %d, want NumCols+1 = %d", len(p.Start), p.NumCols+1)
	}
	if p.Start[0] != 0 {
		return fmt.Errorf("cbc: Start[0] = %d, want 0", p.Start[0])
	}
	for j := 0; j < p.NumCols; j++ {
		if p.Start[j+1] < p.Start[j] {
			return fmt.Errorf("cbc: Start decreases at column %d", j)
		}
	}
	nnz := int(p.Start[p.NumCols])
	if len(p.Index) != nnz || len(p.Value) != nnz {
		return fmt.Errorf("cbc: Start[NumCols] = %d but len(Index) = %d, len(Value) = %d", nnz, len(p.Index), len(p.Value))
	}
	for k, i := range p.Index {
		if i < 0 || int(i) >= p.NumRows {
			return fmt.Errorf("cbc: Index[%d] = %d out of range [0, %d)", k, i, p.NumRows)
		}
		if math.IsNaN(p.Value[k]) || math.IsInf(p.Value[k], 0) {
			return fmt.Errorf("cbc: Value[%d] = %v is not finite", k, p.Value[k])
		}
	}
	for _, a := range []struct {
		name string
		v    []float64
		n    int
	}{
		{"ColLower", p.ColLower, p.NumCols},
		{"ColUpper", p.ColUpper, p.NumCols},
		{"Obj", p.Obj, p.NumCols},
		{"RowLower", p.RowLower, p.NumRows},
		{"RowUpper", p.RowUpper, p.NumRows},
	} {
		if len(a.v) != a.n {
			return fmt.Errorf("cbc: len(%s) = %d, want %d", a.name, len(a.v), a.n)
		}
		for k, x := range a.v {
			if math.IsNaN(x) {
				return fmt.Errorf("cbc: %s[%d] is NaN", a.name, k)
			}
		}
	}
	for j, c := range p.Obj {
		if math.IsInf(c, 0) {
			return fmt.Errorf("cbc: Obj[%d] is infinite", j)
		}
	}
	return nil
}

// cArrays holds the arrays handed to a loadProblem function: the problem's
// own slices where they can be passed as they are, copies with ±Inf
// replaced by ±COIN_DBL_MAX where not, and a one-element stand-in for an
// empty slice so that no nil pointer reaches C.
type cArrays struct {
	start, index                       []int32
	value, collb, colub, obj, rlb, rub []float64
}

func (p *Problem) cArrays() cArrays {
	return cArrays{
		start: nonEmpty32(p.Start),
		index: nonEmpty32(p.Index),
		value: nonEmpty64(p.Value),
		collb: coinInf(p.ColLower),
		colub: coinInf(p.ColUpper),
		obj:   nonEmpty64(p.Obj),
		rlb:   coinInf(p.RowLower),
		rub:   coinInf(p.RowUpper),
	}
}

func nonEmpty32(s []int32) []int32 {
	if len(s) == 0 {
		return make([]int32, 1)
	}
	return s
}

func nonEmpty64(s []float64) []float64 {
	if len(s) == 0 {
		return make([]float64, 1)
	}
	return s
}

// coinInf returns s with infinities as COIN_DBL_MAX, copying only if needed.
func coinInf(s []float64) []float64 {
	copied := false
	for i, x := range s {
		if math.IsInf(x, 0) {
			if !copied {
				s = append([]float64(nil), s...)
				copied = true
			}
			s[i] = math.Copysign(coinInfinity, x)
		}
	}
	return nonEmpty64(s)
}

// fromCoin turns COIN's ±DBL_MAX (and anything beyond ±1e300) into ±Inf.
func fromCoin(x float64) float64 {
	if x >= 1e300 {
		return math.Inf(1)
	}
	if x <= -1e300 {
		return math.Inf(-1)
	}
	return x
}
