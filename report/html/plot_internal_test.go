package html

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/report"
)

func TestSegmentsSplitAtGaps(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
	nan := report.Float(math.NaN())
	tl := &report.Timeline{Points: []report.Point{
		{T: t0, Value: 1}, {T: t0.Add(time.Minute), Value: 2}, {T: t0.Add(2 * time.Minute), Value: nan},
		{T: t0.Add(3 * time.Minute), Value: 4}, {T: t0.Add(4 * time.Minute), Value: report.Float(math.Inf(1))},
	}}
	segs := segments(tl, 1000)
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
