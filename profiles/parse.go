package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/remat-compile/remat/ir"
)

// Parse reads a profile file (see the package documentation for the
// format) and validates it. filename names the file in errors. Every
// problem is reported with its line and field, as an ir.ErrorList.
func Parse(data []byte, filename string) (*Profile, error) {
	d := &decoder{file: filename, lines: map[string]int{}}
	root := d.document(data)
	if root == nil {
		return nil, d.errs.Err()
	}
	p := &Profile{file: filename, lines: d.lines}
	d.profile(root, p)
	if err := d.errs.Err(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// decoder turns a YAML node tree into a Profile, checking kinds and types
// and recording the line of every field; Validate checks the values.
type decoder struct {
	file  string
	errs  ir.ErrorList
	lines map[string]int
}

func (d *decoder) errorf(line int, field, format string, args ...any) {
	d.errs = append(d.errs, &ir.Error{Pos: ir.Pos{File: d.file, Line: line, Field: field}, Msg: fmt.Sprintf(format, args...)})
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError reports an error of the YAML parser, with its line.
func (d *decoder) syntaxError(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	d.errorf(line, "", "invalid YAML: %s", msg)
}

// document parses data as exactly one YAML document and returns its root
// node, or nil after reporting why it cannot.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf(0, "", "empty file: a profile starts with format: %s", FormatV1)
		} else {
			d.syntaxError(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.errorf(extra.Line, "", "a profile file holds one YAML document; a second one starts here")
		return nil
	case !errors.Is(err, io.EOF):
		d.syntaxError(err)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		d.errorf(doc.Line, "", "empty file: a profile starts with format: %s", FormatV1)
		return nil
	}
	return doc.Content[0]
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields walks the mapping n, calling the handler of each key and
// reporting unknown and repeated keys.
func (d *decoder) fields(n *yaml.Node, path string, handlers map[string]func(v *yaml.Node, field string), order []string, required ...string) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, path, "want a mapping of %s, got %s", strings.Join(order, ", "), kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, path, "a key must be a plain name")
			continue
		}
		field := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.errorf(k.Line, field, "repeated; first given on line %d", first)
			continue
		}
		seen[k.Value] = k.Line
		h, ok := handlers[k.Value]
		if !ok {
			d.errorf(k.Line, field, "unknown field (want %s)", strings.Join(order, ", "))
			continue
		}
		d.lines[field] = k.Line
		h(v, field)
	}
	line, ok := d.lines[path]
	if !ok {
		line = n.Line
	}
	for _, r := range required {
		if _, ok := seen[r]; !ok {
			d.errorf(line, join(path, r), "missing: %s", requiredHint(r))
		}
	}
}

// requiredHint says what a required field holds.
func requiredHint(key string) string {
	switch key {
	case "format":
		return "a profile starts with format: " + FormatV1
	case "device":
		return "give the device's datasheet figures"
	case "name":
		return "name the device (letters, digits, '.', '_', '+', '-')"
	case "memory_bytes":
		return "give the memory capacity in bytes"
	case "memory_bandwidth_bytes_per_second", "flops_per_second", "bytes_per_second":
		return "give a positive rate per second"
	case "peak_flops":
		return "give the peak operations per second by element type, f32 at least"
	case "op":
		return "name the operator (Conv, MatMul, …)"
	case "dtype":
		return "give the element type the node computes in (f32, f16, u8, …)"
	case "shapes":
		return "give one shape per input slot, null for an absent input"
	case "seconds":
		return "give the measured time of one run in seconds"
	case "repeats":
		return "give how many runs the time comes from"
	}
	return "required"
}

func (d *decoder) scalar(v *yaml.Node, field, want string) (*yaml.Node, bool) {
	v = deref(v)
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
		d.errorf(v.Line, field, "want %s, got %s", want, kindName(v))
		return nil, false
	}
	return v, true
}

