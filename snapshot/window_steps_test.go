package snapshot_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

// The grid helpers must return exactly what the per-window helpers return
// for each window. These tests draw series, families and grids from a
// chooser (a PRNG, or a fuzzer's bytes) and compare the two field by
// field, floats bit by bit (NaN equal to NaN, which testify's Equal does
// not allow), errors by their whole chain.

// chooser draws the choices of the generators.
type chooser interface {
	// intn returns a choice in [0, n).
	intn(n int) int
}

// randChooser draws from a PRNG.
type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// byteChooser draws from a fuzzer's bytes, then zeros.
type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) intn(n int) int {
	if c.i >= len(c.b) {
		return 0
	}
	v := int(c.b[c.i])
	c.i++
	return v % n
}

// genTimes returns n ascending sample times (ms) around t0: mostly 15 s
// apart, with repeated, 1 ms apart, irregular and Lookback-long gaps.
func genTimes(c chooser, n int) []int64 {
	ts := make([]int64, 0, n)
	t := at(-10*min).UnixMilli() + int64(c.intn(60))*1000
	for range n {
		switch c.intn(64) {
		case 0:
			// A repeated timestamp (not in the model, but tolerated).
		case 1:
			t++
		case 2:
			t += snapshot.Lookback.Milliseconds()
		case 3:
			t += snapshot.Lookback.Milliseconds() + int64(c.intn(3)) - 1
		case 4:
			t += int64(c.intn(20)+1) * 60_000
		case 5, 6, 7, 8, 9, 10, 11, 12:
			t += int64(c.intn(60)+1) * 1000
		default:
			t += 15_000
		}
		ts = append(ts, t)
	}
	return ts
}

// genSeries returns a counter-like series of n samples: steps up with
// fractions, resets, NaN, ±Inf and negative values; with starts, an
// OpenMetrics start time that moves forward now and then (and is sometimes
// unknown or shorter than T).
func genSeries(c chooser, name string, ls labels.Labels, n int, starts bool) *snapshot.Series {
	s := &snapshot.Series{Name: name, Labels: ls, T: genTimes(c, n)}
	v, st := float64(c.intn(100)), int64(0)
	if n > 0 {
		st = s.T[0] - int64(c.intn(100)+1)*1000
	}
	for i := range n {
		x := v
		switch c.intn(24) {
		case 0:
			x = math.NaN()
		case 1:
			x = math.Inf(1)
		case 2:
			x = math.Inf(-1)
		case 3:
			x = -float64(c.intn(3) + 1)
		case 4:
			v = float64(c.intn(5))
			x = v
		case 5:
			v += 1e17
			x = v
		case 6, 7:
			// Unchanged.
		default:
			v += float64(c.intn(10)) + float64(c.intn(10))/10
			x = v
		}
		s.V = append(s.V, x)
		if starts {
			switch c.intn(12) {
			case 0:
				st = s.T[i] - 1
			case 1:
				s.StartT = append(s.StartT, 0)
				continue
			}
			s.StartT = append(s.StartT, st)
		}
	}
	if starts && n > 0 && c.intn(4) == 0 {
		s.StartT = s.StartT[:c.intn(n)]
	}
	return s
}

// stepsLayouts are the bucket layouts a generated histogram moves between:
// 0 and 1 share 0.1, 1 and 10; 2 shares no finite bound with 0 and 1; 3
// is 0 again (another series with the same bounds); 4 lacks +Inf.
var stepsLayouts = [][]float64{
	{0.1, 1, 10, math.Inf(1)},
	{0.1, 1, 5, 10, math.Inf(1)},
	{0.5, 2, math.Inf(1)},
	{0.1, 1, 10, math.Inf(1)},
	{0.1, 1},
}

