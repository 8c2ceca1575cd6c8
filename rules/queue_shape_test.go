package rules_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/whyslow/whyslow/rules"
)

// TestBurstOrSustained: bursts are judged by the arrivals' dispersion
// around their trend, and burst against sustained by the waiting gauge's
// slope and shape together (issue 31), never by arrival_dispersion around
// a constant mean or by the share of busy scrapes alone.
func TestBurstOrSustained(t *testing.T) {
	// A queue that built over minutes: TTFT and queue time up.
	queued := func(kv ...any) rules.Facts {
		return with(with(healthy(),
			rules.TTFTP50, fact(0.5, 0.3),
			rules.TTFTP95, fact(2.1, 0.9),
			rules.TTFTP99, fact(3.2, 1.4),
			rules.QueueTimeP95, fact(1.2, 0.12),
			rules.QueueTimeMean, fact(0.4, 0.03),
			rules.TTFTMean, fact(0.9, 0.35),
			rules.WaitingMean, fact(6, 0.4),
			rules.WaitingMax, fact(64, 3),
		), kv...)
	}
	tests := []struct {
		name    string
		facts   rules.Facts
		verdict rules.Verdict
		burst   rules.Status
	}{
		{
			// Round 2's miss: arrivals 40 -> 70 req/s over 25 minutes, the
			// queue building from the 20th minute.
			name: "linear ramp, queue builds late",
			facts: queued(
				rules.ArrivalRate, fact(55, 40),
				rules.ArrivalDispersion, fact(26, 1.1),
				rules.ArrivalDispersionDetrended, fact(1.1, 1),
				rules.WaitingBusyShare, fact(0.475, 0.05),
				rules.WaitingSlope, fact(0.05, 0),
				rules.WaitingDrainedShare, fact(0.08, 0.9),
			),
			verdict: rules.Verdict(rules.QueueSustained), burst: C,
		},
		{
			name: "step of demand, queue intermittent",
			facts: queued(
				rules.ArrivalRate, fact(64, 40),
				rules.ArrivalDispersion, fact(12, 1.1),
				rules.ArrivalDispersionDetrended, fact(1.2, 1),
				rules.WaitingBusyShare, fact(0.2, 0.05),
				rules.WaitingSlope, fact(0.002, 0),
				rules.WaitingDrainedShare, fact(0.8, 0.9),
			),
			verdict: rules.Verdict(rules.QueueSustained), burst: C,
		},
		{
			name: "bursts whose queue is busy at most scrapes",
			facts: queued(
				rules.ArrivalRate, fact(46, 40),
				rules.ArrivalDispersion, fact(9, 1.1),
				rules.ArrivalDispersionDetrended, fact(9, 1),
				rules.WaitingBusyShare, fact(0.6, 0.05),
				rules.WaitingSlope, fact(0.001, 0),
				rules.WaitingDrainedShare, fact(0.9, 0.9),
			),
			verdict: rules.Verdict(rules.QueueBurst), burst: S,
		},
		{
			name: "bursts while the queue grows steadily",
			facts: queued(
				rules.ArrivalRate, fact(64, 40),
				rules.ArrivalDispersion, fact(9, 1.1),
				rules.ArrivalDispersionDetrended, fact(9, 1),
				rules.WaitingBusyShare, fact(0.45, 0.05),
				rules.WaitingSlope, fact(0.05, 0),
				rules.WaitingDrainedShare, fact(0.2, 0.9),
			),
			verdict: rules.Verdict(rules.QueueSustained), burst: C,
		},
		{
			// Scrapes a minute apart: each interval holds a burst, so the
			// arrivals per interval look even, but the batch fills and
			// drains.
			name: "bursts too short for the scrapes, seen in the backlog",
			facts: queued(
				rules.ArrivalRate, fact(44, 31),
				rules.ArrivalDispersion, fact(3.6, 0.3),
				rules.ArrivalDispersionDetrended, fact(0.25, 0.25),
				rules.BacklogSpike, fact(3.2, 1.3),
				rules.WaitingBusyShare, fact(0, 0),
				rules.WaitingSlope, fact(0, 0),
			),
			verdict: rules.Verdict(rules.QueueBurst), burst: S,
		},
		{
			name: "a backlog that spikes as much as in the baseline is no burst",
			facts: queued(
				rules.ArrivalRate, fact(64, 40),
				rules.ArrivalDispersionDetrended, fact(0.6, 0.5),
				rules.BacklogSpike, fact(2.4, 2.2),
				rules.WaitingBusyShare, fact(0.2, 0.05),
				rules.WaitingSlope, fact(0.002, 0),
				rules.WaitingDrainedShare, fact(0.8, 0.9),
			),
			verdict: rules.Verdict(rules.QueueSustained), burst: C,
		},
		{
			name: "a growing slope in a spiky queue is no steady build",
			facts: queued(
				rules.ArrivalRate, fact(46, 40),
				rules.ArrivalDispersion, fact(9, 1.1),
				rules.ArrivalDispersionDetrended, fact(9, 1),
				rules.WaitingBusyShare, fact(0.3, 0.05),
				rules.WaitingSlope, fact(0.02, 0),
				rules.WaitingDrainedShare, fact(0.85, 0.9),
			),
			verdict: rules.Verdict(rules.QueueBurst), burst: S,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			assert.Equal(t, tt.verdict, r.Verdict, "%s", r)
			assert.Equal(t, tt.burst, statuses(r)[rules.QueueBurst])
		})
	}
}

