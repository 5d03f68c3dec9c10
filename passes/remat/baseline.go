package remat

import (
	"fmt"

	"github.com/remat-compile/remat/ir"
)

// Floor is the working-set floor of a problem: the largest working set
// of one node, every part it outputs and every part it reads, plus
// ConstBytes. Whatever the plan, the step that computes the node holds at
// least that much, so no plan peaks lower (eq. (3) at that step). With
// Problem.InPlace a node that may write in place counts the part it
// overwrites once: its first part may share that part's buffer, as a
// view's (Problem.View) does; with
// Problem.Workspace the node's workspace counts too.
type Floor struct {
	// Bytes is the floor (ConstBytes for a problem without nodes).
	Bytes int64
	// Node is the node whose working set it is; −1 without nodes.
	Node int
	// Workspace is the part of Bytes that is Node's workspace.
	Workspace int64
}

// Floor returns p's working-set floor.
func (p *Problem) Floor() Floor {
	f := Floor{Bytes: p.ConstBytes, Node: -1}
	for i := range p.N() {
		b := p.ConstBytes + p.Bytes[i]
		p.ReadParts(i, func(r Part) { b += p.PartBytes(int(r.Node), int(r.Index)) })
		if p.SharesBuffer(i) {
			b -= p.PartBytes(i, 0)
		}
		var ws int64
		if p.Workspace != nil {
			ws = p.Workspace[i]
		}
		if b += ws; f.Node < 0 || b > f.Bytes {
			f.Node, f.Bytes, f.Workspace = i, b, ws
		}
	}
	return f
}

// NoRematPlan is checkpoint-all: every node computed once in its own
// stage.
func NoRematPlan(p *Problem) (*Plan, error) {
	stages := make([][]int32, p.N())
	for t := range stages {
		stages[t] = []int32{int32(t)}
	}
	return ScheduleStages(p, stages)
}

// EvaluateNoRemat evaluates NoRematPlan: its PeakBytes is the no-remat
// peak that budgets are fractions of, its TotalSeconds the cost that
// overheads are measured against.
func EvaluateNoRemat(p *Problem) (CheckResult, error) {
	pl, err := NoRematPlan(p)
	if err != nil {
		return CheckResult{}, err
	}
	res, err := Evaluate(p, pl)
	if err != nil {
		return CheckResult{}, fmt.Errorf("checkpoint-all fails Evaluate: %w", err)
	}
	return res, nil
}

// UncountedResident is the bytes of the graph inputs and parameters that
// the memory model leaves out of the peak (LowerOptions) but that occupy
// the device all the same.
func UncountedResident(g *ir.Graph, o LowerOptions) int64 {
	var n int64
	seen := map[*ir.Value]bool{}
	add := func(v *ir.Value) {
		if v == nil || seen[v] {
			return
		}
		seen[v] = true
		if b, ok := v.Type.Bytes(); ok {
			n += b
		}
	}
	if !o.CountInputs {
		for _, v := range g.Inputs {
			add(v)
		}
	}
	if !o.CountParams {
		for _, v := range g.Params {
			add(v)
		}
		if !o.ConstantNodes {
			for _, nd := range g.Nodes {
				if nd.Op == "Constant" && (nd.Domain == "" || nd.Domain == "ai.onnx") {
					for _, v := range nd.Outputs {
						add(v)
					}
				}
			}
		}
	}
	return n
}
