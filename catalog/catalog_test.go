package catalog_test

import (
	"math"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

// requiredIDs are the signal ids the issue names as a public contract.
var requiredIDs = []catalog.SignalID{
	"ttft", "queue_time", "prefill_time", "decode_time", "tpot", "itl", "e2e", "inference_time",
	"prompt_tokens", "generation_tokens", "waiting", "running", "kv_usage", "preemptions",
	"prefix_cache_queries", "prefix_cache_hits", "prompt_tokens_total", "generation_tokens_total",
	"request_success", "http_requests", "gpu_util", "iteration_tokens", "cache_config",
	"process_start", "client_ttft", "max_num_seqs",
}

func TestDefaultCatalogShape(t *testing.T) {
	cat := catalog.Default()
	ids := cat.IDs()
	for _, id := range requiredIDs {
		assert.Contains(t, ids, id)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := map[catalog.SignalID]bool{}
	for _, s := range cat.Signals() {
		assert.False(t, seen[s.ID], "duplicate id %s", s.ID)
		seen[s.ID] = true
		assert.Regexp(t, snake, string(s.ID))
		assert.NotZero(t, s.Kind, s.ID)
		assert.NotZero(t, s.Aggregation, s.ID)
		assert.NotEmpty(t, s.Description, s.ID)
		metrics := map[string]bool{}
		for _, c := range s.Candidates {
			assert.True(t, model.LegacyValidation.IsValidMetricName(c.Metric), "%s: %q", s.ID, c.Metric)
			assert.False(t, metrics[c.Metric], "%s lists %s twice", s.ID, c.Metric)
			metrics[c.Metric] = true
			assert.Greater(t, c.Scale, 0.0, "%s: %s", s.ID, c.Metric)
			if s.Kind == catalog.KindCounter {
				assert.Regexp(t, `_total$`, c.Metric, "counter lookup names carry _total")
			}
		}
	}
	// Only the caller can supply max_num_seqs.
	s, ok := cat.Signal(catalog.SignalMaxNumSeqs)
	require.True(t, ok)
	assert.Empty(t, s.Candidates)
}

func TestDefaultCatalogSemantics(t *testing.T) {
	cat := catalog.Default()
	get := func(id catalog.SignalID) catalog.SignalSpec {
		s, ok := cat.Signal(id)
		require.True(t, ok, id)
		return s
	}
	// tpot is per-request TPOT only; the old per-step histogram is ITL.
	assert.Equal(t, []string{"vllm:request_time_per_output_token_seconds"}, get(catalog.SignalTPOT).Metrics())
	assert.Equal(t, []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}, get(catalog.SignalITL).Metrics())
	tpot := get(catalog.SignalTPOT)
	assert.Equal(t, catalog.TPOTFallback, tpot.Fallback)
	assert.Equal(t, []catalog.SignalID{catalog.SignalDecodeTime, catalog.SignalGenerationTokens}, tpot.FallbackFrom)
	for _, s := range cat.Signals() {
		for _, c := range s.Candidates {
			if c.Metric == "vllm:time_per_output_token_seconds" {
				assert.Equal(t, catalog.SignalITL, s.ID, "time_per_output_token_seconds is per-step ITL")
			}
		}
	}
	// V1 name first, old name second.
	assert.Equal(t, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, get(catalog.SignalKVUsage).Metrics())
	assert.Equal(t, snapshot.AggregateMean, get(catalog.SignalKVUsage).Aggregation)
	assert.Equal(t, snapshot.AggregateSum, get(catalog.SignalWaiting).Aggregation)
	assert.Equal(t, snapshot.AggregateSum, get(catalog.SignalRunning).Aggregation)
	assert.Equal(t, snapshot.AggregateSum, get(catalog.SignalTTFT).Aggregation)
	assert.Equal(t, "finished_reason", get(catalog.SignalRequestSuccess).SplitBy)
	assert.Equal(t, "status", get(catalog.SignalHTTPRequests).SplitBy)
	assert.Equal(t, catalog.KindInfo, get(catalog.SignalCacheConfig).Kind)

	// Versions come from the name history.
	kv := get(catalog.SignalKVUsage).Candidates[0]
	require.Len(t, kv.Versions, 1)
	assert.Equal(t, ">= 0.9.2 (V1)", kv.Versions[0].String())

	// GPU utilisation: percent for the old field, guarded ratios else,
	// the exporter 4.9 names unverified.
	gpu := get(catalog.SignalGPUUtil)
	require.Equal(t, []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL_RATIO", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"}, gpu.Metrics())
	assert.Equal(t, 0.01, gpu.Candidates[0].ScaleFor(87))
	assert.Equal(t, 1.0, gpu.Candidates[1].ScaleFor(0.87))
	assert.Equal(t, 0.01, gpu.Candidates[1].ScaleFor(87), "a ratio source above 1.5 is a percentage")
	assert.Equal(t, catalog.Unverified, gpu.Candidates[2].Confidence)
	assert.Equal(t, catalog.Unverified, gpu.Candidates[3].Confidence)
}

