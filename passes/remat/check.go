package remat

import (
	"fmt"
	"math/bits"
	"strings"
)

// CheckResult is what Check measures of a legal plan.
type CheckResult struct {
	// PeakBytes is the largest memory of any step, ConstBytes included:
	// max over t, k of U_{t,k} (eq. 2–3) as the memory model defines it.
	PeakBytes int64
	// PeakStep is the first step (index into Sequence) reaching the peak,
	// −1 when the plan computes nothing; PeakStage and PeakNode are its
	// stage and node.
	PeakStep, PeakStage, PeakNode int
	// TotalSeconds is the objective (1a): the cost of every computation.
	TotalSeconds float64
	// Recomputations counts computations beyond the first of each node.
	Recomputations int
	// During is the memory of each step of Sequence while it runs.
	During []int64
	// Live lists the parts resident at the peak step, largest first (the
	// memory model's AtPeak): what a report shows to explain the peak.
	Live []Part
}

// ViolationKind classifies what makes a plan illegal.
type ViolationKind uint8

const (
	// Malformed: matrices of the wrong shape, bits outside the
	// frontier-advancing form (8a–8c), ops that do not follow the row-major
	// scan of R (Algorithm 1), or ops that disagree with FREE.
	Malformed ViolationKind = iota + 1
	// MissingDep: a node computed while a dependency is not resident
	// (eq. 1b).
	MissingDep
	// NotRecomputable: a node that may run only once computed again.
	NotRecomputable
	// DoubleFree: a value freed twice without being computed in between
	// (Theorem 4.1).
	DoubleFree
	// FreeNotResident: a free of a value that was never computed.
	FreeNotResident
	// BadRetain: S disagrees with what is resident at a stage boundary: a
	// value retained into stage t that was not resident at the end of
	// stage t−1 (eq. 1c), or a resident value neither retained nor freed.
	BadRetain
	// OutputNotResident: a graph output not resident after the last stage.
	OutputNotResident
	// Leak: a value that is not a graph output still resident after the
	// last stage.
	Leak
	// OverBudget: a step's memory exceeds BudgetBytes.
	OverBudget
)

var violationNames = [...]string{
	Malformed:         "malformed",
	MissingDep:        "missing dependency",
	NotRecomputable:   "not recomputable",
	DoubleFree:        "double free",
	FreeNotResident:   "free of a value not resident",
	BadRetain:         "bad retention",
	OutputNotResident: "output not resident",
	Leak:              "leak",
	OverBudget:        "over budget",
}

func (k ViolationKind) String() string {
	if int(k) < len(violationNames) && violationNames[k] != "" {
		return violationNames[k]
	}
	return fmt.Sprintf("ViolationKind(%d)", uint8(k))
}

// Violation is one reason a plan is illegal. Stage and Node locate it (−1
// when it concerns no particular one).
type Violation struct {
	Kind  ViolationKind
	Stage int
	Node  int
	Msg   string
}

// CheckError lists what is wrong with a plan, in execution order.
type CheckError struct {
	Violations []Violation
	// More counts violations found beyond those listed.
	More int
}

// maxViolations bounds CheckError.Violations.
const maxViolations = 10

func (e *CheckError) Error() string {
	var b strings.Builder
	b.WriteString("remat: illegal plan: ")
	for k, v := range e.Violations {
		if k > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.Msg)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more", e.More)
	}
	return b.String()
}

// Has reports whether some listed violation is of kind k.
func (e *CheckError) Has(k ViolationKind) bool {
	for _, v := range e.Violations {
		if v.Kind == k {
			return true
		}
	}
	return false
}

// Check is the oracle every plan goes through before it is trusted,
// reported or exported. It verifies that the plan is legal — Evaluate's
// checks — and that no step's memory exceeds p.BudgetBytes. On an
// over-budget plan it returns the measurements together with a
// *CheckError of kind OverBudget.
func Check(p *Problem, plan *Plan) (CheckResult, error) {
	res, err := Evaluate(p, plan)
	if err != nil {
		return res, err
	}
	if res.PeakBytes > p.BudgetBytes {
		msg := fmt.Sprintf("stage %d: computing node %s (%d) brings memory to %d bytes, over the budget of %d bytes (resident: %s)",
			res.PeakStage, p.Name(res.PeakNode), res.PeakNode, res.PeakBytes, p.BudgetBytes, describeLive(p, res.Live))
		return res, &CheckError{Violations: []Violation{{OverBudget, res.PeakStage, res.PeakNode, msg}}}
	}
	return res, nil
}

// describeLive names the first few resident parts with their sizes.
func describeLive(p *Problem, live []Part) string {
	var b strings.Builder
	for k, r := range live {
		if k == 8 {
			fmt.Fprintf(&b, ", and %d more", len(live)-k)
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name(int(r.Node)))
		if p.NumParts(int(r.Node)) > 1 {
			fmt.Fprintf(&b, "[%d]", r.Index)
		}
		fmt.Fprintf(&b, " %d B", p.PartBytes(int(r.Node), int(r.Index)))
	}
	return b.String()
}

