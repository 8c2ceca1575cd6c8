package report_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

// The judgement's text and Markdown come from one document: the same
// tables, the text within TextWidth columns however long a reason is.
func TestJudgementDocument(t *testing.T) {
	plan := rules.Plan{
		Hypothesis: string(rules.DecodePressure),
		Change:     rules.Change{Name: "max_num_seqs", From: "128", To: "96"},
		Expect:     []rules.Expectation{{Metric: rules.TPOTP95, Direction: rules.Lower, MinEffect: 0.1}},
		Runs:       2,
	}
	arm := func(prefix string, tpot ...float64) (runs []rules.RunFacts) {
		for i, v := range tpot {
			runs = append(runs, rules.RunFacts{Name: fmt.Sprintf("%s%d", prefix, i+1), Duration: 15 * time.Minute,
				Facts: rules.Facts{rules.TPOTP95: rules.Measured(v).WithCount(2000, 0), rules.ArrivalRate: rules.Measured(12)}})
		}
		return runs
	}
	j := rules.Judge(plan, arm("b", 0.058, 0.061), arm("t", 0.044, 0.043), rules.DefaultJudgeOptions)
	doc := report.JudgementDocument(j, "configuration: max_num_seqs is not visible in the evidence")
	var text, md strings.Builder
	require.NoError(t, doc.WriteText(&text))
	require.NoError(t, doc.WriteMarkdown(&md))
	for n, line := range strings.Split(text.String(), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), report.TextWidth, "line %d: %q", n+1, line)
	}
	for _, tab := range j.Tables() {
		assert.Contains(t, text.String(), tab.Rows[0][0], "text has the %q table", tab.Title)
		assert.Contains(t, md.String(), "| "+strings.Join(tab.Head, " | ")+" |", "Markdown has the %q table", tab.Title)
	}
	assert.Contains(t, text.String(), "verdict: "+string(j.Verdict))
	assert.Contains(t, md.String(), "# experiment decode-pressure: change max_num_seqs from 128 to 96")
	assert.Contains(t, md.String(), "configuration: max_num_seqs is not visible")
}
