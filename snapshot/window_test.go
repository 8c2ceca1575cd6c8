package snapshot_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// t0 is the origin of the fixtures' clocks.
var t0 = time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// win returns the window [t0+a, t0+b].
func win(a, b time.Duration) snapshot.Window { return snapshot.Window{Start: at(a), End: at(b)} }

// series builds a float series with samples at t0 + ts[i].
func series(name string, ls labels.Labels, ts []time.Duration, vs ...float64) *snapshot.Series {
	if len(ts) != len(vs) {
		panic("series: lengths differ")
	}
	s := &snapshot.Series{Name: name, Labels: ls, V: vs}
	for _, d := range ts {
		s.T = append(s.T, at(d).UnixMilli())
	}
	return s
}

// every returns n offsets step apart, starting at first.
func every(first, step time.Duration, n int) []time.Duration {
	ts := make([]time.Duration, n)
	for i := range ts {
		ts[i] = first + time.Duration(i)*step
	}
	return ts
}

// ramp returns n values a, a+d, a+2d, ...
func ramp(a, d float64, n int) []float64 {
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = a + float64(i)*d
	}
	return vs
}

// ds is shorthand for a list of offsets.
func ds(d ...time.Duration) []time.Duration { return d }

const (
	sec = time.Second
	min = time.Minute
)

