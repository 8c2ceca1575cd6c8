package diagnose_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// shapeFleet is a hand-built fleet of two pods scraped every 15 s for 20
// minutes: the first ten minutes are the baseline, the last ten the
// incident. step(pod, i, incident) returns what happens in scrape
// interval i (the completions in it, the gauges at its end, the TTFT
// observations with their sum), so that each fact of evidence strength
// can be checked against numbers computed by hand.
type intervalState struct {
	done, waiting, running, gpuPct float64
	fast, slow                     float64 // TTFT observations <= 0.1 s and in (0.5, 1]
	ttftSum                        float64
}

func shapeFleet(t *testing.T, step func(pod string, i int, incident bool) intervalState) *snapshot.Evidence {
	t.Helper()
	var ss []scrape
	for _, pod := range []string{"a", "b"} {
		var cum podState
		cum.model = "m"
		cum.ttft = []float64{0, 0, 0, 0}
		for i := 0; i <= 80; i++ {
			if i > 0 {
				st := step(pod, i, i > 40)
				cum.stop += st.done
				cum.ttft = []float64{cum.ttft[0] + st.fast, cum.ttft[1] + st.fast, cum.ttft[2] + st.fast + st.slow, cum.ttft[3] + st.fast + st.slow}
				cum.ttftSum += st.ttftSum
				cum.waiting, cum.running, cum.gpuPct = st.waiting, st.running, st.gpuPct
			} else {
				st := step(pod, 1, false) // the gauges of a steady start
				cum.waiting, cum.running, cum.gpuPct = st.waiting, st.running, st.gpuPct
			}
			s := cum
			s.ttft = append([]float64(nil), cum.ttft...)
			ss = append(ss, scrape{pod, t0.Add(time.Duration(i) * 15 * time.Second), []podState{s}})
		}
	}
	return evidenceOf(t, ss...)
}

func shapeWindows() diagnose.Options {
	return diagnose.Options{
		Baseline: snapshot.Window{Start: t0, End: t0.Add(10 * time.Minute)},
		Incident: snapshot.Window{Start: t0.Add(10 * time.Minute), End: t0.Add(20 * time.Minute)},
	}
}

func TestStrengthFacts(t *testing.T) {
	steady := func(pod string, i int, incident bool) intervalState {
		return intervalState{done: 30, running: 20, gpuPct: 90, fast: 30, ttftSum: 1.5}
	}
	tests := []struct {
		name  string
		step  func(pod string, i int, incident bool) intervalState
		check func(t *testing.T, rep *report.Report)
	}{
		{"steady fleet: balanced, no queue, Poisson-free arrivals", steady, func(t *testing.T, rep *report.Report) {
			f := rep.Facts[rules.ReplicaLoadShareMax]
			require.NoError(t, f.Missing)
			assert.InDelta(t, 1, float64(f.Incident.Value), 1e-9)
			assert.InDelta(t, 0, float64(rep.Facts[rules.WaitingBusyShare].Incident.Value), 1e-9)
			// Exactly 60 arrivals per interval (30 per pod): no variance.
			assert.InDelta(t, 0, float64(rep.Facts[rules.ArrivalDispersion].Incident.Value), 1e-9)
			assert.ErrorContains(t, rep.Facts[rules.GPUUtilWaiting].Missing, "no queue to judge the GPU by")
			assert.ErrorIs(t, rep.Facts[rules.GPUUtilWaiting].Missing, rules.ErrTooLittle)
			m := rep.Facts[rules.TTFTMean]
			assert.InDelta(t, 0.05, float64(m.Incident.Value), 1e-9)
			assert.InDelta(t, 0.05, float64(m.Baseline.Value), 1e-9)
			// The noise of an unchanged rate is a point at 1.
			ar := rep.Facts[rules.ArrivalRate]
			assert.Positive(t, ar.Intervals)
			assert.InDelta(t, 1, float64(ar.NoiseLower), 1e-9)
			assert.InDelta(t, 1, float64(ar.NoiseUpper), 1e-9)
		}},
		{"pod a takes three quarters of the arrivals", func(pod string, i int, incident bool) intervalState {
			s := steady(pod, i, incident)
			if incident && pod == "a" {
				s.done, s.fast, s.ttftSum = 90, 90, 4.5
			}
			return s
		}, func(t *testing.T, rep *report.Report) {
			f := rep.Facts[rules.ReplicaLoadShareMax]
			assert.InDelta(t, 1.5, float64(f.Incident.Value), 1e-9) // (90/120) / (1/2)
			assert.InDelta(t, 1, float64(f.Baseline.Value), 1e-9)
			assert.True(t, strings.HasPrefix(f.Source, "a: "), f.Source)
			// Arrivals doubled, beyond noise.
			ar := rep.Facts[rules.ArrivalRate]
			assert.InDelta(t, 2, float64(ar.Incident.Value)/float64(ar.Baseline.Value), 1e-9)
			assert.Greater(t, float64(ar.NoiseLower), 1.0)
		}},
		{"bursts that drain: waiting spikes one scrape in four, arrivals bunch", func(pod string, i int, incident bool) intervalState {
			s := steady(pod, i, incident)
			if incident {
				if i%4 == 0 {
					s.done, s.fast, s.ttftSum, s.waiting, s.gpuPct = 90, 90, 4.5, 12, 95
				} else {
					s.done, s.fast, s.ttftSum = 10, 10, 0.5
				}
			}
			return s
		}, func(t *testing.T, rep *report.Report) {
			busy := rep.Facts[rules.WaitingBusyShare]
			assert.InDelta(t, 0.25, float64(busy.Incident.Value), 0.03, "one scrape in four has requests waiting")
			assert.InDelta(t, 0, float64(rep.Facts[rules.WaitingMedian].Incident.Value), 1e-9)
			d := rep.Facts[rules.ArrivalDispersion]
			// Fleet arrivals per interval: 180 once in four, else 20 (plus
			// the growth of waiting): far more dispersed than Poisson.
			assert.Greater(t, float64(d.Incident.Value), 20.0)
			assert.InDelta(t, 0, float64(d.Baseline.Value), 1e-9)
			g := rep.Facts[rules.GPUUtilWaiting]
			require.NoError(t, g.Missing)
			assert.InDelta(t, 0.95, float64(g.Incident.Value), 1e-9, "the GPU where requests wait")
		}},
		{"a queue on an idle GPU", func(pod string, i int, incident bool) intervalState {
			s := steady(pod, i, incident)
			if incident {
				s.waiting, s.gpuPct = 8, 35
			}
			return s
		}, func(t *testing.T, rep *report.Report) {
			g := rep.Facts[rules.GPUUtilWaiting]
			require.NoError(t, g.Missing)
			assert.InDelta(t, 0.35, float64(g.Incident.Value), 1e-9)
			assert.InDelta(t, 1, float64(rep.Facts[rules.WaitingBusyShare].Incident.Value), 0.03)
			gm := rep.Facts[rules.GPUUtilMean]
			assert.Less(t, float64(gm.NoiseUpper), 1.0, "the fall of the GPU's utilisation is beyond noise")
		}},
		{"slow first tokens: the mean from sums", func(pod string, i int, incident bool) intervalState {
			s := steady(pod, i, incident)
			if incident {
				s.fast, s.slow, s.ttftSum = 20, 10, 1+7.5 // 20 x 0.05 s + 10 x 0.75 s
			}
			return s
		}, func(t *testing.T, rep *report.Report) {
			m := rep.Facts[rules.TTFTMean]
			assert.InDelta(t, 8.5/30, float64(m.Incident.Value), 1e-9)
			assert.InDelta(t, 0.05, float64(m.Baseline.Value), 1e-9)
			assert.Greater(t, float64(m.NoiseLower), 1.0)
			sym := symptomOf(rep, rules.SymptomTTFT)
			assert.True(t, sym.Present)
			assert.Equal(t, rules.SeveritySevere, sym.Severity)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := diagnose.Diagnose(shapeFleet(t, tt.step), shapeWindows())
			require.NoError(t, err)
			tt.check(t, rep)
		})
	}
}

