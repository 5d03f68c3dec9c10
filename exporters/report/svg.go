package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// The SVG figures of the HTML report: a small plotting kit (chart) and
// the figures drawn with it. Every coordinate is printed with one decimal,
// and nothing depends on map order, so the same report gives the same
// bytes.

// chart is one plot area with linear axes.
type chart struct {
	b                        *strings.Builder
	w, h                     int // the SVG's size
	left, right, top, bottom int // margins around the plot area
	xmin, xmax, ymin, ymax   float64
}

func (c *chart) plotW() float64 { return float64(c.w - c.left - c.right) }
func (c *chart) plotH() float64 { return float64(c.h - c.top - c.bottom) }

// px and py map data coordinates to the SVG's.
func (c *chart) px(x float64) float64 {
	return float64(c.left) + (x-c.xmin)/(c.xmax-c.xmin)*c.plotW()
}

func (c *chart) py(y float64) float64 {
	return float64(c.top) + c.plotH() - (y-c.ymin)/(c.ymax-c.ymin)*c.plotH()
}

// open starts the SVG element with its accessible title.
func (c *chart) open(class, title string, attrs string) {
	fmt.Fprintf(c.b, `<svg xmlns="http://www.w3.org/2000/svg" class="%s" width="%d" height="%d" viewBox="0 0 %d %d" role="img"%s><title>%s</title>`+"\n",
		class, c.w, c.h, c.w, c.h, attrs, esc(title))
	fmt.Fprintf(c.b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", c.w, c.h)
}

func (c *chart) close() { c.b.WriteString("</svg>\n") }

// frame draws the plot area's border, grid lines and tick labels: n+1
// ticks on each axis, labelled by xf and yf, and the axis titles.
func (c *chart) frame(n int, xf, yf func(float64) string, xtitle, ytitle string) {
	fmt.Fprintf(c.b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", c.left, c.top, c.plotW(), c.plotH())
	for i := 0; i <= n; i++ {
		yv := c.ymin + (c.ymax-c.ymin)*float64(i)/float64(n)
		fmt.Fprintf(c.b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e3e3e3"/>`+"\n", c.left, float64(c.left)+c.plotW(), c.py(yv), c.py(yv))
		fmt.Fprintf(c.b, `<text x="%d" y="%.1f" text-anchor="end" class="tick">%s</text>`+"\n", c.left-6, c.py(yv)+4, esc(yf(yv)))
		xv := c.xmin + (c.xmax-c.xmin)*float64(i)/float64(n)
		fmt.Fprintf(c.b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="tick">%s</text>`+"\n", c.px(xv), float64(c.top)+c.plotH()+16, esc(xf(xv)))
	}
	fmt.Fprintf(c.b, `<text x="%.1f" y="%d" text-anchor="middle" class="axis">%s</text>`+"\n", float64(c.left)+c.plotW()/2, c.h-8, esc(xtitle))
	fmt.Fprintf(c.b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle" class="axis">%s</text>`+"\n", float64(c.top)+c.plotH()/2, esc(ytitle))
}

// polyline draws points (already in SVG coordinates).
func (c *chart) polyline(pts []string, color, dash, class string, width float64) {
	if len(pts) < 2 {
		return
	}
	d := ""
	if dash != "" {
		d = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(c.b, `<polyline class="%s" points="%s" fill="none" stroke="%s" stroke-width="%.1f"%s/>`+"\n", class, strings.Join(pts, " "), color, width, d)
}

// hline draws a horizontal line across the plot at y with a label above
// its right end, or with below, under its left end.
func (c *chart) hline(y float64, color, dash, label, class string, bytes int64, below bool) {
	fmt.Fprintf(c.b, `<line class="%s" data-bytes="%d" x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="%s"/>`+"\n",
		class, bytes, c.left, float64(c.left)+c.plotW(), c.py(y), c.py(y), color, dash)
	// Above the line at its right end, or below it at its left end (two
	// lines' labels then stay apart).
	x, ly, anchor := float64(c.left)+c.plotW()-4, c.py(y)-4, "end"
	if below {
		x, ly, anchor = float64(c.left)+4, c.py(y)+13, "start"
	}
	fmt.Fprintf(c.b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="%s" class="label">%s</text>`+"\n", x, ly, color, anchor, esc(label))
}

// legend draws one legend entry per item at the top right, inside the
// SVG's right margin.
func (c *chart) legend(items []legendItem) {
	x := c.w - c.right + 12
	for i, it := range items {
		y := c.top + 6 + 16*i
		d := ""
		if it.dash != "" {
			d = ` stroke-dasharray="` + it.dash + `"`
		}
		if it.dot {
			fmt.Fprintf(c.b, `<circle cx="%d" cy="%d" r="3" fill="%s"/>`+"\n", x+10, y, it.color)
		} else {
			fmt.Fprintf(c.b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", x, x+20, y, y, it.color, d)
		}
		fmt.Fprintf(c.b, `<text x="%d" y="%d" class="legend">%s</text>`+"\n", x+26, y+4, esc(it.label))
	}
}

// legendItem is a line (dash "" for a solid one) or, with dot, a dot.
type legendItem struct {
	label, color, dash string
	dot                bool
}

// pt formats one point.
func pt(x, y float64) string { return fmt.Sprintf("%.1f,%.1f", x, y) }

// esc escapes text for HTML and SVG.
func esc(s string) string { return html.EscapeString(s) }

// niceBytes rounds v (bytes) up to 1, 2 or 5 times a power of ten of the
// binary unit it falls in, so that axis ticks read well: 1.3 MiB → 2 MiB.
func niceBytes(v float64) float64 {
	if v <= 0 {
		return 1
	}
	unit := 1.0
	for v/unit >= 1024 {
		unit *= 1024
	}
	return niceCeil(v/unit) * unit
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// trimNum prints a tick value without trailing zeros.
func trimNum(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Colours of the figures (colour-blind safe: Okabe and Ito's palette).
const (
	colorOriginal     = "#0072b2" // blue
	colorRewrite      = "#d55e00" // vermillion
	colorBudget       = "#cc0000"
	colorMeasured     = "#009e73" // green
	colorMeasuredOrig = "#cc79a7" // reddish purple
	colorRecomp       = "#d55e00"
	colorFirst        = "#555555"
)

// timelineSVG draws one Timeline: the original's and the rewrite's memory
// per step as step lines on one axis of steps, their peaks marked, the
// budget when it bounds the model, and, for the target's timeline, the
// measured memory per node (m, nil when none).
func timelineSVG(b *strings.Builder, tl *Timeline, m *Measured) {
	c := &chart{b: b, w: 1040, h: 320, left: 78, right: 250, top: 24, bottom: 42}
	steps := max(len(tl.Original.DuringBytes), len(tl.Rewrite.DuringBytes), 1)
	top := float64(max(tl.Original.PeakBytes, tl.Rewrite.PeakBytes, tl.BudgetBytes))
	if m != nil {
		top = max(top, float64(m.Original.PeakBytes), float64(m.Rewrite.PeakBytes))
	}
	c.xmin, c.xmax, c.ymin, c.ymax = 0, float64(steps), 0, niceBytes(top*1.04)
	title := fmt.Sprintf("Memory per step under the %s model (%s)", tl.Model, tl.Source)
	c.open("timeline", title, fmt.Sprintf(` data-model="%s"`, esc(tl.Model)))
	c.frame(4, func(x float64) string { return trimNum(math.Round(x)) }, func(y float64) string { return formatBytes(int64(y)) },
		"step (one node runs per step)", "memory while the step runs")
	items := []legendItem{
		{label: "original (" + tl.Source + ")", color: colorOriginal},
		{label: "rewrite (" + tl.Source + ")", color: colorRewrite},
	}
	var labels [][2]float64 // the peak labels drawn, to keep the next clear of them
	for _, s := range []struct {
		name  string
		ser   *Series
		color string
	}{{"original", &tl.Original, colorOriginal}, {"rewrite", &tl.Rewrite, colorRewrite}} {
		var pts []string
		for k, v := range s.ser.DuringBytes {
			y := c.py(float64(v))
			pts = append(pts, pt(c.px(float64(k)), y), pt(c.px(float64(k+1)), y))
		}
		c.polyline(pts, s.color, "", "series "+s.name, 1.5)
		if s.ser.PeakStep >= 0 {
			x, y := c.px(float64(s.ser.PeakStep)+0.5), c.py(float64(s.ser.PeakBytes))
			ly := y - 8
			for _, l := range labels {
				if math.Abs(l[0]-x) < 170 && math.Abs(l[1]-ly) < 14 {
					ly = l[1] - 15
				}
			}
			labels = append(labels, [2]float64{x, ly})
			node := ""
			if s.ser.PeakStep < len(s.ser.Nodes) {
				node = s.ser.Nodes[s.ser.PeakStep]
			}
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", x, y, s.color)
			fmt.Fprintf(b, `<text class="peak" data-series="%s" data-bytes="%d" data-step="%d" x="%.1f" y="%.1f" fill="%s" text-anchor="%s"><title>%s</title>%s peak %s</text>`+"\n",
				s.name, s.ser.PeakBytes, s.ser.PeakStep, x, ly, s.color, anchorFor(x, c), esc(fmt.Sprintf("step %d: %s", s.ser.PeakStep, node)), s.name, formatBytes(s.ser.PeakBytes))
		}
	}
	if tl.BudgetBytes > 0 {
		c.hline(float64(tl.BudgetBytes), colorBudget, "6 4", "budget "+formatBytes(tl.BudgetBytes), "budget", tl.BudgetBytes, false)
		items = append(items, legendItem{label: "budget (bounds this model)", color: colorBudget, dash: "6 4"})
	}
	if m != nil {
		// The measured memory after each node, as dots over the step of
		// the timeline that runs the same node.
		for _, s := range []struct {
			name  string
			pred  *Series
			meas  *MeasuredSeries
			color string
		}{{"original", &tl.Original, &m.Original, colorMeasuredOrig}, {"rewrite", &tl.Rewrite, &m.Rewrite, colorMeasured}} {
			at := make(map[string]int64, len(s.meas.Nodes))
			for k, n := range s.meas.Nodes {
				at[n] = s.meas.InUseBytes[k]
			}
			fmt.Fprintf(b, `<g class="measured %s" fill="%s">`+"\n", s.name, s.color)
			for k, n := range s.pred.Nodes {
				if v, ok := at[n]; ok {
					fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="1.8"/>`, c.px(float64(k)+0.5), c.py(float64(v)))
				}
			}
			b.WriteString("\n</g>\n")
			items = append(items, legendItem{label: s.name + " (" + m.Source + ", after each node)", color: s.color, dot: true})
		}
		c.hline(float64(m.Rewrite.PeakBytes), colorMeasured, "1 3", "measured rewrite peak "+formatBytes(m.Rewrite.PeakBytes), "measured-peak", m.Rewrite.PeakBytes, true)
	}
	c.legend(items)
	c.close()
}

// anchorFor keeps a label inside the plot: right-aligned near its right
// end.
func anchorFor(x float64, c *chart) string {
	if x > float64(c.left)+0.75*c.plotW() {
		return "end"
	}
	return "start"
}

// MaxRasterCells bounds the R matrix figure's side in cells: a plan of
// more stages is drawn with each cell covering a square of stages and
// nodes (dark when the plan computes any node of it in any of its
// stages).
const MaxRasterCells = 600

// rmatrixSVG draws the plan's R matrix (Checkmate Fig. 4): a row per
// stage, a column per node, a cell dark where the stage computes the
// node, first computations (the diagonal) grey and recomputations in
// colour.
func rmatrixSVG(b *strings.Builder, stages [][]int32, n int) {
	bin := max(1, (n+MaxRasterCells-1)/MaxRasterCells) // stages or nodes per cell
	cells := max(1, (n+bin-1)/bin)
	side := min(600, 16*float64(cells))
	cell := side / float64(cells)
	// A recomputation is drawn at least minMark pixels wide and high, so
	// that one among hundreds of nodes stays visible.
	const minMark = 3.0
	c := &chart{b: b, w: int(side) + 110, h: int(side) + 70, left: 70, right: 40, top: 20, bottom: 50}
	title := fmt.Sprintf("Plan R matrix: %d stages × %d nodes", len(stages), n)
	if bin > 1 {
		title += fmt.Sprintf(" (each cell %d×%d)", bin, bin)
	}
	c.open("rmatrix", title, fmt.Sprintf(` data-stages="%d" data-nodes="%d" data-bin="%d"`, len(stages), n, bin))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="#fafafa" stroke="#444"/>`+"\n", c.left, c.top, side, side)
	// row[j] for the current row of cells: 0 nothing, 1 a first
	// computation, 2 a recomputation.
	row := make([]uint8, cells)
	flush := func(r int) {
		for j := 0; j < cells; {
			if row[j] == 0 {
				j++
				continue
			}
			k := j
			for k < cells && row[k] == row[j] {
				k++
			}
			x, y, w, h := float64(c.left)+float64(j)*cell, float64(c.top)+float64(r)*cell, float64(k-j)*cell, cell
			color := colorFirst
			if row[j] == 2 {
				color = colorRecomp
				if w < minMark {
					x, w = x-(minMark-w)/2, minMark
				}
				if h < minMark {
					y, h = y-(minMark-h)/2, minMark
				}
			}
			fmt.Fprintf(b, `<rect class="r%d" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`+"\n", row[j], x, y, w, h, color)
			j = k
		}
		clear(row)
	}
	recomputed := 0
	for t, nodes := range stages {
		for _, i := range nodes {
			kind := uint8(1)
			if int(i) != t {
				kind = 2
				recomputed++
			}
			row[int(i)/bin] = max(row[int(i)/bin], kind)
		}
		if (t+1)%bin == 0 || t == len(stages)-1 {
			flush(t / bin)
		}
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" class="axis">node (graph order) →</text>`+"\n", float64(c.left)+side/2, c.h-28)
	fmt.Fprintf(b, `<text transform="translate(20 %.1f) rotate(-90)" text-anchor="middle" class="axis">stage →</text>`+"\n", float64(c.top)+side/2)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" class="legend">first computation</text>`+"\n", c.left, c.h-18, colorFirst, c.left+14, c.h-9)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" class="legend" data-recomputations="%d">recomputation (%d)</text>`+"\n", c.left+150, c.h-18, colorRecomp, c.left+164, c.h-9, recomputed, recomputed)
	c.close()
}

// sweepSVG draws a sweep's Pareto curve: each row's predicted compute
// overhead against its plan's peak (liveness model) as a percentage of
// the no-remat peak, each point labelled with its budget.
func sweepSVG(b *strings.Builder, s *Sweep) {
	c := &chart{b: b, w: 820, h: 340, left: 70, right: 170, top: 20, bottom: 46}
	xmin, xmax, ymax := 100.0, 0.0, 1.0
	for _, r := range s.Rows {
		x := PercentOf(r.PeakBytes, s.NoRematPeakBytes)
		xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, r.OverheadPercent)
	}
	xmin = math.Max(0, math.Floor(xmin/10)*10)
	xmax = math.Max(xmin+10, math.Ceil(xmax/10)*10)
	c.xmin, c.xmax, c.ymin, c.ymax = xmin, xmax, 0, niceCeil(ymax*1.05)
	c.open("sweep", "Budget sweep: compute overhead against peak memory (predicted)", fmt.Sprintf(` data-rows="%d"`, len(s.Rows)))
	c.frame(4, func(x float64) string { return trimNum(x) + "%" }, func(y float64) string { return trimNum(y) + "%" },
		"plan peak, liveness model (% of the no-remat peak "+formatBytes(s.NoRematPeakBytes)+")", "compute overhead (predicted)")
	var pts []string
	for _, r := range s.Rows {
		x, y := c.px(PercentOf(r.PeakBytes, s.NoRematPeakBytes)), c.py(r.OverheadPercent)
		pts = append(pts, pt(x, y))
	}
	c.polyline(pts, colorRewrite, "", "pareto", 1.5)
	// One circle per row, reused plans (hollow) under solved ones
	// (filled); one label per run of rows with the same plan: "95%–80%".
	for _, solved := range []bool{false, true} {
		for _, r := range s.Rows {
			if (r.ReusedFrom == "") != solved {
				continue
			}
			x, y := c.px(PercentOf(r.PeakBytes, s.NoRematPeakBytes)), c.py(r.OverheadPercent)
			fill := colorRewrite
			if !solved {
				fill = "#fff"
			}
			fmt.Fprintf(b, `<circle class="row" data-budget="%s" data-peak-bytes="%d" data-overhead="%s" cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="%s"><title>%s</title></circle>`+"\n",
				esc(r.Budget), r.PeakBytes, strconv.FormatFloat(r.OverheadPercent, 'f', 2, 64), x, y, fill, colorRewrite,
				esc(fmt.Sprintf("budget %s: peak %s, overhead %.2f%%", r.Budget, formatBytes(r.PeakBytes), r.OverheadPercent)))
		}
	}
	for i := 0; i < len(s.Rows); {
		j := i
		for j+1 < len(s.Rows) && s.Rows[j+1].PeakBytes == s.Rows[i].PeakBytes && s.Rows[j+1].OverheadPercent == s.Rows[i].OverheadPercent {
			j++
		}
		label := s.Rows[i].Budget
		if j > i {
			label += "–" + s.Rows[j].Budget
		}
		r := s.Rows[i]
		x, y := c.px(PercentOf(r.PeakBytes, s.NoRematPeakBytes)), c.py(r.OverheadPercent)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="label" text-anchor="%s">%s</text>`+"\n", x, y-9, anchorFor(x, c), esc(label))
		i = j + 1
	}
	c.legend([]legendItem{{label: "plan at each budget", color: colorRewrite}})
	fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="4" fill="#fff" stroke="%s"/><text x="%d" y="%d" class="legend">reused looser plan</text>`+"\n",
		c.w-c.right+22, c.top+26, colorRewrite, c.w-c.right+38, c.top+30)
	c.close()
}

// WriteSweepSVG writes a sweep's Pareto curve as a standalone SVG file
// (compile -sweep-svg).
func WriteSweepSVG(w io.Writer, s *Sweep) error {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	var fig strings.Builder
	sweepSVG(&fig, s)
	// A standalone file needs its own styles: the report's CSS classes
	// become presentation attributes.
	b.WriteString(strings.Replace(fig.String(), `role="img"`, `role="img" font-family="sans-serif" font-size="12"`, 1))
	_, err := io.WriteString(w, b.String())
	return err
}
