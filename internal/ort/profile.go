package ort

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Profile is the parsed ORT profile of one session, reduced to the first run.
type Profile struct {
	// Nodes are the kernel-time events ("cat":"Node", names ending in
	// "_kernel_time") of the first run, in execution order (by start time;
	// the executor is sequential).
	Nodes []NodeEvent
	// Runs is the number of runs the file recorded ("model_run" events).
	Runs int
	// RunDurUS is the duration of the first run's "model_run" event in
	// microseconds (0 if the file has none).
	RunDurUS int64
	// Raw is the profile file as ORT wrote it (all runs).
	Raw []byte
}

// NodeEvent is one kernel execution. ORT 1.30 (CPU EP) writes each of these
// as, for example,
//
//	{"cat":"Node","pid":4602,"tid":4605,"dur":159,"ts":359,"ph":"X","name":"conv1_kernel_time",
//	 "args":{"mem_in_use_peak":"81920","node_index":"0","thread_scheduling_stats":"",
//	  "mem_bytes_in_use":"16384","mem_in_use_delta":"16384",
//	  "input_type_shape":[{"float":[2,3,16,16]},{"float":[8,3,3,3]}],
//	  "parameter_size":"864","activation_size":"6144","output_size":"16384",
//	  "provider":"CPUExecutionProvider","output_type_shape":[{"float":[2,8,16,16]}],
//	  "mem_requested_in_use_delta":"16384","mem_bytes_requested_in_use":"16384",
//	  "mem_arena_held_delta":"1048576","mem_arena_held":"1048576","op_name":"Conv"}}
//
// Numbers in args are JSON strings; the parser accepts numbers too. The
// mem_* fields come from the CPU arena's statistics and are 0 with the arena
// off. They are running values of the session's arena, not per-run ones:
// mem_in_use_peak is the arena's highest bytes-in-use so far (including the
// kernel's temporary workspace), which is why only the first run's events are
// kept. ORT reports no output tensor names.
type NodeEvent struct {
	// Name is the node name: the event name without "_kernel_time". ORT
	// names an unnamed ONNX node "<OpType>_<index>", and nodes it creates
	// while optimizing after their output or their fusion.
	Name string
	// OpType is args.op_name.
	OpType string
	// NodeIndex is args.node_index: the node's index in ORT's graph, which at
	// level "disabled" is its position in GraphProto.node. Nodes created by
	// optimizers get new, higher indices.
	NodeIndex int
	// Provider is args.provider, e.g. "CPUExecutionProvider".
	Provider string
	// TsUS and DurUS are the event's start ("ts", from profiling start) and
	// duration ("dur") in microseconds.
	TsUS, DurUS int64
	// InputTypes/InputShapes and OutputTypes/OutputShapes come from
	// args.input_type_shape and args.output_type_shape: one entry per present
	// input or output, the type as ONNX names it ("float", "int64", ...).
	// Initializers (weights) are inputs too.
	InputTypes   []string
	InputShapes  [][]int64
	OutputTypes  []string
	OutputShapes [][]int64
	// Arena statistics after the kernel ran, in bytes (args.mem_*).
	MemInUsePeak           int64 // mem_in_use_peak: running peak of bytes in use
	MemBytesInUse          int64 // mem_bytes_in_use
	MemInUseDelta          int64 // mem_in_use_delta: change of bytes in use across the kernel
	MemBytesRequestedInUse int64 // mem_bytes_requested_in_use (before alignment)
	MemRequestedDelta      int64 // mem_requested_in_use_delta
	MemArenaHeld           int64 // mem_arena_held: bytes the arena holds from the system
	MemArenaHeldDelta      int64 // mem_arena_held_delta
	// Sizes in bytes ORT computes for the node: outputs, non-initializer
	// inputs (activation_size) and initializer inputs (parameter_size).
	OutputSize, ActivationSize, ParameterSize int64
}

