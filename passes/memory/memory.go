// Package memory is remat-compile's one memory model: given a graph and an
// execution sequence of its nodes (repeats allowed), it computes the bytes
// in use before, during and after every step and the peak.
//
// # Definition
//
// A step runs one node. Running it allocates a buffer for each present
// output (rounded up to Options.AlignBytes) unless the output reuses an input
// buffer (below); the bytes in use while the step runs, its working set
// together with everything else live, are the bytes live before the step
// plus the new output buffers plus the node's transient workspace
// (Options.Workspace). Right after the step, every value instance whose last
// reader in the sequence is this step is freed, and so is every output that
// nothing reads. A value produced again later (a recomputation) is a new
// instance: readers read the most recent instance, and each instance is
// freed after its own last reader. Graph outputs are kept to the end of the
// sequence (Options.FreeOutputs switches that off). Graph inputs and
// parameters are never freed; they form a constant term that is counted only
// when Options.CountInputs / CountParams say so.
//
// Buffers, not values, hold bytes. With Options.Aliasing, an op flagged
// ir.Alias (Reshape, Squeeze, Unsqueeze, Flatten, Identity) returns a view
// of its first input's buffer, which then lives until its last view dies.
// With Options.InPlace, an op flagged ir.InPlace writes its output over its
// first input's buffer when that instance dies at this step, the buffer has
// no other live view, and the sizes match. Both follow what ONNX Runtime's
// allocation planner does on CPU (../shared/research/ort-execution.md).
//
// # Relation to the papers
//
// Checkmate (Jain et al. 2020) §4.4, eq. (2)–(3), tracks U_{t,k}, the memory
// in use after evaluating node k in stage t: U_{t,0} is the constant
// overhead plus the retained checkpoints, U_{t,k+1} adds the output of node
// k+1 and subtracts the values FREE_{t,i,k} freed after it. The budget
// constraint bounds U_{t,k} at the moment of computing, i.e. before the
// frees of step k, which is our During. MOCCASIN (Bartan et al. 2023)
// App. A.3 defines the peak of a sequence the same way, as the maximum over
// steps of the live sizes with the step's outputs included. Kumar et al.
// (2019) §2.1 count a node's inputs and outputs as live while it runs, which
// is also During. We follow that shared definition with three changes, made
// because the model must predict what ONNX Runtime allocates: buffers
// instead of values (views and in-place reuse cost no new memory), graph
// outputs pinned to the end (the runtime hands them to the caller), and an
// optional per-node workspace term (kernel scratch memory, MONeT's c_i).
package memory

import (
	"fmt"
	"slices"

	"github.com/remat-compile/remat/ir"
)

// Options select the model's switches. The zero value is the plain
// liveness model of the papers; ORT returns the settings that predict ONNX
// Runtime's CPU allocator.
type Options struct {
	CountInputs bool // add graph inputs to every step's bytes
	CountParams bool // add parameters (initializers) to every step's bytes
	FreeOutputs bool // free graph outputs after their last reader instead of keeping them
	Aliasing    bool // Alias ops are views of their input
	InPlace     bool // InPlace ops reuse a dying input buffer of the same size
	// AlignBytes rounds every buffer up to a multiple of it (0 or 1: none).
	AlignBytes int64
	// Workspace, when set, gives a node's transient scratch bytes while it
	// runs; they are counted in During only.
	Workspace func(n *ir.Node) int64
}

// ORT returns the options that model ONNX Runtime's CPU execution provider
// with the arena on and the memory pattern off: caller-owned inputs and
// initializers not counted, outputs kept, views and in-place reuse on.
func ORT() Options {
	return Options{Aliasing: true, InPlace: true}
}

// Result is the outcome of simulating one sequence.
type Result struct {
	// PeakBytes is the largest During; PeakStep the first step reaching it.
	PeakBytes int64
	PeakStep  int
	// ConstBytes is the constant term (inputs and parameters counted under
	// the options); it is included in every During and After entry.
	ConstBytes int64
	// During[i] is the bytes in use while step i runs; After[i] after its
	// frees.
	During []int64
	After  []int64
	// AtPeak lists the value instances whose buffers are live at the peak,
	// largest first (ties by value ID), including the peak step's outputs.
	AtPeak []Live
}

// Live is one value instance that holds memory.
type Live struct {
	Value *ir.Value
	Bytes int64 // bytes of its buffer (0 when it is a view or reused an input)
	Step  int   // the step that produced it, -1 for inputs and parameters
}

// SizeError lists values whose size is unknown, so no byte count is possible.
type SizeError struct{ Values []*ir.Value }

