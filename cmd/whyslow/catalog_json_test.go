package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// A fully instrumented fleet with a DCGM exporter beside every pod: the
// vLLM signals count the pods only (2/2, never 2/4 ... missing), the GPU
// signals count the exporters, and --format json says the same.
func TestCatalogCompanionExporters(t *testing.T) {
	cfg := fleetsim.Scenario("healthy")
	cfg.NumPods = 2
	cfg.Duration = 4 * time.Minute
	cfg.GPUExporter = fleetsim.DCGMPercent
	fleet, err := fleetsim.Run(cfg)
	require.NoError(t, err)
	// Each DCGM exporter a target of its own, without the pod attribution
	// that would fold it into its pod: vllm-0/dcgm-TIME.prom becomes
	// dcgm-vllm-0/TIME.prom.
	dir := t.TempDir()
	require.NoError(t, fleet.WriteDumps(dir, fleetsim.DumpOptions{}))
	dcgm, err := filepath.Glob(filepath.Join(dir, "*", "dcgm-*.prom"))
	require.NoError(t, err)
	require.NotEmpty(t, dcgm)
	attribution := regexp.MustCompile(`,container="[^"]*",namespace="[^"]*",pod="[^"]*"`)
	for _, f := range dcgm {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		to := filepath.Join(dir, "dcgm-"+filepath.Base(filepath.Dir(f)))
		require.NoError(t, os.MkdirAll(to, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(to, strings.TrimPrefix(filepath.Base(f), "dcgm-")), attribution.ReplaceAll(data, nil), 0o644))
		require.NoError(t, os.Remove(f))
	}
	code, out, errOut := whyslow(t, "", "catalog", "--wide", dir)
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `(?m)^\s*ttft\s+histogram\s+seconds\s+2/2\s`, out)
	assert.NotRegexp(t, `(?m)^\s*ttft\s.*missing`, out, "a DCGM exporter is no vLLM target")
	assert.Regexp(t, `(?m)^\s*gpu_util\s.*\s2/2\s+DCGM_FI_DEV_GPU_UTIL`, out)
	assert.Contains(t, out, "signals from companion exporters")

	code, out, errOut = whyslow(t, "", "catalog", "--format", "json", dir)
	require.Equal(t, exitOK, code, errOut)
	var got struct {
		Targets []struct {
			Name string `json:"name"`
			VLLM bool   `json:"vllm"`
		} `json:"targets"`
		Signals []struct {
			ID        string   `json:"id"`
			Companion bool     `json:"companion"`
			Found     int      `json:"found"`
			Of        int      `json:"of"`
			MissingOn []string `json:"missing_on"`
			Metrics   []struct {
				Metric  string   `json:"metric"`
				Targets []string `json:"targets"`
			} `json:"metrics"`
		} `json:"signals"`
		Missing  []string `json:"missing"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	vllm := 0
	for _, tg := range got.Targets {
		if tg.VLLM {
			vllm++
		}
	}
	assert.Equal(t, 2, vllm)
	assert.Len(t, got.Targets, 4)
	bySignal := map[string]int{}
	for i, s := range got.Signals {
		bySignal[s.ID] = i
	}
	ttft := got.Signals[bySignal["ttft"]]
	assert.Equal(t, 2, ttft.Found)
	assert.Equal(t, 2, ttft.Of)
	assert.False(t, ttft.Companion)
	assert.Empty(t, ttft.MissingOn)
	require.Len(t, ttft.Metrics, 1)
	assert.Equal(t, "vllm:time_to_first_token_seconds", ttft.Metrics[0].Metric)
	gpu := got.Signals[bySignal["gpu_util"]]
	assert.True(t, gpu.Companion)
	assert.Equal(t, 2, gpu.Found)
	assert.Equal(t, 2, gpu.Of)

	code, _, errOut = whyslow(t, "", "catalog", "--format", "yaml", dir)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `--format "yaml"`)
}
