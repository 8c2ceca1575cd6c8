package snapshot_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/snapshot"
)

var inf = math.Inf(1)

// hseries builds a histogram series: rows[i] holds the cumulative bucket
// counts of the sample at t0 + ts[i]; its count is the last bucket and its
// sum ten times the count.
func hseries(ls labels.Labels, bounds []float64, ts []time.Duration, rows ...[]float64) *snapshot.HistogramSeries {
	if len(ts) != len(rows) {
		panic("hseries: lengths differ")
	}
	s := &snapshot.HistogramSeries{Labels: ls, Bounds: bounds}
	for i, r := range rows {
		if len(r) != len(bounds) {
			panic("hseries: row length")
		}
		s.T = append(s.T, at(ts[i]).UnixMilli())
		s.Counts = append(s.Counts, r...)
		s.Count = append(s.Count, r[len(r)-1])
		s.Sum = append(s.Sum, 10*r[len(r)-1])
	}
	return s
}

// hist builds the expected histogram with the hseries conventions.
func hist(bounds []float64, counts ...float64) histogram.Histogram {
	c := counts[len(counts)-1]
	return histogram.Histogram{Bounds: bounds, Counts: counts, Count: c, Sum: 10 * c}
}

func b(bs ...float64) []float64 { return bs }

// r is shorthand for a row of cumulative counts.
func r(cs ...float64) []float64 { return cs }

func TestHistogramSeriesIncrease(t *testing.T) {
	bounds := b(0.1, 1, inf)
	tests := []struct {
		name string
		s    *snapshot.HistogramSeries
		w    snapshot.Window
		want snapshot.HistogramIncrease // Window is set from w
		err  string                     // substring of the error, which wraps ErrNotEvaluable
	}{
		{
			name: "steady",
			s:    hseries(labels.EmptyLabels(), bounds, every(0, min, 4), r(0, 0, 0), r(1, 2, 3), r(2, 4, 6), r(3, 6, 9)),
			w:    win(0, 3*min),
			want: snapshot.HistogramIncrease{Histogram: hist(bounds, 3, 6, 9), N: 4, Series: 1, From: at(0), To: at(3 * min)},
		},
		{
			name: "reset: the post-reset sample is the step's increase",
			s:    hseries(labels.EmptyLabels(), bounds, every(0, min, 4), r(5, 5, 5), r(6, 7, 8), r(1, 1, 2), r(2, 3, 4)),
			w:    win(0, 3*min),
			want: snapshot.HistogramIncrease{Histogram: hist(bounds, 1+1+1, 2+1+2, 3+2+2), N: 4, Series: 1, Resets: 1, LowerBound: true, From: at(0), To: at(3 * min)},
		},
		{
			name: "a bucket going down is a reset even if the count did not",
			s:    hseries(labels.EmptyLabels(), bounds, every(0, min, 2), r(5, 6, 7), r(4, 8, 9)),
			w:    win(0, min),
			want: snapshot.HistogramIncrease{Histogram: hist(bounds, 4, 8, 9), N: 2, Series: 1, Resets: 1, LowerBound: true, From: at(0), To: at(min)},
		},
		{
			name: "single sample, zero window: lifetime",
			s:    hseries(labels.EmptyLabels(), bounds, ds(0), r(1, 2, 3)),
			w:    snapshot.Window{},
			want: snapshot.HistogramIncrease{Histogram: hist(bounds, 1, 2, 3), N: 1, Series: 1, Lifetime: true, From: at(0), To: at(0)},
		},
		{
			name: "invalid sample inside the window is skipped",
			s:    hseries(labels.EmptyLabels(), bounds, every(0, min, 3), r(0, 0, 0), r(1, math.NaN(), 3), r(2, 4, 6)),
			w:    win(0, 2*min),
			want: snapshot.HistogramIncrease{Histogram: hist(bounds, 2, 4, 6), N: 2, Skipped: 1, Series: 1, From: at(0), To: at(2 * min)},
		},
		{
			name: "start clipped",
			s:    hseries(labels.EmptyLabels(), bounds, every(2*min, min, 2), r(1, 1, 1), r(2, 3, 4)),
			w:    win(0, 3*min),
			want: snapshot.HistogramIncrease{Histogram: hist(bounds, 1, 2, 3), N: 2, Series: 1, StartClipped: true, From: at(2 * min), To: at(3 * min)},
		},
		{
			name: "no +Inf bucket: the reason is given",
			s:    hseries(labels.FromStrings("engine", "0"), b(0.1, 1), every(0, min, 2), r(1, 2), r(2, 3)),
			w:    win(0, min),
			err:  `{engine="0"}: not evaluable: none of 2 samples is valid: histogram: no +Inf bucket`,
		},
		{
			name: "window after the data",
			s:    hseries(labels.EmptyLabels(), bounds, every(0, min, 2), r(1, 1, 1), r(2, 3, 4)),
			w:    win(time.Hour, 2*time.Hour),
			err:  "no sample in the 5m0s before the end",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts := append([]float64(nil), tt.s.Counts...)
			got, err := tt.s.Increase(tt.w)
			assert.True(t, sameBits(counts, tt.s.Counts), "input modified")
			if tt.err != "" {
				require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			tt.want.Window = tt.w
			assertHistIncrease(t, tt.want, got)
		})
	}
}

