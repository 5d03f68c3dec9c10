package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// HTMLOptions configure WriteHTML.
type HTMLOptions struct {
	// ThresholdBytes is the size from which a value is listed in the
	// decision table (recomputed values are listed whatever their size);
	// 0 means DefaultThresholdPercent of the no-remat peak.
	ThresholdBytes int64
}

// DefaultThresholdPercent is the decision table's default threshold, as a
// percentage of the no-remat peak.
const DefaultThresholdPercent = 1.0

// WriteHTML writes r as one self-contained HTML page: its figures are
// inline SVG, its styles inline CSS; it has no script and loads nothing
// (no network, no fonts). The page shows
//
//   - the summary: the budget, the peaks before and after under the
//     solver's liveness model and the target's, the predicted overhead,
//     the solver, each number labelled with its source (predicted or
//     measured);
//   - the memory timelines (r.Timelines): the original's and the
//     rewrite's memory per step under each model, their peaks marked, the
//     budget where it bounds the model, and the runtime's measured memory
//     per node (r.Measured) over the target's timeline;
//   - the plan's R matrix (r.PlanStages, Checkmate Fig. 4);
//   - the sweep's Pareto curve and table (r.Sweep);
//   - the decision table: every value of at least the threshold and every
//     recomputed one, kept or recomputed (how many times, at what extra
//     seconds), and why;
//   - the solvers' attempts, and how the report
//     was made (r.Invocation).
//
// The same report gives the same bytes.
func WriteHTML(w io.Writer, r *Compile, o HTMLOptions) error {
	h := &htmlWriter{r: r}
	h.page(o)
	_, err := io.WriteString(w, h.b.String())
	return err
}

type htmlWriter struct {
	b strings.Builder
	r *Compile
}

func (h *htmlWriter) p(format string, args ...any) { fmt.Fprintf(&h.b, format, args...) }

// bytesCell prints a byte count as the report's formatter does, with the
// exact count in its title and data attributes naming the JSON field.
func (h *htmlWriter) bytesSpan(field string, n int64) string {
	return fmt.Sprintf(`<span class="bytes" data-field="%s" data-bytes="%d" title="%s B">%s</span>`, esc(field), n, groupDigits(n), esc(formatBytes(n)))
}

// pctSpan prints a percentage with two decimals.
func pctSpan(field string, v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	return fmt.Sprintf(`<span class="pct" data-field="%s" data-value="%s">%s%%</span>`, esc(field), s, s)
}

// groupDigits writes n with thin spaces between thousands: 1 310 720.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	out = append([]string{s}, out...)
	g := strings.Join(out, "\u2009")
	if neg {
		g = "-" + g
	}
	return g
}

