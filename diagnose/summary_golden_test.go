package diagnose_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/golden"
	"github.com/whyslow/whyslow/internal/textfmt"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// summaryBlock returns the text report's head: the title, the verdict
// and the summary block, up to the next section.
func summaryBlock(t *testing.T, text string) string {
	t.Helper()
	i := strings.Index(text, "\nSummary\n-------\n")
	require.GreaterOrEqual(t, i, 0, "no summary block:\n%s", text)
	rest := text[i+len("\nSummary\n-------\n"):]
	// The block ends at the blank line before the next heading.
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j+1]
	}
	return text[:i+len("\nSummary\n-------\n")] + rest
}

// maxScenarioReportLines bounds the default text report of a fleetsim
// scenario (8 pods, 60 minutes), two lines more per warning. The
// hot-replica report was 543 lines before issue 14's short layout, and
// is ~240 now; --verbose restores the full detail.
const maxScenarioReportLines = 272 // 270, and a line for a finding's driver (kv-preemption names what filled the cache)

// articleHypotheses is how many hypotheses the map had when
// maxScenarioReportLines was set.
const articleHypotheses = 12

// checkSummary checks a report's default text: the summary block against
// its golden file (testdata/summary/NAME.txt; -update rewrites it),
// the block's length (at most 15 items' worth of lines, numbers included),
// that no line of the whole report is wider than report.TextWidth, and,
// for a fleetsim scenario, the length of the whole report.
func checkSummary(t *testing.T, name string, rep *report.Report) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, rep.WriteText(&b))
	text := b.String()
	for n, line := range strings.Split(text, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), report.TextWidth, "%s: line %d is too wide: %q", name, n+1, line)
	}
	// The summary names each rival of the verdict on a line of its own
	// (two when wrapped).
	rivals := 0
	for _, h := range rep.Hypotheses {
		if string(h.ID) == string(rep.Verdict) {
			rivals = len(h.Rivals)
		}
	}
	if strings.HasPrefix(name, "scenario-") {
		// A typical incident of a fleet of 8 pods: the answer up front,
		// the detail short (issue 14); --verbose restores everything.
		// Warnings, the report's and its signals', are said in full (a
		// line or two each), whatever their number.
		sigWarns := map[string]bool{}
		for _, s := range rep.Signals.Fleet {
			for _, w := range s.Warnings {
				sigWarns[w] = true
			}
		}
		// Each hypothesis beyond the article's twelve adds its line (two
		// when wrapped) to the ruled-out list.
		extra := max(0, len(rules.Map())-articleHypotheses)
		budget := maxScenarioReportLines + 2*(len(rep.Warnings)+len(sigWarns)+rivals+extra)
		lines := strings.Count(text, "\n")
		t.Logf("%s: %d lines (budget %d)", name, lines, budget)
		assert.LessOrEqual(t, lines, budget, "%s: the default text report is long:\n%s", name, text)
	}
	block := summaryBlock(t, text)
	lines := strings.Count(block, "\n") - 5 // title, rule, verdict, blank, heading, rule
	assert.LessOrEqual(t, lines, 22+2*rivals, "%s: the summary block is short:\n%s", name, block)
	golden.Check(t, filepath.Join("testdata", "summary", name+".txt"), []byte(block))
	checkSummaryClaims(t, name, rep, text, block)
}