// PeakBytes returns the largest mem_in_use_peak of the first run: ORT's
// activation peak when the arena was on and the memory pattern off
// (MeasureOptions). It is 0 with the arena off. Caller-owned inputs are not
// counted; outputs that ORT allocates are.
func (p *Profile) PeakBytes() int64 {
	if p == nil {
		return 0
	}
	var peak int64
	for _, n := range p.Nodes {
		peak = max(peak, n.MemInUsePeak)
	}
	return peak
}

// SessionPeakBytes returns the largest mem_in_use_peak of any run the
// file recorded: the arena's peak over the session. Under ORT's default
// options (DefaultOptions: the memory pattern on) the runs after the
// first differ from it: they take one block for the activations, laid out
// from the first run's allocations, before their first kernel.
func (p *Profile) SessionPeakBytes() (int64, error) {
	if p == nil {
		return 0, nil
	}
	var events []rawEvent
	if err := json.Unmarshal(p.Raw, &events); err != nil {
		return 0, fmt.Errorf("parsing ORT profile: %w", err)
	}
	var peak int64
	for _, e := range events {
		if e.Cat != "Node" || !strings.HasSuffix(e.Name, kernelSuffix) {
			continue
		}
		raw, ok := e.Args["mem_in_use_peak"]
		if !ok {
			continue
		}
		v, err := jsonInt(raw)
		if err != nil {
			return 0, fmt.Errorf("parsing ORT profile event %q: args.mem_in_use_peak: %w", e.Name, err)
		}
		peak = max(peak, v)
	}
	return peak, nil
}

// Find returns the first-run event of the node with the given name.
func (p *Profile) Find(name string) (NodeEvent, bool) {
	for _, n := range p.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return NodeEvent{}, false
}

// Names returns the node names in execution order.
func (p *Profile) Names() []string {
	names := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		names[i] = n.Name
	}
	return names
}

// NodeOutput identifies output number Output (counting the outputs ORT
// reported for the node) of the node ORT profiled under the name Node.
type NodeOutput struct {
	Node   string
	Output int
}

// ValueShape is the observed type and shape of one node output.
type ValueShape struct {
	NodeIndex int
	OpType    string
	DType     string
	Shape     []int64
}

// ValueShapes returns the output shapes of every first-run node event, keyed
// by (node name, output position). See the package-level ValueShapes for how
// to map keys to tensor names. It fails if two events share a name.
func (p *Profile) ValueShapes() (map[NodeOutput]ValueShape, error) {
	out := make(map[NodeOutput]ValueShape)
	seen := make(map[string]bool, len(p.Nodes))
	for _, n := range p.Nodes {
		if seen[n.Name] {
			return nil, fmt.Errorf("profile names node %q twice", n.Name)
		}
		seen[n.Name] = true
		for i, s := range n.OutputShapes {
			out[NodeOutput{n.Name, i}] = ValueShape{NodeIndex: n.NodeIndex, OpType: n.OpType, DType: n.OutputTypes[i], Shape: s}
		}
	}
	return out, nil
}

// rawEvent is one entry of ORT's Chrome-trace profile.
type rawEvent struct {
	Cat  string                     `json:"cat"`
	Name string                     `json:"name"`
	Ts   int64                      `json:"ts"`
	Dur  int64                      `json:"dur"`
	Args map[string]json.RawMessage `json:"args"`
}

const kernelSuffix = "_kernel_time"

