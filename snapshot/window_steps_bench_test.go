package snapshot_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/snapshot"
)

// The grid helpers against the per-window loop they replace (Steps over
// the per-window helper) on 6 h of samples every 15 s and a grid of 360
// one-minute windows.

// benchStepsWindow is the 6 h of the benchmarks.
var benchStepsWindow = win(0, 6*time.Hour-15*time.Second)

// benchEngines returns the counter of two engines over 6 h.
func benchEngines() *snapshot.Family {
	f := &snapshot.Family{Name: "c_total"}
	for e, rate := range []float64{3, 5} {
		f.Series = append(f.Series, series("c_total", labels.FromStrings("engine", strconv.Itoa(e)),
			every(0, 15*time.Second, 1440), ramp(0, rate, 1440)...))
	}
	return f
}

// benchHistogramFamily returns the 20-bucket histograms of two engines
// over 6 h.
func benchHistogramFamily() *snapshot.Family {
	h0, h1 := benchHistogram(), benchHistogram()
	h1.Labels = labels.FromStrings("engine", "1")
	return &snapshot.Family{Name: "h", Histograms: []*snapshot.HistogramSeries{h0, h1}}
}

// benchSteps runs the per-window loop and the grid helper as
// sub-benchmarks.
func benchSteps[R any](b *testing.B, eval func(snapshot.Window) (R, error), steps func([]snapshot.Window) []snapshot.Step[R]) {
	for _, st := range steps(snapshot.Grid(benchStepsWindow, time.Minute)) {
		if st.Err != nil {
			b.Fatal(st.Err)
		}
	}
	b.Run("loop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			snapshot.Steps(benchStepsWindow, time.Minute, eval)
		}
	})
	b.Run("steps", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			steps(snapshot.Grid(benchStepsWindow, time.Minute))
		}
	})
}

func BenchmarkStepsSeriesIncrease(b *testing.B) {
	s := benchEngines().Series[0]
	benchSteps(b, s.Increase, s.IncreaseSteps)
}

func BenchmarkStepsSeriesGauge(b *testing.B) {
	s := benchEngines().Series[0]
	benchSteps(b, s.Gauge, s.GaugeSteps)
}

func BenchmarkStepsFamilyIncrease(b *testing.B) {
	f := benchEngines()
	benchSteps(b, func(w snapshot.Window) (snapshot.CounterIncrease, error) { return f.Increase(w, nil) },
		func(g []snapshot.Window) []snapshot.Step[snapshot.CounterIncrease] { return f.IncreaseSteps(g, nil) })
}

func BenchmarkStepsFamilyGauge(b *testing.B) {
	f := benchEngines()
	benchSteps(b, func(w snapshot.Window) (snapshot.GaugeStats, error) { return f.Gauge(w, nil, snapshot.AggregateSum) },
		func(g []snapshot.Window) []snapshot.Step[snapshot.GaugeStats] {
			return f.GaugeSteps(g, nil, snapshot.AggregateSum)
		})
}

func BenchmarkStepsHistogramSeries(b *testing.B) {
	h := benchHistogram()
	benchSteps(b, h.Increase, h.IncreaseSteps)
}

func BenchmarkStepsHistogramFamily(b *testing.B) {
	f := benchHistogramFamily()
	benchSteps(b, func(w snapshot.Window) (snapshot.HistogramIncrease, error) { return f.HistogramIncrease(w, nil) },
		func(g []snapshot.Window) []snapshot.Step[snapshot.HistogramIncrease] {
			return f.HistogramIncreaseSteps(g, nil)
		})
}

// BenchmarkStepsHistogramEach is what a survey does with a replica's
// histogram: HistogramIncreaseEach over 360 one-minute windows of 6 h,
// one engine, each window's increase folded into a fleet's (MergeInto).
func BenchmarkStepsHistogramEach(b *testing.B) {
	f := &snapshot.Family{Name: "h", Histograms: []*snapshot.HistogramSeries{benchHistogram()}}
	grid := snapshot.Grid(benchStepsWindow, time.Minute)
	fleet := make([]snapshot.HistogramIncrease, len(grid))
	f.HistogramIncreaseEach(grid, nil, func(k int, inc snapshot.HistogramIncrease, err error) {
		if err != nil {
			b.Fatal(err)
		}
		fleet[k] = inc
		fleet[k].Histogram = inc.Histogram.Clone()
	})
	b.ReportAllocs()
	for b.Loop() {
		f.HistogramIncreaseEach(grid, nil, func(k int, inc snapshot.HistogramIncrease, err error) {
			if err := snapshot.MergeInto(&fleet[k], inc); err != nil {
				b.Fatal(err)
			}
		})
	}
}
