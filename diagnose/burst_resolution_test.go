package diagnose_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// periodicBursts is the matrix's queue-burst fleet (moderate, 8 pods) as
// a periodic job over an hour: from minute 30 a 10 s burst starts 20 s
// into every minute, scraped every scrape.
func periodicBursts(t *testing.T, scrape time.Duration) fleetsim.Config {
	t.Helper()
	mc, ok := fleetsim.LookupMatrixCase("queue-burst")
	require.True(t, ok)
	k, ok := fleetsim.MatrixKnob("queue-burst", 8, "moderate")
	require.True(t, ok)
	cfg := mc.Config(8, fleetsim.MatrixSeeds[0], k)
	require.NotEmpty(t, cfg.Workload.Bursts)
	rate := cfg.Workload.Bursts[0].Rate
	var bs []fleetsim.Burst
	for m := fleetsim.IncidentStart; m < time.Hour; m += time.Minute {
		bs = append(bs, fleetsim.Burst{At: m + 20*time.Second, Length: 10 * time.Second, Rate: rate})
	}
	cfg.Workload.Bursts = bs
	cfg.Duration = time.Hour
	cfg.ScrapeInterval = scrape
	return cfg
}

// TestPeriodicBurstsAtScrapeResolution: scraped every 15 s, bursts a
// minute apart are queue-burst; scraped every 60 s, each scrape falls 40 s
// after a burst, with the queue drained and the batch at its baseline
// size, and the rise of the arrival rate they bring is no evidence of a
// sustained overload: the report names no wrong cause (the alerts
// generated from the same map agree: TestAlertsAtScrapeResolution).
func TestPeriodicBurstsAtScrapeResolution(t *testing.T) {
	for _, tt := range []struct {
		scrape time.Duration
		want   []rules.Verdict
	}{
		{15 * time.Second, []rules.Verdict{rules.Verdict(rules.QueueBurst)}},
		{time.Minute, []rules.Verdict{rules.Verdict(rules.QueueBurst), rules.Undetermined, rules.NoIncident}},
	} {
		t.Run(tt.scrape.String(), func(t *testing.T) {
			rep, table := diagnoseTable(t, simulate(t, periodicBursts(t, tt.scrape)))
			assert.Contains(t, tt.want, rep.Verdict, table)
		})
	}
}

// TestOccupancySeen: the requests in the engines at the scrapes match what
// the e2e latency's _sum implies (Little's law) when the scrapes catch the
// bursts, and fall short when every scrape lands 40 s after one; the
// baseline, with no bursts, is seen whole at either interval.
func TestOccupancySeen(t *testing.T) {
	for _, tt := range []struct {
		scrape   time.Duration
		min, max float64
	}{
		{15 * time.Second, 0.85, 1.15},
		{time.Minute, 0, 0.8},
	} {
		t.Run(tt.scrape.String(), func(t *testing.T) {
			rep, table := diagnoseTable(t, simulate(t, periodicBursts(t, tt.scrape)))
			f := rep.RuleFacts()[rules.OccupancySeen]
			require.True(t, f.Known(), "%s: %s", f.Missing, table)
			assert.InDelta(t, 1, f.Baseline.Value, 0.1, "baseline")
			assert.GreaterOrEqual(t, f.Incident.Value, tt.min)
			assert.LessOrEqual(t, f.Incident.Value, tt.max)
		})
	}
}
