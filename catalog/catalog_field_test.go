package catalog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

// expositionDir holds small expositions written the way their servers
// write them, from the sources cited in testdata/README.md.
const expositionDir = "testdata/exposition"

func parseExposition(t *testing.T, file, name string) *snapshot.Evidence {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(expositionDir, file))
	require.NoError(t, err)
	ev, err := snapshot.ParseDump(data, name, snapshot.Options{})
	require.NoError(t, err)
	return ev
}

func mustVersion(t *testing.T, s string) catalog.Version {
	t.Helper()
	v, err := catalog.ParseVersion(s)
	require.NoError(t, err)
	return v
}

// TestResolveVLLM030Names reads the names the vLLM 0.30.0 capture has and
// older captures lack: each is a signal of its own, and
// request_num_preemptions with its buckets dates the capture to 0.29 or
// later (its pull request was merged after 0.28.0 shipped; whether 0.29.0
// has it is not verified).
func TestResolveVLLM030Names(t *testing.T) {
	ev := parseCapture(t, "lora-multitenancy-experiment-0.30.0.prom", "pod-0")
	tr := catalog.Default().Resolve(ev).Targets[0]
	require.Equal(t, catalog.EngineV1, tr.Engine)
	for _, v := range []string{"0.29.0", "0.30.0", "0.31.0", "0.32.1"} {
		assert.True(t, tr.Versions.Contains(catalog.EngineV1, mustVersion(t, v)), "%s in %v", v, tr.Versions)
	}
	assert.False(t, tr.Versions.Contains(catalog.EngineV1, mustVersion(t, "0.28.9")), "request_num_preemptions is not in 0.28")
	for id, metric := range map[catalog.SignalID]string{
		catalog.SignalWaitingByReason:      "vllm:num_requests_waiting_by_reason",
		catalog.SignalPromptTokensBySource: "vllm:prompt_tokens_by_source_total",
		catalog.SignalPromptTokensCached:   "vllm:prompt_tokens_cached_total",
		catalog.SignalRequestPreemptions:   "vllm:request_num_preemptions",
		catalog.SignalPrefillComputed:      "vllm:request_prefill_kv_computed_tokens",
		catalog.SignalEngineSleepState:     "vllm:engine_sleep_state",
	} {
		assert.Equal(t, metric, match(t, tr, id).Metric, id)
	}
	m := match(t, tr, catalog.SignalRequestPreemptions)
	require.NotEmpty(t, m.Family.Histograms)
	assert.Equal(t, 1.0, m.Family.Histograms[0].Bounds[0], `first bucket le="1": 0 and 1 preemption share it`)
	assert.False(t, match(t, tr, catalog.SignalAdmissionRejections).Found(), "not in 0.30.0")
	assert.Empty(t, tr.Unseen, "the Python frontend shows process start, http_* and _created")

	spec, _ := catalog.Default().Signal(catalog.SignalWaitingByReason)
	assert.Equal(t, "reason", spec.SplitBy)
	spec, _ = catalog.Default().Signal(catalog.SignalEngineSleepState)
	assert.Equal(t, "sleep_state", spec.SplitBy)
}

// TestResolveSpecDecodeAndNIXL reads the speculative decoding and NIXL
// families as vllm/v1/spec_decode/metrics.py and nixl/stats.py declare
// them.
func TestResolveSpecDecodeAndNIXL(t *testing.T) {
	tr := catalog.Default().Resolve(parseExposition(t, "vllm-v1-specdecode-nixl.prom", "decode-0")).Targets[0]
	assert.Equal(t, catalog.EngineV1, tr.Engine)
	assert.Equal(t, ">= 0.9.2 (V1)", tr.Versions.String())
	for id, metric := range map[catalog.SignalID]string{
		catalog.SignalSpecDrafts:              "vllm:spec_decode_num_drafts_total",
		catalog.SignalSpecDraftTokens:         "vllm:spec_decode_num_draft_tokens_total",
		catalog.SignalSpecAcceptedTokens:      "vllm:spec_decode_num_accepted_tokens_total",
		catalog.SignalSpecAcceptedTokensByPos: "vllm:spec_decode_num_accepted_tokens_per_pos_total",
		catalog.SignalKVTransferTime:          "vllm:nixl_xfer_time_seconds",
		catalog.SignalKVTransferFailures:      "vllm:nixl_num_failed_transfers_total",
	} {
		assert.Equal(t, metric, match(t, tr, id).Metric, id)
	}
	pos := match(t, tr, catalog.SignalSpecAcceptedTokensByPos)
	assert.Len(t, pos.Family.Series, 3, "one series per draft position")
	xfer := match(t, tr, catalog.SignalKVTransferTime)
	require.NotEmpty(t, xfer.Family.Histograms)
	assert.Equal(t, 0.005, xfer.Family.Histograms[0].Bounds[0], "buckets[1:] of nixl/stats.py")
	for _, c := range tr.Clues {
		assert.False(t, c.Skipped, "contradicts the history: %v", c)
	}
	assert.Equal(t, []string{catalog.UnseenProcessStart, catalog.UnseenHTTP}, tr.Unseen, "_created is present")
}

