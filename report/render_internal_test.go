package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

func TestFmtUnitValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.042, "s", "42ms"},
		{0.64, "s", "640ms"},
		{1.9, "s", "1.9s"},
		{0.00085, "s", "850µs"},
		{150, "s", "2m30s"},
		{0, "s", "0s"},
		{6100, "tokens", "6100 tokens"},
		{0.925, "ratio", "92.5%"},
		{2.234, "req/s", "2.23 req/s"},
		{0.25, "1/s", "0.25/s"},
		{math.NaN(), "s", "n/a"},
		{math.Inf(1), "s", "+Inf"},
		{12345678, "", "12.3M"},
		{4.86e6, "tokens", "4.86M tokens"},
		{99999, "requests", "99999 req"},
		{1234.56, "", "1235"},
	} {
		assert.Equal(t, tc.want, fmtValue(tc.v, tc.unit), "%v %s", tc.v, tc.unit)
	}
}

func TestFmtWindow(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	w := WindowInfo{Start: t0, End: t0.Add(90 * time.Minute), From: "given", Scrapes: 12}
	assert.Equal(t, "2026-03-14 09:30–11:00Z (1h30m), 12 scrapes, from given", fmtWindow(w))
	w.End = t0.Add(24*time.Hour + 15*time.Second)
	assert.Equal(t, "2026-03-14 09:30:00–2026-03-15 09:30:15Z (24h0m15s)", w.Span())
	assert.Equal(t, "none", fmtWindow(WindowInfo{From: "none"}))
	assert.Contains(t, fmtWindow(WindowInfo{End: t0, From: "lifetime"}), "lifetime (since process start)")
	// The window text of evidence is recognised as the report's.
	w = WindowInfo{Start: t0, End: t0.Add(30 * time.Minute), From: "given"}
	assert.Equal(t, "2026-03-14 09:30:00–10:00:00Z (30m0s)", windowText(w))
}

func TestRelChange(t *testing.T) {
	assert.InDelta(t, 1.5416, float64(relChange(2400, 6100)), 1e-3)
	assert.Equal(t, rules.Number(0), relChange(0, 0))
	assert.True(t, math.IsInf(float64(relChange(0, 3)), 1))
	assert.True(t, math.IsNaN(float64(relChange(rules.Number(math.NaN()), 3))))
	assert.True(t, outsideSteady(relChange(0.64, 1.9), 1.2))
	assert.False(t, outsideSteady(relChange(0.12, 0.13), 1.2))
	assert.True(t, outsideSteady(relChange(1, 0.8), 1.2), "a fall counts too")
	assert.False(t, outsideSteady(rules.Number(math.NaN()), 1.2))
	// The table reads ±Inf as the judge does (it used to say NaN): a rise
	// to +Inf has moved, a fall from 0 to 0 has not.
	for _, c := range [][2]float64{{0, 0}, {1, math.Inf(1)}, {math.Inf(1), math.Inf(1)}, {0, -2}, {2, 1}} {
		assert.Equal(t, rules.RelChange(c[0], c[1]), float64(relChange(rules.Number(c[0]), rules.Number(c[1]))), "%v", c)
	}
	assert.True(t, outsideSteady(relChange(1, rules.Number(math.Inf(1))), 1.2))
}

func TestMarkdownEscaping(t *testing.T) {
	assert.Equal(t, "ttft_p95 in [1s, 2.5s] (up >= 1.5x)", mdInline("ttft_p95 in [1s, 2.5s] (up >= 1.5x)"))
	assert.Equal(t, `\_private\_ a\*b \<b> x\|y`, mdInline("_private_ a*b <b> x|y"))
	assert.Equal(t, `[x\](http://e)`, mdInline("[x](http://e)"))
	assert.Equal(t, `\# not a heading`, mdInline("# not a heading"))
	assert.Equal(t, "+8%", mdCell("+8%"), "cells do not escape line-start markers")
	assert.Equal(t, "a<br>b", mdCell("a\nb"))
	assert.Equal(t, `run_b \*1\* \| x`, mdCell("run_b *1* | x"), "an underscore inside a word stays")
}

