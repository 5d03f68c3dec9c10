package shapes

import "github.com/remat-compile/remat/ir"

// graphAttr returns the subgraph held by attribute name, reporting its
// absence.
func (c *nctx) graphAttr(name string) *ir.Graph {
	a := c.n.Attr(name)
	if a == nil || a.Kind != ir.AttrGraph || a.Graph == nil {
		c.errf("missing required graph attribute %s", name)
		return nil
	}
	return a.Graph
}

// subgraph infers g, whose inputs have their types; errors are dropped when
// quiet (a branch that never runs).
func (c *nctx) subgraph(g *ir.Graph, quiet bool) {
	mark := len(c.in.errs)
	c.in.graph(g, c.depth+1)
	if quiet {
		c.in.errs = c.in.errs[:mark]
	}
}

// setInput gives subgraph input v type t (bound), merged with what the
// subgraph declares for it when t says less.
func (c *nctx) setInput(v *ir.Value, t ir.TensorType) {
	if v == nil {
		return
	}
	if c.in.valid(v) {
		c.in.consts[v.ID] = nil
		if rankOf(t) < 0 && c.in.hasDecl[v.ID] {
			d := c.in.decl[v.ID]
			if !t.DType.Valid() || d.DType == t.DType {
				t = d
			}
		}
	}
	v.Type = c.in.bind(t)
}

func outType(g *ir.Graph, i int) ir.TensorType {
	if i < len(g.Outputs) && g.Outputs[i] != nil {
		return g.Outputs[i].Type
	}
	return unknownType(ir.Undefined)
}

// If: both branches are inferred; the outputs are those of the taken branch
// when the condition is known, else what both branches agree on.
func inferIf(c *nctx) {
	if !c.need(0, "cond") {
		return
	}
	thenG, elseG := c.graphAttr("then_branch"), c.graphAttr("else_branch")
	if thenG == nil || elseG == nil {
		return
	}
	taken := -1
	if cv := c.cst(0); cv != nil {
		if e, ok := cv.single(); ok && e.known() {
			taken = 1
			if truthy(cv.dt, e) {
				taken = 0
			}
		}
	}
	delete(c.in.dead, thenG)
	delete(c.in.dead, elseG)
	thenTypes, elseTypes := snapshotTypes(thenG), snapshotTypes(elseG)
	defer func() {
		// A dead branch never runs: its values keep the types they had
		// before inference (the file's declarations), not half-inferred
		// ones that a runtime checking value_info would reject.
		if c.in.dead[thenG] {
			thenTypes.restore()
		}
		if c.in.dead[elseG] {
			elseTypes.restore()
		}
	}()
	mark := len(c.in.errs)
	c.subgraph(thenG, taken == 1)
	mid := len(c.in.errs)
	c.subgraph(elseG, taken == 0)
	switch {
	case taken == 0:
		c.in.dead[elseG] = true
	case taken == 1:
		c.in.dead[thenG] = true
	case mid > mark && len(c.in.errs) == mid:
		// A run that took then_branch would fail: the model only works
		// when it takes else_branch.
		c.in.errs = c.in.errs[:mark]
		c.in.dead[thenG], taken = true, 1
	case mid == mark && len(c.in.errs) > mid:
		c.in.errs = c.in.errs[:mid]
		c.in.dead[elseG], taken = true, 0
	}
	nout := c.numOut()
	if len(thenG.Outputs) != nout || len(elseG.Outputs) != nout {
		c.errf("then_branch has %d outputs and else_branch %d, but the node has %d", len(thenG.Outputs), len(elseG.Outputs), nout)
		return
	}
	for i := range nout {
		tt, et := outType(thenG, i), outType(elseG, i)
		switch taken {
		case 0:
			c.set(i, tt.Clone())
			c.setIfConst(i, thenG.Outputs[i], tt)
		case 1:
			c.set(i, et.Clone())
			c.setIfConst(i, elseG.Outputs[i], et)
		default:
			if tt.DType.Valid() && et.DType.Valid() && tt.DType != et.DType {
				c.errf("output %d is %s in then_branch but %s in else_branch", i, tt.DType, et.DType)
				return
			}
			if tt.Kind != et.Kind {
				c.errf("output %d is a %s in then_branch but a %s in else_branch", i, tt.Kind, et.Kind)
				return
			}
			j := joinTypes(tt, et)
			if !j.DType.Valid() {
				j.DType = c.firstValid(tt.DType, et.DType)
			}
			c.set(i, j)
		}
	}
}

