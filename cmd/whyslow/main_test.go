package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"

	goldenfile "github.com/whyslow/whyslow/internal/golden"
)

// whyslow runs one command line in process and returns its exit status,
// stdout and stderr.
func whyslow(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}
	code := run(context.Background(), e, args)
	return code, out.String(), errb.String()
}

// golden compares got with testdata/NAME, rewriting it under -update and
// writing NAME.got on a mismatch.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), []byte(got))
}

// capture is the real vLLM 0.30.0 capture of ../../testdata/realdata/vllm,
// copied by TestMain under a name with a time in it, so that output does
// not depend on the file's mtime.
var capture string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "whyslow-cmd-test")
	if err != nil {
		panic(err)
	}
	data, err := os.ReadFile("../../testdata/realdata/vllm/lora-multitenancy-experiment-0.30.0.prom")
	if err != nil {
		panic(err)
	}
	capture = filepath.Join(dir, "lora-multitenancy-0.30.0_2026-09-28T10-00-00Z.prom")
	if err := os.WriteFile(capture, data, 0o644); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no args", nil, exitUsage, "Usage"},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"help", []string{"--help"}, exitOK, ""},
		{"version", []string{"--version"}, exitOK, ""},
		{"command help", []string{"quantile", "--help"}, exitOK, "Usage: whyslow quantile"},
		{"unknown flag", []string{"quantile", "--nope", capture}, exitUsage, "flag provided but not defined: -nope"},
		{"missing metric", []string{"quantile", capture}, exitUsage, "--metric is required"},
		{"bad quantile", []string{"quantile", "--metric", "ttft", "--q", "1.5", capture}, exitUsage, `quantile "1.5"`},
		{"bad window", []string{"quantile", "--metric", "ttft", "--window", "yesterday", capture}, exitUsage, "want START/END"},
		{"bad format", []string{"quantile", "--metric", "ttft", "--format", "xml", capture}, exitUsage, `--format "xml"`},
		{"no path", []string{"quantile", "--metric", "ttft"}, exitUsage, "no PATH given"},
		{"missing file", []string{"quantile", "--metric", "ttft", "testdata/does-not-exist.prom"}, exitInput, "does-not-exist.prom"},
		{"not a histogram", []string{"quantile", "--metric", "waiting", capture}, exitInput, `signal "waiting" is a gauge`},
		{"bad alias", []string{"catalog", "--alias", "nonsense", capture}, exitUsage, "want CANONICAL=NAME"},
		{"rules takes no path", []string{"rules", capture}, exitUsage, "rules takes no PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := whyslow(t, "", tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			if tt.err != "" {
				assert.Contains(t, out+errOut, tt.err)
			}
		})
	}
}

func TestFlagsAfterPaths(t *testing.T) {
	code1, out1, _ := whyslow(t, "", "quantile", "--metric", "ttft", capture)
	code2, out2, _ := whyslow(t, "", "quantile", capture, "--metric", "ttft")
	require.Equal(t, exitOK, code1)
	require.Equal(t, exitOK, code2)
	assert.Equal(t, out1, out2)
}

func TestQuantileText(t *testing.T) {
	code, out, errOut := whyslow(t, "", "quantile", "--metric", "ttft", "--q", "0.5,0.95,0.99", capture)
	require.Equal(t, exitOK, code, errOut)
	golden(t, "quantile.txt", out)
}