func TestSeriesIncrease(t *testing.T) {
	tests := []struct {
		name string
		s    *snapshot.Series
		w    snapshot.Window
		// want is the expected result; Window, Series and N are checked too.
		want CounterWant
		err  error // sentinel the error must wrap; nil for success
	}{
		{
			name: "scrapes every 15s over 30m",
			s:    series("c_total", labels.EmptyLabels(), every(-5*min, 15*sec, 141), ramp(0, 2, 141)...),
			w:    win(0, 30*min),
			want: CounterWant{Value: 240, N: 121, From: at(0), To: at(30 * min)},
		},
		{
			name: "edges take the last sample at or before each edge",
			s:    series("c_total", labels.EmptyLabels(), ds(-10*sec, 50*sec, 110*sec, 170*sec), 10, 20, 40, 80),
			w:    win(0, 2*min),
			want: CounterWant{Value: 30, N: 3, From: at(-10 * sec), To: at(110 * sec)},
		},
		{
			name: "reset mid-window adds the post-reset value",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 5), 0, 10, 20, 5, 15),
			w:    win(0, 4*min),
			want: CounterWant{Value: 35, N: 5, Resets: 1, LowerBound: true, From: at(0), To: at(4 * min)},
		},
		{
			name: "two resets",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 6), 100, 110, 3, 8, 2, 4),
			w:    win(0, 5*min),
			want: CounterWant{Value: 10 + 3 + 5 + 2 + 2, N: 6, Resets: 2, LowerBound: true, From: at(0), To: at(5 * min)},
		},
		{
			name: "reset between the only two edges is a lower bound",
			s:    series("c_total", labels.EmptyLabels(), ds(0, 10*min), 100, 30),
			w:    win(0, 10*min),
			want: CounterWant{Value: 30, N: 2, Resets: 1, LowerBound: true, From: at(0), To: at(10 * min)},
		},
		{
			name: "start timestamp moved: reset although the value grew",
			s: func() *snapshot.Series {
				s := series("c_total", labels.EmptyLabels(), every(0, min, 3), 10, 20, 50)
				s.StartT = []int64{at(-time.Hour).UnixMilli(), at(-time.Hour).UnixMilli(), at(90 * sec).UnixMilli()}
				return s
			}(),
			w:    win(0, 2*min),
			want: CounterWant{Value: 10 + 50, N: 3, Resets: 1, LowerBound: true, From: at(0), To: at(2 * min)},
		},
		{
			name: "single sample with zero window is the lifetime total",
			s:    series("c_total", labels.EmptyLabels(), ds(0), 42),
			w:    snapshot.Window{},
			want: CounterWant{Value: 42, N: 1, Lifetime: true, From: at(0), To: at(0)},
		},
		{
			name: "lifetime starts at the _created timestamp when known",
			s: func() *snapshot.Series {
				s := series("c_total", labels.EmptyLabels(), ds(0), 42)
				s.StartT = []int64{at(-time.Hour).UnixMilli()}
				return s
			}(),
			w:    snapshot.Window{},
			want: CounterWant{Value: 42, N: 1, Lifetime: true, From: at(-time.Hour), To: at(0)},
		},
		{
			name: "zero window is first to last sample",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 4), 5, 6, 7, 9),
			w:    snapshot.Window{},
			want: CounterWant{Value: 4, N: 4, From: at(0), To: at(3 * min)},
		},
		{
			name: "zero start is the first sample, not clipped",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 4), 5, 6, 7, 9),
			w:    snapshot.Window{End: at(2*min + 30*sec)},
			want: CounterWant{Value: 2, N: 3, From: at(0), To: at(2 * min)},
		},
		{
			name: "zero end is the last sample",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 4), 5, 6, 7, 9),
			w:    snapshot.Window{Start: at(time.Minute)},
			want: CounterWant{Value: 3, N: 3, From: at(min), To: at(3 * min)},
		},
		{
			name: "series starting inside the window clips the start",
			s:    series("c_total", labels.EmptyLabels(), every(2*min, min, 9), ramp(7, 1, 9)...),
			w:    win(0, 10*min),
			want: CounterWant{Value: 8, N: 9, StartClipped: true, From: at(2 * min), To: at(10 * min)},
		},
		{
			name: "gap longer than lookback before start clips the start",
			s:    series("c_total", labels.EmptyLabels(), ds(-10*min, 3*min, 6*min), 1, 5, 8),
			w:    win(0, 6*min),
			want: CounterWant{Value: 3, N: 2, StartClipped: true, From: at(3 * min), To: at(6 * min)},
		},
		{
			name: "start edge exactly lookback before start is too old",
			s:    series("c_total", labels.EmptyLabels(), ds(-5*min, 1*min, 2*min), 1, 5, 8),
			w:    win(0, 2*min),
			want: CounterWant{Value: 3, N: 2, StartClipped: true, From: at(min), To: at(2 * min)},
		},
		{
			name: "start edge 1ms inside lookback is used",
			s:    series("c_total", labels.EmptyLabels(), ds(-5*min+time.Millisecond, 1*min, 2*min), 1, 5, 8),
			w:    win(0, 2*min),
			want: CounterWant{Value: 7, N: 3, From: at(-5*min + time.Millisecond), To: at(2 * min)},
		},
		{
			name: "end edge 1ms inside lookback is used",
			s:    series("c_total", labels.EmptyLabels(), ds(0, 5*min+time.Millisecond), 1, 5),
			w:    win(0, 10*min),
			want: CounterWant{Value: 4, N: 2, From: at(0), To: at(5*min + time.Millisecond)},
		},
		{
			name: "end edge exactly lookback before end is stale",
			s:    series("c_total", labels.EmptyLabels(), ds(0, 5*min), 1, 5),
			w:    win(0, 10*min),
			err:  snapshot.ErrNotEvaluable,
		},
		{
			name: "window after the data",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 3), 1, 2, 3),
			w:    win(time.Hour, 2*time.Hour),
			err:  snapshot.ErrNotEvaluable,
		},
		{
			name: "window before the data",
			s:    series("c_total", labels.EmptyLabels(), every(time.Hour, min, 3), 1, 2, 3),
			w:    win(0, 30*min),
			err:  snapshot.ErrNotEvaluable,
		},
		{
			name: "one sample covers both edges of a short window",
			s:    series("c_total", labels.EmptyLabels(), every(0, time.Minute, 3), 1, 2, 3),
			w:    win(10*sec, 40*sec),
			err:  snapshot.ErrNotEvaluable,
		},
		{
			name: "single sample with a window start",
			s:    series("c_total", labels.EmptyLabels(), ds(0), 42),
			w:    win(-time.Minute, time.Minute),
			err:  snapshot.ErrNotEvaluable,
		},
		{
			name: "no samples",
			s:    &snapshot.Series{Name: "c_total"},
			w:    snapshot.Window{},
			err:  snapshot.ErrNotEvaluable,
		},
		{
			name: "invalid counter values are skipped",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 5), 1, math.NaN(), -3, math.Inf(1), 5),
			w:    win(0, 4*min),
			want: CounterWant{Value: 4, N: 2, Skipped: 3, From: at(0), To: at(4 * min)},
		},
		{
			name: "invalid edge samples are passed over",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 4), 1, math.NaN(), 4, math.NaN()),
			w:    win(min, 3*min),
			want: CounterWant{Value: 3, N: 2, Skipped: 1, From: at(0), To: at(2 * min)},
		},
		{
			name: "only invalid samples",
			s:    series("c_total", labels.EmptyLabels(), every(0, min, 2), math.NaN(), math.NaN()),
			w:    snapshot.Window{},
			err:  snapshot.ErrNotEvaluable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v0 := append([]float64(nil), tt.s.V...)
			got, err := tt.s.Increase(tt.w)
			assert.True(t, sameBits(v0, tt.s.V), "input modified")
			if tt.err != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.err)
				assert.Contains(t, err.Error(), "c_total")
				return
			}
			require.NoError(t, err)
			tt.want.check(t, got)
			assert.Equal(t, tt.w, got.Window)
			assert.Equal(t, 1, got.Series)
			assert.GreaterOrEqual(t, got.Value, 0.0)
		})
	}
}

