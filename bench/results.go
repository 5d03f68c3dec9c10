package bench

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SeedMean summarizes one solver at one budget over the seeds of a
// layered: seed range: how many seeds it has a plan within the budget
// for, and the mean, least and largest overhead and the mean time to the
// best plan over those.
type SeedMean struct {
	Family, Budget, Solver string
	Seeds, Plans           int
	Mean, Least, Most      float64 // percent; NaN without plans
	ToBest                 float64 // seconds; NaN without plans
}

// SeedMeans gathers the rows of seed-range families by family, budget and
// solver, in the order they first appear.
func SeedMeans(rows []Row) []SeedMean {
	var out []SeedMean
	at := map[[3]string]int{}
	for _, r := range rows {
		if r.Family == "" {
			continue
		}
		k := [3]string{r.Family, r.Budget, r.Solver}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, SeedMean{Family: r.Family, Budget: r.Budget, Solver: r.Solver,
				Least: math.Inf(1), Most: math.Inf(-1)})
		}
		m := &out[i]
		m.Seeds++
		if withinBudget(r.Status) {
			m.Plans++
			m.Mean += r.Overhead
			m.ToBest += r.ToBest
			m.Least, m.Most = min(m.Least, r.Overhead), max(m.Most, r.Overhead)
		}
	}
	for i := range out {
		m := &out[i]
		if m.Plans == 0 {
			m.Mean, m.Least, m.Most, m.ToBest = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			continue
		}
		m.Mean /= float64(m.Plans)
		m.ToBest /= float64(m.Plans)
	}
	return out
}

// Cells is the means table's row for m, the same on the console and in
// Markdown.
func (m SeedMean) Cells() []string {
	return []string{m.Family, m.Budget, m.Solver, fmt.Sprintf("%d of %d", m.Plans, m.Seeds),
		FormatNaN(m.Mean, 2), FormatNaN(m.Least, 2), FormatNaN(m.Most, 2), FormatNaN(m.ToBest, 1)}
}

// Ratios tabulates, per graph and budget, each solver's cost over
// checkmate-milp's, the approximation ratios of Checkmate Table 2 (which
// reports 1.00–1.06 for checkmate-lp); "-" where either has no plan within
// the budget. Each graph ends with Table 2's aggregate: the geometric mean
// of the ratios over the budgets where both have a plan (their count in
// parentheses). The first row is the header (graph, budget, milp and the
// other solvers); nil when no row is checkmate-milp's.
func Ratios(rows []Row) [][]string {
	type key struct{ graph, budget string }
	var keys []key
	milp := map[key]*Row{}
	var solverNames []string
	for i := range rows {
		r := &rows[i]
		k := key{r.Graph, r.Budget}
		if len(keys) == 0 || keys[len(keys)-1] != k {
			keys = append(keys, k)
		}
		if r.Solver == "checkmate-milp" {
			milp[k] = r
		} else if !slices.Contains(solverNames, r.Solver) {
			solverNames = append(solverNames, r.Solver)
		}
	}
	if len(milp) == 0 {
		return nil
	}
	table := [][]string{append([]string{"graph", "budget", "milp"}, solverNames...)}
	// logSum and count accumulate, per graph and solver, the logarithms of
	// the ratios for the geometric mean over the budgets where both have a
	// plan (Table 2's aggregate).
	type gs struct{ graph, solver string }
	logSum, count := map[gs]float64{}, map[gs]int{}
	for ki, k := range keys {
		if m := milp[k]; m != nil {
			cells := []string{k.graph, k.budget, m.Status}
			for _, name := range solverNames {
				cell := "-"
				for i := range rows {
					r := &rows[i]
					if r.Graph == k.graph && r.Budget == k.budget && r.Solver == name &&
						withinBudget(r.Status) && withinBudget(m.Status) && m.Cost > 0 {
						ratio := r.Cost / m.Cost
						cell = strconv.FormatFloat(ratio, 'f', 3, 64)
						logSum[gs{k.graph, name}] += math.Log(ratio)
						count[gs{k.graph, name}]++
					}
				}
				cells = append(cells, cell)
			}
			table = append(table, cells)
		}
		if ki+1 == len(keys) || keys[ki+1].graph != k.graph {
			cells := []string{k.graph, "geomean", ""}
			for _, name := range solverNames {
				cell := "-"
				if c := count[gs{k.graph, name}]; c > 0 {
					cell = fmt.Sprintf("%.3f (%d)", math.Exp(logSum[gs{k.graph, name}]/float64(c)), c)
				}
				cells = append(cells, cell)
			}
			table = append(table, cells)
		}
	}
	return table
}

// FormatNaN formats v with prec decimals, "-" for NaN.
func FormatNaN(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// WriteCSV writes the rows as CSV, one per graph, budget and solver.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"graph", "nodes", "edges", "budget", "budget_bytes", "no_remat_peak_bytes", "floor_bytes", "solver", "status", "overhead_percent", "peak_bytes", "cost_seconds", "time_to_best_seconds", "total_seconds", "gap_percent", "lower_bound_seconds", "gap_to_best_bound_percent", "note"})
	for _, r := range rows {
		cw.Write([]string{r.Graph, strconv.Itoa(r.Nodes), strconv.Itoa(r.Edges), r.Budget, strconv.FormatInt(r.BudgetBytes, 10),
			strconv.FormatInt(r.BasePeak, 10), strconv.FormatInt(r.FloorBytes, 10), r.Solver, r.Status,
			FormatNaN(r.Overhead, 4), strconv.FormatInt(r.Peak, 10), FormatNaN(r.Cost, 9),
			strconv.FormatFloat(r.ToBest, 'f', 3, 64), strconv.FormatFloat(r.Total, 'f', 3, 64), FormatNaN(r.Gap, 4), FormatNaN(r.Bound, 9), FormatNaN(r.BestGap, 4), r.Note})
	}
	cw.Flush()
	return cw.Error()
}

