package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/rules"
)

// CompareRow is one row of the before/after table of a report (the
// article's section 10 table): the p50 and p95 of one histogram signal over
// the baseline and the incident window, each with its bucket bounds and
// count, the relative changes, and whether the signal moved.
type CompareRow struct {
	// Group names the report group the row belongs to ("model_name=llama"),
	// empty for a report that is not split.
	Group string `json:"group,omitempty"`
	// Signal is the signal id, e.g. "prefill_time".
	Signal string `json:"signal"`
	// Unit is the unit of the values: "s" or "tokens".
	Unit string `json:"unit"`
	// Metric is the metric name the values came from.
	Metric string `json:"metric,omitempty"`
	// BaselineWindow and IncidentWindow are the windows measured.
	BaselineWindow WindowInfo `json:"baseline_window"`
	IncidentWindow WindowInfo `json:"incident_window"`
	// The quantiles, each with bounds and count; NaN values (null in
	// JSON) when a window is missing or holds no observation.
	BaselineP50 Quantile `json:"baseline_p50"`
	IncidentP50 Quantile `json:"incident_p50"`
	BaselineP95 Quantile `json:"baseline_p95"`
	IncidentP95 Quantile `json:"incident_p95"`
	// ChangeP50 and ChangeP95 are the relative changes,
	// incident/baseline - 1 (1.54 = +154%); NaN when either is unknown.
	ChangeP50 rules.Number `json:"change_p50"`
	ChangeP95 rules.Number `json:"change_p95"`
	// Moved is true when p50 or p95 left the steady band of the decision
	// map: incident/baseline outside [1/Steady, Steady] of the report's
	// thresholds (Report.Settings), with at least MinSamples observations
	// in each window.
	Moved bool `json:"moved"`
	// LowCount is true when a window holds fewer than MinSamples
	// observations, so that no change is judged.
	LowCount bool `json:"low_count"`
	// Missing says why the signal cannot be evaluated; the quantiles are
	// then unknown.
	Missing string `json:"missing,omitempty"`
	// th are the thresholds Moved and LowCount were judged with.
	th rules.Thresholds
}

// CompareTable returns the before/after table of r: one row per fleet
// histogram signal (latencies and request sizes), in catalog order, with
// the p50 and p95 of both windows. Signals that cannot be evaluated get a
// row with Missing set. For a report split into groups, the rows of every
// group follow one another, each with its Group.
//
// Moved uses the thresholds the report was judged with (Steady and
// MinSamples; rules.DefaultThresholds for a report that does not record
// them), the same band in which the decision map reads a signal as
// unchanged.
func CompareTable(r *Report) []CompareRow {
	if r == nil {
		return nil
	}
	if len(r.Groups) > 0 {
		var rows []CompareRow
		for _, g := range r.Groups {
			for _, row := range CompareTable(g) {
				row.Group = textfmt.Selector(g.Group)
				rows = append(rows, row)
			}
		}
		return rows
	}
	th := r.thresholds()
	var rows []CompareRow
	for _, s := range r.Signals.Fleet {
		if s.Kind != "histogram" {
			continue
		}
		row := CompareRow{th: th, Signal: s.ID, Unit: s.Unit, Metric: s.Metric,
			BaselineWindow: r.Windows.Baseline, IncidentWindow: r.Windows.Incident, Missing: s.Missing}
		if s.Baseline != nil {
			row.BaselineWindow = s.Baseline.Window
		}
		if s.Incident != nil {
			row.IncidentWindow = s.Incident.Window
		}
		row.BaselineP50 = quantileOrNaN(s.Baseline, 0.5)
		row.IncidentP50 = quantileOrNaN(s.Incident, 0.5)
		row.BaselineP95 = quantileOrNaN(s.Baseline, 0.95)
		row.IncidentP95 = quantileOrNaN(s.Incident, 0.95)
		row.ChangeP50 = relChange(row.BaselineP50.Value, row.IncidentP50.Value)
		row.ChangeP95 = relChange(row.BaselineP95.Value, row.IncidentP95.Value)
		enough := func(q Quantile) bool { return float64(q.Count) >= th.MinSamples }
		row.LowCount = s.Missing == "" && (!enough(row.BaselineP95) || !enough(row.IncidentP95))
		if !row.LowCount {
			row.Moved = outsideSteady(row.ChangeP50, th.Steady) || outsideSteady(row.ChangeP95, th.Steady)
		}
		rows = append(rows, row)
	}
	return rows
}

// quantileOrNaN returns quantile q of m, or an unknown quantile.
func quantileOrNaN(m *Measure, q float64) Quantile {
	if x, ok := quantileOf(m, q); ok {
		return x
	}
	n := rules.Number(math.NaN())
	return Quantile{Q: q, Value: n, Lower: n, Upper: n, Count: n}
}

// relChange is incident/baseline - 1 as rules computes it (RelChange).
func relChange(base, inc rules.Number) rules.Number {
	return rules.Number(rules.RelChange(float64(base), float64(inc)))
}

// outsideSteady reports whether a relative change leaves the decision
// map's steady band [1/steady, steady] (rules.OutsideSteady).
func outsideSteady(change rules.Number, steady float64) bool {
	return rules.OutsideSteady(float64(change), steady)
}

