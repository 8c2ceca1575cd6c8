package diagnose_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	sample "github.com/whyslow/whyslow/examples/postmortem/evidence"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// The facts in a report, also once written as JSON and read back,
// reproduce its verdict and ranking through rules.Evaluate.
func TestRuleFactsReproduceVerdict(t *testing.T) {
	ev, err := sample.Read()
	require.NoError(t, err)
	rep, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	require.Equal(t, rules.Verdict(rules.PrefillLongPrompts), rep.Verdict)

	res := rules.Evaluate(rep.RuleFacts(), rules.SLO{}, rules.DefaultThresholds)
	assert.Equal(t, rep.Verdict, res.Verdict)
	require.Len(t, res.Findings, len(rep.Hypotheses))
	for i := range res.Findings {
		assert.Equal(t, rep.Hypotheses[i].ID, res.Findings[i].ID)
		assert.Equal(t, rep.Hypotheses[i].Status, res.Findings[i].Status)
	}

	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))
	var back diagnose.Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	again := rules.Evaluate(back.RuleFacts(), rules.SLO{}, rules.DefaultThresholds)
	assert.Equal(t, rep.Verdict, again.Verdict)
	assert.Equal(t, rep.Facts[rules.TTFTP95].BaselineLower, back.Facts[rules.TTFTP95].BaselineLower)
}

// A verdict on evidence that was not read whole says so first.
func TestPartialEvidenceIsFlaggedInTheSummary(t *testing.T) {
	ev, err := sample.Read()
	require.NoError(t, err)
	whole, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	assert.NotContains(t, whole.Summary, "PARTIAL")

	ev.Problems = append(ev.Problems, snapshot.Problem{Severity: snapshot.SeverityError, File: "pod-3/10-40.prom", Offset: -1, Err: errors.New("truncated")})
	part, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	assert.True(t, part.Inputs.Partial)
	assert.True(t, strings.HasPrefix(part.Summary, "PARTIAL EVIDENCE"), part.Summary)
	assert.Equal(t, whole.Verdict, part.Verdict)
}
