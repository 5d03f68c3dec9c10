package profiles

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// maxOverheadSeconds bounds per-node overheads: a second or more per node
// is a unit mistake (microseconds written as seconds), not a device.
const maxOverheadSeconds = 1.0

// Validate checks every field of p (the format version, positive finite
// rates and capacity, known element types, well-formed measured entries
// with distinct signatures) and, when p is valid, indexes its measured
// entries for Cost. It must not run concurrently with Cost on the same
// profile. Errors name the field, and the file and line for a profile
// that Parse read.
func (p *Profile) Validate() error {
	if p == nil {
		return ir.ErrorList{{Msg: "no profile"}}.Err()
	}
	v := &validator{p: p}
	switch p.Format {
	case FormatV1:
	case "":
		v.errorf("format", "missing: a profile starts with format: %s", FormatV1)
	default:
		v.errorf("format", "unsupported format %q: this version reads %s", p.Format, FormatV1)
	}
	v.device(&p.Device)
	if f := p.Fitted; f != nil {
		v.positive("fitted.flops_per_second", f.FLOPsPerSecond)
		v.positive("fitted.bytes_per_second", f.BytesPerSecond)
		v.overhead("fitted.overhead_seconds", f.OverheadSeconds)
	}
	index := make(map[string]int, len(p.Measured))
	for i := range p.Measured {
		field := fmt.Sprintf("measured[%d]", i)
		if !v.measured(field, &p.Measured[i]) {
			continue
		}
		k := p.Measured[i].key()
		if j, dup := index[k]; dup {
			v.errorf(field, "same signature as measured[%d]%s: give each op, attrs, dtype and shapes once", j, v.onLine(fmt.Sprintf("measured[%d]", j)))
			continue
		}
		index[k] = i
	}
	if err := v.errs.Err(); err != nil {
		return err
	}
	p.index = index
	return nil
}

type validator struct {
	p    *Profile
	errs ir.ErrorList
}

// line is the line of field, or of its closest enclosing field, in the
// parsed file; 0 for profiles built in code.
func (v *validator) line(field string) int {
	for field != "" {
		if l, ok := v.p.lines[field]; ok {
			return l
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			break
		}
		field = field[:i]
	}
	return 0
}

func (v *validator) onLine(field string) string {
	if l, ok := v.p.lines[field]; ok {
		return fmt.Sprintf(" (line %d)", l)
	}
	return ""
}

func (v *validator) errorf(field, format string, args ...any) {
	v.errs = append(v.errs, &ir.Error{Pos: ir.Pos{File: v.p.file, Line: v.line(field), Field: field}, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) positive(field string, x float64) {
	if !(x > 0) || math.IsInf(x, 0) {
		v.errorf(field, "must be a positive finite number, got %g", x)
	}
}

func (v *validator) overhead(field string, x float64) {
	switch {
	case !(x >= 0) || math.IsInf(x, 0):
		v.errorf(field, "must be zero or a positive finite number of seconds, got %g", x)
	case x >= maxOverheadSeconds:
		v.errorf(field, "%g seconds per node is not plausible: the unit is seconds (5 µs is 5e-6)", x)
	}
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && strings.ContainsRune("._+-", r):
		default:
			return false
		}
	}
	return true
}

func (v *validator) device(d *Device) {
	switch {
	case d.Name == "":
		v.errorf("device.name", "missing: name the device (letters, digits, '.', '_', '+', '-')")
	case !validName(d.Name):
		v.errorf("device.name", "%q: a name is a letter or digit, then letters, digits, '.', '_', '+' or '-'", d.Name)
	}
	if d.MemoryBytes <= 0 {
		v.errorf("device.memory_bytes", "must be positive, got %d", d.MemoryBytes)
	}
	v.positive("device.memory_bandwidth_bytes_per_second", d.MemoryBandwidth)
	v.overhead("device.launch_overhead_seconds", d.LaunchOverhead)
	if _, ok := d.PeakFLOPs[ir.Float32]; !ok {
		v.errorf("device.peak_flops", "no f32 rate: f32 is required (other element types fall back to it)")
	}
	v.rates("device.peak_flops", d.PeakFLOPs)
	v.rates("device.peak_matrix_flops", d.PeakMatrixFLOPs)
}

func (v *validator) rates(field string, m map[ir.DType]float64) {
	keys := make([]ir.DType, 0, len(m))
	for dt := range m {
		keys = append(keys, dt)
	}
	slices.Sort(keys)
	for _, dt := range keys {
		f := field + "." + dt.String()
		if !dt.Valid() || (!dt.IsFloat() && !dt.IsInt()) {
			v.errorf(f, "element type %s has no arithmetic rate; name a numeric type", dt)
			continue
		}
		if x := m[dt]; !(x > 0) || math.IsInf(x, 0) {
			v.errorf(f, "must be a positive finite number of operations per second, got %g", x)
		}
	}
}

// measured checks one entry and reports whether it is well formed.
func (v *validator) measured(field string, m *Measured) bool {
	n := len(v.errs)
	if m.Op == "" {
		v.errorf(field+".op", "missing: name the operator (Conv, MatMul, …)")
	} else if strings.ContainsAny(m.Op, " \t\n") {
		v.errorf(field+".op", "%q: an operator name has no spaces", m.Op)
	}
	if !m.DType.Valid() {
		v.errorf(field+".dtype", "missing: give the element type the node computes in (f32, f16, u8, …)")
	}
	for i, s := range m.Shapes {
		for j, d := range s {
			if d < 0 {
				v.errorf(fmt.Sprintf("%s.shapes[%d][%d]", field, i, j), "size must not be negative, got %d", d)
			}
		}
	}
	if !(m.Seconds > 0) || math.IsInf(m.Seconds, 0) {
		v.errorf(field+".seconds", "must be a positive finite number of seconds, got %g", m.Seconds)
	}
	if m.Repeats < 1 {
		v.errorf(field+".repeats", "must be at least 1, got %d", m.Repeats)
	}
	return len(v.errs) == n
}
