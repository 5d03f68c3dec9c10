package profiles

import (
	"embed"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/remat-compile/remat/ir"
)

// FormatV1 is the value of the format field of every file this package
// reads and writes.
const FormatV1 = "remat-profile/v1"

// Profile is one device: its datasheet figures, optionally a roofline
// fitted to measurements, and optionally measured per-op times.
//
// A Profile is not changed by Cost, MemoryBytes or Marshal, so one value
// may serve many goroutines. Parse and Load index the measured entries;
// after changing Measured in code, call Validate to index them again.
type Profile struct {
	Format   string     // FormatV1
	Device   Device     // the datasheet roofline, always present
	Fitted   *Fitted    // nil when the file has no fitted section
	Measured []Measured // exact-signature times, possibly none

	file  string         // the name given to Parse, for errors
	lines map[string]int // field path → line, for profiles parsed from text
	index map[string]int // measured signature key → index into Measured
}

// Device is what a datasheet says about a device.
type Device struct {
	// Name identifies the profile ("v100-16gb"): -profile selects a
	// built-in by it, case-insensitively.
	Name string
	// Description says what the device is and where the figures come from.
	Description string
	// MemoryBytes is the memory capacity that tensors may use: the default
	// budget of the rematerialization pass.
	MemoryBytes int64
	// MemoryBandwidth is the peak memory bandwidth in bytes per second.
	MemoryBandwidth float64
	// LaunchOverhead is the fixed cost of running one kernel (one node), in
	// seconds: a GPU's launch latency, a CPU runtime's per-node dispatch.
	LaunchOverhead float64
	// PeakFLOPs is the peak arithmetic rate in operations per second of
	// general (vector) work, by element type. Float32 is required; an
	// element type without an entry runs at the Float32 rate (8-bit and
	// 4-bit integers try Int8 first).
	PeakFLOPs map[ir.DType]float64
	// PeakMatrixFLOPs is the peak rate of matrix units (tensor cores),
	// used for convolutions, matrix products, Einsum and recurrent layers.
	// An element type without an entry uses PeakFLOPs. May be nil.
	PeakMatrixFLOPs map[ir.DType]float64
}

// Fitted is a roofline fitted to measurements on the device: effective
// rather than peak rates, which already include what the datasheet
// roofline leaves out (kernel efficiency, caches, the runtime).
type Fitted struct {
	FLOPsPerSecond  float64 // effective arithmetic rate, > 0
	BytesPerSecond  float64 // effective memory bandwidth, > 0
	OverheadSeconds float64 // effective fixed cost per node, >= 0
	Source          string  // how the fit was made: tool, runtime, date
}

// Measured is the measured time of one node signature: the operator, its
// attributes and the shapes of its inputs. Build one for a node with
// NewMeasured so that the signature is canonical.
type Measured struct {
	Op     string
	Domain string // "" for the standard ONNX domain
	// Attrs is CanonicalAttrs of the node.
	Attrs string
	// DType is the node's compute element type (ComputeDType).
	DType ir.DType
	// Shapes has one entry per input slot: nil for an absent optional
	// input, an empty non-nil slice for a scalar.
	Shapes [][]int64
	// Seconds is the time of one run of the node (the mean or median over
	// Repeats runs, as the measuring tool says in Fitted.Source).
	Seconds float64
	// Repeats is how many runs the time comes from, at least 1.
	Repeats int
}

//go:embed data/*.yaml
var builtinFS embed.FS

// Builtins returns the names of the built-in profiles, sorted.
func Builtins() []string {
	entries, err := builtinFS.ReadDir("data")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Load returns the profile that name selects, as -profile takes it: a path
// ending in .yaml or .yml is read as a profile file; any other name is a
// built-in profile, matched case-insensitively.
func Load(name string) (*Profile, error) {
	lower := strings.ToLower(name)
	if strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		return Parse(data, name)
	}
	for _, b := range Builtins() {
		if strings.EqualFold(b, name) {
			file := path.Join("data", b+".yaml")
			data, err := builtinFS.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("profile %s: %w", b, err)
			}
			return Parse(data, "profiles/"+file)
		}
	}
	return nil, fmt.Errorf("unknown profile %q: the built-in profiles are %s; a profile file must end in .yaml or .yml",
		name, strings.Join(Builtins(), ", "))
}

// MemoryBytes is the device's memory capacity, the default budget.
func (p *Profile) MemoryBytes() int64 {
	if p == nil {
		return 0
	}
	return p.Device.MemoryBytes
}

// File is the file name the profile was parsed from ("" when built in
// code). Built-in profiles are named profiles/data/<name>.yaml.
func (p *Profile) File() string { return p.file }
