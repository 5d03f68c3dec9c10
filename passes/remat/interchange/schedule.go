package interchange

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/remat-compile/remat/passes/remat"
)

// ScheduleFormat and ScheduleVersion identify the schedule JSON document
// (ScheduleJSON). The version changes whenever a field changes meaning or
// goes away; fields may be added within a version.
const (
	ScheduleFormat  = "remat-compile schedule"
	ScheduleVersion = 1
)

// ScheduleJSON is the schedule document MarshalScheduleJSON writes: a
// checked plan as the sequence of its computations and frees. Node ids
// are the problem's Names (the input file's ids), as strings. Memory
// follows remat.Check: while a node is computed, its output and every
// value resident before it (its inputs among them) are held, plus
// ConstBytes; a free releases a value after the computation before it.
// Costs are in the input's units.
type ScheduleJSON struct {
	// Format is ScheduleFormat and Version is ScheduleVersion.
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Graph names the graph the schedule is for ("" when not given).
	Graph string `json:"graph,omitempty"`
	// Solver names the solver that made the plan.
	Solver string `json:"solver,omitempty"`
	// Nodes is the number of nodes in the graph.
	Nodes int `json:"nodes"`
	// BudgetBytes is the memory budget the plan was checked against
	// (null: none).
	BudgetBytes *int64 `json:"budget_bytes"`
	// ConstBytes is the constant term in every step's memory.
	ConstBytes int64 `json:"const_bytes"`
	// PeakBytes is the largest memory of any computation.
	PeakBytes int64 `json:"peak_bytes"`
	// Cost is the total cost of every computation, NoRematCost that of
	// computing each node once, and Recomputations the computations
	// beyond the first of each node.
	Cost           float64 `json:"cost"`
	NoRematCost    float64 `json:"no_remat_cost"`
	Recomputations int     `json:"recomputations"`
	// Outputs lists the nodes resident after the last step, in order.
	Outputs []string `json:"outputs"`
	// Steps is the schedule.
	Steps []ScheduleStep `json:"steps"`
}

// ScheduleStep is one computation or free of a schedule.
type ScheduleStep struct {
	// Op is "compute" or "free".
	Op string `json:"op"`
	// Node is the node's id.
	Node string `json:"node"`
	// Stage is the Checkmate stage (§4.6) the step belongs to.
	Stage int `json:"stage"`
	// MemoryBytes, on a computation, is the memory while it runs.
	MemoryBytes *int64 `json:"memory_bytes,omitempty"`
}

// Schedule returns the schedule document of a plan of p, after checking
// the plan with remat.Check (an illegal or over-budget plan is an error).
// graph names the graph in the document.
func Schedule(p *remat.Problem, plan *remat.Plan, graph string) (*ScheduleJSON, error) {
	res, err := remat.Check(p, plan)
	if err != nil {
		return nil, err
	}
	d := &ScheduleJSON{
		Format: ScheduleFormat, Version: ScheduleVersion, Graph: graph, Solver: plan.Solver,
		Nodes: p.N(), ConstBytes: p.ConstBytes, PeakBytes: res.PeakBytes,
		Cost: res.TotalSeconds, NoRematCost: p.LowerBoundSeconds(), Recomputations: res.Recomputations,
		Outputs: []string{}, Steps: make([]ScheduleStep, 0, len(plan.Ops)),
	}
	if p.BudgetBytes != remat.NoBudget {
		b := p.BudgetBytes
		d.BudgetBytes = &b
	}
	for _, o := range p.Outputs {
		d.Outputs = append(d.Outputs, p.Name(int(o)))
	}
	k := 0
	for _, op := range plan.Ops {
		st := ScheduleStep{Op: "free", Node: p.Name(int(op.Node)), Stage: int(op.Stage)}
		if op.Kind == remat.OpCompute {
			m := res.During[k]
			st.Op, st.MemoryBytes = "compute", &m
			k++
		}
		d.Steps = append(d.Steps, st)
	}
	return d, nil
}

// MarshalScheduleJSON returns the schedule document of a checked plan of
// p as JSON ending in a newline (see Schedule): one field per line, and
// one line per step.
func MarshalScheduleJSON(p *remat.Problem, plan *remat.Plan, graph string) ([]byte, error) {
	d, err := Schedule(p, plan, graph)
	if err != nil {
		return nil, err
	}
	steps := d.Steps
	d.Steps = nil
	head, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	// head ends in `"steps": null` and the closing brace: the steps go
	// there, one compact object a line.
	i := bytes.LastIndex(head, []byte("null"))
	var b bytes.Buffer
	b.Write(head[:i])
	b.WriteString("[")
	for k, st := range steps {
		line, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(line)
	}
	if len(steps) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	return b.Bytes(), nil
}

// MarshalTWRematSchedule returns a checked plan of p in the output format
// of Kumar et al.'s TWRemat tool, which its front ends read back: one line
// per step, `c ID` to compute node ID and `f ID` to free its value. IDs
// are the problem's Names when all of them are distinct integers (as for
// every graph read from a TWRemat or node-link file with integer ids),
// else the nodes' positions 0 … N−1.
func MarshalTWRematSchedule(p *remat.Problem, plan *remat.Plan) ([]byte, error) {
	if _, err := remat.Check(p, plan); err != nil {
		return nil, err
	}
	ids := integerIDs(p)
	var b bytes.Buffer
	for _, op := range plan.Ops {
		c := byte('f')
		if op.Kind == remat.OpCompute {
			c = 'c'
		}
		b.WriteByte(c)
		b.WriteByte(' ')
		if ids != nil {
			b.WriteString(ids[op.Node])
		} else {
			b.WriteString(strconv.Itoa(int(op.Node)))
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// integerIDs returns p's Names when they are distinct integers, else nil.
func integerIDs(p *remat.Problem) []string {
	if len(p.Names) != p.N() {
		return nil
	}
	seen := make(map[int64]bool, p.N())
	out := make([]string, p.N())
	for i, s := range p.Names {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || seen[v] {
			return nil
		}
		seen[v] = true
		out[i] = strconv.FormatInt(v, 10)
	}
	return out
}

// The schedule formats: FormatJSON (MarshalScheduleJSON) and
// FormatTWRemat (MarshalTWRematSchedule).
const (
	FormatJSON    = "json"
	FormatTWRemat = "twremat"
)

// ParseScheduleFormat returns the schedule format named by format, or,
// when it is empty, the one path's extension implies (.txt and .twremat:
// TWRemat, anything else JSON).
func ParseScheduleFormat(format, path string) (string, error) {
	switch format {
	case FormatJSON, FormatTWRemat:
		return format, nil
	case "":
		if s := strings.ToLower(path); strings.HasSuffix(s, ".txt") || strings.HasSuffix(s, ".twremat") {
			return FormatTWRemat, nil
		}
		return FormatJSON, nil
	}
	return "", fmt.Errorf("schedule format %q: want %s or %s", format, FormatJSON, FormatTWRemat)
}

// MarshalSchedule returns a checked plan of p in format
// (ParseScheduleFormat).
func MarshalSchedule(format string, p *remat.Problem, plan *remat.Plan, graph string) ([]byte, error) {
	if format == FormatTWRemat {
		return MarshalTWRematSchedule(p, plan)
	}
	return MarshalScheduleJSON(p, plan, graph)
}