// checkSummaryClaims derives what the summary may say about confidence
// from the report's data and checks that it says it, and that it agrees
// with the ranked list below it: the confidence is the verdict finding's;
// every supported hypothesis with another mitigation
// (rules.SameMitigation) within the lead of the verdict's score is named
// with the score the ranked list prints; a tie is never high; "no
// competing supported hypothesis" only when there is none.
func checkSummaryClaims(t *testing.T, name string, rep *report.Report, text, block string) {
	t.Helper()
	var verdict *rules.Finding
	for i, h := range rep.Hypotheses {
		if string(h.ID) == string(rep.Verdict) {
			verdict = &rep.Hypotheses[i]
		}
	}
	checkReplicaClaims(t, name, rep, text)
	checkImprovementClaims(t, name, rep, text)
	checkMovedClaims(t, name, rep, text, block)
	if verdict == nil {
		assert.NotContains(t, block, "  - confidence:", "%s: no hypothesis verdict, no confidence", name)
		return
	}
	lead := rules.DefaultThresholds.Lead
	conf := regexp.MustCompile(`(?m)^  - confidence: (\w+): `).FindStringSubmatch(block)
	require.NotNil(t, conf, "%s: the summary says the confidence:\n%s", name, block)
	assert.Equal(t, string(verdict.Confidence), conf[1], "%s: the summary's confidence is the verdict's", name)
	listed := map[string]string{} // id -> score as the ranked list prints it
	for _, m := range regexp.MustCompile(`(?m)^\d+\. (\S+) \[supported, score ([0-9.]+)\]`).FindAllStringSubmatch(text, -1) {
		listed[m[1]] = m[2]
	}
	competing, tied := 0, 0
	for _, h := range rep.Hypotheses {
		if h.ID == verdict.ID || h.Status != rules.Supported || rules.SameMitigation(*verdict, h) {
			continue
		}
		competing++
		if math.Abs(verdict.Score-h.Score) >= lead-1e-9 {
			continue
		}
		tied++
		score := fmt.Sprintf("%.2f", h.Score)
		assert.Equal(t, score, listed[string(h.ID)], "%s: %s is listed as supported with its score", name, h.ID)
		assert.Regexp(t, fmt.Sprintf(`(?m)^      - %s \(score %s, tied`, regexp.QuoteMeta(string(h.ID)), regexp.QuoteMeta(score)), block,
			"%s: the summary names the tied %s with its score", name, h.ID)
	}
	if tied > 0 {
		assert.NotEqual(t, "high", conf[1], "%s: a tie is never high", name)
	}
	if strings.Contains(block, "no competing supported hypothesis") {
		assert.Zero(t, competing, "%s: the summary says no competing hypothesis", name)
	}
}

// checkReplicaClaims derives the replica balance from the per-replica
// TTFT p95 (the table's column): the worst replica against the median of
// the others' (a hot replica dominates the fleet's p95, so the fleet is
// no yardstick). The report names the worst replica and calls it a hot
// spot exactly when that ratio reaches the Hotspot threshold.
func checkReplicaClaims(t *testing.T, name string, rep *report.Report, text string) {
	t.Helper()
	th := rules.DefaultThresholds
	exporter := map[string]bool{}
	for _, e := range rep.Inputs.Exporters {
		for _, n := range e.Targets {
			exporter[n] = true
		}
	}
	worst, worstV := "", math.Inf(-1)
	var vs []float64
	for n := range rep.Signals.Replicas {
		q, ok := rep.ReplicaQuantile(n, catalog.SignalTTFT, 0.95)
		if exporter[n] || !ok || math.IsNaN(float64(q.Value)) || float64(q.Count) < th.MinSamples {
			continue
		}
		vs = append(vs, float64(q.Value))
		if v := float64(q.Value); v > worstV || (v == worstV && n < worst) {
			worst, worstV = n, v
		}
	}
	line := regexp.MustCompile(`(?m)^  - worst replica TTFT p95: (\S+) .*$`).FindStringSubmatch(unwrap(text))
	if len(vs) < 2 {
		return
	}
	slices.Sort(vs)
	others := slices.Delete(slices.Clone(vs), len(vs)-1, len(vs))
	med := others[len(others)/2]
	if len(others)%2 == 0 {
		med = (others[len(others)/2-1] + others[len(others)/2]) / 2
	}
	if !(med > 0) {
		return
	}
	require.NotNil(t, line, "%s: the per-replica section compares the worst replica with the others", name)
	assert.Equal(t, worstV, mustQuantile(t, rep, line[1]), "%s: %s is the worst replica", name, line[1])
	hot := worstV/med >= th.Hotspot
	assert.Equal(t, hot, strings.Contains(line[0], ", a hot spot ("), "%s: worst replica %.3gs vs the others' median %.3gs: %s", name, worstV, med, line[0])
	assert.Equal(t, !hot, strings.Contains(line[0], ", balanced ("), "%s: %s", name, line[0])
	assert.Contains(t, line[0], textfmt.Multiple(worstV/med), "%s: the ratio to the others' median", name)
}

func mustQuantile(t *testing.T, rep *report.Report, replica string) float64 {
	t.Helper()
	q, ok := rep.ReplicaQuantile(replica, catalog.SignalTTFT, 0.95)
	require.True(t, ok, "no TTFT p95 for %s", replica)
	return float64(q.Value)
}

