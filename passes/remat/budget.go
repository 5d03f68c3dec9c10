package remat

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Budget is the memory budget of the pass: a number of bytes, or a
// fraction of the no-remat peak (the peak of checkpoint-all, computing
// every node once and keeping every value until its last use, under the
// same memory model). The zero Budget is the profile's memory capacity
// less the bytes of the graph's inputs and parameters that the memory
// model does not count (they stay resident on the device beside the
// activations).
type Budget struct {
	// Bytes, when positive, is the budget in bytes.
	Bytes int64
	// Fraction, when positive and Bytes is not, is the budget as a
	// fraction of the no-remat peak: 0.7 for "70%".
	Fraction float64
	// Of, when positive, is the peak Fraction is a fraction of instead of
	// the no-remat peak, and OfWhat says what it is for messages ("ort's
	// peak for the original"): the pipeline makes a percentage one of
	// what the target runtime uses for the model as given.
	Of     int64
	OfWhat string
}

// Reference says what a fraction budget is a fraction of: OfWhat, or
// "the no-remat peak".
func (b Budget) Reference() string {
	if b.Of > 0 {
		return b.OfWhat
	}
	return "the no-remat peak"
}

// ReferenceBytes is the peak a fraction budget is a fraction of: Of, or
// peak, the no-remat peak.
func (b Budget) ReferenceBytes(peak int64) int64 {
	if b.Of > 0 {
		return b.Of
	}
	return peak
}

// BudgetBytes returns an absolute budget.
func BudgetBytes(n int64) Budget { return Budget{Bytes: n} }

// BudgetFraction returns a budget relative to the no-remat peak.
func BudgetFraction(f float64) Budget { return Budget{Fraction: f} }

// IsZero reports whether b is the zero Budget (the profile's capacity).
func (b Budget) IsZero() bool { return b.Bytes <= 0 && b.Fraction <= 0 }

// String formats the budget as -budget takes it: "1048576 B", "70%", or
// "device" for the zero Budget.
func (b Budget) String() string {
	switch {
	case b.Bytes > 0:
		return fmt.Sprintf("%d B", b.Bytes)
	case b.Fraction > 0:
		return fmt.Sprintf("%s%%", trimFloat(100*b.Fraction))
	}
	return "device"
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.4f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Resolve returns the budget in bytes, given the no-remat peak and, for
// the zero Budget, the device's capacity and the bytes resident beside
// the activations that the peak does not count.
func (b Budget) Resolve(noRematPeak, capacity, resident int64) (int64, error) {
	switch {
	case b.Bytes > 0:
		return b.Bytes, nil
	case b.Fraction > 0:
		if math.IsInf(b.Fraction, 0) || math.IsNaN(b.Fraction) {
			return 0, fmt.Errorf("remat: budget fraction %v is not a number", b.Fraction)
		}
		f := b.Fraction * float64(b.ReferenceBytes(noRematPeak))
		if f >= math.MaxInt64 {
			return NoBudget, nil
		}
		return int64(math.Floor(f)), nil
	}
	if capacity <= 0 {
		return 0, errors.New("remat: no budget: give one, or a profile with a memory capacity")
	}
	if resident >= capacity {
		return 0, fmt.Errorf("remat: the model's inputs and parameters (%s) do not fit the device's memory (%s)", FormatBytes(resident), FormatBytes(capacity))
	}
	return capacity - resident, nil
}

// byteUnits are the units ParseBudget takes, matched case-insensitively:
// decimal (kB = 1000 B) and binary (KiB = 1024 B).
var byteUnits = []struct {
	name string
	mult int64
}{
	{"b", 1},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
}

// ParseBudget parses a budget as users write it: a byte count with an
// optional unit ("1000000", "512MiB", "1.5GB", "64 KiB") or a percentage of
// the no-remat peak ("70%", "72.5%"). "" and "device" are the zero
// Budget: the device profile's memory capacity (less the model's inputs
// and parameters).
func ParseBudget(s string) (Budget, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "device") {
		return Budget{}, nil
	}
	bad := func(why string) (Budget, error) {
		return Budget{}, fmt.Errorf("budget %q: %s (want bytes such as 512MiB, 1.5GB or 1000000, a percentage of the no-remat peak such as 70%%, or device)", s, why)
	}
	if num, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		switch {
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
			return bad("not a number before %")
		case f <= 0:
			return bad("the percentage must be positive")
		}
		return BudgetFraction(f / 100), nil
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
		return BudgetBytes(n * mult), nil
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
	return BudgetBytes(int64(math.Floor(b))), nil
}