// Evaluate checks that a plan is legal, without regard to the budget, and
// measures it. Legal means:
//   - the matrices have the frontier-advancing shape: N stages, R[t][t]
//     set (8a), nothing after t in R[t] (8c) or at or after t in S[t] (8b);
//   - Ops is Algorithm 1's row-major scan of R: each stage's computes are
//     exactly R[t] in increasing node order, and its frees exactly FREE[t];
//   - every node computed finds each dependency resident: computed earlier
//     in its stage or retained (1b), not freed since;
//   - no node that is not recomputable is computed twice;
//   - at each stage boundary the resident values are exactly S[t] (1c:
//     nothing retained that was not resident; nothing resident that is
//     neither retained nor freed);
//   - frees only free resident values and no value is freed twice
//     (Theorem 4.1);
//   - after the last stage the resident values are exactly the outputs.
//
// The memory is the project's memory model over the compute sequence,
// computed by passes/memory.Simulate (see the package doc).
func Evaluate(p *Problem, plan *Plan) (CheckResult, error) {
	res := CheckResult{PeakStep: -1, PeakStage: -1, PeakNode: -1}
	if err := p.Validate(); err != nil {
		return res, err
	}
	if plan == nil {
		return res, &CheckError{Violations: []Violation{{Malformed, -1, -1, "no plan"}}}
	}
	c := checker{p: p, pl: plan}
	seq, stageOf := c.run()
	if len(c.errs.Violations) > 0 {
		return res, &c.errs
	}
	for _, i := range seq {
		res.TotalSeconds += p.Seconds[i]
	}
	res.Recomputations = len(seq) - p.N()
	m, sh, err := simulate(p, seq)
	if err != nil {
		return res, fmt.Errorf("remat: internal error: the memory model rejects a plan that Check found legal: %w", err)
	}
	res.PeakBytes, res.During = m.PeakBytes, m.During
	if m.PeakStep >= 0 {
		res.PeakStep = m.PeakStep
		res.PeakStage = int(stageOf[m.PeakStep])
		res.PeakNode = int(seq[m.PeakStep])
		for _, l := range m.AtPeak {
			res.Live = append(res.Live, sh.part[l.Value.ID])
		}
	}
	return res, nil
}

type checker struct {
	p    *Problem
	pl   *Plan
	errs CheckError
}

