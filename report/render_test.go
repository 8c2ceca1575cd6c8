package report_test

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/golden"
	"github.com/whyslow/whyslow/internal/reportfixture"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

func TestRenderFixtureIsTheArticleCase(t *testing.T) {
	// The goldens are only meaningful if the fixture's findings are the
	// article's: the prefill-long-prompts hypothesis is supported.
	rep := reportfixture.Article()
	require.Equal(t, rules.Verdict(rules.PrefillLongPrompts), rep.Verdict)
	require.Equal(t, rules.PrefillLongPrompts, rep.Hypotheses[0].ID)
	require.Equal(t, rules.Supported, rep.Hypotheses[0].Status)
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rep   func() *report.Report
		write func(*report.Report, *bytes.Buffer) error
	}{
		{"report.txt", reportfixture.Article, func(r *report.Report, b *bytes.Buffer) error { return r.WriteText(b) }},
		{"report.md", reportfixture.Article, func(r *report.Report, b *bytes.Buffer) error { return r.WriteMarkdown(b) }},
		{"report.json", reportfixture.Article, func(r *report.Report, b *bytes.Buffer) error { return r.WriteJSON(b) }},
		{"split.txt", reportfixture.Split, func(r *report.Report, b *bytes.Buffer) error { return r.WriteText(b) }},
		{"split.md", reportfixture.Split, func(r *report.Report, b *bytes.Buffer) error { return r.WriteMarkdown(b) }},
		{"compare.txt", reportfixture.Article, func(r *report.Report, b *bytes.Buffer) error {
			return report.WriteCompareText(b, report.CompareTable(r))
		}},
		{"compare.md", reportfixture.Split, func(r *report.Report, b *bytes.Buffer) error {
			return report.WriteCompareMarkdown(b, report.CompareTable(r))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.write(tc.rep(), &b))
			golden.Check(t, filepath.Join("testdata", tc.name), b.Bytes())
		})
	}
}

func TestRenderTextContent(t *testing.T) {
	rep := reportfixture.Article()
	text := rep.String()
	var b bytes.Buffer
	require.NoError(t, rep.WriteText(&b))
	assert.Equal(t, b.String(), text, "String is the text form")

	// The verdict comes first, before any other section.
	first := strings.SplitN(text, "\n", 4)
	require.Len(t, first, 4)
	assert.Equal(t, "whyslow report: prefill-long-prompts", first[0])
	assert.Contains(t, first[2], "verdict: prefill-long-prompts")
	// Sections in the order issue 14 asks for: the summary block, the
	// before/after table and the hypotheses, then the detail.
	order := []string{"Summary\n", "Before and after", "Hypotheses, ranked\n", "Windows\n", "Symptoms\n", "Per replica\n", "Signals, fleet-wide\n", "Dimensions\n", "Warnings\n"}
	reportfixture.InOrder(t, text, order)
	// Section 10 numbers with units, bounds and counts.
	for _, s := range []string{
		"prompt_tokens", "870 tokens [500–1000]", "6100 tokens [5000–10000]", "2400 tokens [2000–5000]",
		"<= 300ms", "1.9s [1.5s–2s]", "640ms [500ms–800ms]", "2.2s [1s–2.5s]", "43ms [25ms–50ms]",
		"change point: 2026-03-14 10:00:00Z, score 7.42",
		"2026-03-14 09:30–10:00Z (30m), 360 scrapes, from change-point",
	} {
		assert.Contains(t, text, s)
	}
	// Mitigations are apart from root-cause steps and prevention.
	assert.Contains(t, text, "mitigate now (immediate, during the incident):")
	assert.Contains(t, text, "root cause (after recovery):")
	assert.Contains(t, text, "proposed experiment: change max_num_batched_tokens")
	// Unknown numbers never print as zero.
	assert.NotContains(t, text, "NaN")
}