func TestQuantileJSON(t *testing.T) {
	code, out, errOut := whyslow(t, "", "quantile", "--metric", "vllm:time_to_first_token_seconds", "--format", "json", capture)
	require.Equal(t, exitOK, code, errOut)
	golden(t, "quantile.json", out)

	// The JSON contract: metric, window{start,end}, fleet[{q,value,lower,upper,count}], replicas, warnings.
	var doc struct {
		Metric string `json:"metric"`
		Window struct {
			Start, End string
		} `json:"window"`
		Fleet    []map[string]any            `json:"fleet"`
		Replicas map[string][]map[string]any `json:"replicas"`
		Warnings []string                    `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "vllm:time_to_first_token_seconds", doc.Metric)
	assert.Empty(t, doc.Window.Start, "a single scrape: lifetime values, the start is unknown (null)")
	assert.NotEmpty(t, doc.Window.End)
	require.Len(t, doc.Fleet, 3)
	for _, k := range []string{"q", "value", "lower", "upper", "count"} {
		assert.Contains(t, doc.Fleet[0], k)
	}
	assert.Len(t, doc.Replicas, 1)
	assert.NotNil(t, doc.Warnings)
}

func TestQuantileStdin(t *testing.T) {
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	before := time.Now().UTC().Truncate(time.Second)
	code, out, errOut := whyslow(t, string(data), "quantile", "--metric", "ttft", "-")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "fleet (merged)")
	// A dump read live with no time on its samples is a scrape taken when
	// it was read: the report says that time, and stderr says so once, as
	// a note, not a warning.
	assert.Contains(t, out, "single scrape at "+before.Format("2006-01-02T"), "stdin: timed when read")
	assert.NotContains(t, out, "1970")
	assert.Equal(t, 1, strings.Count(errOut, "note: -: no scrape time on the samples: a dump read live"), errOut)
	assert.NotContains(t, errOut, "warning: -: no scrape time", errOut)
}

func TestRules(t *testing.T) {
	code, out, errOut := whyslow(t, "", "rules")
	require.Equal(t, exitOK, code, errOut)
	for _, id := range []string{"queue-sustained", "queue-burst", "prefill-long-prompts", "prefix-cache-loss",
		"decode-pressure", "kv-preemption", "outside-gpu", "replica-hotspot", "proxy-network"} {
		assert.Contains(t, out, id)
	}
}

func TestCatalog(t *testing.T) {
	code, out, errOut := whyslow(t, "", "catalog", capture)
	require.Equal(t, exitOK, code, errOut)
	golden(t, "catalog.txt", out)
}

func TestOutputFile(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "q.json")
	code, out, errOut := whyslow(t, "", "quantile", "--metric", "ttft", "--format", "json", "-o", dst, capture)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out)
	data, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.True(t, json.Valid(data))
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	clock := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	p := newProgressBar(&b)
	p.now = func() time.Time { return clock }
	p.update(snapshot.Progress{Path: "evidence", What: "dumps", Done: 0, Total: 4})
	p.update(snapshot.Progress{Path: "evidence", What: "dumps", Done: 1, Total: 4}) // throttled
	clock = clock.Add(time.Second)
	p.update(snapshot.Progress{Path: "evidence", What: "dumps", Done: 2, Total: 4})
	p.update(snapshot.Progress{Path: "evidence", What: "dumps", Done: 4, Total: 4}) // completion is always drawn
	p.finish()
	out := b.String()
	assert.NotContains(t, out, "1/4")
	assert.Contains(t, out, "2/4 dumps")
	assert.Contains(t, out, "[###############...............]")
	assert.Contains(t, out, "4/4 dumps")
	assert.True(t, strings.HasSuffix(out, "\r\033[K"), "the bar erases itself")

	// Not a terminal: no bar at all.
	code, _, errOut := whyslow(t, "", "quantile", "--metric", "ttft", capture)
	require.Equal(t, exitOK, code)
	assert.NotContains(t, errOut, "reading")
}

// The embedded sample incident: 4 pods, one hour, long prompts from 10:30.
const sample = "../../examples/postmortem/evidence/long-prompts.om.gz"

func TestDiagnoseSample(t *testing.T) {
	code, out, errOut := whyslow(t, "", "diagnose", sample)
	require.Equal(t, exitOK, code, errOut)
	assert.True(t, strings.HasPrefix(out, "whyslow report: prefill-long-prompts\n"), out[:min(len(out), 200)])

	code, out, errOut = whyslow(t, "", "diagnose", "--format", "json", "--slo", "ttft_p95=500ms", sample)
	require.Equal(t, exitOK, code, errOut)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	for _, k := range []string{"schema_version", "verdict", "windows", "symptoms", "hypotheses", "signals", "warnings"} {
		assert.Contains(t, doc, k)
	}
	assert.JSONEq(t, `1`, string(doc["schema_version"]))
	assert.JSONEq(t, `"prefill-long-prompts"`, string(doc["verdict"]))

	for _, format := range []string{"markdown", "html"} {
		code, out, errOut = whyslow(t, "", "diagnose", sample, "--format", format)
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "prefill-long-prompts", format)
	}
}

// A report written with -o reads as the one on standard output: library
// option names are written as the command's flags there too.
func TestOutputFileAsStdout(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		code, want, errOut := whyslow(t, "", "diagnose", "--format", format, sample)
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, want, "--alias client_ttft=METRIC", format)
		require.NotContains(t, want, "Catalog.Alias", format)
		dst := filepath.Join(t.TempDir(), "report."+format)
		code, out, errOut := whyslow(t, "", "diagnose", "--format", format, "-o", dst, sample)
		require.Equal(t, exitOK, code, errOut)
		assert.Empty(t, out)
		got, err := os.ReadFile(dst)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), format)
	}
}

func TestDiagnoseGivenWindows(t *testing.T) {
	code, out, errOut := whyslow(t, "", "diagnose",
		"--baseline", "2026-09-22T10:00:00Z/2026-09-22T10:25:00Z",
		"--incident", "2026-09-22T10:35:00Z/25m", "--format", "json", sample)
	require.Equal(t, exitOK, code, errOut)
	var doc struct {
		Verdict string `json:"verdict"`
		Windows struct {
			Baseline struct{ Start, End, From string } `json:"baseline"`
			Incident struct{ Start, End, From string } `json:"incident"`
		} `json:"windows"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "prefill-long-prompts", doc.Verdict)
	assert.Equal(t, "given", doc.Windows.Incident.From)
	assert.Equal(t, "2026-09-22T10:35:00Z", doc.Windows.Incident.Start)
	assert.Equal(t, "2026-09-22T11:00:00Z", doc.Windows.Incident.End)
	assert.Equal(t, "2026-09-22T10:00:00Z", doc.Windows.Baseline.Start)

	code, _, errOut = whyslow(t, "", "diagnose", "--baseline", "2026-09-22T10:00:00Z/2026-09-22T10:25:00Z", sample)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--baseline needs --incident")
	code, _, errOut = whyslow(t, "", "diagnose", "--slo", "ttft=2s", sample)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "NAME one of")
}