// ParseProfile parses an ORT profile file (a JSON array of trace events) and
// keeps the kernel events of the first run: those inside the earliest
// "model_run" event's time span. A file without "model_run" events keeps the
// node events up to the first repeated node_index.
func ParseProfile(data []byte) (*Profile, error) {
	var events []rawEvent
	if err := json.Unmarshal(data, &events); err != nil {
		return nil, fmt.Errorf("parsing ORT profile: %w", err)
	}
	p := &Profile{Raw: data}
	first := -1
	for i, e := range events {
		if e.Cat == "Session" && e.Name == "model_run" {
			p.Runs++
			if first < 0 || e.Ts < events[first].Ts {
				first = i
			}
		}
	}
	var begin, end int64
	if first >= 0 {
		begin, end = events[first].Ts, events[first].Ts+events[first].Dur
		p.RunDurUS = events[first].Dur
	}
	seenIndex := map[int]bool{}
	for _, e := range events {
		if e.Cat != "Node" || !strings.HasSuffix(e.Name, kernelSuffix) {
			continue
		}
		if first >= 0 && (e.Ts < begin || e.Ts > end) {
			continue
		}
		n, err := parseNodeEvent(e)
		if err != nil {
			return nil, fmt.Errorf("parsing ORT profile event %q: %w", e.Name, err)
		}
		if first < 0 {
			if seenIndex[n.NodeIndex] {
				break
			}
			seenIndex[n.NodeIndex] = true
		}
		p.Nodes = append(p.Nodes, n)
	}
	sort.SliceStable(p.Nodes, func(i, j int) bool { return p.Nodes[i].TsUS < p.Nodes[j].TsUS })
	return p, nil
}

func parseNodeEvent(e rawEvent) (NodeEvent, error) {
	n := NodeEvent{Name: strings.TrimSuffix(e.Name, kernelSuffix), TsUS: e.Ts, DurUS: e.Dur}
	var err error
	str := func(key string) string {
		var s string
		if raw, ok := e.Args[key]; ok && err == nil {
			if uerr := json.Unmarshal(raw, &s); uerr != nil {
				err = fmt.Errorf("args.%s: %w", key, uerr)
			}
		}
		return s
	}
	num := func(key string) int64 {
		raw, ok := e.Args[key]
		if !ok || err != nil {
			return 0
		}
		v, perr := jsonInt(raw)
		if perr != nil {
			err = fmt.Errorf("args.%s: %w", key, perr)
		}
		return v
	}
	n.OpType = str("op_name")
	n.Provider = str("provider")
	n.NodeIndex = int(num("node_index"))
	n.MemInUsePeak = num("mem_in_use_peak")
	n.MemBytesInUse = num("mem_bytes_in_use")
	n.MemInUseDelta = num("mem_in_use_delta")
	n.MemBytesRequestedInUse = num("mem_bytes_requested_in_use")
	n.MemRequestedDelta = num("mem_requested_in_use_delta")
	n.MemArenaHeld = num("mem_arena_held")
	n.MemArenaHeldDelta = num("mem_arena_held_delta")
	n.OutputSize = num("output_size")
	n.ActivationSize = num("activation_size")
	n.ParameterSize = num("parameter_size")
	if err != nil {
		return n, err
	}
	if n.InputTypes, n.InputShapes, err = typeShapes(e.Args["input_type_shape"]); err != nil {
		return n, fmt.Errorf("args.input_type_shape: %w", err)
	}
	if n.OutputTypes, n.OutputShapes, err = typeShapes(e.Args["output_type_shape"]); err != nil {
		return n, fmt.Errorf("args.output_type_shape: %w", err)
	}
	return n, nil
}

// jsonInt reads an integer written as a JSON string ("81920", ORT's way) or
// as a JSON number.
func jsonInt(raw json.RawMessage) (int64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return 0, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, err
	}
	return v, nil
}

// typeShapes reads a list like [{"float":[2,8,16,16]},{"int64":[]}].
func typeShapes(raw json.RawMessage) ([]string, [][]int64, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	var list []map[string][]int64
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, err
	}
	types := make([]string, len(list))
	shapes := make([][]int64, len(list))
	for i, m := range list {
		if len(m) != 1 {
			return nil, nil, fmt.Errorf("entry %d has %d types, want 1", i, len(m))
		}
		for t, s := range m {
			types[i] = t
			if s == nil {
				s = []int64{}
			}
			shapes[i] = s
		}
	}
	return types, shapes, nil
}
