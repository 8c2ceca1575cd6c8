package diagnose_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

func TestDiagnoseOptionsErrors(t *testing.T) {
	ev := twoPodFleet(t)
	for name, opts := range map[string]diagnose.Options{
		"baseline without incident": {Baseline: snapshot.Window{Start: t0, End: t0.Add(time.Minute)}},
		"incident end before start": {Incident: snapshot.Window{Start: t0.Add(time.Minute), End: t0}},
		"open incident":             {Incident: snapshot.Window{End: t0}},
		"bad quantile":              {Quantiles: []float64{1.5}},
		"negative min window":       {MinWindow: -time.Minute},
	} {
		_, err := diagnose.Diagnose(ev, opts)
		assert.Error(t, err, name)
	}
	_, err := diagnose.Diagnose(&snapshot.Evidence{}, diagnose.Options{})
	assert.Error(t, err)
}

func TestDiagnoseDoesNotModifyEvidence(t *testing.T) {
	ev := twoPodFleet(t)
	before := ev.Targets[0].Family("vllm:num_requests_waiting").Series[0].V[0]
	_, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	assert.Equal(t, before, ev.Targets[0].Family("vllm:num_requests_waiting").Series[0].V[0])
}

func TestDiagnoseSLOWithoutBaseline(t *testing.T) {
	// One scrape per pod: no baseline, so the TTFT symptom can only be
	// judged against an SLO target.
	last := evidenceOf(t,
		scrape{"a", t0, []podState{{model: "m", ttft: []float64{100, 100, 200, 200}, ttftSum: 80, stop: 190, abort: 10, waiting: 6, running: 12, kv: 0.5, gpuPct: 40}}},
		scrape{"b", t0, []podState{{model: "m", ttft: []float64{400, 400, 400, 400}, ttftSum: 20, stop: 400, kv: 0.9, gpuPct: 40}}})
	rep, err := diagnose.Diagnose(last, diagnose.Options{})
	require.NoError(t, err)
	assert.NotEqual(t, rules.NoIncident, rep.Verdict, "without baseline or SLO a missing comparison never reads as no incident")
	// 10 of 600 finished requests aborted (1.7% >= 1%) is judged without
	// a baseline: requests do not complete. On one scrape and no other
	// evidence that is a weak lead (score 0.5): a candidate to check next,
	// not a verdict.
	assert.Equal(t, rules.Undetermined, rep.Verdict)
	assert.Contains(t, rep.Candidates, rules.ClientAbandonment)
	rep, err = diagnose.Diagnose(last, diagnose.Options{SLO: rules.SLO{TTFTP95: 0.5}})
	require.NoError(t, err)
	var ttft rules.Symptom
	for _, s := range rep.Symptoms {
		if s.ID == rules.SymptomTTFT {
			ttft = s
		}
	}
	assert.True(t, ttft.Present, "lifetime TTFT p95 0.9 s breaks the 0.5 s SLO")
}

var (
	benchOnce sync.Once
	benchEv   *snapshot.Evidence
)

// BenchmarkDiagnose diagnoses 8 pods x 60 min of 15 s scrapes (the
// sustained-overload scenario) from evidence already loaded.
func BenchmarkDiagnose(b *testing.B) {
	benchOnce.Do(func() { benchEv = simulate(b, fleetsim.Scenario("sustained-overload")) })
	b.ResetTimer()
	for b.Loop() {
		if _, err := diagnose.Diagnose(benchEv, diagnose.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Warnings are typed: WarningDetails holds the same texts as Warnings, in
// order, with a kind, and a reading problem keeps snapshot's severity.
func TestWarningsAreTyped(t *testing.T) {
	ev := twoPodFleet(t)
	ev.Problems = append(ev.Problems,
		snapshot.Problem{Severity: snapshot.SeverityError, File: "pod-c.prom", Offset: -1, Err: snapshot.ErrTruncated},
		snapshot.Problem{Severity: snapshot.SeverityWarning, File: "pod-a.prom", Offset: -1, Err: snapshot.ErrNoTime})
	rep, err := diagnose.Diagnose(ev, diagnose.Options{})
	require.NoError(t, err)
	require.Len(t, rep.WarningDetails, len(rep.Warnings))
	for i, w := range rep.WarningDetails {
		assert.Equal(t, rep.Warnings[i], w.Text)
		assert.NotEmpty(t, w.Kind, w.Text)
		assert.Contains(t, []snapshot.Severity{snapshot.SeverityError, snapshot.SeverityWarning}, w.Severity)
	}
	require.GreaterOrEqual(t, len(rep.WarningDetails), 2)
	assert.Equal(t, report.Warning{Kind: report.WarnReading, Severity: snapshot.SeverityError, Text: rep.Warnings[0], Err: ev.Problems[len(ev.Problems)-2]}, rep.WarningDetails[0])
	assert.Contains(t, rep.Warnings[0], "pod-c.prom")
	assert.Equal(t, snapshot.SeverityWarning, rep.WarningDetails[1].Severity)
	assert.Equal(t, report.WarnReading, rep.WarningDetails[1].Kind)
	// A warning is the error it reports: errors.Is finds its sentinel,
	// errors.As its snapshot.Problem; the JSON is as before.
	assert.ErrorIs(t, rep.WarningDetails[0], snapshot.ErrTruncated)
	assert.ErrorIs(t, rep.WarningDetails[1], snapshot.ErrNoTime)
	assert.NotErrorIs(t, rep.WarningDetails[1], snapshot.ErrTruncated)
	var p snapshot.Problem
	require.ErrorAs(t, rep.WarningDetails[1], &p)
	assert.Equal(t, "pod-a.prom", p.File)
	assert.Equal(t, rep.WarningDetails[1].Text, rep.WarningDetails[1].Error())
	b, err := json.Marshal(rep.WarningDetails[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind": "reading", "severity": "error", "text": "reading: pod-c.prom: truncated input"}`, string(b))
}

// The diagnosis' own warnings unwrap to its sentinels, and the rules'
// to theirs: every entry of WarningDetails has an Err.
func TestOwnWarningsUnwrap(t *testing.T) {
	ev := twoPodFleet(t)
	for _, tc := range []struct {
		name string
		opts diagnose.Options
		want []error
	}{
		{"halves", diagnose.Options{}, []error{diagnose.ErrNoChangePoint}},
		{"clipped", diagnose.Options{
			Baseline: snapshot.Window{Start: t0.Add(-time.Hour), End: t0.Add(time.Minute)},
			Incident: snapshot.Window{Start: t0.Add(time.Minute), End: t0.Add(time.Hour)},
		}, []error{diagnose.ErrWindowClipped}},
		{"no baseline", diagnose.Options{Incident: snapshot.Window{Start: t0, End: t0.Add(2 * time.Minute)}},
			[]error{diagnose.ErrNoBaseline, rules.ErrNotEvaluable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := diagnose.Diagnose(ev, tc.opts)
			require.NoError(t, err)
			for _, w := range rep.WarningDetails {
				assert.NotNil(t, w.Err, "%s warning without a sentinel: %s", w.Kind, w.Text)
			}
			for _, want := range tc.want {
				assert.True(t, slices.ContainsFunc(rep.WarningDetails, func(w report.Warning) bool { return errors.Is(w, want) }),
					"no warning unwraps to %v in %q", want, rep.Warnings)
			}
		})
	}
}