// unwrap joins the text report's wrapped list items into one line each:
// a line indented by four spaces or more that starts no item ("- ")
// continues the one before.
func unwrap(text string) string {
	var b strings.Builder
	for i, l := range strings.Split(text, "\n") {
		trim := strings.TrimLeft(l, " ")
		if i > 0 && len(l)-len(trim) >= 4 && !strings.HasPrefix(trim, "- ") && trim != "" {
			b.WriteString(" " + trim)
			continue
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(l)
	}
	return b.String()
}

// checkImprovementClaims checks that no change in a fact's better
// direction carries a severity: in the report's data (each evidence's
// effect) and in every "X vs baseline Y: Rx, severity" the text prints.
func checkImprovementClaims(t *testing.T, name string, rep *report.Report, text string) {
	t.Helper()
	better := func(id rules.FactID, ratio float64) bool {
		info, ok := rules.Info(id)
		return ok && ((info.Better == rules.Lower && ratio < 1) || (info.Better == rules.Higher && ratio > 1))
	}
	var ev []rules.Evidence
	for _, s := range rep.Symptoms {
		ev = append(ev, s.Evidence...)
	}
	for _, h := range rep.Hypotheses {
		ev = append(append(ev, h.Evidence...), h.CounterEvidence...)
	}
	for _, e := range ev {
		if e.Effect == nil || !e.Effect.Beyond || !better(e.ID, e.Effect.Ratio) {
			continue
		}
		assert.Empty(t, e.Effect.Severity, "%s: %s improved (%.2fx) and carries no severity", name, e.ID, e.Effect.Ratio)
	}
	for _, m := range regexp.MustCompile(`(\w+) \S+(?: \S+)? vs baseline \S+(?: \S+)?: [<>=]*\s*([0-9.,]+)x, (mild|moderate|severe)`).FindAllStringSubmatch(unwrap(text), -1) {
		r, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
		require.NoError(t, err)
		assert.False(t, better(rules.FactID(m[1]), r), "%s: an improvement is graded like a regression: %s", name, m[0])
	}
}

// checkMovedClaims checks the change point says one number for a series
// the summary's numbers show: the Windows section's ratio of a fact's
// series is the fact's incident over baseline value when the windows come
// from the change point, and the summary names the largest movers first.
func checkMovedClaims(t *testing.T, name string, rep *report.Report, text, block string) {
	t.Helper()
	cp := rep.Windows.ChangePoint
	if cp == nil || !cp.Used || len(cp.Signals) == 0 {
		return
	}
	moved := regexp.MustCompile(`(?m)^      - moved: (.*)$`).FindStringSubmatch(unwrap(text))
	require.NotNil(t, moved, "%s: the Windows section says what moved", name)
	var order []string
	prev := math.Inf(1)
	for _, m := range regexp.MustCompile(`(\w+) [^,]*? -> [^,(]*?\(([0-9.,]+)x\)`).FindAllStringSubmatch(moved[1], -1) {
		r, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
		require.NoError(t, err)
		order = append(order, m[1])
		if f, ok := rep.Facts[rules.FactID(m[1])]; ok && f.Missing == nil && float64(f.Baseline.Value) > 0 {
			assert.Equal(t, textfmt.Multiple(float64(f.Incident.Value)/float64(f.Baseline.Value)), m[2]+"x",
				"%s: %s moved by the ratio the fact says", name, m[1])
		}
		step := math.Abs(math.Log(r))
		assert.LessOrEqual(t, step, prev+0.01, "%s: the moved series, the largest step first: %s", name, moved[1])
		prev = step
	}
	if len(order) == 0 {
		return
	}
	named := regexp.MustCompile(`change point \S+ \((\w+)`).FindStringSubmatch(unwrap(block))
	require.NotNil(t, named, "%s: the summary names what moved", name)
	assert.Equal(t, order[0], named[1], "%s: the summary names the largest mover first", name)
}

// The real captures (testdata/realdata/vllm) each get a summary block; a
// capture without a scrape time takes its file's mtime, fixed here.
func TestSummaryRealCaptures(t *testing.T) {
	src := filepath.Join("..", "testdata", "realdata", "vllm")
	files, err := filepath.Glob(filepath.Join(src, "*.prom"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	mtime := time.Date(2026, 9, 22, 10, 30, 0, 0, time.UTC)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".prom")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			// A short folder: a path is one word, which text never breaks.
			// (and no digits in it, which would read as a scrape time).
			tmp, err := os.MkdirTemp("", "ws")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(tmp) })
			dir := filepath.Join(tmp, "capture")
			require.NoError(t, os.Mkdir(dir, 0o755))
			path := filepath.Join(dir, filepath.Base(f))
			require.NoError(t, os.WriteFile(path, data, 0o644))
			require.NoError(t, os.Chtimes(path, mtime, mtime))
			ev, err := snapshot.Read(context.Background(), []string{path}, snapshot.Options{})
			require.NoError(t, err)
			rep, err := diagnose.Diagnose(ev, diagnose.Options{})
			require.NoError(t, err)
			rep.Inputs.Sources = []string{filepath.Base(f)}
			checkSummary(t, "real-"+name, rep)
		})
	}
}