func assertHistIncrease(t *testing.T, want, got snapshot.HistogramIncrease) {
	t.Helper()
	assertSpan(t, span{want.Window, want.From, want.To, want.N, want.Skipped, want.Series},
		span{got.Window, got.From, got.To, got.N, got.Skipped, got.Series})
	assert.Equal(t, want.Histogram, got.Histogram, "Histogram")
	assert.NoError(t, got.Histogram.Validate())
	assert.Equal(t, want.Excluded, got.Excluded, "Excluded")
	assert.Equal(t, want.Resets, got.Resets, "Resets")
	assert.Equal(t, want.LayoutChanges, got.LayoutChanges, "LayoutChanges")
	assert.Equal(t, want.Dropped, got.Dropped, "Dropped")
	assert.Equal(t, want.LowerBound, got.LowerBound, "LowerBound")
	assert.Equal(t, want.Lifetime, got.Lifetime, "Lifetime")
	assert.Equal(t, want.StartClipped, got.StartClipped, "StartClipped")
	assert.Equal(t, len(want.Warnings), len(got.Warnings), "Warnings: %v", got.Warnings)
}

func TestHistogramIncreaseLayoutChange(t *testing.T) {
	old := b(0.1, 0.5, 1, inf)
	cur := b(0.1, 1, 2, inf)
	ls := labels.FromStrings("model_name", "m")
	f := &snapshot.Family{
		Name: "vllm:time_to_first_token_seconds",
		Histograms: []*snapshot.HistogramSeries{
			hseries(ls, old, every(0, min, 3), r(0, 0, 0, 0), r(1, 2, 3, 3), r(2, 4, 6, 7)),
			// Restarted on a version with other buckets.
			hseries(ls, cur, every(3*min, min, 3), r(1, 1, 1, 2), r(2, 3, 4, 5), r(3, 5, 7, 9)),
		},
	}

	got, err := f.HistogramIncrease(win(0, 5*min), nil)
	require.NoError(t, err)
	// Old layout: 0 -> 2m gives (2, 4, 6, 7); on shared bounds (0.1, 1, +Inf): (2, 6, 7).
	// New layout: the 3m sample (1, 1, 1, 2) as after a reset, plus 3m -> 5m:
	// (3, 5, 7, 9); on shared bounds: (3, 5, 9).
	want := snapshot.HistogramIncrease{
		Window:    win(0, 5*min),
		From:      at(0),
		To:        at(5 * min),
		Histogram: histogram.Histogram{Bounds: b(0.1, 1, inf), Counts: b(5, 11, 16), Count: 16, Sum: 160},
		N:         6, Series: 1, Resets: 1, LayoutChanges: 1, LowerBound: true,
		Dropped: b(0.5, 2),
	}
	assertHistIncrease(t, want, got)
	assert.Contains(t, got.String(), "1 layout change, dropped le=[0.5 2]")

	// A window inside the new layout sees no change.
	got, err = f.HistogramIncrease(win(4*min, 5*min), nil)
	require.NoError(t, err)
	assertHistIncrease(t, snapshot.HistogramIncrease{
		Window: win(4*min, 5*min), From: at(4 * min), To: at(5 * min),
		Histogram: hist(cur, 1, 2, 3, 4), N: 2, Series: 1,
	}, got)

	// Layouts with no finite bound in common: only the last one is kept,
	// with a warning.
	g := &snapshot.Family{
		Name: "h",
		Histograms: []*snapshot.HistogramSeries{
			hseries(ls, b(1, inf), every(0, min, 2), r(0, 0), r(1, 2)),
			hseries(ls, b(2, inf), every(2*min, min, 2), r(1, 1), r(3, 4)),
		},
	}
	got, err = g.HistogramIncrease(win(0, 3*min), nil)
	require.NoError(t, err)
	assertHistIncrease(t, snapshot.HistogramIncrease{
		Window: win(0, 3*min), From: at(0), To: at(3 * min),
		Histogram: hist(b(2, inf), 3, 4), N: 4, Series: 1, Resets: 1, LayoutChanges: 1, LowerBound: true,
		Warnings: make([]error, 1),
	}, got)
	require.Len(t, got.Warnings, 1)
	assert.ErrorIs(t, got.Warnings[0], histogram.ErrNoCommonBounds)
	assert.Contains(t, got.Warnings[0].Error(), "layout change at 2026-09-22T10:02:00Z left out")
}

