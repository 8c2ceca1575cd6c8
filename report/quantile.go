package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
)

// QuantileReport holds fleet and per-replica quantiles of one histogram.
// Its JSON form is a public contract (see docs/ids.md): metric, window,
// fleet, replicas, warnings.
type QuantileReport struct {
	// Metric is what was asked for; Metrics the metric names used.
	Metric  string   `json:"metric"`
	Metrics []string `json:"metrics"`
	// Unit is the unit of the values: "s", "tokens" or "" when unknown.
	Unit string `json:"unit"`
	// Window is the window asked for, or the span actually covered when
	// none was given.
	Window WindowSpan `json:"window"`
	// Fleet holds the quantiles of the histogram merged across replicas
	// (buckets summed first, quantile taken after).
	Fleet []Quantile `json:"fleet"`
	// FleetMean is the fleet's sum/count over the window.
	FleetMean rules.Number `json:"fleet_mean"`
	// Replicas maps a replica name to its own quantiles.
	Replicas map[string][]Quantile `json:"replicas"`
	// Lifetime is true when some replica had a single scrape in the
	// window: its values are since process start, not windowed.
	Lifetime bool `json:"lifetime"`
	// Dropped lists bucket bounds left out of the fleet merge because not
	// every replica has them (mixed bucket layouts).
	Dropped []float64 `json:"dropped_bounds,omitempty"`
	// Warnings: low counts, resets, replicas left out, non-finite values.
	Warnings []string `json:"warnings"`
}

// String prints the fleet quantiles and the per-replica table, every
// value with its bucket bounds and the number of observations behind it.
func (r *QuantileReport) String() string {
	var b strings.Builder
	var span string
	switch {
	case r.Lifetime && r.Window.Start.IsZero() && r.Window.End.IsZero():
		span = "the replicas' lifetime (single scrape at an unknown time; since process start, not windowed)"
	case r.Lifetime && r.Window.Start.IsZero():
		span = "the replicas' lifetime (single scrape at " + r.Window.End.UTC().Format(time.RFC3339) + "; since process start, not windowed)"
	case r.Lifetime:
		span = r.Window.Start.UTC().Format(time.RFC3339) + "/" + r.Window.End.UTC().Format(time.RFC3339) + " (some replicas: single scrape, lifetime values)"
	default:
		span = r.Window.Start.UTC().Format(time.RFC3339) + "/" + r.Window.End.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "%s over %s\n", r.Metric, span)
	if len(r.Metrics) > 0 && (len(r.Metrics) > 1 || r.Metrics[0] != r.Metric) {
		fmt.Fprintf(&b, "metric: %s\n", strings.Join(r.Metrics, ", "))
	}
	names := slices.Sorted(maps.Keys(r.Replicas))
	rows := [][]string{{"replica"}}
	for _, q := range r.Fleet {
		rows[0] = append(rows[0], "p"+textfmt.Quantile(q.Q)+" [bucket]")
	}
	rows[0] = append(rows[0], "n")
	marked := false
	row := func(name string, qs []Quantile) {
		cells := []string{name}
		var n rules.Number
		for _, q := range qs {
			cell := "n/a"
			switch {
			case math.IsNaN(float64(q.Value)):
			case r.Unit == "tokens":
				// "8112 tokens [5000–10000]": the unit once, to fit 120 columns.
				cell = fmtCompareCell(q, r.Unit)
			default:
				cell = fmtQuantileValue(q, r.Unit)
			}
			if !q.Stable && float64(q.Count) > 0 {
				cell += " ~"
				marked = true
			}
			cells = append(cells, cell)
			n = q.Count
		}
		cells = append(cells, strings.TrimPrefix(fmtCount(n), "n="))
		rows = append(rows, cells)
	}
	row("fleet (merged)", r.Fleet)
	for _, n := range names {
		row(n, r.Replicas[n])
	}
	widths := make([]int, len(rows[0]))
	for _, cells := range rows {
		for i, c := range cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, cells := range rows {
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := widths[i] - utf8.RuneCountInString(c)
			if i == len(cells)-1 {
				b.WriteString(strings.Repeat(" ", pad) + c)
			} else {
				b.WriteString(c + strings.Repeat(" ", pad))
			}
		}
		b.WriteString("\n")
	}
	if len(r.Warnings) > 0 {
		b.WriteString("warnings:\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	if marked {
		b.WriteString("~ marks an estimate from too few observations for its quantile (see warnings).\n")
	}
	return b.String()
}