func (d *decoder) str(v *yaml.Node, field string) string {
	if isNull(v) {
		return ""
	}
	s, ok := d.scalar(v, field, "a string")
	if !ok {
		return ""
	}
	return s.Value
}

func (d *decoder) float(v *yaml.Node, field string) float64 {
	s, ok := d.scalar(v, field, "a number")
	if !ok {
		return 0
	}
	var x float64
	var err error
	switch s.ShortTag() {
	case "!!int":
		var i int64
		i, err = strconv.ParseInt(s.Value, 0, 64)
		x = float64(i)
	case "!!float":
		x, err = strconv.ParseFloat(s.Value, 64)
	default:
		d.errorf(s.Line, field, "want a number, got %q", s.Value)
		return 0
	}
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		d.errorf(s.Line, field, "want a finite number, got %q", s.Value)
		return 0
	}
	return x
}

func (d *decoder) int(v *yaml.Node, field string) int64 {
	s, ok := d.scalar(v, field, "an integer")
	if !ok {
		return 0
	}
	switch s.ShortTag() {
	case "!!int":
		if i, err := strconv.ParseInt(s.Value, 0, 64); err == nil {
			return i
		}
	case "!!float":
		// 16e9 is a float to YAML; accept it when it is a whole number.
		if x, err := strconv.ParseFloat(s.Value, 64); err == nil && x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x)
		}
	}
	d.errorf(s.Line, field, "want an integer, got %q", s.Value)
	return 0
}

func (d *decoder) dtype(v *yaml.Node, field string) ir.DType {
	s, ok := d.scalar(v, field, "an element type")
	if !ok {
		return ir.Undefined
	}
	dt, ok := ir.ParseDType(s.Value)
	if !ok || dt == ir.Undefined {
		d.errorf(s.Line, field, "unknown element type %q (want one of %s)", s.Value, dtypeNames())
		return ir.Undefined
	}
	return dt
}

// dtypeNames lists the element types a profile may name.
func dtypeNames() string {
	var names []string
	for dt := ir.DType(1); dt.Valid(); dt++ {
		names = append(names, dt.String())
	}
	return strings.Join(names, ", ")
}

func (d *decoder) profile(n *yaml.Node, p *Profile) {
	d.fields(n, "", map[string]func(*yaml.Node, string){
		"format": func(v *yaml.Node, f string) { p.Format = d.str(v, f) },
		"device": func(v *yaml.Node, f string) { d.device(v, f, &p.Device) },
		"fitted": func(v *yaml.Node, f string) {
			if !isNull(v) {
				p.Fitted = &Fitted{}
				d.fitted(v, f, p.Fitted)
			}
		},
		"measured": func(v *yaml.Node, f string) { p.Measured = d.measured(v, f) },
	}, []string{"format", "device", "fitted", "measured"}, "format", "device")
}

func (d *decoder) device(n *yaml.Node, path string, dev *Device) {
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"name":                              func(v *yaml.Node, f string) { dev.Name = d.str(v, f) },
		"description":                       func(v *yaml.Node, f string) { dev.Description = d.str(v, f) },
		"memory_bytes":                      func(v *yaml.Node, f string) { dev.MemoryBytes = d.int(v, f) },
		"memory_bandwidth_bytes_per_second": func(v *yaml.Node, f string) { dev.MemoryBandwidth = d.float(v, f) },
		"launch_overhead_seconds":           func(v *yaml.Node, f string) { dev.LaunchOverhead = d.float(v, f) },
		"peak_flops":                        func(v *yaml.Node, f string) { dev.PeakFLOPs = d.rates(v, f) },
		"peak_matrix_flops":                 func(v *yaml.Node, f string) { dev.PeakMatrixFLOPs = d.rates(v, f) },
	}, []string{"name", "description", "memory_bytes", "memory_bandwidth_bytes_per_second",
		"launch_overhead_seconds", "peak_flops", "peak_matrix_flops"},
		"name", "memory_bytes", "memory_bandwidth_bytes_per_second", "peak_flops")
}

