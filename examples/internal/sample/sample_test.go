package sample_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/examples/internal/sample"
	"github.com/whyslow/whyslow/internal/fleetsim"
)

func TestConfig(t *testing.T) {
	for _, name := range fleetsim.ScenarioNames() {
		t.Run(name, func(t *testing.T) {
			full := fleetsim.Scenario(name)
			cfg, err := sample.Config(name)
			require.NoError(t, err)
			assert.Equal(t, sample.ScrapeInterval, cfg.ScrapeInterval)
			assert.Equal(t, full.Seed, cfg.Seed, "same seeds")
			if len(full.Pods) > 0 {
				assert.Equal(t, full.Pods, cfg.Pods, "pods listed one by one are kept")
				assert.Equal(t, full.Workload, cfg.Workload)
				return
			}
			require.Equal(t, sample.Pods, cfg.NumPods)
			require.Len(t, cfg.Workload.Phases, len(full.Workload.Phases))
			for i, p := range cfg.Workload.Phases {
				// Each pod sees the load it sees in the full scenario.
				assert.InDelta(t, full.Workload.Phases[i].Rate/8, p.Rate/sample.Pods, 1e-12)
				if full.Workload.Phases[i].Weights != nil {
					assert.Equal(t, full.Workload.Phases[i].Weights[:sample.Pods], p.Weights)
				}
			}
			for i, b := range cfg.Workload.Bursts {
				assert.InDelta(t, full.Workload.Bursts[i].Rate/8, b.Rate/sample.Pods, 1e-12)
			}
		})
	}
}

func TestUnknown(t *testing.T) {
	_, err := sample.Config("nope")
	require.ErrorContains(t, err, `unknown scenario "nope"`)
	_, err = sample.Dump("nope")
	require.Error(t, err)
	assert.Empty(t, sample.Expect("nope"))
	assert.Equal(t, "prefill-long-prompts", sample.Expect(sample.Default))
	assert.Equal(t, "long-prompts.om.gz", sample.FileName(sample.Default))
}