func TestCompareSample(t *testing.T) {
	code, out, errOut := whyslow(t, "", "compare", sample)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "prompt_tokens")
	assert.Contains(t, out, "MOVED")

	code, out, errOut = whyslow(t, "", "compare", "--format", "json", sample)
	require.Equal(t, exitOK, code, errOut)
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Rows          []struct {
			Signal string `json:"signal"`
			Moved  bool   `json:"moved"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 1, doc.SchemaVersion)
	moved := map[string]bool{}
	for _, r := range doc.Rows {
		moved[r.Signal] = r.Moved
	}
	assert.True(t, moved["prompt_tokens"], "prompt p95 tripled")
	assert.True(t, moved["ttft"])
	assert.False(t, moved["queue_time"], "the queue did not move")
}

func TestParseSLO(t *testing.T) {
	slo, err := parseSLO("ttft_p95=2s, tpot_p95=80ms,e2e_p99=30,error_share=1%")
	require.NoError(t, err)
	assert.Equal(t, 2.0, slo.TTFTP95)
	assert.InDelta(t, 0.08, slo.TPOTP95, 1e-12)
	assert.Equal(t, 30.0, slo.E2EP99)
	assert.InDelta(t, 0.01, slo.ErrorShare, 1e-12)
	for _, bad := range []string{"ttft_p95", "ttft_p95=-1s", "nope=1s", "error_share=x"} {
		_, err := parseSLO(bad)
		assert.Error(t, err, bad)
	}
}

func TestThresholdsFlag(t *testing.T) {
	th, err := parseThresholds("rise=2, kv_high=0.95")
	require.NoError(t, err)
	assert.Equal(t, 2.0, th.Rise)
	assert.Equal(t, 0.95, th.KVHigh)
	assert.Equal(t, rules.DefaultThresholds.Steady, th.Steady)
	for _, bad := range []string{"rise", "rise=x", "nope=1", "rise=-1"} {
		_, err := parseThresholds(bad)
		assert.Error(t, err, bad)
	}
	// A rise threshold above the sample's TTFT change turns its verdict.
	code, out, errOut := whyslow(t, "", "diagnose", "--thresholds", "rise=10", "--format", "json", sample)
	require.Equal(t, exitOK, code, errOut)
	assert.NotContains(t, out, `"verdict": "prefill-long-prompts"`)
	code, _, errOut = whyslow(t, "", "diagnose", "--thresholds", "kv=1", sample)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `unknown threshold "kv"`)
}

// Quantiles are never merged across models: with two model_name values
// the command asks for --model or --by.
func TestQuantileSeveralModels(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
	for _, m := range []string{"llama", "qwen"} {
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"0.5\",model_name=%q} 80\n", m)
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"1.0\",model_name=%q} 100\n", m)
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=%q} 100\n", m)
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{model_name=%q} 30\n", m)
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{model_name=%q} 100\n", m)
	}
	dump := filepath.Join(t.TempDir(), "vllm-0_2026-09-22T10-00-00Z.prom")
	require.NoError(t, os.WriteFile(dump, []byte(b.String()), 0o644))

	code, _, errOut := whyslow(t, "", "quantile", "--metric", "ttft", dump)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "several models (llama, qwen)")
	assert.Contains(t, errOut, "--model NAME or split with --by model_name", "the command adds its flags to the library's error")

	code, out, errOut := whyslow(t, "", "quantile", "--metric", "ttft", "--model", "qwen", dump)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "fleet (merged)")

	code, out, errOut = whyslow(t, "", "quantile", "--metric", "ttft", "--by", "model_name", dump)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "model_name=llama")
	assert.Contains(t, out, "model_name=qwen")
}

// TestDiagnoseStdinReadTime: a dump piped in with no time on its samples
// is diagnosed as a scrape taken when it was read; the summary's windows
// line says the time, and the report's inputs carry the note, not a
// warning.
func TestDiagnoseStdinReadTime(t *testing.T) {
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	day := time.Now().UTC().Format("2006-01-02")
	_, out, errOut := whyslow(t, string(data), "diagnose", "-")
	assert.Contains(t, out, "windows: none to compare: 1 scrape at "+day, errOut)
	assert.NotContains(t, out, "1970")
	assert.Contains(t, errOut, "note: -: no scrape time on the samples")
	_, js, _ := whyslow(t, string(data), "diagnose", "--format", "json", "-")
	var doc struct {
		Inputs   struct{ Notes []string } `json:"inputs"`
		Warnings []string                 `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	require.Len(t, doc.Inputs.Notes, 1)
	assert.Contains(t, doc.Inputs.Notes[0], "taken as scraped when it was read")
	for _, w := range doc.Warnings {
		assert.NotContains(t, w, "no scrape time", "a note, not a warning")
	}
}
