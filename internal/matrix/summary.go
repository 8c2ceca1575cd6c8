package matrix

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// verdictColumns are the confusion matrix' columns, in the map's order.
var verdictColumns = []string{
	"queue-sustained", "queue-burst", "prefill-long-prompts", "prefix-cache-loss",
	"decode-pressure", "kv-preemption", "outside-gpu", "replica-hotspot",
	"engine-stall", "stale-gauges", "admission-deferral", "engine-imbalance",
	"preemption-thrash", "spec-decode-acceptance", "admission-rejections",
	"no-incident", "undetermined",
}

// short abbreviates a verdict for a column header.
var short = map[string]string{
	"queue-sustained": "q-sust", "queue-burst": "q-burst", "prefill-long-prompts": "prefill",
	"prefix-cache-loss": "prefix", "decode-pressure": "decode", "kv-preemption": "kv",
	"outside-gpu": "out-gpu", "replica-hotspot": "hotspot", "no-incident": "none",
	"undetermined": "undet", "proxy-network": "proxy",
	"engine-stall": "stall", "stale-gauges": "stale", "admission-deferral": "deferral",
	"engine-imbalance": "imbalance", "preemption-thrash": "thrash", "spec-decode-acceptance": "spec",
	"admission-rejections": "rejects",
}

func abbrev(v string) string {
	if s, ok := short[v]; ok {
		return s
	}
	return v
}

// Summary prints the confusion matrix (rows: expected, columns: verdict,
// counts), the confusion per case and severity, the accuracy per severity
// and per fleet size, and every cell that is not right with its verdict,
// ground truth and top three hypotheses (status, score and confidence).
func Summary(results []Result) string {
	var b strings.Builder
	cols := slices.Clone(verdictColumns)
	for _, r := range results {
		if r.Verdict != "" && !slices.Contains(cols, r.Verdict) {
			cols = append(cols, r.Verdict)
		}
	}
	hasErr := slices.ContainsFunc(results, func(r Result) bool { return r.Outcome == Failed })
	if hasErr {
		cols = append(cols, "error")
	}
	col := func(r Result) string {
		if r.Outcome == Failed {
			return "error"
		}
		return r.Verdict
	}
	table := func(title string, key func(Result) string, keys []string) {
		fmt.Fprintf(&b, "%s\n", title)
		tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "expected \\ verdict\t")
		for _, c := range cols {
			fmt.Fprintf(tw, "%s\t", abbrev(c))
		}
		fmt.Fprintf(tw, "right\t\n")
		for _, k := range keys {
			counts := map[string]int{}
			n, right := 0, 0
			for _, r := range results {
				if key(r) != k {
					continue
				}
				counts[col(r)]++
				n++
				if r.Outcome == Right {
					right++
				}
			}
			if n == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t", k)
			for _, c := range cols {
				if counts[c] == 0 {
					fmt.Fprintf(tw, ".\t")
				} else {
					fmt.Fprintf(tw, "%d\t", counts[c])
				}
			}
			fmt.Fprintf(tw, "%d/%d\t\n", right, n)
		}
		tw.Flush()
		b.WriteString("\n")
	}

	var expects, cases []string
	for _, c := range fleetsim.MatrixCases() {
		if !slices.Contains(expects, c.Expect) {
			expects = append(expects, c.Expect)
		}
		if c.Incident() {
			for _, s := range fleetsim.Severities {
				cases = append(cases, c.Name+" "+s)
			}
		} else {
			cases = append(cases, c.Name)
		}
	}
	table("Confusion matrix (rows: expected, columns: verdict; cells counted):",
		func(r Result) string { return r.Expect }, expects)
	table("By case and severity:", func(r Result) string {
		if r.Severity == "" {
			return r.Case
		}
		return r.Case + " " + r.Severity
	}, cases)

	// Accuracy per severity and size.
	fmt.Fprintf(&b, "Accuracy:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group\tright\twrong cause\tundetermined\tmissed\terror\tpass\t\n")
	acc := func(name string, keep func(Result) bool) {
		var n, pass int
		cnt := map[Outcome]int{}
		for _, r := range results {
			if !keep(r) {
				continue
			}
			n++
			cnt[r.Outcome]++
			if r.OK() {
				pass++
			}
		}
		if n == 0 {
			return
		}
		fmt.Fprintf(tw, "%s\t%d/%d (%.0f%%)\t%d\t%d\t%d\t%d\t%d/%d\t\n", name, cnt[Right], n, 100*float64(cnt[Right])/float64(n),
			cnt[WrongCause], cnt[Undetermined], cnt[Missed], cnt[Failed], pass, n)
	}
	for _, s := range fleetsim.Severities {
		acc(s, func(r Result) bool { return r.Severity == s })
	}
	acc("counter-cases", func(r Result) bool { return !r.Incident() && r.Expect == string(rules.NoIncident) })
	acc("no knob, incident", func(r Result) bool { return !r.Incident() && r.Expect != string(rules.NoIncident) })
	var sizes []int
	for _, r := range results {
		if !slices.Contains(sizes, r.Pods) {
			sizes = append(sizes, r.Pods)
		}
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		acc(fmt.Sprintf("%d pods", n), func(r Result) bool { return r.Pods == n })
	}
	for _, a := range Axes {
		acc("axis "+a, func(r Result) bool { return r.Axis == a })
	}
	acc("all", func(Result) bool { return true })
	tw.Flush()
	b.WriteString("\n")

	// Every cell that is not right.
	var bad []Result
	for _, r := range results {
		if r.Outcome != Right {
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		b.WriteString("Every cell is right.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "Cells not right (%d; FAIL marks those the matrix fails on):\n", len(bad))
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tcell\ttruth\tverdict\ttop 3 hypotheses (status score [confidence])\t\n")
	for _, r := range bad {
		mark := "ok"
		if !r.OK() {
			mark = "FAIL"
		}
		v := r.Verdict
		if r.Confidence != "" {
			v += " (" + r.Confidence + ")"
		}
		if r.Outcome == Failed {
			v = "error: " + r.Err.Error()
		}
		var top []string
		for _, h := range r.Top {
			top = append(top, h.String())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %.2fx\t%s\t%s\t\n", mark, r.Name(), r.Truth.Symptom, r.Truth.Ratio(), v, strings.Join(top, "; "))
	}
	tw.Flush()
	return b.String()
}

// Failures returns the results the matrix fails on (see Result.OK).
func Failures(results []Result) []Result {
	var out []Result
	for _, r := range results {
		if !r.OK() {
			out = append(out, r)
		}
	}
	return out
}
