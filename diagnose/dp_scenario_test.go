package diagnose_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// dpFleet returns scenario name's fleet run on pods data-parallel pods of
// engines engines each (the same GPUs as the scenario's 8 pods of one
// engine), with the phases' pod weights, when set, replaced by weights.
func dpFleet(name string, pods, engines int, weights []float64) fleetsim.Config {
	cfg := fleetsim.Scenario(name)
	cfg.NumPods = 0
	cfg.Pods = make([]fleetsim.PodConfig, pods)
	for i := range cfg.Pods {
		cfg.Pods[i].DataParallel = engines
	}
	for i := range cfg.Workload.Phases {
		if cfg.Workload.Phases[i].Weights != nil {
			cfg.Workload.Phases[i].Weights = weights
		}
	}
	return cfg
}

// TestEngineImbalanceScenarios: fleets of data-parallel pods simulated
// from fleetsim's physics. A router inside one pod that sends most of
// its requests to one engine (and none to another) from the incident on
// is engine-imbalance, named on that pod and engine; the same fleet with
// its engines taking turns is no incident; a fleet-wide overload and a
// hot pod on data-parallel pods are not read as an engine imbalance.
func TestEngineImbalanceScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates four fleets")
	}
	skewed := dpFleet("healthy", 2, 4, nil)
	skewed.Pods[0].EngineSkews = []fleetsim.EngineSkew{{From: fleetsim.IncidentStart, To: 2 * time.Hour, Weights: []float64{6, 1, 1, 0}}}
	tests := []struct {
		name    string
		cfg     fleetsim.Config
		verdict string
	}{
		{"skewed engine router", skewed, string(rules.EngineImbalance)},
		{"healthy data-parallel pods", dpFleet("healthy", 2, 4, nil), "no-incident"},
		{"overload on data-parallel pods", dpFleet("sustained-overload", 2, 4, nil), string(rules.QueueSustained)},
		{"hot data-parallel pod", dpFleet("hot-replica", 4, 2, []float64{3, 1, 1, 1}), string(rules.ReplicaHotspot)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := simulate(t, tt.cfg)
			rep, table := diagnoseTable(t, ev)
			assert.Equal(t, tt.verdict, string(rep.Verdict), "%s", table)
			if tt.verdict == string(rules.EngineImbalance) {
				f := rep.Facts[rules.EngineLoadShareMax]
				assert.Contains(t, f.Source, fmt.Sprintf("pod %s engine 0", "vllm-0"), "%s", table)
				assert.Contains(t, noteIDs(rep), "engine-imbalance-suspected")
			} else {
				assert.NotEqual(t, rules.Supported, finding(rep, rules.EngineImbalance).Status, "%s", table)
			}
			t.Logf("%s\n%s", rep.Summary, table)
		})
	}
}