// TestResolveRustFrontend reads OpenMetrics as vLLM's Rust frontend
// serves it: no _created, no http_*, no process_start_time_seconds. The
// engine is still told, and the resolution says what it cannot see.
func TestResolveRustFrontend(t *testing.T) {
	ev := parseExposition(t, "vllm-rust-frontend.om", "rust-0")
	tr := catalog.Default().Resolve(ev).Targets[0]
	assert.Equal(t, catalog.EngineV1, tr.Engine)
	assert.Equal(t, ">= 0.29 (V1)", tr.Versions.String())
	assert.Empty(t, tr.Warnings)
	pt := match(t, tr, catalog.SignalPromptTokensTotal)
	assert.Equal(t, "vllm:prompt_tokens_total", pt.Metric)
	assert.Equal(t, model.MetricTypeCounter, pt.Family.Type, "read as OpenMetrics: the TYPE line names the base")
	assert.Equal(t, "vllm:request_success_total", match(t, tr, catalog.SignalRequestSuccess).Metric)
	assert.Equal(t, "vllm:time_to_first_token_seconds", match(t, tr, catalog.SignalTTFT).Metric)
	assert.False(t, match(t, tr, catalog.SignalProcessStart).Found())
	assert.False(t, match(t, tr, catalog.SignalHTTPRequests).Found())
	assert.Equal(t, []string{catalog.UnseenProcessStart, catalog.UnseenHTTP, catalog.UnseenCreated}, tr.Unseen)
	assert.Contains(t, tr.String(), "unseen  "+catalog.UnseenCreated)

	// Without the engine label either, a V1-only name tells the engine.
	l := []string{"model_name", "m"}
	bare := catalog.Default().ResolveTarget(target("rust-1",
		gaugeFam("vllm:kv_cache_usage_perc", l...),
		gaugeFam("vllm:num_requests_waiting", l...),
		counterFam("vllm:request_success_total", append(l, "finished_reason", "error")...)))
	assert.Equal(t, catalog.EngineV1, bare.Engine)
	assert.Contains(t, bare.Unseen, catalog.UnseenCreated)
}

// TestUnseenLines folds a note every vLLM target shares into one line.
func TestUnseenLines(t *testing.T) {
	l := []string{"engine", "0", "model_name", "m"}
	pod := func(name string) *snapshot.Target {
		return target(name, gaugeFam("vllm:kv_cache_usage_perc", l...))
	}
	withPST := pod("pod-b")
	withPST.Families["process_start_time_seconds"] = gaugeFam("process_start_time_seconds")
	res := catalog.Default().Resolve(evidence(pod("pod-a"), withPST))
	assert.Equal(t, []string{
		"pod-a: " + catalog.UnseenProcessStart,
		"all targets: " + catalog.UnseenHTTP,
		"all targets: " + catalog.UnseenCreated,
	}, res.UnseenLines())
	assert.Contains(t, res.String(), "\ncannot see:\n  pod-a: "+catalog.UnseenProcessStart)
}

// TestResolveKServePrefix reads KServe's kserve_vllm: re-export without
// an alias, like Ray's.
func TestResolveKServePrefix(t *testing.T) {
	assert.Equal(t, []string{catalog.RayPrefix, catalog.KServePrefix}, catalog.ReexportPrefixes())
	ev := parseExposition(t, "kserve-vllm-0.30.0.prom", "kserve-0")
	res := catalog.Default().Resolve(ev)
	tr := res.Targets[0]
	assert.Equal(t, catalog.EngineV1, tr.Engine)
	assert.Equal(t, ">= 0.29 (V1)", tr.Versions.String())
	for _, w := range tr.Warnings {
		assert.NotErrorIs(t, w, catalog.ErrNotVLLM)
	}
	assert.Equal(t, "kserve_vllm:num_requests_waiting", match(t, tr, catalog.SignalWaiting).Metric)
	assert.Equal(t, "kserve_vllm:request_num_preemptions", match(t, tr, catalog.SignalRequestPreemptions).Metric)
	assert.Equal(t, "kserve_vllm:num_requests_waiting_by_reason", match(t, tr, catalog.SignalWaitingByReason).Metric)
	assert.Contains(t, catalog.Default().EvidenceMetrics(), "kserve_vllm:num_requests_waiting")
	assert.Contains(t, catalog.Default().SignalMetrics(catalog.SignalWaiting), "kserve_vllm:num_requests_waiting")
}

// TestResolveGatewayFamilies reads the endpoint picker of the Gateway API
// Inference Extension (and llm-d) as the default source of client_ttft
// and gateway_requests: a gateway target, not a wrong input.
func TestResolveGatewayFamilies(t *testing.T) {
	gw := parseExposition(t, "gateway-gie-v1.5.0-epp.prom", "epp")
	pod := parseCapture(t, "lora-multitenancy-experiment-0.30.0.prom", "pod-0")
	ev := &snapshot.Evidence{Targets: append(gw.Targets, pod.Targets...)}
	res := catalog.Default().Resolve(ev)
	require.Len(t, res.Targets, 2)
	g := res.Targets[0]
	require.Equal(t, "epp", g.Target)
	assert.Equal(t, catalog.EngineNotVLLM, g.Engine)
	assert.Empty(t, g.Warnings, "a gateway is not a wrong input")
	assert.Empty(t, g.Unseen)
	assert.Equal(t, "inference_objective_request_ttft_seconds", match(t, g, catalog.SignalClientTTFT).Metric)
	assert.Equal(t, "inference_objective_request_total", match(t, g, catalog.SignalGatewayRequests).Metric)
	assert.NotContains(t, res.Missing(), catalog.SignalClientTTFT)
	assert.NotContains(t, res.Missing(), catalog.SignalGatewayRequests)
	for _, w := range res.Warnings {
		assert.NotErrorIs(t, w, catalog.ErrPartialSignal, "gateway signals are not expected on vLLM pods: %v", w)
	}

	// The name before Gateway API Inference Extension 1.1.
	old := catalog.Default().ResolveTarget(target("epp-old",
		counterFam("inference_model_request_total", "model_name", "m", "target_model_name", "m")))
	assert.Equal(t, "inference_model_request_total", match(t, old, catalog.SignalGatewayRequests).Metric)
	assert.Empty(t, old.Warnings)
}