func TestCompareTable(t *testing.T) {
	rows := report.CompareTable(reportfixture.Article())
	byID := map[string]report.CompareRow{}
	for _, r := range rows {
		byID[r.Signal] = r
	}
	for _, tc := range []struct {
		signal     string
		p50, p95   [2]float64 // baseline, incident
		moved      bool
		changeP95  float64
		missingSet bool
	}{
		{signal: "prompt_tokens", p50: [2]float64{850, 870}, p95: [2]float64{2400, 6100}, moved: true, changeP95: 6100.0/2400 - 1},
		{signal: "queue_time", p50: [2]float64{0.02, 0.02}, p95: [2]float64{0.12, 0.13}, moved: false, changeP95: 0.13/0.12 - 1},
		{signal: "prefill_time", p50: [2]float64{0.17, 0.18}, p95: [2]float64{0.64, 1.9}, moved: true, changeP95: 1.9/0.64 - 1},
		{signal: "ttft", p50: [2]float64{0.29, 0.31}, p95: [2]float64{0.9, 2.2}, moved: true, changeP95: 2.2/0.9 - 1},
		{signal: "tpot", p50: [2]float64{0.03, 0.031}, p95: [2]float64{0.042, 0.043}, moved: false, changeP95: 0.043/0.042 - 1},
		{signal: "client_ttft", missingSet: true},
	} {
		t.Run(tc.signal, func(t *testing.T) {
			r, ok := byID[tc.signal]
			require.True(t, ok)
			if tc.missingSet {
				assert.NotEmpty(t, r.Missing)
				assert.False(t, r.Moved)
				assert.True(t, math.IsNaN(float64(r.IncidentP95.Value)))
				return
			}
			assert.Empty(t, r.Missing)
			assert.Equal(t, tc.p50[0], float64(r.BaselineP50.Value))
			assert.Equal(t, tc.p50[1], float64(r.IncidentP50.Value))
			assert.Equal(t, tc.p95[0], float64(r.BaselineP95.Value))
			assert.Equal(t, tc.p95[1], float64(r.IncidentP95.Value))
			assert.Equal(t, 4000.0, float64(r.IncidentP95.Count))
			assert.Equal(t, 3900.0, float64(r.BaselineP95.Count))
			assert.InDelta(t, tc.changeP95, float64(r.ChangeP95), 1e-12)
			assert.Equal(t, tc.moved, r.Moved)
			assert.Equal(t, "change-point", r.IncidentWindow.From)
		})
	}
	// Rows follow the report's signal order, histograms only.
	assert.Equal(t, "ttft", rows[0].Signal)
	for _, r := range rows {
		assert.NotEqual(t, "waiting", r.Signal)
	}
}

func TestCompareTableLowCountAndGroups(t *testing.T) {
	rep := reportfixture.Article()
	rep.Signals.Fleet[0].Incident.Quantiles[1].Count = 5 // ttft p95 from 5 requests
	rows := report.CompareTable(rep)
	assert.Equal(t, "ttft", rows[0].Signal)
	assert.True(t, rows[0].LowCount)
	assert.False(t, rows[0].Moved, "a change judged from 5 observations is not marked")

	split := report.CompareTable(reportfixture.Split())
	groups := map[string]int{}
	for _, r := range split {
		groups[r.Group]++
	}
	assert.Equal(t, map[string]int{"model_name=llama-3-70b": 9, "model_name=qwen-7b": 3}, groups)
	assert.Nil(t, report.CompareTable(nil))
}

func TestWriteJSONSchema(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, reportfixture.Article().WriteJSON(&b))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.Equal(t, float64(report.SchemaVersion), doc["schema_version"])
	assert.Equal(t, "prefill-long-prompts", doc["verdict"])
	assert.Contains(t, b.String(), `(up: >= 1.5x)`, "readable, not \\u003e")
	for _, key := range []string{"windows", "symptoms", "hypotheses", "signals", "warnings", "facts", "timelines"} {
		assert.Contains(t, doc, key)
	}
	h := doc["hypotheses"].([]any)[0].(map[string]any)
	for _, key := range []string{"id", "status", "score", "evidence", "counter_evidence", "next_checks", "mitigations", "experiment"} {
		assert.Contains(t, h, key)
	}
	// A quantile is {q, value, lower, upper, count}.
	q := doc["signals"].(map[string]any)["fleet"].([]any)[0].(map[string]any)["incident"].(map[string]any)["quantiles"].([]any)[1].(map[string]any)
	assert.Equal(t, map[string]any{"q": 0.95, "value": 2.2, "lower": 1.0, "upper": 2.5, "count": 4000.0, "stable": true}, q)
	// Times are RFC 3339 UTC.
	assert.Equal(t, "2026-03-14T10:00:00Z", doc["windows"].(map[string]any)["incident"].(map[string]any)["start"])

	// The JSON reads back into a Report.
	var back report.Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.Equal(t, rules.Verdict(rules.PrefillLongPrompts), back.Verdict)
	assert.Len(t, back.Hypotheses, len(reportfixture.Article().Hypotheses))
}

