package diagnose

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// noisy returns n values level(i) * (1 + rel*N(0,1)), seeded.
func noisy(seed uint64, n int, rel float64, level func(i int) float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = level(i) * (1 + rel*r.NormFloat64())
	}
	return out
}

// flatLevel is a constant level.
func flatLevel(v float64) func(int) float64 { return func(int) float64 { return v } }

// stepLevel is a level that steps from before to after at index at.
func stepLevel(at int, before, after float64) func(int) float64 {
	return func(i int) float64 {
		if i < at {
			return before
		}
		return after
	}
}

// testRise is the default rise line the search takes its material shift from.
var testRise = rules.DefaultThresholds.Rise

func TestFindChangePoint(t *testing.T) {
	const n, minEach = 60, 5
	ramp := func(at int, before, slope float64) func(int) float64 {
		return func(i int) float64 {
			if i < at {
				return before
			}
			return before + slope*float64(i-at+1)
		}
	}
	tests := []struct {
		name    string
		ttft    []float64
		waiting []float64
		wantOK  bool
		wantK   int // when wantOK
		slack   int
	}{
		{name: "flat noisy", ttft: noisy(1, n, 0.08, flatLevel(0.3)), waiting: noisy(2, n, 0.5, flatLevel(0.2))},
		{name: "constant", ttft: noisy(1, n, 0, flatLevel(0.3)), waiting: noisy(2, n, 0, flatLevel(0))},
		{name: "tiny relative shift", ttft: noisy(3, n, 0.01, stepLevel(30, 0.30, 0.33)), waiting: noisy(4, n, 0, flatLevel(0))},
		// A shift at the rise line (1.2x) under the TTFT floor counts when
		// it stands out from its own noise: a fast model's TTFT that steps
		// 1.22x is found; 1.15x is not, nor 1.22x within noisier intervals.
		{name: "fast TTFT steps 1.22x", ttft: noisy(15, n, 0.02, stepLevel(30, 0.070, 0.0854)), waiting: noisy(16, n, 0, flatLevel(0)), wantOK: true, wantK: 30, slack: 1},
		{name: "fast TTFT steps 1.15x", ttft: noisy(17, n, 0.02, stepLevel(30, 0.070, 0.0805)), waiting: noisy(18, n, 0, flatLevel(0))},
		{name: "fast TTFT steps 1.22x in noise", ttft: noisy(19, n, 0.3, stepLevel(30, 0.070, 0.0854)), waiting: noisy(20, n, 0, flatLevel(0))},
		{name: "ttft step", ttft: noisy(5, n, 0.08, stepLevel(30, 0.3, 1.2)), waiting: noisy(6, n, 0.5, flatLevel(0.2)), wantOK: true, wantK: 30, slack: 1},
		{name: "both step", ttft: noisy(7, n, 0.08, stepLevel(20, 0.3, 2)), waiting: noisy(8, n, 0.1, stepLevel(20, 0.5, 40)), wantOK: true, wantK: 20, slack: 1},
		{name: "waiting ramp", ttft: noisy(9, n, 0.05, ramp(30, 0.3, 0.5)), waiting: noisy(10, n, 0.05, ramp(30, 1, 300)), wantOK: true, wantK: 30, slack: 1},
		{name: "step downwards", ttft: noisy(11, n, 0.08, stepLevel(40, 2, 0.3)), waiting: noisy(12, n, 0, flatLevel(0)), wantOK: true, wantK: 40, slack: 1},
		// A change in the last two intervals is still proposed, but no
		// later than MinWindow before the end.
		{name: "step near the end", ttft: noisy(13, n, 0.02, stepLevel(58, 0.3, 3)), waiting: noisy(14, n, 0, flatLevel(0)), wantOK: true, wantK: n - minEach},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ttft, waiting := slices.Clone(tt.ttft), slices.Clone(tt.waiting)
			series := []cpSeries{
				{name: "ttft", values: ttft, minShift: cpMinShiftTTFT, minRatio: testRise},
				{name: "waiting", values: waiting, minShift: cpMinShiftWaiting, minRatio: testRise, hardFloor: true},
			}
			k, score, ok := findChangePoint(series, minEach)
			assert.Equal(t, tt.ttft, ttft, "input modified")
			assert.Equal(t, tt.waiting, waiting, "input modified")
			require.Equal(t, tt.wantOK, ok, "k=%d score=%.2f", k, score)
			if !ok {
				assert.Less(t, score, ChangePointThreshold)
				return
			}
			assert.GreaterOrEqual(t, score, ChangePointThreshold)
			assert.InDelta(t, tt.wantK, k, float64(tt.slack), "score %.2f", score)
			assert.GreaterOrEqual(t, k, minEach)
			assert.LessOrEqual(t, k, n-minEach)
		})
	}
}

