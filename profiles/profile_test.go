package profiles_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/profiles"
)

// minimal is the smallest valid profile; the error cases below change one
// thing in it. Line numbers: format 1, device 2, name 3, memory_bytes 4,
// bandwidth 5, overhead 6, peak_flops 7, f32 8.
const minimal = `format: remat-profile/v1
device:
  name: test
  memory_bytes: 1024
  memory_bandwidth_bytes_per_second: 1e9
  launch_overhead_seconds: 1e-6
  peak_flops:
    f32: 1e12
`

// entry is a well-formed measured section to append to minimal (line 9 on).
const entry = `measured:
  - op: Relu
    attrs: ""
    dtype: f32
    shapes: [[1, 8]]
    seconds: 1e-6
    repeats: 10
`

func TestParseErrors(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(minimal+entry, old) {
			t.Fatalf("test setup: %q not in the base profile", old)
		}
		return strings.Replace(minimal+entry, old, new, 1)
	}
	for _, tt := range []struct {
		name string
		src  string
		want []string // substrings of the error, in order of appearance
	}{
		{"wrong format version", replace("remat-profile/v1", "remat-profile/v2"),
			[]string{`bad.yaml:1: format: unsupported format "remat-profile/v2": this version reads remat-profile/v1`}},
		{"missing format", replace("format: remat-profile/v1\n", ""),
			[]string{`bad.yaml:1: format: missing: a profile starts with format: remat-profile/v1`}},
		{"negative bandwidth", replace("bytes_per_second: 1e9", "bytes_per_second: -1e9"),
			[]string{`bad.yaml:5: device.memory_bandwidth_bytes_per_second: must be a positive finite number, got -1e+09`}},
		{"zero memory", replace("memory_bytes: 1024", "memory_bytes: 0"),
			[]string{`bad.yaml:4: device.memory_bytes: must be positive, got 0`}},
		{"non-integer memory", replace("memory_bytes: 1024", "memory_bytes: 1.5"),
			[]string{`bad.yaml:4: device.memory_bytes: want an integer, got "1.5"`}},
		{"unknown dtype key", replace("    f32: 1e12\n", "    f32: 1e12\n    f33: 1e12\n"),
			[]string{`bad.yaml:9: device.peak_flops.f33: unknown element type "f33" (want one of f32, f64,`}},
		{"non-numeric dtype key", replace("    f32: 1e12\n", "    f32: 1e12\n    bool: 1e12\n"),
			[]string{`bad.yaml:9: device.peak_flops.bool: element type bool has no arithmetic rate`}},
		{"no f32 rate", replace("    f32: 1e12\n", "    f16: 1e12\n"),
			[]string{`bad.yaml:7: device.peak_flops: no f32 rate: f32 is required`}},
		{"missing name", replace("  name: test\n", ""),
			[]string{`bad.yaml:2: device.name: missing`}},
		{"bad name", replace("name: test", "name: my gpu"),
			[]string{`bad.yaml:3: device.name: "my gpu": a name is`}},
		{"missing bandwidth", replace("  memory_bandwidth_bytes_per_second: 1e9\n", ""),
			[]string{`bad.yaml:2: device.memory_bandwidth_bytes_per_second: missing`}},
		{"string for number", replace("bytes_per_second: 1e9", "bytes_per_second: fast"),
			[]string{`bad.yaml:5: device.memory_bandwidth_bytes_per_second: want a number, got "fast"`}},
		{"infinite bandwidth", replace("bytes_per_second: 1e9", "bytes_per_second: .inf"),
			[]string{`bad.yaml:5: device.memory_bandwidth_bytes_per_second: want a finite number, got ".inf"`}},
		{"implausible overhead", replace("launch_overhead_seconds: 1e-6", "launch_overhead_seconds: 5"),
			[]string{`bad.yaml:6: device.launch_overhead_seconds: 5 seconds per node is not plausible`}},
		{"unknown field", replace("memory_bytes:", "memory_byte:"),
			[]string{`bad.yaml:4: device.memory_byte: unknown field (want name, description, memory_bytes,`}},
		{"repeated key", replace("  name: test\n", "  name: test\n  name: other\n"),
			[]string{`bad.yaml:4: device.name: repeated; first given on line 3`}},
		{"yaml syntax", replace("  memory_bytes: 1024\n", "  memory_bytes: [1024\n"),
			[]string{`bad.yaml:`, `invalid YAML:`}},
		{"top level list", "- format: remat-profile/v1\n",
			[]string{`bad.yaml:1: want a mapping of format, device, fitted, measured, got a list`}},
		{"empty file", "# nothing here\n",
			[]string{`bad.yaml: empty file`}},
		{"two documents", minimal + "---\n" + minimal,
			[]string{`bad.yaml:9: a profile file holds one YAML document`}},
		{"fitted zero bandwidth", minimal + "fitted:\n  flops_per_second: 1e12\n  bytes_per_second: 0\n",
			[]string{`bad.yaml:11: fitted.bytes_per_second: must be a positive finite number, got 0`}},
		{"fitted missing rate", minimal + "fitted:\n  bytes_per_second: 1e9\n",
			[]string{`bad.yaml:9: fitted.flops_per_second: missing`}},
		{"measured negative seconds", replace("    seconds: 1e-6", "    seconds: -1e-6"),
			[]string{`bad.yaml:14: measured[0].seconds: must be a positive finite number of seconds, got -1e-06`}},
		{"measured missing op", replace("  - op: Relu\n    attrs", "  - attrs"),
			[]string{`bad.yaml:10: measured[0].op: missing`}},
		{"measured bad dtype", replace("dtype: f32", "dtype: float"),
			[]string{`bad.yaml:12: measured[0].dtype: unknown element type "float"`}},
		{"measured negative dim", replace("shapes: [[1, 8]]", "shapes: [[1, -8]]"),
			[]string{`bad.yaml:13: measured[0].shapes[0][1]: size must not be negative, got -8`}},
		{"measured bad shape", replace("shapes: [[1, 8]]", "shapes: [1, 8]"),
			[]string{`bad.yaml:13: measured[0].shapes[0]: want a shape (a list of sizes, [] for a scalar) or null`}},
		{"measured zero repeats", replace("repeats: 10", "repeats: 0"),
			[]string{`bad.yaml:15: measured[0].repeats: must be at least 1, got 0`}},
		{"measured unknown field", replace("repeats: 10", "repeats: 10\n    runs: 3"),
			[]string{`bad.yaml:16: measured[0].runs: unknown field`}},
		{"measured not a list", minimal + "measured: {op: Relu}\n",
			[]string{`bad.yaml:9: measured: want a list of measured entries, got a mapping`}},
		{"duplicate signature", minimal + entry + strings.TrimPrefix(entry, "measured:\n"),
			[]string{`bad.yaml:16: measured[1]: same signature as measured[0] (line 10)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := profiles.Parse([]byte(tt.src), "bad.yaml")
			if err == nil {
				t.Fatalf("Parse accepted:\n%s\ngot profile %+v", tt.src, p)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n%s\ndoes not contain\n%s", msg, w)
				}
			}
			var list ir.ErrorList
			var one *ir.Error
			if !errors.As(err, &list) || !errors.As(err, &one) || one.Pos.File != "bad.yaml" {
				t.Errorf("error %T does not unwrap to an ir.ErrorList and an *ir.Error of bad.yaml", err)
			}
		})
	}
}

func TestParseAcceptsMinimalAndNumberForms(t *testing.T) {
	src := strings.NewReplacer("memory_bytes: 1024", "memory_bytes: 16e9", "1e9", "900000000").Replace(minimal) + entry
	p, err := profiles.Parse([]byte(src), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.MemoryBytes() != 16e9 || p.Device.MemoryBandwidth != 9e8 || p.Device.LaunchOverhead != 1e-6 {
		t.Errorf("got %+v", p.Device)
	}
	if len(p.Measured) != 1 || !slices.Equal(p.Measured[0].Shapes[0], []int64{1, 8}) || p.Measured[0].DType != ir.Float32 {
		t.Errorf("measured = %+v", p.Measured)
	}
}

func TestValidateInCode(t *testing.T) {
	p := &profiles.Profile{Format: profiles.FormatV1, Device: profiles.Device{
		Name: "x", MemoryBytes: 1, MemoryBandwidth: 1, PeakFLOPs: map[ir.DType]float64{ir.Float32: 1, ir.String: 1},
	}}
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "device.peak_flops.string: element type string has no arithmetic rate") {
		t.Errorf("Validate = %v", err)
	}
	delete(p.Device.PeakFLOPs, ir.String)
	if err := p.Validate(); err != nil {
		t.Errorf("Validate of a valid profile built in code: %v", err)
	}
	p.Measured = []profiles.Measured{{Op: "Relu", DType: ir.Float32, Shapes: [][]int64{{2}}, Seconds: 0, Repeats: 1}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "measured[0].seconds: must be a positive") {
		t.Errorf("Validate = %v", err)
	}
	if _, err := p.Marshal(); err == nil {
		t.Errorf("Marshal wrote an invalid profile")
	}
	var nilp *profiles.Profile
	if nilp.Validate() == nil || nilp.MemoryBytes() != 0 {
		t.Errorf("nil profile")
	}
}

var wantBuiltins = []string{"a100-80gb", "cpu-generic", "h100-80gb", "jetson-orin-nano-8gb", "rpi4-4gb", "stm32h7", "v100-16gb"}

func TestBuiltins(t *testing.T) {
	if got := profiles.Builtins(); !slices.Equal(got, wantBuiltins) {
		t.Fatalf("Builtins() = %v, want %v", got, wantBuiltins)
	}
	for _, name := range profiles.Builtins() {
		p, err := profiles.Load(name)
		if err != nil {
			t.Fatalf("Load(%q): %v", name, err)
		}
		if p.Device.Name != name {
			t.Errorf("%s: device.name is %q; the file name and the device name must agree", name, p.Device.Name)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if p.MemoryBytes() <= 0 || p.Device.Description == "" || p.Device.LaunchOverhead <= 0 {
			t.Errorf("%s: capacity %d, description %q, overhead %g", name, p.MemoryBytes(), p.Device.Description, p.Device.LaunchOverhead)
		}
		if p.Fitted != nil || len(p.Measured) > 0 {
			t.Errorf("%s: a built-in profile holds datasheet figures only", name)
		}
		if p.File() != "profiles/data/"+name+".yaml" {
			t.Errorf("%s: File() = %q", name, p.File())
		}
		// The selection is case-insensitive.
		q, err := profiles.Load(strings.ToUpper(name))
		if err != nil || q.Device.Name != name {
			t.Errorf("Load(%q) = %v, %v", strings.ToUpper(name), q, err)
		}
	}
	// The datasheet figures the task names.
	for _, tt := range []struct {
		name       string
		dt         ir.DType
		matrix     bool
		rate, bw   float64
		capacityGi int64
	}{
		{"v100-16gb", ir.Float32, false, 15.7e12, 900e9, 16},
		{"v100-16gb", ir.Float16, true, 125e12, 900e9, 16},
		{"a100-80gb", ir.Float32, false, 19.5e12, 2039e9, 80},
		{"a100-80gb", ir.Float32, true, 156e12, 2039e9, 80},
		{"a100-80gb", ir.BFloat16, true, 312e12, 2039e9, 80},
		{"h100-80gb", ir.Float32, false, 67e12, 3.35e12, 80},
		{"h100-80gb", ir.Float16, true, 989.4e12, 3.35e12, 80},
		{"rpi4-4gb", ir.Float32, false, 48e9, 4e9, 4},
		{"jetson-orin-nano-8gb", ir.Float32, false, 1.28e12, 68e9, 8},
	} {
		p, err := profiles.Load(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		table := p.Device.PeakFLOPs
		if tt.matrix {
			table = p.Device.PeakMatrixFLOPs
		}
		if table[tt.dt] != tt.rate || p.Device.MemoryBandwidth != tt.bw || p.MemoryBytes() != tt.capacityGi<<30 {
			t.Errorf("%s %s matrix=%v: rate %g, bandwidth %g, capacity %d", tt.name, tt.dt, tt.matrix, table[tt.dt], p.Device.MemoryBandwidth, p.MemoryBytes())
		}
	}
	if p, err := profiles.Load("stm32h7"); err != nil || p.MemoryBytes() != 992<<10 {
		t.Errorf("stm32h7: %v, %d bytes", err, p.MemoryBytes())
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := profiles.Load("tpu-v9")
	if err == nil || !strings.Contains(err.Error(), `unknown profile "tpu-v9": the built-in profiles are a100-80gb, cpu-generic, h100-80gb,`) {
		t.Errorf("Load(tpu-v9) = %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := profiles.Load(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(%s) = %v", missing, err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	for _, ext := range []string{".yaml", ".YML"} {
		path := filepath.Join(dir, "dev"+ext)
		if err := os.WriteFile(path, []byte(minimal), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := profiles.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if p.Device.Name != "test" || p.File() != path {
			t.Errorf("Load(%s) = %+v from %q", path, p.Device, p.File())
		}
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte(strings.Replace(minimal, "1e9", "-1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := profiles.Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":5: ") {
		t.Errorf("Load(bad) = %v, want an error at %s:5", err, bad)
	}
}

// full has every section and field, with measured entries in signature
// order, an absent input and a scalar.
const full = `format: remat-profile/v1
device:
  name: lab-gpu
  description: 'a test device: with "quotes"'
  memory_bytes: 8589934592
  memory_bandwidth_bytes_per_second: 1.5e12
  launch_overhead_seconds: 4.5e-6
  peak_flops:
    f32: 30e12
    f64: 15e12
    bf16: 60e12
    i8: 120e12
  peak_matrix_flops:
    f32: 120e12
    f16: 240e12
fitted:
  flops_per_second: 21.3e12
  bytes_per_second: 1.1e12
  overhead_seconds: 7.25e-6
  source: remat-compile profile (test)
measured:
  - op: Clip
    attrs: ""
    dtype: f32
    shapes: [[1, 64], [], []]
    seconds: 3.1e-6
    repeats: 50
  - op: Conv
    attrs: 'kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]'
    dtype: f32
    shapes: [[1, 64, 56, 56], [64, 64, 3, 3], null]
    seconds: 0.00019
    repeats: 100
  - op: FusedConv
    domain: com.microsoft
    attrs: 'activation="Relu"'
    dtype: f16
    shapes: [[1, 3, 8, 8], [4, 3, 1, 1]]
    seconds: 2e-6
    repeats: 3
`

func TestMarshalRoundTrip(t *testing.T) {
	p, err := profiles.Parse([]byte(full), "full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Measured[0].Shapes; s[1] == nil || len(s[1]) != 0 {
		t.Errorf("a scalar shape [] must stay a non-nil empty shape, got %#v", s)
	}
	if s := p.Measured[1].Shapes; s[2] != nil {
		t.Errorf("an absent input (null) must be a nil shape, got %#v", s)
	}
	out, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := profiles.Parse(out, "marshalled.yaml")
	if err != nil {
		t.Fatalf("Parse(Marshal(p)): %v\n%s", err, out)
	}
	if !reflect.DeepEqual(p.Device, q.Device) || !reflect.DeepEqual(p.Fitted, q.Fitted) || !reflect.DeepEqual(p.Measured, q.Measured) || p.Format != q.Format {
		t.Errorf("round trip changed the profile:\n%+v\n%+v\n%s", p, q, out)
	}
	again, err := q.Marshal()
	if err != nil || !bytes.Equal(out, again) {
		t.Errorf("Marshal is not deterministic:\n%s\n---\n%s", out, again)
	}
	// Marshal writes shapes on one line and the absent input as null.
	if !strings.Contains(string(out), "shapes: [[1, 64, 56, 56], [64, 64, 3, 3], null]") {
		t.Errorf("output:\n%s", out)
	}

	// Every built-in survives the round trip too.
	for _, name := range profiles.Builtins() {
		p, err := profiles.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := profiles.Parse(out, name)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if !reflect.DeepEqual(p.Device, q.Device) {
			t.Errorf("%s: round trip changed the device:\n%+v\n%+v", name, p.Device, q.Device)
		}
	}
}

func TestMarshalSortsMeasured(t *testing.T) {
	p, err := profiles.Parse([]byte(full), "full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Marshal()
	slices.Reverse(p.Measured)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	got, _ := p.Marshal()
	if !bytes.Equal(got, want) {
		t.Errorf("Marshal depends on the order of Measured:\n%s\n---\n%s", got, want)
	}
}
