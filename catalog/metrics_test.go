package catalog

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvidenceMetrics(t *testing.T) {
	c := Default()
	require.NoError(t, c.Alias(SignalClientTTFT, "gateway_ttft_seconds"))
	got := c.EvidenceMetrics()
	assert.True(t, slices.IsSorted(got))
	for _, want := range []string{
		"vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_created",
		"vllm:num_preemptions_total", "vllm:num_preemptions_created",
		"ray_vllm:num_requests_waiting", "vllm:lora_requests_info",
		"process_start_time_seconds", "http_requests_total", "DCGM_FI_DEV_GPU_UTIL",
		"gateway_ttft_seconds", "vllm:cache_config_info",
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "python_gc_objects_collected_total")
	assert.NotContains(t, got, "go_goroutines")
}