// CounterWant lists the fields of a CounterIncrease a test checks.
type CounterWant struct {
	Value                              float64
	N, Skipped, Resets                 int
	LowerBound, Lifetime, StartClipped bool
	From, To                           time.Time
}

func (w CounterWant) check(t *testing.T, got snapshot.CounterIncrease) {
	t.Helper()
	assert.InDelta(t, w.Value, got.Value, 1e-9, "Value")
	assert.Equal(t, w.N, got.N, "N")
	assert.Equal(t, w.Skipped, got.Skipped, "Skipped")
	assert.Equal(t, w.Resets, got.Resets, "Resets")
	assert.Equal(t, w.LowerBound, got.LowerBound, "LowerBound")
	assert.Equal(t, w.Lifetime, got.Lifetime, "Lifetime")
	assert.Equal(t, w.StartClipped, got.StartClipped, "StartClipped")
	assert.True(t, w.From.Equal(got.From), "From: want %s, got %s", w.From, got.From)
	assert.True(t, w.To.Equal(got.To), "To: want %s, got %s", w.To, got.To)
}

func TestWindowEndBeforeStart(t *testing.T) {
	s := series("c_total", labels.EmptyLabels(), every(0, min, 3), 1, 2, 3)
	_, err := s.Increase(win(2*min, 0))
	require.Error(t, err)
	assert.NotErrorIs(t, err, snapshot.ErrNotEvaluable)
	assert.Contains(t, err.Error(), "ends before it starts")
}

func TestErrorNamesSeriesAndTimes(t *testing.T) {
	s := series("vllm:request_success_total", labels.FromStrings("engine", "0"), ds(0, min), 1, 2)
	_, err := s.Increase(win(0, 10*min))
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	assert.Equal(t, `vllm:request_success_total{engine="0"}: not evaluable: no sample in the 5m0s before the end of window `+
		`2026-09-22T10:00:00Z/2026-09-22T10:10:00Z (last sample at 2026-09-22T10:01:00Z)`, err.Error())
}

// TestMisalignedPods checks that pods scraped seconds apart line up: each
// takes its own last sample before each edge.
func TestMisalignedPods(t *testing.T) {
	// Both pods count 1 per second; b is scraped 7s after a.
	a := series("c_total", labels.FromStrings("pod", "a"), every(-time.Minute, 15*sec, 30), ramp(0, 15, 30)...)
	b := series("c_total", labels.FromStrings("pod", "b"), every(-time.Minute+7*sec, 15*sec, 30), ramp(7, 15, 30)...)
	w := win(0, 5*min)
	ia, err := a.Increase(w)
	require.NoError(t, err)
	ib, err := b.Increase(w)
	require.NoError(t, err)
	assert.Equal(t, at(0), ia.From.UTC())
	assert.Equal(t, at(5*min), ia.To.UTC())
	assert.Equal(t, at(-8*sec), ib.From.UTC())
	assert.Equal(t, at(5*min-8*sec), ib.To.UTC())
	assert.Equal(t, 300.0, ia.Value)
	assert.Equal(t, 300.0, ib.Value)
	assert.Equal(t, ia.N, ib.N)
	assert.InDelta(t, 1.0, ia.Rate(), 1e-12)
	assert.InDelta(t, 1.0, ib.Rate(), 1e-12)

	sum := snapshot.SumIncreases(ia, ib)
	assert.Equal(t, 600.0, sum.Value)
	assert.Equal(t, 2, sum.Series)
	assert.Equal(t, 2*ia.N, sum.N)
	assert.Equal(t, w, sum.Window)
	assert.Equal(t, at(-8*sec), sum.From.UTC())
	assert.Equal(t, at(5*min), sum.To.UTC())
}

