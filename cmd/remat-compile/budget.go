package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/passes/remat"
)

// byteUnits are the units -budget takes, matched case-insensitively:
// decimal (kB = 1000 B) and binary (KiB = 1024 B).
var byteUnits = []struct {
	name string
	mult int64
}{
	{"b", 1},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
}

// parseBudget parses -budget: a byte count with an optional unit
// ("1000000", "512MiB", "1.5GB", "64 KiB") or a percentage of the no-remat
// peak ("70%", "72.5%"). "" is the zero Budget: the profile's capacity.
func parseBudget(s string) (remat.Budget, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return remat.Budget{}, nil
	}
	bad := func(why string) (remat.Budget, error) {
		return remat.Budget{}, usagef("-budget %q: %s (want bytes such as 512MiB, 1.5GB or 1000000, or a percentage of the no-remat peak such as 70%%)", s, why)
	}
	if num, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		switch {
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
			return bad("not a number before %")
		case f <= 0:
			return bad("the percentage must be positive")
		}
		return remat.BudgetFraction(f / 100), nil
	}
	// Split the number from the unit.
	i := strings.IndexFunc(t, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	}
	if num == "" {
		return bad("no number")
	}
	mult := int64(0)
	if unit == "" {
		mult = 1
	}
	for _, u := range byteUnits {
		if u.name == unit {
			mult = u.mult
		}
	}
	if mult == 0 {
		return bad(fmt.Sprintf("unknown unit %q (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", strings.TrimSpace(t[i:])))
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n <= 0 {
			return bad("the budget must be positive")
		}
		if n > math.MaxInt64/mult {
			return bad("too large")
		}
		return remat.BudgetBytes(n * mult), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return bad("not a number")
	}
	// A fraction of a unit rounds down to whole bytes ("1.4GiB"); a
	// fraction of a byte is a mistake.
	b := f * float64(mult)
	switch {
	case b >= math.MaxInt64:
		return bad("too large")
	case mult == 1 && b != math.Trunc(b):
		return bad("not a whole number of bytes")
	case b < 1:
		return bad("the budget must be positive")
	}
	return remat.BudgetBytes(int64(math.Floor(b))), nil
}

// suggestBudget returns a -budget value of at least need bytes, short
// enough to type: need rounded up to two or three significant digits of
// the largest binary unit it fills ("24MiB", "1.3GiB", "96KiB").
func suggestBudget(need int64) string {
	if need < 1024 {
		return strconv.FormatInt(need, 10)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	u, mult := 0, int64(1024)
	for u < len(units)-1 && need >= mult*1024 {
		u++
		mult *= 1024
	}
	f := float64(need) / float64(mult)
	scale := 10.0 // one decimal below 10 units
	if f >= 10 {
		scale = 1
	}
	for ; scale <= 1e6; scale *= 10 {
		v := math.Ceil(f*scale) / scale
		s := strconv.FormatFloat(v, 'f', -1, 64) + units[u]
		if b, err := parseBudget(s); err == nil && b.Bytes >= need {
			return s
		}
	}
	return strconv.FormatInt(need, 10)
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
		return fmt.Sprintf("%s of the no-remat peak (%s)", b, remat.FormatBytes(bytes))
	}
	return fmt.Sprintf("%s, the memory of %s less the model's inputs and parameters", remat.FormatBytes(bytes), profile)
}
