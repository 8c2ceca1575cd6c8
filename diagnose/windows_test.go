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
	assert.InDelta(t, 0.975, float64(f.Incident.Value), 1e-9)
	assert.InDelta(t, 0.095, float64(f.Baseline.Value), 1e-9)
	assert.Contains(t, f.Baseline.Window, "lifetime")
}

// Given windows that reach past the evidence are clipped at both ends,
// each with a warning naming the scrape clipped to (issue 14).
func TestWindowsClippedAtBothEnds(t *testing.T) {
	ev := twoPodFleet(t)
	first, last := ev.Span()
	tests := []struct {
		name               string
		incident, baseline snapshot.Window
		incStart, incEnd   time.Time
		baseStart          time.Time
		warnings           []string
	}{
		{name: "inside", incident: snapshot.Window{Start: t0.Add(time.Minute), End: last},
			incStart: t0.Add(time.Minute), incEnd: last},
		{name: "end past the last scrape", incident: snapshot.Window{Start: t0.Add(time.Minute), End: last.Add(5 * time.Minute)},
			incStart: t0.Add(time.Minute), incEnd: last,
			warnings: []string{"incident window ends at " + last.Add(5*time.Minute).UTC().Format("2006-01-02 15:04:05Z") +
				", after the last scrape (" + last.UTC().Format("2006-01-02 15:04:05Z") + "): clipped to end there"}},
		{name: "both ends", incident: snapshot.Window{Start: first.Add(-time.Hour), End: last.Add(time.Hour)},
			incStart: first, incEnd: last,
			warnings: []string{"incident window starts at", "before the first scrape (" + first.UTC().Format("2006-01-02 15:04:05Z") + ")",
				"incident window ends at"}},
		{name: "baseline before the evidence", incident: snapshot.Window{Start: t0.Add(time.Minute), End: last},
			baseline: snapshot.Window{Start: first.Add(-10 * time.Minute), End: t0.Add(time.Minute)},
			incStart: t0.Add(time.Minute), incEnd: last, baseStart: first,
			warnings: []string{"baseline window starts at"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := diagnose.Diagnose(ev, diagnose.Options{Incident: tt.incident, Baseline: tt.baseline})
			require.NoError(t, err)
			w := rep.Windows
			assert.True(t, tt.incStart.Equal(w.Incident.Start), "incident start %v", w.Incident.Start)
			assert.True(t, tt.incEnd.Equal(w.Incident.End), "incident end %v", w.Incident.End)
			if !tt.baseStart.IsZero() {
				assert.True(t, tt.baseStart.Equal(w.Baseline.Start), "baseline start %v", w.Baseline.Start)
			}
			for _, s := range tt.warnings {
				assert.True(t, hasWarning(rep, s), "want %q in %q", s, rep.Warnings)
			}
			if len(tt.warnings) == 0 {
				assert.False(t, hasWarning(rep, "clipped to"), "%q", rep.Warnings)
			}
			// The TTFT signal is evaluable over the clipped window.
			assert.NoError(t, rep.Facts[rules.TTFTP95].Missing)
		})
	}
}