func TestCounterIncreaseString(t *testing.T) {
	s := series("c_total", labels.EmptyLabels(), every(0, 15*sec, 121), append(ramp(0, 20, 60), ramp(0, 21, 61)...)...)
	inc, err := s.Increase(win(0, 30*min))
	require.NoError(t, err)
	assert.Equal(t, "increase 2440 over 2026-09-22T10:00:00Z/2026-09-22T10:30:00Z "+
		"(121 samples from 2026-09-22T10:00:00Z to 2026-09-22T10:30:00Z, 1 reset, lower bound)", inc.String())

	life, err := series("c_total", labels.EmptyLabels(), ds(1500*time.Millisecond), 7).Increase(snapshot.Window{})
	require.NoError(t, err)
	assert.Equal(t, "increase 7 over whole (1 sample at 2026-09-22T10:00:01.5Z, lifetime total since process start)", life.String())
	assert.True(t, math.IsNaN(life.Rate()))
}

func TestFamilyIncrease(t *testing.T) {
	f := &snapshot.Family{
		Name: "vllm:request_success_total",
		Series: []*snapshot.Series{
			series("vllm:request_success_total", labels.FromStrings("engine", "0", "finished_reason", "stop"), every(0, min, 3), 0, 10, 20),
			series("vllm:request_success_total", labels.FromStrings("engine", "0", "finished_reason", "length"), every(0, min, 3), 0, 1, 2),
			series("vllm:request_success_total", labels.FromStrings("engine", "1", "finished_reason", "stop"), every(0, min, 3), 5, 8, 1),
			// Appears after the window: not evaluable, excluded.
			series("vllm:request_success_total", labels.FromStrings("engine", "2", "finished_reason", "stop"), ds(time.Hour), 3),
		},
	}
	w := win(0, 2*min)

	all, err := f.Increase(w, nil)
	require.NoError(t, err)
	assert.Equal(t, 20.0+2+(3+1), all.Value)
	assert.Equal(t, 3, all.Series)
	assert.Equal(t, 1, all.Excluded)
	assert.Equal(t, 1, all.Resets)
	assert.True(t, all.LowerBound)
	assert.Contains(t, all.String(), "1 series not evaluable")

	stop, err := f.Increase(w, map[string]string{"finished_reason": "stop", "engine": "0"})
	require.NoError(t, err)
	assert.Equal(t, 20.0, stop.Value)
	assert.Equal(t, 1, stop.Series)

	_, err = f.Increase(w, map[string]string{"finished_reason": "abort"})
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	assert.Contains(t, err.Error(), `no series matches {finished_reason="abort"}`)

	_, err = f.Increase(w, map[string]string{"engine": "2"})
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)

	// An empty value matches an absent label, as in PromQL.
	assert.Len(t, f.SeriesMatching(map[string]string{"model_name": ""}), 4)
	assert.Len(t, f.SeriesMatching(map[string]string{"__name__": "vllm:request_success_total", "engine": "1"}), 1)
	assert.Empty(t, f.SeriesMatching(map[string]string{"__name__": "other"}))
}

