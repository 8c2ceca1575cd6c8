package diagnose_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/report/html"
)

// svgElement matches one inline SVG plot.
var svgElement = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// stripSVG replaces the plots, whose coordinates are floating-point
// output of gonum/plot, with a placeholder: the golden file holds the
// document around them.
func stripSVG(html []byte) []byte {
	return svgElement.ReplaceAll(html, []byte(`<svg><!-- plot drawn by gonum/plot --></svg>`))
}

func writeHTML(t *testing.T, r *diagnose.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, html.Write(&b, r))
	return b.String()
}

func TestWriteHTMLGolden(t *testing.T) {
	html := writeHTML(t, renderReport())
	renderGolden(t, "report.html.golden", stripSVG([]byte(html)))
	// Keep the self-contained file small enough to mail around.
	assert.Less(t, len(html), 250_000, "size of the HTML report")
	t.Logf("HTML report: %d bytes, %d bytes without the plots", len(html), len(stripSVG([]byte(html))))
}

func TestWriteHTMLStructure(t *testing.T) {
	html := writeHTML(t, renderReport())
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
	assertInOrder(t, html, order)

	// One plot per timeline signal of the fixture, each with the incident
	// window shaded (red, translucent) and the baseline lightly (grey).
	plots := svgElement.FindAllString(html, -1)
	require.Len(t, plots, 8, "ttft, queue_time, prefill_time, tpot, waiting, running, kv_usage, preemptions")
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
}

func TestWriteHTMLEscapes(t *testing.T) {
	r := renderReport()
	evil := `<script>alert("x")</script>`
	r.Summary = evil
	r.Warnings = append(r.Warnings, evil)
	r.Timelines[len(r.Timelines)-1].Replica = evil
	html := writeHTML(t, r)
	assert.NotContains(t, html, "<script>")
	assert.Contains(t, html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
}

func TestWriteHTMLWithoutTimelines(t *testing.T) {
	r := renderReport()
	r.Timelines = nil
	html := writeHTML(t, r)
	assert.NotContains(t, html, "<svg")
	assert.NotContains(t, html, "<h2>Timelines</h2>")
	assert.Contains(t, html, "<h2>Symptoms</h2>")
}

func TestWriteHTMLSplit(t *testing.T) {
	html := writeHTML(t, renderSplitReport())
	// The first group has timelines, the second none.
	assert.Equal(t, 1, strings.Count(html, "<h2>Timelines</h2>"))
	assert.Contains(t, html, "group model_name=qwen-7b: no-incident")
}