func TestHistogramIncreaseAcrossEngines(t *testing.T) {
	bounds := b(0.1, 1, inf)
	e := func(n string) labels.Labels { return labels.FromStrings("engine", n, "model_name", "m") }
	f := &snapshot.Family{
		Name: "vllm:e2e_request_latency_seconds",
		Histograms: []*snapshot.HistogramSeries{
			hseries(e("0"), bounds, every(0, min, 3), r(0, 0, 0), r(1, 1, 1), r(2, 2, 2)),
			hseries(e("1"), bounds, every(0, min, 3), r(5, 5, 5), r(5, 6, 7), r(1, 2, 3)),
			hseries(e("2"), bounds, every(time.Hour, min, 2), r(0, 0, 0), r(1, 1, 1)),
		},
	}
	got, err := f.HistogramIncrease(win(0, 2*min), map[string]string{"model_name": "m"})
	require.NoError(t, err)
	assertHistIncrease(t, snapshot.HistogramIncrease{
		Window: win(0, 2*min), From: at(0), To: at(2 * min),
		Histogram: hist(bounds, 2+0+1, 2+1+2, 2+2+3), N: 6, Series: 2, Excluded: 1, Resets: 1, LowerBound: true,
	}, got)
	assert.Equal(t, "histogram increase 7 observations, sum 70 over 2026-09-22T10:00:00Z/2026-09-22T10:02:00Z "+
		"(6 samples of 2 series from 2026-09-22T10:00:00Z to 2026-09-22T10:02:00Z, 1 reset, lower bound, 1 series not evaluable)", got.String())
	assert.InDelta(t, 7.0/120, got.Rate(), 1e-12)

	one, err := f.HistogramIncrease(win(0, 2*min), map[string]string{"engine": "0"})
	require.NoError(t, err)
	assert.Equal(t, hist(bounds, 2, 2, 2), one.Histogram)

	_, err = f.HistogramIncrease(win(0, 2*min), map[string]string{"engine": "2"})
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	assert.Contains(t, err.Error(), `vllm:e2e_request_latency_seconds{engine="2", model_name="m"}: not evaluable`)

	_, err = f.HistogramIncrease(win(0, 2*min), map[string]string{"engine": "9"})
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)

	// The result does not share memory with the evidence.
	one.Histogram.Counts[0] = 1e9
	assert.Equal(t, 2.0, f.Histograms[0].Counts[6])
}

func TestMergeHistogramIncreases(t *testing.T) {
	_, err := snapshot.MergeHistogramIncreases()
	require.Error(t, err)

	a := snapshot.HistogramIncrease{Window: win(0, min), From: at(0), To: at(min), Histogram: hist(b(1, 2, inf), 1, 2, 3), N: 2, Series: 1}
	c := snapshot.HistogramIncrease{Window: win(0, min), From: at(-sec), To: at(min - sec), Histogram: hist(b(1, inf), 4, 5), N: 3, Series: 1, StartClipped: true}
	m, err := snapshot.MergeHistogramIncreases(a, c)
	require.NoError(t, err)
	assertHistIncrease(t, snapshot.HistogramIncrease{
		Window: win(0, min), From: at(-sec), To: at(min),
		Histogram: hist(b(1, inf), 5, 8), N: 5, Series: 2, Dropped: b(2), StartClipped: true,
	}, m)
}

func TestHistogramSteps(t *testing.T) {
	bounds := b(0.5, inf)
	s := hseries(labels.EmptyLabels(), bounds, every(-5*sec, 30*sec, 9),
		r(0, 0), r(1, 1), r(1, 2), r(3, 4), r(0, 1), r(2, 3), r(2, 5), r(4, 8), r(5, 9))
	w := win(0, 4*min)
	whole, err := s.Increase(w)
	require.NoError(t, err)
	steps := snapshot.Steps(w, min, s.Increase)
	require.Len(t, steps, 4)
	var hs []histogram.Histogram
	for _, st := range steps {
		require.NoError(t, st.Err)
		hs = append(hs, st.Result.Histogram)
	}
	sum, err := histogram.Merge(hs...)
	require.NoError(t, err)
	assert.Equal(t, whole.Histogram, sum.Histogram)
	assert.Equal(t, 1, whole.Resets)
}