func (e *SizeError) Error() string {
	names := make([]string, 0, len(e.Values))
	for i, v := range e.Values {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(e.Values)-10))
			break
		}
		desc := fmt.Sprintf("%q %s", v.String(), v.Type)
		if v.Def != nil {
			desc += fmt.Sprintf(" from node %q (%s)", v.Def.String(), v.Def.OpName())
		}
		names = append(names, desc)
	}
	return fmt.Sprintf("memory: %d values have unknown sizes (give static input shapes with -input-shape or -dim): %s", len(e.Values), joinComma(names))
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// FileOrder is the sequence of g's nodes as listed: one step per node.
func FileOrder(g *ir.Graph) []*ir.Node { return g.Nodes }

// Simulate runs the model over seq, a sequence of nodes of g (the root or a
// subgraph), repeats allowed. It fails when a step reads a value that no
// earlier step produced and that is not available from outside the
// sequence, or when a live value's size is unknown.
func Simulate(g *ir.Graph, seq []*ir.Node, opts Options) (*Result, error) {
	s := &sim{g: g, opts: opts, nv: g.NumValues()}
	if err := s.plan(seq); err != nil {
		return nil, err
	}
	return s.run(seq)
}

type sim struct {
	g    *ir.Graph
	opts Options
	nv   int

	// Instances: instance k is output slot j of step i, numbered by
	// instBase[i]+j. lastUse[k] is the last step that reads it (or len(seq)
	// for kept outputs, -1 when nothing reads it).
	instBase []int32
	lastUse  []int32
	// reads[i] lists, per input of step i (explicit then implicit), the
	// instance read, or -1 for a value from outside the sequence.
	reads [][]int32
	sizes []int64 // bytes per value ID, -1 unknown
}

func (s *sim) bytesOf(v *ir.Value) int64 {
	if n := s.sizes[v.ID]; n != -2 {
		return n
	}
	n, ok := v.Type.Bytes()
	if !ok {
		n = -1
	} else if a := s.opts.AlignBytes; a > 1 {
		n = (n + a - 1) / a * a
	}
	s.sizes[v.ID] = n
	return n
}

// external reports whether v is available without any step producing it:
// a graph input or parameter, or a value of an enclosing graph.
func (s *sim) external(v *ir.Value) bool {
	return v.Def == nil || v.Def.Graph != s.g
}

func (s *sim) plan(seq []*ir.Node) error {
	s.sizes = make([]int64, s.nv)
	for i := range s.sizes {
		s.sizes[i] = -2
	}
	s.instBase = make([]int32, len(seq)+1)
	for i, n := range seq {
		s.instBase[i+1] = s.instBase[i] + int32(len(n.Outputs))
	}
	s.lastUse = make([]int32, s.instBase[len(seq)])
	for i := range s.lastUse {
		s.lastUse[i] = -1
	}
	cur := make([]int32, s.nv) // current instance of each value, -1 none
	for i := range cur {
		cur[i] = -1
	}
	s.reads = make([][]int32, len(seq))
	for i, n := range seq {
		if n.Graph != s.g {
			return fmt.Errorf("memory: step %d runs node %q of graph %q, not of %q", i, n.String(), n.Graph.Name, s.g.Name)
		}
		ins := n.AllInputs()
		r := make([]int32, len(ins))
		for k, v := range ins {
			r[k] = -1
			if v == nil || s.external(v) {
				continue
			}
			inst := cur[v.ID]
			if inst < 0 {
				return fmt.Errorf("memory: step %d (node %q) reads %q before any step produces it", i, n.String(), v.String())
			}
			r[k] = inst
			s.lastUse[inst] = int32(i)
		}
		s.reads[i] = r
		for j, o := range n.Outputs {
			if o != nil {
				cur[o.ID] = s.instBase[i] + int32(j)
			}
		}
	}
	if !s.opts.FreeOutputs {
		for _, o := range s.g.Outputs {
			if !s.external(o) {
				if inst := cur[o.ID]; inst >= 0 {
					s.lastUse[inst] = int32(len(seq))
				}
			}
		}
	}
	var unknown []*ir.Value
	seen := make([]bool, s.nv)
	for _, n := range seq {
		for _, o := range n.Outputs {
			if o != nil && !seen[o.ID] && s.bytesOf(o) < 0 {
				seen[o.ID] = true
				unknown = append(unknown, o)
			}
		}
	}
	if len(unknown) > 0 {
		return &SizeError{Values: unknown}
	}
	return nil
}

