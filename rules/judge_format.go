package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// String prints the judgement as benchstat prints a comparison: the
// verdict and its reasons, the runs, the workload checks, a table with
// one row per metric (median ± range of each arm, change, direction of
// the treatment runs, p-value with run counts), the per-run values and
// the warnings. The tables are those of Tables; package report lays the
// same tables out as text within 120 columns and as Markdown.
func (j Judgement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nverdict: %s\n", j.Title(), j.Verdict)
	for _, t := range j.Tables() {
		b.WriteString("\n")
		if t.Title != "" {
			b.WriteString(t.Title + ":\n")
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, row := range append([][]string{t.Head}, t.Rows...) {
			fmt.Fprintf(tw, "  %s\n", strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	if len(j.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, w := range j.Warnings {
			fmt.Fprintf(&b, "  - %s\n", w)
		}
	}
	return b.String()
}

// Title names the experiment: "experiment H: change X from A to B".
func (j Judgement) Title() string {
	p := j.Plan
	return fmt.Sprintf("experiment %s: change %s from %s to %s", p.Hypothesis, p.Change.Name, p.Change.From, p.Change.To)
}

// JudgementTable is one table of a judgement as text cells.
type JudgementTable struct {
	// Title says what the table holds; empty for the reasons.
	Title string
	// Head is the header row, Rows the body rows.
	Head []string
	Rows [][]string
	// Right marks right-aligned (numeric) columns.
	Right []bool
}

// Tables returns the judgement's tables in order: the reasons of the
// verdict, the runs, the workload checks, the metrics and the per-run
// values; a table without rows is left out.
func (j Judgement) Tables() []JudgementTable {
	var out []JudgementTable
	add := func(t JudgementTable) {
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	reasons := JudgementTable{Head: []string{"outcome", "reason"}}
	for _, r := range j.Reasons {
		reasons.Rows = append(reasons.Rows, []string{string(r.Outcome), r.Text})
	}
	add(reasons)

	runs := JudgementTable{Title: fmt.Sprintf("runs: %d baseline, %d treatment", len(j.Baseline), len(j.Treatment)),
		Head: []string{"run", "source", "window"}}
	for _, arm := range j.arms() {
		for i, r := range arm.runs {
			runs.Rows = append(runs.Rows, []string{fmt.Sprintf("%s%d", arm.short, i+1), r.Name, runWindow(r)})
		}
	}
	add(runs)

	if len(j.Workload) > 0 {
		wl := JudgementTable{Title: fmt.Sprintf("workload (median of runs, baseline vs treatment, tolerance %s)", pct(j.Workload[0].Tolerance)),
			Head: []string{"workload", "baseline", "treatment", "change", "outcome"}, Right: []bool{false, true, true, true, false}}
		for _, w := range j.Workload {
			fv := func(v float64) string { return fmtCell(FactID(w.Name), v) }
			if w.Name == "duration" {
				fv = func(v float64) string { return time.Duration(v * float64(time.Second)).String() }
			}
			wl.Rows = append(wl.Rows, []string{w.Name, fv(w.Baseline), fv(w.Treatment), fmtChange(w.Change), string(w.Outcome)})
		}
		add(wl)
	}

	metrics := JudgementTable{Head: []string{"metric", "role", "baseline", "treatment", "change", "treatment runs", "p"},
		Right: []bool{false, false, true, true, true, false, false}}
	values := JudgementTable{Title: "per-run values", Head: []string{"metric"}, Right: []bool{false}}
	for _, arm := range j.arms() {
		for i := range arm.runs {
			values.Head = append(values.Head, fmt.Sprintf("%s%d", arm.short, i+1))
			values.Right = append(values.Right, true)
		}
	}
	for _, c := range j.Metrics {
		metrics.Rows = append(metrics.Rows, []string{metricLabel(c), string(c.Role),
			armCell(c.Metric, c.Baseline), armCell(c.Metric, c.Treatment),
			fmtChange(c.Change), directionCell(c), pCell(c)})
		row := []string{string(c.Metric)}
		for _, v := range append(append([]float64(nil), c.Baseline.Values...), c.Treatment.Values...) {
			row = append(row, fmtCell(c.Metric, v))
		}
		values.Rows = append(values.Rows, row)
	}
	add(metrics)
	add(values)
	return out
}

type armRuns struct {
	short string
	runs  []RunInfo
}

func (j Judgement) arms() []armRuns {
	return []armRuns{{"b", j.Baseline}, {"t", j.Treatment}}
}

func runWindow(r RunInfo) string {
	if r.Window == "" {
		return "whole"
	}
	return r.Window
}

func metricLabel(c Comparison) string {
	if c.Better == "" {
		return string(c.Metric)
	}
	return fmt.Sprintf("%s (%s)", c.Metric, c.Better)
}

// fmtCell formats a value in the unit of the fact for a table cell
// (Unit.Format).
func fmtCell(id FactID, v float64) string {
	info, _ := Info(id)
	return info.Unit.Format(v)
}

// armCell prints "median ±x% n=N" like benchstat, the range being the
// runs' min and max.
func armCell(id FactID, a ArmStats) string {
	if a.N == 0 {
		return "?"
	}
	s := fmtCell(id, a.Center)
	if sp := a.Spread(); !math.IsNaN(sp) && !math.IsInf(sp, 0) {
		s += fmt.Sprintf(" ±%.0f%%", 100*sp)
	} else if a.Min != a.Max {
		s += fmt.Sprintf(" [%s, %s]", fmtCell(id, a.Min), fmtCell(id, a.Max))
	}
	if a.N < len(a.Values) {
		s += fmt.Sprintf(" (%d/%d runs)", a.N, len(a.Values))
	}
	return s
}

func directionCell(c Comparison) string {
	n := c.Treatment.N
	switch {
	case n == 0 || c.Baseline.N == 0:
		return "?"
	case c.Up == n:
		return fmt.Sprintf("%d/%d up", n, n)
	case c.Down == n:
		return fmt.Sprintf("%d/%d down", n, n)
	case c.Up == 0 && c.Down == 0:
		return "unchanged"
	}
	return fmt.Sprintf("%d up, %d down", c.Up, c.Down)
}

func pCell(c Comparison) string {
	if math.IsNaN(c.P) {
		return fmt.Sprintf("n=%d+%d", c.Baseline.N, c.Treatment.N)
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", c.P, c.Baseline.N, c.Treatment.N)
}

func numbers(xs []float64) []Number {
	out := make([]Number, len(xs))
	for i, x := range xs {
		out[i] = Number(x)
	}
	return out
}

// MarshalJSON writes the arm with snake_case keys; unusable values and
// unknown numbers are null.
func (a ArmStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Values  []Number `json:"values"`
		Counts  []Number `json:"counts"`
		N       int      `json:"n"`
		Center  Number   `json:"center"`
		Min     Number   `json:"min"`
		Max     Number   `json:"max"`
		Spread  Number   `json:"spread"`
		Missing []string `json:"missing,omitempty"`
	}{numbers(a.Values), numbers(a.Counts), a.N, Number(a.Center), Number(a.Min), Number(a.Max), Number(a.Spread()), a.Missing})
}

// MarshalJSON writes the comparison with snake_case keys; non-finite
// numbers (a change from zero, a p-value not computed) are null.
func (c Comparison) MarshalJSON() ([]byte, error) {
	type plain Comparison
	return json.Marshal(struct {
		plain
		Change     Number   `json:"change"`
		RunChanges []Number `json:"run_changes"`
		P          Number   `json:"p"`
		MinP       Number   `json:"min_p"`
	}{plain(c), Number(c.Change), numbers(c.RunChanges), Number(c.P), Number(c.MinP)})
}

// MarshalJSON writes the check with snake_case keys; unknown numbers are
// null.
func (w WorkloadCheck) MarshalJSON() ([]byte, error) {
	type plain WorkloadCheck
	return json.Marshal(struct {
		plain
		Baseline  Number `json:"baseline"`
		Treatment Number `json:"treatment"`
		Change    Number `json:"change"`
	}{plain(w), Number(w.Baseline), Number(w.Treatment), Number(w.Change)})
}