func TestFindChangePointUnknownIntervals(t *testing.T) {
	ttft := noisy(1, 40, 0.05, func(i int) float64 {
		if i < 20 {
			return 0.3
		}
		return 3
	})
	for i := 0; i < len(ttft); i += 3 {
		ttft[i] = math.NaN() // intervals in which no request finished
	}
	k, score, ok := findChangePoint([]cpSeries{{values: ttft, minShift: cpMinShiftTTFT, minRatio: testRise}}, 5)
	require.True(t, ok, "score %.2f", score)
	assert.InDelta(t, 20, k, 1)
}

func TestFindChangePointTooShort(t *testing.T) {
	_, _, ok := findChangePoint([]cpSeries{{values: []float64{1, 2, 3}, minShift: 0, minRatio: testRise}}, 5)
	assert.False(t, ok)
	_, _, ok = findChangePoint(nil, 5)
	assert.False(t, ok)
}

// A fleet whose TPOT alone stepped up 48% (TTFT, E2E and waiting flat) has
// a change point, and the report says TPOT moved (issue 14).
func TestFindChangePointTPOTOnly(t *testing.T) {
	const n, minEach = 60, 5
	tpot := noisy(21, n, 0.02, stepLevel(30, 0.025, 0.037))
	ttft := noisy(22, n, 0.05, flatLevel(0.2))
	waiting := noisy(23, n, 0, flatLevel(0))
	series := []cpSeries{
		{name: "ttft_p95", unit: "s", values: ttft, minShift: cpMinShiftTTFT, minRatio: testRise},
		{name: "tpot_p95", unit: "s", values: tpot, minShift: cpMinShiftTPOT, minRatio: testRise},
		{name: "waiting", unit: "requests", values: waiting, minShift: cpMinShiftWaiting, minRatio: testRise, hardFloor: true},
	}
	k, score, ok := findChangePoint(series, minEach)
	require.True(t, ok, "score %.2f", score)
	assert.InDelta(t, 30, k, 1)
	moved := movedSeries(series, k, minEach)
	require.Len(t, moved, 1, "%+v", moved)
	assert.Equal(t, "tpot_p95", moved[0].Series)
	assert.InDelta(t, 0.025, float64(moved[0].Before), 0.002)
	assert.InDelta(t, 0.037, float64(moved[0].After), 0.002)

	// Without the TPOT series (the former search) nothing is proposed.
	_, _, ok = findChangePoint([]cpSeries{series[0], series[2]}, minEach)
	assert.False(t, ok)
}

// TestFindSegment: an incident that ended before the evidence did is the
// segment that differs from the intervals outside it; a step that lasts
// to the end is left to the single split, which separates it better.
func TestFindSegment(t *testing.T) {
	const n, minEach = 40, 5
	bump := func(a, b int, level, high float64) func(int) float64 {
		return func(i int) float64 {
			if i >= a && i < b {
				return high
			}
			return level
		}
	}
	for _, tc := range []struct {
		name       string
		ttft       []float64
		wantOK     bool
		a, b       int
		splitFirst bool // the single split scores at least as high
	}{
		{name: "flat", ttft: noisy(1, n, 0.08, flatLevel(0.3))},
		{name: "incident from 12 to 24", ttft: noisy(2, n, 0.08, bump(12, 24, 0.3, 0.9)), wantOK: true, a: 12, b: 24},
		{name: "incident from 27 to 35 (off-centre)", ttft: noisy(3, n, 0.08, bump(27, 35, 0.3, 0.6)), wantOK: true, a: 27, b: 35},
		{name: "a dip is no incident", ttft: noisy(4, n, 0.08, bump(12, 24, 0.9, 0.3))},
		{name: "step to the end", ttft: noisy(5, n, 0.08, stepLevel(20, 0.3, 0.9)), splitFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			series := []cpSeries{{name: "ttft", values: tc.ttft, minShift: cpMinShiftTTFT, minRatio: testRise}}
			a, b, score, ok := findSegment(series, minEach)
			if tc.splitFirst {
				_, split, splitOK := findChangePoint(series, minEach)
				require.True(t, splitOK)
				assert.False(t, ok && score > split, "segment [%d, %d) %.2f beats the split's %.2f", a, b, score, split)
				return
			}
			require.Equal(t, tc.wantOK, ok, "[%d, %d) score %.2f", a, b, score)
			if ok {
				assert.InDelta(t, tc.a, a, 1)
				assert.InDelta(t, tc.b, b, 1)
			}
		})
	}
}

