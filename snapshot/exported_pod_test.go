package snapshot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// A GPU exporter scraped through Kubernetes service discovery carries its
// own pod in "pod" and the workload's in "exported_pod": its series must
// join the vLLM pod's timeline.
func TestFederateExportedPodJoinsVLLMPod(t *testing.T) {
	dump := `# TYPE vllm:num_requests_waiting untyped
vllm:num_requests_waiting{instance="10.0.0.5:8000",job="vllm",model_name="m",pod="vllm-0"} 3 1758535200000
# TYPE DCGM_FI_DEV_GPU_UTIL untyped
DCGM_FI_DEV_GPU_UTIL{exported_pod="vllm-0",gpu="0",instance="10.0.0.9:9400",job="dcgm",pod="dcgm-exporter-x7k2"} 37 1758535200000
`
	ev, err := snapshot.ParseDump([]byte(dump), "federate.txt", snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, ev.Targets, 1, "targets: %v", ev.Targets)
	tg := ev.Targets[0]
	assert.Equal(t, "vllm-0", tg.Name)
	assert.NotNil(t, tg.Family("DCGM_FI_DEV_GPU_UTIL"))
	assert.NotNil(t, tg.Family("vllm:num_requests_waiting"))
	require.Len(t, tg.Scrapes, 1)
}

// A dump with no time in its name or samples and no file has no time at
// all: the scrape is marked TimeUnknown, with a warning.
func TestNoTimeAtAll(t *testing.T) {
	ev, err := snapshot.ParseDump([]byte("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n"), "-", snapshot.Options{})
	require.NoError(t, err)
	require.Len(t, ev.Targets, 1)
	require.Len(t, ev.Targets[0].Scrapes, 1)
	assert.Equal(t, snapshot.TimeUnknown, ev.Targets[0].Scrapes[0].TimeFrom)
	require.NotEmpty(t, ev.Problems)
	assert.ErrorIs(t, ev.Problems[0], snapshot.ErrNoTime)
}
