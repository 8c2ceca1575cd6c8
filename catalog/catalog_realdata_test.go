package catalog_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"

	goldenfile "github.com/whyslow/whyslow/internal/golden"
)

// realdataDir holds the eight real /metrics captures (see its SOURCES.md).
// They are snapshot's fixtures; catalog reads them rather than keeping a
// second copy.
const realdataDir = "../testdata/realdata/vllm"

// goldenDir holds the expected Resolution.String() of each capture.
const goldenDir = "testdata/catalog"

func parseCapture(t *testing.T, file, name string) *snapshot.Evidence {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(realdataDir, file))
	require.NoError(t, err)
	ev, err := snapshot.ParseDump(data, name, snapshot.Options{})
	require.NoError(t, err)
	return ev
}

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join(goldenDir, name), []byte(got))
}

func TestResolveRealCaptures(t *testing.T) {
	v := func(s string) catalog.Version {
		ver, err := catalog.ParseVersion(s)
		require.NoError(t, err)
		return ver
	}
	tests := []struct {
		file       string
		engine     catalog.Engine
		versions   string            // Versions.String()
		likely     string            // Likely.String()
		contains   []catalog.Version // versions the consistent range must hold
		signals    map[catalog.SignalID]string
		notVLLM    bool
		tpotMissed bool
	}{
		{
			// vLLM 0.30.0, stated by its README.
			file: "lora-multitenancy-experiment-0.30.0.prom", engine: catalog.EngineV1,
			// request_num_preemptions (PR 49984) and its buckets date it.
			versions: ">= 0.29 (V1)", likely: ">= 0.29 (V1)", contains: []catalog.Version{v("0.30.0")},
			signals: map[catalog.SignalID]string{
				catalog.SignalTPOT:         "vllm:request_time_per_output_token_seconds",
				catalog.SignalITL:          "vllm:inter_token_latency_seconds",
				catalog.SignalKVUsage:      "vllm:kv_cache_usage_perc",
				catalog.SignalHTTPRequests: "http_requests_total",
			},
		},
		{
			// Both KV usage names: the 0.10 series (NGC image 25.09).
			file: "vllm-server-api-chat-unknown.prom", engine: catalog.EngineV1,
			versions: "0.10.x (V1)", likely: "0.10.0–0.10.1 (V1)", contains: []catalog.Version{v("0.10.0"), v("0.10.2")},
			signals: map[catalog.SignalID]string{
				catalog.SignalITL:     "vllm:time_per_output_token_seconds",
				catalog.SignalKVUsage: "vllm:kv_cache_usage_perc",
			},
			tpotMissed: true,
		},
		{
			file: "hardware-aware-router-unknown.prom", engine: catalog.EngineV1,
			versions: "0.11.x (V1)", likely: "0.11.x (V1)", contains: []catalog.Version{v("0.11.1")},
			signals: map[catalog.SignalID]string{catalog.SignalITL: "vllm:inter_token_latency_seconds"},
		},
		{
			file: "vllm-ops-dashboard-unknown.prom", engine: catalog.EngineV1,
			versions: ">= 0.11 (V1)", likely: ">= 0.17 (V1)",
		},
		{
			// Early V0, process start 2024-06: about 0.4.3–0.5.0.
			file: "datadog-integrations-core-vllm-fixture-unknown.prom", engine: catalog.EngineV0,
			versions: "0.4–0.6.3 (V0)", likely: "0.4–0.5.x (V0)", contains: []catalog.Version{v("0.4.3"), v("0.5.0")},
			signals: map[catalog.SignalID]string{
				catalog.SignalITL:          "vllm:time_per_output_token_seconds",
				catalog.SignalKVUsage:      "vllm:gpu_cache_usage_perc",
				catalog.SignalProcessStart: "process_start_time_seconds",
			},
			tpotMissed: true,
		},
		{
			// V0 of about 0.6 (2024-11).
			file: "vllm_composer-test-fixture-unknown.prom", engine: catalog.EngineV0,
			versions: "0.6.0–0.6.3 (V0)", likely: "0.6.0–0.6.3 (V0)", contains: []catalog.Version{v("0.6.0"), v("0.6.3")},
			signals:    map[catalog.SignalID]string{catalog.SignalPrefixCacheHitRate: "vllm:gpu_prefix_cache_hit_rate"},
			tpotMissed: true,
		},
		{
			// Truncated V0 capture, about 0.6.6–0.7.x.
			file: "aibrix-runtime-docs-unknown.prom", engine: catalog.EngineV0,
			versions: "0.6.4–0.8.x (V0)", likely: "0.7–0.8.x (V0)", contains: []catalog.Version{v("0.6.6"), v("0.7.2")},
			tpotMissed: true,
		},
		{file: "sglang-production-metrics-docs-unknown.prom", engine: catalog.EngineNotVLLM, notVLLM: true},
	}
	files, err := filepath.Glob(filepath.Join(realdataDir, "*.prom"))
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every capture has a case")

	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ev := parseCapture(t, tt.file, tt.file)
			res := catalog.Default().Resolve(ev)
			require.Len(t, res.Targets, 1)
			tr := res.Targets[0]
			assert.Equal(t, tt.engine, tr.Engine)
			if tt.notVLLM {
				require.NotEmpty(t, tr.Warnings)
				assert.ErrorIs(t, tr.Warnings[0], catalog.ErrNotVLLM)
				for _, m := range tr.Matches {
					assert.False(t, m.Found(), "%s found on a non-vLLM capture", m.Signal)
				}
			} else {
				assert.Equal(t, tt.versions, tr.Versions.String())
				assert.Equal(t, tt.likely, tr.Likely.String())
				for _, ver := range tt.contains {
					assert.True(t, tr.Versions.Contains(tt.engine, ver), "%v not in %v", ver, tr.Versions)
				}
				for _, c := range tr.Clues {
					assert.False(t, c.Skipped, "real capture contradicts the history: %v", c)
				}
			}
			for id, metric := range tt.signals {
				assert.Equal(t, metric, match(t, tr, id).Metric, id)
			}
			assert.Equal(t, tt.tpotMissed, !match(t, tr, catalog.SignalTPOT).Found() && !tt.notVLLM)
			golden(t, strings.TrimSuffix(tt.file, ".prom")+".txt", res.String())
		})
	}
}

