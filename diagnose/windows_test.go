package diagnose_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

func TestWindows(t *testing.T) {
	ev := twoPodFleet(t) // three scrapes per pod, one minute apart
	first := evidenceOf(t,
		scrape{"a", t0, []podState{{model: "m", ttft: []float64{100, 100, 100, 100}, stop: 100, kv: 0.5, gpuPct: 40}}},
		scrape{"b", t0.Add(2 * time.Second), []podState{{model: "m", ttft: []float64{100, 100, 100, 100}, stop: 100, kv: 0.5, gpuPct: 40}}})
	two := evidenceOf(t,
		scrape{"a", t0, []podState{{model: "m", ttft: []float64{100, 100, 100, 100}, stop: 100, kv: 0.5, gpuPct: 40}}},
		scrape{"a", t0.Add(30 * time.Minute), []podState{{model: "m", ttft: []float64{100, 100, 300, 300}, stop: 300, kv: 0.5, gpuPct: 40}}},
		scrape{"b", t0.Add(2 * time.Second), []podState{{model: "m", ttft: []float64{100, 100, 100, 100}, stop: 100, kv: 0.5, gpuPct: 40}}},
		scrape{"b", t0.Add(30*time.Minute + 2*time.Second), []podState{{model: "m", ttft: []float64{100, 100, 300, 300}, stop: 300, kv: 0.5, gpuPct: 40}}})

	tests := []struct {
		name             string
		ev               *snapshot.Evidence
		opts             diagnose.Options
		base, inc        string
		incStart, incEnd time.Time
		warning          string
	}{
		{name: "given", ev: ev, opts: givenWindows(), base: "given", inc: "given",
			incStart: t0.Add(time.Minute), incEnd: t0.Add(2 * time.Minute)},
		{name: "incident only", ev: ev, opts: diagnose.Options{Incident: snapshot.Window{Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)}},
			base: "preceding", inc: "given", incStart: t0.Add(time.Minute), incEnd: t0.Add(2 * time.Minute)},
		{name: "too short for a change point", ev: ev, base: "halves", inc: "halves",
			incStart: t0.Add(time.Minute), incEnd: t0.Add(2 * time.Minute), warning: "no change point"},
		{name: "one dump per pod", ev: first, base: "none", inc: "lifetime",
			incEnd: t0.Add(2 * time.Second), warning: "lifetime, not windowed"},
		{name: "two dumps per pod", ev: two, base: "lifetime", inc: "whole",
			incStart: t0.Add(2 * time.Second), incEnd: t0.Add(30*time.Minute + 2*time.Second), warning: "two scrapes per replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := diagnose.Diagnose(tt.ev, tt.opts)
			require.NoError(t, err)
			w := rep.Windows
			assert.Equal(t, tt.base, w.Baseline.From)
			assert.Equal(t, tt.inc, w.Incident.From)
			assert.True(t, tt.incStart.Equal(w.Incident.Start), "incident start %v", w.Incident.Start)
			assert.True(t, tt.incEnd.Equal(w.Incident.End), "incident end %v", w.Incident.End)
			if tt.warning != "" {
				assert.True(t, hasWarning(rep, tt.warning), "warnings %q", rep.Warnings)
			}
		})
	}
}

func TestTwoDumpsCompareWithLifetime(t *testing.T) {
	// Before the first dump each pod finished 100 requests, all <= 0.1 s;
	// between the dumps 200 more, all in (0.5, 1]: the TTFT symptom shows
	// against the lifetime baseline.
	two := evidenceOf(t,
		scrape{"a", t0, []podState{{model: "m", ttft: []float64{100, 100, 100, 100}, ttftSum: 5, stop: 100, kv: 0.5, gpuPct: 40}}},
		scrape{"a", t0.Add(30 * time.Minute), []podState{{model: "m", ttft: []float64{100, 100, 300, 300}, ttftSum: 155, stop: 300, kv: 0.5, gpuPct: 40}}})
	rep, err := diagnose.Diagnose(two, diagnose.Options{})
	require.NoError(t, err)
	f := rep.Facts[rules.TTFTP95]
	assert.InDelta(t, 0.975, float64(f.Value), 1e-9)
	assert.InDelta(t, 0.095, float64(f.Baseline), 1e-9)
	assert.Contains(t, f.BaselineWindow, "lifetime")
}