// FuzzMarkdownCell checks that no input breaks a table row: an escaped
// cell holds no line break and no unescaped pipe.
func FuzzMarkdownCell(f *testing.F) {
	for _, s := range []string{"a|b", `a\|b`, "x\ny", `\\|`, "_x_", "<b>|</b>", "[a](b)|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := mdCell(s)
		if strings.Contains(c, "\n") {
			t.Fatalf("line break in %q", c)
		}
		backslashes := 0
		for _, r := range c {
			if r == '|' && backslashes%2 == 0 {
				t.Fatalf("unescaped pipe in %q (from %q)", c, s)
			}
			if r == '\\' {
				backslashes++
			} else {
				backslashes = 0
			}
		}
	})
}

func TestUnescapeHTML(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"up \u003e= 1.5x"`, `"up >= 1.5x"`},
		{`"a \u003c b \u0026 c"`, `"a < b & c"`},
		{`"literal \\u003e"`, `"literal \\u003e"`},
		{`"\\\u003e"`, `"\\>"`},
		{`"\u00e9"`, `"\u00e9"`},
		{`"end \`, `"end \`},
	} {
		assert.Equal(t, tc.want, string(unescapeHTML([]byte(tc.in))), tc.in)
	}
}

// A quantile in the +Inf bucket is a lower bound, and says so wherever it
// is printed.
func TestOverflowQuantileSaysAtLeast(t *testing.T) {
	q := Quantile{Q: 0.99, Value: 10000, Lower: 10000, Upper: rules.Number(math.Inf(1)), Count: 28805}
	assert.Equal(t, ">= 10000 tokens", fmtQuantilePoint(q, "tokens"))
	// The bounds say nothing more than ">= b": they are left out.
	assert.Equal(t, ">= 10000 tokens", fmtQuantileValue(q, "tokens"))
	assert.Equal(t, ">= 10000 tokens", fmtCompareCell(q, "tokens"))
	in := Quantile{Q: 0.95, Value: 8112, Lower: 5000, Upper: 10000, Count: 28805}
	assert.Equal(t, "8112 tokens", fmtQuantilePoint(in, "tokens"))
	assert.Equal(t, "8112 tokens [5000 tokens, 10000 tokens]", fmtQuantileValue(in, "tokens"))
}

// A quantile inside the first bucket [0, b] is an interpolation that
// says no more than "<= b".
func TestFirstBucketQuantileSaysAtMost(t *testing.T) {
	q := Quantile{Q: 0.5, Value: 0.15, Lower: 0, Upper: 0.3, Count: 960}
	assert.Equal(t, "<= 300ms", fmtQuantilePoint(q, "s"))
	assert.Equal(t, "<= 300ms", fmtQuantileValue(q, "s"))
	assert.Equal(t, "<= 300ms", fmtCompareCell(q, "s"))
	zero := Quantile{Q: 0.5, Value: 0, Lower: 0, Upper: 0.3, Count: 960}
	assert.Equal(t, "0s [0s, 300ms]", fmtQuantileValue(zero, "s"), "an exact 0 (no observation above 0) stays")
	second := Quantile{Q: 0.95, Value: 0.4, Lower: 0.3, Upper: 0.5, Count: 960}
	assert.Equal(t, "400ms [300ms, 500ms]", fmtQuantileValue(second, "s"))
}

func TestNumberFormatting(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"change", fmtChange(1.54), "+154%"},
		{"change as multiple", fmtChange(124.47), "125x"},
		{"change down", fmtChange(-0.032), "-3.2%"},
		{"count", fmtCount(55477), "n=55,477"},
		{"count of requests", fmtCountOf(55477, "requests"), "n=55,477 requests"},
		{"count unknown", fmtCountOf(rules.Number(math.NaN()), "scrapes"), "n=?"},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
}

func TestCountNoun(t *testing.T) {
	for id, want := range map[rules.FactID]string{
		rules.TTFTP95: "requests", rules.ITLP95: "token gaps", rules.WaitingMean: "samples", rules.KVUsageMax: "samples",
		rules.AbortShare: "requests", rules.PrefixHitRatio: "tokens queried", rules.ReplicaShareMax: "requests",
		rules.ReplicaLoadShareMax: "requests", rules.WaitingBurst: "intervals", rules.CorrRunningTPOT: "intervals",
		rules.Restarts: "replicas", rules.PreemptionRate: "preemptions",
	} {
		assert.Equal(t, want, countNoun(id), string(id))
	}
}

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
	doc := JudgementDocument(j, "configuration: max_num_seqs is not visible in the evidence")
	var text, md strings.Builder
	require.NoError(t, doc.WriteText(&text))
	require.NoError(t, doc.WriteMarkdown(&md))
	for n, line := range strings.Split(text.String(), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), TextWidth, "line %d: %q", n+1, line)
	}
	for _, tab := range j.Tables() {
		assert.Contains(t, text.String(), tab.Rows[0][0], "text has the %q table", tab.Title)
		assert.Contains(t, md.String(), "| "+strings.Join(tab.Head, " | ")+" |", "Markdown has the %q table", tab.Title)
	}
	assert.Contains(t, text.String(), "verdict: "+string(j.Verdict))
	assert.Contains(t, md.String(), "# experiment decode-pressure: change max_num_seqs from 128 to 96")
	assert.Contains(t, md.String(), "configuration: max_num_seqs is not visible")
}

// A Point's JSON is the one encoding/json writes for its fields (Edge is
// left out).
func TestPointJSON(t *testing.T) {
	type plain Point
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	for _, p := range []Point{
		{T: t0, Value: 0.25, Count: 12},
		{T: t0.Add(1500 * time.Millisecond).In(time.FixedZone("X", 3600)), Value: rules.Number(math.NaN()), Count: 0},
		{T: time.Time{}, Value: rules.Number(math.Inf(1)), Count: 1e-7},
		{T: t0.Add(time.Nanosecond), Value: 1e21, Count: -3},
		{T: t0, Value: 0.285, Count: 40, Edge: 0.3},
	} {
		want, err := json.Marshal(struct {
			T     time.Time    `json:"t"`
			Value rules.Number `json:"value"`
			Count rules.Number `json:"count"`
			Edge  rules.Number `json:"-"`
		}(plain(p)))
		require.NoError(t, err)
		got, err := json.Marshal(p)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	_, err := json.Marshal(Point{T: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	assert.Error(t, err)
}

// A Timeline's JSON is the one encoding/json writes for its fields and
// step_seconds.
func TestTimelineJSON(t *testing.T) {
	type plain Timeline
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	pts := []Point{{T: t0, Value: 0.5, Count: 3}, {T: t0.Add(time.Minute), Value: rules.Number(math.NaN()), Count: 0}}
	for _, tl := range []Timeline{
		{Signal: "ttft", Stat: "p95", Step: time.Minute, Points: pts},
		{Signal: "kv_usage", Stat: "mean", Replica: "vllm-<0>&\"x\"é", Step: 90 * time.Second, Points: pts[:1]},
		{Signal: "waiting", Stat: "mean", Step: 1500 * time.Millisecond, Points: []Point{}},
		{Signal: "s\u2028", Stat: "", Step: 0},
	} {
		want, err := json.Marshal(struct {
			plain
			StepSeconds float64 `json:"step_seconds"`
		}{plain(tl), tl.Step.Seconds()})
		require.NoError(t, err)
		got, err := json.Marshal(tl)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
		var back Timeline
		require.NoError(t, json.Unmarshal(got, &back))
		assert.Equal(t, tl.Step, back.Step)
	}
}

// WriteJSON writes the timelines one at a time into the rest of the
// report: the bytes are those of the whole report marshalled, indented and
// unescaped at once, with and without timelines, in groups and with
// strings that need escapes.
func TestWriteJSONStreamsTimelines(t *testing.T) {
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	pts := []Point{{T: t0, Value: 0.5, Count: 3}, {T: t0.Add(time.Minute), Value: rules.Number(math.NaN()), Count: 0}, {T: t0.Add(2 * time.Minute), Value: rules.Number(math.Inf(1)), Count: 1}}
	tls := []Timeline{
		{Signal: "ttft", Stat: "p95", Step: time.Minute, Points: pts},
		{Signal: "kv_usage", Stat: "mean", Replica: "vllm-<0>&\"x\"é\u2028", Step: 90 * time.Second, Points: pts[:1]},
		{Signal: "waiting", Stat: "mean", Step: time.Minute, Points: []Point{}},
		{Signal: "running", Stat: "mean", Step: time.Minute},
	}
	// oracle is WriteJSON as it was: the whole report at once.
	oracle := func(r *Report) string {
		out := r.forJSON()
		for _, s := range nonFiniteWarnings(out) {
			if !slices.Contains(out.Warnings, s) {
				out.Warnings = append(out.Warnings, s)
			}
		}
		b, err := out.MarshalJSON()
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, b, "", "  "))
		buf.WriteByte('\n')
		return string(unescapeHTML(buf.Bytes()))
	}
	base := func() *Report {
		return &Report{SchemaVersion: SchemaVersion, Verdict: rules.Verdict("degraded"), Summary: "TTFT p95 up >= 1.5x & <more>",
			Warnings: []string{"a <warning>"}}
	}
	one := base()
	one.Timelines = tls[:1]
	many := base()
	many.Timelines = tls
	grouped := base()
	grouped.Timelines = tls[1:]
	inner := base()
	inner.Timelines = tls[:2]
	grouped.Groups = []*Report{inner}
	// A string that holds the placeholder's signal, ahead of the timelines.
	marked := base()
	marked.Summary = timelinesMark
	marked.Timelines = tls
	for name, r := range map[string]*Report{"none": base(), "one": one, "many": many, "grouped": grouped, "marked string": marked} {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			require.NoError(t, r.WriteJSON(&got))
			require.Equal(t, oracle(r), got.String())
			var back map[string]any
			require.NoError(t, json.Unmarshal(got.Bytes(), &back))
		})
	}
	require.Len(t, many.Timelines, len(tls), "WriteJSON leaves the report as it was")
	assert.Equal(t, "ttft", many.Timelines[0].Signal)
}

// The top of a split report without a culprit group (both groups share
// the verdict) says the present symptoms of its union by group, in text
// and Markdown alike, and leaves the numbers to the groups.
func TestSplitSummarySymptomsByGroup(t *testing.T) {
	sym := func(id rules.SymptomID, present bool, model string) rules.Symptom {
		return rules.Symptom{ID: id, Present: present, Evaluable: true, Group: map[string]string{"model_name": model},
			Evidence: []rules.Evidence{{ID: rules.TTFTP95, Text: "ttft_p95 2s vs baseline 1s: 2x"}}}
	}
	a := &Report{Verdict: rules.Undetermined, Group: map[string]string{"model_name": "a"}}
	b := &Report{Verdict: rules.Undetermined, Group: map[string]string{"model_name": "b"}}
	r := &Report{Verdict: rules.Undetermined, Groups: []*Report{a, b},
		Symptoms: []rules.Symptom{sym(rules.SymptomTTFT, true, "a"), sym(rules.SymptomTPOT, false, "a"),
			sym(rules.SymptomTTFT, true, "b"), sym(rules.SymptomTail, true, "b")}}
	want := "symptoms present: model_name=a: ttft; model_name=b: ttft, tail"
	var txt, md bytes.Buffer
	require.NoError(t, r.WriteText(&txt))
	require.NoError(t, r.WriteMarkdown(&md))
	assert.Contains(t, txt.String(), want)
	assert.Contains(t, md.String(), want)
	assert.NotContains(t, txt.String(), "numbers (incident vs baseline window)", "the groups carry the numbers")
	assert.Equal(t, "none", presentSymptoms(&Report{}))
	assert.Equal(t, "ttft", presentSymptoms(&Report{Symptoms: []rules.Symptom{{ID: rules.SymptomTTFT, Present: true}}}))
}

// A change within sampling noise says so in its short form, where the
// clause that explains it is cut off; any other change reads as before.
func TestLeadClauseSamplingNoise(t *testing.T) {
	text := "ttft_p95 450ms vs baseline 330ms: 1.36x; within sampling noise: z 1.5 (up: >= 1.2x)"
	within := rules.Evidence{ID: rules.TTFTP95, Fact: rules.Fact{Incident: rules.Measurement{Count: 120}}, Text: text, Lead: "ttft_p95 450ms vs baseline 330ms: 1.36x", Effect: &rules.Effect{Ratio: 1.36, WithinSampling: true, SamplingKnown: true, SamplingZ: 1.5}}
	assert.Equal(t, "ttft_p95 450ms vs baseline 330ms: 1.36x, within sampling noise (n=120 requests)", compactEvidence(within))
	beyond := within
	beyond.Effect = &rules.Effect{Ratio: 1.36, Beyond: true}
	beyond.Lead = "ttft_p95 450ms vs baseline 330ms: 1.36x, moderate"
	beyond.Text = beyond.Lead + "; beyond noise 1.2x-1.5x over 30/30 intervals"
	assert.Equal(t, "ttft_p95 450ms vs baseline 330ms: 1.36x, moderate (n=120 requests)", compactEvidence(beyond))
}
