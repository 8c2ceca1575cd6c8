package snapshot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

func TestLabelValues(t *testing.T) {
	ev, err := snapshot.ParseDump([]byte(`# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="qwen"} 1
vllm:num_requests_waiting{model_name=""} 1
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{model_name="llama",le="+Inf"} 2
vllm:e2e_request_latency_seconds_sum{model_name="llama"} 1
vllm:e2e_request_latency_seconds_count{model_name="llama"} 2
`), "pod-0", snapshot.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"llama", "qwen"}, ev.LabelValues("model_name"), "series and histograms, empty values left out")
	assert.Empty(t, ev.LabelValues("engine"))
}
