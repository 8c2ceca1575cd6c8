package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/examples/internal/sample"
	"github.com/whyslow/whyslow/examples/postmortem/evidence"
	"github.com/whyslow/whyslow/report"
)

// embeddedReport diagnoses the embedded sample once for the tests that
// only look at the report.
var embeddedReport = sync.OnceValues(func() (*report.Report, error) { return postmortem("") })

// TestVerdict checks that the embedded sample is diagnosed as the
// hypothesis its scenario was built to produce.
func TestVerdict(t *testing.T) {
	rep, err := embeddedReport()
	require.NoError(t, err)
	assert.Equal(t, evidence.Expect, string(rep.Verdict), "summary: %s", rep.Summary)
	assert.Equal(t, []string{"vllm-0", "vllm-1", "vllm-2", "vllm-3"}, rep.Inputs.Replicas)
	assert.False(t, rep.Inputs.Partial, "problems: %v", rep.Inputs.Problems)
	require.NotEmpty(t, rep.Hypotheses)
	assert.Equal(t, evidence.Expect, string(rep.Hypotheses[0].ID))
}

// TestRunNoArguments runs the program as README's first command does.
func TestRunNoArguments(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(nil, &stdout, &stderr), "stderr: %s", stderr.String())
	assert.Empty(t, stderr.String())
	for _, s := range []string{"verdict: " + evidence.Expect, "Symptoms", "Hypotheses, ranked", "vllm-3"} {
		assert.Contains(t, stdout.String(), s)
	}
}

// TestRunUsage covers the command lines that stop before any diagnosis.
func TestRunUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings of standard output
		stderr   []string // substrings of standard error
		noStdout bool
	}{
		{name: "list", args: []string{"-list"}, code: 0,
			stdout: []string{"long-prompts", "kv-preemption", "healthy"}},
		{name: "help", args: []string{"-h"}, code: 0, noStdout: true,
			stderr: []string{"usage: postmortem", "-scenario NAME"}},
		{name: "unknown format", args: []string{"-format", "pdf"}, code: 2, noStdout: true,
			stderr: []string{`unknown format "pdf"`}},
		{name: "unknown scenario", args: []string{"-scenario", "nope"}, code: 2, noStdout: true,
			stderr: []string{`unknown scenario "nope"`}},
		{name: "argument", args: []string{"dumps/"}, code: 2, noStdout: true,
			stderr: []string{`unexpected argument "dumps/"`, "whyslow diagnose PATH"}},
		{name: "bad flag", args: []string{"-nope"}, code: 2, noStdout: true,
			stderr: []string{"-nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			require.Equal(t, tt.code, code, "stderr: %s", stderr.String())
			for _, s := range tt.stdout {
				assert.Contains(t, stdout.String(), s)
			}
			for _, s := range tt.stderr {
				assert.Contains(t, stderr.String(), s)
			}
			if tt.noStdout {
				assert.Empty(t, stdout.String())
			}
		})
	}
}

func TestWrite(t *testing.T) {
	rep, err := embeddedReport()
	require.NoError(t, err)

	t.Run("markdown", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, write(&out, rep, "markdown"))
		assert.Contains(t, out.String(), "# ")
		assert.Contains(t, out.String(), evidence.Expect)
		assert.Contains(t, out.String(), "| ")
	})
	t.Run("json", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, write(&out, rep, "json"))
		var got struct {
			SchemaVersion int    `json:"schema_version"`
			Verdict       string `json:"verdict"`
			Hypotheses    []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"hypotheses"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &got))
		assert.Equal(t, report.SchemaVersion, got.SchemaVersion)
		assert.Equal(t, evidence.Expect, got.Verdict)
		require.NotEmpty(t, got.Hypotheses)
		assert.Equal(t, evidence.Expect, got.Hypotheses[0].ID)
		assert.Equal(t, "supported", got.Hypotheses[0].Status)
	})
	t.Run("html", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "report.html")
		require.NoError(t, writeFile(name, rep, "html"))
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		assert.Contains(t, strings.ToLower(string(data)), "<html")
		assert.Contains(t, string(data), evidence.Expect)
		assert.Contains(t, string(data), "<svg", "timeline plots are drawn inline")
	})
	t.Run("unknown", func(t *testing.T) {
		err := write(io.Discard, rep, "pdf")
		assert.ErrorIs(t, err, errUsage)
	})
}

// TestSampleUpToDate regenerates the sample from the simulator and
// compares it with the embedded one, so that a change to the simulator or
// to the scenario cannot leave a stale sample behind; then it checks that
// -scenario reads the same fleet through its own path.
func TestSampleUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates an hour of a 4-pod fleet (a few seconds)")
	}
	assert.Equal(t, evidence.File, sample.FileName(evidence.Scenario))
	regenerated, err := sample.Dump(evidence.Scenario)
	require.NoError(t, err)
	if !bytes.Equal(gunzip(t, regenerated), gunzip(t, evidence.Bytes())) {
		t.Fatalf("the embedded sample %s differs from what the simulator writes now; run\n\tgo generate ./examples/postmortem", evidence.File)
	}

	simulated, err := load(evidence.Scenario)
	require.NoError(t, err)
	embedded, err := evidence.Read()
	require.NoError(t, err)
	require.Len(t, simulated.Targets, len(embedded.Targets))
	for i, tg := range embedded.Targets {
		assert.Equal(t, tg.Name, simulated.Targets[i].Name)
		assert.Equal(t, tg.Scrapes, simulated.Targets[i].Scrapes)
		assert.Equal(t, tg.FamilyNames(), simulated.Targets[i].FamilyNames())
	}
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}