// genHistograms returns the layouts of one labelled histogram over n
// samples: cumulative counts that grow, reset, lose their _count or _sum,
// or are invalid (NaN, negative, non-monotonic, a count that is not the
// +Inf bucket's) or nearly so (off by an ulp, which Validate allows), under
// a layout that changes now and then.
func genHistograms(c chooser, ls labels.Labels, n int) []*snapshot.HistogramSeries {
	ts := genTimes(c, n)
	var segs []*snapshot.HistogramSeries
	var cur *snapshot.HistogramSeries
	var obs []float64 // per-bucket (not cumulative) observations
	for i, t := range ts {
		if cur == nil || c.intn(20) == 0 {
			bounds := stepsLayouts[0]
			if cur != nil || c.intn(4) == 0 {
				bounds = stepsLayouts[c.intn(len(stepsLayouts))]
			}
			cur = &snapshot.HistogramSeries{Labels: ls, Bounds: bounds}
			segs = append(segs, cur)
			obs = make([]float64, len(bounds))
		}
		switch c.intn(12) {
		case 0:
			clear(obs)
		case 1, 2:
		default:
			for k := range obs {
				obs[k] += float64(c.intn(4)) + float64(c.intn(4))/4
			}
		}
		row := make([]float64, len(obs))
		cum := 0.0
		for k, o := range obs {
			cum += o
			row[k] = cum
		}
		count, sum := cum, 0.1*cum+float64(i%7)
		switch c.intn(30) {
		case 0:
			row[c.intn(len(row))] = math.NaN()
		case 1:
			row[0] = -1
		case 2:
			row[0] = row[len(row)-1] + 5
		case 3:
			count++
		case 4:
			count = math.NaN()
		case 5:
			sum = math.NaN()
		case 6:
			// Off by less than histogram.SmallDeltaTolerance: valid.
			count = math.Nextafter(count, math.Inf(1))
		case 7:
			if len(row) > 1 && row[0] > 0 {
				row[1] = math.Nextafter(row[0], 0)
			}
		}
		cur.T = append(cur.T, t)
		cur.Counts = append(cur.Counts, row...)
		cur.Count = append(cur.Count, count)
		cur.Sum = append(cur.Sum, sum)
	}
	if len(segs) == 0 {
		segs = append(segs, &snapshot.HistogramSeries{Labels: ls, Bounds: stepsLayouts[0]})
	}
	return segs
}

// genGrid returns windows sorted by Start around the samples' times: a
// Grid, random windows (zero Start or End, End before Start, before the
// first sample or after the last, overlapping), or both.
func genGrid(c chooser) []snapshot.Window {
	steps := []time.Duration{time.Second, 15 * sec, min, min, 2 * min, 7 * min, time.Hour}
	grid := func() []snapshot.Window {
		start := at(time.Duration(c.intn(40)-20) * min)
		span := time.Duration(c.intn(120)+1) * min
		g := snapshot.Grid(snapshot.Window{Start: start, End: start.Add(span)}, steps[c.intn(len(steps))])
		if len(g) > 200 {
			g = g[:200]
		}
		return g
	}
	random := func(n int) []snapshot.Window {
		ws := make([]snapshot.Window, n)
		for k := range ws {
			w := &ws[k]
			w.Start = at(time.Duration(c.intn(120)-30)*min + time.Duration(c.intn(60))*sec)
			w.End = w.Start.Add(time.Duration(c.intn(20)-3)*min + time.Duration(c.intn(4))*15*sec)
			switch c.intn(8) {
			case 0:
				w.Start = time.Time{}
			case 1:
				w.End = time.Time{}
			case 2:
				*w = snapshot.Window{}
			case 3:
				w.End = w.Start
			}
		}
		return ws
	}
	var ws []snapshot.Window
	switch c.intn(4) {
	case 0, 1:
		ws = grid()
	case 2:
		ws = random(c.intn(40) + 1)
	default:
		ws = append(grid(), random(c.intn(10)+1)...)
	}
	slices.SortStableFunc(ws, func(a, b snapshot.Window) int { return a.Start.Compare(b.Start) })
	return ws
}

// genMatch returns a selector for series labelled engine=0..: all, one
// engine, or none.
func genMatch(c chooser) map[string]string {
	switch c.intn(5) {
	case 0:
		return map[string]string{"engine": "0"}
	case 1:
		return map[string]string{"engine": "9"}
	case 2:
		return map[string]string{}
	}
	return nil
}

// genFamily returns a family of up to three engines' counters (or gauges)
// and histograms, the latter in up to three layouts each.
func genFamily(c chooser, n int) *snapshot.Family {
	f := &snapshot.Family{Name: "fam"}
	engines := c.intn(3) + 1
	for e := range engines {
		ls := labels.FromStrings("engine", strconv.Itoa(e))
		f.Series = append(f.Series, genSeries(c, "fam_total", ls, c.intn(n+1), c.intn(3) == 0))
		f.Histograms = append(f.Histograms, genHistograms(c, ls, c.intn(n+1))...)
	}
	if c.intn(3) == 0 {
		// The family's order is not always that of the labels.
		slices.Reverse(f.Histograms)
	}
	return f
}