// fmtCompareCell formats a quantile for the table: "2.2s [2s–2.5s]",
// "6100 tokens [5000–10000]".
func fmtCompareCell(q Quantile, unit string) string {
	v := fmtQuantilePoint(q, unit)
	if edgeBucket(q) || math.IsNaN(float64(q.Lower)) && math.IsNaN(float64(q.Upper)) {
		return v
	}
	lo, hi := fmtValue(float64(q.Lower), unit), fmtValue(float64(q.Upper), unit)
	if unit == "tokens" {
		lo, hi = strings.TrimSuffix(lo, " tokens"), strings.TrimSuffix(hi, " tokens")
	}
	return fmt.Sprintf("%s [%s–%s]", v, lo, hi)
}

// compareCaption says what the table shows and over which windows.
func compareCaption(rows []CompareRow) string {
	th := rules.DefaultThresholds
	if len(rows) > 0 && rows[0].th.Steady > 0 {
		th = rows[0].th
	}
	base, inc := "none", "none"
	for _, r := range rows {
		if r.Missing == "" {
			base, inc = r.BaselineWindow.Span(), r.IncidentWindow.Span()
			break
		}
	}
	return fmt.Sprintf("baseline %s vs incident %s; quantiles of the histograms merged across replicas, "+
		"[lower–upper] is the bucket holding the quantile, n the observations in each window; "+
		"change is incident/baseline - 1; moved: p50 or p95 outside %.2gx–%.2gx of the baseline, "+
		"with >= %g observations in each window", base, inc, 1/th.Steady, th.Steady, th.MinSamples)
}

// compareRTable lays the rows out as a table (with a group column when
// asked) and lists the signals that cannot be evaluated.
func compareRTable(rows []CompareRow, withGroup bool) (*Table, []Item) {
	t := &Table{Head: []string{"signal", "baseline p50", "incident p50", "baseline p95", "incident p95",
		"change p50", "change p95", "n baseline", "n incident", "moved"}}
	t.Right = []bool{false, true, true, true, true, true, true, true, true, false}
	if withGroup {
		t.Head = append([]string{"group"}, t.Head...)
		t.Right = append([]bool{false}, t.Right...)
	}
	var missing []Item
	for _, r := range rows {
		if r.Missing != "" {
			text := r.Signal + ": " + r.Missing
			if withGroup {
				text = r.Group + " " + text
			}
			missing = append(missing, Item{Text: text})
			continue
		}
		moved := ""
		switch {
		case r.LowCount && r.BaselineWindow.From == "none":
			moved = "no baseline"
		case r.LowCount:
			moved = "low n"
		case r.Moved:
			moved = "MOVED up"
			if float64(r.ChangeP95) < 0 || (math.IsNaN(float64(r.ChangeP95)) && float64(r.ChangeP50) < 0) {
				moved = "MOVED down"
			}
		}
		row := []string{r.Signal,
			fmtCompareCell(r.BaselineP50, r.Unit), fmtCompareCell(r.IncidentP50, r.Unit),
			fmtCompareCell(r.BaselineP95, r.Unit), fmtCompareCell(r.IncidentP95, r.Unit),
			fmtChange(r.ChangeP50), fmtChange(r.ChangeP95),
			strings.TrimPrefix(fmtCount(r.BaselineP95.Count), "n="), strings.TrimPrefix(fmtCount(r.IncidentP95.Count), "n="),
			moved}
		if withGroup {
			row = append([]string{r.Group}, row...)
		}
		t.Rows = append(t.Rows, row)
		t.Marks = append(t.Marks, r.Moved)
	}
	if len(missing) > 0 {
		missing = []Item{{Text: "cannot evaluate:", Sub: missing}}
	}
	return t, missing
}

// compareDoc lays out a before/after table on its own.
func compareDoc(rows []CompareRow) *Document {
	d := &Document{}
	withGroup := false
	for _, r := range rows {
		withGroup = withGroup || r.Group != ""
	}
	d.heading(1, "Before and after: p50 and p95 per signal")
	if len(rows) == 0 {
		d.para("", "no latency or size histogram was found")
		return d
	}
	d.para("", compareCaption(rows))
	t, missing := compareRTable(rows, withGroup)
	if len(t.Rows) > 0 {
		d.table("compare", t)
	}
	d.list("missing", missing)
	return d
}

// WriteCompareText writes rows (from CompareTable) as an aligned text
// table under a caption naming the windows, the bounds and counts shown,
// and the definition of "moved"; moved rows say MOVED up or down.
func WriteCompareText(w io.Writer, rows []CompareRow) error {
	return CompareDocument(rows).WriteText(w)
}

// CompareDocument lays out rows (from CompareTable) as the document
// WriteCompareText and WriteCompareMarkdown write; its WriteTextWidth
// writes the table at another width (0: whole rows, however wide).
func CompareDocument(rows []CompareRow) *Document {
	return compareDoc(rows)
}

// WriteCompareMarkdown writes rows (from CompareTable) as a Markdown
// table, moved rows in bold.
func WriteCompareMarkdown(w io.Writer, rows []CompareRow) error {
	return compareDoc(rows).WriteMarkdown(w)
}
