package diagnose_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
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
const maxScenarioReportLines = 270

// checkSummary checks a report's default text: the summary block against
// its golden file (testdata/render/summary/NAME.txt; -update rewrites it),
// the block's length (at most 15 items' worth of lines, numbers included),
// that no line of the whole report is wider than report.TextWidth, and,
// for a fleetsim scenario, the length of the whole report.
func checkSummary(t *testing.T, name string, rep *diagnose.Report) {
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
		budget := maxScenarioReportLines + 2*(len(rep.Warnings)+len(sigWarns)+rivals)
		lines := strings.Count(text, "\n")
		t.Logf("%s: %d lines (budget %d)", name, lines, budget)
		assert.LessOrEqual(t, lines, budget, "%s: the default text report is long:\n%s", name, text)
	}
	block := summaryBlock(t, text)
	lines := strings.Count(block, "\n") - 5 // title, rule, verdict, blank, heading, rule
	assert.LessOrEqual(t, lines, 22+2*rivals, "%s: the summary block is short:\n%s", name, block)
	renderGolden(t, filepath.Join("summary", name+".txt"), []byte(block))
	checkSummaryClaims(t, name, rep, text, block)
}

// checkSummaryClaims derives what the summary may say about confidence
// from the report's data and checks that it says it, and that it agrees
// with the ranked list below it: the confidence is the verdict finding's;
// every supported hypothesis with another mitigation
// (rules.SameMitigation) within the lead of the verdict's score is named
// with the score the ranked list prints; a tie is never high; "no
// competing supported hypothesis" only when there is none.
func checkSummaryClaims(t *testing.T, name string, rep *diagnose.Report, text, block string) {
	t.Helper()
	var verdict *rules.Finding
	for i, h := range rep.Hypotheses {
		if string(h.ID) == string(rep.Verdict) {
			verdict = &rep.Hypotheses[i]
		}
	}
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