func (s *sim) constBytes() (int64, error) {
	var total int64
	var unknown []*ir.Value
	count := func(vs []*ir.Value, seen map[*ir.Value]bool) {
		for _, v := range vs {
			if seen[v] {
				continue
			}
			seen[v] = true
			b := s.bytesOf(v)
			if b < 0 {
				unknown = append(unknown, v)
				continue
			}
			total += b
		}
	}
	seen := map[*ir.Value]bool{}
	if s.opts.CountInputs {
		count(s.g.Inputs, seen)
	}
	if s.opts.CountParams {
		count(s.g.Params, seen)
	}
	if len(unknown) > 0 {
		return 0, &SizeError{Values: unknown}
	}
	return total, nil
}

func (s *sim) run(seq []*ir.Node) (*Result, error) {
	c, err := s.constBytes()
	if err != nil {
		return nil, err
	}
	res := &Result{ConstBytes: c, During: make([]int64, len(seq)), After: make([]int64, len(seq)), PeakStep: -1, PeakBytes: c}
	ninst := len(s.lastUse)
	// Each live instance maps to a buffer; buffers carry bytes and a count
	// of live instances viewing them.
	buf := make([]int32, ninst)
	for i := range buf {
		buf[i] = -1
	}
	var bufBytes []int64
	var bufRefs []int32
	live := c
	var peakLive []int32 // instances live at the peak step (captured lazily)
	for i, n := range seq {
		base := s.instBase[i]
		info := n.Info()
		var fresh int64
		for j, o := range n.Outputs {
			if o == nil {
				continue
			}
			inst := base + int32(j)
			b := s.bytesOf(o)
			if j == 0 && len(s.reads[i]) > 0 && info != nil {
				in := s.reads[i][0]
				switch {
				case s.opts.Aliasing && info.Flags&ir.Alias != 0 && in >= 0:
					buf[inst] = buf[in]
					bufRefs[buf[in]]++
					continue
				case s.opts.Aliasing && info.Flags&ir.Alias != 0 && in < 0:
					// A view of an input or parameter: no new memory,
					// and nothing to free later.
					buf[inst] = -2
					continue
				case s.opts.InPlace && info.Flags&ir.InPlace != 0 && in >= 0 &&
					s.lastUse[in] == int32(i) && bufRefs[buf[in]] == 1 && bufBytes[buf[in]] == b && !s.readsTwice(i, in):
					buf[inst] = buf[in]
					bufRefs[buf[in]]++
					continue
				}
			}
			buf[inst] = int32(len(bufBytes))
			bufBytes = append(bufBytes, b)
			bufRefs = append(bufRefs, 1)
			fresh += b
		}
		live += fresh
		during := live
		if s.opts.Workspace != nil {
			during += s.opts.Workspace(n)
		}
		res.During[i] = during
		if during > res.PeakBytes || res.PeakStep < 0 {
			res.PeakBytes, res.PeakStep = during, i
			peakLive = peakLive[:0]
			for k := int32(0); k < s.instBase[i+1]; k++ {
				if buf[k] >= 0 && (s.lastUse[k] >= int32(i) || k >= base) {
					peakLive = append(peakLive, k)
				}
			}
		}
		// Frees: inputs whose last reader is this step, outputs nobody reads.
		release := func(inst int32) {
			b := buf[inst]
			buf[inst] = -1
			if b < 0 {
				return
			}
			bufRefs[b]--
			if bufRefs[b] == 0 {
				live -= bufBytes[b]
			}
		}
		for _, in := range s.reads[i] {
			if in >= 0 && s.lastUse[in] == int32(i) && buf[in] != -1 {
				release(in)
			}
		}
		for j, o := range n.Outputs {
			if o != nil && s.lastUse[base+int32(j)] < 0 {
				release(base + int32(j))
			}
		}
		res.After[i] = live
	}
	res.AtPeak = s.atPeak(seq, peakLive)
	return res, nil
}

// readsTwice reports whether step i reads instance in through more than one
// input slot (then it cannot be overwritten in place).
func (s *sim) readsTwice(i int, in int32) bool {
	c := 0
	for _, r := range s.reads[i] {
		if r == in {
			c++
		}
	}
	return c > 1
}

func (s *sim) atPeak(seq []*ir.Node, insts []int32) []Live {
	out := make([]Live, 0, len(insts))
	for _, k := range insts {
		step := 0
		for step+1 < len(s.instBase) && s.instBase[step+1] <= k {
			step++
		}
		n := seq[step]
		v := n.Outputs[k-s.instBase[step]]
		out = append(out, Live{Value: v, Bytes: s.bytesOf(v), Step: step})
	}
	slices.SortStableFunc(out, func(a, b Live) int {
		if a.Bytes != b.Bytes {
			if a.Bytes > b.Bytes {
				return -1
			}
			return 1
		}
		return int(a.Value.ID - b.Value.ID)
	})
	return out
}
