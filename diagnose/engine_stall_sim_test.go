package diagnose_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// engineFleet is four default pods at 4 requests/s each for 30 minutes;
// the incident (if any) starts at 16 minutes.
func engineFleet(seed uint64, change func(cfg *fleetsim.Config)) fleetsim.Config {
	p := fleetsim.DefaultPhase
	p.Rate = 16
	cfg := fleetsim.Config{
		Seed: seed, Duration: 30 * time.Minute, NumPods: 4,
		Pods:     make([]fleetsim.PodConfig, 4),
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{p}},
	}
	if change != nil {
		change(&cfg)
	}
	return cfg
}

// incidentPhase adds a phase at 16 minutes with the given routing
// weights and the fleet rate that keeps 4 requests/s on every pod of
// weight 1.
func incidentPhase(cfg *fleetsim.Config, weights ...float64) {
	p := cfg.Workload.Phases[0]
	p.Start = 16 * time.Minute
	p.Weights = weights
	p.Rate = 0
	for _, w := range weights {
		p.Rate += 4 * w
	}
	cfg.Workload.Phases = append(cfg.Workload.Phases, p)
}

// TestEngineFaultsFromPhysics: fleetsim's scheduler that stops and
// gauges that freeze after a mass abort, with counter-cases, diagnosed
// from their dumps with default options: never a wrong cause.
func TestEngineFaultsFromPhysics(t *testing.T) {
	tests := []struct {
		name    string
		cfg     fleetsim.Config
		verdict rules.Verdict
	}{
		{
			name: "one pod's scheduler stops",
			cfg: engineFleet(7, func(cfg *fleetsim.Config) {
				cfg.Pods[2].Stalls = []fleetsim.Stall{{From: 16 * time.Minute, To: 30 * time.Minute}}
			}),
			verdict: rules.Verdict(rules.EngineStall),
		},
		{
			// Every client of one pod disconnects at once and none comes
			// back (the router drops it); its gauges keep their values.
			name: "one pod's gauges freeze after a mass abort",
			cfg: engineFleet(8, func(cfg *fleetsim.Config) {
				cfg.Pods[1].Freezes = []fleetsim.Freeze{{At: 16 * time.Minute}}
				incidentPhase(cfg, 1, 0, 1, 1)
			}),
			verdict: rules.Verdict(rules.StaleGauges),
		},
		{
			// A constraint defers every request reaching one pod (vLLM
			// #53130): its queue is deferred requests, its KV cache
			// drains.
			name: "one pod defers its arrivals",
			cfg: engineFleet(11, func(cfg *fleetsim.Config) {
				cfg.Pods[3].Deferrals = []fleetsim.Deferral{{From: 16 * time.Minute, To: 30 * time.Minute}}
			}),
			verdict: rules.Verdict(rules.AdmissionDeferral),
		},
		{
			// Scrapes a minute apart see a stall of a minute and a half
			// at two scrapes only: a minute without a token or a
			// completion while requests wait is a stall at any interval.
			name: "a short stall under scrapes a minute apart",
			cfg: engineFleet(7, func(cfg *fleetsim.Config) {
				cfg.ScrapeInterval = time.Minute
				cfg.Pods[2].Stalls = []fleetsim.Stall{{From: 16 * time.Minute, To: 16*time.Minute + 90*time.Second}}
			}),
			verdict: rules.Verdict(rules.EngineStall),
		},
		{
			name: "healthy fleet under scrapes a minute apart",
			cfg: engineFleet(10, func(cfg *fleetsim.Config) {
				cfg.ScrapeInterval = time.Minute
			}),
			verdict: rules.NoIncident,
		},
		{
			name: "an idle pod is no stall",
			cfg: engineFleet(9, func(cfg *fleetsim.Config) {
				cfg.Workload.Phases[0].Weights = []float64{1, 1, 0, 1}
				cfg.Workload.Phases[0].Rate = 12
			}),
			verdict: rules.NoIncident,
		},
		{
			name:    "healthy fleet",
			cfg:     engineFleet(10, nil),
			verdict: rules.NoIncident,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, table := diagnoseTable(t, simulate(t, tt.cfg))
			assert.Equal(t, tt.verdict, rep.Verdict, table)
		})
	}
}
