package diagnose_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	sample "github.com/whyslow/whyslow/examples/postmortem/evidence"
	"github.com/whyslow/whyslow/report"
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

	back := readBackJSON(t, rep)
	again := rules.Evaluate(back.RuleFacts(), rules.SLO{}, rules.DefaultThresholds)
	assert.Equal(t, rep.Verdict, again.Verdict)
	assert.Equal(t, rep.Facts[rules.TTFTP95].Baseline.Lower, back.Facts[rules.TTFTP95].Baseline.Lower)
}

// readBackJSON writes rep as JSON and reads it back, as a notebook reads
// a saved report.
func readBackJSON(t *testing.T, rep *report.Report) *report.Report {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))
	var back report.Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	return &back
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

// A histogram in milliseconds named by an alias is read in seconds, by
// FleetQuantiles as by Diagnose.
func TestFleetQuantilesScaleAliasedMilliseconds(t *testing.T) {
	dump := `# TYPE gateway_ttft_milliseconds histogram
gateway_ttft_milliseconds_bucket{le="100"} 50
gateway_ttft_milliseconds_bucket{le="1000"} 100
gateway_ttft_milliseconds_bucket{le="+Inf"} 100
gateway_ttft_milliseconds_sum 30000
gateway_ttft_milliseconds_count 100
`
	ev, err := snapshot.ParseDump([]byte(dump), "gw_2026-09-22T10-00-00Z.prom", snapshot.Options{})
	require.NoError(t, err)
	cat := catalog.Default()
	require.NoError(t, cat.Alias(catalog.SignalClientTTFT, "gateway_ttft_milliseconds"))
	rep, err := diagnose.FleetQuantiles(ev, diagnose.QuantileRequest{Metric: "client_ttft", Catalog: &cat, Quantiles: []float64{0.5}})
	require.NoError(t, err)
	require.Len(t, rep.Fleet, 1)
	assert.InDelta(t, 0.1, float64(rep.Fleet[0].Value), 1e-12, "p50 at the 100 ms bound, in seconds")
	assert.InDelta(t, 0.1, float64(rep.Fleet[0].Upper), 1e-12, "bounds in seconds too")
}
