package html

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

func TestSegmentsSplitAtGaps(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	nan := rules.Number(math.NaN())
	tl := &report.Timeline{Points: []report.Point{
		{T: t0, Value: 1}, {T: t0.Add(time.Minute), Value: 2}, {T: t0.Add(2 * time.Minute), Value: nan},
		{T: t0.Add(3 * time.Minute), Value: 4}, {T: t0.Add(4 * time.Minute), Value: rules.Number(math.Inf(1))},
	}}
	segs := segments(tl, 1000).Runs
	require.Len(t, segs, 2)
	assert.Len(t, segs[0], 2)
	assert.Equal(t, 2000.0, segs[0][1].Y)
	assert.Equal(t, float64(t0.Add(3*time.Minute).Unix()), segs[1][0].X)
}

func TestTimeTicks(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	ticks := timeTicks{}.Ticks(float64(t0.Unix()), float64(t0.Add(time.Hour).Unix()))
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"09:30", "09:40", "09:50", "10:00", "10:10", "10:20", "10:30"}, labels)
	days := timeTicks{}.Ticks(float64(t0.Unix()), float64(t0.Add(72*time.Hour).Unix()))
	require.NotEmpty(t, days)
	assert.Nil(t, timeTicks{}.Ticks(5, 5))
}

// Numeric axes are labelled like the text report: "750", never "750.00".
func TestNumberTicks(t *testing.T) {
	var labels []string
	for _, tk := range (numberTicks{}).Ticks(0, 800) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
			assert.NotContains(t, tk.Label, ".00", tk.Label)
		}
	}
	assert.Equal(t, []string{"0", "400", "800"}, labels)
	for _, tk := range (numberTicks{}).Ticks(0, 1.2) {
		if tk.Label != "" {
			assert.NotRegexp(t, `\.\d*0$`, tk.Label, "no trailing zero")
		}
	}
}

// SLO targets are drawn as dashed lines on the p95 plots they bound, and
// the culprit replica's line stands out in the legend.
func TestPlotSLOAndCulprit(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	var pts []report.Point
	for i := range 10 {
		pts = append(pts, report.Point{T: t0.Add(time.Duration(i) * time.Minute), Value: 0.5, Count: 10})
	}
	r := &report.Report{
		Settings:  report.Settings{SLO: map[string]float64{"ttft_p95": 2}},
		Timelines: []report.Timeline{{Signal: "ttft", Stat: "p95", Step: time.Minute, Points: pts}},
	}
	plots, err := timelinePlots(r)
	require.NoError(t, err)
	require.Len(t, plots, 1)
	var names []string
	for _, l := range plots[0].Legend {
		names = append(names, l.Name)
	}
	assert.Contains(t, names, "SLO ttft_p95 2s (dashed)")
	assert.Contains(t, string(plots[0].SVG), "stroke-dasharray", "the SLO line is dashed")

	// No SLO given: no line.
	r.Settings.SLO = nil
	plots, err = timelinePlots(r)
	require.NoError(t, err)
	assert.Len(t, plots[0].Legend, 1)
}

// minutes returns n points a minute apart from t0, value v(i) and edge
// e(i) each.
func minutes(t0 time.Time, n int, v func(i int) float64, e func(i int) float64) []report.Point {
	var pts []report.Point
	for i := range n {
		pts = append(pts, report.Point{T: t0.Add(time.Duration(i+1) * time.Minute), Value: rules.Number(v(i)), Count: 10, Edge: rules.Number(e(i))})
	}
	return pts
}

func legendNames(p htmlPlot) []string {
	var names []string
	for _, l := range p.Legend {
		names = append(names, l.Name)
	}
	return names
}

// A quantile known only as a bound is drawn at the bound, apart from the
// line: never its interpolated value.
func TestPlotBounds(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	// Intervals 0-3 in the first bucket [0, 300ms] (interpolated 285ms),
	// 4-6 known, 7 in the overflow bucket (>= 20s).
	v := func(i int) float64 {
		switch {
		case i < 4:
			return 0.285
		case i < 7:
			return 1.5 + float64(i)/10
		}
		return 20
	}
	e := func(i int) float64 {
		switch {
		case i < 4:
			return 0.3
		case i < 7:
			return 0
		}
		return math.Inf(1)
	}
	tl := &report.Timeline{Signal: "prefill_time", Stat: "p95", Step: time.Minute, Points: minutes(t0, 8, v, e)}
	pts := segments(tl, 1000)
	require.Len(t, pts.Runs, 1)
	assert.Len(t, pts.Runs[0], 3, "only the known values make the line")
	require.Len(t, pts.AtMost, 4)
	for _, p := range pts.AtMost {
		assert.Equal(t, 300.0, p.Y, "at the bucket's upper edge, not the interpolated 285ms")
	}
	require.Len(t, pts.AtLeast, 1)
	assert.Equal(t, 20000.0, pts.AtLeast[0].Y)

	plots, err := timelinePlots(&report.Report{Timelines: []report.Timeline{*tl}})
	require.NoError(t, err)
	require.Len(t, plots, 1)
	names := legendNames(plots[0])
	assert.Contains(t, names, "fleet: <= 300ms (4 intervals; p95 in the first bucket: only its upper edge is known)")
	assert.Contains(t, names, "fleet: >= 20s (1 intervals; p95 in the overflow bucket: only its lower edge is known)")
	assert.False(t, strings.Contains(string(plots[0].SVG), ">285<"), "no label at the interpolated value")

	// All in the first bucket: no line at all, only the bound.
	tl.Points = minutes(t0, 8, func(int) float64 { return 0.285 }, func(int) float64 { return 0.3 })
	plots, err = timelinePlots(&report.Report{Timelines: []report.Timeline{*tl}})
	require.NoError(t, err)
	require.Len(t, plots, 1)
	assert.Equal(t, []string{"fleet: <= 300ms (8 intervals; p95 in the first bucket: only its upper edge is known)"}, legendNames(plots[0]))
	assert.Equal(t, "▽", plots[0].Legend[0].Glyph)
}

