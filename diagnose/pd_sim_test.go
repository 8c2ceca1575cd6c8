package diagnose_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// pdFleet is a disaggregated fleet of one prefill pod and decode decode
// pods at 4 requests/s per pod; from fleetsim.IncidentStart the router
// gives the first decode pod hot times its share (1: none).
func pdFleet(decode int, hot float64) fleetsim.Config {
	pods := make([]fleetsim.PodConfig, 1+decode)
	weights := make([]float64, len(pods))
	for i := range pods {
		pods[i].Role = fleetsim.RoleDecode
		pods[i].Name = fmt.Sprintf("vllm-decode-%d", i)
		weights[i] = 1
	}
	pods[0].Role, pods[0].Name = fleetsim.RolePrefill, "vllm-prefill-0"
	weights[1] = hot
	base := fleetsim.DefaultPhase
	base.Rate = 4 * float64(len(pods))
	inc := base
	inc.Start, inc.Weights = fleetsim.IncidentStart, weights
	return fleetsim.Config{Seed: 7, Pods: pods, Workload: fleetsim.Workload{Phases: []fleetsim.Phase{base, inc}}}
}

// TestPDLoadShareByRole: each request completes on its prefill pod and
// on its decode pod, so one prefill pod next to two decode pods completes
// twice what each of them does; compared with every replica it would
// hold 1.5x a fair share and read as a hot spot. The load shares are
// taken within each role: the healthy fleet is balanced and no incident,
// while a decode pod routed three times its share among the decode pods
// is the one that takes more than its share.
func TestPDLoadShareByRole(t *testing.T) {
	t.Run("healthy", func(t *testing.T) {
		rep, table := diagnoseTable(t, simulate(t, pdFleet(2, 1)))
		assert.Equal(t, string(rules.NoIncident), string(rep.Verdict), table)
		for _, id := range []rules.FactID{rules.ReplicaLoadShareMax, rules.ReplicaShareMax, rules.ReplicaTTFTRatio} {
			f := rep.Facts[id]
			assert.Less(t, float64(f.Incident.Value), 1.2, "%s: %s\n%s", id, f.Source, table)
			assert.Contains(t, f.Source, "within each prefill/decode role", id)
		}
	})
	t.Run("hot decode pod", func(t *testing.T) {
		// Three times its share among three decode pods: 60% of the
		// decode legs on one pod, which has the headroom for them (no
		// symptom, no incident). Among all four pods the prefill pod's
		// 50% of the completions would read as the hottest.
		rep, table := diagnoseTable(t, simulate(t, pdFleet(3, 3)))
		for _, id := range []rules.FactID{rules.ReplicaLoadShareMax, rules.ReplicaShareMax} {
			f := rep.Facts[id]
			assert.InDelta(t, 1.8, float64(f.Incident.Value), 0.1, "%s: %s\n%s", id, f.Source, table)
			assert.InDelta(t, 1.0, float64(f.Baseline.Value), 0.1, "%s baseline\n%s", id, table)
		}
		assert.Contains(t, rep.Facts[rules.ReplicaLoadShareMax].Source, "vllm-decode-1", table)
	})
}