// The Target methods resolve the zero Window to the pod's scrapes and
// name the pod in errors.
func TestTargetWindows(t *testing.T) {
	pod := &snapshot.Target{
		Name:    "vllm-1",
		Scrapes: []snapshot.Scrape{{Time: at(0)}, {Time: at(min)}, {Time: at(2 * min)}},
		Families: map[string]*snapshot.Family{
			"c_total": {Name: "c_total", Series: []*snapshot.Series{
				// Appears at the second scrape.
				series("c_total", labels.EmptyLabels(), ds(min, 2*min), 5, 8),
			}},
			"g": {Name: "g", Series: []*snapshot.Series{
				series("g", labels.EmptyLabels(), ds(0, min, 2*min), 1, 2, 3),
			}},
		},
	}
	assert.Equal(t, win(0, 2*min), pod.ScrapeWindow())

	inc, err := pod.Increase("c_total", snapshot.Window{}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3.0, inc.Value)
	assert.True(t, inc.StartClipped, "the series began after the pod's first scrape")
	assert.Equal(t, win(0, 2*min), inc.Window)

	g, err := pod.Gauge("g", snapshot.Window{}, nil, snapshot.AggregateMean)
	require.NoError(t, err)
	assert.Equal(t, 2.0, g.Mean)
	assert.InDelta(t, 1.0/60, g.Slope, 1e-12)

	_, err = pod.Increase("missing_total", snapshot.Window{}, nil)
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	assert.Equal(t, "vllm-1: not evaluable: no family missing_total", err.Error())
	_, err = pod.HistogramIncrease("missing", snapshot.Window{}, nil)
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	_, err = pod.Gauge("g", win(time.Hour, 2*time.Hour), nil, snapshot.AggregateSum)
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	assert.Contains(t, err.Error(), "vllm-1: g: not evaluable")

	// A pod scraped once gives lifetime totals.
	once := &snapshot.Target{
		Name:    "vllm-2",
		Scrapes: []snapshot.Scrape{{Time: at(0)}},
		Families: map[string]*snapshot.Family{"c_total": {Name: "c_total", Series: []*snapshot.Series{
			series("c_total", labels.EmptyLabels(), ds(0), 42),
		}}},
	}
	life, err := once.Increase("c_total", snapshot.Window{}, nil)
	require.NoError(t, err)
	assert.True(t, life.Lifetime)
	assert.Equal(t, 42.0, life.Value)
}

func TestGridAndSteps(t *testing.T) {
	ws := snapshot.Grid(win(0, 10*min), 3*min)
	require.Len(t, ws, 4)
	assert.Equal(t, win(0, 3*min), ws[0])
	assert.Equal(t, win(9*min, 10*min), ws[3])
	assert.Nil(t, snapshot.Grid(snapshot.Window{}, min))
	assert.Nil(t, snapshot.Grid(win(0, min), 0))
	assert.Nil(t, snapshot.Grid(win(min, 0), time.Second))

	// Counter scraped every 15s, 7s off the grid, with a reset at 4m.
	vs := append(ramp(100, 3, 16), ramp(0, 3, 30)...)
	s := series("c_total", labels.EmptyLabels(), every(-53*sec, 15*sec, 46), vs...)
	w := win(0, 10*min)
	whole, err := s.Increase(w)
	require.NoError(t, err)
	steps := snapshot.Steps(w, min, s.Increase)
	require.Len(t, steps, 10)
	total := 0.0
	resets := 0
	for i, st := range steps {
		require.NoError(t, st.Err, "step %d", i)
		assert.Equal(t, at(time.Duration(i+1)*min), st.Window.End)
		total += st.Result.Value
		resets += st.Result.Resets
	}
	assert.Equal(t, whole.Value, total, "steps add up to the whole window")
	assert.Equal(t, whole.Resets, resets)

	// Steps past the data are not evaluable, not zero.
	late := snapshot.Steps(win(10*min, 20*min), 5*min, s.Increase)
	require.Len(t, late, 2)
	assert.NoError(t, late[0].Err)
	assert.ErrorIs(t, late[1].Err, snapshot.ErrNotEvaluable)
}

