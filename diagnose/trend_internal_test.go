package diagnose

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poissonCounts draws one Poisson count per 15 s interval at the rate
// (per second) rate(i), seeded.
func poissonCounts(seed uint64, n int, rate func(i int) float64) (t, v []float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range n {
		t = append(t, 15*float64(i+1))
		k, mean := 0.0, 15*rate(i)
		// Knuth's method is slow for large means: sum exponential gaps.
		for s := r.ExpFloat64(); s < mean; s += r.ExpFloat64() {
			k++
		}
		v = append(v, k)
	}
	return t, v
}

// plainDispersion is variance / mean around the window's mean, as
// arrival_dispersion measures it.
func plainDispersion(v []float64) float64 {
	var s, s2 float64
	for _, x := range v {
		s, s2 = s+x, s2+x*x
	}
	return dispersionAgg([]float64{s, s2, float64(len(v))})
}

func TestLocalLevel(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		v    []float64
		side int
		want []float64
	}{
		{"a line is its own level", []float64{1, 2, 3, 4, 5, 6, 7}, 3, []float64{nan, nan, 3, 4, 5, nan, nan}},
		{"a step stays a step", []float64{1, 1, 1, 1, 9, 9, 9, 9}, 3, []float64{nan, nan, 1, 1, 9, 9, nan, nan}},
		{"a spike is left out", []float64{2, 2, 2, 2, 50, 2, 2, 2, 2}, 4, []float64{nan, nan, 2, 2, 2, 2, 2, nan, nan}},
		{"too short", []float64{1, 2, 3, 4}, 3, []float64{nan, nan, nan, nan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := localLevel(tc.v, tc.side)
			require.Len(t, got, len(tc.want))
			for i := range got {
				if math.IsNaN(tc.want[i]) {
					assert.True(t, math.IsNaN(got[i]), "point %d: %v", i, got[i])
				} else {
					assert.Equal(t, tc.want[i], got[i], "point %d", i)
				}
			}
		})
	}
}

func TestDetrendedDispersion(t *testing.T) {
	const n = 160 // 40 minutes of 15 s intervals
	side := trendSide(15e9)
	for _, tc := range []struct {
		name     string
		rate     func(i int) float64
		burst    func(i int) float64 // extra arrivals per interval
		lo, hi   float64             // detrended dispersion
		plainMin float64             // plain dispersion at least
	}{
		{name: "steady", rate: func(int) float64 { return 32 }, lo: 0.7, hi: 1.4},
		{name: "ramp 40 -> 70 req/s", rate: func(i int) float64 { return 40 + 30*float64(i)/n }, lo: 0.7, hi: 1.4, plainMin: 10},
		{name: "step +40% mid-window", rate: func(i int) float64 { return 32 + 13*float64(i/(n/2)) }, lo: 0.7, hi: 2, plainMin: 10},
		{name: "ramp from the middle (hockey stick)", rate: func(i int) float64 { return 40 + 60*math.Max(0, float64(i)/n-0.5) }, lo: 0.7, hi: 1.4, plainMin: 10},
		{name: "10 s burst a minute at 2x", rate: func(int) float64 { return 32 }, burst: func(i int) float64 {
			if i%4 == 1 {
				return 2 * 32 * 10
			}
			return 0
		}, lo: 20, hi: math.Inf(1), plainMin: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, vs := poissonCounts(11, n, tc.rate)
			if tc.burst != nil {
				for i := range vs {
					vs[i] += tc.burst(i)
				}
			}
			res, fit, m := detrend(ts, vs, side).dispersion(math.Inf(-1), math.Inf(1))
			require.Equal(t, n-4, m, "the first and last two intervals have no level")
			d := res / fit
			assert.GreaterOrEqual(t, d, tc.lo)
			assert.Less(t, d, tc.hi)
			assert.GreaterOrEqual(t, plainDispersion(vs), tc.plainMin)
		})
	}
}

func TestDrainedShare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v        []float64
		share    float64
		episodes int
	}{
		{"no queue", []float64{0, 0, 0.5, 0}, math.NaN(), 0},
		{"bursts that drain", []float64{0, 5, 2, 0, 0, 6, 0, 0, 3, 1, 0}, 1, 3},
		{"queue builds from the 20th minute and stays", []float64{0, 0, 0, 0, 1, 3, 6, 10, 15}, 0, 1},
		{"bursts, the last one cut by the window's end", []float64{0, 4, 0, 0, 4, 0, 0, 2}, 8.0 / 10, 3},
		{"a queue that persists from the start", []float64{12, 10, 14, 11}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			share, n := drainedShare(tc.v)
			assert.Equal(t, tc.episodes, n)
			if math.IsNaN(tc.share) {
				assert.True(t, math.IsNaN(share))
				return
			}
			assert.InDelta(t, tc.share, share, 1e-12)
		})
	}
}