func symptomOf(rep *report.Report, id rules.SymptomID) rules.Symptom {
	for _, s := range rep.Symptoms {
		if s.ID == id {
			return s
		}
	}
	return rules.Symptom{}
}

// TestNoiseIsReproducible: the resampling is seeded, so the same evidence
// gives the same bounds, and the bounds contain the point estimate.
func TestNoiseIsReproducible(t *testing.T) {
	step := func(pod string, i int, incident bool) intervalState {
		n := 20 + float64((i*7)%11) // uneven but deterministic
		if incident {
			n *= 1.5
		}
		return intervalState{done: n, running: 10, gpuPct: 90, fast: n, ttftSum: 0.05 * n}
	}
	a, err := diagnose.Diagnose(shapeFleet(t, step), shapeWindows())
	require.NoError(t, err)
	b, err := diagnose.Diagnose(shapeFleet(t, step), shapeWindows())
	require.NoError(t, err)
	fa, fb := a.Facts[rules.CompletionRate], b.Facts[rules.CompletionRate]
	assert.Equal(t, fa.NoiseLower, fb.NoiseLower)
	assert.Equal(t, fa.NoiseUpper, fb.NoiseUpper)
	r := float64(fa.Incident.Value) / float64(fa.Baseline.Value)
	assert.LessOrEqual(t, float64(fa.NoiseLower), r+1e-9)
	assert.GreaterOrEqual(t, float64(fa.NoiseUpper), r-1e-9)
	assert.False(t, math.IsNaN(float64(fa.NoiseLower)))
}

// TestTimelinesBoundedBySpan: evidence that spans a month (a few scrapes
// at each end) gets at most MaxIntervals timeline points, and a window
// given far wider than the evidence allocates nothing beyond it.
func TestTimelinesBoundedBySpan(t *testing.T) {
	var ss []scrape
	for _, at := range []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute),
		t0.Add(30 * 24 * time.Hour), t0.Add(30*24*time.Hour + time.Minute), t0.Add(30*24*time.Hour + 2*time.Minute)} {
		st := podState{model: "m", ttft: []float64{10, 10, 10, 10}, ttftSum: 0.5, stop: 10, running: 2, kv: 0.2, gpuPct: 50}
		ss = append(ss, scrape{"a", at, []podState{st}})
	}
	rep, err := diagnose.Diagnose(evidenceOf(t, ss...), diagnose.Options{
		Baseline: snapshot.Window{Start: t0.AddDate(-30, 0, 0), End: t0.Add(24 * time.Hour)},
		Incident: snapshot.Window{Start: t0.Add(24 * time.Hour), End: t0.AddDate(70, 0, 0)},
	})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Timelines)
	for _, tl := range rep.Timelines {
		assert.LessOrEqual(t, len(tl.Points), diagnose.MaxIntervals+1, "%s", tl.Signal)
		assert.GreaterOrEqual(t, time.Duration(tl.Step), time.Hour)
	}
}