// identical reports whether a and b are equal as reflect.DeepEqual has it,
// except that floats compare by their bits (so NaN equals NaN and 0 does
// not equal -0) and unexported fields are compared too.
func identical(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() || a.IsValid() && a.Type() != b.Type() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		return math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y)
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.String:
		return a.String() == b.String()
	case reflect.Pointer:
		if a.Pointer() == b.Pointer() {
			return true
		}
		return !a.IsNil() && !b.IsNil() && identical(a.Elem(), b.Elem())
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return identical(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !identical(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !identical(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	panic("identical: unexpected kind " + a.Kind().String())
}

// requireSteps asserts that steps(grid) holds, for each window of grid,
// exactly what eval returns for it.
func requireSteps[R any](t *testing.T, grid []snapshot.Window, eval func(snapshot.Window) (R, error), steps func([]snapshot.Window) []snapshot.Step[R]) {
	t.Helper()
	got := steps(grid)
	require.Len(t, got, len(grid))
	for k, w := range grid {
		r, err := eval(w)
		want := snapshot.Step[R]{Window: w, Result: r, Err: err}
		if !identical(reflect.ValueOf(want), reflect.ValueOf(got[k])) {
			assert.Equal(t, want, got[k], "window %d of %d: %s", k, len(grid), w)
			require.Failf(t, "not identical", "window %d of %d: %s\nwant %+v\ngot  %+v", k, len(grid), w, want, got[k])
		}
	}
}

// checkSeriesSteps compares the grid helpers of a series with the
// per-window ones.
func checkSeriesSteps(t *testing.T, s *snapshot.Series, grid []snapshot.Window) {
	t.Helper()
	requireSteps(t, grid, s.Increase, s.IncreaseSteps)
	requireSteps(t, grid, s.Gauge, s.GaugeSteps)
}

// checkFamilySteps compares the grid helpers of a family with the
// per-window ones, for every aggregation.
func checkFamilySteps(t *testing.T, f *snapshot.Family, grid []snapshot.Window, match map[string]string) {
	t.Helper()
	requireSteps(t, grid, func(w snapshot.Window) (snapshot.CounterIncrease, error) { return f.Increase(w, match) },
		func(g []snapshot.Window) []snapshot.Step[snapshot.CounterIncrease] { return f.IncreaseSteps(g, match) })
	for _, agg := range []snapshot.Aggregation{snapshot.AggregateSum, snapshot.AggregateMean, snapshot.AggregateNone} {
		requireSteps(t, grid, func(w snapshot.Window) (snapshot.GaugeStats, error) { return f.Gauge(w, match, agg) },
			func(g []snapshot.Window) []snapshot.Step[snapshot.GaugeStats] { return f.GaugeSteps(g, match, agg) })
	}
	checkHistogramSteps(t, f, grid, match)
}

// checkHistogramSteps compares Family.HistogramIncreaseSteps and
// HistogramSeries.IncreaseSteps with the per-window helpers, and checks
// that the steps' histograms are their own: scribbling over them changes
// neither the other steps nor the family.
func checkHistogramSteps(t *testing.T, f *snapshot.Family, grid []snapshot.Window, match map[string]string) {
	t.Helper()
	eval := func(w snapshot.Window) (snapshot.HistogramIncrease, error) { return f.HistogramIncrease(w, match) }
	var got []snapshot.Step[snapshot.HistogramIncrease]
	steps := func(g []snapshot.Window) []snapshot.Step[snapshot.HistogramIncrease] {
		got = f.HistogramIncreaseSteps(g, match)
		return got
	}
	requireSteps(t, grid, eval, steps)
	// HistogramIncreaseEach hands over the same increases, each copied
	// before the next is made (its memory is reused).
	requireSteps(t, grid, eval, func(g []snapshot.Window) []snapshot.Step[snapshot.HistogramIncrease] {
		out := make([]snapshot.Step[snapshot.HistogramIncrease], len(g))
		f.HistogramIncreaseEach(g, match, func(k int, inc snapshot.HistogramIncrease, err error) {
			if err == nil {
				inc.Histogram = inc.Histogram.Clone()
			}
			out[k] = snapshot.Step[snapshot.HistogramIncrease]{Window: g[k], Result: inc, Err: err}
		})
		return out
	})
	for _, h := range f.Histograms {
		requireSteps(t, grid, h.Increase, h.IncreaseSteps)
	}
	seen := map[*float64]int{}
	var kept []snapshot.Window
	for k, st := range got {
		kept = append(kept, st.Window)
		if st.Err != nil || len(st.Result.Histogram.Counts) == 0 {
			continue
		}
		p := &st.Result.Histogram.Counts[0]
		if j, ok := seen[p]; ok {
			require.Failf(t, "shared counts", "steps %d and %d share their counts", j, k)
		}
		seen[p] = k
		clear(st.Result.Histogram.Counts)
		clear(st.Result.Histogram.Bounds)
	}
	requireSteps(t, kept, eval, steps)
}

func TestIncreaseStepsIdentical(t *testing.T) {
	tests := []struct {
		name    string
		seed    uint64
		samples int
		rounds  int
	}{
		{name: "empty", seed: 1, samples: 0, rounds: 20},
		{name: "one sample", seed: 2, samples: 1, rounds: 20},
		{name: "few samples", seed: 3, samples: 5, rounds: 80},
		{name: "an hour", seed: 4, samples: 240, rounds: 40},
		{name: "six hours", seed: 5, samples: 1440, rounds: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := randChooser{rand.New(rand.NewPCG(tt.seed, 11))}
			for round := range tt.rounds {
				t.Run(fmt.Sprint(round), func(t *testing.T) {
					grid := genGrid(c)
					checkSeriesSteps(t, genSeries(c, "c_total", labels.EmptyLabels(), tt.samples, round%2 == 1), grid)
					checkFamilySteps(t, genFamily(c, tt.samples), grid, genMatch(c))
				})
			}
		})
	}
}

func TestIncreaseStepsCases(t *testing.T) {
	steady := series("c_total", labels.EmptyLabels(), every(0, 15*sec, 241), ramp(0, 1.5, 241)...)
	gappy := series("c_total", labels.FromStrings("pod", "a"),
		ds(0, 15*sec, 30*sec, 10*min, 10*min+15*sec, 20*min, 20*min+1*time.Millisecond),
		1, math.NaN(), 3, -1, 2, math.Inf(1), 5)
	whole := snapshot.Window{}
	tests := []struct {
		name string
		s    *snapshot.Series
		grid []snapshot.Window
	}{
		{name: "grid per minute", s: steady, grid: snapshot.Grid(win(0, time.Hour), min)},
		{name: "grid finer than scrapes", s: steady, grid: snapshot.Grid(win(-sec, 5*min), 7*sec)},
		{name: "grid around the samples", s: steady, grid: snapshot.Grid(win(-20*min, 90*min), 13*min)},
		{name: "zero and inverted windows", s: steady, grid: []snapshot.Window{whole, whole,
			{End: at(10 * min)}, win(5*min, 4*min), win(5*min, 5*min), {Start: at(30 * min)}, win(61*min, 70*min)}},
		{name: "unsorted", s: steady, grid: []snapshot.Window{win(50*min, 55*min), win(0, min), win(30*min, 31*min), win(-min, 0)}},
		{name: "gaps and invalid samples", s: gappy, grid: snapshot.Grid(win(-min, 25*min), 15*sec)},
		{name: "gaps per minute", s: gappy, grid: snapshot.Grid(win(-min, 25*min), min)},
		{name: "no samples", s: series("c_total", labels.EmptyLabels(), nil), grid: snapshot.Grid(win(0, 3*min), min)},
		{name: "no valid sample", s: series("c_total", labels.EmptyLabels(), ds(0, min), math.NaN(), -1),
			grid: append([]snapshot.Window{whole}, snapshot.Grid(win(0, 3*min), min)...)},
		{name: "empty grid", s: steady, grid: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSeriesSteps(t, tt.s, tt.grid)
			f := &snapshot.Family{Name: "c", Series: []*snapshot.Series{tt.s, gappy}}
			checkFamilySteps(t, f, tt.grid, nil)
		})
	}
}

