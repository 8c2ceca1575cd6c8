package matrix

import (
	"fmt"
	"strings"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// CalibrationSeverities are the severities of the calibration sweep, each
// a knob midway between two grades of fleetsim's knob table, so that no
// test diagnoses the same fleet: "mild-moderate" and "moderate-severe".
var CalibrationSeverities = []string{"mild-moderate", "moderate-severe"}

// CalibrationSeeds are the default seeds of the calibration sweep; no
// test uses them (the matrix uses fleetsim.MatrixSeeds, 1001-1003).
var CalibrationSeeds = []uint64{9001}

// CalibrationCells returns the calibration sweep: every incident case at
// every size in sizes and every severity of CalibrationSeverities, and
// every counter-case at every size, each for every seed. A size missing
// from the knob table, or whose grades share one knob, is left out for
// the incidents.
func CalibrationCells(sizes []int, seeds []uint64) []Cell {
	var out []Cell
	for _, c := range fleetsim.MatrixCases() {
		for _, n := range sizes {
			if !c.Incident() {
				for _, s := range seeds {
					out = append(out, Cell{Case: c.Name, Expect: c.Expect, Pods: n, Seed: s})
				}
				continue
			}
			for _, sev := range CalibrationSeverities {
				lo, hi, _ := strings.Cut(sev, "-")
				a, okA := fleetsim.MatrixKnob(c.Name, n, lo)
				b, okB := fleetsim.MatrixKnob(c.Name, n, hi)
				if !okA || !okB || a == b {
					// a == b: the band between the grades lies on a jump
					// of the knob (preemption thrash feeds on itself),
					// with no knob between them.
					continue
				}
				for _, s := range seeds {
					out = append(out, Cell{Case: c.Name, Expect: c.Expect, Pods: n, Seed: s, Severity: sev, Knob: (a + b) / 2})
				}
			}
		}
	}
	return out
}

// Claim is what a report claims with a confidence: the hypothesis its
// verdict names or, when the verdict is undetermined, its leading
// candidate (always low: a next check, not a verdict). Confidence is
// empty when the report claims no cause (no incident, or no supported
// hypothesis graded).
func (r Result) Claim() (hypothesis, confidence string) {
	if r.Verdict != string(rules.Undetermined) {
		if r.Verdict == string(rules.NoIncident) {
			return "", ""
		}
		return r.Verdict, r.Confidence
	}
	if len(r.Top) > 0 && r.Top[0].Status == string(rules.Supported) && r.Top[0].Confidence != "" {
		return r.Top[0].ID, r.Top[0].Confidence
	}
	return "", ""
}

// ClaimRight reports whether the result's claim is right: the claimed
// hypothesis is the cell's expected one (a counter-case expects none, so
// any claim there is wrong); with no claim, whether the verdict is the
// expected no-incident. A cell's Also counts as expected.
func (r Result) ClaimRight() bool {
	h, _ := r.Claim()
	if h == "" {
		h = r.Verdict
	}
	return h == r.Expect || (r.Also != "" && h == r.Also)
}

// Calibration prints how often the claims of each confidence were right,
// as a Markdown table (high, medium, low, then the results without a
// claim), then every wrong claim with its cell, verdict and ground truth.
func Calibration(results []Result) string {
	type tally struct{ n, right, counter int }
	rows := []string{"high", "medium", "low", ""}
	by := map[string]*tally{}
	for _, k := range rows {
		by[k] = &tally{}
	}
	var wrong []string
	failed := 0
	for _, r := range results {
		if r.Outcome == Failed {
			failed++
			continue
		}
		h, conf := r.Claim()
		t, ok := by[conf]
		if !ok {
			t = &tally{}
			by[conf] = t
			rows = append(rows, conf)
		}
		t.n++
		if r.Expect == string(rules.NoIncident) {
			t.counter++
		}
		if r.ClaimRight() {
			t.right++
			continue
		}
		claim := "no cause"
		if h != "" {
			claim = h + " (" + conf + ")"
		}
		wrong = append(wrong, fmt.Sprintf("- %s: claims %s, verdict %s, expected %s; truth %.2fx", r.Name(), claim, r.Verdict, r.Expect, r.Truth.Ratio()))
	}
	var b strings.Builder
	b.WriteString("| confidence | claims | right | wrong | right share | on counter-cases |\n|---|---|---|---|---|---|\n")
	for _, k := range rows {
		t := by[k]
		name := k
		switch k {
		case "low":
			name = "low (undetermined: its leading candidate)"
		case "":
			name = "no cause claimed (no-incident, or nothing graded)"
		}
		share := "-"
		if t.n > 0 {
			share = fmt.Sprintf("%.0f%%", 100*float64(t.right)/float64(t.n))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %d |\n", name, t.n, t.right, t.n-t.right, share, t.counter)
	}
	if failed > 0 {
		fmt.Fprintf(&b, "\n%d cells could not be simulated or diagnosed\n", failed)
	}
	if len(wrong) > 0 {
		b.WriteString("\nwrong:\n" + strings.Join(wrong, "\n") + "\n")
	}
	return b.String()
}
