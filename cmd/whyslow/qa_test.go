package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// Regressions found by running the command as an SRE would.

// copyCapture copies the test capture into dir and returns its path.
func copyCapture(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	p := filepath.Join(dir, filepath.Base(capture))
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

func TestOutputNeverInsideInput(t *testing.T) {
	dir := t.TempDir()
	dump := copyCapture(t, dir)
	before, err := os.ReadFile(dump)
	require.NoError(t, err)

	tests := []struct {
		name string
		args []string
	}{
		{"output is the input file", []string{"catalog", "-o", dump, dump}},
		{"output in the input folder", []string{"catalog", dir, "-o", filepath.Join(dir, "report.txt")}},
		{"output through dot-dot", []string{"catalog", "-o", filepath.Join(dir, "..", filepath.Base(dir), "r.txt"), dir}},
		{"quantile", []string{"quantile", "--metric", "ttft", "-o", dump, dump}},
		{"diagnose", []string{"diagnose", "--format", "json", "-o", filepath.Join(dir, "sub", "r.json"), dir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := whyslow(t, "", tt.args...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, "inside the input path")
		})
	}
	after, err := os.ReadFile(dump)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the evidence was changed")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing is created under an input path")

	// The same folder reached through a symbolic link.
	link := filepath.Join(t.TempDir(), "evidence")
	require.NoError(t, os.Symlink(dir, link))
	code, _, errOut := whyslow(t, "", "catalog", link, "-o", filepath.Join(dir, "r.txt"))
	assert.Equal(t, exitUsage, code, errOut)

	// Next to the input is fine.
	out := filepath.Join(t.TempDir(), "catalog.txt")
	code, _, errOut = whyslow(t, "", "catalog", "-o", out, dump)
	require.Equal(t, exitOK, code, errOut)
	assert.FileExists(t, out)
}

func TestStdinOnlyOnce(t *testing.T) {
	code, _, errOut := whyslow(t, "", "catalog", "-", "-")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `"-" (standard input) given 2 times`)
}

func TestHelpOnStdoutErrorsOnce(t *testing.T) {
	for _, args := range [][]string{{"diagnose", "--help"}, {"help", "diagnose"}, {"diagnose", capture, "-h"}} {
		code, out, errOut := whyslow(t, "", args...)
		assert.Equal(t, exitOK, code, args)
		assert.True(t, strings.HasPrefix(out, "Usage: whyslow diagnose"), "%v: help on stdout, got %q", args, out)
		assert.Empty(t, errOut, args)
	}

	// A usage error says what is wrong once, and where to find help,
	// without the whole flag list.
	code, out, errOut := whyslow(t, "", "diagnose", "--format")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, "whyslow diagnose: flag needs an argument: -format\nRun 'whyslow diagnose --help' for usage.\n", errOut)
}

func TestNothingUsableSaidOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.prom")
	code, _, errOut := whyslow(t, "", "diagnose", missing)
	assert.Equal(t, exitInput, code)
	assert.Equal(t, 1, strings.Count(errOut, "no such file or directory"), "the problem once, then the summary:\n%s", errOut)
	assert.Contains(t, errOut, "nothing usable read from "+missing+" (1 problem(s) above)")
	assert.NotContains(t, errOut, "snapshot:")
}

func TestPackagePrefixTrimmed(t *testing.T) {
	code, _, errOut := whyslow(t, "", "diagnose", "--by", "nosuchlabel", capture)
	assert.Equal(t, exitInput, code)
	assert.NotContains(t, errOut, "diagnose: diagnose:")
	assert.Contains(t, errOut, "whyslow diagnose: ")
}

func TestWindowOutsideEvidence(t *testing.T) {
	for _, args := range [][]string{
		{"diagnose", "--incident", "2030-01-01T00:00:00Z/1h", capture},
		{"compare", "--baseline", "2030-01-01T00:00:00Z/1h", "--incident", "2030-01-01T01:00:00Z/1h", capture},
		{"quantile", "--metric", "ttft", "--window", "2030-01-01T00:00:00Z/1h", capture},
	} {
		code, out, errOut := whyslow(t, "", args...)
		assert.Equal(t, exitInput, code, args)
		assert.Empty(t, out, args)
		assert.Contains(t, errOut, "lies outside the evidence, whose scrapes span 2026-09-28T10:00:00Z to 2026-09-28T10:00:00Z", args)
	}
}

