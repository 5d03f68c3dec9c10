package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/remat-compile/remat/passes/remat"
)

// parseBudget parses -budget (remat.ParseBudget); a bad one is a usage
// error.
func parseBudget(s string) (remat.Budget, error) {
	b, err := remat.ParseBudget(s)
	if err != nil {
		return b, usagef("-%v", err)
	}
	return b, nil
}

// suggestPercent returns a -budget percentage of peak that resolves to at
// least need bytes.
func suggestPercent(need, peak int64) string {
	if peak <= 0 {
		return ""
	}
	p := math.Ceil(100 * float64(need) / float64(peak))
	for int64(math.Floor(p/100*float64(peak))) < need {
		p++
	}
	return strconv.FormatFloat(p, 'f', -1, 64) + "%"
}

// describeBudget says what a budget is for messages: "10.0 MiB", "70% of
// the no-remat peak (67.2 KiB)", "the device memory of v100-16gb less the
// model's inputs and parameters (16.0 GiB)".
func describeBudget(b remat.Budget, bytes int64, profile string) string {
	switch {
	case b.Bytes > 0:
		return remat.FormatBytes(bytes)
	case b.Fraction > 0:
		return fmt.Sprintf("%s of %s (%s)", b, b.Reference(), remat.FormatBytes(bytes))
	}
	return fmt.Sprintf("%s, the memory of %s less the model's inputs and parameters", remat.FormatBytes(bytes), profile)
}
