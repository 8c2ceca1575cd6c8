package diagnose

import (
	"math"
	"time"

	"github.com/whyslow/whyslow/snapshot"
)

// timelineSpec is one timeline Diagnose builds.
type timelineSpec struct {
	id   SignalID
	stat string // "p95", "mean", "rate"
}

// timelineSpecs are the timelines of a report, fleet and per replica.
var timelineSpecs = []timelineSpec{
	{SignalTTFT, "p95"},
	{SignalQueueTime, "p95"},
	{SignalPrefillTime, "p95"},
	{SignalTPOT, "p95"},
	{SignalITL, "p95"},
	{SignalE2E, "p95"},
	{SignalWaiting, "mean"},
	{SignalRunning, "mean"},
	{SignalKVUsage, "mean"},
	{SignalPreemptions, "rate"},
	{SignalGPUUtil, "mean"},
}

// timelines holds the per-interval series of one scope on one grid.
type timelines struct {
	step time.Duration
	grid []snapshot.Window
	list []Timeline
}

// fleet returns the fleet timeline of signal id, or nil.
func (tl *timelines) fleet(id SignalID) *Timeline {
	if tl == nil {
		return nil
	}
	for i := range tl.list {
		if tl.list[i].Signal == string(id) && tl.list[i].Replica == "" {
			return &tl.list[i]
		}
	}
	return nil
}

// timelineValues returns the point values of t (nil for a nil t).
func timelineValues(t *Timeline) []float64 {
	if t == nil {
		return nil
	}
	out := make([]float64, len(t.Points))
	for i, p := range t.Points {
		out[i] = float64(p.Value)
	}
	return out
}

// buildTimelines evaluates every timeline over the grid of span with the
// given step. Histogram quantiles of an interval are those of the
// observations made in it, merged across replicas (fleet) before the
// quantile is taken; gauges are the mean over the interval's scrapes of
// the fleet sum (or mean, for KV usage and GPU utilisation); counters are
// per-second rates.
func (sc *scope) buildTimelines(span snapshot.Window, step time.Duration) *timelines {
	grid := snapshot.Grid(span, step)
	if len(grid) < 2 {
		return nil
	}
	tl := &timelines{step: step, grid: grid}
	for _, spec := range timelineSpecs {
		if !sc.has(spec.id) {
			continue
		}
		for r := -1; r < len(sc.replicas); r++ {
			if r >= 0 && !sc.match(r, spec.id).Found() {
				continue
			}
			t := Timeline{Signal: string(spec.id), Stat: spec.stat, Step: step, Points: make([]Point, len(grid))}
			if r >= 0 {
				t.Replica = sc.replicas[r].t.Name
			}
			for i, w := range grid {
				v, n := sc.intervalValue(spec, r, w)
				t.Points[i] = Point{T: w.End, Value: Float(v), Count: Float(n)}
			}
			tl.list = append(tl.list, t)
		}
	}
	return tl
}

// intervalValue evaluates one timeline point: the value over w and the
// count behind it (observations, scrapes or counter increase). r < 0 is
// the fleet.
func (sc *scope) intervalValue(spec timelineSpec, r int, w snapshot.Window) (value, count float64) {
	nan := math.NaN()
	switch spec.stat {
	case "p95":
		var inc snapshot.HistogramIncrease
		var err error
		if r < 0 {
			inc, err, _ = sc.fleetHist(spec.id, w)
		} else {
			res := sc.replicaHist(spec.id, r, w)
			inc, err = res.inc, res.err
		}
		if err != nil {
			return nan, 0
		}
		n := inc.Histogram.Total()
		if !(n > 0) {
			return nan, 0
		}
		return inc.Histogram.Quantile(0.95).Value, n
	case "mean":
		var s *snapshot.Series
		if r < 0 {
			s = sc.fleetGauge(spec.id)
		} else {
			s = sc.replicaGauge(spec.id, r)
		}
		if s == nil {
			return nan, 0
		}
		g, err := s.Gauge(w)
		if err != nil {
			return nan, 0
		}
		return g.Mean, float64(g.N)
	case "rate":
		var inc snapshot.CounterIncrease
		var err error
		if r < 0 {
			inc, err = sc.fleetCounter(spec.id, w, nil)
		} else {
			inc, err = sc.replicaCounter(spec.id, r, w, nil)
		}
		if err != nil {
			return nan, 0
		}
		return inc.Rate(), inc.Value
	}
	return nan, 0
}
