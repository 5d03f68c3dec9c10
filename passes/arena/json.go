package arena

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Format is the version tag of the JSON form of a plan.
const Format = "remat-arena/v1"

// planJSON is the JSON form of a Plan, format remat-arena/v1: one object
//
//	{
//	  "format": "remat-arena/v1",
//	  "graph": "name",               // the graph's name
//	  "steps": 3,                    // length of the execution order
//	  "order": ["conv1", ...],       // the node each step runs
//	  "align": 64,                   // alignment of every offset and size, bytes
//	  "arena_bytes": 4096,           // the arena to reserve
//	  "live_peak_bytes": 4096,       // the least any plan needs
//	  "peak_step": 1,                // the first step reaching it, -1 none
//	  "fragmentation": 0,            // arena/peak − 1, rounded to 1e-6
//	  "greedy_bytes": 4096,          // the arena of the greedy placement alone
//	  "const_bytes": 0,              // inputs and parameters counted by the memory options, outside the arena
//	  "optimal": true,               // no smaller plan of these buffers exists
//	  "method": "largest-first",     // the placement order that gave the arena
//	  "buffers": [                   // by first step, then offset
//	    {"kind": "activation",       // activation, output (kept to the end) or workspace
//	     "values": ["a", "a.relu"],  // value instances placed in it, in placement order (views, in-place results)
//	     "node": "",                 // for a workspace: its node
//	     "offset": 0, "size": 2048,  // bytes [offset, offset+size) of the arena
//	     "first_step": 0, "last_step": 2}  // steps it is live, both included
//	  ]
//	}
//
// Keys are written in this order, two-space indented, with a final
// newline: the same plan gives the same bytes. Readers must reject other
// format tags.
type planJSON struct {
	Format        string       `json:"format"`
	Graph         string       `json:"graph"`
	Steps         int          `json:"steps"`
	Order         []string     `json:"order"`
	Align         int64        `json:"align"`
	ArenaBytes    int64        `json:"arena_bytes"`
	LivePeakBytes int64        `json:"live_peak_bytes"`
	PeakStep      int          `json:"peak_step"`
	Fragmentation float64      `json:"fragmentation"`
	GreedyBytes   int64        `json:"greedy_bytes"`
	ConstBytes    int64        `json:"const_bytes"`
	Optimal       bool         `json:"optimal"`
	Method        string       `json:"method"`
	Buffers       []bufferJSON `json:"buffers"`
}

type bufferJSON struct {
	Kind      Kind     `json:"kind"`
	Values    []string `json:"values"`
	Node      string   `json:"node,omitempty"`
	Offset    int64    `json:"offset"`
	Size      int64    `json:"size"`
	FirstStep int      `json:"first_step"`
	LastStep  int      `json:"last_step"`
}

// MarshalJSON writes the plan in the remat-arena/v1 form (see JSON).
func (p *Plan) MarshalJSON() ([]byte, error) {
	j := planJSON{
		Format: Format, Graph: p.Graph, Steps: p.Steps, Order: p.Order, Align: p.Align,
		ArenaBytes: p.ArenaBytes, LivePeakBytes: p.LivePeak, PeakStep: p.PeakStep,
		Fragmentation: math.Round(p.Fragmentation()*1e6) / 1e6,
		GreedyBytes:   p.GreedyBytes, ConstBytes: p.ConstBytes, Optimal: p.Optimal, Method: p.Method,
		Buffers: make([]bufferJSON, len(p.Buffers)),
	}
	if j.Order == nil {
		j.Order = []string{}
	}
	for i, b := range p.Buffers {
		vals := b.Values
		if vals == nil {
			vals = []string{}
		}
		j.Buffers[i] = bufferJSON{Kind: b.Kind, Values: vals, Node: b.Node, Offset: b.Offset, Size: b.Size, FirstStep: b.First, LastStep: b.Last}
	}
	return json.Marshal(j)
}

// JSON returns the plan's remat-arena/v1 form, indented, with a final
// newline: the content of an -arena sidecar file.
func (p *Plan) JSON() ([]byte, error) {
	raw, err := p.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// Parse reads a plan in the remat-arena/v1 form and checks it (Check).
func Parse(data []byte) (*Plan, error) {
	var j planJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("arena plan: %w", err)
	}
	if j.Format != Format {
		return nil, fmt.Errorf("arena plan: format %q, want %q", j.Format, Format)
	}
	p := &Plan{Graph: j.Graph, Steps: j.Steps, Order: j.Order, Align: j.Align, ArenaBytes: j.ArenaBytes,
		GreedyBytes: j.GreedyBytes, LivePeak: j.LivePeakBytes, PeakStep: j.PeakStep, ConstBytes: j.ConstBytes,
		Optimal: j.Optimal, Method: j.Method}
	for _, b := range j.Buffers {
		p.Buffers = append(p.Buffers, Buffer{Kind: b.Kind, Values: b.Values, Node: b.Node, Offset: b.Offset, Size: b.Size, First: b.FirstStep, Last: b.LastStep})
	}
	if err := Check(p); err != nil {
		return nil, fmt.Errorf("arena plan: %w", err)
	}
	return p, nil
}