func (c *checker) fail(kind ViolationKind, stage, node int, format string, args ...any) {
	if len(c.errs.Violations) >= maxViolations {
		c.errs.More++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if stage >= 0 {
		msg = fmt.Sprintf("stage %d: %s", stage, msg)
	}
	c.errs.Violations = append(c.errs.Violations, Violation{kind, stage, node, msg})
}

// node formats a node for messages.
func (c *checker) node(i int) string { return fmt.Sprintf("node %s (%d)", c.p.Name(i), i) }

// shape checks the matrices' dimensions and the frontier-advancing form.
func (c *checker) shape() bool {
	n, pl := c.p.N(), c.pl
	if len(pl.R) != n || len(pl.S) != n || len(pl.Free) != n {
		c.fail(Malformed, -1, -1, "plan has %d, %d and %d rows of R, S and FREE for %d nodes (one stage per node)", len(pl.R), len(pl.S), len(pl.Free), n)
		return false
	}
	ok := true
	for t := range n {
		if !pl.R[t].Has(t) {
			c.fail(Malformed, t, t, "R[%d][%d] is not set: stage %d must compute %s (eq. 8a)", t, t, t, c.node(t))
			ok = false
		}
		if i := pl.R[t].Next(t + 1); i >= 0 {
			c.fail(Malformed, t, i, "R[%d] computes %s, after the stage's frontier (eq. 8c)", t, c.node(i))
			ok = false
		}
		if i := pl.S[t].Next(t); i >= 0 {
			c.fail(Malformed, t, i, "S[%d] retains %s, which no earlier stage computed (eq. 8b)", t, c.node(i))
			ok = false
		}
		if i := pl.Free[t].Next(t + 1); i >= 0 {
			c.fail(Malformed, t, i, "FREE[%d] frees %s, which is after the stage's frontier", t, c.node(i))
			ok = false
		}
	}
	return ok
}

// run replays Ops, recording violations, and returns the compute sequence
// with the stage of each step.
func (c *checker) run() (seq, stageOf []int32) {
	p, pl := c.p, c.pl
	n := p.N()
	if !c.shape() {
		return nil, nil
	}
	resident := NewBits(n)
	computed := make([]int32, n) // times computed so far
	freedAt := make([]int32, n)  // stage+1 of the last free, 0 when not freed since its last computation
	k := 0
	for t := range n {
		// Stage boundary: resident must equal S[t] (eq. 1c and eq. 5).
		// Only nodes before t have been computed, and shape has checked
		// that S[t] holds only those, so the rows compare word by word.
		for w, sw := range pl.S[t] {
			for diff := resident[w] ^ sw; diff != 0; diff &= diff - 1 {
				i := w<<6 + bits.TrailingZeros64(diff)
				if pl.S[t].Has(i) {
					c.fail(BadRetain, t, i, "S[%d] retains %s, which is not resident at the end of stage %d (eq. 1c)", t, c.node(i), t-1)
					resident.Set(i) // report each problem once
				} else {
					c.fail(BadRetain, t, i, "%s is resident at the end of stage %d but neither retained (S[%d][%d] = 0) nor freed", c.node(i), t-1, t, i)
					resident.Clear(i)
				}
			}
		}
		lastCompute, computes, frees := -1, 0, 0
		for ; k < len(pl.Ops) && int(pl.Ops[k].Stage) == t; k++ {
			op := pl.Ops[k]
			i := int(op.Node)
			if i < 0 || i >= n {
				c.fail(Malformed, t, -1, "op %d (%s) names node %d, which does not exist", k, op.Kind, i)
				continue
			}
			switch op.Kind {
			case OpCompute:
				computes++
				if !pl.R[t].Has(i) {
					c.fail(Malformed, t, i, "op %d computes %s but R[%d][%d] = 0", k, c.node(i), t, i)
				}
				if i <= lastCompute {
					c.fail(Malformed, t, i, "op %d computes %s after node %d; Algorithm 1 computes a stage's nodes in increasing order", k, c.node(i), lastCompute)
				}
				lastCompute = i
				for _, d := range p.Deps[i] {
					if !resident.Has(int(d)) {
						why := fmt.Sprintf("not computed earlier in stage %d and not retained (S[%d][%d] = 0)", t, t, d)
						if f := freedAt[d]; f > 0 {
							why = fmt.Sprintf("freed in stage %d", f-1)
						}
						c.fail(MissingDep, t, i, "%s reads %s, which is not resident: %s", c.node(i), c.node(int(d)), why)
					}
				}
				if computed[i] > 0 && !p.Recomputable[i] {
					c.fail(NotRecomputable, t, i, "%s is not recomputable (random, stateful or unknown op) but is computed again", c.node(i))
				}
				if resident.Has(i) {
					c.fail(Malformed, t, i, "%s is computed while its earlier value is still resident (free it first)", c.node(i))
				}
				resident.Set(i)
				computed[i]++
				freedAt[i] = 0
				seq = append(seq, int32(i))
				stageOf = append(stageOf, int32(t))
			case OpFree:
				frees++
				if !pl.Free[t].Has(i) {
					c.fail(Malformed, t, i, "op %d frees %s but FREE[%d][%d] = 0", k, c.node(i), t, i)
				}
				switch {
				case resident.Has(i):
				case freedAt[i] > 0:
					c.fail(DoubleFree, t, i, "%s is freed twice: already freed in stage %d and not computed since (Theorem 4.1)", c.node(i), freedAt[i]-1)
				default:
					c.fail(FreeNotResident, t, i, "FREE of %s, which is not resident (never computed)", c.node(i))
				}
				resident.Clear(i)
				freedAt[i] = int32(t) + 1
			default:
				c.fail(Malformed, t, i, "op %d has unknown kind %d", k, uint8(op.Kind))
			}
		}
		if want := pl.R[t].Count(); computes != want {
			c.fail(Malformed, t, -1, "Ops compute %d nodes in stage %d but R[%d] has %d", computes, t, t, want)
		}
		if want := pl.Free[t].Count(); frees != want {
			c.fail(Malformed, t, -1, "Ops free %d values in stage %d but FREE[%d] has %d", frees, t, t, want)
		}
	}
	if k < len(pl.Ops) {
		c.fail(Malformed, -1, int(pl.Ops[k].Node), "op %d (%s) has stage %d, out of order or out of range (stages run 0 to %d in order)", k, pl.Ops[k], pl.Ops[k].Stage, n-1)
	}
	isOut := NewBits(n)
	for _, o := range p.Outputs {
		isOut.Set(int(o))
		if !resident.Has(int(o)) {
			c.fail(OutputNotResident, n-1, int(o), "graph output %s is not resident after the last stage", c.node(int(o)))
		}
	}
	for i := resident.Next(0); i >= 0; i = resident.Next(i + 1) {
		if !isOut.Has(i) {
			c.fail(Leak, n-1, i, "%s is still resident after the last stage but is not a graph output (free it after its last use)", c.node(i))
		}
	}
	return seq, stageOf
}
