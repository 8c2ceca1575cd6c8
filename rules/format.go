package rules

import (
	"fmt"
	"strings"
)

// String prints the finding: status, score, evidence, counter-evidence,
// what is missing, next checks, the three kinds of steps and the
// experiment.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s, score %.2f]: %s\n", f.ID, f.Status, f.Score, f.Title)
	if len(f.Explains) > 0 {
		fmt.Fprintf(&b, "  explains: %s\n", joinSyms(f.Explains, ", "))
	}
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "  %s:\n", title)
		for _, it := range items {
			fmt.Fprintf(&b, "    - %s\n", it)
		}
	}
	list("evidence", evidenceLines(f.Evidence))
	list("counter-evidence", evidenceLines(f.CounterEvidence))
	var miss []string
	for _, m := range f.Missing {
		miss = append(miss, m.String())
	}
	list("cannot evaluate", miss)
	var checks []string
	for _, c := range f.NextChecks {
		line := fmt.Sprintf("[%s] %s", c.Outcome, c.Text)
		for _, e := range c.Evidence {
			line += "\n        " + e.String()
		}
		for _, m := range c.Missing {
			line += "\n        missing " + m.String()
		}
		checks = append(checks, line)
	}
	list("next checks", checks)
	list("mitigate now", f.Mitigations)
	list("root cause", f.RootCause)
	list("prevent", f.Prevention)
	if f.Experiment.Hypothesis != "" {
		b.WriteString("  ")
		b.WriteString(strings.ReplaceAll(strings.TrimRight(f.Experiment.String(), "\n"), "\n", "\n  "))
		b.WriteString("\n")
	}
	return b.String()
}

func evidenceLines(ev []Evidence) []string {
	s := make([]string, len(ev))
	for i, e := range ev {
		s[i] = e.String()
	}
	return s
}

// String prints the verdict, the symptoms, notes, warnings and the
// findings in rank order.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	for _, s := range r.Symptoms {
		b.WriteString(s.String())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note %s: %s\n", n.ID, n.Text)
		for _, e := range n.Evidence {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	for i, f := range r.Findings {
		fmt.Fprintf(&b, "%d. %s", i+1, f)
	}
	return b.String()
}

// Describe prints the whole decision map with the given thresholds: per
// rule the observed combination, what it explains, its support and
// counter-evidence conditions, next checks, mitigations, root-cause
// steps, prevention and experiment; then the counter-cases that are not
// incidents and the general incident-response steps. The output is
// deterministic.
func Describe(th Thresholds) string {
	var b strings.Builder
	b.WriteString("whyslow decision map: a map of what to check next, not a verdict table\n\n")
	for _, r := range Map() {
		fmt.Fprintf(&b, "%s: %s\n", r.ID, r.Title)
		fmt.Fprintf(&b, "  observed:   %s\n", r.Observed)
		fmt.Fprintf(&b, "  article:    %s\n", r.Source)
		fmt.Fprintf(&b, "  explains:   %s\n", joinSyms(r.Explains, ", "))
		for _, c := range r.Support {
			fmt.Fprintf(&b, "  supports:   %s\n", c.Describe(th))
		}
		for _, c := range r.Counter {
			fmt.Fprintf(&b, "  counter:    %s: %s\n", c.Text, c.When.Describe(th))
		}
		for _, c := range r.Checks {
			switch {
			case c.When == nil:
				fmt.Fprintf(&b, "  check:      %s (manual)\n", c.Text)
			case c.Neutral:
				fmt.Fprintf(&b, "  check:      %s [%s, not scored]\n", c.Text, c.When.Describe(th))
			default:
				fmt.Fprintf(&b, "  check:      %s [%s]\n", c.Text, c.When.Describe(th))
			}
		}
		writeSteps(&b, r.Mitigations, r.RootCause, r.Prevention)
		for _, d := range r.Drivers {
			fmt.Fprintf(&b, "  driver:     %s [%s]\n", d.Text, d.When.Describe(th))
		}
		for _, g := range r.Refines {
			fmt.Fprintf(&b, "  refines:    %s\n", g)
		}
		b.WriteString("  ")
		b.WriteString(strings.ReplaceAll(strings.TrimRight(r.Experiment.String(), "\n"), "\n", "\n  "))
		b.WriteString("\n\n")
	}
	b.WriteString("not incidents:\n")
	for _, o := range observations() {
		fmt.Fprintf(&b, "  %s: %s\n    when: %s\n", o.id, o.title, o.when.Describe(th))
	}
	g := General()
	b.WriteString("\nincident response (section 13):\n")
	writeSteps(&b, g.Mitigations, g.RootCause, g.Prevention)
	return b.String()
}

// writeSteps writes the three kinds of steps of a rule or of the general
// incident response, one line each.
func writeSteps(b *strings.Builder, mitigations, rootCause, prevention []string) {
	for _, kind := range []struct {
		label string
		steps []string
	}{{"mitigate:  ", mitigations}, {"root cause:", rootCause}, {"prevent:   ", prevention}} {
		for _, s := range kind.steps {
			fmt.Fprintf(b, "  %s %s\n", kind.label, s)
		}
	}
}