// A signal zero throughout is one line, not a plot.
func TestPlotAllZero(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	zero := func(int) float64 { return 0 }
	tests := []struct {
		name, signal, stat string
		points             []report.Point
		caption            string
		plot               bool
	}{
		{"rate", "preemptions", "rate", minutes(t0, 10, zero, zero),
			"all zero over the window, 2026-03-14 09:30–09:40Z (10m): 10 intervals of 1m", false},
		{"gauge", "waiting", "mean", minutes(t0, 10, zero, zero),
			"all zero over the window, 2026-03-14 09:30–09:40Z (10m): 100 samples", false},
		{"one nonzero", "waiting", "mean", minutes(t0, 10, func(i int) float64 { return float64(i / 9) }, zero), "", true},
		{"gaps are not zeros", "waiting", "mean", minutes(t0, 10, func(i int) float64 {
			if i%2 == 0 {
				return math.NaN()
			}
			return 0
		}, zero), "all zero over the window, 2026-03-14 09:31–09:40Z (9m): 50 samples", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &report.Report{Timelines: []report.Timeline{{Signal: tt.signal, Stat: tt.stat, Step: time.Minute, Points: tt.points}}}
			plots, err := timelinePlots(r)
			require.NoError(t, err)
			require.Len(t, plots, 1)
			if tt.plot {
				assert.NotEmpty(t, plots[0].SVG)
				return
			}
			assert.Nil(t, plots[0].SVG, "no plot")
			assert.Empty(t, plots[0].Legend)
			assert.Equal(t, tt.caption, plots[0].Caption)
		})
	}
}

// The replica the verdict names is drawn on every plot, the latency
// plots included, in one colour; other replicas only where per-replica
// lines are drawn.
func TestPlotCulpritOnEveryPlot(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	val := func(x float64) func(int) float64 { return func(i int) float64 { return x + float64(i%3)/10 } }
	none := func(int) float64 { return 0 }
	var tls []report.Timeline
	for _, sig := range []struct{ id, stat string }{{"ttft", "p95"}, {"waiting", "mean"}} {
		tls = append(tls,
			report.Timeline{Signal: sig.id, Stat: sig.stat, Step: time.Minute, Points: minutes(t0, 10, val(1), none)},
			report.Timeline{Signal: sig.id, Stat: sig.stat, Replica: "vllm-0", Step: time.Minute, Points: minutes(t0, 10, val(0.3), none)},
			report.Timeline{Signal: sig.id, Stat: sig.stat, Replica: "vllm-1", Step: time.Minute, Points: minutes(t0, 10, val(9), none)},
		)
	}
	r := &report.Report{
		Verdict:   rules.Verdict(rules.ReplicaHotspot),
		Inputs:    report.Inputs{Replicas: []string{"vllm-0", "vllm-1"}},
		Timelines: tls,
		Hypotheses: []rules.Finding{{ID: rules.ReplicaHotspot, Status: rules.Supported, Evidence: []rules.Evidence{
			{ID: rules.ReplicaTTFTRatio, Fact: rules.Fact{Incident: rules.Measurement{Value: 4}, Source: "vllm-1: vllm:time_to_first_token_seconds per replica", Replica: "vllm-1"}},
		}}},
	}
	plots, err := timelinePlots(r)
	require.NoError(t, err)
	require.Len(t, plots, 2)
	assert.Equal(t, []string{"fleet (buckets merged across replicas)", "vllm-1 (culprit)"}, legendNames(plots[0]), "TTFT: the fleet and the culprit")
	assert.Equal(t, []string{"fleet (sum over replicas)", "vllm-0", "vllm-1 (culprit)"}, legendNames(plots[1]))
	for _, p := range plots {
		assert.Equal(t, cssColor(plotCulpritColor), p.Legend[len(p.Legend)-1].Color)
		assert.True(t, strings.Contains(string(p.SVG), "stroke:#AD1457"), "the culprit's line")
	}

	// No culprit: the TTFT plot is the fleet's alone.
	r.Hypotheses = nil
	r.Verdict = rules.Undetermined
	plots, err = timelinePlots(r)
	require.NoError(t, err)
	assert.Equal(t, []string{"fleet (buckets merged across replicas)"}, legendNames(plots[0]))
}
