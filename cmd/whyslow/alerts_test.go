package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/alerts"
)

// TestAlertsCommand: the command writes exactly what alerts.Generate
// gives for the default options (the golden file of package alerts),
// library option names read as flags (flagHints).
func TestAlertsCommand(t *testing.T) {
	code, out, errOut := whyslow(t, "", "alerts")
	require.Equal(t, exitOK, code, errOut)
	want, err := os.ReadFile(filepath.Join("..", "..", "alerts", "testdata", "default-rules.yml"))
	require.NoError(t, err)
	assert.Equal(t, flagHints.Replace(string(want)), out)
	assert.Contains(t, errOut, "no alert for hypothesis proxy-network")
	assert.Contains(t, errOut, "not expressible in PromQL: corr_running_tpot")
}

func TestAlertsCommandFlags(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rules.yml")
	code, out, errOut := whyslow(t, "", "alerts", "--slo", "ttft_p95=2s", "--for", "15m", "--rate-window", "2m",
		"--baseline-offset", "7d", "--by", "model_name,namespace", "--vllm-version", "V1", "-o", p)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	assert.Contains(t, s, "whyslow:ttft_p95 > 2")
	assert.Contains(t, s, "for: 15m")
	assert.Contains(t, s, "[2m] offset 1w")
	assert.Contains(t, s, "sum by (le, model_name, namespace)")
	assert.NotContains(t, s, "vllm:gpu_cache_usage_perc", "V1 only: no V0 names")
	assert.Contains(t, s, "severity: critical", "an SLO-based symptom alert pages")
}

// TestAlertsCommandFormats: --format alertmanager writes the inhibit
// rules of the same options; --scrape-interval sets the resolution of the
// queue's shape.
func TestAlertsCommandFormats(t *testing.T) {
	code, out, errOut := whyslow(t, "", "alerts", "--format", "alertmanager")
	require.Equal(t, exitOK, code, errOut)
	rf, err := alerts.Generate(alerts.DefaultOptions)
	require.NoError(t, err)
	want, err := rf.AlertmanagerYAML()
	require.NoError(t, err)
	assert.Equal(t, string(want), out)
	assert.Contains(t, out, "inhibit_rules:")

	code, out, errOut = whyslow(t, "", "alerts", "--format", "prometheus", "--scrape-interval", "30s")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "record: whyslow:waiting_burst_scrape")
	assert.Contains(t, out, "[5m:30s]")
}

func TestAlertsCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"alerts", "--for", "1x"},
		{"alerts", "--rate-window", "0s"},
		{"alerts", "--by", ""},
		{"alerts", "--by", "model-name"},
		{"alerts", "--vllm-version", "banana"},
		{"alerts", "--slo", "ttft=2s"},
		{"alerts", "--thresholds", "nope=1"},
		{"alerts", "--baseline-offset", "1m"},
		{"alerts", "some/path"},
		{"alerts", "--format", "json"},
		{"alerts", "--scrape-interval", "0s"},
		{"alerts", "--scrape-interval", "10m"},
	} {
		code, _, errOut := whyslow(t, "", args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
}