func TestCatalogIsAValue(t *testing.T) {
	orig := catalog.Default()
	before := orig.Signals()

	// Changing returned slices does not reach the catalog.
	sigs := orig.Signals()
	sigs[0].Candidates[0].Metric = "changed"
	sigs[0].Candidates[0].Versions[0].Min = catalog.Version{Major: 9}
	s, _ := orig.Signal(catalog.SignalTTFT)
	s.Candidates[0].Metric = "changed"

	// Alias and WithPrefix on a copy leave the original alone.
	cp := orig
	require.NoError(t, cp.Alias(catalog.SignalTTFT, "gateway_ttft_seconds"))
	_, err := cp.WithPrefix("ray_vllm:")
	require.NoError(t, err)
	assert.Equal(t, before, orig.Signals())

	// Each call builds a fresh catalog.
	assert.Equal(t, before, catalog.Default().Signals())
}

func TestAlias(t *testing.T) {
	t.Run("unknown id lists valid ids", func(t *testing.T) {
		cat := catalog.Default()
		err := cat.Alias("ttfb", "x_seconds")
		require.ErrorIs(t, err, catalog.ErrUnknownSignal)
		assert.Contains(t, err.Error(), `"ttfb"`)
		assert.Contains(t, err.Error(), "ttft, queue_time, prefill_time")
	})
	t.Run("invalid metric name", func(t *testing.T) {
		cat := catalog.Default()
		for _, name := range []string{"", "a b", "x{y}"} {
			assert.Error(t, cat.Alias(catalog.SignalTTFT, name), name)
		}
	})
	t.Run("new name goes first", func(t *testing.T) {
		cat := catalog.Default()
		require.NoError(t, cat.Alias(catalog.SignalClientTTFT, "gateway_time_to_first_token_seconds"))
		s, _ := cat.Signal(catalog.SignalClientTTFT)
		require.Equal(t, []string{"gateway_time_to_first_token_seconds", "inference_objective_request_ttft_seconds"}, s.Metrics(),
			"the alias goes before the default gateway histogram")
		c := s.Candidates[0]
		assert.True(t, c.Added)
		assert.Equal(t, 1.0, c.Scale)
		assert.Nil(t, c.Versions)
	})
	t.Run("known name moves to the front", func(t *testing.T) {
		cat := catalog.Default()
		require.NoError(t, cat.Alias(catalog.SignalKVUsage, "vllm:gpu_cache_usage_perc"))
		s, _ := cat.Signal(catalog.SignalKVUsage)
		assert.Equal(t, []string{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"}, s.Metrics())
		assert.False(t, s.Candidates[0].Added, "the catalog's entry is kept")
		assert.Len(t, s.Candidates[0].Versions, 2, "V0 and V1 eras")
	})
	t.Run("alias of a vllm name gets its versions", func(t *testing.T) {
		cat := catalog.Default()
		require.NoError(t, cat.Alias(catalog.SignalRunning, "vllm:num_requests_swapped"))
		s, _ := cat.Signal(catalog.SignalRunning)
		assert.Equal(t, "0.3–0.8.x (V0)", s.Candidates[0].Versions[0].String())
	})
}

func TestAliasUnitFromName(t *testing.T) {
	tests := []struct {
		id     catalog.SignalID
		metric string
		max    float64 // largest raw value seen
		want   float64 // ScaleFor(max)
	}{
		{catalog.SignalClientTTFT, "gateway_ttft_seconds", 3, 1},
		{catalog.SignalClientTTFT, "envoy_upstream_first_byte_ms", 3, 0.001},
		{catalog.SignalClientTTFT, "gw_ttft_milliseconds", 3, 0.001},
		{catalog.SignalClientTTFT, "gw_ttft_microseconds", 3, 1e-6},
		{catalog.SignalGPUUtil, "nvidia_gpu_util", 50, 0.01},
		{catalog.SignalGPUUtil, "nvidia_gpu_util", 0.5, 0.01}, // name says percent: 0.5 %
		{catalog.SignalGPUUtil, "gpu_busy_percent", 50, 0.01},
		{catalog.SignalGPUUtil, "gpu_busy_ratio", 0.5, 1},
		{catalog.SignalGPUUtil, "gpu_busy_ratio", 50, 0.01}, // guard
		{catalog.SignalGPUUtil, "gpu_busy", 0.9, 1},
		{catalog.SignalGPUUtil, "gpu_busy", 90, 0.01},
		{catalog.SignalKVUsage, "custom:kv_usage_perc", 0.9, 1}, // vLLM's _perc is a fraction
		{catalog.SignalKVUsage, "custom:kv_usage_pct", 90, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			cat := catalog.Default()
			require.NoError(t, cat.Alias(tt.id, tt.metric))
			s, _ := cat.Signal(tt.id)
			assert.InDelta(t, tt.want, s.Candidates[0].ScaleFor(tt.max), 1e-15)
		})
	}
}

func TestScaleFor(t *testing.T) {
	tests := []struct {
		name string
		c    catalog.Candidate
		max  float64
		want float64
	}{
		{"zero scale means 1", catalog.Candidate{}, 5, 1},
		{"percent", catalog.Candidate{Scale: 0.01}, 5, 0.01},
		{"guarded ratio", catalog.Candidate{Scale: 1, PercentGuard: true}, 1.0, 1},
		{"guard limit is inclusive", catalog.Candidate{Scale: 1, PercentGuard: true}, catalog.PercentGuardLimit, 1},
		{"guard trips", catalog.Candidate{Scale: 1, PercentGuard: true}, 1.6, 0.01},
		{"NaN max keeps scale", catalog.Candidate{Scale: 1, PercentGuard: true}, math.NaN(), 1},
		{"unguarded", catalog.Candidate{Scale: 1}, 80, 1},
		{"guard ignores non-unit scales", catalog.Candidate{Scale: 0.001, PercentGuard: true}, 80, 0.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.c.ScaleFor(tt.max))
		})
	}
}