const css = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4;padding:0 16px}
h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.2em;margin-top:32px;border-bottom:1px solid #ccc;padding-bottom:2px}
.sub{color:#555;margin-top:0}
table{border-collapse:collapse;margin:8px 0;font-size:0.9em}
th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#f3f3f3}
td.num,th.num{text-align:right;white-space:nowrap}
td.why{font-size:0.92em;color:#333}
table.decisions{width:100%;table-layout:auto}table.decisions code{word-break:break-all}
table.decisions td:nth-child(1),table.decisions td:nth-child(3){max-width:180px}
.src{font-size:0.8em;color:#fff;border-radius:3px;padding:0 4px;white-space:nowrap}
.src.predicted{background:#0072b2}.src.measured{background:#009e73}
.recomputed{color:#d55e00;font-weight:600}.kept{color:#333}.pinned{color:#7a4b00}.tiled{color:#0072b2;font-weight:600}.late{color:#009e73;font-weight:600}
.note{background:#fff7e0;border-left:4px solid #e0a800;padding:6px 10px;margin:10px 0}
.bad{background:#fde8e8;border-left-color:#cc0000}
figure{margin:12px 0}figcaption{font-size:0.9em;color:#444;max-width:960px}
svg{display:block;max-width:100%;height:auto}
svg text{font-family:system-ui,sans-serif;font-size:12px}
svg text.tick{font-size:11px;fill:#444}svg text.legend{font-size:11.5px;fill:#222}
svg text.label{font-size:11px}svg text.peak{font-size:12px;font-weight:600}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.88em}
pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;word-break:break-all}
`

func (h *htmlWriter) page(o HTMLOptions) {
	r := h.r
	h.p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	h.p("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	h.p("<meta name=\"generator\" content=\"remat-compile %s\">\n", esc(Schema))
	h.p("<title>remat-compile: %s</title>\n<style>\n%s</style>\n</head>\n<body>\n", esc(r.Model), css)
	h.p("<h1>remat-compile plan for <code>%s</code></h1>\n", esc(r.Model))
	out := r.Output
	if out == "" {
		out = "(no model written)"
	}
	h.p("<p class=\"sub\">→ <code>%s</code> · target <b>%s</b> · profile <b>%s</b> · solver <b>%s</b></p>\n", esc(out), esc(r.Target), esc(r.Profile), esc(planSolver(r)))
	if r.Interrupted {
		h.p("<p class=\"note bad\" id=\"interrupted\">The solve was interrupted: this is the best plan the solver had found by then.</p>\n")
	}
	h.summary()
	h.tiling()
	h.timelines()
	if len(r.PlanStages) > 0 {
		h.p("<h2 id=\"rmatrix\">The plan's R matrix</h2>\n<figure>\n")
		rmatrixSVG(&h.b, r.PlanStages, len(r.Nodes))
		h.p("<figcaption>Which nodes each stage computes (Checkmate §4.2, Fig. 4): stage <i>t</i> computes node <i>t</i> for the first time (the grey diagonal) and recomputes, in colour, what it needs that the plan did not keep. Source: the plan (%s). Rows are stages, columns nodes in the graph's order.</figcaption>\n</figure>\n", esc(planSolver(r)))
	}
	if r.Sweep != nil {
		h.sweep()
	}
	h.decisions(o)
	h.attempts()
	h.about()
	h.p("</body>\n</html>\n")
}

func planSolver(r *Compile) string {
	if r.PlanSolver == "" || r.PlanSolver == r.Solver {
		return r.Solver
	}
	return r.Solver + " (" + r.PlanSolver + ")"
}

func srcTag(src string) string {
	return fmt.Sprintf(`<span class="src %s">%s</span>`, esc(src), esc(src))
}

func (h *htmlWriter) summary() {
	r := h.r
	h.p("<h2 id=\"summary\">Summary</h2>\n<table class=\"summary\">\n<tr><th>quantity</th><th>original</th><th>rewrite</th><th>model</th><th>source</th></tr>\n")
	budget := h.bytesSpan("budget_bytes", r.BudgetBytes)
	if r.Budget != "" {
		budget += " (" + esc(r.Budget) + ")"
	}
	if t := r.Tiling; t != nil {
		// The budget given was met by tiling, under the target's model;
		// the solver then ran on the tiled graph at its own peak.
		given := h.bytesSpan("tiling.budget_bytes", t.BudgetBytes)
		if r.Budget != "" {
			given += " (" + esc(r.Budget) + ")"
		}
		h.p("<tr><td>budget</td><td colspan=\"2\">%s, met by tiling</td><td>%s</td><td>given</td></tr>\n", given, esc(r.Target))
		h.p("<tr><td>budget</td><td colspan=\"2\">%s: the tiled graph's own peak</td><td>liveness (the solver's)</td><td>derived</td></tr>\n", h.bytesSpan("budget_bytes", r.BudgetBytes))
	} else {
		h.p("<tr><td>budget</td><td colspan=\"2\">%s</td><td>liveness (the solver's)</td><td>given</td></tr>\n", budget)
	}
	sign := ""
	switch {
	case r.PeakReductionPercent > 0:
		sign = "−"
	case r.PeakReductionPercent < 0:
		sign = "+"
	}
	h.p("<tr><td>peak</td><td class=\"num\">%s</td><td class=\"num\">%s (%s%s)</td><td>liveness (the solver's)</td><td>%s</td></tr>\n",
		h.bytesSpan("before_peak_bytes", r.BeforePeakBytes), h.bytesSpan("after_peak_bytes", r.AfterPeakBytes), sign, pctSpan("peak_reduction_percent", math.Abs(r.PeakReductionPercent)), srcTag(SourcePredicted))
	if r.ORTBeforePeakBytes > 0 {
		h.p("<tr><td>peak</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td></tr>\n",
			h.bytesSpan("ort_model_before_peak_bytes", r.ORTBeforePeakBytes), h.bytesSpan("ort_model_after_peak_bytes", r.ORTAfterPeakBytes), esc(r.Target), srcTag(SourcePredicted))
	}
	if r.ORTDefaultBeforePeakBytes > 0 {
		h.p("<tr><td>peak</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s under its default options (memory pattern on), over a session's runs</td><td>%s</td></tr>\n",
			h.bytesSpan("ort_model_default_before_peak_bytes", r.ORTDefaultBeforePeakBytes), h.bytesSpan("ort_model_default_after_peak_bytes", r.ORTDefaultAfterPeakBytes), esc(r.Target), srcTag(SourcePredicted))
	}
	if m := r.Measured; m != nil {
		h.p("<tr><td>peak</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s, level %s</td><td>%s</td></tr>\n",
			h.bytesSpan("measured.original.peak_bytes", m.Original.PeakBytes), h.bytesSpan("measured.rewrite.peak_bytes", m.Rewrite.PeakBytes), esc(m.Runtime), esc(m.Level), srcTag(SourceMeasured))
	}
	h.p("<tr><td>peak floor</td><td colspan=\"2\">%s: node <code>%s</code>'s inputs and outputs; no plan peaks lower</td><td>liveness</td><td>%s</td></tr>\n",
		h.bytesSpan("peak_floor_bytes", r.PeakFloorBytes), esc(r.PeakFloorNode), srcTag(SourcePredicted))
	h.p("<tr><td>compute</td><td class=\"num\" data-field=\"base_compute_seconds\">%s</td><td class=\"num\" data-field=\"plan_compute_seconds\">%s (+%s)</td><td>cost model of %s</td><td>%s</td></tr>\n",
		FormatSeconds(r.BaseComputeSeconds), FormatSeconds(r.PlanComputeSeconds), pctSpan("overhead_percent", r.OverheadPercent), esc(r.Profile), srcTag(SourcePredicted))
	h.p("<tr><td>recomputations</td><td colspan=\"2\"><span data-field=\"recomputations\">%d</span> recomputations of <span data-field=\"recomputed_nodes\">%d</span> nodes</td><td>the plan</td><td></td></tr>\n", r.Recomputations, r.RecomputedNodes)
	opt := "optimality unknown"
	switch {
	case r.Optimal:
		opt = "optimal"
	case r.GapPercent != nil:
		opt = fmt.Sprintf("gap %.2f%% to the lower bound %s", *r.GapPercent, FormatSeconds(r.LowerBoundSeconds))
	}
	h.p("<tr><td>solver</td><td colspan=\"2\">%s: %s, %.2f s (limit %.0f s)</td><td></td><td></td></tr>\n", esc(planSolver(r)), esc(opt), r.SolveSeconds, r.TimeLimitSeconds)
	h.p("</table>\n")
	var costs []string
	for _, k := range slices.Sorted(maps.Keys(r.CostSources)) {
		costs = append(costs, fmt.Sprintf("%d nodes %s (%s)", r.CostSources[k], esc(k), FormatSeconds(r.CostSecondsBySource[k])))
	}
	h.p("<p>Costs: %s, from profile <b>%s</b>. Solver's memory model: %s. Target model: %s.</p>\n", strings.Join(costs, ", "), esc(r.Profile), esc(r.MemoryModel), esc(r.TargetModel))
	if r.ORTBeforePeakBytes > 0 && r.Recomputations > 0 && r.ORTAfterPeakBytes >= r.ORTBeforePeakBytes {
		h.p("<p class=\"note bad\">The target's model predicts no saving for this rewrite (%s → %s): its allocator keeps buffers the plan meant to free.</p>\n", formatBytes(r.ORTBeforePeakBytes), formatBytes(r.ORTAfterPeakBytes))
	}
	if m := r.Measured; m != nil && !m.OK {
		h.p("<p class=\"note bad\">verify reported failures (outputs bitwise equal: %v); see <code>remat-compile verify</code>.</p>\n", m.OutputsEqual)
	}
}

// tiling lists the regions tiling split into bands, when it ran.
func (h *htmlWriter) tiling() {
	t := h.r.Tiling
	if t == nil {
		return
	}
	h.p("<h2 id=\"tiling\">Tiling</h2>\n<p>Recomputation alone cannot go below the largest single-node working set, so the fit split %d region(s) of spatially local ops into bands that read their rows plus a halo and recompute the halo rows; it brings the %s peak from %s to %s within a budget of %s, for %s more compute (%s). The nodes the bands consist of are marked <span class=\"tiled\">tiled</span> below.</p>\n",
		len(t.Regions), esc(h.r.Target), h.bytesSpan("tiling.peak_before_bytes", t.PeakBeforeBytes), h.bytesSpan("tiling.peak_after_bytes", t.PeakAfterBytes),
		h.bytesSpan("tiling.budget_bytes", t.BudgetBytes), pctSpan("tiling.extra_compute_percent", t.ExtraPercent), srcTag(SourcePredicted))
	h.p("<table class=\"tiling\">\n<tr><th>region</th><th>nodes</th><th>split</th><th>axis</th><th>halo rows per band</th><th class=\"num\">peak before</th><th class=\"num\">peak after</th><th class=\"num\">extra compute</th></tr>\n")
	for k, g := range t.Regions {
		h.p("<tr><td>%d</td><td><code>%s</code> … <code>%s</code> (%d)</td><td>%s</td><td>%s</td><td>%v</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s (%.1f%%)</td></tr>\n",
			k+1, esc(g.FirstNode), esc(g.LastNode), g.Nodes, esc(g.Split), gridAxes(g), g.HaloRows, formatBytes(g.PeakBeforeBytes), formatBytes(g.PeakAfterBytes), FormatSeconds(g.ExtraSeconds), g.ExtraPercent)
	}
	h.p("</table>\n")
	if len(t.Late) > 0 {
		h.p("<p>Before tiling, the fit moved %d output(s) that only late readers take and that no band can compute (a pool's argmax indices, positions in the whole image) next to those readers: the node no longer produces the output, so it can be tiled, and copies of the nodes the output depends on recompute it where it is read. The copies are marked <span class=\"late\">late</span> below.</p>\n<table class=\"tiling\">\n<tr><th>output</th><th>of</th><th>recomputed by</th><th class=\"num\">extra compute</th></tr>\n", len(t.Late))
		for _, l := range t.Late {
			h.p("<tr><td><code>%s</code></td><td><code>%s</code></td><td><code>%s</code> … <code>%s</code> (%d)</td><td class=\"num\">%s (%.1f%%)</td></tr>\n",
				esc(l.Output), esc(l.Node), esc(l.FirstCopy), esc(l.LastCopy), l.Copies, FormatSeconds(l.ExtraSeconds), l.ExtraPercent)
		}
		h.p("</table>\n")
	}
}

func (h *htmlWriter) timelines() {
	r := h.r
	if len(r.Timelines) == 0 {
		return
	}
	h.p("<h2 id=\"timelines\">Memory timelines</h2>\n")
	for i := range r.Timelines {
		tl := &r.Timelines[i]
		var m *Measured
		if tl.Model != ModelLiveness && tl.Model == r.Target {
			m = r.Measured
		}
		what := "the target's model of its runtime's allocator, in the order the runtime runs the written models"
		if tl.Model == ModelLiveness {
			what = "the solver's model, in the plan's order"
		}
		h.p("<h3>%s: %s</h3>\n<figure>\n", esc(tl.Model), esc(what))
		timelineSVG(&h.b, tl, m)
		h.p("<figcaption><b>%s</b> (%s): %s. Original: %d steps, peak %s at step %d (<code>%s</code>). Rewrite: %d steps, peak %s at step %d (<code>%s</code>).",
			esc(tl.Model), esc(tl.Source), esc(tl.Description),
			len(tl.Original.DuringBytes), formatBytes(tl.Original.PeakBytes), tl.Original.PeakStep, esc(nodeAt(tl.Original)),
			len(tl.Rewrite.DuringBytes), formatBytes(tl.Rewrite.PeakBytes), tl.Rewrite.PeakStep, esc(nodeAt(tl.Rewrite)))
		if tl.BudgetBytes > 0 {
			h.p(" The budget, %s, bounds this model's peak.", formatBytes(tl.BudgetBytes))
		} else {
			h.p(" The budget bounds the liveness model, not this one.")
		}
		if m != nil {
			h.p(" Green: %s memory in use after each node (%s, level %s), less what the arena held before the first node; the dotted green line is the rewrite's measured peak.", esc(m.Source), esc(m.Runtime), esc(m.Level))
		}
		h.p("</figcaption>\n</figure>\n")
	}
}

func nodeAt(s Series) string {
	if s.PeakStep >= 0 && s.PeakStep < len(s.Nodes) {
		return s.Nodes[s.PeakStep]
	}
	return ""
}

func (h *htmlWriter) sweep() {
	s := h.r.Sweep
	h.p("<h2 id=\"sweep\">Budget sweep <code>%s</code></h2>\n<figure>\n", esc(s.Spec))
	sweepSVG(&h.b, s)
	h.p("<figcaption>Each budget's plan: its peak under the liveness model against its predicted compute overhead (%s). %s</figcaption>\n</figure>\n", srcTag(SourcePredicted), esc(s.Stopped))
	h.p("<table class=\"sweep\">\n<tr><th>budget</th><th class=\"num\">budget bytes</th><th class=\"num\">peak (liveness)</th><th class=\"num\">peak (%s)</th><th class=\"num\">overhead</th><th class=\"num\">recomputations</th><th>solver</th><th class=\"num\">time</th><th>note</th></tr>\n", esc(s.Target))
	for _, row := range s.Rows {
		note := row.Note
		if row.ReusedFrom != "" {
			note = strings.TrimPrefix(note+"; the plan of "+row.ReusedFrom+", which fits", "; ")
		}
		solver := row.Solver
		if row.Optimal {
			solver += " (optimal)"
		}
		h.p("<tr><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%d</td><td>%s</td><td class=\"num\">%.1f s</td><td>%s</td></tr>\n",
			esc(row.Budget), h.bytesSpan("budget_bytes", row.BudgetBytes), h.bytesSpan("peak_bytes", row.PeakBytes), h.bytesSpan("target_peak_bytes", row.TargetPeakBytes),
			pctSpan("overhead_percent", row.OverheadPercent), row.Recomputations, esc(solver), row.Seconds, esc(note))
	}
	h.p("</table>\n")
}

// Listed reports the nodes WriteHTML lists in the decision table, in its
// order: every node whose outputs have at least threshold bytes and every
// recomputed node, largest first (ties in graph order).
func Listed(r *Compile, threshold int64) []int {
	var idx []int
	for i, n := range r.Nodes {
		if n.Bytes >= threshold || n.Decision == "recomputed" {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(r.Nodes[b].Bytes, r.Nodes[a].Bytes) })
	return idx
}

// Threshold is the decision table's threshold for o.
func (o HTMLOptions) Threshold(r *Compile) int64 {
	if o.ThresholdBytes > 0 {
		return o.ThresholdBytes
	}
	return int64(DefaultThresholdPercent / 100 * float64(r.BeforePeakBytes))
}

func (h *htmlWriter) decisions(o HTMLOptions) {
	r := h.r
	th := o.Threshold(r)
	idx := Listed(r, th)
	h.p("<h2 id=\"decisions\">Decisions per value</h2>\n")
	h.p("<p>Every value of at least %s (%.0f%% of the no-remat peak unless set) and every recomputed value: <span data-field=\"listed\">%d</span> of %d nodes, largest first. Sizes and seconds are %s; a recomputation's extra time is the node's predicted seconds times the extra computations.</p>\n",
		h.bytesSpan("threshold_bytes", th), DefaultThresholdPercent, len(idx), len(r.Nodes), srcTag(SourcePredicted))
	h.p("<table class=\"decisions\">\n<tr><th>node</th><th>op</th><th>outputs</th><th class=\"num\">bytes</th><th>decision</th><th class=\"num\">computations</th><th class=\"num\">extra time</th><th>cost</th><th>why</th></tr>\n")
	for _, i := range idx {
		n := &r.Nodes[i]
		class, decision := "kept", "kept"
		switch {
		case n.Decision == "recomputed":
			class, decision = "recomputed", fmt.Sprintf("recomputed ×%d", n.Computations-1)
		case n.Decision == "tiled":
			class, decision = "tiled", fmt.Sprintf("tiled (region %d)", n.TiledRegion)
		case n.Decision == "late":
			class, decision = "late", "late"
		case !n.Recomputable:
			class, decision = "pinned", "kept (not recomputable)"
		}
		extra := ""
		if n.Computations > 1 {
			extra = FormatSeconds(float64(n.Computations-1) * n.ComputeSeconds)
		}
		h.p("<tr class=\"decision\" data-node=\"%s\"><td><code>%s</code></td><td>%s</td><td><code>%s</code></td><td class=\"num\">%s</td><td class=\"%s\">%s</td><td class=\"num\" data-field=\"computations\">%d</td><td class=\"num\">%s</td><td>%s %s</td><td class=\"why\">%s</td></tr>\n",
			esc(n.Node), esc(n.Node), esc(n.Op), esc(strings.Join(n.Outputs, ", ")), h.bytesSpan("bytes", n.Bytes), class, esc(decision), n.Computations, extra,
			FormatSeconds(n.ComputeSeconds), esc(n.CostSource), esc(n.Why))
	}
	h.p("</table>\n")
}

func (h *htmlWriter) attempts() {
	r := h.r
	if len(r.Attempts) > 0 {
		h.p("<h2 id=\"attempts\">Solvers</h2>\n<table class=\"attempts\">\n<tr><th>solver</th><th>status</th><th class=\"num\">peak</th><th class=\"num\">cost</th><th class=\"num\">gap</th><th class=\"num\">time</th><th>note</th></tr>\n")
		for _, a := range r.Attempts {
			gap := ""
			if a.Optimal {
				gap = "optimal"
			} else if a.GapPercent != nil {
				gap = fmt.Sprintf("%.2f%%", *a.GapPercent)
			}
			peak := ""
			if a.PeakBytes > 0 {
				peak = formatBytes(a.PeakBytes)
			}
			cost := ""
			if a.CostSeconds > 0 {
				cost = FormatSeconds(a.CostSeconds)
			}
			h.p("<tr><td>%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%.2f s</td><td>%s</td></tr>\n",
				esc(a.Solver), esc(a.Status), peak, cost, gap, a.ElapsedSeconds, esc(a.Note))
		}
		h.p("</table>\n")
	}
}

func (h *htmlWriter) about() {
	r := h.r
	h.p("<h2 id=\"about\">How this report was made</h2>\n<table class=\"about\">\n")
	if inv := r.Invocation; inv != nil {
		h.p("<tr><th>command</th><td><pre>%s</pre></td></tr>\n", esc(shellQuote(inv.CommandLine)))
		v := inv.Version
		if inv.VCSRevision != "" {
			v += " (" + inv.VCSRevision + ")"
		}
		h.p("<tr><th>remat-compile</th><td>%s, built with %s</td></tr>\n", esc(v), esc(inv.GoVersion))
	}
	h.p("<tr><th>report schema</th><td>%s</td></tr>\n", esc(r.Schema))
	h.p("<tr><th>target</th><td>%s: %s</td></tr>\n", esc(r.Target), esc(r.TargetModel))
	h.p("<tr><th>profile</th><td>%s</td></tr>\n", esc(r.Profile))
	if m := r.Measured; m != nil {
		h.p("<tr><th>measured with</th><td>%s, level %s (%s)</td></tr>\n", esc(m.Runtime), esc(m.Level), esc(m.Settings))
	}
	h.p("<tr><th>sources</th><td>%s: a memory model or the cost model computed it (the timelines, the peaks, the seconds, the sweep); %s: the runtime ran the models (verify).</td></tr>\n", srcTag(SourcePredicted), srcTag(SourceMeasured))
	h.p("</table>\n")
}

// shellQuote writes a command line as a shell would read it back.
func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,%@+", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// FormatSeconds prints seconds with an SI prefix and three significant
// digits: "12.3 ms".
func FormatSeconds(s float64) string {
	a := s
	if a < 0 {
		a = -a
	}
	switch {
	case a == 0:
		return "0 s"
	case a < 1e-6:
		return fmt.Sprintf("%.3g ns", s*1e9)
	case a < 1e-3:
		return fmt.Sprintf("%.3g µs", s*1e6)
	case a < 1:
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.3g s", s)
}

// gridAxes is the axis a region's bands split, and its grid's after it.
func gridAxes(g TileRegion) string {
	if g.TilesPerBand > 1 {
		return fmt.Sprintf("%d, %d", g.Axis, g.GridAxis)
	}
	return fmt.Sprint(g.Axis)
}