// rates reads a mapping from element type names to operations per second.
func (d *decoder) rates(n *yaml.Node, path string) map[ir.DType]float64 {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, path, "want a mapping from element type (f32, f16, …) to operations per second, got %s", kindName(n))
		return nil
	}
	m := map[ir.DType]float64{}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		field := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.errorf(k.Line, field, "repeated; first given on line %d", first)
			continue
		}
		seen[k.Value] = k.Line
		dt, ok := ir.ParseDType(k.Value)
		if k.Kind != yaml.ScalarNode || !ok || dt == ir.Undefined {
			d.errorf(k.Line, field, "unknown element type %q (want one of %s)", k.Value, dtypeNames())
			continue
		}
		if !dt.IsFloat() && !dt.IsInt() {
			d.errorf(k.Line, field, "element type %s has no arithmetic rate; name a numeric type", dt)
			continue
		}
		d.lines[field] = k.Line
		m[dt] = d.float(v, field)
	}
	return m
}

func (d *decoder) fitted(n *yaml.Node, path string, f *Fitted) {
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"flops_per_second": func(v *yaml.Node, p string) { f.FLOPsPerSecond = d.float(v, p) },
		"bytes_per_second": func(v *yaml.Node, p string) { f.BytesPerSecond = d.float(v, p) },
		"overhead_seconds": func(v *yaml.Node, p string) { f.OverheadSeconds = d.float(v, p) },
		"source":           func(v *yaml.Node, p string) { f.Source = d.str(v, p) },
	}, []string{"flops_per_second", "bytes_per_second", "overhead_seconds", "source"}, "flops_per_second", "bytes_per_second")
}

func (d *decoder) measured(n *yaml.Node, path string) []Measured {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, path, "want a list of measured entries, got %s", kindName(n))
		return nil
	}
	out := make([]Measured, len(n.Content))
	for i, e := range n.Content {
		field := fmt.Sprintf("%s[%d]", path, i)
		d.lines[field] = deref(e).Line
		m := &out[i]
		d.fields(e, field, map[string]func(*yaml.Node, string){
			"op":      func(v *yaml.Node, f string) { m.Op = d.str(v, f) },
			"domain":  func(v *yaml.Node, f string) { m.Domain = d.str(v, f) },
			"attrs":   func(v *yaml.Node, f string) { m.Attrs = d.str(v, f) },
			"dtype":   func(v *yaml.Node, f string) { m.DType = d.dtype(v, f) },
			"shapes":  func(v *yaml.Node, f string) { m.Shapes = d.shapes(v, f) },
			"seconds": func(v *yaml.Node, f string) { m.Seconds = d.float(v, f) },
			"repeats": func(v *yaml.Node, f string) { m.Repeats = int(min(max(d.int(v, f), math.MinInt32), math.MaxInt32)) },
		}, []string{"op", "domain", "attrs", "dtype", "shapes", "seconds", "repeats"}, "op", "dtype", "shapes", "seconds", "repeats")
	}
	return out
}

// shapes reads one shape per input slot: a list of sizes, or null for an
// absent optional input.
func (d *decoder) shapes(n *yaml.Node, path string) [][]int64 {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, path, "want a list with one shape per input, such as [[1, 3, 224, 224], [64, 3, 7, 7], null], got %s", kindName(n))
		return nil
	}
	out := make([][]int64, len(n.Content))
	for i, s := range n.Content {
		field := fmt.Sprintf("%s[%d]", path, i)
		s = deref(s)
		if isNull(s) {
			continue // an absent optional input
		}
		if s.Kind != yaml.SequenceNode {
			d.errorf(s.Line, field, "want a shape (a list of sizes, [] for a scalar) or null for an absent input, got %s", kindName(s))
			continue
		}
		dims := make([]int64, len(s.Content))
		for j, x := range s.Content {
			dims[j] = d.int(x, fmt.Sprintf("%s[%d]", field, j))
		}
		out[i] = dims
	}
	return out
}
