package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/pipeline"
)

func TestParseBudget(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want remat.Budget
	}{
		{"", remat.Budget{}},
		{"device", remat.Budget{}},
		{"1000000", remat.BudgetBytes(1000000)},
		{"512MiB", remat.BudgetBytes(512 << 20)},
		{"512mib", remat.BudgetBytes(512 << 20)},
		{"1.5GB", remat.BudgetBytes(1500000000)},
		{"1.5GiB", remat.BudgetBytes(3 << 29)},
		{"1.4GiB", remat.BudgetBytes(1503238553)}, // rounded down to whole bytes
		{"64 KiB", remat.BudgetBytes(64 << 10)},
		{"2kB", remat.BudgetBytes(2000)},
		{"100B", remat.BudgetBytes(100)},
		{"1TiB", remat.BudgetBytes(1 << 40)},
		{" 24MiB ", remat.BudgetBytes(24 << 20)},
		{"70%", remat.BudgetFraction(0.7)},
		{"72.5%", remat.BudgetFraction(0.725)},
		{"150%", remat.BudgetFraction(1.5)},
		{"70 %", remat.BudgetFraction(0.7)},
	} {
		got, err := parseBudget(tt.in)
		if err != nil || got.Bytes != tt.want.Bytes || !approxEqual(got.Fraction, tt.want.Fraction) {
			t.Errorf("parseBudget(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func approxEqual(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

func TestParseBudgetErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"abc", "no number"},
		{"-5MiB", "no number"},
		{"0", "must be positive"},
		{"0%", "must be positive"},
		{"-10%", "must be positive"},
		{"x%", "not a number before %"},
		{"NaN%", "not a number before %"},
		{"12 parsecs", `unknown unit "parsecs"`},
		{"5Mb/s", `unknown unit`},
		{"1.5", "not a whole number of bytes"},
		{"0.3B", "not a whole number of bytes"},
		{"0.0001KiB", "must be positive"},
		{"1.2.3MiB", "not a number"},
		{"99999999999TiB", "too large"},
		{"1e3", `unknown unit "e3"`},
		{"10 %%", "not a number before %"},
	} {
		_, err := parseBudget(tt.in)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "512MiB") {
			t.Errorf("parseBudget(%q) = %v; want a usage error containing %q and the accepted forms", tt.in, err, tt.want)
		}
	}
}

func TestSuggestBudget(t *testing.T) {
	for _, tt := range []struct {
		need int64
		want string
	}{
		{1000, "1000"},
		{98304, "96KiB"},
		{98305, "97KiB"},
		{24536678, "24MiB"},    // 23.4 MiB
		{1395864371, "1.3GiB"}, // floor(1.3 GiB)
		{1395864372, "1.4GiB"},
		{10 << 20, "10MiB"},
		{3 << 10, "3KiB"},
		{3<<10 + 1, "3.1KiB"},
	} {
		got := pipeline.SuggestBudget(tt.need)
		if got != tt.want {
			t.Errorf("pipeline.SuggestBudget(%d) = %q, want %q", tt.need, got, tt.want)
		}
		b, err := parseBudget(got)
		if err != nil || b.Bytes < tt.need {
			t.Errorf("pipeline.SuggestBudget(%d) = %q parses to %d bytes, %v; want at least the need", tt.need, got, b.Bytes, err)
		}
	}
	for _, tt := range []struct {
		need, peak int64
		want       string
	}{
		{70, 100, "70%"},
		{71, 100, "71%"},
		{68813, 98304, "71%"},
		{98304, 98304, "100%"},
	} {
		got := suggestPercent(tt.need, tt.peak)
		if got != tt.want {
			t.Errorf("suggestPercent(%d, %d) = %q, want %q", tt.need, tt.peak, got, tt.want)
		}
		b, _ := parseBudget(got)
		if n, err := b.Resolve(tt.peak, 0, 0); err != nil || n < tt.need {
			t.Errorf("suggestPercent(%d, %d) = %q resolves to %d, %v; want at least the need", tt.need, tt.peak, got, n, err)
		}
	}
}