func TestGaugeStats(t *testing.T) {
	// v = 1 + 2*seconds since t0, sampled every 10s from -20s to 60s.
	lin := series("g", labels.EmptyLabels(), every(-20*sec, 10*sec, 9), ramp(-39, 20, 9)...)
	tests := []struct {
		name string
		s    *snapshot.Series
		w    snapshot.Window
		want snapshot.GaugeStats
		err  error
	}{
		{
			name: "linear ramp: start edge at or before start included",
			s:    lin,
			w:    win(5*sec, time.Minute),
			want: snapshot.GaugeStats{From: at(0), To: at(min), N: 7, Series: 1, Mean: 61, Min: 1, Max: 121, First: 1, Last: 121, Slope: 2},
		},
		{
			name: "NaN samples skipped and counted",
			s:    series("g", labels.EmptyLabels(), every(0, 10*sec, 5), 1, math.NaN(), 3, math.NaN(), 5),
			w:    win(0, 40*sec),
			want: snapshot.GaugeStats{From: at(0), To: at(40 * sec), N: 3, Skipped: 2, Series: 1, Mean: 3, Min: 1, Max: 5, First: 1, Last: 5, Slope: 0.1},
		},
		{
			name: "NaN at the end edge is passed over",
			s:    series("g", labels.EmptyLabels(), every(0, 10*sec, 3), 4, 2, math.NaN()),
			w:    win(0, 20*sec),
			want: snapshot.GaugeStats{From: at(0), To: at(10 * sec), N: 2, Series: 1, Mean: 3, Min: 2, Max: 4, First: 4, Last: 2, Slope: -0.2},
		},
		{
			name: "one sample: slope NaN",
			s:    series("g", labels.EmptyLabels(), ds(0), 7),
			w:    win(10*sec, 20*sec),
			want: snapshot.GaugeStats{From: at(0), To: at(0), N: 1, Series: 1, Mean: 7, Min: 7, Max: 7, First: 7, Last: 7, Slope: math.NaN()},
		},
		{
			name: "start clipped",
			s:    series("g", labels.EmptyLabels(), every(time.Minute, 10*sec, 3), 1, 2, 3),
			w:    win(0, 2*min),
			want: snapshot.GaugeStats{From: at(min), To: at(min + 20*sec), N: 3, Series: 1, Mean: 2, Min: 1, Max: 3, First: 1, Last: 3, Slope: 0.1, StartClipped: true},
		},
		{
			name: "stale end",
			s:    series("g", labels.EmptyLabels(), every(0, 10*sec, 3), 1, 2, 3),
			w:    win(0, 10*min),
			err:  snapshot.ErrNotEvaluable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.s.Gauge(tt.w)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			tt.want.Window = tt.w
			assertGauge(t, tt.want, got)
		})
	}
}

func assertGauge(t *testing.T, want, got snapshot.GaugeStats) {
	t.Helper()
	assertSpan(t, span{want.Window, want.From, want.To, want.N, want.Skipped, want.Series},
		span{got.Window, got.From, got.To, got.N, got.Skipped, got.Series})
	assert.Equal(t, want.StartClipped, got.StartClipped, "StartClipped")
	for _, f := range []struct {
		name      string
		want, got float64
	}{
		{"Mean", want.Mean, got.Mean}, {"Min", want.Min, got.Min}, {"Max", want.Max, got.Max},
		{"First", want.First, got.First}, {"Last", want.Last, got.Last}, {"Slope", want.Slope, got.Slope},
	} {
		if math.IsNaN(f.want) {
			assert.True(t, math.IsNaN(f.got), "%s: want NaN, got %v", f.name, f.got)
			continue
		}
		assert.InDelta(t, f.want, f.got, 1e-9, f.name)
	}
}

// span is what every window result has: the window asked for, the times
// of the edge samples used, and the sample, skipped and series counts.
type span struct {
	Window             snapshot.Window
	From, To           time.Time
	N, Skipped, Series int
}

// assertSpan checks a result's span field by field (times with Equal).
func assertSpan(t *testing.T, want, got span) {
	t.Helper()
	assert.Equal(t, want.Window, got.Window, "Window")
	assert.True(t, want.From.Equal(got.From), "From: want %s, got %s", want.From, got.From)
	assert.True(t, want.To.Equal(got.To), "To: want %s, got %s", want.To, got.To)
	assert.Equal(t, want.N, got.N, "N")
	assert.Equal(t, want.Skipped, got.Skipped, "Skipped")
	assert.Equal(t, want.Series, got.Series, "Series")
}

