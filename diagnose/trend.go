package diagnose

import (
	"math"
	"slices"
	"time"
)

// This file measures a series against its own local level (a running
// median), so that a change of level (a ramp of arrivals, a step of
// demand, a queue that builds) is not read as variability: the detrended
// dispersion of arrivals and the share of the waiting gauge's variation
// that moves as slowly as its level.

// trendSpan is how far on either side of a point its local level reaches
// (at least minTrendSide intervals): long against a 10 s burst and its
// drain, short against a ramp over tens of minutes, which is straight
// within it.
const (
	trendSpan    = 2 * time.Minute
	minTrendSide = 3
)

// trendSide is the reach of the local level, in intervals of step.
func trendSide(step time.Duration) int {
	return max(minTrendSide, int((trendSpan+step-1)/step))
}

// localLevel returns, for each point i of v (one per interval, in time
// order), the median of the points within k = min(side, i, n-1-i) of it on
// either side, itself included: a window symmetric about the point, so
// that the median of a straight trend is the trend's value there, and a
// median, so that a step of level stays a step and a spike is left out.
// Points with k < 2 (the first and last two) get NaN.
func localLevel(v []float64, side int) []float64 {
	level := make([]float64, len(v))
	buf := make([]float64, 0, 2*side+1)
	for i := range v {
		k := min(side, i, len(v)-1-i)
		if k < 2 {
			level[i] = math.NaN()
			continue
		}
		buf = append(buf[:0], v[i-k:i+k+1]...)
		slices.Sort(buf)
		level[i] = buf[k]
	}
	return level
}

// trendResiduals holds, for each point of a series, its squared residual
// from its local level (res) and the level (fit); NaN where localLevel has
// none.
type trendResiduals struct {
	t, v, res, fit []float64
}

// detrend measures (t, v) against its local level of reach side.
func detrend(t, v []float64, side int) trendResiduals {
	fit := localLevel(v, side)
	res := make([]float64, len(t))
	for i := range t {
		r := v[i] - fit[i]
		res[i] = r * r
	}
	return trendResiduals{t: t, v: v, res: res, fit: fit}
}

// dispersion is the index of dispersion around the trend of the points
// with t in (from, to]: the sum of their scaled squared residuals over
// the sum of their trend values, and the number of points. About 1 for
// Poisson counts whose rate moves linearly within the trend's reach,
// whatever the trend; large when bursts shorter than the reach carry a
// big share of the counts.
func (d trendResiduals) dispersion(from, to float64) (sumRes, sumFit float64, n int) {
	for i, ti := range d.t {
		if ti > from && ti <= to && !math.IsNaN(d.res[i]) && !math.IsNaN(d.v[i]) {
			sumRes, sumFit, n = sumRes+d.res[i], sumFit+math.Max(d.fit[i], 0), n+1
		}
	}
	return sumRes, sumFit, n
}

// drainedShare splits v (the queue per interval, in time order) into
// episodes, maximal runs of intervals with at least one request waiting,
// and returns the share of v's sum that lies in episodes followed by an
// interval with fewer than one (drained before the series ended), and the
// number of episodes. Bursts that queue and drain give a share near 1;
// a queue that builds and stays gives 0.
func drainedShare(v []float64) (share float64, episodes int) {
	var total, drained, run float64
	in := false
	for _, x := range v {
		if x >= 1 {
			if !in {
				episodes++
			}
			in = true
			run += x
			total += x
			continue
		}
		if in {
			drained += run
		}
		in, run = false, 0
	}
	if !(total > 0) {
		return math.NaN(), episodes
	}
	return drained / total, episodes
}
