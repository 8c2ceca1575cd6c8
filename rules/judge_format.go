package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
)

// String prints the judgement as benchstat prints a comparison: the
// verdict and its reasons, the runs, the workload checks, a table with
// one row per metric (median ± range of each arm, change, direction of
// the treatment runs, p-value with run counts), the per-run values and
// the warnings.
func (j Judgement) String() string {
	var b strings.Builder
	j.writeText(&b)
	return b.String()
}

func (j Judgement) title() string {
	p := j.Plan
	return fmt.Sprintf("experiment %s: change %s from %s to %s", p.Hypothesis, p.Change.Name, p.Change.From, p.Change.To)
}

func (j Judgement) writeText(b *strings.Builder) {
	fmt.Fprintf(b, "%s\n", j.title())
	fmt.Fprintf(b, "verdict: %s\n", j.Verdict)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range j.Reasons {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Outcome, r.Text)
	}
	tw.Flush()

	fmt.Fprintf(b, "\nruns: %d baseline, %d treatment\n", len(j.Baseline), len(j.Treatment))
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, arm := range j.arms() {
		for i, r := range arm.runs {
			fmt.Fprintf(tw, "  %s%d\t%s\t%s\n", arm.short, i+1, r.Name, runWindow(r))
		}
	}
	tw.Flush()

	if len(j.Workload) > 0 {
		fmt.Fprintf(b, "\nworkload (median of runs, baseline vs treatment, tolerance %s):\n", pct(j.Workload[0].Tolerance))
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, w := range j.Workload {
			fmt.Fprintf(tw, "  %s\t%s\n", w.Outcome, w.Text)
		}
		tw.Flush()
	}

	if len(j.Metrics) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "metric\trole\tbaseline\ttreatment\tchange\ttreatment runs\tp\n")
		for _, c := range j.Metrics {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", metricLabel(c), c.Role,
				armCell(c.Metric, c.Baseline), armCell(c.Metric, c.Treatment),
				fmtChange(c.Change), directionCell(c), pCell(c))
		}
		tw.Flush()

		b.WriteString("\nper-run values:\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "metric\t")
		for _, arm := range j.arms() {
			for i := range arm.runs {
				fmt.Fprintf(tw, "%s%d\t", arm.short, i+1)
			}
		}
		fmt.Fprintf(tw, "\n")
		for _, c := range j.Metrics {
			fmt.Fprintf(tw, "%s\t", c.Metric)
			for _, v := range append(append([]float64(nil), c.Baseline.Values...), c.Treatment.Values...) {
				fmt.Fprintf(tw, "%s\t", fmtValue(c.Metric, v))
			}
			fmt.Fprintf(tw, "\n")
		}
		tw.Flush()
	}

	if len(j.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, w := range j.Warnings {
			fmt.Fprintf(b, "  - %s\n", w)
		}
	}
}

// Markdown returns the judgement as Markdown: the verdict and reasons as
// a list, then tables of the runs, the workload, the metrics and the
// per-run values.
func (j Judgement) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", MarkdownInline(j.title()))
	fmt.Fprintf(&b, "**Verdict: %s**\n\n", j.Verdict)
	for _, r := range j.Reasons {
		fmt.Fprintf(&b, "- **%s**: %s\n", r.Outcome, MarkdownInline(r.Text))
	}
	b.WriteString("\n| run | source | window |\n|---|---|---|\n")
	for _, arm := range j.arms() {
		for i, r := range arm.runs {
			fmt.Fprintf(&b, "| %s%d | %s | %s |\n", arm.short, i+1, MarkdownCell(r.Name), MarkdownCell(runWindow(r)))
		}
	}
	if len(j.Workload) > 0 {
		fmt.Fprintf(&b, "\n| workload | baseline | treatment | change | outcome |\n|---|---:|---:|---:|---|\n")
		for _, w := range j.Workload {
			fv := func(v float64) string { return fmtValue(FactID(w.Name), v) }
			if w.Name == "duration" {
				fv = func(v float64) string { return fmtNum(v) + "s" }
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", w.Name, fv(w.Baseline), fv(w.Treatment), fmtChange(w.Change), w.Outcome)
		}
	}
	if len(j.Metrics) > 0 {
		b.WriteString("\n| metric | role | baseline | treatment | change | treatment runs | p |\n|---|---|---:|---:|---:|---|---|\n")
		for _, c := range j.Metrics {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", metricLabel(c), c.Role,
				armCell(c.Metric, c.Baseline), armCell(c.Metric, c.Treatment),
				fmtChange(c.Change), directionCell(c), pCell(c))
		}
		b.WriteString("\n| metric |")
		sep := "|---|"
		for _, arm := range j.arms() {
			for i := range arm.runs {
				fmt.Fprintf(&b, " %s%d |", arm.short, i+1)
				sep += "---:|"
			}
		}
		b.WriteString("\n" + sep + "\n")
		for _, c := range j.Metrics {
			fmt.Fprintf(&b, "| %s |", c.Metric)
			for _, v := range append(append([]float64(nil), c.Baseline.Values...), c.Treatment.Values...) {
				fmt.Fprintf(&b, " %s |", fmtValue(c.Metric, v))
			}
			b.WriteString("\n")
		}
	}
	if len(j.Warnings) > 0 {
		b.WriteString("\nWarnings:\n\n")
		for _, w := range j.Warnings {
			fmt.Fprintf(&b, "- %s\n", MarkdownInline(w))
		}
	}
	return b.String()
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

// armCell prints "median ±x% n=N" like benchstat, the range being the
// runs' min and max.
func armCell(id FactID, a ArmStats) string {
	if a.N == 0 {
		return "?"
	}
	s := fmtValue(id, a.Center)
	if sp := a.Spread(); !math.IsNaN(sp) && !math.IsInf(sp, 0) {
		s += fmt.Sprintf(" ±%.0f%%", 100*sp)
	} else if a.Min != a.Max {
		s += fmt.Sprintf(" [%s, %s]", fmtValue(id, a.Min), fmtValue(id, a.Max))
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