func TestHistogramIncreaseStepsCases(t *testing.T) {
	bounds, wide := b(0.1, 1, inf), b(0.1, 0.5, 1, inf)
	e0, e1 := labels.FromStrings("engine", "0"), labels.FromStrings("engine", "1")
	steady := hseries(e0, bounds, every(0, 15*sec, 41), rampRows(41, 3)...)
	// Engine 1 restarts with wider buckets after 5 minutes.
	before := hseries(e1, bounds, every(0, 15*sec, 20), rampRows(20, 3)...)
	after := hseries(e1, wide, every(5*min, 15*sec, 21), rampRows(21, 4)...)
	// Invalid samples: a NaN bucket, a count below the buckets.
	broken := hseries(e0, bounds, every(0, 30*sec, 6), r(0, 1, 2), r(1, math.NaN(), 3), r(2, 3, 4), r(2, 1, 5), r(3, 4, 6), r(0, 0, 1))
	tests := []struct {
		name  string
		hs    []*snapshot.HistogramSeries
		grid  []snapshot.Window
		match map[string]string
	}{
		{name: "one series per minute", hs: ds2(steady), grid: snapshot.Grid(win(0, 10*min), min)},
		{name: "two engines", hs: ds2(steady, before, after), grid: snapshot.Grid(win(-min, 11*min), min)},
		{name: "layout change, one engine", hs: ds2(steady, before, after), grid: snapshot.Grid(win(0, 10*min), 2*min),
			match: map[string]string{"engine": "1"}},
		{name: "invalid samples", hs: ds2(broken), grid: snapshot.Grid(win(0, 3*min), 20*sec)},
		{name: "open windows", hs: ds2(broken, before, after), grid: []snapshot.Window{{}, {End: at(2 * min)}, {Start: at(time.Minute)}}},
		{name: "no match", hs: ds2(steady), grid: snapshot.Grid(win(0, 3*min), min), match: map[string]string{"engine": "7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkHistogramSteps(t, &snapshot.Family{Name: "h", Histograms: tt.hs}, tt.grid, tt.match)
		})
	}
}