func TestQuantileExplainsMissing(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown metric", []string{"--metric", "vllm:nope_seconds"}, "histograms present: http_request_duration_highr_seconds"},
		{"gateway signal absent", []string{"--metric", "client_ttft"},
			"(looked for inference_objective_request_ttft_seconds; name another with --alias client_ttft=METRIC)"},
		{"unknown model", []string{"--metric", "ttft", "--model", "llama"}, `no series carries model_name="llama" (models seen: Qwen/Qwen2.5-7B-Instruct)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := whyslow(t, "", append([]string{"quantile", capture}, tt.args...)...)
			assert.Equal(t, exitInput, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
		})
	}

	// Ray Serve's ray_vllm: prefix is recognised without an alias (the
	// alias still works); another prefix: say which alias maps it.
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	ray := strings.ReplaceAll(string(data), "vllm:", "ray_vllm:")
	for _, args := range [][]string{{"quantile", "--metric", "ttft", "-"}, {"quantile", "--metric", "ttft", "--alias", "vllm:=ray_vllm:", "-"}} {
		code, out, errOut := whyslow(t, ray, args...)
		assert.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "ray_vllm:time_to_first_token_seconds")
	}
	other := strings.ReplaceAll(string(data), "vllm:", "myorg_vllm:")
	code, _, errOut := whyslow(t, other, "quantile", "--metric", "ttft", "-")
	assert.Equal(t, exitInput, code)
	assert.Contains(t, errOut, "--alias vllm:=myorg_vllm:")
}

func TestPlanFileChecked(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	tests := []struct {
		name, content, want string
	}{
		{"whole report", `{"schema_version": 1, "verdict": "x", "hypotheses": []}`, "a whole diagnose report, not a plan"},
		{"empty object", `{}`, "not an experiment plan"},
		{"array", `[1, 2]`, "want a JSON object, found a JSON array"},
		{"wrong type", "{\n  \"hypothesis\": 5\n}", `:2: offset 19: field "hypothesis": unexpected JSON number`},
		{"syntax", "{\n  \"hypothesis\": oops\n}", ":2: offset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := write(strings.ReplaceAll(tt.name, " ", "_")+".json", tt.content)
			code, out, errOut := whyslow(t, "", "experiment", "--plan", plan, "--baseline", capture, "--treatment", capture)
			assert.Equal(t, exitInput, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, plan)
			assert.Contains(t, errOut, tt.want)
		})
	}
	plan := write("plan.json", `{"hypothesis": "decode-pressure"}`)
	code, _, errOut := whyslow(t, "", "experiment", "--plan", plan, "-o", plan, "--baseline", capture, "--treatment", capture)
	assert.Equal(t, exitUsage, code, errOut)
}

func TestJSONNotHTMLEscaped(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeJSON(&b, map[string]string{"w": "p99 from 6 observations (need >= 20) <a&b>"}))
	assert.Equal(t, "{\n  \"w\": \"p99 from 6 observations (need >= 20) <a&b>\"\n}\n", b.String())
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"268435456", 268435456, true},
		{"256MiB", 256 << 20, true},
		{"256M", 256 << 20, true},
		{"1GiB", 1 << 30, true},
		{"64 MB", 64 << 20, true},
		{"512KiB", 512 << 10, true},
		{"0", 0, false},
		{"-5M", 0, false},
		{"lots", 0, false},
		{"99999999999G", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if !tt.ok {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestReadLimitsFlags(t *testing.T) {
	code, _, errOut := whyslow(t, "", "catalog", "--max-bytes", "1KiB", capture)
	assert.Equal(t, exitInput, code)
	assert.Contains(t, errOut, "limit exceeded")
	assert.Contains(t, errOut, "hint: --max-bytes raises the size limit of a file (Limits.MaxBytesPerScrape, 1 KiB)")
	assert.NotContains(t, errOut, "--max-samples")

	code, _, errOut = whyslow(t, "", "catalog", "--max-samples", "10", "--keep-cut-files", capture)
	assert.Equal(t, exitOK, code, errOut) // the first samples were read: partial
	assert.Contains(t, errOut, "warning: ", "a run that succeeds prints its problems as warnings")
	assert.NotContains(t, errOut, "error: ")
	assert.Contains(t, errOut, "limit exceeded")
	assert.Contains(t, errOut, "hint: --max-samples raises the limit of samples per scrape (Limits.MaxSeriesPerScrape, 10)")
	code, _, _ = whyslow(t, "", "catalog", "--max-samples", "10", "--strict", capture)
	assert.Equal(t, exitInput, code)

	code, _, errOut = whyslow(t, "", "catalog", "--max-bytes", "lots", capture)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `--max-bytes "lots"`)
}

// The progress bar is erased before the problems are printed, so that the
// first problem does not end up on the bar's line.
func TestProgressBarErasedBeforeProblems(t *testing.T) {
	dir := t.TempDir()
	copyCapture(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vllm-9_2026-09-28T10-00-15Z.prom"), []byte("<html><body>502 Bad Gateway</body></html>\n"), 0o644))
	var stderr bytes.Buffer
	e := &env{stdout: &bytes.Buffer{}, stderr: &stderr, stderrIsTerminal: true}
	var in inputFlags
	ev, err := in.readEvidence(context.Background(), e, []string{dir}, snapshot.Options{})
	require.NoError(t, err)
	require.True(t, ev.Partial())
	s := stderr.String()
	bar, problem := strings.LastIndex(s, "\r\033[K"), strings.Index(s, "warning: ")
	require.GreaterOrEqual(t, bar, 0, s)
	require.GreaterOrEqual(t, problem, 0, s)
	assert.Less(t, bar, problem, "the bar must be erased before problems are printed:\n%q", s)
}

// Each class of bad input, as a new user meets it: the exit code, and a
// message naming the file, the line and what the input is.
func TestBadInputClasses(t *testing.T) {
	data, err := os.ReadFile(capture)
	require.NoError(t, err)
	crlf := bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write([]byte("vllm:num_requests_waiting{pod=\"a\"} 1\n"))
	pad := bytes.Repeat([]byte("# padding\n"), 1<<16)
	for range 40 {
		_, _ = zw.Write(pad)
	}
	require.NoError(t, zw.Close())

	tests := []struct {
		name, file string
		data       []byte
		args       []string
		code       int
		want       []string
		not        []string
	}{
		{"json", "vllm-0_2026-09-28T10-00-00Z.prom", []byte(`{"status":"success","data":{}}`), nil, exitInput,
			[]string{"vllm-0_2026-09-28T10-00-00Z.prom:1: file is JSON, not an exposition"}, nil},
		{"utf-16", "vllm-0_2026-09-28T10-00-00Z.prom", append([]byte{0xff, 0xfe}, []byte("v\x00l\x00l\x00m\x00:\x00a\x00 \x001\x00\n\x00")...), nil, exitInput,
			[]string{":1: file is UTF-16LE text, not UTF-8: convert it to UTF-8"}, []string{"binary data"}},
		{"crlf", "vllm-0_2026-09-28T10-00-00Z.prom", crlf, nil, exitOK,
			[]string{"warning: ", "input normalised: CRLF line endings of"}, []string{"error: ", `counter\r`}},
		{"crlf strict", "vllm-0_2026-09-28T10-00-00Z.prom", crlf, []string{"--strict"}, exitOK,
			[]string{"warning: "}, nil},
		{"gzip bomb", "federate.txt.gz", bomb.Bytes(), []string{"--max-bytes", "1MiB"}, exitInput,
			[]string{"federate.txt.gz: limit exceeded: gzip stream holds more than Limits.MaxBytesPerScrape", "hint: --max-bytes raises"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tt.file)
			require.NoError(t, os.WriteFile(p, tt.data, 0o644))
			before := hashDir(t, dir)
			code, _, errOut := whyslow(t, "", append(append([]string{"catalog"}, tt.args...), p)...)
			assert.Equal(t, tt.code, code, errOut)
			for _, w := range tt.want {
				assert.Contains(t, errOut, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, errOut, n)
			}
			assert.Equal(t, before, hashDir(t, dir), "nothing under the input changed")
		})
	}
}

// hashDir describes every file of dir: name, mode, size, mtime, content.
func hashDir(t *testing.T, dir string) string {
	var sb strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		sb.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			sb.Write(data)
		}
		return nil
	}))
	return sb.String()
}
