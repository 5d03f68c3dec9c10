package peerbench

import (
	"bufio"
	"fmt"
	"io"
	"math"
)

// WriteMarkdown writes the rows as a Markdown table, one row per graph,
// budget and solver, with MOCCASIN's and Checkmate's published results
// beside them and whether the TDI is at or below MOCCASIN's (Row.Meets).
func WriteMarkdown(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| graph | (n, m) | M (bytes) | solver | status | TDI % | peak (bytes) | time to best s | time to MOCCASIN's TDI s | bound TDI % | gap pp | MOCCASIN TDI % / peak / s | Checkmate MILP TDI % / peak / s | at or below MOCCASIN |")
	fmt.Fprintln(bw, "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
	for _, r := range rows {
		meets := "no"
		if r.Meets() {
			meets = "yes"
		}
		note := ""
		if r.Note != "" {
			note = " (" + r.Note + ")"
		}
		fmt.Fprintf(bw, "| %s | (%d, %d) | %d = %g × %d | %s | %s%s | %s | %d | %.1f | %s | %s | %s | %s | %s | %s |\n",
			r.Peer.Label, r.Nodes, r.Edges, r.Budget, r.Multiplier, r.NoRematPeak, r.Solver, r.Status, note,
			fmtNaN(r.TDI, 2), r.Peak, r.TimeToBest, fmtNaN(r.TimeToPublished, 1), fmtNaN(tdi(r.BestBound, r.NoRematCost), 2), fmtNaN(r.Gap, 2),
			fmtResult(r.Published.Moccasin), fmtResult(r.Published.Checkmate), meets)
	}
	return bw.Flush()
}

func fmtNaN(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

func fmtResult(r Result) string {
	if !r.Found {
		return "none"
	}
	return fmt.Sprintf("%.1f / %s / %.1f", r.TDI, r.Peak, r.Seconds)
}
