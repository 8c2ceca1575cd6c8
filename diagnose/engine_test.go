package diagnose_test

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

// sampleEngine answers an Engine's questions from the samples of ev the
// way PromQL answers "sum by (le) (x - x offset d)": per series, the last
// sample at or before each edge within snapshot.Lookback; a series
// without both is left out. It counts the questions.
type sampleEngine struct {
	ev        *snapshot.Evidence
	questions atomic.Int64
	// stale holds, by target, when a staleness marker hides its series
	// from then on (its samples ended before).
	stale map[string]time.Time
}

// sample returns the index of the sample of target name's series ts
// standing for time t, as the engine sees it, or -1.
func (e *sampleEngine) sample(name string, ts []int64, t time.Time) int {
	if m, ok := e.stale[name]; ok && !t.Before(m) {
		return -1
	}
	return at(ts, t)
}

// series returns the histogram series of q.Metric on target name that
// carry q.Match's labels.
func (e *sampleEngine) series(name string, q snapshot.HistogramQuery) []*snapshot.HistogramSeries {
	var out []*snapshot.HistogramSeries
	for _, t := range e.ev.Targets {
		if fam := t.Families[q.Metric]; t.Name == name && fam != nil {
			for _, h := range fam.Histograms {
				if matches(h, q.Match) {
					out = append(out, h)
				}
			}
		}
	}
	return out
}

// at returns the index of the sample of ts standing for time t, or -1.
func at(ts []int64, t time.Time) int {
	ms := t.UnixMilli()
	k := sort.Search(len(ts), func(j int) bool { return ts[j] > ms }) - 1
	if k < 0 || ts[k] <= ms-snapshot.Lookback.Milliseconds() {
		return -1
	}
	return k
}

func matches(h *snapshot.HistogramSeries, match map[string]string) bool {
	for k, v := range match {
		if h.Labels.Get(k) != v {
			return false
		}
	}
	return true
}

func (e *sampleEngine) HistogramIncreases(q snapshot.HistogramQuery) ([][]*histogram.Histogram, error) {
	e.questions.Add(1)
	rows := 1
	if q.Each {
		rows = len(q.Targets)
	}
	out := make([][]*histogram.Histogram, rows)
	for i := range out {
		out[i] = make([]*histogram.Histogram, len(q.Grid))
	}
	for k, tg := range q.Targets {
		row := out[0]
		if q.Each {
			row = out[k]
		}
		for _, h := range e.series(tg.Name, q) {
			for i, w := range q.Grid {
				a, b := e.sample(tg.Name, h.T, w.Start), e.sample(tg.Name, h.T, w.End)
				if a < 0 || b < 0 {
					continue
				}
				d := row[i]
				if d == nil {
					d = &histogram.Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Bounds))}
					row[i] = d
				}
				n := len(h.Bounds)
				for j := range n {
					d.Counts[j] += h.Counts[b*n+j] - h.Counts[a*n+j]
				}
				d.Count += h.Count[b] - h.Count[a]
				d.Sum += h.Sum[b] - h.Sum[a]
			}
		}
	}
	return out, nil
}

func (e *sampleEngine) Presence(q snapshot.HistogramQuery) ([][]int, error) {
	e.questions.Add(1)
	out := make([][]int, len(q.Targets))
	edges := []time.Time{q.Grid[0].Start}
	for _, w := range q.Grid {
		edges = append(edges, w.End)
	}
	for k, tg := range q.Targets {
		out[k] = make([]int, len(edges))
		for _, h := range e.series(tg.Name, q) {
			for i, t := range edges {
				if e.sample(tg.Name, h.T, t) >= 0 {
					out[k][i]++
				}
			}
		}
	}
	return out, nil
}

func (e *sampleEngine) Resets(q snapshot.HistogramQuery) ([]string, error) {
	e.questions.Add(1)
	from := q.Grid[0].Start.Add(-snapshot.Lookback).UnixMilli()
	to := q.Grid[len(q.Grid)-1].End.UnixMilli()
	var out []string
	for _, tg := range q.Targets {
		for _, h := range e.series(tg.Name, q) {
			prev := math.NaN()
			for i, t := range h.T {
				if t < from || t > to {
					continue
				}
				if h.Count[i] < prev && !slices.Contains(out, tg.Name) {
					out = append(out, tg.Name)
				}
				prev = h.Count[i]
			}
		}
	}
	return out, nil
}

// withoutHistograms returns tg with its histograms' samples left out, as
// a read that lists them by their labels gives it.
func withoutHistograms(tg *snapshot.Target) *snapshot.Target {
	out := *tg
	out.Families = map[string]*snapshot.Family{}
	for name, f := range tg.Families {
		if len(f.Histograms) > 0 {
			f = f.WithoutSamples()
		}
		out.Families[name] = f
	}
	return &out
}

// earlyEnd returns a copy of tg without its samples and scrapes after
// cut: a replica that stopped before the others.
func earlyEnd(tg *snapshot.Target, cut time.Time) *snapshot.Target {
	return within(tg, time.Time{}, cut, nil)
}