func (c *nctx) firstValid(ds ...ir.DType) ir.DType {
	for _, d := range ds {
		if d.Valid() {
			return d
		}
	}
	return ir.Undefined
}

func (c *nctx) setIfConst(i int, v *ir.Value, t ir.TensorType) {
	if cv := c.in.constOf(v); cv != nil && t.Static() {
		c.setConst(i, cv)
	}
}

// maxLoopPasses bounds the re-inference of a loop body whose carried
// shapes change between iterations.
const maxLoopPasses = 4

// Loop: inputs M, cond, v_initial…; body inputs iteration_num, cond,
// v…; body outputs cond, v…, scan…; node outputs v_final…, scan….
func inferLoop(c *nctx) {
	body := c.graphAttr("body")
	if body == nil {
		return
	}
	n := len(c.n.Inputs) - 2
	if n < 0 {
		c.errf("needs inputs M and cond (either may be empty)")
		return
	}
	if len(body.Inputs) != n+2 {
		c.errf("body has %d inputs, want %d (iteration number, condition and %d loop-carried values)", len(body.Inputs), n+2, n)
		return
	}
	k := len(body.Outputs) - 1 - n
	if k < 0 {
		c.errf("body has %d outputs, want at least %d (condition and %d loop-carried values)", len(body.Outputs), n+1, n)
		return
	}
	if c.numOut() != n+k {
		c.errf("has %d outputs, but the body gives %d loop-carried and %d scan outputs", c.numOut(), n, k)
		return
	}
	carried := make([]ir.TensorType, n)
	for j := range n {
		carried[j] = c.typ(2 + j).Clone()
	}
	for pass := 0; ; pass++ {
		mark := len(c.in.errs)
		c.setInput(body.Inputs[0], ir.TensorOf(ir.Int64))
		c.setInput(body.Inputs[1], ir.TensorOf(ir.Bool))
		for j := range n {
			c.setInput(body.Inputs[2+j], carried[j])
		}
		c.subgraph(body, false)
		changed := false
		for j := range n {
			in, out := body.Inputs[2+j].Type, outType(body, 1+j)
			if in.DType.Valid() && out.DType.Valid() && in.DType != out.DType {
				c.errf("loop-carried value %d enters the body as %s and leaves it as %s", j, in.DType, out.DType)
				return
			}
			nt := joinTypes(in, out)
			if !nt.DType.Valid() {
				nt.DType = c.firstValid(in.DType, out.DType)
			}
			if !nt.Equal(in) {
				carried[j], changed = nt, true
			}
		}
		if !changed || pass == maxLoopPasses-1 {
			break
		}
		c.in.errs = c.in.errs[:mark] // inferred again with wider types
	}
	for j := range n {
		c.set(j, carried[j])
	}
	trip := c.dataDim("trip")
	if m := c.cst(0); m != nil && c.loopRunsToM(body) {
		if e, ok := m.single(); ok && e.known() {
			trip = ir.D(max(e.i, 0))
		}
	}
	for s := range k {
		t := outType(body, 1+n+s)
		if rankOf(t) < 0 {
			c.set(n+s, unknownType(t.DType))
			continue
		}
		c.set(n+s, tensorType(t.DType, append([]ir.Dim{trip}, t.Shape...)))
	}
}

// loopRunsToM reports whether a Loop always runs M iterations: no
// condition, or a constant true one that the body passes through.
func (c *nctx) loopRunsToM(body *ir.Graph) bool {
	if !c.has(1) {
		return true
	}
	cv := c.cst(1)
	e, ok := cv.single()
	if !ok || !e.known() || !truthy(cv.dt, e) {
		return false
	}
	out := body.Outputs[0]
	if out == body.Inputs[1] {
		return true
	}
	if oc := c.in.constOf(out); oc != nil {
		if e, ok := oc.single(); ok && e.known() && truthy(oc.dt, e) {
			return true
		}
	}
	if out != nil && out.Def != nil && out.Def.Op == "Identity" && len(out.Def.Inputs) == 1 && out.Def.Inputs[0] == body.Inputs[1] {
		return true
	}
	return false
}