// rampRows returns n rows of cumulative counts over nb buckets growing by
// 1, 2, ... per sample.
func rampRows(n, nb int) [][]float64 {
	rows := make([][]float64, n)
	for i := range rows {
		for k := range nb {
			rows[i] = append(rows[i], float64(i*(k+1)))
		}
	}
	return rows
}

// ds2 is shorthand for a list of histogram series.
func ds2(hs ...*snapshot.HistogramSeries) []*snapshot.HistogramSeries { return hs }

// FuzzIncreaseSteps compares the grid helpers with the per-window ones on
// series, families and grids drawn from the fuzzer's bytes.
func FuzzIncreaseSteps(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(3))
	f.Add([]byte{9, 9, 9, 9, 9, 9, 9, 9, 200, 100, 50, 25, 12, 6, 3, 1}, uint8(40))
	r := rand.New(rand.NewPCG(7, 7))
	for range 8 {
		seed := make([]byte, 64+r.IntN(256))
		for i := range seed {
			seed[i] = byte(r.IntN(256))
		}
		f.Add(seed, uint8(r.IntN(200)))
	}
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		c := &byteChooser{b: data}
		grid := genGrid(c)
		checkSeriesSteps(t, genSeries(c, "c_total", labels.EmptyLabels(), int(n), n%2 == 1), grid)
		checkFamilySteps(t, genFamily(c, int(n)), grid, genMatch(c))
	})
}

// TestOpenEndAfterLastSample checks that a window with a Start and an open
// End, starting more than Lookback after the last sample, is not
// evaluable (it used to index out of range), for every helper.
func TestOpenEndAfterLastSample(t *testing.T) {
	t0 := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	s := &snapshot.Series{Name: "x_total", T: []int64{t0.UnixMilli(), t0.Add(time.Minute).UnixMilli()}, V: []float64{1, 2}}
	w := snapshot.Window{Start: t0.Add(20 * time.Minute)}
	_, err := s.Increase(w)
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	_, err = s.Gauge(w)
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	h := &snapshot.HistogramSeries{Bounds: []float64{1, math.Inf(1)}, T: s.T, Counts: []float64{1, 1, 2, 2}, Sum: []float64{1, 2}, Count: []float64{1, 2}}
	_, err = h.Increase(w)
	require.ErrorIs(t, err, snapshot.ErrNotEvaluable)
	st := s.IncreaseSteps([]snapshot.Window{w})
	require.ErrorIs(t, st[0].Err, snapshot.ErrNotEvaluable)
}