// resetAt returns tg with its histograms' counters restarted at cut: the
// counts from then on lose what they held at cut (a process restart that
// process_start_time_seconds does not show).
func resetAt(tg *snapshot.Target, cut time.Time) *snapshot.Target {
	out := *tg
	out.Families = map[string]*snapshot.Family{}
	for name, f := range tg.Families {
		g := *f
		g.Histograms = nil
		for _, h := range f.Histograms {
			c := *h
			c.Counts, c.Sum, c.Count = slices.Clone(h.Counts), slices.Clone(h.Sum), slices.Clone(h.Count)
			k := at(c.T, cut)
			n := len(c.Bounds)
			for i := k + 1; k >= 0 && i < len(c.T); i++ {
				for j := range n {
					c.Counts[i*n+j] -= h.Counts[k*n+j]
				}
				c.Sum[i] -= h.Sum[k]
				c.Count[i] -= h.Count[k]
			}
			g.Histograms = append(g.Histograms, &c)
		}
		out.Families[name] = &g
	}
	return &out
}

// TestPushDownSurvey checks that a survey whose histogram timelines an
// engine sums (Surveyor.PushDown), fed targets without their histograms'
// samples and then the sample reads it asks for, gives the report of the
// whole evidence: when every replica is scraped over the same minutes,
// when one starts late (its first interval is read from its samples),
// when one's counters reset without a new process start (read whole),
// and when one ends and the engine stops seeing it before whyslow does
// (a staleness marker: its last intervals are read from its samples).
func TestPushDownSurvey(t *testing.T) {
	ev := simulatePods(t, "kv-preemption", 3)
	require.Len(t, ev.Targets, 3)
	first := ev.Targets[0].Scrapes[0].Time
	late := *ev
	late.Targets = append([]*snapshot.Target{lateStart(ev.Targets[0], first.Add(7*time.Minute+20*time.Second))}, ev.Targets[1:]...)
	reset := *ev
	reset.Targets = append(slices.Clone(ev.Targets[:2]), resetAt(ev.Targets[2], first.Add(31*time.Minute+10*time.Second)))
	// A replica that stops mid-minute, with a staleness marker a scrape
	// later: whyslow stands for it up to 5 minutes on, the engine not.
	stop := first.Add(24*time.Minute + 40*time.Second)
	ended := *ev
	ended.Targets = append(slices.Clone(ev.Targets[:2]), earlyEnd(ev.Targets[2], stop))

	for _, tc := range []struct {
		name  string
		ev    *snapshot.Evidence
		stale map[string]time.Time
		whole string // the target read over the whole history
	}{
		{"same minutes", ev, nil, ""},
		{"first replica starts late", &late, nil, ""},
		{"a counter reset", &reset, nil, ev.Targets[2].Name},
		{"a replica ends, marked stale", &ended, map[string]time.Time{ev.Targets[2].Name: stop.Add(15 * time.Second)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := diagnose.Diagnose(tc.ev, diagnose.Options{})
			require.NoError(t, err)

			eng := &sampleEngine{ev: tc.ev, stale: tc.stale}
			s, err := diagnose.NewSurveyor(diagnose.Options{})
			require.NoError(t, err)
			require.NoError(t, s.PushDown(eng))
			var sv *diagnose.Survey
			var whole []string
			for pass := 1; sv == nil; pass++ {
				require.LessOrEqual(t, pass, 4, "passes")
				if rs := s.SampleReads(); rs != nil {
					for _, r := range rs {
						for _, tg := range r.Targets {
							if r.Window.End.Sub(r.Window.Start) > 20*time.Minute {
								whole = append(whole, tg.Name)
							}
							require.NoError(t, s.AddSamples(r, cutHistograms(tc.ev, tg.Name, r.Window)))
						}
					}
				} else {
					for _, tg := range tc.ev.Targets {
						require.NoError(t, s.Add(withoutHistograms(tg)))
					}
				}
				var again bool
				sv, again, err = s.Survey()
				require.NoError(t, err)
				require.Equal(t, again, sv == nil)
			}
			if tc.whole != "" {
				assert.Equal(t, []string{tc.whole}, whole)
			} else {
				assert.Empty(t, whole)
			}
			assert.Positive(t, eng.questions.Load())
			got, err := diagnose.Diagnose(tc.ev, diagnose.Options{Survey: sv})
			require.NoError(t, err)
			assert.Equal(t, reportJSON(t, ref, false), reportJSON(t, got, false))
		})
	}
}

// cutHistograms returns target name of ev with its histograms' samples in
// w (from snapshot.Lookback before its start) and no other family: what a
// SampleRead reads.
func cutHistograms(ev *snapshot.Evidence, name string, w snapshot.Window) *snapshot.Target {
	for _, tg := range ev.Targets {
		if tg.Name == name {
			return within(tg, w.Start.Add(-snapshot.Lookback), w.End, func(f *snapshot.Family) bool { return len(f.Histograms) > 0 })
		}
	}
	return nil
}