// TestSustainedNeedsWorkInFlight: a rise of the arrival rate supports a
// sustained overload only when the engines hold more requests at the
// scrapes (running or waiting): a sustained rise of demand raises the
// requests in flight at every instant, whereas bursts that drain between
// two scrapes (10 s bursts under scrapes a minute apart, each scrape 40 s
// after its burst) add arrivals and queue time the gauges never see.
func TestSustainedNeedsWorkInFlight(t *testing.T) {
	// Demand up 36%, queue time up (the mean: the p95 stays in the
	// lowest bucket), TTFT and TPOT up, arrivals per scrape interval as
	// even as in the baseline, no queue at any scrape.
	between := func(kv ...any) rules.Facts {
		return with(with(healthy(),
			rules.TTFTP50, fact(0.075, 0.0586),
			rules.TTFTP95, fact(0.247, 0.202),
			rules.TTFTP99, fact(0.471, 0.244),
			rules.TTFTMean, fact(0.0973, 0.0689),
			rules.TPOTP95, fact(0.0643, 0.0243),
			rules.TPOTMean, fact(0.0244, 0.0133),
			rules.QueueTimeP95, fact(0.286, 0.285),
			rules.QueueTimeMean, fact(0.0201, 0.00593),
			rules.ArrivalRate, fact(42.7, 31.4),
			rules.CompletionRate, fact(42.7, 31.4),
			rules.ArrivalDispersion, fact(3, 0.26),
			rules.ArrivalDispersionDetrended, fact(0.39, 0.23),
			rules.BacklogSpike, fact(1.21, 1.16),
			rules.WaitingBurst, fact(1.03, 1.02),
			rules.WaitingMean, fact(0, 0),
			rules.WaitingMax, fact(0, 0),
			rules.WaitingBusyShare, fact(0, 0),
			rules.WaitingSlope, fact(0, 0),
			rules.RunningMean, fact(92.9, 94.1),
		), kv...)
	}
	tests := []struct {
		name      string
		facts     rules.Facts
		verdict   rules.Verdict
		sustained rules.Status
	}{
		{
			name:    "bursts between the scrapes: the gauges hold no more work",
			facts:   between(),
			verdict: rules.Undetermined, sustained: C,
		},
		{
			// Little's law: the e2e latency's _sum says 1.6x more
			// requests were in the engines than the scrapes saw; in the
			// baseline the scrapes saw them all.
			name:    "bursts between the scrapes: the scrapes miss the requests the counters count",
			facts:   between(rules.RunningMean, fact(111, 89.7), rules.OccupancySeen, fact(0.61, 0.98)),
			verdict: rules.Verdict(rules.QueueBurst), sustained: C,
		},
		{
			name:    "a step of demand the batch holds",
			facts:   between(rules.RunningMean, fact(160, 94.1)),
			verdict: rules.Verdict(rules.QueueSustained), sustained: S,
		},
		{
			name: "a step of demand that waits (running at its ceiling)",
			facts: between(
				rules.WaitingMean, fact(4, 0.5),
				rules.WaitingMax, fact(30, 3),
				rules.WaitingBusyShare, fact(0.4, 0.1),
			),
			verdict: rules.Verdict(rules.QueueSustained), sustained: S,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules.Evaluate(tt.facts, rules.SLO{}, rules.DefaultThresholds)
			assert.Equal(t, tt.verdict, r.Verdict, "%s", r)
			assert.Equal(t, tt.sustained, statuses(r)[rules.QueueSustained])
		})
	}
}

// The old facts and threshold names keep working beside the new ones.
func TestQueueShapeNamesKept(t *testing.T) {
	for _, id := range []rules.FactID{rules.ArrivalDispersion, rules.WaitingBusyShare, rules.ArrivalDispersionDetrended, rules.WaitingDrainedShare, rules.BacklogSpike} {
		_, ok := rules.Info(id)
		assert.True(t, ok, "%s", id)
	}
	th := rules.DefaultThresholds
	for _, n := range []string{"dispersion", "busy_share", "dispersion_detrended", "drained_share", "backlog_spike"} {
		assert.NoError(t, th.Set(n, 0.7), n)
		v, ok := th.Get(n)
		assert.True(t, ok)
		assert.Equal(t, 0.7, v)
	}
}