func TestWithPrefix(t *testing.T) {
	cat, err := catalog.Default().WithPrefix("ray_vllm:")
	require.NoError(t, err)
	assert.Equal(t, []string{"ray_vllm:"}, cat.Prefixes())
	s, _ := cat.Signal(catalog.SignalKVUsage)
	assert.Equal(t, []string{
		"vllm:kv_cache_usage_perc", "ray_vllm:kv_cache_usage_perc",
		"vllm:gpu_cache_usage_perc", "ray_vllm:gpu_cache_usage_perc",
	}, s.Metrics())
	assert.True(t, s.Candidates[1].Added)
	assert.Equal(t, s.Candidates[0].Versions, s.Candidates[1].Versions)
	gpu, _ := cat.Signal(catalog.SignalGPUUtil)
	assert.Len(t, gpu.Candidates, 4, "non-vllm names are not prefixed")

	again, err := cat.WithPrefix("ray_vllm:")
	require.NoError(t, err)
	assert.Equal(t, cat.Signals(), again.Signals(), "adding a prefix twice changes nothing")

	for _, bad := range []string{"", "vllm:", "1ray:", "ray vllm:"} {
		_, err := catalog.Default().WithPrefix(bad)
		assert.Error(t, err, bad)
	}
}

func TestMeanTPOTFromSums(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name                   string
		decode, genSum, genCnt float64
		want                   float64
	}{
		// 3 requests of 11, 21 and 1 tokens: 10 + 20 + 0 decoded tokens
		// in 1.5 s of decode time.
		{"three requests", 1.5, 33, 3, 0.05},
		{"one token each: nothing decoded", 0, 5, 5, nan},
		{"no requests", 0, 0, 0, nan},
		{"NaN input", nan, 10, 2, nan},
		{"negative input", -1, 10, 2, nan},
		{"count above sum", 1, 2, 5, nan},
		{"infinite tokens", 1, math.Inf(1), 2, nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := catalog.MeanTPOTFromSums(tt.decode, tt.genSum, tt.genCnt)
			if math.IsNaN(tt.want) {
				assert.True(t, math.IsNaN(got), "got %v", got)
				return
			}
			assert.InDelta(t, tt.want, got, 1e-12)
		})
	}
}

func TestKindAggregationStrings(t *testing.T) {
	assert.Equal(t, "histogram", catalog.KindHistogram.String())
	assert.Equal(t, "info", catalog.KindInfo.String())
	assert.Equal(t, "SignalKind(0)", catalog.SignalKind(0).String())
	assert.Equal(t, "mean", snapshot.AggregateMean.String())
	assert.Equal(t, "Aggregation(9)", snapshot.Aggregation(9).String())
	s, _ := catalog.Default().Signal(catalog.SignalTTFT)
	assert.Equal(t, "ttft (histogram, seconds)", s.String())
	c, _ := catalog.Default().Signal(catalog.SignalCacheConfig)
	assert.Equal(t, "cache_config (info)", c.String())
	assert.True(t, slices.Contains(requiredIDs, c.ID))
}