// FormatPeak formats a row's peak: "≥" marks the least peak of a solver
// that did not reach the budget.
func FormatPeak(r Row) string {
	if r.Peak <= 0 {
		return "-"
	}
	peak := strconv.FormatInt(r.Peak, 10)
	if r.Status == "over-budget" || r.Status == "infeasible" {
		peak = "≥" + peak
	}
	return peak
}

// WriteMarkdown writes the rows as a Markdown table (issue 5's
// benchmark format: one row per graph, budget and solver).
func WriteMarkdown(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| graph | (n, m) | budget (bytes) | solver | status | overhead % | peak (bytes) | time to best s | gap % | gap to best bound % |")
	fmt.Fprintln(bw, "|---|---|---|---|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(bw, "| %s | (%d, %d) | %s = %d | %s | %s | %s | %s | %.2f | %s | %s |\n",
			r.Graph, r.Nodes, r.Edges, r.Budget, r.BudgetBytes, r.Solver, r.Status,
			FormatNaN(r.Overhead, 2), FormatPeak(r), r.ToBest, FormatNaN(r.Gap, 2), FormatNaN(r.BestGap, 2))
	}
	if ms := SeedMeans(rows); len(ms) > 0 {
		fmt.Fprint(bw, "\nMeans over the seeds (over the seeds with a plan within the budget):\n\n")
		fmt.Fprintln(bw, "| graphs | budget | solver | plans | mean overhead % | least % | largest % | mean time to best s |")
		fmt.Fprintln(bw, "|---|---|---|---:|---:|---:|---:|---:|")
		for _, m := range ms {
			fmt.Fprintln(bw, "| "+strings.Join(m.Cells(), " | ")+" |")
		}
	}
	return bw.Flush()
}

// WriteSVG draws, for each graph of the run, the compute overhead of
// every solver's plan against the budget, as Checkmate's Fig. 5 does: the
// budget on x as a fraction of the no-remat peak, the overhead over
// checkpoint-all on y in percent, one polyline per solver through the
// budgets at which it found a plan within the budget. Graphs are stacked
// panels of one SVG. The output depends on the rows only.
func WriteSVG(w io.Writer, rows []Row) error {
	const (
		panelW, panelH = 720, 300
		left, right    = 70, 190 // room for the y labels and the legend
		top, bottom    = 40, 50
	)
	var graphs []string
	for _, r := range rows {
		if !slices.Contains(graphs, r.Graph) {
			graphs = append(graphs, r.Graph)
		}
	}
	var solverNames []string
	for _, r := range rows {
		if !slices.Contains(solverNames, r.Solver) {
			solverNames = append(solverNames, r.Solver)
		}
	}
	height := len(graphs) * panelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", panelW, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", panelW, height)
	for gi, graph := range graphs {
		y0 := gi * panelH
		plotW, plotH := float64(panelW-left-right), float64(panelH-top-bottom)
		// Axis ranges: x over the budgets run, y from 0 to the largest
		// overhead (at least 1%).
		xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 1.0
		for _, r := range rows {
			if r.Graph != graph || r.BasePeak <= 0 {
				continue
			}
			x := float64(r.BudgetBytes) / float64(r.BasePeak)
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			if withinBudget(r.Status) && !math.IsNaN(r.Overhead) {
				ymax = math.Max(ymax, r.Overhead)
			}
		}
		if math.IsInf(xmin, 0) {
			continue
		}
		if xmax-xmin < 1e-9 {
			xmin, xmax = xmin-0.05, xmax+0.05
		}
		ymax = niceCeil(ymax * 1.05)
		px := func(x float64) float64 { return float64(left) + (x-xmin)/(xmax-xmin)*plotW }
		py := func(y float64) float64 { return float64(y0+top) + plotH - y/ymax*plotH }

		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", left, y0+22, html.EscapeString(graph))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", left, y0+top, plotW, plotH)
		for i := 0; i <= 4; i++ {
			yv := ymax * float64(i) / 4
			fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, float64(left)+plotW, py(yv), py(yv))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s%%</text>`+"\n", left-6, py(yv)+4, trimNum(yv))
			xv := xmin + (xmax-xmin)*float64(i)/4
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s%%</text>`+"\n", px(xv), y0+top+int(plotH)+16, trimNum(100*xv))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">budget (%% of the no-remat peak)</text>`+"\n", float64(left)+plotW/2, y0+panelH-12)
		fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">compute overhead</text>`+"\n", float64(y0+top)+plotH/2)

		for si, name := range solverNames {
			color := svgPalette[si%len(svgPalette)]
			var pts []string
			for _, r := range rows {
				if r.Graph != graph || r.Solver != name || !withinBudget(r.Status) || math.IsNaN(r.Overhead) {
					continue
				}
				x, y := px(float64(r.BudgetBytes)/float64(r.BasePeak)), py(r.Overhead)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x, y, color)
			}
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), color)
			}
			ly := y0 + top + 14*si + 8
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", panelW-right+12, panelW-right+30, ly-4, ly-4, color)
			label := name
			if len(pts) == 0 {
				label += " (no plan)"
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", panelW-right+36, ly, html.EscapeString(label))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgPalette holds distinguishable line colours.
var svgPalette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000"}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// trimNum formats an axis value with at most one decimal.
func trimNum(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}
