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

// ReuseFloor is Floor under Problem.Reuse, where it is higher: a freed
// buffer waits for a later value of its key, so a layout that two
// working sets hold at once early and late in the order stays allocated
// in between, whatever the plan (for a training graph, a forward
// activation's layout that its gradient has again).
//
// Under ReuseModel the buffers of one key form a stack: a buffer is
// allocated only when the key's free list is empty (so by any point the
// key has had as many buffers as the most instances of it live at once
// so far, P), and a freed buffer stays allocated while some later
// instance will take it, which, the list being last-in-first-out, the
// ones a later surge takes: as many as the most instances live at once
// from then on, F, exceed those live now. So at every point the key holds
// min(P, F) buffers. Both only grow when more instances are live, and
// at the step where a plan first computes node t (every plan computes
// the nodes in order, each in its stage) the instances of t's working
// set are live: the parts t reads and writes, counted as buffers (a
// view's part counts as the part it views, once, and the first part of
// a node that may write in place not at all; a graph output's part,
// whose last instance gets a buffer of its own, counts as of no key). So
// with W_k(t) the
// buffers of key k in t's working set, every plan holds at that step at
// least
//
//	ConstBytes + Σ_k bytes_k · min(max_{t'≤t} W_k(t'), max_{t'≥t} W_k(t'))
//	    + the bytes of t's working set of no key + t's workspace,
//
// and the floor is the largest of these over t, or Floor when that is
// higher. Without Reuse it is Floor.
func (p *Problem) ReuseFloor() Floor {
	if p.Reuse == nil {
		return p.Floor()
	}
	n := p.N()
	type entry struct {
		t     int32
		count int32
	}
	byKey := map[int32][]entry{}
	keyBytes := map[int32]int64{}
	plain := make([]int64, n) // bytes of no key, and the workspace
	isView := func(i int) bool { return p.View != nil && p.View[i].Node != -1 }
	outs := map[Part]bool{}
	for _, o := range p.OutputPartList() {
		outs[o] = true
	}
	for t := range n {
		counts := map[int32]int32{}
		seen := map[Part]bool{}
		add := func(i, k int) {
			// A view's part lies in the buffer of the part it views.
			for k == 0 && isView(i) {
				v := p.View[i]
				if v.Node < 0 {
					return // a view of a graph input or parameter
				}
				i, k = int(v.Node), int(v.Index)
			}
			if seen[Part{int32(i), int32(k)}] {
				return
			}
			seen[Part{int32(i), int32(k)}] = true
			key := p.Reuse[i][k]
			if key < 0 || outs[Part{int32(i), int32(k)}] {
				plain[t] += p.PartBytes(i, k)
				return
			}
			counts[key]++
			keyBytes[key] = p.PartBytes(i, k)
		}
		for k := range p.NumParts(t) {
			if k == 0 && p.SharesBuffer(t) {
				continue
			}
			add(t, k)
		}
		p.ReadParts(t, func(r Part) { add(int(r.Node), int(r.Index)) })
		if p.Workspace != nil {
			plain[t] += p.Workspace[t]
		}
		for key, c := range counts {
			byKey[key] = append(byKey[key], entry{int32(t), c})
		}
	}
	// held[t] accumulates Σ_k bytes_k · min(P_k, F_k) through a difference
	// array: between two entries of a key the minimum is constant.
	held := make([]int64, n+1)
	for key, es := range byKey {
		b := keyBytes[key]
		suf := make([]int32, len(es)+1)
		for i := len(es) - 1; i >= 0; i-- {
			suf[i] = max(suf[i+1], es[i].count)
		}
		var pre int32
		for i, e := range es {
			pre = max(pre, e.count)
			at := int64(min(pre, suf[i])) * b
			held[e.t] += at
			held[e.t+1] -= at
			if i+1 < len(es) && es[i+1].t > e.t+1 {
				between := int64(min(pre, suf[i+1])) * b
				held[e.t+1] += between
				held[es[i+1].t] -= between
			}
		}
	}
	f := p.Floor()
	var run int64
	for t := range n {
		run += held[t]
		b := p.ConstBytes + run + plain[t]
		if b > f.Bytes {
			f.Node, f.Bytes = t, b
			if p.Workspace != nil {
				f.Workspace = p.Workspace[t]
			}
		}
	}
	return f
}
