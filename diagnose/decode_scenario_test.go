package diagnose_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// thrashFleet: a small KV pool and, from minute 20, a few very long
// prompts (3% of requests, ~14k tokens) whose chunked prefills are
// admitted, preempted and readmitted again and again.
func thrashFleet(seed uint64) fleetsim.Config {
	base := fleetsim.DefaultPhase
	base.Rate = 4 * 3.2
	inc := base
	inc.Start = 20 * time.Minute
	inc.Prompt.TailWeight, inc.Prompt.TailMedian, inc.Prompt.TailSigma = 0.03, 14000, 0.2
	return fleetsim.Config{Seed: seed, NumPods: 4, Duration: 40 * time.Minute, RequestPreemptions: true,
		Engine:   fleetsim.DefaultEngine.WithGPUMemoryUtilization(0.58),
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{base, inc}}}
}

// spreadFleet: the matrix's kv-preemption physics (small pool, every
// prompt 3x longer): the preemptions fall on many requests.
func spreadFleet() fleetsim.Config {
	base := fleetsim.DefaultPhase
	base.Rate = 4 * 3.2
	inc := base
	inc.Start = 20 * time.Minute
	inc.Prompt.Median *= 3
	return fleetsim.Config{Seed: 7, NumPods: 4, Duration: 40 * time.Minute, RequestPreemptions: true,
		Engine:   fleetsim.DefaultEngine.WithGPUMemoryUtilization(0.58),
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{base, inc}}}
}

// specFleet: speculative decoding with 4 draft tokens; each draft token is
// accepted with probability base, from minute 20 with incident (the
// traffic stopped matching the drafter). extra scales the arrival rate
// from minute 20.
func specFleet(base, incident, extra float64) fleetsim.Config {
	eng := fleetsim.DefaultEngine
	eng.SpecTokens = 4
	b := fleetsim.DefaultPhase
	b.Rate = 4 * 3.2
	b.SpecAccept = base
	inc := b
	inc.Start = 20 * time.Minute
	inc.SpecAccept = incident
	inc.Rate *= extra
	return fleetsim.Config{Seed: 7, NumPods: 4, Duration: 40 * time.Minute, Engine: eng,
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{b, inc}}}
}

func TestDecodeScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates fleets")
	}
	tests := []struct {
		name string
		cfg  fleetsim.Config
		want rules.Verdict
	}{
		// Seed 7 sits on the thrash line and its long prefills lift the
		// backlog in spikes (queue-burst's support): undetermined between
		// them is right there; a wrong cause is not.
		{"thrash", thrashFleet(7), ""},
		{"thrash seed 8", thrashFleet(8), rules.Verdict(rules.PreemptionThrash)},
		// Seed 9 preempts little (0.2% of requests): the long prompts'
		// prefill is the story, thrash must not be claimed.
		{"thrash seed 9: few preemptions", thrashFleet(9), rules.Verdict(rules.PrefillLongPrompts)},
		{"spread", spreadFleet(), rules.Verdict(rules.KVPreemption)},
		{"spec acceptance drop", specFleet(0.8, 0.3, 1), rules.Verdict(rules.SpecDecodeAcceptance)},
		{"healthy spec decode", specFleet(0.8, 0.8, 1), rules.NoIncident},
		// Acceptance steady while demand grows: decode load, never the drafts.
		{"spec decode, more arrivals", specFleet(0.8, 0.8, 1.8), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, table := diagnoseTable(t, simulate(t, tt.cfg))
			if tt.want != "" {
				assert.Equal(t, tt.want, rep.Verdict, table)
			}
			// Whatever the verdict, not a cause the fleet does not have.
			if tt.want == "" && strings.HasPrefix(tt.name, "thrash") {
				assert.Contains(t, []rules.Verdict{rules.Verdict(rules.PreemptionThrash), rules.Undetermined}, rep.Verdict, table)
				assert.Contains(t, rep.Summary, string(rules.PreemptionThrash), "named as the verdict or a candidate")
			} else if tt.want == "" {
				assert.NotContains(t, []rules.Verdict{rules.Verdict(rules.SpecDecodeAcceptance), rules.Verdict(rules.PreemptionThrash)}, rep.Verdict, table)
			}
		})
	}
}
