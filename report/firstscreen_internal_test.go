package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
)

// fleetOf is a report of replicas with the given incident TTFT p95 (seconds),
// 1,000 requests each, and a fleet p95 of fleet.
func fleetOf(fleet float64, p95 ...float64) *Report {
	sig := func(v float64) []Signal {
		return []Signal{{ID: string(catalog.SignalTTFT), Kind: "histogram", Unit: "s",
			Incident: &Measure{Quantiles: []Quantile{{Q: 0.95, Value: rules.Number(v), Count: 1000}}}}}
	}
	r := &Report{Signals: Signals{Fleet: sig(fleet), Replicas: map[string][]Signal{}}, Facts: rules.Facts{}}
	worst := 0.0
	for i, v := range p95 {
		r.Signals.Replicas[fmt.Sprintf("vllm-%d", i)] = sig(v)
		worst = max(worst, v)
	}
	r.Facts[rules.ReplicaTTFTRatio] = rules.Measured(worst / fleet)
	return r
}

// The worst replica is compared with the other replicas, not with a fleet
// its own slowness dominates; a companion exporter is no replica.
func TestBalanceFactsAgainstTheOthers(t *testing.T) {
	th := rules.DefaultThresholds
	tests := []struct {
		name string
		r    *Report
		want string
	}{
		{"a hot pod dominates the fleet p95", fleetOf(30, 38, 0.231, 0.229, 0.233),
			"worst replica TTFT p95: vllm-0 38s, 165x the other 3 replicas' median 231ms, a hot spot (hot spot at 1.3x; 1.27x the fleet's, replica_ttft_ratio)"},
		{"balanced", fleetOf(0.25, 0.24, 0.23, 0.231),
			"worst replica TTFT p95: vllm-0 240ms, 1.04x the other 2 replicas' median 231ms, balanced (hot spot at 1.3x; 0.96x the fleet's, replica_ttft_ratio)"},
		{"two replicas", fleetOf(1, 2, 1),
			"worst replica TTFT p95: vllm-0 2s, 2x the other replica's 1s, a hot spot (hot spot at 1.3x; 2x the fleet's, replica_ttft_ratio)"},
		{"one replica: the fact alone", fleetOf(1, 1.1),
			"worst replica TTFT p95: 1.1x the fleet's, balanced (hot spot at 1.3x; replica_ttft_ratio)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, []string{tt.want}, balanceFacts(tt.r, th))
		})
	}
	// A DCGM exporter's target is not among the replicas.
	r := fleetOf(30, 38, 0.231, 0.229)
	r.Signals.Replicas["dcgm-0"] = r.Signals.Replicas["vllm-1"]
	r.Inputs.Exporters = []Exporter{{Kind: "DCGM exporter", Targets: []string{"dcgm-0"}}}
	sp, ok := r.ttftSpread()
	require.True(t, ok)
	assert.Equal(t, 2, sp.N)
}

// One scrape per pod: replica-slower is a note with the numbers, never
// "not an incident"; the verdict line and "symptoms present" agree on
// what could not be judged.
func TestOneScrapeFirstScreen(t *testing.T) {
	r := fleetOf(30, 36, 0.231, 0.229)
	r.Verdict = rules.Undetermined
	r.Windows.Incident.From = "lifetime"
	r.Notes = []rules.Note{{ID: "replica-slower", Text: "one replica's TTFT p95 is well above the fleet's"}}
	r.Symptoms = []rules.Symptom{{ID: rules.SymptomTTFT}, {ID: rules.SymptomTPOT}, {ID: rules.SymptomReliability, Evaluable: true}}
	var b bytes.Buffer
	require.NoError(t, r.WriteText(&b))
	text := b.String()
	assert.NotContains(t, text, "not an incident: replica-slower")
	assert.Contains(t, text, "note: replica-slower: vllm-0's TTFT p95 36s is 157x the other 2 replicas' median 230ms")
	assert.Contains(t, text, "verdict: undetermined: ttft, tpot could not be judged, no other symptom is present, and no hypothesis is supported")
	assert.Contains(t, text, "symptoms present: none (not judged: ttft, tpot)")

	r.Notes = []rules.Note{{ID: "low-traffic"}}
	r.Symptoms = []rules.Symptom{{ID: rules.SymptomTTFT, Evaluable: true, Present: true}}
	b.Reset()
	require.NoError(t, r.WriteText(&b))
	assert.Contains(t, b.String(), "not an incident: low-traffic")
	assert.Contains(t, b.String(), "verdict: undetermined: symptoms are present, and no hypothesis is supported")
	assert.Contains(t, b.String(), "symptoms present: ttft\n")
}

// The change point lists the largest step first, with the fact's values
// for a series that is a fact when the windows come from it.
func TestMovedSignalsOneNumber(t *testing.T) {
	r := &Report{Facts: rules.Facts{rules.TTFTP95: rules.Measured(18.8).WithBaseline(0.203)}}
	r.Windows.ChangePoint = &ChangePoint{Used: true, Signals: []ChangeSignal{
		{Series: "tpot_p95", Unit: "s", Before: 0.0243, After: 0.0721, Score: 9},
		{Series: "ttft_p95", Unit: "s", Before: 0.2, After: 25, Score: 3},
		{Series: "waiting", Unit: "requests", Before: 0, After: 10, Score: 2},
	}}
	assert.Equal(t, "ttft_p95 203ms -> 18.8s (93x), tpot_p95 24.3ms -> 72.1ms (2.97x), waiting 0 req -> 10 req", movedText(r.movedSignals()))
	r.Windows.ChangePoint.Used = false
	assert.Equal(t, "ttft_p95 200ms -> 25s (125x), tpot_p95 24.3ms -> 72.1ms (2.97x), waiting 0 req -> 10 req", movedText(r.movedSignals()))
}

// A per-replica p95 inside the first bucket reads "<= b" in every form of
// the table, --verbose too, as in the before/after table.
func TestReplicaCellBound(t *testing.T) {
	r := fleetOf(0.2, 0.2, 0.2)
	for _, sigs := range r.Signals.Replicas {
		sigs[0].Incident.Quantiles[0] = Quantile{Q: 0.95, Value: 0.285, Lower: 0, Upper: 0.3, Count: 1000}
	}
	for _, verbose := range []bool{false, true} {
		var b bytes.Buffer
		require.NoError(t, r.Layout(LayoutOptions{Verbose: verbose, Wide: true}).WriteText(&b))
		rows := 0
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, "  vllm-") {
				rows++
				assert.Contains(t, line, "<= 300ms", "verbose=%v", verbose)
				assert.NotContains(t, line, "285ms", "verbose=%v", verbose)
			}
		}
		assert.Equal(t, 2, rows, "verbose=%v: %s", verbose, b.String())
	}
}
