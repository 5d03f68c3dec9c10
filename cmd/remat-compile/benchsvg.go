package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// writeBenchSVG draws, for each graph of the run, the compute overhead of
// every solver's plan against the budget, as Checkmate's Fig. 5 does: the
// budget on x as a fraction of the no-remat peak, the overhead over
// checkpoint-all on y in percent, one polyline per solver through the
// budgets at which it found a plan within the budget. Graphs are stacked
// panels of one SVG. The output depends on the rows only.
func writeBenchSVG(w io.Writer, rows []benchRow) error {
	const (
		panelW, panelH = 720, 300
		left, right    = 70, 190 // room for the y labels and the legend
		top, bottom    = 40, 50
	)
	var graphs []string
	for _, r := range rows {
		if !slices.Contains(graphs, r.graph) {
			graphs = append(graphs, r.graph)
		}
	}
	var solverNames []string
	for _, r := range rows {
		if !slices.Contains(solverNames, r.solver) {
			solverNames = append(solverNames, r.solver)
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
			if r.graph != graph || r.basePeak <= 0 {
				continue
			}
			x := float64(r.budgetBytes) / float64(r.basePeak)
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			if withinBudget(r.status) && !math.IsNaN(r.overhead) {
				ymax = math.Max(ymax, r.overhead)
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
				if r.graph != graph || r.solver != name || !withinBudget(r.status) || math.IsNaN(r.overhead) {
					continue
				}
				x, y := px(float64(r.budgetBytes)/float64(r.basePeak)), py(r.overhead)
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
