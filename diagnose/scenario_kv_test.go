package diagnose_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

// longerAnswersOnSmallKV is issue 31's first fleet, from fleetsim's
// physics: a small KV pool (gpu_memory_utilization 0.58) at ~42% of the
// fleet's capacity; from fleetsim.IncidentStart the answers get twice as
// long (median 160 -> 320 tokens, max_tokens 2048) while the prompts stay
// the same. The pool fills, requests are preempted and recomputed, first
// tokens wait (case D, with the longer answers as its driver).
func longerAnswersOnSmallKV(pods int, version fleetsim.Version) fleetsim.Config {
	base := fleetsim.DefaultPhase
	base.Rate = 4 * float64(pods)
	base.MaxTokens = 2048
	inc := base
	inc.Start = fleetsim.IncidentStart
	inc.Output.Median *= 2
	return fleetsim.Config{NumPods: pods, Seed: 31, Version: version,
		Engine:   fleetsim.DefaultEngine.WithGPUMemoryUtilization(0.58),
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{base, inc}}}
}

// longPromptsWithHotPod is issue 31's compound incident: from
// fleetsim.IncidentStart 3.5% of the prompts become ~4.5k-token documents
// on every pod (the declared primary), and at the same time one pod gets
// 1.4x the routing weight of the others (secondary).
func longPromptsWithHotPod(pods int) fleetsim.Config {
	base := fleetsim.DefaultPhase
	base.Rate = 4 * float64(pods)
	inc := base
	inc.Start = fleetsim.IncidentStart
	inc.Prompt.TailWeight, inc.Prompt.TailMedian, inc.Prompt.TailSigma = 0.035, 4500, 0.35
	inc.Weights = make([]float64, pods)
	for i := range inc.Weights {
		inc.Weights[i] = 1
	}
	inc.Weights[pods/2] = 1.4
	return fleetsim.Config{NumPods: pods, Seed: 35, Workload: fleetsim.Workload{Phases: []fleetsim.Phase{base, inc}}}
}

func findingOf(t *testing.T, rep *report.Report, id rules.HypothesisID) (rules.Finding, int) {
	t.Helper()
	for i, h := range rep.Hypotheses {
		if h.ID == id {
			return h, i
		}
	}
	t.Fatalf("no finding %s", id)
	return rules.Finding{}, -1
}

func checkOf(f rules.Finding, prefix string) string {
	for _, c := range f.NextChecks {
		if strings.HasPrefix(c.Text, prefix) {
			return c.Outcome
		}
	}
	return ""
}

// TestLongerAnswersOnSmallKVPool: preemptions that delay first tokens are
// kv-preemption's, whatever made the cache fill; the longer answers are
// named as its driver, and the KV cache is judged on the replicas that
// preempted, not on the fleet mean.
func TestLongerAnswersOnSmallKVPool(t *testing.T) {
	tests := []struct {
		name    string
		pods    int
		version fleetsim.Version
		long    bool
	}{
		{"8 pods", 8, fleetsim.VersionV1, false},
		{"V0 names only", 8, fleetsim.VersionV0, false},
		{"32 pods", 32, fleetsim.VersionV1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.long && testing.Short() {
				t.Skip("32 pods: not under -short")
			}
			t.Parallel()
			fleet, ev := simulateFleet(t, longerAnswersOnSmallKV(tt.pods, tt.version))
			truth := fleet.GroundTruth(fleetsim.SymptomTTFT, fleetsim.IncidentStart)
			rep, table := diagnoseTable(t, ev)
			require.Equal(t, string(rules.KVPreemption), string(rep.Verdict), "%v\n%s", truth, table)
			kv, _ := findingOf(t, rep, rules.KVPreemption)
			driver := false
			for _, e := range kv.Evidence {
				driver = driver || strings.Contains(e.Text, "driver: longer answers")
			}
			assert.True(t, driver, "the longer answers are named as the driver\n%s", table)
			assert.Equal(t, rules.CheckHolds, checkOf(kv, "Is KV usage high where requests were preempted"), "%s", table)
			dp, _ := findingOf(t, rep, rules.DecodePressure)
			assert.NotEqual(t, rules.Supported, dp.Status, "TTFT is not normal: not case C\n%s", table)
		})
	}
}

// TestCompoundLongPromptsAndHotPod: a long-prompt surge on every pod while
// one pod takes 1.4x its share is the long prompts' incident; the hot pod
// is listed below it, its check saying that the rest of the fleet moved
// too.
func TestCompoundLongPromptsAndHotPod(t *testing.T) {
	fleet, ev := simulateFleet(t, longPromptsWithHotPod(8))
	truth := fleet.GroundTruth(fleetsim.SymptomTTFT, fleetsim.IncidentStart)
	rep, table := diagnoseTable(t, ev)
	require.Equal(t, string(rules.PrefillLongPrompts), string(rep.Verdict), "%v\n%s", truth, table)
	hot, i := findingOf(t, rep, rules.ReplicaHotspot)
	assert.Positive(t, i, "the hot spot ranks below the primary cause\n%s", table)
	assert.Equal(t, rules.CheckFails, checkOf(hot, "Does the hot replica explain the fleet's change"), "%s", table)
	pf, _ := findingOf(t, rep, rules.PrefillLongPrompts)
	assert.Equal(t, rules.CheckHolds, checkOf(pf, "Does the prefill-time increase explain the TTFT increase?"), "%s", table)
}
