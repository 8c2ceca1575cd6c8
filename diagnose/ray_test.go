package diagnose_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/snapshot"
)

// A Ray Serve dump (every vllm: name under ray_vllm:) is diagnosed as the
// plain dump is, with no alias and no "not vLLM" warning: neither snapshot
// nor the catalog judges it non-vLLM.
func TestRayPrefixNeedsNoAlias(t *testing.T) {
	data, err := os.ReadFile("../testdata/realdata/vllm/lora-multitenancy-experiment-0.30.0.prom")
	require.NoError(t, err)
	diag := func(dump string) *diagnose.Report {
		ev, err := snapshot.ParseDump([]byte(dump), "pod-0", snapshot.Options{})
		require.NoError(t, err)
		rep, err := diagnose.Diagnose(ev, diagnose.Options{})
		require.NoError(t, err)
		return rep
	}
	plain := diag(string(data))
	ray := diag(strings.ReplaceAll(string(data), "vllm:", "ray_vllm:"))
	for _, w := range ray.Warnings {
		assert.NotContains(t, w, "no vllm: metric")
	}
	require.Equal(t, len(plain.Signals.Fleet), len(ray.Signals.Fleet))
	found := 0
	for i, p := range plain.Signals.Fleet {
		r := ray.Signals.Fleet[i]
		assert.Equal(t, p.ID, r.ID)
		assert.Equal(t, p.Missing == "", r.Missing == "", p.ID)
		assert.Equal(t, strings.ReplaceAll(p.Metric, "vllm:", "ray_vllm:"), r.Metric, p.ID)
		if p.Incident != nil && r.Incident != nil {
			assert.Equal(t, p.Incident.Count, r.Incident.Count, p.ID)
			found++
		}
	}
	assert.NotZero(t, found, "the capture measures some signal")
}