func TestWriteJSONEmptyListsAreNotNull(t *testing.T) {
	var b bytes.Buffer
	rep := &report.Report{SchemaVersion: report.SchemaVersion, Verdict: rules.Undetermined}
	require.NoError(t, rep.WriteJSON(&b))
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	for _, key := range []string{"symptoms", "hypotheses", "warnings", "dimensions"} {
		assert.Equal(t, "[]", string(doc[key]), key)
	}
	var sig map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc["signals"], &sig))
	assert.Equal(t, "[]", string(sig["fleet"]))
	assert.Equal(t, "{}", string(sig["replicas"]))
	assert.Nil(t, rep.Symptoms, "WriteJSON does not modify the report")

	// A nil report writes an empty one rather than failing.
	b.Reset()
	var nilRep *report.Report
	require.NoError(t, nilRep.WriteJSON(&b))
	assert.Contains(t, b.String(), `"schema_version": 1`)
}

func TestWriteJSONNonFinite(t *testing.T) {
	rep := reportfixture.Article()
	inf, nan := rules.Number(math.Inf(1)), rules.Number(math.NaN())
	// p99 in the +Inf bucket: the upper bound is unbounded.
	rep.Signals.Fleet[0].Incident.Quantiles[2].Upper = inf
	rep.Signals.Fleet[0].Incident.Quantiles[2].Value = nan
	rep.Hypotheses[0].Evidence[0].Fact.Incident.Upper = math.Inf(1)
	warningsBefore := len(rep.Warnings)

	var b bytes.Buffer
	require.NoError(t, rep.WriteJSON(&b))
	assert.Len(t, rep.Warnings, warningsBefore, "WriteJSON does not modify the report")
	assert.False(t, strings.Contains(b.String(), ": NaN") || strings.Contains(b.String(), "Inf,"), "non-finite numbers are null")

	var doc struct {
		Signals struct {
			Fleet []struct {
				Incident struct {
					Quantiles []map[string]any `json:"quantiles"`
				} `json:"incident"`
			} `json:"fleet"`
		} `json:"signals"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	p99 := doc.Signals.Fleet[0].Incident.Quantiles[2]
	assert.Contains(t, p99, "upper")
	assert.Nil(t, p99["upper"])
	assert.Nil(t, p99["value"])
	var infWarn, nanWarn string
	for _, w := range doc.Warnings {
		switch {
		case strings.Contains(w, "infinite"):
			infWarn = w
		case strings.Contains(w, "unknown number"):
			nanWarn = w
		}
	}
	assert.Contains(t, infWarn, "2 infinite number(s) written as null")
	assert.Contains(t, infWarn, "signals.fleet[ttft].incident.quantiles[p99].upper (+Inf)")
	assert.Contains(t, infWarn, "hypotheses[prefill-long-prompts].evidence[0].upper (+Inf)")
	assert.NotEmpty(t, nanWarn)

	// Writing what was read back does not repeat the warnings.
	var back report.Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	var b2 bytes.Buffer
	require.NoError(t, back.WriteJSON(&b2))
	var doc2 struct{ Warnings []string }
	require.NoError(t, json.Unmarshal(b2.Bytes(), &doc2))
	n := 0
	for _, w := range doc2.Warnings {
		if strings.Contains(w, "infinite") {
			n++
		}
	}
	assert.LessOrEqual(t, n, 1)
}

func TestRenderSplitReport(t *testing.T) {
	text := reportfixture.Split().String()
	i := strings.Index(text, "Groups\n")
	j := strings.Index(text, "group model_name=llama-3-70b: prefill-long-prompts")
	k := strings.Index(text, "group model_name=qwen-7b: no-incident")
	require.True(t, i >= 0 && j > i && k > j, "summary of the groups first, then each group in turn")
}