// Scan (opset 9+): inputs are N states then M scan inputs
// (num_scan_inputs); the body sees one slice of each scan input and
// returns N states and K per-iteration outputs, stacked along
// scan_output_axes.
func inferScan(c *nctx) {
	if c.opset < 9 {
		c.unsupportedf("Scan-8 with a batch axis")
		return
	}
	body := c.graphAttr("body")
	if body == nil {
		return
	}
	if !c.hasAttr("num_scan_inputs") {
		c.errf("missing required attribute num_scan_inputs")
		return
	}
	m := int(c.attrInt("num_scan_inputs", 0))
	n := len(c.n.Inputs) - m
	if m < 1 || n < 0 {
		c.errf("num_scan_inputs %d does not fit %d inputs", m, len(c.n.Inputs))
		return
	}
	if len(body.Inputs) != n+m {
		c.errf("body has %d inputs, want %d", len(body.Inputs), n+m)
		return
	}
	k := len(body.Outputs) - n
	if k < 0 || c.numOut() != n+k {
		c.errf("has %d outputs; the body gives %d", c.numOut(), len(body.Outputs))
		return
	}
	inAxes, ok := c.attrInts("scan_input_axes")
	if !ok {
		inAxes = make([]int64, m)
	}
	outAxes, ok := c.attrInts("scan_output_axes")
	if !ok {
		outAxes = make([]int64, k)
	}
	if len(inAxes) != m || len(outAxes) != k {
		c.errf("scan_input_axes has %d values (want %d), scan_output_axes %d (want %d)", len(inAxes), m, len(outAxes), k)
		return
	}
	seq := ir.UnknownDim
	slices := make([]ir.TensorType, m)
	for j := range m {
		if !c.need(n+j, "scan input") {
			return
		}
		t := c.typ(n + j)
		if rankOf(t) < 0 {
			slices[j] = unknownType(t.DType)
			continue
		}
		a, ok := c.axis(inAxes[j], len(t.Shape), "scan_input_axes entry")
		if !ok {
			return
		}
		if conflict(seq, t.Shape[a]) {
			c.errf("scan inputs have different lengths (%d and %d)", seq.Size, t.Shape[a].Size)
			return
		}
		seq = unify(seq, t.Shape[a])
		s := cloneDims(t.Shape)
		slices[j] = tensorType(t.DType, append(s[:a], s[a+1:]...))
	}
	states := make([]ir.TensorType, n)
	for j := range n {
		states[j] = c.typ(j).Clone()
	}
	for pass := 0; ; pass++ {
		mark := len(c.in.errs)
		for j := range n {
			c.setInput(body.Inputs[j], states[j])
		}
		for j := range m {
			c.setInput(body.Inputs[n+j], slices[j])
		}
		c.subgraph(body, false)
		changed := false
		for j := range n {
			in, out := body.Inputs[j].Type, outType(body, j)
			nt := joinTypes(in, out)
			if !nt.DType.Valid() {
				nt.DType = c.firstValid(in.DType, out.DType)
			}
			if !nt.Equal(in) {
				states[j], changed = nt, true
			}
		}
		if !changed || pass == maxLoopPasses-1 {
			break
		}
		c.in.errs = c.in.errs[:mark]
	}
	for j := range n {
		c.set(j, states[j])
	}
	for s := range k {
		t := outType(body, n+s)
		if rankOf(t) < 0 {
			c.set(n+s, unknownType(t.DType))
			continue
		}
		a, ok := c.axis(outAxes[s], len(t.Shape)+1, "scan_output_axes entry")
		if !ok {
			return
		}
		d := cloneDims(t.Shape)
		d = append(d[:a], append([]ir.Dim{seq}, d[a:]...)...)
		c.set(n+s, tensorType(t.DType, d))
	}
}

// typeSnapshot remembers the types of every value defined in a graph and
// its nested subgraphs.
type typeSnapshot struct {
	vals  []*ir.Value
	types []ir.TensorType
}

func snapshotTypes(g *ir.Graph) *typeSnapshot {
	s := &typeSnapshot{}
	seen := map[*ir.Graph]bool{} // malformed input may nest a graph in itself
	var walk func(sg *ir.Graph)
	walk = func(sg *ir.Graph) {
		if seen[sg] {
			return
		}
		seen[sg] = true
		add := func(v *ir.Value) {
			if v != nil && v.Graph == sg {
				s.vals = append(s.vals, v)
				s.types = append(s.types, v.Type.Clone())
			}
		}
		for _, v := range sg.Inputs {
			add(v)
		}
		for _, n := range sg.Nodes {
			for _, o := range n.Outputs {
				add(o)
			}
			for _, sub := range n.Subgraphs() {
				walk(sub)
			}
		}
	}
	walk(g)
	return s
}

func (s *typeSnapshot) restore() {
	for i, v := range s.vals {
		v.Type = s.types[i]
	}
}
