package html_test

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/golden"
	"github.com/whyslow/whyslow/internal/reportfixture"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

func TestWriteHTMLGolden(t *testing.T) {
	html := reportfixture.HTML(t, reportfixture.Article())
	golden.Check(t, filepath.Join("testdata", "report.html.golden"), reportfixture.StripSVG([]byte(html)))
	// Keep the self-contained file small enough to mail around.
	assert.Less(t, len(html), 250_000, "size of the HTML report")
	t.Logf("HTML report: %d bytes, %d bytes without the plots", len(html), len(reportfixture.StripSVG([]byte(html))))
}

func TestWriteHTMLStructure(t *testing.T) {
	html := reportfixture.HTML(t, reportfixture.Article())
	require.True(t, strings.HasPrefix(html, "<!DOCTYPE html>"))

	// Self-contained: nothing to fetch.
	for _, s := range []string{"<script", "<link", "<img", "src=", "@import", "url(", "<iframe"} {
		assert.NotContains(t, html, s)
	}
	for _, m := range regexp.MustCompile(`https?://[^"\s]*`).FindAllString(html, -1) {
		assert.Contains(t, []string{"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}, m, "only XML namespace names, never a fetched URL")
	}

	// The verdict box (coloured by outcome) first, then the summary, the
	// timelines, the before/after table and the hypotheses (issue 14).
	order := []string{`<p class="verdict verdict-incident">verdict: prefill-long-prompts`, "<h2>Summary</h2>", "<h2>Timelines</h2>",
		"<h2>Before and after: p50 and p95 per signal</h2>", "<h2>Hypotheses, ranked</h2>", "<h2>Symptoms</h2>", "<h2>Per replica</h2>"}
	reportfixture.InOrder(t, html, order)

	// One plot per timeline signal of the fixture, each with the incident
	// window shaded (red, translucent) and the baseline lightly (grey).
	plots := reportfixture.Plots(html)
	require.Len(t, plots, 7, "ttft, queue_time, prefill_time, tpot, waiting, running, kv_usage")
	// Preemptions, zero throughout, take one line.
	assert.Contains(t, html, `<figure class="plot zero"><figcaption><strong>preemptions (per-second rate)</strong>: all zero over the window, 2026-03-14 09:30–10:30Z (1h): 60 intervals of 1m</figcaption></figure>`)
	for _, p := range plots {
		assert.Regexp(t, `fill:#D52627;fill-opacity:0\.1\d+`, p, "incident shading")
		assert.Regexp(t, `fill:#7E7E7E;fill-opacity:0\.1\d+`, p, "baseline shading")
		assert.Contains(t, p, "stroke:#1F3A5F;stroke-width:2.5", "bold fleet line")
		assert.Contains(t, p, ">10:00<", "time axis labelled at round UTC times")
	}
	// The fleet TTFT line has a gap where an interval had no request:
	// two segments, not a drop to zero.
	assert.Equal(t, 2, strings.Count(plots[0], "stroke:#1F3A5F;stroke-width:2.5"))
	// Waiting and KV usage draw one line per replica, named in the legend.
	waiting := html[strings.Index(html, "<strong>waiting requests"):]
	waiting = waiting[:strings.Index(waiting, "</figure>")]
	for _, rep := range []string{"vllm-0", "vllm-1", "vllm-2", "fleet (sum over replicas)"} {
		assert.Contains(t, waiting, rep)
	}
	assert.Equal(t, 4, strings.Count(waiting, "stroke:#1F3A5F")+strings.Count(waiting, "stroke:#1F77B4")+
		strings.Count(waiting, "stroke:#FF7F0E")+strings.Count(waiting, "stroke:#2CA02C"))

	// Moved rows of the before/after table are marked.
	assert.Contains(t, html, `<tr class="mark"><td>prefill_time</td>`)
	assert.Contains(t, html, `<tr><td>queue_time</td>`)
	// The verdict names no replica: no row is a culprit's, no plot draws
	// a replica's TTFT.
	assert.NotContains(t, html, `<span class="tag">`)
	assert.NotContains(t, html, `class="culprit"`)
	assert.NotContains(t, html, "(culprit)")
}

// culpritReport is the render fixture with a verdict whose evidence
// names vllm-2 (its TTFT p95 over the fleet's), and vllm-2's TTFT p95
// timeline: the fleet's, doubled in the incident.
func culpritReport(t *testing.T) *report.Report {
	t.Helper()
	r := reportfixture.Article()
	i := slices.IndexFunc(r.Hypotheses, func(h rules.Finding) bool { return string(h.ID) == string(r.Verdict) })
	require.GreaterOrEqual(t, i, 0)
	r.Hypotheses[i].Evidence = append(r.Hypotheses[i].Evidence, rules.Evidence{
		ID: rules.ReplicaTTFTRatio, Fact: rules.Fact{Incident: rules.Measurement{Value: 1.9, Count: math.NaN()}, Source: "vllm-2: vllm:time_to_first_token_seconds per replica", Replica: "vllm-2"},
		Text: "replica_ttft_ratio 1.9x"})
	require.NotNil(t, r.NamedCulprit())
	require.Equal(t, "vllm-2", r.NamedCulprit().Name)
	for _, tl := range r.Timelines {
		if tl.Signal == "ttft" && tl.Replica == "" {
			tl.Replica = "vllm-2"
			tl.Points = slices.Clone(tl.Points)
			for k := range tl.Points {
				if tl.Points[k].T.After(r.Windows.ChangePoint.Time) {
					tl.Points[k].Value *= 2
				}
			}
			r.Timelines = append(r.Timelines, tl)
			break
		}
	}
	return r
}

// The replica the verdict names is marked in the per-replica table (a
// class and a visible tag) and drawn on the TTFT plot beside the fleet;
// text and Markdown stay as they were.
func TestWriteHTMLCulprit(t *testing.T) {
	r := culpritReport(t)
	html := reportfixture.HTML(t, r)
	assert.Contains(t, html, `<tr class="culprit"><td>vllm-2 <span class="tag">culprit</span></td>`)
	assert.Equal(t, 1, strings.Count(html, `<span class="tag">culprit</span>`), "one row")
	assert.Contains(t, html, `<tr><td>vllm-0</td>`)

	ttft := reportfixture.Figure(t, html, "TTFT p95")
	assert.True(t, strings.Contains(ttft, "stroke:#AD1457"), "the culprit's TTFT line")
	ttft = string(reportfixture.StripSVG([]byte(ttft)))
	assert.Contains(t, ttft, `<li class="bold"><span style="border-color: #ad1457"></span>vllm-2 (culprit)</li>`)
	assert.NotContains(t, ttft, "vllm-0")

	var txt, md bytes.Buffer
	require.NoError(t, r.WriteText(&txt))
	require.NoError(t, r.WriteMarkdown(&md))
	rows := 0
	for _, line := range strings.Split(txt.String()+md.String(), "\n") {
		if f := strings.Fields(strings.Trim(line, "| ")); len(f) > 1 && f[0] == "vllm-2" {
			rows++
			assert.NotContains(t, line, "culprit", "text and Markdown rows carry no tag")
			assert.NotContains(t, line, "**", "nor a mark")
		}
	}
	assert.Equal(t, 2, rows, "vllm-2's row in the text and the Markdown per-replica tables")
}

func TestWriteHTMLEscapes(t *testing.T) {
	r := reportfixture.Article()
	evil := `<script>alert("x")</script>`
	r.Summary = evil
	r.Warnings = append(r.Warnings, evil)
	r.Timelines[len(r.Timelines)-1].Replica = evil
	html := reportfixture.HTML(t, r)
	assert.NotContains(t, html, "<script>")
	assert.Contains(t, html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
}

func TestWriteHTMLWithoutTimelines(t *testing.T) {
	r := reportfixture.Article()
	r.Timelines = nil
	html := reportfixture.HTML(t, r)
	assert.NotContains(t, html, "<svg")
	assert.NotContains(t, html, "<h2>Timelines</h2>")
	assert.Contains(t, html, "<h2>Symptoms</h2>")
}

func TestWriteHTMLSplit(t *testing.T) {
	html := reportfixture.HTML(t, reportfixture.Split())
	// The first group has timelines, the second none.
	assert.Equal(t, 1, strings.Count(html, "<h2>Timelines</h2>"))
	assert.Contains(t, html, "group model_name=qwen-7b: no-incident")
}