// TestResolveRealFleet resolves two real captures as the two pods of one
// fleet: a 0.10 pod and a newer one, which is version skew.
func TestResolveRealFleet(t *testing.T) {
	a := parseCapture(t, "vllm-server-api-chat-unknown.prom", "pod-a/2026-02-14T10-00-00Z.prom")
	b := parseCapture(t, "lora-multitenancy-experiment-0.30.0.prom", "pod-b/2026-02-14T10-00-00Z.prom")
	ev := &snapshot.Evidence{Targets: append(a.Targets, b.Targets...)}
	sort.Slice(ev.Targets, func(i, j int) bool { return ev.Targets[i].Name < ev.Targets[j].Name })
	res := catalog.Default().Resolve(ev)
	require.Len(t, res.Targets, 2)
	assert.Equal(t, "pod-a", res.Targets[0].Target)
	assert.Equal(t, "0.10.x (V1)", res.Targets[0].Versions.String())
	assert.Equal(t, ">= 0.10 (V1)", res.Versions.String())
	all := joinErrs(res.Warnings)
	assert.Contains(t, all, "version ranges do not overlap")
	assert.Contains(t, all, "itl comes from vllm:inter_token_latency_seconds on pod-b; vllm:time_per_output_token_seconds on pod-a")
	assert.Contains(t, all, "tpot missing on pod-a")
	assert.NotEmpty(t, res.Drift, "the two pods' cache configs differ")
	golden(t, "fleet-skew.txt", res.String())
}