func TestFamilyGaugeAcrossEngines(t *testing.T) {
	e0 := labels.FromStrings("engine", "0", "model_name", "m")
	e1 := labels.FromStrings("engine", "1", "model_name", "m")
	f := &snapshot.Family{
		Name: "vllm:num_requests_waiting",
		Series: []*snapshot.Series{
			series("vllm:num_requests_waiting", e0, every(0, 15*sec, 5), 1, 2, math.NaN(), 4, 5),
			// Engine 1 is scraped 1s later (another exporter file) and stops
			// early: at 60s its last sample (15s) is still within lookback.
			series("vllm:num_requests_waiting", e1, every(sec, 15*sec, 2), 10, 20),
		},
	}
	w := win(0, min)
	sum, err := f.Gauge(w, nil, snapshot.AggregateSum)
	require.NoError(t, err)
	// Instants 0, 1s, 15s, 16s, 45s, 60s (30s is NaN for e0, no e1 sample).
	// Sums: 1, 1+10, 2+10, 2+20, 4+20, 5+20.
	assertGauge(t, snapshot.GaugeStats{
		Window: w, From: at(0), To: at(min), N: 6, Skipped: 1, Series: 2,
		Mean: (1 + 11 + 12 + 22 + 24 + 25) / 6.0, Min: 1, Max: 25, First: 1, Last: 25,
		Slope: slope([]float64{0, 1, 15, 16, 45, 60}, []float64{1, 11, 12, 22, 24, 25}),
	}, sum)
	assert.Contains(t, sum.String(), "6 samples of 2 series")

	mean, err := f.Gauge(w, nil, snapshot.AggregateMean)
	require.NoError(t, err)
	assert.InDelta(t, (1+5.5+6+11+12+12.5)/6.0, mean.Mean, 1e-9)
	assert.Equal(t, 12.5, mean.Last)

	agg := f.Aggregate(nil, snapshot.AggregateSum)
	require.NotNil(t, agg)
	assert.Equal(t, "vllm:num_requests_waiting", agg.Name)
	assert.Equal(t, labels.FromStrings("model_name", "m"), agg.Labels)

	one, err := f.Gauge(w, map[string]string{"engine": "0"}, snapshot.AggregateSum)
	require.NoError(t, err)
	assert.Equal(t, 1, one.Series)
	assert.Equal(t, 1, one.Skipped)
	assert.Equal(t, 5.0, one.Last)

	_, err = f.Gauge(w, map[string]string{"engine": "7"}, snapshot.AggregateSum)
	assert.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	assert.Nil(t, f.Aggregate(nil, snapshot.Aggregation(9)))

	// One series is its own aggregate: its NaN samples left out and -0
	// summed to 0, as over several; without them, its samples are shared.
	e0agg := f.Aggregate(map[string]string{"engine": "0"}, snapshot.AggregateSum)
	assert.Equal(t, []int64{at(0).UnixMilli(), at(15 * sec).UnixMilli(), at(45 * sec).UnixMilli(), at(min).UnixMilli()}, e0agg.T)
	assert.Equal(t, []float64{1, 2, 4, 5}, e0agg.V)
	negZero := &snapshot.Family{Name: "g", Series: []*snapshot.Series{series("g", e0, every(0, 15*sec, 2), math.Copysign(0, -1), 3)}}
	for _, agg := range []snapshot.Aggregation{snapshot.AggregateSum, snapshot.AggregateMean} {
		a := negZero.Aggregate(nil, agg)
		assert.False(t, math.Signbit(a.V[0]), "%s: -0 sums to 0", agg)
	}
	plain := &snapshot.Family{Name: "g", Series: []*snapshot.Series{series("g", e0, every(0, 15*sec, 3), 1, 2, 3)}}
	a := plain.Aggregate(nil, snapshot.AggregateMean)
	assert.Equal(t, []float64{1, 2, 3}, a.V)
	assert.Same(t, &plain.Series[0].V[0], &a.V[0], "a single series without NaN is not copied")
	assert.Nil(t, a.StartT)
}

// slope is the least-squares slope, computed directly.
func slope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var num, den float64
	for i := range x {
		num += (x[i] - mx) * (y[i] - my)
		den += (x[i] - mx) * (x[i] - mx)
	}
	return num / den
}

func TestGaugeStatsString(t *testing.T) {
	s := series("g", labels.EmptyLabels(), every(0, 10*sec, 4), 1, math.NaN(), 3, 4)
	g, err := s.Gauge(win(0, 30*sec))
	require.NoError(t, err)
	assert.Equal(t, "gauge mean 2.66667 min 1 max 4 first 1 last 4 slope 0.1/s over 2026-09-22T10:00:00Z/2026-09-22T10:00:30Z "+
		"(3 samples from 2026-09-22T10:00:00Z to 2026-09-22T10:00:30Z, 1 NaN skipped)", g.String())
}

// sameBits reports whether a and b hold the same float64 bit patterns, so
// that NaN equals NaN.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
