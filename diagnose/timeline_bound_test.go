package diagnose_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
)

// TestReplicaTimelinesBounded: a fleet of more than MaxReplicaTimelines
// pods gets its fleet timelines whole and per-replica timelines for
// MaxReplicaTimelines replicas only, the culprit among them; a fleet of
// fewer gets every replica's.
func TestReplicaTimelinesBounded(t *testing.T) {
	spec, ok := fleetsim.LookupScenario("hot-replica")
	require.True(t, ok)
	for _, pods := range []int{8, 20} {
		cfg := spec.Config
		cfg.Pods = make([]fleetsim.PodConfig, pods)
		cfg.Workload.Phases = append([]fleetsim.Phase(nil), cfg.Workload.Phases...)
		for i := range cfg.Workload.Phases {
			p := &cfg.Workload.Phases[i]
			p.Rate *= float64(pods) / 8
			if p.Weights != nil {
				p.Weights = make([]float64, pods)
				for j := range p.Weights {
					p.Weights[j] = 1
				}
				p.Weights[0] = 3
			}
		}
		rep, err := diagnose.Diagnose(simulate(t, cfg), diagnose.Options{})
		require.NoError(t, err)
		fleet := map[string]bool{}
		replicas := map[string]bool{}
		for _, tl := range rep.Timelines {
			if tl.Replica == "" {
				fleet[tl.Signal] = true
			} else {
				replicas[tl.Replica] = true
			}
		}
		assert.Contains(t, fleet, "ttft", "pods=%d", pods)
		assert.Len(t, replicas, min(pods, diagnose.MaxReplicaTimelines), "pods=%d", pods)
		if c := rep.NamedCulprit(); c != nil && c.Kind == "replica" {
			assert.Contains(t, replicas, c.Name, "pods=%d: the culprit's timelines are kept", pods)
		} else if pods > diagnose.MaxReplicaTimelines {
			t.Errorf("pods=%d: no replica culprit named (verdict %s): the test cannot check the culprit is kept", pods, rep.Verdict)
		}
	}
}
