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