// A shift under the floor that stands out from its own noise is found
// only where each side holds the requests a tail needs, and an exact mean
// counts only there whatever its shift: the means of a few requests per
// interval step by chance (one slow request's).
func TestChangePointNeedsRequests(t *testing.T) {
	const n, minEach = 40, 5
	small := noisy(31, n, 0.02, stepLevel(20, 0.070, 0.0854)) // under the 50 ms floor
	large := noisy(41, n, 0.05, stepLevel(20, 0.07, 0.2))     // over it
	for _, tc := range []struct {
		name     string
		values   []float64
		exact    bool
		perSlice float64
		wantOK   bool
	}{
		{"small shift, thousands of requests per interval", small, false, 2000, true},
		{"small shift, three requests per interval", small, false, 3, false},
		{"exact mean, thousands of requests per interval", large, true, 2000, true},
		{"exact mean, three requests per interval", large, true, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := make([]float64, n)
			for i := range counts {
				counts[i] = tc.perSlice
			}
			s := cpSeries{name: "ttft_mean", values: tc.values, minShift: cpMinShiftTTFT, minRatio: testRise,
				counts: counts, minCount: rules.DefaultThresholds.MinSamplesTail, exact: tc.exact}
			_, score, ok := findChangePoint([]cpSeries{s}, minEach)
			assert.Equal(t, tc.wantOK, ok, "score %.2f", score)
			_, _, _, segOK := findSegment([]cpSeries{s}, minEach)
			assert.False(t, segOK && !tc.wantOK, "the segment search counts a series on a few requests")
		})
	}
}

// TestLocateChange searches series given on a grid, as a server's
// recording rules give them: a step up is found at its onset, an
// incident that ended at the start of its segment, a flat or falling
// series proposes nothing, and malformed input is an error. A large step
// and a segment are found where they are, though every split near them
// scores the capped shift.
func TestLocateChange(t *testing.T) {
	start := time.Date(2026, 9, 22, 0, 0, 0, 0, time.UTC)
	grid := snapshot.Grid(snapshot.Window{Start: start, End: start.Add(12 * time.Hour)}, time.Minute)
	n := len(grid)
	at := func(i int) time.Time { return grid[i-1].End }
	for _, tc := range []struct {
		name    string
		series  []FleetSeries
		want    time.Time // zero: nothing proposed
		segment bool
		moved   string
	}{
		{name: "ttft step", series: []FleetSeries{
			{Name: "ttft_p95", Values: noisy(1, n, 0.05, stepLevel(400, 0.2, 0.6))},
			{Name: "waiting", Values: noisy(2, n, 0.05, flatLevel(0.5))},
		}, want: at(400), moved: "ttft_p95"},
		{name: "labelled series", series: []FleetSeries{
			{Name: `tpot_p95{model_name="a"}`, Values: noisy(3, n, 0.05, flatLevel(0.03))},
			{Name: `waiting{model_name="b"}`, Values: noisy(4, n, 0.1, stepLevel(200, 2, 20))},
		}, want: at(200), moved: `waiting{model_name="b"}`},
		{name: "ended", series: []FleetSeries{
			{Name: "ttft_p95", Values: noisy(5, n, 0.05, func(i int) float64 {
				if i >= 300 && i < 360 {
					return 1.5
				}
				return 0.2
			})},
		}, want: at(300), segment: true, moved: "ttft_p95"},
		{name: "flat", series: []FleetSeries{
			{Name: "ttft_p95", Values: noisy(6, n, 0.05, flatLevel(0.2))},
			{Name: "ttft_mean", Values: noisy(7, n, 0.05, flatLevel(0.1))},
		}},
		{name: "recovery only", series: []FleetSeries{
			{Name: "ttft_p95", Values: noisy(8, n, 0.05, stepLevel(500, 1.5, 0.2))},
		}},
		{name: "no series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := LocateChange(grid, tc.series, Options{})
			require.NoError(t, err)
			if tc.want.IsZero() {
				assert.Nil(t, cp)
				return
			}
			require.NotNil(t, cp)
			assert.Equal(t, tc.want, cp.Time)
			assert.True(t, cp.Used)
			assert.GreaterOrEqual(t, cp.Score, ChangePointThreshold)
			assert.Equal(t, tc.segment, strings.HasSuffix(cp.Method, "the segment that differs most from the intervals outside it"))
			assert.Contains(t, cp.Method, "; requests not counted")
			require.NotEmpty(t, cp.Signals)
			assert.Equal(t, tc.moved, cp.Signals[0].Series)
		})
	}

	_, err := LocateChange(grid, []FleetSeries{{Name: "gpu_util", Values: make([]float64, n)}}, Options{})
	assert.ErrorContains(t, err, `series "gpu_util" is none of the change-point search's`)
	_, err = LocateChange(grid, []FleetSeries{{Name: "ttft_p95", Values: make([]float64, 3)}}, Options{})
	assert.ErrorContains(t, err, `series "ttft_p95" has 3 values for 720 intervals`)
	_, err = LocateChange(grid, nil, Options{MinWindow: -time.Minute})
	assert.Error(t, err)
}
